#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture -- COMMAND: the stream of a launched workload.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
}

@test "a launched 2-thread workload: header, process, maps, samples, summary" {
	run sp-capture -o "$S" -- "$WORKLOADS/spin" 1
	[ "$status" -eq 0 ]
	[[ "$output" == *"exited with status 0"* ]]
	run sp-cat "$S"
	[ "$status" -eq 0 ]
	# The header first, the summary last.
	[[ "${lines[0]}" == '{"t":"header","format":"stackpulse","version":[1,6],"stage":"raw"'* ]]
	[[ "${lines[-1]}" == '{"t":"summary"'* ]]
	h=$(jqs "$S" 'select(.t=="header")')
	[ "$(jq -r .kernel_enabled <<< "$h")" = false ]
	[ "$(jq -r '.reg_names | length' <<< "$h")" = 17 ]
	[ "$(jq -r .options.inherit <<< "$h")" = true ]
	[ "$(jq -r '.options.command[0]' <<< "$h")" = "$WORKLOADS/spin" ]
	[ "$(jq -r .host.boot_id <<< "$h")" = "$(cat /proc/sys/kernel/random/boot_id)" ]
	# Every sample's process was described before it.
	run jqs "$S" 'select(.t=="process" or .t=="sample") | .t' 
	[ "${lines[0]}" = '"process"' ]
	# The workload's executable mapping carries its build-id.
	bid=$(readelf -n "$WORKLOADS/spin" | awk '/Build ID/ { print $3 }')
	run jqs "$S" "select(.t==\"map\" and .path==\"$WORKLOADS/spin\") | .build_id[\"\$bin\"]"
	[ -n "$output" ]
	[ "$(echo "${lines[0]}" | tr -d '"' | base64 -d | od -An -tx1 | tr -d ' \n')" = "$bid" ]
}

@test "sample counts are plausible for the rate, duration and threads" {
	sp-capture -q -F 499 -o "$S" -- "$WORKLOADS/spin" -t 2 1
	n=$(summary "$S" samples)
	# 2 threads x 499 Hz x 1 s = 998 at most; samples count CPU time, which
	# a busy shared machine may give the workload little of.
	[ "$n" -ge 50 ]
	[ "$n" -le 1300 ]
	[ "$(summary "$S" sample_events)" -ge "$n" ]
	[ "$(summary "$S" lost_events)" -eq 0 ]
	# Two threads sampled, each sample with registers and a stack copy.
	[ "$(jqs "$S" 'select(.t=="sample") | .tid' | sort -u | wc -l)" -eq 2 ]
	[ "$(jqs "$S" 'select(.t=="sample" and .abi==2 and (.regs|length)==17) | .pid' | wc -l)" -eq "$n" ]
}

@test "stack copies: only the used part, and shared tails rebuild exactly" {
	sp-capture -q -o "$S" -- "$WORKLOADS/spin" 0.5
	# No copy is longer than the window; most share their tail.
	run jqs "$S" 'select(.t=="sample") | (.ustack["$bin"] | length) * 3 / 4 + (.ustack_shared // 0) | floor'
	for l in "${lines[@]}"; do [ "$l" -le 32768 ]; done
	[ "$(jqs "$S" 'select(.t=="sample" and .ustack_shared > 0) | 1' | wc -l)" -gt 0 ]
	# A reader with Python's msgpack module alone rebuilds every copy.
	run /usr/bin/python3 "$TOP/format/examples/read-stream.py" "$S"
	[ "$status" -eq 0 ]
	[[ "$output" == *"shared)"* ]]
	# Every sample's rebuilt copy ends at the same address as the previous one it shares with.
	run /usr/bin/python3 - "$S" <<'PY'
import sys, msgpack
last = {}
for r in msgpack.Unpacker(open(sys.argv[1], "rb"), raw=False):
    if r["t"] != "sample" or not r.get("regs"):
        continue
    copy = r["ustack"]
    if r.get("ustack_shared"):
        top, prev = last[r["tid"]]
        copy += prev[len(prev) - r["ustack_shared"]:]
        assert top == r["regs"][7] + len(copy), "shared tail at another address"
    last[r["tid"]] = (r["regs"][7] + len(copy), copy)
print("ok")
PY
	[ "$output" = ok ]
}

@test "the command's exit status is reported; sp-capture's reflects the recording" {
	run sp-capture --allow-empty -o "$S" -- sh -c 'exit 3'
	[ "$status" -eq 0 ]
	[[ "$output" == *"command 'sh' exited with status 3"* ]]
	[ "$(summary "$S" command_status)" = 3 ]
	run sp-capture --allow-empty -o "$S" -- sh -c 'kill -KILL $$'
	[ "$status" -eq 0 ]
	[[ "$output" == *"killed by signal 9"* ]]
	[ "$(summary "$S" command_status)" = -9 ]
}

@test "the stream works through a pipe as through a file" {
	run bash -c "set -o pipefail; sp-capture -q -- '$WORKLOADS/spin' 0.3 | sp-cat > '$BATS_TEST_TMPDIR/out.jsonl'"
	[ "$status" -eq 0 ]
	[[ "$(tail -n 1 "$BATS_TEST_TMPDIR/out.jsonl")" == '{"t":"summary"'* ]]
	[ "$(grep -c '"t":"sample"' "$BATS_TEST_TMPDIR/out.jsonl")" -gt 0 ]
}

@test "--duration ends the recording, and the command with it" {
	start=$(date +%s%N)
	run sp-capture -o "$S" --duration 0.5 -- "$WORKLOADS/spin" 30
	[ "$status" -eq 0 ]
	end=$(date +%s%N)
	[ $(( (end - start) / 1000000 )) -lt 10000 ]
	[ "$(summary "$S" command_status)" = -15 ]
}

@test "a live status line on a terminal, nothing with -q" {
	run script -qec "sp-capture -o '$S' -- '$WORKLOADS/spin' 0.6" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"samples"*"lost"*"MB"* ]]
	run script -qec "sp-capture -q -o '$S' -- '$WORKLOADS/spin' 0.3" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" != *"samples"* ]]
}

@test "with the stream on standard output, the command's output goes to standard error" {
	run --separate-stderr bash -c "sp-capture -q -- sh -c 'echo from-the-command' | sp-cat -t summary"
	[ "$status" -eq 0 ]
	[[ "$output" == '{"t":"summary"'* ]]
	[[ "$stderr" == *"from-the-command"* ]]
}

@test "a command that ignores SIGTERM is killed when the recording ends" {
	run timeout 20 sp-capture -o "$S" --duration 0.3 -- sh -c 'trap "" TERM; while :; do :; done'
	[ "$status" -eq 0 ]
	[ "$(summary "$S" command_status)" = -9 ]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture --stack-size auto: a calibration with the largest window,
# then the smallest window that kept 99.5% of the stacks complete; and
# what sp-unwind says complete stacks needed of their copies (the
# unwind record's copy_used keys), which sp-stat shows.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
}

# copies RAW: each sample's copied stack bytes (its own and the shared
# tail), one a line, in the stream's order.
copies() {
	local -
	set -o pipefail
	sp-cat -t sample "$1" | /usr/bin/python3 -c '
import base64, json, sys
for line in sys.stdin:
    r = json.loads(line)
    us = r.get("ustack")
    n = len(base64.b64decode(us["$bin"])) if us else 0
    print(n + r.get("ustack_shared", 0))
'
}

# complete_pct UNWOUND: the share of user stacks that ended complete, in %.
complete_pct() {
	local -
	set -o pipefail
	sp-cat -t unwind "$1" | jq -r '(100 * .complete / .user_samples) | floor'
}

@test "--stack-size auto: a shallow stack gets a small window and stays complete" {
	run -0 sp-capture --stack-size auto --calibrate 0.3 -o "$T/raw.sps" -- \
		"$WORKLOADS/spin" 6
	[[ "$output" == *"--stack-size auto: copying "*" bytes"* ]]
	[ "$(jqs "$T/raw.sps" 'select(.t=="header") | .options.stack_size')" = 65528 ]
	chosen=$(summary "$T/raw.sps" stack_size_chosen)
	[ "$chosen" -ge 4096 ] && [ "$chosen" -le 8192 ]
	[ $((chosen % 512)) = 0 ]
	[ "$(summary "$T/raw.sps" stack_calibration_stacks)" -ge 50 ]
	# The calibration's samples copied more than the window chosen; the
	# last ones, after the events were opened again, at most that.
	copies "$T/raw.sps" > "$T/copies"
	[ "$(lines "$T/copies")" -ge 500 ]
	[ "$(head -n 50 "$T/copies" | sort -n | tail -n 1)" -gt "$chosen" ]
	[ "$(tail -n 200 "$T/copies" | sort -n | tail -n 1)" -le "$chosen" ]
	run -0 sp-unwind -o "$T/unw.sps" "$T/raw.sps"
	[ "$(complete_pct "$T/unw.sps")" -ge 99 ]
}

@test "--stack-size auto: deep recursion gets a bigger window" {
	run -0 sp-capture --stack-size auto --calibrate 0.3 -o "$T/raw.sps" -- \
		"$WORKLOADS/deep" -d 1000 6
	chosen=$(summary "$T/raw.sps" stack_size_chosen)
	# deep_recurse's 1000 frames take some 16 KiB.
	[ "$chosen" -ge 12288 ] && [ "$chosen" -lt 65528 ]
	run -0 sp-unwind --max-depth 4096 -o "$T/unw.sps" "$T/raw.sps"
	[ "$(complete_pct "$T/unw.sps")" -ge 95 ]
}

@test "--stack-size auto through a pipe: the calibration's records come first, in order" {
	run -0 bash -c "set -o pipefail; sp-capture -q --stack-size auto --calibrate 0.3 -- \
		'$WORKLOADS/spin' 4 | sp-unwind -o '$T/unw.sps'"
	[ "$(summary "$T/unw.sps" stack_size_chosen)" -le 8192 ]
	[ "$(complete_pct "$T/unw.sps")" -ge 99 ]
	# One header, one summary, and every sample after the header.
	[ "$(sp-cat -t header "$T/unw.sps" | wc -l)" = 1 ]
	[ "$(sp-cat -t summary "$T/unw.sps" | wc -l)" = 1 ]
}

@test "--stack-size auto: usage errors" {
	run -3 sp-capture --stack-size auto --call-graph fp -- true
	[[ "$output" == *"--stack-size auto applies to --call-graph dwarf"* ]]
	run -3 sp-capture --call-graph fp --stack-size auto -- true
	[[ "$output" == *"--stack-size auto applies to --call-graph dwarf"* ]]
	run -3 sp-capture --calibrate 1 -- true
	[[ "$output" == *"--calibrate applies to --stack-size auto"* ]]
	run -3 sp-capture --stack-size auto --calibrate 0 -- true
	[[ "$output" == *"invalid --calibrate '0'"* ]]
	run -3 sp-capture --stack-size auto --calibrate x -- true
	[[ "$output" == *"invalid --calibrate 'x'"* ]]
}

@test "--stack-size auto: an idle target keeps the default window and says so" {
	"$WORKLOADS/sleeper" 30 &
	pid=$!
	run -0 sp-capture --stack-size auto --calibrate 0.2 --duration 2.5 --allow-empty \
		-o "$T/raw.sps" -p "$pid"
	kill "$pid"
	wait "$pid" || true
	if [[ "$output" == *"too few to choose from"* ]]; then
		[ "$(summary "$T/raw.sps" stack_size_chosen)" = 32768 ]
	else
		# A slow machine woke the sleeper often enough: a choice was made.
		[[ "$output" == *"--stack-size auto: copying "* ]]
	fi
	run -0 sp-cat "$T/raw.sps"
}

@test "--stack-size auto: a recording shorter than the calibration keeps the largest window" {
	run -0 sp-capture --stack-size auto --calibrate 5 --allow-empty -o "$T/raw.sps" -- \
		"$WORKLOADS/spin" 0.5
	[[ "$output" == *"the recording ended before the calibration did"* ]]
	[ "$(summary "$T/raw.sps" stack_size_chosen)" = null ]
	run -0 sp-unwind -o "$T/unw.sps" "$T/raw.sps"
	[ "$(sp-cat -t summary "$T/unw.sps" | wc -l)" = 1 ]
}

@test "sp-stat shows the window --stack-size auto chose" {
	run -0 sp-capture -q --stack-size auto --calibrate 0.3 -o "$T/raw.sps" -- \
		"$WORKLOADS/spin" 4
	chosen=$(summary "$T/raw.sps" stack_size_chosen)
	run -0 sp-stat "$T/raw.sps"
	[[ "$output" == *"stack window $chosen bytes (--stack-size auto: chosen from "*" stacks copied with 65528 bytes)"* ]]
	run -0 sp-stat --json "$T/raw.sps"
	[ "$(jq -r '.recording.stack_size_chosen' <<< "$output")" = "$chosen" ]
	[ "$(jq -r '.recording.stack_calibration_stacks >= 50' <<< "$output")" = true ]
}

@test "sp-unwind: what complete stacks needed of their copies, and sp-stat's smaller window" {
	sp-capture -q -o "$T/raw.sps" -- "$WORKLOADS/spin" 2
	run -0 sp-unwind -o "$T/unw.sps" "$T/raw.sps"
	run -0 sp-cat -t unwind "$T/unw.sps"
	u=$output
	n=$(jq -r '.copy_used_stacks' <<< "$u")
	p50=$(jq -r '.copy_used_p50' <<< "$u")
	p995=$(jq -r '.copy_used_p995' <<< "$u")
	max=$(jq -r '.copy_used_max' <<< "$u")
	# Every complete stack of the stackpulse engine is counted.
	[ "$n" = "$(jq -r '.complete' <<< "$u")" ] && [ "$n" -ge 100 ]
	# spin's 16 frames read at least their return addresses, and far
	# less than the default window of 32768 bytes.
	[ "$p50" -le "$p995" ] && [ "$p995" -le "$max" ] && [ "$max" -le 32768 ]
	[ "$p50" -ge 128 ] && [ "$max" -le 8192 ]
	[ $((max % 8)) = 0 ]
	# sp-stat shows them, and the smaller window that would do.
	run -0 sp-stat "$T/unw.sps"
	[[ "$output" == *"complete stacks needed at most $max bytes of their copy (99.5% within $p995, half within $p50); --stack-size "*" would copy "*"% less"* ]]
	run -0 sp-stat --json "$T/unw.sps"
	[ "$(jq -r '.unwinding.copy_used.max' <<< "$output")" = "$max" ]
	[ "$(jq -r '.unwinding.copy_used.window' <<< "$output")" = 32768 ]
	[ "$(jq -r '.unwinding.copy_used.suggested_stack_size' <<< "$output")" = 4096 ]
	# libunwind's walks are not measured: no keys.
	run -0 sp-unwind --engine=libunwind -o "$T/lu.sps" "$T/raw.sps"
	[ "$(sp-cat -t unwind "$T/lu.sps" | jq -r '.copy_used_stacks')" = null ]
}

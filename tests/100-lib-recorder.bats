#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# libstackpulse's recorder: the examples (examples/profile-command.c,
# examples/several-processes.c) against real processes, and the
# recorder's functions used wrongly (tests/lib/api-recorder-misuse.c).

load helper

EX=$SP_BUILD/examples

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null || true
		pkill -P "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}

# value NAME: the value of the "NAME value" line of $output.
value() {
	awk -v k="$1" '$1 == k { print $2 }' <<< "$output"
}

# samples_of PID: the samples of process PID in stream $S.
samples_of() {
	local -
	set -o pipefail
	sp-cat -t sample "$S" | jq -r --argjson p "$1" 'select(.pid == $p) | .tid' | wc -l
}

@test "profile-command: a launched command from its start to its exit, every counter of the summary" {
	run -0 "$EX/profile-command" -F 999 "$S" "$WORKLOADS/spin" 2
	[ "$(value samples)" -gt 50 ]
	[ "$(value sample_events)" -ge "$(value samples)" ]
	[ "$(value processes)" -eq 1 ]
	[ "$(value threads)" -ge 1 ]
	[ "$(value command_status)" -eq 0 ]
	[ "$(value kernel_enabled)" -eq 0 ]
	[ "$(value duration_ns)" -gt 1000000000 ]
	[ "$(value error.proc_unreadable)" -eq 0 ]
	# What it printed is what the stream's summary record says.
	for k in samples sample_events lost_events processes threads duration_ns command_status; do
		[ "$(summary "$S" "$k")" = "$(value "$k")" ]
	done
	# A raw stream written by the library: its header names it.
	[ "$(jqs "$S" 'select(.t=="header") | .tools[0].name')" = '"libstackpulse"' ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.command | length')" -eq 2 ]
	# It unwinds as sp-capture's does: the spinning stacks reach their entry.
	samples=$(value samples)
	run -0 sp-unwind -o "$BATS_TEST_TMPDIR/u.sps" "$S"
	complete=$(sp-cat -t unwind "$BATS_TEST_TMPDIR/u.sps" | jq .complete)
	[ "$complete" -ge $((samples * 9 / 10)) ]
}

@test "profile-command: a recorder writing to a pipe; the command's output kept out of the stream" {
	local -
	set -o pipefail
	"$EX/profile-command" - sh -c "echo hello; exec \"$WORKLOADS/spin\" 1" 2> "$BATS_TEST_TMPDIR/err" |
		sp-cat > "$BATS_TEST_TMPDIR/json"
	grep -qx hello "$BATS_TEST_TMPDIR/err"
	samples=$(awk '$1 == "samples" { print $2 }' "$BATS_TEST_TMPDIR/err")
	[ "$samples" -gt 50 ]
	[ "$(jq -c 'select(.t=="summary") | .samples' "$BATS_TEST_TMPDIR/json")" = "$samples" ]
	[ "$(head -n 1 "$BATS_TEST_TMPDIR/json" | jq -r .t)" = header ]
}

@test "profile-command: the command's exit status, the task-clock event and the header's metadata" {
	# The shell itself works (a child would not be followed: no inheritance).
	run -0 "$EX/profile-command" -e task-clock -t 1700000000000000 -i 1001 "$S" \
		sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done; exit 3'
	[ "$(value command_status)" -eq 3 ]
	[ "$(value samples)" -gt 50 ]
	[ "$(jqs "$S" 'select(.t=="header") | [.options.event, .start_timestamp_us, .sample_interval_us]')" = '["task-clock",1700000000000000,1001]' ]
	# The default event leaves the key out.
	run -0 "$EX/profile-command" "$BATS_TEST_TMPDIR/c.sps" "$WORKLOADS/spin" 0.3
	[ "$(jqs "$BATS_TEST_TMPDIR/c.sps" 'select(.t=="header") | .options.event')" = null ]
	# -F max: the kernel's cap now.
	run -0 "$EX/profile-command" -F max "$BATS_TEST_TMPDIR/m.sps" true
	[ "$(jqs "$BATS_TEST_TMPDIR/m.sps" 'select(.t=="header") | .options.frequency_arg')" = '"max"' ]
	[ "$(jqs "$BATS_TEST_TMPDIR/m.sps" 'select(.t=="header") | .options.frequency')" -gt 0 ]
}

@test "profile-command: kernel frames asked for by an unprivileged user fall back to user frames" {
	# This needs kernel.perf_event_paranoid 2 or more, as on Debian by default.
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]
	d=$(shared_tmpdir)
	run -0 as_nobody env TMPDIR="$d" "$EX/profile-command" -k "$d/rec.sps" "$WORKLOADS/spin" 1
	[ "$(value kernel_enabled)" -eq 0 ]
	[ "$(value samples)" -gt 50 ]
	[ "$(summary "$d/rec.sps" kernel_enabled)" = false ]
	[ "$(jqs "$d/rec.sps" 'select(.t=="header") | [.options.kernel, .kernel_enabled]')" = "[true,false]" ]
	rm -rf "$d"
	# As root the kernel grants them.
	run -0 "$EX/profile-command" -k "$S" dd if=/dev/zero of=/dev/null bs=64k count=50000
	[ "$(value kernel_enabled)" -eq 1 ]
}

@test "several-processes: one attached before the start, one stopped while attached, the descendants of a third" {
	# The first starts threads three seconds after it starts, while it is
	# recorded: only the refresh ticks find them (no inheritance).
	"$WORKLOADS/late_threads" -n 3 -w 3 10 & PIDS+=($!)
	first=$!
	# The second notes each SIGCONT: it is stopped and continued once.
	cont=$BATS_TEST_TMPDIR/continued
	bash -c "trap 'echo cont >> $cont' CONT; while :; do :; done" & PIDS+=($!)
	second=$!
	sh -c "\"$WORKLOADS/spin\" -t 1 10 & \"$WORKLOADS/spin\" -t 1 10 & wait" & PIDS+=($!)
	root=$!
	# Until both children run.
	for i in $(seq 100); do
		[ "$(pgrep -c -P "$root")" -eq 2 ] && break
		sleep 0.05
	done
	children=$(pgrep -P "$root" | sort -n | tr '\n' ' ')
	run -0 "$EX/several-processes" "$S" "$first" "$second" "$root" 5
	[[ "$output" == *"attached $first before-start"* ]]
	[[ "$output" == *"attached $second stop"* ]]
	for c in $children; do
		[[ "$output" == *"attached $c no-stop"* ]]
	done
	[ "$(grep -c no-stop <<< "$output")" -eq 2 ]
	[ "$(value samples)" -gt 50 ]
	[ "$(value processes)" -eq 4 ]
	[ "$(value refreshed)" -eq 3 ]
	[ "$(value kernel_enabled)" -eq 0 ]
	[ "$(summary "$S" processes)" -eq 4 ]
	# The second was stopped and continued once; the others never.
	[ "$(cat "$cont")" = cont ]
	# Every process has samples, the late threads of the first too.
	for p in $first $second $children; do
		[ "$(samples_of "$p")" -gt 5 ]
	done
	late=$(sp-cat -t sample "$S" | jq -r --argjson p "$first" 'select(.pid == $p and .tid != $p) | .tid' | sort -u | wc -l)
	[ "$late" -eq 3 ]
	# The processes attached while recording are in the stream before their samples.
	for p in $second $children; do
		jqs "$S" "select(.t==\"process\") | .pid" | grep -qx "$p"
	done
	# The stream unwinds: the spinning children's stacks are complete.
	run -0 sp-unwind -o "$BATS_TEST_TMPDIR/u.sps" "$S"
	[ "$(sp-cat -t unwind "$BATS_TEST_TMPDIR/u.sps" | jq '.complete * 10 >= .user_samples * 8')" = true ]
}

@test "several-processes: a thread id given stands for its whole process" {
	"$WORKLOADS/spin" -t 2 5 & PIDS+=($!)
	pid=$!
	tid=
	for i in $(seq 100); do
		tid=$(ls "/proc/$pid/task" | grep -vx "$pid" | head -n 1)
		[ -n "$tid" ] && break
		sleep 0.05
	done
	[ -n "$tid" ]
	"$WORKLOADS/spin" -t 1 5 & PIDS+=($!)
	other=$!
	sh -c "\"$WORKLOADS/spin\" -t 1 5 & wait" & PIDS+=($!)
	root=$!
	run -0 "$EX/several-processes" "$S" "$tid" "$other" "$root" 1
	[ "$(samples_of "$pid")" -gt 5 ]
	[ "$(samples_of "$tid")" -eq 0 ]
	# Its process record is under its pid, and no process has the thread's id.
	jqs "$S" 'select(.t=="process") | .pid' > "$BATS_TEST_TMPDIR/procs"
	grep -qx "$pid" "$BATS_TEST_TMPDIR/procs"
	run -1 grep -qx "$tid" "$BATS_TEST_TMPDIR/procs"
	# Both of its threads, under its pid.
	[ "$(sp-cat -t sample "$S" | jq -r --argjson p "$pid" 'select(.pid == $p) | .tid' | sort -u | wc -l)" -eq 2 ]
}

@test "a recorder writing to a file keeps the exact images of the files its targets map, and removes them at the end" {
	tmp=$BATS_TEST_TMPDIR/tmp
	mkdir "$tmp"
	TMPDIR=$tmp "$EX/profile-command" "$S" "$WORKLOADS/spin" 2 > "$BATS_TEST_TMPDIR/out" &
	rec=$!
	# While it records: a private directory in build-id layout.
	links=
	for i in $(seq 100); do
		links=$(find "$tmp" -path '*/.build-id/*' -type l 2>/dev/null)
		[ -n "$links" ] && break
		sleep 0.05
	done
	[ -n "$links" ]
	[ "$(stat -c %a "$(find "$tmp" -maxdepth 1 -name 'libstackpulse-images.*')")" = 700 ]
	bid=$(readelf -n "$WORKLOADS/spin" | awk '/Build ID/ { print $3 }')
	grep -q "/.build-id/${bid:0:2}/${bid:2}\$" <<< "$links"
	# Each entry is a link to a descriptor the recorder holds.
	for l in $links; do
		[[ "$(readlink "$l")" == /proc/self/fd/* ]]
	done
	fd=$(readlink "$(grep "/${bid:2}\$" <<< "$links")")
	[ "$(readlink "/proc/$rec/fd/${fd##*/}")" = "$(readlink -f "$WORKLOADS/spin")" ]
	wait "$rec"
	# Gone when the recorder is.
	[ -z "$(ls -A "$tmp")" ]
}

@test "a tail taken from the recorder reads a deleted binary as it was sampled; one opened later cannot" {
	mkdir "$BATS_TEST_TMPDIR/bin"
	cp "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/bin/spin"
	"$SP_BUILD/tests/api-recorder-images" "$S" "$BATS_TEST_TMPDIR/bin/spin" 3 > "$BATS_TEST_TMPDIR/out" &
	rec=$!
	# Deleted once it has been running (and mapped) for a while.
	for i in $(seq 100); do
		pgrep -f "$BATS_TEST_TMPDIR/bin/spin" > /dev/null && break
		sleep 0.05
	done
	sleep 1
	rm "$BATS_TEST_TMPDIR/bin/spin"
	wait "$rec"
	read -r what stacks complete < <(grep '^recorder-tail ' "$BATS_TEST_TMPDIR/out")
	[ "$stacks" -gt 50 ]
	[ "$complete" -ge $((stacks * 9 / 10)) ]
	# The same stream tailed by path: the file is gone, no stack is complete.
	read -r what stacks2 complete2 < <(grep '^path-tail ' "$BATS_TEST_TMPDIR/out")
	[ "$stacks2" -eq "$stacks" ]
	[ "$complete2" -lt $((stacks / 10)) ]
}

@test "the recorder's functions used wrongly fail with their code and a message" {
	"$WORKLOADS/spin" 5 & PIDS+=($!)
	run -0 "$SP_BUILD/tests/api-recorder-misuse" "$S" "$!"
	[[ "$output" == *"0 failures"* ]]
	[ "$(grep -c '^ok ' <<< "$output")" -ge 52 ]
	[[ "$output" == *"ok sp_recorder_attach after finish: sp_recorder_attach: the recording has finished"* ]]
	[[ "$output" == *"ok sp_options_set_stack_size(7): stack size 7: give a positive multiple of 8"* ]]
	[[ "$output" == *"ok sp_recorder_finish twice:"* ]]
	run -1 grep -q '^FAIL' <<< "$output"
	# The stream it recorded before the misuse is whole.
	[ "$(summary "$S" samples)" -gt 0 ]
}

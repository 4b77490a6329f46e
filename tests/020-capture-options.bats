#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture: option checking, all before anything is opened.

load helper

@test "-F refuses zero, negatives, garbage and values above the cap, naming the cap" {
	cap=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
	for bad in 0 -5 abc 12x "" $((cap + 1)); do
		run sp-capture -F "$bad" -o "$BATS_TEST_TMPDIR/x.sps" -- true
		[ "$status" -eq 3 ]
		[[ "$output" == *"$cap"* ]]
		[ ! -s "$BATS_TEST_TMPDIR/x.sps" ]
	done
}

@test "--max-rate prints the kernel's cap; -F max uses it" {
	run sp-capture --max-rate
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /proc/sys/kernel/perf_event_max_sample_rate)" ]
	# -F max is above the rate the stack copies sustain: --force records anyway.
	sp-capture -q -F max --force --allow-empty -o "$BATS_TEST_TMPDIR/m.sps" -- true
	[ "$(jqs "$BATS_TEST_TMPDIR/m.sps" 'select(.t=="header") | .options.frequency')" = "$(cat /proc/sys/kernel/perf_event_max_sample_rate)" ]
}

@test "--stack-size: K suffix, rounding to 8, the kernel's limit" {
	sp-capture -q --allow-empty --stack-size 1K -o "$BATS_TEST_TMPDIR/a.sps" -- true
	[ "$(jqs "$BATS_TEST_TMPDIR/a.sps" 'select(.t=="header") | .options.stack_size')" = 1024 ]
	sp-capture -q --allow-empty --stack-size 1001 -o "$BATS_TEST_TMPDIR/b.sps" -- true
	[ "$(jqs "$BATS_TEST_TMPDIR/b.sps" 'select(.t=="header") | .options.stack_size')" = 1008 ]
	sp-capture -q --allow-empty --stack-size 65528 -o "$BATS_TEST_TMPDIR/c.sps" -- true
	run sp-capture --stack-size 65536 -- true
	[ "$status" -eq 3 ]
	[[ "$output" == *"above the kernel's limit of 65528 bytes"* ]]
	run sp-capture --stack-size 64K -- true
	[ "$status" -eq 3 ]
	for bad in 0 -1 x 1M; do
		run sp-capture --stack-size "$bad" -- true
		[ "$status" -eq 3 ]
	done
}

@test "bad combinations and values are usage errors" {
	run sp-capture -p 1 -- true
	[ "$status" -eq 3 ]
	[[ "$output" == *"either -p PID or a command"* ]]
	run sp-capture
	[ "$status" -eq 3 ]
	run sp-capture --descendants -- true
	[ "$status" -eq 3 ]
	run sp-capture --mmap-pages 3 -- true
	[ "$status" -eq 3 ]
	run sp-capture --duration 0 -- true
	[ "$status" -eq 3 ]
	run sp-capture --poll-ms x -- true
	[ "$status" -eq 3 ]
	run sp-capture -p 12x
	[ "$status" -eq 3 ]
	run sp-capture --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Exit status:"* ]]
}

@test "the binary stream is never written to a terminal" {
	run script -qec "sp-capture -- true" /dev/null
	[ "$status" -eq 3 ]
	[[ "$output" == *"refusing to write a binary stream to a terminal"* ]]
}

@test "a pid that does not exist, and a command that cannot run" {
	run sp-capture -o "$BATS_TEST_TMPDIR/x.sps" -p 4194303
	[ "$status" -eq 2 ]
	[[ "$output" == *"no process with pid 4194303"* ]]
	run sp-capture -o "$BATS_TEST_TMPDIR/x.sps" -- /nonexistent/command
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot run '/nonexistent/command': No such file or directory"* ]]
}

@test "metadata options reach the header" {
	sp-capture -q --allow-empty --start-timestamp-us 1700000000000000 --sample-interval-us 1001 \
		-o "$BATS_TEST_TMPDIR/m.sps" -- true
	run jqs "$BATS_TEST_TMPDIR/m.sps" 'select(.t=="header") | [.start_timestamp_us, .sample_interval_us]'
	[ "$output" = "[1700000000000000,1001]" ]
}

@test "--poll-ms and --mmap-pages are used and recorded" {
	sp-capture -q --poll-ms 20 --mmap-pages 256 -o "$BATS_TEST_TMPDIR/p.sps" -- "$WORKLOADS/spin" 0.3
	run jqs "$BATS_TEST_TMPDIR/p.sps" 'select(.t=="header") | [.options.poll_ms, .options.mmap_pages]'
	[ "$output" = "[20,256]" ]
	[ "$(summary "$BATS_TEST_TMPDIR/p.sps" samples)" -gt 0 ]
}

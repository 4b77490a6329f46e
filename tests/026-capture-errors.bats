#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture: the reader going away, a full disk.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
}

teardown() {
	[ -z "${P:-}" ] || kill -KILL "$P" 2>/dev/null || true
	[ -z "${MNT:-}" ] || umount "$MNT" 2>/dev/null || true
}

@test "the reader goes away: a message, and a -p target runs on untouched" {
	"$WORKLOADS/spin" 10 > /dev/null &
	P=$!
	disown
	sleep 0.2
	run bash -c "sp-capture -p $P | head -c 1000 > /dev/null"
	[[ "$output" == *"Broken pipe"*"recording stopped"* ]]
	sleep 0.1
	kill -0 "$P"
	[ "$(proc_state "$P")" != T ]
	# No event stays attached: no recorder of the target is left, so every
	# event's file descriptor was closed.
	run -1 pgrep -f "sp-capture -p $P\$"
	run bash -c "sp-capture -p $P 2>&1 >/dev/full"
	[[ "$output" == *"No space left on device"* ]]
}

@test "a full file system: a clear message and a failing status" {
	MNT=$BATS_TEST_TMPDIR/small
	mkdir -p "$MNT"
	mount -t tmpfs -o size=64k tmpfs "$MNT"
	run sp-capture -o "$MNT/rec.sps" -- "$WORKLOADS/spin" 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot write '$MNT/rec.sps': No space left on device"* ]]
	# What was written is a valid stream up to the cut, and says it is cut.
	run sp-cat "$MNT/rec.sps"
	[ "$status" -eq 1 ]
}

@test "sp-capture's exit status follows the pipe's reader" {
	run bash -c "set -o pipefail; sp-capture -q -- '$WORKLOADS/spin' 0.3 | sp-cat -t summary | jq -r .samples"
	[ "$status" -eq 0 ]
	[ "$output" -gt 0 ]
}

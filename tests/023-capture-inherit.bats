#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture: children, exec, threads created later.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
}

@test "--inherit: forked children are recorded, each after its fork record" {
	sp-capture -q -o "$S" -- "$WORKLOADS/forker" -n 20 -v 1 > "$BATS_TEST_TMPDIR/kids"
	grep -q '^children=20$' "$BATS_TEST_TMPDIR/kids"
	kids=$(grep -v = "$BATS_TEST_TMPDIR/kids")
	sp-cat "$S" > "$BATS_TEST_TMPDIR/rec.jsonl"
	sampled=0
	for k in $kids; do
		# The fork comes before any sample of the child, and a runtime marker with it.
		f=$(grep -n "\"t\":\"fork\",\"pid\":$k," "$BATS_TEST_TMPDIR/rec.jsonl" | head -n 1 | cut -d: -f1)
		[ -n "$f" ]
		s=$(grep -n "\"t\":\"sample\",\"pid\":$k," "$BATS_TEST_TMPDIR/rec.jsonl" | head -n 1 | cut -d: -f1)
		if [ -n "$s" ]; then
			[ "$f" -lt "$s" ]
			sampled=$((sampled + 1))
		fi
		grep -q "\"t\":\"runtime\",\"pid\":$k,\"cpython\":false" "$BATS_TEST_TMPDIR/rec.jsonl"
	done
	[ "$sampled" -ge 15 ]
	[ "$(summary "$S" processes)" -ge 21 ]
	[ "$(summary "$S" error_stats | jq '.[] | select(.kind=="unknown_process") | .count')" -eq 0 ]
}

@test "a process that execs repeatedly: an exec record and new maps each time" {
	sp-capture -q -o "$S" -- "$WORKLOADS/execer" 3 1
	[ "$(jqs "$S" 'select(.t=="exec") | .comm' | wc -l)" -eq 4 ]
	# Each exec is followed by the new image's mapping before its samples.
	run jqs "$S" 'select(.t=="exec" or (.t=="map" and (.path | endswith("/execer")))) | .t'
	[ "$(echo "$output" | tr -d '"\n' | sed 's/execmap/X/g')" = XXXX ]
	[ "$(summary "$S" samples)" -gt 0 ]
}

@test "--no-inherit misses threads created later; --refresh-threads finds them" {
	sp-capture -q --no-inherit -o "$S" -- "$WORKLOADS/late_threads" -n 2 -w 0.3 -v 1.2 > "$BATS_TEST_TMPDIR/tids"
	for t in $(cat "$BATS_TEST_TMPDIR/tids"); do
		[ "$(jqs "$S" "select(.t==\"sample\" and .tid==$t) | 1" | wc -l)" -eq 0 ]
	done
	sp-capture -q --no-inherit --refresh-threads 50 -o "$S" -- "$WORKLOADS/late_threads" -n 2 -w 0.3 -v 1.2 > "$BATS_TEST_TMPDIR/tids"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/tids")" -eq 2 ]
	for t in $(cat "$BATS_TEST_TMPDIR/tids"); do
		[ "$(jqs "$S" "select(.t==\"sample\" and .tid==$t) | 1" | wc -l)" -gt 10 ]
		[ "$(jqs "$S" "select(.t==\"thread\" and .tid==$t) | 1" | wc -l)" -eq 1 ]
	done
	[ "$(jqs "$S" 'select(.t=="header") | .options.refresh_threads_ms')" = 50 ]
}

@test "--inherit follows threads created later without rescans" {
	sp-capture -q -o "$S" -- "$WORKLOADS/late_threads" -n 2 -w 0.3 -v 1 > "$BATS_TEST_TMPDIR/tids"
	for t in $(cat "$BATS_TEST_TMPDIR/tids"); do
		[ "$(jqs "$S" "select(.t==\"sample\" and .tid==$t) | 1" | wc -l)" -gt 10 ]
		# A thread's birth is a fork record within the same process.
		[ "$(jqs "$S" "select(.t==\"fork\" and .tid==$t) | .pid == .ppid")" = true ]
	done
}

@test "200 threads are all sampled" {
	sp-capture -q -o "$S" -- "$WORKLOADS/manythreads" -n 200 1
	[ "$(jqs "$S" 'select(.t=="sample") | .tid' | sort -u | wc -l)" -ge 190 ]
	[ "$(summary "$S" threads)" -ge 201 ]
	# Losses depend on how busy the machine is; whatever is lost is
	# counted, and the summary agrees with the lost records.
	lost_records=$(jqs "$S" 'select(.t=="lost") | .lost' | awk '{ s += $1 } END { print s + 0 }')
	lost=$(summary "$S" lost_events)
	[ "$lost" -ge "$lost_records" ]
	[ "$lost" -ge "$(summary "$S" lost_samples)" ]
}

@test "-p follows children the target forks during the recording; --no-inherit does not" {
	"$WORKLOADS/forker" -n 10 -v 3 > "$BATS_TEST_TMPDIR/kids" &
	P=$!
	sleep 0.3
	sp-capture -q -o "$S" -p "$P"
	wait $P
	late=$(tail -n 4 "$BATS_TEST_TMPDIR/kids" | grep -v =)
	[ -n "$late" ]
	for k in $late; do
		[ "$(jqs "$S" "select(.t==\"fork\" and .pid==$k) | .ppid")" = "$P" ]
		[ "$(jqs "$S" "select(.t==\"sample\" and .pid==$k) | 1" | wc -l)" -gt 0 ]
	done
	"$WORKLOADS/forker" -n 10 -v 3 > "$BATS_TEST_TMPDIR/kids" &
	P=$!
	sleep 0.3
	sp-capture -q --no-inherit -o "$S" -p "$P"
	wait $P
	# The parent's own events report its forks, but nothing of the children.
	[ "$(jqs "$S" "select(.t==\"sample\" and .pid!=$P) | 1" | wc -l)" -eq 0 ]
	[ "$(jqs "$S" "select(.t==\"sample\" and .pid==$P) | 1" | wc -l)" -gt 0 ]
}

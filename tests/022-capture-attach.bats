#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture -p: attaching to running processes.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
	PIDS=()
}

teardown() {
	kill_started
}

@test "-p: the state read from /proc comes first, then samples; the target runs on" {
	start "$WORKLOADS/spin" 10
	run sp-capture -o "$S" -p "$P" --duration 1
	[ "$status" -eq 0 ]
	[ "$(proc_state "$P")" != T ]
	kill -0 "$P"
	run jqs "$S" 'select(.t=="process") | [.pid, .exe, .comm]'
	[ "$output" = "[$P,\"$WORKLOADS/spin\",\"spin\"]" ]
	[ "$(jqs "$S" "select(.t==\"thread\" and .pid==$P) | .tid" | wc -l)" -eq 2 ]
	[ "$(jqs "$S" "select(.t==\"map\" and .path==\"$WORKLOADS/spin\") | .pid")" = "$P" ]
	[ "$(jqs "$S" 'select(.t=="runtime") | .cpython')" = false ]
	# -p follows what the target creates, and sends it no signal.
	[ "$(jqs "$S" 'select(.t=="header") | .options.inherit')" = true ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.stop')" = false ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.pids')" = "[$P]" ]
	[ "$(summary "$S" samples)" -gt 100 ]
	# Nothing of the process is sampled before it is described.
	first_sample=$(sp-cat "$S" | grep -n '"t":"sample"' | head -n 1 | cut -d: -f1)
	last_map=$(sp-cat "$S" | grep -n '"t":"map"' | tail -n 1 | cut -d: -f1)
	[ "$last_map" -lt "$first_sample" ]
}

@test "several processes at once" {
	start "$WORKLOADS/spin" -t 1 10
	a=$P
	start "$WORKLOADS/deep" 10
	b=$P
	sp-capture -q -o "$S" -p "$a,$b" --duration 1
	run jqs "$S" 'select(.t=="sample") | .pid'
	[[ "$output" == *"$a"* ]]
	[[ "$output" == *"$b"* ]]
	[ "$(jqs "$S" 'select(.t=="process") | .pid' | sort -n | tr '\n' ' ')" = "$(printf '%s\n' "$a" "$b" | sort -n | tr '\n' ' ')" ]
}

@test "--descendants attaches the existing children too" {
	sh -c "'$WORKLOADS/spin' -t 1 10 & '$WORKLOADS/deep' 10 & wait" &
	P=$!
	disown
	PIDS+=("$P")
	sleep 0.3
	kids=$(pgrep -P "$P" | sort -n)
	PIDS+=($kids)
	sp-capture -q -o "$S" -p "$P" --descendants --duration 1
	for k in $kids; do
		[ "$(jqs "$S" "select(.t==\"sample\" and .pid==$k) | 1" | wc -l)" -gt 10 ]
		[ "$(jqs "$S" "select(.t==\"process\" and .pid==$k) | .ppid")" = "$P" ]
	done
	[ "$(jqs "$S" 'select(.t=="header") | .options.descendants')" = true ]
}

@test "the recording ends when every target has exited" {
	start "$WORKLOADS/spin" 1
	run timeout 20 sp-capture -o "$S" -p "$P"
	[ "$status" -eq 0 ]
	[ "$(summary "$S" samples)" -gt 0 ]
	run ! kill -0 "$P"
}

@test "SIGINT in the middle still yields a complete stream" {
	start "$WORKLOADS/spin" 20
	sp-capture -q -o "$S" -p "$P" &
	c=$!
	sleep 1
	kill -INT $c
	st=0
	wait $c || st=$?
	[ "$st" -eq 0 ]
	run sp-cat "$S"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == '{"t":"summary"'* ]]
	[ "$(summary "$S" samples)" -gt 0 ]
	[ "$(proc_state "$P")" != T ]
	kill -0 "$P"
}

@test "SIGTERM and SIGHUP end the recording cleanly too" {
	for sig in TERM HUP; do
		start "$WORKLOADS/spin" 20
		sp-capture -q -o "$S" -p "$P" &
		c=$!
		sleep 0.5
		kill -$sig $c
		st=0
		wait $c || st=$?
		[ "$st" -eq 0 ]
		run sp-cat -t summary "$S"
		[ "$status" -eq 0 ]
		kill -0 "$P"
	done
}

@test "--no-stop (the default) and --stop; a stopped target stays stopped" {
	start "$WORKLOADS/spin" 10
	sp-capture -q --no-stop -o "$S" -p "$P" --duration 0.5
	[ "$(jqs "$S" 'select(.t=="header") | .options.stop')" = false ]
	[ "$(summary "$S" samples)" -gt 0 ]
	sp-capture -q --stop -o "$S" -p "$P" --duration 0.5
	[ "$(jqs "$S" 'select(.t=="header") | .options.stop')" = true ]
	[ "$(summary "$S" samples)" -gt 0 ]
	[ "$(proc_state "$P")" != T ]
	kill -STOP "$P"
	sleep 0.1
	for opt in --stop --no-stop; do
		# A stopped target gives no sample: best effort is asked for.
		sp-capture -q --allow-empty $opt -o "$S" -p "$P" --duration 0.3
		[ "$(proc_state "$P")" = T ]
	done
	kill -CONT "$P"
	run sp-capture -q --stop -o "$S" -- true
	[ "$status" -eq 3 ]
}

@test "--stop: a target is continued when sp-capture cannot attach to it" {
	start "$WORKLOADS/spin" 10
	# Too few descriptors: opening the events fails after the stop.
	run bash -c "for fd in \$(ls /proc/\$\$/fd); do [ \$fd -gt 2 ] && eval \"exec \$fd>&-\"; done; ulimit -n 5; exec sp-capture --stop -o '$S' -p $P"
	[ "$status" -eq 2 ]
	[[ "$output" == *"too many open files"* ]]
	sleep 0.1
	[ "$(proc_state "$P")" != T ]
}

@test "a process owned by another user: a clear permission message, nothing stopped" {
	d=$(shared_tmpdir)
	start "$WORKLOADS/spin" 10
	run as_nobody sp-capture -o "$d/x.sps" -p "$P" --duration 0.3
	[ "$status" -eq 2 ]
	[[ "$output" == *"profile a process you own"* ]]
	[ "$(proc_state "$P")" != T ]
	rm -rf "$d"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture attaching to running services: thread ids, what the target
# creates later, no signal, --name and --pid-file, a clean detach, and
# the errors.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
	PIDS=()
}

teardown() {
	kill_started
}

# a_thread PID: a thread of PID that is not its main thread.
a_thread() {
	ls "/proc/$1/task" | grep -vx "$1" | head -n 1
}

# perf_fds PID: how many perf events PID holds open.
perf_fds() {
	local n=0 f
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f")" = "anon_inode:[perf_event]" ] && n=$((n + 1))
	done
	echo $n
}

@test "-p of a thread id attaches its whole process, and says so once" {
	start "$WORKLOADS/spin" -t 3 10
	t=$(a_thread "$P")
	[ -n "$t" ]
	run --separate-stderr sp-capture -q -o "$S" -p "$t" --duration 1
	[ "$status" -eq 0 ]
	[ "$stderr" = "sp-capture: -p $t is a thread of process $P, not a process: the whole process $P is sampled, every thread of it, as perf record -p does; to sample that thread alone give sp-capture -t $t; to sample the process, name it: -p $P" ]
	# Every pid in the stream is the process's, never the thread's.
	[ "$(jqs "$S" 'select(.t=="process") | .pid')" = "$P" ]
	[ "$(jqs "$S" 'select(.t=="sample") | .pid' | sort -u)" = "$P" ]
	[ "$(jqs "$S" 'select(.t=="sample") | .tid' | sort -u | wc -l)" -eq 3 ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.pids')" = "[$P]" ]
	[ "$(summary "$S" error_stats | jq '.[] | select(.kind=="unknown_process") | .count')" -eq 0 ]
	[ "$(summary "$S" samples)" -gt 300 ]
	# What /proc said is stamped before the events began: every sample
	# comes after it, and the spinning process mapped nothing later.
	t0=$(jqs "$S" 'select(.t=="process") | .time')
	[ "$(jqs "$S" "select(.t==\"sample\" and .time <= $t0) | 1" | wc -l)" -eq 0 ]
	[ "$(jqs "$S" "select(.t==\"map\" and .time != $t0) | 1" | wc -l)" -eq 0 ]
	[ "$(jqs "$S" "select(.t==\"map\" and .time == $t0) | 1" | wc -l)" -gt 3 ]
}

@test "an exec after attach: the kernel's records come after what /proc said, and win" {
	"$WORKLOADS/execer" 3 3 > /dev/null &
	P=$!
	PIDS+=("$P")
	sleep 0.2
	sp-capture -q -o "$S" -p "$P"
	wait "$P"
	t0=$(jqs "$S" 'select(.t=="process") | .time')
	# Three execs after the attach, each followed by the new image's map.
	run jqs "$S" 'select(.t=="exec" or (.t=="map" and (.path | endswith("/execer")))) | .t'
	[ "$(echo "$output" | tr -d '"\n' | sed 's/execmap/X/g')" = mapXXX ]
	[ "$(jqs "$S" "select(.t==\"exec\" and .time > $t0) | 1" | wc -l)" -eq 3 ]
	[ "$(summary "$S" error_stats | jq '.[] | select(.kind=="unknown_process") | .count')" -eq 0 ]
}

@test "-t profiles exactly the threads given, under their process's pid" {
	start "$WORKLOADS/spin" -t 3 10
	t=$(a_thread "$P")
	sp-capture -q -o "$S" -t "$t" --duration 2
	[ "$(jqs "$S" 'select(.t=="sample") | .tid' | sort -u)" = "$t" ]
	[ "$(jqs "$S" 'select(.t=="sample") | .pid' | sort -u)" = "$P" ]
	[ "$(jqs "$S" 'select(.t=="thread") | .tid')" = "$t" ]
	[ "$(jqs "$S" 'select(.t=="process") | .pid')" = "$P" ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.tids')" = "[$t]" ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.inherit')" = false ]
	# Samples count CPU time, which a busy machine may give the thread little of.
	[ "$(summary "$S" samples)" -gt 50 ]
	run sp-capture -o "$S" -t 4194303 --duration 0.2
	[ "$status" -eq 2 ]
	[[ "$output" == *"no thread 4194303"* ]]
}

@test "-p follows threads and children created after attach" {
	"$WORKLOADS/late_threads" -n 2 -w 1 -v 3 > "$BATS_TEST_TMPDIR/tids" &
	P=$!
	PIDS+=("$P")
	sleep 0.2
	sp-capture -q -o "$S" -p "$P"
	wait "$P"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/tids")" -eq 2 ]
	for t in $(cat "$BATS_TEST_TMPDIR/tids"); do
		[ "$(jqs "$S" "select(.t==\"sample\" and .tid==$t) | .pid" | sort -u)" = "$P" ]
		[ "$(jqs "$S" "select(.t==\"sample\" and .tid==$t) | 1" | wc -l)" -gt 100 ]
		[ "$(jqs "$S" "select(.t==\"fork\" and .tid==$t) | .pid")" = "$P" ]
	done
	# A child forked after attach: its fork, then its samples.
	"$WORKLOADS/forker" -n 6 -v 2 > "$BATS_TEST_TMPDIR/kids" &
	P=$!
	PIDS+=("$P")
	sleep 0.2
	sp-capture -q -o "$S" -p "$P"
	wait "$P"
	late=$(grep -v = "$BATS_TEST_TMPDIR/kids" | tail -n 3)
	[ -n "$late" ]
	for k in $late; do
		[ "$(jqs "$S" "select(.t==\"fork\" and .pid==$k) | .ppid")" = "$P" ]
		[ "$(jqs "$S" "select(.t==\"sample\" and .pid==$k) | 1" | wc -l)" -gt 0 ]
	done
}

# blocked_run OPTS...: attaches for a second to a blocked workload, then
# ends it; its verdict ("eintr=N signals=M") in $verdict.
blocked_run() {
	local fifo=$BATS_TEST_TMPDIR/in.$RANDOM out=$BATS_TEST_TMPDIR/out.$RANDOM w
	mkfifo "$fifo"
	exec {w}<>"$fifo"
	"$WORKLOADS/blocked" -p < "$fifo" > "$out" &
	local b=$!
	PIDS+=("$b")
	for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.05; done
	[ "$(head -n 1 "$out")" = "$b" ]
	sp-capture -q "$@" -o "$S" -p "$b" --duration 1
	[ "$(proc_state "$b")" != T ]
	printf x >&"$w"
	wait "$b"
	exec {w}>&-
	verdict=$(tail -n 1 "$out")
}

@test "attaching sends no signal: read and epoll_wait never see EINTR; with --stop they do" {
	blocked_run
	[ "$verdict" = "eintr=0 signals=0" ]
	# The ticking thread was sampled: the attach was real.
	[ "$(summary "$S" samples)" -gt 5 ]
	[ "$(jqs "$S" 'select(.t=="thread") | .tid' | wc -l)" -eq 4 ]
	# The same program, stopped and continued while attaching, sees EINTR.
	blocked_run --stop
	[[ "$verdict" == eintr=* ]]
	[ "${verdict#eintr=}" != "0 signals=0" ]
	n=${verdict#eintr=}
	[ "${n%% *}" -gt 0 ]
}

@test "threads born while attaching are sampled once: none gets a second set of events" {
	local fifo=$BATS_TEST_TMPDIR/in w
	mkfifo "$fifo"
	exec {w}<>"$fifo"
	"$WORKLOADS/blocked" -p -c < "$fifo" > "$BATS_TEST_TMPDIR/out" &
	b=$!
	PIDS+=("$b")
	for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/out" ] && break; sleep 0.05; done
	# Each churning thread spins 30 ms of its CPU time: some 30 samples
	# at -F 999, 60 if it had two sets of events.
	for i in $(seq 20); do
		sp-capture -q -F 999 -o "$S" -p "$b" --duration 0.3
		jqs "$S" 'select(.t=="sample") | .tid' | sort | uniq -c
	done > "$BATS_TEST_TMPDIR/per-tid"
	printf x >&"$w"
	wait "$b"
	# Counts per recording and thread: the churning threads were sampled...
	[ "$(awk '$1 >= 10' "$BATS_TEST_TMPDIR/per-tid" | wc -l)" -gt 5 ]
	# ...but none twice over.
	awk '$1 > 45' "$BATS_TEST_TMPDIR/per-tid" > "$BATS_TEST_TMPDIR/twice"
	[ ! -s "$BATS_TEST_TMPDIR/twice" ]
}

@test "--pid-file and --name attach to the processes they name" {
	n=spsvc$RANDOM
	cp "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/$n"
	start "$BATS_TEST_TMPDIR/$n" -t 1 10
	a=$P
	echo "$a" > "$BATS_TEST_TMPDIR/svc.pid"
	sp-capture -q -o "$S" --pid-file "$BATS_TEST_TMPDIR/svc.pid" --duration 0.5
	[ "$(jqs "$S" 'select(.t=="header") | .options.pids')" = "[$a]" ]
	[ "$(summary "$S" samples)" -gt 50 ]
	run --separate-stderr sp-capture -q -o "$S" --name "$n" --duration 0.5
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(jqs "$S" 'select(.t=="sample") | .pid' | sort -u)" = "$a" ]
	# Several matches: all attached, and the count said.
	start "$BATS_TEST_TMPDIR/$n" -t 1 10
	b=$P
	run --separate-stderr sp-capture -q -o "$S" --name "$n" --duration 0.5
	[ "$status" -eq 0 ]
	[ "$stderr" = "sp-capture: 2 processes are named '$n': attaching to all of them" ]
	[ "$(jqs "$S" 'select(.t=="header") | .options.pids | sort')" = "$(jq -cn "[$a,$b] | sort")" ]
	[ "$(jqs "$S" 'select(.t=="sample") | .pid' | sort -u | wc -l)" -eq 2 ]
}

@test "a name that matches nothing, a bad pid file: one line naming the cause, status 2" {
	n=spsvc$RANDOM
	cp "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/$n"
	start "$BATS_TEST_TMPDIR/$n" -t 1 10
	run sp-capture -o "$S" --name "${n}x" --duration 0.5
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "sp-capture: no process is named '${n}x'"* ]]
	# What comes close is listed, the running service among it.
	[[ "$output" == *"$n ($P)"* ]]
	[ ! -s "$S" ]
	echo nonsense > "$BATS_TEST_TMPDIR/bad.pid"
	run sp-capture -o "$S" --pid-file "$BATS_TEST_TMPDIR/bad.pid"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"does not hold a pid"* ]]
	run sp-capture -o "$S" --pid-file "$BATS_TEST_TMPDIR/none.pid"
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot read the pid file"* ]]
	run sp-capture -o "$S" --name "$n" -p 1
	[ "$status" -eq 3 ]
}

@test "a pid that does not exist, a process that has exited: one line, status 2" {
	sh -c 'exit 0' &
	gone=$!
	wait "$gone"
	run sp-capture -o "$S" -p "$gone" --duration 0.5
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "sp-capture: no process with pid $gone: it does not exist"* ]]
	# A zombie has exited but is still listed: it ends while attaching.
	sh -c 'sleep 0 & exec sleep 30' &
	P=$!
	disown
	PIDS+=("$P")
	for _ in $(seq 100); do
		z=$(pgrep -P "$P" || true)
		[ -n "$z" ] && [ "$(proc_state "$z")" = Z ] && break
		sleep 0.05
	done
	[ "$(proc_state "$z")" = Z ]
	run sp-capture -o "$S" -p "$P,$z" --duration 0.5
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"process $z exited while attaching"* ]]
	# The live one of the two was let go as it was.
	[ "$(proc_state "$P")" = S ]
}

# detach_run END: records a spinning target until END (INT, TERM or
# duration), and checks that sp-capture holds no perf event once the
# recording is over, while it is still running: it then waits to write
# --kallsyms-out to a FIFO.
detach_run() {
	local ks=$BATS_TEST_TMPDIR/ks.$1 c held
	mkfifo "$ks"
	# The last run's recording stays under its name until this one begins.
	rm -f "$S"
	start "$WORKLOADS/spin" -t 2 20
	if [ "$1" = duration ]; then
		sp-capture -q -o "$S" -p "$P" --duration 3 --kallsyms-out "$ks" &
		c=$!
	else
		sp-capture -q -o "$S" -p "$P" --kallsyms-out "$ks" &
		c=$!
	fi
	# Ended by the teardown if a check fails while it waits on the FIFO.
	PIDS+=("$c")
	# Attached once it holds perf events: a busy machine may take a while.
	for _ in $(seq 200); do
		held=$(perf_fds "$c")
		[ "$held" -gt 0 ] && break
		sleep 0.05
	done
	[ "$held" -gt 0 ]
	[ "$1" = duration ] || kill -"$1" "$c"
	for _ in $(seq 200); do
		sp-cat -t summary "$S" > /dev/null 2>&1 && break
		sleep 0.05
	done
	[ -d "/proc/$c" ]
	[ "$(perf_fds "$c")" -eq 0 ]
	cat "$ks" > /dev/null
	st=0
	wait "$c" || st=$?
	[ "$st" -eq 0 ]
	[ "$(proc_state "$P")" = R ] || [ "$(proc_state "$P")" = S ]
	kill -0 "$P"
}

@test "a clean detach after SIGINT, SIGTERM or --duration: the target runs on, no event stays open" {
	detach_run INT
	detach_run TERM
	detach_run duration
}

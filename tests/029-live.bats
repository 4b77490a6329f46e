#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Live: every stage passes records on while its input is idle, so the end
# of a pipeline sees samples while sp-capture still records; and following
# a file that is being written (sp-cat -f, sp-unwind --follow, sp-fold
# --follow) waits for it, starts over when the path is replaced, and never
# mixes two recordings.  No test measures time: each checks what arrived
# while the capture was still running, or compares a follower's output
# with the finished file's.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	# The follow examples run 20 times in a row each way (make soak: 100).
	REPEAT=${SP_SOAK_REPEAT:-20}
}

teardown() {
	[ -z "${spin:-}" ] || kill "$spin" 2>/dev/null || true
	[ -z "${cap:-}" ] || kill "$cap" 2>/dev/null || true
	exec 7>&- || true
}

# first_line ALIVE_PID OUT: copies its input to OUT; when the first line
# arrives, writes "alive" or "gone" (whether ALIVE_PID still runs) to OUT.when.
first_line() {
	local line state=gone
	IFS= read -r line || return 1
	kill -0 "$1" 2>/dev/null && state=alive
	echo "$state" > "$2.when"
	{ printf '%s\n' "$line"; cat; } > "$2"
}

# live_pipeline END...: sp-capture -F 999 --duration 6 on spin, through
# sp-unwind and sp-symbolize into END; the raw stream is kept in $T/raw.sps
# and END's output in $T/out.
live_pipeline() {
	mkfifo "$T/fifo"
	"$WORKLOADS/spin" 10 &
	spin=$!
	sp-capture -q -F 999 --duration 6 -p "$spin" > "$T/fifo" &
	cap=$!
	local -
	set -o pipefail
	tee "$T/raw.sps" < "$T/fifo" | sp-unwind | sp-symbolize | "$@" | first_line "$cap" "$T/out"
	wait "$cap"
}

@test "samples reach the end of sp-capture | sp-unwind | sp-symbolize | sp-fold --follow while the capture runs" {
	live_pipeline sp-fold --follow
	[ "$(cat "$T/out.when")" = alive ]
	# Every sample of the capture is in the lines, each counted once.
	run -0 sp-cat -t summary "$T/raw.sps"
	n=$(jq .samples <<< "$output")
	[ "$n" -gt 100 ]
	[ "$(awk '{ s += $NF } END { print s }' "$T/out")" -eq "$n" ]
	# Lines that add up to the same stacks as folding the file at once.
	sp-unwind "$T/raw.sps" | sp-symbolize | sp-fold > "$T/whole"
	awk '{ c = $NF; $NF = ""; s[$0] += c } END { for (k in s) print k s[k] }' "$T/out" |
		sort > "$T/summed"
	awk '{ c = $NF; $NF = ""; print $0 c }' "$T/whole" | sort > "$T/whole.sorted"
	cmp "$T/summed" "$T/whole.sorted"
}

@test "sample records reach sp-cat at the end of the live pipeline while the capture runs" {
	live_pipeline sp-cat -t sample
	[ "$(cat "$T/out.when")" = alive ]
	[ "$(jq -r .t < "$T/out" | sort -u)" = sample ]
	[ "$(lines "$T/out")" -eq "$(summary "$T/raw.sps" samples)" ]
}

@test "a raw sample reaches a pipe while sp-capture runs" {
	mkfifo "$T/fifo"
	"$WORKLOADS/spin" 10 &
	spin=$!
	sp-capture -q -F 999 --duration 6 -p "$spin" > "$T/fifo" &
	cap=$!
	sp-cat -t sample < "$T/fifo" | first_line "$cap" "$T/out"
	wait "$cap"
	[ "$(cat "$T/out.when")" = alive ]
}

# example N OLD: runs man page example N once on a spin of 0.5 s, with
# an older recording in place when OLD is "old"; the follower's output
# must be exactly what the finished file gives, and its status 0.
example() {
	local f=$T/rec.sps
	rm -f "$f" "$f.old"
	if [ "$2" = old ]; then
		sp-capture -q -- "$WORKLOADS/spin" 0.2 > "$T/old.sps"
		cp "$T/old.sps" "$f"
	fi
	"$WORKLOADS/spin" 0.5 &
	spin=$!
	cd "$T"
	case $1 in
	cat)
		sp-capture -p $spin -o rec.sps &
		cap=$!
		timeout 60 sp-cat -f rec.sps > "$T/follow.out" 2> "$T/follow.err" || return 1
		wait $cap
		sp-cat rec.sps > "$T/file.out"
		;;
	unwind)
		sp-capture -p $spin -o rec.sps &
		cap=$!
		(set -o pipefail; timeout 60 sp-unwind --follow rec.sps | sp-cat -t stack) \
			> "$T/follow.out" 2> "$T/follow.err" || return 1
		wait $cap
		sp-unwind rec.sps | sp-cat -t stack > "$T/file.out"
		;;
	threads)
		sp-capture -p $spin --no-inherit --refresh-threads 200 -o rec.sps &
		cap=$!
		timeout 60 sp-cat -f -t thread rec.sps > "$T/follow.out" 2> "$T/follow.err" || return 1
		wait $cap
		sp-cat -t thread rec.sps > "$T/file.out"
		;;
	esac
	wait $spin
	spin= cap=
	cmp "$T/follow.out" "$T/file.out" || return 1
	[ -s "$T/follow.out" ] || [ "$1" = threads ] || return 1
	# Notes only: nothing cut short, nothing bad.
	if grep -v "waiting for\|was a finished recording\|sp-capture:" "$T/follow.err"; then
		return 1
	fi
}

@test "sp-cat(1)'s follow example, 20 times, with and without an old file in place" {
	for i in $(seq "$REPEAT"); do
		example cat new || { cat "$T/follow.err"; false; }
		example cat old || { cat "$T/follow.err"; false; }
	done
}

@test "sp-unwind(1)'s follow example, 20 times, with and without an old file in place" {
	for i in $(seq "$REPEAT"); do
		example unwind new || { cat "$T/follow.err"; false; }
		example unwind old || { cat "$T/follow.err"; false; }
	done
}

@test "sp-capture(1)'s --refresh-threads example, 20 times, with and without an old file in place" {
	for i in $(seq "$REPEAT"); do
		example threads new || { cat "$T/follow.err"; false; }
		example threads old || { cat "$T/follow.err"; false; }
	done
}

@test "--follow waits for the file to appear" {
	sp-capture -q -- "$WORKLOADS/spin" 0.2 > "$T/a.sps"
	sp-cat -f "$T/rec.sps" > "$T/out" 2> "$T/err" &
	pid=$!
	sleep 0.5
	kill -0 $pid
	cp "$T/a.sps" "$T/rec.sps"
	wait $pid
	sp-cat "$T/a.sps" | cmp - "$T/out"
	grep -q "waiting for '$T/rec.sps' to appear" "$T/err"
}

# Keeps a writer on $T/rec.sps (descriptor 7; bats keeps 3), as a recorder does.
hold_writer() {
	exec 7>> "$T/rec.sps"
}

@test "a path replaced by a new file starts over on it, in a new segment, with a note" {
	sp-capture -q -- "$WORKLOADS/spin" 0.3 > "$T/a.sps"
	sp-capture -q -- "$WORKLOADS/spin" 0.3 > "$T/b.sps"
	: > "$T/rec.sps"
	hold_writer
	timeout 60 sp-cat -f "$T/rec.sps" > "$T/out" 2> "$T/err" 7>&- &
	pid=$!
	# Half of recording a, cut inside a record, then b in its place.
	head -c $(($(stat -c %s "$T/a.sps") / 2)) "$T/a.sps" >&7
	sleep 0.5
	cp "$T/b.sps" "$T/new.sps"
	mv "$T/new.sps" "$T/rec.sps"
	st=0
	wait $pid || st=$?
	[ "$st" -eq 0 ]
	grep -q "'$T/rec.sps' was replaced by a new file; starting over on it" "$T/err"
	# The last segment is b, whole; what came before is a's start, only a's.
	n=$(grep -n '"t":"header"' "$T/out" | tail -n 1 | cut -d: -f1)
	[ "$n" -gt 1 ]
	tail -n +"$n" "$T/out" > "$T/last"
	sp-cat "$T/b.sps" | cmp - "$T/last"
	head -n $((n - 1)) "$T/out" > "$T/first"
	sp-cat "$T/a.sps" | head -n $((n - 1)) | cmp - "$T/first"
}

@test "a file truncated and written again in place starts over, never mixing the two" {
	sp-capture -q -- "$WORKLOADS/spin" 0.3 > "$T/a.sps"
	sp-capture -q -- "$WORKLOADS/spin" 0.3 > "$T/b.sps"
	: > "$T/rec.sps"
	hold_writer
	timeout 60 sp-unwind --follow "$T/rec.sps" > "$T/u.sps" 2> "$T/err" 7>&- &
	pid=$!
	head -c $(($(stat -c %s "$T/a.sps") / 2)) "$T/a.sps" >&7
	sleep 0.5
	truncate -s 0 "$T/rec.sps"
	cat "$T/b.sps" >&7
	st=0
	wait $pid || st=$?
	[ "$st" -eq 0 ]
	grep -Eq "'$T/rec.sps' (shrank|was rewritten from its start); starting over on it" "$T/err"
	# The last segment is b unwound, exactly as from the file (but for the
	# header, which names sp-unwind's arguments).
	sp-unwind "$T/b.sps" | sp-cat > "$T/b.json"
	sp-cat "$T/u.sps" > "$T/u.json"
	n=$(grep -n '"t":"header"' "$T/u.json" | tail -n 1 | cut -d: -f1)
	tail -n +$((n + 1)) "$T/u.json" | grep -v '"t":"unwind"' > "$T/last"
	tail -n +2 "$T/b.json" | grep -v '"t":"unwind"' | cmp - "$T/last"
}

@test "a follower ends, cut short (status 1), when the writer is gone without a summary" {
	sp-capture -q -- "$WORKLOADS/spin" 0.3 > "$T/a.sps"
	: > "$T/rec.sps"
	hold_writer
	timeout 60 sp-cat -f "$T/rec.sps" > "$T/out" 2> "$T/err" 7>&- &
	pid=$!
	# All of a but its summary, then the writer closes.
	sp-cat "$T/a.sps" | grep -v '"t":"summary"' | sp-cat --from-json >&7
	sleep 0.5
	kill -0 $pid
	exec 7>&-
	st=0
	wait $pid || st=$?
	[ "$st" -eq 1 ]
	grep -q "no process writes '$T/rec.sps' any more" "$T/err"
	grep -q "stream ends without a summary record" "$T/err"
	[ "$(lines "$T/out")" -eq $(($(sp-cat "$T/a.sps" | wc -l) - 1)) ]
}

@test "a finished file with no writer is read whole and ends at its summary" {
	sp-capture -q -- "$WORKLOADS/spin" 0.2 > "$T/rec.sps"
	run -0 timeout 60 sp-cat -f "$T/rec.sps"
	[ "$output" = "$(sp-cat "$T/rec.sps")" ]
}

@test "--follow of a directory is an error, not a wait; a named pipe is read to its end" {
	run timeout 20 sp-cat -f "$T"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[[ "$output" == *"'$T' is a directory, not a stream"* ]]
	mkfifo "$T/fifo"
	cat "$VECTORS/raw.sps" > "$T/fifo" &
	run -0 timeout 20 sp-cat -f "$T/fifo"
	[ "$output" = "$(cat "$VECTORS/raw.jsonl")" ]
}

@test "scripts/bench --only live: figure 11, the latency percentiles of the live pipeline" {
	# The benchmark measures the normal build (see tests/095-bench.bats).
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only live
	[[ "$output" == *"11 live: sample time to its line at the end of sp-capture | sp-unwind | sp-symbolize | sp-cat"* ]]
	grep -qE '^   latency p50 +[0-9]+ms' <<< "$output"
	grep -qE '^   latency p95 +[0-9]+ms.*< 200 ms +(met|not met)' <<< "$output"
	grep -qE '^   latency p99 +[0-9]+ms' <<< "$output"
	run -1 grep -qE '^(1a|4a|8 |10 )' <<< "$output"
}

@test "an empty file nobody writes is waited on, as a missing one, until a recording replaces it" {
	sp-capture -q -- "$WORKLOADS/spin" 0.2 > "$T/a.sps"
	: > "$T/rec.sps"
	timeout 60 sp-cat -f "$T/rec.sps" > "$T/out" 2> "$T/err" &
	pid=$!
	sleep 2
	kill -0 $pid
	cp "$T/a.sps" "$T/new.sps"
	mv "$T/new.sps" "$T/rec.sps"
	wait $pid
	sp-cat "$T/a.sps" | cmp - "$T/out"
}

@test "sp-symbolize -f follows what sp-unwind --follow writes while sp-capture records" {
	cd "$T"
	sp-capture -q -o rec.sps -- "$WORKLOADS/spin" 1 &
	cap=$!
	timeout 60 sp-unwind --follow rec.sps -o u.sps &
	unw=$!
	run -0 timeout 60 sp-symbolize -f u.sps -o s.sps
	wait $cap
	wait $unw
	cap=
	sp-symbolize u.sps | sp-cat | tail -n +2 > "$T/file.json"
	sp-cat s.sps | tail -n +2 | cmp - "$T/file.json"
	[ "$(sp-cat -t sample s.sps | wc -l)" -eq "$(summary rec.sps samples)" ]
}

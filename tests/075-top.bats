#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-fold --top and sp-top: the functions with most self and total time,
# offline, as text reports of a live pipeline, and on a real terminal.

load helper

setup_file() {
	local -
	set -o pipefail
	S=$BATS_FILE_TMPDIR/spin.sps
	# The live tests symbolize with the cache this fills.
	export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/cache
	sp-capture -q -F 999 -o "$BATS_FILE_TMPDIR/raw.sps" -- "$WORKLOADS/spin" -t 2 4
	sp-unwind -o "$BATS_FILE_TMPDIR/unwound.sps" "$BATS_FILE_TMPDIR/raw.sps"
	sp-symbolize -o "$S" "$BATS_FILE_TMPDIR/unwound.sps"
}

setup() {
	S=$BATS_FILE_TMPDIR/spin.sps
	U=$BATS_FILE_TMPDIR/unwound.sps
	SPIN=
	TMUX_SOCK=sp-top-test-$$-$BATS_TEST_NUMBER
}

teardown() {
	[ -z "$SPIN" ] || kill "$SPIN" 2>/dev/null || true
	tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true
}

# The sum of the last field of every line of a file (folded counts).
sum_last() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

# The report's rows: the lines after the column heads, up to a blank line.
rows() {
	awk '/^# +self%/ { on = 1; next } on && !NF { exit } on' "$1"
}

# Whether column COL (a number) of the rows in FILE never grows.
non_increasing() {
	awk -v c="$2" 'NR > 1 && $c > prev { bad = 1 } { prev = $c } END { exit bad }' "$1"
}

@test "sp-fold --top 5: the hot functions first, percentages that add up, both sorts" {
	run -0 sp-fold --top 5 "$S"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/top"
	# The header's samples are every sample the stream's stacks fold.
	sp-fold "$S" > "$BATS_TEST_TMPDIR/folded"
	all=$(sum_last "$BATS_TEST_TMPDIR/folded")
	[ "$all" -ge 200 ]
	[ "${lines[0]}" = "# $all samples" ]
	[[ "${lines[1]}" == '#   self%      self  total%     total  function (module)' ]]
	rows "$BATS_TEST_TMPDIR/top" > "$BATS_TEST_TMPDIR/rows"
	[ "$(lines "$BATS_TEST_TMPDIR/rows")" -eq 5 ]
	# The two hottest are the leaf's and cos's (a libm variant, or its PLT entry).
	head -2 "$BATS_TEST_TMPDIR/rows" > "$BATS_TEST_TMPDIR/hot"
	grep -Eq ' (__cos[a-z_0-9]*|cos) \(libm' "$BATS_TEST_TMPDIR/hot"
	grep -Eq ' (leaf_compute \(spin\)|(__cos[a-z_0-9]*|cos) \(libm)' <(sed -n 2p "$BATS_TEST_TMPDIR/hot")
	non_increasing "$BATS_TEST_TMPDIR/rows" 2
	# Self shares add to at most 100%; over every function they are the whole.
	awk '{ sub(/%/, "", $1); p += $1 } END { exit !(p <= 100.05) }' "$BATS_TEST_TMPDIR/rows"
	sp-fold --top 0 "$S" > "$BATS_TEST_TMPDIR/every"
	rows "$BATS_TEST_TMPDIR/every" > "$BATS_TEST_TMPDIR/every.rows"
	[ "$(awk '{ s += $2 } END { print s }' "$BATS_TEST_TMPDIR/every.rows")" -eq "$all" ]
	# No total is above the whole, none below its self.
	awk -v all="$all" '$4 > all || $4 < $2 { bad = 1 } END { exit bad }' "$BATS_TEST_TMPDIR/every.rows"
	# leaf_compute is on nearly every stack.
	leaf=$(awk '$5 == "leaf_compute" { print $4 }' "$BATS_TEST_TMPDIR/every.rows")
	[ "$leaf" -ge $((all * 8 / 10)) ]

	run -0 sp-fold --top 4 --sort total "$S"
	printf '%s\n' "$output" | rows /dev/stdin > "$BATS_TEST_TMPDIR/bytotal"
	non_increasing "$BATS_TEST_TMPDIR/bytotal" 4
	first=$(awk 'NR == 1 { print $4 }' "$BATS_TEST_TMPDIR/bytotal")
	[ "$first" -ge $((all * 9 / 10)) ]
	# By total, the callers of the chain come before the leaf.
	run -1 grep -q ' __cos' "$BATS_TEST_TMPDIR/bytotal"

	run -3 sp-fold --sort total "$S"
	run -3 sp-fold --top 5 --format pprof "$S"
	run -3 sp-fold --top x "$S"
}

@test "sp-fold --top on an unwound stream names frames by module" {
	run -0 sp-fold --top 3 "$U"
	[[ "$output" == *'[libm.so.6]'* ]]
	[[ "$output" == *'[spin]'* ]]
}

@test "sp-top --once: one report of the whole file, from a file or standard input" {
	sp-fold "$S" > "$BATS_TEST_TMPDIR/folded"
	all=$(sum_last "$BATS_TEST_TMPDIR/folded")
	run -0 sp-top --once "$S"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/report"
	[ "$(grep -c '^sp-top report' "$BATS_TEST_TMPDIR/report")" -eq 1 ]
	grep -q "^sp-top report 1: whole input: $all samples, lost 0, 1 process, 2 threads" "$BATS_TEST_TMPDIR/report"
	grep -Eq '^processes: [0-9]+ spin 100.0%' "$BATS_TEST_TMPDIR/report"
	rows "$BATS_TEST_TMPDIR/report" > "$BATS_TEST_TMPDIR/rows"
	grep -q ' leaf_compute (spin)$' "$BATS_TEST_TMPDIR/rows"
	# The same rows as sp-fold --top.
	sp-fold --top 25 "$S" | rows /dev/stdin > "$BATS_TEST_TMPDIR/fold.rows"
	diff "$BATS_TEST_TMPDIR/fold.rows" "$BATS_TEST_TMPDIR/rows"
	run -0 sp-top --once < "$S"
	[ "$(printf '%s\n' "$output" | rows /dev/stdin)" = "$(cat "$BATS_TEST_TMPDIR/rows")" ]
	# Off a terminal, a file gets one report too.
	run -0 sp-top --rows 3 "$S"
	[ "$(grep -c '^sp-top report' <<< "$output")" -eq 1 ]
	[ "$(printf '%s\n' "$output" | rows /dev/stdin | wc -l)" -eq 3 ]
	run -0 sp-top --once --filter leaf --sort total "$S"
	[ "$(printf '%s\n' "$output" | rows /dev/stdin | awk '{ print $5 }')" = leaf_compute ]
}

@test "sp-top --once: no samples and raw streams are said, with their exit status" {
	run -1 sp-top --once /dev/null
	[[ "$output" == *"'/dev/null' holds no samples"* ]]
	run -2 sp-top --once "$BATS_FILE_TMPDIR/raw.sps"
	[[ "$output" == *'the stream is raw; run sp-unwind and sp-symbolize first'* ]]
	run -3 sp-top --once -n 2 "$S"
	run -3 sp-top --once -p 1
	run -3 sp-top -F 99 "$S"
}

@test "sp-top -n N -p PID: text reports while the capture runs, naming the hot function" {
	"$WORKLOADS/spin" -t 2 120 3>&- &
	SPIN=$!
	export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/cache
	run -0 sp-top -n 2 -d 1 --rows 5 -p "$SPIN"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/two"
	[ "$(grep -c '^sp-top report' "$BATS_TEST_TMPDIR/two")" -eq 2 ]
	grep -q '^sp-top report 1: last ' "$BATS_TEST_TMPDIR/two"
	grep -q '^sp-top report 2: last ' "$BATS_TEST_TMPDIR/two"
	# Time enough for a busy machine to start the pipeline, one report a second.
	run -0 sp-top -n 8 -d 1 --rows 5 -p "$SPIN"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/reports"
	[ "$(grep -c '^sp-top report' "$BATS_TEST_TMPDIR/reports")" -eq 8 ]
	grep -q '^sp-top report 8: last [0-9.]* s: [0-9]* samples, [0-9.]* samples/s, lost [0-9]* ([0-9]* in all), 1 process, 2 threads$' "$BATS_TEST_TMPDIR/reports"
	grep -q "^processes: $SPIN spin 100.0%" "$BATS_TEST_TMPDIR/reports"
	last_report_names leaf_compute "$BATS_TEST_TMPDIR/reports"
	# The reports came while the target ran: it still does.
	kill -0 "$SPIN"
}

@test "sp-top -n 8 -- COMMAND: runs the pipeline on a command it launches" {
	export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/cache
	run -0 sp-top -n 8 -d 1 --rows 5 -- "$WORKLOADS/spin" 60
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/reports"
	[ "$(grep -c '^sp-top report' "$BATS_TEST_TMPDIR/reports")" -eq 8 ]
	last_report_names leaf_compute "$BATS_TEST_TMPDIR/reports"
	# A pipeline that cannot start says why and fails.
	true &
	gone=$!
	wait "$gone"
	run -2 sp-top -n 1 -p "$gone"
	[[ "$output" == *"sp-capture: no process with pid $gone"* ]]
	[[ "$output" == *'sp-capture exited with status 2'* ]]
}

@test "sp-top -f FILE: reports of a file being written until its summary" {
	export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/cache
	L=$BATS_TEST_TMPDIR/live.sps
	: > "$L"
	(sp-capture -q --duration 6 -- "$WORKLOADS/spin" 60 | sp-unwind | sp-symbolize > "$L") 3>&- &
	run -0 sp-top -f -d 1 --rows 5 "$L"
	wait
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/reports"
	# A report a second while the file grew, the last when its summary came.
	[ "$(grep -c '^sp-top report' "$BATS_TEST_TMPDIR/reports")" -ge 2 ]
	last_report_names leaf_compute "$BATS_TEST_TMPDIR/reports"
	run -0 sp-cat -t summary "$L"
}

# last_report_names FUNCTION FILE: the last report of FILE has FUNCTION in its rows.
last_report_names() {
	awk -v fn="$1" '/^sp-top report/ { n++; seen = 0 } $5 == fn { seen = n } END { exit !(seen == n && n) }' "$2"
}

# wait_pane PATTERN: polls the terminal until a line matches PATTERN (grep -E), up to 30 s.
wait_pane() {
	local i
	for ((i = 0; i < 150; i++)); do
		tmux -L "$TMUX_SOCK" capture-pane -p -t top > "$BATS_TEST_TMPDIR/pane" 2>/dev/null || true
		grep -Eq -- "$1" "$BATS_TEST_TMPDIR/pane" && return 0
		sleep 0.2
	done
	echo "not on the screen: $1" >&2
	cat "$BATS_TEST_TMPDIR/pane" "$BATS_TEST_TMPDIR/stderr" >&2
	return 1
}

# wait_gone PATTERN: polls until no line matches PATTERN, up to 30 s.
wait_gone() {
	local i
	for ((i = 0; i < 150; i++)); do
		tmux -L "$TMUX_SOCK" capture-pane -p -t top > "$BATS_TEST_TMPDIR/pane" 2>/dev/null || true
		grep -Eq -- "$1" "$BATS_TEST_TMPDIR/pane" || return 0
		sleep 0.2
	done
	echo "still on the screen: $1" >&2
	cat "$BATS_TEST_TMPDIR/pane" "$BATS_TEST_TMPDIR/stderr" >&2
	return 1
}

@test "sp-top on a terminal: header, hot function, keys for sort, filter, callers, pause, quit" {
	command -v tmux
	st=$BATS_TEST_TMPDIR/status
	tmux -L "$TMUX_SOCK" new-session -d -s top -x 120 -y 40 \
		"'$BIN/sp-top' -- '$WORKLOADS/spin' 120 2> '$BATS_TEST_TMPDIR/stderr'; echo \$? > '$st'"
	wait_pane '^sp-top  '
	wait_pane '^last [0-9.]+ s: [0-9]+ samples, [0-9.]+ samples/s, lost [0-9]+ '
	wait_pane '^processes: [0-9]+ spin '
	wait_pane ' leaf_compute \(spin\)'
	wait_pane '^sort: self '
	wait_pane '\*SELF%'
	tmux -L "$TMUX_SOCK" send-keys -t top t
	wait_pane '^sort: total '
	wait_pane '\*TOTAL%'
	wait_gone '\*SELF%'
	# A filter: only functions whose names hold the text.
	tmux -L "$TMUX_SOCK" send-keys -t top / leaf
	wait_pane '^filter: leaf'
	tmux -L "$TMUX_SOCK" send-keys -t top Enter
	wait_pane 'filter: leaf$'
	wait_gone '\((libm|libc)'
	wait_pane ' leaf_compute \(spin\)'
	wait_gone ' recurse \(spin\)'
	# Enter: the callers of the selected function (the one row left).
	tmux -L "$TMUX_SOCK" send-keys -t top Enter
	wait_pane 'CALLER \(MODULE\) of leaf_compute'
	wait_pane ' recurse \(spin\)'
	tmux -L "$TMUX_SOCK" send-keys -t top Escape
	wait_pane 'FUNCTION \(MODULE\)'
	tmux -L "$TMUX_SOCK" send-keys -t top p
	wait_pane '^sort: total  process: [0-9]+ '
	tmux -L "$TMUX_SOCK" send-keys -t top Space
	wait_pane '\[paused\]'
	tmux -L "$TMUX_SOCK" send-keys -t top q
	for ((i = 0; i < 150; i++)); do
		[ -s "$st" ] && break
		sleep 0.2
	done
	[ "$(cat "$st")" = 0 ]
	# The pane's program has ended: the session is gone.
	for ((i = 0; i < 50; i++)); do
		tmux -L "$TMUX_SOCK" has-session -t top 2>/dev/null || break
		sleep 0.2
	done
	run -1 tmux -L "$TMUX_SOCK" has-session -t top
}

@test "sp-top on a terminal reads a pipeline on standard input and redraws at a new size" {
	command -v tmux
	st=$BATS_TEST_TMPDIR/status
	tmux -L "$TMUX_SOCK" new-session -d -s top -x 100 -y 30 \
		"'$BIN/sp-capture' -q -- '$WORKLOADS/spin' 120 | '$BIN/sp-unwind' | '$BIN/sp-symbolize' | '$BIN/sp-top' -d 0.5 2> '$BATS_TEST_TMPDIR/stderr'; echo \$? > '$st'"
	wait_pane ' leaf_compute \(spin\)'
	wait_pane '^sp-top  standard input'
	tmux -L "$TMUX_SOCK" resize-window -t top -x 70 -y 20
	wait_pane 'q quit'
	tmux -L "$TMUX_SOCK" capture-pane -p -t top > "$BATS_TEST_TMPDIR/pane"
	[ "$(awk 'length > 70' "$BATS_TEST_TMPDIR/pane" | wc -l)" -eq 0 ]
	tmux -L "$TMUX_SOCK" send-keys -t top q
	for ((i = 0; i < 150; i++)); do
		[ -s "$st" ] && break
		sleep 0.2
	done
	[ "$(cat "$st")" = 0 ]
}

@test "sp-fold --top: a sample with no frame to show is the self of [process]" {
	local -
	set -o pipefail
	local j=$BATS_TEST_TMPDIR/e.jsonl
	# Three samples of a stack with no frame, before the summary.
	# Read whole: grep -m1 leaving early would kill sp-cat by SIGPIPE, a
	# failure under pipefail.
	sp-cat -t sample "$S" > "$BATS_TEST_TMPDIR/samples.jsonl"
	sample=$(sed -n '1s/"stack":[0-9]*/"stack":9999/p' "$BATS_TEST_TMPDIR/samples.jsonl")
	sp-cat "$S" | awk -v s="$sample" '/"t":"summary"/ {
		print "{\"t\":\"symstack\",\"id\":9999,\"frames\":[]}"
		for (i = 0; i < 3; i++) print s
	} { print }' > "$j"
	sps_from_json "$j" "$BATS_TEST_TMPDIR/e.sps"
	sp-fold --top 0 "$BATS_TEST_TMPDIR/e.sps" > "$BATS_TEST_TMPDIR/top"
	all=$(sp-fold "$BATS_TEST_TMPDIR/e.sps" | sum_last /dev/stdin)
	[ "$all" -eq $(($(sp-fold "$S" | sum_last /dev/stdin) + 3)) ]
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/top")" = "# $all samples" ]
	rows "$BATS_TEST_TMPDIR/top" > "$BATS_TEST_TMPDIR/rows"
	[ "$(awk '{ s += $2 } END { print s }' "$BATS_TEST_TMPDIR/rows")" -eq "$all" ]
	[ "$(awk '$5 == "[process]" { print $2, $4 }' "$BATS_TEST_TMPDIR/rows")" = "3 3" ]
}

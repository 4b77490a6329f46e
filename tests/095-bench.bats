#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# scripts/bench --quick: the benchmark harness keeps working.

load helper

# bench_maps: the perf maps in /tmp that the benchmark's own Node and
# CPython runs wrote: they name its scripts by the paths it gives them
# (Node's absolute, CPython's relative to the tree), which no other test
# uses.
bench_maps() {
	grep -l -e "$TOP/tests/workloads/hot.js" -e ':tests/workloads/pywork.py' \
		/tmp/perf-*.map 2>/dev/null | sort
}

# bench_workloads: the pids of the workloads of figure 9 that are running:
# only the benchmark runs spin and manythreads with these arguments.
bench_workloads() {
	pgrep -f -- "workloads/(spin -t 1|manythreads -n 500) 600\$"
}

@test "scripts/bench --quick prints every figure with its target" {
	local before
	before=$(bench_maps)
	# The benchmark measures the normal build; sanitizer builds are not
	# for timing (and LeakSanitizer cannot run in its pid namespaces).
	run env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick
	echo "$output"
	[ "$status" -eq 0 ]
	local out=$output
	for fig in "1a workload slowdown, 4999 Hz" "1b extra CPU-seconds, 999 Hz" \
		   "2  bytes per sample, 999 Hz" "3  lost samples, 999 Hz" \
		   "4a sp-unwind" "4c sp-unwind | sp-symbolize | sp-fold" "4d sp-fold" \
		   "5  peak RSS" "6  stack completeness" "sp-flame 100k lines" \
		   "8  runtimes" "8a C: spin" "8b C in a SIGPROF handler" "8c Node" \
		   "8d Java" "8e CPython" "8f Go" "9  attaching" "9a 50 processes" \
		   "9b one process of 500 threads" "10 stripped binaries" "10a Go" \
		   "10b C: spin -t 2 after strip" "10c Debian's xz" "10d Rust" \
		   "12 system-wide" "13 --stack-size auto" "14 off-CPU" \
		   "15 --call-graph fp and dwarf" "16 perf.data import" "17 mappings" \
		   "18 symbolizers" "19 compressed streams" "20 long recordings" \
		   "1a slowdown above the floor, 999 Hz" \
		   "1d recorder CPU per 1000 samples, 999 Hz" "21a first runs" \
		   "21b the same, a 1 s recording" "21c the same, a C++ program"; do
		[[ "$output" == *"$fig"* ]]
	done
	# Every target is judged (met, not met, or why not), never left blank.
	[[ "$output" == *"met"* ]]
	run -1 grep -q 'not measured yet' <<< "$output"
	# Figure 8: each of the six workloads has both engines' rows and the
	# agreement row, with a figure or "unavailable" (a runtime that is not
	# installed); the C workloads always have figures.
	local rows
	rows=$(grep -cE '^   complete stacks, --engine=(stackpulse|libunwind) +([0-9.]+%|- .*unavailable)' <<< "$out")
	[ "$rows" -eq 12 ]
	rows=$(grep -cE '^   engines agree \(frames, both complete\) +([0-9.]+%|- .*unavailable)' <<< "$out")
	[ "$rows" -eq 6 ]
	grep -A 3 '^8a C: spin' <<< "$out" | grep -qE '^   engines agree \(frames, both complete\) +[0-9.]+%'
	grep -A 3 '^8b C in a SIGPROF' <<< "$out" | grep -qE '^   complete stacks, --engine=libunwind +[0-9.]+%'
	check_attach_rows "$out"
	check_stripped_rows "$out"
	check_system_rows "$out"
	check_stackauto_rows "$out"
	check_offcpu_rows "$out"
	check_fp_rows "$out"
	check_compress_rows "$out"
	check_first_rows "$out"
	check_floor_rows "$out"
	# The perf maps the runtimes wrote are gone: none is new.
	run -0 comm -13 <(echo "$before") <(bench_maps)
	[ -z "$output" ]
}

# check_compress_rows OUTPUT: figure 19 has sp-capture's bytes per sample
# and recorder CPU, plain and -z, with perf's beside them (or "perf
# unavailable"), and -z's ratio to plain.
check_compress_rows() {
	local -
	set -o pipefail
	local fig r='( \[[^]]*\])?'
	fig=$(grep -A 11 '^19 compressed streams' <<< "$1")
	grep -qE "^   bytes per sample, plain +[1-9][0-9]*$r +([1-9][0-9]*|perf unavailable)" <<< "$fig"
	grep -qE "^   bytes per sample, -z +[1-9][0-9]*$r +([1-9][0-9]*|perf unavailable)" <<< "$fig"
	grep -qE "^   -z against plain: bytes per sample +0\.[0-9]+ " <<< "$fig"
	grep -qE "^   recorder user\+sys, -z +[0-9.]+s$r +([0-9.]+s|perf unavailable)" <<< "$fig"
	grep -qE "^   recorder user\+sys per 1000 samples, -z +[0-9]+ms$r " <<< "$fig"
}

# check_first_rows OUTPUT: figure 21 has, for each of its three
# workloads, a cold and a warm rate of ours beside perf's (or why perf has
# none), and the two stages' own rates.
check_first_rows() {
	local rows
	rows=$(grep -cE '^   (cold first run|warm): samples/s per core +[0-9.]+[kM]?/s +([0-9.]+[kM]?/s +[0-9.]+ +>= [0-9]+ +(met|not met)|(perf|stackcollapse) unavailable)' <<< "$1")
	[ "$rows" -eq 6 ]
	rows=$(grep -cE '^   sp-(unwind alone: frames/s per core|symbolize alone: addresses/s/core) +[0-9.]+[kM]?/s' <<< "$1")
	[ "$rows" -eq 6 ]
}

# check_floor_rows OUTPUT: figure 1 has, at each rate, the floor's
# slowdown (perf record with no call graph), each profiler's slowdown
# above it and each recorder's own CPU time per 1000 samples, with figures
# of ours and perf's (or "perf unavailable").
check_floor_rows() {
	local -
	set -o pipefail
	local r='( \[[^]]*\])?' hz
	for hz in 4999 999; do
		grep -qE "^   floor: perf, no call graph, $hz Hz +- +([-+][0-9.]+%$r|perf unavailable)" <<< "$1"
		grep -qE "^1a slowdown above the floor, $hz Hz +[-+][0-9.]+%$r +([-+][0-9.]+%$r|perf unavailable)" <<< "$1"
		grep -qE "^1d recorder CPU per 1000 samples, $hz Hz +[0-9]+ms$r +([0-9]+ms$r|perf unavailable)" <<< "$1"
	done
}

# check_stripped_rows OUTPUT: figure 10 has, for each of its four
# binaries, the complete stacks and the frames with a function judged
# (or why not: a toolchain that is not installed); the stripped C
# workload always has figures, perf's beside ours.
check_stripped_rows() {
	local -
	set -o pipefail
	local rows
	rows=$(grep -cE '^   complete stacks; perf: --call-graph dwarf +([0-9.]+% .*>= perf +(met|not met)|- .*(unavailable|not measured))' <<< "$1")
	[ "$rows" -eq 4 ]
	rows=$(grep -cE '^   frames with a function; perf: dwarf +([0-9.]+% .*>= 99% +(met|not met)|- .*(unavailable|not measured))' <<< "$1")
	[ "$rows" -eq 4 ]
	grep -A 6 '^10b C: spin' <<< "$1" |
		grep -qE '^   complete stacks; perf: -g +[0-9.]+% +[0-9.]+% '
	grep -A 6 '^10b C: spin' <<< "$1" |
		grep -qE '^   frames with a function; perf: dwarf +[0-9.]+% +[0-9.]+% '
}

# check_system_rows OUTPUT: figure 12 has, when the build's sp-capture
# has -a, its lost samples, bytes per sample and recorder's CPU time with
# figures of ours and perf's (or "perf unavailable"); when it has not,
# those three rows say why.
check_system_rows() {
	local -
	set -o pipefail
	local rows help
	help=$("${SP_BUILD%/san}/bin/sp-capture" --help)
	if grep -qE '^ +-a, ' <<< "$help"; then
		# A figure, then its [min, max] when there were rounds.
		local r='( \[[^]]*\])?'
		grep -qE "^   lost samples +[0-9]+$r +([0-9]+|perf unavailable)" <<< "$1"
		grep -qE "^   bytes per sample +[1-9][0-9]*$r +([1-9][0-9]*|perf unavailable)" <<< "$1"
		grep -qE "^   recorder's user\+sys +[0-9.]+s$r +([0-9.]+s|perf unavailable)" <<< "$1"
		grep -qE "^   samples per run +[1-9][0-9]*$r +" <<< "$1"
	else
		rows=$(grep -cE "^   (lost samples|bytes per sample|recorder's user\+sys) +- +- .*not measured: sp-capture has no -a\$" <<< "$1")
		[ "$rows" -eq 3 ]
	fi
}

# check_offcpu_rows OUTPUT: figure 14 has, when the build's sp-capture
# has --off-cpu, the time added per switch, the lost samples and the bytes
# per switch with figures of ours and perf's (or "perf unavailable"), the
# same with sp-capture's 8 KiB window, and
# perf record --off-cpu's row with figures or a note that says why not;
# when it has not, those rows say why.
check_offcpu_rows() {
	local -
	set -o pipefail
	local fig rows help
	help=$("${SP_BUILD%/san}/bin/sp-capture" --help)
	fig=$(grep -A 12 '^14 off-CPU' <<< "$1")
	if grep -qE '^ +--off-cpu' <<< "$help"; then
		local r='( \[[^]]*\])?'
		grep -qE "^   switcher alone: wall time per switch +[1-9][0-9]*ns$r +" <<< "$fig"
		# The time added is a difference, which noise can make negative.
		grep -qE "^   ns added per switch +-?[0-9]+ns$r +(-?[0-9]+ns$r|perf unavailable)" <<< "$fig"
		grep -qE "^   lost samples +[0-9]+$r +([0-9]+$r|perf unavailable)" <<< "$fig"
		grep -qE "^   bytes per switch +[1-9][0-9]*$r +([1-9][0-9]*$r|perf unavailable)" <<< "$fig"
		grep -qE "^   switches per run +[1-9][0-9]*$r +" <<< "$fig"
		grep -qE "^   --stack-size 8K: ns added per switch +-?[0-9]+ns$r +(-?[0-9]+ns$r|perf unavailable)" <<< "$fig"
		grep -qE "^   --stack-size 8K: bytes per switch +[1-9][0-9]*$r +([1-9][0-9]*$r|perf unavailable)" <<< "$fig"
		if grep -qE '^   perf --off-cpu: ns added per switch +- +- .*not measured: see the note$' <<< "$fig"; then
			grep -qE '^note: perf record --off-cpu \(14\) not measured: .+' <<< "$1"
		else
			grep -qE "^   perf --off-cpu: ns added per switch +-?[0-9]+ns$r +(-?[0-9]+ns$r|perf unavailable)" <<< "$fig"
		fi
	else
		rows=$(grep -cE "^   (ns added per switch|lost samples|bytes per switch) +- +- .*not measured: sp-capture has no --off-cpu\$" <<< "$fig")
		[ "$rows" -eq 3 ]
	fi
}

# check_fp_rows OUTPUT: figure 15 has, for --call-graph fp and dwarf at
# 999 Hz, the slowdown, the extra CPU-seconds, the bytes per sample of
# both workloads and the recorder's CPU time with figures of ours and
# perf's (or "perf unavailable"), fp's bytes and CPU with the ratio of the
# two modes; and the same at 4999 Hz, unless the kernel's sample rate
# limit was below it.
check_fp_rows() {
	local -
	set -o pipefail
	local fig rows r='( \[[^]]*\])?' hz mode
	fig=$(grep -A 22 '^15 --call-graph fp and dwarf' <<< "$1")
	grep -qE '^   spin-fp alone: seconds per pass +[0-9.]+us' <<< "$fig"
	for hz in 999 4999; do
		if [ $hz = 4999 ] &&
		   grep -qE '^   slowdown, 4999 Hz +- +- .*not measured: above perf_event_max_sample_rate' <<< "$fig"; then
			continue
		fi
		for mode in fp dwarf; do
			grep -qE "^   slowdown, $mode, $hz Hz +[-+][0-9.]+%$r +([-+][0-9.]+%$r|perf unavailable)" <<< "$fig"
			grep -qE "^   extra CPU-seconds, $mode, $hz Hz +[-+][0-9.]+s$r +([-+][0-9.]+s$r|perf unavailable)" <<< "$fig"
		done
		rows=$(grep -cE "^   bytes per sample, (spin|deep)-fp, (fp|dwarf), $hz Hz +[1-9][0-9]*$r +([1-9][0-9]*$r|perf unavailable)" <<< "$fig")
		[ "$rows" -eq 4 ]
		rows=$(grep -cE "^   recorder CPU, deep-fp, (fp|dwarf), $hz Hz +[0-9]+ms$r +([0-9]+ms$r|perf unavailable)" <<< "$fig")
		[ "$rows" -eq 2 ]
		rows=$(grep -cE "^   (bytes per sample, (spin|deep)-fp|recorder CPU, deep-fp), fp, $hz Hz .* fp/dwarf ([0-9.]+|n/a)\$" <<< "$fig")
		[ "$rows" -eq 3 ]
	done
}

# check_stackauto_rows OUTPUT: figure 13 has the slowdown and the extra
# CPU of both windows with a figure of ours (perf's or why not), and the
# window auto chose.
check_stackauto_rows() {
	local -
	set -o pipefail
	local r='( \[[^]]*\])?' w
	for w in "--stack-size auto" "default window"; do
		grep -qE "^   workload slowdown, $w +[-+][0-9.]+%$r +([-+][0-9.]+%|perf unavailable)" <<< "$1"
		grep -qE "^   extra CPU-seconds, $w +[-+][0-9.]+s$r +([-+][0-9.]+s|perf unavailable)" <<< "$1"
	done
	grep -qE "^   auto / default window: slowdown +(-?[0-9.]+|n/a) " <<< "$1"
	grep -qE "^   window chosen +[1-9][0-9]*$r " <<< "$1"
}

# check_attach_rows OUTPUT: figure 9 has, for each of its two workloads,
# the attach time and the lost samples judged against their targets, the
# targets known with sp-capture's count, and the first-sample and
# samples rows with figures of ours.
check_attach_rows() {
	local -
	set -o pipefail
	local rows
	rows=$(grep -cE '^   attach: wall time of a 0.05 s recording +[0-9.]+s .*< 1 s +(met|not met)' <<< "$1")
	[ "$rows" -eq 2 ]
	rows=$(grep -cE '^   lost samples, 999 Hz +[0-9]+ .*ours 0 +(met|not met)' <<< "$1")
	[ "$rows" -eq 2 ]
	grep -A 8 '^9a 50 processes' <<< "$1" |
		grep -qE '^   processes attached +50 .*all 50 +met'
	grep -A 8 '^9b one process of 500 threads' <<< "$1" |
		grep -qE '^   threads attached \(with the main one\) +501 .*all 501 +met'
	rows=$(grep -cE '^   start to first sample of the last (process|thread) +[0-9.]+s' <<< "$1")
	[ "$rows" -eq 2 ]
	rows=$(grep -cE '^   (processes|threads) with samples, [0-9.]+ s at 999 Hz +[1-9][0-9]* ' <<< "$1")
	[ "$rows" -eq 2 ]
}

@test "scripts/bench --only: a figure alone, and a figure it does not know" {
	run -3 "$TOP/scripts/bench" --only nosuchfigure
	[[ "$output" == *"unknown figure 'nosuchfigure'"* ]]
	run -3 "$TOP/scripts/bench" --only ,
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only flame
	[[ "$output" == *"sp-flame 100k lines: seconds"* ]]
	run -1 grep -qE '^(1a|2 |4a|6 |7 |8 )' <<< "$output"
}

@test "scripts/bench --only import: figure 16 alone, sp-import's pipeline against perf script" {
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only import
	echo "$output"
	[[ "$output" == *"16 perf.data import"* ]]
	# Both columns have a figure, or perf's says why it has none.
	grep -qE '^   seconds per perf.data +([0-9.]+s +([0-9.]+s +[0-9.]+|perf unavailable)|- +- .*not measured)' <<< "$output"
	run -1 grep -qE '^(1a|2 |4a|6 |7 |8 |9 |12 )' <<< "$output"
}

@test "scripts/bench --only maps: figure 17 alone, sp-unwind's time on many mappings, in order and not" {
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only maps
	echo "$output"
	[[ "$output" == *"17 mappings"* ]]
	grep -qE '^   20000 at falling addresses: seconds +[0-9.]+s' <<< "$output"
	grep -qE '^   churn: 20000 remaps of 2000 regions, seconds +[0-9.]+s' <<< "$output"
	grep -qE '^   down: 20000, peak RSS +[0-9]+' <<< "$output"
	run -1 grep -qE '^(1a|2 |4a|6 |12 |16 )' <<< "$output"
}

@test "scripts/bench --only symbolizers: figure 18 alone, sp-symbolize against addr2line, eu-addr2line and llvm-symbolizer" {
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only symbolizers
	echo "$output"
	[[ "$output" == *"18 symbolizers: 5000 distinct addresses"* ]]
	grep -qE '^   sp-symbolize cold \(empty cache\): seconds +[0-9.]+s' <<< "$output"
	# -j 2 beside -j 1, in wall and CPU time.
	grep -qE '^   cold, -j 1; -j 2: seconds +[0-9.]+s; [0-9.]+s' <<< "$output"
	grep -qE '^   warm, -j 1; -j 2: CPU seconds +[0-9.]+s; [0-9.]+s' <<< "$output"
	local t
	for t in addr2line eu-addr2line llvm-symbolizer; do
		grep -qE "^   warm against $t: seconds +[0-9.]+s +[0-9.]+s" <<< "$output"
	done
	run -1 grep -qE '^(1a|2 |4a|6 |12 |16 |17 )' <<< "$output"
}

@test "scripts/bench --only attach: figure 9 alone, its workloads gone after" {
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only attach
	echo "$output"
	check_attach_rows "$output"
	run -1 grep -qE '^(1a|2 |4a|6 |7 |8 )' <<< "$output"
	# Every workload the figure started was killed.
	run -1 bench_workloads
}

# bench_idle: the pids of the idle processes of figure 12 that are
# running, sleep under the name only the benchmark gives.
bench_idle() {
	pgrep -f -- '^sp-bench-idle 600$'
}

@test "scripts/bench --only system: figure 12 alone, its idle processes gone after" {
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only system
	echo "$output"
	[[ "$output" == *"12 system-wide"* ]]
	check_system_rows "$output"
	run -1 grep -qE '^(1a|2 |4a|6 |7 |8 |9 |10 |11 )' <<< "$output"
	# Every process the figure started was killed.
	run -1 bench_idle
}

@test "scripts/bench --only offcpu,fp: figures 14 and 15 alone, with figures" {
	run env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only offcpu,fp
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"14 off-CPU"* ]]
	[[ "$output" == *"15 --call-graph fp and dwarf"* ]]
	check_offcpu_rows "$output"
	check_fp_rows "$output"
	run -1 grep -qE '^(1a|2 |4a|6 |7 |8 |9 |10 |11 |12 |13 )' <<< "$output"
}

@test "scripts/bench --only attach: interrupted, it kills the workloads it started" {
	env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only attach \
		>"$BATS_TEST_TMPDIR/out" 2>&1 &
	local pid=$! i n=0
	# Until the 50 processes of 9a run (or it ended, which fails here).
	for ((i = 0; i < 600; i++)); do
		n=$(bench_workloads | wc -l)
		[ "$n" -lt 50 ] || break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ "$n" -eq 50 ]
	local rc=0
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	[ "$rc" -eq 143 ]
	run -1 bench_workloads
}

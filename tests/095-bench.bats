#!/usr/bin/env bats
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
		   "8d Java" "8e CPython" "8f Go"; do
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
	# The perf maps the runtimes wrote are gone: none is new.
	run -0 comm -13 <(echo "$before") <(bench_maps)
	[ -z "$output" ]
}

@test "scripts/bench --only: a figure alone, and a figure it does not know" {
	run -3 "$TOP/scripts/bench" --only nosuchfigure
	[[ "$output" == *"unknown figure 'nosuchfigure'"* ]]
	run -3 "$TOP/scripts/bench" --only ,
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only flame
	[[ "$output" == *"sp-flame 100k lines: seconds"* ]]
	run -1 grep -qE '^(1a|2 |4a|6 |7 |8 )' <<< "$output"
}

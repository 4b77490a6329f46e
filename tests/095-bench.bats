#!/usr/bin/env bats
# scripts/bench --quick: the benchmark harness keeps working.

load helper

@test "scripts/bench --quick prints every figure with its target" {
	# The benchmark measures the normal build; sanitizer builds are not
	# for timing (and LeakSanitizer cannot run in its pid namespaces).
	run env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick
	[ "$status" -eq 0 ]
	for fig in "1a workload slowdown, 4999 Hz" "1b extra CPU-seconds, 999 Hz" \
		   "2  bytes per sample, 999 Hz" "3  lost samples, 999 Hz" \
		   "4a sp-unwind" "4c sp-unwind | sp-symbolize | sp-fold" "4d sp-fold" \
		   "5  peak RSS" "6  stack completeness" "sp-flame 100k lines"; do
		[[ "$output" == *"$fig"* ]]
	done
	# Every target is judged (met, not met, or why not), never left blank.
	[[ "$output" == *"met"* ]]
	run -1 grep -q 'not measured yet' <<< "$output"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-unwind: exact stacks of workloads with a known call structure.

load helper

setup() {
	R=$BATS_TEST_TMPDIR/rec.sps
	U=$BATS_TEST_TMPDIR/unwound.sps
}

@test "recursion and a call through a shared library unwind to _start, exactly" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 1
	run sp-unwind -o "$U" "$R"
	[ "$status" -eq 0 ]
	samples=$(summary "$R" samples)
	folded "$U" > "$BATS_TEST_TMPDIR/all"
	# The samples in the workload's own code (see own_stacks): all but the
	# few of start-up and the vDSO.
	own_stacks "$BATS_TEST_TMPDIR/all" main worker > "$BATS_TEST_TMPDIR/own"
	own=$(weight "$BATS_TEST_TMPDIR/own")
	[ "$own" -ge $((samples * 9 / 10)) ]
	# Every one reaches its thread's entry: no stack is cut, each starts at
	# _start or at the thread's clone3, and the unwinder counts them complete.
	run -1 grep -q '\[end:' "$BATS_TEST_TMPDIR/own"
	run -1 grep -v '^\(_start\|clone3\);' "$BATS_TEST_TMPDIR/own"
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge "$own" ]
	cut -d' ' -f1 "$BATS_TEST_TMPDIR/own" > "$BATS_TEST_TMPDIR/stacks"
	# The worker thread's whole chain, through libm, from the thread entry.
	grep -qx '_start;__libc_start_main_impl;__libc_start_call_main;main;run_workers;worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute;__cos_fma' "$BATS_TEST_TMPDIR/stacks" ||
	grep -q ';worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute;__cos' "$BATS_TEST_TMPDIR/stacks"
	grep -q '^clone3;start_thread;worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute' "$BATS_TEST_TMPDIR/stacks"
}

@test "the stream: header of stage unwound, modules and stacks before use, counters" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	sp-unwind -o "$U" "$R"
	run sp-cat "$U"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *'"stage":"unwound"'* ]]
	[[ "${lines[0]}" == *'{"name":"sp-capture"'*'{"name":"sp-unwind"'* ]]
	[[ "${lines[-2]}" == '{"t":"unwind"'* ]]
	[[ "${lines[-1]}" == '{"t":"summary"'* ]]
	# No raw data is left, and every sample refers to a stack defined before it.
	run -0 sp-cat -t sample "$U"
	run -1 grep -q '"ustack"' <<< "$output"
	sp-cat -t stack,sample "$U" > "$BATS_TEST_TMPDIR/order.json"
	jq -r '"\(.t) \(if .t=="stack" then .id else .stack end)"' "$BATS_TEST_TMPDIR/order.json" > "$BATS_TEST_TMPDIR/order"
	awk '$1=="stack" { seen[$2]=1 } $1=="sample" && !seen[$2] { bad=1 } END { exit bad }' "$BATS_TEST_TMPDIR/order"
	# Records sp-unwind does not consume pass through unchanged.
	diff <(sp-cat -t process,thread,map,exec,fork,exit,runtime "$R") <(sp-cat -t process,thread,map,exec,fork,exit,runtime "$U")
	[ "$(summary "$U" samples)" = "$(summary "$R" samples)" ]
	# Kernel-less frames: user kind, return addresses flagged after the
	# first, in every stack (markers, flag 8, aside: a stack cut during
	# start-up may have a single frame before its marker).
	jq -c 'select(.t=="stack") | [.frames[][3] | select(. != 8)] | [(.[:1] | all(. == 0)) and (.[1:] | all(. == 4)), length > 1]' "$BATS_TEST_TMPDIR/order.json" > "$BATS_TEST_TMPDIR/flags"
	run -1 grep -q '^\[false' "$BATS_TEST_TMPDIR/flags"
	grep -qx '\[true,true\]' "$BATS_TEST_TMPDIR/flags"
}

@test "a signal handler frame is unwound through" {
	sp-capture -q -o "$R" -- "$WORKLOADS/sigwork" 1
	sp-unwind -o "$U" "$R"
	folded "$U" > "$BATS_TEST_TMPDIR/stacks"
	grep -q ';main;main_loop;[^;]*;on_prof;handler_work ' "$BATS_TEST_TMPDIR/stacks"
	# Of the samples in the workload's own code (see own_stacks), at most
	# one in twenty is cut.
	samples=$(summary "$R" samples)
	own_stacks "$BATS_TEST_TMPDIR/stacks" main > "$BATS_TEST_TMPDIR/own"
	own=$(weight "$BATS_TEST_TMPDIR/own")
	[ "$own" -ge $((samples * 9 / 10)) ]
	awk '/\[end:/' "$BATS_TEST_TMPDIR/own" > "$BATS_TEST_TMPDIR/cut"
	[ "$(weight "$BATS_TEST_TMPDIR/cut")" -le $((own / 20)) ]
}

@test "a CPython 3.12 -X perf workload unwinds through the trampolines to _start" {
	PY=$(python312)
	[ -n "$PY" ]
	sp-capture -q -o "$R" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 1
	sp-unwind -o "$U" "$R"
	samples=$(summary "$R" samples)
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge $((samples * 95 / 100)) ]
	folded --no-count "$U" > "$BATS_TEST_TMPDIR/stacks"
	# Three Python functions deep: three trampolines between the interpreter frames.
	grep -q '^_start;.*\[jit\];_PyEval_EvalFrameDefault;.*\[jit\];_PyEval_EvalFrameDefault;.*\[jit\];_PyEval_EvalFrameDefault;.*\[jit\];_PyEval_EvalFrameDefault' "$BATS_TEST_TMPDIR/stacks"
	# Those frames are JIT frames in a per-process module.
	[ "$(sp-cat -t module "$U" | jq -r 'select(.kind=="jit") | .pid')" = "$(jqs "$R" 'select(.t=="process") | .pid')" ]
	rm -f "/tmp/perf-$(jqs "$R" 'select(.t=="process") | .pid').map"
}

@test "--no-fp-fallback stops at code without CFI" {
	PY=$(python312)
	sp-capture -q -o "$R" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 0.5
	sp-unwind --no-fp-fallback -o "$U" "$R"
	[ "$(unwind_count "$U" no_cfi)" -gt 0 ]
	[ "$(sp-cat -t unwind "$U" | jq '.fp_frames + .scan_frames')" -eq 0 ]
	rm -f "/tmp/perf-$(jqs "$R" 'select(.t=="process") | .pid').map"
}

@test "deep recursion with a small --stack-size ends with the truncation marker" {
	sp-capture -q --stack-size 2048 -o "$R" -- "$WORKLOADS/deep" -d 500 0.5
	# Every stack is cut on purpose: without --allow-empty that is exit 1.
	sp-unwind --allow-empty -o "$U" "$R"
	[ "$(unwind_count "$U" truncated)" -gt 0 ]
	[ "$(summary "$U" truncated_frame_markers)" = "$(unwind_count "$U" truncated)" ]
	folded --no-count "$U" | grep -q '^\[end:truncated\];deep_recurse;deep_recurse;.*deep_leaf$'
	# With the whole stack copied, the same recursion is complete.
	sp-capture -q --stack-size 65528 -o "$R" -- "$WORKLOADS/deep" -d 500 0.5
	sp-unwind -o "$U" "$R"
	samples=$(summary "$R" samples)
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge $((samples * 95 / 100)) ]
}

@test "--max-depth cuts a stack with its own marker" {
	sp-capture -q -o "$R" -- "$WORKLOADS/deep" -d 200 0.3
	sp-unwind --max-depth 50 -o "$U" "$R"
	[ "$(unwind_count "$U" max_depth)" -gt 0 ]
	run sp-unwind --max-depth 0 "$R"
	[ "$status" -eq 3 ]
}

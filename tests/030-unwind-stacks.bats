#!/usr/bin/env bats
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
	# Every sample of the reference workload reaches its thread's entry.
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge $((samples * 99 / 100)) ]
	folded --no-count "$U" > "$BATS_TEST_TMPDIR/stacks"
	# The worker thread's whole chain, through libm, from the thread entry.
	grep -qx '_start;__libc_start_main_impl;__libc_start_call_main;main;run_workers;worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute;__cos_fma' "$BATS_TEST_TMPDIR/stacks" ||
	grep -q ';worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute;__cos' "$BATS_TEST_TMPDIR/stacks"
	grep -q '^clone3;start_thread;worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute' "$BATS_TEST_TMPDIR/stacks"
	# No stack is cut: no marker anywhere.
	! grep -q '\[end:' "$BATS_TEST_TMPDIR/stacks"
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
	! sp-cat -t sample "$U" | grep -q '"ustack"'
	sp-cat "$U" | jq -r 'select(.t=="stack" or .t=="sample") | "\(.t) \(if .t=="stack" then .id else .stack end)"' |
		awk '$1=="stack" { seen[$2]=1 } $1=="sample" && !seen[$2] { bad=1 } END { exit bad }'
	# Records sp-unwind does not consume pass through unchanged.
	diff <(sp-cat -t process,thread,map,exec,fork,exit,runtime "$R") <(sp-cat -t process,thread,map,exec,fork,exit,runtime "$U")
	[ "$(summary "$U" samples)" = "$(summary "$R" samples)" ]
	# Kernel-less frames: user kind, return addresses flagged after the first.
	run sp-cat -t stack "$U"
	[[ "${lines[0]}" == *',0],['*',4]'* ]]
}

@test "a signal handler frame is unwound through" {
	sp-capture -q -o "$R" -- "$WORKLOADS/sigwork" 1
	sp-unwind -o "$U" "$R"
	folded "$U" > "$BATS_TEST_TMPDIR/stacks"
	grep -q ';main;main_loop;[^;]*;on_prof;handler_work ' "$BATS_TEST_TMPDIR/stacks"
	samples=$(summary "$R" samples)
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge $((samples * 95 / 100)) ]
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
	sp-unwind -o "$U" "$R"
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

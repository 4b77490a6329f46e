#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-fold: folded stacks, their options and filters.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/sym.sps
}

# A symbolized recording of the reference workload, shared by the tests.
setup_file() {
	export SHARED=$BATS_FILE_TMPDIR/spin.sps
	symbolized "$SHARED" "$WORKLOADS/spin" 0.6
}

@test "folded output: process name at the root, sorted lines, integer counts" {
	run sp-fold "$SHARED"
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" > "$BATS_TEST_TMPDIR/folded"
	# The golden stacks of the worker thread, root first, hidden frames left out.
	printf '%s\n' "${lines[@]}" | grep -qx 'spin;worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute;__cos_fma [0-9]*'
	printf '%s\n' "${lines[@]}" | grep -qx 'spin;main;run_workers;worker;stage_a;stage_b;stage_c;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;leaf_compute;__cos_fma [0-9]*'
	# Sorted, "stack COUNT", and the counts add up to the samples.
	printf '%s\n' "${lines[@]}" | LC_ALL=C sort -C
	printf '%s\n' "${lines[@]}" | awk '{ if ($NF !~ /^[0-9]+$/) exit 1; s += $NF } END { print s }' > "$BATS_TEST_TMPDIR/total"
	[ "$(cat "$BATS_TEST_TMPDIR/total")" -eq "$(summary "$SHARED" samples)" ]
	# Nothing hidden by default: no frame named _start or __libc_start*.
	# (Whole frames: ld.so's _dl_start and _dl_start_user, in samples taken
	# while the process started, are not hidden.)
	run -1 grep -q '\(^\|;\)\(_start\|__libc_start[a-z_]*\)[; ]' "$BATS_TEST_TMPDIR/folded"
}

@test "--pid and --tid name the root frames" {
	pid=$(jqs "$SHARED.raw" 'select(.t=="process") | .pid')
	run sp-fold --pid "$SHARED"
	[[ "${lines[0]}" == "spin-$pid;"* ]]
	run sp-fold --tid "$SHARED"
	printf '%s\n' "${lines[@]}" | grep -q "^spin-$pid/$pid;"
	[ "$(printf '%s\n' "${lines[@]}" | cut -d';' -f1 | sort -u | wc -l)" -eq 2 ]
}

@test "--show-hidden, --inline, --kernel, --jit, --all, --addrs" {
	sp-fold --show-hidden "$SHARED" | grep -q '^spin;_start;__libc_start_main;__libc_start_call_main;main;'
	sp-fold --show-hidden "$SHARED" | grep -q '^spin;clone3;start_thread;worker;'
	# libm's cos has inlined code: shown as its own frames with --inline.
	sp-fold --inline "$SHARED" | grep -q '_\[i\] [0-9]*$'
	run -0 sp-fold "$SHARED"
	run -1 grep -q '_\[i\]' <<< "$output"
	# Kernel frames with --kernel.
	sp-capture -q --kernel -o "$S.raw" -- dd if=/dev/zero of=/dev/null bs=64k count=20000
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize -o "$S" "$S.unw"
	sp-fold --kernel "$S" | grep -q '_\[k\];\|_\[k\] [0-9]*$'
	run -0 sp-fold "$S"
	run -1 grep -q '_\[k\]' <<< "$output"
	sp-fold --all "$S" | grep -q '_\[k\]'
	# Address-only frames fold per module unless --addrs.
	sp-symbolize --kallsyms none -o "$S.nok" "$S.unw"
	sp-fold "$S.nok" | grep -q '\[kernel\]'
	sp-fold --addrs "$S.nok" | grep -q '\[kernel\]+0xffff'
}

@test "--jit annotates perf-map frames" {
	PY=$(python312)
	symbolized "$S" "$PY" -X perf "$TOP/tests/workloads/pywork.py" 0.5
	sp-fold --jit "$S" | grep -q 'py::py_inner:[^;]*_\[j\]'
	sp-fold "$S" | grep -q 'py::py_outer:.*;py::py_middle:.*;py::py_inner:'
	rm -f "/tmp/perf-$(jqs "$S.raw" 'select(.t=="process") | .pid').map"
}

@test "--weight period weighs by CPU time" {
	run sp-fold --weight period "$SHARED"
	total=$(printf '%s\n' "${lines[@]}" | awk '{ s += $NF } END { print s }')
	period=$(sp-cat -t sample "$SHARED" | jq -s 'map(.period) | add')
	[ "$total" -eq "$period" ]
	run sp-fold --weight bogus "$SHARED"
	[ "$status" -eq 3 ]
}

@test "filters: --only-pid, --only-tid, --only-comm, --from, --to" {
	pid=$(jqs "$SHARED.raw" 'select(.t=="process") | .pid')
	[ "$(sp-fold --only-pid "$pid" "$SHARED" | wc -l)" -gt 0 ]
	[ "$(sp-fold --only-pid 1 "$SHARED" | wc -l)" -eq 0 ]
	[ "$(sp-fold --only-comm spin,other "$SHARED" | wc -l)" -gt 0 ]
	[ "$(sp-fold --only-comm other "$SHARED" | wc -l)" -eq 0 ]
	# Only the main thread: its stacks go through main, the worker's do not.
	sp-fold --only-tid "$pid" --show-hidden "$SHARED" > "$BATS_TEST_TMPDIR/main"
	run -1 grep -q '^spin;clone3' "$BATS_TEST_TMPDIR/main"
	grep -q '^spin;_start' "$BATS_TEST_TMPDIR/main"
	# Time windows split the samples.
	a=$(sp-fold --to 0.3 "$SHARED" | awk '{ s += $NF } END { print s + 0 }')
	b=$(sp-fold --from 0.3 "$SHARED" | awk '{ s += $NF } END { print s + 0 }')
	[ $((a + b)) -eq "$(summary "$SHARED" samples)" ]
	[ "$a" -gt 0 ]
	[ "$b" -gt 0 ]
	run sp-fold --from 2 --to 1 "$SHARED"
	[ "$status" -eq 3 ]
}

@test "--per-thread writes one folded file per thread" {
	sp-fold --per-thread "$BATS_TEST_TMPDIR/threads" -o /dev/null "$SHARED"
	[ "$(ls "$BATS_TEST_TMPDIR/threads" | wc -l)" -eq 2 ]
	cat "$BATS_TEST_TMPDIR/threads"/*.folded | awk '{ s += $NF } END { print s }' > "$BATS_TEST_TMPDIR/t"
	[ "$(cat "$BATS_TEST_TMPDIR/t")" -eq "$(summary "$SHARED" samples)" ]
}

@test "an unwound stream folds with address-only names and says so; a raw one is refused" {
	run --separate-stderr sp-fold "$SHARED.unw"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"unwound but not symbolized"* ]]
	[[ "$output" == *"[spin]"* ]]
	run sp-fold "$SHARED.raw"
	[ "$status" -eq 2 ]
	[[ "$output" == *"run sp-unwind (and sp-symbolize) first"* ]]
}

@test "the whole pipeline in one go, and a ';' inside a name is replaced" {
	run bash -c "set -o pipefail; sp-capture -q -- '$WORKLOADS/spin' 0.3 | sp-unwind | sp-symbolize | sp-fold"
	[ "$status" -eq 0 ]
	[[ "$output" == *"leaf_compute"* ]]
	{ sp-cat "$SHARED" | head -n 1
	  echo '{"t":"process","pid":7,"comm":"semi;colon"}'
	  echo '{"t":"frame","id":0,"addr":1,"origin":"symtab","name":"a;b"}'
	  echo '{"t":"symstack","id":0,"frames":[0]}'
	  echo '{"t":"sample","pid":7,"tid":7,"time":1,"stack":0}'
	  sp-cat -t summary "$SHARED"; } | sp-cat --from-json > "$S"
	run sp-fold "$S"
	[ "$output" = "semi:colon;a:b 1" ]
}

@test "sp-cat --format perf-script renders a symbolized stream as perf script text" {
	run sp-cat --format perf-script "$SHARED"
	[ "$status" -eq 0 ]
	pid=$(jqs "$SHARED.raw" 'select(.t=="process") | .pid')
	[ "$(printf '%s\n' "${lines[@]}" | grep -c ' cpu-clock:$')" -eq "$(summary "$SHARED" samples)" ]
	[[ "${lines[0]}" =~ ^spin\ $pid/[0-9]+\ \[[0-9]{3}\]\ [0-9]+\.[0-9]{6}:\ [0-9]+\ cpu-clock:$ ]]
	printf '%s\n' "${lines[@]}" | grep -q $'^\t *[0-9a-f]* leaf_compute+0x[0-9a-f]* (.*/spin)$'
	printf '%s\n' "${lines[@]}" | grep -q $'^\t *[0-9a-f]* _start+0x[0-9a-f]* (.*/spin)$'
	run sp-cat --format perf-script "$SHARED.unw"
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs a symbolized stream"* ]]
}

@test "perf-script text: a process with no name is :PID, each sample names its event, as perf-script readers expect" {
	{ sp-cat "$SHARED" | head -n 1 | sed 's/"events":\[[^]]*\]/"events":["cpu-clock","page-faults"]/'
	  echo '{"t":"frame","id":0,"addr":4096,"origin":"symtab","name":"work","offset":16}'
	  echo '{"t":"symstack","id":0,"frames":[0]}'
	  echo '{"t":"sample","pid":7,"tid":8,"cpu":1,"time":2000001000,"period":5,"stack":0}'
	  echo '{"t":"sample","pid":7,"tid":8,"cpu":1,"time":3000000000,"period":100,"event":1,"stack":0}'
	  sp-cat -t summary "$SHARED"; } | sp-cat --from-json > "$S"
	run -0 sp-cat --format perf-script "$S"
	[ "${lines[0]}" = ":7 7/8 [001] 2.000001: 5 cpu-clock:" ]
	[ "${lines[2]}" = ":7 7/8 [001] 3.000000: 100 page-faults:" ]
	# The header line as stackcollapse-perf.pl takes it apart: every sample is read.
	run -0 /usr/bin/python3 -c '
import re, sys
n = 0
for l in sys.stdin:
    m = re.match(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+.*?:\s*(\d+)*\s*(\S+):\s*$", l)
    if m:
        assert m.group(1) == ":7" and m.group(2) == "7" and m.group(3) == "8", l
        n += 1
print(n)' < <(sp-cat --format perf-script "$S")
	[ "$output" = 2 ]
}

@test "a stack whose frames are all hidden folds to its process alone" {
	{ sp-cat "$SHARED" | head -n 1
	  echo '{"t":"process","pid":7,"comm":"x"}'
	  echo '{"t":"frame","id":0,"addr":1,"origin":"symtab","name":"_start","flags":1}'
	  echo '{"t":"symstack","id":0,"frames":[0]}'
	  echo '{"t":"sample","pid":7,"tid":7,"time":1,"stack":0}'
	  echo '{"t":"sample","pid":7,"tid":7,"time":2,"stack":0}'
	  sp-cat -t summary "$SHARED"; } | sp-cat --from-json > "$S"
	run sp-fold "$S"
	[ "$status" -eq 0 ]
	[ "$output" = "x 2" ]
	run sp-fold --show-hidden "$S"
	[ "$output" = "x;_start 2" ]
}

@test "concatenated recordings fold together: every count doubles" {
	sp-fold -o "$S.one" "$SHARED"
	cat "$SHARED" "$SHARED" > "$S.two.sps"
	sp-fold -o "$S.two" "$S.two.sps"
	# Each line of one recording, its count doubled, is a line of the two.
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); print $0 " " 2 * n }' "$S.one" > "$S.want"
	[ -s "$S.want" ]
	run diff "$S.want" "$S.two"
	[ "$status" -eq 0 ]
}

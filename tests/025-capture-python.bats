#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture: Python runtime markers.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
	PY=$(python312)
	[ -n "$PY" ]	# pyenv provides a Python 3.12 or later on these machines
}

@test "a CPython 3.12 -X perf workload gets a marker saying CPython" {
	sp-capture -q -o "$S" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 0.5
	pid=$(jqs "$S" 'select(.t=="process") | .pid')
	# The last marker of the process decides, in stream order.
	run jqs "$S" "select(.t==\"runtime\" and .pid==$pid) | .cpython"
	[ "${lines[-1]}" = true ]
	[ "$(summary "$S" samples)" -gt 50 ]
	# -X perf writes the perf map the symbolizer will read.
	[ -s "/tmp/perf-$pid.map" ]
	rm -f "/tmp/perf-$pid.map"
}

@test "a C workload gets a marker saying not CPython" {
	sp-capture -q -o "$S" -- "$WORKLOADS/spin" 0.2
	run jqs "$S" 'select(.t=="runtime") | .cpython'
	for l in "${lines[@]}"; do [ "$l" = false ]; done
	[ "${#lines[@]}" -ge 1 ]
}

@test "attaching to a running CPython says CPython; a fork inherits the status" {
	"$PY" -c 'import os, time
t = time.time()
while time.time() - t < 0.8: pass
if os.fork() == 0:
    while time.time() - t < 1.5: pass
    os._exit(0)
os.wait()' &
	P=$!
	sleep 0.3
	sp-capture -q --inherit -o "$S" -p "$P"
	wait $P
	[ "$(jqs "$S" "select(.t==\"runtime\" and .pid==$P) | [.cpython, .via]")" = '[true,"exe"]' ]
	child=$(jqs "$S" "select(.t==\"fork\" and .ppid==$P and .pid!=$P) | .pid")
	[ -n "$child" ]
	[ "$(jqs "$S" "select(.t==\"runtime\" and .pid==$child) | [.cpython, .via]")" = '[true,"parent"]' ]
	[ "$(jqs "$S" "select(.t==\"sample\" and .pid==$child) | 1" | wc -l)" -gt 10 ]
}

@test "a C program exec'd by CPython is not CPython any more" {
	sp-capture -q -o "$S" -- "$PY" -c "import os; os.execv('$WORKLOADS/spin', ['spin', '0.3'])"
	run jqs "$S" 'select(.t=="runtime" or .t=="exec") | [.t, .cpython]'
	[ "${lines[-1]}" = '["runtime",false]' ]
	[[ "$output" == *'["runtime",true]'* ]]
}

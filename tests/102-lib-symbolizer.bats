#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# libstackpulse's symbolizer: the examples (examples/symbolize-profile.c,
# python-frames.c, kernel-frames.c, external-cache.c) against real
# recordings, compared with what sp-unwind | sp-symbolize | sp-fold makes
# of the same streams; the internal stack cache against stacks named
# afresh (tests/lib/api-symbolizer-caches.c); and its functions used
# wrongly (tests/lib/api-symbolizer-misuse.c).

load helper

EX=$SP_BUILD/examples

setup_file() {
	local d=$BATS_FILE_TMPDIR
	sp-capture -q -F 999 -o "$d/deep.raw" -- "$WORKLOADS/deep" 2
	sp-unwind -o "$d/deep.unw" "$d/deep.raw"
	cp "$TOP/tests/workloads/jitchurn.js" "$d/hot.js"
	(cd "$d" && sp-capture -q -F 999 -o "$d/node.raw" -- node --perf-prof hot.js 3000 > /dev/null)
}

setup() {
	D=$BATS_FILE_TMPDIR
	PIDS=()
}

teardown() {
	kill_started
}

# leaves FOLDED: "LEAF COUNT" per leaf function of a folded file, sorted.
leaves() {
	awk '{ c = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); s[f[n]] += c }
	     END { for (k in s) print k, s[k] }' "$1" | sort
}

@test "symbolize-profile: the same samples per leaf function as sp-symbolize | sp-fold" {
	run -0 "$EX/symbolize-profile" "$D/deep.raw"
	echo "$output" > "$BATS_TEST_TMPDIR/lib.folded"
	# The library's inlined calls are frames, as sp-fold --inline shows them (with _[i]).
	sp-symbolize "$D/deep.unw" | sp-fold --inline | sed 's/_\[i\]//g' > "$BATS_TEST_TMPDIR/tools.folded"
	leaves "$BATS_TEST_TMPDIR/lib.folded" > "$BATS_TEST_TMPDIR/lib.leaves"
	leaves "$BATS_TEST_TMPDIR/tools.folded" > "$BATS_TEST_TMPDIR/tools.leaves"
	cat "$BATS_TEST_TMPDIR/lib.leaves"
	# Every sample is there, and every named leaf has the same count
	# (sp-fold folds address-only frames into [module]; the library names them).
	[ "$(weight "$BATS_TEST_TMPDIR/lib.folded")" -eq "$(weight "$BATS_TEST_TMPDIR/tools.folded")" ]
	[ "$(weight "$BATS_TEST_TMPDIR/lib.folded")" -eq "$(sp-cat -t sample "$D/deep.raw" | wc -l)" ]
	grep -v '^\[' "$BATS_TEST_TMPDIR/tools.leaves" > "$BATS_TEST_TMPDIR/named"
	[ "$(lines "$BATS_TEST_TMPDIR/named")" -ge 1 ]
	while read -r leaf n; do
		grep -qxF "$leaf $n" "$BATS_TEST_TMPDIR/lib.leaves"
	done < "$BATS_TEST_TMPDIR/named"
	# Nearly all of deep's time is in deep_leaf, under main and deep_recurse.
	hot=$(awk '$1 == "deep_leaf" { print $2 }' "$BATS_TEST_TMPDIR/lib.leaves")
	[ "$hot" -ge $(($(weight "$BATS_TEST_TMPDIR/lib.folded") * 8 / 10)) ]
	grep -q '^main;deep_recurse;deep_recurse;.*;deep_leaf [0-9]*$' "$BATS_TEST_TMPDIR/lib.folded"
	# Start-up scaffolding is hidden, as sp-fold hides it.
	run -1 grep -qE '(^|;)(_start|__libc_start_main|__libc_start_call_main)(;| )' \
		"$BATS_TEST_TMPDIR/lib.folded"
}

@test "symbolize-profile: a raw stream and its unwound stream give the same stacks" {
	"$EX/symbolize-profile" "$D/deep.raw" | sort > "$BATS_TEST_TMPDIR/raw"
	"$EX/symbolize-profile" "$D/deep.unw" | sort > "$BATS_TEST_TMPDIR/unw"
	[ -s "$BATS_TEST_TMPDIR/raw" ]
	diff "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/unw"
}

@test "symbolize-profile -l: an inlined call is an entry of its own, innermost first, with its own line and id" {
	sp-capture -q -F 999 -o "$BATS_TEST_TMPDIR/inl.raw" -- "$WORKLOADS/inlined" 1
	call=$(grep -n 'OUTER_WORK_CALL' "$TOP/tests/workloads/inlined.c" | cut -d: -f1)
	loop=$(grep -n 'INNER_STEP_LOOP' "$TOP/tests/workloads/inlined.c" | cut -d: -f1)
	run -0 "$EX/symbolize-profile" -l "$BATS_TEST_TMPDIR/inl.raw"
	echo "$output" > "$BATS_TEST_TMPDIR/frames"
	grep -q "^[0-9]* inner_step .*inlined\.c:$loop debuginfo inline\$" "$BATS_TEST_TMPDIR/frames"
	grep -q "^[0-9]* outer_work .*inlined\.c:$call debuginfo\$" "$BATS_TEST_TMPDIR/frames"
	# Each id is listed once: one id, one frame.
	[ "$(cut -d' ' -f1 "$BATS_TEST_TMPDIR/frames" | sort -u | wc -l)" -eq "$(lines "$BATS_TEST_TMPDIR/frames")" ]
	# In the stacks, the inlined call is the leaf, right below the function it lies in.
	run -0 "$EX/symbolize-profile" "$BATS_TEST_TMPDIR/inl.raw"
	n=$(awk '/;outer_work;inner_step [0-9]+$/ { s += $NF } END { print s + 0 }' <<< "$output")
	[ "$n" -ge $(($(sp-cat -t sample "$BATS_TEST_TMPDIR/inl.raw" | wc -l) * 7 / 10)) ]
}

@test "two recordings in one stream: the second segment invalidates all, and reuses no frame id" {
	cat "$D/deep.raw" "$D/deep.raw" > "$BATS_TEST_TMPDIR/two.raw"
	run -0 --separate-stderr "$EX/external-cache" "$BATS_TEST_TMPDIR/two.raw"
	echo "$stderr"
	[[ $stderr == "invalidations 1 (segments 1, processes 0) "* ]]
	echo "$output" > "$BATS_TEST_TMPDIR/two"
	"$EX/symbolize-profile" "$D/deep.raw" > "$BATS_TEST_TMPDIR/one"
	[ "$(weight "$BATS_TEST_TMPDIR/two")" -eq $(($(weight "$BATS_TEST_TMPDIR/one") * 2)) ]
	run -0 "$EX/symbolize-profile" -l "$D/deep.raw"
	one=$(wc -l <<< "$output")
	run -0 "$EX/symbolize-profile" -l "$BATS_TEST_TMPDIR/two.raw"
	[ "$(wc -l <<< "$output")" -eq $((one * 2)) ]
	[ "$(cut -d' ' -f1 <<< "$output" | sort -u | wc -l)" -eq $((one * 2)) ]
}

@test "python-frames: with perf maps only for processes last marked CPython, Python functions are named" {
	PY=$(python312)
	[ -n "$PY" ]
	sp-capture -q -F 999 -o "$BATS_TEST_TMPDIR/py.raw" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 1
	pid=$(sp-cat -t process "$BATS_TEST_TMPDIR/py.raw" | jq -r .pid | head -n 1)
	run -0 "$EX/python-frames" "$BATS_TEST_TMPDIR/py.raw"
	rm -f "/tmp/perf-$pid.map"
	echo "$output"
	[ "$(grep '^python ' <<< "$output")" = "python $pid" ]
	for fn in py_outer py_middle py_inner; do
		n=$(awk -v f="py::$fn:" 'index($1, f) == 1 { print $2 }' <<< "$output")
		[ "${n:-0}" -ge 100 ]
	done
}

@test "python-frames: a pid whose latest marker is no longer CPython gets no perf map, though its map is there" {
	PY=$(python312)
	[ -n "$PY" ]
	# CPython runs pywork with -X perf, then the same pid execs spin.
	cat > "$BATS_TEST_TMPDIR/reuse.py" <<-EOF
	import os, runpy, sys
	sys.argv = ["pywork.py", "0.6"]
	try:
	    runpy.run_path("$TOP/tests/workloads/pywork.py", run_name="__main__")
	except SystemExit:
	    pass
	os.execv("$WORKLOADS/spin", ["spin", "0.3"])
	EOF
	sp-capture -q -F 999 -o "$BATS_TEST_TMPDIR/py.raw" -- "$PY" -X perf "$BATS_TEST_TMPDIR/reuse.py"
	pid=$(sp-cat -t process "$BATS_TEST_TMPDIR/py.raw" | jq -r .pid | head -n 1)
	[ "$(sp-cat -t runtime "$BATS_TEST_TMPDIR/py.raw" | jq -r .cpython | tail -n 1)" = false ]
	[ -s "/tmp/perf-$pid.map" ]
	# Any pid's map (the default) names the Python functions ...
	run -0 "$EX/symbolize-profile" "$BATS_TEST_TMPDIR/py.raw"
	grep -q ';py::py_inner:' <<< "$output"
	# ... the guard takes none: the pid's latest marker says it is not CPython.
	run -0 "$EX/python-frames" "$BATS_TEST_TMPDIR/py.raw"
	rm -f "/tmp/perf-$pid.map"
	[ -z "$output" ]
}

@test "kernel-frames: names from the saved kallsyms, addresses with none" {
	sp-capture -q -F 999 --kernel --kallsyms-out "$BATS_TEST_TMPDIR/ks" -o "$BATS_TEST_TMPDIR/k.raw" -- \
		dd if=/dev/zero of=/dev/null bs=4k count=1500000 status=none
	run -0 "$EX/kernel-frames" "$BATS_TEST_TMPDIR/k.raw" "$BATS_TEST_TMPDIR/ks"
	echo "$output" | head -n 5
	read -r _ _ frames _ named <<< "$(head -n 1 <<< "$output")"
	[ "$frames" -ge 100 ]
	[ "$named" -eq "$frames" ]
	# dd lives in read and write system calls.
	grep -qE '^[a-z_0-9]*(sys_read|sys_write|vfs_read|vfs_write|do_syscall_64)[a-z_0-9]* [0-9]+$' <<< "$output"
	run -0 "$EX/kernel-frames" "$BATS_TEST_TMPDIR/k.raw" none
	[ "$(head -n 1 <<< "$output")" = "kernel frames $frames named 0" ]
	[ "$(sed 1d <<< "$output" | grep -cv '^\[kernel\]+0xffff[0-9a-f]* [0-9]*$')" -eq 0 ]
}

@test "external-cache: its own cache gives the stacks the internal cache gives, JIT frames named by the jitdump" {
	"$EX/symbolize-profile" "$D/node.raw" | sort > "$BATS_TEST_TMPDIR/internal"
	run -0 --separate-stderr "$EX/external-cache" "$D/node.raw"
	echo "$stderr"
	sort <<< "$output" > "$BATS_TEST_TMPDIR/external"
	diff "$BATS_TEST_TMPDIR/internal" "$BATS_TEST_TMPDIR/external"
	hot=$(grep -E ';JS:\*?hotLoop[^;]* [0-9]+$' "$BATS_TEST_TMPDIR/external" | awk '{ s += $NF } END { print s + 0 }')
	echo "samples with hotLoop at the leaf: $hot"
	[ "$hot" -ge 100 ]
	[ "$(weight "$BATS_TEST_TMPDIR/external")" -eq "$(sp-cat -t sample "$D/node.raw" | wc -l)" ]
}

@test "external-cache -f: following a recording, it consumes the invalidations of the JIT's code loads" {
	cp "$TOP/tests/workloads/jitchurn.js" "$BATS_TEST_TMPDIR/hot.js"
	S=$BATS_TEST_TMPDIR/live.raw
	(cd "$BATS_TEST_TMPDIR" && exec sp-capture -q -F 999 -o "$S" -- node --perf-prof hot.js 3000 > /dev/null) &
	PIDS+=("$!")
	for _ in $(seq 100); do [ -s "$S" ] && break; sleep 0.1; done
	run -0 --separate-stderr "$EX/external-cache" -f "$S"
	wait "${PIDS[0]}"
	echo "$stderr"
	read -r _ inv _ _ _ procs _ _ _ _ _ _ <<< "${stderr//[()]/}"
	[ "$inv" -ge 1 ]
	[ "$procs" -ge 1 ]
	echo "$output" > "$BATS_TEST_TMPDIR/folded"
	grep -qE ';JS:\*?hotLoop[^;]* [0-9]+$' "$BATS_TEST_TMPDIR/folded"
	[ "$(weight "$BATS_TEST_TMPDIR/folded")" -eq "$(sp-cat -t sample "$S" | wc -l)" ]
}

@test "the internal cache, following a recording: every stack it keeps reads as a stack named afresh" {
	cp "$TOP/tests/workloads/jitchurn.js" "$BATS_TEST_TMPDIR/hot.js"
	S=$BATS_TEST_TMPDIR/live.raw
	(cd "$BATS_TEST_TMPDIR" && exec sp-capture -q -F 999 -o "$S" -- node --perf-prof hot.js 3000 > /dev/null) &
	PIDS+=("$!")
	for _ in $(seq 100); do [ -s "$S" ] && break; sleep 0.1; done
	run -0 "$SP_BUILD/tests/api-symbolizer-caches" "$S"
	wait "${PIDS[0]}"
	echo "$output"
	read -r _ stacks _ cached _ mismatches _ inv <<< "$output"
	[ "$stacks" -eq "$(sp-cat -t sample "$S" | wc -l)" ]
	# A stack resolved twice in a row is the same array; JIT code loads invalidated some.
	[ "$cached" -eq "$stacks" ]
	[ "$inv" -ge 1 ]
	[ "$mismatches" -eq 0 ]
}

@test "a tail taken from the recorder: a binary deleted while sampled is named from the kept image" {
	mkdir "$BATS_TEST_TMPDIR/bin"
	cp "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/bin/spin"
	S=$BATS_TEST_TMPDIR/rec.raw
	"$SP_BUILD/tests/api-symbolizer-images" "$S" stage_c "$BATS_TEST_TMPDIR/bin/spin" 3 > "$BATS_TEST_TMPDIR/out" &
	rec=$!
	for _ in $(seq 100); do
		pgrep -f "$BATS_TEST_TMPDIR/bin/spin" > /dev/null && break
		sleep 0.05
	done
	sleep 1
	rm "$BATS_TEST_TMPDIR/bin/spin"
	wait "$rec"
	cat "$BATS_TEST_TMPDIR/out"
	read -r _ stacks named < <(grep '^recorder-tail ' "$BATS_TEST_TMPDIR/out")
	[ "$stacks" -gt 50 ]
	[ "$named" -ge $((stacks * 8 / 10)) ]
	# The path alone, the file gone: no frame of spin has a name.
	read -r _ stacks2 named2 < <(grep '^path-tail ' "$BATS_TEST_TMPDIR/out")
	[ "$stacks2" -eq "$stacks" ]
	[ "$named2" -eq 0 ]
}

@test "bad use: NULL handles, unknown options, a missing kallsyms, stacks and batches of another snapshot; an empty first batch is none" {
	run -0 "$SP_BUILD/tests/api-symbolizer-misuse" "$D/deep.raw"
	echo "$output"
	out=$output
	[ "$(grep -c '^ok ' <<< "$out")" -eq 26 ]
	grep -q "^ok a kallsyms file that does not exist: cannot open '/nonexistent/saved.kallsyms'" <<< "$out"
	run -1 grep -q '^FAIL' <<< "$out"
}

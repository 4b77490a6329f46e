#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-symbolize -j N: the symbolized stream is byte for byte the one of
# -j 1 (every record in the same order, the symbolize record's counters)
# on C, inline-heavy C++, stripped binaries, the vDSO, kernel frames
# named by a saved kallsyms, Go, Node's perf map and jitdump, CPython's
# -X perf map, concatenated segments, many distinct addresses in two
# modules (several windows, two workers) and a stream cut short (exit 1,
# the same message).  --stats names the jobs and neither it nor -j goes
# into the header; a live pipe flows with -j 2; -j 1 starts no thread.

load helper

setup_file() {
	local d=$BATS_FILE_TMPDIR
	sp-capture -q -F 999 -o "$d/spin.raw" -- "$WORKLOADS/spin" -t 2 1
	sp-capture -q -F 999 -o "$d/inlined.raw" -- "$WORKLOADS/inlined" 0.5
	sp-capture -q -F 999 -o "$d/templ.raw" -- "$WORKLOADS/templ" 0.5
	sp-capture -q -F 999 -o "$d/vdso.raw" -- "$WORKLOADS/vdsoloop" 0.5
	local f
	for f in spin inlined templ vdso; do
		sp-unwind -o "$d/$f.unw" "$d/$f.raw"
	done
}

setup() {
	D=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
}

teardown() {
	kill_started
}

# same_for_jobs UNW [OPTION...]: sp-symbolize with -j 1, 2 and 3 writes
# the same bytes (to standard output: -o would name each file in the
# header), says the same and exits with the same status; the stream has
# named frames.
same_for_jobs() {
	local unw=$1 j want=0 got
	shift
	sp-symbolize -j 1 "$@" "$unw" > "$T/j1.sym" 2> "$T/j1.err" || want=$?
	[ "$(sp-cat -t frame "$T/j1.sym" | grep -vc '"origin":"address-only"')" -gt 0 ]
	for j in 2 3; do
		got=0
		sp-symbolize -j "$j" "$@" "$unw" > "$T/j$j.sym" 2> "$T/j$j.err" || got=$?
		[ "$got" -eq "$want" ]
		cmp "$T/j1.sym" "$T/j$j.sym"
		cmp "$T/j1.err" "$T/j$j.err"
	done
}

@test "-j 1, 2 and 3 write the same stream: C, two threads spinning" {
	same_for_jobs "$D/spin.unw"
	# The symbolize record's counters are among the bytes compared: real ones.
	[ "$(sp-cat -t symbolize "$T/j3.sym" | jq '.frames > 0 and .origins.debuginfo > 0')" = true ]
}

@test "-j 1, 2 and 3 write the same stream: inline frames of C and C++ templates" {
	same_for_jobs "$D/inlined.unw"
	sp-cat -t frame "$T/j2.sym" | grep -q '"inline"'
	same_for_jobs "$D/templ.unw"
	frames "$T/j3.sym" | grep -q '^double shapes::burn<double, 3>(double)|'
	same_for_jobs "$D/templ.unw" --no-inline --no-demangle
}

@test "-j 1, 2 and 3 write the same stream: a stripped binary" {
	strip --strip-all -o "$T/spin" "$WORKLOADS/spin"
	sp-capture -q -F 999 -o "$T/s.raw" -- "$T/spin" -t 2 0.5
	sp-unwind -o "$T/s.unw" "$T/s.raw"
	same_for_jobs "$T/s.unw"
	sp-cat -t frame "$T/j2.sym" | grep -q '"origin":"function-start"'
}

@test "-j 1, 2 and 3 write the same stream: vDSO frames" {
	same_for_jobs "$D/vdso.unw"
	frames "$T/j2.sym" | grep -q '^__vdso_clock_gettime|'
}

@test "-j 1, 2 and 3 write the same stream: kernel frames from a saved kallsyms" {
	sp-capture -q --kernel --kallsyms-out "$T/k.syms" -o "$T/k.raw" -- \
		dd if=/dev/zero of=/dev/null bs=64k count=50000
	sp-unwind -o "$T/k.unw" "$T/k.raw"
	same_for_jobs "$T/k.unw" --kallsyms "$T/k.syms"
	[ "$(sp-cat -t frame "$T/j3.sym" | grep -c '"origin":"kallsyms"')" -gt 3 ]
	same_for_jobs "$T/k.unw" --kallsyms none
}

@test "-j 1, 2 and 3 write the same stream: Go" {
	command -v go > /dev/null || skip "go is not installed"
	mkdir -p "$T/go"
	cp "$TOP/tests/workloads/gospin.go" "$T/go/main.go"
	(cd "$T/go" && printf 'module gospin\n\ngo 1.18\n' > go.mod &&
		GOFLAGS=-mod=mod go build -o "$T/gospin" .) || skip "go build failed"
	sp-capture -q -F 999 -o "$T/go.raw" -- "$T/gospin" 1
	sp-unwind -o "$T/go.unw" "$T/go.raw"
	same_for_jobs "$T/go.unw"
	frames "$T/j2.sym" | grep -q '^main\.'
}

@test "-j 1, 2 and 3 write the same stream: Node's perf map, then its jitdump" {
	command -v node > /dev/null || skip "node is not installed"
	cp "$TOP/tests/workloads/hot.js" "$T/hot.js"
	# In $T: node writes its own log files where it runs.
	(cd "$T" && sp-capture -q -F 999 -o "$T/m.raw" -- node --perf-basic-prof hot.js 1 > /dev/null)
	sp-unwind -o "$T/m.unw" "$T/m.raw"
	same_for_jobs "$T/m.unw"
	sp-cat -t frame "$T/j2.sym" | grep -q '"origin":"perf-map"'
	forget_perf_maps "$T/m.raw"
	cp "$TOP/tests/workloads/jitchurn.js" "$T/churn.js"
	(cd "$T" && sp-capture -q -F 999 -o "$T/n.raw" -- node --perf-prof churn.js 1500 > /dev/null)
	sp-unwind -o "$T/n.unw" "$T/n.raw"
	same_for_jobs "$T/n.unw"
	sp-cat -t frame "$T/j3.sym" | grep -q '"origin":"jitdump"'
	forget_perf_maps "$T/n.raw"
}

@test "-j 1, 2 and 3 write the same stream: CPython -X perf" {
	local py
	py=$(python312) || skip "no Python 3.12 or later"
	sp-capture -q -F 999 -o "$T/py.raw" -- "$py" -X perf "$TOP/tests/workloads/pywork.py" 0.5
	sp-unwind -o "$T/py.unw" "$T/py.raw"
	same_for_jobs "$T/py.unw"
	frames "$T/j2.sym" | grep -q '^py::py_inner:'
	forget_perf_maps "$T/py.raw"
}

@test "-j 2 writes the same stream for concatenated segments, read from a pipe" {
	cat "$D/spin.unw" "$D/templ.unw" "$D/spin.unw" > "$T/three.unw"
	sp-symbolize -j 1 < "$T/three.unw" > "$T/p1.sym"
	sp-symbolize -j 2 < "$T/three.unw" > "$T/p2.sym"
	cmp "$T/p1.sym" "$T/p2.sym"
	[ "$(sp-cat -t symbolize "$T/p2.sym" | wc -l)" -eq 3 ]
}

# many_addresses OUT [BAD]: an unwound stream of 12,000 stacks of three
# frames at distinct addresses of two modules (sp-cat and sp-symbolize,
# built with -g), return addresses among them, and a third module
# defined in the middle: several windows of lookups, each module's on
# its own worker with -j 3.  Stack number BAD, when given, has a
# malformed frame.
many_addresses() {
	/usr/bin/python3 - "$BIN/sp-cat" "$BIN/sp-symbolize" "$1.jsonl" "${2:--1}" <<'PY'
import base64, json, subprocess, sys
mods = sys.argv[1:3]
bad = int(sys.argv[4])
def build_id(path):
    note = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    return base64.b64encode(bytes.fromhex(note.split("Build ID: ")[1].split()[0])).decode()
def text(path):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    for l in out.splitlines():
        p = l.replace("[ ", "[").split()
        if len(p) > 5 and p[1] == ".text":
            return int(p[3], 16), int(p[5], 16)
spans = [text(m) for m in mods]
with open(sys.argv[3], "w") as f:
    w = lambda r: f.write(json.dumps(r) + "\n")
    w({"t": "header", "format": "stackpulse", "version": [1, 4], "stage": "unwound",
       "tools": [], "host": {"arch": "x86_64", "page_size": 4096}})
    w({"t": "process", "pid": 100, "comm": "two", "time": 1})
    for i, m in enumerate(mods):
        w({"t": "module", "id": i, "path": m, "kind": "elf", "build_id": {"$bin": build_id(m)}})
    for s in range(12000):
        if s == 6000:
            w({"t": "module", "id": 2, "path": mods[0], "kind": "elf",
               "build_id": {"$bin": build_id(mods[0])}})
        fr = []
        for k in range(3):
            m = (s + k) % 2
            lo, size = spans[m]
            rel = lo + (s * 3 + k) * 13 % size
            fr.append([0x400000 + rel, m, rel, 4 if k else 0])
        if s == bad:
            fr[1] = ["x", 0]
        w({"t": "stack", "id": s, "frames": fr})
        w({"t": "sample", "pid": 100, "tid": 100, "time": 2 + s, "stack": s})
    w({"t": "summary", "sample_events": 12000, "samples": 12000, "lost_events": 0,
       "empty_stack_samples": 0, "truncated_frame_markers": 0,
       "ignored_user_callchain_frames": 0, "kernel_enabled": False, "error_stats": [],
       "skipped_no_pid": 0, "skipped_no_tid": 0, "skipped_no_time": 0,
       "skipped_no_frames": 0})
PY
	sps_from_json "$1.jsonl" "$1"
}

@test "-j 1, 2 and 3 write the same stream: many distinct addresses in two modules" {
	many_addresses "$T/many.unw"
	same_for_jobs "$T/many.unw"
	[ "$(sp-cat -t frame "$T/j3.sym" | wc -l)" -gt 20000 ]
	[ "$(sp-cat -t frame "$T/j3.sym" | grep -c '"origin":"debuginfo"')" -gt 20000 ]
	# Compressed output too.
	sp-symbolize -j 1 -z "$T/many.unw" > "$T/z1.sym"
	sp-symbolize -j 3 -z "$T/many.unw" > "$T/z3.sym"
	cmp "$T/z1.sym" "$T/z3.sym"
}

@test "a stream cut short: -j 2 writes what -j 1 does, says the same, and exits 1" {
	many_addresses "$T/many.unw"
	cut_inside "$T/many.unw" 2 3 > "$T/cut.unw"
	run -1 sp-symbolize -j 1 "$T/cut.unw"
	local out1=$output
	run -1 sp-symbolize -j 2 -o "$T/c2.sym" "$T/cut.unw"
	[[ "$output" == *"byte offset"* ]]
	sp-symbolize -j 1 -o "$T/c1.sym" "$T/cut.unw" 2> "$T/c1.err" || true
	sp-symbolize -j 3 -o "$T/c3.sym" "$T/cut.unw" 2> "$T/c3.err" || true
	cmp "$T/c1.err" "$T/c3.err"
	[[ "$out1" == *"byte offset"* ]]
	# Every complete record before the cut is there, and the same.
	[ "$(sp-cat -t symstack "$T/c2.sym" | wc -l)" -gt 5000 ]
	diff <(sp-cat "$T/c1.sym" | tail -n +2) <(sp-cat "$T/c2.sym" | tail -n +2)
	diff <(sp-cat "$T/c1.sym" | tail -n +2) <(sp-cat "$T/c3.sym" | tail -n +2)
}

@test "a malformed frame mid-stream: -j 2 writes every record before it and exits 1" {
	many_addresses "$T/bad.unw" 9000
	run -1 sp-symbolize -j 1 "$T/bad.unw"
	[[ "$output" == *"malformed frame"* ]]
	sp-symbolize -j 1 "$T/bad.unw" > "$T/b1.sym" 2> "$T/b1.err" || true
	sp-symbolize -j 2 "$T/bad.unw" > "$T/b2.sym" 2> "$T/b2.err" || true
	cmp "$T/b1.sym" "$T/b2.sym"
	cmp "$T/b1.err" "$T/b2.err"
	[ "$(sp-cat -t symstack "$T/b2.sym" | wc -l)" -gt 4000 ]
}

@test "the header's tools entry leaves -j and --stats out" {
	sp-symbolize --jobs=3 --stats -o "$T/a.sym" "$D/spin.unw" 2> /dev/null
	run -0 sp-cat -t header "$T/a.sym"
	[ "$(jq -c '.tools[-1].args' <<< "$output")" = "[\"-o\",\"$T/a.sym\",\"$D/spin.unw\"]" ]
	sp-symbolize -j 2 -o "$T/b.sym" "$D/spin.unw"
	run -0 sp-cat -t header "$T/b.sym"
	[ "$(jq -c '.tools[-1].args' <<< "$output")" = "[\"-o\",\"$T/b.sym\",\"$D/spin.unw\"]" ]
}

@test "--stats prints the addresses named per second and the jobs used" {
	run -0 --separate-stderr sp-symbolize -j 2 --stats -o "$T/s.sym" "$D/spin.unw"
	[[ "$stderr" =~ ^sp-symbolize:\ [1-9][0-9]*\ addresses\ \(([1-9][0-9]*)\ resolved\)\ in\ [0-9.]+\ s:\ [0-9]+\ addresses/s,\ 2\ jobs$ ]]
	[ "${BASH_REMATCH[1]}" -eq "$(sp-cat -t frame "$T/s.sym" | wc -l)" ]
	local with2=$stderr
	run -0 --separate-stderr sp-symbolize -j 1 --stats -o "$T/s.sym" "$D/spin.unw"
	[[ "$stderr" == *", 1 job" ]]
	# The same counts either way.
	[ "${stderr%% in *}" = "${with2%% in *}" ]
}

@test "bad -j values are refused" {
	local v
	for v in 0 -1 abc 257 1x ''; do
		run -3 sp-symbolize -j "$v" "$D/spin.unw"
		[[ "$output" == *"invalid --jobs '$v' (1 to 256)"* ]]
	done
	run -3 sp-symbolize --jobs
}

@test "-j 1 starts no thread; -j 3 names on three: two workers beside the reader" {
	local j pid writer n i
	mkfifo "$T/fifo"
	for j in 1 3; do
		# The input stays open after the stream, so sp-symbolize waits for more.
		( cat "$D/templ.unw"; exec sleep 30 ) > "$T/fifo" &
		writer=$!
		sp-symbolize -j "$j" < "$T/fifo" > "$T/t$j.sym" &
		pid=$!
		for i in $(seq 1 300); do
			[ -s "$T/t$j.sym" ] && break
			sleep 0.1
		done
		n=$(ls "/proc/$pid/task" | wc -l)
		kill "$writer"
		wait "$pid"
		[ "$n" -eq "$j" ]
	done
	cmp "$T/t1.sym" "$T/t3.sym"
}

@test "a live pipe with -j 2 yields symbolized samples while the recording goes on" {
	start "$WORKLOADS/spin" -t 1 60
	local pid=$P out=$T/live.jsonl
	( sp-capture -q -F 199 -p "$pid" --duration 40 | sp-unwind | sp-symbolize -j 2 |
		sp-cat -t symstack > "$out" ) &
	local pipe=$!
	local i
	for i in $(seq 1 200); do
		[ -s "$out" ] && break
		sleep 0.1
	done
	# Named stacks came out while sp-capture was still recording.
	[ -s "$out" ]
	kill -0 "$pipe"
	kill "$pid"
	wait "$pipe"
	[ "$(wc -l < "$out")" -ge 1 ]
}

@test "compressed separate debug files, read cold on the workers: the same stream and the same cache as -j 1" {
	local m bid
	for m in inlined templ; do
		bid=$(readelf -n "$WORKLOADS/$m" | awk '/Build ID/ { print $3 }')
		mkdir -p "$T/dbg/.build-id/${bid:0:2}"
		objcopy --only-keep-debug --compress-debug-sections=zlib "$WORKLOADS/$m" \
			"$T/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
		strip --strip-debug -o "$T/$m" "$WORKLOADS/$m"
		sp-capture -q -F 999 -o "$T/$m.raw" -- "$T/$m" 0.3
		sp-unwind -o "$T/$m.unw" "$T/$m.raw"
	done
	cat "$T/inlined.unw" "$T/templ.unw" > "$T/two.unw"
	XDG_CACHE_HOME=$T/c1 sp-symbolize -j 1 --debug-dir "$T/dbg" "$T/two.unw" > "$T/s1.sym"
	XDG_CACHE_HOME=$T/c3 sp-symbolize -j 3 --debug-dir "$T/dbg" "$T/two.unw" > "$T/s3.sym"
	cmp "$T/s1.sym" "$T/s3.sym"
	[ "$(sp-cat -t symbolize "$T/s3.sym" | jq -s 'map(.debuginfo_modules) | max')" -ge 2 ]
	frames "$T/s3.sym" | grep -q '^double shapes::burn<double, 3>(double)|.*templ.cpp'
	# Each inflated copy is kept once, as -j 1 keeps it.
	[ "$(cd "$T/c1" && find . -name '*.debug' | sort)" = "$(cd "$T/c3" && find . -name '*.debug' | sort)" ]
	[ "$(find "$T/c3" -name '*.debug' | wc -l)" -eq 2 ]
	# Warm, from the cache: the same again.
	XDG_CACHE_HOME=$T/c3 sp-symbolize -j 3 --debug-dir "$T/dbg" "$T/two.unw" > "$T/w3.sym"
	cmp "$T/s1.sym" "$T/w3.sym"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-symbolize: names, inline frames, lines, kernel names, perf maps.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/sym.sps
}

# A debuginfod server left running by a failed test would keep bats
# waiting for it.
teardown() {
	[ -z "${DPID:-}" ] || kill "$DPID" 2>/dev/null || true
}

@test "exact names and lines on the reference workload; the stream around them" {
	symbolized "$S" "$WORKLOADS/spin" 0.5
	run sp-cat "$S"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *'"stage":"symbolized"'* ]]
	frames "$S" > "$BATS_TEST_TMPDIR/f"
	grep -q '^recurse|.*tests/workloads/spin.c:8[0-9]|debuginfo|4|$' "$BATS_TEST_TMPDIR/f"
	grep -q '^stage_c|.*tests/workloads/spin.c:[0-9]*|debuginfo|4|$' "$BATS_TEST_TMPDIR/f"
	grep -q '^leaf_compute|.*tests/workloads/spin.c:[0-9]*|debuginfo|' "$BATS_TEST_TMPDIR/f"
	# Start-up scaffolding is flagged hidden (flag 1).
	grep -q '^_start|[^|]*|[^|]*|[57]|' "$BATS_TEST_TMPDIR/f"
	grep -q '^__libc_start_call_main|.*|[57]|' "$BATS_TEST_TMPDIR/f"
	# Samples keep their ids: each refers to a symstack of the same id.
	[ "$(sp-cat -t sample "$S" | wc -l)" -eq "$(summary "$S" samples)" ]
	[ "$(sp-cat -t symstack "$S" | wc -l)" -eq "$(sp-cat -t stack "$S.unw" | wc -l)" ]
	[ "$(sp-cat -t stack "$S" | wc -l)" -eq 0 ]
	# At most a tenth of the frames are address-only, counting the frames of
	# the stacks through main or worker, markers and the vDSO's frames aside
	# (see own_stacks): whether the vDSO's internal functions have names
	# depends on the kernel build, start-up code on the C library.
	sp-cat -t module,frame,symstack "$S" > "$BATS_TEST_TMPDIR/sym.json"
	jq -s -r '(map(select(.t == "module" and .kind == "vdso") | .id)) as $vdso
		| (map(select(.t == "frame")) | INDEX(.id)) as $frame
		| [.[] | select(.t == "symstack") | [.frames[] | $frame[tostring]]
		   | select(any(.[]; .name == "main" or .name == "worker")) | .[]
		   | select((.flags // 0) / 8 % 2 < 1 and (.module as $m | any($vdso[]; . == $m) | not))]
		| unique_by(.id) | "\(length) \(map(select(.origin == "address-only")) | length)"' \
		"$BATS_TEST_TMPDIR/sym.json" > "$BATS_TEST_TMPDIR/own"
	read -r own address_only < "$BATS_TEST_TMPDIR/own"
	[ "$own" -ge 20 ]
	[ "$address_only" -le $((own / 10)) ]
}

@test "an inlined function is its own entry, with its caller's line on the frame" {
	symbolized "$S" "$WORKLOADS/inlined" 0.5
	call=$(grep -n 'OUTER_WORK_CALL' "$TOP/tests/workloads/inlined.c" | cut -d: -f1)
	loop=$(grep -n 'INNER_STEP_LOOP' "$TOP/tests/workloads/inlined.c" | cut -d: -f1)
	frames "$S" > "$BATS_TEST_TMPDIR/f"
	grep -q "^outer_work|.*inlined.c:$call|debuginfo|2|inner_step@$loop\$" "$BATS_TEST_TMPDIR/f"
	# --no-inline leaves the inline entries out.
	sp-symbolize --no-inline -o "$S.2" "$S.unw"
	run -0 sp-cat -t frame "$S.2"
	run -1 grep -q '"inline"' <<< "$output"
	# --no-lines leaves files and lines out.
	sp-symbolize --no-lines --no-inline -o "$S.3" "$S.unw"
	run -0 sp-cat -t frame "$S.3"
	run -1 grep -q '"line"' <<< "$output"
	sp-cat -t frame "$S.3" | grep -q '"name":"outer_work"'
}

@test "C++ names are demangled, templates included; --no-demangle keeps them" {
	symbolized "$S" "$WORKLOADS/templ" 0.5
	frames "$S" | grep -q '^double shapes::burn<double, 3>(double)|'
	frames "$S" | grep -q '^shapes::Accumulator<double>::run(double)'
	sp-symbolize --no-demangle -o "$S.2" "$S.unw"
	sp-cat -t frame "$S.2" | grep -q '"name":"_ZN6shapes4burnIdLi3EEET_S1_"'
}

@test "a Python 3.12 -X perf workload shows its Python functions" {
	PY=$(python312)
	symbolized "$S" "$PY" -X perf "$TOP/tests/workloads/pywork.py" 0.5
	pid=$(jqs "$S.raw" 'select(.t=="process") | .pid')
	frames "$S" > "$BATS_TEST_TMPDIR/f"
	for fn in py_outer py_middle py_inner; do
		grep -q "^py::$fn:.*pywork.py||perf-map|51[26]|" "$BATS_TEST_TMPDIR/f"
	done
	grep -q '^_PyEval_EvalFrameDefault|' "$BATS_TEST_TMPDIR/f"
	# --perf-maps-for python accepts it: its marker says CPython.
	sp-symbolize --perf-maps-for python -o "$S.2" "$S.unw"
	frames "$S.2" | grep -q '^py::py_inner:'
	sp-symbolize --no-perf-maps -o "$S.3" "$S.unw"
	run -0 frames "$S.3"
	run -1 grep -q 'perf-map' <<< "$output"
	rm -f "/tmp/perf-$pid.map"
}

@test "--perf-maps-for python ignores a map planted for a non-Python pid" {
	symbolized "$S" "$WORKLOADS/spin" 0.3
	pid=$(jqs "$S.raw" 'select(.t=="process") | .pid')
	# A fake JIT module for the C process, and a map for it.
	d=$BATS_TEST_TMPDIR/maps
	mkdir -p "$d"
	printf '%x 1000 planted_function\n' 4096 > "$d/perf-$pid.map"
	{ sp-cat "$S.unw" | head -n 1
	  echo "{\"t\":\"module\",\"id\":900,\"path\":\"//anon\",\"kind\":\"jit\",\"pid\":$pid}"
	  echo '{"t":"stack","id":900,"frames":[[4200,900,104,2]]}'
	  sp-cat -t runtime,summary "$S.unw"; } | sp-cat --from-json > "$BATS_TEST_TMPDIR/planted.sps"
	# Its one frame stays unnamed on purpose: without --allow-empty that is exit 1.
	sp-symbolize --allow-empty --perf-map-dir "$d" --perf-maps-for python -o "$S.2" "$BATS_TEST_TMPDIR/planted.sps"
	run -0 sp-cat -t frame "$S.2"
	run -1 grep -q planted_function <<< "$output"
	sp-cat -t frame "$S.2" | grep -q '"origin":"address-only"'
	# Trusting every pid (the default), or this pid, the name is used.
	sp-symbolize --perf-map-dir "$d" -o "$S.3" "$BATS_TEST_TMPDIR/planted.sps"
	sp-cat -t frame "$S.3" | grep -q '"name":"planted_function"'
	sp-symbolize --perf-map-dir "$d" --perf-maps-for "$pid" -o "$S.4" "$BATS_TEST_TMPDIR/planted.sps"
	sp-cat -t frame "$S.4" | grep -q '"name":"planted_function"'
	# A map owned by another user is refused, unless forced.
	chown 65534 "$d/perf-$pid.map"
	run --separate-stderr sp-symbolize --perf-map-dir "$d" -o "$S.5" "$BATS_TEST_TMPDIR/planted.sps"
	[[ "$stderr" == *"refusing '$d/perf-$pid.map': owned by neither root nor the process's user"* ]]
	run -0 sp-cat -t frame "$S.5"
	run -1 grep -q planted_function <<< "$output"
	[ "$(sp-cat -t symbolize "$S.5" | jq .perf_maps_refused)" -eq 1 ]
	sp-symbolize --force-perf-maps --perf-map-dir "$d" -o "$S.6" "$BATS_TEST_TMPDIR/planted.sps"
	sp-cat -t frame "$S.6" | grep -q planted_function
	# A symlink is not followed.
	chown 0 "$d/perf-$pid.map"
	mv "$d/perf-$pid.map" "$d/real.map"
	ln -s real.map "$d/perf-$pid.map"
	sp-symbolize --allow-empty --perf-map-dir "$d" -o "$S.7" "$BATS_TEST_TMPDIR/planted.sps"
	run -0 sp-cat -t frame "$S.7"
	run -1 grep -q planted_function <<< "$output"
}

@test "perf maps: hex with or without 0x, names with spaces, bad lines skipped, later lines win" {
	symbolized "$S" "$WORKLOADS/spin" 0.3
	pid=$(jqs "$S.raw" 'select(.t=="process") | .pid')
	d=$BATS_TEST_TMPDIR/maps
	mkdir -p "$d"
	printf '0x1000 100 first name with spaces\nnot a line\n2000 0x100 second\n1000 100 later wins\nzz 10 bad\n' > "$d/perf-$pid.map"
	{ sp-cat "$S.unw" | head -n 1
	  echo "{\"t\":\"module\",\"id\":900,\"path\":\"//anon\",\"kind\":\"jit\",\"pid\":$pid}"
	  echo '{"t":"stack","id":900,"frames":[[4112,900,16,2],[8208,900,16,6]]}'
	  sp-cat -t summary "$S.unw"; } | sp-cat --from-json > "$BATS_TEST_TMPDIR/m.sps"
	sp-symbolize --perf-map-dir "$d" -o "$S.2" "$BATS_TEST_TMPDIR/m.sps"
	sp-cat -t frame "$S.2" | grep -q '"name":"later wins"'
	sp-cat -t frame "$S.2" | grep -q '"name":"second"'
	[ "$(sp-cat -t symbolize "$S.2" | jq .perf_map_lines_skipped)" -eq 2 ]
}

@test "a saved kallsyms gives kernel names; --kallsyms none gives addresses" {
	sp-capture -q --kernel --kallsyms-out "$BATS_TEST_TMPDIR/k.syms" -o "$S.raw" -- dd if=/dev/zero of=/dev/null bs=64k count=50000
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize --kallsyms "$BATS_TEST_TMPDIR/k.syms" -o "$S" "$S.unw"
	[ "$(sp-cat -t frame "$S" | grep -c '"origin":"kallsyms"')" -gt 3 ]
	sp-cat -t frame "$S" | grep '"origin":"kallsyms"' | grep -q '"flags":2[56][0-9]'
	sp-symbolize --kallsyms none -o "$S.2" "$S.unw"
	run -0 sp-cat -t frame "$S.2"
	run -1 grep -q '"origin":"kallsyms"' <<< "$output"
	sp-cat -t frame "$S.2" | grep -q '"name":"\[kernel\]+0xffff'
	# A kallsyms whose addresses are all zero is refused.
	sed 's/^[0-9a-f]*/0000000000000000/' "$BATS_TEST_TMPDIR/k.syms" > "$BATS_TEST_TMPDIR/zero.syms"
	run sp-symbolize --kallsyms "$BATS_TEST_TMPDIR/zero.syms" -o "$S.3" "$S.unw"
	[ "$status" -eq 2 ]
	[[ "$output" == *"every address in '$BATS_TEST_TMPDIR/zero.syms' is zero"* ]]
}

@test "after the binaries moved away: only --module-dir and --debug-dir" {
	w=$BATS_TEST_TMPDIR/w
	mkdir -p "$w"
	cp "$WORKLOADS/spin" "$w/spin"
	sp-capture -q -o "$S.raw" -- "$w/spin" 0.3
	sp-unwind -o "$S.unw" "$S.raw"
	bid=$(readelf -n "$w/spin" | awk '/Build ID/ { print $3 }')
	mkdir -p "$BATS_TEST_TMPDIR/mods/.build-id/${bid:0:2}" "$BATS_TEST_TMPDIR/dbg/.build-id/${bid:0:2}"
	# The binary, stripped, by build-id; its debug information apart.
	objcopy --only-keep-debug "$w/spin" "$BATS_TEST_TMPDIR/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
	strip -s -o "$BATS_TEST_TMPDIR/mods/.build-id/${bid:0:2}/${bid:2}" "$w/spin"
	rm "$w/spin"
	sp-symbolize -o "$S" "$S.unw"
	frames "$S" | grep -q '^spin+0x[0-9a-f]*|.*address-only'
	[ "$(sp-cat -t symbolize "$S" | jq .modules_missing)" -ge 1 ]
	sp-symbolize --module-dir "$BATS_TEST_TMPDIR/mods" --debug-dir "$BATS_TEST_TMPDIR/dbg" -o "$S.2" "$S.unw"
	frames "$S.2" | grep -q '^stage_c|.*spin.c:[0-9]*|debuginfo'
	# The stripped binary alone gives no names for these static functions.
	sp-symbolize --module-dir "$BATS_TEST_TMPDIR/mods" --debug-dir /nonexistent -o "$S.3" "$S.unw"
	run -0 frames "$S.3"
	run -1 grep -q '^stage_c|' <<< "$output"
}

@test "a debug file by .gnu_debuglink: beside the module, in .debug, under --debug-dir; no debuginfod client loaded" {
	w=$BATS_TEST_TMPDIR/w
	mkdir -p "$w"
	objcopy --only-keep-debug "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/spin.debug"
	objcopy --strip-debug --add-gnu-debuglink="$BATS_TEST_TMPDIR/spin.debug" "$WORKLOADS/spin" "$w/spin"
	sp-capture -q -o "$S.raw" -- "$w/spin" 0.3
	sp-unwind -o "$S.unw" "$S.raw"
	# Without the debug file: symbols only, no lines.
	sp-symbolize --debug-dir /nonexistent -o "$S.0" "$S.unw"
	run -0 frames "$S.0"
	run -1 grep -q '^stage_c|.*spin.c:[0-9]*|debuginfo' <<< "$output"
	# Each place libdwfl looks: under --debug-dir with the module's
	# directory, in .debug beside it, beside it; DEBUGINFOD_URLS unset,
	# no debuginfod client library is loaded on the way.
	for where in "$BATS_TEST_TMPDIR/dbg$w" "$w/.debug" "$w"; do
		mkdir -p "$where"
		cp "$BATS_TEST_TMPDIR/spin.debug" "$where/spin.debug"
		env -u DEBUGINFOD_URLS LD_DEBUG=files sp-symbolize --debug-dir "$BATS_TEST_TMPDIR/dbg" \
			-o "$S.1" "$S.unw" 2> "$BATS_TEST_TMPDIR/ld.log"
		run -1 grep -q 'libdebuginfod' "$BATS_TEST_TMPDIR/ld.log"
		frames "$S.1" | grep -q '^stage_c|.*spin.c:[0-9]*|debuginfo'
		rm "$where/spin.debug"
	done
	# A debug file of another build is not taken.
	objcopy --only-keep-debug "$WORKLOADS/deep" "$w/spin.debug"
	sp-symbolize -o "$S.2" "$S.unw"
	run -0 frames "$S.2"
	run -1 grep -q '^stage_c|.*spin.c:[0-9]*|debuginfo' <<< "$output"
}

@test "a call through the PLT is a frame named NAME@plt, at the entry the relocations give" {
	local -
	set -o pipefail
	# spin calls cos through its PLT, and about 4% of its samples stop in
	# the stub on an idle machine, but a busy one may leave none: a frame
	# two bytes into the stub is planted in the first stack, so that the
	# naming is tested whatever the sampling gave.
	symbolized "$S" "$WORKLOADS/spin" 0.5
	entry=$(objdump -d --section=.plt --section=.plt.sec "$WORKLOADS/spin" |
		awk '/<cos@plt>:/ { print $1; exit }')
	[ -n "$entry" ]
	# The executable mapping's start less its file offset is where the
	# position-independent file is loaded (its addresses are its offsets).
	base=$(sp-cat -t map "$S.raw" | jq -r "select(.path == \"$WORKLOADS/spin\") | .start - .pgoff" | head -n 1)
	sp-cat "$S.unw" | python3 -c '
import json, sys
path, base, off = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 16) + 2
mod, planted = None, False
for line in sys.stdin:
    r = json.loads(line)
    if r["t"] == "module" and r.get("path") == path:
        mod = r["id"]
    elif r["t"] == "stack" and not planted and mod is not None:
        r["frames"][0] = [base + off, mod, off, 0]
        planted = True
    print(json.dumps(r, separators=(",", ":")))
sys.exit(0 if planted else 1)' "$WORKLOADS/spin" "$base" "$entry" > "$S.plt.jsonl"
	sps_from_json "$S.plt.jsonl" "$S.plt.unw"
	sp-symbolize -o "$S.plt" "$S.plt.unw"
	run -0 frames "$S.plt"
	grep -q '^cos@plt|' <<< "$output"
	# The frame's function starts at cos's PLT entry, as objdump places it.
	run -0 sp-cat -t frame "$S.plt"
	run -0 jq -r 'select(.name == "cos@plt") | .addr - .offset' <<< "$output"
	[ "${#lines[@]}" -ge 1 ]
	for a in "${lines[@]}"; do
		[ "$a" -eq $((base + 0x$entry)) ]
	done
}

@test "vDSO frames are named in the boot that recorded them" {
	symbolized "$S" "$WORKLOADS/vdsoloop" 0.3
	frames "$S" | grep -q '^__vdso_clock_gettime|'
}

@test "a stream at another stage is refused with the step to take" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/spin" 0.2
	run sp-symbolize "$S.raw"
	[ "$status" -eq 2 ]
	[[ "$output" == *"run sp-unwind first"* ]]
}

@test "a debuginfod server on loopback serves a debug file that exists nowhere else" {
	command -v debuginfod
	w=$BATS_TEST_TMPDIR/w
	mkdir -p "$w/srv" "$w/cache"
	cp "$WORKLOADS/spin" "$w/spin.full"
	objcopy --only-keep-debug "$w/spin.full" "$w/srv/spin.debug"
	strip -s -o "$w/spin" "$w/spin.full"
	rm "$w/spin.full"
	bid=$(readelf -n "$w/spin" | awk '/Build ID/ { print $3 }')
	port=$((20000 + RANDOM % 20000))
	debuginfod -F "$w/srv" -p "$port" -d "$w/db.sqlite" > "$w/log" 2>&1 3>&- &
	DPID=$!
	for i in $(seq 100); do
		curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$bid/debuginfo" && break
		sleep 0.1
	done
	sp-capture -q -o "$S.raw" -- "$w/spin" 0.3
	sp-unwind -o "$S.unw" "$S.raw"
	# Without the server: no names for the stripped binary's static functions.
	DEBUGINFOD_URLS= sp-symbolize --debug-dir /nonexistent -o "$S.0" "$S.unw"
	run -0 frames "$S.0"
	run -1 grep -q '^stage_c|' <<< "$output"
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$w/cache" \
		sp-symbolize --debug-dir /nonexistent -o "$S" "$S.unw" 2> "$w/err"
	frames "$S" | grep -q '^stage_c|.*spin.c:[0-9]*|debuginfo'
	# --no-debuginfod does not ask.
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$w/cache2" \
		sp-symbolize --no-debuginfod --debug-dir /nonexistent -o "$S.2" "$S.unw"
	run -0 frames "$S.2"
	run -1 grep -q '^stage_c|' <<< "$output"
	kill "$DPID"
	# A dead server does not hang the pipeline.
	start=$(date +%s)
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$w/cache3" \
		timeout 60 sp-symbolize --debug-dir /nonexistent -o "$S.3" "$S.unw"
	[ $(( $(date +%s) - start )) -lt 30 ]
}

@test "compressed debug files are kept inflated in the cache, without location lists, and give the same names" {
	symbolized "$S" "$WORKLOADS/spin" 0.3
	# A line of readelf -S -W for a section flagged C (compressed): the
	# flags come just before the last three numbers.  (" C " alone would
	# also match the key to the flags printed below the table.)
	flag_c='^ *\[ *[0-9]+\] .* [A-Za-z]*C[A-Za-z]* +[0-9]+ +[0-9]+ +[0-9]+$'
	compressed=0
	for f in /usr/lib/debug/.build-id/*/*.debug; do
		[ -e "$f" ] || continue
		readelf -S -W "$f" 2>/dev/null | grep -Eq "$flag_c" && compressed=1 && break
	done
	sp-symbolize -o "$S.1" "$S.unw"
	sp-symbolize -o "$S.2" "$S.unw"
	diff <(sp-cat "$S.1" | tail -n +2) <(sp-cat "$S.2" | tail -n +2)
	if [ $compressed = 1 ]; then
		[ "$(find "$XDG_CACHE_HOME/stackpulse" -name '*.debug' | wc -l)" -gt 0 ]
		local sections
		for f in $(find "$XDG_CACHE_HOME/stackpulse" -name '*.debug'); do
			sections=$(readelf -S -W "$f")
			run -1 grep -Eq "$flag_c" <<< "$sections"
			# Location lists, which nothing reads, are left out (NOBITS).
			run -1 grep -Eq '\] \.debug_loc(lists)? +PROGBITS' <<< "$sections"
			grep -q '\] \.debug_info ' <<< "$sections"
		done
	fi
	rm -rf "$XDG_CACHE_HOME"
	sp-symbolize --no-cache -o "$S.3" "$S.unw"
	[ ! -d "$XDG_CACHE_HOME/stackpulse" ] || [ -z "$(find "$XDG_CACHE_HOME/stackpulse" -type f)" ]
	diff <(sp-cat "$S.1" | tail -n +2) <(sp-cat "$S.3" | tail -n +2)
}

@test "MiniDebugInfo (.gnu_debugdata) names the functions of a stripped binary" {
	w=$BATS_TEST_TMPDIR/w
	mkdir -p "$w"
	# Fedora's way: the symbols alone, xz-compressed, in a section of the stripped file.
	objcopy --only-keep-debug --remove-section='.debug_*' --remove-section=.comment "$WORKLOADS/spin" "$w/mini"
	xz -f "$w/mini"
	strip -s -o "$w/stripped" "$WORKLOADS/spin"
	objcopy --add-section .gnu_debugdata="$w/mini.xz" "$w/stripped" "$w/spin"
	sp-capture -q -o "$S.raw" -- "$w/spin" 0.3
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize --debug-dir /nonexistent -o "$S" "$S.unw"
	frames "$S" | grep -q '^stage_c|[^|]*|symtab|'
	frames "$S" | grep -q '^leaf_compute|'
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Stripped modules, as release builds ship them: where no symbol names an
# address, the frame is named after the start of its function, which the
# module's .eh_frame_hdr lists (MODULE+0xOFFSET, origin function-start),
# so every function stays a frame of its own; a symbol without a size
# never names another function; a broken table names nothing.

load helper

# build_solib DIR: liboneexport.so (unstripped as lib.full), stripped, and
# the program that calls it, in DIR.
build_solib() {
	local d=$1 src=$TOP/tests/workloads/solib
	mkdir -p "$d"
	gcc -O2 -g -fPIC -shared -fno-toplevel-reorder -fno-omit-frame-pointer \
		-Wl,--build-id -o "$d/lib.full" "$src/oneexport.c"
	strip --strip-all -o "$d/liboneexport.so" "$d/lib.full"
	gcc -O2 -g -o "$d/oneexport" "$src/oneexport-main.c" -L"$d" -loneexport \
		-Wl,-rpath,"$d"
}

# debug_dir FILE DIR: FILE as a debug file of its build-id under DIR.
debug_dir() {
	local bid
	bid=$(readelf -n "$1" | awk '/Build ID/ { print $3 }')
	mkdir -p "$2/.build-id/${bid:0:2}"
	cp "$1" "$2/.build-id/${bid:0:2}/${bid:2}.debug"
}

# nm_addr FILE NAME: the address of symbol NAME in FILE, in hex without 0x.
nm_addr() {
	nm "$1" | awk -v n="$2" '$3 == n { sub(/^0+/, "", $1); print $1; exit }'
}

setup_file() {
	local d=$BATS_FILE_TMPDIR
	build_solib "$d/solib"
	cp "$WORKLOADS/spin" "$d/spin.full"
	strip --strip-all -o "$d/spin" "$d/spin.full"
	sp-capture -q -F 999 -o "$d/spin.raw" -- "$d/spin" -t 1 3
	sp-unwind -o "$d/spin.unw" "$d/spin.raw"
	sp-capture -q -F 999 -o "$d/one.raw" -- "$d/solib/oneexport" 3
	sp-unwind -o "$d/one.unw" "$d/one.raw"
}

setup() {
	D=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
}

@test "a stripped program: one frame per function, at the function's start, the same split as its symbols" {
	sp-symbolize -o "$T/a.sps" "$D/spin.unw"
	debug_dir "$D/spin.full" "$T/dbg"
	# A relative --debug-dir is relative to the current directory.
	(cd "$T" && sp-symbolize --debug-dir dbg -o "$T/b.sps" "$D/spin.unw")
	sp-cat "$T/a.sps" > "$T/a.jsonl"
	sp-cat "$T/b.sps" > "$T/b.jsonl"
	run -0 python3 "$TOP/tests/lib/symstacks.py" pairs "$T/a.jsonl" "$T/b.jsonl" spin
	echo "$output"
	pairs=$output
	# Every frame of the stripped program is named after a function start
	# (but the PLT's entries, named from .dynsym's imports)...
	run -1 grep -v -e ' function-start ' -e '^[a-z_]*@plt dynsym ' <<< "$pairs"
	# ...and the debug file names each frame: the same function, one for one.
	for f in stage_a stage_b stage_c recurse leaf_compute worker; do
		want=$(nm_addr "$D/spin.full" "$f")
		[ -n "$want" ]
		grep -qx "spin+0x$want function-start $f debuginfo" <<< "$pairs"
	done
	[ "$(awk '{ print $1 }' <<< "$pairs" | sort -u | wc -l)" -eq \
	  "$(awk '{ print $3 }' <<< "$pairs" | sort -u | wc -l)" ]
	[ "$(awk '{ print $1, $3 }' <<< "$pairs" | sort -u | wc -l)" -eq \
	  "$(awk '{ print $1 }' <<< "$pairs" | sort -u | wc -l)" ]
	# The stacks are complete, and every frame has a function identity.
	read -r total full named < <(python3 "$TOP/tests/lib/symstacks.py" complete "$T/a.jsonl" "spin+0x$(nm_addr "$D/spin.full" leaf_compute)")
	echo "total=$total complete=$full named=$named"
	[ "$total" -ge 100 ]
	[ "$((full * 100))" -ge "$((total * 99))" ]
	[ "$((named * 100))" -ge "$((total * 99))" ]
}

@test "folded output keeps the functions of a stripped program apart" {
	sp-symbolize -o "$T/a.sps" "$D/spin.unw"
	run -0 sp-fold "$T/a.sps"
	hot=$(sort -t' ' -k2 -nr <<< "$output" | head -n 1)
	echo "$hot"
	# main, run_workers, worker, stage_a..c, recurse x8, leaf_compute: distinct frames.
	[ "$(tr ';' '\n' <<< "${hot% *}" | grep -c '^spin+0x')" -ge 14 ]
	[ "$(tr ';' '\n' <<< "${hot% *}" | grep '^spin+0x' | sort -u | wc -l)" -ge 7 ]
	run -1 grep -q '\[spin\]' <<< "$output"
}

@test "a symbol without a size, or past its end, never names another function" {
	sp-symbolize -o "$T/a.sps" "$D/one.unw"
	debug_dir "$D/solib/lib.full" "$T/dbg"
	sp-symbolize --debug-dir "$T/dbg" -o "$T/b.sps" "$D/one.unw"
	sp-cat "$T/a.sps" > "$T/a.jsonl"
	sp-cat "$T/b.sps" > "$T/b.jsonl"
	run -0 python3 "$TOP/tests/lib/symstacks.py" pairs "$T/a.jsonl" "$T/b.jsonl" liboneexport.so
	echo "$output"
	pairs=$output
	# Only the exported function carries its name, from .dynsym.
	grep -qx 'one_export dynsym one_export debuginfo' <<< "$pairs"
	run -1 grep -q 'one_marker' <<< "$pairs"
	for f in one_inner one_middle one_leaf; do
		grep -qx "liboneexport.so+0x$(nm_addr "$D/solib/lib.full" "$f") function-start $f debuginfo" <<< "$pairs"
	done
	[ "$(wc -l <<< "$pairs")" -eq 4 ]
	read -r total full named < <(python3 "$TOP/tests/lib/symstacks.py" complete "$T/a.jsonl" one_export)
	[ "$total" -ge 100 ] && [ "$((full * 100))" -ge "$((total * 99))" ]
}

@test "pprof: frames named by function start keep their address in their mapping, so pprof names them from the unstripped library" {
	sp-symbolize -o "$T/a.sps" "$D/one.unw"
	sp-fold --format pprof -o "$T/p.pb.gz" "$T/a.sps"
	gzip -dc "$T/p.pb.gz" | protoc --decode perftools.profiles.Profile -I "$TOP/tests/lib" profile.proto > "$T/p.txt"
	python3 - "$T/p.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
maps = re.findall(r'^mapping \{\n(.*?)\n\}', text, re.M | re.S)
found = False
for m in maps:
    f = dict(re.findall(r'^\s*(\w+): (\S+)$', m, re.M))
    name = strings[int(f.get("filename", 0))]
    if name.endswith("/liboneexport.so"):
        found = int(f["id"])
        start, limit = int(f["memory_start"]), int(f["memory_limit"])
        offset = int(f.get("file_offset", 0))
        assert f.get("has_functions", "false") == "false", m
        assert len(strings[int(f["build_id"])]) == 40, m
assert found, "no mapping of liboneexport.so"
# Its locations hold the sampled addresses, inside the range where the
# library was mapped, and its mapping says where in the file that range
# starts: a re-symbolizer finds each in the library's code (0x1000 to
# 0x2000 of the file).
locs = re.findall(r'^location \{\n(.*?)\n\}', text, re.M | re.S)
mine = [dict(re.findall(r'^  (\w+): (\S+)$', l, re.M)) for l in locs]
mine = [int(l["address"]) for l in mine if int(l.get("mapping_id", 0)) == found]
assert len(mine) >= 3, mine
assert all(start <= a < limit for a in mine), ([hex(a) for a in mine], hex(start), hex(limit))
assert all(0x1000 <= a - start + offset < 0x2000 for a in mine), [hex(a - start + offset) for a in mine]
PY
	# So pprof names them from the unstripped library of that build-id.
	cp "$D/solib/liboneexport.so" "$T/stripped.so"
	cp "$D/solib/lib.full" "$D/solib/liboneexport.so"
	run go tool pprof -symbolize=local:force -traces "$T/p.pb.gz"
	cp "$T/stripped.so" "$D/solib/liboneexport.so"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^ +[0-9]+ +one_leaf$' <<< "$output"
	grep -qE '^ +one_middle$' <<< "$output"
	grep -qE '^ +one_inner$' <<< "$output"
}

# section_offset FILE NAME: the file offset of section NAME, in hex.
section_offset() {
	local -
	set -o pipefail
	readelf -SW "$1" | sed 's/\[ */[/' | awk -v n="$2" '$2 == n { print $5; found = 1 } END { exit !found }'
}

# corrupt_hdr IN OUT HOW: IN with its .eh_frame_hdr table broken: "unsorted"
# swaps its first two entries, "count" claims more entries than it holds.
corrupt_hdr() {
	local off
	off=$(section_offset "$1" .eh_frame_hdr)
	python3 - "$@" "$off" <<'PY'
import struct, sys
src, dst, how, off = sys.argv[1:5]
off = int(off, 16)
data = bytearray(open(src, "rb").read())
assert data[off] == 1 and data[off + 2] == 0x03 and data[off + 3] == 0x3b
count = struct.unpack_from("<I", data, off + 8)[0]
table = off + 12
if how == "unsorted":
    a = data[table:table + 8]
    data[table:table + 8] = data[table + 8:table + 16]
    data[table + 8:table + 16] = a
else:
    struct.pack_into("<I", data, off + 8, count + 1000)
open(dst, "wb").write(data)
PY
}

@test "a broken .eh_frame_hdr is ignored for its module, with one warning naming it and why" {
	for how in unsorted count; do
		mkdir -p "$T/$how/.build-id"
		corrupt_hdr "$D/solib/liboneexport.so" "$T/$how/liboneexport.so" "$how"
		bid=$(readelf -n "$T/$how/liboneexport.so" | awk '/Build ID/ { print $3 }')
		mkdir -p "$T/$how/.build-id/${bid:0:2}"
		mv "$T/$how/liboneexport.so" "$T/$how/.build-id/${bid:0:2}/${bid:2}"
		run -0 --separate-stderr sp-symbolize --module-dir "$T/$how" -o "$T/$how.sps" "$D/one.unw"
		echo "$stderr"
		[ "$(grep -c 'eh_frame_hdr' <<< "$stderr")" -eq 1 ]
		case $how in
		unsorted) grep -q "liboneexport.so' (read from '.*'): .eh_frame_hdr: table not sorted: ignored" <<< "$stderr" ;;
		count) grep -q "liboneexport.so' (read from '.*'): .eh_frame_hdr: .*: ignored" <<< "$stderr" ;;
		esac
		run -0 frames "$T/$how.sps"
		echo "$output"
		fr=$output
		# Nothing in the module is named from the table; the export keeps its name.
		run -1 grep -q '|function-start|' <<< "$fr"
		grep -q '^one_export||dynsym|' <<< "$fr"
		grep -q '^liboneexport.so+0x[0-9a-f]*||address-only|' <<< "$fr"
	done
}

@test "xz and liblzma as Debian ships them: each function its own frame" {
	command -v xz
	head -c 2000000 /dev/urandom > "$T/in"
	seq 1 400000 >> "$T/in"
	sp-capture -q -F 999 -o "$T/xz.raw" -- xz -9 -T1 -k -c "$T/in" > /dev/null
	sp-unwind -o "$T/xz.unw" "$T/xz.raw"
	sp-symbolize -o "$T/xz.sps" "$T/xz.unw"
	sp-cat "$T/xz.sps" > "$T/xz.jsonl"
	run -0 python3 "$TOP/tests/lib/symstacks.py" names "$T/xz.jsonl"
	echo "$output" | head -n 30
	# Many distinct functions of liblzma, none folded into one box.
	[ "$(grep -c '^liblzma\.so[.0-9]*+0x[0-9a-f]* function-start ' <<< "$output")" -ge 5 ]
	run -0 sp-fold "$T/xz.sps"
	run -1 grep -q '\[liblzma' <<< "$output"
	read -r total full named < <(python3 "$TOP/tests/lib/symstacks.py" complete "$T/xz.jsonl" lzma_code)
	echo "total=$total complete=$full named=$named"
	[ "$total" -ge 100 ]
	[ "$((full * 100))" -ge "$((total * 95))" ]
	[ "$((named * 100))" -ge "$((total * 95))" ]
}

# go_build OUT SRC [FLAGS...]: a Go program built from SRC alone, with
# Debian's Go, its caches in the test's directory.
go_build() {
	local out=$1 src=$2 d
	shift 2
	d=$(dirname "$out")/$(basename "$out").src
	mkdir -p "$d"
	cp "$src" "$d/main.go"
	printf 'module prog\ngo 1.18\n' > "$d/go.mod"
	(cd "$d" && GOCACHE=$BATS_FILE_TMPDIR/gocache GOPATH=$BATS_FILE_TMPDIR/gopath \
		GOFLAGS=-mod=mod go build "$@" -o "$out" .)
}

@test "Go built with -ldflags=-s -w: named from its Go table, unwound whole to runtime.goexit" {
	go_build "$T/gospin" "$TOP/tests/workloads/gospin.go" -ldflags="-s -w"
	run -0 readelf -SW "$T/gospin"
	run -1 grep -q -e ' .symtab ' -e ' .debug_' -e ' .eh_frame ' <<< "$output"
	sp-capture -q -F 999 -o "$T/go.raw" -- "$T/gospin" 3
	sp-unwind -o "$T/go.unw" "$T/go.raw"
	sp-symbolize -o "$T/go.sps" "$T/go.unw"
	sp-cat "$T/go.sps" > "$T/go.jsonl"
	read -r total full named < <(python3 "$TOP/tests/lib/symstacks.py" complete "$T/go.jsonl" main.hot)
	echo "total=$total complete=$full named=$named"
	[ "$total" -ge 100 ]
	[ "$((full * 100))" -ge "$((total * 99))" ]
	[ "$((named * 100))" -ge "$((total * 99))" ]
	# Whole stacks, as the unstripped build's: the frameless leaf's caller
	# (main.mix) is there, and every one ends at runtime.goexit.
	run -0 sp-fold "$T/go.sps"
	hot=$(grep ';main\.hot ' <<< "$output")
	echo "$hot" | head -n 5
	through=$(grep -E '^gospin;runtime\.goexit;(runtime\.main;main\.main|main\.main\.func2;main\.main\.func1);main\.work;main\.mix;main\.hot ' <<< "$hot" | awk '{ s += $NF } END { print s + 0 }')
	all=$(awk '{ s += $NF } END { print s + 0 }' <<< "$hot")
	echo "through=$through all=$all"
	[ "$((through * 100))" -ge "$((all * 99))" ]
	# Names, files and lines from the table.
	run -0 frames "$T/go.sps"
	grep -q '^main\.hot|.*/main\.go:[0-9][0-9]*|gopclntab|' <<< "$output"
	grep -q '^runtime\.goexit|.*asm_amd64\.s:[0-9]*|gopclntab|' <<< "$output"
}

@test "a stripped cgo program: no C symbol of .dynsym names Go code" {
	go_build "$T/cgospin" "$TOP/tests/workloads/cgo/cgospin.go" -ldflags="-s -w"
	readelf -W --dyn-syms "$T/cgospin" | awk '$4 == "FUNC" && $7 != "UND" { print $8, $2, $3 }' > "$T/dynsym"
	[ "$(wc -l < "$T/dynsym")" -ge 3 ]
	sp-capture -q -F 999 -o "$T/c.raw" -- "$T/cgospin" 3
	sp-unwind -o "$T/c.unw" "$T/c.raw"
	sp-symbolize -o "$T/c.sps" "$T/c.unw"
	sp-cat "$T/c.sps" > "$T/c.jsonl"
	run python3 - "$T/c.jsonl" "$T/dynsym" <<'PY'
import json, sys
syms = {}
for line in open(sys.argv[2]):
    name, value, size = line.split()
    syms[name.split("@")[0]] = (int(value, 16), int(size))
mods, bad, go, dyn = {}, 0, 0, 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["t"] == "module":
        mods[r["id"]] = r.get("path", "")
    if r["t"] != "frame" or r.get("flags", 0) & 8:
        continue
    if not mods.get(r.get("module"), "").endswith("/cgospin"):
        continue
    if r["origin"] == "gopclntab":
        go += 1
    if r["origin"] == "dynsym":
        dyn += 1
        v, size = syms[r["name"]]
        # A .dynsym name only within its symbol's extent.
        if size and r["offset"] > size:
            bad += 1
            print("outside:", r)
print("go", go, "dynsym", dyn, "bad", bad)
sys.exit(1 if bad or go < 5 else 0)
PY
	echo "$output"
	[ "$status" -eq 0 ]
	run -0 frames "$T/c.sps"
	grep -q '^main\.gohot|.*|gopclntab|' <<< "$output"
	grep -q '^main\.gowork|.*|gopclntab|' <<< "$output"
}

# corrupt_gopclntab IN OUT HOW: a Go program (Go 1.18+ table) with its
# function table broken: "unsorted" swaps the entries of two functions,
# "count" claims far more functions than the table holds.
corrupt_gopclntab() {
	local off
	off=$(section_offset "$1" .gopclntab)
	python3 - "$@" "$off" <<'PY'
import struct, sys
src, dst, how, off = sys.argv[1:5]
off = int(off, 16)
data = bytearray(open(src, "rb").read())
magic = struct.unpack_from("<I", data, off)[0]
assert magic in (0xfffffff0, 0xfffffff1) and data[off + 7] == 8, hex(magic)
nfunc = struct.unpack_from("<Q", data, off + 8)[0]
ftab = off + struct.unpack_from("<Q", data, off + 8 + 7 * 8)[0]
if how == "unsorted":
    a = data[ftab + 8:ftab + 16]
    data[ftab + 8:ftab + 16] = data[ftab + 16:ftab + 24]
    data[ftab + 16:ftab + 24] = a
else:
    struct.pack_into("<Q", data, off + 8, nfunc * 1000)
open(dst, "wb").write(data)
PY
}

@test "a broken .gopclntab is ignored for its module, with one warning naming it and why" {
	# A GNU build-id, by which --module-dir finds the broken copy.
	go_build "$T/gospin" "$TOP/tests/workloads/gospin.go" \
		-ldflags="-s -w -B 0x$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
	sp-capture -q -F 499 -o "$T/go.raw" -- "$T/gospin" 1
	sp-unwind -o "$T/go.unw" "$T/go.raw"
	for how in unsorted count; do
		corrupt_gopclntab "$T/gospin" "$T/gospin.$how" "$how"
		bid=$(readelf -n "$T/gospin" | awk '/Build ID/ { print $3 }')
		mkdir -p "$T/$how/.build-id/${bid:0:2}"
		cp "$T/gospin.$how" "$T/$how/.build-id/${bid:0:2}/${bid:2}"
		# Stripped and without its table, no frame has a name: best effort.
		run -0 --separate-stderr sp-symbolize --allow-empty --module-dir "$T/$how" -o "$T/$how.sps" "$T/go.unw"
		echo "$stderr"
		[ "$(grep -c 'gopclntab' <<< "$stderr")" -eq 1 ]
		grep -q "gospin' (read from '.*'): .gopclntab: .*: ignored" <<< "$stderr"
		run -0 frames "$T/$how.sps"
		fr=$output
		run -1 grep -q '|gopclntab|' <<< "$fr"
		run -1 grep -q '^main\.' <<< "$fr"
	done
}

@test "Go built with -ldflags=-s -w: calls inlined by the compiler, from its Go table" {
	go_build "$T/goinline" "$TOP/tests/workloads/goinline.go" -ldflags="-s -w"
	sp-capture -q -F 999 -o "$T/i.raw" -- "$T/goinline" 3
	sp-unwind -o "$T/i.unw" "$T/i.raw"
	sp-symbolize -o "$T/i.sps" "$T/i.unw"
	run -0 frames "$T/i.sps"
	echo "$output" | head -n 5
	# Each inline entry with its position in the inlined function, the
	# frame with the call's position in main.outer.
	grep -qE '^main\.outer\|.*/main\.go:[0-9]+\|gopclntab\|[0-9]+\|main\.small@[0-9]+,main\.middle@[0-9]+$' <<< "$output"
	run -0 sp-fold --inline "$T/i.sps"
	hot=$(grep ';main\.outer;' <<< "$output")
	# Most of the loop is inlined code; how the samples divide between
	# middle's and small's instructions depends on the CPU's skid.
	inl=$(grep ';main\.outer;main\.middle_\[i\]' <<< "$hot" | awk '{ s += $NF } END { print s + 0 }')
	small=$(grep ';main\.outer;main\.middle_\[i\];main\.small_\[i\] ' <<< "$hot" | awk '{ s += $NF } END { print s + 0 }')
	all=$(awk '{ s += $NF } END { print s + 0 }' <<< "$hot")
	echo "inlined=$inl (in small: $small) of $all"
	[ "$all" -ge 100 ] && [ "$((inl * 2))" -ge "$all" ] && [ "$((small * 10))" -ge "$all" ]
}

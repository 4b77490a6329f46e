#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-import: perf.data from this machine's perf, in each call-graph mode
# and in pipe mode, through sp-unwind, sp-symbolize and sp-fold, folded
# to the same stacks with the same counts as perf script folds them
# (tests/lib/perf-collapse.py), up to the differences man/sp-import.1
# lists; and perf.data it cannot read, cut short or of the other byte
# order.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
}

# need_perf: skips the test unless this machine's perf can record.
need_perf() {
	command -v perf > /dev/null || skip "no perf"
	record "$T/probe.data" -- true > /dev/null || skip "perf record cannot record here"
}

# record OUT PERF-ARGS... -- CMD...: perf record into OUT.  perf 6.1 at
# times aborts on an assertion in util/build-id.c as it ends (as
# docs/PERFORMANCE.md tells of figure 12): it is run again, three times
# at most.
record() {
	local out=$1 i
	shift
	for i in 1 2 3; do
		perf record -N -q -F 999 -o "$out" "$@" 2> "$out.err" && return 0
		grep -q 'assertion failed at util/build-id.c' "$out.err" || break
	done
	cat "$out.err"
	false
}

# perf_folded DATA OUT: perf script's stacks of DATA folded.
perf_folded() {
	local -
	set -o pipefail
	perf script -i "$1" -F comm,tid,ip,sym,dso 2> /dev/null |
		/usr/bin/python3 "$TOP/tests/lib/perf-collapse.py" --kernel | normalize |
		sort > "$2"
}

# sp_folded DATA OUT: DATA through sp-import, sp-unwind, sp-symbolize, sp-fold.
sp_folded() {
	local -
	set -o pipefail
	sp-import -q "$1" > "$2.raw"
	sp-unwind --allow-empty "$2.raw" 2> /dev/null |
		sp-symbolize --kallsyms /proc/kallsyms 2> /dev/null | sp-fold --kernel |
		normalize | sort > "$2"
}

# The documented differences (man/sp-import.1, COMPARED WITH PERF SCRIPT):
# a callchain cut at the kernel's limit is marked [truncated]; a sample
# without a call graph is its one frame under [bad_fp]; a function of
# several names (glibc's __GI___wait4, wait4) may be named by another of
# them, so every name is compared without its leading underscores, __GI_
# prefix and @version; and GCC's clones of a function (ptmalloc_init and
# ptmalloc_init.part.0 at the same address) without their suffix.
normalize() {
	sed -E 's/;\[truncated\]//; s/;\[bad_fp\]//; s/;(__GI_)?_*([^;@ ]*)(@[^; ]*)?/;\2/g' |
		sed -E 's/\.(part|isra|constprop|cold|lto_priv)(\.[0-9]+)*([; ])/\3/g'
}

# same PERF SP: the same stacks with the same counts, but for the user
# part of stacks with kernel frames (_[k]), which perf script does not
# always unwind (man/sp-import.1), and for at most one sample in 100
# where perf script gave up ([unknown] frames in the dynamic linker at
# start-up) or named a frame by a neighbouring symbol; the same number
# of samples in all, at least 100.
same() {
	grep -v '_\[k\]' "$1" | sort > "$1.user" || true
	grep -v '_\[k\]' "$2" | sort > "$2.user" || true
	diff "$1.user" "$2.user" || true
	local total off
	total=$(weight "$1")
	# Per stack, how many samples one side has and the other not.
	off=$(awk '{ n = $NF; $NF = ""; d[$0] += FILENAME == ARGV[1] ? n : -n }
		END { for (k in d) s += d[k] < 0 ? -d[k] : d[k]; print s + 0 }' \
		"$1.user" "$2.user")
	[ "$total" -eq "$(weight "$2")" ]
	[ "$total" -ge 100 ]
	# A sample named differently counts on both sides.
	[ $((off * 100)) -le $((total * 2)) ]
}

@test "--call-graph dwarf: the stack copies unwind to perf script's stacks" {
	need_perf
	record "$T/d.data" --call-graph dwarf -- "$WORKLOADS/spin" 1
	perf_folded "$T/d.data" "$T/perf"
	sp_folded "$T/d.data" "$T/sp"
	same "$T/perf" "$T/sp"
	grep -q ';leaf_compute' "$T/sp"
	# The header is perf's: its host, command line and options.
	run -0 sp-cat -t header "$T/sp.raw"
	[[ $output == *'"tools":[{"name":"perf"'*'"args":["record","-N","-q","-F","999",'*'"--call-graph","dwarf"'* ]]
	[[ $output == *"\"hostname\":\"$(hostname)\""* ]]
	[[ $output == *'"call_graph":"dwarf","kernel":true'* ]]
	[[ $output == *'"clock":"perf"'* ]]
	# Maps carry the build-ids of perf's build-id section.
	run -0 sp-cat -t map "$T/sp.raw"
	[[ $output == *'workloads/spin"'*'"build_id":'* ]]
}

@test "--call-graph fp and -g: the callchains fold to perf script's stacks" {
	need_perf
	local mode
	for mode in "--call-graph fp" "-g"; do
		# shellcheck disable=SC2086
		record "$T/f.data" $mode -- "$WORKLOADS/deep-fp" 1
		perf_folded "$T/f.data" "$T/perf"
		sp_folded "$T/f.data" "$T/sp"
		same "$T/perf" "$T/sp"
		grep -q ';deep_recurse;deep_leaf' "$T/sp"
		run -0 sp-cat -t header "$T/sp.raw"
		[[ $output == *'"call_graph":"fp"'* ]]
	done
}

@test "samples without a call graph: their one address folds as perf script's" {
	need_perf
	record "$T/n.data" -- "$WORKLOADS/deep-fp" 1
	perf_folded "$T/n.data" "$T/perf"
	sp_folded "$T/n.data" "$T/sp"
	same "$T/perf" "$T/sp"
	grep -qx 'deep-fp;deep_leaf [0-9]*' "$T/sp"
	run -0 sp-cat -t sample "$T/sp.raw"
	[[ ${lines[0]} == *'"uchain":['* || ${lines[0]} == *'"kstack":['* ]]
}

@test "pipe mode: perf record -o - into sp-import -, forks and exits followed" {
	need_perf
	local -
	set -o pipefail
	perf record -N -q -F 999 --call-graph dwarf -o - -- "$WORKLOADS/forker" -n 4 1 \
		2> /dev/null > "$T/p.data"
	run -0 sp-import - < "$T/p.data"
	[[ $output == *"(pipe mode)"* ]]
	perf_folded "$T/p.data" "$T/perf"
	sp-import -q - < "$T/p.data" > "$T/p.sps"
	sp-unwind --allow-empty "$T/p.sps" 2> /dev/null |
		sp-symbolize --kallsyms /proc/kallsyms 2> /dev/null | sp-fold --kernel |
		normalize | sort > "$T/sp"
	same "$T/perf" "$T/sp"
	grep -q '^forker;main;child_work;child_spin ' "$T/sp"
	grep -q '^forker;main;parent_work ' "$T/sp"
	# Each child's fork and exit.
	run -0 sp-cat -t fork,exit "$T/p.sps"
	[ "$(grep -c '"t":"fork"' <<< "$output")" -ge 4 ]
	[ "$(grep -c '"t":"exit"' <<< "$output")" -ge 4 ]
	# perf record piped straight into sp-import.
	perf record -N -q -F 999 -g -o - -- "$WORKLOADS/spin" 1 2> /dev/null |
		sp-import -q - > "$T/live.sps"
	[ "$(summary "$T/live.sps" samples)" -ge 100 ]
}

@test "a perf.data cut short: the records before the cut, a message naming it, status 1" {
	need_perf
	record "$T/d.data" --call-graph dwarf -- "$WORKLOADS/spin" 1
	sp-import -q "$T/d.data" > "$T/full.sps"
	local size
	size=$(stat -c %s "$T/d.data")
	head -c $((size * 2 / 3)) "$T/d.data" > "$T/cut.data"
	run -1 sp-import -q -o "$T/cut.sps" "$T/cut.data"
	[[ $output == *"cut short at offset "*": its record "*" of "*" bytes"* ]]
	# Every complete record before the cut: a valid stream, with a summary.
	run -0 sp-cat -t summary "$T/cut.sps"
	local n full
	n=$(summary "$T/cut.sps" samples)
	full=$(summary "$T/full.sps" samples)
	[ "$n" -gt 0 ] && [ "$n" -lt "$full" ]
	run -0 sp-unwind --allow-empty -o /dev/null "$T/cut.sps"

	# Pipe mode cut short the same way.
	perf record -N -q -F 999 -g -o - -- "$WORKLOADS/spin" 1 2> /dev/null > "$T/p.data"
	size=$(stat -c %s "$T/p.data")
	head -c $((size / 2 + 3)) "$T/p.data" > "$T/pcut.data"
	run -1 sp-import -q -o "$T/pcut.sps" - < "$T/pcut.data"
	[[ $output == *"cut short at offset"* ]]
	[ "$(summary "$T/pcut.sps" samples)" -gt 0 ]

	# A record whose size runs past the data section: corrupt, the same way.
	/usr/bin/python3 - "$T/d.data" "$T/bad.data" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
off = struct.unpack_from("<Q", d, 40)[0]
size = struct.unpack_from("<Q", d, 48)[0]
at = off
for _ in range(50):
    at += struct.unpack_from("<H", d, at + 6)[0]
struct.pack_into("<H", d, at + 6, 4)
open(sys.argv[2], "wb").write(d)
EOF
	run -1 sp-import -q -o "$T/bad.sps" "$T/bad.data"
	[[ $output == *"corrupt at offset"*"shorter than its header"* ]]
	[ "$(summary "$T/bad.sps" samples)" -gt 0 ]
}

@test "not a perf.data, the other byte order, an unknown attr size: refused by name" {
	need_perf
	printf 'not a perf.data file at all, only text\n' > "$T/text"
	run -2 sp-import "$T/text"
	[[ $output == *"not a perf.data file"*"PERFILE2"* ]]
	# The magic as a big-endian machine writes it.
	{ printf '2ELIFREP'; head -c 200 /dev/zero; } > "$T/be.data"
	run -2 sp-import "$T/be.data"
	[[ $output == *"other byte order (big-endian)"* ]]
	record "$T/d.data" -g -- "$WORKLOADS/spin" 1
	/usr/bin/python3 - "$T/d.data" "$T/attr.data" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<Q", d, 16, 40)
open(sys.argv[2], "wb").write(d)
EOF
	run -2 sp-import "$T/attr.data"
	[[ $output == *"attr size sp-import does not know"* ]]
	run -3 sp-import
	run -3 sp-import a b
	run -2 sp-import "$T/no-such-file"
	[[ $output == *"cannot open"* ]]
	run -2 sp-import "$T"
	[[ $output == *"is a directory"* ]]
}

@test "compressed records (perf record -z), file and pipe mode: decompressed and imported" {
	need_perf
	perf record -q -z -F 999 --call-graph dwarf -o "$T/z.data" -- \
		"$WORKLOADS/spin" -t 2 1 2> /dev/null || skip "this perf has no -z"
	perf report -i "$T/z.data" --header-only 2> /dev/null | grep -q 'compressed' ||
		skip "this perf wrote no compressed records"
	# perf itself counts the samples in the compressed records.
	local want
	want=$(perf report -D -i "$T/z.data" 2> /dev/null | grep -c 'PERF_RECORD_SAMPLE(')
	(( want > 500 ))
	run -0 sp-import -o "$T/z.sps" "$T/z.data"
	[[ $output == *", $want samples written"* ]]
	run -0 sp-stat --json "$T/z.sps"
	[[ $(jq .sample_records <<< "$output") == "$want" ]]
	# The samples unwind and name the workload's functions.
	sp-unwind "$T/z.sps" | sp-symbolize | sp-fold > "$T/z.folded"
	grep -q 'leaf_compute' "$T/z.folded"
	# Pipe mode.
	perf record -q -z -F 999 --call-graph dwarf -o - -- "$WORKLOADS/spin" 1 \
		2> /dev/null > "$T/zp.data"
	run -0 sp-import -o "$T/zp.sps" - < "$T/zp.data"
	[[ $output == *"(pipe mode)"* ]]
	# Cut inside its compressed records: everything before the cut, status 1.
	head -c $(( $(stat -c %s "$T/z.data") / 2 )) "$T/z.data" > "$T/zcut.data"
	run -1 sp-import -o "$T/zcut.sps" "$T/zcut.data"
	[[ $output == *"cut short at offset"*"every record before it was imported"* ]]
	run -0 sp-stat --json "$T/zcut.sps"
	(( $(jq .sample_records <<< "$output") > 0 ))
}

@test "every record kind of a perf.data built field by field, file and pipe mode" {
	# fuzz/make-corpus-import writes these.
	local c=$TOP/fuzz/corpus/fuzz-import f
	for f in file-fp pipe-fp file-dwarf; do
		run -0 sp-import -o "$T/$f.sps" "$c/$f"
		run -0 sp-cat "$T/$f.sps"
		[[ ${lines[1]} == '{"t":"exec","pid":42,"tid":42,"comm":"seed","time":100}' ]]
		[[ $output == *'{"t":"map","pid":42,"start":4194304,"len":4096,"pgoff":0,"path":"/bin/seed","tid":42,"time":110,'* ]]
		[[ $output == *'{"t":"fork","pid":42,"ppid":42,"tid":43,"ptid":42,"time":120}'* ]]
		[[ $output == *'{"t":"throttle","time":171,'* ]]
		[[ $output == *'{"t":"unthrottle","time":172,'* ]]
		[[ $output == *'{"t":"lost","lost":2,"kind":"samples","time":173,'* ]]
		[[ $output == *'{"t":"lost","lost":3,"kind":"records","time":175,'* ]]
		[[ $output == *'{"t":"exit","pid":42,"ppid":42,"tid":43,"ptid":42,"time":180,"ustack_reset":true}'* ]]
		[ "$(summary "$T/$f.sps" samples)" -eq 4 ]
		[ "$(summary "$T/$f.sps" lost_events)" -eq 5 ]
		[ "$(summary "$T/$f.sps" throttle_events)" -eq 1 ]
	done
	# The host of the hostname feature, the build-id of the build-id section.
	run -0 sp-cat -t header,map "$T/file-fp.sps"
	[[ $output == *'"host":{"hostname":"seedhost"'* ]]
	[[ $output == *'"build_id":{"$bin":"AQIDBAUGBwgJCgsMDQ4PEBESExQ="}'* ]]
	run -0 sp-cat -t sample "$T/file-fp.sps"
	[[ ${lines[0]} == *'"period":1000000,"uchain":[4194560,4194816]}' ]]
	run -0 sp-cat -t sample "$T/file-dwarf.sps"
	[[ ${lines[0]} == *'"abi":2,"regs":[32752,32753,32754,32755,32756,32757,32758,32759,32760,32764,'* ]]
}

@test "a perf.data of perf 5.x's attribute size reads as the same stream" {
	need_perf
	# perf 5.4 wrote 112-byte attributes (PERF_ATTR_SIZE_VER5); 6.1
	# writes 128.  The same recording with its attributes cut to 112.
	record "$T/d.data" -g -- "$WORKLOADS/spin" 1
	/usr/bin/python3 - "$T/d.data" "$T/old.data" <<'PYEOF'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
attr_size, off, size = struct.unpack_from("<QQQ", d, 16)
n = size // attr_size
entries = []
for i in range(n):
    e = d[off + i * attr_size:off + (i + 1) * attr_size]
    a = bytearray(e[:112])
    struct.pack_into("<I", a, 4, 112)
    entries.append(bytes(a) + bytes(e[attr_size - 16:]))
d[off:off + n * 128] = b"".join(entries)
struct.pack_into("<QQQ", d, 16, 128, off, n * 128)
open(sys.argv[2], "wb").write(d)
PYEOF
	# perf itself reads it as the same recording.
	[ "$(perf script -i "$T/old.data" 2> /dev/null | wc -l)" -eq \
	  "$(perf script -i "$T/d.data" 2> /dev/null | wc -l)" ]
	sp-import -q "$T/d.data" | sp-cat -t sample,map,fork,exit > "$T/new.txt"
	sp-import -q "$T/old.data" | sp-cat -t sample,map,fork,exit > "$T/old.txt"
	[ "$(lines "$T/new.txt")" -ge 100 ]
	diff "$T/new.txt" "$T/old.txt"
}

@test "sp-import -z: the same stream, compressed" {
	local c=$TOP/fuzz/corpus/fuzz-import
	run -0 sp-import -q -o "$T/plain.sps" "$c/file-dwarf"
	run -0 sp-import -q -z -o "$T/z.sps" "$c/file-dwarf"
	[ "$(od -An -tx1 -N4 "$T/z.sps" | tr -d ' ')" = 28b52ffd ]
	cmp <(sp-cat "$T/plain.sps" | tail -n +2) <(sp-cat "$T/z.sps" | tail -n +2)
	zstd -q -t "$T/z.sps"
	# perf record -z's records, in the seed fuzz/make-corpus-import writes.
	run -0 sp-import -q -o "$T/pz.sps" "$c/pipe-zstd"
	run -0 sp-import -q -o "$T/pp.sps" "$c/pipe-fp"
	cmp <(sp-cat "$T/pz.sps" | tail -n +2) <(sp-cat "$T/pp.sps" | tail -n +2)
}

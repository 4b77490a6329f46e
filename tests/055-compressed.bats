#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Compressed streams (format/sp-stream.md, COMPRESSION): one recording
# made plain, then compressed with zstd(1), must give every reading tool
# the same output byte for byte as the plain one, from a file and from a
# pipe; sp-capture -z writes frames a live pipeline reads while the
# capture runs; a compressed stream cut short or corrupt is read up to the
# fault, which names its offsets, status 1; frames concatenate, with
# plain streams too, and skippable frames are skipped.

load helper

setup_file() {
	export REC=$BATS_FILE_TMPDIR/spin
	sp-capture -q -F 999 -o "$REC.raw" -- "$WORKLOADS/spin" -t 2 -r 2
	sp-unwind -o "$REC.unw" "$REC.raw"
	sp-symbolize -o "$REC.sym" "$REC.unw" 2> /dev/null
	local s
	for s in raw unw sym; do
		zstd -q -o "$REC.$s.zst" "$REC.$s"
	done
}

setup() {
	T=$BATS_TEST_TMPDIR
}

teardown() {
	[ -z "${spin:-}" ] || kill "$spin" 2>/dev/null || true
	[ -z "${cap:-}" ] || kill "$cap" 2>/dev/null || true
}

# same STAGE TOOL [ARG...]: TOOL's output and status are the same on the
# plain stream of STAGE and on its compressed form, read from standard
# input (a file) and from a pipe.
same() {
	local stage=$1 want got
	shift
	run "$@" < "$REC.$stage"
	want=$status
	printf '%s' "$output" > "$T/plain"
	run "$@" < "$REC.$stage.zst"
	got=$status
	printf '%s' "$output" > "$T/file"
	[ "$got" = "$want" ]
	cmp "$T/plain" "$T/file"
	run bash -c 'cat "$1" | "${@:2}"' sh "$REC.$stage.zst" "$@"
	[ "$status" = "$want" ]
	printf '%s' "$output" > "$T/pipe"
	cmp "$T/plain" "$T/pipe"
}

@test "the recording compresses: zstd's output is much smaller and starts with its magic" {
	[ "$(od -An -tx1 -N4 "$REC.raw.zst" | tr -d ' ')" = 28b52ffd ]
	(( $(stat -c %s "$REC.raw.zst") * 4 < $(stat -c %s "$REC.raw") ))
	[ "$(summary "$REC.raw" samples)" -gt 500 ]
}

@test "every reading tool gives the same output on the compressed stream as on the plain one" {
	same raw sp-cat
	same unw sp-cat
	same sym sp-cat
	same raw sp-stat
	same sym sp-stat --json
	same raw sp-unwind
	same unw sp-symbolize
	same sym sp-fold
	same sym sp-fold --format pprof
	same sym sp-fold --format speedscope
	same sym sp-fold --top 10
	same sym sp-top --once
	same raw sp-cat -t sample
}

@test "the library's readers read it too: own-symbolizer's stacks are the same" {
	"$SP_BUILD/examples/own-symbolizer" "$REC.raw" > "$T/plain"
	cp "$REC.raw.zst" "$T/rec.zst"
	"$SP_BUILD/examples/own-symbolizer" "$T/rec.zst" > "$T/zst"
	cmp "$T/plain" "$T/zst"
	[ "$(lines "$T/plain")" -gt 500 ]
}

@test "sp-capture -z: a zstd file that zstd -d makes a stream of, read as it is by every tool" {
	run -0 sp-capture -q -z -F 999 -o "$T/z.sps" -- "$WORKLOADS/spin" 1
	[ "$(od -An -tx1 -N4 "$T/z.sps" | tr -d ' ')" = 28b52ffd ]
	zstd -q -d -c "$T/z.sps" > "$T/z.plain"
	sp-cat "$T/z.plain" > "$T/plain.json"
	sp-cat "$T/z.sps" > "$T/z.json"
	cmp "$T/plain.json" "$T/z.json"
	[ "$(summary "$T/z.sps" samples)" -gt 200 ]
	sp-unwind "$T/z.sps" | sp-symbolize | sp-fold > "$T/z.folded"
	grep -q 'leaf_compute' "$T/z.folded"
	# --stack-size auto's calibration, recorded into memory, goes out compressed too.
	run -0 sp-capture -q -z --stack-size auto -F 999 -o "$T/auto.sps" -- "$WORKLOADS/spin" 1.5
	zstd -q -t "$T/auto.sps"
	[ "$(summary "$T/auto.sps" stack_size_chosen)" -gt 0 ]
	# A level, and levels libzstd has not.
	run -0 sp-capture -q --compress=19 -F 999 -o "$T/z19.sps" -- "$WORKLOADS/spin" 0.5
	[ "$(summary "$T/z19.sps" samples)" -gt 50 ]
	run -3 sp-capture --compress=0 -- true
	[[ $output == *"invalid --compress level '0'"* ]]
	run -3 sp-capture --compress=99 -- true
	run -3 sp-capture --compress=fast -- true
}

@test "sp-capture -z | sp-unwind | sp-symbolize | sp-cat: samples arrive while the capture runs" {
	mkfifo "$T/fifo"
	"$WORKLOADS/spin" 10 &
	spin=$!
	sp-capture -q -z -F 999 --duration 6 -p "$spin" > "$T/fifo" &
	cap=$!
	{
		local -
		set -o pipefail
		tee "$T/raw.zst" < "$T/fifo" | sp-unwind | sp-symbolize 2> /dev/null |
			sp-cat -t sample | {
				IFS= read -r line
				state=gone
				kill -0 "$cap" 2>/dev/null && state=alive
				echo "$state" > "$T/when"
				{ printf '%s\n' "$line"; cat; } > "$T/out"
			}
	}
	wait "$cap"
	[ "$(cat "$T/when")" = alive ]
	[ "$(od -An -tx1 -N4 "$T/raw.zst" | tr -d ' ')" = 28b52ffd ]
	# Every sample, once; the frame was ended (zstd -t checks it whole).
	[ "$(lines "$T/out")" -eq "$(summary "$T/raw.zst" samples)" ]
	zstd -q -t "$T/raw.zst"
}

@test "a compressed stream cut short: the records before the cut, a message with the offsets, status 1" {
	size=$(stat -c %s "$REC.raw.zst")
	head -c $((size / 2)) "$REC.raw.zst" > "$T/cut.zst"
	run -1 --separate-stderr sp-cat "$T/cut.zst"
	printf '%s\n' "$output" > "$T/cut.json"
	[[ $stderr == *"compressed input ends inside the zstd frame at compressed byte offset 0, cut at byte $((size / 2))"* ]]
	[[ $stderr =~ record\ ([0-9]+): ]]
	n=${BASH_REMATCH[1]}
	[ "$n" -gt 0 ]
	[ "$(lines "$T/cut.json")" -eq "$n" ]
	# Those records are the plain stream's first ones.
	sp-cat "$REC.raw" | head -n "$n" > "$T/plain.json"
	cmp "$T/plain.json" "$T/cut.json"
	# A stage writes what it made of them, and says the same.
	run -1 --separate-stderr sp-unwind -o "$T/cut.unw" "$T/cut.zst"
	[[ $stderr == *"compressed input ends inside the zstd frame"* ]]
	[ "$(sp-cat -t sample "$T/cut.unw" | wc -l)" -gt 0 ]
}

@test "a corrupt compressed stream: the records before the fault, 'corrupt zstd data', status 1" {
	# The third block's header given the reserved block type (RFC 8878,
	# 3.1.1.2): zstd finds that at the block, after the two before it.
	python3 - "$REC.raw.zst" "$T/bad.zst" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
fhd = d[4]
single, fcs = (fhd >> 5) & 1, fhd >> 6
p = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fcs]
for _ in range(2):
    h = d[p] | d[p + 1] << 8 | d[p + 2] << 16
    assert not h & 1, "fewer than three blocks"
    p += 3 + (1 if (h >> 1) & 3 == 1 else h >> 3)
d[p] |= 0x06
open(sys.argv[2], "wb").write(d)
PY
	run -1 --separate-stderr sp-cat "$T/bad.zst"
	printf '%s\n' "$output" > "$T/bad.json"
	[[ $stderr == *"corrupt zstd data in the frame at compressed byte offset 0, found in bytes "* ]]
	[[ $stderr =~ record\ ([0-9]+): ]]
	n=${BASH_REMATCH[1]}
	[ "$n" -gt 0 ]
	sp-cat "$REC.raw" | head -n "$n" > "$T/plain.json"
	cmp "$T/plain.json" "$T/bad.json"
	# Compressed twice: named, nothing misread.
	zstd -q -c "$REC.raw.zst" > "$T/twice.zst"
	run -2 sp-cat "$T/twice.zst"
	[[ $output == *"a zstd frame begins inside the decompressed stream (was it compressed twice?)"* ]]
}

@test "concatenated: two frames, plain and compressed in either order, skippable frames" {
	n=$(sp-cat "$REC.raw" | wc -l)
	cat "$REC.raw.zst" "$REC.raw.zst" > "$T/two.zst"
	run -0 sp-stat --json "$T/two.zst"
	[ "$(jq .segments <<< "$output")" = 2 ]
	[ "$(sp-cat "$T/two.zst" | wc -l)" -eq $((2 * n)) ]
	cat "$REC.raw" "$REC.raw.zst" "$REC.raw" "$REC.raw.zst" > "$T/mixed"
	sp-cat "$T/mixed" > "$T/mixed.json"
	for i in 1 2 3 4; do sp-cat "$REC.raw"; done > "$T/four.json"
	cmp "$T/four.json" "$T/mixed.json"
	# A skippable frame (magic 0x184d2a5X, a length, that many bytes) anywhere a frame may be.
	printf '\x50\x2a\x4d\x18\x03\x00\x00\x00abc' > "$T/skip"
	cat "$T/skip" "$REC.raw.zst" "$T/skip" "$REC.raw.zst" "$T/skip" > "$T/skipped.zst"
	cmp <(sp-cat "$T/two.zst") <(sp-cat "$T/skipped.zst")
	# A frame split anywhere into a pipe's reads decodes the same.
	run -0 bash -c 'cat "$1" | dd bs=7 status=none | sp-cat | wc -l' sh "$T/two.zst"
	[ "$output" -eq $((2 * n)) ]
}

@test "a frame that decompresses to exactly the reader's first buffer (256 KiB) ends cleanly" {
	# The recording's first records, a padding record and its summary: 262144 bytes.
	/usr/bin/python3 - "$REC.raw" "$T/exact.sps" <<'PY'
import sys, msgpack
data = open(sys.argv[1], "rb").read()
u = msgpack.Unpacker(raw=True, strict_map_key=False, max_buffer_size=len(data))
u.feed(data)
ends = []
for r in u:
    ends.append(u.tell())
summary = data[ends[-2]:ends[-1]]
cut = max(e for e in ends if e <= 262144 - 100000)
n = 262144 - cut - len(summary) - 16
pad = b"\x82\xa1t\xa5x-pad\xa1p\xc6" + n.to_bytes(4, "big") + bytes(n)
out = data[:cut] + pad + summary
assert len(out) == 262144
open(sys.argv[2], "wb").write(out)
PY
	zstd -q -o "$T/exact.zst" "$T/exact.sps"
	run -0 sp-cat < "$T/exact.sps"
	printf '%s' "$output" > "$T/plain.json"
	run -0 sp-cat < "$T/exact.zst"
	printf '%s' "$output" > "$T/zst.json"
	cmp "$T/plain.json" "$T/zst.json"
	[[ $output == *'"t":"summary"'* ]]
}

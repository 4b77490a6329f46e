#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Compressed streams beyond the tools' plain reading (055): a compressed
# recording followed by its path while sp-capture -z writes it; the
# Python reader (format/sp_stream.py) on compressed streams, with and
# without the zstandard module; the library told of a compressed input
# it cannot read.

load helper

setup_file() {
	export REC=$BATS_FILE_TMPDIR/spin
	sp-capture -q -F 999 -o "$REC.raw" -- "$WORKLOADS/spin" -t 2 1
	zstd -q -o "$REC.raw.zst" "$REC.raw"
}

setup() {
	T=$BATS_TEST_TMPDIR
	READER=$TOP/format/sp_stream.py
}

teardown() {
	[ -z "${spin:-}" ] || kill "$spin" 2>/dev/null || true
	[ -z "${cap:-}" ] || kill "$cap" 2>/dev/null || true
	[ -z "${follower:-}" ] || kill "$follower" 2>/dev/null || true
}

@test "sp-cat -f follows a recording sp-capture -z is writing: samples before its end, then the whole file" {
	"$WORKLOADS/spin" 10 &
	spin=$!
	sp-capture -q -z -F 999 --duration 4 -p "$spin" -o "$T/rec.sps" &
	cap=$!
	timeout 60 sp-cat -f "$T/rec.sps" > "$T/follow.json" 2> "$T/follow.err" &
	follower=$!
	# Whether the capture still ran when the first sample reached the follower.
	state=gone
	while kill -0 "$cap" 2>/dev/null; do
		if grep -q '"t":"sample"' "$T/follow.json"; then
			state=alive
			break
		fi
		sleep 0.05
	done
	wait "$cap"
	cap=
	wait "$follower"
	follower=
	[ "$state" = alive ]
	[ "$(od -An -tx1 -N4 "$T/rec.sps" | tr -d ' ')" = 28b52ffd ]
	sp-cat "$T/rec.sps" > "$T/whole.json"
	cmp "$T/whole.json" "$T/follow.json"
	[ "$(summary "$T/rec.sps" samples)" -gt 100 ]
}

@test "sp_stream.py reads a compressed stream as the plain one, frames after frames" {
	/usr/bin/python3 -c 'import zstandard' || skip "python3-zstandard is not installed"
	/usr/bin/python3 "$READER" --count "$REC.raw" > "$T/plain.count"
	/usr/bin/python3 "$READER" --count "$REC.raw.zst" > "$T/zst.count"
	cmp "$T/plain.count" "$T/zst.count"
	grep -q '^sample [1-9]' "$T/zst.count"
	# Two frames: every count doubled.
	cat "$REC.raw.zst" "$REC.raw.zst" > "$T/two.zst"
	/usr/bin/python3 "$READER" --count "$T/two.zst" > "$T/two.count"
	awk '{ print $1, 2 * $2 }' "$T/plain.count" > "$T/want.count"
	cmp "$T/want.count" "$T/two.count"
}

@test "sp_stream.py on a cut compressed stream: sp-cat's record, status 1; without zstandard: refused by name" {
	/usr/bin/python3 -c 'import zstandard' || skip "python3-zstandard is not installed"
	# Compressed in blocks of 4 KiB of the stream, as a live writer flushes,
	# so that the records before any cut decompress.
	/usr/bin/python3 - "$REC.raw" "$T/blocks.zst" <<'PY'
import sys, zstandard
data = open(sys.argv[1], "rb").read()
z = zstandard.ZstdCompressor(write_checksum=True).compressobj()
out = b"".join(z.compress(data[i:i + 4096]) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
               for i in range(0, len(data), 4096)) + z.flush()
open(sys.argv[2], "wb").write(out)
PY
	size=$(stat -c %s "$T/blocks.zst")
	head -c $((size / 2)) "$T/blocks.zst" > "$T/cut.zst"
	run -1 --separate-stderr sp-cat "$T/cut.zst"
	[[ $stderr =~ record\ ([0-9]+): ]]
	n=${BASH_REMATCH[1]}
	run -1 --separate-stderr /usr/bin/python3 "$READER" --count "$T/cut.zst"
	[[ $stderr == *"record $n: the compressed stream ends inside a zstd frame, at compressed byte $((size / 2))"* ]]
	# The module hidden: a clear refusal, no traceback.
	run -1 --separate-stderr /usr/bin/python3 -c '
import runpy, sys
sys.modules["zstandard"] = None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$READER" --count "$REC.raw.zst"
	[[ $stderr == *"the stream is compressed (zstd) and the Python module zstandard is not installed (Debian: python3-zstandard)"* ]]
	[[ $stderr != *Traceback* ]]
	# A plain stream needs no zstandard.
	run -0 /usr/bin/python3 -c '
import runpy, sys
sys.modules["zstandard"] = None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$READER" --count "$REC.raw"
}

@test "the library on a compressed input corrupt from its first frame: the reader's message" {
	head -c 16 "$REC.raw.zst" > "$T/bad.zst"
	head -c 4000 /dev/zero >> "$T/bad.zst"
	run "$SP_BUILD/examples/own-symbolizer" "$T/bad.zst"
	[ "$status" -ne 0 ]
	[[ $output == *"cannot read '$T/bad.zst'"*"zstd"* ]]
	[[ $output != *"is empty"* ]]
}

@test "sp-unwind -z and sp-symbolize -z: compressed stages whose records are the plain ones'" {
	sp-unwind < "$REC.raw" > "$T/unw"
	sp-unwind -z < "$REC.raw" > "$T/unw.zst"
	[ "$(od -An -tx1 -N4 "$T/unw.zst" | tr -d ' ')" = 28b52ffd ]
	sp-symbolize < "$T/unw" > "$T/sym" 2> /dev/null
	sp-symbolize --compress=3 < "$T/unw.zst" > "$T/sym.zst" 2> /dev/null
	[ "$(od -An -tx1 -N4 "$T/sym.zst" | tr -d ' ')" = 28b52ffd ]
	# Only the header differs: its tool entries list the option.
	cmp <(sp-cat "$T/unw" | tail -n +2) <(sp-cat "$T/unw.zst" | tail -n +2)
	cmp <(sp-cat "$T/sym" | tail -n +2) <(sp-cat "$T/sym.zst" | tail -n +2)
	sp-cat -t header "$T/sym.zst" | grep -q '"args":\["--compress=3"\]'
	zstd -q -t "$T/unw.zst" "$T/sym.zst"
	cmp <(sp-fold < "$T/sym") <(sp-fold < "$T/sym.zst")
	run -3 sp-unwind --compress=23 "$REC.raw"
}

@test "a followed compressed file ends at its summary, before its writer ends the frame" {
	/usr/bin/python3 -c 'import zstandard' || skip "python3-zstandard is not installed"
	# The whole recording in flushed blocks, the frame not ended, as
	# sp-capture -z leaves it between its summary and its last write.
	/usr/bin/python3 - "$REC.raw" "$T/open.zst" <<'PY'
import sys, zstandard
z = zstandard.ZstdCompressor(write_checksum=True).compressobj()
out = z.compress(open(sys.argv[1], "rb").read()) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
open(sys.argv[2], "wb").write(out)
PY
	# A writer holds the file open, so the follower does not end for want of one.
	exec 7>> "$T/open.zst"
	run -0 --separate-stderr timeout 30 sp-cat -f "$T/open.zst"
	exec 7>&-
	[[ $output == *'"t":"summary"'* ]]
	[ "${#lines[@]}" -eq "$(sp-cat "$REC.raw" | wc -l)" ]
	# Read as a finished file, the same bytes are a cut frame.
	run -1 --separate-stderr sp-cat "$T/open.zst"
	[[ $stderr == *"compressed input ends inside the zstd frame"* ]]
}

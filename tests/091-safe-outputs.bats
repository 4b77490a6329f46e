#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# A recording is never destroyed by a mistake: an output that is an input
# is refused, outputs are written under a temporary name and renamed into
# place (sp-capture's old file kept as FILE.old), every write error is an
# error, and an input that is not a stream is named for what it is.

load helper

setup() {
	D=$BATS_TEST_TMPDIR/d
	mkdir -p "$D"
	FULL="cannot write 'standard output': No space left on device"
}

teardown() {
	[ -z "${umount_later:-}" ] || umount "$umount_later" 2>/dev/null || true
	[ -z "${P:-}" ] || kill -KILL "$P" 2>/dev/null || true
	[ -z "${C:-}" ] || kill -KILL "$C" 2>/dev/null || true
}

# A pid that no process has.
free_pid() {
	local p=4194000
	while kill -0 "$p" 2>/dev/null; do
		p=$((p - 1))
	done
	echo "$p"
}

# A stream of each stage, and folded text.
streams() {
	sp-capture -q -F 999 -o "$D/raw.sps" -- "$WORKLOADS/spin" 0.3
	sp-unwind -o "$D/unwound.sps" "$D/raw.sps"
	sp-symbolize -o "$D/sym.sps" "$D/unwound.sps"
	sp-fold -o "$D/folded.txt" "$D/sym.sps"
}

@test "an output that is the input is refused before it is written, by every tool with -o" {
	keep raw.sps "$VECTORS/raw.sps"
	keep unwound.sps "$VECTORS/unwound.sps"
	keep sym.sps "$VECTORS/symbolized.sps"
	printf 'main;a 3\nmain;b 2\n' > "$D/f.txt"
	cp "$D/f.txt" "$D/f.txt.copy"
	for cmd in "sp-unwind raw.sps -o raw.sps" "sp-symbolize unwound.sps -o unwound.sps" \
		   "sp-fold sym.sps -o sym.sps" "sp-cat sym.sps -o sym.sps" \
		   "sp-cat -o sym.sps unwound.sps sym.sps" "sp-flame f.txt -o f.txt"; do
		run bash -c "cd '$D' && $cmd"
		[ "$status" -eq 3 ]
		in=${cmd##* }
		[ "$cmd" != "sp-cat -o sym.sps unwound.sps sym.sps" ] || in=sym.sps
		[ "$cmd" != "sp-flame f.txt -o f.txt" ] || in=f.txt
		[[ "$output" == *"the output '"*"' is the same file as the input '"*"': write to another file" ]]
	done
	for f in raw.sps unwound.sps sym.sps f.txt; do
		cmp "$D/$f" "$D/$f.copy"
	done
	only_files raw.sps raw.sps.copy unwound.sps unwound.sps.copy sym.sps sym.sps.copy \
		f.txt f.txt.copy
}

@test "the same file through a symbolic link, or as standard output, is refused too" {
	keep u.sps "$VECTORS/unwound.sps"
	ln -s u.sps "$D/link.sps"
	run sp-symbolize "$D/link.sps" -o "$D/u.sps"
	[ "$status" -eq 3 ]
	[ "$output" = "sp-symbolize: the output '$D/u.sps' is the same file as the input '$D/link.sps': write to another file" ]
	run sp-symbolize "$D/u.sps" -o "$D/link.sps"
	[ "$status" -eq 3 ]
	cmp "$D/u.sps" "$D/u.sps.copy"
	[ -L "$D/link.sps" ]
	# Appending a file to itself would never end.
	run bash -c "sp-cat '$D/u.sps' >> '$D/u.sps'"
	[ "$status" -eq 3 ]
	[ "$output" = "sp-cat: the output standard output is the same file as the input '$D/u.sps': write to another file" ]
	cmp "$D/u.sps" "$D/u.sps.copy"
	run bash -c "sp-unwind < '$D/u.sps' >> '$D/u.sps'"
	[ "$status" -eq 3 ]
	cmp "$D/u.sps" "$D/u.sps.copy"
}

@test "sp-capture: a pid that does not exist or a bad option leaves the old recording intact" {
	keep rec.sps "$VECTORS/raw.sps"
	run sp-capture -p "$(free_pid)" -o "$D/rec.sps"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no process with pid"* ]]
	cmp "$D/rec.sps" "$D/rec.sps.copy"
	run sp-capture -F 0 -o "$D/rec.sps" -- true
	[ "$status" -eq 3 ]
	cmp "$D/rec.sps" "$D/rec.sps.copy"
	run sp-capture -o "$D/rec.sps" -- /nonexistent/program
	[ "$status" -ne 0 ]
	cmp "$D/rec.sps" "$D/rec.sps.copy"
	only_files rec.sps rec.sps.copy
}

@test "sp-capture: a replaced recording is kept as FILE.old; the new one is in place while recording" {
	keep rec.sps "$VECTORS/symbolized.sps"
	"$WORKLOADS/spin" 60 > /dev/null &
	P=$!
	sp-capture -q -F 999 -o "$D/rec.sps" -p "$P" 2> "$D/err" &
	C=$!
	# The new recording takes the name once it has begun, the old one
	# moved to rec.sps.old.
	for i in $(seq 300); do
		sp-cat -t header "$D/rec.sps" 2>/dev/null | grep -q '"stage":"raw"' && break
		sleep 0.1
	done
	kill -0 "$C"
	cmp "$D/rec.sps.old" "$D/rec.sps.copy"
	run --separate-stderr sp-cat -t header "$D/rec.sps"
	[[ "${lines[0]}" == *'"stage":"raw"'*'"name":"sp-capture"'* ]]
	run -1 cmp -s "$D/rec.sps" "$D/rec.sps.copy"
	kill -INT "$C"
	wait "$C"
	C=
	kill -KILL "$P"
	wait "$P" 2>/dev/null || true
	P=
	[ "$(summary "$D/rec.sps" samples)" -gt 0 ]
	only_files rec.sps rec.sps.old rec.sps.copy err
	# A recording into a new file leaves no .old.
	sp-capture -q -F 999 -o "$D/new.sps" -- "$WORKLOADS/spin" 0.3
	[ -s "$D/new.sps" ]
	[ ! -e "$D/new.sps.old" ]
}

@test "a fatal error leaves the old output intact; a partial result (exit 1) replaces it" {
	keep out.sps "$VECTORS/symbolized.sps"
	# Fatal: sp-unwind reads raw streams only.
	run sp-unwind -o "$D/out.sps" "$VECTORS/unwound.sps"
	[ "$status" -eq 2 ]
	cmp "$D/out.sps" "$D/out.sps.copy"
	run sp-symbolize -o "$D/out.sps" "$VECTORS/raw.sps"
	[ "$status" -eq 2 ]
	cmp "$D/out.sps" "$D/out.sps.copy"
	only_files out.sps out.sps.copy
	# Partial: a raw stream cut short; what was unwound before the cut is kept.
	size=$(stat -c %s "$VECTORS/raw.sps")
	head -c $((size - 20)) "$VECTORS/raw.sps" > "$D/cut.sps"
	run sp-unwind -o "$D/out.sps" "$D/cut.sps"
	[ "$status" -eq 1 ]
	run -1 cmp -s "$D/out.sps" "$D/out.sps.copy"
	run --separate-stderr sp-cat -t header "$D/out.sps"
	[[ "${lines[0]}" == *'"stage":"unwound"'* ]]
	only_files out.sps out.sps.copy cut.sps
}

@test "a full file system: the output that could not be written leaves the old file intact" {
	MNT=$BATS_TEST_TMPDIR/small
	mkdir -p "$MNT"
	# Two pages: the old file's, and one more.
	mount -t tmpfs -o size=8k tmpfs "$MNT"
	umount_later=$MNT
	sp-capture -q -F 999 -o "$D/raw.sps" -- "$WORKLOADS/spin" 0.5
	[ "$(stat -c %s "$D/raw.sps")" -gt 100000 ]
	cp "$VECTORS/unwound.sps" "$MNT/out.sps"
	run sp-unwind -o "$MNT/out.sps" "$D/raw.sps"
	[ "$status" -eq 2 ]
	[[ "$output" == *"sp-unwind: cannot write '$MNT/out.sps': No space left on device"* ]]
	cmp "$MNT/out.sps" "$VECTORS/unwound.sps"
	[ "$(ls -A "$MNT")" = out.sps ]
	run sp-cat -o "$MNT/out.sps" "$D/raw.sps"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-cat: cannot write '$MNT/out.sps': No space left on device" ]
	cmp "$MNT/out.sps" "$VECTORS/unwound.sps"
	[ "$(ls -A "$MNT")" = out.sps ]
}

@test "an output replaced on success keeps the old file's mode" {
	keep out.txt /dev/null
	chmod 0600 "$D/out.txt"
	sp-cat -o "$D/out.txt" "$VECTORS/raw.sps"
	[ "$(stat -c %a "$D/out.txt")" = 600 ]
	[ "$(lines "$D/out.txt")" = "$(lines "$VECTORS/raw.jsonl")" ]
}

@test "every tool checks its writes to standard output: a full device is exit 2" {
	streams
	for cmd in "sp-stat $D/sym.sps" "sp-stat --json $D/sym.sps" "sp-stat --system" \
		   "sp-stat --system --json" "sp-stat --check --max-lost-pct 50 $D/raw.sps" \
		   "sp-capture --max-rate" "sp-cat $D/sym.sps" "sp-cat --format perf-script $D/sym.sps" \
		   "sp-cat --from-json $VECTORS/raw.jsonl" "sp-unwind $D/raw.sps" \
		   "sp-symbolize $D/unwound.sps" "sp-fold $D/sym.sps" \
		   "sp-fold --format pprof $D/sym.sps" "sp-flame $D/folded.txt" "sp-cat --help"; do
		run --separate-stderr bash -c "$cmd > /dev/full"
		[ "$status" -eq 2 ]
		[[ "$stderr" == *"$FULL"* ]]
	done
	# -o names the file.
	run sp-cat -o /dev/full "$D/sym.sps"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-cat: cannot write '/dev/full': No space left on device" ]
	run sp-unwind -o /dev/full "$D/raw.sps"
	[ "$status" -eq 2 ]
	[[ "$output" == *"sp-unwind: cannot write '/dev/full': No space left on device"* ]]
	run sp-capture -q -o /dev/full -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"sp-capture: cannot write '/dev/full': No space left on device"* ]]
	# A device or a FIFO is written in place, not replaced.
	[ -c /dev/full ]
	sp-cat -o /dev/null "$D/sym.sps"
	[ -c /dev/null ]
}

@test "a directory as input is named, exit 2" {
	for t in sp-cat sp-unwind sp-symbolize sp-fold sp-stat; do
		run "$t" "$D"
		[ "$status" -eq 2 ]
		[ "$output" = "$t: '$D' is a directory, not a stream" ]
	done
	run sp-flame "$D"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-flame: '$D' is a directory, not a file" ]
}

@test "a binary stream is not read from a terminal" {
	run script -qec "sp-cat" /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"sp-cat: refusing to read a binary stream from a terminal (standard input): give a file, or pipe a stream in"* ]]
	run script -qec "sp-unwind -o '$D/x.sps'" /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"refusing to read a binary stream from a terminal"* ]]
	[ ! -e "$D/x.sps" ]
	only_files
}

@test "a FIFO is read when its writer comes; until then the reader says what it waits for" {
	mkfifo "$D/p"
	sp-cat "$D/p" > "$D/out" 2> "$D/err" &
	C=$!
	for i in $(seq 300); do
		[ -s "$D/err" ] && break
		sleep 0.1
	done
	[ "$(cat "$D/err")" = "sp-cat: '$D/p' is a FIFO and nothing has been written to it yet: waiting for its writer" ]
	kill -0 "$C"
	cat "$VECTORS/raw.sps" > "$D/p"
	wait "$C"
	C=
	cmp "$D/out" "$VECTORS/raw.jsonl"
	# A FIFO as output is written in place.
	sp-cat "$D/p" > "$D/out2" &
	C=$!
	sp-cat --from-json -o "$D/p" "$VECTORS/raw.jsonl"
	wait "$C"
	C=
	cmp "$D/out2" "$VECTORS/raw.jsonl"
	[ -p "$D/p" ]
}

@test "a file that is not a stream is named, with what to run instead, exit 2" {
	# perf itself aborted once on a busy machine: its file is what is tested.
	local try
	for try in 1 2 3; do
		perf record -q -o "$D/perf.data" -- true 2> /dev/null && break
	done
	[ -s "$D/perf.data" ]
	run sp-cat "$D/perf.data"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-cat: '$D/perf.data' is a perf.data file (from perf record), not a stackpulse stream: record with sp-capture instead (there is no converter from perf.data)" ]
	for t in sp-unwind sp-symbolize sp-fold sp-stat; do
		run "$t" "$D/perf.data"
		[ "$status" -eq 2 ]
		[[ "$output" == *"is a perf.data file"* ]]
	done
	run bash -c "sp-cat < '$D/perf.data'"
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-cat: standard input is a perf.data file"* ]]
	run bash -c "cat '$D/perf.data' | sp-unwind"
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-unwind: standard input is a perf.data file"* ]]

	cp "$VECTORS/raw.sps" "$D/x.sps"
	gzip "$D/x.sps"
	run sp-cat "$D/x.sps.gz"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-cat: '$D/x.sps.gz' is gzip-compressed: zcat $D/x.sps.gz | sp-cat" ]
	run bash -c "cat '$D/x.sps.gz' | sp-unwind"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-unwind: standard input is gzip-compressed: zcat FILE | sp-unwind" ]
	# The advice works.
	run bash -c "set -o pipefail; zcat '$D/x.sps.gz' | sp-cat"
	[ "$status" -eq 0 ]
	# zstd is read (tests/055): the first 8 bytes of a frame are a cut frame.
	printf '\x28\xb5\x2f\xfd\x00\x00\x00\x00' > "$D/x.sps.zst"
	run sp-stat "$D/x.sps.zst"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-stat: cannot read '$D/x.sps.zst': byte offset 0 of the decompressed stream (compressed input read to byte 8), record 0: compressed input ends inside the zstd frame at compressed byte offset 0, cut at byte 8" ]

	run sp-cat "$VECTORS/raw.jsonl"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-cat: '$VECTORS/raw.jsonl' is JSON text, not a stackpulse stream: if it holds sp-cat's JSON lines, make a stream of it with sp-cat --from-json $VECTORS/raw.jsonl" ]
	run sp-unwind "$WORKLOADS/spin"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-unwind: '$WORKLOADS/spin' is an ELF file (a program or library), not a stackpulse stream: to profile a program, run it under sp-capture (sp-capture -o rec.sps -- PROGRAM)" ]
	printf 'main;a 3\n' > "$D/f.txt"
	run sp-fold "$D/f.txt"
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-fold: '$D/f.txt' is text, not a stackpulse stream"* ]]
	: > "$D/empty.sps"
	for t in sp-cat sp-unwind sp-symbolize sp-fold; do
		run "$t" "$D/empty.sps"
		[ "$status" -eq 2 ]
		[ "$output" = "$t: '$D/empty.sps' is empty: it holds no stream" ]
	done
	# Nothing was written where an output was asked for.
	keep out.sps "$VECTORS/unwound.sps"
	run sp-unwind -o "$D/out.sps" "$D/perf.data"
	[ "$status" -eq 2 ]
	cmp "$D/out.sps" "$D/out.sps.copy"
}

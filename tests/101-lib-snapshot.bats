#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# libstackpulse's snapshots and tails: the stacks of a recording read
# through the library (examples/own-symbolizer.c), the same from every
# stage of the stream; a tail reading a recording while it is written
# (examples/tail-while-recording.c); and the library used wrongly or
# given bad input (tests/lib/api-snapshot-misuse.c).

load helper

EX=$SP_BUILD/examples

setup_file() {
	export REC=$BATS_FILE_TMPDIR/spin
	# 2 threads for 3 s at 1999 Hz: a few thousand samples.
	sp-capture -q -F 1999 -o "$REC.raw" -- "$WORKLOADS/spin" -t 2 3
	sp-unwind -o "$REC.unw" "$REC.raw"
	sp-symbolize -o "$REC.sym" "$REC.unw" 2> /dev/null
}

# spin_functions FILE [FLAGS]: for the frames in the spin program (those
# whose flags are FLAGS, when given), the functions addr2line names at
# their addresses (the call's for a return address), one per line.
spin_functions() {
	local - rel flags
	set -o pipefail
	awk -v m="$WORKLOADS/spin" -v f="${2:-}" '$1 ~ /^0x/ && $2 == m && (f == "" || $4 == f) {
		print $3, $4 }' "$1" | sort -u |
		while read -r rel flags; do
			[[ $flags != *r* ]] || rel=$((rel - 1))
			printf '0x%x\n' $((rel))
		done | addr2line -f -e "$WORKLOADS/spin" | awk 'NR % 2 == 1' | sort -u
}

@test "own-symbolizer: every sample's stack, with its module, from a raw recording" {
	run -0 "$EX/own-symbolizer" "$REC.raw"
	echo "$output" > "$BATS_TEST_TMPDIR/own"
	[ "${lines[0]}" = "stage raw arch x86_64 frequency 1999" ]
	samples=$(summary "$REC.raw" samples)
	[ "$samples" -ge 200 ]
	# One stack per sample, and the summary says as many.
	[[ "${lines[-1]}" =~ ^stacks\ ([0-9]+)\ complete\ ([0-9]+)\ samples\ ([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -eq "$samples" ]
	[ "${BASH_REMATCH[3]}" -eq "$samples" ]
	# At least 95% of the stacks reach the thread's entry.
	[ $((BASH_REMATCH[2] * 100)) -ge $((samples * 95)) ]
	run -0 grep -c '^stack ' "$BATS_TEST_TMPDIR/own"
	[ "$output" -eq "$samples" ]
}

@test "own-symbolizer: the spin program's module and rel, given to addr2line, name its functions" {
	"$EX/own-symbolizer" "$REC.raw" > "$BATS_TEST_TMPDIR/own"
	run -0 spin_functions "$BATS_TEST_TMPDIR/own"
	for f in main run_workers worker stage_a stage_b stage_c recurse leaf_compute; do
		[[ $'\n'"$output"$'\n' == *$'\n'"$f"$'\n'* ]] || { echo "no $f in: $output"; false; }
	done
	# Every return address lies in a function of the program (the leaf may
	# be in its PLT, which has no symbol).
	run -0 spin_functions "$BATS_TEST_TMPDIR/own" r
	run -1 grep -qx '??' <<< "$output"
	# libm's cos is a frame of its own module, the interrupted instruction.
	run -0 grep -cE '^  0x[0-9a-f]+ /[^ ]*libm[.-][^ ]* 0x[0-9a-f]+ -$' "$BATS_TEST_TMPDIR/own"
	[ "$output" -ge 100 ]
}

@test "own-symbolizer: the stacks of the raw, unwound and symbolized streams are the same" {
	"$EX/own-symbolizer" "$REC.raw" | tail -n +2 > "$BATS_TEST_TMPDIR/raw"
	"$EX/own-symbolizer" "$REC.unw" | tail -n +2 > "$BATS_TEST_TMPDIR/unw"
	"$EX/own-symbolizer" "$REC.sym" | tail -n +2 > "$BATS_TEST_TMPDIR/sym"
	[ "$(lines "$BATS_TEST_TMPDIR/raw")" -gt 1000 ]
	cmp "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/unw"
	cmp "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/sym"
	run -0 "$EX/own-symbolizer" "$REC.sym"
	[ "${lines[0]}" = "stage symbolized arch x86_64 frequency 1999" ]
}

@test "own-symbolizer: a stream on standard input, and two concatenated recordings" {
	local -
	set -o pipefail
	run -0 "$EX/own-symbolizer" - < "$REC.raw"
	[ "${lines[-1]}" = "$("$EX/own-symbolizer" "$REC.raw" | tail -1)" ]
	# Two segments: ids restart, modules are listed again, and every stack is read.
	cat "$REC.raw" "$REC.unw" > "$BATS_TEST_TMPDIR/two.sps"
	samples=$(summary "$REC.raw" samples)
	run -0 "$EX/own-symbolizer" "$BATS_TEST_TMPDIR/two.sps"
	[[ "${lines[-1]}" =~ ^stacks\ ([0-9]+)\  ]]
	[ "${BASH_REMATCH[1]}" -eq $((2 * samples)) ]
	run -0 grep -c "^stack 0 " <<< "$output"
	[ "$output" -ge 2 ]
}

@test "own-symbolizer: the metadata a recorder put in the header" {
	"$EX/profile-command" -F 499 -t 1700000000000000 -i 2004 "$BATS_TEST_TMPDIR/m.sps" \
		"$WORKLOADS/spin" 1 > /dev/null
	run -0 "$EX/own-symbolizer" "$BATS_TEST_TMPDIR/m.sps"
	[ "${lines[0]}" = "stage raw arch x86_64 frequency 499 start_timestamp_us 1700000000000000 sample_interval_us 2004" ]
}

@test "tail-while-recording: the tail reads stacks while the command runs, and all of them" {
	run -0 "$EX/tail-while-recording" -F 999 "$BATS_TEST_TMPDIR/t.sps" "$WORKLOADS/spin" -t 2 3
	echo "$output"
	declare -A v
	while read -r k n; do v[$k]=$n; done <<< "$output"
	[ "${v[samples]}" -ge 100 ]
	# Every sample of the recording was read, once.
	[ "${v[stacks]}" -eq "${v[samples]}" ]
	[ "${v[stacks]}" -eq "$(summary "$BATS_TEST_TMPDIR/t.sps" samples)" ]
	# Most of them while the command still ran, over many polls.
	[ $((v[while_running] * 2)) -ge "${v[stacks]}" ]
	[ "${v[polls_with_stacks]}" -ge 5 ]
	[ $((v[complete] * 100)) -ge $((v[stacks] * 95)) ]
}

@test "sp_tail_open follows a file sp-capture writes, to its summary" {
	out=$BATS_TEST_TMPDIR/c.sps
	sp-capture -q -F 999 -o "$out" -- "$WORKLOADS/spin" 3 &
	cap=$!
	for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.05; done
	run -0 "$EX/tail-while-recording" -f "$out"
	echo "$output"
	wait "$cap"
	declare -A v
	while read -r k n; do v[$k]=$n; done <<< "$output"
	[ "${v[stacks]}" -ge 100 ]
	[ "${v[stacks]}" -eq "$(summary "$out" samples)" ]
	# It read as the file grew, not once at the end (sp-capture writes
	# what it drained every poll interval).
	[ "${v[polls_with_stacks]}" -ge 3 ]
}

@test "bad use and bad input fail with their codes and messages, never crash" {
	d=$BATS_TEST_TMPDIR/bad
	mkdir -p "$d"
	printf 'PERFILE2\x68\0\0\0\0\0\0\0' > "$d/perf.data"
	head -c 4096 "$TOP/tests/094-random.bin" > "$d/random.bin"
	cut_inside "$REC.raw" 1 2 > "$d/cut.sps"
	run -0 "$SP_BUILD/tests/api-snapshot-misuse" "$d" "$REC.raw" "$BATS_TEST_TMPDIR/m.sps" \
		"$WORKLOADS/spin" 1
	echo "$output"
	[[ "$output" == *"ok sp_snapshot_next(cut.sps): '$d/cut.sps': byte offset "* ]]
	[[ "$output" == *"ok sp_snapshot_open(perf.data): '$d/perf.data' is a perf.data file"* ]]
	[[ "$output" == *"ok sp_recorder_tail(a second time)"* ]]
	[[ "$output" == *"ok the tail ended at the summary"* ]]
	run -1 grep -q '^FAIL' <<< "$output"
}

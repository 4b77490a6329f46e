#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-unwind: module files that changed or went away, segments, following
# a file, pipes.

load helper

setup() {
	R=$BATS_TEST_TMPDIR/rec.sps
	U=$BATS_TEST_TMPDIR/unwound.sps
	W=$BATS_TEST_TMPDIR/work
	mkdir -p "$W"
	cp "$WORKLOADS/spin" "$W/spin"
}

# same_stacks HERE MOVED SAMPLES: the stream unwound from a module found
# elsewhere has the stacks and counts of the one unwound with the module in
# place, most of the SAMPLES complete.  (Not all, nor a fixed share: the
# samples of start-up in ld.so and of the vDSO unwind as the host's C
# library and kernel build allow, the same either way.)
same_stacks() {
	sp-cat -t stack,unwind "$1" > "$BATS_TEST_TMPDIR/here"
	sp-cat -t stack,unwind "$2" > "$BATS_TEST_TMPDIR/moved"
	diff "$BATS_TEST_TMPDIR/here" "$BATS_TEST_TMPDIR/moved"
	[ "$(unwind_count "$2" complete)" -gt $(($3 / 2)) ]
}

# build_id FILE: the hex build-id of an ELF file.
build_id() {
	local -
	set -o pipefail
	readelf -n "$1" | awk '/Build ID/ { print $3 }'
}

@test "a module replaced on disk after capture is a mismatch, not unwound wrongly" {
	sp-capture -q -o "$R" -- "$W/spin" 0.5
	cp "$WORKLOADS/deep" "$W/spin"	# another binary at the recorded path
	# No stack is complete: exit 1 without --allow-empty (tests/092).
	sp-unwind --allow-empty -o "$U" "$R"
	[ "$(unwind_count "$U" build_id_mismatch)" -gt 0 ]
	[ "$(sp-cat -t unwind "$U" | jq .modules_mismatched)" -ge 1 ]
	# No stack through the replaced module is complete.  A sample of
	# ld.so's start-up, before the program's own code runs, never touches
	# it and may be complete; such samples are few.
	samples=$(summary "$R" samples)
	[ "$(unwind_count "$U" complete)" -le $((samples / 20)) ]
	mid=$(sp-cat -t module "$U" | jq --arg p "$W/spin" 'select(.path == $p) | .id')
	[ -n "$mid" ]
	sp-cat -t stack "$U" | jq -c --argjson m "$mid" \
		'select(([.frames[] | .[3]] | index(8)) == null) | select([.frames[] | .[1]] | index($m) != null)' > "$BATS_TEST_TMPDIR/through"
	[ ! -s "$BATS_TEST_TMPDIR/through" ]
	# Each stack keeps the frames it has (the interrupted one, in the
	# replaced module) and ends there with the marker.
	sp-cat -t stack "$U" | jq -c '[.frames[] | .[3]] | select(index(8) != null) | length' | sort -u > "$BATS_TEST_TMPDIR/lens"
	[ "$(sort -u "$BATS_TEST_TMPDIR/lens" | head -n 1)" -ge 2 ]
	folded --no-count "$U" | grep -q '^\[end:build_id_mismatch\]'
}

@test "a deleted module unwinds from --module-dir in build-id layout" {
	sp-capture -q -o "$R" -- "$W/spin" 0.5
	sp-unwind -o "$U.here" "$R"
	bid=$(build_id "$W/spin")
	mkdir -p "$BATS_TEST_TMPDIR/mods/.build-id/${bid:0:2}"
	mv "$W/spin" "$BATS_TEST_TMPDIR/mods/.build-id/${bid:0:2}/${bid:2}"
	sp-unwind --allow-empty -o "$U" "$R"
	[ "$(unwind_count "$U" missing_module)" -gt 0 ]
	sp-unwind --module-dir /nonexistent --module-dir "$BATS_TEST_TMPDIR/mods" -o "$U" "$R"
	same_stacks "$U.here" "$U" "$(summary "$R" samples)"
}

@test "--root finds the recorded paths under a copy of the host's files" {
	sp-capture -q -o "$R" -- "$W/spin" 0.5
	sp-unwind -o "$U.here" "$R"
	mkdir -p "$BATS_TEST_TMPDIR/root$W"
	mv "$W/spin" "$BATS_TEST_TMPDIR/root$W/spin"
	sp-unwind --root "$BATS_TEST_TMPDIR/root" -o "$U" "$R"
	same_stacks "$U.here" "$U" "$(summary "$R" samples)"
}

@test "a raw stream split in two and concatenated unwinds the same" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.5
	# Cut at a record boundary in the middle.
	n=$(sp-cat "$R" | wc -l)
	sp-cat "$R" | head -n $((n / 2)) | sp-cat --from-json > "$BATS_TEST_TMPDIR/a.sps"
	sp-cat "$R" | tail -n +$((n / 2 + 1)) | sp-cat --from-json > "$BATS_TEST_TMPDIR/b.sps"
	cat "$BATS_TEST_TMPDIR/a.sps" "$BATS_TEST_TMPDIR/b.sps" | sp-unwind > "$BATS_TEST_TMPDIR/joined.sps"
	sp-unwind < "$R" > "$U"
	cmp "$U" "$BATS_TEST_TMPDIR/joined.sps"
	# Two recordings concatenated: two segments, each unwound on its own.
	sp-capture -q -o "$BATS_TEST_TMPDIR/r2.sps" -- "$WORKLOADS/deep" 0.3
	cat "$R" "$BATS_TEST_TMPDIR/r2.sps" | sp-unwind > "$BATS_TEST_TMPDIR/two.sps"
	[ "$(sp-cat -t header "$BATS_TEST_TMPDIR/two.sps" | wc -l)" -eq 2 ]
	[ "$(sp-cat -t unwind "$BATS_TEST_TMPDIR/two.sps" | wc -l)" -eq 2 ]
	folded --no-count "$BATS_TEST_TMPDIR/two.sps" | grep -q 'deep_recurse'
	folded --no-count "$BATS_TEST_TMPDIR/two.sps" | grep -q 'leaf_compute'
}

@test "the pipe path and the file path give identical output" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.5
	sp-unwind < "$R" > "$U"
	cat "$R" | sp-unwind > "$BATS_TEST_TMPDIR/piped.sps"
	cmp "$U" "$BATS_TEST_TMPDIR/piped.sps"
	sp-unwind -o "$BATS_TEST_TMPDIR/o.sps" - < "$R"
	# Only the tools entry of the header differs (sp-unwind's own arguments).
	diff <(sp-cat "$U" | tail -n +2) <(sp-cat "$BATS_TEST_TMPDIR/o.sps" | tail -n +2)
	# sp-capture | sp-unwind | sp-cat as one pipeline.
	run bash -c "set -o pipefail; sp-capture -q -- '$WORKLOADS/spin' 0.3 | sp-unwind | sp-cat -t unwind | jq .complete"
	[ "$status" -eq 0 ]
	[ "$output" -gt 0 ]
}

@test "--follow unwinds a file while sp-capture writes it, and ends at the summary" {
	sp-capture -q -o "$R" --poll-ms 50 -- "$WORKLOADS/spin" 1.5 &
	c=$!
	sleep 0.3
	timeout 30 sp-unwind --follow "$R" > "$U" &
	u=$!
	sleep 0.5
	# Part of the stream is already unwound while the recording goes on.
	kill -0 $c
	[ "$(sp-cat "$U" 2>/dev/null | grep -c '"t":"sample"')" -gt 0 ]
	wait $c
	wait $u
	[ "$(summary "$U" samples)" = "$(summary "$R" samples)" ]
	[ "$(sp-cat -t sample "$U" | wc -l)" -eq "$(summary "$R" samples)" ]
}

@test "bad input: a truncated raw stream is unwound up to the cut, then reported" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	cut_inside "$R" 2 3 > "$BATS_TEST_TMPDIR/cut.sps"
	run --separate-stderr sp-unwind -o "$U" "$BATS_TEST_TMPDIR/cut.sps"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"byte offset "*", record "*"stream ends inside a record"* ]]
	[ "$(sp-cat -t sample "$U" 2>/dev/null | wc -l)" -gt 0 ]
	# An unwound stream is not unwound again.
	sp-unwind -o "$U" "$R"
	run sp-unwind "$U"
	[ "$status" -eq 2 ]
	[[ "$output" == *"already unwound"* ]]
}

# restream IN OUT PYTHON: a copy of a stream, each record (a dict r, from
# its JSON line) changed by a Python statement.
restream() {
	local -
	set -o pipefail
	sp-cat "$1" | /usr/bin/python3 -c '
import json, sys
change = compile(sys.argv[1], "change", "exec")
for line in sys.stdin:
    r = json.loads(line)
    exec(change, {"r": r})
    print(json.dumps(r, separators=(",", ":")))' "$3" | sp-cat --from-json > "$2"
}

AARCH64_REGS='["x%d" % i for i in range(30)] + ["lr", "sp", "pc"]'

@test "a stream of an architecture without a backend is refused with exit 2" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	restream "$R" "$BATS_TEST_TMPDIR/riscv.sps" \
		'if r["t"] == "header": r["host"]["arch"] = "riscv64"; r["reg_names"] = ["pc", "ra", "sp"]'
	run --separate-stderr sp-unwind -o "$U" "$BATS_TEST_TMPDIR/riscv.sps"
	[ "$status" -eq 2 ]
	[ "$stderr" = "sp-unwind: cannot unwind riscv64 stacks: no backend for this architecture" ]
	# Nothing is unwound as if it were x86_64: not even an empty output is made.
	[ ! -e "$U" ]
}

@test "an aarch64 stream is refused, on a pipe too, not unwound as x86_64" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	restream "$R" "$BATS_TEST_TMPDIR/arm.sps" \
		'if r["t"] == "header": r["host"]["arch"] = "aarch64"; r["reg_names"] = '"$AARCH64_REGS"'
if r["t"] == "sample" and "regs" in r: r["regs"] = r["regs"] + [0] * 16'
	run --separate-stderr sp-unwind -o "$U" "$BATS_TEST_TMPDIR/arm.sps"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "sp-unwind: cannot unwind aarch64 stacks: "* ]]
	run --separate-stderr sp-unwind < "$BATS_TEST_TMPDIR/arm.sps"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "sp-unwind: cannot unwind aarch64 stacks: "* ]]
	[[ "$output" != *'"t":"sample"'* ]]
}

@test "a second segment of a foreign architecture is refused after the first is unwound" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	restream "$R" "$BATS_TEST_TMPDIR/arm.sps" \
		'if r["t"] == "header": r["host"]["arch"] = "aarch64"; r["reg_names"] = '"$AARCH64_REGS"
	cat "$R" "$BATS_TEST_TMPDIR/arm.sps" > "$BATS_TEST_TMPDIR/both.sps"
	run --separate-stderr sp-unwind -o "$U" "$BATS_TEST_TMPDIR/both.sps"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "sp-unwind: cannot unwind aarch64 stacks: "* ]]
	[ "$(sp-cat -t sample "$U" | wc -l)" -eq "$(summary "$R" samples)" ]
}

@test "x86_64 reg_names without a register the unwinder needs are refused" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	restream "$R" "$BATS_TEST_TMPDIR/bad.sps" \
		'if r["t"] == "header": r["reg_names"][16] = "flags"'
	run --separate-stderr sp-unwind -o "$U" "$BATS_TEST_TMPDIR/bad.sps"
	[ "$status" -eq 2 ]
	[ "$stderr" = "sp-unwind: cannot unwind x86_64 stacks: the header's reg_names have no 'r15'" ]
}

@test "x86_64 registers are found by name: another order unwinds to the same stacks" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	# reg_names and every sample's regs reversed, and a register more in front.
	restream "$R" "$BATS_TEST_TMPDIR/rev.sps" \
		'if r["t"] == "header": r["reg_names"] = ["flags"] + r["reg_names"][::-1]
if r["t"] == "sample" and r.get("regs"): r["regs"] = [514] + r["regs"][::-1]'
	sp-unwind -o "$U" "$R"
	run sp-unwind -o "$BATS_TEST_TMPDIR/rev.u.sps" "$BATS_TEST_TMPDIR/rev.sps"
	[ "$status" -eq 0 ]
	sp-cat -t stack "$U" > "$BATS_TEST_TMPDIR/a"
	sp-cat -t stack "$BATS_TEST_TMPDIR/rev.u.sps" > "$BATS_TEST_TMPDIR/b"
	[ "$(lines "$BATS_TEST_TMPDIR/a")" -gt 0 ]
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	[ "$(unwind_count "$U" complete)" -eq "$(unwind_count "$BATS_TEST_TMPDIR/rev.u.sps" complete)" ]
	[ "$(unwind_count "$U" complete)" -gt 0 ]
}

#!/usr/bin/env bats
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

# build_id FILE: the hex build-id of an ELF file.
build_id() {
	local -
	set -o pipefail
	readelf -n "$1" | awk '/Build ID/ { print $3 }'
}

@test "a module replaced on disk after capture is a mismatch, not unwound wrongly" {
	sp-capture -q -o "$R" -- "$W/spin" 0.5
	cp "$WORKLOADS/deep" "$W/spin"	# another binary at the recorded path
	sp-unwind -o "$U" "$R"
	[ "$(unwind_count "$U" build_id_mismatch)" -gt 0 ]
	[ "$(unwind_count "$U" complete)" -eq 0 ]
	[ "$(sp-cat -t unwind "$U" | jq .modules_mismatched)" -ge 1 ]
	# Each stack keeps the frames it has (the interrupted one, in the
	# replaced module) and ends there with the marker.
	sp-cat -t stack "$U" | jq -c '[.frames[] | .[3]] | select(index(8) != null) | length' | sort -u > "$BATS_TEST_TMPDIR/lens"
	[ "$(sort -u "$BATS_TEST_TMPDIR/lens" | head -n 1)" -ge 2 ]
	folded --no-count "$U" | grep -q '^\[end:build_id_mismatch\]'
}

@test "a deleted module unwinds from --module-dir in build-id layout" {
	sp-capture -q -o "$R" -- "$W/spin" 0.5
	bid=$(build_id "$W/spin")
	mkdir -p "$BATS_TEST_TMPDIR/mods/.build-id/${bid:0:2}"
	mv "$W/spin" "$BATS_TEST_TMPDIR/mods/.build-id/${bid:0:2}/${bid:2}"
	sp-unwind -o "$U" "$R"
	[ "$(unwind_count "$U" missing_module)" -gt 0 ]
	sp-unwind --module-dir /nonexistent --module-dir "$BATS_TEST_TMPDIR/mods" -o "$U" "$R"
	samples=$(summary "$R" samples)
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge $((samples * 99 / 100)) ]
}

@test "--root finds the recorded paths under a copy of the host's files" {
	sp-capture -q -o "$R" -- "$W/spin" 0.5
	mkdir -p "$BATS_TEST_TMPDIR/root$W"
	mv "$W/spin" "$BATS_TEST_TMPDIR/root$W/spin"
	sp-unwind --root "$BATS_TEST_TMPDIR/root" -o "$U" "$R"
	samples=$(summary "$R" samples)
	[ "$(sp-cat -t unwind "$U" | jq .complete)" -ge $((samples * 99 / 100)) ]
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
	size=$(stat -c %s "$R")
	head -c $((size * 2 / 3)) "$R" > "$BATS_TEST_TMPDIR/cut.sps"
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

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-stat: reports, the diagnosis of real recordings set up to need it,
# --json, --check, --system.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
}

teardown() {
	[ -z "${P:-}" ] || kill -KILL "$P" 2>/dev/null || true
}

# clean_recording OUT SECONDS: records the reference workload for SECONDS,
# attached once it runs (no samples of its start-up in ld.so, whose
# unwinding depends on the host's C library), into OUT.raw, OUT.unw, OUT.
clean_recording() {
	"$WORKLOADS/spin" 30 > /dev/null &
	P=$!
	disown
	sleep 0.3
	sp-capture -q -o "$1.raw" -p "$P" --duration "$2"
	kill -KILL "$P"
	sp-unwind -o "$1.unw" "$1.raw"
	sp-symbolize -o "$1" "$1.unw"
}

# vdso_advice_only JSON: succeeds when the only advice of an sp-stat --json
# report is the address-only one, and it would not be given without the
# vDSO's frames: whether the vDSO's internal functions have names depends
# on the kernel build, not on the recording.
vdso_advice_only() {
	jq -e '(.diagnosis | length == 1 and (.[0].problem | test("address-only")))
		and (.symbolization | (.origins["address-only"] -
			([.modules_lacking_symbols[] | select(.path == "[vdso]") | .address_only] | add // 0)) * 10 < .frames)' "$1"
}

@test "a clean recording: the report at every stage, nothing to change" {
	clean_recording "$S" 0.5
	for f in "$S.raw" "$S.unw" "$S"; do
		run sp-stat "$f"
		[ "$status" -eq 0 ]
		[[ "$output" == *"complete"* ]]
		[[ "$output" == *"samples $(summary "$S.raw" samples),"* ]]
		if [[ "$output" != *"diagnosis: nothing to change"* ]]; then
			sp-stat --json --top 1000 "$f" > "$BATS_TEST_TMPDIR/j"
			vdso_advice_only "$BATS_TEST_TMPDIR/j"
		fi
	done
	run sp-stat "$S"
	# The unwinder's own count, of which at least 99% of the samples
	# outside the vDSO (whose unwind information comes with the kernel).
	user=$(sp-cat -t unwind "$S.unw" | jq .user_samples)
	complete=$(sp-cat -t unwind "$S.unw" | jq .complete)
	[[ "$output" == *"unwinding: $(awk -v c="$complete" -v u="$user" 'BEGIN { printf "%.1f", 100 * c / u }')% of $user stacks"* ]]
	folded "$S.unw" > "$BATS_TEST_TMPDIR/stacks"
	awk '/\[vdso\]/' "$BATS_TEST_TMPDIR/stacks" > "$BATS_TEST_TMPDIR/vdso"
	[ $((complete * 100)) -ge $(((user - $(weight "$BATS_TEST_TMPDIR/vdso")) * 99)) ]
	[[ "$output" == *"symbolization: "* ]]
	[[ "$output" == *"spin (pid $P)"* ]]
}

@test "--json: the summary under the format's names, stable keys" {
	clean_recording "$S" 0.3
	sp-stat --json --top 1000 "$S" > "$BATS_TEST_TMPDIR/j"
	jq -e '.summary | has("sample_events") and has("samples") and has("lost_events") and has("empty_stack_samples") and has("truncated_frame_markers") and has("ignored_user_callchain_frames") and has("kernel_enabled") and has("error_stats")' "$BATS_TEST_TMPDIR/j"
	[ "$(jq .summary.samples "$BATS_TEST_TMPDIR/j")" -eq "$(summary "$S" samples)" ]
	jq -e '.recording.requested_rate == 999 and .recording.stack_size == 32768' "$BATS_TEST_TMPDIR/j"
	jq -e '.unwinding.complete_pct > 95' "$BATS_TEST_TMPDIR/j"
	jq -e '.processes[0].comm == "spin" and (.threads | length) == 2' "$BATS_TEST_TMPDIR/j"
	# No advice, or only what the host's vDSO causes (see vdso_advice_only).
	jq -e '.diagnosis == []' "$BATS_TEST_TMPDIR/j" || vdso_advice_only "$BATS_TEST_TMPDIR/j"
	sp-stat --json --top 1 "$S" | jq -e '(.threads | length) == 1'
}

@test "deep recursion with a small window: the truncation advice" {
	sp-capture -q --stack-size 2048 -o "$S.raw" -- "$WORKLOADS/deep" -d 400 0.5
	sp-unwind --allow-empty -o "$S.unw" "$S.raw"
	run sp-stat "$S.unw"
	[[ "$output" == *"were truncated"*"raise sp-capture --stack-size (now 2048, at most 65528)"* ]]
	sp-stat --json "$S.unw" | jq -e '.diagnosis | map(.advice) | any(test("--stack-size"))'
}

@test "the kernel's cap with tiny buffers: the lost-events advice" {
	sp-capture -q --force --allow-empty -F max --mmap-pages 8 -o "$S.raw" -- "$WORKLOADS/spin" 1
	[ "$(summary "$S.raw" lost_events)" -gt 0 ]
	run sp-stat "$S.raw"
	# 8 pages rarely hold one sample of a 32 KiB window: all lost is its own finding.
	[[ "$output" == *"events lost"*"lower -F"*"--mmap-pages, now 8"* ||
	   "$output" == *"events were lost (100%)"*"raise sp-capture --mmap-pages (now 8"* ]]
}

@test "--kernel as an unprivileged user: the permission advice" {
	d=$(shared_tmpdir)
	as_nobody sp-capture -q --kernel -o "$d/rec.sps" -- "$WORKLOADS/spin" 0.3
	run sp-stat "$d/rec.sps"
	[[ "$output" == *"asked for, but denied"* ]]
	[[ "$output" == *"CAP_PERFMON"*"perf_event_paranoid"* ]]
	rm -rf "$d"
}

@test "a stripped binary: the address-only advice and the module lacking symbols" {
	w=$BATS_TEST_TMPDIR/w
	mkdir -p "$w"
	strip -s -o "$w/spin" "$WORKLOADS/spin"
	sp-capture -q -o "$S.raw" -- "$w/spin" 0.3
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize -o "$S" "$S.unw"
	run sp-stat "$S"
	[[ "$output" == *"of frames have no name (address-only)"*"--module-dir, --debug-dir"* ]]
	[[ "$output" == *"modules most lacking symbols"*"$w/spin"* ]]
}

@test "--check: exit status 4 past a threshold, 0 within" {
	sp-capture -q --stack-size 2048 -o "$S.raw" -- "$WORKLOADS/deep" -d 400 0.3
	sp-unwind --allow-empty -o "$S.unw" "$S.raw"
	run -4 sp-stat --check --max-truncated-pct 1 "$S.unw"
	[[ "$output" == *"check: truncated"* ]]
	# No stack of the unwound stream is complete: unusable, whatever the thresholds.
	run sp-stat --check --max-truncated-pct 100 --max-lost-pct 100 "$S.unw"
	[ "$status" -eq 4 ]
	[[ "$output" == *"check: the recording is unusable"* ]]
	run sp-stat --check --max-truncated-pct 100 --max-lost-pct 100 "$S.raw"
	[ "$status" -eq 0 ]
	run sp-stat --check --min-complete-pct 99 "$S.unw"
	[ "$status" -eq 4 ]
	run sp-stat --check --max-address-only-pct 5 "$S.unw"
	[ "$status" -eq 4 ]
	[[ "$output" == *"not symbolized"* ]]
	run sp-stat --max-lost-pct 1 "$S.unw"
	[ "$status" -eq 3 ]
}

@test "a stream cut in the middle: said, with the counts up to the cut" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/spin" 0.5
	size=$(stat -c %s "$S.raw")
	head -c $((size / 2)) "$S.raw" > "$BATS_TEST_TMPDIR/cut.sps"
	run sp-stat "$BATS_TEST_TMPDIR/cut.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"CUT SHORT"* ]]
	[[ "$output" == *"the stream was cut short"* ]]
	n=$(sp-stat --json "$BATS_TEST_TMPDIR/cut.sps" 2>/dev/null | jq .sample_records)
	[ "$n" -gt 0 ]
	[ "$n" -lt "$(summary "$S.raw" samples)" ]
}

@test "--system as root and as an unprivileged user" {
	run sp-stat --system
	[ "$status" -eq 0 ]
	[[ "$output" == *"kernel.perf_event_paranoid"*"kernel sampling (--kernel): allowed"* ]]
	sp-stat --system --json | jq -e '.root == true and .user_sampling == true and .kernel_sampling == true and (.python_with_perf | length) > 0'
	run as_nobody sp-stat --system
	[ "$status" -eq 0 ]
	[[ "$output" == *"kernel sampling (--kernel): denied"* ]]
	[[ "$output" == *"CAP_PERFMON"* ]]
	as_nobody sp-stat --system --json | jq -e '.root == false and .kernel_sampling == false'
}

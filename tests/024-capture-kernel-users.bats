#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture --kernel, and recording as an unprivileged user.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
}

@test "--kernel as root: kernel callchains without markers or user entries" {
	sp-capture -q --kernel -o "$S" -- dd if=/dev/zero of=/dev/null bs=64k count=100000
	[ "$(jqs "$S" 'select(.t=="header") | .kernel_enabled')" = true ]
	[ "$(summary "$S" kernel_enabled)" = true ]
	[ "$(jqs "$S" 'select(.t=="sample" and (.kstack | length) > 0) | 1' | wc -l)" -gt 10 ]
	# Every entry is a kernel address, none a context marker (jq 1.6 rounds
	# such big numbers, so compare the text).
	sp-cat -t sample "$S" > "$BATS_TEST_TMPDIR/samples"
	grep -o '"kstack":\[[0-9,]*\]' "$BATS_TEST_TMPDIR/samples" | tr -d '"kstack:[]' | tr ',' '\n' | grep . > "$BATS_TEST_TMPDIR/k"
	[ -s "$BATS_TEST_TMPDIR/k" ]
	run -1 grep -v '^18446[0-9]\{15\}$' "$BATS_TEST_TMPDIR/k"
	run -1 grep -q '^1844674407370955[0-9]\{4\}$' "$BATS_TEST_TMPDIR/k"
}

@test "an unprivileged user records its own process, user frames only" {
	d=$(shared_tmpdir)
	run as_nobody sp-capture -o "$d/rec.sps" -- "$WORKLOADS/spin" 0.5
	[ "$status" -eq 0 ]
	[ "$(summary "$d/rec.sps" samples)" -gt 50 ]
	[ "$(jqs "$d/rec.sps" 'select(.t=="process") | .uid')" = 65534 ]
	rm -rf "$d"
}

@test "--kernel as an unprivileged user falls back to user-only, said once" {
	# This needs kernel.perf_event_paranoid 2 or more, as on Debian by default.
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]
	d=$(shared_tmpdir)
	run as_nobody sp-capture --kernel -o "$d/rec.sps" -- "$WORKLOADS/spin" 0.5
	[ "$status" -eq 0 ]
	[ "$(grep -c 'kernel sampling was denied' <<< "$output")" -eq 1 ]
	[ "$(jqs "$d/rec.sps" 'select(.t=="header") | [.options.kernel, .kernel_enabled]')" = "[true,false]" ]
	[ "$(summary "$d/rec.sps" kernel_enabled)" = false ]
	[ "$(summary "$d/rec.sps" samples)" -gt 50 ]
	rm -rf "$d"
}

@test "--kallsyms-out saves this host's kallsyms" {
	sp-capture -q --allow-empty --kallsyms-out "$BATS_TEST_TMPDIR/k.syms" -o "$S" -- true
	[ "$(wc -l < "$BATS_TEST_TMPDIR/k.syms")" -eq "$(wc -l < /proc/kallsyms)" ]
	grep -q ' [Tt] _text$\| [Tt] _stext$' "$BATS_TEST_TMPDIR/k.syms"
	# As an unprivileged user the addresses read as zero: a warning.
	d=$(shared_tmpdir)
	run as_nobody sp-capture --allow-empty --kallsyms-out "$d/k.syms" -o "$d/rec.sps" -- true
	if ! grep -qv '^0000000000000000 ' "$d/k.syms"; then
		[[ "$output" == *"every kallsyms address reads as zero"* ]]
	fi
	rm -rf "$d"
}

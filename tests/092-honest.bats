#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# No failure passes as success: a result that cannot be used exits non-zero
# with its cause and its fix (unless --allow-empty asks for best effort), a
# degraded one says so in one warning line, and option values that cannot
# work are refused before recording.

load helper

setup_file() {
	# A static program: its one module is its own file, so once the file
	# is gone no frame of it can be unwound or named.
	printf '%s\n' 'int main(void) { volatile unsigned long x = 0;' \
		'for (unsigned long i = 0; i < 3000000000UL; i++) x += i; return 0; }' \
		> "$BATS_FILE_TMPDIR/st.c"
	gcc -O0 -static -o "$BATS_FILE_TMPDIR/st" "$BATS_FILE_TMPDIR/st.c"
}

setup() {
	S=$BATS_TEST_TMPDIR/rec
}

# gone_binary NAME: records a copy of spin (attached to it) or of the
# static program for a second, then deletes the copy; the stream is $S.raw.
gone_binary() {
	local d=$BATS_TEST_TMPDIR/gone
	mkdir -p "$d"
	if [ "$1" = st ]; then
		cp "$BATS_FILE_TMPDIR/st" "$d/st"
		sp-capture -q -o "$S.raw" --duration 1 -- "$d/st"
	else
		# Attached once it runs its own code (past_startup).
		cp "$WORKLOADS/spin" "$d/spin"
		"$d/spin" 30 > /dev/null 2>&1 &
		local pid=$!
		past_startup "$pid"
		sp-capture -q -o "$S.raw" -p "$pid" --duration 1
		kill "$pid"
		wait "$pid" 2> /dev/null || true
	fi
	rm -rf "$d"
}

@test "sp-capture -p on a process that only sleeps: no sample, exit 2, the fix" {
	sleep 30 &
	p=$!
	run sp-capture -q -p "$p" --duration 0.5 -o "$S.raw"
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-capture: no samples: the processes attached with -p used no CPU in the "*" s recorded (they slept or waited); record while the process works"*" (or give --allow-empty)" ]]
	run sp-capture -q --allow-empty -p "$p" --duration 0.5 -o "$S.raw"
	kill "$p"
	[ "$status" -eq 0 ]
	[[ "$output" == "sp-capture: no samples: "* ]]
	# Best effort was asked for: not offered again.
	[[ "$output" != *"or give --allow-empty"* ]]
	[ "$(summary "$S.raw" samples)" -eq 0 ]
}

@test "sp-capture --mmap-pages 8: refused before recording, with the numbers" {
	run sp-capture -q --mmap-pages 8 -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	[ "$status" -eq 3 ]
	[[ "${lines[0]}" == "sp-capture: --mmap-pages 8 (32 KiB a CPU) holds 0 samples of the 32768-byte stack window, and at 999 Hz it must hold 4: give --mmap-pages 64 or more, a smaller --stack-size, or --force" ]]
	[ ! -e "$S.raw" ]
	# A window that fits is accepted.
	sp-capture -q --mmap-pages 8 --stack-size 4K -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	[ "$(summary "$S.raw" samples)" -gt 0 ]
}

@test "sp-capture --force --mmap-pages 8: every sample lost, exit 2, the fix" {
	run sp-capture -q --force --mmap-pages 8 -o "$S.raw" -- "$WORKLOADS/spin" 1
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-capture: no samples: all "*" events were lost (100%), the ring buffers (--mmap-pages 8) overran before a sample was kept; raise sp-capture --mmap-pages (now 8, "*" (or give --allow-empty)" ]]
	[ "$(summary "$S.raw" samples)" -eq 0 ]
	[ "$(summary "$S.raw" lost_events)" -gt 0 ]
}

@test "sp-capture -F max: refused with the expected slowdown unless --force" {
	cap=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
	run sp-capture -q -F max -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	if [ "$cap" -le 5000 ]; then
		# A cap this low is sustained: nothing to refuse.
		[ "$status" -eq 0 ]
		return
	fi
	[ "$status" -eq 3 ]
	[[ "${lines[0]}" == "sp-capture: -F max is $cap Hz: each sample copies 32768 bytes of stack"*"so the target would run "*" slower; this machine sustains about "*" Hz: give -F "*" or less, or --force" ]]
	[ ! -e "$S.raw" ]
	# A smaller stack window costs less: a higher rate is sustained.
	run sp-capture -q -F 9000 --stack-size 1K -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	[ "$status" -eq 0 ]
	run sp-capture -q -F 9000 --stack-size 64K -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	[ "$status" -eq 3 ]
	sp-capture -q -F max --force -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	[ "$(jqs "$S.raw" 'select(.t=="header") | .options.frequency')" = "$cap" ]
}

@test "sp-unwind: every stack ends at a missing module: exit 1, the fix; --allow-empty" {
	gone_binary spin
	run --separate-stderr sp-unwind -o "$S.unw" "$S.raw"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "sp-unwind: no stack is complete: "*" stacks (100.0%) do not reach their thread's entry, most because the module's file was not found; give sp-unwind and sp-symbolize the recorded files: --root DIR"*"--module-dir DIR"*"--archive DIR"*" (or give --allow-empty)" ]]
	[ "$(summary "$S.unw" samples)" -gt 0 ]
	run sp-unwind --allow-empty -o "$S.unw" "$S.raw"
	[ "$status" -eq 0 ]
	[[ "$output" == "sp-unwind: no stack is complete"* ]]
}

@test "sp-unwind: part of the stacks at a missing module: one warning with the share" {
	d=$BATS_TEST_TMPDIR/gone
	mkdir -p "$d"
	cp "$WORKLOADS/spin" "$d/spin"
	sp-capture -q -o "$S.raw" -- sh -c "'$d/spin' 1 & '$WORKLOADS/spin' 1; wait"
	rm -rf "$d"
	run --separate-stderr sp-unwind -o "$S.unw" "$S.raw"
	[ "$status" -eq 0 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^sp-unwind:\ warning:\ [0-9]+\ of\ [0-9]+\ stacks\ \([0-9.]+%\)\ do\ not\ reach\ their\ thread\'s\ entry,\ most\ because\ the\ module\'s\ file\ was\ not\ found\;\ give\ sp-unwind ]]
	pct=$(sed 's/^[^(]*(\([0-9]*\).*/\1/' <<< "$stderr")
	[ "$pct" -ge 20 ] && [ "$pct" -le 80 ]
}

@test "sp-unwind --root and --module-dir that do not exist: one warning each" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	run --separate-stderr sp-unwind --root "$BATS_TEST_TMPDIR/no/root" \
		--module-dir "$BATS_TEST_TMPDIR/no/ids" -o "$S.unw" "$S.raw"
	[ "$status" -eq 0 ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "sp-unwind: --root '$BATS_TEST_TMPDIR/no/root': No such file or directory; no module file is found there" ]
	[ "${stderr_lines[1]}" = "sp-unwind: --module-dir '$BATS_TEST_TMPDIR/no/ids': No such file or directory; no module file is found there" ]
}

@test "sp-symbolize: no frame can be named: exit 1, the fix; --allow-empty" {
	gone_binary st
	sp-unwind --allow-empty -o "$S.unw" "$S.raw" 2> /dev/null
	run --separate-stderr sp-symbolize --no-debuginfod -o "$S.sym" "$S.unw"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "sp-symbolize: no frame could be named: all "*" are address-only (module files missing: 1); symbolize on the host that recorded, or give --archive DIR, --module-dir DIR or DEBUGINFOD_URLS" ]]
	run sp-symbolize --no-debuginfod --allow-empty -o "$S.sym" "$S.unw"
	[ "$status" -eq 0 ]
}

@test "sp-symbolize: an unreachable debuginfod server is one warning with its URL, no progress bar off a terminal" {
	gone_binary spin
	sp-unwind --allow-empty -o "$S.unw" "$S.raw" 2> /dev/null
	DEBUGINFOD_URLS=http://127.0.0.1:9 run --separate-stderr sp-symbolize -o "$S.sym" "$S.unw"
	[ "$status" -eq 0 ]
	[ "$(grep -c "^sp-symbolize: cannot reach the debuginfod server 'http://127.0.0.1:9': .*; no file was fetched (check DEBUGINFOD_URLS, or give --no-debuginfod)$" <<< "$stderr")" -eq 1 ]
	run -1 grep -q 'Downloading' <<< "$stderr"
}

@test "sp-symbolize: a perf map moved away before symbolizing is one warning" {
	PY=$(python312)
	[ -n "$PY" ]
	sp-capture -q -o "$S.raw" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 1
	pid=$(jqs "$S.raw" 'select(.t=="process") | .pid' | head -n 1)
	sp-unwind -o "$S.unw" "$S.raw"
	mv "/tmp/perf-$pid.map" "$BATS_TEST_TMPDIR/moved.map"
	run --separate-stderr sp-symbolize -o "$S.sym" "$S.unw"
	[ "$status" -eq 0 ]
	[[ "$stderr" == "sp-symbolize: warning: "*" of "*" frames (100.0%) of the JIT code have no name although it wrote a perf map: /tmp/perf-PID.map was moved or deleted before sp-symbolize read it"*"; run sp-symbolize on the recording host while /tmp/perf-PID.map is there, or record with sp-capture --archive DIR"* ]]
	# In place, no warning.
	mv "$BATS_TEST_TMPDIR/moved.map" "/tmp/perf-$pid.map"
	run --separate-stderr sp-symbolize -o "$S.sym" "$S.unw"
	rm -f "/tmp/perf-$pid.map"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "sp-symbolize --kallsyms FILE that is missing: one clear message, no broken pipe" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/spin" 1
	run bash -c "set -o pipefail; sp-unwind '$S.raw' | sp-symbolize --kallsyms '$BATS_TEST_TMPDIR/none.syms' | sp-cat > /dev/null"
	[ "$status" -ne 0 ]
	[ "$output" = "sp-symbolize: cannot read the --kallsyms file '$BATS_TEST_TMPDIR/none.syms': No such file or directory (save one with sp-capture --kallsyms-out FILE, or give --kallsyms none)" ]
	run sp-symbolize --kallsyms "$BATS_TEST_TMPDIR/none.syms" -o "$S.sym" /dev/null
	[ "$status" -eq 2 ]
	[ ! -e "$S.sym" ]
}

@test "sp-fold filters that match nothing: exit 1 and a message; --allow-empty" {
	run --separate-stderr sp-fold --only-comm nosuchcomm "$VECTORS/symbolized.sps"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ "$stderr" == "sp-fold: no sample matches --only-comm (the input has "*"): the result is empty; list the processes and the time span with sp-stat, or give --allow-empty" ]]
	run --separate-stderr sp-fold --from 100000 --to 100001 "$VECTORS/symbolized.sps"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "sp-fold: no sample matches --from/--to "* ]]
	run --separate-stderr sp-fold --only-comm nosuchcomm --only-pid 1 "$VECTORS/symbolized.sps"
	[[ "$stderr" == "sp-fold: no sample matches --only-pid, --only-comm "* ]]
	run sp-fold --only-comm nosuchcomm --allow-empty "$VECTORS/symbolized.sps"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# A filter that matches keeps exit 0.
	comm=$(jqs "$VECTORS/symbolized.sps" 'select(.t=="process") | .comm' | head -n 1 | jq -r .)
	run -0 sp-fold --only-comm "$comm" "$VECTORS/symbolized.sps"
	[ -n "$output" ]
}

@test "sp-flame given a binary stream: run sp-fold first, no SVG" {
	run sp-flame -o "$S.svg" "$VECTORS/symbolized.sps"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-flame: '$VECTORS/symbolized.sps' is a stackpulse stream, not folded stacks: run sp-fold first (sp-fold FILE | sp-flame)" ]
	[ ! -e "$S.svg" ]
	run bash -c "sp-flame < '$VECTORS/symbolized.sps'"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-flame: '-' is a stackpulse stream, not folded stacks: run sp-fold first (sp-fold FILE | sp-flame)" ]
}

@test "sp-capture --kallsyms-out: a path that cannot be written is refused before recording, naming the option" {
	run sp-capture -q --kallsyms-out "$BATS_TEST_TMPDIR/no/dir/k.syms" -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	[ "$status" -eq 2 ]
	[ "$output" = "sp-capture: cannot create the --kallsyms-out file '$BATS_TEST_TMPDIR/no/dir/k.syms': No such file or directory" ]
	[ ! -e "$S.raw" ]
}

@test "sp-capture --kallsyms-out as an unprivileged user: the setting that hides the addresses is named" {
	d=$(shared_tmpdir)
	run as_nobody sp-capture -q --kallsyms-out "$d/k.syms" -o "$d/rec.sps" -- "$WORKLOADS/spin" 0.3
	kptr=$(cat /proc/sys/kernel/kptr_restrict)
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
	if grep -qv '^0000000000000000 ' "$d/k.syms"; then
		# This host shows the addresses to every user: nothing to say.
		run -1 grep -q 'reads as zero' <<< "$output"
	elif [ "$kptr" -eq 0 ]; then
		[[ "$output" == *"every kallsyms address reads as zero (kernel.perf_event_paranoid is $paranoid); run as root or lower it"* ]]
	else
		[[ "$output" == *"every kallsyms address reads as zero (kernel.kptr_restrict is $kptr); run as root or lower it"* ]]
	fi
	rm -rf "$d"
}

@test "sp-capture --mmap-pages above the limit names the limit" {
	run sp-capture --mmap-pages 2097152 -- true
	[ "$status" -eq 3 ]
	[ "${lines[0]}" = "sp-capture: --mmap-pages 2097152 is above the limit of 1048576 pages a CPU" ]
	run sp-capture --mmap-pages 3 -- true
	[ "$status" -eq 3 ]
	[ "${lines[0]}" = "sp-capture: invalid --mmap-pages '3': give a power of two" ]
}

@test "counts in messages agree with their nouns: 1 record, 2 records" {
	sp-cat -t header "$VECTORS/symbolized.sps" | head -n 1 > "$BATS_TEST_TMPDIR/h.jsonl"
	sp-cat -t header,process "$VECTORS/symbolized.sps" | head -n 2 > "$BATS_TEST_TMPDIR/h2.jsonl"
	{ cat "$BATS_TEST_TMPDIR/h.jsonl"; echo 'not json'; } > "$BATS_TEST_TMPDIR/bad.jsonl"
	run sp-cat --from-json -o "$S.sps" "$BATS_TEST_TMPDIR/bad.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *"(the 1 record before it was written)" ]]
	sps_from_json "$BATS_TEST_TMPDIR/h.jsonl" "$S.1"
	run sp-cat "$S.1"
	[ "$status" -eq 1 ]
	[[ "$output" == *"stream ends without a summary record after 1 record: it was cut short"* ]]
	sps_from_json "$BATS_TEST_TMPDIR/h2.jsonl" "$S.2"
	run sp-cat "$S.2"
	[[ "$output" == *"after 2 records: it was cut short"* ]]
}

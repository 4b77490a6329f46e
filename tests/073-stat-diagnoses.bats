#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-stat's diagnosis fits what the user recorded: one test per case a
# user meets, each asserting the exact advice.  An unusable recording (no
# samples, all lost, no stack complete, no frame named) is said first,
# with its cause and fix, and fails sp-stat --check.  Real recordings
# wherever the case can be made here; a recording from another boot and
# one symbolized where no file is found are real streams with their
# header or module records rewritten.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/rec
	PIDS=()
}

teardown() {
	kill_started
}

# first_finding OUTPUT: the first finding of a text report, its two lines.
first_finding() {
	awk '/^diagnosis:/ { d = 1; next } d && n < 2 { print; n++ }' <<< "$1"
}

# has_finding OUTPUT WHAT FIX: succeeds when the report lists this finding.
has_finding() {
	local want="  - $2"$'\n'"    -> $3"
	[[ "$1" == *"$want"* ]] && return 0
	printf 'wanted:\n%s\nin:\n%s\n' "$want" "$1" >&2
	return 1
}

# seconds FILE: the summary's duration, as sp-stat prints it.
seconds() {
	awk -v ns="$(summary "$1" duration_ns)" 'BEGIN { printf "%.1f", ns / 1e9 }'
}

# unusable_checked FILE: sp-stat --check fails on FILE, saying why.
unusable_checked() {
	run --separate-stderr sp-stat --check "$1"
	[ "$status" -eq 4 ]
	[[ "$stderr" == *"check: the recording is unusable: "* ]]
}

# rewrite IN OUT PYTHON: OUT is the stream IN with each record r (a dict)
# passed through the Python statements given.
rewrite() {
	local -
	set -o pipefail
	sp-cat "$1" | /usr/bin/python3 -c '
import base64, json, sys
for line in sys.stdin:
	r = json.loads(line)
'"$(sed 's/^/\t/' <<< "$3")"'
	print(json.dumps(r))' > "$BATS_TEST_TMPDIR/rewritten.jsonl"
	sps_from_json "$BATS_TEST_TMPDIR/rewritten.jsonl" "$2"
}

@test "an empty file: no stream, said first with no blank host, --check fails" {
	: > "$S.empty"
	run sp-stat "$S.empty"
	report=$output
	[ "${lines[0]}" = "recording: no stream, not one record" ]
	[[ "$(first_finding "$report")" == "  - the recording is unusable: the input holds no stream: not one record"$'\n'"    -> give sp-stat the file sp-capture, sp-unwind or sp-symbolize wrote; "* ]]
	run -1 grep -q "host ," <<< "$report"
	run -1 grep -q "cut short" <<< "$report"
	unusable_checked "$S.empty"
}

@test "-p on a process that only sleeps: no samples, the cause and the fix first" {
	start sleep 30
	sp-capture -q --allow-empty -p "$P" --duration 1 -o "$S.raw"
	[ "$(summary "$S.raw" samples)" -eq 0 ]
	[ "$(summary "$S.raw" lost_events)" -eq 0 ]
	run -0 sp-stat "$S.raw"
	[ "$(first_finding "$output")" = "  - the recording is unusable: no samples: the processes attached with -p used no CPU in the $(seconds "$S.raw") s recorded (they slept or waited)
    -> record while the process works (sp-capture -p PID during the work, with a --duration that covers it), or launch the work itself: sp-capture -- COMMAND" ]
	run -1 grep -q "nothing to change" <<< "$output"
	unusable_checked "$S.raw"
	sp-stat --json "$S.raw" | jq -e '.unusable and (.diagnosis[0].problem | startswith("the recording is unusable: no samples"))'
}

@test "a launched shell that execs nothing: no samples, launch the program itself" {
	# The few milliseconds of CPU the shell and sleep take to start were
	# sampled in 5 of 20 runs at 999 Hz here, in none of 20 at 49 Hz.
	sp-capture -q --allow-empty -F 49 -o "$S.raw" -- sh -c 'sleep 0.5; true'
	[ "$(summary "$S.raw" samples)" -eq 0 ]
	run -0 sp-stat "$S.raw"
	[ "$(first_finding "$output")" = "  - the recording is unusable: no samples: the launched command used no CPU in the $(seconds "$S.raw") s recorded (a program that only sleeps or waits, such as a shell waiting for a child that sleeps)
    -> launch the program that does the work (sp-capture -- PROGRAM, or exec it from a wrapper: sh -c 'exec PROGRAM'), or attach to it with -p PID while it works" ]
	unusable_checked "$S.raw"
}

@test "--mmap-pages 1: every event lost, raise --mmap-pages" {
	sp-capture -q --allow-empty --force --mmap-pages 1 -o "$S.raw" -- "$WORKLOADS/spin" 1
	[ "$(summary "$S.raw" samples)" -eq 0 ]
	lost=$(summary "$S.raw" lost_events)
	[ "$lost" -gt 0 ]
	run -0 sp-stat "$S.raw"
	[ "$(first_finding "$output")" = "  - the recording is unusable: no samples: all $lost events were lost (100%), the ring buffers (--mmap-pages 1) overran before a sample was kept
    -> raise sp-capture --mmap-pages (now 1, a power of two; the default is 2048), or lower -F (now 999) or --stack-size (now 32768): each sample takes about its stack window in the buffer" ]
	# Not also the advice for a few lost events, which would say to lower -F only.
	run -1 grep -q "events lost (" <<< "$output"
	unusable_checked "$S.raw"
}

@test "kernel frames of another boot, no --kallsyms: advise --kallsyms" {
	# A workload that lives in system calls, so that samples have kernel frames.
	sp-capture -q --kernel -F 999 -o "$S.raw" -- dd if=/dev/zero of=/dev/null bs=64 count=2000000 status=none
	rewrite "$S.raw" "$S.other" '
if r["t"] == "header":
	r["host"]["boot_id"] = "00000000-0000-4000-8000-000000000000"'
	sp-unwind -o "$S.unw" "$S.other"
	sp-symbolize -o "$S.sym" "$S.unw" 2> /dev/null
	[ "$(sp-cat -t symbolize "$S.sym" | jq -r .kallsyms)" = none ]
	kernel=$(sp-cat -t frame "$S.sym" | jq -s '[.[] | select((.flags // 0) / 256 | floor % 4 == 1)] | length')
	[ "$kernel" -gt 0 ]
	run -0 sp-stat "$S.sym"
	has_finding "$output" "$kernel of $kernel kernel frames (100.0%) have no name: the stream was recorded on another host or boot, where this host's /proc/kallsyms does not apply" \
		"give sp-symbolize --kallsyms FILE, the kallsyms of the recording host and boot (saved there with sp-capture --kallsyms-out FILE, or kept by sp-capture --archive DIR: then give sp-symbolize --archive DIR)"
	# No advice on binaries or debuginfod for the kernel's frames.
	run -1 grep -q "keep the binaries where they were recorded" <<< "$output"
	# With the kallsyms given, the finding is gone.
	cp /proc/kallsyms "$BATS_TEST_TMPDIR/kallsyms"
	sp-symbolize --kallsyms "$BATS_TEST_TMPDIR/kallsyms" -o "$S.named" "$S.unw"
	run -0 sp-stat "$S.named"
	run -1 grep -q "kernel frames (" <<< "$output"
}

@test "stripped packaged binaries, present and matching (xz): debug packages first" {
	head -c 3000000 /dev/urandom > "$BATS_TEST_TMPDIR/data"
	sp-capture -q -o "$S.raw" -- xz -9 -k -c "$BATS_TEST_TMPDIR/data" > /dev/null
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize -o "$S.sym" "$S.unw"
	[ "$(sp-cat -t symbolize "$S.sym" | jq '.modules_missing + .modules_mismatched')" -eq 0 ]
	run -0 sp-stat "$S.sym"
	[[ "$output" == *"  - "*"% of frames have no name (address-only) or only their function's start (function-start), of native code (the vDSO and JIT code aside)
    -> the files were found but are stripped: install their debug packages first (-dbgsym or -dbg: \`dpkg -S FILE\` names the package) or give sp-symbolize a debuginfod server (DEBUGINFOD_URLS); for your own builds, keep the unstripped file and give sp-symbolize --module-dir or --debug-dir"* ]]
	[[ "$output" == *"  - /usr/bin/xz has no symbols: "*"    -> install its debug symbols: \`dpkg -S /usr/bin/xz\` names its package PKG, then \`apt install PKG-dbgsym\`"* ]]
	run -1 grep -q "keep the binaries where they were recorded" <<< "$output"
}

@test "missing_module on a recording made with --archive: --archive DIR for sp-unwind and sp-symbolize" {
	w=$BATS_TEST_TMPDIR/w
	mkdir -p "$w"
	cp "$WORKLOADS/spin" "$w/spin"
	# Attached once it runs its own code: no stack is complete without it.
	start "$w/spin" 30
	past_startup "$P"
	(cd "$BATS_TEST_TMPDIR" && sp-capture -q --archive arch -p "$P" --duration 0.5 -o "$S.raw")
	kill "$P"
	rm "$w/spin"
	sp-unwind --allow-empty -o "$S.unw" "$S.raw"
	sp-symbolize -o "$S.sym" "$S.unw"
	[ "$(unwind_count "$S.unw" missing_module)" -gt 0 ]
	fix="the recording was archived with sp-capture --archive: give sp-unwind and sp-symbolize --archive arch"
	for f in "$S.unw" "$S.sym"; do
		run -0 sp-stat "$f"
		user=$(sp-cat -t unwind "$f" | jq .user_samples)
		missing=$(unwind_count "$f" missing_module)
		[ "$missing" -eq "$user" ]
		[ "$(first_finding "$output")" = "  - the recording is unusable: $user of $user stacks (100.0%) do not reach their thread's entry, most because the module's file was not found ($user stacks, 100.0%)
    -> $fix" ]
		[[ "$output" == *"  - 1 of "*" module files ("*"%) were not found: their frames have no names and their stacks end there
    -> $fix"* ]]
		run -1 grep -q -- "--root DIR" <<< "$output"
		unusable_checked "$f"
	done
	run -0 sp-stat "$S.sym"
	[[ "$output" == *"  - $w/spin has no symbols: "*"    -> if sp-symbolize found no file for it (1 missing, 0 mismatched): the recording was archived, give it --archive arch; "* ]]
	# The advice works: with the archive, every module is found.
	sp-unwind --archive "$BATS_TEST_TMPDIR/arch" -o "$S.unw2" "$S.raw"
	[ "$(unwind_count "$S.unw2" missing_module)" -eq 0 ]
}

@test "--max-depth hit with a stack copy too small as well: both limits" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/deep" -d 3000 0.5
	sp-unwind --allow-empty -o "$S.unw" "$S.raw"
	# Nearly every stack is cut at 512 frames, most with a full copy;
	# a sample taken before the recursion was deep may end otherwise.
	user=$(sp-cat -t unwind "$S.unw" | jq .user_samples)
	depth=$(unwind_count "$S.unw" max_depth)
	full=$(sp-cat -t unwind "$S.unw" | jq '.max_depth_full // 0')
	[ $((depth * 10)) -ge $((user * 9)) ]
	[ $((full * 2)) -gt "$depth" ]
	both="raise sp-unwind --max-depth and sp-capture --stack-size (at most 65528) both: the copy ended before the stack did too"
	run -0 sp-stat "$S.unw"
	[[ "$(first_finding "$output")" == "  - "*"of $user stacks ("*"%) do not reach their thread's entry, most because the stack reached the frame limit (--max-depth) ($depth stacks, "*$'\n'"    -> $both" ]]
	# The raw stream says the same of the stack copy.
	run -0 sp-stat "$S.raw"
	[[ "$output" == *"were truncated: the stack copy ended before the stack did"$'\n'"    -> raise sp-capture --stack-size (now 32768, at most 65528)"* ]]
	# A window the stack fits in: --max-depth alone.
	sp-capture -q -o "$S.fit" -- "$WORKLOADS/deep" -d 400 0.5
	[ "$(summary "$S.fit" truncated_frame_markers)" -eq 0 ]
	sp-unwind --allow-empty --max-depth 100 -o "$S.fitu" "$S.fit"
	run -0 sp-stat "$S.fitu"
	[[ "$(first_finding "$output")" == *"(--max-depth) ("*$'\n'"    -> raise sp-unwind --max-depth" ]]
	run -1 grep -qF -- "$both" <<< "$output"
}

@test "--archive as an unprivileged user: archive_failed, the setting that applies" {
	d=$(shared_tmpdir)
	as_nobody sp-capture -q --archive "$d/arch" -o "$d/rec.raw" -- "$WORKLOADS/spin" 0.3
	sp-cat -t archive "$d/rec.raw" | jq -e -s 'map(.kind) | index("kallsyms") == null'
	failed=$(sp-cat -t summary "$d/rec.raw" | jq '.error_stats[] | select(.kind == "archive_failed") | .count')
	[ "$failed" -ge 1 ]
	run -0 sp-stat "$d/rec.raw"
	files=$([ "$failed" -eq 1 ] && echo "1 file" || echo "$failed files")
	has_finding "$output" "$files could not be kept in the --archive directory, kallsyms among them: the recording's kernel frames cannot be named elsewhere" \
		"record as root: as a user, /proc/kallsyms shows zero addresses unless kernel.perf_event_paranoid is 1 or less with kernel.kptr_restrict 0, or the recorder has CAP_SYSLOG with kernel.kptr_restrict 1 (sp-stat --system names the setting of this host)"
	run -1 grep -q "nothing to change" <<< "$output"
	# --system, as that user, names the setting that hides kallsyms here.
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
	kptr=$(cat /proc/sys/kernel/kptr_restrict)
	run -0 as_nobody sp-stat --system
	if [ "$kptr" -eq 0 ] && [ "$paranoid" -gt 1 ]; then
		has_finding "$output" "/proc/kallsyms shows zero addresses to this user: kernel.perf_event_paranoid is $paranoid, and with kernel.kptr_restrict 0 addresses are shown only when it is 1 or less" \
			"run as root (or with CAP_SYSLOG), or set kernel.perf_event_paranoid to 1 (sysctl -w kernel.perf_event_paranoid=1); kernel.kptr_restrict is not the cause"
	elif [ "$kptr" -eq 1 ]; then
		[[ "$output" == *"kernel.kptr_restrict is 1, which shows them only with CAP_SYSLOG"* ]]
	elif [ "$kptr" -ge 2 ]; then
		[[ "$output" == *"to every user: kernel.kptr_restrict is $kptr"* ]]
	else
		run -1 grep -q "/proc/kallsyms shows zero" <<< "$output"
	fi
	rm -rf "$d"
}

@test "--check --max-address-only-pct on an unwound stream: not symbolized, the real reason" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/spin" 0.3
	sp-unwind -o "$S.unw" "$S.raw"
	run --separate-stderr sp-stat --check --max-address-only-pct 5 "$S.unw"
	[ "$status" -eq 4 ]
	[ "$stderr" = "sp-stat: check: address-only frames cannot be measured: the stream is unwound, not symbolized; run sp-symbolize on it first" ]
	run --separate-stderr sp-stat --check --max-unnamed-pct 5 "$S.raw"
	[ "$status" -eq 4 ]
	[ "$stderr" = "sp-stat: check: unnamed frames cannot be measured: the stream is raw, not symbolized; run sp-symbolize on it first" ]
	run --separate-stderr sp-stat --check --min-complete-pct 90 "$S.raw"
	[ "$status" -eq 4 ]
	[ "$stderr" = "sp-stat: check: complete stacks cannot be measured: the stream is raw, not unwound; run sp-unwind on it first" ]
}

@test "CPython 3.12 without -X perf: Python functions are not visible, and how to get them" {
	py=$(python312)
	[ -n "$py" ]
	symbolized "$S" "$py" "$TOP/tests/workloads/pywork.py" 1.5
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	cpy=$(jq '.runtimes[] | select(.runtime == "cpython") | .samples' "$BATS_TEST_TMPDIR/j")
	[ "$cpy" -gt 0 ]
	run -0 sp-stat "$S"
	[[ "$output" == *" CPython samples ("*"%) show no Python function: all Python time is _PyEval_EvalFrameDefault, as without -X perf or before Python 3.12
    -> run Python 3.12 or later with -X perf (or PYTHONPERFSUPPORT=1), so that each Python function has a frame named in /tmp/perf-PID.map; Python 3.11 and older cannot be profiled by function this way"* ]]
	# With -X perf the functions are there, and the finding is gone.
	symbolized "$S.perf" "$py" -X perf "$TOP/tests/workloads/pywork.py" 1.5
	run -0 sp-stat "$S.perf"
	run -1 grep -q "show no Python function" <<< "$output"
}

@test "CPython 3.11: Python functions are not visible" {
	py=
	for d in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.11*/bin/python3; do
		[ -x "$d" ] && py=$d
	done
	[ -n "$py" ]
	symbolized "$S" "$py" "$TOP/tests/workloads/pywork.py" 1.5
	run -0 sp-stat "$S"
	[[ "$output" == *" CPython samples ("*"%) show no Python function: all Python time is _PyEval_EvalFrameDefault, as without -X perf or before Python 3.12
    -> run Python 3.12 or later with -X perf"* ]]
}

@test "a CPython perf map moved away before sp-symbolize: the map, not -X perf" {
	py=$(python312)
	[ -n "$py" ]
	sp-capture -q -o "$S.raw" -- "$py" -X perf "$TOP/tests/workloads/pywork.py" 1.5
	sp-unwind -o "$S.unw" "$S.raw"
	pid=$(sp-cat -t sample "$S.raw" | jq -s '.[0].pid')
	mv "/tmp/perf-$pid.map" "$BATS_TEST_TMPDIR/moved.map"
	sp-symbolize -o "$S.sym" "$S.unw"
	read -r unnamed jit < <(sp-stat --json "$S.sym" | jq -r '.runtimes[] | select(.runtime == "cpython") | "\(.jit_frames_unnamed) \(.jit_frames)"')
	[ "$jit" -gt 0 ]
	run -0 sp-stat "$S.sym"
	has_finding "$output" "$unnamed of $jit frames ($(awk -v a="$unnamed" -v b="$jit" 'BEGIN { printf "%.1f", 100 * a / b }')%) of CPython JIT code have no name although it wrote a perf map: /tmp/perf-PID.map was moved or deleted before sp-symbolize read it, or is on another host" \
		"run sp-symbolize on the recording host while /tmp/perf-PID.map is there, or record with sp-capture --archive DIR, which keeps the perf maps, and give sp-symbolize --archive DIR"
	run -1 grep -q -- "-X perf (or PYTHONPERFSUPPORT" <<< "$output"
	# Put back, the map names the code.
	mv "$BATS_TEST_TMPDIR/moved.map" "/tmp/perf-$pid.map"
	sp-symbolize -o "$S.back" "$S.unw"
	rm -f "/tmp/perf-$pid.map"
	run -0 sp-stat "$S.back"
	run -1 grep -q "although it wrote a perf map" <<< "$output"
}

@test "every module missing where it is symbolized: unusable, not nothing to change" {
	sp-capture -q -o "$S.raw" -- "$WORKLOADS/spin" 0.5
	sp-unwind -o "$S.unw" "$S.raw"
	# The host that symbolizes has none of the files: other paths, and
	# other build-ids, which no debug directory or archive here holds.
	rewrite "$S.unw" "$S.elsewhere" '
if r["t"] == "header":
	r["host"]["boot_id"] = "00000000-0000-4000-8000-000000000000"
if r["t"] == "module" and r.get("kind") == "elf":
	r["path"] = "/nonexistent" + r["path"]
	if "build_id" in r:
		b = base64.b64decode(r["build_id"]["$bin"])
		r["build_id"]["$bin"] = base64.b64encode(bytes(x ^ 0x5a for x in b)).decode()'
	sp-symbolize --allow-empty -o "$S.sym" "$S.elsewhere" 2> /dev/null
	missing=$(sp-cat -t symbolize "$S.sym" | jq .modules_missing)
	files=$(sp-cat -t module "$S.sym" | jq -s '[.[] | select(.kind == "elf")] | length')
	[ "$missing" -eq "$files" ]
	run -0 sp-stat "$S.sym"
	[ "$(first_finding "$output")" = "  - the recording is unusable: $missing of $files module files (100.0%) were not found: their frames have no names and their stacks end there
    -> give sp-unwind and sp-symbolize the recorded files: --root DIR (the recording host's root) or --module-dir DIR (build-id layout); or record with sp-capture --archive DIR, which keeps them" ]
	run -1 grep -q "nothing to change" <<< "$output"
	unusable_checked "$S.sym"
}

@test "a usable recording with incomplete stacks: the share, the main reason and its fix" {
	objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr --remove-section=.debug_frame \
		"$WORKLOADS/spin" "$BATS_TEST_TMPDIR/spin"
	sp-capture -q -o "$S.raw" -- "$BATS_TEST_TMPDIR/spin" 1
	sp-unwind --allow-empty -o "$S.unw" "$S.raw" 2> /dev/null
	read -r user complete < <(sp-cat -t unwind "$S.unw" | jq -r '"\(.user_samples) \(.complete)"')
	read -r nocfi why < <(sp-cat -t unwind "$S.unw" | jq -r '.ends[] | select(.kind == "no_cfi") | "\(.count) \(.description)"')
	# A few samples of ld.so's start-up complete; should none, it is unusable.
	pre=
	[ "$complete" -gt 0 ] || pre="the recording is unusable: "
	[ $((nocfi * 2)) -gt $((user - complete)) ]
	share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
	run -0 sp-stat "$S.unw"
	[ "$(first_finding "$output")" = "  - $pre$((user - complete)) of $user stacks ($(share $((user - complete)) "$user")%) do not reach their thread's entry, most because $why ($nocfi stacks, $(share "$nocfi" "$user")%)
    -> build with unwind tables (-fasynchronous-unwind-tables) or frame pointers (-fno-omit-frame-pointer)" ]
	# The main reason is not listed twice.
	[ "$(grep -c "no unwind information" <<< "$output")" -eq 2 ]
}

@test "some events lost: the lost-events finding, and no unusable one" {
	# 16 pages hold a few samples of a 32 KiB window: some are lost, not all.
	sp-capture -q --force -F 4999 --mmap-pages 16 -o "$S.raw" -- "$WORKLOADS/spin" 1
	lost=$(summary "$S.raw" lost_events)
	samples=$(summary "$S.raw" samples)
	[ "$lost" -gt 0 ]
	[ "$samples" -gt 0 ]
	run -0 sp-stat "$S.raw"
	rate=$(sp-cat -t header "$S.raw" | jq '.options.frequency')
	has_finding "$output" "$lost events lost ($(awk -v a="$lost" -v b="$samples" 'BEGIN { printf "%.1f", 100 * a / (a + b) }')%): the ring buffers overran" \
		"lower -F (now $rate), drain more often (--poll-ms, now 100), use bigger buffers (--mmap-pages, now 16, a power of two), or profile fewer processes"
	run -1 grep -q "unusable" <<< "$output"
	sp-stat --json "$S.raw" | jq -e '.unusable == false'
}

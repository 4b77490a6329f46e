#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Never lose a recording, never mislead (the rest of 091): the other files
# the tools write (--kallsyms-out, --per-thread) are put in place whole or
# not at all; a tool killed outright leaves no temporary; new files get
# the mode the umask gives; an input of which nothing could be read is a
# fatal error named for what it looks like, also when it is followed;
# sp-stat --system says whose answers it gives.
#
# 094-random.bin is 4096 random bytes, made with
#   python3 -c 'import random, sys; random.seed(94); sys.stdout.buffer.write(random.randbytes(4096))'

load helper

setup() {
	D=$BATS_TEST_TMPDIR/d
	mkdir -p "$D"
	PIDS=()
}

teardown() {
	[ -z "${umount_later:-}" ] || umount "$umount_later" 2>/dev/null || true
	[ -z "${C:-}" ] || kill -KILL "$C" 2>/dev/null || true
	kill_started
	[ -z "${OWN:-}" ] || rm -rf "$OWN"
	exec 7>&- || true
}

# small_fs: a tmpfs of two pages at $MNT, unmounted by the teardown.
small_fs() {
	MNT=$BATS_TEST_TMPDIR/small
	mkdir -p "$MNT"
	mount -t tmpfs -o size=8k tmpfs "$MNT"
	umount_later=$MNT
}

# threads_stream: a symbolized stream of two threads, $D/s.sym.
threads_stream() {
	sp-capture -q -F 999 -o "$D/s.raw" -- "$WORKLOADS/spin" -t 2 0.5
	sp-unwind -o "$D/s.unw" "$D/s.raw"
	sp-symbolize -o "$D/s.sym" "$D/s.unw"
	rm "$D/s.raw" "$D/s.unw"
}

# unnamed_temporary PID DIR: waits until the process holds an unnamed
# temporary (O_TMPFILE) in DIR, which /proc shows as "DIR/#INODE (deleted)".
unnamed_temporary() {
	local fd
	for _ in $(seq 200); do
		for fd in /proc/"$1"/fd/*; do
			[[ "$(readlink "$fd" 2>/dev/null)" == "$2/#"*" (deleted)" ]] && return 0
		done
		sleep 0.05
	done
	return 1
}

@test "sp-capture --kallsyms-out: the file it replaces is kept as FILE.old, the new one is whole" {
	echo "old kallsyms" > "$D/k.syms"
	cp "$D/k.syms" "$D/k.copy"
	cat /proc/kallsyms > "$BATS_TEST_TMPDIR/before"
	sp-capture -q -F 999 --kallsyms-out "$D/k.syms" -o "$D/rec.sps" -- "$WORKLOADS/spin" 0.3
	cat /proc/kallsyms > "$BATS_TEST_TMPDIR/after"
	cmp "$D/k.syms.old" "$D/k.copy"
	# Whole: the kernel's own, unless a module or a BPF program came or
	# went meanwhile; then at least every line ends.
	if cmp -s "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"; then
		cmp "$D/k.syms" "$BATS_TEST_TMPDIR/after"
	else
		[ "$(lines "$D/k.syms")" -gt 1000 ]
		[ "$(tail -c 1 "$D/k.syms" | od -An -c | tr -d ' ')" = '\n' ]
	fi
	only_files k.syms k.syms.old k.copy rec.sps
	# A new file leaves no .old.
	sp-capture -q -F 999 --kallsyms-out "$D/new.syms" -o "$D/rec.sps" -- "$WORKLOADS/spin" 0.3
	[ -s "$D/new.syms" ]
	[ ! -e "$D/new.syms.old" ]
}

@test "sp-capture --kallsyms-out: a write that fails leaves the old file as it was, and no temporary" {
	small_fs
	echo "old kallsyms" > "$MNT/k.syms"
	run sp-capture -q -F 999 --kallsyms-out "$MNT/k.syms" -o "$D/rec.sps" -- "$WORKLOADS/spin" 0.3
	[ "$status" -eq 1 ]
	[ "$output" = "sp-capture: cannot write the --kallsyms-out file '$MNT/k.syms': No space left on device" ]
	[ "$(cat "$MNT/k.syms")" = "old kallsyms" ]
	[ "$(ls -A "$MNT")" = k.syms ]
	# The recording is whole all the same.
	[ "$(summary "$D/rec.sps" samples)" -gt 0 ]
}

@test "sp-fold --per-thread: each file is put in place whole; a write that fails leaves the old ones" {
	threads_stream
	sp-fold --per-thread "$D/thr" -o /dev/null "$D/s.sym"
	n=0
	for f in "$D"/thr/*; do
		[[ "$f" == *.folded ]]
		tid=${f##*-}
		sp-fold --only-tid "${tid%.folded}" -o "$D/want" "$D/s.sym"
		cmp "$D/want" "$f"
		n=$((n + 1))
	done
	[ "$n" -eq 2 ]
	# Replaced in place, whole again.
	for f in "$D"/thr/*; do echo old > "$f"; done
	sp-fold --per-thread "$D/thr" -o /dev/null "$D/s.sym"
	for f in "$D"/thr/*; do
		tid=${f##*-}
		sp-fold --only-tid "${tid%.folded}" -o "$D/want" "$D/s.sym"
		cmp "$D/want" "$f"
	done
	[ "$(ls -A "$D/thr" | wc -l)" -eq 2 ]

	# A full file system: each old file takes one of its two pages.
	small_fs
	for f in "$D"/thr/*; do echo old > "$MNT/${f##*/}"; done
	run sp-fold --per-thread "$MNT" -o "$D/out.folded" "$D/s.sym"
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-fold: cannot write '$MNT/"*".folded': No space left on device" ]]
	for f in "$MNT"/*; do
		[ "$(cat "$f")" = old ]
	done
	[ "$(ls -A "$MNT")" = "$(ls -A "$D/thr")" ]
	# Nor was the output put in place.
	[ ! -e "$D/out.folded" ]
}

@test "a tool killed with SIGKILL while it writes leaves no temporary, and the old output as it was" {
	threads_stream
	keep out "$VECTORS/symbolized.sps"
	for cmd in "sp-cat:$VECTORS/raw.sps" "sp-unwind:$VECTORS/raw.sps" \
		   "sp-symbolize:$VECTORS/unwound.sps" "sp-fold:$D/s.sym" "sp-cat --from-json:$VECTORS/raw.jsonl"; do
		mkfifo "$D/p"
		${cmd%%:*} -o "$D/out" "$D/p" 2> /dev/null &
		C=$!
		exec 7> "$D/p"
		# Part of an input: the tool is left waiting for the rest.
		head -c 1500 "${cmd#*:}" >&7
		unnamed_temporary "$C" "$D"
		kill -KILL "$C"
		wait "$C" || true
		C=
		exec 7>&-
		rm "$D/p"
		cmp "$D/out" "$D/out.copy"
		only_files out out.copy s.sym
	done
}

@test "sp-capture killed with SIGKILL before its recording is in place: nothing new in the directory" {
	keep rec.sps "$VECTORS/raw.sps"
	start "$WORKLOADS/spin" 60
	# Stopped where the first records are written and the file is about to
	# take its name: what the directory and the process hold then, and a
	# SIGKILL.
	gdb -q -batch -ex 'break sp_output_commit' -ex run \
		-ex "shell ls -A '$D' > '$BATS_TEST_TMPDIR/listing'" \
		-ex "python import gdb, os; p = gdb.selected_inferior().pid; d = '/proc/%d/fd/' % p; open('$BATS_TEST_TMPDIR/fds', 'w').write(''.join('%s %d\n' % (os.readlink(d + f), os.stat(d + f).st_size) for f in os.listdir(d)))" \
		-ex 'python os.kill(gdb.selected_inferior().pid, 9)' -ex continue \
		--args "$(command -v sp-capture)" -q -F 999 -o "$D/rec.sps" -p "$P" \
		> "$BATS_TEST_TMPDIR/gdb.out" 2>&1 || true
	grep -q 'Breakpoint 1, sp_output_commit' "$BATS_TEST_TMPDIR/gdb.out"
	# (What gdb says of the killed process varies from run to run; that it
	# never put its file in place is what the listing below shows.)
	# The recording had begun, in a file without a name.
	run grep "^$D/#[0-9]* (deleted) " "$BATS_TEST_TMPDIR/fds"
	[ "$status" -eq 0 ]
	[ "${output##* }" -gt 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/listing" | tr '\n' ' ')" = "rec.sps rec.sps.copy " ]
	only_files rec.sps rec.sps.copy
	cmp "$D/rec.sps" "$D/rec.sps.copy"
}

@test "sp-capture killed with SIGKILL while recording: the recording so far is in place, the old one kept as FILE.old" {
	keep rec.sps "$VECTORS/raw.sps"
	start "$WORKLOADS/spin" 60
	sp-capture -q -F 999 -o "$D/rec.sps" -p "$P" &
	C=$!
	for i in $(seq 300); do
		[ -e "$D/rec.sps.old" ] && break
		sleep 0.1
	done
	sleep 0.5
	kill -KILL "$C"
	wait "$C" || true
	C=
	only_files rec.sps rec.sps.old rec.sps.copy
	cmp "$D/rec.sps.old" "$D/rec.sps.copy"
	# Cut short, but what is there is a recording of the target.
	run --separate-stderr sp-cat -t header "$D/rec.sps"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == *'"stage":"raw"'*'"name":"sp-capture"'* ]]
	[[ "$stderr" == *"cut short"* || "$stderr" == *"inside a record"* ]]
}

@test "a new file gets the mode open(O_CREAT, 0666) gives under the umask; a replaced one keeps its own" {
	threads_stream
	for m in 022 077 002 027; do
		(
			umask "$m"
			touch "$D/ref.$m"
			sp-cat -o "$D/cat.$m" "$VECTORS/raw.sps"
			sp-cat --from-json -o "$D/bin.$m" "$VECTORS/raw.jsonl"
			sp-capture -q -F 999 --kallsyms-out "$D/ks.$m" -o "$D/cap.$m" -- "$WORKLOADS/spin" 0.2
			sp-fold --per-thread "$D/thr.$m" -o "$D/fold.$m" "$D/s.sym"
		)
		want=$(stat -c %a "$D/ref.$m")
		for f in "$D/cat.$m" "$D/bin.$m" "$D/ks.$m" "$D/cap.$m" "$D/fold.$m" "$D/thr.$m"/*; do
			[ "$(stat -c %a "$f")" = "$want" ]
		done
	done
	[ "$(stat -c %a "$D/cat.077")" = 600 ]
	[ "$(stat -c %a "$D/cat.002")" = 664 ]
	# A replaced file keeps its mode, whatever the umask.
	chmod 0640 "$D/cat.022" "$D/cap.022"
	(umask 077; sp-cat -o "$D/cat.022" "$VECTORS/raw.sps")
	(umask 000; sp-capture -q -F 999 -o "$D/cap.022" -- "$WORKLOADS/spin" 0.2)
	[ "$(stat -c %a "$D/cat.022")" = 640 ]
	[ "$(stat -c %a "$D/cap.022")" = 640 ]
}

@test "as an unprivileged user in a directory of its own: files in place, theirs, with their modes; a kill leaves nothing" {
	OWN=$(shared_tmpdir)
	d=$OWN/own
	mkdir "$d"
	cp "$VECTORS/raw.sps" "$d/rec.sps"
	cp "$VECTORS/raw.sps" "$BATS_TEST_TMPDIR/rec.copy"
	chown -R 65534:65534 "$d"
	chmod 0755 "$d"
	run as_nobody sh -c "umask 022; sp-capture -q -F 999 -o '$d/rec.sps' -- '$WORKLOADS/spin' 0.3"
	[ "$status" -eq 0 ]
	cmp "$d/rec.sps.old" "$BATS_TEST_TMPDIR/rec.copy"
	[ "$(stat -c '%U %a' "$d/rec.sps")" = "nobody 644" ]
	[ "$(summary "$d/rec.sps" samples)" -gt 0 ]
	run as_nobody sh -c "umask 077; sp-cat -o '$d/j.txt' '$d/rec.sps' && sp-cat -o '$d/j.txt' '$d/rec.sps'"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%U %a' "$d/j.txt")" = "nobody 600" ]
	cp "$d/j.txt" "$BATS_TEST_TMPDIR/j.copy"
	mkfifo "$d/p"
	chown 65534:65534 "$d/p"
	# setpriv itself, not as_nobody: a function run in the background
	# would be a subshell, and $! its pid.
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		sp-cat -o "$d/j.txt" "$d/p" 2> /dev/null &
	C=$!
	exec 7> "$d/p"
	head -c 1500 "$VECTORS/raw.sps" >&7
	unnamed_temporary "$C" "$d"
	kill -KILL "$C"
	wait "$C" || true
	C=
	exec 7>&-
	[ "$(ls -A "$d" | sort | tr '\n' ' ')" = "j.txt p rec.sps rec.sps.old " ]
	cmp "$d/j.txt" "$BATS_TEST_TMPDIR/j.copy"
}

@test "where an unnamed temporary cannot be linked in (no /proc), a named one does the job and is removed" {
	# The sanitizer's runtime reads /proc/self/maps before main(): it
	# cannot start where this test hides /proc.
	[[ "$SP_BUILD" != */san ]] || skip "the sanitizer build cannot run without /proc"
	keep out.sps "$VECTORS/unwound.sps"
	# Without /proc, /proc/self/fd cannot name the unnamed temporary.
	run unshare -m sh -c "mount -t tmpfs none /proc && umask 027 && sp-cat -o '$D/j.txt' '$VECTORS/raw.sps'"
	[ "$status" -eq 0 ]
	[ "$(stat -c %a "$D/j.txt")" = 640 ]
	cmp "$D/j.txt" "$VECTORS/raw.jsonl"
	run unshare -m sh -c "mount -t tmpfs none /proc && sp-unwind -o '$D/out.sps' '$VECTORS/unwound.sps'"
	[ "$status" -eq 2 ]
	cmp "$D/out.sps" "$D/out.sps.copy"
	only_files j.txt out.sps out.sps.copy
	# Ended by SIGTERM while it writes: the named temporary is removed.
	mkfifo "$D/p"
	unshare -m sh -c "mount -t tmpfs none /proc && exec sp-cat -o '$D/out.sps' '$D/p'" 2> /dev/null &
	C=$!
	exec 7> "$D/p"
	head -c 1500 "$VECTORS/raw.sps" >&7
	for i in $(seq 200); do
		ls -A "$D" | grep -q '^\.out\.sps\.' && break
		sleep 0.05
	done
	ls -A "$D" | grep -q '^\.out\.sps\.'
	kill -TERM "$C"
	wait "$C" || true
	C=
	exec 7>&-
	rm "$D/p"
	only_files j.txt out.sps out.sps.copy
	cmp "$D/out.sps" "$D/out.sps.copy"
}

@test "random bytes: nothing was read, so exit 2 with what they look like, from every tool" {
	R=$TOP/tests/094-random.bin
	for t in sp-cat sp-unwind sp-symbolize sp-fold sp-stat; do
		run "$t" "$R"
		[ "$status" -eq 2 ]
		[ "$output" = "$t: '$R' is not a stackpulse stream: it begins with bytes of no kind known here (cf 2f fb 8b 93 12 bc 2e ...), where a stream begins with its header record" ]
		run bash -c "cat '$R' | $t"
		[ "$status" -eq 2 ]
		[ "$output" = "$t: standard input is not a stackpulse stream: it begins with bytes of no kind known here (cf 2f fb 8b 93 12 bc 2e ...), where a stream begins with its header record" ]
	done
	# Whatever the bytes: one line saying what the input is, exit 2.
	for i in 1 2 3 4 5; do
		head -c 4096 /dev/urandom > "$D/rand"
		for t in sp-cat sp-unwind sp-symbolize sp-fold sp-stat; do
			run "$t" "$D/rand"
			[ "$status" -eq 2 ]
			[ "${#lines[@]}" -eq 1 ]
			[[ "$output" == "$t: '$D/rand' is not a stackpulse stream: "* ||
			   "$output" == "$t: '$D/rand' begins as a stackpulse stream does, but not one record of it can be read: byte offset 0, record 0: "* ]]
		done
	done
	# A stream's first byte, then garbage: named so.
	{ printf '\x83'; head -c 100 "$R"; } > "$D/map"
	run sp-unwind "$D/map"
	[ "$status" -eq 2 ]
	[[ "$output" == "sp-unwind: '$D/map' begins as a stackpulse stream does, but not one record of it can be read: byte offset 0, record 0: "* ]]
	# Nothing was written where an output was asked for.
	keep out.sps "$VECTORS/unwound.sps"
	run sp-symbolize -o "$D/out.sps" "$R"
	[ "$status" -eq 2 ]
	cmp "$D/out.sps" "$D/out.sps.copy"
	# A real stream cut short is still a partial result.
	head -c 2000 "$VECTORS/raw.sps" > "$D/cut.sps"
	run sp-cat "$D/cut.sps"
	[ "$status" -eq 1 ]
}

@test "a followed path that holds perf.data or gzip is named as when read, exit 2, at start or once it appears" {
	perf record -q -o "$D/perf.data" -- true 2> /dev/null
	cp "$VECTORS/raw.sps" "$D/x.sps"
	gzip -k "$D/x.sps"
	PERF="is a perf.data file (from perf record), not a stackpulse stream: record with sp-capture instead (there is no converter from perf.data)"
	for t in "sp-cat -f" "sp-unwind --follow" "sp-symbolize -f" "sp-fold --follow"; do
		run $t "$D/perf.data"
		[ "$status" -eq 2 ]
		[ "$output" = "${t%% *}: '$D/perf.data' $PERF" ]
		run $t "$D/x.sps.gz"
		[ "$status" -eq 2 ]
		[ "$output" = "${t%% *}: '$D/x.sps.gz' is gzip-compressed: zcat $D/x.sps.gz | ${t%% *}" ]
		run $t "$D"
		[ "$status" -eq 2 ]
		[ "$output" = "${t%% *}: '$D' is a directory, not a stream" ]
	done
	# A path that appears later is checked once it has bytes.
	for t in "sp-cat -f" "sp-unwind --follow" "sp-symbolize -f" "sp-fold --follow"; do
		rm -f "$D/later"
		$t "$D/later" > /dev/null 2> "$D/err" &
		C=$!
		sleep 0.3
		cp "$D/perf.data" "$D/later"
		s=0
		wait "$C" || s=$?
		C=
		[ "$s" -eq 2 ]
		[ "$(cat "$D/err")" = "${t%% *}: waiting for '$D/later' to appear
${t%% *}: '$D/later' $PERF" ]
	done
}

@test "a followed input that is the output is refused, exit 3, before anything is written" {
	keep x.sps "$VECTORS/raw.sps"
	for t in "sp-cat -f" "sp-unwind --follow" "sp-symbolize -f" "sp-fold --follow"; do
		run bash -c "cd '$D' && $t x.sps -o x.sps"
		[ "$status" -eq 3 ]
		[ "$output" = "${t%% *}: the output 'x.sps' is the same file as the input 'x.sps': write to another file" ]
		# A path that names no file yet is refused as well: the
		# output, put there at exit, would replace the recording the
		# follower waits for.  Either order, any spelling.
		run bash -c "cd '$D' && $t new.sps -o ./new.sps"
		[ "$status" -eq 3 ]
		[ "$output" = "${t%% *}: the output './new.sps' is the same file as the input 'new.sps': write to another file" ]
		run bash -c "cd '$D' && $t -o '$D/new.sps' new.sps"
		[ "$status" -eq 3 ]
		run bash -c "cd '$D' && $t x.sps >> x.sps"
		[ "$status" -eq 3 ]
		cmp "$D/x.sps" "$D/x.sps.copy"
		only_files x.sps x.sps.copy
	done
	# sp-unwind refuses before it opens anything for writing.  (The leak
	# checker of the sanitizer build cannot run under ptrace.)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run strace -f -e trace=openat -o "$D/../trace" sp-unwind --follow "$D/x.sps" -o "$D/x.sps"
	[ "$status" -eq 3 ]
	run grep -E 'O_WRONLY|O_RDWR|O_TMPFILE' "$D/../trace"
	[ "$status" -eq 1 ]
}

@test "sp-stat --system says This host, as text and as JSON, as root and as a user" {
	host="This host: $(uname -n), kernel $(uname -r), $(uname -m)"
	run sp-stat --system
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$host" ]
	run as_nobody sp-stat --system
	[ "${lines[0]}" = "$host" ]
	sp-stat --system --json | jq -e --arg h "$(uname -n)" --arg k "$(uname -r)" --arg a "$(uname -m)" \
		'.this_host == { hostname: $h, kernel: $k, arch: $a }'
	as_nobody sp-stat --system --json | jq -e --arg h "$(uname -n)" '.this_host.hostname == $h'
	# A stream is no part of it.
	run sp-stat --system "$VECTORS/raw.sps"
	[ "$status" -eq 3 ]
	[[ "$output" == "sp-stat: --system reads no stream"* ]]
}

@test "sp-stat: a report without one record shows no blank host fields" {
	run sp-stat < /dev/null
	[[ "${lines[0]}" = "recording: no stream, not one record" ]]
	run grep -E 'host *,|kernel *,|host  ' <<< "$output"
	[ "$status" -eq 1 ]
	# A host without its names says unknown, never a blank.
	sp-cat -t header "$VECTORS/raw.sps" | jq -c 'del(.host.hostname, .host.kernel, .host.arch)' > "$D/h.jsonl"
	sp-cat --from-json -o "$D/h.sps" "$D/h.jsonl"
	run sp-stat "$D/h.sps"
	[[ "$output" == *"  host unknown, kernel unknown, unknown"* ]]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-stat's diagnosis of what was recorded, for the cases of runtimes and
# targets: a JIT runtime run without a perf map (Node, Java), a thread id
# given to sp-capture -p, a container whose files are not found where the
# stream is unwound, a launched shell that runs nothing sampled.  Each
# test asserts the exact advice, and that the tool of the pipeline that
# warns of the case uses the same words.

load helper

setup_file() {
	javac -d "$BATS_FILE_TMPDIR" "$TOP/tests/workloads/Hot.java"
}

setup() {
	S=$BATS_TEST_TMPDIR/rec
	PIDS=()
	U= C=
}

teardown() {
	kill_started
	# The container's init ignores every signal from outside but SIGKILL.
	[ -z "$C" ] || kill -KILL "$C" 2>/dev/null || true
	[ -z "$U" ] || wait "$U" 2>/dev/null || true
}

# has_finding OUTPUT WHAT FIX: succeeds when the report lists this finding.
has_finding() {
	local want="  - $2"$'\n'"    -> $3"
	[[ "$1" == *"$want"* ]] && return 0
	printf 'wanted:\n%s\nin:\n%s\n' "$want" "$1" >&2
	return 1
}

# first_finding OUTPUT: the first finding of a text report, its two lines.
first_finding() {
	awk '/^diagnosis:/ { d = 1; next } d && n < 2 { print; n++ }' <<< "$1"
}

# share A B: 100 * A / B with one decimal, as the findings print it.
share() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'
}

# jit_counts FILE KEY: "UNNAMED FRAMES" of runtime KEY's JIT frames.
jit_counts() {
	local -
	set -o pipefail
	sp-stat --json "$1" | jq -r --arg k "$2" \
		'.runtimes[] | select(.runtime == $k) | "\(.jit_frames_unnamed) \(.jit_frames)"'
}

# pipeline OUT CMD...: records a launched command into OUT.raw, unwinds
# it into OUT.unw and symbolizes it into OUT, sp-symbolize's standard
# error in OUT.err.  It runs in the test's directory, where a runtime
# may leave files.
pipeline() {
	local out=$1
	shift
	(cd "$BATS_TEST_TMPDIR" && sp-capture -q -F 999 -o "$out.raw" -- "$@" > /dev/null)
	# Stacks that end in JIT code are sp-stat's to explain.
	sp-unwind --allow-empty -o "$out.unw" "$out.raw" 2> /dev/null
	sp-symbolize -o "$out" "$out.unw" 2> "$out.err"
	forget_perf_maps "$out.raw"
}

@test "node without --perf-basic-prof: its JavaScript functions have no names, how to get them" {
	pipeline "$S" node "$TOP/tests/workloads/hot.js" 2
	read -r unnamed jit < <(jit_counts "$S" node)
	[ "$jit" -gt 0 ]
	[ "$unnamed" -eq "$jit" ]
	what="$unnamed of $jit JIT frames ($(share "$unnamed" "$jit")%) of Node.js (V8) have no name: node ran without --perf-basic-prof or --perf-prof, so it wrote no perf map or jitdump to name its JavaScript functions"
	fix="run node with --perf-basic-prof (the names in /tmp/perf-PID.map) or --perf-prof (a jitdump, which sp-capture carries in the stream; add --perf-prof-unwinding-info), and --interpreted-frames-native-stack so that interpreted functions have frames of their own"
	run -0 sp-stat "$S"
	has_finding "$output" "$what" "$fix"
	# Not the moved-map finding: node was never asked for a map.
	run -1 grep -q "although it wrote a perf map" <<< "$output"
	# sp-symbolize's warning is the same finding.
	[ "$(cat "$S.err")" = "sp-symbolize: warning: $what; $fix" ]
}

@test "java without a perf map or -XX:+PreserveFramePointer: a map for the names, frame pointers for the stacks" {
	pipeline "$S" java -cp "$BATS_FILE_TMPDIR" Hot 2
	read -r unnamed jit < <(jit_counts "$S" jvm)
	[ "$jit" -gt 0 ]
	[ "$unnamed" -eq "$jit" ]
	what="$unnamed of $jit JIT frames ($(share "$unnamed" "$jit")%) of Java (JVM) have no name: the JVM wrote no perf map to name its compiled Java methods (it writes none unless asked)"
	fix="have the JVM write /tmp/perf-PID.map: on Java 17 or later run java with -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, or run jcmd PID Compiler.perfmap while it works; before 17, load a perf map agent (perf-map-agent); and add -XX:+PreserveFramePointer, without which stacks stop in compiled code"
	run -0 sp-stat "$S"
	has_finding "$output" "$what" "$fix"
	[ "$(cat "$S.err")" = "sp-symbolize: warning: $what; $fix" ]
	# With the map asked for, the JIT code is named and the finding is gone.
	pipeline "$S.map" java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit \
		-cp "$BATS_FILE_TMPDIR" Hot 2
	run -0 sp-stat "$S.map"
	run -1 grep -q "JIT frames (.*) of Java (JVM) have no name" <<< "$output"
	[ ! -s "$S.map.err" ]
}

@test "a thread id given to -p: the whole process is sampled, said by sp-capture and sp-stat alike" {
	start "$WORKLOADS/spin" -t 3 10
	t=$(ls "/proc/$P/task" | grep -vx "$P" | head -n 1)
	[ -n "$t" ]
	what="-p $t is a thread of process $P, not a process: the whole process $P is sampled, every thread of it, as perf record -p does"
	fix="to sample that thread alone give sp-capture -t $t; to sample the process, name it: -p $P"
	run --separate-stderr sp-capture -q -p "$t" --duration 1 -o "$S.raw"
	[ "$status" -eq 0 ]
	[ "$stderr" = "sp-capture: $what; $fix" ]
	# As perf record -p does: every thread of the process, not the one given.
	[ "$(jqs "$S.raw" 'select(.t=="sample") | .tid' | sort -u | wc -l)" -eq 3 ]
	for f in "$S.raw" "$S.unw"; do
		[ "$f" = "$S.raw" ] || sp-unwind -o "$f" "$S.raw"
		run -0 sp-stat "$f"
		has_finding "$output" "$what" "$fix"
	done
	# Given the process, nothing to say about it; given --pid=TID, the same.
	sp-capture -q --pid="$P" --duration 0.3 -o "$S.p"
	run -0 sp-stat "$S.p"
	run -1 grep -q "is a thread of process" <<< "$output"
	sp-capture -q --pid="$t" --duration 0.3 -o "$S.t" 2> /dev/null
	run -0 sp-stat "$S.t"
	has_finding "$output" "$what" "$fix"
}

# box_deep SECONDS: the deep workload, 30 frames deep, from a tmpfs only
# its own mount namespace has, its host pid in C; at the same path on
# the host, another program (spin), whose build-id differs.
box_deep() {
	local box=$BATS_TEST_TMPDIR/box i
	mkdir -p "$box"
	cp "$WORKLOADS/spin" "$box/deep"
	unshare --mount --pid --fork --mount-proc sh -c "mount -t tmpfs none '$box' &&
		cp '$WORKLOADS/deep' '$box/deep' && exec '$box/deep' -d 30 $1" &
	U=$!
	for i in $(seq 100); do
		C=$(pgrep -P "$U" || true)
		case $(cat "/proc/$C/comm" 2>/dev/null) in deep*) return 0 ;; esac
		sleep 0.05
	done
	return 1
}

@test "a container gone before unwinding: its files are in its own root, --archive or --root" {
	box_deep 4
	(cd "$BATS_TEST_TMPDIR" && sp-capture -q -p "$C" -F 999 --duration 1 --archive arch -o "$S.arch")
	sp-capture -q -p "$C" -F 999 --duration 1 -o "$S.raw"
	wait "$U" || true
	C= U=
	# The host's file at the container's path is another program: refused.
	for f in raw arch; do
		sp-unwind --allow-empty -o "$S.$f.unw" "$S.$f" 2> "$S.$f.err"
		sp-symbolize --allow-empty -o "$S.$f.sym" "$S.$f.unw" 2> /dev/null
	done
	user=$(sp-cat -t unwind "$S.raw.unw" | jq .user_samples)
	ended=$(($(unwind_count "$S.raw.unw" build_id_mismatch) + $(unwind_count "$S.raw.unw" missing_module)))
	[ $((ended * 10)) -ge $((user * 9)) ]
	what="$ended of $user stacks ($(share "$ended" "$user")%) are of processes in a container (another mount namespace) and end where a module file was not found, or was another file than the one recorded"
	fix="the files are in the container's own root, not at the host's paths: unwind and symbolize while the container runs (its files are read through /proc/PID/root), or record with sp-capture --archive DIR, which keeps them, and give sp-unwind and sp-symbolize --archive DIR; or give them --root DIR, the container's root filesystem"
	for f in "$S.raw.unw" "$S.raw.sym"; do
		run -0 sp-stat "$f"
		has_finding "$output" "$what" "$fix"
		# The stacks that end early have the container's fix, not a rebuild's.
		[[ "$(first_finding "$output")" == *" do not reach their thread's entry, most because "*$'\n'"    -> $fix" ]]
	done
	# sp-unwind warns of them with the same fix.
	[ "$(lines "$S.raw.err")" -eq 1 ]
	[[ "$(cat "$S.raw.err")" == "sp-unwind: "*" of $user stacks ("*"%) do not reach their thread's entry, most because "*"; $fix" ]]
	# Recorded with --archive: the archive is the fix, and it works.
	user=$(sp-cat -t unwind "$S.arch.unw" | jq .user_samples)
	ended=$(($(unwind_count "$S.arch.unw" build_id_mismatch) + $(unwind_count "$S.arch.unw" missing_module)))
	run -0 sp-stat "$S.arch.sym"
	has_finding "$output" "$ended of $user stacks ($(share "$ended" "$user")%) are of processes in a container (another mount namespace) and end where a module file was not found, or was another file than the one recorded" \
		"the recording was archived with sp-capture --archive, which kept the container's files: give sp-unwind and sp-symbolize --archive arch"
	sp-unwind --archive "$BATS_TEST_TMPDIR/arch" -o "$S.fixed" "$S.arch"
	[ "$(unwind_count "$S.fixed" build_id_mismatch)" -eq 0 ]
	run -0 sp-stat "$S.fixed"
	run -1 grep -q "processes in a container" <<< "$output"
	# A recording of no container has no such finding.
	sp-capture -q -o "$S.host" -- "$WORKLOADS/spin" 0.3
	run -0 sp-stat "$S.host"
	run -1 grep -q "processes in a container" <<< "$output"
}

# no_secs TEXT: TEXT with the seconds of "in the N s recorded" left out,
# which sp-capture measures on its clock and sp-stat from the summary.
no_secs() {
	sed 's/ in the [0-9.]* s recorded/ in the _ s recorded/' <<< "$1"
}

@test "a launched shell that execs nothing sampled: the cause and the fix, exit 2 unless --allow-empty" {
	# At 999 Hz the shell's and sleep's start-up is sampled a few times
	# in some runs, in none in others: both are no profile.
	for i in 1 2 3; do
		run --separate-stderr sp-capture -q -o "$S.raw" -- sh -c 'sleep 1'
		[ "$status" -eq 2 ]
		samples=$(summary "$S.raw" samples)
		[ "$samples" -lt 10 ]
		[[ "$stderr" == "sp-capture: "*"used "*"no CPU in the "*" s recorded (a program that only sleeps or waits, such as a shell waiting for a child that sleeps); launch the program that does the work (sp-capture -- PROGRAM, or exec it from a wrapper: sh -c 'exec PROGRAM'), or attach to it with -p PID while it works (or give --allow-empty)" ]]
		if [ "$samples" -eq 0 ]; then
			[[ "$stderr" == "sp-capture: no samples: the launched command used no CPU "* ]]
		else
			s=s
			[ "$samples" -gt 1 ] || s=
			[[ "$stderr" == "sp-capture: only $samples sample$s: the launched command used almost no CPU "* ]]
		fi
		# sp-stat says the same, first, as the reason the recording is unusable.
		warned=${stderr#sp-capture: }
		warned=${warned% (or give --allow-empty)}
		run -0 sp-stat "$S.raw"
		first=$(first_finding "$output")
		[ "$(no_secs "$first")" = "$(no_secs "  - the recording is unusable: ${warned%%; launch the program*}"$'\n'"    -> launch the program${warned#*; launch the program}")" ]
		run --separate-stderr sp-stat --check "$S.raw"
		[ "$status" -eq 4 ]
	done
	# Best effort asked for: exit 0, the finding said without the offer.
	run --separate-stderr sp-capture -q --allow-empty -o "$S.raw" -- sh -c 'sleep 1'
	[ "$status" -eq 0 ]
	[[ "$stderr" == "sp-capture: "*"; launch the program that does the work "*"while it works" ]]
	# The program itself, exec'd by the shell, is sampled.
	run --separate-stderr sp-capture -q -o "$S.exec" -- sh -c "exec '$WORKLOADS/spin' 0.5"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(summary "$S.exec" samples)" -gt 100 ]
}

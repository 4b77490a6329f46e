#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture -a and -C: system-wide recording, idle and kernel-thread
# samples, and sp-fold --by-process and --by-thread.

load helper

setup() {
	PIDS=()
	RESTORE_PARANOID=
}

teardown() {
	kill_started
	if [ -n "$RESTORE_PARANOID" ]; then
		sysctl -q -w kernel.perf_event_paranoid="$RESTORE_PARANOID"
	fi
}

# One -a recording of a second with the reference workload running beside
# it, through the whole pipeline, shared by the tests.
setup_file() {
	export A=$BATS_FILE_TMPDIR/all.sps
	"$WORKLOADS/spin" 4 > /dev/null 2>&1 &
	local spin=$!
	sleep 0.2
	sp-capture -q -a --duration 1 -o "$A.raw"
	kill "$spin" 2>/dev/null || true
	wait "$spin" 2>/dev/null || true
	sp-unwind -o "$A.unw" "$A.raw"
	sp-symbolize -o "$A" "$A.unw" 2> /dev/null
	sp-fold -o "$A.folded" "$A"
}

# samples_of PID FILE: how many sample records of pid PID a stream holds.
samples_of() {
	local -
	set -o pipefail
	sp-cat -t sample "$2" | grep -c "^{\"t\":\"sample\",\"pid\":$1," || true
}

@test "-a: a busy process beside the recording is under its name, nothing skipped" {
	# The kernel gives a task that has already let go of its pid (it is
	# exiting) pid -1: such samples are skipped, few, never the idle task's.
	[ $(($(summary "$A.raw" skipped_no_pid) * 100)) -le "$(summary "$A.raw" samples)" ]
	[ "$(summary "$A.raw" skipped_no_frames)" -eq 0 ]
	run -0 sp-cat -t header "$A.raw"
	[[ "$output" == *'"all_cpus":true'* ]]
	[[ "$output" == *'"version":[1,6]'* ]]
	# Every process of /proc has its process record; kernel threads are marked.
	run -0 sp-cat -t process "$A.raw"
	[ "${#lines[@]}" -ge 20 ]
	[[ "$output" == *'"pid":0,'*'"comm":"swapper"'* ]]
	[[ "$output" == *'"kernel_thread":true'* ]]
	# The workload's samples fold under its name, down to its own frames.
	grep '^spin;' "$A.folded" | grep ';leaf_compute' > "$BATS_TEST_TMPDIR/spin"
	[ "$(weight "$BATS_TEST_TMPDIR/spin")" -ge 20 ]
}

@test "-a: idle samples, if any, fold to swapper;[idle] and are never lost or skipped" {
	local idle
	idle=$(samples_of 0 "$A.raw")
	run -0 sp-fold --pid "$A"
	printf '%s\n' "${lines[@]}" | { grep '^swapper-0;' || true; } > "$BATS_TEST_TMPDIR/idle"
	[ "$(weight "$BATS_TEST_TMPDIR/idle")" -eq "$idle" ]
	run -1 grep -v '^swapper-0;\[idle\] [0-9]*$' "$BATS_TEST_TMPDIR/idle"
	# The folded lines add up to every sample recorded.
	[ "$(weight "$A.folded")" -eq "$(summary "$A.raw" samples)" ]
}

@test "sp-top --once and sp-fold --top read an -a stream" {
	run -0 sp-top --once "$A"
	[[ "${lines[0]}" == *"processes"* ]]
	run -0 sp-fold --top 5 "$A"
	[ "${#lines[@]}" -ge 3 ]
}

@test "-a: a process started during the recording is named, with its mappings" {
	local raw=$BATS_TEST_TMPDIR/late.sps.raw
	# A lower rate: every CPU is recorded, and the sanitizer build drains slowly.
	sp-capture -q -a -F 299 --duration 3 -o "$raw" &
	local cap=$!
	# Started only once the recording has begun: the header is in the file.
	for ((i = 0; i < 100; i++)); do
		[ -s "$raw" ] && break
		sleep 0.05
	done
	[ -s "$raw" ]
	start "$WORKLOADS/deep" 2
	local late=$P
	wait "$cap"
	# No process record: the kernel's fork, exec and map records name it.
	run -0 sp-cat -t process "$raw"
	run -1 grep -q "\"pid\":$late," <<< "$output"
	run -0 sp-cat -t exec "$raw"
	[[ "$output" == *"\"pid\":$late,"*'"comm":"deep"'* ]]
	run -0 sp-cat -t map "$raw"
	printf '%s\n' "${lines[@]}" | grep "\"pid\":$late," | grep -q '/deep"'
	sp-unwind "$raw" | sp-symbolize 2> /dev/null | sp-fold --pid > "$BATS_TEST_TMPDIR/folded"
	grep "^deep-$late;" "$BATS_TEST_TMPDIR/folded" | grep ';deep_recurse;' > "$BATS_TEST_TMPDIR/deep"
	[ "$(weight "$BATS_TEST_TMPDIR/deep")" -ge 5 ]
}

@test "-C 0 records CPU 0 only; -C alone records every process" {
	local raw=$BATS_TEST_TMPDIR/cpu0.sps
	start "$WORKLOADS/spin" -t 2 3
	sp-capture -q -C 0 --duration 0.5 -o "$raw"
	run -0 sp-cat -t header "$raw"
	[[ "$output" == *'"all_cpus":true,"cpu":[0]'* ]]
	run -0 sp-cat -t sample "$raw"
	[ "${#lines[@]}" -ge 20 ]
	run -0 awk '!/"cpu":0,/' <<< "$output"
	[ -z "$output" ]
}

@test "idle and kernel-thread samples fold to [idle] and [kernel] (a stream made by hand)" {
	local -
	set -o pipefail
	local j=$BATS_TEST_TMPDIR/made.jsonl s=$BATS_TEST_TMPDIR/made.sps
	sp-cat "$A" | awk '
		/"t":"header"/ { print; next }
		/"t":"summary"/ { summary = $0; next }
		END {
			print "{\"t\":\"process\",\"pid\":0,\"comm\":\"swapper\",\"kernel_thread\":true}"
			print "{\"t\":\"process\",\"pid\":2,\"comm\":\"kthreadd\",\"kernel_thread\":true}"
			print "{\"t\":\"fork\",\"pid\":77,\"ppid\":2,\"tid\":77,\"ptid\":2,\"time\":5}"
			print "{\"t\":\"comm\",\"pid\":77,\"tid\":77,\"comm\":\"kworker/0:9\",\"time\":6}"
			for (i = 0; i < 3; i++)
				print "{\"t\":\"sample\",\"pid\":0,\"tid\":0,\"time\":" 10 + i ",\"cpu\":1,\"period\":1}"
			for (i = 0; i < 2; i++)
				print "{\"t\":\"sample\",\"pid\":77,\"tid\":77,\"time\":" 20 + i ",\"cpu\":0,\"period\":1}"
			print summary
		}' > "$j"
	sps_from_json "$j" "$s"
	run -0 sp-fold "$s"
	[ "${lines[0]}" = "kworker/0:9;[kernel] 2" ]
	[ "${lines[1]}" = "swapper;[idle] 3" ]
	[ "${#lines[@]}" -eq 2 ]
	# Without the process record, pid 0 is still the idle task.
	grep -v '"pid":0,"comm":"swapper"' "$j" > "$j.2"
	sps_from_json "$j.2" "$s.2"
	run -0 sp-fold --only-pid 0 "$s.2"
	[ "$output" = "swapper;[idle] 3" ]
	run -0 sp-top --once "$s"
}

@test "--by-thread: the process name, then each thread's name (a stream made by hand)" {
	local -
	set -o pipefail
	local j=$BATS_TEST_TMPDIR/threads.jsonl s=$BATS_TEST_TMPDIR/threads.sps
	sp-cat "$A" | awk '
		/"t":"header"/ { print; next }
		/"t":"summary"/ { summary = $0; next }
		END {
			print "{\"t\":\"process\",\"pid\":500,\"comm\":\"srv\"}"
			print "{\"t\":\"thread\",\"pid\":500,\"tid\":501,\"comm\":\"io\"}"
			print "{\"t\":\"thread\",\"pid\":500,\"tid\":502,\"comm\":\"io\"}"
			print "{\"t\":\"thread\",\"pid\":500,\"tid\":503,\"comm\":\"cpu\"}"
			print "{\"t\":\"process\",\"pid\":600,\"comm\":\"srv\"}"
			print "{\"t\":\"thread\",\"pid\":600,\"tid\":601,\"comm\":\"io\"}"
			t = 1
			split("501 502 503 503 601", tids, " ")
			for (i = 1; i <= 5; i++)
				print "{\"t\":\"sample\",\"pid\":" (tids[i] < 600 ? 500 : 600) ",\"tid\":" tids[i] ",\"time\":" t++ ",\"period\":1}"
			print summary
		}' > "$j"
	sps_from_json "$j" "$s"
	run -0 sp-fold --by-thread "$s"
	[ "${lines[0]}" = "srv;cpu;[no frames] 2" ]
	[ "${lines[1]}" = "srv;io;[no frames] 3" ]
	[ "${#lines[@]}" -eq 2 ]
	run -0 sp-fold --by-process "$s"
	[ "$output" = "srv;[no frames] 5" ]
}

@test "--by-process merges two processes of the same name; --pid keeps them apart" {
	local raw=$BATS_TEST_TMPDIR/two.sps
	start "$WORKLOADS/spin" 3
	local p1=$P
	start "$WORKLOADS/spin" 3
	local p2=$P
	sp-capture -q -p "$p1,$p2" --duration 0.6 -o "$raw.raw"
	sp-unwind "$raw.raw" | sp-symbolize -o "$raw" 2> /dev/null
	sp-fold --pid "$raw" > "$BATS_TEST_TMPDIR/pid"
	grep -q "^spin-$p1;" "$BATS_TEST_TMPDIR/pid"
	grep -q "^spin-$p2;" "$BATS_TEST_TMPDIR/pid"
	sp-fold --by-process "$raw" > "$BATS_TEST_TMPDIR/proc"
	run -0 cut -d';' -f1 "$BATS_TEST_TMPDIR/proc"
	[ "$(printf '%s\n' "${lines[@]}" | sort -u)" = spin ]
	[ "$(weight "$BATS_TEST_TMPDIR/proc")" -eq "$(weight "$BATS_TEST_TMPDIR/pid")" ]
	# With two processes in one root, a stack has the weight of both.
	[ "$(wc -l < "$BATS_TEST_TMPDIR/proc")" -lt "$(wc -l < "$BATS_TEST_TMPDIR/pid")" ]
	sp-fold --by-thread "$raw" > "$BATS_TEST_TMPDIR/thread"
	grep -q '^spin;spin;main;' "$BATS_TEST_TMPDIR/thread"
}

@test "-a refused without privilege names the sysctl and the capability" {
	local was
	was=$(cat /proc/sys/kernel/perf_event_paranoid)
	if [ "$was" -le 0 ]; then
		RESTORE_PARANOID=$was
		sysctl -q -w kernel.perf_event_paranoid=2
	fi
	local d
	d=$(shared_tmpdir)
	run -2 as_nobody "$BIN/sp-capture" -q -a --duration 0.2 -o "$d/x.sps"
	rm -rf "$d"
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"sysctl kernel.perf_event_paranoid=0"* ]]
	[[ "$output" == *"setcap cap_perfmon+ep"* ]]
}

@test "-a and -C with targets, or with options for targets, are usage errors" {
	run -3 sp-capture -a -p 1 --duration 0.1
	[[ "$output" == *"drop -p"* ]]
	run -3 sp-capture -a --duration 0.1 -- true
	[[ "$output" == *"drop the command"* ]]
	run -3 sp-capture -C 0 --name init --duration 0.1
	[[ "$output" == *"drop --name"* ]]
	run -3 sp-capture -a --stop --duration 0.1
	[[ "$output" == *"--stop"* ]]
	run -3 sp-capture -C 4096 --duration 0.1
	[[ "$output" == *"invalid CPU list"* ]]
	run -3 sp-capture -C 1023 --duration 0.1
	[[ "$output" == *"not online"* ]]
	run -3 sp-capture -C 1-0 --duration 0.1
	[[ "$output" == *"lower CPU first"* ]]
	run -3 sp-capture -C x --duration 0.1
	[[ "$output" == *"invalid CPU list 'x'"* ]]
}

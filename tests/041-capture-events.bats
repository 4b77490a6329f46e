#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture -e EVENT and -c PERIOD: software events, tracepoints, hardware
# events (and what is said where the machine has no PMU), several events
# in one recording, and sp-fold --event picking one of them.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
}

# has_pmu: "yes" when this machine samples the hardware cycles event of
# a user process (perf_event_open of our own process), else "no".
has_pmu() {
	/usr/bin/python3 - <<'EOF'
import ctypes, platform, struct
nr = {'x86_64': 298, 'aarch64': 241}[platform.machine()]
# type PERF_TYPE_HARDWARE, config cycles, a sample period, and the flags
# disabled, exclude_kernel, exclude_hv.
attr = struct.pack('<IIQQQQQ', 0, 112, 0, 100000, 0, 0, 1 | 1 << 5 | 1 << 6).ljust(112, b'\0')
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(nr, ctypes.c_char_p(attr), 0, -1, -1, 0)
print('yes' if fd >= 0 else 'no')
EOF
}

# sample_count FILE [EVENT]: the sample records of a stream, or those of
# event index EVENT (an absent key is index 0).
sample_count() {
	local -
	set -o pipefail
	sp-cat -t sample "$1" | /usr/bin/python3 -c '
import json, sys
want = None if len(sys.argv) < 2 else int(sys.argv[1])
print(sum(1 for l in sys.stdin if want is None or json.loads(l).get("event", 0) == want))' "${@:2}"
}

@test "-e page-faults -c 100: samples every 100 faults, the hot stack is the touching function" {
	sp-capture -q -e page-faults -c 100 -o "$T/pf.raw" -- "$WORKLOADS/faulter" 0.5
	[ "$(jqs "$T/pf.raw" 'select(.t=="header") | .events')" = '["page-faults"]' ]
	[ "$(jqs "$T/pf.raw" 'select(.t=="header") | .options.event')" = '"page-faults"' ]
	[ "$(jqs "$T/pf.raw" 'select(.t=="header") | .options.period')" = 100 ]
	[ "$(jqs "$T/pf.raw" 'select(.t=="sample") | .period' | sort -u)" = 100 ]
	sp-unwind "$T/pf.raw" | sp-symbolize | sp-fold > "$T/pf.folded"
	total=$(weight "$T/pf.folded")
	hot=$(grep -E '^faulter;main;faulter_touch ' "$T/pf.folded" | awk '{ print $NF }')
	# 0.5 s of 4 MiB rounds is thousands of faults a round: far more than 20 samples.
	[ "$total" -ge 20 ]
	[ "$((hot * 100 / total))" -ge 80 ]
	# The alias names the same event.
	sp-capture -q -e faults -c 1000 -o "$T/f.raw" -- "$WORKLOADS/faulter" 0.3
	[ "$(jqs "$T/f.raw" 'select(.t=="header") | .events')" = '["page-faults"]' ]
}

@test "-e context-switches: a program that sleeps in a loop switches out in nanosleep" {
	sp-capture -q -e cs -o "$T/cs.raw" -- "$WORKLOADS/sleeper" 0.5
	[ "$(jqs "$T/cs.raw" 'select(.t=="header") | .events')" = '["context-switches"]' ]
	sp-unwind "$T/cs.raw" | sp-symbolize | sp-fold > "$T/cs.folded"
	total=$(weight "$T/cs.folded")
	asleep=$(grep -E '^sleeper;main;(__)?nanosleep' "$T/cs.folded" | awk '{ s += $NF } END { print s + 0 }')
	# 0.5 s of 10 ms naps is some 50 switches; the kernel sets the period to reach -F's rate.
	# On a busy machine the CPU bursts are preempted too: the naps stay the most.
	[ "$total" -ge 10 ]
	[ "$((asleep * 100 / total))" -ge 50 ]
}

@test "a tracepoint: its id from tracefs, every hit sampled; a missing one or no tracefs says the path and the fix" {
	run -2 sp-capture -q -e sched:no_such_tracepoint_here -o "$T/x.raw" -- true
	[[ "$output" == *"sched:no_such_tracepoint_here"* ]]
	[[ "$output" == *"/sys/kernel/"*"tracing"* ]]
	if [ "$(id -u)" != 0 ]; then
		# Unprivileged: the message says what tracepoints need.
		run -2 sp-capture -q -e sched:sched_switch -o "$T/x.raw" -- true
		[[ "$output" == *"perf_event_paranoid"* ]]
		return
	fi
	# In a mount namespace of its own: no tracefs, then tracefs.
	run -2 unshare -m sh -c 'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; exec sp-capture -q -e sched:sched_switch -- true'
	[[ "$output" == *"'/sys/kernel/tracing/events/sched/sched_switch/id'"* ]]
	[[ "$output" == *"mount -t tracefs nodev /sys/kernel/tracing"* ]]
	[[ "$output" == *"kernel.perf_event_paranoid lowered to 1"* ]]
	unshare -m sh -c 'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; exec sp-capture -q -e sched:sched_switch -o "$1" -- "$2" 0.5' sh "$T/tp.raw" "$WORKLOADS/sleeper"
	[ "$(jqs "$T/tp.raw" 'select(.t=="header") | .events')" = '["sched:sched_switch"]' ]
	# perf's rule: a tracepoint samples every hit unless -F or -c says otherwise.
	[ "$(jqs "$T/tp.raw" 'select(.t=="sample") | .period' | sort -u)" = 1 ]
	sp-unwind "$T/tp.raw" | sp-symbolize | sp-fold > "$T/tp.folded"
	total=$(weight "$T/tp.folded")
	asleep=$(grep -E '^sleeper;main;(__)?nanosleep' "$T/tp.folded" | awk '{ s += $NF } END { print s + 0 }')
	[ "$total" -ge 10 ]
	[ "$((asleep * 100 / total))" -ge 50 ]
}

@test "-e cycles: samples where there is a PMU; else the event, the cause, the fix, status 2" {
	pmu=$(has_pmu)
	if [ "$pmu" = yes ]; then
		sp-capture -q -e cycles -o "$T/c.raw" -- "$WORKLOADS/spin" 0.3
		[ "$(jqs "$T/c.raw" 'select(.t=="header") | .events')" = '["cycles"]' ]
		[ "$(sample_count "$T/c.raw")" -ge 1 ]
		return
	fi
	run -2 sp-capture -q -e cycles -o "$T/c.raw" -- "$WORKLOADS/spin" 0.3
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"hardware event 'cycles'"* ]]
	[[ "$output" == *"no PMU"* ]]
	[[ "$output" == *"-e cpu-clock"* ]]
	[[ "$output" == *"--event-fallback"* ]]
	run -2 sp-capture -q -e cpu-clock,instructions -o "$T/c.raw" -- "$WORKLOADS/spin" 0.3
	[[ "$output" == *"hardware event 'instructions'"* ]]
}

@test "--event-fallback: a hardware event without a PMU becomes cpu-clock, said once, recorded as used" {
	pmu=$(has_pmu)
	run -0 --separate-stderr sp-capture -q -e cycles --event-fallback -o "$T/fb.raw" -- "$WORKLOADS/spin" 0.3
	if [ "$pmu" = yes ]; then
		[ "$(jqs "$T/fb.raw" 'select(.t=="header") | .events')" = '["cycles"]' ]
		[ -z "$stderr" ]
		return
	fi
	[ "$(grep -c "cpu-clock in its place" <<< "$stderr")" -eq 1 ]
	[[ "$stderr" == *"'cycles'"* ]]
	[ "$(jqs "$T/fb.raw" 'select(.t=="header") | .events')" = '["cpu-clock"]' ]
	[ "$(jqs "$T/fb.raw" 'select(.t=="header") | .options.event')" = null ]
	[ "$(sample_count "$T/fb.raw")" -ge 20 ]
	# Beside cpu-clock, the replacement is a second cpu-clock: sp-fold folds both, unasked.
	sp-capture -q -e cpu-clock,cycles --event-fallback -o "$T/fb2.raw" -- "$WORKLOADS/spin" 0.3
	[ "$(jqs "$T/fb2.raw" 'select(.t=="header") | .events')" = '["cpu-clock","cpu-clock"]' ]
	[ "$(sample_count "$T/fb2.raw" 1)" -ge 20 ]
	sp-unwind "$T/fb2.raw" | sp-symbolize > "$T/fb2.sym"
	run -0 --separate-stderr sp-fold "$T/fb2.sym"
	[ -z "$stderr" ]
	[ "$(printf '%s\n' "$output" | awk '{ s += $NF } END { print s + 0 }')" -eq "$(sample_count "$T/fb2.raw")" ]
}

@test "usage errors: -c with -F, a bad -c, an unknown or repeated event" {
	run -3 sp-capture -c 1000 -F 99 -- true
	[[ "$output" == *"either -c PERIOD or -F HZ"* ]]
	for bad in 0 -1 x 5k; do
		run -3 sp-capture -c "$bad" -- true
	done
	run -3 sp-capture -e cpu-cycles-please -- true
	[[ "$output" == *"unknown event 'cpu-cycles-please'"* ]]
	for known in cpu-clock task-clock page-faults context-switches cpu-migrations cycles instructions sched:sched_switch; do
		[[ "$output" == *"$known"* ]]
	done
	run -3 sp-capture -e page-faults,faults -- true
	[[ "$output" == *"given twice"* ]]
	run -3 sp-capture -e 'sched:../x' -- true
	run -3 sp-capture -e , -- true
	run -0 sp-capture --help
	[[ "$output" == *"--event"* && "$output" == *"--count"* && "$output" == *"--event-fallback"* ]]
}

@test "-e cpu-clock,page-faults: both in one stream, through sp-unwind and sp-symbolize; sp-fold --event picks each" {
	sp-capture -q -e cpu-clock,page-faults -o "$T/m.raw" -- "$WORKLOADS/faulter" 1
	[ "$(jqs "$T/m.raw" 'select(.t=="header") | .events')" = '["cpu-clock","page-faults"]' ]
	all=$(sample_count "$T/m.raw")
	clock=$(sample_count "$T/m.raw" 0)
	faults=$(sample_count "$T/m.raw" 1)
	[ "$clock" -ge 1 ]
	[ "$faults" -ge 20 ]
	[ "$((clock + faults))" -eq "$all" ]
	# Mappings and names come once, not once per event.
	[ "$(sp-cat -t exec "$T/m.raw" | wc -l)" -eq 1 ]
	[ "$(sp-cat -t map "$T/m.raw" | jq -c '[.start, .path]' | sort | uniq -d | wc -l)" -eq 0 ]
	# Only index 0 goes without the key.
	[ "$(jqs "$T/m.raw" 'select(.t=="sample") | .event // "absent"' | sort -u | tr '\n' ' ')" = '"absent" 1 ' ]

	sp-unwind -o "$T/m.unw" "$T/m.raw"
	sp-symbolize -o "$T/m.sym" "$T/m.unw"
	[ "$(sample_count "$T/m.unw" 1)" -eq "$faults" ]
	[ "$(sample_count "$T/m.sym" 1)" -eq "$faults" ]
	[ "$(sample_count "$T/m.sym" 0)" -eq "$clock" ]
	[ "$(jqs "$T/m.sym" 'select(.t=="header") | .events')" = '["cpu-clock","page-faults"]' ]

	sp-fold --event cpu-clock "$T/m.sym" > "$T/clock.folded"
	sp-fold --event page-faults "$T/m.sym" > "$T/faults.folded"
	[ "$(weight "$T/clock.folded")" -eq "$clock" ]
	[ "$(weight "$T/faults.folded")" -eq "$faults" ]
	grep -qE '^faulter;main;faulter_touch ' "$T/faults.folded"

	# No --event: the first event, and one line saying what was left out.
	run -0 --separate-stderr sp-fold "$T/m.sym"
	[ "$(printf '%s\n' "$output" | awk '{ s += $NF } END { print s + 0 }')" -eq "$clock" ]
	[ "$(grep -c 'page-faults' <<< "$stderr")" -eq 1 ]
	[[ "$stderr" == *"--event"* ]]
	# --top folds as sp-fold does.
	run -0 --separate-stderr sp-fold --event page-faults --top 3 "$T/m.sym"
	[[ "${lines[0]}" == "# $faults samples" ]]

	run -3 sp-fold --event cycles "$T/m.sym"
	[[ "$output" == *"no event 'cycles'"* && "$output" == *"cpu-clock, page-faults"* ]]
	# sp-top picks as sp-fold does.
	run -0 --separate-stderr sp-top --once --event page-faults "$T/m.sym"
	[[ "${lines[0]}" == *"whole input: $faults samples"* ]]
	run -0 --separate-stderr sp-top --once "$T/m.sym"
	[[ "${lines[0]}" == *"whole input: $clock samples"* ]]
	[ "$(grep -c 'page-faults' <<< "$stderr")" -eq 1 ]
	run -3 sp-top --once --event cycles "$T/m.sym"
	[[ "$output" == *"no event 'cycles'"* && "$output" == *"cpu-clock, page-faults"* ]]

	# sp-stat: the events and the samples of each.
	run -0 sp-stat "$T/m.sym"
	[[ "$output" == *"events: cpu-clock $clock samples, page-faults $faults samples"* ]]
	run -0 sp-stat --json "$T/m.sym"
	[ "$(jq -c '.recording.events' <<< "$output")" = "[{\"name\":\"cpu-clock\",\"samples\":$clock},{\"name\":\"page-faults\",\"samples\":$faults}]" ]
}

@test "a recording of cpu-clock alone: events lists it, no sample carries the key, sp-fold says nothing" {
	sp-capture -q -o "$T/c.raw" -- "$WORKLOADS/spin" 0.3
	[ "$(jqs "$T/c.raw" 'select(.t=="header") | .events')" = '["cpu-clock"]' ]
	[ "$(jqs "$T/c.raw" 'select(.t=="header") | .options.event')" = null ]
	[ "$(jqs "$T/c.raw" 'select(.t=="sample" and has("event"))' | wc -l)" -eq 0 ]
	sp-unwind "$T/c.raw" | sp-symbolize > "$T/c.sym"
	run -0 --separate-stderr sp-fold --event cpu-clock "$T/c.sym"
	[ -z "$stderr" ]
	[ "$(printf '%s\n' "$output" | awk '{ s += $NF } END { print s + 0 }')" -eq "$(sample_count "$T/c.raw")" ]
}

@test "an unprivileged user at perf_event_paranoid 2: context switches are refused with the setting to change" {
	# As tests/024 assumes: kernel.perf_event_paranoid 2 or more, Debian's default.
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]
	d=$(shared_tmpdir)
	run -2 as_nobody sp-capture -q -e cs -o "$d/rec.sps" -- "$WORKLOADS/sleeper" 0.3
	[[ "$output" == *"event 'context-switches'"* ]]
	[[ "$output" == *"kernel.perf_event_paranoid to 1"* ]]
	# Page faults happen in user code: they are this user's to sample.
	as_nobody sp-capture -q -e page-faults -c 100 -o "$d/pf.sps" -- "$WORKLOADS/faulter" 0.3
	[ "$(sample_count "$d/pf.sps")" -ge 10 ]
	rm -rf "$d"
}

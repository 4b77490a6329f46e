#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# libstackpulse's capture modes (tests/lib/api-modes.c): several events,
# a period, frame-pointer call graphs, off-CPU time and every CPU,
# recorded from real workloads through the library, and the functions
# that ask for them used wrongly.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	M=$SP_BUILD/tests/api-modes
	PIDS=()
	RESTORE_PARANOID=
}

teardown() {
	kill_started
	if [ -n "$RESTORE_PARANOID" ]; then
		sysctl -q -w kernel.perf_event_paranoid="$RESTORE_PARANOID"
	fi
}

# value NAME: the value of the "NAME value" line of $output.
value() {
	awk -v k="$1" '$1 == k { print $2 }' <<< "$output"
}

# samples_of PID FILE: how many sample records of pid PID a stream holds.
samples_of() {
	local -
	set -o pipefail
	sp-cat -t sample "$2" | jq --argjson p "$1" 'select(.pid == $p) | .tid' | wc -l
}

# of_event I FILE: how many samples of the header's event I a stream holds.
of_event() {
	local -
	set -o pipefail
	sp-cat -t sample "$2" | jq --argjson e "$1" 'select((.event // 0) == $e) | .tid' | wc -l
}

@test "add_event: the events in the header in the order added, each sample naming its own" {
	run -0 "$M" record "$T/ev.sps" -e task-clock -e page-faults -- "$WORKLOADS/faulter" 1
	[ "$(value command_status)" -eq 0 ]
	[ "$(jqs "$T/ev.sps" 'select(.t=="header") | .events')" = '["task-clock","page-faults"]' ]
	# faulter spends most of its time in the kernel, which task-clock leaves out.
	[ "$(of_event 0 "$T/ev.sps")" -ge 20 ]
	[ "$(of_event 1 "$T/ev.sps")" -ge 20 ]
	[ "$(of_event 2 "$T/ev.sps")" -eq 0 ]
	# sp-fold picks each: the faults are taken where the pages are touched.
	sp-unwind "$T/ev.sps" | sp-symbolize > "$T/ev.sym"
	sp-fold --event page-faults "$T/ev.sym" > "$T/pf.folded"
	total=$(weight "$T/pf.folded")
	hot=$(grep -E '^faulter;main;faulter_touch ' "$T/pf.folded" | awk '{ print $NF }')
	[ "$((hot * 100 / total))" -ge 80 ]
}

@test "set_event after add_event leaves exactly that event; a period samples every so many" {
	run -0 "$M" record "$T/one.sps" -e task-clock -e cpu-clock -E page-faults -c 100 \
		-- "$WORKLOADS/faulter" 0.5
	[ "$(jqs "$T/one.sps" 'select(.t=="header") | [.events, .options.event, .options.period]')" = '[["page-faults"],"page-faults",100]' ]
	# Every sample stands for 100 faults; 0.5 s of 4 MiB rounds is thousands.
	[ "$(jqs "$T/one.sps" 'select(.t=="sample") | .period' | sort -u)" = 100 ]
	[ "$(value samples)" -ge 20 ]
	# A period of cpu-clock is in nanoseconds: a sample each 2 ms of CPU time.
	run -0 "$M" record "$T/clk.sps" -c 2000000 -- "$WORKLOADS/spin" 0.5
	[ "$(jqs "$T/clk.sps" 'select(.t=="header") | .options.period')" = 2000000 ]
	[ "$(jqs "$T/clk.sps" 'select(.t=="sample") | .period' | sort -u)" = 2000000 ]
	[ "$(value samples)" -ge 20 ]
}

@test "set_call_graph(SP_CALL_GRAPH_FP): kernel callchains, no stack copy, the same hot stack" {
	run -0 "$M" record "$T/fp.sps" -g fp -- "$WORKLOADS/deep-fp" -d 8 1
	[ "$(jqs "$T/fp.sps" 'select(.t=="header") | [.options.call_graph, .options.stack_size]')" = '["fp",0]' ]
	n=$(value samples)
	[ "$n" -ge 100 ]
	run -0 jqs "$T/fp.sps" 'select(.t=="sample") | select(has("ustack") or has("regs") or has("abi"))'
	[ -z "$output" ]
	u=$(jqs "$T/fp.sps" 'select(.t=="sample" and (.uchain | length) >= 10)' | wc -l)
	[ "$u" -ge $((n * 9 / 10)) ]
	# The C library's start-up code keeps no frame pointer: [bad_fp] below main.
	sp-unwind --allow-empty "$T/fp.sps" 2> /dev/null | sp-symbolize | sp-fold > "$T/fp.folded"
	want="deep-fp;main$(printf ';deep_recurse%.0s' 1 2 3 4 5 6 7 8);deep_leaf"
	hot=$(sort -t' ' -k2,2nr "$T/fp.folded" | head -1 | cut -d' ' -f1 | tr ';' '\n' |
		grep -v '^\[' | paste -sd';')
	[ "$hot" = "$want" ]
}

@test "set_off_cpu (twice): an off-cpu event, and the sleeping half's time on the stack that sleeps" {
	run -0 "$M" record "$T/off.sps" -o -o -- "$WORKLOADS/halfsleep" 2
	[ "$(value command_status)" -eq 0 ]
	[ "$(jqs "$T/off.sps" 'select(.t=="header") | .events')" = '["cpu-clock","off-cpu"]' ]
	# A 10 ms nap each 20 ms: some hundred intervals in 2 s.
	[ "$(of_event 1 "$T/off.sps")" -ge 40 ]
	[ "$(summary "$T/off.sps" off_cpu_intervals)" -ge 40 ]
	[ "$(of_event 0 "$T/off.sps")" -ge 100 ]
	sp-unwind "$T/off.sps" | sp-symbolize | sp-fold --off-cpu > "$T/off.folded"
	# Half of 2 s asleep, in ns, on the stack that sleeps.
	nap=$(grep -E '^halfsleep;main;halfsleep_run;halfsleep_nap;.*\[off-cpu\] ' "$T/off.folded" |
		awk '{ s += $NF } END { print s + 0 }')
	[ "$nap" -ge 500000000 ]
	# Turned off again, there is none.
	run -0 "$M" record "$T/on.sps" -o -O -- "$WORKLOADS/halfsleep" 0.3
	[ "$(jqs "$T/on.sps" 'select(.t=="header") | .events')" = '["cpu-clock"]' ]
}

@test "attach_all_cpus: every process on every CPU, named, with the CPUs in the header" {
	[ "$(id -u)" -eq 0 ]
	start "$WORKLOADS/spin" 10
	spin=$P
	start "$WORKLOADS/faulter" 10
	faulter=$P
	run -0 "$M" record "$T/all.sps" -a -d 1.5
	[ "$(value processes)" -ge 3 ]
	online=$(/usr/bin/python3 -c '
import sys
cpus = []
for part in open("/sys/devices/system/cpu/online").read().strip().split(","):
    a, _, b = part.partition("-")
    cpus += range(int(a), int(b or a) + 1)
print(str(cpus).replace(" ", ""))')
	[ "$(jqs "$T/all.sps" 'select(.t=="header") | [.options.all_cpus, .options.cpu]')" = "[true,$online]" ]
	# Both workloads, each under its name.
	[ "$(samples_of "$spin" "$T/all.sps")" -ge 20 ]
	[ "$(samples_of "$faulter" "$T/all.sps")" -ge 20 ]
	[ "$(jqs "$T/all.sps" "select(.t==\"process\" and .pid==$spin) | .comm" | sort -u)" = '"spin"' ]
	[ "$(jqs "$T/all.sps" "select(.t==\"process\" and .pid==$faulter) | .comm" | sort -u)" = '"faulter"' ]
	# A task that is exiting may have let go of its pid and tid: few, skipped.
	skipped=$(($(summary "$T/all.sps" skipped_no_pid) + $(summary "$T/all.sps" skipped_no_tid)))
	[ $((skipped * 100)) -le "$(summary "$T/all.sps" samples)" ]
	[ "$(summary "$T/all.sps" skipped_no_frames)" -eq 0 ]
	sp-unwind "$T/all.sps" | sp-symbolize 2> /dev/null | sp-fold > "$T/all.folded"
	grep -q '^spin;main;' "$T/all.folded"
	grep -q '^faulter;main;' "$T/all.folded"
}

@test "attach_all_cpus with a CPU list: only those CPUs are sampled" {
	[ "$(id -u)" -eq 0 ]
	start "$WORKLOADS/spin" 10
	run -0 "$M" record "$T/c0.sps" -C 0 -d 1
	[ "$(jqs "$T/c0.sps" 'select(.t=="header") | [.options.all_cpus, .options.cpu]')" = '[true,[0]]' ]
	[ "$(value samples)" -ge 100 ]
	[ "$(jqs "$T/c0.sps" 'select(.t=="sample") | .cpu' | sort -u)" = 0 ]
	run -2 "$M" record "$T/c.sps" -C 1023 -d 1
	[[ "$output" == *"SP_ERR_INVALID: CPU 1023 is not online"* ]]
}

@test "attach_all_cpus refused without privilege: SP_ERR_PERMISSION names the sysctl" {
	local was d
	was=$(cat /proc/sys/kernel/perf_event_paranoid)
	if [ "$was" -le 0 ]; then
		RESTORE_PARANOID=$was
		sysctl -q -w kernel.perf_event_paranoid=2
	fi
	d=$(shared_tmpdir)
	run -2 as_nobody "$M" record "$d/x.sps" -a -d 0.2
	rm -rf "$d"
	[[ "$output" == *"sp_recorder_attach_all_cpus: SP_ERR_PERMISSION: "* ]]
	[[ "$output" == *"sysctl kernel.perf_event_paranoid=0"* ]]
}

@test "the capture-mode functions used wrongly fail with their code and a message" {
	start "$WORKLOADS/spin" 10
	run -0 "$M" misuse "$T/m.sps" "$P"
	[[ "$output" == *"0 failures"* ]]
	[ "$(grep -c '^ok ' <<< "$output")" -ge 50 ]
	[[ "$output" == *"ok sp_options_add_event(\"off-cpu\"): 'off-cpu' is not an event to sample on: ask for off-CPU time with sp_options_set_off_cpu()"* ]]
	[[ "$output" == *"ok sp_options_add_event(\"cs\") after its own name: event 'context-switches' is added twice"* ]]
	[[ "$output" == *"ok sp_options_add_event: an eighth beside off-CPU time: "*"at most 8 events"* ]]
	[[ "$output" == *"ok sp_options_set_period after a rate: a sample rate is set: give either a rate or a period, not both"* ]]
	[[ "$output" == *"ok sp_options_set_call_graph(FP) after a stack size: "* ]]
	[[ "$output" == *"ok sp_options_set_stack_size with FP: "* ]]
	[[ "$output" == *"ok sp_options_set_off_cpu(true) again"* ]]
	[[ "$output" == *"ok sp_recorder_attach_all_cpus with a process attached: sp_recorder_attach_all_cpus: a process or a command is attached"* ]]
	[[ "$output" == *"ok sp_recorder_attach after every CPU: sp_recorder_attach: the recorder records every process on the CPUs"* ]]
	[[ "$output" == *"ok sp_recorder_attach_all_cpus(CPU 99999): CPU 99999 is not online"* ]]
	# The recordings around the misuse are whole: the process's, and every CPU's.
	run -1 grep '^FAIL' <<< "$output"
	[ "$(summary "$T/m.sps" samples)" -gt 0 ]
	[ "$(jqs "$T/m.sps" 'select(.t=="header") | .options.pids')" = "[$P]" ]
	[ "$(jqs "$T/m.sps.all" 'select(.t=="header") | .options.all_cpus')" = true ]
	[ "$(summary "$T/m.sps.all" samples)" -gt 0 ]
}

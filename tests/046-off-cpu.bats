#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture --off-cpu: where threads wait and for how long, as samples of
# the event off-cpu weighted by their time off the CPU; sp-fold --off-cpu
# and --wall; sp-flame's colours for that time; sp-stat's counts.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	PIDS=()
}

teardown() {
	kill_started
}

# offcpu_recording NAME ARGS...: records halfsleep ARGS with --off-cpu into
# $T/NAME.raw and symbolizes it into $T/NAME.sym.
offcpu_recording() {
	local name=$1
	shift
	sp-capture -q --off-cpu -o "$T/$name.raw" -- "$WORKLOADS/halfsleep" "$@" > "$T/$name.out"
	sp-unwind "$T/$name.raw" | sp-symbolize > "$T/$name.sym"
}

# sum_of FILE REGEX: the weight of the lines of a folded file matching REGEX.
sum_of() {
	awk -v re="$2" '$0 ~ re { s += $NF } END { printf "%.0f\n", s + 0 }' "$1"
}

@test "--wall: a thread asleep half its time has half the weight in its napping function" {
	offcpu_recording half 3
	[ "$(jqs "$T/half.raw" 'select(.t=="header") | .events')" = '["cpu-clock","off-cpu"]' ]
	sp-fold --wall "$T/half.sym" > "$T/wall.folded"
	total=$(sum_of "$T/wall.folded" .)
	# Asleep: in the nap, waiting, or woken and waiting for a CPU (preempted).
	asleep=$(sum_of "$T/wall.folded" '^halfsleep;main;halfsleep_run;halfsleep_nap;.*;\[(off-cpu|preempted)\] ')
	napping=$(sum_of "$T/wall.folded" '^halfsleep;main;halfsleep_run;halfsleep_nap;.*;\[off-cpu\] ')
	off=$(sum_of "$T/wall.folded" ';\[off-cpu\] ')
	# What the program measured around its naps: "waited W ns of R ns".
	read -r _ waited _ _ ran _ < "$T/half.out"
	echo "profile: $asleep ns asleep of $total; program: $waited ns of $ran" >&3
	# Weights are nanoseconds: the thread lived 3 s, on or off the CPU.
	[ "$total" -ge 2400000000 ]
	[ "$total" -le 3600000000 ]
	# Half of every 20 ms is asleep, and a late wake-up on a busy machine
	# is waiting too: the share is the program's own to within 5 points.
	share=$((asleep * 100 / total)) truth=$((waited * 100 / ran))
	[ "$share" -ge 40 ]
	[ "$share" -le 65 ]
	[ "$share" -ge "$((truth - 5))" ]
	[ "$share" -le "$((truth + 5))" ]
	# The thread only waits in its nap: those waits end in its own function that sleeps.
	[ "$((napping * 100 / off))" -ge 95 ]
	# The computing half is on the CPU, or preempted there.
	busy=$(sum_of "$T/wall.folded" '^halfsleep;main;halfsleep_run;halfsleep_compute')
	[ "$((busy * 100 / total))" -ge 35 ]
}

@test "--off-cpu: a thread blocked in read() waits in its own function, its waker in its nap" {
	offcpu_recording reader -r 2
	sp-fold --off-cpu --tid "$T/reader.sym" > "$T/off.folded"
	cat "$T/off.folded" >&3
	# Only off-CPU time: every stack ends in [off-cpu] or [preempted].
	run -0 awk '!/;\[(off-cpu|preempted)\] [0-9]+$/ { bad++ } END { exit bad > 0 }' "$T/off.folded"
	off=$(sum_of "$T/off.folded" ';\[off-cpu\] ')
	reading=$(sum_of "$T/off.folded" ';halfsleep_run;halfsleep_wait;.*;\[off-cpu\] ')
	waking=$(sum_of "$T/off.folded" ';waker;.*;\[off-cpu\] ')
	# The reader waits about 1 s of its 2, the waker about 2 s.
	[ "$reading" -ge 500000000 ]
	[ "$waking" -ge 1000000000 ]
	[ "$(((reading + waking) * 100 / off))" -ge 95 ]
}

@test "every interval is kept, however short: the summary counts them and sp-stat adds them up" {
	offcpu_recording count 2
	n=$(jqs "$T/count.raw" 'select(.t=="sample" and .event==1)' | wc -l)
	# 100 naps, besides any preemption.
	[ "$n" -ge 100 ]
	[ "$(summary "$T/count.raw" off_cpu_intervals)" -eq "$n" ]
	[ "$(summary "$T/count.raw" off_cpu_no_stack)" -ge 0 ]
	# Each is stamped when the thread ran again, and weighs the time before.
	run -0 --separate-stderr /usr/bin/python3 -c '
import json, sys
last = {}
for l in sys.stdin:
    r = json.loads(l)
    if r["t"] != "sample":
        continue
    if r.get("event") == 1:
        assert r["period"] > 0, r
        start = r["time"] - r["period"]
        assert start >= last.get(r["tid"], 0), ("overlaps", r["time"], start, last.get(r["tid"]))
    last[r["tid"]] = r["time"]
print("ok")' < <(sp-cat "$T/count.raw")
	[ "$output" = ok ]
	run -0 sp-stat "$T/count.sym"
	[[ "$output" == *"off-cpu $n intervals, "*" s off the CPU"* ]]
	# The rate is the on-CPU samples' alone.
	[[ "$output" == *"999 Hz effective"* ]]
	run -0 sp-stat --json "$T/count.sym"
	printf '%s\n' "$output" | /usr/bin/python3 -c '
import json, sys
ev = json.load(sys.stdin)["recording"]["events"]
off = [e for e in ev if e["name"] == "off-cpu"][0]
assert off["off_cpu_ns"] > 800000000, off'
}

@test "sp-fold without --off-cpu or --wall folds the CPU samples and says what it left out" {
	offcpu_recording plain 1
	run -0 --separate-stderr sp-fold "$T/plain.sym"
	[[ "$stderr" == *"off-CPU time too, left out: --off-cpu folds it"* ]]
	[[ "$output" != *"[off-cpu]"* ]]
	cpu=$(jqs "$T/plain.raw" 'select(.t=="sample" and (.event // 0)==0)' | wc -l)
	[ "$(printf '%s\n' "$output" | awk '{ s += $NF } END { print s + 0 }')" -eq "$cpu" ]
}

@test "sp-fold --off-cpu and --wall refuse a recording without off-CPU time, or without a clock" {
	symbolized "$T/cpu" "$WORKLOADS/sleeper" 0.3
	run -2 sp-fold --off-cpu "$T/cpu"
	[[ "$output" == *"no off-CPU time for --off-cpu: record it with sp-capture --off-cpu"* ]]
	run -2 sp-fold --wall "$T/cpu"
	[[ "$output" == *"sp-capture --off-cpu"* ]]
	sp-capture -q --off-cpu -e page-faults -c 100 -o "$T/pf.raw" -- "$WORKLOADS/faulter" 0.3
	sp-unwind "$T/pf.raw" | sp-symbolize > "$T/pf.sym"
	run -2 sp-fold --wall "$T/pf.sym"
	[[ "$output" == *"event 'page-faults' counts no time"* ]]
	# Off-CPU time alone needs no clock (this program never blocks: it is preempted).
	run -0 sp-fold --off-cpu "$T/pf.sym"
	[[ "$output" == *"[preempted]"* || "$output" == *"[off-cpu]"* ]]
}

@test "usage errors: --off-cpu with --wall or --event, and one event too many" {
	run -3 sp-fold --off-cpu --wall /dev/null
	[[ "$output" == *"not both"* ]]
	run -3 sp-fold --off-cpu --event cpu-clock /dev/null
	[[ "$output" == *"no --event with it"* ]]
	# Eight events need a tracepoint: tracefs mounted in a mount namespace of its own.
	run -3 unshare -m sh -c 'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; exec sp-capture --off-cpu -e cpu-clock,task-clock,page-faults,cs,migrations,cycles,instructions,sched:sched_switch -- true'
	[[ "$output" == *"--off-cpu takes one of the 8 events"* ]]
}

@test "sp-flame draws off-CPU frames in blue, with times in seconds" {
	offcpu_recording flame 1
	sp-fold --wall "$T/flame.sym" | sp-flame > "$T/wall.svg"
	/usr/bin/python3 - "$T/wall.svg" <<'EOF'
import re, sys
svg = open(sys.argv[1]).read()
frames = re.findall(r'<title>([^<]*)</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"', svg)
def find(name):
    got = [f for f in frames if f[0].startswith(name + " (")]
    assert got, name
    return got[0][0], tuple(int(x) for x in got[0][1:])
# An [off-cpu] frame is all time off the CPU: blue, and said so.
title, (r, g, b) = find("[off-cpu]")
assert re.search(r"\(\d+\.\d{6} s, \d+\.\d\d%, off the CPU\)", title), title
assert b > r + 50 and b > g + 50, (title, r, g, b)
# The nap is timed in seconds too (a sample or two may land in its own
# code, on the CPU, so it need not be all off-CPU).
title, _ = find("halfsleep_nap")
assert re.search(r"\(\d+\.\d{6} s, \d+\.\d\d%", title), title
title, (r, g, b) = find("halfsleep_compute")
assert "off the CPU" not in title, title
assert r > b, (title, r, g, b)
EOF
}

@test "pprof of --wall names its value wall, in nanoseconds" {
	offcpu_recording pp 1
	sp-fold --wall --format pprof -o "$T/wall.pb.gz" "$T/pp.sym"
	sp-fold --off-cpu --format pprof -o "$T/off.pb.gz" "$T/pp.sym"
	# The string table's entries, each after its length: the sample types.
	/usr/bin/python3 - "$T/wall.pb.gz" "$T/off.pb.gz" <<'EOF'
import gzip, sys
wall, off = (gzip.open(p).read() for p in sys.argv[1:])
assert b"\x04wall" in wall and b"\x03cpu" not in wall
assert b"\x07off-cpu" in off and b"\x03cpu" not in off
assert b"\x0bnanoseconds" in wall
EOF
}

@test "--off-cpu --call-graph fp: off-CPU samples carry the kernel's chain" {
	sp-capture -q --off-cpu --call-graph fp -o "$T/fp.raw" -- "$WORKLOADS/halfsleep" 0.5
	n=$(jqs "$T/fp.raw" 'select(.t=="sample" and .event==1 and has("uchain"))' | wc -l)
	[ "$n" -ge 20 ]
	[ "$(jqs "$T/fp.raw" 'select(.t=="sample" and .event==1 and has("ustack"))' | wc -l)" -eq 0 ]
}

@test "-a --off-cpu: a process among all the machine's has its waits" {
	start "$WORKLOADS/halfsleep" 5
	sp-capture -q -a --off-cpu --duration 1 -o "$T/all.raw"
	n=$(jqs "$T/all.raw" "select(.t==\"sample\" and .event==1 and .pid==$P)" | wc -l)
	# About 50 naps in the second recorded.
	[ "$n" -ge 20 ]
	sp-unwind --allow-empty "$T/all.raw" | sp-symbolize > "$T/all.sym"
	sp-fold --off-cpu --only-pid "$P" "$T/all.sym" > "$T/all.folded"
	[ "$(sum_of "$T/all.folded" 'halfsleep_nap;.*\[off-cpu\] ')" -ge 300000000 ]
}

@test "an unprivileged user at perf_event_paranoid 2: --off-cpu is refused with the setting to change" {
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]
	d=$(shared_tmpdir)
	run -2 as_nobody sp-capture -q --off-cpu -o "$d/rec.sps" -- "$WORKLOADS/sleeper" 0.3
	rm -rf "$d"
	[[ "$output" == *"cannot record --off-cpu for thread"* ]]
	[[ "$output" == *"kernel.perf_event_paranoid=1"* ]]
}

@test "speedscope --wall: the timeline puts each nap where it happened" {
	offcpu_recording tl 1
	sp-fold --wall --format speedscope -o "$T/tl.json" "$T/tl.sym"
	sp-fold --off-cpu "$T/tl.sym" > "$T/tl.off"
	/usr/bin/python3 - "$T/tl.json" "$(sum_of "$T/tl.off" '\[off-cpu\] ')" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
frames = [f["name"] for f in d["shared"]["frames"]]
tl = [p for p in d["profiles"] if p["type"] == "evented"][0]
# Each [off-cpu] span, from its open to its close.
spans, opened = [], {}
for e in tl["events"]:
    if frames[e["frame"]] != "[off-cpu]":
        continue
    if e["type"] == "O":
        opened = e["at"]
    else:
        spans.append((opened, e["at"]))
total = sum(b - a for a, b in spans)
want = int(sys.argv[2])
assert abs(total - want) <= want // 20, (total, want)
# About 50 naps of about 10 ms, one every 20 ms, in time order.
assert len(spans) >= 40, len(spans)
gaps = [b[0] - a[0] for a, b in zip(spans, spans[1:])]
assert sorted(gaps)[len(gaps) // 2] in range(15000000, 25000001), sorted(gaps)[len(gaps) // 2]
assert tl["endValue"] - tl["startValue"] in range(800000000, 1300000001), tl
PY
}

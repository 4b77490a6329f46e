#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture's drain of the ring buffers, which takes them in time-ordered
# slices so that what it holds does not grow with how long it waited for a
# CPU: on a machine kept busy beside the recording, with rings large and
# small, the stream is still in time order, every sample and every lost
# event is counted exactly, and every shared stack tail completes.

load helper

setup_file() {
	export D=$BATS_FILE_TMPDIR
	PIDS=()
	# Two busy threads beside the target, on a machine of few CPUs: the
	# recorder waits for a CPU, and each drain finds much to take.
	start "$WORKLOADS/spin" -t 2 60
	local hog=$P
	start "$WORKLOADS/spin" -t 2 60
	local target=$P
	sp-capture -q -F 999 -p "$target" --duration 3 -o "$D/big.sps"
	# Rings of 16 pages hold one sample each: events are lost.
	sp-capture -q --force -F 999 -p "$target" --duration 2 --mmap-pages 16 -o "$D/small.sps"
	# Through a pipe, drained at most once a second.
	sp-capture -q -F 999 -p "$target" --duration 2 --poll-ms 1000 | cat > "$D/pipe.sps"
	kill -KILL "$hog" "$target"
}

# in_time_order FILE: every record with a time, in stream order, is
# stamped no earlier than the one before it; prints the records checked.
in_time_order() {
	sp-cat "$1" > "$D/order.jsonl" || return
	/usr/bin/python3 -c '
import json, sys
last, n = 0, 0
for i, line in enumerate(open(sys.argv[1])):
    r = json.loads(line)
    t = r.get("time")
    if t is None:
        continue
    if t < last:
        sys.exit("record %d (%s) at %d after %d" % (i + 1, r["t"], t, last))
    last, n = t, n + 1
print(n)' "$D/order.jsonl"
}

# counts_exact FILE: the summary's samples are the sample records, its
# sample events those and the skipped ones, and its lost events the
# larger of the lost records' sum and the events' own lost count.
counts_exact() {
	local records samples events skipped lost lost_recs lost_format
	records=$(sp-cat -t sample "$1" | wc -l)
	samples=$(summary "$1" samples)
	events=$(summary "$1" sample_events)
	skipped=$(sp-cat -t summary "$1" | jq '.skipped_no_pid + .skipped_no_tid + .skipped_no_time + .skipped_no_frames')
	lost=$(summary "$1" lost_events)
	lost_format=$(summary "$1" 'lost_samples // 0')
	lost_recs=$(sp-cat -t lost "$1" | jq -s 'map(.lost) | add // 0')
	echo "records $records samples $samples events $events skipped $skipped lost $lost (records $lost_recs, counted $lost_format)"
	[ "$records" -eq "$samples" ]
	[ "$events" -eq $((samples + skipped)) ]
	[ "$lost" -eq $((lost_recs > lost_format ? lost_recs : lost_format)) ]
}

# shares_complete FILE: sp-unwind completes every shared stack tail.
shares_complete() {
	sp-unwind -o "$D/u.unw" "$1" || return
	[ "$(sp-cat -t unwind "$D/u.unw" | jq .bad_shared_copies)" = 0 ]
	[ "$(sp-cat -t unwind "$D/u.unw" | jq .samples)" -eq "$(summary "$1" samples)" ]
}

@test "beside busy threads: records in time order, every count exact" {
	run -0 in_time_order "$D/big.sps"
	[ "$output" -gt 200 ]
	run -0 counts_exact "$D/big.sps"
	run -0 shares_complete "$D/big.sps"
}

@test "rings too small for the rate: what was lost is counted exactly, the rest in order" {
	run -0 counts_exact "$D/small.sps"
	[ "$(summary "$D/small.sps" lost_events)" -gt 0 ]
	[ "$(sp-cat -t lost "$D/small.sps" | wc -l)" -gt 0 ]
	run -0 in_time_order "$D/small.sps"
	run -0 shares_complete "$D/small.sps"
}

@test "through a pipe, drained once a second: in time order, counts exact" {
	run -0 in_time_order "$D/pipe.sps"
	[ "$output" -gt 200 ]
	run -0 counts_exact "$D/pipe.sps"
	run -0 shares_complete "$D/pipe.sps"
	# The tails are shared, so the check above has work to do.
	[ "$(sp-cat -t sample "$D/pipe.sps" | grep -c '"ustack_shared":')" -gt 0 ]
}

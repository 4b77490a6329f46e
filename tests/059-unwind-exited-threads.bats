#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The stack copies sp-unwind keeps for "ustack_shared": sp-capture writes
# "ustack_reset" on each exit record, after which no sample of that tid
# shares with an older copy, and sp-unwind then forgets the thread's copy,
# so what it keeps follows the threads alive, not those that have been.
# A stream without the key (written before format 1.6) keeps every copy
# and decodes as it always did.  The copies kept are counted by
# sp-unwind --stats.

load helper

setup_file() {
	export D=$BATS_FILE_TMPDIR
	# 40 threads, one after another, each sampled some 20 times.
	sp-capture -q -F 999 -o "$D/churn.raw" -- "$WORKLOADS/churn" -n 40 1.5
	# The same stream as a writer before 1.6 would have made it.
	sp-cat "$D/churn.raw" | sed -e 's/,"ustack_reset":true//' \
		-e 's/^\({"t":"header",.*"version":\)\[1,6\]/\1[1,5]/' > "$D/old.jsonl"
	sp-cat --from-json -o "$D/old.raw" "$D/old.jsonl"
}

# copies_kept RAW: the most stack copies sp-unwind --stats says it kept.
copies_kept() {
	local err
	err=$(sp-unwind --stats < "$1" 2>&1 > /dev/null) || return
	sed -n "s/^sp-unwind: at most \([0-9]*\) threads' stack copies kept$/\1/p" <<< "$err"
}

# unwind_field UNW KEY: a key of the unwind record.
unwind_field() {
	local -
	set -o pipefail
	sp-cat -t unwind "$1" | jq -r ".$2"
}

@test "sp-capture marks every exit record with ustack_reset" {
	local exits marked
	exits=$(sp-cat -t exit "$D/churn.raw" | wc -l)
	marked=$(sp-cat -t exit "$D/churn.raw" | grep -c '"ustack_reset":true')
	[ "$exits" -ge 40 ]
	[ "$marked" -eq "$exits" ]
	[ "$(jqs "$D/churn.raw" 'select(.t=="header") | .version')" = "[1,6]" ]
}

@test "no sample after an exit of its tid shares a tail with an older copy" {
	run -0 /usr/bin/python3 -c '
import json, sys
exited, bad = set(), 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["t"] == "exit":
        exited.add(r["tid"])
    elif r["t"] == "sample" and r.get("ustack"):
        if r["tid"] in exited and r.get("ustack_shared", 0):
            bad += 1
        exited.discard(r["tid"])
print(bad)' <(sp-cat "$D/churn.raw")
	[ "$output" = 0 ]
}

@test "the copies kept follow the threads alive, not the threads that exited" {
	local now old threads
	threads=$(jqs "$D/churn.raw" 'select(.t=="sample" and .ustack) | .tid' | sort -u | wc -l)
	[ "$threads" -ge 30 ]
	now=$(copies_kept "$D/churn.raw")
	old=$(copies_kept "$D/old.raw")
	# Two threads alive at a time: the main one and the current one.
	[ "$now" -ge 1 ]
	[ "$now" -le 3 ]
	# Without the key every sampled thread's copy stays to the end.
	[ "$old" -eq "$threads" ]
}

@test "the unwound output is the same with and without ustack_reset" {
	sp-unwind < "$D/churn.raw" > "$D/new.unw"
	sp-unwind < "$D/old.raw" > "$D/old.unw"
	[ "$(unwind_field "$D/new.unw" bad_shared_copies)" = 0 ]
	# Byte for byte but for the key and the version the old stream lacks.
	sp-cat "$D/new.unw" | sed -e 's/,"ustack_reset":true//' \
		-e 's/^\({"t":"header",.*"version":\)\[1,6\]/\1[1,5]/' > "$D/new-unw.jsonl"
	sp-cat "$D/old.unw" > "$D/old-unw.jsonl"
	cmp "$D/new-unw.jsonl" "$D/old-unw.jsonl"
	# The same through sp-unwind -j 2, whose workers keep their own copies.
	sp-unwind -j 2 < "$D/churn.raw" > "$D/j2.unw"
	cmp "$D/new.unw" "$D/j2.unw"
}

@test "an old stream whose samples share across an exit still decodes" {
	# A thread's exit moved before its last sample that shares a tail:
	# the shape a reused tid gives a stream written before 1.6.
	/usr/bin/python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for i, r in enumerate(recs):
    if r["t"] == "exit" and r["tid"] != r["pid"]:
        tid = r["tid"]
        later = [j for j in range(i) if recs[j]["t"] == "sample" and
                 recs[j]["tid"] == tid and recs[j].get("ustack_shared", 0)]
        if len(later) >= 2:
            recs.insert(later[-1], recs.pop(i))
            break
else:
    sys.exit("no thread to move")
with open(sys.argv[2], "w") as a, open(sys.argv[3], "w") as b:
    for r in recs:
        a.write(json.dumps(r, separators=(",", ":")) + "\n")
        if r["t"] == "exit" and r["tid"] == tid:
            r["ustack_reset"] = True
        b.write(json.dumps(r, separators=(",", ":")) + "\n")
' "$D/old.jsonl" "$D/moved.jsonl" "$D/moved-reset.jsonl"
	sp-cat --from-json -o "$D/moved.raw" "$D/moved.jsonl"
	sp-cat --from-json -o "$D/moved-reset.raw" "$D/moved-reset.jsonl"
	sp-unwind < "$D/moved.raw" > "$D/moved.unw"
	sp-unwind < "$D/old.raw" > "$D/old.unw"
	[ "$(unwind_field "$D/moved.unw" bad_shared_copies)" = 0 ]
	cmp <(sp-cat -t sample,stack "$D/moved.unw") <(sp-cat -t sample,stack "$D/old.unw")
	# With the key on the moved exit the copy is gone, as the key says it
	# may be: the next sample's share is then malformed, and counted (the
	# sample is unwound from its own bytes).
	run -0 sp-unwind -o "$D/moved-reset.unw" "$D/moved-reset.raw"
	[ "$(unwind_field "$D/moved-reset.unw" bad_shared_copies)" = 1 ]
}

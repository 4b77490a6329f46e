#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Long recordings: scripts/repeat-samples, which makes figure 20's stream
# ten times as long, and scripts/bench --only long.

load helper

REPEAT=$TOP/scripts/repeat-samples

# sample_count FILE: the sample records of a stream.
sample_count() {
	local -
	set -o pipefail
	sp-cat -t sample "$1" | wc -l
}

@test "repeat-samples: the samples three times, later each time, every stack copy whole" {
	local d=$BATS_TEST_TMPDIR
	sp-capture -q -F 999 -o "$d/raw" -- "$WORKLOADS/spin" -t 2 0.5
	local n shared
	n=$(sample_count "$d/raw")
	[ "$n" -gt 100 ]
	# The recording shares stack tails, which the copies must complete.
	shared=$(sp-cat -t sample "$d/raw" | jq -s 'map(select((.ustack_shared // 0) > 0)) | length')
	[ "$shared" -gt 0 ]
	run -0 /usr/bin/python3 "$REPEAT" 3 "$d/raw" "$d/rep"
	[ "$(sample_count "$d/rep")" -eq $((3 * n)) ]
	[ "$(summary "$d/rep" samples)" -eq $((3 * $(summary "$d/raw" samples))) ]
	[ "$(summary "$d/rep" sample_events)" -eq $((3 * $(summary "$d/raw" sample_events))) ]
	# The times never go back, and the last round ends three spans on.
	run -0 jq -s 'map(.time) | . == sort' < <(sp-cat -t sample "$d/rep")
	[ "$output" = true ]
	# Each sample's whole stack copy, by the format's own reader, is the
	# one of its original: the first of a thread in a round as well.
	run -0 /usr/bin/python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
import sp_stream

def copies(path):
    with open(path, "rb") as f:
        reader = sp_stream.Reader(f)
        return [reader.stack_copy(r) for r in reader.records() if r["t"] == "sample"]

raw, rep = copies(sys.argv[2]), copies(sys.argv[3])
print("same" if rep == raw * 3 else "differ")' "$TOP/format" "$d/raw" "$d/rep"
	[ "$output" = same ]
	# The other records come once.
	[ "$(sp-cat -t map "$d/rep" | wc -l)" -eq "$(sp-cat -t map "$d/raw" | wc -l)" ]
	[ "$(sp-cat -t summary "$d/rep" | wc -l)" -eq 1 ]

	# Unwound, every copy is whole, and each stack comes three times as often.
	run -0 sp-unwind -o "$d/raw.unw" "$d/raw"
	run -0 sp-unwind -o "$d/rep.unw" "$d/rep"
	[ "$(sp-cat -t unwind "$d/rep.unw" | jq .bad_shared_copies)" -eq 0 ]
	local c1 c3
	c1=$(sp-cat -t unwind "$d/raw.unw" | jq .complete)
	c3=$(sp-cat -t unwind "$d/rep.unw" | jq .complete)
	[ "$c3" -eq $((3 * c1)) ]
	sp-symbolize -o "$d/raw.sym" "$d/raw.unw"
	sp-symbolize -o "$d/rep.sym" "$d/rep.unw"
	sp-fold -o "$d/raw.folded" "$d/raw.sym"
	sp-fold -o "$d/rep.folded" "$d/rep.sym"
	awk '{ $NF = 3 * $NF; print }' "$d/raw.folded" | sort > "$d/want"
	sort "$d/rep.folded" > "$d/got"
	run -0 diff "$d/want" "$d/got"
}

@test "repeat-samples: once is the same records; bad arguments and streams are refused" {
	local d=$BATS_TEST_TMPDIR
	run -0 /usr/bin/python3 "$REPEAT" 1 "$VECTORS/raw.sps" "$d/one"
	run -0 diff <(sp-cat "$VECTORS/raw.sps") <(sp-cat "$d/one")
	run -2 /usr/bin/python3 "$REPEAT" 0 "$VECTORS/raw.sps" "$d/out"
	[[ "$output" == *"usage: repeat-samples N IN OUT"* ]]
	run -2 /usr/bin/python3 "$REPEAT" 2 "$VECTORS/raw.sps"
	printf 'not a stream\n' > "$d/text"
	run -1 /usr/bin/python3 "$REPEAT" 2 "$d/text" "$d/out"
	[[ "$output" == "repeat-samples: '$d/text': "* ]]
	# Two segments cannot be lengthened as one.
	cat "$VECTORS/raw.sps" "$VECTORS/raw.sps" > "$d/two"
	run -1 /usr/bin/python3 "$REPEAT" 2 "$d/two" "$d/out"
	[[ "$output" == *"a second segment"* ]]
}

@test "scripts/bench --only long: figure 20 alone, every stage judged at 1x and 10x" {
	run -0 env BUILD="${SP_BUILD%/san}" "$TOP/scripts/bench" --quick --only long
	echo "$output"
	[[ "$output" == *"20 long recordings at 999 Hz"* ]]
	local tool r='( \[[^]]*\])?'
	for tool in capture unwind symbolize fold; do
		grep -qE "^   sp-$tool: peak RSS growth +[-+][0-9.]+%$r +- +within 20% +(met|not met)" <<< "$output"
		grep -qE "^   sp-$tool: samples/s per core, 10x/1x +[0-9.]+$r +- +>= 0.80 +(met|not met)" <<< "$output"
		grep -qE "^   sp-$tool: at 1x; at 10x +[1-9][0-9]* KB; [1-9][0-9]* KB" <<< "$output"
	done
	grep -qE "^   sp-fold: distinct stacks, 1x; 10x +([1-9][0-9]*); \1 " <<< "$output"
	grep -qE "^   recorder CPU per 1000 samples, 999 Hz +[0-9]+ms$r +([0-9]+ms|perf unavailable)" <<< "$output"
	grep -qE "^   samples, 1x; 10x +([1-9][0-9]*); \10 " <<< "$output"
	run -1 grep -qE '^(1a|2 |4a|5 |6 |12 |16 |17 )' <<< "$output"
}

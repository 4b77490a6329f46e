#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# format/sp_stream.py, the documented Python reader of the stream: what it
# makes of real recordings agrees with the tools, and a cut stream is
# reported where sp-cat reports it.

load helper

setup_file() {
	export REF=$BATS_FILE_TMPDIR/spin.sps
	symbolized "$REF" "$WORKLOADS/spin" 0.5
}

setup() {
	T=$BATS_TEST_TMPDIR
	READER=$TOP/format/sp_stream.py
}

@test "its folded stacks are sp-fold --show-hidden's, on a 2-thread recording and an off-CPU one" {
	/usr/bin/python3 "$READER" "$REF" > "$T/py.folded"
	sp-fold --show-hidden "$REF" > "$T/sp.folded"
	[ "$(lines "$T/sp.folded")" -ge 3 ]
	cmp "$T/py.folded" "$T/sp.folded"
	sp-capture -q --off-cpu -o "$T/oc.raw" -- "$WORKLOADS/halfsleep" 0.5 > /dev/null
	sp-unwind "$T/oc.raw" | sp-symbolize > "$T/oc.sym"
	/usr/bin/python3 "$READER" --folded "$T/oc.sym" > "$T/py2.folded"
	sp-fold --show-hidden "$T/oc.sym" 2> /dev/null > "$T/sp2.folded"
	cmp "$T/py2.folded" "$T/sp2.folded"
}

@test "as a module: samples with their event, names and frames; raw stack copies put back together" {
	run -0 /usr/bin/python3 - "$TOP/format" "$REF.raw" "$REF" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import sp_stream

with open(sys.argv[2], "rb") as f:
    r = sp_stream.Reader(f)
    own = whole = n = 0
    for rec in r.records():
        if rec["t"] == "sample" and "ustack" in rec:
            copy = r.stack_copy(rec)
            own += len(rec["ustack"])
            whole += len(copy)
            n += 1
    # The stream wrote only what changed: the copies put back are larger.
    assert n > 100 and whole > own, (n, own, whole)
with open(sys.argv[3], "rb") as f:
    r = sp_stream.Reader(f)
    seen = set()
    for s in r.samples():
        assert s.event == "cpu-clock" and s.comm == "spin", (s.event, s.comm)
        seen.update(fr.name for fr in s.frames)
    assert "leaf_compute" in seen and "main" in seen, seen
print("ok")
PY
	[ "$output" = ok ]
}

@test "--count agrees with sp-cat; a cut stream names sp-cat's offset and record, after the records before it" {
	/usr/bin/python3 "$READER" --count "$REF.raw" > "$T/py.count"
	sp-cat "$REF.raw" | jq -r .t | sort | uniq -c | awk '{ print $2, $1 }' > "$T/cat.count"
	cmp "$T/py.count" "$T/cat.count"
	cut_inside "$REF.raw" 1 2 > "$T/cut.sps"
	run -1 --separate-stderr sp-cat "$T/cut.sps"
	where=$(printf '%s\n' "$stderr" | grep -o 'byte offset [0-9]*, record [0-9]*')
	[ -n "$where" ]
	run -1 --separate-stderr /usr/bin/python3 "$READER" --count "$T/cut.sps"
	[[ "$stderr" == *"$where: the stream ends inside a record"* ]]
	[[ "$output" == *"header 1"* ]]
	printf '\xc1' > "$T/bad.sps"
	run -1 --separate-stderr /usr/bin/python3 "$READER" --count "$T/bad.sps"
	[[ "$stderr" == *"byte offset 0, record 0: not MessagePack"* ]]
}

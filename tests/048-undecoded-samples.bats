#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-unwind and sp-fold read samples from their bytes, undecoded
# (sp_reader_undecoded()): a sample's keys they do not consume pass on as
# they were, however many; a sample the reader cannot take plainly (a key
# twice, more keys than it tracks) is decoded instead and gives the same
# result; a sample against the schema is a fault at its offset, after
# every record before it, with -j 1 and -j 2 alike.

load helper

setup() {
	D=$BATS_TEST_TMPDIR/d
	mkdir -p "$D"
	sp-capture -q -F 999 -o "$D/raw.sps" -- "$WORKLOADS/spin" -t 2 0.3
}

# variant MODE IN OUT: IN with its samples changed (MODE: extra, some, many,
# dup, badpid, badtime), record by record through Python's msgpack, which
# keeps every integer (jq would round a register to a float).
variant() {
	/usr/bin/python3 - "$@" <<'PY'
import sys
import msgpack
mode, src, dst = sys.argv[1:4]
n = 0
with open(src, "rb") as f, open(dst, "wb") as out:
    pk = msgpack.Packer(use_bin_type=True)
    for rec in msgpack.Unpacker(f, raw=False, strict_map_key=False):
        if rec.get("t") == "sample":
            n += 1
            if mode == "extra":
                rec.update(note="kept", extra=[1, "two", {"three": 3}], weight=7)
            elif mode in ("some", "many"):
                rec.update({"k%d" % i: i for i in range(20 if mode == "some" else 70)})
            elif mode == "badpid" and n == 10:
                rec["pid"] = "one"
            elif mode == "badtime" and n == 10:
                rec["time"] = -1
            elif mode == "dup":
                # The map with a second tid after the others.
                out.write(pk.pack_map_header(len(rec) + 1))
                for k, v in list(rec.items()) + [("tid", 1)]:
                    out.write(pk.pack(k) + pk.pack(v))
                continue
        out.write(pk.pack(rec))
PY
}

# samples FILE: the unwound samples of a stream as JSON lines, without the keys in DROP.
samples() {
	local -
	set -o pipefail
	sp-cat "$1" | jq -c "select(.t == \"sample\") | del(${DROP:-.none}) |
		with_entries(select(.key | test(\"^k[0-9]+$\") | not))"
}

@test "keys sp-unwind does not consume pass on as they were, with -j 1 and -j 2" {
	variant extra "$D/raw.sps" "$D/extra.sps"
	# The same arguments but -j (which the header leaves out): the same bytes.
	sp-unwind -j 1 < "$D/extra.sps" > "$D/extra1.unw"
	sp-unwind -j 2 < "$D/extra.sps" > "$D/extra2.unw"
	cmp "$D/extra1.unw" "$D/extra2.unw"
	run -0 sp-unwind -o "$D/plain.unw" "$D/raw.sps"
	samples "$D/extra1.unw" > "$D/a"
	run -0 jq -e -s 'length > 10 and all(.note == "kept" and .extra == [1, "two", {"three": 3}] and .weight == 7)' "$D/a"
	DROP='.note, .extra, .weight' samples "$D/extra1.unw" > "$D/b"
	samples "$D/plain.unw" > "$D/c"
	cmp "$D/b" "$D/c"
}

@test "samples of many keys: 20 read undecoded, 70 (more than the reader tracks) decoded; the same stacks" {
	run -0 sp-unwind -o "$D/plain.unw" "$D/raw.sps"
	samples "$D/plain.unw" > "$D/c"
	sp-symbolize -o "$D/plain.sym" "$D/plain.unw"
	for mode in some many; do
		variant $mode "$D/raw.sps" "$D/$mode.sps"
		sp-unwind -j 1 < "$D/$mode.sps" > "$D/${mode}1.unw"
		sp-unwind -j 2 < "$D/$mode.sps" > "$D/${mode}2.unw"
		cmp "$D/${mode}1.unw" "$D/${mode}2.unw"
		last=$([ $mode = some ] && echo 19 || echo 69)
		run -0 jq -e -s "length > 10 and all(.k0 == 0 and .k$last == $last)" \
			<(sp-cat "$D/${mode}1.unw" | jq -c 'select(.t == "sample")')
		samples "$D/${mode}1.unw" > "$D/b"
		cmp "$D/b" "$D/c"
		# sp-fold reads them decoded and undecoded alike.
		sp-symbolize -o "$D/$mode.sym" "$D/${mode}1.unw"
		cmp <(sp-fold "$D/$mode.sym") <(sp-fold "$D/plain.sym")
	done
}

@test "a key given twice: the first value counts, as when decoded" {
	variant dup "$D/raw.sps" "$D/dup.sps"
	run -0 sp-unwind -o "$D/dup.unw" "$D/dup.sps"
	run -0 sp-unwind -o "$D/plain.unw" "$D/raw.sps"
	samples "$D/plain.unw" > "$D/c"
	samples "$D/dup.unw" > "$D/b"
	cmp "$D/b" "$D/c"
}

@test "a sample against the schema: a fault at its offset, every record before it kept" {
	# The tenth sample's pid is a string.
	variant badpid "$D/raw.sps" "$D/bad.sps"
	for j in 1 2; do
		run -1 sp-unwind -j $j -o "$D/bad$j.unw" "$D/bad.sps"
		[[ "$output" == *"byte offset "*", record "*"sample record: key has the wrong type 'pid'"* ]]
		run -0 jq -s '[.[] | select(.t == "sample")] | length' <(sp-cat "$D/bad$j.unw")
		[ "$output" = 9 ]
	done
	# sp-fold says the same of an unwound stream with such a sample.
	run -0 sp-unwind -o "$D/plain.unw" "$D/raw.sps"
	variant badtime "$D/plain.unw" "$D/badu.unw"
	run -1 sp-fold "$D/badu.unw"
	[[ "$output" == *"sample record: key has the wrong type 'time'"* ]]
}

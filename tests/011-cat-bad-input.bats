#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Bad input: one clear message naming the byte offset and the record,
# every complete record before the fault still processed, exit status 1
# (2 when not one record could be read: no partial result), no crash, no
# hang, bounded memory.

load helper

# craft NAME: builds $BATS_TEST_TMPDIR/NAME.sps from the JSON lines on stdin.
craft() {
	sp-cat --from-json > "$BATS_TEST_TMPDIR/$1.sps"
}

# The first record of the raw vector (its header) as JSON.
header() {
	head -n 1 "$VECTORS/raw.jsonl"
}

@test "a stream cut at any byte: the records before the cut, then the offset" {
	size=$(stat -c %s "$VECTORS/raw.sps")
	first=$(header | sp-cat --from-json | wc -c)
	for ((n = 1; n < size; n += 7)); do
		head -c $n "$VECTORS/raw.sps" > "$BATS_TEST_TMPDIR/cut.sps"
		run sp-cat "$BATS_TEST_TMPDIR/cut.sps"
		# Cut inside the header, nothing is read: no partial result.
		[ "$status" -eq "$([ "$n" -lt "$first" ] && echo 2 || echo 1)" ]
		[[ "$output" == *"byte offset "*", record "* || "$output" == *"without a summary record"* ]]
	done
	# One exact case: cut inside the third record.
	off=$(( $(head -n 2 "$VECTORS/raw.jsonl" | sp-cat --from-json | wc -c) ))
	head -c $((off + 10)) "$VECTORS/raw.sps" > "$BATS_TEST_TMPDIR/cut.sps"
	sp-cat "$BATS_TEST_TMPDIR/cut.sps" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" || st=$?
	[ "$st" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "sp-cat: '$BATS_TEST_TMPDIR/cut.sps': byte offset $off, record 2: stream ends inside a record (10 bytes of an incomplete record)" ]
	[ "$(cat "$BATS_TEST_TMPDIR/out")" = "$(head -n 2 "$VECTORS/raw.jsonl")" ]
}

@test "a stream cut at a record boundary is reported as having no summary" {
	head -n 5 "$VECTORS/raw.jsonl" | craft cut
	run --separate-stderr sp-cat "$BATS_TEST_TMPDIR/cut.sps"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 5 ]
	[[ "$stderr" == *"stream ends without a summary record after 5 records: it was cut short"* ]]
}

@test "random bytes are refused at byte offset 0" {
	/usr/bin/python3 -c 'import random, sys; random.seed(7); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(4096)))' > "$BATS_TEST_TMPDIR/rand"
	run sp-cat "$BATS_TEST_TMPDIR/rand"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-cat: '$BATS_TEST_TMPDIR/rand' is not a stackpulse stream: it begins with bytes of no kind known here (52 f2 26 65 a6 0c 12 d2 ...), where a stream begins with its header record" ]
	# Random bytes after a valid header: the header is still shown.
	{ header | sp-cat --from-json; cat "$BATS_TEST_TMPDIR/rand"; } > "$BATS_TEST_TMPDIR/mixed.sps"
	run --separate-stderr sp-cat "$BATS_TEST_TMPDIR/mixed.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == '{"t":"header"'* ]]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$stderr" == *"byte offset $(header | sp-cat --from-json | wc -c), record 1: "* ]]
}

@test "a MessagePack value that is not a record" {
	{ header; echo '[1,2,3]'; } | craft notmap
	run sp-cat "$BATS_TEST_TMPDIR/notmap.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"record 1: expected a record (a MessagePack map), found an array (byte 0x93)"* ]]
	{ header; echo '{"pid":1}'; } | craft notype
	run sp-cat "$BATS_TEST_TMPDIR/notype.sps"
	[[ "$output" == *"record 1: record has no type key 't'"* ]]
}

@test "a record missing a required key, or with a key of the wrong type" {
	{ header; echo '{"t":"sample","pid":1,"time":5}'; } | craft missing
	run sp-cat "$BATS_TEST_TMPDIR/missing.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"record 1: sample record: required key missing 'tid'"* ]]
	{ header; echo '{"t":"map","pid":"1","start":0,"len":1,"pgoff":0,"path":"x"}'; } | craft wrongtype
	run sp-cat "$BATS_TEST_TMPDIR/wrongtype.sps"
	[[ "$output" == *"record 1: map record: key has the wrong type 'pid'"* ]]
}

@test "a foreign format name and a newer major version are refused" {
	header | sed 's/"format":"stackpulse"/"format":"otherprof"/' | craft foreign
	run sp-cat "$BATS_TEST_TMPDIR/foreign.sps"
	[ "$status" -eq 2 ]
	[[ "$output" == *"byte offset 0, record 0: foreign format 'otherprof' (expected 'stackpulse')"* ]]
	header | sed 's/"version":\[1,0\]/"version":[2,0]/' | craft newer
	run sp-cat "$BATS_TEST_TMPDIR/newer.sps"
	[[ "$output" == *"stream format version 2.0 is not supported (this reader knows version 1.x)"* ]]
	# A newer minor version is read.
	header | sed 's/"version":\[1,0\]/"version":[1,9]/' | craft minor
	run sp-cat -t header "$BATS_TEST_TMPDIR/minor.sps"
	[[ "$output" == *'"version":[1,9]'* ]]
	# A second segment with a bad header stops there, after the first.
	cat "$VECTORS/raw.sps" "$BATS_TEST_TMPDIR/newer.sps" > "$BATS_TEST_TMPDIR/two.sps"
	run --separate-stderr sp-cat "$BATS_TEST_TMPDIR/two.sps"
	[ "$status" -eq 1 ]
	[ "$output" = "$(cat "$VECTORS/raw.jsonl")" ]
	[[ "$stderr" == *"byte offset $(stat -c %s "$VECTORS/raw.sps"), record $(lines "$VECTORS/raw.jsonl"): stream format version 2.0"* ]]
}

@test "a stream without a header, and a perf.data file" {
	sed -n 2p "$VECTORS/raw.jsonl" | craft nohdr
	run sp-cat "$BATS_TEST_TMPDIR/nohdr.sps"
	[ "$status" -eq 2 ]
	[[ "$output" == *"record 0: stream does not start with a header record (found 'process')"* ]]
	printf 'PERFILE2\x68\0\0\0\0\0\0\0' > "$BATS_TEST_TMPDIR/perf.data"
	run sp-cat "$BATS_TEST_TMPDIR/perf.data"
	[ "$status" -eq 2 ]
	[[ "$output" == *"is a perf.data file (from perf record), not a stackpulse stream"* ]]
}

@test "an oversized record is refused without reading it into memory" {
	{ header; /usr/bin/python3 -c 'import base64; print("{\"t\":\"x\",\"b\":{\"$bin\":\"%s\"}}" % base64.b64encode(bytes(1100000)).decode())'; } | craft big
	run sp-cat "$BATS_TEST_TMPDIR/big.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"record 1: record larger than the limit of 1048576 bytes"* ]]
	run --separate-stderr sp-cat --max-record 2000000 -t x "$BATS_TEST_TMPDIR/big.sps"
	[[ "$output" == '{"t":"x","b":{"$bin":"AAAA'* ]]
	# A map declaring 4 billion entries: bounded by the limit, not by the count.
	{ header | sp-cat --from-json; printf '\xdf\xff\xff\xff\xff'; head -c 3000000 /dev/zero; } > "$BATS_TEST_TMPDIR/huge.sps"
	run /usr/bin/time -f 'maxrss=%M' sp-cat "$BATS_TEST_TMPDIR/huge.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"record 1: record larger than the limit"* ]]
	rss=$(grep -o 'maxrss=[0-9]*' <<< "$output" | cut -d= -f2)
	[ "$rss" -lt 200000 ]
}

@test "a deeply nested object is refused" {
	{ header | sp-cat --from-json; printf '\x82\xa1t\xa1x\xa1n'; head -c 100000 /dev/zero | tr '\0' '\221'; printf '\x01'; } > "$BATS_TEST_TMPDIR/deep.sps"
	run sp-cat "$BATS_TEST_TMPDIR/deep.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"record 1: malformed record: nesting deeper than the limit"* ]]
	# Sixteen levels are fine.
	{ header; echo '{"t":"x","n":[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]}'; } | craft ok
	run sp-cat -t x "$BATS_TEST_TMPDIR/ok.sps"
	[[ "$output" == *'[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]'* ]]
}

@test "the byte 0xc1, never used by MessagePack, is malformed input" {
	{ header | sp-cat --from-json; printf '\x81\xa1t\xc1'; } > "$BATS_TEST_TMPDIR/c1.sps"
	run sp-cat "$BATS_TEST_TMPDIR/c1.sps"
	[ "$status" -eq 1 ]
	[[ "$output" == *"record 1: malformed record: byte 0xc1 is never used in MessagePack"* ]]
}

@test "a closed output is an error, not a silent success" {
	run bash -c "sp-cat '$VECTORS/raw.sps' > /dev/full"
	[ "$status" -eq 2 ]
	[[ "$output" == *"No space left on device"* ]]
	run bash -c "sp-cat --from-json '$VECTORS/raw.jsonl' > /dev/full"
	[ "$status" -eq 2 ]
	[[ "$output" == *"No space left on device"* ]]
}

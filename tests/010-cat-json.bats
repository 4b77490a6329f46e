#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-cat: JSON rendering of every MessagePack value class, the exact round
# trip, type filtering, output files, follow mode.

load helper

@test "every MessagePack value class renders and round-trips exactly" {
	cat > "$BATS_TEST_TMPDIR/v.jsonl" <<'JSON'
{"t":"x","u":[0,127,128,255,256,65535,65536,4294967295,4294967296,18446744073709551615],"i":[-1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649,-9223372036854775808]}
{"t":"x","f":[0.5,-0.0,1e+300,3.0,0.1],"f32":{"$f32":1.5},"nan":{"$f64":"nan"},"b":{"$bin":"AAEC/w=="},"s":"\u0001\u001f tab\t é","sb":{"$strb":"gA=="},"e":{"$ext":-1,"data":"AA=="},"m":{"$map":[[null,1],[true,2],["$k",3]]},"n":null}
JSON
	sp-cat --from-json "$BATS_TEST_TMPDIR/v.jsonl" > "$BATS_TEST_TMPDIR/v.sps"
	run sp-cat "$BATS_TEST_TMPDIR/v.sps"
	[ "$status" -eq 2 ]	# no header: not one record could be read
	[[ "$output" == *"does not start with a header"* ]]
	# Round trip without the header check: wrap in a header and a summary.
	{ head -n 1 "$VECTORS/values.jsonl"; cat "$BATS_TEST_TMPDIR/v.jsonl"; tail -n 1 "$VECTORS/values.jsonl"; } > "$BATS_TEST_TMPDIR/w.jsonl"
	sp-cat --from-json "$BATS_TEST_TMPDIR/w.jsonl" > "$BATS_TEST_TMPDIR/w.sps"
	run sp-cat "$BATS_TEST_TMPDIR/w.sps"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/w.jsonl")" ]
	sp-cat "$BATS_TEST_TMPDIR/w.sps" | sp-cat --from-json | cmp - "$BATS_TEST_TMPDIR/w.sps"
}

@test "integers take MessagePack's smallest encoding" {
	printf '{"a":5}\n{"a":200}\n{"a":-1}\n{"a":70000}\n' | sp-cat --from-json > "$BATS_TEST_TMPDIR/i.bin"
	run od -An -tx1 "$BATS_TEST_TMPDIR/i.bin"
	[ "$(echo $output)" = "81 a1 61 05 81 a1 61 cc c8 81 a1 61 ff 81 a1 61 ce 00 01 11 70" ]
}

@test "--type shows only the named record types" {
	run sp-cat -t sample,lost "$VECTORS/raw.sps"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	for l in "${lines[@]}"; do [[ "$l" == '{"t":"sample"'* || "$l" == '{"t":"lost"'* ]]; done
}

@test "-o writes to a file; a binary stream is never written to a terminal" {
	sp-cat -o "$BATS_TEST_TMPDIR/out.jsonl" "$VECTORS/raw.sps"
	cmp "$BATS_TEST_TMPDIR/out.jsonl" "$VECTORS/raw.jsonl"
	sp-cat --from-json -o "$BATS_TEST_TMPDIR/out.sps" "$VECTORS/raw.jsonl"
	cmp "$BATS_TEST_TMPDIR/out.sps" "$VECTORS/raw.sps"
	run script -qec "sp-cat --from-json '$VECTORS/raw.jsonl'" /dev/null
	[ "$status" -eq 3 ]
	[[ "$output" == *"refusing to write a binary stream to a terminal"* ]]
}

@test "bad JSON names the line and column; the records before it are written" {
	printf '{"t":"a"}\n\n{"t":"b"}\n{"t": nope}\n{"t":"c"}\n' > "$BATS_TEST_TMPDIR/bad.jsonl"
	run sp-cat --from-json -o "$BATS_TEST_TMPDIR/bad.sps" "$BATS_TEST_TMPDIR/bad.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *"line 4: column 7: expected a value (the 2 records before it were written)"* ]]
	run od -An -c "$BATS_TEST_TMPDIR/bad.sps"
	[[ "$output" == *"a"*"b"* ]]
	for bad in '{"$bin":"abc"}' '{"a":1,"$b":2}' '[1,2' '18446744073709551616' '{"$nope":1}' '"\ud800"' '{"a" 1}' '[1] x'; do
		run sp-cat --from-json -o /dev/null <<< "$bad"
		[ "$status" -eq 1 ]
		[[ "$output" == *"line 1: column "* ]]
	done
}

@test "--follow reads a file while it is written and ends at the summary" {
	f=$BATS_TEST_TMPDIR/grow.sps
	size=$(stat -c %s "$VECTORS/raw.sps")
	head -c 700 "$VECTORS/raw.sps" > "$f"
	sp-cat --follow "$f" > "$BATS_TEST_TMPDIR/out.jsonl" &
	pid=$!
	sleep 0.3
	# Half a record more: still nothing past the last complete record.
	tail -c +701 "$VECTORS/raw.sps" | head -c 100 >> "$f"
	sleep 0.3
	kill -0 $pid
	tail -c +801 "$VECTORS/raw.sps" >> "$f"
	wait $pid
	cmp "$BATS_TEST_TMPDIR/out.jsonl" "$VECTORS/raw.jsonl"
}

@test "--follow ends cleanly on SIGINT at a record boundary" {
	f=$BATS_TEST_TMPDIR/grow.sps
	head -n 3 "$VECTORS/raw.jsonl" | sp-cat --from-json > "$f"
	sp-cat --follow "$f" > "$BATS_TEST_TMPDIR/out.jsonl" &
	pid=$!
	sleep 0.3
	kill -INT $pid
	st=0
	wait $pid || st=$?
	[ "$st" -eq 1 ]	# no summary: partial
	[ "$(lines "$BATS_TEST_TMPDIR/out.jsonl")" -eq 3 ]
}

@test "--help shows the exit-status table; bad options are usage errors" {
	run sp-cat --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Exit status:"*"1  finished, but the result is partial"*"3  usage error"* ]]
	run sp-cat --bogus
	[ "$status" -eq 3 ]
	run sp-cat --from-json --type sample
	[ "$status" -eq 3 ]
	run sp-cat /nonexistent/file.sps
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot open '/nonexistent/file.sps': No such file or directory"* ]]
}

@test "a reader that stops early is not an error; --follow with --type still ends at the summary" {
	for i in $(seq 200); do cat "$VECTORS/raw.sps"; done > "$BATS_TEST_TMPDIR/big.sps"
	run bash -c "set -o pipefail; sp-cat '$BATS_TEST_TMPDIR/big.sps' 2>'$BATS_TEST_TMPDIR/err' | head -n 1"
	[ "$status" -eq 0 ]
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	run timeout 10 sp-cat --follow -t sample "$VECTORS/raw.sps"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
}

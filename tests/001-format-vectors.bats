#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The checked-in test vectors: sp-cat rebuilds each stream from its JSON
# lines byte for byte and renders each stream back to the same lines, and
# a consumer written with Python's msgpack module alone reads them.

load helper

@test "sp-cat --from-json rebuilds every vector byte for byte" {
	for j in "$VECTORS"/*.jsonl; do
		sp-cat --from-json "$j" > "$BATS_TEST_TMPDIR/out.sps"
		cmp "$BATS_TEST_TMPDIR/out.sps" "${j%.jsonl}.sps"
	done
}

@test "sp-cat renders every vector to its JSON lines exactly" {
	for s in "$VECTORS"/*.sps; do
		run sp-cat "$s"
		[ "$status" -eq 0 ]
		[ "$output" = "$(cat "${s%.sps}.jsonl")" ]
	done
}

@test "sp-cat reads a stream from a pipe as from a file" {
	run bash -c "set -o pipefail; cat '$VECTORS/raw.sps' | sp-cat"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$VECTORS/raw.jsonl")" ]
	run sp-cat - < "$VECTORS/raw.sps"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$VECTORS/raw.jsonl")" ]
}

@test "concatenated streams are one valid stream of several segments" {
	cat "$VECTORS/raw.sps" "$VECTORS/unwound.sps" "$VECTORS/symbolized.sps" > "$BATS_TEST_TMPDIR/all.sps"
	run sp-cat "$BATS_TEST_TMPDIR/all.sps"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$VECTORS/raw.jsonl" "$VECTORS/unwound.jsonl" "$VECTORS/symbolized.jsonl")" ]
	run sp-cat -t header "$BATS_TEST_TMPDIR/all.sps"
	[ "${#lines[@]}" -eq 3 ]
}

@test "a consumer using only Python's msgpack module reads every vector" {
	for s in "$VECTORS"/*.sps; do
		run /usr/bin/python3 "$TOP/format/examples/read-stream.py" "$s"
		[ "$status" -eq 0 ]
		[ "$output" = "$(cat "${s%.sps}.consume.txt")" ]
	done
}

@test "the Python consumer resolves symbolized stacks as the spec says" {
	run /usr/bin/python3 "$TOP/format/examples/read-stream.py" "$VECTORS/symbolized.sps"
	[[ "$output" == *"__libc_start_call_main;main;work;square;do_syscall_64"* ]]
}

@test "unknown record types and keys pass through sp-cat unchanged" {
	run sp-cat "$VECTORS/values.sps"
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" == '{"t":"x-future-record",'* ]]
	[[ "${lines[0]}" == *'"future_key":'* ]]
}

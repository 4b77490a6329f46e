#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# format/sp-stream.md documents exactly the schema the reader enforces
# (libcommon/stream/record.h), and sp-stream(5) is generated from it.

load helper

# Lines "record key type required" from the X-macros of record.h.
schema_from_code() {
	local -
	set -o pipefail
	sed -n 's/^[[:space:]]*X(\([A-Z]*\), "\([a-z0-9_]*\)", \([A-Z_]*\), SP_\(REQ\|OPT\)).*/\1 \2 \3 \4/p' "$TOP/libcommon/stream/record.h" |
		awk '{ t = tolower($3); if (t == "uint_or_nil") t = "uint or nil"
		       print tolower($1), $2, t, ($4 == "REQ" ? "yes" : "no") }' | sort
}

# The same from the tables under the "### record" headings of the spec.
schema_from_spec() {
	local -
	set -o pipefail
	awk -F'|' '
		/^### / { rec = $0; sub(/^### /, "", rec); next }
		/^## / { rec = "" }
		rec != "" && /^\| / && $2 !~ /key/ && $2 !~ /---/ {
			k = $2; t = $3; r = $5
			gsub(/^ +| +$/, "", k); gsub(/^ +| +$/, "", t); gsub(/^ +| +$/, "", r)
			if (k != "t") print rec, k, t, r
		}' "$TOP/format/sp-stream.md" | sort
}

@test "every key of every record type is documented with its type and requirement" {
	schema_from_code > "$BATS_TEST_TMPDIR/code"
	schema_from_spec > "$BATS_TEST_TMPDIR/spec"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/code")" -gt 100 ]
	diff "$BATS_TEST_TMPDIR/code" "$BATS_TEST_TMPDIR/spec"
}

@test "every record type has a section" {
	for t in $(sed -n 's/^[[:space:]]*X([A-Z]*, "\([a-z]*\)") *\\\?$/\1/p' "$TOP/libcommon/stream/record.h"); do
		grep -q "^### $t\$" "$TOP/format/sp-stream.md"
	done
}

@test "every error kind is documented with its description" {
	grep -o 'X([A-Z_]*, "[a-z_]*", *\\' "$TOP/libcommon/stream/vocab.h" > /dev/null
	sed -n '/SP_ERROR_KINDS(X)/,/^$/p' "$TOP/libcommon/stream/vocab.h" |
		grep -o '"[a-z_]*",' | tr -d '",' > "$BATS_TEST_TMPDIR/kinds"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/kinds")" -ge 7 ]
	while read -r k; do
		grep -q "^| $k |" "$TOP/format/sp-stream.md"
	done < "$BATS_TEST_TMPDIR/kinds"
}

@test "sp-stream(5) is generated from the spec and renders cleanly" {
	[ -s "$SP_BUILD/man/sp-stream.5" ]
	grep -q '^\.SH NAME' "$SP_BUILD/man/sp-stream.5"
	grep -q 'ustack_shared' "$SP_BUILD/man/sp-stream.5"
	if command -v groff > /dev/null; then
		run groff -t -man -Tutf8 -z "$SP_BUILD/man/sp-stream.5"
		[ -z "$output" ]
	fi
}

@test "the man pages of the tools exist and state the exit statuses" {
	for t in "$BIN"/sp-*; do
		n=${t##*/}
		[ -f "$TOP/man/$n.1" ]
		grep -q 'EXIT STATUS' "$TOP/man/$n.1"
	done
}

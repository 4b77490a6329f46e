#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Each tool's --help and its man page list the same options: a reader of
# either finds every option, and an option added to one is added to both.

load helper

# help_options TOOL: the options --help lists, one a line, sorted: the
# leading "-x, --long" of each line that starts with an option.
help_options() {
	local -
	set -o pipefail
	"$1" --help | grep -E '^ {2,}-' | sed -E 's/^ +//; s/  .*//' |
		grep -oE '(^|, )--?[A-Za-z0-9][A-Za-z0-9-]*' | sed 's/^, //' | sort -u
}

# man_options PAGE: the options the OPTIONS section of a man page lists,
# one a line, sorted: those of each tag line (the line after .TP or .TQ).
man_options() {
	local -
	set -o pipefail
	awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 }
	     on && prev ~ /^\.T[PQ]/ { print } { prev = $0 }' "$1" |
		sed -E 's/\\-/-/g; s/\\f[BIRP]//g; s/"//g' |
		grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' | sed -E 's/^[ ,]//' | sort -u
}

@test "every tool has a man page and every man page a tool" {
	local t n=0
	for t in "$BIN"/sp-*; do
		[ -f "$TOP/man/$(basename "$t").1" ] || { echo "no man page for $t"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 7 ]
	for t in "$TOP"/man/sp-*.1; do
		[ -x "$BIN/$(basename "$t" .1)" ] || { echo "no tool for $t"; false; }
	done
}

@test "each tool's --help options equal its man page's OPTIONS" {
	local t name bad=0
	for t in "$TOP"/man/sp-*.1; do
		name=$(basename "$t" .1)
		help_options "$BIN/$name" > "$BATS_TEST_TMPDIR/help"
		man_options "$t" > "$BATS_TEST_TMPDIR/man"
		# Both parsers found the options every tool has.
		grep -qx -- --help "$BATS_TEST_TMPDIR/help"
		grep -qx -- --version "$BATS_TEST_TMPDIR/man"
		if ! diff -u --label "$name --help" --label "man/$name.1 OPTIONS" \
			"$BATS_TEST_TMPDIR/help" "$BATS_TEST_TMPDIR/man"; then
			bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "each option --help lists is one the tool takes" {
	local t name o
	for t in "$TOP"/man/sp-*.1; do
		name=$(basename "$t" .1)
		for o in $(help_options "$BIN/$name" | grep -- '^--'); do
			[ "$o" = --help ] || [ "$o" = --version ] && continue
			# getopt says "unrecognized option" only of an option it does not know,
			# on standard error, at once.  An option alone may start work that
			# runs until a signal (sp-capture -a): it is ended, its output dropped.
			run sh -c 'timeout -s INT 2 "$0" "$1" < /dev/null 2>&1 > /dev/null' "$BIN/$name" "$o"
			if [[ "$output" == *"unrecognized option"* ]]; then
				echo "$name: $o is in --help but not taken"
				false
			fi
		done
	done
}

@test "the options a SYNOPSIS shows are options of the page" {
	local t
	for t in "$TOP"/man/sp-*.1; do
		man_options "$t" > "$BATS_TEST_TMPDIR/man"
		awk '/^\.SH SYNOPSIS/ { on = 1; next } /^\.SH/ { on = 0 } on' "$t" |
			grep -E '^\.(OP|B|BI|BR)\b' | sed -E 's/\\-/-/g; s/\\f[BIRP]//g; s/"//g' |
			grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' | sed -E 's/^[ ,]//' |
			grep -v -x -- '--' | sort -u > "$BATS_TEST_TMPDIR/syn"
		run comm -23 "$BATS_TEST_TMPDIR/syn" "$BATS_TEST_TMPDIR/man"
		[ -z "$output" ] || { echo "$(basename "$t"): SYNOPSIS has $output"; false; }
	done
}

@test "every tool's --version names the release, the commit and the license, the same everywhere" {
	local t first=
	for t in "$BIN"/sp-*; do
		run -0 "$t" --version
		[[ "${lines[0]}" =~ ^$(basename "$t")\ [0-9]+\.[0-9]+\.[0-9]+\ \(stackpulse,\ commit\ (unknown|[0-9a-f]{12}(-modified)?)\)$ ]]
		[[ "${lines[1]}" == "License: MIT"* ]]
		v=${lines[0]#* }
		[ -z "$first" ] || [ "$v" = "$first" ]
		first=$v
	done
	grep -q "^MIT License" "$TOP/LICENSE"
	grep -q "^## " "$TOP/CHANGELOG.md"
}

@test "every man page is dated and lints clean: mandoc -T lint and man --warnings say nothing" {
	local f n=0
	for f in "$TOP"/man/*.[13] "$SP_BUILD/man/sp-stream.5"; do
		[ -e "$f" ] || continue
		run -0 mandoc -T lint -W warning "$f"
		[ -z "$output" ] || { echo "$output"; false; }
		run -0 bash -c 'LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null' _ "$f"
		[ -z "$output" ] || { echo "$f: $output"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 20 ]
	# An alias of a page is a link to it, not a fragile .so request.
	run -1 grep -l '^\.so' "$TOP"/man/*.3
}

@test "every source file names its license, MIT, with an SPDX identifier" {
	git -C "$TOP" ls-files '*.c' '*.h' '*.py' '*.sh' '*.bats' '*.bash' '*.js' '*.css' \
		'*.go' '*.rs' '*.cpp' '*.java' '*.proto' Makefile 'scripts/*' '.ci/*' |
		grep -v '^fuzz/corpus/' > "$BATS_TEST_TMPDIR/files"
	[ "$(lines "$BATS_TEST_TMPDIR/files")" -ge 250 ]
	local f
	while read -r f; do
		[ -L "$TOP/$f" ] && continue
		grep -q 'SPDX-License-Identifier: MIT$\|SPDX-License-Identifier: MIT \*/$' "$TOP/$f" || echo "no SPDX identifier: $f"
	done < "$BATS_TEST_TMPDIR/files" > "$BATS_TEST_TMPDIR/missing"
	cat "$BATS_TEST_TMPDIR/missing"
	[ ! -s "$BATS_TEST_TMPDIR/missing" ]
}

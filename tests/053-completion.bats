#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Bash completion (completion/stackpulse.bash): every option of every tool
# completes, the fixed values of an option are the ones its --help names,
# and make install puts it where bash-completion finds it.

load helper

# complete_word TOOL WORD...: what completing the last WORD after TOOL offers.
complete_word() {
	bash -c 'source "$1"; shift; tool=$1; shift
		COMP_WORDS=("$tool" "$@"); COMP_CWORD=$#
		_sp_complete "$tool"; printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$TOP/completion/stackpulse.bash" "$@"
}

# help_options TOOL: the options --help lists (as tests/093 reads them).
help_options() {
	local -
	set -o pipefail
	"$1" --help | grep -E '^ {2,}-' | sed -E 's/^ +//; s/  .*//' |
		grep -oE '(^|, )--?[A-Za-z0-9][A-Za-z0-9-]*' | sed 's/^, //' | sort -u
}

@test "every option of every tool completes, from its first letters" {
	local t o n=0
	for t in "$BIN"/sp-*; do
		for o in $(help_options "$t"); do
			[ "${#o}" -gt 3 ] || continue
			run -0 complete_word "$t" "${o:0:4}"
			printf '%s\n' "${lines[@]}" | grep -qx -- "$o" || { echo "$t: $o not offered for ${o:0:4}"; false; }
			n=$((n + 1))
		done
	done
	[ "$n" -ge 100 ]
}

@test "an option's fixed values are completed, and each is one its tool's --help names" {
	run -0 complete_word "$BIN/sp-fold" --format p
	[ "${lines[*]}" = "pprof" ]
	run -0 complete_word "$BIN/sp-capture" --call-graph ""
	[ "${lines[*]}" = "dwarf fp" ]
	run -0 complete_word "$BIN/sp-capture" -e page
	[ "${lines[*]}" = "page-faults" ]
	local tool opt v
	while read -r tool opt; do
		for v in $(bash -c 'source "$1"; _sp_choices "$2" "$3"' _ "$TOP/completion/stackpulse.bash" "$tool" "$opt"); do
			"$BIN/$tool" --help | grep -qw -- "$v" || { echo "$tool $opt: $v is not in --help"; false; }
		done
	done <<'LIST'
sp-fold --format
sp-fold --weight
sp-fold --sort
sp-top --sort
sp-capture --call-graph
sp-capture --stack-size
sp-flame --colors
sp-unwind --engine
sp-cat --format
LIST
	# A value after -o is a file name.
	cd "$BATS_TEST_TMPDIR" && touch rec-one.sps
	run -0 complete_word "$BIN/sp-cat" -o rec-
	[ "${lines[*]}" = "rec-one.sps" ]
}

@test "make install puts it where bash-completion looks, one name per tool" {
	d=$BATS_TEST_TMPDIR/root
	san=0
	[[ "$SP_BUILD" != */san ]] || san=1
	make -s -C "$TOP" install BUILD="$SP_BUILD" SAN=$san PREFIX=/usr DESTDIR="$d" > /dev/null
	for t in "$BIN"/sp-*; do
		[ -f "$d/usr/share/bash-completion/completions/${t##*/}" ]
	done
	run -0 bash -c 'source "$1"; complete -p sp-capture sp-fold' _ "$d/usr/share/bash-completion/completions/sp-fold"
	[[ "$output" == *"-F _sp_complete sp-capture"* ]]
	make -s -C "$TOP" uninstall BUILD="$SP_BUILD" PREFIX=/usr DESTDIR="$d" > /dev/null
	[ ! -e "$d/usr/share/bash-completion/completions/sp-capture" ]
}

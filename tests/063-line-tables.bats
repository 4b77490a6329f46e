#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Line tables: sp-symbolize reads a unit's .debug_line with its own
# decoder (libcommon/sym/lines.c) and must find what libdw finds.  The
# driver $SP_BUILD/tests/linecheck (tests/lib/linecheck.c) decodes every
# unit of a file both ways and compares the rows, the file names and the
# position of each row's address and the bytes around it, and the unit
# sym/aranges.c finds by .debug_aranges for those addresses and the ends
# of its ranges with libdwfl's, and each unit's functions found by our walk
# of its DIEs' bytes (libcommon/sym/dies.c) with those found through libdw,
# and each function's scopes (its inlined calls and blocks,
# libcommon/sym/scopes.c) read from the bytes with those read through
# libdw; it prints "FILE: U units, D decoded, L to libdw, A addresses, R
# by aranges, W walked, F functions, S scopes by bytes, N differences".
# tests/unit/lines.c covers the tables the decoder leaves to libdw.

load helper

LINECHECK=$SP_BUILD/tests/linecheck

# check FILE...: linecheck passes, and decoded every unit with a table.
check() {
	run -0 "$LINECHECK" "$@"
	echo "$output"
	[ "${#lines[@]}" -eq $# ]
	local l
	for l in "${lines[@]}"; do
		[[ $l =~ ([0-9]+)\ units,\ ([0-9]+)\ decoded,\ 0\ to\ libdw,\ [0-9]+\ addresses,\ [0-9]+\ by\ aranges,\ ([0-9]+)\ walked,\ [0-9]+\ functions,\ [0-9]+\ scopes\ by\ bytes,\ 0\ differences$ ]]
		[ "${BASH_REMATCH[1]}" -gt 0 ]
		[ "${BASH_REMATCH[2]}" -eq "${BASH_REMATCH[1]}" ]
	done
}

# all_walked: in each line of check's output, our DIE walk read every unit
# (none left to libdw), and every function's scopes were read from the
# bytes.
all_walked() {
	local l
	for l in "${lines[@]}"; do
		[[ $l =~ \ ([0-9]+)\ units,.*\ ([0-9]+)\ walked,\ ([0-9]+)\ functions,\ ([0-9]+)\ scopes ]]
		[ "${BASH_REMATCH[2]}" -eq "${BASH_REMATCH[1]}" ]
		[ "${BASH_REMATCH[3]}" -gt 0 ]
		[ "${BASH_REMATCH[4]}" -eq "${BASH_REMATCH[3]}" ]
	done
}

# by_aranges: in each line of check's output, the units of addresses were
# found by our .debug_aranges reader too (gcc writes the section).
by_aranges() {
	local l
	for l in "${lines[@]}"; do
		[[ $l =~ \ ([0-9]+)\ by\ aranges, ]]
		[ "${BASH_REMATCH[1]}" -gt 100 ]
	done
}

# positions STREAM IDS: "ADDR FILE:LINE" of each frame of the modules
# whose ids are in the file IDS that has a line: the address looked up
# (a return address less one) and its own position, which is the
# innermost inline frame's when there are inline frames; sorted, once each.
positions() {
	sp-cat -t frame "$1" | jq -r --slurpfile ids "$2" '
		select(.module as $m | $ids | index($m)) |
		(if .inline then .inline[0] else . end) as $p |
		select(($p.line // 0) > 0) |
		"\(.rel - (((.flags // 0) / 4 | floor) % 2)) \($p.file):\($p.line)"' | sort -u
}

# same_positions OURS THEIRS: each line "ADDR FILE:LINE" of OURS against
# the same line of THEIRS, "PATH:LINE[:COLUMN]" as an addr2line printed
# it: the lines equal and PATH the file, or ending in "/" and the file
# (sp-symbolize writes a path shorn of the build directory).  Fails on
# any difference, or when fewer than 10 were compared.
same_positions() {
	paste -d' ' <(awk '{ print $2 }' "$1") "$2" |
		awk '{
			n = split($1, o, ":"); m = split($2, l, ":")
			file = o[1]; path = l[1]
			tail = substr(path, length(path) - length(file) + 1)
			if (n != 2 || m < 2 || o[2] != l[2] ||
			    !(path == file || (tail == file && substr(path, length(path) - length(file), 1) == "/"))) {
				bad++; print "differs: " $0
			}
		} END { print NR " compared"; exit bad > 0 || NR < 10 }'
}

setup() {
	R=$BATS_TEST_TMPDIR/rec.sps
	S=$BATS_TEST_TMPDIR/sym.sps
}

setup_file() {
	local d=$BATS_FILE_TMPDIR
	# Templates, inlining and several files' code in one unit.
	cat > "$d/t.cpp" <<'EOF'
#include <map>
#include <string>
#include <vector>
template <int N> int f(int x) { return N * x + f<N - 1>(x); }
template <> int f<0>(int x) { return x; }
int main(int c, char **)
{
	std::map<std::string, int> m;
	m["a"] = f<20>(c);
	std::vector<int> v(c);
	return (int)(m.size() + v.size());
}
EOF
}

@test "g++ -gdwarf-2 to -gdwarf-5: every row, file and address as libdw has them" {
	local v
	for v in 2 3 4 5; do
		g++ -O2 -g -gdwarf-$v -o "$BATS_FILE_TMPDIR/g$v" "$BATS_FILE_TMPDIR/t.cpp"
	done
	check "$BATS_FILE_TMPDIR"/g[2345]
	by_aranges
	all_walked
	# The addresses were looked up too (g++ writes .debug_aranges).
	run -0 "$LINECHECK" "$BATS_FILE_TMPDIR/g5"
	[[ $output =~ \ ([0-9]+)\ addresses ]]
	[ "${BASH_REMATCH[1]}" -gt 100 ]
}

@test "clang++ -gdwarf-4 and -5 (MD5 sums, line_strp), compressed and split DWARF" {
	clang++ -O2 -g -gdwarf-4 -o "$BATS_FILE_TMPDIR/c4" "$BATS_FILE_TMPDIR/t.cpp"
	clang++ -O2 -g -gdwarf-5 -o "$BATS_FILE_TMPDIR/c5" "$BATS_FILE_TMPDIR/t.cpp"
	g++ -O2 -g -gz=zlib -o "$BATS_FILE_TMPDIR/gz" "$BATS_FILE_TMPDIR/t.cpp"
	# Its .debug_line flagged C (compressed): libdw inflates it, we read that.
	run -0 readelf -S -W "$BATS_FILE_TMPDIR/gz"
	grep -Eq '\] \.debug_line .* [A-Za-z]*C[A-Za-z]* +[0-9]+ +[0-9]+ +[0-9]+$' <<< "$output"
	(cd "$BATS_FILE_TMPDIR" && g++ -O2 -g -gsplit-dwarf -o split t.cpp)
	check "$BATS_FILE_TMPDIR/c4" "$BATS_FILE_TMPDIR/c5" "$BATS_FILE_TMPDIR/gz" \
		"$BATS_FILE_TMPDIR/split"
	# A split unit's DIEs are in its .dwo: that one is libdw's to walk.
	[[ ${lines[3]} =~ \ 1\ units,.*\ 0\ walked, ]]
	lines=("${lines[@]:0:3}")
	all_walked
}

@test "the workloads, glibc's debug file and CPython's library: thousands of units" {
	check "$WORKLOADS/templ" "$WORKLOADS/inlined" "$WORKLOADS/spin"
	all_walked
	local libc
	libc=$(readelf -n "$(ldd "$WORKLOADS/spin" | awk '/libc.so/ { print $3 }')" |
		awk '/Build ID:/ { print $3 }')
	local dbg=/usr/lib/debug/.build-id/${libc:0:2}/${libc:2}.debug
	[ -f "$dbg" ]	# libc6-dbg, from make test-deps
	check "$dbg"
	by_aranges
	all_walked
	local py
	py=$(python312)
	local lib
	lib=$(ldd "$py" | awk '/libpython/ { print $3 }')
	[ -n "$lib" ] || lib=$py
	check "$lib"
	all_walked
	run -0 "$LINECHECK" "$lib"
	[[ $output =~ \ ([0-9]+)\ units ]]
	[ "${BASH_REMATCH[1]}" -gt 50 ]
}

@test "Rust and Go programs" {
	local rc=/usr/bin/rustc
	[ -x "$rc" ] || rc=$(command -v rustc)
	"$rc" -O -g -o "$BATS_FILE_TMPDIR/rusty" "$TOP/tests/workloads/rust/rusty.rs"
	mkdir -p "$BATS_FILE_TMPDIR/go"
	cp "$TOP/tests/workloads/goinline.go" "$BATS_FILE_TMPDIR/go/main.go"
	(cd "$BATS_FILE_TMPDIR/go" && HOME=$BATS_FILE_TMPDIR GOCACHE=$BATS_FILE_TMPDIR/gocache \
		GO111MODULE=off go build -o goinline main.go)
	check "$BATS_FILE_TMPDIR/rusty" "$BATS_FILE_TMPDIR/go/goinline"
	all_walked
}

@test "sp-symbolize on CPython names the same lines as the libdw lookups it replaced" {
	# Every address of a -X perf recording, looked up with
	# eu-addr2line (libdw's dwfl_module_getsrc) in the same library.
	local py lib
	py=$(python312)
	lib=$(ldd "$py" | awk '/libpython/ { print $3 }')
	[ -n "$lib" ] || lib=$py
	sp-capture -q -F 999 -o "$R" -- "$py" -X perf "$TOP/tests/workloads/pywork.py" 1
	sp-unwind -o "$R.u" "$R"
	sp-symbolize -o "$S" "$R.u"
	# The library's module ids, then its frames' positions.
	sp-cat -t module "$S" | jq -r --arg base "${lib##*/}" '
		select(.path | endswith("/" + $base)) | .id' > "$BATS_TEST_TMPDIR/ids"
	[ -s "$BATS_TEST_TMPDIR/ids" ]
	positions "$S" "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/ours"
	echo "$(wc -l < "$BATS_TEST_TMPDIR/ours") addresses"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/ours")" -ge 20 ]
	awk '{ printf "0x%x\n", $1 }' "$BATS_TEST_TMPDIR/ours" |
		eu-addr2line -e "$lib" > "$BATS_TEST_TMPDIR/libdw"
	same_positions "$BATS_TEST_TMPDIR/ours" "$BATS_TEST_TMPDIR/libdw"
}

@test "clang's program without .debug_aranges: units found by their ranges, lines as binutils' addr2line gives them" {
	local c=$BATS_FILE_TMPDIR/cspin
	clang -O2 -g -o "$c" "$TOP/tests/workloads/spin.c" -lpthread -lm
	# clang writes no .debug_aranges, by which libdwfl finds a unit.
	run -1 grep -q '\.debug_aranges' <(readelf -SW "$c")
	sp-capture -q -F 999 -o "$R" -- "$c" -t 1 -r 1 > /dev/null
	sp-unwind -o "$R.u" "$R"
	sp-symbolize -o "$S" "$R.u"
	sp-cat -t module "$S" | jq -r --arg p "$c" 'select(.path == $p) | .id' > "$BATS_TEST_TMPDIR/ids"
	[ -s "$BATS_TEST_TMPDIR/ids" ]
	positions "$S" "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/ours"
	echo "$(wc -l < "$BATS_TEST_TMPDIR/ours") addresses with a line"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/ours")" -ge 10 ]
	grep -q 'tests/workloads/spin\.c:[0-9]' "$BATS_TEST_TMPDIR/ours"
	# Inline frames too (spin's workers inline its small functions).
	[ "$(sp-cat -t frame "$S" | jq -s --slurpfile ids "$BATS_TEST_TMPDIR/ids" \
		'[.[] | select(.module as $m | $ids | index($m)) | select(.inline)] | length')" -gt 0 ]
	awk '{ printf "0x%x\n", $1 }' "$BATS_TEST_TMPDIR/ours" | addr2line -e "$c" |
		sed 's/ (discriminator [0-9]*)$//' > "$BATS_TEST_TMPDIR/binutils"
	same_positions "$BATS_TEST_TMPDIR/ours" "$BATS_TEST_TMPDIR/binutils"
}

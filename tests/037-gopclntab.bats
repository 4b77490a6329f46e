#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Go's function table (.gopclntab, read by libcommon/sym/gopclntab.c)
# in real Go binaries: a program built by Debian's Go (1.19, the table
# layout of Go 1.18) with -ldflags="-s -w" has no symbol table and no
# DWARF, yet the table names every function the plain build's symbol
# table names, at the same address, gives the lines `go tool addr2line`
# gives, and holds the chain of inlined calls.  The driver is
# $SP_BUILD/tests/gopcln-dump (tests/lib/gopcln-dump.c).

load helper

DUMP=$SP_BUILD/tests/gopcln-dump

setup_file() {
	local d=$BATS_FILE_TMPDIR/src
	mkdir -p "$d"
	# A noinline function calling small inlinable ones, a method on a
	# pointer receiver, a closure, a generic function instantiated
	# twice, and in main a call of middle whose small is inlined into
	# it: main.main <- middle (line 25) <- small (line 21).
	cat > "$d/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
)

type Server struct{ n int }

//go:noinline
func (s *Server) handle(x int) int {
	for i := 0; i < 100; i++ {
		x = x*31 + s.n + i
	}
	return x
}

var counter int

func small(x int) int {
	counter += x
	return x*3 + 1
}

func middle(x int) int { return small(x) + small(x+7) }

type Number interface{ ~int | ~float64 }

func sum[T Number](v []T) T {
	var s T
	for _, x := range v {
		s += x
	}
	return s
}

//go:noinline
func outer(n int) int {
	acc := 0
	for i := 0; i < n; i++ {
		acc += middle(i)
	}
	return acc
}

var hook func(int) int

//go:noinline
func callHook(x int) int { return hook(x) }

func main() {
	s := &Server{n: len(os.Args)}
	hook = func(a int) int { return a + s.n + small(a) }
	total := outer(1000) + s.handle(3) + callHook(4)
	total += middle(len(os.Args))
	total += sum([]int{1, 2, 3}) + int(sum([]float64{1.5}))
	fmt.Println(total, counter)
}
EOF
	printf 'module gopcln\n\ngo 1.18\n' > "$d/go.mod"
	(
		cd "$d"
		export GOCACHE=$BATS_FILE_TMPDIR/gocache HOME=$BATS_FILE_TMPDIR GOFLAGS=-buildvcs=false
		go build -o "$BATS_FILE_TMPDIR/plain" .
		go build -ldflags='-s -w' -o "$BATS_FILE_TMPDIR/stripped" .
		go build -buildmode=pie -ldflags='-s -w' -o "$BATS_FILE_TMPDIR/pie" .
	)
}

# go_tool_nm_text FILE: "ADDR NAME" of every text symbol, named as Go's
# traceback names it (no .abi0, shape arguments as [...]), without the
# section markers runtime.text and runtime.etext, sorted.
go_tool_nm_text() {
	local -
	set -o pipefail
	go tool nm -size "$1" |
		sed -n -E 's/^ *([0-9a-f]+) +[0-9]+ [Tt] (.*)$/\1 \2/p' |
		sed -e 's/\.abi0$//' -e 's/\.abiinternal$//' -e 's/\[.*\]/[...]/' |
		grep -v -E ' runtime\.(text|etext)$' | sort
}

# Every instruction address of the functions matching REGEX in FILE.
insn_addrs() {
	local -
	set -o pipefail
	go tool objdump -s "$2" "$1" | awk '$2 ~ /^0x/ { print substr($2, 3) }'
}

@test "gopclntab: the stripped binary has no symbols, the plain one has" {
	run -0 readelf -S "$BATS_FILE_TMPDIR/stripped"
	[[ $output == *.gopclntab* ]]
	[[ $output != *.symtab* ]]
	[[ $output != *.debug_info* ]]
	run -0 readelf -S "$BATS_FILE_TMPDIR/plain"
	[[ $output == *.symtab* ]]
}

@test "gopclntab: every text symbol of the plain build, by name and address, from the stripped one's table" {
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped"
	[[ ${lines[0]} == "layout 1.18 functions "*" inline yes" ]]
	printf '%s\n' "${lines[@]:1}" | cut -d' ' -f1,3- | sort > "$BATS_TEST_TMPDIR/ours"
	go_tool_nm_text "$BATS_FILE_TMPDIR/plain" > "$BATS_TEST_TMPDIR/nm"
	n=$(lines "$BATS_TEST_TMPDIR/nm")
	echo "symbols: $n"
	[ "$n" -gt 1000 ]
	run -0 diff "$BATS_TEST_TMPDIR/ours" "$BATS_TEST_TMPDIR/nm"
	# The names Go prints for a method, a closure and generic code.
	run -0 grep -c -E ' (main\.\(\*Server\)\.handle|main\.main\.func1|main\.sum\[\.\.\.\])$' "$BATS_TEST_TMPDIR/ours"
	[ "$output" = 4 ]
	# Extents: each function ends where the next begins, the sizes
	# the plain build's symbols give for main's functions.
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped"
	handle=$(printf '%s\n' "${lines[@]}" | grep ' main\.(\*Server)\.handle$')
	size=$(go tool nm -size "$BATS_FILE_TMPDIR/plain" | awk '$4 == "main.(*Server).handle" { print $2 }')
	read -r start end _ <<< "$handle"
	# Go pads a function to 32 bytes with int3.
	[ $((0x$end - 0x$start)) -ge "$size" ]
	[ $((0x$end - 0x$start)) -lt $((size + 32)) ]
}

@test "gopclntab: function, file and line of every instruction of main's functions and of runtime samples agree with go tool addr2line" {
	{
		insn_addrs "$BATS_FILE_TMPDIR/plain" '^main\.'
		# Every 40th function of the program, at its entry and 5 bytes in.
		"$DUMP" "$BATS_FILE_TMPDIR/stripped" | awk 'NR > 1 && NR % 40 == 0 { print $1 }' |
			while read -r a; do echo "$a"; printf '%x\n' $((0x$a + 5)); done
	} > "$BATS_TEST_TMPDIR/addrs"
	n=$(lines "$BATS_TEST_TMPDIR/addrs")
	echo "addresses: $n"
	[ "$n" -gt 200 ]
	# addr2line prints the function holding the address and the
	# innermost position: ours is the first inlined call's, if any.
	sed 's/^/0x/' "$BATS_TEST_TMPDIR/addrs" | go tool addr2line "$BATS_FILE_TMPDIR/plain" |
		paste - - > "$BATS_TEST_TMPDIR/want"
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped" $(cat "$BATS_TEST_TMPDIR/addrs")
	printf '%s\n' "${lines[@]}" | awk '
		/^  inl / { if (!inl) { pos = $3; inl = 1 } next }
		{ if (name) print name "\t" pos; name = $2; pos = $3; inl = 0 }
		END { print name "\t" pos }' > "$BATS_TEST_TMPDIR/got"
	# Go's tools show shape arguments; Go's traceback, and we, show [...].
	sed 's/\[.*\]\t/[...]\t/' "$BATS_TEST_TMPDIR/want" > "$BATS_TEST_TMPDIR/want2"
	run -0 diff "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want2"
}

@test "gopclntab: inline frames where small is inlined into middle, inlined into main.main" {
	# The instructions of main.main that objdump puts on small's line 21.
	go tool objdump -s '^main\.main$' "$BATS_FILE_TMPDIR/plain" |
		awk '$1 ~ /main\.go:21$/ { print substr($2, 3) }' > "$BATS_TEST_TMPDIR/addrs"
	[ "$(lines "$BATS_TEST_TMPDIR/addrs")" -ge 2 ]
	for a in $(cat "$BATS_TEST_TMPDIR/addrs"); do
		run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped" "$a"
		[ "${#lines[@]}" -eq 3 ]
		[[ ${lines[0]} == "$a main.main "*/main.go:55 ]]
		[[ ${lines[1]} == "  inl main.small "*/main.go:21 ]]
		[[ ${lines[2]} == "  inl main.middle "*/main.go:25 ]]
	done
	# In outer, middle's instructions have one inlined call.
	a=$(go tool objdump -s '^main\.outer$' "$BATS_FILE_TMPDIR/plain" |
		awk '$1 ~ /main\.go:25$/ { print substr($2, 3); exit }')
	[ -n "$a" ]
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped" "$a"
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == "$a main.outer "*/main.go:41 ]]
	[[ ${lines[1]} == "  inl main.middle "*/main.go:25 ]]
	# The method, outside any inlining: no inline frames.
	a=$(go tool objdump -s 'handle$' "$BATS_FILE_TMPDIR/plain" |
		awk '$1 ~ /main\.go:13$/ { print substr($2, 3); exit }')
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped" "$a"
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == "$a main.(*Server).handle "*/main.go:13 ]]
}

@test "gopclntab: a position-independent build keeps its table in .data.rel.ro.gopclntab" {
	run -0 readelf -S -W "$BATS_FILE_TMPDIR/pie"
	[[ $output == *.data.rel.ro.gopclntab* ]]
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/stripped"
	want=("${lines[@]}")
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/pie"
	[ "${lines[0]}" = "${want[0]}" ]
	printf '%s\n' "${lines[@]:1}" | cut -d' ' -f3- > "$BATS_TEST_TMPDIR/pie"
	printf '%s\n' "${want[@]:1}" | cut -d' ' -f3- > "$BATS_TEST_TMPDIR/exe"
	main=$(printf '%s\n' "${lines[@]}" | grep ' main\.main$')
	run -0 diff "$BATS_TEST_TMPDIR/pie" "$BATS_TEST_TMPDIR/exe"
	# main.main's chain of inlined calls, somewhere in its code.
	read -r start end _ <<< "$main"
	addrs=()
	for ((a = 0x$start; a < 0x$end; a++)); do addrs+=("$(printf %x "$a")"); done
	run -0 "$DUMP" "$BATS_FILE_TMPDIR/pie" "${addrs[@]}"
	printf '%s\n' "${lines[@]}" | grep -A2 ' main\.main .*/main\.go:55$' > "$BATS_TEST_TMPDIR/chains"
	grep -q -x '  inl main\.small .*/main\.go:21' "$BATS_TEST_TMPDIR/chains"
	run -0 grep -c -x '  inl main\.middle .*/main\.go:25' "$BATS_TEST_TMPDIR/chains"
	[ "$output" -ge 2 ]
}

@test "gopclntab: a file without a Go table, and a damaged table, are told apart" {
	run -1 "$DUMP" "$WORKLOADS/deep"
	[[ $output == *"no Go table"* ]]
	# The function table's first entry moved past the second: the
	# layout 1.18 table starts with 8 bytes of header, 8 words, then
	# the parts; the function table's offset is the header's last word.
	cp "$BATS_FILE_TMPDIR/stripped" "$BATS_TEST_TMPDIR/bad"
	off=$(readelf -S -W "$BATS_TEST_TMPDIR/bad" |
		awk '{ for (i = 1; i < NF; i++) if ($i == ".gopclntab") print $(i + 3) }')
	[ -n "$off" ]
	off=$((0x$off))
	ftab=$(od -An -t u8 -j $((off + 8 + 7 * 8)) -N 8 "$BATS_TEST_TMPDIR/bad" | tr -d ' ')
	printf '\xff\xff\xff\x7f' | dd of="$BATS_TEST_TMPDIR/bad" bs=1 seek=$((off + ftab)) conv=notrunc status=none
	run -2 "$DUMP" "$BATS_TEST_TMPDIR/bad"
	[[ $output == *"function table not sorted"* ]]
}

# Go binaries on this machine: Debian's go command (Go 1.19, the 1.18
# layout) and any built by other Go releases (the 1.20
# layout from Go 1.20 on).  Those with a symbol table are compared with
# it; for stripped ones (the usual release build) the table must still
# hold main.main and runtime.main, sorted, every name printable and
# every function's position in a .go or .s file.
@test "gopclntab: Go binaries installed on this machine: Debian's go, and other Go releases where present" {
	local -
	set -o pipefail
	checked=0 seen=
	# Debian's go command itself is always there (make test-deps).
	for f in "$(readlink -f "$(command -v go)")" /usr/local/bin/* /usr/bin/kubectl \
		 /usr/bin/docker /usr/bin/terraform /usr/lib/google-cloud-sdk/bin/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		v=$(go version "$f" 2>/dev/null | awk '{ print $2 }') || continue
		[[ $v == go1.* ]] || continue
		# One binary of each release is enough.
		[[ " $seen " != *" $v "* ]] || continue
		seen="$seen $v"
		minor=$(sed -E 's/^go1\.([0-9]+).*/\1/' <<< "$v")
		want=1.18
		[ "$minor" -ge 20 ] && want=1.20
		[ "$minor" -lt 18 ] && want=1.16
		[ "$minor" -lt 16 ] && want=1.2
		# Before 1.16 the inline tree's indices changed between
		# releases: the reader takes only 1.15's.
		want_inl=yes
		[ "$minor" -lt 16 ] && [ "$minor" -ne 15 ] && want_inl=no
		"$DUMP" "$f" > "$BATS_TEST_TMPDIR/all"
		read -r _ layout _ n _ inl < "$BATS_TEST_TMPDIR/all"
		echo "$f $v: layout $layout, $n functions, inline $inl"
		[ "$layout" = "$want" ]
		[ "$inl" = "$want_inl" ]
		grep -q ' main\.main$' "$BATS_TEST_TMPDIR/all"
		grep -q ' runtime\.main$' "$BATS_TEST_TMPDIR/all"
		run -1 grep -c -v -E '^[0-9a-f]+ [0-9a-f]+ [[:graph:]][[:print:]]*$' <(tail -n +2 "$BATS_TEST_TMPDIR/all")
		# A sample of a few thousand functions: at the entry, a position;
		# half-way in, the inlined calls, each with a name and a position.
		tail -n +2 "$BATS_TEST_TMPDIR/all" | awk 'NR % 20 == 0 && ++n <= 5000 { print $1, $2 }' > "$BATS_TEST_TMPDIR/sample"
		"$DUMP" "$f" $(cut -d' ' -f1 "$BATS_TEST_TMPDIR/sample") > "$BATS_TEST_TMPDIR/pos"
		total=$(grep -c -v '^  inl ' "$BATS_TEST_TMPDIR/pos")
		good=$(grep -c -E '^[0-9a-f]+ [[:graph:]].* ([[:graph:]]+\.(go|s)|<autogenerated>):[1-9][0-9]*$' "$BATS_TEST_TMPDIR/pos")
		echo "  $total sampled at the entry, $good with a position"
		[ "$total" -eq "$(lines "$BATS_TEST_TMPDIR/sample")" ]
		[ $((good * 100)) -ge $((total * 99)) ]
		while read -r a b; do printf '%x\n' $(((0x$a + 0x$b) / 2)); done < "$BATS_TEST_TMPDIR/sample" > "$BATS_TEST_TMPDIR/mid"
		"$DUMP" "$f" $(cat "$BATS_TEST_TMPDIR/mid") > "$BATS_TEST_TMPDIR/pos" || true
		inls=$(grep -c '^  inl ' "$BATS_TEST_TMPDIR/pos" || true)
		good=$(grep -c -E '^  inl [[:graph:]].* [[:graph:]]+\.go:[1-9][0-9]*$' "$BATS_TEST_TMPDIR/pos" || true)
		echo "  half-way in: $inls inline frames, $good with a name and a position"
		[ "$inls" -gt 0 ] || [ "$want_inl" = no ]
		[ "$good" -eq "$inls" ]
		# DWARF, when there is any, gives the same chains of positions
		# (binutils' addr2line -i: innermost first, as ours).
		if readelf -S "$f" | grep -q '\.debug_info'; then
			awk '/^  inl / { c = c " " $NF; next }
			     { if (a != "") print a c " " p; a = $1; p = $NF; c = "" }
			     END { if (a != "") print a c " " p }' "$BATS_TEST_TMPDIR/pos" > "$BATS_TEST_TMPDIR/chains"
			# Addresses DWARF has no line for (padding, the middle of an
			# instruction) are left out.
			sed 's/^/0x/' "$BATS_TEST_TMPDIR/mid" | addr2line -a -i -e "$f" |
				awk 'function out() { if (a != "" && !unknown) print a c }
				     /^0x/ { out(); a = $1; sub(/^0x0*/, "", a); c = ""; unknown = 0; next }
				     { p = $0; sub(/^\.\//, "", p); if (p ~ /:\?$/) unknown = 1; c = c " " p }
				     END { out() }' > "$BATS_TEST_TMPDIR/dwarf"
			# So are positions in generated code (a package's init):
			# DWARF gives the source line of the variable there, the
			# table (and so Go's traceback) <autogenerated>:1.
			awk 'NR == FNR { known[$1] = 1; next } $1 in known && !/<autogenerated>/' \
				"$BATS_TEST_TMPDIR/dwarf" "$BATS_TEST_TMPDIR/chains" > "$BATS_TEST_TMPDIR/ours"
			awk 'NR == FNR { known[$1] = 1; next } $1 in known' \
				"$BATS_TEST_TMPDIR/ours" "$BATS_TEST_TMPDIR/dwarf" > "$BATS_TEST_TMPDIR/dwarf2"
			n=$(lines "$BATS_TEST_TMPDIR/ours")
			echo "  DWARF: $n chains of $(lines "$BATS_TEST_TMPDIR/mid") compared," \
				"$(grep -c ' .* ' "$BATS_TEST_TMPDIR/ours") of them with inlined calls"
			[ $((n * 2)) -ge "$(lines "$BATS_TEST_TMPDIR/mid")" ]
			run -0 diff "$BATS_TEST_TMPDIR/ours" "$BATS_TEST_TMPDIR/dwarf2"
		fi
		# Symbols, when there are any, name the same functions.
		if readelf -S "$f" | grep -q '\.symtab'; then
			# Only Go's code: a cgo program's C functions lie past the table.
			lo=$(sed -n 2p "$BATS_TEST_TMPDIR/all" | cut -d' ' -f1)
			hi=$(tail -n 1 "$BATS_TEST_TMPDIR/all" | cut -d' ' -f2)
			go_tool_nm_text "$f" | awk -v lo="$lo" -v hi="$hi" '
				function le(a, b) { return length(a) < length(b) || (length(a) == length(b) && "x" a <= "x" b) }
				le(lo, $1) && !le(hi, $1)' > "$BATS_TEST_TMPDIR/nm"
			# The symbol table writes the middle dot of a name as a dot.
			tail -n +2 "$BATS_TEST_TMPDIR/all" | cut -d' ' -f1,3- | sed 's/·/./g' |
				sort > "$BATS_TEST_TMPDIR/ours"
			missing=$(comm -13 "$BATS_TEST_TMPDIR/ours" "$BATS_TEST_TMPDIR/nm" | wc -l)
			echo "  symtab: $(lines "$BATS_TEST_TMPDIR/nm") text symbols, $missing not in the table"
			[ "$missing" -eq 0 ]
		fi
		checked=$((checked + 1))
	done
	echo "checked: $checked"
	[ "$checked" -ge 1 ]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Go programs (the gc toolchain): their CFI is in .debug_frame, not
# .eh_frame; every function with a frame keeps a frame pointer; the
# symbol table names functions as the linker does (runtime.goexit.abi0,
# main.sum[go.shape.int_0]), which sp-symbolize shows as Go does.

load helper

setup_file() {
	local d=$BATS_FILE_TMPDIR/src
	mkdir -p "$d"
	# CPU-bound work in main and in a goroutine: a plain function, a
	# method on a pointer receiver and a generic function instantiated
	# twice.  go:noinline keeps each a frame of its own.
	cat > "$d/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

type T struct{ acc uint64 }

//go:noinline
func (t *T) method(n int) uint64 {
	for i := 0; i < n; i++ {
		t.acc = t.acc*6364136223846793005 + uint64(i)
	}
	return t.acc
}

type Number interface{ ~int | ~uint64 | ~float64 }

//go:noinline
func sum[N Number](v []N) N {
	var s N
	for r := 0; r < 64; r++ {
		for _, x := range v {
			s += x * x
		}
	}
	return s
}

//go:noinline
func hot(n int) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

func worker(deadline time.Time, wg *sync.WaitGroup, out *uint64) {
	defer wg.Done()
	t := &T{}
	f := make([]float64, 512)
	for i := range f {
		f[i] = float64(i)
	}
	var s uint64
	for time.Now().Before(deadline) {
		s += t.method(200000)
		s += uint64(sum(f))
	}
	*out = s
}

func main() {
	secs, _ := strconv.ParseFloat(os.Args[1], 64)
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	var a uint64
	wg.Add(1)
	go worker(deadline, &wg, &a)
	var s uint64
	ints := make([]int, 256)
	for time.Now().Before(deadline) {
		s += hot(300000)
		s += uint64(sum(ints))
	}
	wg.Wait()
	fmt.Println(s + a)
}
EOF
	printf 'module gowork\n\ngo 1.18\n' > "$d/go.mod"
	(
		cd "$d"
		export GOCACHE=$BATS_FILE_TMPDIR/gocache HOME=$BATS_FILE_TMPDIR GOFLAGS=-buildvcs=false
		go build -o "$BATS_FILE_TMPDIR/gowork" .
		go build -ldflags='-s -w' -o "$BATS_FILE_TMPDIR/gowork-s" .
	)
}

setup() {
	S=$BATS_TEST_TMPDIR/go.sps
	G=$BATS_FILE_TMPDIR/gowork
}

# go_ratio FOLDED: "GOOD TOTAL" over the lines of sp-fold's output: the
# samples whose stack is complete and starts at runtime.goexit (the
# goroutines' entry, the main goroutine's included), of all samples but
# the complete stacks of the runtime's own threads and system stacks
# (runtime.mstart, runtime.rt0_go, runtime.mcall: sysmon, the scheduler
# and the GC on a thread's g0 stack).
# An incomplete stack starts with its marker, [REASON], and counts
# against the ratio.
go_ratio() {
	awk '{ n = $NF; split($1, f, ";"); total += n
	       if (f[2] == "runtime.goexit") good += n
	       else if (f[2] ~ /^runtime\.(clone|mstart|rt0_go|mcall)$/) total -= n }
	     END { print good + 0, total + 0 }' "$1"
}

@test "a Go program: 99% of the goroutines' samples unwind to runtime.goexit, with Go's names" {
	readelf -S "$G" | grep -q '\.debug_frame'
	run -1 grep -q '\.eh_frame ' <(readelf -SW "$G")
	sp-capture -q -F 999 -o "$S.raw" -- "$G" 3
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize -o "$S" "$S.unw"
	sp-fold "$S" > "$BATS_TEST_TMPDIR/folded"
	read -r good total < <(go_ratio "$BATS_TEST_TMPDIR/folded")
	echo "complete from runtime.goexit: $good of $total" >&2
	[ "$total" -ge 500 ]
	[ $((good * 100)) -ge $((total * 99)) ]
	# Both goroutines' chains, through runtime.main for the main one.
	grep -q '^gowork;runtime.goexit;runtime.main;main.main;main.hot ' "$BATS_TEST_TMPDIR/folded"
	grep -q '^gowork;runtime.goexit;main.main.func1;main.worker;main.(\*T).method ' "$BATS_TEST_TMPDIR/folded"
	grep -q ';main.worker;main.sum\[...\] ' "$BATS_TEST_TMPDIR/folded"
	grep -q ';main.main;main.sum\[...\] ' "$BATS_TEST_TMPDIR/folded"
	# No linker ABI suffix and no compiler shape is left in a name.
	run -1 grep -q '\.abi0\|go\.shape' "$BATS_TEST_TMPDIR/folded"
	# --no-demangle keeps the symbol table's own names.
	sp-symbolize --no-demangle -o "$S.raw-names" "$S.unw"
	sp-fold "$S.raw-names" > "$BATS_TEST_TMPDIR/raw-names"
	grep -q '^gowork;runtime.goexit.abi0;' "$BATS_TEST_TMPDIR/raw-names"
	grep -q 'main.sum\[go.shape.float64_0\] ' "$BATS_TEST_TMPDIR/raw-names"
}

@test "a Go program whose units libdwfl cannot place: file and line of its frames from its Go table" {
	# tests/workloads/gospin.go built outside a module: its package's
	# unit has a list of ranges and there is no .debug_aranges, so
	# libdwfl finds no unit for its code (eu-addr2line says ??:0).
	local d=$BATS_TEST_TMPDIR/gospin
	mkdir -p "$d"
	cp "$TOP/tests/workloads/gospin.go" "$d/"
	(cd "$d" && GO111MODULE=off GOCACHE=$BATS_FILE_TMPDIR/gocache HOME=$BATS_FILE_TMPDIR \
		go build -o gospin gospin.go)
	run -1 grep -q '\.debug_aranges' <(readelf -SW "$d/gospin")
	sp-capture -q -F 999 -o "$S.raw" -- "$d/gospin" 1 > /dev/null
	sp-unwind -o "$S.unw" "$S.raw"
	sp-symbolize -o "$S" "$S.unw"
	# Every frame of the program's main package: in gospin.go, at a line.
	sp-cat -t frame "$S" | jq -c 'select(.name | startswith("main.")) | [.name, .file, .line]' \
		> "$BATS_TEST_TMPDIR/main"
	cat "$BATS_TEST_TMPDIR/main"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/main")" -ge 2 ]
	run -0 jq -c 'select((.[1] // "" | endswith("/gospin.go") | not) or (.[2] // 0) <= 0)' \
		"$BATS_TEST_TMPDIR/main"
	[ -z "$output" ]
}

@test "a Go program without symbols or DWARF (-ldflags=-s -w) unwinds by frame pointers" {
	local s=$BATS_FILE_TMPDIR/gowork-s
	run -1 grep -q ' \.\(debug_frame\|eh_frame\|symtab\) ' <(readelf -SW "$s")
	sp-capture -q -F 999 -o "$S.raw" -- "$s" 3
	sp-unwind -o "$S.unw" "$S.raw"
	[ "$(sp-cat -t unwind "$S.unw" | jq .fp_frames)" -gt 0 ]
	# -s -w leaves the code where it was: runtime.goexit is at the address
	# the binary with symbols gives it, and the goroutines' outermost
	# frame is its return address, one past its first instruction.
	goexit=$(nm "$G" | awk '$3 == "runtime.goexit.abi0" { print $1 }')
	[ -n "$goexit" ]
	goexit=$((0x$goexit + 1))
	# Per sample: whether its stack's outermost frame (before any
	# marker) is that return address, with at least two frames below it.
	sp-cat -t stack,sample "$S.unw" |
		jq -r --argjson ra "$goexit" 'if .t == "stack" then
			"stack \(.id) \([.frames[] | select(.[3] != 8)] | (.[-1][2] == $ra and length >= 3))"
			else "sample \(.stack)" end' > "$BATS_TEST_TMPDIR/per"
	read -r good total < <(awk '$1 == "stack" { ok[$2] = $3 == "true" }
		$1 == "sample" { total++; good += ok[$2] } END { print good + 0, total + 0 }' "$BATS_TEST_TMPDIR/per")
	echo "frame-pointer chains to runtime.goexit: $good of $total" >&2
	[ "$total" -ge 300 ]
	[ $((good * 100)) -ge $((total * 98)) ]
	# The goroutine's first frame record saved a frame pointer of 0: the
	# chain ends there, and the stack is complete.
	read -r comp users < <(sp-cat -t unwind "$S.unw" | jq -r '"\(.complete) \(.user_samples)"')
	echo "complete: $comp of $users" >&2
	[ $((comp * 100)) -ge $((users * 98)) ]
	# Without names sp-stat cannot tell Go code from any other native
	# code; it says the frames have no name, and points at the binary.
	sp-symbolize -o "$S" "$S.unw"
	run sp-stat "$S"
	[ "$status" -eq 0 ]
	[[ "$output" == *"address-only"*"$s"* ]]
}

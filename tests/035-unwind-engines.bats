#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-unwind --engine: the DWARF CFI engine (stackpulse) and libunwind's
# remote unwinder on the same raw streams.  Each workload is captured
# once and unwound by both; tests/lib/unwind_agree.py compares the two
# sample by sample.  Where both engines call a stack complete, its user
# frames (addresses and flags) must agree on all but 1% of the frames,
# and each engine must call a sensible share of the stacks complete, so
# that two engines failing alike cannot pass.

load helper

setup_file() {
	# A CPU-bound Go program: main -> work -> step x6 -> leaf, where leaf
	# is a frameless leaf function (Go keeps no frame pointer in it).
	local d=$BATS_FILE_TMPDIR/go
	mkdir -p "$d"
	cat > "$d/main.go" <<'EOF'
package main

import (
	"os"
	"strconv"
	"time"
)

var sink float64

//go:noinline
func leaf(x float64) float64 {
	for i := 0; i < 1000; i++ {
		x = x*1.0000001 + 0.5
	}
	return x
}

//go:noinline
func step(n int, x float64) float64 {
	if n == 0 {
		return leaf(x)
	}
	return step(n-1, x) + 1
}

//go:noinline
func work(until time.Time) {
	for time.Now().Before(until) {
		sink += step(5, sink)
	}
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	work(time.Now().Add(time.Duration(secs * float64(time.Second))))
}
EOF
	printf 'module gowork\n\ngo 1.18\n' > "$d/go.mod"
	(cd "$d" && GOCACHE=$BATS_FILE_TMPDIR/gocache GOPATH=$BATS_FILE_TMPDIR/gopath \
		go build -o gowork .)
}

setup() {
	R=$BATS_TEST_TMPDIR/rec.sps
	A=$BATS_TEST_TMPDIR/agree.json
}

# both_engines: unwinds $R with each engine into $R.ENGINE and compares
# them into $A (printed, so that a failing test shows the numbers).
both_engines() {
	local e
	for e in stackpulse libunwind; do
		# Some cases cut every stack on purpose: best effort.
		sp-unwind --allow-empty --engine=$e -o "$R.$e" "$R"
		[ "$(sp-cat -t unwind "$R.$e" | jq -r .engine)" = "$e" ]
	done
	/usr/bin/python3 "$TOP/tests/lib/unwind_agree.py" "$R.stackpulse" "$R.libunwind" > "$A"
	cat "$A"
}

# agree KEY: one number of the comparison.
agree() {
	jq -r ".$1" "$A"
}

# engines_agree PCT_A PCT_B: both engines call at least PCT_A and PCT_B
# percent of the user stacks complete, and where both do, at most 1% of
# the frames differ.
engines_agree() {
	local user both frames differ
	user=$(agree user)
	both=$(agree both)
	frames=$(agree frames)
	differ=$(agree differ)
	[ "$user" -ge 200 ]
	[ $(($(agree complete_a) * 100)) -ge $((user * $1)) ]
	[ $(($(agree complete_b) * 100)) -ge $((user * $2)) ]
	[ "$both" -gt 0 ] && [ "$frames" -ge "$both" ]
	[ $((differ * 100)) -le "$frames" ]
}

@test "C: recursion, a thread and a call through libm: the engines agree" {
	sp-capture -q -F 999 -o "$R" -- "$WORKLOADS/spin" 2
	both_engines
	engines_agree 90 90
}

@test "C: deep recursion (200 frames) to _start: the engines agree" {
	sp-capture -q -F 999 -o "$R" -- "$WORKLOADS/deep" 2
	both_engines
	engines_agree 90 90
	# Deep stacks: over 100 user frames a sample on average.
	[ "$(agree frames)" -ge $(($(agree both) * 100)) ]
}

@test "C++: template instantiations and std:: calls: the engines agree" {
	sp-capture -q -F 999 -o "$R" -- "$WORKLOADS/templ" 2
	both_engines
	engines_agree 90 90
}

@test "signals: through the signal trampoline, the interrupted pc exact, the engines agree" {
	sp-capture -q -F 999 -o "$R" -- "$WORKLOADS/sigwork" 2
	both_engines
	engines_agree 90 90
	# The frame below the trampoline has no return-address flag in
	# either (the comparison includes the flags): it is there at all.
	sp-cat -t stack "$R.libunwind" > "$BATS_TEST_TMPDIR/stacks.json"
	jq -e -s 'map(.frames | map(.[3]) | .[1:] | index(0)) | map(select(. != null)) | length > 0' \
		"$BATS_TEST_TMPDIR/stacks.json"
}

@test "Go: .debug_frame only, a frameless leaf: the engines agree" {
	sp-capture -q -F 999 -o "$R" -- "$BATS_FILE_TMPDIR/go/gowork" 2
	both_engines
	engines_agree 90 90
	# Every complete stack of the main goroutine keeps the caller of the
	# frameless leaf: main.work, then step six times, then leaf.
	folded "$R.libunwind" > "$BATS_TEST_TMPDIR/stacks"
	grep -q '^runtime.goexit[^;]*;runtime.main;main.main;main.work;main.step;main.step;main.step;main.step;main.step;main.step;main.leaf ' "$BATS_TEST_TMPDIR/stacks"
}

@test "CPython -X perf: libunwind stops at the trampolines, honestly, where stackpulse goes through" {
	PY=$(python312)
	[ -n "$PY" ]
	sp-capture -q -F 999 -o "$R" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 2
	both_engines
	user=$(agree user)
	[ "$user" -ge 200 ]
	# Ours walks through the trampolines (no CFI, no frame pointer) to _start.
	[ $(($(agree complete_a) * 100)) -ge $((user * 90)) ]
	# libunwind has no way through them: its frame-pointer guess there is
	# never called complete; the stack ends at the trampoline's frame
	# (jit_no_map), or where its step led to no mapped code (bad_fp when
	# it knew it guessed, no_mapping when it did not say).
	[ $(($(agree complete_b) * 10)) -le "$user" ]
	guessed=$(($(unwind_count "$R.libunwind" jit_no_map) + $(unwind_count "$R.libunwind" bad_fp) +
		$(unwind_count "$R.libunwind" no_mapping)))
	[ $((guessed * 10)) -ge $((user * 8)) ]
	# Up to the first trampoline frame, the engines agree.
	[ $(($(agree prefix) * 2)) -ge "$user" ]
	[ $(($(agree prefix_differ) * 100)) -le "$(agree prefix_frames)" ]
	[ $(($(agree differ) * 100)) -le "$(agree frames)" ]
}

# same_stream: $R.stackpulse and $R.libunwind hold the same records but
# for the header and the unwind record.
same_stream() {
	diff <(sp-cat "$R.stackpulse" | grep -v '^{"t":"\(unwind\|header\)"') \
		<(sp-cat "$R.libunwind" | grep -v '^{"t":"\(unwind\|header\)"')
}

@test "the engines end stacks alike: a short stack copy, a deleted executable" {
	# 1 KiB of stack for 200 frames: every stack of the recursion is cut.
	sp-capture -q --stack-size 1024 -o "$R" -- "$WORKLOADS/deep" 1
	both_engines
	user=$(agree user)
	[ $(($(unwind_count "$R.libunwind" truncated) * 10)) -ge $((user * 9)) ]
	same_stream
	# The executable is gone by the time of the unwinding.
	cp "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/spin-copy"
	sp-capture -q -o "$R" -- "$BATS_TEST_TMPDIR/spin-copy" 0.5
	rm "$BATS_TEST_TMPDIR/spin-copy"
	both_engines
	user=$(agree user)
	[ $(($(unwind_count "$R.libunwind" missing_module) * 10)) -ge $((user * 9)) ]
	same_stream
}

@test "--no-fp-fallback: libunwind too ends at code without CFI" {
	PY=$(python312)
	[ -n "$PY" ]
	sp-capture -q -o "$R" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 1
	sp-unwind --engine=libunwind --no-fp-fallback -o "$R.libunwind" "$R"
	user=$(sp-cat -t unwind "$R.libunwind" | jq .user_samples)
	[ "$(unwind_count "$R.libunwind" jit_no_map)" -eq 0 ]
	[ $(($(unwind_count "$R.libunwind" no_cfi) * 2)) -ge "$user" ]
}

@test "--engine: stackpulse is the default; an unknown engine is a usage error" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.3
	sp-unwind -o "$R.default" "$R"
	[ "$(sp-cat -t unwind "$R.default" | jq -r .engine)" = stackpulse ]
	run -3 sp-unwind --engine=gdb "$R"
	[[ "$output" == *"invalid --engine 'gdb'"* ]]
	# The default is the engine both_engines calls stackpulse: the same
	# stream, and libunwind's agrees with it sample by sample.  (Not byte
	# for byte: a rare sample, such as one between an epilogue's pops,
	# libunwind may end short of where ours goes on.)
	both_engines
	cmp <(sp-cat "$R.default" | grep -v '^{"t":"header"') \
		<(sp-cat "$R.stackpulse" | grep -v '^{"t":"header"')
	[ "$(agree both)" -gt 0 ]
	[ $(($(agree differ) * 100)) -le "$(agree frames)" ]
	[ $(($(agree complete_b) * 10)) -ge $(($(agree user) * 9)) ]
}

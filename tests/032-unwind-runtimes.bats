#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-unwind on the programs people profile: JIT runtimes (Node, the JVM),
# whose code has no CFI, and the start and end of a process's life.

load helper

setup_file() {
	local d=$BATS_FILE_TMPDIR
	cat > "$d/hot.js" <<'JS'
function hot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
  return s;
}
function middle(n) { return hot(n) + 1; }
function outer(ms) {
  let t = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) t += middle(200000);
  return t;
}
console.log(outer(Number(process.argv[2])));
JS
	cat > "$d/Hot.java" <<'JAVA'
public class Hot {
    static int hot(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
        return s;
    }
    static int middle(int n) { return hot(n) + 1; }
    public static void main(String[] args) {
        long end = System.currentTimeMillis() + Long.parseLong(args[0]);
        long t = 0;
        while (System.currentTimeMillis() < end) t += middle(200000);
        System.out.println(t);
    }
}
JAVA
	(cd "$d" && javac Hot.java)
}

setup() {
	R=$BATS_TEST_TMPDIR/rec.sps
	S=$BATS_TEST_TMPDIR/sym.sps
	F=$BATS_TEST_TMPDIR/folded
}

# Removes the perf maps that the runtimes of a recording wrote.
teardown() {
	local pid
	[ -f "$R" ] || return 0
	for pid in $(sp-cat -t process "$R" 2>/dev/null | jq -r .pid); do
		rm -f "/tmp/perf-$pid.map"
	done
}

# symbolized REC OUT: unwinds and symbolizes a recording.
symbolized() {
	local -
	set -o pipefail
	sp-unwind "$1" | sp-symbolize -o "$2"
	forget_perf_maps "$1"
}

# ratio FOLDED MATCH REACH: "reached total" over the folded lines that
# match the extended regular expression MATCH, the samples of those that
# also match REACH.
ratio() {
	awk -v m="$2" -v r="$3" '$0 ~ m { t += $NF; if ($0 ~ r) c += $NF }
		END { print c + 0, t + 0 }' "$1"
}

@test "Node --perf-basic-prof: a hot JS function unwinds through the JIT frames to Builtins_JSEntry and _start" {
	cd "$BATS_TEST_TMPDIR"
	sp-capture -q -F 999 -o "$R" -- node --perf-basic-prof "$BATS_FILE_TMPDIR/hot.js" 3000
	symbolized "$R" "$S"
	sp-fold --show-hidden "$S" > "$F"
	# node's main calls node::Start as its last act, so no frame of main
	# remains: the C library's start calls node::Start.
	read -r reached total < <(ratio "$F" '[:*~^]hot ' '^node;_start;__libc_start_main;__libc_start_call_main;(main;)?node::Start.*;Builtins_JSEntry;')
	echo "hot: $reached of $total samples reach _start through Builtins_JSEntry"
	[ "$total" -ge 100 ]
	[ $((reached * 100)) -ge $((total * 90)) ]
	# The chain runs through JIT code: interpreted or compiled JS frames
	# lie between the entry and the hot function.
	grep -qE 'Builtins_JSEntry;Builtins_JSEntryTrampoline;.*[:*~^]hot ' "$F"
}

@test "Java 17 with -XX:+PreserveFramePointer: a hot method unwinds to JavaCalls::call_helper" {
	cd "$BATS_TEST_TMPDIR"
	sp-capture -q -F 999 -o "$R" -- java -XX:+PreserveFramePointer \
		-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$BATS_FILE_TMPDIR" Hot 3000
	symbolized "$R" "$S"
	sp-fold --show-hidden "$S" > "$F"
	read -r reached total < <(ratio "$F" 'Hot\.hot' 'JavaCalls::call_helper')
	echo "Hot.hot: $reached of $total samples reach JavaCalls::call_helper"
	[ "$total" -ge 100 ]
	[ $((reached * 100)) -ge $((total * 90)) ]
	# The JVM runs main in a thread of its own.
	grep -q '^java;clone3;start_thread;ThreadJavaMain;JavaMain;.*JavaCalls::call_helper(.*Hot\.hot' "$F"
}

@test "Java without frame pointers: the walk ends with jit_no_map, and no native frame is invented above a JIT frame" {
	cd "$BATS_TEST_TMPDIR"
	sp-capture -q -F 999 -o "$R" -- java -XX:-PreserveFramePointer \
		-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$BATS_FILE_TMPDIR" Hot 2000
	symbolized "$R" "$S"
	sp-fold --jit --show-hidden "$S" > "$F"
	read -r ended total < <(ratio "$F" 'Hot\.hot' '\[jit_no_map\];|JavaCalls::call_helper')
	echo "Hot.hot: $ended of $total samples end with jit_no_map or are complete"
	[ "$total" -ge 50 ]
	[ $((ended * 100)) -ge $((total * 90)) ]
	# Between the marker and the hot method lie only JIT frames (_[j]):
	# a stale return address into native code is never taken for a caller.
	run -0 awk '/Hot\.hot/ && /\[jit_no_map\];/' "$F"
	[ -n "$output" ]
	run -1 grep -vE '\[jit_no_map\];([^;]*_\[j\];)*[^;]*Hot\.hot[^;]*_\[j\]' <<< "$output"
	sp-cat -t unwind "$S" | jq -e '.ends[] | select(.kind == "jit_no_map") | .count > 0'
}

@test "sp-capture -- true and -- /bin/ls: the start-up samples are complete stacks" {
	local i tot=0 comp=0 s c cmd
	for cmd in true /bin/ls; do
		for i in 1 2 3 4 5 6 7 8; do
			sp-capture -q --allow-empty -F 4999 -o "$R" -- $cmd > /dev/null
			sp-unwind -o "$S" "$R"
			read -r s c < <(sp-cat -t unwind "$S" | jq -r '"\(.user_samples) \(.complete)"')
			# What ended an incomplete stack, for the log.
			[ "$s" = "$c" ] || sp-cat -t unwind "$S" |
				jq -c '[.ends[] | select(.kind != "complete" and .count > 0)]'
			tot=$((tot + s))
			comp=$((comp + c))
		done
	done
	echo "$comp of $tot stacks complete"
	[ "$tot" -ge 10 ]
	# One stack in a hundred may end early: once in CI one of 56 ended
	# as an impossible frame, and 240 runs here did not repeat it (the
	# ends printed above are to tell why when it comes again).
	[ $((tot - comp)) -le $((tot / 100 + 1)) ]
}

@test "ld.so relocating a large program: the stacks reach ld.so's entry, complete" {
	sp-capture -q -F 4999 -o "$R" -- env LD_BIND_NOW=1 clang --version > /dev/null
	symbolized "$R" "$S"
	sp-fold --show-hidden "$S" > "$F"
	read -r reached total < <(ratio "$F" '_dl_relocate_object|_dl_start;' '^[^;]*;(_start|\[ld-linux[^];]*\]);')
	echo "in ld.so's start-up: $reached of $total samples end at ld.so's entry"
	[ "$total" -ge 5 ]
	[ $((reached * 100)) -ge $((total * 95)) ]
	# No failed step: a sample between the pops of an epilogue whose CFI
	# still names the popped slots (_dl_lookup_symbol_x) is no exception.
	run -1 grep -E '\[(no_cfi|bad_fp|cycle|bad_cfa)\]' "$F"
}

@test "an atexit handler, main and a vfork child before its exec unwind to _start" {
	sp-capture -q -F 999 -o "$R" -- "$WORKLOADS/lifecycle" 0.6
	symbolized "$R" "$S"
	sp-fold --show-hidden --pid "$S" > "$F"
	local fn want
	for fn in in_atexit in_main in_vfork_child; do
		case $fn in
		in_atexit) want=';_start;__libc_start_main;__libc_start_call_main;exit;__run_exit_handlers;in_atexit;' ;;
		*) want=";_start;__libc_start_main;__libc_start_call_main;main;$fn;" ;;
		esac
		read -r reached total < <(ratio "$F" ";$fn;" "$want")
		echo "$fn: $reached of $total samples complete"
		[ "$total" -ge 20 ]
		[ $((reached * 100)) -ge $((total * 99)) ]
	done
	# The vfork child is a process of its own, on its parent's stack.
	[ "$(grep ';in_vfork_child;' "$F" | cut -d';' -f1 | sort -u | wc -l)" -eq 1 ]
	[ "$(grep ';in_vfork_child;' "$F" | cut -d';' -f1 | sort -u)" != "$(grep ';in_main;' "$F" | cut -d';' -f1 | sort -u)" ]
}

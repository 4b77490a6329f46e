#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-stat names the runtimes of a recording (Node.js, the JVM, CPython,
# Go, native code) and advises on stacks that ended early in a runtime's
# code with that runtime's options, never with a C compiler's.  The
# completeness of Node and Java stacks depends on the unwinder; these
# tests assert what sp-stat says given them.

load helper

setup_file() {
	local d=$BATS_FILE_TMPDIR
	cat > "$d/hot.js" <<'EOF'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work(ms) {
	const end = Date.now() + ms;
	let s = 0;
	while (Date.now() < end)
		s += fib(22);
	return s;
}
console.log(work(Number(process.argv[2] || 2000)));
EOF
	cat > "$d/Hot.java" <<'EOF'
public class Hot {
	static long mix(long h, int i) {
		return (h ^ i) * 1099511628211L;
	}
	static long work(int n) {
		long h = 1469598103934665603L;
		for (int i = 0; i < n; i++)
			h = mix(h, i);
		return h;
	}
	public static void main(String[] args) {
		long end = System.nanoTime() + (long)(Double.parseDouble(args[0]) * 1e9);
		long s = 0;
		while (System.nanoTime() < end)
			s += work(100000);
		System.out.println(s);
	}
}
EOF
	javac -d "$d" "$d/Hot.java"
}

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
}

# stages OUT CMD...: records a command into OUT.raw, OUT.unw and OUT.  It
# runs in the test's own directory: node with --perf-basic-prof writes
# isolate-*-v8.log files where it runs.
stages() {
	local out=$1
	shift
	(cd "$BATS_TEST_TMPDIR" && sp-capture -q -F 999 -o "$out.raw" -- "$@" > /dev/null)
	# Some recordings here may have no complete stack: sp-stat's to say.
	sp-unwind --allow-empty -o "$out.unw" "$out.raw" 2> /dev/null
	sp-symbolize -o "$out" "$out.unw"
	forget_perf_maps "$out.raw"
}

# no_c_advice FILE...: sp-stat's advice on each stream never names a C
# compiler's flags.
no_c_advice() {
	local f
	for f in "$@"; do
		run -0 sp-stat "$f"
		run -1 grep -q -- '-fno-omit-frame-pointer\|-fasynchronous-unwind-tables' <<< "$output"
	done
}

# runtime_json FILE KEY: the runtimes entry KEY of sp-stat --json.
runtime_json() {
	local -
	set -o pipefail
	sp-stat --json "$1" | jq -c --arg k "$2" '.runtimes[] | select(.runtime == $k)'
}

@test "node --perf-basic-prof: Node.js named at every stage, Node's advice only" {
	stages "$S" node --perf-basic-prof "$BATS_FILE_TMPDIR/hot.js" 2000
	for f in "$S.raw" "$S.unw" "$S"; do
		run -0 sp-stat "$f"
		[[ "$output" == *"runtimes:"*"Node.js (V8): 1 process"* ]]
		runtime_json "$f" node > "$BATS_TEST_TMPDIR/node"
		# Every sample of the recording is one of node's.
		jq -e --argjson n "$(summary "$S.raw" samples)" '.samples == $n and .processes == 1' "$BATS_TEST_TMPDIR/node"
	done
	no_c_advice "$S.raw" "$S.unw" "$S"
	# Stacks that end early in V8's code, when there are enough of them
	# for advice, get V8's options.
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	jq -e '(.runtimes[] | select(.runtime == "node") | .stopped_here | add) * 100 < .unwinding.user_samples
	       or (.diagnosis | map(.advice) | any(test("--perf-basic-prof") and test("--perf-prof")
							and test("--interpreted-frames-native-stack")))' "$BATS_TEST_TMPDIR/j"
	# The JIT frames are node's, named from its perf map.
	jq -e '(.runtimes[] | select(.runtime == "node") | .jit_frames > 0 and .jit_frames_unnamed == 0)' "$BATS_TEST_TMPDIR/j"
}

@test "Java 17 without -XX:+PreserveFramePointer: the JVM named, PreserveFramePointer advised" {
	stages "$S" java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$BATS_FILE_TMPDIR" Hot 2
	for f in "$S.raw" "$S"; do
		run -0 sp-stat "$f"
		[[ "$output" == *"Java (JVM): 1 process"* ]]
	done
	no_c_advice "$S.unw" "$S"
	run -0 sp-stat "$S"
	[[ "$output" == *"ended early in the JIT code or builtins of Java (JVM)"* ]]
	[[ "$output" == *"-XX:+PreserveFramePointer"*"-XX:+DumpPerfMapAtExit"*"jcmd PID Compiler.perfmap"* ]]
	# What sp-stat counts in the JVM's code is what the unwinder counted.
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	jq -e '(.runtimes[] | select(.runtime == "jvm") | .stopped_here | add) <= ([.unwinding.failures[]] | add)' "$BATS_TEST_TMPDIR/j"
}

@test "CPython with -X perf: CPython named, no C advice" {
	py=$(python312)
	[ -n "$py" ]
	stages "$S" "$py" -X perf "$TOP/tests/workloads/pywork.py" 1.5
	for f in "$S.raw" "$S.unw" "$S"; do
		run -0 sp-stat "$f"
		[[ "$output" == *"CPython: 1 process"* ]]
	done
	no_c_advice "$S.raw" "$S.unw" "$S"
	runtime_json "$S" cpython | jq -e '.jit_frames > 0'
}

@test "a C program without unwind tables: native code, the C compiler's advice" {
	objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr --remove-section=.debug_frame \
		"$WORKLOADS/spin" "$BATS_TEST_TMPDIR/spin"
	stages "$S" "$BATS_TEST_TMPDIR/spin" 1
	run -0 sp-stat "$S"
	[[ "$output" == *"runtimes:"*"native code: 1 process"* ]]
	[[ "$output" == *"do not reach their thread's entry, most because no unwind information"*"-fno-omit-frame-pointer"* ]]
	run -1 grep -q 'perf-basic-prof\|PreserveFramePointer\|-X perf' <<< "$output"
	# A walk that stopped in native code is native code's, not a runtime's.
	sp-stat --json "$S" | jq -e '[.runtimes[] | select(.runtime != "native")] == []'
}

@test "a Go program: Go named from its runtime's frames" {
	d=$BATS_TEST_TMPDIR/src
	mkdir -p "$d"
	printf 'package main\n\nfunc main() {\n\ts := 0\n\tfor i := 0; i < 3000000000; i++ {\n\t\ts += i ^ s\n\t}\n\tprintln(s)\n}\n' > "$d/main.go"
	printf 'module spin\n\ngo 1.18\n' > "$d/go.mod"
	(cd "$d" && GOCACHE=$BATS_TEST_TMPDIR/gocache HOME=$BATS_TEST_TMPDIR GOFLAGS=-buildvcs=false go build -o "$d/spin" .)
	stages "$S" "$d/spin"
	run -0 sp-stat "$S"
	[[ "$output" == *"Go: 1 process"* ]]
}

# handmade OUT: an unwound stream of three processes, node, java and a
# native program, whose stacks end for known reasons in known code.
handmade() {
	local j=$BATS_TEST_TMPDIR/hand.jsonl
	head -n 1 "$VECTORS/unwound.jsonl" | sed 's/"version":\[1,0\]/"version":[1,1]/' > "$j"
	cat >> "$j" <<'EOF'
{"t":"process","pid":100,"comm":"node","time":1000000000}
{"t":"map","pid":100,"start":4194304,"len":1048576,"pgoff":0,"path":"/usr/bin/node"}
{"t":"map","pid":100,"start":139637976727552,"len":1048576,"pgoff":0,"path":"//anon"}
{"t":"process","pid":200,"comm":"java","time":1000000000}
{"t":"map","pid":200,"start":4194304,"len":65536,"pgoff":0,"path":"/usr/lib/jvm/java-17/bin/java"}
{"t":"map","pid":200,"start":140000000000000,"len":16777216,"pgoff":0,"path":"/usr/lib/jvm/java-17/lib/server/libjvm.so"}
{"t":"map","pid":200,"start":139637976727552,"len":1048576,"pgoff":0,"path":"//anon"}
{"t":"process","pid":300,"comm":"app","time":1000000000}
{"t":"map","pid":300,"start":4194304,"len":1048576,"pgoff":0,"path":"/usr/bin/app"}
{"t":"module","id":0,"path":"/usr/bin/node","kind":"elf"}
{"t":"module","id":1,"path":"//anon","kind":"jit","pid":100}
{"t":"module","id":2,"path":"//anon","kind":"jit","pid":200}
{"t":"module","id":3,"path":"/usr/bin/app","kind":"elf"}
{"t":"stack","id":0,"frames":[[4198400,0,4096,0]]}
{"t":"stack","id":1,"frames":[[139637976727808,1,256,2],[0,null,11,8]]}
{"t":"stack","id":2,"frames":[[139637976728064,1,512,2],[4198400,0,4096,6],[0,null,12,8]]}
{"t":"stack","id":3,"frames":[[139637976727808,2,256,2],[0,null,12,8]]}
{"t":"stack","id":4,"frames":[[4198400,3,4096,0],[0,null,11,8]]}
{"t":"stack","id":5,"frames":[[4202496,0,8192,0],[0,null,2,8]]}
EOF
	# node: 2 complete, 3 bad_fp and 5 jit_no_map in its JIT code, 1
	# no_cfi in its builtins; java: 7 jit_no_map; app: 4 bad_fp.
	local pid stack count t=1000000000 i
	while read -r pid stack count; do
		for ((i = 0; i < count; i++)); do
			t=$((t + 1000000))
			echo "{\"t\":\"sample\",\"pid\":$pid,\"tid\":$pid,\"time\":$t,\"cpu\":0,\"period\":1000000,\"stack\":$stack}"
		done
	done >> "$j" <<'EOF'
100 0 2
100 1 3
100 2 5
100 5 1
200 3 7
300 4 4
EOF
	cat >> "$j" <<'EOF'
{"t":"unwind","samples":22,"user_samples":22,"complete":2,"frames":42,"ends":[{"code":0,"kind":"complete","count":2,"description":""},{"code":2,"kind":"no_cfi","count":1,"description":""},{"code":11,"kind":"bad_fp","count":7,"description":""},{"code":12,"kind":"jit_no_map","count":12,"description":""}]}
{"t":"summary","sample_events":22,"samples":22,"lost_events":0,"empty_stack_samples":0,"truncated_frame_markers":0,"ignored_user_callchain_frames":0,"kernel_enabled":true,"error_stats":[],"skipped_no_pid":0,"skipped_no_tid":0,"skipped_no_time":0,"skipped_no_frames":0,"processes":3,"threads":3,"duration_ns":22000000}
EOF
	sps_from_json "$j" "$1"
}

@test "bad_fp and jit_no_map: counted exactly, by the runtime of the code where the walk stopped" {
	handmade "$S"
	run -0 sp-stat "$S"
	[[ "$output" == *"       7  bad_fp: "* ]]
	[[ "$output" == *"      12  jit_no_map: "* ]]
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	jq -e '.unwinding.failures.bad_fp == 7 and .unwinding.failures.jit_no_map == 12 and .unwinding.failures.no_cfi == 1' "$BATS_TEST_TMPDIR/j"
	jq -e '[.runtimes[] | {(.runtime): [.processes, .samples, .ended_early, .ended_in_own_code]}] | add ==
	       {"native": [1, 4, 4, 0], "node": [1, 11, 9, 9], "jvm": [1, 7, 7, 7]}' "$BATS_TEST_TMPDIR/j"
	jq -e '[.runtimes[] | {(.runtime): (.stopped_here | with_entries(select(.value > 0)))}] | add ==
	       {"native": {"bad_fp": 4}, "node": {"no_cfi": 1, "bad_fp": 3, "jit_no_map": 5}, "jvm": {"jit_no_map": 7}}' "$BATS_TEST_TMPDIR/j"
	# One piece of advice each: the C compiler's for the native walks
	# only, each runtime's own for its; first the share of incomplete
	# stacks, with the remedy of the runtime most of the main reason's are in.
	jq -r '.diagnosis[] | "\(.problem) => \(.advice)"' "$BATS_TEST_TMPDIR/j" > "$BATS_TEST_TMPDIR/advice"
	[ "$(lines "$BATS_TEST_TMPDIR/advice")" -eq 4 ]
	grep -q '^20 of 22 stacks (90.9%) do not reach their thread.s entry, most because .* (12 stacks, 54.5%) => run java with -XX:+PreserveFramePointer' "$BATS_TEST_TMPDIR/advice"
	grep -q '^4 stacks (18.2%) ended early in native code: .*=> .*-fno-omit-frame-pointer' "$BATS_TEST_TMPDIR/advice"
	grep -q '^9 stacks (40.9%) ended early in the JIT code or builtins of Node.js (V8) (no_cfi 1, bad_fp 3, jit_no_map 5) => run node with --perf-basic-prof' "$BATS_TEST_TMPDIR/advice"
	grep -q '^7 stacks (31.8%) ended early in the JIT code or builtins of Java (JVM) (jit_no_map 7) => run java with -XX:+PreserveFramePointer' "$BATS_TEST_TMPDIR/advice"
	[ "$(grep -c -- '-fno-omit-frame-pointer' "$BATS_TEST_TMPDIR/advice")" -eq 1 ]
}

@test "jit_no_map in a process of no known runtime: the JIT advice, not the C compiler's" {
	handmade "$S.full"
	# The node process's executable renamed: its JIT code is of no known runtime.
	sp-cat "$S.full" | sed 's|/usr/bin/node|/usr/bin/engine|' | grep -v '"pid":200\|"pid":300\|"stack":[34]' |
		sed 's/"samples":22,"user_samples":22/"samples":11,"user_samples":11/; s/"count":7,/"count":3,/; s/"count":12,/"count":5,/; s/"sample_events":22,"samples":22/"sample_events":11,"samples":11/' > "$BATS_TEST_TMPDIR/j.jsonl"
	sps_from_json "$BATS_TEST_TMPDIR/j.jsonl" "$S"
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	jq -e '.unwinding.failures.bad_fp == 3 and .unwinding.failures.jit_no_map == 5' "$BATS_TEST_TMPDIR/j"
	jq -e '(.runtimes[] | select(.runtime == "jit") | .stopped_here | with_entries(select(.value > 0))) == {"bad_fp": 3, "jit_no_map": 5}' "$BATS_TEST_TMPDIR/j"
	jq -r '.diagnosis[] | "\(.problem) => \(.advice)"' "$BATS_TEST_TMPDIR/j" > "$BATS_TEST_TMPDIR/advice"
	grep -q '^8 stacks .* ended early in JIT code of an unknown runtime (bad_fp 3, jit_no_map 5) => have the JIT keep frame pointers' "$BATS_TEST_TMPDIR/advice"
	# The one no_cfi stack stopped in the renamed executable: native code.
	grep -q '^1 stacks (9.1%) ended early: no unwind information.* => .*-fno-omit-frame-pointer' "$BATS_TEST_TMPDIR/advice"
	grep -q '^9 of 11 stacks (81.8%) do not reach their thread.s entry, most because .* (5 stacks, 45.5%) => have the JIT keep frame pointers' "$BATS_TEST_TMPDIR/advice"
	[ "$(lines "$BATS_TEST_TMPDIR/advice")" -eq 3 ]
}

@test "address-only frames: the vDSO's are not the user's, unnamed JIT frames get their runtime's advice" {
	local j=$BATS_TEST_TMPDIR/sym.jsonl
	head -n 1 "$VECTORS/symbolized.jsonl" | sed 's/"version":\[1,0\]/"version":[1,1]/' > "$j"
	cat >> "$j" <<'EOF'
{"t":"process","pid":100,"comm":"node","time":1000000000}
{"t":"map","pid":100,"start":4194304,"len":1048576,"pgoff":0,"path":"/usr/bin/node"}
{"t":"process","pid":300,"comm":"app","time":1000000000}
{"t":"module","id":0,"path":"[vdso]","kind":"vdso"}
{"t":"module","id":1,"path":"/usr/bin/app","kind":"elf"}
{"t":"module","id":2,"path":"//anon","kind":"jit","pid":100}
{"t":"module","id":3,"path":"/usr/bin/node","kind":"elf"}
{"t":"frame","id":0,"addr":140737354000000,"origin":"address-only","name":"[vdso]+0x980","module":0}
{"t":"frame","id":1,"addr":4198400,"origin":"symtab","name":"main","module":1,"offset":0,"flags":4}
{"t":"frame","id":2,"addr":139637976727808,"origin":"address-only","name":"0x7f0000000100","module":2,"flags":512}
{"t":"frame","id":3,"addr":4198400,"origin":"symtab","name":"node::Start","module":3,"offset":0,"flags":4}
{"t":"symstack","id":0,"frames":[0,1]}
{"t":"symstack","id":1,"frames":[2,3]}
{"t":"sample","pid":300,"tid":300,"time":1001000000,"cpu":0,"period":1000000,"stack":0}
{"t":"sample","pid":100,"tid":100,"time":1002000000,"cpu":0,"period":1000000,"stack":1}
{"t":"symbolize","frames":4,"origins":{"symtab":2,"dynsym":0,"debuginfo":0,"perf-map":0,"kallsyms":0,"address-only":2},"address_only":2}
{"t":"summary","sample_events":2,"samples":2,"lost_events":0,"empty_stack_samples":0,"truncated_frame_markers":0,"ignored_user_callchain_frames":0,"kernel_enabled":true,"error_stats":[],"skipped_no_pid":0,"skipped_no_tid":0,"skipped_no_time":0,"skipped_no_frames":0,"processes":2,"threads":2,"duration_ns":2000000}
EOF
	sps_from_json "$j" "$S"
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	# Half the frames have no name, but neither is the user's native code.
	jq -e '.symbolization.address_only_pct == 50' "$BATS_TEST_TMPDIR/j"
	jq -e '[.diagnosis[] | select(.problem | test("address-only"))] == []' "$BATS_TEST_TMPDIR/j"
	jq -e '.runtimes[] | select(.runtime == "node") | .jit_frames == 1 and .jit_frames_unnamed == 1' "$BATS_TEST_TMPDIR/j"
	jq -e '[.diagnosis[] | select(.problem | startswith("1 of 1 JIT frames (100.0%) of Node.js (V8) have no name: node ran without --perf-basic-prof"))
		| select(.advice | test("--perf-basic-prof"))] | length == 1' "$BATS_TEST_TMPDIR/j"
	jq -e '.diagnosis | length == 1' "$BATS_TEST_TMPDIR/j"
}

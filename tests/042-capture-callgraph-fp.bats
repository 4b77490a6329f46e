#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-capture --call-graph fp: user callchains the kernel walks by frame
# pointers, with no stack copy, and sp-unwind resolving them.  deep-fp is
# deep built with frame pointers (leaf functions' too); deep is not.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
}

# stats FILE: "samples bytes_per_sample copied_stack_bytes_per_sample" of a raw stream.
stats() {
	local -
	set -o pipefail
	sp-cat "$1" | /usr/bin/python3 -c '
import base64, json, os, sys
n = copied = 0
for line in sys.stdin:
    r = json.loads(line)
    if r.get("t") != "sample":
        continue
    n += 1
    us = r.get("ustack")
    if us:
        copied += len(base64.b64decode(us["$bin"]))
    copied += r.get("ustack_shared", 0)
size = os.path.getsize(sys.argv[1])
print(n, size // max(n, 1), copied // max(n, 1))
' "$1"
}

# hot FOLDED: the heaviest stack of a folded file, without its first
# element (the process) and without markers.
hot() {
	sort -t' ' -k2,2nr "$1" | head -1 | cut -d' ' -f1 | tr ';' '\n' | sed 1d |
		grep -v '^\[' | paste -sd';'
}

@test "--call-graph fp: the header says so, samples carry uchain and no stack copy" {
	sp-capture -q --call-graph fp -o "$T/fp.sps" -- "$WORKLOADS/deep-fp" -d 8 1
	[ "$(jqs "$T/fp.sps" 'select(.t=="header") | [.version, .options.call_graph, .options.stack_size]')" = '[[1,6],"fp",0]' ]
	n=$(jqs "$T/fp.sps" 'select(.t=="sample")' | wc -l)
	[ "$n" -ge 100 ]
	# No sample has registers or a stack copy; nearly all have a user chain.
	run -0 jqs "$T/fp.sps" 'select(.t=="sample") | select(has("ustack") or has("regs") or has("abi"))'
	[ -z "$output" ]
	u=$(jqs "$T/fp.sps" 'select(.t=="sample" and (.uchain | length) >= 10)' | wc -l)
	[ "$u" -ge $((n * 9 / 10)) ]
	[ "$(summary "$T/fp.sps" ignored_user_callchain_frames)" = 0 ]
	# sp-stat names the mode instead of a stack window of 0 bytes.
	run -0 sp-stat "$T/fp.sps"
	[[ "$output" == *"Hz effective, call graph fp (the kernel's frame-pointer walk, no stack copy)"* ]]
	run -1 grep -q "stack window" <<< "$output"
	[ "$(sp-stat --json "$T/fp.sps" | jq -r '.recording.call_graph')" = fp ]
}

@test "--call-graph fp: bytes per sample far below the DWARF recording's" {
	sp-capture -q --call-graph fp -o "$T/fp.sps" -- "$WORKLOADS/deep-fp" -d 8 1
	sp-capture -q --call-graph dwarf -o "$T/dw.sps" -- "$WORKLOADS/deep-fp" -d 8 1
	[ "$(jqs "$T/dw.sps" 'select(.t=="header") | .options.call_graph')" = '"dwarf"' ]
	read -r nf bf _ < <(stats "$T/fp.sps")
	read -r nd bd cd < <(stats "$T/dw.sps")
	echo "fp: $nf samples, $bf B/sample; dwarf: $nd samples, $bd B/sample, $cd B of stack copied/sample"
	[ "$nf" -ge 100 ]
	[ "$nd" -ge 100 ]
	# The DWARF stream shares each copy's unchanged tail, so the files
	# differ less than the copies: the kernel copied ten times more.
	[ "$bf" -lt "$bd" ]
	[ $((bf * 10)) -lt "$cd" ]
}

@test "--call-graph fp: the same hot stack as DWARF, from the leaf up to main" {
	sp-capture -q --call-graph fp -o "$T/fp.sps" -- "$WORKLOADS/deep-fp" -d 8 1
	sp-capture -q -o "$T/dw.sps" -- "$WORKLOADS/deep-fp" -d 8 1
	sp-unwind --allow-empty -o "$T/fp.unw" "$T/fp.sps"
	sp-symbolize "$T/fp.unw" | sp-fold > "$T/fp.folded"
	sp-unwind -o "$T/dw.unw" "$T/dw.sps"
	sp-symbolize "$T/dw.unw" | sp-fold > "$T/dw.folded"
	want="main$(printf ';deep_recurse%.0s' 1 2 3 4 5 6 7 8);deep_leaf"
	[ "$(hot "$T/dw.folded")" = "$want" ]
	[ "$(hot "$T/fp.folded")" = "$want" ]
	# Every user frame but the first is a return address.
	run -0 sp-cat -t stack "$T/fp.unw"
	/usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    fr = [f for f in json.loads(line)["frames"] if not f[3] & 8]
    assert fr and not fr[0][3] & 4, fr
    assert all(f[3] & 4 for f in fr[1:]), fr
' <<< "$output"
	# The chain ends where the C library's start-up code keeps no frame
	# pointer (complete where it does): never anything else.
	total=$(sp-cat -t unwind "$T/fp.unw" | jq '.user_samples')
	[ $(( $(unwind_count "$T/fp.unw" complete) + $(unwind_count "$T/fp.unw" bad_fp) )) -eq "$total" ]
}

@test "--call-graph fp on code without frame pointers: stacks end early, bad_fp says so" {
	sp-capture -q --call-graph fp -o "$T/nofp.sps" -- "$WORKLOADS/deep" -d 8 1
	run -1 sp-unwind -o "$T/nofp.unw" "$T/nofp.sps"
	[[ "$output" == *"no stack is complete"*"frame pointers"* ]]
	total=$(sp-cat -t unwind "$T/nofp.unw" | jq '.user_samples')
	[ "$total" -ge 100 ]
	[ "$(unwind_count "$T/nofp.unw" bad_fp)" -ge $((total * 9 / 10)) ]
	run -0 sp-stat "$T/nofp.unw"
	[[ "$output" == *"bad_fp"* ]]
	# The leaf is there, its callers are not.
	sp-symbolize "$T/nofp.unw" | sp-fold > "$T/nofp.folded"
	run -1 grep -q 'deep_recurse' "$T/nofp.folded"
	grep -q '\[bad_fp\];deep_leaf ' "$T/nofp.folded"
}

@test "--call-graph auto and unknown modes are usage errors; dwarf,SIZE sets the window" {
	run -3 sp-capture --call-graph auto -- true
	[[ "$output" == *"auto is not offered"*"cannot tell"* ]]
	run -3 sp-capture --call-graph lbr -- true
	[[ "$output" == *"invalid --call-graph 'lbr'"* ]]
	run -3 sp-capture --call-graph dwarf,0 -- true
	run -3 sp-capture --call-graph fp --stack-size 8K -- true
	[[ "$output" == *"--stack-size applies to --call-graph dwarf"* ]]
	sp-capture -q --call-graph dwarf,8K -o "$T/d.sps" -- "$WORKLOADS/deep-fp" -d 8 0.2
	[ "$(jqs "$T/d.sps" 'select(.t=="header") | [.options.call_graph, .options.stack_size]')" = '["dwarf",8192]' ]
}

@test "--call-graph fp with --kernel: kernel and user parts of one stack" {
	sp-capture -q --kernel --call-graph fp -o "$T/k.sps" -- dd if=/dev/zero of=/dev/null bs=64k count=100000
	[ "$(jqs "$T/k.sps" 'select(.t=="header") | .kernel_enabled')" = true ]
	both=$(jqs "$T/k.sps" 'select(.t=="sample" and has("kstack") and has("uchain"))' | wc -l)
	[ "$both" -ge 20 ]
	sp-unwind --allow-empty -o "$T/k.unw" "$T/k.sps"
	# Kernel frames first (kind 1), then user frames (kind 0).
	run -0 sp-cat -t stack "$T/k.unw"
	/usr/bin/python3 -c '
import json, sys
mixed = 0
for line in sys.stdin:
    kinds = [f[3] & 3 for f in json.loads(line)["frames"] if not f[3] & 8]
    if 1 in kinds and 0 in kinds:
        assert kinds == sorted(kinds, reverse=True), kinds
        mixed += 1
assert mixed > 0
' <<< "$output"
}

@test "--call-graph fp streams through a pipe" {
	local -
	set -o pipefail
	sp-capture -q --call-graph fp -- "$WORKLOADS/deep-fp" -d 8 1 |
		sp-unwind --allow-empty | sp-symbolize | sp-fold > "$T/pipe.folded"
	[ "$(hot "$T/pipe.folded")" = "main$(printf ';deep_recurse%.0s' 1 2 3 4 5 6 7 8);deep_leaf" ]
}

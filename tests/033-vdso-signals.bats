#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The vDSO travels in the stream (its image record), so that stacks through
# it unwind and are named on another host; and stacks through a signal
# handler unwind through the signal frame to main.

load helper

# One recording of vdsoloop, whose samples mostly lie in the vDSO, shared by
# the tests that only read it.
setup_file() {
	sp-capture -q -F 1999 -o "$BATS_FILE_TMPDIR/vdso.sps" -- "$WORKLOADS/vdsoloop" 2
}

setup() {
	V=$BATS_FILE_TMPDIR/vdso.sps
	T=$BATS_TEST_TMPDIR
}

# other_boot IN OUT [TYPE]: IN as recorded in another boot (its header's
# boot_id changed), without its records of type TYPE.  The JSON lines are
# edited as text: jq would turn integers past 2^53 (a register that holds
# -1) into floats, which no stream may hold.
other_boot() {
	local -
	set -o pipefail
	sp-cat "$1" | grep -v "^{\"t\":\"${3:-no type}\"" |
		sed '/^{"t":"header"/ s/"boot_id":"[^"]*"/"boot_id":"00000000-0000-4000-8000-000000000000"/' \
		> "$2.jsonl"
	grep -q '^{"t":"header".*"boot_id":"00000000-0000-4000-8000-000000000000"' "$2.jsonl"
	sp-cat --from-json "$2.jsonl" > "$2"
}

# vdso_leaves FILE: "LEAF GOOD" for a symbolized stream: the samples whose
# innermost frame lies in a vdso module, and of those the ones whose
# innermost frame is named as a clock function of the vDSO, which pass
# through main and have no marker.
vdso_leaves() {
	local -
	set -o pipefail
	sp-cat "$1" | jq -s -r '
		[.[] | select(.t == "module" and .kind == "vdso") | .id] as $vm |
		(map(select(.t == "frame")) | INDEX(.id)) as $fr |
		(map(select(.t == "symstack")) | INDEX(.id)) as $ss |
		[.[] | select(.t == "sample" and .stack != null) |
		 [$ss[.stack | tostring].frames[] | $fr[tostring]] |
		 select(.[0].module as $m | any($vm[]; . == $m))] |
		[length, map(select((.[0].name | test("^(__vdso_)?(clock_gettime|gettimeofday)$")) and
				    any(.[]; .name == "main") and
				    all(.[]; ((.flags // 0) / 8 | floor) % 2 == 0))) | length] |
		"\(.[0]) \(.[1])"'
}

# handler_stacks FILE: for each sample of a symbolized stream with a frame in
# handler_work, its frames' names from the innermost out, joined by ";"; a
# frame after the first that is not a return address (the instruction a
# signal interrupted) is marked with a leading "!".
handler_stacks() {
	local -
	set -o pipefail
	sp-cat "$1" | jq -s -r '
		(map(select(.t == "frame")) | INDEX(.id)) as $fr |
		(map(select(.t == "symstack")) | INDEX(.id)) as $ss |
		.[] | select(.t == "sample" and .stack != null) |
		[$ss[.stack | tostring].frames | to_entries[] | $fr[.value | tostring] as $f |
		 (if .key > 0 and (($f.flags // 0) / 4 | floor) % 2 == 0 then "!" else "" end) + $f.name] |
		select(index("handler_work") != null) | join(";")'
}

@test "the raw stream carries the vDSO's image before its map and every sample" {
	sp-cat "$V" > "$T/all.jsonl"
	# One image, of the build-id of the [vdso] map records, an ELF file.
	[ "$(jq -c 'select(.t == "image") | .path' "$T/all.jsonl")" = '"[vdso]"' ]
	bid=$(jq -r 'select(.t == "image") | .build_id["$bin"]' "$T/all.jsonl")
	[ -n "$bid" ]
	[ "$(jq -r 'select(.t == "map" and .path == "[vdso]") | .build_id["$bin"]' "$T/all.jsonl" | sort -u)" = "$bid" ]
	jq -r 'select(.t == "image") | .data["$bin"]' "$T/all.jsonl" | base64 -d > "$T/image"
	[ "$(head -c 4 "$T/image" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]
	[ "$(stat -c %s "$T/image")" -ge 4096 ]
	# It comes before the [vdso] map record and before the first sample.
	jq -r '.t + (if .t == "map" and .path == "[vdso]" then "-vdso" else "" end)' "$T/all.jsonl" > "$T/order"
	[ "$(grep -n -m1 -x image "$T/order" | cut -d: -f1)" -lt "$(grep -n -m1 -x map-vdso "$T/order" | cut -d: -f1)" ]
	[ "$(grep -n -m1 -x image "$T/order" | cut -d: -f1)" -lt "$(grep -n -m1 -x sample "$T/order" | cut -d: -f1)" ]
	# sp-cat's JSON gives the bytes back exactly.
	sp-cat --from-json "$T/all.jsonl" > "$T/again.sps"
	cmp "$V" "$T/again.sps"
}

@test "processes of one ABI share one image record, written before any of their samples" {
	"$WORKLOADS/vdsoloop" 3 &
	p1=$!
	"$WORKLOADS/vdsoloop" 3 &
	p2=$!
	sleep 0.2
	sp-capture -q -F 999 --duration 1 -p "$p1,$p2" -o "$T/two.sps"
	wait "$p1" "$p2"
	sp-cat "$T/two.sps" > "$T/two.jsonl"
	[ "$(jq -c 'select(.t == "image")' "$T/two.jsonl" | wc -l)" -eq 1 ]
	bid=$(jq -c 'select(.t == "image") | .build_id' "$T/two.jsonl")
	[ "$(jq -c 'select(.t == "map" and .path == "[vdso]") | [.pid, .build_id]' "$T/two.jsonl" | sort -u | wc -l)" -eq 2 ]
	[ "$(jq -c 'select(.t == "map" and .path == "[vdso]") | .build_id' "$T/two.jsonl" | sort -u)" = "$bid" ]
	jq -r '.t' "$T/two.jsonl" > "$T/order"
	[ "$(grep -n -m1 -x image "$T/order" | cut -d: -f1)" -lt "$(grep -n -m1 -x sample "$T/order" | cut -d: -f1)" ]
	# Both processes' vDSO stacks unwind in another boot.
	other_boot "$T/two.sps" "$T/other.sps"
	sp-unwind -o "$T/u.sps" "$T/other.sps"
	[ "$(unwind_count "$T/u.sps" missing_module)" -eq 0 ]
	[ "$(sp-cat -t sample "$T/u.sps" | jq -r .pid | sort -u | wc -l)" -eq 2 ]
}

@test "recorded in another boot, vDSO stacks unwind and are named from the image" {
	other_boot "$V" "$T/other.sps"
	run sp-unwind -o "$T/u.sps" "$T/other.sps"
	[ "$status" -eq 0 ]
	# The image passes through sp-unwind, and the vDSO's module has its build-id.
	[ "$(sp-cat -t image "$T/u.sps" | jq -c .build_id)" = "$(sp-cat -t image "$V" | jq -c .build_id)" ]
	[ "$(sp-cat -t module "$T/u.sps" | jq -c 'select(.kind == "vdso") | .build_id')" = "$(sp-cat -t image "$V" | jq -c .build_id)" ]
	run sp-symbolize -o "$T/s.sps" "$T/u.sps"
	[ "$status" -eq 0 ]
	read -r leaf good < <(vdso_leaves "$T/s.sps")
	samples=$(summary "$V" samples)
	echo "samples: $samples, leaf in the vDSO: $leaf, whole and named: $good"
	# Most samples lie in the vDSO, and at least 95% of those are whole.
	[ "$leaf" -ge $((samples / 2)) ]
	[ "$good" -ge $((leaf * 95 / 100)) ]
	sp-fold "$T/s.sps" > "$T/folded"
	grep -q '^vdsoloop;main;vdso_loop;read_monotonic;__clock_gettime;__vdso_clock_gettime [0-9]' "$T/folded"
	grep -q '^vdsoloop;main;vdso_loop;read_realtime;\(__vdso_\)\?gettimeofday [0-9]' "$T/folded"
	# sp-unwind's other engine takes the vDSO from the same place.
	sp-unwind --engine libunwind -o "$T/lu.sps" "$T/other.sps"
	sp-symbolize -o "$T/ls.sps" "$T/lu.sps"
	read -r leaf good < <(vdso_leaves "$T/ls.sps")
	echo "libunwind engine: leaf in the vDSO: $leaf, whole and named: $good"
	[ "$leaf" -ge $((samples / 2)) ]
	[ "$good" -ge $((leaf * 95 / 100)) ]
}

@test "without its image, another boot's vDSO frames end with missing_module" {
	other_boot "$V" "$T/noimg.sps" image
	run sp-unwind -o "$T/u.sps" "$T/noimg.sps"
	[ "$status" -eq 0 ]
	sp-cat -t module,stack "$T/u.sps" > "$T/recs"
	vm=$(jq 'select(.t == "module" and .kind == "vdso") | .id' "$T/recs")
	[ -n "$vm" ]
	# Every stack with its innermost frame in the vDSO is that frame and the
	# marker of reason 3, nothing invented after it.
	jq -c --argjson vm "$vm" 'select(.t == "stack" and .frames[0][1] == $vm) | [(.frames | length), .frames[1]]' "$T/recs" | sort -u > "$T/vstacks"
	[ "$(wc -l < "$T/vstacks")" -ge 1 ]
	run -1 grep -v -x '\[2,\[0,null,3,8\]\]' "$T/vstacks"
	[ "$(unwind_count "$T/u.sps" missing_module)" -ge $(($(summary "$V" samples) / 2)) ]
	# The same stream in this boot falls back to this process's vDSO.
	sp-cat "$V" | grep -v '^{"t":"image"' > "$T/same.jsonl"
	sp-cat --from-json "$T/same.jsonl" > "$T/same.sps"
	sp-unwind -o "$T/su.sps" "$T/same.sps"
	[ "$(unwind_count "$T/su.sps" missing_module)" -eq 0 ]
}

@test "an image record that comes after vDSO samples serves the samples after it" {
	other_boot "$V" "$T/o.sps"
	# The image moved after the 200th sample.
	awk '/^\{"t":"image"/ { img = $0; next }
	     { print } /^\{"t":"sample"/ && ++n == 200 { print img }' "$T/o.sps.jsonl" > "$T/late.jsonl"
	[ "$(grep -c '^{"t":"image"' "$T/late.jsonl")" -eq 1 ]
	sp-cat --from-json "$T/late.jsonl" > "$T/late.sps"
	sp-unwind -o "$T/u.sps" "$T/late.sps"
	missing=$(unwind_count "$T/u.sps" missing_module)
	echo "missing_module: $missing of $(summary "$V" samples)"
	[ "$missing" -gt 0 ]
	[ "$missing" -le 200 ]
	[ "$(sp-cat -t unwind "$T/u.sps" | jq .complete)" -ge $(($(summary "$V" samples) - 200 - 20)) ]
}

@test "a signal handler's samples unwind through __restore_rt into the interrupted code and to main" {
	sp-capture -q -F 1999 -o "$T/r.sps" -- "$WORKLOADS/sigwork" 3
	sp-unwind -o "$T/u.sps" "$T/r.sps"
	sp-symbolize -o "$T/s.sps" "$T/u.sps"
	handler_stacks "$T/s.sps" > "$T/handler"
	total=$(wc -l < "$T/handler")
	[ "$total" -ge 100 ]
	# handler_work and on_prof, then the signal trampoline (the C library's
	# __restore_rt, named though the return address into it is its first
	# byte, which no call precedes), then the interrupted instruction, an
	# exact address, in main_loop or in a function it called, then
	# main_loop and main.
	grep -E '(^|;)handler_work;on_prof;__restore_rt;!([^;]+;)*main_loop;main(;|$)' "$T/handler" > "$T/through" || true
	through=$(wc -l < "$T/through")
	echo "handler samples: $total, through the signal frame to main: $through"
	[ "$through" -ge $((total * 90 / 100)) ]
	run -1 grep -q '\[' "$T/through"
	# The trampoline is one frame, the same in every stack.
	[ "$(sed -E 's/.*;on_prof;([^;]+);.*/\1/' "$T/through" | sort -u | wc -l)" -eq 1 ]
	# Some were interrupted inside a callee of main_loop (the clock read).
	grep -qE ';on_prof;[^;]+;![^;]+;([^;]+;)*main_loop;main' "$T/through"
	grep -qE ';on_prof;[^;]+;!main_loop;main' "$T/through"
}

@test "sp-cat shows the image record with its data as bin" {
	run sp-cat -t image "$V"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == '{"t":"image","path":"[vdso]","build_id":{"$bin":"'*'"data":{"$bin":"f0VMR'* ]]
	# The image is the kernel's, no one process's: neither pid nor time.
	[[ "${lines[0]}" != *'"pid":'* && "${lines[0]}" != *'"time":'* ]]
}

@test "with --archive, the image is recorded and the vDSO frames named from it in another boot" {
	A=$T/archive
	sp-capture -q -F 999 --archive "$A" -o "$T/r.sps" -- "$WORKLOADS/vdsoloop" 1
	[ "$(sp-cat -t image "$T/r.sps" | wc -l)" -eq 1 ]
	other_boot "$T/r.sps" "$T/o.sps"
	run sp-unwind --archive "$A" -o "$T/u.sps" "$T/o.sps"
	[ "$status" -eq 0 ]
	run sp-symbolize --archive "$A" -o "$T/s.sps" "$T/u.sps"
	[ "$status" -eq 0 ]
	read -r leaf good < <(vdso_leaves "$T/s.sps")
	[ "$leaf" -gt 0 ]
	[ "$good" -ge $((leaf * 95 / 100)) ]
}

# corrupt_image IN OUT MODE: IN from another boot with its image's data
# replaced: "garbage" (random bytes), "cut" (its first 1024 bytes: the ELF
# header and the build-id note, without the rest) or "sections" (its section
# headers said to lie far beyond its end).
corrupt_image() {
	local -
	set -o pipefail
	sp-cat "$1" | /usr/bin/python3 -c '
import base64, json, os, struct, sys
mode = sys.argv[1]
for line in sys.stdin:
    r = json.loads(line)
    if r["t"] == "header":
        r["host"]["boot_id"] = "00000000-0000-4000-8000-000000000000"
    if r["t"] == "image":
        d = bytearray(base64.b64decode(r["data"]["$bin"]))
        if mode == "garbage":
            d = bytearray(os.urandom(len(d)))
        elif mode == "cut":
            d = d[:1024]
        else:
            struct.pack_into("<Q", d, 0x28, 1 << 40)
        r["data"]["$bin"] = base64.b64encode(bytes(d)).decode()
    print(json.dumps(r, separators=(",", ":")))
' "$3" > "$2.jsonl"
	sp-cat --from-json "$2.jsonl" > "$2"
}

@test "a corrupt image crashes neither sp-unwind nor sp-symbolize" {
	for mode in garbage cut sections; do
		corrupt_image "$V" "$T/$mode.sps" "$mode"
		run sp-unwind -o "$T/$mode.u" "$T/$mode.sps"
		[ "$status" -eq 0 ]
		run sp-symbolize -o "$T/$mode.s" "$T/$mode.u"
		[ "$status" -eq 0 ]
		[ "$(summary "$T/$mode.s" samples)" = "$(summary "$V" samples)" ]
		read -r leaf good < <(vdso_leaves "$T/$mode.s")
		echo "$mode: $leaf $good"
		# An image that is not whole is either refused (missing_module,
		# frames as [vdso]+0x...) or read only as far as it is sound.
		[ "$leaf" -gt 0 ]
	done
	# Random bytes are no ELF: refused.
	[ "$(unwind_count "$T/garbage.u" missing_module)" -ge $(($(summary "$V" samples) / 2)) ]
	# The vDSO's frames (libc's clock_gettime, sampled now and then, keeps its name).
	sp-cat -t module,frame "$T/garbage.s" | jq -r -s '
		(map(select(.t == "module" and .kind == "vdso") | .id)) as $vdso
		| .[] | select(.t == "frame" and (.module as $m | any($vdso[]; . == $m))) | .name' \
		> "$T/names"
	grep -q '^\[vdso\]+0x' "$T/names"
	run -1 grep -qE '^(__vdso_)?(clock_gettime|gettimeofday)$' "$T/names"
}

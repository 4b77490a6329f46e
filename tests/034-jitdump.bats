#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# jitdump: node --perf-prof announces jit-PID.dump; sp-capture carries the
# file in the stream, sp-symbolize names JIT frames from it.

load helper

# write_js FILE: the hot, churning JS workload (tests/workloads/jitchurn.js).
write_js() {
	cp "$TOP/tests/workloads/jitchurn.js" "$1"
}

setup_file() {
	local d=$BATS_FILE_TMPDIR
	write_js "$d/hot.js"
	(cd "$d" && sp-capture -q -F 999 --archive "$d/archive" -o "$d/node.raw" -- \
		node --perf-prof hot.js 4000 > /dev/null)
	sp-unwind -o "$d/node.unw" "$d/node.raw"
	sp-symbolize -o "$d/node.sym" "$d/node.unw" 2> "$d/node.err"
}

setup() {
	D=$BATS_FILE_TMPDIR
	PID=$(sp-cat -t process "$D/node.raw" | jq -r .pid | head -n 1)
}

# jit_leaves FILE: "SAMPLES HOT" over the samples of a symbolized stream
# whose leaf frame is JIT code: how many, and how many of those a
# jitdump names hotLoop.  A symstack written again holds from there on.
jit_leaves() {
	local -
	set -o pipefail
	sp-cat -t frame,symstack,sample "$1" | jq -rs '
		(map(select(.t == "frame")) | map({key: (.id | tostring), value: .}) | from_entries) as $f
		| reduce (.[] | select(.t != "frame")) as $r ({s: {}, out: []};
			if $r.t == "symstack" then .s[$r.id | tostring] = $r.frames
			else .out += [.s[$r.stack | tostring][0]] end)
		| [.out[] | $f[tostring] | select((.flags // 0) / 512 | floor % 2 == 1)]
		| "\(length) \(map(select(.origin == "jitdump" and (.name | test("hotLoop")))) | length)"'
}

# The bytes the jitdump records of a stream carry, concatenated, after
# checking that each starts where the one before ended.
jitdump_bytes() {
	sp-cat -t jitdump "$1" | /usr/bin/python3 -c '
import base64, json, sys
out, off = b"", 0
for line in sys.stdin:
    r = json.loads(line)
    assert r["off"] == off, (r["off"], off)
    data = base64.b64decode(r["data"]["$bin"])
    assert 0 < len(data) < 1 << 20
    off += len(data)
    out += data
sys.stdout.buffer.write(out)'
}

@test "node --perf-prof: the stream carries the whole jitdump file, in order, and no perf map is written" {
	[ -f "$D/jit-$PID.dump" ]
	run -1 test -e "/tmp/perf-$PID.map"
	# The marker mapping is a map record, and no module of the stream.
	sp-cat -t map "$D/node.raw" | grep -q "\"path\":\"$D/jit-$PID.dump\""
	run -0 sp-cat -t module "$D/node.unw"
	run -1 grep -q 'jit-[0-9]*\.dump' <<< "$output"
	jitdump_bytes "$D/node.raw" > "$D/carried"
	[ "$(sp-cat -t jitdump "$D/node.raw" | jq -r .pid | sort -u)" = "$PID" ]
	[ "$(sp-cat -t jitdump "$D/node.raw" | wc -l)" -ge 2 ]
	cmp "$D/carried" "$D/jit-$PID.dump"
	# sp-unwind passes them through.
	[ "$(sp-cat -t jitdump "$D/node.raw" | sha1sum)" = "$(sp-cat -t jitdump "$D/node.unw" | sha1sum)" ]
}

@test "sp-symbolize names the hot JS function in most samples whose leaf is JIT code, origin jitdump" {
	[ ! -s "$D/node.err" ]
	read -r n hot <<< "$(jit_leaves "$D/node.sym")"
	echo "JIT-leaf samples: $n, named hotLoop by the jitdump: $hot"
	[ "$n" -ge 300 ]
	[ "$hot" -ge $((n * 6 / 10)) ]
	# V8 names it with the line it starts on in the script.
	line=$(grep -n '^function hotLoop' "$TOP/tests/workloads/jitchurn.js" | cut -d: -f1)
	frames "$D/node.sym" | grep -q "^JS:\\*hotLoop .*hot\\.js:$line:.*|jitdump|512|"
	[ "$(sp-cat -t symbolize "$D/node.sym" | jq '.origins.jitdump')" -gt 0 ]
}

@test "the stream alone suffices: with the dump file gone, the same names" {
	mkdir "$BATS_TEST_TMPDIR/gone"
	mv "$D/jit-$PID.dump" "$BATS_TEST_TMPDIR/gone/"
	sp-symbolize -o "$BATS_TEST_TMPDIR/again.sym" "$D/node.unw"
	mv "$BATS_TEST_TMPDIR/gone/jit-$PID.dump" "$D/"
	diff <(frames "$D/node.sym") <(frames "$BATS_TEST_TMPDIR/again.sym")
	[ "$(jit_leaves "$BATS_TEST_TMPDIR/again.sym")" = "$(jit_leaves "$D/node.sym")" ]
}

@test "--archive keeps the jitdump file and writes its archive record" {
	run -0 sp-cat -t archive "$D/node.raw"
	rec=$(grep '"kind":"jitdump"' <<< "$output")
	[ "$(jq -r .pid <<< "$rec")" = "$PID" ]
	[ "$(jq -r .path <<< "$rec")" = "$D/jit-$PID.dump" ]
	start=$(sp-cat -t process "$D/node.raw" | jq -r "select(.pid == $PID) | .start_time")
	[ "$(jq -r .file <<< "$rec")" = "jitdump/jit-$PID-$start.dump" ]
	[ "$(jq -r .start_time <<< "$rec")" = "$start" ]
	cmp "$D/archive/jitdump/jit-$PID-$start.dump" "$D/jit-$PID.dump"
}

# spoil IN OUT MODE: the unwound stream with its jitdump cut (MODE cut:
# the last record loses its second half) or corrupt (MODE size: the last
# record of the file gets size 3); prints the file offset of that record.
spoil() {
	sp-cat "$1" | /usr/bin/python3 -c '
import base64, json, struct, sys
mode, out = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in sys.stdin]
jd = [r for r in recs if r["t"] == "jitdump"]
data = b"".join(base64.b64decode(r["data"]["$bin"]) for r in jd)
off, last = struct.unpack_from("<I", data, 8)[0], None
while off + 16 <= len(data):
    last = off
    off += struct.unpack_from("<I", data, off + 4)[0]
if mode == "size":
    data = data[:last + 4] + struct.pack("<I", 3) + data[last + 8:]
else:
    size = struct.unpack_from("<I", data, last + 4)[0]
    data = data[:last + size // 2]
# The same records, cut at the same offsets, over the changed bytes.
for r in jd:
    r["data"]["$bin"] = base64.b64encode(data[r["off"]:r["off"] + len(base64.b64decode(r["data"]["$bin"]))]).decode()
with open(out, "w") as f:
    for r in recs:
        if r["t"] != "jitdump" or r["data"]["$bin"]:
            f.write(json.dumps(r) + "\n")
print(last)' "$3" "$2.json"
	sp-cat --from-json "$2.json" > "$2"
}

@test "a corrupt jitdump: a warning naming the offset, the frames before it still named" {
	off=$(spoil "$D/node.unw" "$BATS_TEST_TMPDIR/bad.unw" size)
	run --separate-stderr sp-symbolize -o "$BATS_TEST_TMPDIR/bad.sym" "$BATS_TEST_TMPDIR/bad.unw"
	[ "$status" -eq 0 ]
	echo "$stderr"
	[[ "$stderr" == *"jitdump '$D/jit-$PID.dump' of pid $PID: jitdump: bad record size (3) at offset $((off + 4))"* ]]
	read -r n hot <<< "$(jit_leaves "$BATS_TEST_TMPDIR/bad.sym")"
	[ "$hot" -ge $((n * 6 / 10)) ]
}

@test "a jitdump cut inside a record: a warning naming its offset, the rest named" {
	off=$(spoil "$D/node.unw" "$BATS_TEST_TMPDIR/cut.unw" cut)
	run --separate-stderr sp-symbolize -o "$BATS_TEST_TMPDIR/cut.sym" "$BATS_TEST_TMPDIR/cut.unw"
	[ "$status" -eq 0 ]
	echo "$stderr"
	[[ "$stderr" == *"jitdump '$D/jit-$PID.dump' of pid $PID ends inside a record at offset $off"* ]]
	read -r n hot <<< "$(jit_leaves "$BATS_TEST_TMPDIR/cut.sym")"
	[ "$hot" -ge $((n * 6 / 10)) ]
}

@test "a gap in a stream's jitdump records: a warning, no crash" {
	# Drop the second jitdump record: the bytes after the first are missing.
	sp-cat "$D/node.unw" | awk '/"t":"jitdump"/ && ++n == 2 { next } { print }' > "$BATS_TEST_TMPDIR/gap.json"
	sp-cat --from-json "$BATS_TEST_TMPDIR/gap.json" > "$BATS_TEST_TMPDIR/gap.unw"
	run --separate-stderr sp-symbolize -o "$BATS_TEST_TMPDIR/gap.sym" "$BATS_TEST_TMPDIR/gap.unw"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"jitdump '$D/jit-$PID.dump' of pid $PID: bytes "*" are missing from the stream"* ]]
}

@test "-p on a running node: its jitdump from offset 0, whole records only, named frames" {
	local d=$BATS_TEST_TMPDIR
	write_js "$d/hot.js"
	(cd "$d" && exec node --perf-prof hot.js 5000 > /dev/null) &
	local node=$!
	# Attach once the program has announced its file.
	for _ in $(seq 100); do
		[ -e "$d/jit-$node.dump" ] && break
		sleep 0.05
	done
	sleep 0.5
	sp-capture -q -F 999 -p "$node" --duration 2 -o "$d/att.raw"
	wait "$node"
	jitdump_bytes "$d/att.raw" > "$d/carried"
	[ -s "$d/carried" ]
	cmp -n "$(stat -c %s "$d/carried")" "$d/carried" "$d/jit-$node.dump"
	sp-unwind -o "$d/att.unw" "$d/att.raw"
	run --separate-stderr sp-symbolize -o "$d/att.sym" "$d/att.unw"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	read -r n hot <<< "$(jit_leaves "$d/att.sym")"
	echo "JIT-leaf samples: $n, named hotLoop by the jitdump: $hot"
	[ "$n" -ge 100 ]
	[ "$hot" -ge $((n * 6 / 10)) ]
}

# hot_stacks FILE: "N WHOLE" over the samples of a symbolized stream whose
# leaf a jitdump names hotLoop: how many, and how many of those unwound to
# _start through node::Start.
hot_stacks() {
	local -
	set -o pipefail
	sp-cat -t frame,symstack,sample "$1" | jq -rs '
		(map(select(.t == "frame")) | map({key: (.id | tostring), value: .}) | from_entries) as $f
		| reduce (.[] | select(.t != "frame")) as $r ({s: {}, out: []};
			if $r.t == "symstack" then .s[$r.id | tostring] = $r.frames
			else .out += [[.s[$r.stack | tostring][] | $f[tostring]]] end)
		| [.out[] | select(.[0].origin == "jitdump" and (.[0].name | test("hotLoop")))]
		| "\(length) \(map(select(.[-1].name == "_start" and any(.[]; .name | test("^node::Start")))) | length)"'
}

@test "--perf-prof-unwinding-info: JIT frames are stepped by the jitdump's CFI, through to _start" {
	local d=$BATS_TEST_TMPDIR
	write_js "$d/hot.js"
	(cd "$d" && sp-capture -q -F 999 -o "$d/uw.raw" -- \
		node --perf-prof --perf-prof-unwinding-info hot.js 3000 > /dev/null)
	sp-unwind -o "$d/uw.unw" "$d/uw.raw"
	# The same stream without its jitdump records: frame pointers only.
	sp-cat "$d/uw.raw" | grep -v '"t":"jitdump"' | sp-cat --from-json > "$d/nojd.raw"
	sp-unwind -o "$d/nojd.unw" "$d/nojd.raw"
	run -0 sp-cat -t unwind "$d/uw.unw"
	local with=$output
	run -0 sp-cat -t unwind "$d/nojd.unw"
	local without=$output
	echo "with the jitdump: $with"
	echo "without: $without"
	# Frames the jitdump's CFI stepped are frame-pointer steps no longer.
	[ "$(jq .fp_frames <<< "$with")" -lt "$(jq .fp_frames <<< "$without")" ]
	[ "$(jq .complete <<< "$with")" -ge "$(jq .complete <<< "$without")" ]
	[ "$(jq .complete <<< "$with")" -ge "$(( $(jq .samples <<< "$with") * 9 / 10 ))" ]
	sp-symbolize -o "$d/uw.sym" "$d/uw.unw"
	read -r n whole <<< "$(hot_stacks "$d/uw.sym")"
	echo "hotLoop leaves: $n, unwound to _start: $whole"
	[ "$n" -ge 300 ]
	[ "$whole" -ge $((n * 9 / 10)) ]
}

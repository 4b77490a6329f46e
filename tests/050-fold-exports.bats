#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-fold --format pprof and --format speedscope: the files load in the
# tools that read them, and their totals are the folded totals.
#
# Needs protoc (protobuf-compiler) and go tool pprof (golang-go).
# tests/lib/profile.proto holds the fields of pprof's profile.proto that
# sp-fold writes; the speedscope file is checked field by field against the
# file format speedscope publishes (https://www.speedscope.app/file-format-schema.json).

load helper

setup_file() {
	# One recording of the reference workload serves every test.
	export REF=$BATS_FILE_TMPDIR/spin.sps
	symbolized "$REF" "$WORKLOADS/spin" 0.5
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# total FOLDED: the sum of the counts of a folded file.
total() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

# decode PPROF OUT: the pprof profile in protoc's text format, in OUT;
# fails when protoc has anything to say.
decode() {
	gzip -dc "$1" > "$2.pb"
	protoc --decode perftools.profiles.Profile -I "$TOP/tests/lib" profile.proto \
		< "$2.pb" > "$2" 2> "$2.err"
	[ ! -s "$2.err" ] || { cat "$2.err" >&2; return 1; }
}

# The text format parsed into p (each message a dict of lists); s is the
# string table, one(m, k) the single value of field k, text(m, k) the
# string it indexes.
PPROF_PY='
import codecs, sys

def parse(path):
    root, stack = {}, []
    cur = root
    for raw in open(path, encoding="utf-8"):
        line = raw.strip()
        if not line:
            continue
        if line.endswith("{"):
            d = {}
            cur.setdefault(line[:-1].strip(), []).append(d)
            stack.append(cur)
            cur = d
        elif line == "}":
            cur = stack.pop()
        else:
            k, v = line.split(": ", 1)
            if v.startswith("\""):
                v = codecs.escape_decode(v[1:-1].encode("utf-8"))[0].decode("utf-8")
            elif v in ("true", "false"):
                v = v == "true"
            else:
                v = int(v)
            cur.setdefault(k, []).append(v)
    return root

p = parse(sys.argv[1])
args = sys.argv[2:]
s = p["string_table"]
one = lambda m, k: m.get(k, [0])[0]
text = lambda m, k: s[one(m, k)]

def fail(msg):
    sys.exit("pprof check: " + msg)
'

# pprof_check DECODED [ARGS...] <<< CHECKS: Python checks over a decoded
# profile, with args the further arguments.
pprof_check() {
	/usr/bin/python3 -c "$PPROF_PY$(cat)" "$@"
}

# The speedscope file loaded as d, checked against the file format: the
# required members and their types, then what a schema cannot say.
SPEEDSCOPE_PY='
import json, sys

d = json.load(open(sys.argv[1], encoding="utf-8"))
args = sys.argv[2:]

def fail(msg):
    sys.exit("speedscope check: " + msg)

def need(obj, key, types, where):
    if key not in obj or not isinstance(obj[key], types) or isinstance(obj[key], bool) and bool not in types:
        fail("%s: %r missing or of the wrong type" % (where, key))
    return obj[key]

if need(d, "$schema", str, "file") != "https://www.speedscope.app/file-format-schema.json":
    fail("$schema")
for f in need(need(d, "shared", dict, "file"), "frames", list, "shared"):
    need(f, "name", str, "frame")
    if "file" in f: need(f, "file", str, "frame")
    if "line" in f: need(f, "line", int, "frame")
    if "col" in f: need(f, "col", int, "frame")
    if set(f) - {"name", "file", "line", "col"}: fail("frame: unknown member")
for pr in need(d, "profiles", list, "file"):
    need(pr, "type", str, "profile")
    need(pr, "name", str, "profile")
    if need(pr, "unit", str, "profile") not in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"):
        fail("profile unit")
    need(pr, "startValue", (int, float), "profile")
    need(pr, "endValue", (int, float), "profile")
    if pr["type"] == "evented":
        for e in need(pr, "events", list, "profile"):
            need(e, "type", str, "event")
            need(e, "frame", int, "event")
            need(e, "at", (int, float), "event")
    else:
        need(pr, "samples", list, "profile")
        need(pr, "weights", list, "profile")
if "name" in d: need(d, "name", str, "file")
if "activeProfileIndex" in d: need(d, "activeProfileIndex", int, "file")
if "exporter" in d: need(d, "exporter", str, "file")

frames = d["shared"]["frames"]
# Each thread has a sampled profile, then (after all of those) its timeline.
sampled = [pr for pr in d["profiles"] if pr["type"] == "sampled"]
timelines = [pr for pr in d["profiles"] if pr["type"] == "evented"]
if d["profiles"] != sampled + timelines or len(timelines) != len(sampled):
    fail("not one sampled profile and one timeline per thread, in that order")
for pr, tl in zip(sampled, timelines):
    if tl["name"] != pr["name"] + " timeline" or tl["unit"] != "nanoseconds":
        fail("timeline %r of %r" % (tl["name"], pr["name"]))
    # Events in time order, each close matching the last open, none left open.
    opened, last = [], tl["startValue"]
    for e in tl["events"]:
        if e["type"] not in ("O", "C") or not 0 <= e["frame"] < len(frames):
            fail("timeline %r: event %r" % (tl["name"], e))
        if e["at"] < last or e["at"] > tl["endValue"]:
            fail("timeline %r: event %r out of order or range" % (tl["name"], e))
        last = e["at"]
        if e["type"] == "O":
            opened.append(e["frame"])
        elif not opened or opened.pop() != e["frame"]:
            fail("timeline %r: %r closes what is not open" % (tl["name"], e))
    if opened:
        fail("timeline %r: frames left open" % tl["name"])
for pr in sampled:
    if pr["type"] != "sampled" or pr["unit"] != "nanoseconds":
        fail("profile %r is not sampled in nanoseconds" % pr["name"])
    if len(pr["samples"]) != len(pr["weights"]):
        fail("profile %r: %d samples, %d weights" % (pr["name"], len(pr["samples"]), len(pr["weights"])))
    for st in pr["samples"]:
        if not st or any(not isinstance(i, int) or i < 0 or i >= len(frames) for i in st):
            fail("profile %r: frame index out of range in %r" % (pr["name"], st))
    if any(not isinstance(w, int) or w <= 0 for w in pr["weights"]):
        fail("profile %r: a weight is not a positive integer" % pr["name"])
    if pr["endValue"] - pr["startValue"] != sum(pr["weights"]):
        fail("profile %r: endValue - startValue is not the sum of the weights" % pr["name"])
# The file opens on the sampled profile of the thread with the most weight.
if sampled and (d["activeProfileIndex"] >= len(sampled) or
                sum(sampled[d["activeProfileIndex"]]["weights"]) != max(sum(pr["weights"]) for pr in sampled)):
    fail("activeProfileIndex %r is not the busiest thread" % d["activeProfileIndex"])
if not d["exporter"].startswith("sp-fold"):
    fail("exporter")
'

# speedscope_check FILE [ARGS...] <<< CHECKS: the structural checks above,
# then CHECKS, with d the file and args the further arguments.
speedscope_check() {
	local f=$1
	shift
	/usr/bin/python3 -c "$SPEEDSCOPE_PY$(cat)" "$f" "$@"
}

@test "pprof: protoc decodes it; samples, labels, mappings and totals match the folded stacks" {
	sp-fold -o "$T/folded" "$REF"
	sp-fold --weight period -o "$T/period" "$REF"
	sp-fold --tid -o "$T/tid" "$REF"
	sp-fold --format pprof -o "$T/x.pb.gz" "$REF"
	# The pipe path writes the same bytes as the file path.
	sp-fold --format pprof < "$REF" > "$T/pipe.pb.gz"
	cmp "$T/x.pb.gz" "$T/pipe.pb.gz"
	gzip -t "$T/x.pb.gz"
	decode "$T/x.pb.gz" "$T/x.txt"
	bid=$(sp-cat -t module "$REF" | jq -r 'select(.path | endswith("/workloads/spin")) | .build_id["$bin"]' |
		base64 -d | od -An -tx1 | tr -d ' \n')
	[ ${#bid} -ge 16 ]
	threads=$(cut -d';' -f1 "$T/tid" | sort -u | wc -l)
	pprof_check "$T/x.txt" "$(total "$T/folded")" "$(total "$T/period")" "$bid" "$threads" \
		"$WORKLOADS/spin" <<'EOF'
samples, period, bid, threads, spin = int(args[0]), int(args[1]), args[2], int(args[3]), args[4]
if s[0] != "":
    fail("string_table[0] is %r" % s[0])
types = [(text(t, "type"), text(t, "unit")) for t in p["sample_type"]]
if types != [("samples", "count"), ("cpu", "nanoseconds")]:
    fail("sample types %r" % types)
pt = p["period_type"][0]
if (text(pt, "type"), text(pt, "unit")) != ("cpu", "nanoseconds") or one(p, "period") <= 0:
    fail("period type or period")
if not 0 < one(p, "duration_nanos") < 5e9 or one(p, "time_nanos") < 1.5e18:
    fail("duration %d or time %d" % (one(p, "duration_nanos"), one(p, "time_nanos")))

maps = {one(m, "id"): m for m in p["mapping"]}
funcs = {one(f, "id"): f for f in p["function"]}
locs = {one(l, "id"): l for l in p["location"]}
if len(maps) != len(p["mapping"]) or len(funcs) != len(p["function"]) or len(locs) != len(p["location"]):
    fail("duplicate ids")
if 0 in maps or 0 in funcs or 0 in locs:
    fail("an id is 0")
for l in p["location"]:
    if one(l, "mapping_id") and one(l, "mapping_id") not in maps:
        fail("location %d: no mapping %d" % (one(l, "id"), one(l, "mapping_id")))
    if not l.get("line") or any(one(ln, "function_id") not in funcs for ln in l["line"]):
        fail("location %d: lines %r" % (one(l, "id"), l.get("line")))

# Mapping 1 is the workload, with its build-id and what symbolization found.
m = maps[1]
if text(m, "filename") != spin or text(m, "build_id") != bid:
    fail("mapping 1 is %r %r" % (text(m, "filename"), text(m, "build_id")))
if not (one(m, "has_functions") and one(m, "has_filenames") and one(m, "has_line_numbers")):
    fail("mapping 1 flags")
if len({text(m, "filename") for m in p["mapping"]}) != len(p["mapping"]):
    fail("two mappings of one path")

tot = [0, 0]
tids = set()
leaves = set()
for smp in p["sample"]:
    v = smp["value"]
    if len(v) != 2 or v[0] <= 0 or v[1] < v[0]:
        fail("values %r" % v)
    tot[0] += v[0]
    tot[1] += v[1]
    labels = {text(lb, "key"): (text(lb, "str") if one(lb, "str") else one(lb, "num")) for lb in smp["label"]}
    if set(labels) != {"pid", "tid", "comm", "thread"} or labels["comm"] != "spin":
        fail("labels %r" % labels)
    tids.add((labels["pid"], labels["tid"]))
    ids = smp["location_id"]
    # The leaf first, main or the thread start last.
    names = [text(funcs[one(ln, "function_id")], "name") for i in ids for ln in locs[i]["line"]]
    if "stage_a" in names and "stage_c" in names and names.index("stage_a") < names.index("stage_c"):
        fail("stack not leaf first: %r" % names)
    leaves.add(names[0])
if tot != [samples, period]:
    fail("totals %r, folded %d samples, %d ns" % (tot, samples, period))
if len(tids) != threads:
    fail("%d threads, folded %d" % (len(tids), threads))
if not any(n.startswith("__cos") or n == "cos" for n in leaves):
    fail("no cos leaf in %r" % leaves)
EOF
}

@test "pprof: go tool pprof reads it: the top functions, the total, the labels" {
	sp-fold -o "$T/folded" "$REF"
	sp-fold --format pprof -o "$T/x.pb.gz" "$REF"
	n=$(total "$T/folded")
	run --separate-stderr go tool pprof -top -sample_index=samples "$T/x.pb.gz"
	[ "$status" -eq 0 ]
	# Every location has its lines: pprof has nothing to symbolize or warn about.
	[ -z "$stderr" ]
	[[ "$output" == *"File: spin"* ]]
	[[ "$output" == *"Type: samples"* ]]
	[[ "$output" == *"Total samples = $n "* ]]
	[[ "$output" == *"of $n total"* ]]
	printf '%s\n' "$output" | grep -Eq '^ +[0-9]+ .* (__cos[a-z0-9_]*|cos)$'
	printf '%s\n' "$output" | grep -Eq '^ +[0-9]+ .* leaf_compute$'
	# leaf_compute is below every cos sample: its cumulative count is near all.
	cum=$(printf '%s\n' "$output" | awk '$NF == "leaf_compute" { print $4 }')
	[ "$cum" -ge $((n * 8 / 10)) ]
	run --separate-stderr go tool pprof -tags "$T/x.pb.gz"
	[ "$status" -eq 0 ]
	[[ "$output" == *"comm: Total $n"* ]]
	[[ "$output" == *"pid: Total $n"* ]]
	[[ "$output" == *"tid: Total $n"* ]]
	[[ "$output" == *"thread: Total $n"* ]]
	# The CPU time is the sum of the periods.
	sp-fold --weight period -o "$T/period" "$REF"
	run go tool pprof -top -unit=ns -sample_index=cpu "$T/x.pb.gz"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Total samples = $(total "$T/period")ns "* ]]
}

# raw_mappings PPROF: "id start limit offset file" for each Mapping go tool pprof -raw lists.
raw_mappings() {
	local -
	set -o pipefail
	go tool pprof -raw "$1" | sed -n '/^Mappings/,$p' |
		sed -nE 's|^ *([0-9]+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) ([^ ]+).*|\1 \2 \3 \4 \5|p'
}

# in_mapping LOCS START LIMIT: the number of locations of mapping 1 in go tool
# pprof -raw's list LOCS; fails when one lies outside [START, LIMIT).
in_mapping() {
	/usr/bin/python3 - "$@" <<'EOF'
import re, sys
lo, hi = int(sys.argv[2], 16), int(sys.argv[3], 16)
n = 0
for l in open(sys.argv[1]):
    m = re.match(r"\s*\d+: (0x[0-9a-f]+) M=1 ", l)
    if m:
        n += 1
        assert lo <= int(m.group(1), 16) < hi, l
print(n)
EOF
}

@test "pprof: each location is its sampled address in the process's real mapping; go tool pprof -disasm reads it" {
	# A program run by a shell that stays its parent: the program is mapping 1, not sh.
	# Built without -pie here: Debian 12's go tool pprof (Go 1.19) cannot place the text of a
	# position-independent executable for -disasm (not even of a Go program built with -buildmode=pie).
	cc -O2 -g -no-pie -I"$TOP/tests/workloads" -o "$T/deepnp" "$TOP/tests/workloads/deep.c"
	sp-capture -q -o "$T/np.raw" -- sh -c "'$T/deepnp' 0.6; true"
	sp-unwind "$T/np.raw" | sp-symbolize > "$T/np.sym"
	sp-fold --format pprof -o "$T/np.pb.gz" "$T/np.sym"
	raw_mappings "$T/np.pb.gz" > "$T/maps"
	cat "$T/maps" >&3
	read -r id start limit off file < "$T/maps"
	[ "$id" = 1 ]
	[ "$file" = "$T/deepnp" ]
	# The range and offset are the stream's map record of the program's text.
	rec=$(sp-cat -t map "$T/np.raw" | jq -r --arg f "$T/deepnp" 'select(.path == $f and .prot % 2 == 1) | "\(.start) \(.start + .len) \(.pgoff)"' | tail -n 1)
	[ "$rec" = "$((start)) $((limit)) $((off))" ]
	# Every location of mapping 1 is an address inside it; inline calls are lines of one location.
	go tool pprof -raw "$T/np.pb.gz" | sed -n '/^Locations/,/^Mappings/p' > "$T/locs"
	run -0 in_mapping "$T/locs" "$start" "$limit"
	[ "$output" -ge 3 ]
	# Inline calls are lines of their physical frame's location, --inline or not.
	sp-fold --format pprof -o "$T/v.pb.gz" "$VECTORS/symbolized.sps"
	go tool pprof -raw "$T/v.pb.gz" | grep -A1 ' square demo.c:9 ' | tail -n 1 > "$T/caller"
	grep -Eq '^ {10,}work demo\.c:17 ' "$T/caller"
	run -0 go tool pprof -disasm 'deep_leaf' "$T/np.pb.gz"
	[[ "$output" == *"ROUTINE ======================== deep_leaf"* ]]
	# The samples land on instructions of deep_leaf, with their lines.
	printf '%s\n' "$output" | grep -Eq '^ +[0-9]+ +[0-9]+ +[0-9a-f]+: .*;deep_leaf deep\.c:[0-9]+'
	# The position-independent build: its real range too, and addresses inside it.
	sp-capture -q -o "$T/pie.raw" -- "$WORKLOADS/deep" 0.3
	sp-unwind "$T/pie.raw" | sp-symbolize > "$T/pie.sym"
	sp-fold --format pprof -o "$T/pie.pb.gz" "$T/pie.sym"
	read -r id start limit off file < <(raw_mappings "$T/pie.pb.gz")
	[ "$file" = "$WORKLOADS/deep" ]
	[ "$((start))" -gt $((0x400000)) ]
	[ "$((off))" -gt 0 ]
	go tool pprof -raw "$T/pie.pb.gz" | sed -n '/^Locations/,/^Mappings/p' > "$T/plocs"
	run -0 in_mapping "$T/plocs" "$start" "$limit"
	[ "$output" -ge 3 ]
}

@test "pprof --inline: inline frames are lines of their physical frame's location" {
	sp-fold --inline --kernel --format pprof -o "$T/v.pb.gz" "$VECTORS/symbolized.sps"
	decode "$T/v.pb.gz" "$T/v.txt"
	pprof_check "$T/v.txt" <<'EOF'
funcs = {one(f, "id"): f for f in p["function"]}
lines = {}
for l in p["location"]:
    lines[one(l, "id")] = [(text(funcs[one(ln, "function_id")], "name"),
                            text(funcs[one(ln, "function_id")], "filename"), one(ln, "line"))
                           for ln in l["line"]]
want = [("square", "demo.c", 9), ("work", "demo.c", 17)]
if want not in lines.values():
    fail("no location %r in %r" % (want, lines))
# The kernel frame: function name without the _[k] of the folded name.
if [("do_syscall_64", "", 0)] not in lines.values():
    fail("no kernel location in %r" % lines)
maps = [(one(m, "id"), text(m, "filename"), text(m, "build_id"), one(m, "has_inline_frames"))
        for m in p["mapping"]]
if maps[0] != (1, "/usr/bin/demo", "abcdef0123456789abcdef0123456789abcdef01", True):
    fail("mappings %r" % maps)
if (2, "[kernel.kallsyms]", "", False) not in maps:
    fail("mappings %r" % maps)
samples = [smp for smp in p["sample"] if len(smp["location_id"]) == 3]
if len(samples) != 1 or [lines[i][0][0] for i in samples[0]["location_id"]] != ["do_syscall_64", "square", "main"]:
    fail("samples %r" % p["sample"])
EOF
	run --separate-stderr go tool pprof -traces "$T/v.pb.gz"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	printf '%s\n' "$output" | grep -Eq '^ +square \(inline\)$'
	[[ "$output" == *"Total samples = 2 "* ]]
}

@test "speedscope: valid against the schema; one profile per thread; the stacks and totals are the folded ones" {
	sp-fold --tid -o "$T/tid" "$REF"
	sp-fold --tid --weight period -o "$T/period" "$REF"
	sp-fold --format pprof -o "$T/x.pb.gz" "$REF"
	decode "$T/x.pb.gz" "$T/x.txt"
	period=$(pprof_check "$T/x.txt" <<<'print(one(p, "period"))')
	sp-fold --format speedscope -o "$T/s.json" "$REF"
	sp-fold --format speedscope < "$REF" > "$T/pipe.json"
	cmp "$T/s.json" "$T/pipe.json"
	speedscope_check "$T/s.json" "$T/tid" "$period" <<'EOF'
folded = {}
for line in open(args[0], encoding="utf-8"):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    folded[stack] = int(n)
threads = {k.split(";", 1)[0] for k in folded}
if len(sampled) != len(threads):
    fail("%d profiles, %d threads" % (len(sampled), len(threads)))
mine = {}
for pr in sampled:
    comm, ids = pr["name"].split(" ")
    for st in pr["samples"]:
        key = ";".join(["%s-%s" % (comm, ids)] + [frames[i]["name"] for i in st])
        mine[key] = mine.get(key, 0) + 1
    # Without --weight period every sample weighs the typical period.
    if set(pr["weights"]) != {int(args[1])}:
        fail("weights %r, period %s" % (set(pr["weights"]), args[1]))
if mine != folded:
    fail("stacks differ from the folded ones: %r" % (set(mine.items()) ^ set(folded.items())))
if d["name"] != "spin" or not any(f["name"] == "leaf_compute" and f["file"].endswith("spin.c") and f["line"] > 0 for f in frames):
    fail("name or frames")
EOF
	sp-fold --weight period --format speedscope -o "$T/p.json" "$REF"
	speedscope_check "$T/p.json" "$(total "$T/period")" <<'EOF'
total = sum(sum(pr["weights"]) for pr in sampled)
if total != int(args[0]):
    fail("sum of weights %d, folded %s" % (total, args[0]))
EOF
}

@test "exports escape names: quotes, backslashes, control characters, invalid UTF-8" {
	# The vector with main renamed to bytes no JSON or protobuf string can hold as they are.
	name=$(printf 'ma"in\\\t\001\377\303\251;x' | base64)
	sp-cat "$VECTORS/symbolized.sps" |
		jq -c --arg n "$name" 'if .t == "frame" and .name == "main" then .name = {"$strb": $n} else . end' \
		> "$T/w.jsonl"
	sp-cat --from-json "$T/w.jsonl" > "$T/w.sps"
	sp-fold --format speedscope -o "$T/w.json" "$T/w.sps"
	# Escaped as JSON needs; U+FFFD stays a character, as the other valid UTF-8 does.
	grep -qF '"ma\"in\\\t\u0001'$'\xef\xbf\xbd' "$T/w.json"
	speedscope_check "$T/w.json" <<'EOF'
want = "ma\"in\\\t\x01\ufffd\u00e9:x"
if want not in [f["name"] for f in frames]:
    fail("no frame %r in %r" % (want, frames))
if len(sampled) != 2 or sorted(len(pr["samples"]) for pr in sampled) != [1, 1]:
    fail("profiles %r" % d["profiles"])
EOF
	sp-fold --format pprof -o "$T/w.pb.gz" "$T/w.sps"
	decode "$T/w.pb.gz" "$T/w.txt"
	pprof_check "$T/w.txt" <<'EOF'
want = "ma\"in\\\t\x01\ufffd\u00e9;x"
if want not in [text(f, "name") for f in p["function"]]:
    fail("no function %r in %r" % (want, s))
EOF
}

@test "exports of no samples are valid and empty" {
	sp-fold --only-pid 1 --allow-empty --format pprof -o "$T/e.pb.gz" "$VECTORS/symbolized.sps"
	decode "$T/e.pb.gz" "$T/e.txt"
	pprof_check "$T/e.txt" <<<'assert "sample" not in p and s[0] == "" and len(p["sample_type"]) == 2'
	run go tool pprof -top "$T/e.pb.gz"
	[ "$status" -eq 0 ]
	sp-fold --only-pid 1 --allow-empty --format speedscope -o "$T/e.json" "$VECTORS/symbolized.sps"
	speedscope_check "$T/e.json" <<<'assert d["profiles"] == [] and frames == []'
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-fold --format firefox: the Firefox Profiler's processed profile
# (preprocessedProfileVersion 66), checked against the invariants the
# profiler's format documents (docs-developer/CHANGELOG-formats.md and
# src/types/profile.ts of firefox-devtools/profiler): every table's columns
# as long as its length, every index in range, a stack's parent before it,
# each thread's samples in time order; and against the recording: a thread
# per thread sampled, the folded total, the modules' build-ids.
# Nothing here needs the network or the profiler itself.

load helper

setup_file() {
	# One recording of two threads serves most tests.
	export REF=$BATS_FILE_TMPDIR/spin.sps
	symbolized "$REF" "$WORKLOADS/spin" -t 2 0.5
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# check PROFILE STREAM [sp-fold options]: the profile's structure, and its
# samples against STREAM as sp-fold folds it with the same options.
# Prints "threads N samples S markers NAME,..." for further checks.
check() {
	local -
	set -o pipefail
	local profile=$1 stream=$2
	shift 2
	sp-fold "$@" "$stream" > "$T/check.folded"
	sp-cat -t module "$stream" > "$T/check.modules"
	sp-cat -t sample "$stream" > "$T/check.samples"
	sp-cat -t header "$stream" > "$T/check.header"
	/usr/bin/python3 - "$profile" "$T/check.folded" "$T/check.modules" "$T/check.samples" \
		"$T/check.header" "$*" <<'EOF'
import base64, gzip, json, sys

path, folded, modules, samples, header, opts = sys.argv[1:]
opener = gzip.open if path.endswith(".gz") else open
with opener(path, "rt", encoding="utf-8") as f:
    p = json.load(f)
wall = "--wall" in opts or "--off-cpu" in opts

def fail(msg):
    sys.exit("profile: " + msg)

def table(t, what, columns):
    if not isinstance(t.get("length"), int):
        fail(f"{what} has no length")
    for c in columns:
        if c not in t or len(t[c]) != t["length"]:
            fail(f"{what}.{c} is missing or not {t['length']} long")
    return t["length"]

def idx(v, n, what, null=False, minus=False):
    if v is None and null or v == -1 and minus:
        return
    if not isinstance(v, int) or not 0 <= v < n:
        fail(f"{what}: index {v!r} out of range 0..{n}")

meta = p["meta"]
if meta.get("preprocessedProfileVersion") != 66:
    fail("not version 66")
cats = meta["categories"]
if not any(c["color"] in ("grey", "gray") for c in cats):
    fail("no grey category, the default the format needs")
for c in cats:
    if not c["subcategories"]:
        fail(f"category {c['name']} without a default subcategory")
names = [c["name"] for c in cats]
for want in ("User", "Kernel", "JIT", "Off-CPU"):
    if want not in names:
        fail(f"no category {want}")
if not meta["startTime"] > 1e12:
    fail("startTime is not a wall-clock time in ms")

sh = p["shared"]
strings = sh["stringArray"]
ns = len(strings)
libs = p["libs"]
nstack = table(sh["stackTable"], "stackTable", ["prefixOffset", "frame"])
nframe = table(sh["frameTable"], "frameTable", ["func", "category", "subcategory", "line",
        "column", "address", "nativeSymbol", "inlineDepth", "innerWindowID"])
nfunc = table(sh["funcTable"], "funcTable", ["name", "isJS", "relevantForJS", "resource",
        "source", "lineNumber", "columnNumber"])
nres = table(sh["resourceTable"], "resourceTable", ["lib", "name", "host", "type"])
nsym = table(sh["nativeSymbols"], "nativeSymbols", ["address", "functionSize", "libIndex", "name"])
nsrc = table(sh["sources"], "sources", ["id", "filename", "startLine", "startColumn"])
st = sh["stackTable"]
for i in range(nstack):
    off = st["prefixOffset"][i]
    if not isinstance(off, int) or not 0 <= off <= i:
        fail(f"stack {i}: prefixOffset {off} does not point back")
    idx(st["frame"][i], nframe, f"stack {i} frame")
ft = sh["frameTable"]
for i in range(nframe):
    idx(ft["func"][i], nfunc, f"frame {i} func")
    idx(ft["category"][i], len(cats), f"frame {i} category")
    idx(ft["subcategory"][i], len(cats[ft["category"][i]]["subcategories"]), f"frame {i} subcategory")
    idx(ft["nativeSymbol"][i], nsym, f"frame {i} nativeSymbol", null=True)
    if not isinstance(ft["address"][i], int) or ft["address"][i] < -1:
        fail(f"frame {i} address")
fn = sh["funcTable"]
for i in range(nfunc):
    idx(fn["name"][i], ns, f"func {i} name")
    idx(fn["resource"][i], nres, f"func {i} resource", minus=True)
    idx(fn["source"][i], nsrc, f"func {i} source", null=True)
rt = sh["resourceTable"]
for i in range(nres):
    idx(rt["lib"][i], len(libs), f"resource {i} lib", null=True)
    idx(rt["name"][i], ns, f"resource {i} name")
for i in range(nsrc):
    idx(sh["sources"]["filename"][i], ns, f"source {i} filename")

# Libraries: those of the stream's modules, with their build-ids.
mods = {}
for line in open(modules):
    m = json.loads(line)
    if "build_id" in m:
        mods.setdefault(m["path"], set()).add(base64.b64decode(m["build_id"]["$bin"]).hex())
for lib in libs:
    for k in ("name", "path", "debugName", "debugPath", "breakpadId", "codeId"):
        if not isinstance(lib.get(k), str):
            fail(f"lib {lib.get('name')} has no {k}")
    if lib["codeId"] not in mods.get(lib["path"], ()):
        fail(f"lib {lib['path']}: codeId {lib['codeId']} is no build-id of the stream's module")
    b = bytes.fromhex(lib["codeId"])[:16].ljust(16, b"\0")
    guid = b[3::-1] + b[5:3:-1] + b[7:5:-1] + b[8:]
    if lib["breakpadId"] != guid.hex().upper() + "0":
        fail(f"lib {lib['path']}: breakpadId {lib['breakpadId']} is not its build-id's")

def stack_names(k):
    out = []
    while k is not None:
        out.append(strings[fn["name"][ft["func"][st["frame"][k]]]])
        off = st["prefixOffset"][k]
        k = k - off if off else None
    return out[::-1]

# Threads: one per thread sampled, samples in time order, the folded
# lines (the process's name, then the stack's functions) and their total.
lines = {}
total = 0
seen = set()
marks = set()
for t in p["threads"]:
    key = (t["pid"], t["tid"])
    if not isinstance(t["pid"], str) or key in seen:
        fail(f"thread {key} twice, or pid not a string")
    seen.add(key)
    s = t["samples"]
    n = table(s, f"thread {key} samples", ["stack", "time"])
    for i, k in enumerate(s["stack"]):
        idx(k, nstack, f"thread {key} sample {i} stack", null=True)
    if any(a > b for a, b in zip(s["time"], s["time"][1:])):
        fail(f"thread {key}: samples not in time order")
    if wall:
        if s["weightType"] != "tracing-ms" or len(s["weight"]) != n:
            fail(f"thread {key}: not weighted in ms")
        ws = [round(w * 1e6) for w in s["weight"]]
    else:
        if s["weightType"] != "samples" or s.get("weight") is not None:
            fail(f"thread {key}: not one sample a sample")
        ws = [1] * n
    total += sum(ws)
    for k, w in zip(s["stack"], ws):
        line = ";".join([t["processName"]] + stack_names(k))
        lines[line] = lines.get(line, 0) + w
    m = t["markers"]
    nm = table(m, f"thread {key} markers", ["category", "data", "endTime", "name", "phase", "startTime"])
    for i in range(nm):
        idx(m["name"][i], ns, f"thread {key} marker {i} name")
        idx(m["category"][i], len(cats), f"thread {key} marker {i} category")
        if m["phase"][i] == 1 and not m["endTime"][i] >= m["startTime"][i]:
            fail(f"thread {key} marker {i}: interval ends before it starts")
        if m["phase"][i] not in (0, 1):
            fail(f"thread {key} marker {i}: phase {m['phase'][i]}")
        marks.add(strings[m["name"][i]])
want = {}
for l in open(folded):
    line, w = l.rstrip("\n").rsplit(" ", 1)
    want[line] = want.get(line, 0) + int(w)
if total != sum(want.values()):
    fail(f"samples weigh {total}, the folded lines {sum(want.values())}")
if lines != want:
    diff = sorted(set(lines.items()) ^ set(want.items()))[:6]
    fail(f"the samples' stacks are not the folded lines: {diff}")
events = json.loads(open(header).readline()).get("events", ["cpu-clock"])
ev = {i for i, e in enumerate(events) if wall and e == "off-cpu" or e == events[0] and "--off-cpu" not in opts}
sampled = set()
for line in open(samples):
    r = json.loads(line)
    if r.get("event", 0) in ev:
        sampled.add((str(r["pid"]), str(r["tid"])))
if {(a, b.split(".")[0]) for a, b in seen} != sampled:
    fail(f"threads {sorted(seen)}, but the stream sampled {sorted(sampled)}")
print(f"threads {len(seen)} samples {total} markers {','.join(sorted(marks))}")
EOF
}

@test "--format firefox: a two-thread recording, every table sound, a thread per thread sampled" {
	sp-fold --format firefox -o "$T/p.json" "$REF"
	run -0 check "$T/p.json" "$REF"
	echo "$output"
	[[ $output == "threads 2 "* ]]
	# The worker thread was born and ended while recorded, the process ended.
	[[ $output == *"Thread start"* ]]
	[[ $output == *"Thread exit"* ]]
	[[ $output == *"Process exit"* ]]
	# The workload's own functions are there, named, and its library by its build-id.
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
s = p["shared"]["stringArray"]
names = {s[i] for i in p["shared"]["funcTable"]["name"]}
assert {"leaf_compute", "worker", "main"} <= names, names
assert any(l["name"] == "spin" for l in p["libs"]), p["libs"]
' "$T/p.json"
}

@test "--format firefox: a name ending in .gz is gzipped, and is the same profile" {
	sp-fold --format firefox -o "$T/p.json" "$REF"
	sp-fold --format firefox -o "$T/p.json.gz" "$REF"
	run -0 gzip -t "$T/p.json.gz"
	cmp <(gzip -dc "$T/p.json.gz") "$T/p.json"
	run -0 check "$T/p.json.gz" "$REF"
	# Standard output is not compressed.
	sp-fold --format firefox "$REF" | cmp - "$T/p.json"
}

@test "--format firefox --wall: off-CPU time in ms, in its category, where the thread waited" {
	sp-capture -q --off-cpu -o "$T/half.raw" -- "$WORKLOADS/halfsleep" 1 > /dev/null
	sp-unwind "$T/half.raw" | sp-symbolize > "$T/half.sps"
	sp-fold --wall --format firefox -o "$T/wall.json" "$T/half.sps"
	run -0 check "$T/wall.json" "$T/half.sps" --wall
	echo "$output"
	sp-fold --off-cpu --format firefox -o "$T/off.json" "$T/half.sps"
	run -0 check "$T/off.json" "$T/half.sps" --off-cpu
	# Without --wall: only the time on the CPU, a sample each.
	sp-fold --format firefox -o "$T/cpu.json" "$T/half.sps"
	run -0 check "$T/cpu.json" "$T/half.sps"
	# The off-CPU samples: their leaf in the Off-CPU category, placed when the
	# thread left the CPU, so that each ends before the thread's next sample.
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
sh = p["shared"]
cats = [c["name"] for c in p["meta"]["categories"]]
off = cats.index("Off-CPU")
st, ft = sh["stackTable"], sh["frameTable"]
n = 0
for t in p["threads"]:
    s = t["samples"]
    for i, k in enumerate(s["stack"]):
        if k is None or ft["category"][st["frame"][k]] != off:
            continue
        n += 1
        if i + 1 < len(s["time"]):
            assert s["time"][i] + s["weight"][i] <= s["time"][i + 1] + 0.001, (i, s["time"][i:i + 2])
assert n >= 10, n
' "$T/wall.json"
}

@test "--format firefox: children born and ended while recorded have their start and exit" {
	sp-capture -q -o "$T/fork.raw" -- "$WORKLOADS/forker" -n 10 1 > /dev/null
	sp-unwind "$T/fork.raw" | sp-symbolize > "$T/fork.sps"
	sp-fold --format firefox -o "$T/fork.json" "$T/fork.sps"
	run -0 check "$T/fork.json" "$T/fork.sps"
	echo "$output"
	# Every child sampled is a process of its own, with a start and an exit
	# on its main thread, and its start time is the marker's.
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
s = p["shared"]["stringArray"]
kids = 0
for t in p["threads"]:
    names = [s[n] for n in t["markers"]["name"]]
    if "Process start" not in names:
        continue
    kids += 1
    assert t["isMainThread"] and t["pid"] == t["tid"], t["tid"]
    assert "Process exit" in names, names
    start = t["markers"]["startTime"][names.index("Process start")]
    assert t["processStartupTime"] == start, (t["processStartupTime"], start)
    assert t["processShutdownTime"] >= start
    assert all(x >= start for x in t["samples"]["time"])
assert kids >= 3, kids
assert len({t["pid"] for t in p["threads"]}) == kids + 1
' "$T/fork.json"
}

@test "--format firefox: lost records and throttling are markers on the timeline" {
	# The recording, with a loss and a throttled interval written into it.
	sp-cat "$REF" > "$T/ref.jsonl"
	python3 - "$T/ref.jsonl" "$T/lost.jsonl" <<'EOF'
import json, sys
n, out = 0, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    out.append(line.rstrip("\n"))
    if r.get("t") == "sample":
        n += 1
        if n == 20:
            out.append(json.dumps({"t": "lost", "lost": 7, "kind": "samples", "time": r["time"] + 1, "cpu": 1}))
            out.append(json.dumps({"t": "throttle", "time": r["time"] + 2, "cpu": 1}))
        if n == 40:
            out.append(json.dumps({"t": "unthrottle", "time": r["time"] + 1, "cpu": 1}))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
EOF
	sps_from_json "$T/lost.jsonl" "$T/lost.sps"
	sp-fold --format firefox -o "$T/lost.json" "$T/lost.sps"
	run -0 check "$T/lost.json" "$T/lost.sps"
	[[ $output == *Lost* ]]
	[[ $output == *Throttled* ]]
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
s = p["shared"]["stringArray"]
m = [(s[n], st, e, d["detail"]) for t in p["threads"] for n, st, e, d in
     zip(t["markers"]["name"], t["markers"]["startTime"], t["markers"]["endTime"], t["markers"]["data"])]
lost = [x for x in m if x[0] == "Lost"]
thr = [x for x in m if x[0] == "Throttled"]
# Once, on the first thread of the process; intervals.
assert len(lost) == 1 and lost[0][3] == "7 samples lost on CPU 1", lost
assert len(thr) == 1 and thr[0][2] > thr[0][1], thr
' "$T/lost.json"
}

@test "--format firefox --kernel: kernel frames in the Kernel category" {
	[ "$(id -u)" -eq 0 ] || skip "kernel callchains need root"
	sp-capture -q --kernel -o "$T/k.raw" -- dd if=/dev/zero of=/dev/null bs=64k count=20000
	sp-unwind "$T/k.raw" | sp-symbolize > "$T/k.sps"
	sp-fold --kernel --format firefox -o "$T/k.json" "$T/k.sps"
	run -0 check "$T/k.json" "$T/k.sps" --kernel
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
cats = [c["name"] for c in p["meta"]["categories"]]
ft = p["shared"]["frameTable"]
assert cats.index("Kernel") in ft["category"], ft["category"]
assert cats.index("User") in ft["category"], ft["category"]
' "$T/k.json"
}

@test "--format firefox: --per-thread is a usage error, a bad format names the choices" {
	run -3 sp-fold --format firefox --per-thread "$T/d" "$REF"
	[[ $output == *--per-thread* ]]
	run -3 sp-fold --format firefx "$REF"
	[[ $output == *firefox* ]]
}

@test "--format firefox: names that JSON must escape, invalid UTF-8, and no samples at all" {
	# The vector with main renamed to bytes no JSON string can hold as they are.
	sp-cat "$VECTORS/symbolized.sps" > "$T/v.jsonl"
	python3 - "$T/v.jsonl" "$T/w.jsonl" <<'PY'
import base64, json, sys
name = base64.b64encode(b'ma"in\\\t\x01\xff\xc3\xa9;x').decode()
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if r.get("t") == "frame" and r.get("name") == "main":
            r["name"] = {"$strb": name}
        out.write(json.dumps(r) + "\n")
PY
	sps_from_json "$T/w.jsonl" "$T/w.sps"
	sp-fold --format firefox -o "$T/w.json" "$T/w.sps"
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1], encoding="utf-8"))
want = "ma\"in\\\t\x01\ufffd\u00e9:x"
s = p["shared"]["stringArray"]
assert want in [s[i] for i in p["shared"]["funcTable"]["name"]], s
' "$T/w.json"
	# No sample kept: a valid profile without threads.
	sp-fold --only-pid 1 --allow-empty --format firefox -o "$T/e.json" "$VECTORS/symbolized.sps"
	run -0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["threads"] == [] and p["shared"]["stackTable"]["length"] == 0, p
' "$T/e.json"
}

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads symbolized streams (as sp-cat prints them, JSON lines on stdin or
in files) for the tests of stripped modules.

  symstacks.py pairs STRIPPED.jsonl NAMED.jsonl MODULE
      Two symbolizations of one unwound stream: for every frame of the
      module whose path ends in /MODULE, "NAME_A ORIGIN_A NAME_B ORIGIN_B"
      (frame ids are given in the order frames are first met, so the same
      id is the same address in both), one line per distinct pair.
  symstacks.py complete FILE [FUNCTION]
      "TOTAL COMPLETE NAMED": the samples (whose stack has a frame named
      FUNCTION, if given), those without a marker frame, and those of
      them whose frames all have a function identity (an origin other
      than address-only).
  symstacks.py names FILE
      "NAME ORIGIN SAMPLES" per frame name, for frames of samples.

Python's json keeps integers exact, which jq does not past 2^53.
"""
import json
import sys

MARKER = 0x8


def load(path):
    frames, stacks, modules, samples = {}, {}, {}, []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            t = r.get("t")
            if t == "header":
                frames, stacks, modules = {}, {}, {}
            elif t == "frame":
                frames[r["id"]] = r
            elif t == "symstack":
                stacks[r["id"]] = r["frames"]
            elif t == "module":
                modules[r["id"]] = r.get("path", "")
            elif t == "sample" and r.get("stack") is not None:
                samples.append([frames[i] for i in stacks[r["stack"]]])
    return frames, modules, samples


def pairs(a, b, module):
    fa, ma, _ = load(a)
    fb, _, _ = load(b)
    seen = set()
    for i, x in fa.items():
        if x.get("flags", 0) & MARKER or "module" not in x:
            continue
        if not ma.get(x["module"], "").endswith("/" + module):
            continue
        y = fb.get(i)
        if y is None:
            continue
        p = (x["name"], x["origin"], y["name"], y["origin"])
        if p not in seen:
            seen.add(p)
            print(*p)


def complete(path, fn=None):
    _, _, samples = load(path)
    total = full = named = 0
    for s in samples:
        if fn is not None and not any(f["name"] == fn for f in s):
            continue
        total += 1
        if any(f.get("flags", 0) & MARKER for f in s):
            continue
        full += 1
        if all(f["origin"] != "address-only" for f in s):
            named += 1
    print(total, full, named)


def names(path):
    _, _, samples = load(path)
    count = {}
    for s in samples:
        for f in {(f["name"], f["origin"]) for f in s}:
            count[f] = count.get(f, 0) + 1
    for (n, o), c in sorted(count.items(), key=lambda kv: -kv[1]):
        print(n.replace(" ", "_"), o, c)


def main():
    cmd = sys.argv[1]
    if cmd == "pairs":
        pairs(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "complete":
        complete(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif cmd == "names":
        names(sys.argv[2])
    else:
        sys.exit("symstacks.py: unknown command " + cmd)


if __name__ == "__main__":
    main()

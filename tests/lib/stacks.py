#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Prints the stacks of an unwound stackpulse stream as folded lines.

A test helper independent of sp-symbolize: frames of ELF modules are named
with addr2line (the return address minus one, as the format says), JIT
frames as [jit], kernel frames as [kernel], frames of the kernel's vDSO
as [vdso] (its image is not on disk), markers as [end:NAME]. Lines
are 'root;...;leaf COUNT', sorted.

    stacks.py [--pid PID] [--no-count] FILE
"""
import subprocess
import sys
from collections import Counter

import msgpack

MARKERS = {1: "truncated", 2: "no_cfi", 3: "missing_module",
           4: "build_id_mismatch", 5: "bad_cfa", 6: "max_depth",
           7: "no_user_stack", 8: "outside_copy", 9: "cycle", 10: "no_mapping",
           11: "bad_fp", 12: "jit_no_map"}


def names(path, rels):
    """addr2line over a module: {rel: function name}."""
    rels = sorted(set(rels))
    try:
        out = subprocess.run(["addr2line", "-f", "-e", path] +
                             ["%x" % r for r in rels], capture_output=True,
                             text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {r: out[2 * i] for i, r in enumerate(rels)}


def main():
    args = sys.argv[1:]
    only_pid = None
    count = True
    while args and args[0].startswith("--"):
        if args[0] == "--pid":
            only_pid = int(args[1])
            args = args[2:]
        elif args[0] == "--no-count":
            count = False
            args = args[1:]
    # Module ids are scoped to a segment: name them by path instead.
    modules, stacks, samples = {}, {}, []
    with open(args[0], "rb") as f:
        for r in msgpack.Unpacker(f, raw=False, strict_map_key=False):
            t = r["t"]
            if t == "header":
                modules, stacks = {}, {}
            elif t == "module":
                modules[r["id"]] = r
            elif t == "stack":
                stacks[r["id"]] = [
                    (fr[0], None if fr[1] is None else
                     (modules[fr[1]]["path"], modules[fr[1]]["kind"]), fr[2], fr[3])
                    for fr in r["frames"]]
            elif t == "sample" and "stack" in r:
                if only_pid is None or r["pid"] == only_pid:
                    samples.append(stacks[r["stack"]])
    wanted = {}
    for frames in samples:
        for addr, mod, rel, flags in frames:
            if mod is not None and mod[1] == "elf":
                wanted.setdefault(mod, []).append(rel - 1 if flags & 4 else rel)
    named = {m: names(m[0], rels) for m, rels in wanted.items()}
    folded = Counter()
    for frames in samples:
        parts = []
        for addr, mod, rel, flags in frames:
            if flags & 8:
                parts.append("[end:%s]" % MARKERS.get(rel, rel))
            elif flags & 3 == 1:
                parts.append("[kernel]")
            elif flags & 3 == 2:
                parts.append("[jit]")
            elif mod is None:
                parts.append("[unknown]")
            elif mod[1] == "vdso":
                parts.append("[vdso]")
            else:
                key = rel - 1 if flags & 4 else rel
                parts.append(named.get(mod, {}).get(key, "??") or "??")
        folded[";".join(reversed(parts))] += 1
    for line in sorted(folded):
        print("%s %d" % (line, folded[line]) if count else line)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compares two unwindings of one raw stream, sample by sample.

    unwind_agree.py A.unw B.unw

A and B are sp-unwind's output for the same raw stream (by two engines,
say), so their samples come in the same order. For each sample the user
frames (kernel frames and the end marker left out) are taken; where both
stacks are complete (no marker, and at least one user frame), their
addresses are compared position by position, and a frame counts as
differing when the other stack has another address at its position or
none. Prints one JSON object:

    samples      samples in A (B must have as many)
    user         samples with at least one user frame in A
    complete_a   of those, complete in A; complete_b likewise in B
    both         samples complete in both
    frames       frames compared: the longer stack's length, summed over both
    differ       frames that differ
    agree        1 - differ / frames (1 when nothing was compared)
    prefix       samples complete in A only, where B's leading frames are
                 compared with A's: up to and including B's first jit
                 frame (where an engine without a way through JIT code
                 stops or guesses), or all of B's but its last
    prefix_frames, prefix_differ, prefix_agree   the same counts for those

Exits 1 when the streams do not have the same samples (by time and tid).
"""
import json
import sys

import msgpack


def samples(path):
    """[(time, tid, [user addrs], complete, has_user)] in stream order."""
    stacks, out = {}, []
    with open(path, "rb") as f:
        for r in msgpack.Unpacker(f, raw=False, strict_map_key=False):
            t = r.get("t")
            if t == "header":
                stacks = {}
            elif t == "stack":
                stacks[r["id"]] = r["frames"]
            elif t == "sample":
                frames = stacks.get(r.get("stack"), [])
                marker = any(fr[3] & 8 for fr in frames)
                user = [(fr[0], fr[3]) for fr in frames
                        if not fr[3] & 8 and (fr[3] & 3) != 1]
                out.append((r.get("time"), r.get("tid"), user,
                            not marker and bool(user), bool(user)))
    return out


def main():
    a, b = samples(sys.argv[1]), samples(sys.argv[2])
    if len(a) != len(b) or any(x[:2] != y[:2] for x, y in zip(a, b)):
        print("unwind_agree: the streams have different samples", file=sys.stderr)
        return 1
    res = {"samples": len(a), "user": 0, "complete_a": 0, "complete_b": 0,
           "both": 0, "frames": 0, "differ": 0,
           "prefix": 0, "prefix_frames": 0, "prefix_differ": 0}
    for x, y in zip(a, b):
        res["user"] += x[4]
        res["complete_a"] += x[3]
        res["complete_b"] += y[3]
        if x[3] and not y[3] and y[4]:
            jit = [i for i, fr in enumerate(y[2]) if fr[1] & 3 == 2]
            lead = y[2][:jit[0] + 1] if jit else y[2][:-1]
            res["prefix"] += 1
            res["prefix_frames"] += len(lead)
            res["prefix_differ"] += sum(1 for i, fr in enumerate(lead)
                                        if i >= len(x[2]) or x[2][i] != fr)
        if not (x[3] and y[3]):
            continue
        res["both"] += 1
        n = max(len(x[2]), len(y[2]))
        res["frames"] += n
        res["differ"] += sum(1 for i in range(n) if i >= len(x[2]) or
                             i >= len(y[2]) or x[2][i] != y[2][i])
    res["agree"] = 1 - res["differ"] / res["frames"] if res["frames"] else 1
    res["prefix_agree"] = (1 - res["prefix_differ"] / res["prefix_frames"]
                           if res["prefix_frames"] else 1)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

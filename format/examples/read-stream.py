#!/usr/bin/python3
"""Reads a stackpulse stream with nothing but the msgpack module.

An example consumer written from format/sp-stream.md alone: it prints
each segment's header, counts records by type, resolves every sample's
stack (unwound or symbolized stage) and prints the summary counters.

    python3 read-stream.py FILE
"""
import sys
from collections import Counter

import msgpack

FRAME_RETADDR = 0x4
FRAME_MARKER = 0x8
MARKERS = {1: "truncated", 2: "no_cfi", 3: "missing_module",
           4: "build_id_mismatch", 5: "bad_cfa", 6: "max_depth",
           7: "no_user_stack"}


def frame_text(frame, modules):
    addr, module, rel, flags = frame
    if flags & FRAME_MARKER:
        return "[end: %s]" % MARKERS.get(rel, rel)
    where = modules[module]["path"] if module is not None else "?"
    ret = " ret" if flags & FRAME_RETADDR else ""
    return "%s+0x%x%s" % (where, rel, ret)


def symbol_text(frame, modules):
    names = [i["name"] for i in frame.get("inline", [])]
    names.append(frame.get("name") or "0x%x" % frame["addr"])
    return ";".join(reversed(names))


def main(path):
    with open(path, "rb") as f:
        unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False,
                                    unicode_errors="surrogateescape")
        segment = 0
        counts = Counter()
        modules, stacks, frames, symstacks = {}, {}, {}, {}
        stage = None
        summary = None
        last_copy = {}  # tid -> the full stack copy of its previous sample
        for rec in unpacker:
            kind = rec["t"]
            counts[kind] += 1
            if kind == "header":
                segment += 1
                # Ids are scoped to a segment.
                modules, stacks, frames, symstacks = {}, {}, {}, {}
                last_copy = {}
                stage = rec["stage"]
                tools = "|".join(t["name"] for t in rec["tools"])
                print("segment %d: %s %d.%d stage=%s tools=%s" %
                      (segment, rec["format"], rec["version"][0],
                       rec["version"][1], stage, tools or "-"))
            elif kind == "module":
                modules[rec["id"]] = rec
            elif kind == "stack":
                stacks[rec["id"]] = rec["frames"]
            elif kind == "frame":
                frames[rec["id"]] = rec
            elif kind == "symstack":
                symstacks[rec["id"]] = rec["frames"]
            elif kind == "sample":
                head = "sample pid=%d tid=%d time=%d" % (
                    rec["pid"], rec["tid"], rec["time"])
                if stage == "raw":
                    # Complete the copy with the bytes it shares with the
                    # previous copy of the same thread.
                    copy = rec.get("ustack", b"")
                    shared = rec.get("ustack_shared", 0)
                    if shared:
                        prev = last_copy[rec["tid"]]
                        copy += prev[len(prev) - shared:]
                    last_copy[rec["tid"]] = copy
                    print("%s ustack=%d bytes (%d shared) kstack=%d" % (
                        head, len(copy), shared, len(rec.get("kstack", []))))
                elif "stack" in rec and stage == "unwound":
                    print("%s %s" % (head, " <- ".join(
                        frame_text(fr, modules) for fr in stacks[rec["stack"]])))
                elif "stack" in rec and stage == "symbolized":
                    names = [symbol_text(frames[i], modules)
                             for i in symstacks[rec["stack"]]]
                    print("%s %s" % (head, ";".join(reversed(names))))
                else:
                    print("%s (no frames)" % head)
            elif kind == "summary":
                summary = rec
        for kind in sorted(counts):
            print("records %s: %d" % (kind, counts[kind]))
        if summary is None:
            print("no summary: the stream was cut short")
        else:
            for key in ("sample_events", "samples", "lost_events",
                        "empty_stack_samples", "truncated_frame_markers",
                        "ignored_user_callchain_frames", "kernel_enabled"):
                print("summary %s: %s" % (key, summary[key]))
            for e in summary["error_stats"]:
                print("summary error %s: %d" % (e["kind"], e["count"]))


if __name__ == "__main__":
    main(sys.argv[1])

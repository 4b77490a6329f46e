#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reads a stackpulse stream with nothing but the msgpack module.

An example consumer built on format/sp_stream.py (the reader beside the
specification): it prints each segment's header, counts records by type,
resolves every sample's stack (unwound or symbolized stage), rebuilds each
raw sample's stack copy, and prints the summary counters.

    python3 read-stream.py FILE
"""
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sp_stream  # noqa: E402

FRAME_RETADDR = 0x4
MARKERS = {1: "truncated", 2: "no_cfi", 3: "missing_module",
           4: "build_id_mismatch", 5: "bad_cfa", 6: "max_depth",
           7: "no_user_stack"}


def frame_text(frame, modules):
    addr, module, rel, flags = frame
    if flags & sp_stream.FRAME_MARKER:
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
        reader = sp_stream.Reader(f)
        segment = 0
        counts = Counter()
        stage = None
        summary = None
        for rec in reader.records():
            kind = rec["t"]
            counts[kind] += 1
            modules = reader.modules
            if kind == "header":
                segment += 1
                stage = rec["stage"]
                tools = "|".join(t["name"] for t in rec["tools"])
                print("segment %d: %s %d.%d stage=%s tools=%s" %
                      (segment, rec["format"], rec["version"][0],
                       rec["version"][1], stage, tools or "-"))
            elif kind == "sample":
                head = "sample pid=%d tid=%d time=%d" % (
                    rec["pid"], rec["tid"], rec["time"])
                if stage == "raw":
                    # The copy with the bytes it shares with the previous
                    # copy of the same thread.
                    copy = reader.stack_copy(rec)
                    print("%s ustack=%d bytes (%d shared) kstack=%d" % (
                        head, len(copy), rec.get("ustack_shared", 0),
                        len(rec.get("kstack", []))))
                elif "stack" in rec and stage == "unwound":
                    print("%s %s" % (head, " <- ".join(
                        frame_text(fr, modules) for fr in reader.stacks[rec["stack"]])))
                elif "stack" in rec and stage == "symbolized":
                    names = [symbol_text(reader.frames[i], modules)
                             for i in reader.symstacks[rec["stack"]]]
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

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A reader of stackpulse streams (format/sp-stream.md), for your own tools.

It needs Python 3.7 or later and the msgpack package (Debian:
python3-msgpack), and for a compressed stream (sp-capture -z, or a stream
file compressed with zstd) the zstandard package (Debian:
python3-zstandard); without it a compressed stream is refused, naming the
package.  Import it, or run it:

    python3 sp_stream.py [--count | --folded] FILE

--count prints how many records of each type the stream holds; --folded
(the default) prints the samples of a symbolized or unwound stream as
folded stacks, 'process;outermost;...;leaf COUNT', like sp-fold
--show-hidden.

The model, as the format defines it:

- A stream is MessagePack maps, one record each; 't' names the type.  A
  header starts each segment (cat joins streams), and ids (of modules,
  stacks, frames, symstacks) are scoped to their segment.
- Samples come after the records they refer to.  A raw sample's stack copy
  shares its last 'ustack_shared' bytes with the previous copy of the same
  thread: Reader.stack_copy() puts the whole copy back together.
- Unknown record types and keys are to be ignored, as here.

Example: the time each process spent in each function, as leaf

    import sp_stream
    from collections import Counter
    leaf = Counter()
    with open("rec.sym.sps", "rb") as f:
        r = sp_stream.Reader(f)
        for s in r.samples():
            if s.frames:
                leaf[(s.comm, s.frames[0].name)] += s.period
"""
import os
import sys
from collections import Counter

import msgpack

try:
    import zstandard
except ImportError:
    zstandard = None

# The flag bits of a symbolized frame record, and of an unwound stack's
# frame (the format's FRAMES: the low two bits of the latter are its kind).
SYM_HIDDEN, SYM_INLINE, SYM_MARKER, SYM_KERNEL, SYM_JIT = 0x1, 0x2, 0x8, 0x100, 0x200
FRAME_KIND_MASK, FRAME_MARKER = 0x3, 0x8


class StreamError(Exception):
    """The stream ends in the middle of a record, or holds something that is
    not a record: offset is the byte where the bad record starts, index its
    number (from 0); every record before it was good."""

    def __init__(self, message, offset, index):
        super().__init__("byte offset %d, record %d: %s" % (offset, index, message))
        self.offset, self.index = offset, index


# A record is at most this long unless the reader is told otherwise (LIMITS).
MAX_RECORD = 1048576

# What begins a zstd frame: its magic number, or a skippable frame's.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _zstd_magic(b):
    return b[:4] == ZSTD_MAGIC or (len(b) >= 4 and b[0] & 0xf0 == 0x50 and b[1:4] == b"\x2a\x4d\x18")


class _CompressedError(Exception):
    """A fault of the compressed input, raised out of the unpacker's reads."""


class _Input:
    """The binary file f as the unpacker reads it: its first bytes (head)
    given back first, and when they begin a zstd frame every byte after
    decompressed, frame after frame (the format's COMPRESSION: a stream
    compressed from its first byte to its last)."""

    def __init__(self, f, head):
        self.f, self.head, self.out = f, head, b""
        self.zstd = _zstd_magic(head)
        self.frame = None       # the frame being decompressed
        self.read_bytes = 0     # compressed bytes read
        if self.zstd and zstandard is None:
            raise _CompressedError("the stream is compressed (zstd) and the Python module "
                                   "zstandard is not installed (Debian: python3-zstandard); "
                                   "or decompress it first: zstd -d")

    def _next(self):
        data, self.head = self.head or self.f.read(4096), b""
        self.read_bytes += len(data)
        return data

    def _decompress(self, data):
        try:
            while data:
                if self.frame is None or self.frame.eof:
                    self.frame = zstandard.ZstdDecompressor().decompressobj()
                self.out += self.frame.decompress(data)
                data = self.frame.unused_data if self.frame.eof else b""
        except zstandard.ZstdError as e:
            raise _CompressedError("corrupt zstd data, in the compressed bytes up to "
                                   "%d: %s" % (self.read_bytes, e))

    def read(self, n=-1):
        if not self.zstd:
            data = self.head[:n] if n >= 0 else self.head
            self.head = self.head[len(data):]
            return data or self.f.read(n)
        while not self.out:
            data = self._next()
            if not data:
                if self.frame is not None and not self.frame.eof:
                    raise _CompressedError("the compressed stream ends inside a zstd "
                                           "frame, at compressed byte %d" % self.read_bytes)
                return b""
            self._decompress(data)
        data = self.out[:n] if n >= 0 else self.out
        self.out = self.out[len(data):]
        return data


def records(f, max_record=MAX_RECORD):
    """Yields (offset, record) for each record of the binary file f, checking
    what the format's READING A STREAM asks: maps with a string 't', a
    header first, of this format and major version.  A compressed stream
    is decompressed; offsets are those of the decompressed stream."""
    try:
        f = _Input(f, f.read(4))
    except _CompressedError as e:
        raise StreamError(str(e), 0, 0)
    unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False,
                                unicode_errors="surrogateescape",
                                max_buffer_size=max_record)
    index = 0
    while True:
        offset = unpacker.tell()
        try:
            r = unpacker.unpack()
        except msgpack.OutOfData:
            # At a clean end nothing was read past the last record.
            if unpacker.tell() != offset:
                raise StreamError("the stream ends inside a record", offset, index)
            return
        except msgpack.BufferFull:
            raise StreamError("a record longer than the limit of %d bytes" % max_record,
                              offset, index)
        except _CompressedError as e:
            raise StreamError(str(e), offset, index)
        except (ValueError, msgpack.UnpackException) as e:
            raise StreamError("not MessagePack (%s)" % (str(e) or type(e).__name__),
                              offset, index)
        if not isinstance(r, dict) or not isinstance(r.get("t"), str):
            if r == 0x28 or (isinstance(r, int) and 0x50 <= r <= 0x5f):
                raise StreamError("not a record, perhaps a zstd frame after plain records: "
                                  "sp_stream.py reads a stream compressed from its first "
                                  "byte, or a plain one", offset, index)
            raise StreamError("not a record (a map with a string 't')", offset, index)
        if index == 0 and r["t"] != "header":
            raise StreamError("the first record is not a header", offset, index)
        if r["t"] == "header":
            v = r.get("version")
            if r.get("format") != "stackpulse" or not isinstance(v, list) or v[:1] != [1]:
                raise StreamError("not a stackpulse stream of major version 1", offset, index)
        yield offset, r
        index += 1


class Frame:
    """One frame of a sample, leaf first in Sample.frames.

    name: the function (symbolized), or None when only the address is known;
    module: the module's path, or None; addr: the absolute address; rel: the
    address in the module's file; kind: 'user', 'kernel' or 'jit'; inline:
    the functions inlined at this address, innermost first (names);
    hidden: start-up scaffolding sp-fold hides by default; marker: the
    reason a stack ends early ('[truncated]'), not a frame of code."""

    __slots__ = ("name", "module", "addr", "rel", "kind", "inline", "hidden", "marker")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def shown(self):
        """The name sp-fold shows: the function, else [module file name]."""
        if self.name is not None:
            return self.name
        if self.kind == "kernel":
            return "[kernel]"
        base = os.path.basename(self.module) if self.module else "unknown"
        return base if base.startswith("[") else "[%s]" % base


class Sample:
    """A sample with what its segment says about it."""

    __slots__ = ("record", "pid", "tid", "time", "period", "event", "comm",
                 "thread", "frames", "preempted")


class Reader:
    """Reads a stream and keeps its segment's state: header, names, modules,
    stacks and frames, so that each sample can be told in full."""

    def __init__(self, f):
        self.f = f
        self.header = None
        self._reset()

    def _reset(self):
        self.events = ["cpu-clock"]
        self.modules, self.stacks, self.frames, self.symstacks = {}, {}, {}, {}
        self.comms, self.thread_comms = {}, {}
        self._copies = {}

    def records(self):
        """Every record, the reader's state updated before it is yielded."""
        for _, r in records(self.f):
            self._take(r)
            yield r

    def samples(self):
        """Every sample, as a Sample."""
        for r in self.records():
            if r["t"] == "sample":
                yield self.sample(r)

    def _take(self, r):
        t = r["t"]
        if t == "header":
            self.header = r
            self._reset()
            opts = r.get("options") or {}
            self.events = r.get("events") or [opts.get("event", "cpu-clock")]
        elif t in ("process", "exec", "comm", "thread"):
            pid, tid = r.get("pid"), r.get("tid", r.get("pid"))
            if "comm" in r:
                self.thread_comms[tid] = r["comm"]
                if t in ("process", "exec") or (t == "comm" and pid == tid):
                    self.comms[pid] = r["comm"]
        elif t == "fork" and r.get("ppid") != r.get("pid") and r.get("ppid") in self.comms:
            self.comms.setdefault(r["pid"], self.comms[r["ppid"]])
        elif t == "exit" and r.get("ustack_reset") is True:
            # (1.6) No later sample of the tid shares with an older copy.
            self._copies.pop(r.get("tid"), None)
        elif t == "module":
            self.modules[r["id"]] = r
        elif t == "stack":
            self.stacks[r["id"]] = r["frames"]
        elif t == "frame":
            self.frames[r["id"]] = r
        elif t == "symstack":
            self.symstacks[r["id"]] = r["frames"]

    def _frame(self, fid):
        fr = self.frames[fid]
        flags = fr.get("flags", 0)
        mod = self.modules.get(fr.get("module"))
        marker = bool(flags & SYM_MARKER)
        address_only = fr.get("origin") == "address-only" and not marker
        return Frame(name=None if address_only else fr.get("name"),
                     module=mod["path"] if mod else None, addr=fr.get("addr"),
                     rel=fr.get("rel"),
                     kind="kernel" if flags & SYM_KERNEL else "jit" if flags & SYM_JIT else "user",
                     inline=[i.get("name") for i in fr.get("inline", [])],
                     hidden=bool(flags & SYM_HIDDEN), marker=marker)

    def _unwound_frame(self, fr):
        addr, mid, rel, flags = fr[0], fr[1], fr[2], fr[3]
        mod = self.modules.get(mid)
        kind = {0: "user", 1: "kernel", 2: "jit"}.get(flags & FRAME_KIND_MASK, "user")
        marker = bool(flags & FRAME_MARKER)
        return Frame(name="[end:%d]" % rel if marker else None,
                     module=mod["path"] if mod else None, addr=addr,
                     rel=None if marker else rel, kind=kind, inline=[], hidden=False,
                     marker=marker)

    def sample(self, r):
        """A sample record told in full: names, event, frames leaf first."""
        s = Sample()
        s.record = r
        s.pid, s.tid, s.time = r["pid"], r["tid"], r["time"]
        s.period = r.get("period", 1)
        ev = r.get("event", 0)
        s.event = self.events[ev] if ev < len(self.events) else None
        s.comm = self.comms.get(s.pid, "swapper" if s.pid == 0 else "pid-%d" % s.pid)
        s.thread = self.thread_comms.get(s.tid, s.comm)
        s.preempted = r.get("preempted", False)
        sid = r.get("stack")
        if sid is None:
            s.frames = []
        elif sid in self.symstacks:
            s.frames = [self._frame(i) for i in self.symstacks[sid]]
        else:
            s.frames = [self._unwound_frame(fr) for fr in self.stacks.get(sid, [])]
        return s

    def stack_copy(self, r):
        """A raw sample's whole user stack copy (bytes from its stack pointer
        up), its shared tail taken from the thread's previous copy.  Call it
        for every raw sample, in stream order."""
        own = r.get("ustack", b"")
        shared = r.get("ustack_shared", 0)
        prev = self._copies.get(r["tid"], b"")
        if shared > len(prev):
            raise ValueError("sample at %d shares %d bytes, the previous copy has %d"
                             % (r["time"], shared, len(prev)))
        copy = own + (prev[len(prev) - shared:] if shared else b"")
        self._copies[r["tid"]] = copy
        return copy


def folded(reader, out):
    """Adds to the Counter out the folded lines of the stacks of the samples
    of each segment's first event, as sp-fold --show-hidden shows their
    physical frames: {'process;root;...;leaf': count}.  On a StreamError,
    out holds the samples before the fault."""
    for s in reader.samples():
        if s.event != reader.events[0]:
            continue
        names = [f.shown().replace(";", ":") for f in reversed(s.frames)]
        if not names:
            names = ["[idle]"] if s.pid == 0 else ["[no frames]"]
        out[";".join([s.comm.replace(";", ":")] + names)] += 1


def main(argv):
    mode = "--folded"
    if argv and argv[0] in ("--count", "--folded"):
        mode = argv.pop(0)
    if len(argv) != 1:
        sys.stderr.write("usage: sp_stream.py [--count | --folded] FILE\n")
        return 3
    status = 0
    counts, lines = Counter(), Counter()
    with open(argv[0], "rb") as f:
        r = Reader(f)
        try:
            if mode == "--count":
                for rec in r.records():
                    counts[rec["t"]] += 1
            else:
                folded(r, lines)
        except StreamError as e:
            sys.stderr.write("sp_stream.py: %s: %s\n" % (argv[0], e))
            status = 1
    for k in sorted(counts):
        print("%s %d" % (k, counts[k]))
    for k in sorted(lines):
        print("%s %d" % (k, lines[k]))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

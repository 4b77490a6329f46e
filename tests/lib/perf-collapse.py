#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Folds the output of `perf script -F comm,tid,ip,sym,dso` the way sp-fold
folds a stream by default: the process name as the root frame, then the
frames from the outermost to the leaf, one line per stack with its number
of samples.  As sp-fold does, it leaves out inlined functions (sp-fold
shows them only with --inline) and the start-up scaffolding sp-symbolize
hides by default (_start, __libc_start_main, start_thread, clone3, the
kernel's entry code).  With --kernel, kernel frames end in _[k], as
sp-fold --kernel writes them.  Used by tests/047-import.bats and
scripts/bench.

    perf script -i perf.data -F comm,tid,ip,sym,dso | perf-collapse.py [--kernel]
"""
import collections
import re
import sys

HIDDEN = {
    "_start", "__libc_start_main", "__libc_start_main_impl",
    "__libc_start_call_main", "start_thread", "clone", "clone3", "__clone3",
    "__clone", "thread_start", "entry_SYSCALL_64",
    "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ret_from_fork",
    "ret_from_fork_asm", "asm_sysvec_apic_timer_interrupt",
}

# "comm tid" alone (a callchain follows), or with the sample's one frame.
HEAD = re.compile(r"^\s*(.*?)\s+(\d+)\s*$")
HEAD_IP = re.compile(r"^\s*(.*?)\s+(\d+)\s+([0-9a-f]+)\s+(.*)$")
# A frame: "ADDR SYM (DSO)", SYM maybe with " (inlined)".
FRAME = re.compile(r"^\s*([0-9a-f]+)\s+(.*?)(?:\s+\(([^()]*)\))?$")


def frame(text, kernel):
    """(address, name, inlined) of a frame line, or None."""
    m = FRAME.match(text)
    if not m:
        return None
    sym, dso = m.group(2), m.group(3) or ""
    inlined = sym.endswith(" (inlined)") or dso == "inlined"
    if sym.endswith(" (inlined)"):
        sym = sym[:-len(" (inlined)")]
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    if kernel and (dso.startswith("[kernel") or dso.endswith(".ko")):
        sym += "_[k]"
    return m.group(1), sym, inlined


def names(frames):
    """The frames of one sample, leaf first, as sp-fold names them.

    perf lists the functions inlined at an address before the function
    that holds it; sp-fold shows only the latter.  When perf marks every
    entry of an address as inlined (it does so for some of glibc's
    functions), the last, outermost, is the function."""
    out, pending = [], []

    def emit(name):
        if name.replace("_[k]", "") not in HIDDEN:
            out.append(name)

    for addr, name, inlined in frames:
        if pending and addr != pending[-1][0]:
            emit(pending[-1][1])
            pending = []
        if inlined:
            pending.append((addr, name))
        else:
            emit(name)
            pending = []
    if pending:
        emit(pending[-1][1])
    return out


def main():
    kernel = "--kernel" in sys.argv[1:]
    counts = collections.Counter()
    comm, frames = None, []

    def flush():
        if comm is not None:
            counts[";".join([comm] + names(frames)[::-1])] += 1

    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if line.startswith("\t"):
            f = frame(line, kernel)
            if f:
                frames.append(f)
            continue
        flush()
        m = HEAD_IP.match(line)
        if m and not HEAD.match(line):
            comm, frames = m.group(1), []
            f = frame(m.group(3) + " " + m.group(4), kernel)
            if f:
                frames.append(f)
            continue
        m = HEAD.match(line)
        comm, frames = (m.group(1) if m else line.strip()), []
    flush()
    for stack, n in sorted(counts.items()):
        print(stack, n)


main()

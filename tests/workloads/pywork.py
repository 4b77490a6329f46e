"""pywork: a CPU-bound Python workload with a known call structure.

Run with a CPython 3.12 or later and -X perf, so that perf-style profilers
see each Python function as a frame of its own:

    python3 -X perf pywork.py [SECONDS]

Nearly all of the time is spent in this chain, innermost last:

    main -> py_outer -> py_middle -> py_inner

It runs for SECONDS seconds (default 2) and exits 0.
"""

import sys
import time

# Loop passes of py_inner per call of the chain, about a millisecond.
INNER_STEPS = 20000


def py_inner(steps):
    acc = 0
    for i in range(steps):
        acc = (acc * 31 + i) % 1000003
    return acc


def py_middle(steps):
    return py_inner(steps) + 1


def py_outer(steps):
    return py_middle(steps) + 2


def main(argv):
    seconds = 2.0
    if len(argv) > 2:
        print("pywork: unexpected argument '%s'" % argv[2], file=sys.stderr)
        return 3
    if len(argv) > 1:
        try:
            seconds = float(argv[1])
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds <= 1e6:
            print("pywork: bad number of seconds '%s'" % argv[1],
                  file=sys.stderr)
            return 3
    deadline = time.monotonic() + seconds
    total = 0
    while time.monotonic() < deadline:
        total += py_outer(INNER_STEPS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
# SPDX-License-Identifier: MIT

# SPDX-License-Identifier: MIT
# Shared set-up of the bats tests.  SP_BUILD names the build to test
# (build, or build/san for the sanitizer build).
#
# Every helper that pipes a tool into another command runs under
# pipefail (made local to the function by "local -"), so a tool that fails
# fails the helper, not only the last command of its pipe.  The test bodies
# do not: "tool | grep -q" would fail whenever grep's early exit kills the
# tool with SIGPIPE.  A check that something is absent is written
# "run -0 tool", then "run -1 grep -q PATTERN <<< \"$output\"": a negated
# command ("! tool | grep -q") is never checked by bats unless it is the
# last line of a test.
bats_require_minimum_version 1.5.0
TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
SP_BUILD=${SP_BUILD:-build}
case $SP_BUILD in /*) ;; *) SP_BUILD=$TOP/$SP_BUILD ;; esac
BIN=$SP_BUILD/bin
WORKLOADS=$SP_BUILD/workloads
VECTORS=$TOP/format/vectors
PATH=$BIN:$PATH
export PATH
# Each test starts without sp-symbolize's cache of inflated debug files.
XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache
export XDG_CACHE_HOME

# sps_from_json FILE.jsonl OUT.sps: builds a stream from JSON lines.
sps_from_json() {
	sp-cat --from-json "$1" > "$2"
}

# The number of lines of a file.
lines() {
	local -
	set -o pipefail
	wc -l < "$1" | tr -d ' '
}

# A Python of version 3.12 or later (which has -X perf), from pyenv.
python312() {
	local d v best=
	for d in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
		[ -x "$d" ] || continue
		v=$("$d" -c 'import sys; print(sys.version_info >= (3, 12))' 2>/dev/null)
		[ "$v" = True ] && best=$d
	done
	[ -n "$best" ] && echo "$best"
}

# jqs FILE FILTER: runs jq -c over the JSON lines of a stream.
jqs() {
	local -
	set -o pipefail
	sp-cat "$1" | jq -c "$2"
}

# forget_perf_maps RAW: removes the /tmp/perf-PID.map of every process
# recorded in RAW.  A runtime's map outlives it; left behind, it would
# name the JIT code of a later process that gets the same pid.
forget_perf_maps() {
	local pid
	for pid in $(sp-cat -t process "$1" | jq -r '.pid' | sort -u); do
		rm -f "/tmp/perf-$pid.map"
	done
}

# summary FILE KEY: one counter of a stream's summary record.
summary() {
	local -
	set -o pipefail
	sp-cat -t summary "$1" | jq -r ".$2"
}

# A directory every user may write, for tests run as an unprivileged user.
shared_tmpdir() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/sp-test.XXXXXX")
	chmod 1777 "$d"
	echo "$d"
}

# as_nobody CMD...: runs a command as an unprivileged user.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# proc_state PID: the state letter of a process (R, S, T...), empty once it is gone.
proc_state() {
	awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null
}

# folded FILE [ARGS]: the stacks of an unwound stream, named by addr2line.
folded() {
	/usr/bin/python3 "$TOP/tests/lib/stacks.py" "$@"
}

# unwind_count FILE KIND: how many stacks of an unwound stream ended so.
unwind_count() {
	local -
	set -o pipefail
	sp-cat -t unwind "$1" | jq -r ".ends[] | select(.kind==\"$2\") | .count"
}

# frames FILE: "name|file:line|origin|flags" for every frame record.
frames() {
	local -
	set -o pipefail
	sp-cat -t frame "$1" | jq -r '"\(.name)|\(.file // "")\(if .line then ":\(.line)" else "" end)|\(.origin)|\(.flags // 0)|\(.inline // [] | map("\(.name)@\(.line)") | join(","))"'
}

# symbolized OUT WORKLOAD ARGS...: records, unwinds and symbolizes a workload
# into OUT.raw, OUT.unw and OUT.
symbolized() {
	local out=$1
	shift
	sp-capture -q -o "$out.raw" -- "$@"
	sp-unwind -o "$out.unw" "$out.raw"
	sp-symbolize -o "$out" "$out.unw"
}

# own_stacks FILE FUNCTION...: the lines of a stacks.py file whose stacks
# pass through one of the workload's FUNCTIONs and have no frame in the
# vDSO.  Assertions on exact stacks are made on these: the other samples
# were taken in ld.so while the process started (before main) or in the
# kernel's vDSO, and how those unwind depends on the host's C library and
# kernel build, not on what a test controls.
own_stacks() {
	local f=$1 alt
	shift
	alt=$(IFS='|'; echo "$*")
	awk -v re="(^|;)($alt)(;| |\$)" '$0 ~ re && !/\[vdso\]/' "$f"
}

# weight FILE: the sum of the counts ending the lines of a folded file.
weight() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

# start CMD...: runs a workload in the background, noting its pid in $P
# and in the array PIDS (which the test's setup empties), for
# kill_started.
start() {
	"$@" > /dev/null 2>&1 &
	P=$!
	disown
	PIDS+=("$P")
	sleep 0.2
}

# past_startup PID: waits until the process has had 50 ms of CPU, long
# past the dynamic linker's start-up (a few ms): a recording attached then
# has no sample of ld.so relocating before the program's own code, whose
# stack would be complete without the program's file.  At most 30 s.
past_startup() {
	local i
	for i in $(seq 300); do
		[ "$(awk '{ print $14 }' "/proc/$1/stat" 2>/dev/null || echo 0)" -ge 5 ] && return 0
		sleep 0.1
	done
	return 1
}

# kill_started: ends every process in PIDS, in a test's teardown.
kill_started() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}

# The tests of outputs (091, 094) work in a directory $D:
# keep NAME SRC: copies SRC to $D/NAME and to $D/NAME.copy, to compare after.
keep() {
	cp "$2" "$D/$1"
	cp "$2" "$D/$1.copy"
}

# only_files NAME...: the directory $D holds exactly these files (no temporary).
only_files() {
	local want=
	[ $# -eq 0 ] || want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	[ "$(ls -A "$D" | sort | tr '\n' ' ')" = "$want" ]
}

# cut_inside FILE NUM DEN: the first NUM/DEN of FILE's bytes, or a byte
# fewer when a record ends just there, so that the cut falls inside a
# record (a stream cut where a record ends is whole, only without its
# summary, and is reported so).
cut_inside() {
	local n
	n=$(/usr/bin/python3 - "$@" <<'PY'
import msgpack, sys
data = open(sys.argv[1], "rb").read()
cut = len(data) * int(sys.argv[2]) // int(sys.argv[3])
u = msgpack.Unpacker(raw=True, strict_map_key=False, max_buffer_size=len(data) + 1)
u.feed(data)
ends = set()
for _ in u:
	ends.add(u.tell())
print(cut - 1 if cut in ends else cut)
PY
) || return 1
	head -c "$n" "$1"
}

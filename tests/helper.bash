# Shared set-up of the bats tests.  SP_BUILD names the build to test
# (build, or build/san for the sanitizer build).
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
	sp-cat "$1" | jq -c "$2"
}

# summary FILE KEY: one counter of a stream's summary record.
summary() {
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

# wait_for_state PID: waits until a process exists and is not stopped.
proc_state() {
	awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null
}

# folded FILE [ARGS]: the stacks of an unwound stream, named by addr2line.
folded() {
	/usr/bin/python3 "$TOP/tests/lib/stacks.py" "$@"
}

# unwind_count FILE KIND: how many stacks of an unwound stream ended so.
unwind_count() {
	sp-cat -t unwind "$1" | jq -r ".ends[] | select(.kind==\"$2\") | .count"
}

# frames FILE: "name|file:line|origin|flags" for every frame record.
frames() {
	sp-cat -t frame "$1" | jq -r '"\(.name)|\(.file // "")\(if .line then ":\(.line)" else "" end)|\(.origin)|\(.flags // 0)|\(.inline // [] | map("\(.name)@\(.line)") | join(","))"'
}

# pipeline OUT WORKLOAD ARGS...: records, unwinds and symbolizes a workload.
symbolized() {
	local out=$1
	shift
	sp-capture -q -o "$out.raw" -- "$@"
	sp-unwind -o "$out.unw" "$out.raw"
	sp-symbolize -o "$out" "$out.unw"
}

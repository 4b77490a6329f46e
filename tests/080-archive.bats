#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Exact images and cross-host workflows: sp-capture --archive, the
# archive used by sp-unwind and sp-symbolize, debuginfod, a byte pipe.

load helper

setup() {
	W=$BATS_TEST_TMPDIR/host	# the recording host's files
	A=$BATS_TEST_TMPDIR/archive
	R=$BATS_TEST_TMPDIR/rec.sps
	mkdir -p "$W/lib"
	# The workload with its own loader and libraries, all under $W, so
	# that hiding $W hides every file the recording mapped.
	cp "$WORKLOADS/spin" "$WORKLOADS/deep" "$W/"
	for l in ld-linux-x86-64.so.2 libc.so.6 libm.so.6; do
		cp "$(ldd "$WORKLOADS/spin" | awk -v l=$l '$1 ~ l || $1 ~ "/"l { print ($3 ? $3 : $1) }' | head -n 1)" "$W/lib/$l"
	done
}

# A debuginfod server left running by a failed test would keep bats
# waiting for it.
teardown() {
	[ -z "${DPID:-}" ] || kill "$DPID" 2>/dev/null || true
}

# run_host PROG ARGS...: runs a program of $W with $W's loader and libraries.
run_host() {
	"$W/lib/ld-linux-x86-64.so.2" --library-path "$W/lib" "$@"
}

# local_fold RAW: the folded output of the local pipeline.
local_fold() {
	local -
	set -o pipefail
	sp-unwind "$1" | sp-symbolize --kallsyms none | sp-fold
}

@test "record and archive, hide every original file, get the same folded output" {
	sp-capture -q --archive "$A" -o "$R" -- "$W/lib/ld-linux-x86-64.so.2" --library-path "$W/lib" "$W/spin" 0.5
	local_fold "$R" > "$BATS_TEST_TMPDIR/local.folded"
	grep -q 'leaf_compute' "$BATS_TEST_TMPDIR/local.folded"
	# The stream says what was archived; nothing is stored twice.
	[ "$(sp-cat -t archive "$R" | jq -r 'select(.kind=="module") | .path' | sort | tr '\n' ' ')" = \
	  "$W/lib/ld-linux-x86-64.so.2 $W/lib/libc.so.6 $W/lib/libm.so.6 $W/spin " ]
	[ -f "$A/kallsyms" ]
	# The other host: the recording host's files are gone.
	mv "$W" "$W.gone"
	sp-unwind "$R" | sp-symbolize --kallsyms none | sp-fold > "$BATS_TEST_TMPDIR/noarch.folded"
	run -1 grep -q 'leaf_compute' "$BATS_TEST_TMPDIR/noarch.folded"
	sp-unwind --archive "$A" "$R" | sp-symbolize --kallsyms none --archive "$A" | sp-fold > "$BATS_TEST_TMPDIR/remote.folded"
	diff "$BATS_TEST_TMPDIR/local.folded" "$BATS_TEST_TMPDIR/remote.folded"
	mv "$W.gone" "$W"
}

@test "the same, with the originals hidden in a private mount namespace" {
	command -v unshare
	sp-capture -q --archive "$A" -o "$R" -- "$W/lib/ld-linux-x86-64.so.2" --library-path "$W/lib" "$W/spin" 0.5
	local_fold "$R" > "$BATS_TEST_TMPDIR/local.folded"
	unshare -m sh -c "mount -t tmpfs none '$W' && [ ! -e '$W/spin' ] &&
		sp-unwind --archive '$A' '$R' | sp-symbolize --kallsyms none --archive '$A' | sp-fold" > "$BATS_TEST_TMPDIR/remote.folded"
	diff "$BATS_TEST_TMPDIR/local.folded" "$BATS_TEST_TMPDIR/remote.folded"
	[ -e "$W/spin" ]
}

@test "a binary deleted after capture still unwinds and symbolizes from the archive" {
	sp-capture -q --archive "$A" -o "$R" -- "$W/spin" 0.3
	rm "$W/spin"
	sp-unwind --archive "$A" -o "$R.unw" "$R"
	[ "$(unwind_count "$R.unw" missing_module)" -eq 0 ]
	sp-symbolize --archive "$A" -o "$R.sym" "$R.unw"
	frames "$R.sym" | grep -q '^stage_c|'
}

@test "a binary replaced by another build while the recording runs: both right" {
	sp-capture -q --inherit --archive "$A" -o "$R" -- sh -c "
		'$W/spin' -t 1 1 & sleep 0.3
		cp '$W/deep' '$W/spin.new' && mv '$W/spin.new' '$W/spin'
		'$W/spin' 0.5; wait"
	sp-cat -t archive "$R" | jq -r 'select(.kind=="module") | .file' | grep -c build-id > "$BATS_TEST_TMPDIR/n"
	[ "$(cat "$BATS_TEST_TMPDIR/n")" -ge 2 ]
	mv "$W/spin" "$W/spin.gone"
	sp-unwind --archive "$A" "$R" | sp-symbolize --archive "$A" | sp-fold --pid > "$BATS_TEST_TMPDIR/f"
	# The first process ran the old binary, the second the new one.
	grep -q '^spin-[0-9]*;.*leaf_compute' "$BATS_TEST_TMPDIR/f"
	grep -q '^spin-[0-9]*;.*deep_recurse' "$BATS_TEST_TMPDIR/f"
	run -1 grep -q 'deep_recurse.*leaf_compute\|leaf_compute.*deep_recurse' "$BATS_TEST_TMPDIR/f"
}

@test "a library upgraded in place: a mismatch without --archive, right with it" {
	sp-capture -q --archive "$A" -o "$R" -- "$W/lib/ld-linux-x86-64.so.2" --library-path "$W/lib" "$W/spin" 0.3
	# The upgrade: another build at the same path.
	cp "$W/lib/libc.so.6" "$W/lib/libm.so.6.new"
	mv "$W/lib/libm.so.6.new" "$W/lib/libm.so.6"
	sp-unwind -o "$R.unw" "$R"
	[ "$(unwind_count "$R.unw" build_id_mismatch)" -gt 0 ]
	sp-unwind --archive "$A" -o "$R.unw2" "$R"
	[ "$(unwind_count "$R.unw2" build_id_mismatch)" -eq 0 ]
	sp-symbolize --archive "$A" --kallsyms none "$R.unw2" | sp-fold | grep -q '__cos_fma'
}

@test "the perf map of a process that exited before symbolization comes from the archive" {
	PY=$(python312)
	sp-capture -q --archive "$A" -o "$R" -- "$PY" -X perf "$TOP/tests/workloads/pywork.py" 0.5
	pid=$(jqs "$R" 'select(.t=="process") | .pid')
	start=$(jqs "$R" 'select(.t=="process") | .start_time')
	[ -f "$A/perf-maps/perf-$pid-$start.map" ]
	rm -f "/tmp/perf-$pid.map"
	sp-unwind "$R" | sp-symbolize --archive "$A" | sp-fold > "$BATS_TEST_TMPDIR/f"
	grep -q 'py::py_inner:' "$BATS_TEST_TMPDIR/f"
	# Without the archive the names are gone with the file.
	sp-unwind "$R" | sp-symbolize | sp-fold > "$BATS_TEST_TMPDIR/g"
	run -1 grep -q 'py::py_inner:' "$BATS_TEST_TMPDIR/g"
}

@test "files without a build-id get a content identity and are verified by it" {
	gcc -O2 -g -Wl,--build-id=none -o "$W/nobid" "$TOP/tests/workloads/deep.c"
	run -0 readelf -n "$W/nobid"
	run -1 grep -q 'Build ID' <<< "$output"
	sp-capture -q --archive "$A" -o "$R" -- "$W/nobid" 0.3
	cid=$(sp-cat -t map "$R" | jq -r "select(.path==\"$W/nobid\") | .content_id[\"\$bin\"]" | head -n 1)
	[ "$(echo "$cid" | base64 -d | od -An -tx1 | tr -d ' \n')" = "$(sha1sum "$W/nobid" | cut -c1-40)" ]
	mv "$W/nobid" "$W/nobid.gone"
	sp-unwind --archive "$A" "$R" | sp-symbolize --archive "$A" | sp-fold | grep -q 'deep_recurse'
	# A different file at the path is refused by its content.
	cp "$W/spin" "$W/nobid"
	sp-unwind --allow-empty -o "$R.unw" "$R"
	[ "$(unwind_count "$R.unw" build_id_mismatch)" -gt 0 ]
}

@test "a debuginfod server indexing the archive serves a host without the files" {
	command -v debuginfod
	sp-capture -q --archive "$A" -o "$R" -- "$W/spin" 0.3
	sp-unwind -o "$R.unw" "$R"
	local_names=$(sp-symbolize --kallsyms none "$R.unw" | sp-fold)
	mv "$W/spin" "$W/spin.gone"
	port=$((20000 + RANDOM % 20000))
	debuginfod -F "$A" -p "$port" -d "$BATS_TEST_TMPDIR/db.sqlite" > "$BATS_TEST_TMPDIR/dlog" 2>&1 3>&- &
	DPID=$!
	# Wait for the first scan to finish: every archived file served.
	# (A client that asks too early remembers the miss for minutes.)
	for f in $(cd "$A/.build-id" && ls */*); do
		id=${f%.debug}
		id=${id/\//}
		what=executable
		[ "$f" = "${f%.debug}" ] || what=debuginfo
		for i in $(seq 300); do
			curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$id/$what" && break
			sleep 0.1
		done
	done
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$BATS_TEST_TMPDIR/cache" \
		sp-symbolize --kallsyms none --debug-dir /nonexistent "$R.unw" | sp-fold > "$BATS_TEST_TMPDIR/f"
	kill "$DPID"
	[ "$(cat "$BATS_TEST_TMPDIR/f")" = "$local_names" ]
}

@test "the stages split over a byte pipe between processes that share only the stream" {
	port=$((20000 + RANDOM % 20000))
	socat -u "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" - | sp-unwind | sp-symbolize --kallsyms none | sp-fold > "$BATS_TEST_TMPDIR/f" &
	L=$!
	sleep 0.3
	sp-capture -q -- "$WORKLOADS/spin" 0.5 | socat -u - "TCP:127.0.0.1:$port"
	wait $L
	grep -q '^spin;.*leaf_compute' "$BATS_TEST_TMPDIR/f"
	total=$(awk '{ s += $NF } END { print s }' "$BATS_TEST_TMPDIR/f")
	[ "$total" -gt 100 ]
}

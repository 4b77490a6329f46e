#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Processes in containers: their own mount and PID namespaces (unshare),
# their binary on a tmpfs that only their namespace has, and at the same
# path on the host another program, so that a lookup by host path finds
# the wrong file and a build-id check must refuse it.

load helper

setup() {
	BOX=$BATS_TEST_TMPDIR/box	# the container's private tmpfs goes over it
	R=$BATS_TEST_TMPDIR/rec.sps
	S=$BATS_TEST_TMPDIR/sym.sps
	A=$BATS_TEST_TMPDIR/archive
	mkdir -p "$BOX"
	# The host's file at the path the container maps: another program.
	cp "$WORKLOADS/spin" "$BOX/deep"
	U= C=
}

teardown() {
	# The container's init ignores every signal from outside but SIGKILL.
	[ -z "$C" ] || kill -KILL "$C" 2>/dev/null || true
	[ -z "$U" ] || wait "$U" 2>/dev/null || true
}

# box SCRIPT COMM: runs sh -c SCRIPT in new mount and PID namespaces (its
# last command exec'd, so it is pid 1 there) and waits until the process,
# whose host pid goes to C, has a name that starts with COMM.
box() {
	unshare --mount --pid --fork --mount-proc sh -c "$1" &
	U=$!
	local i
	for i in $(seq 100); do
		C=$(pgrep -P "$U" || true)
		case $(cat "/proc/$C/comm" 2>/dev/null) in "$2"*) return 0 ;; esac
		sleep 0.05
	done
	return 1
}

# box_deep SECONDS: the deep workload, 30 frames deep, from the container's tmpfs.
box_deep() {
	box "mount -t tmpfs ${2:-} none '$BOX' && cp '$WORKLOADS/deep' '$BOX/deep' &&
	     exec '$BOX/deep' -d 30 $1" deep
}

# live ARGS: sp-capture -p $C ARGS | sp-unwind | sp-symbolize into $S,
# the unwound stream kept in $BATS_TEST_TMPDIR/u.sps.
live() {
	local -
	set -o pipefail
	sp-capture -q -p "$C" -F 999 "$@" | sp-unwind | tee "$BATS_TEST_TMPDIR/u.sps" |
		sp-symbolize --kallsyms none > "$S"
}

# hex_build_id FILE: the GNU build-id of an ELF file, in hex.
hex_build_id() {
	readelf -n "$1" | awk '/Build ID/ { print $3 }'
}

# deep_ratio FILE: per mille of the samples whose stack is the whole deep chain.
deep_ratio() {
	local -
	set -o pipefail
	sp-fold "$1" | awk '{ n = $NF; all += n; s = $0 }
		gsub(/deep_recurse;/, "", s) == 30 && s ~ /^deep;main;deep_leaf[; ]/ { good += n }
		END { print all ? int(good * 1000 / all) : 0 }'
}

@test "a process whose binary only its mount namespace has is unwound and named live" {
	box_deep 5
	live --duration 2
	# The process record says where its files are.
	run -0 jqs "$S" "select(.t==\"process\" and .pid==$C) | [.nspid, .mntns]"
	[ "$(jq -r '.[0]' <<< "$output")" = 1 ]
	mntns=$(jq -r '.[1]' <<< "$output")
	[ "$mntns" -gt 0 ]
	[ "$mntns" != "$(stat -L -c %i /proc/self/ns/mnt)" ]
	# The build-id recorded is the container's file, not the host's.
	run -0 jqs "$S" "select(.t==\"map\" and .pid==$C and .path==\"$BOX/deep\") | .build_id[\"\$bin\"]"
	[ "${#lines[@]}" -ge 1 ]
	[ "$(base64 -d <<< "${lines[0]//\"/}" | xxd -p | tr -d '\n')" = "$(hex_build_id "$WORKLOADS/deep")" ]
	[ "$(hex_build_id "$BOX/deep")" != "$(hex_build_id "$WORKLOADS/deep")" ]
	# Complete stacks, named, and no module missing or refused.
	[ "$(summary "$S" samples)" -gt 500 ]
	[ "$(deep_ratio "$S")" -ge 900 ]
	run -0 jqs "$S" 'select(.t=="unwind") | .ends[] | select(.kind=="missing_module" or .kind=="build_id_mismatch") | .count'
	[ "$output" = "$(printf '0\n0')" ]
	[ "$(jqs "$S" 'select(.t=="symbolize") | [.modules_missing, .modules_mismatched]')" = '[0,0]' ]
}

@test "the unwinder refuses the host's file at the container's path once the container is gone" {
	box_deep 2
	run -0 sp-capture -q -p "$C" -F 999 --duration 1 -o "$R"
	wait "$U"
	C= U=
	sp-unwind --allow-empty "$R" > "$BATS_TEST_TMPDIR/u.sps"
	[ "$(jqs "$BATS_TEST_TMPDIR/u.sps" 'select(.t=="unwind") | .modules_mismatched')" -ge 1 ]
	run -0 jqs "$BATS_TEST_TMPDIR/u.sps" 'select(.t=="unwind") | .ends[] | select(.kind=="build_id_mismatch") | .count'
	[ "$output" -gt 100 ]
}

@test "--archive keeps the container's binary under its build-id for an offline unwind" {
	box_deep 4
	run -0 sp-capture -q -p "$C" -F 999 --duration 2 --archive "$A" -o "$R"
	kill -KILL "$C"
	wait "$U" || true
	C= U=
	# Kept by its build-id, read from the container's tmpfs, gone now.
	bid=$(hex_build_id "$WORKLOADS/deep")
	[ -f "$A/.build-id/${bid:0:2}/${bid:2}" ]
	cmp "$A/.build-id/${bid:0:2}/${bid:2}" "$WORKLOADS/deep"
	run -0 jqs "$R" "select(.t==\"archive\" and .path==\"$BOX/deep\") | .file"
	[ "$output" = "\".build-id/${bid:0:2}/${bid:2}\"" ]
	sp-unwind --module-dir "$A" "$R" > "$BATS_TEST_TMPDIR/u.sps"
	sp-symbolize --kallsyms none --module-dir "$A" "$BATS_TEST_TMPDIR/u.sps" > "$S"
	[ "$(deep_ratio "$S")" -ge 900 ]
	[ "$(jqs "$S" 'select(.t=="symbolize") | [.modules_missing, .modules_mismatched]')" = '[0,0]' ]
}

@test "a perf map in the container's own /tmp names its JIT frames, live and archived" {
	PY=$(python312)
	[ -n "$PY" ]	# pyenv provides a Python 3.12 or later on these machines
	# Its own /tmp: the map it writes, /tmp/perf-1.map there, is not the
	# host's.  The script is read before the tmpfs hides /tmp, where the
	# source tree itself may lie.
	box "py=\$(cat '$TOP/tests/workloads/pywork.py') && mount -t tmpfs none /tmp &&
	     printf '%s\n' \"\$py\" > /tmp/pywork.py && exec '$PY' -X perf /tmp/pywork.py 6" python3
	for i in $(seq 100); do
		[ -s "/proc/$C/root/tmp/perf-1.map" ] && break
		sleep 0.05
	done
	live --duration 2 --archive "$A"
	[ "$(jqs "$S" "select(.t==\"process\" and .pid==$C) | .nspid")" = 1 ]
	run -0 sp-fold "$S"
	[[ "$output" == *py_outer*py_middle*py_inner* ]]
	[ "$(jqs "$S" 'select(.t=="symbolize") | .perf_maps_loaded')" -ge 1 ]
	[ "$(jqs "$S" 'select(.t=="symbolize") | .origins["perf-map"]')" -ge 3 ]
	# The archive kept the map by the host pid: an offline run names the same frames.
	run -0 jqs "$S" 'select(.t=="archive" and .kind=="perf-map") | .path'
	[ "$output" = "\"/proc/$C/root/tmp/perf-1.map\"" ]
	kill -KILL "$C"
	wait "$U" || true
	C= U=
	sp-symbolize --kallsyms none --archive "$A" "$BATS_TEST_TMPDIR/u.sps" > "$BATS_TEST_TMPDIR/again.sps"
	run -0 sp-fold "$BATS_TEST_TMPDIR/again.sps"
	[[ "$output" == *py_outer*py_middle*py_inner* ]]
}

@test "a container whose files cannot be read: one line naming the cause and the fix" {
	box_deep 20 "-o mode=0700"
	D=$(shared_tmpdir)
	# Privileged enough to sample it, but not to look into its root's directories.
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=+perfmon,+sys_ptrace --ambient-caps=+perfmon,+sys_ptrace \
		sp-capture -q -p "$C" --duration 0.5 -o "$D/rec.sps"
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "sp-capture: cannot read the files of process $C in its own mount namespace: '/proc/$C/root$BOX/deep': Permission denied (run sp-capture as root, or give it CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)" ]]
	# Counted in the stream, too.
	[ "$(sp-cat -t summary "$D/rec.sps" | jq '.error_stats[] | select(.kind=="build_id_unreadable") | .count')" -ge 1 ]
	# Recorded by root, symbolized by a user who may not look into the root.
	sp-capture -q -p "$C" --duration 0.5 -o "$D/root.sps"
	chmod 644 "$D/root.sps"
	# Nothing can be unwound or named: the tools say so and exit 1.
	run -1 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=+sys_ptrace --ambient-caps=+sys_ptrace \
		bash -c 'set -o pipefail; sp-unwind "$1" | sp-symbolize --kallsyms none > "$2"' \
		sh "$D/root.sps" "$D/sym.sps"
	# One line on the cause from each tool, in either order: they run side
	# by side; then each says what it could not do.
	[ "$(grep -c "cannot read '$BOX/deep'" <<< "$output")" -eq 2 ]
	[[ "$output" == *"sp-unwind: no stack is complete"* ]]
	[[ "$output" == *"sp-symbolize: cannot read '$BOX/deep' as process $C maps it (/proc/$C/root, map_files): Permission denied (run sp-symbolize as root, or give it CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)"* ]]
	[[ "$output" == *"sp-unwind: cannot read '$BOX/deep' as process $C maps it (/proc/$C/root, map_files): Permission denied (run sp-unwind as root, or give it CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)"* ]]
	rm -rf "$D"
}

@test "a jitdump written in the container's own /tmp is carried in the stream and names JIT code" {
	# The script is read before its own /tmp hides the host's.
	box "js=\$(cat '$TOP/tests/workloads/jitchurn.js') && mount -t tmpfs none /tmp &&
	     printf '%s\n' \"\$js\" > /tmp/hot.js && cd /tmp &&
	     exec node --perf-prof /tmp/hot.js 6000 > /dev/null" node
	for i in $(seq 100); do
		[ -s "/proc/$C/root/tmp/jit-1.dump" ] && break
		sleep 0.05
	done
	live --duration 3
	# Announced under the pid node has in its namespace, read from its root.
	run -0 jqs "$S" "select(.t==\"jitdump\" and .pid==$C) | .path"
	[ "${#lines[@]}" -ge 1 ]
	[ "${lines[0]}" = '"/tmp/jit-1.dump"' ]
	[ "$(jqs "$S" 'select(.t=="symbolize") | .origins.jitdump')" -ge 10 ]
	run -0 sp-fold "$S"
	[[ "$output" == *hotLoop* ]]
}

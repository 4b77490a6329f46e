#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Hardening: faults, load, untrusted input, privileges, valgrind.

load helper

setup() {
	R=$BATS_TEST_TMPDIR/rec.sps
}

teardown() {
	[ -z "${P:-}" ] || kill -KILL "$P" 2>/dev/null || true
}

@test "the target killed with SIGKILL mid-recording: a complete stream" {
	"$WORKLOADS/spin" 30 > /dev/null &
	P=$!
	disown
	sleep 0.2
	sp-capture -q -o "$R" -p "$P" &
	c=$!
	sleep 0.5
	kill -KILL "$P"
	st=0
	wait $c || st=$?
	[ "$st" -eq 0 ]
	run sp-cat -t summary "$R"
	[ "$status" -eq 0 ]
	[ "$(summary "$R" samples)" -gt 0 ]
	sp-unwind "$R" | sp-symbolize | sp-fold | grep -q leaf_compute
}

@test "sp-capture killed with SIGKILL: every tool processes the complete records and reports the cut" {
	sp-capture -q -o "$R" --poll-ms 20 -- "$WORKLOADS/spin" 30 &
	c=$!
	sleep 1
	kill -KILL $c
	wait $c || true
	pkill -KILL -f "$WORKLOADS/spin 30" || true
	run --separate-stderr sp-cat "$R"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"cut short"* || "$stderr" == *"stream ends inside a record"* ]]
	n=$(sp-cat -t sample "$R" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ]
	run --separate-stderr sp-unwind -o "$R.unw" "$R"
	[ "$status" -eq 1 ]
	[ "$(sp-cat -t sample "$R.unw" 2>/dev/null | wc -l)" -eq "$n" ]
	run --separate-stderr sp-symbolize -o "$R.sym" "$R.unw"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"cut short"* ]]
	run --separate-stderr sp-fold "$R.sym"
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "${lines[@]}" | awk '{ s += $NF } END { print s }')" -eq "$n" ]
	run sp-stat "$R.sym"
	[ "$status" -eq 1 ]
	[[ "$output" == *"CUT SHORT"* ]]
}

@test "a downstream tool killed: sp-capture stops with a message, the target runs on" {
	"$WORKLOADS/spin" 30 > /dev/null &
	P=$!
	disown
	sleep 0.2
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	sp-unwind < "$BATS_TEST_TMPDIR/fifo" > /dev/null &
	u=$!
	sp-capture -p "$P" > "$BATS_TEST_TMPDIR/fifo" 2> "$BATS_TEST_TMPDIR/err" &
	c=$!
	sleep 0.5
	kill -KILL $u
	st=0
	wait $c || st=$?
	[ "$st" -eq 2 ]
	grep -q "Broken pipe" "$BATS_TEST_TMPDIR/err"
	kill -0 "$P"
	[ "$(proc_state "$P")" != T ]
}

@test "sp-capture stopped with SIGSTOP for seconds: losses counted, nothing else breaks" {
	sp-capture -q -o "$R" --mmap-pages 64 -- "$WORKLOADS/spin" 4 &
	c=$!
	sleep 0.5
	kill -STOP $c
	sleep 2.5
	kill -CONT $c
	wait $c
	run sp-cat -t summary "$R"
	[ "$status" -eq 0 ]
	lost=$(summary "$R" lost_events)
	[ "$lost" -gt 0 ]
	# The stream's lost records and the kernel's own count agree.
	records=$(jqs "$R" 'select(.t=="lost") | .lost' | awk '{ s += $1 } END { print s + 0 }')
	[ "$records" -gt 0 ]
	[ "$lost" -ge "$records" ]
	[ "$(summary "$R" lost_samples)" -le "$lost" ]
	sp-unwind "$R" | sp-symbolize | sp-fold | grep -q leaf_compute
	sp-stat "$R" | grep -q "events lost"
}

@test "hundreds of short-lived children with --inherit, all attributed" {
	sp-capture -q -o "$R" -- "$WORKLOADS/forker" -n 300 -v 3 > "$BATS_TEST_TMPDIR/kids"
	grep -q '^children=300$' "$BATS_TEST_TMPDIR/kids"
	[ "$(summary "$R" error_stats | jq '.[] | select(.kind=="unknown_process") | .count')" -eq 0 ]
	forks=$(jqs "$R" 'select(.t=="fork" and .pid != .ppid) | .pid' | sort -u | wc -l)
	[ "$forks" -ge 300 ]
	# Every child sample unwinds in its child's address space.
	sp-unwind -o "$R.unw" "$R"
	[ "$(unwind_count "$R.unw" no_mapping)" -eq 0 ]
	sp-symbolize "$R.unw" | sp-fold --pid | grep -c 'child_spin' > "$BATS_TEST_TMPDIR/n"
	[ "$(cat "$BATS_TEST_TMPDIR/n")" -ge 100 ]
}

@test "a pid reused during the recording gets a new process identity" {
	command -v unshare
	# In a new pid namespace the next pid can be chosen (ns_last_pid).
	unshare -fp --mount-proc sh -c "
		sp-capture -q -o '$R' -- sh -c '
			$WORKLOADS/spin -t 1 0.3 & p=\$!; wait \$p
			echo \$((p - 1)) > /proc/sys/kernel/ns_last_pid
			$WORKLOADS/deep 0.3 & q=\$!; wait \$q
			echo \$p \$q > $BATS_TEST_TMPDIR/pids'"
	read -r p q < "$BATS_TEST_TMPDIR/pids"
	[ "$p" = "$q" ]
	# Two births of the same pid, each followed by its own program.
	[ "$(jqs "$R" "select(.t==\"fork\" and .pid==$p and .pid != .ppid) | .time" | sort -u | wc -l)" -eq 2 ]
	sp-unwind "$R" | sp-symbolize | sp-fold --pid > "$BATS_TEST_TMPDIR/f"
	grep -q "^spin-$p;.*leaf_compute" "$BATS_TEST_TMPDIR/f"
	grep -q "^deep-$p;.*deep_recurse" "$BATS_TEST_TMPDIR/f"
	run -1 grep -q 'leaf_compute.*deep_\|deep_.*leaf_compute' "$BATS_TEST_TMPDIR/f"
}

@test "load: the kernel's maximum rate on every thread of a busy workload, losses counted exactly" {
	# 15 s here; make soak runs it for longer.
	seconds=${SP_LOAD_SECONDS:-15}
	sp-capture -q -F max --force -o "$R" -- "$WORKLOADS/spin" -t 4 "$seconds" &
	c=$!
	# The pipeline keeps up right behind the recorder.
	sleep 1
	timeout $((seconds + 60)) sp-unwind --follow "$R" | sp-symbolize | sp-fold > "$BATS_TEST_TMPDIR/f"
	wait $c
	samples=$(summary "$R" samples)
	[ "$(awk '{ s += $NF } END { print s }' "$BATS_TEST_TMPDIR/f")" -eq "$samples" ]
	records=$(jqs "$R" 'select(.t=="lost") | .lost' | awk '{ s += $1 } END { print s + 0 }')
	lost=$(summary "$R" lost_events)
	kernel=$(summary "$R" lost_samples)
	# Every loss the kernel reported is in the stream: its lost records,
	# and its per-event counts (PERF_FORMAT_LOST) read at the end, which
	# also include losses whose lost record never made it into a buffer.
	# lost_events is the larger of the two, as the format says.
	if [ "$records" -gt "$kernel" ]; then
		[ "$lost" -eq "$records" ]
	else
		[ "$lost" -eq "$kernel" ]
	fi
	# Whatever was lost was also reported by a lost record.
	[ "$kernel" -eq 0 ] || [ "$records" -gt 0 ]
}

@test "untrusted input: paths like /etc/shadow or ../../ yield nothing from a file of another identity" {
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.2
	# Rewrite every mapping to point at files it must not read.
	sp-cat "$R" | sed 's#"path":"[^"]*"#"path":"/etc/shadow"#' | sp-cat --from-json > "$R.evil"
	# No stack can be complete here: best effort (--allow-empty) is asked for.
	sp-unwind --allow-empty -o "$R.unw" "$R.evil"
	[ "$(unwind_count "$R.unw" complete)" -eq 0 ]
	[ "$(sp-cat -t unwind "$R.unw" | jq '.modules_opened')" -eq 0 ]
	sp-cat "$R" | sed 's#"path":"/[^"]*"#"path":"../../../../../etc/passwd"#' | sp-cat --from-json > "$R.evil2"
	sp-unwind --allow-empty -o "$R.unw2" "$R.evil2"
	[ "$(sp-cat -t unwind "$R.unw2" | jq '.modules_opened')" -eq 0 ]
	# The symbolizer the same: no name comes from a file that does not match.
	# (The vDSO's frames are named from its image in the stream, no file:
	# whether a sample falls in the vDSO is left to chance.)
	sp-unwind -o "$R.good" "$R"
	sp-cat "$R.good" | sed 's#"t":"module","id":\([0-9]*\),"path":"[^"]*"#"t":"module","id":\1,"path":"/etc/shadow"#' | sp-cat --from-json > "$R.evil3"
	sp-symbolize --allow-empty --kallsyms none -o "$R.sym" "$R.evil3"
	sp-cat -t module,frame "$R.sym" > "$R.frames"
	jq -s -r '(map(select(.t == "module" and .kind == "vdso") | .id)) as $vdso
		| .[] | select(.t == "frame" and (.module as $m | any($vdso[]; . == $m) | not)) | .origin' \
		"$R.frames" > "$R.origins"
	[ -s "$R.origins" ]
	run -1 grep -qx 'symtab\|dynsym\|debuginfo' "$R.origins"
	[ "$(sp-cat -t symbolize "$R.sym" | jq .modules_missing)" -gt 0 ]
}

@test "untrusted input: a symlink planted in the archive is neither written through nor trusted" {
	A=$BATS_TEST_TMPDIR/archive
	bid=$(readelf -n "$WORKLOADS/spin" | awk '/Build ID/ { print $3 }')
	mkdir -p "$A/.build-id/${bid:0:2}"
	cp "$WORKLOADS/deep" "$BATS_TEST_TMPDIR/victim"
	sum=$(sha1sum < "$BATS_TEST_TMPDIR/victim")
	ln -s "$BATS_TEST_TMPDIR/victim" "$A/.build-id/${bid:0:2}/${bid:2}"
	sp-capture -q --archive "$A" -o "$R" -- "$WORKLOADS/spin" 0.2
	[ "$(sha1sum < "$BATS_TEST_TMPDIR/victim")" = "$sum" ]
	# Used from the archive, the planted file is refused by its build-id.
	cp "$WORKLOADS/spin" "$BATS_TEST_TMPDIR/spin"
	sp-cat "$R" | sed "s#$WORKLOADS/spin#/nonexistent/spin#g" | sp-cat --from-json > "$R.moved"
	sp-unwind --allow-empty --archive "$A" -o "$R.unw" "$R.moved"
	[ "$(unwind_count "$R.unw" build_id_mismatch)" -gt 0 ]
	# Stacks through spin's code end at its frames.  A sample taken
	# outside it (in libc's thread start, before spin's function) may
	# still reach the thread's entry: a few, never most as with the file.
	complete=$(unwind_count "$R.unw" complete)
	total=$(sp-cat -t unwind "$R.unw" | jq '.user_samples')
	[ "$total" -gt 20 ]
	[ $((complete * 20)) -lt "$total" ]
}

@test "no tool after sp-capture needs any privilege" {
	d=$(shared_tmpdir)
	sp-capture -q -o "$d/rec.sps" -- "$WORKLOADS/spin" 0.3
	chmod 644 "$d/rec.sps"
	run as_nobody sh -c "sp-unwind '$d/rec.sps' | sp-symbolize | sp-fold > '$d/out.folded' && sp-stat '$d/rec.sps' > /dev/null"
	[ "$status" -eq 0 ]
	grep -q leaf_compute "$d/out.folded"
	rm -rf "$d"
}

@test "one pipeline under valgrind memcheck: no leaks, no errors" {
	command -v valgrind
	[[ "$SP_BUILD" != */san ]] || SP_VALGRIND_BIN=$TOP/build/bin
	vbin=${SP_VALGRIND_BIN:-$BIN}
	sp-capture -q -o "$R" -- "$WORKLOADS/spin" 0.2
	vg="valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect"
	$vg "$vbin/sp-unwind" -o "$R.unw" "$R"
	$vg "$vbin/sp-symbolize" --kallsyms none -o "$R.sym" "$R.unw"
	$vg "$vbin/sp-fold" -o "$R.folded" "$R.sym"
	$vg "$vbin/sp-cat" "$R.sym" > /dev/null
	$vg "$vbin/sp-stat" "$R.sym" > /dev/null
	grep -q leaf_compute "$R.folded"
}

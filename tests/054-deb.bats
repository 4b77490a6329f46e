#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# make deb: a Debian package built from the tracked files with
# dpkg-buildpackage, which lintian passes without errors, and which holds
# the tools, their man pages and the completion, ready to run.

load helper

@test "make deb: lintian finds no error; the package's tools run from a fresh directory" {
	b=$BATS_TEST_TMPDIR/build
	run -0 make -s -C "$TOP" deb BUILD="$b"
	deb=$(ls "$b"/deb/stackpulse_*.deb)
	[ -f "$deb" ]
	run -0 dpkg-deb -f "$deb" Package Depends
	[[ "$output" == *"Package: stackpulse"* ]]
	[[ "$output" == *libdw1* ]]
	d=$BATS_TEST_TMPDIR/root
	dpkg -x "$deb" "$d"
	local t
	for t in "$BIN"/sp-*; do
		t=${t##*/}
		[ -x "$d/usr/bin/$t" ]
		[ -f "$d/usr/share/man/man1/$t.1.gz" ]
		[ -f "$d/usr/share/bash-completion/completions/$t" ]
	done
	[ -f "$d/usr/share/man/man5/sp-stream.5.gz" ]
	[ -f "$d/usr/share/stackpulse/sp_stream.py" ]
	[ -f "$d/usr/share/doc/stackpulse/copyright" ]
	run -0 "$d/usr/bin/sp-capture" --version
	[[ "${lines[0]}" == "sp-capture "* ]]
	[[ "${lines[1]}" == "License: MIT"* ]]
	# The packaged tools profile and fold like the built ones.
	"$d/usr/bin/sp-capture" -q -o "$BATS_TEST_TMPDIR/rec.sps" -- "$WORKLOADS/spin" 0.3
	"$d/usr/bin/sp-unwind" "$BATS_TEST_TMPDIR/rec.sps" | "$d/usr/bin/sp-symbolize" |
		"$d/usr/bin/sp-fold" > "$BATS_TEST_TMPDIR/out.folded"
	grep -q 'leaf_compute' "$BATS_TEST_TMPDIR/out.folded"
}

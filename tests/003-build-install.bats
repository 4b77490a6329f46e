#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# make install honours PREFIX and DESTDIR and installs the man pages.

load helper

@test "make install puts the tools and man pages under DESTDIR/PREFIX" {
	d=$BATS_TEST_TMPDIR/stage
	# The build under test, with its own flags (nothing is rebuilt).
	san=0
	[[ "$SP_BUILD" != */san ]] || san=1
	make -s -C "$TOP" install BUILD="$SP_BUILD" SAN=$san PREFIX=/opt/sp DESTDIR="$d" > /dev/null
	for t in "$BIN"/sp-*; do
		[ -x "$d/opt/sp/bin/${t##*/}" ]
		[ -f "$d/opt/sp/share/man/man1/${t##*/}.1" ]
	done
	[ -f "$d/opt/sp/share/man/man5/sp-stream.5" ]
	[ -f "$d/opt/sp/share/stackpulse/sp_stream.py" ]
	"$d/opt/sp/bin/sp-cat" "$VECTORS/raw.sps" > /dev/null
}

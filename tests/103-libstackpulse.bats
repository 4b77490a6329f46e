#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# libstackpulse as a user gets it: installed by make install, found by
# pkg-config, exporting exactly what its header declares, each function
# with its section-3 page.

load helper

setup_file() {
	# The build under test, with its own flags (nothing is rebuilt).
	san=0
	[[ "$SP_BUILD" != */san ]] || san=1
	make -s -C "$TOP" install BUILD="$SP_BUILD" SAN=$san PREFIX=/opt/sp \
		DESTDIR="$BATS_FILE_TMPDIR/stage" > /dev/null
}

setup() {
	P=$BATS_FILE_TMPDIR/stage/opt/sp
	LIB=$SP_BUILD/lib/libstackpulse.so
	# The stage's .pc file names /opt/sp: point pkg-config at the stage.
	export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$BATS_FILE_TMPDIR/stage
	SAN_FLAGS=
	[[ "$SP_BUILD" != */san ]] || SAN_FLAGS="-fsanitize=address,undefined"
}

# header_functions: the functions the public headers declare.
header_functions() {
	local -
	set -o pipefail
	cc -E -P -I"$TOP/include" "$TOP/include/stackpulse.h" |
		grep -oE '\bsp_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u
}

# map_functions: the export list of libstackpulse.map.
map_functions() {
	local -
	set -o pipefail
	sed -n '/^global:/,/^local:/p' "$TOP/libcommon/api/libstackpulse.map" |
		grep -oE '\bsp_[a-z0-9_]+' | sort -u
}

# exported FILE: the functions a shared library exports.
exported() {
	local -
	set -o pipefail
	nm -D --defined-only --format=posix "$1" | awk '$2 == "T" { print $1 }' |
		sed 's/@.*//' | sort -u
}

@test "make install puts the library, its headers and stackpulse.pc under DESTDIR/PREFIX" {
	[ -f "$P/include/stackpulse.h" ]
	[ -f "$P/include/stackpulse/errors.h" ]
	[ -f "$P/lib/libstackpulse.a" ]
	[ -x "$P/lib/libstackpulse.so.0.1.0" ]
	[ "$(readlink "$P/lib/libstackpulse.so.0")" = libstackpulse.so.0.1.0 ]
	[ "$(readlink "$P/lib/libstackpulse.so")" = libstackpulse.so.0 ]
	run -0 pkg-config --modversion stackpulse
	[ "$output" = 0.1.0 ]
	run -0 pkg-config --cflags --libs stackpulse
	[[ "$output" == *-lstackpulse* ]]
}

@test "a program built with pkg-config only links the installed shared library and runs" {
	cd "$BATS_TEST_TMPDIR"
	# shellcheck disable=SC2046
	cc -std=c99 -Wall -Wextra -Werror $SAN_FLAGS -o consumer "$TOP/tests/consumer/consumer.c" \
		$(pkg-config --cflags --libs stackpulse)
	run -0 env LD_LIBRARY_PATH="$P/lib" ./consumer "$VECTORS/unwound.sps"
	[[ "${lines[0]}" == "version 0.1.0" ]]
	[[ "${lines[1]}" == "rate 0: "*"(SP_ERR_INVALID)" ]]
	[[ "$output" == *"stacks "[1-9]* ]]
	# The program asked for the installed library by its soname.
	run -0 env LD_LIBRARY_PATH="$P/lib" ldd ./consumer
	[[ "$output" == *"libstackpulse.so.0 => $P/lib/libstackpulse.so.0"* ]]
}

@test "a program built with pkg-config --static links the static library" {
	cd "$BATS_TEST_TMPDIR"
	# Without the shared library beside it, -lstackpulse is the archive.
	cp -a "$P" static && rm static/lib/libstackpulse.so*
	sed -i "s|^prefix=.*|prefix=$PWD/static|; s|^libdir=.*|libdir=$PWD/static/lib|; s|^includedir=.*|includedir=$PWD/static/include|" static/lib/pkgconfig/stackpulse.pc
	# shellcheck disable=SC2046
	PKG_CONFIG_SYSROOT_DIR= PKG_CONFIG_PATH=$PWD/static/lib/pkgconfig \
		cc -std=c99 $SAN_FLAGS -o consumer "$TOP/tests/consumer/consumer.c" \
		$(PKG_CONFIG_SYSROOT_DIR= PKG_CONFIG_PATH=$PWD/static/lib/pkgconfig pkg-config --static --cflags --libs stackpulse)
	run -0 ldd ./consumer
	[[ "$output" != *libstackpulse* ]]
	run -0 ./consumer "$VECTORS/unwound.sps"
	[[ "${lines[0]}" == "version 0.1.0" ]]
}

@test "the shared library exports exactly the functions the header declares, versioned" {
	header_functions > "$BATS_TEST_TMPDIR/header"
	map_functions > "$BATS_TEST_TMPDIR/map"
	exported "$LIB" > "$BATS_TEST_TMPDIR/exported"
	[ "$(lines "$BATS_TEST_TMPDIR/header")" -gt 50 ]
	diff "$BATS_TEST_TMPDIR/header" "$BATS_TEST_TMPDIR/map"
	diff "$BATS_TEST_TMPDIR/header" "$BATS_TEST_TMPDIR/exported"
	# Every exported function carries the version node the map lists it
	# in (STACKPULSE_0.1 for the first ones, later nodes for functions
	# added since); the soname is the major version.
	awk '/^STACKPULSE_[0-9.]+ \{/ { node = $1 } /^\tsp_[a-z0-9_]+;/ { sub(/;/, "", $1); print $1 "@@" node }' \
		"$TOP/libcommon/api/libstackpulse.map" | sort > "$BATS_TEST_TMPDIR/want"
	[ "$(grep -c '@@STACKPULSE_0.1$' "$BATS_TEST_TMPDIR/want")" -gt 50 ]
	run -0 nm -D --defined-only --format=posix "$LIB"
	awk '$2 == "T" { print $1 }' <<< "$output" | sort > "$BATS_TEST_TMPDIR/got"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	run -0 readelf -d "$LIB"
	[[ "$output" == *"Library soname: [libstackpulse.so.0]"* ]]
	# No data symbol and no internal function leaks out.
	run -0 nm -D --defined-only --format=posix "$LIB"
	run -1 grep -vE '^(sp_[a-z0-9_]+@@STACKPULSE_0\.[0-9]+ [Tt]|STACKPULSE_0\.[0-9]+ A) ' <<< "$output"
}

@test "every exported function has a section-3 manual page that man finds" {
	exported "$LIB" > "$BATS_TEST_TMPDIR/exported"
	missing=
	while read -r f; do
		man -M "$P/share/man" -w 3 "$f" > /dev/null 2>&1 || missing="$missing $f"
	done < "$BATS_TEST_TMPDIR/exported"
	[ -z "$missing" ] || { echo "no page:$missing"; false; }
	# A page renders without a warning from man's formatter.
	run -0 env MANWIDTH=80 man --warnings -M "$P/share/man" 3 sp_recorder_new
	[[ "$output" == *sp_recorder_new* ]]
}

@test "the public header stands alone in C99, C11 and C++" {
	cd "$BATS_TEST_TMPDIR"
	printf '#include <stackpulse.h>\nint main(void) { return sp_errno(); }\n' > h.c
	cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$P/include" -c h.c -o h99.o
	cc -std=c11 -pedantic -Wall -Wextra -Werror -I"$P/include" -c h.c -o h11.o
	c++ -Wall -Wextra -Werror -I"$P/include" -x c++ -c h.c -o hxx.o
}

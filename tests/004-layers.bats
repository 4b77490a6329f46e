#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The library's layers (docs/ARCHITECTURE.md): no upward include, each
# tool links only the layers it uses, and the build is incremental.
# (scripts/run-tests runs the library's unit tests, build/unit/sp-unit.)

load helper

@test "check-layers passes on the tree and fails on an include that runs up a layer" {
	run -0 "$TOP/scripts/check-layers" util stream capture unwind sym fold api
	[[ $output == *"7 layers, no upward include"* ]]
	# A copy of the tree with one upward include planted in util/.
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/scripts"
	cp -r "$TOP/libcommon" "$t/"
	cp "$TOP/scripts/check-layers" "$t/scripts/"
	f=$(ls "$t"/libcommon/util/*.c | head -n 1)
	printf '#include "fold/fold.h"\n' >> "$f"
	run -1 "$t/scripts/check-layers" util stream capture unwind sym fold api
	[[ $output == *"util includes a layer above it"*"fold/fold.h"* ]]
	# The tools' header is out of bounds for every layer.
	sed -i '$d' "$f"
	printf '#include "tool.h"\n' >> "$t/libcommon/stream/vocab.c"
	run -1 "$t/scripts/check-layers" util stream capture unwind sym fold api
	[[ $output == *"tool-support header"* ]]
	# A folder that is not a declared layer is reported.
	sed -i '$d' "$t/libcommon/stream/vocab.c"
	mkdir "$t/libcommon/extra"
	run -1 "$t/scripts/check-layers" util stream capture unwind sym fold api
	[[ $output == *"libcommon/extra is not in the list of layers"* ]]
}

# defined_symbols TOOL: the sp_ functions a tool's binary defines.
defined_symbols() {
	local -
	set -o pipefail
	nm --defined-only "$BIN/$1" | awk '$2 ~ /^[TtWw]$/ && $3 ~ /^sp_/ { print $3 }' | sort
}

@test "each tool links only the layers it uses" {
	run -0 defined_symbols sp-cat
	[[ $output == *sp_reader_next* ]]
	[[ $output != *sp_unwinder_new* && $output != *sp_capture* && $output != *sp_fold* && $output != *sp_elf* ]]
	run -0 defined_symbols sp-stat
	[[ $output == *sp_reader_next* ]]
	[[ $output != *sp_unwinder_new* && $output != *sp_capture* ]]
	run -0 defined_symbols sp-capture
	[[ $output == *sp_capture_new* ]]
	# It unwinds the calibration of --stack-size auto with the unwinder.
	[[ $output == *sp_unwinder_new* && $output != *sp_fold* ]]
	run -0 defined_symbols sp-unwind
	[[ $output == *sp_unwinder_new* ]]
	[[ $output != *sp_capture* && $output != *sp_fold* ]]
	run -0 defined_symbols sp-fold
	[[ $output != *sp_unwinder_new* && $output != *sp_capture* ]]
	# Only sp-unwind, which has it as its second engine, links libunwind.
	for t in "$BIN"/sp-*; do
		run -0 readelf -d "$t"
		if [ "${t##*/}" = sp-unwind ]; then
			[[ $output == *libunwind* ]]
		else
			[[ $output != *libunwind* ]]
		fi
	done
}

@test "make install after make compiles nothing" {
	san=0
	[[ "$SP_BUILD" != */san ]] || san=1
	run -0 make -n -C "$TOP" install BUILD="$SP_BUILD" SAN=$san PREFIX=/opt/sp DESTDIR="$BATS_TEST_TMPDIR/stage"
	[[ $output == *"install -m 755"* ]]
	[[ $output != *" -c -o "* && $output != *"ar rcs"* ]]
}

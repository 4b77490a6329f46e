#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Rust programs: stacks named as Rust prints them, with either mangling
# scheme, and stacks of the same programs stripped of their symbols.
# The workload is tests/workloads/rust/rusty.rs, built here by Debian's
# rustc (the one the CI installs) four ways: legacy mangling (1.63's
# default) and -C symbol-mangling-version=v0, each as it is and with
# -C strip=symbols (on 1.63 that links with --strip-all: no .symtab and
# no DWARF, .dynsym and .eh_frame kept).

load helper

# The compiler: Debian's when it is there, whatever newer one may sit
# earlier on PATH.
rustc_bin() {
	if [ -x /usr/bin/rustc ]; then
		echo /usr/bin/rustc
	else
		command -v rustc
	fi
}

setup_file() {
	local rc d=$BATS_FILE_TMPDIR v id
	rc=$(rustc_bin)
	echo "rustc: $rc, $("$rc" --version)" > "$d/rustc-version"
	# opt-level 2 with DWARF; no frame pointers, so that every step is
	# the CFI's; panic=unwind (the default) keeps .eh_frame.
	local -a flags=(--edition 2021 --crate-name rusty -C opt-level=2 -g
			-C force-frame-pointers=no -C panic=unwind)
	for v in legacy v0; do
		local -a m=()
		[ $v = legacy ] || m=(-C symbol-mangling-version=v0)
		"$rc" "${flags[@]}" "${m[@]}" -o "$d/rusty-$v" \
			"$TOP/tests/workloads/rust/rusty.rs"
		# The stripped build gets the plain build's build-id: the code
		# is the same (checked below), and a debug file is found by it.
		id=$(readelf -n "$d/rusty-$v" | awk '/Build ID:/ { print $3 }')
		[ -n "$id" ]
		"$rc" "${flags[@]}" "${m[@]}" -C strip=symbols \
			-C link-arg=-Wl,--build-id=0x"$id" -o "$d/rusty-$v-s" \
			"$TOP/tests/workloads/rust/rusty.rs"
		# The plain build as a debug file, in build-id layout.
		mkdir -p "$d/debug-$v/.build-id/${id:0:2}"
		cp "$d/rusty-$v" "$d/debug-$v/.build-id/${id:0:2}/${id:2}.debug"
	done
	# check.py SYMBOLIZED.json TRUTH.json PROG: reads the JSON lines of a
	# symbolized stream of PROG and of the same unwound stream
	# symbolized with full symbols (the truth; the same file for a plain
	# build), frames matched by address and return-address flag, and
	# prints:
	#   samples complete hot functions fs_names merged bad_starts
	#   wrong_names address_only
	# complete: samples without a marker whose outermost frame is, by the
	# truth, _start; hot: samples whose stack passes through
	# rusty::stage_c; functions: the distinct names the truth gives the
	# frames of PROG in hot stacks; fs_names: the distinct names of its
	# frames there with origin function-start; merged: those of them
	# that the truth names two ways (two functions made one frame);
	# bad_starts: its function-start frames whose offset is not the
	# truth's, so that the function's start is not where its symbol
	# starts; wrong_names: its frames with another origin (a name from a
	# symbol) named otherwise than by the truth; address_only: its
	# address-only frames in hot stacks.
	cat > "$d/check.py" <<'EOF'
import json
import sys


def load(path):
	frames, stacks, samples, modules = {}, {}, [], {}
	with open(path) as f:
		for line in f:
			r = json.loads(line)
			t = r.get("t")
			if t == "frame":
				frames[r["id"]] = r
			elif t == "symstack":
				stacks[r["id"]] = r["frames"]
			elif t == "sample" and "stack" in r:
				samples.append(stacks[r["stack"]])
			elif t == "module":
				modules[r["id"]] = r.get("path", "")
	return frames, samples, modules


sfr, ssam, smod = load(sys.argv[1])
tfr, _, _ = load(sys.argv[2])
prog = sys.argv[3]
# The same address is looked up as itself and, as a return address, less
# one: a frame is matched by both.
truth_at = {(f["addr"], f.get("flags", 0) & 4): f for f in tfr.values()
	    if not f.get("flags", 0) & 8}
mods = {i for i, p in smod.items() if p.rsplit("/", 1)[-1] == prog}
complete = hot = bad_start = wrong = address_only = 0
names, fs_names, checked = set(), {}, set()
for st in ssam:
	fr = [sfr[i] for i in st]
	truth = [truth_at.get((f["addr"], f.get("flags", 0) & 4)) for f in fr]
	if not any(f.get("flags", 0) & 8 for f in fr) and truth[-1] and \
	   truth[-1]["name"] == "_start":
		complete += 1
	if not any(t and t["name"] == "rusty::stage_c" for t in truth):
		continue
	hot += 1
	for f, t in zip(fr, truth):
		if f.get("module") not in mods:
			continue
		names.add(t["name"])
		if f["origin"] == "function-start":
			fs_names.setdefault(f["name"], set()).add(t["name"])
		elif f["origin"] == "address-only":
			address_only += 1
		if f["id"] in checked:
			continue
		checked.add(f["id"])
		if f["origin"] == "function-start":
			bad_start += f.get("offset") != t.get("offset")
		elif f["origin"] != "address-only":
			wrong += f["name"] != t["name"]
merged = sum(len(v) > 1 for v in fs_names.values())
print(len(ssam), complete, hot, len(names), len(fs_names), merged,
      bad_start, wrong, address_only)
EOF
}

setup() {
	D=$BATS_FILE_TMPDIR
	cat "$D/rustc-version" >&2
}

# profile PROG: records $D/PROG for 3 s at 999 Hz and runs the pipeline:
# $D/PROG.unw, $D/PROG.sym, $D/PROG.folded and $D/PROG.json (sp-cat).
profile() {
	local p=$D/$1
	sp-capture -q -F 999 -o "$p.raw" -- "$p" 3 > /dev/null
	sp-unwind -o "$p.unw" "$p.raw"
	sp-symbolize -o "$p.sym" "$p.unw"
	sp-fold "$p.sym" > "$p.folded"
	sp-cat "$p.sym" > "$p.json"
}

# check PROG [TRUTH.json]: check.py's figures for $D/PROG.json, into the
# variables samples complete hot functions fs_names merged bad_starts
# wrong address_only.
check() {
	read -r samples complete hot functions fs_names merged bad_starts wrong address_only \
		< <(python3 "$D/check.py" "$D/$1.json" "${2:-$D/$1.json}" "$1")
	echo "$1: samples $samples complete $complete hot $hot functions $functions" \
	     "function-start names $fs_names merged $merged bad starts $bad_starts" \
	     "wrong names $wrong address-only $address_only" >&2
	[ -n "$address_only" ]
}

# chain FOLDED LEAF: the stack through the workload's chain to LEAF is there.
chain() {
	grep -qF ";rusty::main;rusty::stage_a;rusty::stage_b;rusty::stage_c;$2 " "$1"
}

# plain_common PROG: what both plain builds show.
plain_common() {
	local f=$D/$1.folded
	profile "$1"
	check "$1"
	[ "$samples" -ge 500 ]
	[ $((complete * 100)) -ge $((samples * 95)) ]
	[ $((hot * 100)) -ge $((samples * 90)) ]
	# Every Rust name demangled, without the legacy scheme's hash and
	# without v0's crate disambiguators.
	run -1 grep -qE '(^|;)_(ZN|R)[0-9A-Za-z_]' "$f"
	run -1 grep -qE '::h[0-9a-f]{16}(;| )' "$f"
	run -1 grep -qE 'rusty\[[0-9a-f]+\]' "$f"
	chain "$f" "rusty::shapes;<rusty::Square as rusty::Shape>::area"
	chain "$f" "rusty::shapes;<rusty::Circle as rusty::Shape>::area"
}

@test "Rust, legacy mangling: complete stacks, names as Rust prints them" {
	local f=$D/rusty-legacy.folded
	plain_common rusty-legacy
	chain "$f" "rusty::Worker::spin"
	# The legacy scheme has no type arguments: both instantiations of
	# sum are one name.
	chain "$f" "rusty::sum"
	run -1 grep -qF 'rusty::sum::<' "$f"
	chain "$f" "rusty::apply;rusty::stage_c::{{closure}}"
}

@test "Rust, v0 mangling: complete stacks, generics and closures told apart" {
	local f=$D/rusty-v0.folded
	plain_common rusty-v0
	chain "$f" "<rusty::Worker>::spin"
	chain "$f" "rusty::sum::<u64>"
	chain "$f" "rusty::sum::<u32>"
	chain "$f" "rusty::apply;rusty::stage_c::{closure#0}"
	chain "$f" "rusty::apply;rusty::stage_c::{closure#1}"
	grep -qF 'std::rt::lang_start::<()>::{closure#0};' "$f"
}

# stripped PROG: a stripped build against the truth, which is its own
# unwound stream symbolized with the plain build as its debug file.
stripped() {
	local p=$D/$1-s m=$1
	m=${m#rusty-}
	# Nothing but .dynsym is left to name a function, and the code is
	# the plain build's, byte for byte.
	run -1 grep -qE ' \.(symtab|debug_info) ' <(readelf -SW "$p")
	readelf -SW "$p" | grep -q ' \.eh_frame_hdr '
	objcopy -O binary -j .text "$D/$1" "$D/$1.text"
	objcopy -O binary -j .text "$p" "$p.text"
	cmp "$D/$1.text" "$p.text"
	profile "$1-s"
	sp-symbolize --debug-dir "$D/debug-$m" -o "$p.truth.sym" "$p.unw"
	sp-cat "$p.truth.sym" > "$p.truth.json"
	check "$1" # the plain build's figures, for its count of functions
	local plain=$functions
	check "$1-s" "$p.truth.json"
	[ "$samples" -ge 500 ]
	[ $((complete * 100)) -ge $((samples * 95)) ]
	[ $((hot * 100)) -ge $((samples * 90)) ]
	# The hot functions are frames of their own, named where they start:
	# as many as the plain build has names for (one fewer allowed, for
	# a function sampled in one run and not the other), no two functions
	# made one, every start the truth's.
	[ "$fs_names" -ge $((plain - 1)) ]
	[ "$merged" -eq 0 ]
	[ "$bad_starts" -eq 0 ]
	[ "$address_only" -eq 0 ]
	# No name from a symbol says another function than the truth does.
	[ "$wrong" -eq 0 ]
	grep -qE "^$1-s;([^;]*;)*$1-s\\+0x[0-9a-f]+ " "$p.folded"
	# With the debug file, the same stream is named as the plain build.
	sp-fold "$p.truth.sym" > "$p.truth.folded"
	chain "$p.truth.folded" "rusty::shapes;<rusty::Square as rusty::Shape>::area"
	run -1 grep -qE "$1-s\\+0x" "$p.truth.folded"
}

@test "Rust, legacy mangling, stripped: each hot function a frame of its own, no wrong name" {
	[ -f "$D/rusty-legacy.json" ] || profile rusty-legacy
	stripped rusty-legacy
	chain "$D/rusty-legacy-s.truth.folded" "rusty::apply;rusty::stage_c::{{closure}}"
}

@test "Rust, v0 mangling, stripped: each hot function a frame of its own, no wrong name" {
	[ -f "$D/rusty-v0.json" ] || profile rusty-v0
	stripped rusty-v0
	chain "$D/rusty-v0-s.truth.folded" "rusty::sum::<u32>"
}

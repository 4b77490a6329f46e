#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-stat says, per module file, where its frames' names came from (full
# debug info, symbols only, the Go table, function starts only, nothing)
# and what would name them better, for that module.  Real recordings of
# the reference workload, stripped in several ways; the origins of format
# 1.2 also on streams whose frame records are rewritten, each rewrite
# computed again here, independently of sp-stat.

load helper

setup_file() {
	local d=$BATS_FILE_TMPDIR
	# naming.py STREAM.jsonl: per module file (kind elf), the samples
	# whose stack has a frame in it and those frames by origin, and the
	# class most of them give, as sp-stat's --json should say it.
	cat > "$d/naming.py" <<'EOF'
import json, sys
CLASS = {"debuginfo": "debuginfo", "symtab": "symbols", "dynsym": "symbols",
	 "gopclntab": "gopclntab", "function-start": "function-start", "address-only": "address-only"}
ORDER = ["debuginfo", "symbols", "gopclntab", "function-start", "address-only"]
mods, frames, stacks, out = {}, {}, {}, {}
for line in open(sys.argv[1]):
	r = json.loads(line)
	t = r["t"]
	if t == "header":
		mods, frames, stacks = {}, {}, {}
	elif t == "module":
		mods[r["id"]] = r
	elif t == "frame":
		frames[r["id"]] = r
	elif t == "symstack":
		stacks[r["id"]] = r["frames"]
	elif t == "sample":
		seen = {}
		for fid in stacks.get(r.get("stack"), []):
			f = frames[fid]
			if f.get("flags", 0) & 8 or "module" not in f:
				continue
			m = mods[f["module"]]
			if m.get("kind") != "elf":
				continue
			o = seen.setdefault(m["path"], {})
			o[f["origin"]] = o.get(f["origin"], 0) + 1
		for path, o in seen.items():
			e = out.setdefault(path, {"samples": 0, "origins": {}})
			e["samples"] += 1
			for k, v in o.items():
				e["origins"][k] = e["origins"].get(k, 0) + v
for e in out.values():
	by = {}
	for k, v in e["origins"].items():
		if k in CLASS:
			by[CLASS[k]] = by.get(CLASS[k], 0) + v
	e["class"] = max(ORDER, key=lambda c: (by.get(c, 0), -ORDER.index(c)))
print(json.dumps(out, sort_keys=True))
EOF
	# rewrite.py IN.jsonl OUT.jsonl: the frame records of the spin
	# module get origin function-start, named as sp-symbolize names them;
	# libm becomes a stripped Go program's file, without a build-id,
	# whose frames are named from the Go table; libc's frames have
	# symbols only, from .symtab but for clone3, at the second thread's
	# start, from .dynsym: each of its samples has start_thread above
	# clone3, and the main thread's two of the C library's start-up.
	cat > "$d/rewrite.py" <<'EOF'
import json, sys
byid = {}
with open(sys.argv[2], "w") as out:
	for line in open(sys.argv[1]):
		r = json.loads(line)
		if r["t"] == "header":
			byid = {}
		elif r["t"] == "module":
			base = r["path"].rsplit("/", 1)[-1]
			if base.startswith("libm.so"):
				r["path"] = "/srv/gosvc/gosvc"
				r.pop("build_id", None)
			byid[r["id"]] = base
		elif r["t"] == "frame" and "module" in r and not r.get("flags", 0) & 8:
			base = byid.get(r["module"], "")
			if base == "spin":
				r["origin"] = "function-start"
				r["name"] = "spin+0x%x" % (r.get("offset", 0) + 0x1000)
				for k in ("file", "line", "inline"):
					r.pop(k, None)
			elif base.startswith("libm.so"):
				r["origin"] = "gopclntab"
				r["name"] = "main.hot"
			elif base.startswith("libc.so"):
				r["origin"] = "dynsym" if r["name"] in ("clone3", "__clone3", "clone", "__clone") else "symtab"
				for k in ("file", "line", "inline"):
					r.pop(k, None)
		out.write(json.dumps(r, separators=(",", ":")) + "\n")
EOF
	# One recording of the reference workload, symbolized, for the
	# rewritten streams.
	sp-capture -q -F 999 -o "$d/spin.raw" -- "$WORKLOADS/spin" 1.5
	sp-unwind -o "$d/spin.unw" "$d/spin.raw"
	sp-symbolize -o "$d/spin.sps" "$d/spin.unw"
}

setup() {
	S=$BATS_TEST_TMPDIR/rec.sps
	# The workload's path as the kernel reports its mapping.
	SPIN=$(readlink -f "$WORKLOADS/spin")
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
}

# expected STREAM OUT: naming.py's answer for a stream.
expected() {
	local -
	set -o pipefail
	sp-cat "$1" > "$BATS_TEST_TMPDIR/expected.jsonl"
	python3 "$BATS_FILE_TMPDIR/naming.py" "$BATS_TEST_TMPDIR/expected.jsonl" > "$2"
}

# agrees STREAM: sp-stat's naming of every module file is naming.py's:
# the same samples, the same frames by origin, the same class.
agrees() {
	local -
	set -o pipefail
	expected "$1" "$BATS_TEST_TMPDIR/want"
	sp-stat --json --top 1000 "$1" |
		jq -S '.symbolization.naming.modules | map({(.path): {samples, class,
			origins: (.origins | with_entries(select(.value > 0)))}}) | add' > "$BATS_TEST_TMPDIR/got"
	jq -S . "$BATS_TEST_TMPDIR/want" | diff - "$BATS_TEST_TMPDIR/got"
}

# module_json STREAM PATH: sp-stat's naming entry of one module.
module_json() {
	local -
	set -o pipefail
	sp-stat --json --top 1000 "$1" | jq -c --arg p "$2" '.symbolization.naming.modules[] | select(.path == $p)'
}

# build_id FILE: the GNU build-id of an ELF file, in hexadecimal.
build_id() {
	local -
	set -o pipefail
	readelf -n "$1" | awk '/Build ID:/ { print $3 }'
}

@test "the workload as built: full debug info, no fix, no advice" {
	agrees "$BATS_FILE_TMPDIR/spin.sps"
	module_json "$BATS_FILE_TMPDIR/spin.sps" "$SPIN" > "$BATS_TEST_TMPDIR/m"
	# Its PLT entries have names from the symbol table only.
	jq -e '.class == "debuginfo" and .fixes == [] and .origins.debuginfo * 10 > .frames * 9' "$BATS_TEST_TMPDIR/m"
	# In nearly every sample: the samples of start-up in ld.so aside.
	[ "$(jq .samples "$BATS_TEST_TMPDIR/m")" -ge $(($(summary "$BATS_FILE_TMPDIR/spin.sps" samples) * 9 / 10)) ]
	run -0 sp-stat "$BATS_FILE_TMPDIR/spin.sps"
	report=$output
	[[ "$report" == *"names by module ("*"$SPIN: full debug info"* ]]
	run -1 grep -q 'has no symbols' <<< "$report"
	# No fix under it.
	run -0 grep -A1 -F "$SPIN: full debug info" <<< "$report"
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[1]}" != *"->"* ]]
}

@test "strip --strip-all: the module has no symbols, its own build-id paths in the fix, which works" {
	strip --strip-all -o "$W/spin" "$WORKLOADS/spin"
	id=$(build_id "$W/spin")
	[ ${#id} -eq 40 ]
	symbolized "$S" "$W/spin" 1.5
	agrees "$S"
	module_json "$S" "$W/spin" > "$BATS_TEST_TMPDIR/m"
	# No symbol names its frames: the start of their function does, from
	# .eh_frame_hdr.
	jq -e '.class == "function-start" and .origins["function-start"] * 10 > .frames * 9' "$BATS_TEST_TMPDIR/m"
	jq -e --arg id "$id" '.fixes[0] | contains("--module-dir DIR, the file at DIR/.build-id/\($id[:2])/\($id[2:]),")
		and contains("--debug-dir DIR, its debug file (objcopy --only-keep-debug) at DIR/.build-id/\($id[:2])/\($id[2:]).debug")' "$BATS_TEST_TMPDIR/m"
	jq -e --arg id "$id" '.fixes[1] | contains("DEBUGINFOD_URLS") and contains($id)' "$BATS_TEST_TMPDIR/m"
	# A build of one's own: no distribution package is advised.
	run -1 grep -q 'dpkg' "$BATS_TEST_TMPDIR/m"
	run -0 sp-stat "$S"
	[[ "$output" == *"$W/spin: "*"-> keep the unstripped build"* ]]
	[[ "$output" == *"$W/spin: function starts only (function-start "* ]]
	[[ "$output" == *"diagnosis:"*"- $W/spin has no symbols: of its frames in "*"are function-start"*"-> keep the unstripped build"* ]]
	sp-stat --json "$S" | jq -e --arg p "$W/spin" '[.diagnosis[] | select(.problem | startswith("\($p) has no symbols"))] | length == 1'
	# The fix as it says: the debug file at its build-id path under
	# --debug-dir, or the unstripped file under --module-dir, and the
	# module has full debug info.
	objcopy --only-keep-debug "$WORKLOADS/spin" "$W/spin.debug"
	mkdir -p "$W/debug/.build-id/${id:0:2}" "$W/mods/.build-id/${id:0:2}"
	cp "$W/spin.debug" "$W/debug/.build-id/${id:0:2}/${id:2}.debug"
	cp "$WORKLOADS/spin" "$W/mods/.build-id/${id:0:2}/${id:2}"
	sp-symbolize --debug-dir "$W/debug" -o "$S.dbg" "$S.unw"
	sp-symbolize --module-dir "$W/mods" -o "$S.mod" "$S.unw"
	for f in "$S.dbg" "$S.mod"; do
		module_json "$f" "$W/spin" | jq -e '.class == "debuginfo" and .fixes == []'
		run -0 sp-stat "$f"
		run -1 grep -q 'has no symbols' <<< "$output"
	done
}

@test "strip --strip-debug: symbols only, a fix but no advice" {
	strip --strip-debug -o "$W/spin" "$WORKLOADS/spin"
	symbolized "$S" "$W/spin" 1.5
	agrees "$S"
	module_json "$S" "$W/spin" > "$BATS_TEST_TMPDIR/m"
	jq -e '.class == "symbols" and .origins.symtab > 0 and .origins.debuginfo == 0' "$BATS_TEST_TMPDIR/m"
	jq -e '.fixes[0] | startswith("keep the unstripped build")' "$BATS_TEST_TMPDIR/m"
	run -0 sp-stat "$S"
	[[ "$output" == *"$W/spin: symbols only (symtab 100.0%)"$'\n'*"-> keep the unstripped build"* ]]
	# Names are there: nothing in the diagnosis is about them.
	run -1 grep -q 'has no symbols\|have no name' <<< "$output"
}

@test "a Go program built with -ldflags='-s -w': the Go table, and the unstripped build as the fix" {
	d=$BATS_TEST_TMPDIR/src
	mkdir -p "$d"
	cp "$TOP/tests/workloads/gospin.go" "$d/main.go"
	printf 'module gospin\n\ngo 1.18\n' > "$d/go.mod"
	(
		cd "$d"
		export GOCACHE=$BATS_TEST_TMPDIR/gocache HOME=$BATS_TEST_TMPDIR GOFLAGS=-buildvcs=false
		go build -ldflags='-s -w' -o "$W/gospin" .
	)
	# Neither a symbol table nor DWARF: only the Go table names it.
	readelf -S --wide "$W/gospin" > "$BATS_TEST_TMPDIR/sections"
	run -1 grep -q '\.symtab\|\.debug_info' "$BATS_TEST_TMPDIR/sections"
	grep -q '\.gopclntab' "$BATS_TEST_TMPDIR/sections"
	symbolized "$S" "$W/gospin" 2
	agrees "$S"
	module_json "$S" "$W/gospin" > "$BATS_TEST_TMPDIR/m"
	jq -e '.class == "gopclntab" and .origins.gopclntab * 10 > .frames * 9' "$BATS_TEST_TMPDIR/m"
	jq -e '(.fixes | length) == 1 and (.fixes[0] | startswith("names and lines from the Go table; for full inline and variable info keep the unstripped build (no -ldflags='"'"'-s -w'"'"')"))' "$BATS_TEST_TMPDIR/m"
	run -0 sp-stat "$S"
	[[ "$output" == *"$W/gospin: Go table (gopclntab "*"-> names and lines from the Go table"* ]]
	# Its frames have names: no advice about them, and the runtime is Go's.
	[[ "$output" == *"Go: 1 process"* ]]
	run -1 grep -q 'has no symbols\|have no name' <<< "$output"
}

@test "function-start, the Go table, and symbols from two tables: classed by most frames, the split shown" {
	sp-cat "$BATS_FILE_TMPDIR/spin.sps" > "$BATS_TEST_TMPDIR/in.jsonl"
	python3 "$BATS_FILE_TMPDIR/rewrite.py" "$BATS_TEST_TMPDIR/in.jsonl" "$BATS_TEST_TMPDIR/out.jsonl"
	sps_from_json "$BATS_TEST_TMPDIR/out.jsonl" "$S"
	agrees "$S"
	libc=$(sp-cat -t module "$S" | jq -r 'select(.path | test("/libc\\.so")) | .path')
	[ -n "$libc" ]
	module_json "$S" "$SPIN" | jq -e '.class == "function-start" and .origins["function-start"] == .frames'
	module_json "$S" /srv/gosvc/gosvc > "$BATS_TEST_TMPDIR/go"
	jq -e '.class == "gopclntab" and (.fixes | length) == 1' "$BATS_TEST_TMPDIR/go"
	# No build-id: the unstripped file goes at its path under --root.
	jq -e '.fixes[0] | startswith("names and lines from the Go table; for full inline and variable info keep the unstripped build")
		and contains("--root DIR, the file at DIR/srv/gosvc/gosvc")' "$BATS_TEST_TMPDIR/go"
	# A distribution's file: its debug package, and debuginfod by build-id.
	module_json "$S" "$libc" > "$BATS_TEST_TMPDIR/libc"
	jq -e '.class == "symbols" and .origins.symtab > .origins.dynsym and .origins.dynsym > 0' "$BATS_TEST_TMPDIR/libc"
	jq -e --arg p "$libc" '.fixes == ["install its debug symbols: `dpkg -S \($p)` names its package PKG, then `apt install PKG-dbgsym` (from the debian-debug archive) or `apt install PKG-dbg`",
		"or run sp-symbolize again with DEBUGINFOD_URLS=https://debuginfod.debian.net (or another debuginfod server), which finds its debug file by build-id"]' "$BATS_TEST_TMPDIR/libc"
	run -0 sp-stat "$S"
	[[ "$output" == *"$SPIN: function starts only (function-start 100.0%)"* ]]
	[[ "$output" == *"/srv/gosvc/gosvc: Go table (gopclntab 100.0%)"$'\n'*"-> names and lines from the Go table"* ]]
	[[ "$output" == *"$libc: symbols only (symtab "*"%, dynsym "*"%)"$'\n'*"-> install its debug symbols: \`dpkg -S $libc\`"* ]]
	[[ "$output" == *"symbolization: "*"% address-only, "*"% function-start; missing files"* ]]
	# The function-start module alone gets advice of its own; the Go
	# table and the symbols name their frames.
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	jq -e --arg p "$SPIN" '[.diagnosis[] | select(.problem | test("has no symbols"))] |
		length == 1 and (.[0].problem | startswith("\($p) has no symbols: ") and contains("100.0% are function-start"))
		and (.[0].advice | startswith("keep the unstripped build"))' "$BATS_TEST_TMPDIR/j"
	# The native frames without a name of their own are the function-start ones.
	jq -e '.diagnosis | any(.problem | test("have no name \\(address-only\\) or only their function.s start \\(function-start\\)"))' "$BATS_TEST_TMPDIR/j"
	jq -e '.symbolization | .function_start_pct > 0 and .origins["function-start"] > 0 and .origins.gopclntab > 0' "$BATS_TEST_TMPDIR/j"
	jq -e --arg p "$SPIN" '.symbolization.modules_lacking_symbols | any(.path == $p and .function_start > 0)' "$BATS_TEST_TMPDIR/j"
}

@test "a module recorded by its content, without a build-id: neither build-id paths nor debuginfod" {
	sp-cat "$BATS_FILE_TMPDIR/spin.sps" | python3 -c '
import json, sys
spin = set()
for line in sys.stdin:
	r = json.loads(line)
	if r["t"] == "module" and r["path"] == sys.argv[1]:
		r["content_id"] = r.pop("build_id")
		spin.add(r["id"])
	if r["t"] == "frame" and r.get("module") in spin and not r.get("flags", 0) & 8:
		r["origin"] = "function-start"
	print(json.dumps(r, separators=(",", ":")))' "$SPIN" > "$BATS_TEST_TMPDIR/c.jsonl"
	sps_from_json "$BATS_TEST_TMPDIR/c.jsonl" "$S"
	agrees "$S"
	module_json "$S" "$SPIN" > "$BATS_TEST_TMPDIR/m"
	# Its unstripped build has another content, which sp-symbolize refuses.
	jq -e '.class == "function-start" and .fixes == ["keep the unstripped build and record it instead: a file recorded by its content (sp-capture --archive, as it has no build-id) is never taken for another; or link it with -Wl,--build-id"]' "$BATS_TEST_TMPDIR/m"
}

@test "--check --max-unnamed-pct counts function-start frames, --max-address-only-pct does not" {
	sp-cat "$BATS_FILE_TMPDIR/spin.sps" > "$BATS_TEST_TMPDIR/in.jsonl"
	python3 "$BATS_FILE_TMPDIR/rewrite.py" "$BATS_TEST_TMPDIR/in.jsonl" "$BATS_TEST_TMPDIR/out.jsonl"
	sps_from_json "$BATS_TEST_TMPDIR/out.jsonl" "$S"
	sp-stat --json "$S" > "$BATS_TEST_TMPDIR/j"
	ao=$(jq .symbolization.address_only_pct "$BATS_TEST_TMPDIR/j")
	fs=$(jq .symbolization.function_start_pct "$BATS_TEST_TMPDIR/j")
	# The two thresholds between the address-only share and the unnamed one.
	mid=$(python3 -c "import sys; print(float(sys.argv[1]) + float(sys.argv[2]) / 2)" "$ao" "$fs")
	run -0 sp-stat --check --max-address-only-pct "$mid" "$S"
	run -4 sp-stat --check --max-unnamed-pct "$mid" "$S"
	[[ "$output" == *"check: unnamed "*"% > "* ]]
	run -0 sp-stat --check --max-unnamed-pct 100 "$S"
	run -4 sp-stat --check --max-unnamed-pct 100 "$BATS_FILE_TMPDIR/spin.unw"
	[[ "$output" == *"not symbolized"* ]]
	run -3 sp-stat --max-unnamed-pct 5 "$S"
}

@test "--top: at most N modules, the others counted by class" {
	n=$(sp-stat --json --top 1000 "$BATS_FILE_TMPDIR/spin.sps" | jq '.symbolization.naming.modules | length')
	[ "$n" -ge 3 ]
	sp-stat --json --top 1 "$BATS_FILE_TMPDIR/spin.sps" > "$BATS_TEST_TMPDIR/j"
	jq -e --argjson n "$n" '.symbolization.naming | (.modules | length) == 1 and .others.modules == $n - 1
		and ([.others | .debuginfo, .symbols, .gopclntab, .["function-start"], .["address-only"]] | add) == $n - 1' "$BATS_TEST_TMPDIR/j"
	# Most samples first.
	sp-stat --json --top 1000 "$BATS_FILE_TMPDIR/spin.sps" |
		jq -e '.symbolization.naming.modules | map(.samples) | . == (sort | reverse)'
	run -0 sp-stat --top 1 "$BATS_FILE_TMPDIR/spin.sps"
	[[ "$output" == *"and $((n - 1)) more modules: "* ]]
}

@test "a stream of format 1.1: the report as before, the naming as it names" {
	sp-cat "$BATS_FILE_TMPDIR/spin.sps" | python3 -c '
import json, sys
for line in sys.stdin:
	r = json.loads(line)
	if r["t"] == "header":
		r["version"] = [1, 1]
	if r["t"] == "symbolize":
		r["origins"] = {k: r["origins"].get(k, 0) for k in
			("symtab", "dynsym", "debuginfo", "perf-map", "jitdump", "kallsyms", "address-only")}
	print(json.dumps(r, separators=(",", ":")))' > "$BATS_TEST_TMPDIR/old.jsonl"
	sps_from_json "$BATS_TEST_TMPDIR/old.jsonl" "$S"
	run -0 sp-stat "$S"
	[[ "$output" == *$'\n'"symbolization: "*" frames, "*"% address-only; missing files 0, mismatched 0"$'\n'* ]]
	run -1 grep -q 'function-start\|gopclntab\|Go table' <<< "$output"
	agrees "$S"
	sp-stat --json "$S" | jq -e '.symbolization | .function_start_pct == 0 and .origins.gopclntab == 0 and .origins["function-start"] == 0'
}

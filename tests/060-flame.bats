#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-flame: the frames of the SVG, its options, differential graphs,
# malformed input, well-formed XML, a large input, the self-test kept out
# of the picture, and the picture's script run in headless Chromium.

load helper

setup() {
	# A failing command on the left of a pipe fails the test.
	set -o pipefail
	T=$BATS_TEST_TMPDIR
	# A small profile with what real folded files hold: a CRLF line, blank
	# lines, a stack given twice, a name with spaces and XML characters.
	printf '%s\n' 'main;parse;lex 10' 'main;compute;inner 40'$'\r' '' '   ' \
		'main;parse;tree 20' 'main;parse;lex 20' 'main;compute 10' \
		'main;std::map<int, std::string>::find & co 5' > "$T/p.folded"
	printf '%s\n' 'main;parse;lex 30' 'main;parse;tree 20' 'main;compute;inner 40' \
		'main;old_path;helper 10' > "$T/before.folded"
	printf '%s\n' 'main;parse;lex 60' 'main;parse;tree 20' 'main;compute;inner 15' \
		'main;new_path 5' > "$T/after.folded"
}

# frames SVG: "name|counts|depth|x|y|width|fill|label|class" for each frame.
svgframes() {
	/usr/bin/python3 "$TOP/tests/lib/svgframes.py" "$1" | tr '\t' '|'
}

# well_formed SVG: the file parses as XML.
well_formed() {
	/usr/bin/python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$1"
}

@test "one frame per merged stack prefix, with its title, and widths proportional to counts" {
	run sp-flame -o "$T/p.svg" "$T/p.folded"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	well_formed "$T/p.svg"
	svgframes "$T/p.svg" | cut -d'|' -f1-6,8 > "$T/got"
	cat > "$T/want" <<'EOF'
all|105 samples, 100.00%|0|10.00|98|1180.00|all
main|105 samples, 100.00%|1|10.00|82|1180.00|main
compute|50 samples, 47.62%|2|10.00|66|561.90|compute
inner|40 samples, 38.10%|3|10.00|50|449.52|inner
parse|50 samples, 47.62%|2|571.90|66|561.90|parse
lex|30 samples, 28.57%|3|571.90|50|337.14|lex
tree|20 samples, 19.05%|3|909.05|50|224.76|tree
std::map<int, std::string>::find & co|5 samples, 4.76%|2|1133.81|66|56.19|std::..
EOF
	diff "$T/want" "$T/got"
	# One <g> per frame, each with its <title>; names escaped in the text.
	[ "$(grep -c '<g class="f"' "$T/p.svg")" -eq 8 ]
	[ "$(grep -c '<title>' "$T/p.svg")" -eq 8 ]
	grep -qF '<title>std::map&lt;int, std::string&gt;::find &amp; co (5 samples, 4.76%)</title>' "$T/p.svg"
	grep -qF '<text id="title" x="600" y="24">Flame Graph</text>' "$T/p.svg"
	# Self-contained: no reference to anything outside the file.
	run grep -E '(href|src)=|@import|url\((https?:|//)' "$T/p.svg"
	[ "$status" -eq 1 ]
	# The pipe path writes the same picture to standard output.
	sp-flame < "$T/p.folded" > "$T/pipe.svg"
	cmp "$T/p.svg" "$T/pipe.svg"
	# Several inputs add up; the same stack in both merges.
	sp-flame "$T/p.folded" - < "$T/p.folded" > "$T/twice.svg"
	svgframes "$T/twice.svg" | grep -q '^lex|60 samples, 28.57%|3|571.90|50|337.14|'
}

@test "--inverted draws an icicle graph, root at the top; --title and --width" {
	run sp-flame --inverted --title 'Mine <&> "quoted"' --width 600 "$T/p.folded"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > "$T/i.svg"
	well_formed "$T/i.svg"
	grep -q '<svg version="1.1" width="600" height="148" viewBox="0 0 600 148"' "$T/i.svg"
	grep -qF '<text id="title" x="300" y="24">Mine &lt;&amp;&gt; &quot;quoted&quot;</text>' "$T/i.svg"
	svgframes "$T/i.svg" | cut -d'|' -f1,3,5,6 > "$T/got"
	cat > "$T/want" <<'EOF'
all|0|50|580.00
main|1|66|580.00
compute|2|82|276.19
inner|3|98|220.95
parse|2|82|276.19
lex|3|98|165.71
tree|3|98|110.48
std::map<int, std::string>::find & co|2|82|27.62
EOF
	diff "$T/want" "$T/got"
	sp-flame -i "$T/p.folded" | grep -qF '<text id="title" x="600" y="24">Icicle Graph</text>'
}

@test "--reverse merges each stack leaf first" {
	sp-flame --reverse "$T/p.folded" > "$T/r.svg"
	svgframes "$T/r.svg" | awk -F'|' '$3 <= 1 { print $1 "|" $2 }' > "$T/got"
	cat > "$T/want" <<'EOF'
all|105 samples, 100.00%
compute|10 samples, 9.52%
inner|40 samples, 38.10%
lex|30 samples, 28.57%
std::map<int, std::string>::find & co|5 samples, 4.76%
tree|20 samples, 19.05%
EOF
	diff "$T/want" "$T/got"
	# main, the root of every stack, is now a leaf under each of them.
	[ "$(svgframes "$T/r.svg" | awk -F'|' '$1 == "main" { n++; s += $2 } END { print n, s }')" = "5 105" ]
	svgframes "$T/r.svg" | grep -q '^parse|30 samples, 28.57%|2|571.90|66|'
	svgframes "$T/r.svg" | grep -q '^main|30 samples, 28.57%|3|571.90|50|'
}

@test "--minwidth leaves narrow frames out and says how many" {
	printf 'main;big 99999\nmain;tiny;deeper 1\n' > "$T/m.folded"
	sp-flame "$T/m.folded" > "$T/m.svg"
	[ "$(svgframes "$T/m.svg" | cut -d'|' -f1 | tr '\n' ' ')" = "all main big " ]
	grep -q '>2 frames narrower than 0.1 px not drawn</text>' "$T/m.svg"
	sp-flame --minwidth 0 "$T/m.folded" > "$T/m0.svg"
	[ "$(svgframes "$T/m0.svg" | cut -d'|' -f1 | tr '\n' ' ')" = "all main big tiny deeper " ]
	run grep 'not drawn' "$T/m0.svg"
	[ "$status" -eq 1 ]
	# A percentage of the width: 10% of 1180 px is 118 px.
	sp-flame -m 10% "$T/p.folded" > "$T/m10.svg"
	svgframes "$T/m10.svg" > "$T/m10.frames"
	[ "$(lines "$T/m10.frames")" -eq 7 ]
	run grep '^std::map' "$T/m10.frames"
	[ "$status" -eq 1 ]
	grep -q '>1 frame narrower than 118 px not drawn</text>' "$T/m10.svg"
	sp-flame -m 200 "$T/p.folded" > "$T/m200.svg"
	[ "$(svgframes "$T/m200.svg" | cut -d'|' -f1 | tr '\n' ' ')" = "all main compute inner parse lex tree " ]
}

@test "--colors kinds tells kernel, JIT, inline and user frames apart; colours are stable" {
	printf '%s\n' 'java;Interpreter_[j];entry_SYSCALL_64_[k];do_syscall_64_[k] 5' \
		'java;LFoo::bar_[j];inlined_[i] 4' 'java;LBaz::qux_[j] 3' \
		'java;main;read_[k] 2' 'java;main 1' > "$T/k.folded"
	sp-flame --colors kinds "$T/k.folded" > "$T/k.svg"
	well_formed "$T/k.svg"
	svgframes "$T/k.svg" | awk -F'|' '{ print $1, $7 }' > "$T/fills"
	# rgb(r,g,b) of each kind: kernel orange, JIT green, inline aqua, user red.
	grep '_\[k\] ' "$T/fills" | sed 's/.*rgb(\(.*\))/\1/' > "$T/kernel"
	grep '_\[j\] ' "$T/fills" | sed 's/.*rgb(\(.*\))/\1/' > "$T/jit"
	[ "$(lines "$T/kernel")" -eq 3 ]
	[ "$(lines "$T/jit")" -eq 3 ]
	awk -F, '!($1 >= 190 && $2 >= 90 && $2 <= 155 && $3 == 0) { exit 1 }' "$T/kernel"
	awk -F, '!($1 <= 110 && $2 >= 200 && $3 <= 110) { exit 1 }' "$T/jit"
	grep -q '^inlined_\[i\] rgb(\([0-9]*\),\([0-9]*\),\2)$' "$T/fills"
	awk -F'[(,)]' '$1 == "main rgb" && !($2 >= 200 && $3 < 200) { exit 1 }' "$T/fills"
	[ -z "$(comm -12 <(sort -u "$T/kernel") <(sort -u "$T/jit"))" ]
	# The default palette: warm colours, the same for the same name.
	sp-flame "$T/k.folded" > "$T/d1.svg"
	sp-flame --colors default "$T/k.folded" > "$T/d2.svg"
	cmp "$T/d1.svg" "$T/d2.svg"
	svgframes "$T/d1.svg" | cut -d'|' -f7 | sed 's/rgb(\(.*\))/\1/' |
		awk -F, '!($1 >= 205 && $2 <= 230 && $3 <= 55) { exit 1 }'
	[ "$(svgframes "$T/d1.svg" | awk -F'|' '$1 == "read_[k]" { print $7 }')" = \
	  "$(sp-flame "$T/p.folded" <(echo 'x;read_[k] 9') | grep -o '<title>read_\[k\] .*' |
	     sed 's/.*fill="\([^"]*\)".*/\1/')" ]
}

@test "--diff: widths after, red grew, blue shrank, vanished frames hatched at their width before" {
	run sp-flame --diff -o "$T/diff.svg" "$T/before.folded" "$T/after.folded"
	[ "$status" -eq 0 ]
	well_formed "$T/diff.svg"
	grep -q '>Differential Flame Graph</text>' "$T/diff.svg"
	svgframes "$T/diff.svg" > "$T/f"
	# Before and after both hold 100 samples; old_path's 10 widen the total to 110.
	grep -qF 'parse|after: 80 samples, 80.00%; before: 50 samples, 50.00%; grew 30.00 points|2|331.82|66|858.18|rgb(255,0,0)|parse|f' "$T/f"
	grep -qF 'compute|after: 15 samples, 15.00%; before: 40 samples, 40.00%; shrank 25.00 points|2|10.00|66|160.91|rgb(35,35,255)|compute|f' "$T/f"
	grep -qF 'tree|after: 20 samples, 20.00%; before: 20 samples, 20.00%; unchanged|3|975.45|50|214.55|rgb(250,250,250)|tree|f' "$T/f"
	grep -qF 'new_path|after: 5 samples, 5.00%; before: 0 samples, 0.00%; grew 5.00 points, new|2|' "$T/f"
	# The paths that vanished are still there, hatched, as wide as before.
	grep -qF 'old_path|after: 0 samples, 0.00%; before: 10 samples, 10.00%; shrank 10.00 points, vanished|2|224.55|66|107.27|url(#hatch)|old_path|f v' "$T/f"
	grep -qF 'helper|after: 0 samples, 0.00%; before: 10 samples, 10.00%; shrank 10.00 points, vanished|3|224.55|50|107.27|url(#hatch)|helper|f v' "$T/f"
	grep -q '<pattern id="hatch"' "$T/diff.svg"
	# Shares, not raw counts: twice the samples after, in the same proportions.
	awk '{ $NF = $NF * 2; print }' "$T/before.folded" > "$T/before2.folded"
	sp-flame --diff "$T/before2.folded" "$T/before.folded" > "$T/same.svg"
	svgframes "$T/same.svg" > "$T/same.frames"
	[ "$(lines "$T/same.frames")" -eq 9 ]
	run grep -v 'unchanged|' "$T/same.frames"
	[ "$status" -eq 1 ]
}

@test "two-count lines (difffolded.pl) draw the same differential graph as --diff" {
	sp-flame --diff "$T/before.folded" "$T/after.folded" > "$T/diff.svg"
	# The columns of difffolded.pl: STACK BEFORE AFTER, a 0 where a stack is missing.
	join -a1 -a2 -e 0 -o 0,1.2,2.2 <(sort "$T/before.folded") <(sort "$T/after.folded") \
		> "$T/two.folded"
	grep -qx 'main;old_path;helper 10 0' "$T/two.folded"
	grep -qx 'main;new_path 0 5' "$T/two.folded"
	run sp-flame -o "$T/two.svg" "$T/two.folded"
	[ "$status" -eq 0 ]
	cmp "$T/diff.svg" "$T/two.svg"
	sp-flame < "$T/two.folded" | cmp - "$T/diff.svg"
	# In a file of two counts a line, a line of one count is skipped.
	{ cat "$T/two.folded"; echo 'main;odd 7'; } > "$T/two-bad.folded"
	run sp-flame -o "$T/two-bad.svg" "$T/two-bad.folded"
	[ "$status" -eq 1 ]
	[ "$output" = "sp-flame: '$T/two-bad.folded': skipped 1 malformed line; the first, line 6: one count in a file of two counts a line" ]
	cmp "$T/diff.svg" "$T/two-bad.svg"
	# Files of one and of two counts a line do not mix.
	run sp-flame -o "$T/mixed.svg" "$T/p.folded" "$T/two.folded"
	[ "$status" -eq 2 ]
	[[ "$output" == *"some inputs have one count a line and some two"* ]]
	run sp-flame --diff "$T/two.folded" "$T/after.folded"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'$T/two.folded' has two counts a line: --diff takes two files of one count a line"* ]]
}

@test "malformed lines are skipped and counted; the rest is drawn" {
	printf '%s\n' 'main;a 3' 'no count here' 'main;b 1.5' '42' 'main;c -2' '  7' \
		'main;;a; 2' ';; 1' 'main;b 2' > "$T/bad.folded"
	run sp-flame -o "$T/bad.svg" "$T/bad.folded"
	[ "$status" -eq 1 ]
	[ "$output" = "sp-flame: '$T/bad.folded': skipped 6 malformed lines; the first, line 2: no count at the end of the line" ]
	well_formed "$T/bad.svg"
	[ "$(svgframes "$T/bad.svg" | cut -d'|' -f1,2 | tr '\n' ' ')" = \
	  "all|7 samples, 100.00% main|7 samples, 100.00% a|5 samples, 71.43% b|2 samples, 28.57% " ]
	run sp-flame -o /dev/null <<< 'main;b 1.5'
	[ "$status" -eq 1 ]
	[[ "$output" == *"'-': skipped 1 malformed line; the first, line 1: the count is not a whole number"* ]]
	[[ "$output" == *"the input holds no samples"* ]]
	# An empty input is an empty picture, not an error.
	run sp-flame -o "$T/empty.svg" /dev/null
	[ "$status" -eq 0 ]
	[ "$output" = "sp-flame: the input holds no samples" ]
	well_formed "$T/empty.svg"
	grep -q '>no samples</text>' "$T/empty.svg"
}

@test "any name makes well-formed XML: markup, quotes, control characters, bad UTF-8" {
	printf 'main;<tag attr="v">&]]>\x27;x\x01y\x7fz;\xff\xfe\xc3;caf\xc3\xa9 \xe2\x9c\x93 3\nmain;\xef\xbf\xbe;\xed\xa0\x80 1\n' > "$T/x.folded"
	run sp-flame -o "$T/x.svg" "$T/x.folded"
	[ "$status" -eq 0 ]
	well_formed "$T/x.svg"
	svgframes "$T/x.svg" | cut -d'|' -f1 > "$T/names"
	grep -qxF '<tag attr="v">&]]>'"'" "$T/names"
	grep -qx 'x�y�z' "$T/names"
	grep -qx '���' "$T/names"
	grep -qx 'café ✓' "$T/names"
	grep -qx '���' "$T/names"
	[ "$(grep -c . "$T/names")" -eq 8 ]
	[ "$(grep -cx '���' "$T/names")" -eq 3 ]
}

@test "the output of other tools: stackcollapse-perf.pl and perf script report stackcollapse" {
	# As stackcollapse-perf.pl --all and perf script report stackcollapse
	# write them: process names with pids, [unknown], kernel frames _[k].
	cat > "$T/perf.folded" <<'EOF'
java-1234/1240;start_thread;thread_native_entry;JavaThread::run;Interpreter_[j];[unknown] 12
java-1234/1240;start_thread;thread_native_entry;JavaThread::run;Interpreter_[j];LFoo::bar_[j] 30
swapper;secondary_startup_64_[k];cpu_startup_entry_[k];do_idle_[k];default_idle_call_[k] 200
perf-exec;[unknown];__GI___execve;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k] 1
EOF
	run sp-flame --colors kinds -o "$T/perf.svg" "$T/perf.folded"
	[ "$status" -eq 0 ]
	well_formed "$T/perf.svg"
	svgframes "$T/perf.svg" | grep -q '^all|243 samples, 100.00%|0|'
	svgframes "$T/perf.svg" | grep -q '^swapper|200 samples, 82.30%|1|'
	svgframes "$T/perf.svg" | grep -q '^\[unknown\]|12 samples, 4.94%|6|'
	[ "$(svgframes "$T/perf.svg" | wc -l)" -eq 18 ]
}

@test "bad command lines are usage errors; unreadable inputs are fatal" {
	for args in "--width 50" "--width x" "--minwidth x" "--minwidth -1" "--minwidth 1e3" \
		    "--minwidth 101%" "--colors rainbow" "--bogus" "--diff $T/p.folded" \
		    "--diff $T/p.folded $T/p.folded $T/p.folded" "--diff -c kinds $T/p.folded $T/p.folded"; do
		run sp-flame $args
		[ "$status" -eq 3 ]
		[[ "$output" == *"Try 'sp-flame --help' for more information."* ]]
	done
	run sp-flame --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Exit status:"*"3  usage error"* ]]
	run sp-flame "$T/missing.folded"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-flame: cannot open '$T/missing.folded': No such file or directory" ]
	run sp-flame "$T"
	[ "$status" -eq 2 ]
	[ "$output" = "sp-flame: '$T' is a directory, not a file" ]
}

@test "a 100,000-line folded file renders" {
	# Stacks over 40 functions, 8 to 31 deep, sorted as folded files are.
	awk 'BEGIN {
		srand(7)
		for (i = 0; i < 100000; i++) {
			d = 8 + int(rand() * 24); s = "app"
			for (j = 0; j < d; j++)
				s = s ";fn_" int(rand() * rand() * 40) (j < 4 ? "" : "_[k]")
			print s, 1 + int(rand() * 50)
		}
	}' | LC_ALL=C sort > "$T/big.folded"
	[ "$(lines "$T/big.folded")" -eq 100000 ]
	run sp-flame -o "$T/big.svg" "$T/big.folded"
	[ "$status" -eq 0 ]
	well_formed "$T/big.svg"
	total=$(awk '{ n += $NF } END { print n }' "$T/big.folded")
	# Into a file: grep -q would stop reading early and break the pipe.
	svgframes "$T/big.svg" > "$T/big.frames"
	grep -q "^all|$total samples, 100.00%|0|" "$T/big.frames"
	grep -q '>[0-9]* frames narrower than 0.1 px not drawn</text>' "$T/big.svg"
	# Light: far fewer frames drawn than the input's.
	[ "$(grep -c '<g class="f"' "$T/big.svg")" -lt 20000 ]
}

# headless ARGS...: runs headless Chromium, offline, with a profile of its own.
headless() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --disable-sync --no-first-run \
		--user-data-dir="$T/chromium" "$@" 2>> "$T/chromium.log"
}

# chromium_dom URL OUT: loads a page and writes its DOM once loaded.
chromium_dom() {
	headless --dump-dom "$1" > "$2"
}

# untouched DOM: the 8 frames of p.folded are all shown as drawn, and no
# self-test has left its result.
untouched() {
	[ "$(grep -c '<g class="f"' "$1")" -eq 8 ] || return 1
	run grep -E 'data-selftest="|class="f (hide|parent)"' "$1"
	[ "$status" -eq 1 ]
}

@test "the self-test is in the picture only with --self-test" {
	sp-flame -o "$T/p.svg" "$T/p.folded"
	grep -q "window.addEventListener('load', init);" "$T/p.svg"
	run grep -c 'selftest' "$T/p.svg"
	[ "$status" -eq 1 ]
	[ "$output" = 0 ]
	# --self-test adds flame-selftest.js at the end of the script, and
	# changes nothing else.
	sp-flame --self-test -o "$T/st.svg" "$T/p.folded"
	awk -v js="$TOP/libcommon/fold/flame-selftest.js" '
		/^\]\]><\/script>$/ { print ""; while ((getline l < js) > 0) print l }
		{ print }' "$T/p.svg" | cmp - "$T/st.svg"
	grep -q '^function selftest(h) {$' "$T/st.svg"
}

@test "in headless Chromium a click zooms and a search highlights, through the SVG's own script" {
	command -v chromium || { echo "chromium is not installed: make test-deps installs it" >&2; false; }
	sp-flame --self-test -o "$T/p.svg" "$T/p.folded"
	# #selftest makes the self-test click, search and reset as a user would,
	# through the picture's own script, and write what it saw to the root's
	# data-selftest attribute.
	chromium_dom "file://$T/p.svg#selftest&zoom=parse&search=%5E(lex%7Ctree)%24" "$T/dom"
	grep -o 'data-selftest="[^"]*"' "$T/dom" > "$T/result"
	[ "$(cat "$T/result")" = 'data-selftest="hover=ok zoom=ok zoomed=parse width=1180.00 shown=3 dimmed=2 hidden=3 search=ok matches=2 matched=47.62% unzoom=ok"' ]
	# The page ends zoomed into parse with lex and tree highlighted.
	grep -q '<g class="f hide" data-x="0" data-w="50" data-d="2"><title>compute ' "$T/dom"
	grep -q '<g class="f parent" data-x="0" data-w="105" data-d="1"><title>main ' "$T/dom"
	grep -q '<g class="f"[^>]*><title>lex (30 samples, 28.57%)</title><rect x="10.00" y="50" width="708.00" height="15" fill="rgb(230,0,230)"/>' "$T/dom"
	# A differential icicle graph: zoom into a path that vanished.
	sp-flame --self-test --inverted --diff -o "$T/diff.svg" "$T/before.folded" "$T/after.folded"
	chromium_dom "file://$T/diff.svg#selftest&zoom=old_path&search=_path" "$T/ddom"
	grep -q 'data-selftest="hover=ok zoom=ok zoomed=old_path width=1180.00 shown=2 dimmed=2 hidden=6 search=ok matches=2 matched=5.00% unzoom=ok"' "$T/ddom"
	# Without #selftest the script changes nothing.
	chromium_dom "file://$T/p.svg" "$T/plain"
	untouched "$T/plain"
	# Nor does #selftest in a picture drawn without --self-test.
	sp-flame -o "$T/default.svg" "$T/p.folded"
	chromium_dom "file://$T/default.svg#selftest&zoom=parse" "$T/default"
	untouched "$T/default"
	# A screenshot of the zoomed and searched graph, kept with the test's files.
	height=$(grep -o '^<svg version="1.1" width="1200" height="[0-9]*"' "$T/p.svg" | grep -o '[0-9]*"$' | tr -d '"')
	(cd "$T" && headless --window-size="1200,$height" --screenshot="$T/flame.png" \
		"file://$T/p.svg#selftest&zoom=parse&search=%5E(lex%7Ctree)%24")
	[ "$(head -c 8 "$T/flame.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	[ "$(stat -c %s "$T/flame.png")" -gt 2000 ]
	# Kept as an artefact of the test run.
	mkdir -p "$SP_BUILD/artifacts"
	cp "$T/flame.png" "$SP_BUILD/artifacts/flame.png"
}

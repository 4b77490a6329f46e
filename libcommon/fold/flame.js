// SPDX-License-Identifier: MIT
/* Each frame is a g element of class f in #frames, holding a title, a
   rect and a text; data-x and data-w are its start and width in samples,
   data-d its depth, data-n its samples when that differs from data-w. */
var frames = [], zoomed = null, searching = null, MATCH = 'rgb(230,0,230)';
var svg, fr, details, matched, unzoombtn, searchbtn;

function frameof(el) {
	for (; el && el !== fr; el = el.parentNode)
		if (el.spf !== undefined)
			return frames[el.spf];
	return null;
}

/* The frame's name is its title up to the last ' ('. */
function name(f) {
	if (f.name === null) {
		var t = f.g.firstElementChild.textContent;
		f.name = t.substring(0, t.lastIndexOf(' ('));
	}
	return f.name;
}

/* The label that fits w pixels: the name, cut with '..', or nothing. */
function fit(s, w) {
	var n = Math.floor((w - 6) / CHARW);
	if (n < 3)
		return '';
	if (s.length <= n)
		return s;
	var c = Array.from(s);
	return c.length <= n ? s : c.slice(0, n - 2).join('') + '..';
}

function place(f, x, w) {
	f.r.setAttribute('x', x.toFixed(2));
	f.r.setAttribute('width', w.toFixed(2));
	f.t.setAttribute('x', (x + 3).toFixed(2));
	f.t.textContent = fit(name(f), w);
}

/* Zooms into f: its descendants fill the width, its ancestors are dimmed
   and stretched, every other frame is hidden. */
function zoom(f) {
	if (f.d === 0) {
		unzoom();
		return;
	}
	var eps = 1e-9 * TOTALW, ratio = W / f.w, end = f.x + f.w;
	zoomed = f;
	for (var i = 0; i < frames.length; i++) {
		var e = frames[i], c = e.g.classList;
		if (e.d < f.d && e.x <= f.x + eps && e.x + e.w >= end - eps) {
			c.remove('hide');
			c.add('parent');
			place(e, XPAD, W);
		} else if (e.d >= f.d && e.x >= f.x - eps && e.x + e.w <= end + eps) {
			c.remove('hide', 'parent');
			place(e, XPAD + (e.x - f.x) * ratio, e.w * ratio);
		} else {
			c.add('hide');
		}
	}
	unzoombtn.classList.remove('hide');
}

function unzoom() {
	zoomed = null;
	for (var i = 0; i < frames.length; i++) {
		var e = frames[i];
		e.g.classList.remove('hide', 'parent');
		e.r.setAttribute('x', e.rx);
		e.r.setAttribute('width', e.rw);
		e.t.setAttribute('x', e.tx);
		e.t.textContent = e.label;
	}
	unzoombtn.classList.add('hide');
}

function resetsearch() {
	for (var i = 0; i < frames.length; i++)
		if (frames[i].hit) {
			frames[i].r.setAttribute('fill', frames[i].fill);
			frames[i].hit = false;
		}
	searching = null;
	matched.textContent = ' ';
	searchbtn.textContent = 'Search';
}

/* Highlights the frames whose name matches the regular expression term
   and shows their share of all samples, each sample counted once however
   many of its frames match.  Returns the number of frames that match. */
function search(term) {
	var re, i, hits = [];
	try {
		re = new RegExp(term);
	} catch (err) {
		details.textContent = 'not a regular expression: ' + term;
		return -1;
	}
	resetsearch();
	for (i = 0; i < frames.length; i++)
		if (re.test(name(frames[i]))) {
			frames[i].hit = true;
			frames[i].r.setAttribute('fill', MATCH);
			hits.push(frames[i]);
		}
	/* An ancestor comes before its descendants, which lie inside it. */
	hits.sort(function (a, b) { return a.x - b.x || a.d - b.d; });
	var eps = 1e-9 * TOTALW, end = -Infinity, sum = 0;
	for (i = 0; i < hits.length; i++)
		if (hits[i].x + hits[i].w > end + eps) {
			sum += hits[i].n;
			end = hits[i].x + hits[i].w;
		}
	searching = term;
	searchbtn.textContent = 'Reset Search';
	matched.textContent = 'Matched: ' + (TOTAL > 0 ? 100 * sum / TOTAL : 0).toFixed(2) +
		'% (' + hits.length + (hits.length === 1 ? ' frame)' : ' frames)');
	return hits.length;
}

function searchprompt() {
	if (searching !== null) {
		resetsearch();
		return;
	}
	var term = window.prompt('Search for a regular expression (e.g. ^ext4_ or _\\[k\\]$)', '');
	if (term)
		search(term);
}

function init() {
	svg = document.documentElement;
	fr = document.getElementById('frames');
	details = document.getElementById('details');
	matched = document.getElementById('matched');
	unzoombtn = document.getElementById('unzoom');
	searchbtn = document.getElementById('search');
	var gs = fr.children;
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i], r = g.children[1], t = g.children[2];
		g.spf = i;
		frames.push({ g: g, r: r, t: t, name: null, hit: false,
			x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'),
			d: +g.getAttribute('data-d'),
			n: +(g.getAttribute('data-n') || g.getAttribute('data-w')),
			rx: r.getAttribute('x'), rw: r.getAttribute('width'),
			tx: t.getAttribute('x'), label: t.textContent,
			fill: r.getAttribute('fill') });
	}
	fr.addEventListener('mouseover', function (e) {
		var f = frameof(e.target);
		if (f)
			details.textContent = f.g.firstElementChild.textContent;
	});
	fr.addEventListener('mouseout', function (e) {
		if (frameof(e.target))
			details.textContent = ' ';
	});
	fr.addEventListener('click', function (e) {
		var f = frameof(e.target);
		if (f)
			zoom(f);
	});
	unzoombtn.addEventListener('click', unzoom);
	searchbtn.addEventListener('click', searchprompt);
	window.addEventListener('keydown', function (e) {
		if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {
			e.preventDefault();
			searchprompt();
		} else if (e.key === 'Escape') {
			resetsearch();
			unzoom();
		}
	});
}

window.addEventListener('load', init);

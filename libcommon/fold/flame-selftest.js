// SPDX-License-Identifier: MIT
/* The self-test, added to the script by sp-flame --self-test for the test
   suite alone.  With #selftest[&zoom=NAME][&search=REGEX] in the URL it
   hovers, clicks, searches and resets as a user would, through the same
   handlers, checks the result and writes it to the root's data-selftest
   attribute.  Then it zooms again, so that a screenshot shows the zoom
   and the search.  It runs after init(), whose load listener comes first. */
function selftest(h) {
	var args = {}, out = [], f = null, i, e;
	h.split('&').slice(1).forEach(function (kv) {
		var k = kv.indexOf('=');
		if (k > 0)
			args[kv.substring(0, k)] = decodeURIComponent(kv.substring(k + 1));
	});
	for (i = 0; i < frames.length; i++) {
		e = frames[i];
		if (args.zoom !== undefined) {
			if (e.d > 0 && name(e) === args.zoom) {
				f = e;
				break;
			}
		} else if (e.d === 1 && (!f || e.w > f.w)) {
			f = e;
		}
	}
	if (!f) {
		svg.setAttribute('data-selftest', 'error=no-frame-to-click');
		return;
	}
	function fire(el, type) {
		el.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, view: window }));
	}
	function near(a, b) {
		return Math.abs(a - b) < 0.006;
	}
	fire(f.r, 'mouseover');
	out.push('hover=' + (details.textContent === f.g.firstElementChild.textContent ? 'ok' : 'FAIL'));

	fire(f.r, 'click');
	var eps = 1e-9 * TOTALW, ratio = W / f.w, bad = 0, shown = 0, hidden = 0, dimmed = 0;
	for (i = 0; i < frames.length; i++) {
		e = frames[i];
		var c = e.g.classList, x = +e.r.getAttribute('x'), w = +e.r.getAttribute('width');
		var inside = e.d >= f.d && e.x >= f.x - eps && e.x + e.w <= f.x + f.w + eps;
		if (c.contains('hide')) {
			hidden++;
			bad += inside;
		} else if (c.contains('parent')) {
			dimmed++;
			bad += e.d >= f.d || !near(x, XPAD) || !near(w, W);
		} else {
			shown++;
			bad += !inside || !near(x, XPAD + (e.x - f.x) * ratio) || !near(w, e.w * ratio);
		}
	}
	var zw = +f.r.getAttribute('width');
	out.push('zoom=' + (zoomed === f && bad === 0 && dimmed === f.d && near(zw, W) &&
			    !unzoombtn.classList.contains('hide') ? 'ok' : 'FAIL'),
		 'zoomed=' + encodeURIComponent(name(f)), 'width=' + zw.toFixed(2),
		 'shown=' + shown, 'dimmed=' + dimmed, 'hidden=' + hidden);

	var term = args.search !== undefined ? args.search :
		'^' + name(f).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
	var n = search(term), lit = 0;
	for (i = 0; i < frames.length; i++)
		lit += frames[i].r.getAttribute('fill') === MATCH;
	out.push('search=' + (n > 0 && lit === n && /^Matched: [0-9.]+%/.test(matched.textContent) ? 'ok' : 'FAIL'),
		 'matches=' + n, 'matched=' + matched.textContent.split(' ')[1]);

	fire(unzoombtn, 'click');
	var back = zoomed === null && f.r.getAttribute('width') === f.rw;
	for (i = 0; i < frames.length; i++)
		back = back && !frames[i].g.classList.contains('hide');
	out.push('unzoom=' + (back ? 'ok' : 'FAIL'));
	fire(f.r, 'click');
	svg.setAttribute('data-selftest', out.join(' '));
}

window.addEventListener('load', function () {
	var h = location.hash;
	if (h === '#selftest' || h.indexOf('#selftest&') === 0)
		selftest(h);
});

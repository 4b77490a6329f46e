// jitchurn.js MS: runs a hot function (hotLoop) for MS milliseconds, and
// every half second a burst of new small functions.  V8 buffers its
// jitdump writes (node --perf-prof); the bursts' code loads push the hot
// function's load out to the file while the program runs.
function hotLoop(n) {
	let s = 0;
	for (let i = 0; i < n; i++)
		s = (s * 31 + i) % 1000003;
	return s;
}
let made = 0;
function churn(k) {
	let s = 0;
	for (let i = 0; i < k; i++, made++) {
		const f = new Function('x', 'let s = ' + made +
			'; for (let j = 0; j < x; j++) s = (s + j * ' + made + ') | 0; return s;');
		for (let r = 0; r < 300; r++)
			s += f(50);
	}
	return s;
}
const start = Date.now(), end = start + Number(process.argv[2]);
let t = 0, next = start + 200;
while (Date.now() < end) {
	t += hotLoop(100000);
	if (Date.now() >= next) {
		t += churn(40);
		next += 500;
	}
}
console.log(t);
// SPDX-License-Identifier: MIT

// hot.js: a hot JavaScript function called through two others, for
// node --perf-basic-prof: outer -> middle -> hot, until SECONDS have passed.
//
// Usage: node --perf-basic-prof hot.js [SECONDS]   (default 2)
'use strict';

function hot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
  return s;
}

function middle(n) {
  return hot(n) + 1;
}

function outer(seconds) {
  const end = Date.now() + seconds * 1000;
  let t = 0;
  while (Date.now() < end) t += middle(200000);
  return t;
}

const seconds = process.argv.length > 2 ? Number(process.argv[2]) : 2;
if (!(seconds >= 0)) {
  console.error('usage: hot.js [SECONDS]');
  process.exit(3);
}
console.log(`hot: ${outer(seconds)}`);
// SPDX-License-Identifier: MIT

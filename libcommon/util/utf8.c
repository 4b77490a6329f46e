/* SPDX-License-Identifier: MIT */
/* UTF-8 validation and JSON string escaping (utf8.h). */
#include <stdint.h>
#include <stdio.h>

#include "util/strbuf.h"
#include "util/utf8.h"

size_t sp_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t k;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		k = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

bool sp_utf8_valid(const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n;) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = sp_utf8_len(s + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

void sp_json_escape(struct sp_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	sp_buf_addc(b, '"');
	if (n == 0) {	/* s may be NULL then (msgpack-c's empty strings) */
		sp_buf_addc(b, '"');
		return;
	}
	size_t run = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		size_t k = 1;
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (k = sp_utf8_len(u + i, n - i)) > 0) {
			i += k;
			continue;
		}
		sp_buf_add(b, s + run, i - run);
		switch (c) {
		case '"': sp_buf_adds(b, "\\\""); break;
		case '\\': sp_buf_adds(b, "\\\\"); break;
		case '\n': sp_buf_adds(b, "\\n"); break;
		case '\t': sp_buf_adds(b, "\\t"); break;
		case '\r': sp_buf_adds(b, "\\r"); break;
		default: sp_buf_addf(b, "\\u%04x", c); break;
		}
		i++;
		run = i;
	}
	sp_buf_add(b, s + run, n - run);
	sp_buf_addc(b, '"');
}

void sp_utf8_sanitize(struct sp_buf *b, const char *s, size_t n)
{
	sp_buf_reset(b);
	for (size_t i = 0; i < n;) {
		size_t k = sp_utf8_len((const unsigned char *)s + i, n - i);
		if (k) {
			sp_buf_add(b, s + i, k);
			i += k;
		} else {
			sp_buf_adds(b, "\xef\xbf\xbd");
			i++;
		}
	}
}

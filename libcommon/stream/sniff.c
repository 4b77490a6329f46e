/* SPDX-License-Identifier: MIT */
/* Telling a stream from the files mistaken for one (see sniff.h). */
#include <string.h>

#include "stream/sniff.h"
#include "util/utf8.h"

static int starts(const unsigned char *p, size_t n, const char *magic, size_t len)
{
	return n >= len && memcmp(p, magic, len) == 0;
}

/* A MessagePack fixmap, map16 or map32: how every record begins. */
static int is_map(unsigned char c)
{
	return (c & 0xf0) == 0x80 || c == 0xde || c == 0xdf;
}

/* The length a UTF-8 lead byte announces, 0 for a byte that leads none. */
static size_t utf8_lead_len(unsigned char c)
{
	return c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
	       c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/*
 * Printable UTF-8, the last character perhaps cut by the end of the
 * bytes.  Binary data passes the control-character test alone about
 * one time in seven over 16 bytes; as UTF-8 it almost never does.
 */
static int is_text(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		if (p[i] == 0 || p[i] == 0x7f || (p[i] < 0x20 && !strchr("\t\n\r", p[i])))
			return 0;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = sp_utf8_len(p + i, n - i);
		if (k) {
			i += k;
			continue;
		}
		size_t want = utf8_lead_len(p[i]);
		if (!want || n - i >= want)
			return 0;
		for (size_t j = i + 1; j < n; j++)
			if ((p[j] & 0xc0) != 0x80)
				return 0;
		return 1;
	}
	return 1;
}

enum sp_sniff sp_sniff(const void *data, size_t n)
{
	const unsigned char *p = data;

	if (n == 0)
		return SP_SNIFF_EMPTY;
	if (is_map(p[0]))
		return SP_SNIFF_STREAM;
	if (starts(p, n, "PERFILE2", 8) || starts(p, n, "2ELIFREP", 8))
		return SP_SNIFF_PERF_DATA;
	if (starts(p, n, "\x1f\x8b", 2))
		return SP_SNIFF_GZIP;
	if (starts(p, n, "\x28\xb5\x2f\xfd", 4))
		return SP_SNIFF_ZSTD;
	if (starts(p, n, "\xfd" "7zXZ", 5))
		return SP_SNIFF_XZ;
	if (starts(p, n, "BZh", 3))
		return SP_SNIFF_BZIP2;
	if (starts(p, n, "\x7f" "ELF", 4))
		return SP_SNIFF_ELF;
	size_t i = 0;
	while (i < n && strchr(" \t\r\n", p[i]) && p[i])
		i++;
	if (i < n && (p[i] == '{' || p[i] == '[') && is_text(p, n))
		return SP_SNIFF_JSON;
	if (is_text(p, n))
		return SP_SNIFF_TEXT;
	return SP_SNIFF_OTHER;
}

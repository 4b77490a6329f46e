/* Telling a stream from the files mistaken for one (see sniff.h). */
#include <string.h>

#include "stream/sniff.h"

static int starts(const unsigned char *p, size_t n, const char *magic, size_t len)
{
	return n >= len && memcmp(p, magic, len) == 0;
}

/* A MessagePack fixmap, map16 or map32: how every record begins. */
static int is_map(unsigned char c)
{
	return (c & 0xf0) == 0x80 || c == 0xde || c == 0xdf;
}

static int is_text(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == 0 || p[i] == 0x7f || (p[i] < 0x20 && !strchr("\t\n\r", p[i])))
			return 0;
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
	if (i < n && (p[i] == '{' || p[i] == '['))
		return SP_SNIFF_JSON;
	if (is_text(p, n))
		return SP_SNIFF_TEXT;
	return SP_SNIFF_OTHER;
}

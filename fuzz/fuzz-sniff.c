/* SPDX-License-Identifier: MIT
 * fuzz-sniff: feeds the input to sp_sniff(), which tells a stream from
 * the files people give a tool by mistake, from a heap copy of exactly
 * its bytes, and of every prefix up to 16 bytes (what the tools read),
 * so that a read past the end is caught.
 *
 * It checks what must hold whatever the bytes: nothing is empty but no
 * bytes; bytes that start a MessagePack map are always a stream, so no
 * stream is ever refused; a kind named by its magic number has it; the
 * same bytes give the same answer; text holds no NUL.  Any broken invariant calls abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/sniff.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static void one(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	check(copy != NULL);
	memcpy(copy, data, size);
	enum sp_sniff k = sp_sniff(copy, size);
	check(sp_sniff(copy, size) == k);
	check((k == SP_SNIFF_EMPTY) == (size == 0));
	if (size > 0 && ((copy[0] & 0xf0) == 0x80 || copy[0] == 0xde || copy[0] == 0xdf))
		check(k == SP_SNIFF_STREAM);
	if (k == SP_SNIFF_STREAM)
		check(size > 0 && ((copy[0] & 0xf0) == 0x80 || copy[0] == 0xde || copy[0] == 0xdf));
	if (k == SP_SNIFF_PERF_DATA)
		check(size >= 8 && (!memcmp(copy, "PERFILE2", 8) || !memcmp(copy, "2ELIFREP", 8)));
	if (k == SP_SNIFF_GZIP)
		check(size >= 2 && copy[0] == 0x1f && copy[1] == 0x8b);
	if (k == SP_SNIFF_ELF)
		check(size >= 4 && !memcmp(copy, "\x7f" "ELF", 4));
	if (k == SP_SNIFF_TEXT)
		check(memchr(copy, 0, size) == NULL);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size);
	for (size_t n = 0; n <= 16 && n < size; n++)
		one(data, n);
	return 0;
}

/* SPDX-License-Identifier: MIT
 * What a file that a tool was given as a stream looks like, from its
 * first bytes: a stream, or one of the files people hand a profiler by
 * mistake (perf.data, a compressed stream, JSON lines, a program).
 * A zstd-compressed stream is read (the reader decompresses it where a
 * frame's magic number stands): tools refuse gzip, xz and bzip2 by name,
 * and SP_SNIFF_ZSTD, seen in the bytes the reader decompressed, is a
 * stream compressed twice.
 */
#ifndef SP_SNIFF_H
#define SP_SNIFF_H

#include <stddef.h>

enum sp_sniff {
	SP_SNIFF_STREAM,	/* starts with a MessagePack map, or too short to tell */
	SP_SNIFF_EMPTY,
	SP_SNIFF_PERF_DATA,	/* "PERFILE2", either byte order */
	SP_SNIFF_GZIP,
	SP_SNIFF_ZSTD,
	SP_SNIFF_XZ,
	SP_SNIFF_BZIP2,
	SP_SNIFF_ELF,
	SP_SNIFF_JSON,		/* '{' or '[' after optional blanks */
	SP_SNIFF_TEXT,		/* printable text of another kind */
	SP_SNIFF_OTHER,		/* none of these: left to the stream reader */
};

/*
 * Classifies the first n bytes of an input (n may be 0; 16 are enough).
 * Bytes that start a MessagePack map are always SP_SNIFF_STREAM, so a
 * stream is never refused here, whatever follows its first byte.
 */
enum sp_sniff sp_sniff(const void *p, size_t n);

#endif

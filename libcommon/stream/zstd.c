/* SPDX-License-Identifier: MIT */
/* Compressed streams: zstd frames written and read (see zstd.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "stream/zstd.h"

int sp_zstd_magic(const void *data, size_t n)
{
	const unsigned char *p = data;
	/* A skippable frame: 0x184d2a50 to 0x184d2a5f, little-endian. */
	static const unsigned char skip[] = { 0x50, 0x2a, 0x4d, 0x18 };
	size_t k = n < SP_ZSTD_MAGIC_LEN ? n : SP_ZSTD_MAGIC_LEN;
	bool frame = memcmp(p, SP_ZSTD_MAGIC, k) == 0;
	bool skippable = k == 0 || ((p[0] & 0xf0) == skip[0] && memcmp(p + 1, skip + 1, k - 1) == 0);
	if (!frame && !skippable)
		return 0;
	return n < SP_ZSTD_MAGIC_LEN ? -1 : 1;
}

int sp_zstd_min_level(void)
{
	return ZSTD_minCLevel() < 1 ? 1 : ZSTD_minCLevel();
}

int sp_zstd_max_level(void)
{
	return ZSTD_maxCLevel();
}

/* ---- compressing -------------------------------------------------------- */

struct sp_zout {
	ZSTD_CCtx *cctx;
	unsigned char *buf;
	size_t cap;
	bool pending;		/* bytes given since the last flush */
	bool in_frame;		/* a frame begun and not ended */
};

struct sp_zout *sp_zout_new(int level)
{
	struct sp_zout *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->cap = ZSTD_CStreamOutSize();
	z->buf = malloc(z->cap);
	z->cctx = ZSTD_createCCtx();
	/* A checksum of each frame's content: corruption is told, not decoded. */
	if (!z->buf || !z->cctx ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1))) {
		sp_zout_free(z);
		return NULL;
	}
	return z;
}

void sp_zout_free(struct sp_zout *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	free(z->buf);
	free(z);
}

int sp_zout_write(struct sp_zout *z, const void *p, size_t n, enum sp_zend end,
		  int (*sink)(void *arg, const void *p, size_t n), void *arg)
{
	static const ZSTD_EndDirective mode[] = {
		[SP_ZEND_CONTINUE] = ZSTD_e_continue,
		[SP_ZEND_FLUSH] = ZSTD_e_flush,
		[SP_ZEND_FRAME] = ZSTD_e_end,
	};
	ZSTD_inBuffer in = { p, n, 0 };
	/* Nothing to flush, or no frame to end: no bytes at all. */
	if (n == 0 && (end == SP_ZEND_CONTINUE || (end == SP_ZEND_FLUSH && !z->pending) ||
		       (end == SP_ZEND_FRAME && !z->in_frame)))
		return 0;
	z->in_frame = true;
	for (;;) {
		ZSTD_outBuffer out = { z->buf, z->cap, 0 };
		size_t left = ZSTD_compressStream2(z->cctx, &out, &in, mode[end]);
		if (ZSTD_isError(left)) {
			errno = EIO;
			return -1;
		}
		if (out.pos && sink(arg, z->buf, out.pos) < 0)
			return -1;
		if (end == SP_ZEND_CONTINUE ? in.pos == in.size : left == 0)
			break;
	}
	z->pending = end == SP_ZEND_CONTINUE;
	if (end == SP_ZEND_FRAME)
		z->in_frame = false;
	return 0;
}

bool sp_zout_pending(const struct sp_zout *z)
{
	return z->pending;
}

/* ---- decompressing ------------------------------------------------------ */

/* Compressed bytes given to libzstd at a time (see sp_zin_read()). */
#define ZIN_STEP 4096

struct sp_zin {
	ZSTD_DCtx *dctx;
	unsigned char *in;
	size_t cap, pos, len;	/* unread input is in[pos..len) */
	uint64_t base;		/* input offset of the first byte fed */
	uint64_t used;		/* bytes of input decompressed */
	uint64_t frame;		/* input offset where the current frame began */
	bool in_frame;		/* inside a frame: more of it is due */
	bool full;		/* the last call filled its output: more may wait */
	bool plain;		/* at a frame boundary, before bytes that are no frame */
	uint64_t given;		/* bytes handed over as plain since */
	bool failed;
	char why[300];
};

struct sp_zin *sp_zin_new(uint64_t base)
{
	struct sp_zin *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->base = z->frame = base;
	if (!(z->dctx = ZSTD_createDCtx())) {
		free(z);
		return NULL;
	}
	return z;
}

void sp_zin_free(struct sp_zin *z)
{
	if (!z)
		return;
	ZSTD_freeDCtx(z->dctx);
	free(z->in);
	free(z);
}

int sp_zin_feed(struct sp_zin *z, const void *p, size_t n)
{
	if (n == 0)
		return 0;	/* nothing to add; z->in may still be NULL */
	if (z->pos > 0) {
		memmove(z->in, z->in + z->pos, z->len - z->pos);
		z->len -= z->pos;
		z->pos = 0;
	}
	if (z->len + n > z->cap) {
		size_t ncap = z->cap ? z->cap : 65536;
		while (ncap < z->len + n)
			ncap *= 2;
		unsigned char *nb = realloc(z->in, ncap);
		if (!nb)
			return -1;
		z->in = nb;
		z->cap = ncap;
	}
	memcpy(z->in + z->len, p, n);
	z->len += n;
	return 0;
}

uint64_t sp_zin_offset(const struct sp_zin *z)
{
	return z->base + z->used;
}

uint64_t sp_zin_frame_offset(const struct sp_zin *z)
{
	return z->frame;
}

const char *sp_zin_error(const struct sp_zin *z)
{
	return z->why;
}

/*
 * At a frame boundary: 1 when the unread input starts a frame, 0 when it
 * needs more input first, -1 when it is no frame (z->plain is set).
 */
static int next_frame(struct sp_zin *z)
{
	size_t avail = z->len - z->pos;
	if (z->plain || avail == 0)
		return z->plain ? -1 : 0;
	int m = sp_zstd_magic(z->in + z->pos, avail);
	if (m < 0)
		return 0;
	if (m == 0) {
		z->plain = true;
		return -1;
	}
	z->frame = sp_zin_offset(z);
	return 1;
}

long sp_zin_read(struct sp_zin *z, void *out, size_t cap)
{
	if (z->failed)
		return -1;
	ZSTD_outBuffer o = { out, cap, 0 };
	while (o.pos < o.size) {
		size_t avail = z->len - z->pos;
		if (!z->in_frame && next_frame(z) <= 0)
			break;
		if (z->in_frame && avail == 0 && !z->full)
			break;
		/*
		 * In small steps: a fault reports no progress, so what the
		 * blocks before it hold must have left in earlier calls.
		 */
		ZSTD_inBuffer i = { z->in + z->pos, avail < ZIN_STEP ? avail : ZIN_STEP, 0 };
		size_t made = o.pos;
		size_t ret = ZSTD_decompressStream(z->dctx, &o, &i);
		if (ZSTD_isError(ret)) {
			snprintf(z->why, sizeof(z->why), "corrupt zstd data in the frame at "
				 "compressed byte offset %" PRIu64 ", found in bytes %" PRIu64
				 " to %" PRIu64 ": %s", z->frame, sp_zin_offset(z),
				 sp_zin_offset(z) + i.size, ZSTD_getErrorName(ret));
			z->failed = true;
			return o.pos ? (long)o.pos : -1;
		}
		z->pos += i.pos;
		z->used += i.pos;
		/* A frame decoded to its end (0) has nothing more to give. */
		z->in_frame = ret != 0;
		z->full = z->in_frame && o.pos == o.size;
		if (i.pos == 0 && o.pos == made)
			break;
	}
	return (long)o.pos;
}

bool sp_zin_at_end(const struct sp_zin *z)
{
	return !z->in_frame && z->pos == z->len;
}

int sp_zin_truncated(struct sp_zin *z)
{
	if (z->in_frame)
		snprintf(z->why, sizeof(z->why), "compressed input ends inside the zstd frame "
			 "at compressed byte offset %" PRIu64 ", cut at byte %" PRIu64,
			 z->frame, sp_zin_offset(z) + (z->len - z->pos));
	else
		snprintf(z->why, sizeof(z->why), "compressed input ends with %zu byte%s of "
			 "an incomplete zstd frame header at compressed byte offset %" PRIu64,
			 z->len - z->pos, z->len - z->pos == 1 ? "" : "s", sp_zin_offset(z));
	z->failed = true;
	return -1;
}

size_t sp_zin_take_plain(struct sp_zin *z, const unsigned char **p, size_t max)
{
	if (!z->plain)
		return 0;
	size_t n = z->len - z->pos;
	if (n > max)
		n = max;
	*p = z->in + z->pos;
	z->used += n;
	z->pos += n;
	z->given += n;
	return n;
}

int sp_zin_unread(struct sp_zin *z, const void *p, size_t n)
{
	if (!z->plain || n > z->given || sp_zin_feed(z, p, n) < 0)
		return -1;
	/* sp_zin_feed() left the unread input at the front: put p before it. */
	size_t rest = z->len - n;
	memmove(z->in + n, z->in, rest);
	memcpy(z->in, p, n);
	z->used -= n;
	z->plain = false;
	z->given = 0;
	return 0;
}

/* SPDX-License-Identifier: MIT
 * Compressed streams: zstd frames around the stream's bytes, both ways
 * (format/sp-stream.md, "Compressed streams").  The writer compresses
 * through a struct sp_zout, ending a flush block at each of its flushes
 * so a reader behind a pipe sees every record the writer has flushed;
 * the reader decompresses through a struct sp_zin, which keeps the
 * compressed offsets its messages name.  sp-import decompresses perf's
 * PERF_RECORD_COMPRESSED payloads through the same struct sp_zin.
 */
#ifndef SP_STREAM_ZSTD_H
#define SP_STREAM_ZSTD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The level of sp-capture -z without a level: fast enough to keep up. */
#define SP_ZSTD_DEFAULT_LEVEL 1

/* The first bytes of a zstd frame, and the length of any frame magic. */
#define SP_ZSTD_MAGIC "\x28\xb5\x2f\xfd"
#define SP_ZSTD_MAGIC_LEN 4

/*
 * Whether p starts a zstd frame or a skippable frame: 1 yes, 0 no, -1
 * when n is too short to tell but the bytes so far could start one.
 */
int sp_zstd_magic(const void *p, size_t n);

/* The levels libzstd accepts, for checking an option. */
int sp_zstd_min_level(void);
int sp_zstd_max_level(void);

/* ---- compressing -------------------------------------------------------- */

struct sp_zout;

enum sp_zend {
	SP_ZEND_CONTINUE,	/* buffer as the compressor likes */
	SP_ZEND_FLUSH,		/* end a block: everything given so far can be decoded */
	SP_ZEND_FRAME,		/* end the frame */
};

/* A compressor at level; NULL when memory runs out or the level is refused. */
struct sp_zout *sp_zout_new(int level);
void sp_zout_free(struct sp_zout *z);

/*
 * Compresses n bytes (n may be 0, to flush or end a frame only) and gives
 * every compressed byte to sink, which returns 0 or -1 to stop.  Returns
 * 0, or -1 when sink failed (errno as sink left it) or libzstd did (EIO).
 * After SP_ZEND_FRAME the next bytes begin a new frame.
 */
int sp_zout_write(struct sp_zout *z, const void *p, size_t n, enum sp_zend end,
		  int (*sink)(void *arg, const void *p, size_t n), void *arg);

/* Whether bytes were given since the last flush or frame end. */
bool sp_zout_pending(const struct sp_zout *z);

/* ---- decompressing ------------------------------------------------------ */

struct sp_zin;

/*
 * A decompressor whose input begins at the input offset base (for its
 * messages).  NULL when memory runs out.
 */
struct sp_zin *sp_zin_new(uint64_t base);
void sp_zin_free(struct sp_zin *z);

/* Appends compressed bytes to the unread input.  Returns 0, -1 when memory runs out. */
int sp_zin_feed(struct sp_zin *z, const void *p, size_t n);

/*
 * Decompresses unread input into out, at most cap bytes.  Returns how
 * many bytes it made (0: it needs more input), or -1 on corrupt input
 * (sp_zin_error()).  Bytes made before a fault are returned first; the
 * fault, which is sticky, comes with the next call.
 */
long sp_zin_read(struct sp_zin *z, void *out, size_t cap);

/*
 * Whether the input given ends where a frame does: nothing fed, or every
 * frame complete and nothing after it.  Asked at the end of the input; a
 * false answer is a truncation, which sp_zin_truncated() words.
 */
bool sp_zin_at_end(const struct sp_zin *z);

/* Words a truncation in sp_zin_error(); returns -1. */
int sp_zin_truncated(struct sp_zin *z);

/*
 * At a frame boundary, when the unread input is neither a frame nor the
 * start of one (plain bytes following the compressed ones): hands that
 * input over (a pointer into the decompressor's buffer and its length,
 * at most max, valid until the next call) as read.  Returns 0 otherwise.  Once plain
 * bytes came, every later byte fed is plain too, until sp_zin_unread().
 */
size_t sp_zin_take_plain(struct sp_zin *z, const unsigned char **p, size_t max);

/*
 * Gives back the last n bytes handed over as plain (a frame begins in
 * them, at p): they are read again, as a frame.  Returns 0, or -1 when
 * memory runs out or n is more than was handed over as plain.
 */
int sp_zin_unread(struct sp_zin *z, const void *p, size_t n);

/* The input offset up to which input was decompressed, and where its frame began. */
uint64_t sp_zin_offset(const struct sp_zin *z);
uint64_t sp_zin_frame_offset(const struct sp_zin *z);

/* The message of the last fault. */
const char *sp_zin_error(const struct sp_zin *z);

#endif

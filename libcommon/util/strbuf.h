/* SPDX-License-Identifier: MIT
 * A growable byte buffer, the one the library builds text in (in the
 * manner of git's strbuf.h, with out-of-memory kept instead of fatal).
 *
 * Invariants: p is NULL until the first byte is added; once len > 0, p
 * holds len bytes followed by a NUL, so it can be used as a C string when
 * the bytes contain no NUL.  When a growth fails, oom is set and stays
 * set: every later add is ignored, so a caller may add freely and check
 * oom (or sp_buf_grow's result) once at the end.
 */
#ifndef SP_UTIL_STRBUF_H
#define SP_UTIL_STRBUF_H

#include <stddef.h>

struct sp_buf {
	char *p;
	size_t len, cap;
	int oom;	/* a growth failed; the contents are cut short */
};

#define SP_BUF_INIT { NULL, 0, 0, 0 }

void sp_buf_init(struct sp_buf *b);

/* Frees the bytes and leaves b empty, ready for use again. */
void sp_buf_release(struct sp_buf *b);

/* Empties b, keeping its memory (and clearing oom). */
void sp_buf_reset(struct sp_buf *b);

/* Makes room for extra more bytes (and the NUL).  Returns 0, or -1 (oom). */
int sp_buf_grow(struct sp_buf *b, size_t extra);

void sp_buf_add(struct sp_buf *b, const void *p, size_t n);
void sp_buf_addc(struct sp_buf *b, char c);
void sp_buf_adds(struct sp_buf *b, const char *s);
void sp_buf_addf(struct sp_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Appends everything left to read on fd.  Returns 0, or -1 with errno
 * set (ENOMEM when the buffer could not grow; what was read is kept).
 */
int sp_buf_read_fd(struct sp_buf *b, int fd);

/*
 * Hands the bytes to the caller (who frees them; "" newly allocated when
 * empty, NULL when memory ran out) and leaves b empty.
 */
char *sp_buf_detach(struct sp_buf *b, size_t *len);

#endif

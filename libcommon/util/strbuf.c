/* SPDX-License-Identifier: MIT */
/* The growable byte buffer (strbuf.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/strbuf.h"

void sp_buf_init(struct sp_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void sp_buf_release(struct sp_buf *b)
{
	free(b->p);
	sp_buf_init(b);
}

void sp_buf_reset(struct sp_buf *b)
{
	b->len = 0;
	b->oom = 0;
	if (b->p)
		b->p[0] = '\0';
}

int sp_buf_grow(struct sp_buf *b, size_t extra)
{
	if (b->oom)
		return -1;
	if (extra > (size_t)-1 - b->len - 1 ||
	    SP_ALLOC_GROW(b->p, b->len + extra + 1, b->cap) < 0) {
		b->oom = 1;
		return -1;
	}
	return 0;
}

void sp_buf_add(struct sp_buf *b, const void *p, size_t n)
{
	if (sp_buf_grow(b, n) < 0)
		return;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sp_buf_addc(struct sp_buf *b, char c)
{
	if (b->len + 1 < b->cap) {
		b->p[b->len++] = c;
		b->p[b->len] = '\0';
		return;
	}
	sp_buf_add(b, &c, 1);
}

void sp_buf_adds(struct sp_buf *b, const char *s)
{
	sp_buf_add(b, s, strlen(s));
}

void sp_buf_addf(struct sp_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[128];
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		sp_buf_add(b, small, (size_t)n);
		return;
	}
	if (sp_buf_grow(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *sp_buf_detach(struct sp_buf *b, size_t *len)
{
	char *p = b->oom ? NULL : b->p ? b->p : strdup("");
	if (len)
		*len = p ? b->len : 0;
	if (b->oom)
		free(b->p);
	sp_buf_init(b);
	return p;
}

int sp_buf_read_fd(struct sp_buf *b, int fd)
{
	struct stat st;
	/* A regular file's size is known: one allocation, and one byte more to see its end. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    sp_buf_grow(b, (size_t)st.st_size + 1) < 0) {
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		if (b->len + 1 >= b->cap && sp_buf_grow(b, 1 << 16) < 0) {
			errno = ENOMEM;
			return -1;
		}
		ssize_t k = read(fd, b->p + b->len, b->cap - b->len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		b->len += (size_t)k;
		b->p[b->len] = '\0';
	}
	return 0;
}

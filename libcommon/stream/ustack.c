/* SPDX-License-Identifier: MIT */
/* Stack copies and their shared tails (ustack.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stream/record.h"
#include "stream/ustack.h"
#include "util/alloc.h"

/* A thread's last full copy: at buf's start when encoding, at its end when decoding. */
struct sp_ustack_copy {
	unsigned char *buf;
	size_t len, alloc;
	uint64_t top;		/* writer: the address just past the copy */
};

void sp_ustack_cache_init(struct sp_ustack_cache *c)
{
	sp_u64map_init(&c->threads);
	c->peak = 0;
}

static void copy_free(void *v)
{
	struct sp_ustack_copy *u = v;
	if (u) {
		free(u->buf);
		free(u);
	}
}

void sp_ustack_cache_release(struct sp_ustack_cache *c)
{
	sp_u64map_release(&c->threads, copy_free);
}

void sp_ustack_forget(struct sp_ustack_cache *c, uint32_t tid)
{
	copy_free(sp_u64map_remove(&c->threads, tid));
}

void sp_ustack_note_exit(struct sp_ustack_cache *c, const msgpack_object *exit)
{
	bool reset = false;
	uint64_t tid;
	if (sp_map_bool(exit, "ustack_reset", &reset) && reset &&
	    sp_map_u64(exit, "tid", &tid) && tid <= UINT32_MAX)
		sp_ustack_forget(c, (uint32_t)tid);
}

/* The thread's copy, added empty when absent; NULL when memory runs out. */
static struct sp_ustack_copy *copy_get(struct sp_ustack_cache *c, uint32_t tid)
{
	struct sp_ustack_copy *u = sp_u64map_get(&c->threads, tid);
	if (u)
		return u;
	u = calloc(1, sizeof(*u));
	if (!u || sp_u64map_put(&c->threads, tid, u) < 0) {
		free(u);
		return NULL;
	}
	if (c->threads.count > c->peak)
		c->peak = c->threads.count;
	return u;
}

/* How many bytes at the ends of a and b (n bytes at most) are equal. */
static size_t common_tail(const unsigned char *a_end, const unsigned char *b_end, size_t n)
{
	size_t k = 0;
	/* Eight bytes at a time, then the rest. */
	while (k + 8 <= n && memcmp(a_end - k - 8, b_end - k - 8, 8) == 0)
		k += 8;
	while (k < n && a_end[-(ptrdiff_t)k - 1] == b_end[-(ptrdiff_t)k - 1])
		k++;
	return k;
}

int sp_ustack_encode(struct sp_ustack_cache *c, uint32_t tid, uint64_t sp,
		     const void *copy, size_t len, size_t *shared)
{
	*shared = 0;
	if (len == 0)
		return 0;
	struct sp_ustack_copy *u = copy_get(c, tid);
	if (!u)
		return -1;
	if (SP_ALLOC_GROW(u->buf, len, u->alloc) < 0) {
		sp_ustack_forget(c, tid);
		return -1;
	}
	if (u->len && u->top == sp + len) {
		size_t max = len < u->len ? len : u->len;
		*shared = common_tail((const unsigned char *)copy + len, u->buf + u->len, max);
	}
	memcpy(u->buf, copy, len);
	u->len = len;
	u->top = sp + len;
	return 0;
}

int sp_ustack_decode(struct sp_ustack_cache *c, uint32_t tid, const void *ustack,
		     size_t len, uint64_t shared, const unsigned char **copy,
		     size_t *copy_len)
{
	*copy = NULL;
	*copy_len = 0;
	if (len == 0 && shared == 0)
		return SP_USTACK_OK;
	struct sp_ustack_copy *u = copy_get(c, tid);
	if (!u)
		return -1;
	int rc = SP_USTACK_OK;
	if (shared > u->len) {
		rc = SP_USTACK_BAD_SHARE;
		shared = 0;
	}
	size_t total = len + (size_t)shared;
	u->len = total;
	if (!total)
		return rc;	/* a share refused, and nothing of its own */
	/*
	 * A decoded copy lies at the end of its buffer, so that the tail the
	 * next copy shares stays where it is: only the new bytes are copied.
	 */
	if (total > u->alloc) {
		unsigned char *buf = NULL;
		size_t cap = 0;
		if (sp_alloc_grow((void **)&buf, 1, u->alloc * 2 > total ? u->alloc * 2 : total,
				  &cap) < 0) {
			sp_ustack_forget(c, tid);
			return -1;
		}
		if (shared)
			memcpy(buf + cap - shared, u->buf + u->alloc - shared, (size_t)shared);
		free(u->buf);
		u->buf = buf;
		u->alloc = cap;
	}
	unsigned char *start = u->buf + u->alloc - total;
	if (len)
		memcpy(start, ustack, len);
	*copy = start;
	*copy_len = total;
	return rc;
}

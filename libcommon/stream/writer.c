/* SPDX-License-Identifier: MIT */
/* The stream writer and the self-counting map writer (see stream.h). */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/stream.h"
#include "stream/zstd.h"
#include "util/alloc.h"
#include "util/error.h"

#define WRITE_BUF (256u * 1024)

struct sp_writer {
	int fd;
	char *name;
	char *buf;
	size_t len;
	uint64_t bytes;
	size_t cap;	/* bytes allocated at buf: WRITE_BUF, more while a map is open */
	unsigned hold;	/* open sp_mapw maps: their bytes stay in buf, unflushed */
	int err;	/* errno of the first failure, sticky */
	struct sp_zout *z;	/* compressing (sp_writer_compress()) */
	msgpack_packer pk;
	struct sp_error error;
};

static int write_fd(struct sp_writer *w, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(w->fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			return sp_error_errno(&w->error, "write error on '%s'", w->name);
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int zsink(void *arg, const void *p, size_t n)
{
	return write_fd(arg, p, n);
}

/* Writes bytes out, through the compressor when there is one, ending its block or frame. */
static int write_out(struct sp_writer *w, const char *p, size_t n, enum sp_zend end)
{
	if (!w->z)
		return write_fd(w, p, n);
	if (sp_zout_write(w->z, p, n, end, zsink, w) == 0)
		return 0;
	if (!w->err) {
		w->err = errno;
		sp_error_set(&w->error, SP_ERR_ERRNO, "cannot compress the output to '%s'", w->name);
	}
	return -1;
}

static int write_all(struct sp_writer *w, const char *p, size_t n)
{
	return write_out(w, p, n, SP_ZEND_CONTINUE);
}

/* Writes out everything buffered; with the compressor, ending a block (end) or the frame. */
static int writer_drain(struct sp_writer *w, enum sp_zend end)
{
	if (w->err) {
		errno = w->err;
		return -1;
	}
	if ((w->len > 0 || w->z) && write_out(w, w->buf, w->len, end) < 0) {
		w->len = 0;
		errno = w->err;
		return -1;
	}
	w->len = 0;
	return 0;
}

int sp_writer_flush(struct sp_writer *w)
{
	return writer_drain(w, SP_ZEND_FLUSH);
}

int sp_writer_end(struct sp_writer *w)
{
	return writer_drain(w, SP_ZEND_FRAME);
}

int sp_writer_compress(struct sp_writer *w, int level)
{
	if (w->z || w->bytes > 0 || w->len > 0) {
		errno = EINVAL;
		return sp_error_set(&w->error, SP_ERR_INVALID, "'%s': compression is chosen "
				    "before the first byte", w->name);
	}
	if (level < sp_zstd_min_level() || level > sp_zstd_max_level()) {
		errno = EINVAL;
		return sp_error_set(&w->error, SP_ERR_INVALID, "zstd compression level %d is "
				    "not between %d and %d", level, sp_zstd_min_level(),
				    sp_zstd_max_level());
	}
	if (!(w->z = sp_zout_new(level))) {
		errno = ENOMEM;
		return sp_error_set(&w->error, SP_ERR_NOMEM, "cannot start zstd compression");
	}
	return 0;
}

/* While a map is open its bytes must stay in the buffer: grow it instead of flushing. */
static int hold_room(struct sp_writer *w, size_t n)
{
	if (SP_ALLOC_GROW(w->buf, w->len + n, w->cap) < 0) {
		w->err = errno = ENOMEM;
		return sp_error_errno(&w->error, "cannot buffer a record for '%s'", w->name);
	}
	return 0;
}

int sp_writer_raw(struct sp_writer *w, const void *p, size_t n)
{
	if (w->err) {
		errno = w->err;
		return -1;
	}
	if (n > w->cap - w->len) {
		if (w->hold) {
			if (hold_room(w, n) < 0)
				return -1;
		} else {
			if (sp_writer_flush(w) < 0)
				return -1;
			if (n >= w->cap) {
				w->bytes += n;
				return write_all(w, p, n);
			}
		}
	}
	w->bytes += n;
	if (n)	/* an empty bin may come with a NULL pointer */
		memcpy(w->buf + w->len, p, n);
	w->len += n;
	return 0;
}

/* msgpack's output: most writes are a few bytes into a buffer with room. */
static int packer_write(void *data, const char *buf, size_t len)
{
	struct sp_writer *w = data;
	if (!w->err && len <= w->cap - w->len) {
		memcpy(w->buf + w->len, buf, len);
		w->len += len;
		w->bytes += len;
		return 0;
	}
	return sp_writer_raw(w, buf, len) < 0 ? -1 : 0;
}

struct sp_writer *sp_writer_new(int fd, const char *name)
{
	struct sp_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fd = fd;
	w->name = strdup(name ? name : "-");
	w->buf = malloc(WRITE_BUF);
	w->cap = WRITE_BUF;
	if (!w->name || !w->buf) {
		free(w->name);
		free(w->buf);
		free(w);
		return NULL;
	}
	msgpack_packer_init(&w->pk, w, packer_write);
	return w;
}

int sp_writer_close(struct sp_writer *w)
{
	if (!w)
		return 0;
	int rc = sp_writer_end(w);
	int e = errno;
	sp_zout_free(w->z);
	free(w->buf);
	free(w->name);
	free(w);
	errno = e;
	return rc;
}

msgpack_packer *sp_writer_packer(struct sp_writer *w)
{
	return &w->pk;
}

const char *sp_writer_error(const struct sp_writer *w)
{
	return w->err || w->error.code ? sp_error_message(&w->error) : "";
}

bool sp_writer_failed(const struct sp_writer *w)
{
	return w->err != 0;
}

uint64_t sp_writer_bytes(const struct sp_writer *w)
{
	return w->bytes;
}

void sp_pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	if (n < 32) {
		/* A fixstr (as msgpack_pack_str makes it) in one write. */
		char b[32];
		b[0] = (char)(0xa0 | n);
		memcpy(b + 1, s, n);
		pk->callback(pk->data, b, n + 1);
		return;
	}
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void sp_pack_key(msgpack_packer *pk, const char *key)
{
	sp_pack_str(pk, key);
}

/* The self-counting map writer. */

/* The largest map header: 0xdf and a 32-bit count. */
#define MAP_HDR_MAX 5

void sp_mapw_begin(struct sp_mapw *m, struct sp_writer *w)
{
	m->w = w;
	m->n = 0;
	/*
	 * An open map cannot be flushed, so a record must not start where it
	 * would have to grow the buffer: past half of it, flush first (an
	 * error is kept and reported by the next flush).  Only a record larger
	 * than half the buffer then grows it.
	 */
	if (!w->hold && w->len > w->cap / 2)
		sp_writer_flush(w);
	w->hold++;
	m->start = w->len;
	/* Room for a fixmap's header, the commonest; sp_mapw_end() makes more when it needs it. */
	static const unsigned char placeholder = 0x80;
	if (!w->err && w->len < w->cap) {
		w->buf[w->len++] = (char)placeholder;
		w->bytes++;
	} else {
		sp_writer_raw(w, &placeholder, 1);
	}
}

msgpack_packer *sp_mapw_key(struct sp_mapw *m, const char *key)
{
	m->n++;
	sp_pack_key(&m->w->pk, key);
	return &m->w->pk;
}

void sp_mapw_raw(struct sp_mapw *m, const void *pair, size_t len)
{
	m->n++;
	sp_writer_raw(m->w, pair, len);
}

void sp_mapw_kv(struct sp_mapw *m, const msgpack_object_kv *kv)
{
	m->n++;
	msgpack_pack_object(&m->w->pk, kv->key);
	msgpack_pack_object(&m->w->pk, kv->val);
}

/*
 * A short key and its value written straight into the buffer: the bytes
 * msgpack_pack_str() and msgpack_pack_uint64() write (a fixstr; the
 * shortest unsigned form).  A key shorter than 32 bytes as a fixstr, a
 * short one copied by moves of its known size.
 */
static inline __attribute__((always_inline)) void put_key(unsigned char *b, const char *key,
							  size_t kn)
{
	b[0] = (unsigned char)(0xa0 | kn);
	switch (kn) {
	case 1: memcpy(b + 1, key, 1); break;
	case 2: memcpy(b + 1, key, 2); break;
	case 3: memcpy(b + 1, key, 3); break;
	case 4: memcpy(b + 1, key, 4); break;
	case 5: memcpy(b + 1, key, 5); break;
	case 6: memcpy(b + 1, key, 6); break;
	case 7: memcpy(b + 1, key, 7); break;
	case 8: memcpy(b + 1, key, 8); break;
	default:
		for (size_t i = 0; i < kn; i++)	/* a few bytes: no call */
			b[1 + i] = (unsigned char)key[i];
	}
}

static size_t put_uint(unsigned char *b, uint64_t v)
{
	int n;
	if (v < 0x80) {
		b[0] = (unsigned char)v;
		return 1;
	}
	if (v < 0x100) {
		b[0] = 0xcc;
		n = 1;
	} else if (v < 0x10000) {
		b[0] = 0xcd;
		n = 2;
	} else if (v < 0x100000000ull) {
		b[0] = 0xce;
		n = 4;
	} else {
		b[0] = 0xcf;
		n = 8;
	}
	if (n == 1) {
		b[1] = (unsigned char)v;
	} else if (n == 2) {
		uint16_t h = htobe16((uint16_t)v);
		memcpy(b + 1, &h, 2);
	} else if (n == 4) {
		uint32_t x = htobe32((uint32_t)v);
		memcpy(b + 1, &x, 4);
	} else {
		uint64_t x = htobe64(v);
		memcpy(b + 1, &x, 8);
	}
	return (size_t)n + 1;
}

void sp_mapw_u64n(struct sp_mapw *m, const char *key, size_t kn, uint64_t v)
{
	struct sp_writer *w = m->w;
	if (kn >= 32 || w->err || w->cap - w->len < kn + 10) {
		msgpack_pack_uint64(sp_mapw_key(m, key), v);
		return;
	}
	/* Straight into the buffer: the bytes msgpack_pack_str() and msgpack_pack_uint64() write. */
	unsigned char *b = (unsigned char *)w->buf + w->len;
	put_key(b, key, kn);
	size_t n = kn + 1 + put_uint(b + kn + 1, v);
	m->n++;
	w->len += n;
	w->bytes += n;
}

void sp_mapw_i64(struct sp_mapw *m, const char *key, int64_t v)
{
	msgpack_pack_int64(sp_mapw_key(m, key), v);
}

/* A string's header, as msgpack_pack_str() writes it; returns its length. */
static size_t put_str_head(unsigned char *b, size_t n)
{
	if (n < 32) {
		b[0] = (unsigned char)(0xa0 | n);
		return 1;
	}
	if (n < 256) {
		b[0] = 0xd9;
		b[1] = (unsigned char)n;
		return 2;
	}
	if (n < 65536) {
		b[0] = 0xda;
		b[1] = (unsigned char)(n >> 8);
		b[2] = (unsigned char)n;
		return 3;
	}
	b[0] = 0xdb;
	b[1] = (unsigned char)(n >> 24);
	b[2] = (unsigned char)(n >> 16);
	b[3] = (unsigned char)(n >> 8);
	b[4] = (unsigned char)n;
	return 5;
}

void sp_mapw_strkn(struct sp_mapw *m, const char *key, size_t kn, const char *s, size_t sn)
{
	struct sp_writer *w = m->w;
	if (kn >= 32 || w->err || w->cap - w->len < kn + sn + 6) {
		msgpack_packer *pk = sp_mapw_key(m, key);
		msgpack_pack_str(pk, sn);
		msgpack_pack_str_body(pk, s, sn);
		return;
	}
	/* Straight into the buffer: the bytes msgpack_pack_str() and its body write. */
	unsigned char *b = (unsigned char *)w->buf + w->len;
	put_key(b, key, kn);
	size_t n = kn + 1;
	n += put_str_head(b + n, sn);
	memcpy(b + n, s, sn);
	n += sn;
	m->n++;
	w->len += n;
	w->bytes += n;
}

void sp_mapw_strn(struct sp_mapw *m, const char *key, const char *s, size_t n)
{
	msgpack_packer *pk = sp_mapw_key(m, key);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void sp_mapw_bin(struct sp_mapw *m, const char *key, const void *p, size_t n)
{
	msgpack_packer *pk = sp_mapw_key(m, key);
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

void sp_mapw_bool(struct sp_mapw *m, const char *key, bool v)
{
	msgpack_packer *pk = sp_mapw_key(m, key);
	if (v)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

int sp_mapw_end(struct sp_mapw *m)
{
	struct sp_writer *w = m->w;
	w->hold--;
	if (w->err) {
		errno = w->err;
		return -1;
	}
	/* The smallest header for the count, as msgpack_pack_map() would write. */
	uint32_t n = m->n;
	if (n < 16) {
		w->buf[m->start] = (char)(0x80 | n);
		return 0;
	}
	unsigned char h[MAP_HDR_MAX];
	size_t hl;
	if (n < 65536) {
		h[0] = 0xde;
		h[1] = (unsigned char)(n >> 8);
		h[2] = (unsigned char)n;
		hl = 3;
	} else {
		h[0] = 0xdf;
		h[1] = (unsigned char)(n >> 24);
		h[2] = (unsigned char)(n >> 16);
		h[3] = (unsigned char)(n >> 8);
		h[4] = (unsigned char)n;
		hl = MAP_HDR_MAX;
	}
	/* The body moves up to make room for the longer header. */
	size_t body = w->len - m->start - 1;
	if (w->cap - w->len < hl - 1 && hold_room(w, hl - 1) < 0)
		return -1;
	memmove(w->buf + m->start + hl, w->buf + m->start + 1, body);
	memcpy(w->buf + m->start, h, hl);
	w->len += hl - 1;
	w->bytes += hl - 1;
	return 0;
}

/* SHA-1 (FIPS 180-4), for content identities of files without a build-id. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/sha1.h"

static uint32_t rol(uint32_t x, int n)
{
	return x << n | x >> (32 - n);
}

static void block(struct sp_sha1 *s, const unsigned char *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
}

void sp_sha1_init(struct sp_sha1 *s)
{
	static const uint32_t init[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	memcpy(s->h, init, sizeof(init));
	s->len = 0;
	s->nbuf = 0;
}

void sp_sha1_update(struct sp_sha1 *s, const void *p, size_t n)
{
	const unsigned char *b = p;
	s->len += n;
	while (n > 0) {
		size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;
		memcpy(s->buf + s->nbuf, b, k);
		s->nbuf += k;
		b += k;
		n -= k;
		if (s->nbuf == 64) {
			block(s, s->buf);
			s->nbuf = 0;
		}
	}
}

void sp_sha1_final(struct sp_sha1 *s, unsigned char out[20])
{
	uint64_t bits = s->len * 8;
	unsigned char pad = 0x80, zero = 0, lenb[8];
	sp_sha1_update(s, &pad, 1);
	while (s->nbuf != 56)
		sp_sha1_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	sp_sha1_update(s, lenb, 8);
	for (int i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
}

int sp_sha1_fd(int fd, unsigned char out[20])
{
	struct sp_sha1 s;
	unsigned char buf[65536];
	sp_sha1_init(&s);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		sp_sha1_update(&s, buf, (size_t)n);
	}
	sp_sha1_final(&s, out);
	return 0;
}

/* SPDX-License-Identifier: MIT
 * Unit tests of stream/ustack.h: stack copies written with shared tails
 * ("ustack" + "ustack_shared") and rebuilt by the reader.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "stream/ustack.h"
#include "util/alloc.h"

/* A small deterministic generator, so a failure can be replayed. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)rng_state;
}

/*
 * Encodes one copy and decodes what a writer would write from it; checks
 * that the reader rebuilds the copy.  Returns the shared length.
 */
static size_t round_trip(struct sp_ustack_cache *enc, struct sp_ustack_cache *dec,
			 uint32_t tid, uint64_t sp, const unsigned char *copy, size_t len)
{
	size_t shared = 99;
	SP_CHECK(sp_ustack_encode(enc, tid, sp, copy, len, &shared) == 0);
	SP_CHECK(shared <= len);
	const unsigned char *full;
	size_t full_len;
	int rc = sp_ustack_decode(dec, tid, len - shared ? copy : NULL, len - shared, shared,
				  &full, &full_len);
	SP_CHECK(rc == SP_USTACK_OK);
	SP_CHECK(full_len == len);
	if (full_len == len && len)
		SP_CHECK_MEM(full, copy, len);
	return shared;
}

/*
 * Threads whose stacks grow, shrink and change near the stack pointer,
 * sampled in an interleaved order; now and then a thread runs on another
 * stack (another end address), or exits and its tid comes back.
 */
SP_TEST(ustack_round_trip_of_interleaved_threads)
{
	enum { THREADS = 5, STACK = 8192, SAMPLES = 4000 };
	static unsigned char mem[THREADS][2][STACK];
	uint64_t top[THREADS][2];
	int which[THREADS] = { 0 };
	for (int t = 0; t < THREADS; t++)
		for (int k = 0; k < 2; k++) {
			for (int i = 0; i < STACK; i++)
				mem[t][k][i] = (unsigned char)rnd();
			top[t][k] = 0x7ffc00000000ull + (uint64_t)(t * 2 + k) * 0x100000;
		}
	struct sp_ustack_cache enc, dec;
	sp_ustack_cache_init(&enc);
	sp_ustack_cache_init(&dec);
	size_t written = 0, total = 0;
	for (int s = 0; s < SAMPLES; s++) {
		int t = (int)(rnd() % THREADS);
		uint32_t tid = 1000 + (uint32_t)t;
		switch (rnd() % 40) {
		case 0:
			which[t] ^= 1;	/* another stack: nothing in common */
			break;
		case 1:
			sp_ustack_forget(&enc, tid);	/* exited: the writer starts afresh */
			break;
		default:
			break;
		}
		unsigned char *m = mem[t][which[t]];
		size_t len = 1 + rnd() % (STACK - 1);
		/* The frames near the stack pointer change between samples. */
		size_t dirty = rnd() % 64;
		for (size_t i = 0; i < dirty && i < len; i++)
			m[STACK - len + i] = (unsigned char)rnd();
		if (rnd() % 8 == 0)
			m[STACK - 1 - rnd() % STACK] ^= 1;	/* deep in the stack too */
		uint64_t sp = top[t][which[t]] - len;
		size_t shared = round_trip(&enc, &dec, tid, sp, m + STACK - len, len);
		written += len - shared;
		total += len;
	}
	/* The point of the encoding: far fewer bytes than the copies hold. */
	SP_CHECK(written < total / 2);
	sp_ustack_cache_release(&enc);
	sp_ustack_cache_release(&dec);
}

/* format/vectors/raw.jsonl: thread 4242's second sample shares 6 bytes. */
SP_TEST(ustack_matches_the_format_vector)
{
	unsigned char first[24], second[8] = { 0xfe, 0xff };
	for (int i = 0; i < 24; i++)
		first[i] = (unsigned char)(0x10 + i);
	memcpy(second + 2, first + 18, 6);
	uint64_t sp1 = 140737488346880ull, sp2 = 140737488346896ull;
	struct sp_ustack_cache enc, dec;
	sp_ustack_cache_init(&enc);
	sp_ustack_cache_init(&dec);
	size_t shared;
	SP_CHECK(sp_ustack_encode(&enc, 4242, sp1, first, sizeof(first), &shared) == 0);
	SP_CHECK(shared == 0);
	SP_CHECK(sp_ustack_encode(&enc, 4242, sp2, second, sizeof(second), &shared) == 0);
	SP_CHECK(shared == 6);

	const unsigned char *full;
	size_t len;
	SP_CHECK(sp_ustack_decode(&dec, 4242, first, sizeof(first), 0, &full, &len) == 0);
	SP_CHECK(len == 24);
	/* Another thread in between changes nothing for 4242. */
	static const unsigned char other[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	SP_CHECK(sp_ustack_decode(&dec, 4243, other, sizeof(other), 0, &full, &len) == 0);
	SP_CHECK(sp_ustack_decode(&dec, 4242, "\xfe\xff", 2, 6, &full, &len) == 0);
	SP_CHECK(len == 8);
	if (len == 8)
		SP_CHECK_MEM(full, second, 8);
	sp_ustack_cache_release(&enc);
	sp_ustack_cache_release(&dec);
}

SP_TEST(ustack_shares_only_equal_bytes_at_the_same_addresses)
{
	unsigned char a[64], b[64];
	for (int i = 0; i < 64; i++)
		a[i] = b[i] = (unsigned char)i;
	struct sp_ustack_cache c;
	sp_ustack_cache_init(&c);
	size_t shared;
	SP_CHECK(sp_ustack_encode(&c, 7, 0x1000, a, 64, &shared) == 0 && shared == 0);
	/* The same bytes ending elsewhere are other memory. */
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 0);
	/* The same end: all of it, then up to a difference 13 bytes from the end. */
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 64);
	b[64 - 14] ^= 0xff;
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 13);
	/* A shorter copy ending at the same address shares at most its length. */
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000 + 60, b + 60, 4, &shared) == 0 && shared == 4);
	/* A longer one at most the previous copy's length. */
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 4);
	/* An empty copy shares nothing and keeps the last one. */
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2040, b, 0, &shared) == 0 && shared == 0);
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 64);
	sp_ustack_forget(&c, 7);
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 0);
	sp_ustack_cache_release(&c);
	/* A released cache is empty and usable. */
	SP_CHECK(sp_ustack_encode(&c, 7, 0x2000, b, 64, &shared) == 0 && shared == 0);
	sp_ustack_cache_release(&c);
}

SP_TEST(ustack_decoder_refuses_a_share_it_cannot_complete)
{
	struct sp_ustack_cache c;
	sp_ustack_cache_init(&c);
	const unsigned char *full;
	size_t len;
	static const unsigned char x[4] = { 1, 2, 3, 4 }, y[2] = { 9, 9 };
	/* No earlier copy of the thread: the copy is ustack alone. */
	SP_CHECK(sp_ustack_decode(&c, 1, x, 4, 2, &full, &len) == SP_USTACK_BAD_SHARE);
	SP_CHECK(len == 4);
	if (len == 4)
		SP_CHECK_MEM(full, x, 4);
	/* More than the earlier copy had. */
	SP_CHECK(sp_ustack_decode(&c, 1, y, 2, 5, &full, &len) == SP_USTACK_BAD_SHARE);
	SP_CHECK(len == 2);
	/* Exactly what it had. */
	SP_CHECK(sp_ustack_decode(&c, 1, x, 4, 2, &full, &len) == SP_USTACK_OK);
	SP_CHECK(len == 6);
	static const unsigned char want[6] = { 1, 2, 3, 4, 9, 9 };
	if (len == 6)
		SP_CHECK_MEM(full, want, 6);
	/* A sample without a copy has none, and the thread keeps its last. */
	SP_CHECK(sp_ustack_decode(&c, 1, NULL, 0, 0, &full, &len) == SP_USTACK_OK);
	SP_CHECK(full == NULL && len == 0);
	SP_CHECK(sp_ustack_decode(&c, 1, NULL, 0, 6, &full, &len) == SP_USTACK_OK);
	SP_CHECK(len == 6);
	if (len == 6)
		SP_CHECK_MEM(full, want, 6);
	/* A new segment knows no thread. */
	sp_ustack_cache_release(&c);
	SP_CHECK(sp_ustack_decode(&c, 1, NULL, 0, 1, &full, &len) == SP_USTACK_BAD_SHARE);
	SP_CHECK(len == 0);
	sp_ustack_cache_release(&c);
}

/* Out of memory on either side: an error, and no stale copy to share with. */
SP_TEST(ustack_out_of_memory_keeps_the_stream_correct)
{
	static unsigned char m[256];
	for (int i = 0; i < 256; i++)
		m[i] = (unsigned char)(i * 7);
	struct sp_ustack_cache enc, dec;
	sp_ustack_cache_init(&enc);
	sp_ustack_cache_init(&dec);
	round_trip(&enc, &dec, 3, 0x10000 - 100, m + 156, 100);
	size_t shared = 99;
	sp_alloc_fail_after = 1;	/* the growth to 256 bytes fails */
	SP_CHECK(sp_ustack_encode(&enc, 3, 0x10000 - 256, m, 256, &shared) == -1);
	sp_alloc_fail_after = 0;
	SP_CHECK(shared == 0);
	/* The writer wrote nothing for it; the next copy must not lean on the old one. */
	SP_CHECK(round_trip(&enc, &dec, 3, 0x10000 - 256, m, 256) == 0);
	SP_CHECK(round_trip(&enc, &dec, 3, 0x10000 - 256, m, 256) == 256);

	const unsigned char *full;
	size_t len;
	SP_CHECK(sp_ustack_decode(&dec, 4, m, 8, 0, &full, &len) == 0);
	sp_alloc_fail_after = 1;
	SP_CHECK(sp_ustack_decode(&dec, 4, m, 200, 8, &full, &len) == -1);
	sp_alloc_fail_after = 0;
	SP_CHECK(full == NULL && len == 0);
	SP_CHECK(sp_ustack_decode(&dec, 4, m, 8, 8, &full, &len) == SP_USTACK_BAD_SHARE);
	sp_ustack_cache_release(&enc);
	sp_ustack_cache_release(&dec);
}

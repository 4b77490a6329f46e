/* SPDX-License-Identifier: MIT
 * fuzz-ustack: the stack copies of raw samples and their shared tails
 * (stream/ustack.h).  The input is a sequence of samples, each a header
 * of 7 bytes (tid: 1, the stack pointer's low bits: 2, length: 2,
 * "ustack_shared" as a reader may find it: 2) and then length bytes of
 * stack copy.
 *
 * For every sample it checks that
 *   - what the writer encodes, the reader decodes back to the exact copy
 *     (a round trip through sp_ustack_encode() and sp_ustack_decode(),
 *     each with its own cache);
 *   - the reader, given the bytes with an arbitrary "ustack_shared", never
 *     reads outside them or the thread's last copy: the result is the
 *     bytes followed by the tail of the last copy (SP_USTACK_OK), or the
 *     bytes alone (SP_USTACK_BAD_SHARE), and never longer than both.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/ustack.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* The last full copy of each of the 4 threads, as this harness sees it. */
struct last {
	unsigned char *p;
	size_t len;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_ustack_cache enc, dec, raw;
	struct last last[4] = { { 0 } };
	sp_ustack_cache_init(&enc);
	sp_ustack_cache_init(&dec);
	sp_ustack_cache_init(&raw);
	size_t off = 0;
	while (size - off >= 7) {
		uint32_t tid = data[off] & 3;
		uint64_t sp = 0x7ff000000000ull + (data[off + 1] | data[off + 2] << 8);
		size_t len = (size_t)(data[off + 3] | data[off + 4] << 8);
		uint64_t shared_in = (uint64_t)(data[off + 5] | data[off + 6] << 8);
		off += 7;
		if (len > size - off)
			len = size - off;
		const unsigned char *copy = data + off;
		off += len;

		/* The round trip. */
		size_t shared;
		check(sp_ustack_encode(&enc, tid, sp, copy, len, &shared) == 0);
		check(shared <= len);
		const unsigned char *out;
		size_t out_len;
		int rc = sp_ustack_decode(&dec, tid, len - shared ? copy : NULL, len - shared,
					  shared, &out, &out_len);
		check(rc == SP_USTACK_OK);
		check(out_len == len);
		check(len == 0 || memcmp(out, copy, len) == 0);

		/* The reader on its own, with a share the writer did not choose. */
		struct last *l = &last[tid];
		rc = sp_ustack_decode(&raw, tid, len ? copy : NULL, len, shared_in, &out, &out_len);
		check(rc == SP_USTACK_OK || rc == SP_USTACK_BAD_SHARE);
		if (len == 0 && shared_in == 0) {
			check(out == NULL && out_len == 0);
			continue;
		}
		if (rc == SP_USTACK_OK) {
			check(shared_in <= l->len);
			check(out_len == len + shared_in);
			check(len == 0 || memcmp(out, copy, len) == 0);
			check(shared_in == 0 ||
			      memcmp(out + len, l->p + l->len - shared_in, shared_in) == 0);
		} else {
			check(shared_in > l->len);
			check(out_len == len && (len == 0 || memcmp(out, copy, len) == 0));
		}
		unsigned char *keep = malloc(out_len ? out_len : 1);
		check(keep != NULL);
		if (out_len)
			memcpy(keep, out, out_len);
		free(l->p);
		l->p = keep;
		l->len = out_len;
	}
	for (int i = 0; i < 4; i++)
		free(last[i].p);
	sp_ustack_cache_release(&enc);
	sp_ustack_cache_release(&dec);
	sp_ustack_cache_release(&raw);
	return 0;
}

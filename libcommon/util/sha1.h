/* SPDX-License-Identifier: MIT
 * SHA-1 of a file's contents: the identity of a module that has no
 * build-id (format/sp-stream.md, "content_id").  Core layer.  The hashing
 * is nettle's, the library libdebuginfod already loads.
 */
#ifndef SP_SHA1_H
#define SP_SHA1_H

#include <stddef.h>
#include <stdint.h>

#include <nettle/sha1.h>

struct sp_sha1 {
	struct sha1_ctx ctx;
};

void sp_sha1_init(struct sp_sha1 *s);
void sp_sha1_update(struct sp_sha1 *s, const void *p, size_t n);
void sp_sha1_final(struct sp_sha1 *s, unsigned char out[20]);

/* The SHA-1 of everything readable from fd (from its current offset). */
int sp_sha1_fd(int fd, unsigned char out[20]);

#endif

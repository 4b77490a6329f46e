/* SPDX-License-Identifier: MIT
 * The user stack copy of a raw sample, and its tail sharing: the keys
 * "ustack" and "ustack_shared" of the sample record (format/sp-stream.md,
 * "sample").
 *
 * A sample's full copy is the memory from its stack pointer upward, byte
 * i being the memory at sp + i.  Consecutive copies of one thread usually
 * end with the same bytes (the outer frames, the environment, the
 * auxiliary vector), so a writer writes only the differing start as
 * "ustack" and says in "ustack_shared" how many bytes follow it: the last
 * ones of the full copy of the previous sample record with the same tid
 * in the segment.  The full copy is "ustack" followed by those bytes.
 * A writer shares a tail only when both copies end at the same address
 * (sp + length), so the shared bytes are the same memory.
 *
 * Both directions keep the last full copy of each thread in a struct
 * sp_ustack_cache and must see a thread's samples in stream order: the
 * writer in the order it writes them (sp_ustack_encode()), the reader in
 * the order it reads them (sp_ustack_decode()).  A segment starts with an
 * empty cache (sp_ustack_cache_release() empties one).
 *
 *	struct sp_ustack_cache c;
 *	sp_ustack_cache_init(&c);
 *	writer:	sp_ustack_encode(&c, tid, sp, copy, len, &shared);
 *		write "ustack" = the first len - shared bytes of copy,
 *		and "ustack_shared" = shared when it is nonzero;
 *	reader:	rc = sp_ustack_decode(&c, tid, ustack, ustack_len, shared,
 *				      &copy, &len);
 *	sp_ustack_cache_release(&c);
 */
#ifndef SP_STREAM_USTACK_H
#define SP_STREAM_USTACK_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "util/hashmap.h"

/*
 * The last full copy of every thread: tid -> struct sp_ustack_copy; peak
 * is the most threads it has held at once since it was made.
 */
struct sp_ustack_cache {
	struct sp_u64map threads;
	size_t peak;
};

void sp_ustack_cache_init(struct sp_ustack_cache *c);

/* Frees every copy; c is left empty and ready for a new segment. */
void sp_ustack_cache_release(struct sp_ustack_cache *c);

/* Forgets the copy of a thread (one that exited, whose tid may be reused). */
void sp_ustack_forget(struct sp_ustack_cache *c, uint32_t tid);

/*
 * Reader: an exit record (its map) whose "ustack_reset" is true (1.6)
 * promises that no later sample of its tid shares a tail with a copy
 * before it, so the thread's copy is forgotten.  Without that key (an
 * older writer) the copy is kept, as a later sample of a reused tid may
 * still share with it.
 */
void sp_ustack_note_exit(struct sp_ustack_cache *c, const msgpack_object *exit);

/*
 * Writer: notes the full copy of a sample of tid, len bytes at copy that
 * start at the stack pointer sp, and keeps it as the thread's last.
 * *shared receives how many bytes at its end equal the end of the
 * thread's previous copy at the same addresses: the sample's "ustack" is
 * then the first len - *shared bytes, and "ustack_shared" is *shared
 * (written only when nonzero).  A copy of length 0 shares nothing and
 * leaves the thread's last copy as it was.  Returns 0, or -1 when memory
 * runs out: *shared is then 0 and the thread has no last copy, which
 * keeps the stream correct.
 */
int sp_ustack_encode(struct sp_ustack_cache *c, uint32_t tid, uint64_t sp,
		     const void *copy, size_t len, size_t *shared);

/* What sp_ustack_decode() returns besides -1. */
enum sp_ustack_status {
	SP_USTACK_OK = 0,
	/*
	 * "ustack_shared" was larger than the thread's last copy, or the
	 * thread had none: the record is malformed.  The copy is "ustack"
	 * alone, and is kept as the thread's last.
	 */
	SP_USTACK_BAD_SHARE = 1,
};

/*
 * Reader: rebuilds the full copy of a sample of tid from its "ustack"
 * (len bytes at ustack; NULL when len is 0) and "ustack_shared" (shared;
 * 0 when absent), and keeps it as the thread's last.  *copy and
 * *copy_len receive the full copy, owned by the cache and valid until
 * the next call on it.  A sample with neither (len and shared 0) has no
 * copy: *copy is NULL, *copy_len 0 and the thread's last copy stays.
 * Returns SP_USTACK_OK, SP_USTACK_BAD_SHARE, or -1 when memory runs out
 * (no copy, and the thread's last copy is forgotten).
 */
int sp_ustack_decode(struct sp_ustack_cache *c, uint32_t tid, const void *ustack,
		     size_t len, uint64_t shared, const unsigned char **copy,
		     size_t *copy_len);

#endif

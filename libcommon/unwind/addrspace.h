/* SPDX-License-Identifier: MIT
 * Address spaces as a stream describes them: each process's executable
 * mappings, kept from process, map, fork, exec and exit records, so that
 * each sample is interpreted against what was mapped at its time.
 * Core layer: no printing.
 */
#ifndef SP_ADDRSPACE_H
#define SP_ADDRSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buildid.h"
#include "stream/record.h"

/*
 * A mapped object: one per distinct (path, build-id), or per process for
 * anonymous memory.  Owned by the address-space table; the unwinder hangs
 * its per-file state on it.
 */
struct sp_object {
	char *path;
	unsigned char build_id[SP_BUILD_ID_MAX];
	int build_id_len;
	bool content_id;	/* build_id holds a SHA-1 of the file instead */
	uint32_t anon_pid;	/* anonymous memory: the process; else 0 */
	bool anon;		/* //anon, [heap], memfd: no file to read */
	bool vdso;
	/*
	 * The stream's image of a vDSO of this path and build-id (an image
	 * record), image_len bytes owned by the table; NULL: none.
	 */
	const void *image;
	size_t image_len;
	void *priv;		/* the user's state for this object */
	uint64_t out_id;	/* a consumer's id for it, UINT64_MAX: none yet */
	/*
	 * Its place in the table's creation order, from 0 in each segment:
	 * tables given the same records give an object the same index.
	 */
	size_t index;
	/*
	 * The latest mapping of the file by any process: where a stream of
	 * this boot may still find the very file (in a container, say).
	 */
	uint32_t last_pid;
	uint64_t last_start, last_end;
};

struct sp_mapping {
	uint64_t start, end, pgoff;
	struct sp_object *obj;
};

struct sp_addrspaces;

/* Returns NULL only when memory runs out. */
struct sp_addrspaces *sp_addrspaces_new(void);

/* Frees everything; free_priv (may be NULL) is called for each object. */
void sp_addrspaces_free(struct sp_addrspaces *a, void (*free_priv)(void *));

/* Forgets every process and object (a new segment starts). */
void sp_addrspaces_reset(struct sp_addrspaces *a, void (*free_priv)(void *));

/*
 * Applies a process, map, fork, exec, exit, image or jitdump record;
 * other records are ignored.  Returns 0, or -1 when memory runs out.
 */
int sp_addrspaces_apply(struct sp_addrspaces *a, enum sp_rtype type,
			const msgpack_object *rec);

/*
 * The address spaces' generation: a number no other address spaces of
 * the process has had, that changes whenever a record is applied or they
 * are reset.  What was found in them (a mapping, its object) stays valid
 * while it is the same.
 */
uint64_t sp_addrspaces_gen(const struct sp_addrspaces *a);

/* The mapping of pid that contains addr, or NULL. */
const struct sp_mapping *sp_addrspaces_find(struct sp_addrspaces *a,
					    uint32_t pid, uint64_t addr);

/* The object of that index (struct sp_object), or NULL. */
struct sp_object *sp_addrspaces_object(struct sp_addrspaces *a, size_t index);

/* Calls fn for every object, e.g. to report counts. */
void sp_addrspaces_each_object(struct sp_addrspaces *a,
			       void (*fn)(struct sp_object *o, void *arg), void *arg);

#endif

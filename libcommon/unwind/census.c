/* SPDX-License-Identifier: MIT
 * The unwinder's census of objects and cached rules (census.h).
 */
#include "unwind/census.h"
#include "unwind/internal.h"

enum sp_object_census sp_unwinder_object_census(const struct sp_object *o)
{
	const struct modstate *ms = o->priv;
	if (!ms)
		return SP_OBJ_UNTRIED;
	/* module.c counts neither: they have no file of their own to open. */
	if (o->anon || o->vdso)
		return SP_OBJ_UNCOUNTED;
	if (ms->state == M_OK)
		return SP_OBJ_OPENED;
	return ms->state == M_MISMATCH ? SP_OBJ_MISMATCHED : SP_OBJ_MISSING;
}

void sp_unwinder_object_rules(const struct sp_object *o,
			      void (*fn)(void *arg, uint64_t addr), void *arg)
{
	const struct modstate *ms = o->priv;
	size_t i = 0;
	uint64_t addr;
	void *rule;
	while (ms && sp_u64map_next(&ms->rules, &i, &addr, &rule))
		fn(arg, addr);
}

void sp_unwinder_jit_rules(struct sp_addrspaces *a,
			   void (*fn)(void *arg, uint64_t pid, uint64_t start, uint64_t addr),
			   void *arg)
{
	sp_jitcfi_rules(sp_addrspaces_jitcfi(a), fn, arg);
}

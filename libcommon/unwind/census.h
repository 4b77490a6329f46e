/* SPDX-License-Identifier: MIT
 * What an unwinder did with each object and each cached rule, so that
 * several unwinders given the same records, each unwinding a share of
 * the samples (unwind/parallel.h), can count their modules and their
 * rule cache as one unwinder given every sample would have: a module
 * tried by any of them once, a rule missed once by all of them together.
 * Core layer: no printing.
 */
#ifndef SP_UNWIND_CENSUS_H
#define SP_UNWIND_CENSUS_H

#include <stdint.h>

#include "unwind/addrspace.h"

/* What became of an object's file; the counted ones are the unwinder's modules_*. */
enum sp_object_census {
	SP_OBJ_UNTRIED,		/* no sample needed it yet */
	SP_OBJ_OPENED,
	SP_OBJ_MISSING,
	SP_OBJ_MISMATCHED,
	SP_OBJ_UNCOUNTED,	/* tried, but anonymous memory or the vDSO: never counted */
};

/* The census of o in the unwinder that hung its state on o (sp_unwind()). */
enum sp_object_census sp_unwinder_object_census(const struct sp_object *o);

/* Calls fn with each module-relative address whose rule is cached for o. */
void sp_unwinder_object_rules(const struct sp_object *o,
			      void (*fn)(void *arg, uint64_t addr), void *arg);

/*
 * Calls fn with each address whose rule is cached for JIT code of the
 * table's jitdump records: the process, the start of the code, the address.
 */
void sp_unwinder_jit_rules(struct sp_addrspaces *a,
			   void (*fn)(void *arg, uint64_t pid, uint64_t start, uint64_t addr),
			   void *arg);

#endif

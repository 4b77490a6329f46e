/* SPDX-License-Identifier: MIT */
/* Which samples count: sp-fold's --only-pid, --only-tid, --only-comm, --from and --to. */
#include <string.h>

#include "fold/internal.h"

static bool listed_u64(const uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

bool fold_wanted(const struct sp_fold *f, uint64_t pid, uint64_t tid, const char *comm)
{
	if (f->o.npids && !listed_u64(f->o.pids, f->o.npids, pid))
		return false;
	if (f->o.ntids && !listed_u64(f->o.tids, f->o.ntids, tid))
		return false;
	if (!f->o.ncomms)
		return true;
	for (size_t i = 0; i < f->o.ncomms; i++)
		if (comm && strcmp(f->o.comms[i], comm) == 0)
			return true;
	return false;
}

bool fold_in_range(const struct sp_fold *f, uint64_t ns)
{
	/* Seconds from the recording's start: the header's anchor, or the first event. */
	double rel = ns >= f->seg_start ? (double)(ns - f->seg_start) / 1e9 : 0;
	return rel >= f->o.from && rel < f->o.to;
}

/* SPDX-License-Identifier: MIT
 * The stack window changed during a recording (sp-capture --stack-size
 * auto): the kernel fixes an event's sample_stack_user when it opens
 * it, so every sampling event is closed and opened again with the new
 * window, for the same threads (and, with inherit, every thread of the
 * processes followed so far) or the same CPUs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"
#include "capture/recorder.h"
#include "util/procfs.h"

/* A thread that had events of its own: opened again, if it still exists. */
struct had {
	pid_t pid, tid;
};

static bool has_events(const struct sp_capture *r, pid_t tid)
{
	for (size_t j = 0; j < r->nevents; j++)
		if (r->events[j].tid == tid)
			return true;
	return false;
}

/*
 * With inherit, the threads of the processes followed that have no
 * events now: those that had inherited their creator's, which closed
 * with it.
 */
static int reopen_inherited(struct sp_capture *r, uint64_t t)
{
	size_t i = 0;
	uint64_t key;
	void *val;
	while (sp_u64map_next(&r->procs, &i, &key, &val)) {
		const struct sp_rec_proc *p = val;
		pid_t *tids;
		size_t n;
		if (!p->alive || p->pid <= 0 || sp_proc_tasks(p->pid, &tids, &n) < 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (has_events(r, tids[k]))
				continue;
			int rc = sp_rec_open_thread(r, p->pid, tids[k], false);
			if (rc < 0) {
				free(tids);
				return -1;
			}
			if (rc == 0 && sp_rec_tid_note(r, tids[k]))
				sp_rec_synth_thread(r, p->pid, tids[k], t);
		}
		free(tids);
	}
	return 0;
}

int sp_capture_set_stack_size(struct sp_capture *r, uint32_t size, uint64_t stacks)
{
	if (r->o.call_graph_fp || size == 0 || size > SP_MAX_STACK_SIZE || size % 8)
		return sp_error_set(&r->err, SP_ERR_INVALID, "invalid stack window %u", size);
	/* What the old events sampled goes to the queue before their rings go. */
	if (sp_rec_drain(r, 0) < 0)
		return -1;
	struct had *had = malloc((r->nevents + 1) * sizeof(*had));
	if (!had)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	size_t nhad = 0;
	for (size_t i = 0; i < r->nevents; i++) {
		if (r->events[i].tid <= 0)
			continue;
		bool seen = false;
		for (size_t k = 0; k < nhad && !seen; k++)
			seen = had[k].tid == r->events[i].tid;
		if (!seen)
			had[nhad++] = (struct had){ r->events[i].pid, r->events[i].tid };
	}
	sp_rec_disable_events(r);
	sp_rec_read_format_lost(r);
	sp_rec_drain(r, 0);
	sp_rec_close_events(r, 0);
	r->o.stack_size = size;
	r->stack_chosen = size;
	r->stack_cal_stacks = stacks;

	int rc = 0;
	uint64_t t = sp_rec_now_ns();
	if (r->o.system_wide) {
		for (int ci = 0; ci < r->ncpus && rc == 0; ci++)
			rc = sp_rec_open_cpu(r, ci);
	} else {
		for (size_t k = 0; k < nhad && rc >= 0; k++) {
			/* Enabled as each is opened; 1: the thread has ended meanwhile. */
			rc = sp_rec_open_thread(r, had[k].pid, had[k].tid, false);
			if (rc == 1)
				rc = 0;
		}
		if (rc == 0 && r->o.inherit)
			rc = reopen_inherited(r, t);
	}
	free(had);
	return rc < 0 ? -1 : 0;
}

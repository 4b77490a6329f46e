/* SPDX-License-Identifier: MIT
 * System-wide recording (internal.h), as perf record -a: one event per
 * chosen CPU for every task (pid -1), so the kernel reports the fork,
 * comm, exec and mmap of every process from then on; what every process
 * already was is read from /proc after the events are on, stamped with a
 * time taken before the first of them opened, as attach.c does for one
 * process.  The idle task of each CPU (pid 0, tid 0) has no /proc entry:
 * its process record, named "swapper" as the kernel names it, is made
 * up here.  Kernel threads get process and thread records, marked
 * kernel_thread, and no mappings.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"

/* The records of one process of /proc; one that has ended is passed over. */
static void synth_one(struct sp_capture *r, pid_t pid, uint64_t t)
{
	struct sp_proc_stat st;
	if (sp_proc_stat(pid, &st) < 0)
		return;
	sp_rec_synth_process(r, pid, &st, t);
	pid_t *tids;
	size_t n;
	if (sp_proc_tasks(pid, &tids, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			sp_rec_synth_thread(r, pid, tids[i], t);
		free(tids);
	}
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, true);
	if (p) {
		p->alive = true;
		p->start_key = st.start_ns;
		p->uid = st.uid;
	}
	if (st.kthread)
		return;
	const char *via = sp_rec_synth_maps(r, pid, t);
	if (p)
		p->cpython = via != NULL;
	sp_rec_queue_runtime(r, pid, t, via != NULL, via ? via : "none");
}

/* The idle task: pid 0, tid 0, on every CPU. */
static void synth_idle(struct sp_capture *r, uint64_t t)
{
	struct sp_proc_stat st = { .pid = 0, .state = 'R', .kthread = true };
	snprintf(st.comm, sizeof(st.comm), "swapper");
	sp_rec_synth_process(r, 0, &st, t);
	sp_rec_synth_thread(r, 0, 0, t);
	struct sp_rec_proc *p = sp_rec_proc_get(r, 0, true);
	if (p)
		p->alive = true;
}

int sp_capture_attach_system(struct sp_capture *r)
{
	if (!r->o.system_wide)
		return sp_error_set(&r->err, SP_ERR_INVALID,
				    "the recorder was not made to record every CPU");
	if (r->nevents)
		return sp_error_set(&r->err, SP_ERR_INVALID,
				    "the recorder already records every CPU");
	if (r->ncpus == 0)
		return sp_error_set(&r->err, SP_ERR_INVALID,
				    "none of the CPUs asked for is online (see "
				    "/sys/devices/system/cpu/online)");
	uint64_t t = sp_rec_now_ns();
	for (int ci = 0; ci < r->ncpus; ci++)
		if (sp_rec_open_cpu(r, ci) < 0) {
			sp_rec_close_events(r, 0);
			return -1;
		}
	synth_idle(r, t);
	DIR *d = opendir("/proc");
	if (!d)
		return sp_error_errno(&r->err, "cannot list the processes in /proc");
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || end == e->d_name)
			continue;
		synth_one(r, (pid_t)pid, t);
	}
	closedir(d);
	return 0;
}

/* SPDX-License-Identifier: MIT
 * Samples (internal.h): a PERF_RECORD_SAMPLE is checked and kept in
 * the queue as it came; when its turn comes it is written as a sample
 * record whose stack copy shares its tail with the thread's previous one
 * (stream/ustack.h).
 */
#include <linux/perf_event.h>
#include <string.h>

#include "capture/internal.h"
#include "stream/records.h"

/* A sample as the queue keeps it, followed by regs, kernel ips, user ips, stack. */
struct pending_sample {
	uint32_t pid, tid, cpu;
	uint64_t time, period, abi, nregs, nk, nu, dyn;
	uint32_t event;
	bool full, kernel, fp, ufull;
};

/*
 * The entries of a sample's callchain (nr addresses at ips) that lie in
 * context ctx_want (PERF_CONTEXT_KERNEL or PERF_CONTEXT_USER), the
 * context markers dropped, leaf first: returns their number, and queues
 * each when queue is set.
 */
static uint64_t chain_entries(struct sp_capture *r, const unsigned char *ips, uint64_t nr,
			      uint64_t ctx_want, bool queue)
{
	uint64_t n = 0, ctx = 0;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip;
		memcpy(&ip, ips + i * 8, 8);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip;
		} else if (ctx == ctx_want) {
			n++;
			if (queue)
				sp_rec_q_add(r, &ip, 8);
		}
	}
	return n;
}

/*
 * The fields follow sample_type's bit order: IDENTIFIER (with several
 * events), TID, TIME, CPU, PERIOD (unless the event's period is fixed),
 * CALLCHAIN (with --kernel or --call-graph fp), REGS_USER and STACK_USER
 * (but with --call-graph fp).
 */
void sp_rec_handle_sample(struct sp_capture *r, const unsigned char *rec, size_t size)
{
	const unsigned char *p = rec + sizeof(struct perf_event_header), *end = rec + size;
	uint32_t pid, tid, cpu;
	uint64_t time, period, nr = 0, abi = 0, ssize = 0, dyn = 0, id = 0;
	const unsigned char *ips = NULL, *regs = NULL, *stack = NULL;
	uint32_t event = 0;

#define TAKE(dst, n) do { if ((size_t)(end - p) < (n)) goto bad; memcpy((dst), p, (n)); p += (n); } while (0)
	if (r->nev > 1) {
		TAKE(&id, 8);
		uintptr_t ev = (uintptr_t)sp_u64map_get(&r->ids, id);
		if (!ev)
			goto bad;
		event = (uint32_t)(ev - 1);
	}
	TAKE(&pid, 4);
	TAKE(&tid, 4);
	TAKE(&time, 8);
	TAKE(&cpu, 4);
	p += 4;
	if (!(period = sp_rec_fixed_period(r, (int)event)))
		TAKE(&period, 8);
	bool fp = r->o.call_graph_fp;
	if (r->kernel_enabled || fp) {
		TAKE(&nr, 8);
		if ((size_t)(end - p) / 8 < nr)
			goto bad;
		ips = p;
		p += nr * 8;
	}
	if (fp)
		goto taken;
	TAKE(&abi, 8);
	if (abi) {
		if ((size_t)(end - p) < SP_REC_NREGS * 8)
			goto bad;
		regs = p;
		p += SP_REC_NREGS * 8;
	}
	TAKE(&ssize, 8);
	if (ssize) {
		if ((size_t)(end - p) < ssize + 8)
			goto bad;
		stack = p;
		p += ssize;
		TAKE(&dyn, 8);
		if (dyn > ssize)
			dyn = ssize;
	}
taken:
#undef TAKE

	r->sample_events++;
	/* pid 0, tid 0 is a CPU's idle task (swapper): an [idle] sample. */
	bool idle = pid == 0 && tid == 0;
	if ((pid == 0 && !idle) || pid == UINT32_MAX) {
		r->skipped_no_pid++;
		return;
	}
	if ((tid == 0 && !idle) || tid == UINT32_MAX) {
		r->skipped_no_tid++;
		return;
	}
	if (time == 0) {
		r->skipped_no_time++;
		return;
	}
	/* Kernel entries: markers dropped, user entries counted unless kept. */
	uint64_t kframes = chain_entries(r, ips, nr, (uint64_t)PERF_CONTEXT_KERNEL, false);
	if (!fp)
		r->ignored_user += chain_entries(r, ips, nr, (uint64_t)PERF_CONTEXT_USER, false);
	if (fp) {
		uint64_t nu = chain_entries(r, ips, nr, (uint64_t)PERF_CONTEXT_USER, false);
		/* The kernel's walk stops at its limit, markers not counted. */
		bool ufull = nu > 0 && kframes + nu >= r->max_stack;
		/* Recording every task, no user frame may mean no user space. */
		bool kernel_task = !nu && (idle || r->o.system_wide);
		if (!nu && !kernel_task)
			r->errors[SP_E_NO_USER_REGS]++;
		if (!nu && !kframes && !kernel_task) {
			r->skipped_no_frames++;
			return;
		}
		if (ufull)
			r->truncated++;
		struct pending_sample ps = {
			.pid = pid, .tid = tid, .cpu = cpu, .time = time, .period = period,
			.nk = kframes, .nu = nu, .kernel = r->kernel_enabled, .fp = true,
			.ufull = ufull, .event = event,
		};
		size_t s = sp_rec_q_begin(r);
		sp_rec_q_add(r, &ps, sizeof(ps));
		chain_entries(r, ips, nr, (uint64_t)PERF_CONTEXT_KERNEL, true);
		chain_entries(r, ips, nr, (uint64_t)PERF_CONTEXT_USER, true);
		if (sp_rec_q_end(r, SP_REC_SAMPLE, time, s) == 0)
			r->q[r->nq - 1].sample_pid = (pid_t)pid;
		r->samples++;
		sp_rec_tid_note(r, (pid_t)tid);
		return;
	}
	/*
	 * Recording every task, a sample without user registers is of a task
	 * with no user space (the idle task, a kernel thread): kept, even
	 * with no frame, and no error.
	 */
	bool kernel_task = !abi && (idle || r->o.system_wide);
	if (!abi && !kernel_task)
		r->errors[SP_E_NO_USER_REGS]++;
	if (!abi && kframes == 0 && !kernel_task) {
		r->skipped_no_frames++;
		return;
	}
	if (abi && dyn == 0) {
		r->errors[SP_E_NO_USER_STACK]++;
		if (kframes == 0)
			r->empty_stack++;
	}
	bool full = ssize && dyn == ssize;
	if (full)
		r->truncated++;
	struct pending_sample ps = {
		.pid = pid, .tid = tid, .cpu = cpu, .time = time, .period = period,
		.abi = abi, .nregs = abi ? SP_REC_NREGS : 0, .nk = kframes, .dyn = dyn,
		.full = full, .kernel = r->kernel_enabled, .event = event,
	};
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &ps, sizeof(ps));
	if (abi)
		sp_rec_q_add(r, regs, SP_REC_NREGS * 8);
	chain_entries(r, ips, nr, (uint64_t)PERF_CONTEXT_KERNEL, true);
	if (dyn)
		sp_rec_q_add(r, stack, dyn);
	if (sp_rec_q_end(r, SP_REC_SAMPLE, time, s) == 0)
		r->q[r->nq - 1].sample_pid = (pid_t)pid;
	r->samples++;
	sp_rec_tid_note(r, (pid_t)tid);
	return;
bad:
	r->errors[SP_E_BAD_KERNEL_RECORD]++;
}

void sp_rec_sample_tid_time(const unsigned char *p, uint32_t *pid, uint32_t *tid,
			    uint64_t *time)
{
	struct pending_sample ps;
	memcpy(&ps, p, sizeof(ps));
	*pid = ps.pid;
	*tid = ps.tid;
	*time = ps.time;
}

/* Writes a queued sample, sharing its stack copy's tail. */
void sp_rec_write_sample(struct sp_capture *r, const unsigned char *p, size_t len,
			 const struct sp_rec_off *off)
{
	struct pending_sample ps;
	memcpy(&ps, p, sizeof(ps));
	if (!off && (int)ps.event == r->offcpu_ev) {
		sp_rec_offcpu_keep(r, p, len);
		return;
	}
	const unsigned char *regs = p + sizeof(ps);
	const unsigned char *kips = regs + ps.nregs * 8;
	const unsigned char *uips = kips + ps.nk * 8;
	const unsigned char *stack = uips + ps.nu * 8;
	size_t shared = 0;
	/* The kernel copies a stack only with the registers (perf_sample_ustack_size). */
	if (ps.dyn > 0 && ps.nregs > SP_REC_SP_INDEX) {
		uint64_t sp;
		memcpy(&sp, regs + SP_REC_SP_INDEX * 8, 8);
		sp_ustack_encode(&r->ustacks, ps.tid, sp, stack, ps.dyn, &shared);
	}
	struct sp_raw_sample_rec s = {
		.pid = ps.pid, .tid = ps.tid, .cpu = ps.cpu, .time = ps.time,
		.period = ps.period, .abi = ps.abi, .regs = regs, .nregs = ps.nregs,
		.ustack = stack, .ustack_len = ps.dyn - shared, .shared = shared,
		.full = ps.full, .kips = ps.kernel ? kips : NULL, .nk = ps.nk,
		.uips = ps.fp ? uips : NULL, .nu = ps.nu, .ufull = ps.ufull,
		.event = ps.event,
	};
	if (off) {
		s.time = off->time;
		s.period = off->period;
		s.preempted = off->preempted;
	}
	sp_write_raw_sample(r->w, &s);
}

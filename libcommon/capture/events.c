/* SPDX-License-Identifier: MIT
 * Perf events (internal.h): one event per (thread, CPU) for each event
 * of -e (cpu-clock by default), because the kernel refuses mmap() of an
 * inherited per-task event with cpu == -1.  Each event is redirected into its CPU's ring (ring.c).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/internal.h"
#include "util/alloc.h"
#include "util/procfs.h"

static long perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * The period of event ev when it is fixed, 0 when the kernel adjusts it
 * to reach -F's rate.  As perf does, a tracepoint samples every hit
 * unless -F or -c says otherwise; every other event samples at -F's rate
 * unless -c gives a period.
 */
uint64_t sp_rec_fixed_period(const struct sp_capture *r, int ev)
{
	if (r->ev[ev].kind == SP_EVENT_OFF_CPU)
		return 1;	/* every switch-out */
	if (r->o.period)
		return r->o.period;
	if (r->ev[ev].kind == SP_EVENT_TRACEPOINT && !r->o.frequency_given)
		return 1;
	return 0;
}

/*
 * A fixed period is not asked of the kernel with each sample: a software
 * event that sends PERF_SAMPLE_PERIOD without freq is sampled at every
 * hit whatever its period (perf_swevent_event()), as perf knows.
 */
static void set_event(const struct sp_capture *r, struct perf_event_attr *a, int ev)
{
	a->type = r->ev[ev].type;
	a->config = r->ev[ev].config;
	a->sample_period = sp_rec_fixed_period(r, ev);
	if (!a->sample_period) {
		a->freq = 1;
		a->sample_freq = r->o.frequency;
	}
}

static void fill_attr(const struct sp_capture *r, struct perf_event_attr *a, bool on_exec,
		      int ev)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	set_event(r, a, ev);
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER;
	if (!a->freq)	/* sample_period and sample_freq are one union */
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	if (r->nev > 1)
		a->sample_type |= PERF_SAMPLE_IDENTIFIER;
	if (r->kernel_enabled)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->sample_regs_user = SP_REC_REGS_MASK;
	a->sample_stack_user = r->o.stack_size;
	/*
	 * System-wide, a CPU in the kernel is sampled too (idle, kernel
	 * threads); a context switch or a tracepoint happens in the kernel:
	 * never excluded.
	 */
	a->exclude_kernel = !r->kernel_enabled && !r->o.system_wide && !r->ev[ev].in_kernel;
	a->exclude_hv = 1;
	/* User frames come from the stack copy, never from the callchain. */
	a->exclude_callchain_user = 1;
	if (r->o.call_graph_fp) {
		/* --call-graph fp: the kernel walks the user stack by frame pointers; nothing is copied. */
		a->sample_type &= ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->sample_regs_user = 0;
		a->sample_stack_user = 0;
		a->exclude_callchain_user = 0;
		a->exclude_callchain_kernel = !r->kernel_enabled;
		a->sample_max_stack = (uint16_t)r->max_stack;
	}
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->build_id = r->use_build_id;
	if (ev > 0) {
		/* Mappings, names, forks and exits come once: with the first event. */
		a->mmap = a->mmap2 = 0;
		a->comm = a->comm_exec = 0;
		a->task = 0;
		a->build_id = 0;
	}
	/* --off-cpu: the switch records tell when a thread runs again. */
	a->context_switch = r->ev[ev].kind == SP_EVENT_OFF_CPU;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(r->ring_pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
	a->inherit = r->o.inherit && !r->o.system_wide;
	a->disabled = 1;
	a->enable_on_exec = on_exec;
	if (r->use_format_lost)
		a->read_format = PERF_FORMAT_LOST;
}

static int add_event(struct sp_capture *r, int fd, pid_t pid, pid_t tid, int cpu, int ev)
{
	if (SP_ALLOC_GROW(r->events, r->nevents + 1, r->allocevents) < 0)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	if (r->nev > 1) {
		uint64_t id;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
			return sp_error_errno(&r->err, "cannot read the id of a perf event");
		if (sp_u64map_put(&r->ids, id, (void *)(uintptr_t)(ev + 1)) < 0)
			return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	}
	r->events[r->nevents++] = (struct sp_rec_event){ fd, pid, tid, cpu, ev };
	r->ev_opened[ev] = true;
	return 0;
}

/*
 * A hardware event the kernel has no PMU for: ENOENT (no such type or
 * config), EOPNOTSUPP (no sampling) or ENODEV.  With --event-fallback it
 * becomes cpu-clock, before any of its events is open; else the message
 * says why and what to do.
 */
static int no_pmu(struct sp_capture *r, int ev, int e)
{
	const char *name = r->ev[ev].name;
	if (r->o.event_fallback && !r->ev_opened[ev]) {
		r->fell_back[ev] = r->o.nevents > (size_t)ev ? r->o.events[ev].name : "?";
		sp_event_default(&r->ev[ev]);
		return 0;
	}
	sp_error_set(&r->err, SP_ERR_UNSUPPORTED, "cannot open the hardware event '%s' (%s): "
		     "this machine has no PMU for it (a virtual machine without PMU "
		     "passthrough, for one); give -e cpu-clock, or --event-fallback to use "
		     "cpu-clock in its place", name, strerror(e));
	r->err.errnum = e;
	return -1;
}

static int permission_hint(struct sp_capture *r, pid_t tid, int e)
{
	int par = sp_perf_paranoid();
	sp_error_set(&r->err, SP_ERR_PERMISSION,
		     "cannot open a perf event for thread %d: %s (perf_event_paranoid is %d); "
		     "profile a process you own%s, lower -F, grant CAP_PERFMON "
		     "(setcap cap_perfmon,cap_sys_ptrace+ep sp-capture), "
		     "or lower kernel.perf_event_paranoid", (int)tid, strerror(e), par,
		     r->kernel_enabled ? ", drop --kernel" : "");
	r->err.errnum = e;
	return -1;
}

/*
 * Opens CPU ci's events (one per -e event) for every task (pid -1) and
 * enables each once it is in its ring: 0 or -1.
 */
int sp_rec_open_cpu(struct sp_capture *r, int ci)
{
	for (int ev = 0; ev < (int)r->nev; ev++) {
		struct perf_event_attr a;
		long fd;
		for (;;) {
			fill_attr(r, &a, false, ev);
			fd = perf_event_open(&a, -1, r->cpus[ci]);
			if (fd >= 0)
				break;
			int e = errno;
			if (e == EINVAL && r->use_build_id) {
				r->use_build_id = false;
				continue;
			}
			if (e == EINVAL && r->use_format_lost) {
				r->use_format_lost = false;
				continue;
			}
			if (r->ev[ev].kind == SP_EVENT_HARDWARE &&
			    (e == ENOENT || e == EOPNOTSUPP || e == ENODEV)) {
				if (no_pmu(r, ev, e) < 0)
					return -1;
				continue;
			}
			if (e == EACCES || e == EPERM) {
				sp_error_set(&r->err, SP_ERR_PERMISSION,
					     "cannot record every task on CPU %d: %s "
					     "(kernel.perf_event_paranoid is %d; system-wide recording "
					     "needs 0 or below, or CAP_PERFMON): run as root, 'sysctl "
					     "kernel.perf_event_paranoid=0', or 'setcap cap_perfmon+ep "
					     "sp-capture'", r->cpus[ci], strerror(e), sp_perf_paranoid());
				r->err.errnum = e;
				return -1;
			}
			if (e == EMFILE)
				return sp_error_set(&r->err, SP_ERR_LIMIT, "too many open files opening "
						    "events for CPU %d (raise the limit with ulimit -n)",
						    r->cpus[ci]);
			errno = e;
			return sp_error_errno(&r->err, "cannot open the event '%s' on CPU %d",
					      r->ev[ev].name, r->cpus[ci]);
		}
		if (sp_rec_ring_attach(r, (int)fd, ci) < 0 ||
		    add_event(r, (int)fd, -1, -1, r->cpus[ci], ev) < 0) {
			close((int)fd);
			return -1;
		}
		ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	return 0;
}

/*
 * Opens the events of one thread on every CPU.  Returns 0, 1 when the
 * thread no longer exists, or -1.
 */
int sp_rec_open_thread(struct sp_capture *r, pid_t pid, pid_t tid, bool on_exec)
{
	for (int ci = 0; ci < r->ncpus; ci++)
	for (int ev = 0; ev < (int)r->nev; ev++) {
		struct perf_event_attr a;
		long fd;
		for (;;) {
			fill_attr(r, &a, on_exec, ev);
			fd = perf_event_open(&a, tid, r->cpus[ci]);
			if (fd >= 0)
				break;
			int e = errno;
			if (e == ESRCH)
				return 1;
			if ((e == EACCES || e == EPERM) && r->kernel_enabled && r->nevents == 0) {
				/* Kernel sampling denied: fall back to user only. */
				r->kernel_enabled = false;
				r->kernel_fell_back = true;
				continue;
			}
			if (e == EINVAL && r->use_build_id) {
				r->use_build_id = false;	/* before Linux 5.12 */
				continue;
			}
			if (e == EINVAL && r->use_format_lost) {
				r->use_format_lost = false;	/* before Linux 6.0 */
				continue;
			}
			if (r->ev[ev].kind == SP_EVENT_HARDWARE &&
			    (e == ENOENT || e == EOPNOTSUPP || e == ENODEV)) {
				if (no_pmu(r, ev, e) < 0)
					return -1;
				continue;
			}
			if ((e == EACCES || e == EPERM) && r->ev[ev].kind == SP_EVENT_OFF_CPU)
				return sp_error_set(&r->err, SP_ERR_PERMISSION, "cannot record "
						    "--off-cpu for thread %d: %s (a thread is "
						    "sampled as it leaves the CPU, in kernel code, "
						    "which perf_event_paranoid %d keeps from "
						    "unprivileged users); run as root, grant "
						    "CAP_PERFMON, or 'sysctl "
						    "kernel.perf_event_paranoid=1'", (int)tid,
						    strerror(e), sp_perf_paranoid());
			if ((e == EACCES || e == EPERM) && r->ev[ev].in_kernel)
				return sp_error_set(&r->err, SP_ERR_PERMISSION, "cannot open the "
						    "event '%s' for thread %d: %s (it fires in "
						    "kernel code, which perf_event_paranoid %d "
						    "keeps from unprivileged users); run as root, "
						    "or lower kernel.perf_event_paranoid to 1, or "
						    "to -1 for every event", r->ev[ev].name,
						    (int)tid, strerror(e), sp_perf_paranoid());
			if (e == EACCES || e == EPERM)
				return permission_hint(r, tid, e);
			if (e == EMFILE)
				return sp_error_set(&r->err, SP_ERR_LIMIT,
						    "too many open files opening events for thread %d "
						    "(raise the limit with ulimit -n)", (int)tid);
			errno = e;
			return sp_error_errno(&r->err, "cannot open the event '%s' for thread %d "
					      "on CPU %d", r->ev[ev].name, (int)tid, r->cpus[ci]);
		}
		if (sp_rec_ring_attach(r, (int)fd, ci) < 0 ||
		    add_event(r, (int)fd, pid, tid, r->cpus[ci], ev) < 0) {
			close((int)fd);
			return -1;
		}
		/* On as soon as its samples have a ring to go to. */
		if (!on_exec)
			ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	return 0;
}

/*
 * Opens events for every thread of pid that has none yet, and with synth
 * writes a thread record for each.  Returns 0, 1 when pid itself has
 * gone, or -1.
 */
int sp_rec_open_threads(struct sp_capture *r, pid_t pid, uint64_t time, bool synth)
{
	pid_t *tids;
	size_t n;
	if (sp_proc_tasks(pid, &tids, &n) < 0)
		return errno == ENOENT ? 1 :
			sp_error_errno(&r->err, "cannot list the threads of %d", (int)pid);
	int rc = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		bool have = false;
		for (size_t j = 0; j < r->nevents && !have; j++)
			have = r->events[j].tid == tids[i];
		if (have)
			continue;
		int k = sp_rec_open_thread(r, pid, tids[i], false);
		if (k < 0)
			rc = -1;
		else if (k == 0 && synth)
			sp_rec_synth_thread(r, pid, tids[i], time);
		else if (k == 1 && tids[i] != pid)
			r->errors[SP_E_THREAD_ATTACH_FAILED]++;
		else if (k == 1)
			rc = 1;
	}
	free(tids);
	return rc;
}

void sp_rec_enable_events(struct sp_capture *r, size_t from)
{
	for (size_t i = from; i < r->nevents; i++)
		ioctl(r->events[i].fd, PERF_EVENT_IOC_ENABLE, 0);
}

void sp_rec_disable_events(struct sp_capture *r)
{
	for (size_t i = 0; i < r->nevents; i++)
		ioctl(r->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
}

/* Closes the events from index from on, unmapping the rings they own. */
void sp_rec_close_events(struct sp_capture *r, size_t from)
{
	for (size_t i = from; i < r->nevents; i++) {
		for (int ci = 0; ci < r->ncpus; ci++)
			if (r->rings[ci].fd == r->events[i].fd) {
				munmap(r->rings[ci].base, r->rings[ci].data_size +
				       (size_t)sysconf(_SC_PAGESIZE));
				r->rings[ci].fd = -1;
			}
		close(r->events[i].fd);
	}
	r->nevents = from;
}

/* Adds up each event's own count of lost samples (PERF_FORMAT_LOST). */
void sp_rec_read_format_lost(struct sp_capture *r)
{
	if (!r->use_format_lost)
		return;
	for (size_t i = 0; i < r->nevents; i++) {
		uint64_t v[2];
		if (read(r->events[i].fd, v, sizeof(v)) == (ssize_t)sizeof(v))
			r->lost_samples_format += v[1];
	}
}

/* Opens events for threads of the targets that have none yet. */
int sp_capture_refresh_threads(struct sp_capture *r)
{
	uint64_t t = sp_rec_now_ns();
	for (size_t i = 0; i < r->ntargets; i++) {
		if (!r->targets[i].alive)
			continue;
		size_t first = r->nevents;
		if (sp_rec_open_threads(r, r->targets[i].pid, t, true) < 0)
			return -1;
		sp_rec_enable_events(r, first);
	}
	return 0;
}

/*
 * Opens events for the threads of pid that have none.  With inherit, a
 * thread the kernel reported (its fork, a sample) has inherited its
 * creator's events and gets none of its own, which would sample it
 * twice: the rings are drained into the queue first so that its fork
 * record is seen.
 */
int sp_capture_refresh_process(struct sp_capture *r, pid_t pid)
{
	pid_t *tids;
	size_t n, first = r->nevents;
	int added = 0;
	if (r->o.inherit && sp_rec_drain(r, 0) < 0)
		return -1;
	if (sp_proc_tasks(pid, &tids, &n) < 0)
		return errno == ENOENT ? 0 :
			sp_error_errno(&r->err, "cannot list the threads of %d", (int)pid);
	uint64_t t = sp_rec_now_ns();
	for (size_t i = 0; i < n; i++) {
		bool have = r->o.inherit && sp_u64map_get(&r->tids, (uint64_t)tids[i]);
		for (size_t j = 0; j < r->nevents && !have; j++)
			have = r->events[j].tid == tids[i];
		if (have)
			continue;
		int k = sp_rec_open_thread(r, pid, tids[i], false);
		if (k < 0) {
			free(tids);
			return -1;
		}
		if (k == 0) {
			sp_rec_synth_thread(r, pid, tids[i], t);
			added++;
		}
	}
	free(tids);
	sp_rec_enable_events(r, first);
	return added;
}

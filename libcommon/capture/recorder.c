/* SPDX-License-Identifier: MIT
 * The recorder (recorder.h): the handle, the header, the polling loop and
 * the summary.  How the work is divided among the layer's files, and the
 * rules they share, is told in internal.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/internal.h"
#include "stream/records.h"
#include "stream/header.h"

#if defined(__x86_64__)
static const char *const reg_names[] = {
	"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
#elif defined(__aarch64__)
static const char *const reg_names[] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20",
	"x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr",
	"sp", "pc",
};
#endif
_Static_assert(sizeof(reg_names) / sizeof(reg_names[0]) == SP_REC_NREGS,
	       "one name per register recorded");

void sp_rec_pack_reg_names(struct sp_mapw *m)
{
	msgpack_packer *pk = sp_mapw_key(m, "reg_names");
	msgpack_pack_array(pk, SP_REC_NREGS);
	for (size_t i = 0; i < SP_REC_NREGS; i++)
		sp_pack_str(pk, reg_names[i]);
}

uint64_t sp_rec_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct sp_rec_proc *sp_rec_proc_get(struct sp_capture *r, pid_t pid, bool create)
{
	struct sp_rec_proc *p = sp_u64map_get(&r->procs, (uint64_t)pid);
	if (p || !create)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || sp_u64map_put(&r->procs, (uint64_t)pid, p) < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	return p;
}

bool sp_rec_tid_note(struct sp_capture *r, pid_t tid)
{
	static char seen;	/* the value of every entry: the map needs one */
	if (sp_u64map_get(&r->tids, (uint64_t)tid))
		return false;
	return sp_u64map_put(&r->tids, (uint64_t)tid, &seen) == 0;
}

static void free_bid(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct sp_rec_bid, e));
}

struct sp_capture *sp_capture_new(const struct sp_capture_options *o,
				  struct sp_writer *w)
{
	struct sp_capture *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->o = *o;
	r->w = w;
	sp_u64map_init(&r->procs);
	sp_u64map_init(&r->tids);
	sp_u64map_init(&r->ids);
	r->nev = o->nevents ? o->nevents : 1;
	if (r->nev > SP_MAX_EVENTS)
		r->nev = SP_MAX_EVENTS;
	for (size_t i = 0; i < r->nev; i++)
		if (o->nevents)
			r->ev[i] = o->events[i];
		else
			sp_event_default(&r->ev[i]);
	r->offcpu_ev = -1;
	if (o->off_cpu) {
		if (r->nev == SP_MAX_EVENTS)
			r->nev--;	/* sp-capture refuses this many events with --off-cpu */
		r->offcpu_ev = (int)r->nev;
		sp_event_off_cpu(&r->ev[r->nev++]);
	}
	sp_u64map_init(&r->offcpu);
	sp_ustack_cache_init(&r->ustacks);
	sp_buf_init(&r->qbuf);
	sp_hashmap_init(&r->bids, sp_rec_bid_cmp);
	r->ncpus = sp_online_cpus(r->cpus, SP_REC_MAX_CPUS);
	if (o->ncpu_list > 0) {
		/* -C: the online CPUs of the list, in the order they are online. */
		int n = 0;
		for (int i = 0; i < r->ncpus; i++)
			for (int j = 0; j < o->ncpu_list; j++)
				if (o->cpu_list[j] == r->cpus[i]) {
					r->cpus[n++] = r->cpus[i];
					break;
				}
		r->ncpus = n;
	}
	r->o.cpu_list = NULL;	/* not kept: the chosen CPUs are r->cpus */
	for (int i = 0; i < SP_REC_MAX_CPUS; i++)
		r->rings[i].fd = -1;
	r->kernel_enabled = o->kernel;
	/* The kernel's callchain limit, PERF_MAX_STACK_DEPTH by default: a chain that reaches it was cut. */
	int64_t maxst;
	r->max_stack = sp_read_i64_file("/proc/sys/kernel/perf_event_max_stack", &maxst) == 0 &&
		       maxst > 0 && maxst <= UINT16_MAX ? (uint32_t)maxst : 127;
	r->use_build_id = true;
	r->use_format_lost = true;
	r->child = -1;
	r->go_fd = r->err_fd = -1;
	r->child_status = -1;
	r->ring_pages = sp_rec_ring_pages(r);
	r->tmp = malloc(65536);
	if (!r->tmp) {
		free(r);
		return NULL;
	}
	return r;
}

void sp_capture_free(struct sp_capture *r)
{
	if (!r)
		return;
	sp_capture_continue_targets();
	sp_rec_close_events(r, 0);
	for (size_t i = 0; i < r->ntargets; i++)
		if (r->targets[i].pidfd >= 0)
			close(r->targets[i].pidfd);
	if (r->go_fd >= 0)
		close(r->go_fd);
	if (r->err_fd >= 0)
		close(r->err_fd);
	if (r->child > 0 && r->child_status < 0) {
		/* A command never released, or still running: end it. */
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
	}
	sp_buf_release(&r->qbuf);
	free(r->q);
	free(r->tmp);
	free(r->events);
	sp_u64map_release(&r->procs, free);
	sp_u64map_release(&r->tids, NULL);
	sp_u64map_release(&r->ids, NULL);
	sp_ustack_cache_release(&r->ustacks);
	sp_rec_offcpu_release(r);
	free(r->targets);
	free(r->only_tids);
	sp_hashmap_release(&r->bids, free_bid);
	free(r->images);
	sp_rec_jitdump_release(r);
	free(r);
}

const char *sp_capture_error(const struct sp_capture *r)
{
	return sp_error_message(&r->err);
}

const struct sp_error *sp_capture_last_error(const struct sp_capture *r)
{
	return &r->err;
}

bool sp_capture_kernel_fell_back(const struct sp_capture *r)
{
	return r->kernel_fell_back;
}

const char *sp_capture_event_fell_back(const struct sp_capture *r, size_t i)
{
	return i < r->nev ? r->fell_back[i] : NULL;
}

int sp_capture_command_status(const struct sp_capture *r)
{
	return r->child_status;
}

void sp_capture_get_stats(const struct sp_capture *r, struct sp_capture_stats *s)
{
	s->samples = r->samples;
	s->lost = r->lost_events;
	s->bytes = sp_writer_bytes(r->w);
	s->processes_alive = 0;
	for (size_t i = 0; i < r->ntargets; i++)
		s->processes_alive += r->targets[i].alive;
}

/* The header's "options": how the recording was made. */
static void pack_options(struct sp_capture *r, struct sp_mapw *h)
{
	struct sp_mapw m;
	sp_mapw_key(h, "options");
	sp_mapw_begin(&m, r->w);
	sp_mapw_u64(&m, "frequency", r->o.frequency);
	if (r->o.frequency_arg)
		sp_mapw_str(&m, "frequency_arg", r->o.frequency_arg);
	/* One event but cpu-clock: its name, as 1.2 wrote "task-clock" (1.3 adds "events"). */
	if (r->nev == 1 && strcmp(r->ev[0].name, "cpu-clock") != 0)
		sp_mapw_str(&m, "event", r->ev[0].name);
	if (r->o.period)
		sp_mapw_u64(&m, "period", r->o.period);
	if (r->o.kallsyms_out)
		sp_mapw_str(&m, "kallsyms_out", r->o.kallsyms_out);
	sp_mapw_u64(&m, "stack_size", r->o.stack_size);
	sp_mapw_str(&m, "call_graph", r->o.call_graph_fp ? "fp" : "dwarf");
	sp_mapw_bool(&m, "kernel", r->o.kernel);
	sp_mapw_bool(&m, "inherit", r->o.inherit);
	sp_mapw_bool(&m, "descendants", r->o.descendants);
	sp_mapw_bool(&m, "stop", r->o.stop);
	sp_mapw_u64(&m, "refresh_threads_ms", (uint64_t)r->o.refresh_threads_ms);
	sp_mapw_u64(&m, "duration_ms", (uint64_t)(r->o.duration_s * 1000 + 0.5));
	sp_mapw_u64(&m, "poll_ms", (uint64_t)r->o.poll_ms);
	sp_mapw_u64(&m, "mmap_pages", r->ring_pages);
	if (r->o.system_wide) {
		sp_mapw_bool(&m, "all_cpus", true);
		msgpack_packer *pk = sp_mapw_key(&m, "cpu");
		msgpack_pack_array(pk, (size_t)r->ncpus);
		for (int i = 0; i < r->ncpus; i++)
			msgpack_pack_uint64(pk, (uint64_t)r->cpus[i]);
	} else if (!r->command) {
		msgpack_packer *pk = sp_mapw_key(&m, "pids");
		msgpack_pack_array(pk, r->ntargets);
		for (size_t i = 0; i < r->ntargets; i++)
			msgpack_pack_uint64(pk, (uint64_t)r->targets[i].pid);
		if (r->nonly_tids) {
			pk = sp_mapw_key(&m, "tids");
			msgpack_pack_array(pk, r->nonly_tids);
			for (size_t i = 0; i < r->nonly_tids; i++)
				msgpack_pack_uint64(pk, (uint64_t)r->only_tids[i]);
		}
	} else {
		size_t n = 0;
		while (r->command[n])
			n++;
		msgpack_packer *pk = sp_mapw_key(&m, "command");
		msgpack_pack_array(pk, n);
		for (size_t i = 0; i < n; i++)
			sp_pack_str(pk, r->command[i]);
	}
	sp_mapw_end(&m);
}

int sp_capture_start(struct sp_capture *r, int argc, char **argv)
{
	if (sp_rec_release_command(r) < 0)
		return -1;
	struct sp_mapw m;
	sp_mapw_raw_header(&m, r->w);
	msgpack_packer *pk = sp_mapw_key(&m, "tools");
	msgpack_pack_array(pk, 1);
	sp_pack_tool(r->w, r->o.tool_name ? r->o.tool_name : "sp-capture", argc, argv);
	sp_mapw_key(&m, "host");
	sp_pack_host(r->w);
	pack_options(r, &m);
	pk = sp_mapw_key(&m, "events");
	msgpack_pack_array(pk, r->nev);
	for (size_t i = 0; i < r->nev; i++)
		sp_pack_str(pk, r->ev[i].name);
	sp_mapw_bool(&m, "kernel_enabled", r->kernel_enabled);
	sp_rec_pack_reg_names(&m);
	if (r->o.has_start_timestamp)
		sp_mapw_u64(&m, "start_timestamp_us", r->o.start_timestamp_us);
	if (r->o.has_sample_interval)
		sp_mapw_u64(&m, "sample_interval_us", r->o.sample_interval_us);
	sp_mapw_end(&m);
	r->started = true;
	r->start_ns = sp_rec_now_ns();
	if (sp_rec_q_flush(r, UINT64_MAX) < 0)
		return -1;
	if (sp_writer_flush(r->w) < 0)
		return sp_error_set(&r->err, SP_ERR_ERRNO, "%s", sp_writer_error(r->w));
	return 0;
}

int sp_capture_poll(struct sp_capture *r, int timeout_ms)
{
	struct pollfd pfd[SP_REC_MAX_CPUS + 64];
	nfds_t n = 0;
	for (int ci = 0; ci < r->ncpus; ci++)
		if (r->rings[ci].fd >= 0)
			pfd[n++] = (struct pollfd){ r->rings[ci].fd, POLLIN, 0 };
	size_t tfirst = n;
	for (size_t i = 0; i < r->ntargets && n < sizeof(pfd) / sizeof(pfd[0]); i++)
		if (r->targets[i].alive && r->targets[i].pidfd >= 0)
			pfd[n++] = (struct pollfd){ r->targets[i].pidfd, POLLIN, 0 };
	if (poll(pfd, n, timeout_ms) < 0 && errno != EINTR)
		return sp_error_errno(&r->err, "poll");

	uint64_t now = sp_rec_now_ns();
	sp_rec_jitdump_read(r, now, false);
	if (sp_rec_drain(r, now) < 0)
		return -1;

	sp_rec_reap_command(r);
	unsigned alive = 0;
	size_t k = tfirst;
	for (size_t i = 0; i < r->ntargets; i++) {
		struct sp_rec_target *t = &r->targets[i];
		if (!t->alive)
			continue;
		if (t->pidfd >= 0) {
			if (k < n && (pfd[k].revents & (POLLIN | POLLHUP)))
				t->alive = false;
			k++;
		} else if (kill(t->pid, 0) < 0 && errno == ESRCH) {
			t->alive = false;
		}
		if (t->launched && r->child_status >= 0)
			t->alive = false;
		alive += t->alive;
	}
	return alive > 0 || r->o.system_wide;
}

/* Whether /proc/kallsyms shows real addresses to this process. */
static bool kallsyms_has_addresses(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256];
	bool real = false;
	for (int i = 0; f && !real && i < 64 && fgets(line, sizeof(line), f); i++)
		real = strspn(line, "0") < 16;
	if (f)
		fclose(f);
	return real;
}

/* With --archive: each process's perf map (by pid and start) and kallsyms. */
static void archive_at_end(struct sp_capture *r, uint64_t end)
{
	size_t i = 0;
	uint64_t pid;
	void *v;
	while (sp_u64map_next(&r->procs, &i, &pid, &v)) {
		const struct sp_rec_proc *p = v;
		char src[96], rel[128];
		/* In a container: its /tmp, under the pid it knows itself by. */
		if (p->own_root && p->nspid)
			snprintf(src, sizeof(src), "/proc/%d/root/tmp/perf-%u.map", (int)p->pid,
				 (unsigned)p->nspid);
		else
			snprintf(src, sizeof(src), "/tmp/perf-%d.map", (int)p->pid);
		if (access(src, R_OK) != 0)
			continue;
		snprintf(rel, sizeof(rel), "perf-maps/perf-%d-%" PRIu64 ".map", (int)p->pid,
			 p->start_key);
		if (sp_archive_copy(r->o.archive, src, rel, 0644, true, p->uid) < 0)
			r->errors[SP_E_ARCHIVE_FAILED]++;
		else
			sp_rec_queue_archive(r, &(struct sp_rec_archive){
				.time = end, .kind = "perf-map", .file = rel, .path = src,
				.pid = p->pid, .start_time = p->start_key,
			});
	}
	/* Kernel addresses are private; without privilege they read as zero. */
	if (!kallsyms_has_addresses())
		r->errors[SP_E_ARCHIVE_FAILED]++;
	else if (sp_archive_copy(r->o.archive, "/proc/kallsyms", "kallsyms", 0600, false, 0) < 0)
		r->errors[SP_E_ARCHIVE_FAILED]++;
	else
		sp_rec_queue_archive(r, &(struct sp_rec_archive){
			.time = end, .kind = "kallsyms", .file = "kallsyms", .path = "/proc/kallsyms",
		});
}

/* Every counter of the recording, as of end. */
static void fill_summary(const struct sp_capture *r, uint64_t end, struct sp_summary_rec *sum)
{
	uint64_t lost = r->lost_events > r->lost_samples_format ?
			r->lost_events : r->lost_samples_format;
	int st = r->child_status;
	*sum = (struct sp_summary_rec){
		.sample_events = r->sample_events, .samples = r->samples, .lost_events = lost,
		.empty_stack_samples = r->empty_stack, .truncated_frame_markers = r->truncated,
		.ignored_user_callchain_frames = r->ignored_user,
		.kernel_enabled = r->kernel_enabled, .errors = r->errors,
		.skipped_no_pid = r->skipped_no_pid, .skipped_no_tid = r->skipped_no_tid,
		.skipped_no_time = r->skipped_no_time, .skipped_no_frames = r->skipped_no_frames,
		.lost_samples = r->lost_samples_format, .throttle_events = r->throttles,
		.processes = r->procs.count, .threads = r->tids.count,
		.duration_ns = r->started ? end - r->start_ns : 0, .time = end,
		.has_command_status = r->child > 0 && st >= 0,
		.command_status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st),
		.off_cpu = r->offcpu_ev >= 0, .off_cpu_intervals = r->offcpu_intervals,
		.off_cpu_no_stack = r->offcpu_no_stack,
		.stack_size_chosen = r->stack_chosen,
		.stack_calibration_stacks = r->stack_cal_stacks,
	};
}

void sp_capture_summary(const struct sp_capture *r, struct sp_summary_rec *s)
{
	fill_summary(r, r->finished && r->end_ns ? r->end_ns : sp_rec_now_ns(), s);
}

/* The summary record: every counter of the recording. */
static void pack_summary(struct sp_capture *r, uint64_t end)
{
	struct sp_summary_rec s;
	fill_summary(r, end, &s);
	sp_write_summary(r->w, &s);
}

int sp_capture_finish(struct sp_capture *r)
{
	if (r->finished)
		return 0;
	r->finished = true;
	sp_rec_disable_events(r);
	/* jitdump files before the last drain, and again for the files it announces. */
	sp_rec_jitdump_read(r, sp_rec_now_ns(), true);
	if (sp_rec_drain(r, UINT64_MAX) < 0)
		return -1;
	sp_rec_read_format_lost(r);
	/* Detached here: the targets run on with no event of ours left. */
	sp_rec_close_events(r, 0);
	sp_rec_end_command(r);
	uint64_t end = r->end_ns = sp_rec_now_ns();
	sp_rec_jitdump_read(r, end, true);
	if (r->o.archive) {
		archive_at_end(r, end);
		sp_rec_jitdump_archive(r, end);
	}
	if (sp_rec_q_flush(r, UINT64_MAX) < 0)
		return -1;
	sp_rec_offcpu_end(r, end);
	if (sp_writer_failed(r->w))
		return sp_error_set(&r->err, SP_ERR_ERRNO, "%s", sp_writer_error(r->w));
	pack_summary(r, end);
	if (sp_writer_flush(r->w) < 0)
		return sp_error_set(&r->err, SP_ERR_ERRNO, "%s", sp_writer_error(r->w));
	return 0;
}

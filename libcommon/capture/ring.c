/* SPDX-License-Identifier: MIT
 * Ring buffers (internal.h): one per CPU, shared by every event of
 * that CPU through PERF_EVENT_IOC_SET_OUTPUT.  The drain (drain.c) hands
 * each complete record here to be converted into a queued record
 * (samples in sample.c); the queue writes them in time order.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "capture/internal.h"
#include "stream/records.h"

/* The pages of each CPU's ring (a power of two, without the control page). */
size_t sp_rec_ring_pages(const struct sp_capture *r)
{
	if (r->o.mmap_pages)
		return r->o.mmap_pages;
	/* Room for about 256 samples of the stack window per CPU. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = 256 * ((size_t)r->o.stack_size + 512) / page;
	size_t pages = 16;
	while (pages * 2 <= want && pages < 4096)
		pages *= 2;
	/*
	 * Without privilege the rings of all CPUs share one budget:
	 * perf_event_mlock_kb per CPU plus RLIMIT_MEMLOCK.
	 */
	if (geteuid() != 0) {
		int64_t kb;
		bool ok = sp_read_i64_file("/proc/sys/kernel/perf_event_mlock_kb", &kb) == 0;
		struct rlimit rl;
		uint64_t memlock = getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
				   rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 0;
		uint64_t budget = (ok ? (uint64_t)kb * 1024 / page * (uint64_t)r->ncpus : 0) +
				  memlock / page;
		uint64_t per_cpu = r->ncpus ? budget / (uint64_t)r->ncpus : budget;
		while (pages > 8 && pages + 1 > per_cpu)
			pages /= 2;
	}
	return pages;
}

/* Gives the event a ring: the CPU's existing one, or a new mapping. */
int sp_rec_ring_attach(struct sp_capture *r, int fd, int ci)
{
	struct sp_rec_ring *g = &r->rings[ci];
	if (g->fd >= 0) {
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g->fd) < 0)
			return sp_error_errno(&r->err, "cannot redirect a perf event into the CPU %d buffer",
					      r->cpus[ci]);
		return 0;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (;;) {
		size_t len = (r->ring_pages + 1) * page;
		void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (base != MAP_FAILED) {
			g->fd = fd;
			g->base = base;
			g->data_size = r->ring_pages * page;
			return 0;
		}
		/* An unprivileged user's locked-memory budget is small. */
		if ((errno == EPERM || errno == ENOMEM) && r->ring_pages > 8) {
			r->ring_pages /= 2;
			continue;
		}
		int e = errno;
		sp_error_set(&r->err, SP_ERR_LIMIT, "cannot map a %zu-page perf buffer for CPU %d: %s "
			     "(lower --mmap-pages, or raise kernel.perf_event_mlock_kb)",
			     r->ring_pages, r->cpus[ci], strerror(e));
		r->err.errnum = e;
		return -1;
	}
}

/*
 * The sample_id_all trailer: TID, TIME, CPU (the order of sample_type
 * bits), and with several events IDENTIFIER last.
 */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
};

static struct sample_id trailer(const struct sp_capture *r, const unsigned char *rec, size_t size)
{
	struct sample_id s = { 0 };
	size_t n = r->nev > 1 ? 32 : 24;
	if (size < sizeof(struct perf_event_header) + n)
		return s;
	const unsigned char *p = rec + size - n;
	memcpy(&s.pid, p, 4);
	memcpy(&s.tid, p + 4, 4);
	memcpy(&s.time, p + 8, 8);
	memcpy(&s.cpu, p + 16, 4);
	return s;
}

static void bad_record(struct sp_capture *r)
{
	r->errors[SP_E_BAD_KERNEL_RECORD]++;
}

static void handle_mmap2(struct sp_capture *r, const unsigned char *rec, size_t size,
			 uint16_t misc)
{
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		union {
			struct { uint32_t maj, min; uint64_t ino, ino_generation; };
			struct { uint8_t build_id_size, r1; uint16_t r2; uint8_t build_id[20]; };
		};
		uint32_t prot, flags;
	} m;
	size_t hdr = sizeof(struct perf_event_header);
	if (size < hdr + sizeof(m) + 24) {
		bad_record(r);
		return;
	}
	memcpy(&m, rec + hdr, sizeof(m));
	const char *fname = (const char *)rec + hdr + sizeof(m);
	size_t maxlen = size - hdr - sizeof(m) - 24;
	char path[4096];
	size_t pl = strnlen(fname, maxlen);
	if (pl >= sizeof(path))
		pl = sizeof(path) - 1;
	memcpy(path, fname, pl);
	path[pl] = '\0';
	struct sample_id id = trailer(r, rec, size);
	if (!(m.prot & PROT_EXEC))
		return;
	bool deleted = sp_path_strip_deleted(path);
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen = 0;
	bool have_dev = !(misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
	if (!have_dev) {
		bidlen = m.build_id_size > 20 ? 20 : m.build_id_size;
		memcpy(bid, m.build_id, (size_t)bidlen);
	} else if (sp_rec_is_file_path(path) && !deleted && !r->imported) {
		bidlen = sp_rec_build_id(r, (pid_t)m.pid, path, NULL, (uint64_t)m.maj << 32 | m.min,
					 m.ino, bid);
	}
	if (bidlen < 0)
		bidlen = 0;
	unsigned char cid[20];
	bool have_cid;
	sp_rec_archive_map(r, (pid_t)m.pid, id.time, m.addr, m.addr + m.len, path, bid, bidlen,
			   cid, &have_cid);
	sp_rec_queue_map(r, &(struct sp_rec_map){
		.pid = (pid_t)m.pid, .tid = (pid_t)m.tid, .time = id.time, .start = m.addr,
		.len = m.len, .pgoff = m.pgoff, .path = path, .have_dev = have_dev,
		.maj = have_dev ? m.maj : 0, .min = have_dev ? m.min : 0,
		.ino = have_dev ? m.ino : 0, .prot = (int)m.prot, .flags = (int)m.flags,
		.build_id = bid, .build_id_len = bidlen, .content_id = have_cid ? cid : NULL,
		.deleted = deleted,
	});
	sp_rec_note_mapping_runtime(r, (pid_t)m.pid, path, id.time);
}

/*
 * The side-band records as queued: comm and exec, fork and exit, lost,
 * throttle and unthrottle.
 */
static void queue(struct sp_capture *r, enum sp_rec_kind kind, uint64_t time,
		  const void *p, size_t n)
{
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, p, n);
	sp_rec_q_end(r, kind, time, s);
}

static void handle_comm(struct sp_capture *r, const unsigned char *rec, size_t size,
			uint16_t misc)
{
	size_t hdr = sizeof(struct perf_event_header);
	struct sp_comm_rec c = { 0 };
	if (size < hdr + 8 + 24) {
		bad_record(r);
		return;
	}
	memcpy(&c.pid, rec + hdr, 4);
	memcpy(&c.tid, rec + hdr + 4, 4);
	size_t cl = strnlen((const char *)rec + hdr + 8, size - hdr - 8 - 24);
	if (cl >= sizeof(c.comm))
		cl = sizeof(c.comm) - 1;
	memcpy(c.comm, rec + hdr + 8, cl);
	c.time = trailer(r, rec, size).time;
	c.exec = misc & PERF_RECORD_MISC_COMM_EXEC;
	queue(r, SP_REC_COMM, c.time, &c, sizeof(c));
	if (c.exec) {
		/* A new program: the status starts over from its name. */
		struct sp_rec_proc *p = sp_rec_proc_get(r, (pid_t)c.pid, true);
		const char *via = "none";
		bool cpy = sp_path_is_cpython(c.comm, &via);
		if (p)
			p->cpython = cpy;
		sp_rec_queue_runtime(r, (pid_t)c.pid, c.time, cpy, cpy ? via : "none");
	}
}

static void handle_task(struct sp_capture *r, const unsigned char *rec, size_t size,
			bool fork)
{
	size_t hdr = sizeof(struct perf_event_header);
	struct sp_task_rec t = { .fork = fork };
	if (size < hdr + 24) {
		bad_record(r);
		return;
	}
	memcpy(&t.pid, rec + hdr, 4);
	memcpy(&t.ppid, rec + hdr + 4, 4);
	memcpy(&t.tid, rec + hdr + 8, 4);
	memcpy(&t.ptid, rec + hdr + 12, 4);
	memcpy(&t.time, rec + hdr + 16, 8);
	queue(r, SP_REC_TASK, t.time, &t, sizeof(t));
	if (fork && t.pid != t.ppid) {
		/* A new process: it starts with its parent's state. */
		struct sp_rec_proc *parent = sp_rec_proc_get(r, (pid_t)t.ppid, false);
		bool cpy = parent && parent->cpython;
		struct sp_rec_proc *p = sp_rec_proc_get(r, (pid_t)t.pid, true);
		if (p) {
			p->cpython = cpy;
			p->alive = true;
			p->start_key = t.time;
			p->uid = parent ? parent->uid : getuid();
			/* A container's child: its own pid there, if it still runs. */
			if (parent && parent->own_root)
				sp_rec_proc_ns(r, (pid_t)t.pid, NULL, NULL);
			p->own_root = parent && parent->own_root;
		}
		sp_rec_queue_runtime(r, (pid_t)t.pid, t.time, cpy, cpy ? "parent" : "none");
	}
	if (fork)
		sp_rec_tid_note(r, (pid_t)t.tid);
	if (!fork && t.pid == t.tid) {
		struct sp_rec_proc *p = sp_rec_proc_get(r, (pid_t)t.pid, false);
		if (p)
			p->alive = false;
	}
}

static void handle_lost(struct sp_capture *r, const unsigned char *rec, size_t size,
			bool samples)
{
	size_t hdr = sizeof(struct perf_event_header);
	/* PERF_RECORD_LOST has an id before the count; LOST_SAMPLES does not. */
	size_t off = hdr + (samples ? 0 : 8);
	if (size < off + 8 + 24) {
		bad_record(r);
		return;
	}
	struct sample_id id = trailer(r, rec, size);
	struct sp_lost_rec l = { .time = id.time, .cpu = id.cpu, .samples = samples };
	memcpy(&l.lost, rec + off, 8);
	r->lost_events += l.lost;
	queue(r, SP_REC_LOST, l.time, &l, sizeof(l));
}

static void handle_throttle(struct sp_capture *r, const unsigned char *rec, size_t size,
			    bool throttle)
{
	size_t hdr = sizeof(struct perf_event_header);
	if (size < hdr + 24 + 24) {
		bad_record(r);
		return;
	}
	struct sp_throttle_rec t = { .cpu = trailer(r, rec, size).cpu, .throttle = throttle };
	memcpy(&t.time, rec + hdr, 8);
	if (throttle)
		r->throttles++;
	queue(r, SP_REC_THROTTLE, t.time, &t, sizeof(t));
}

/*
 * A context switch of --off-cpu (only its event asks for them): the
 * thread in the sample_id trailer leaves the CPU or comes back to it.
 */
static void handle_switch(struct sp_capture *r, const unsigned char *rec, size_t size,
			  uint16_t misc, bool cpu_wide)
{
	if (size < sizeof(struct perf_event_header) + (cpu_wide ? 8u : 0u) + 24) {
		bad_record(r);
		return;
	}
	struct sample_id id = trailer(r, rec, size);
	struct sp_rec_switch s = {
		.pid = id.pid, .tid = id.tid, .time = id.time,
		.in = !(misc & PERF_RECORD_MISC_SWITCH_OUT),
		.preempted = (misc & PERF_RECORD_MISC_SWITCH_OUT) &&
			     (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT),
	};
	if (s.tid == 0 || s.tid == UINT32_MAX || s.time == 0)
		return;	/* the idle task, or a record without its thread */
	sp_rec_offcpu_queue(r, &s);
}

/* Writes a queued comm, exec, fork, exit, lost, throttle or unthrottle. */
void sp_rec_write_event(struct sp_capture *r, enum sp_rec_kind kind, const unsigned char *p)
{
	/* The queue keeps the record's struct as it was copied in, maybe unaligned. */
	union {
		struct sp_comm_rec comm;
		struct sp_task_rec task;
		struct sp_lost_rec lost;
		struct sp_throttle_rec throttle;
	} u;
	switch (kind) {
	case SP_REC_COMM:
		memcpy(&u.comm, p, sizeof(u.comm));
		sp_write_comm(r->w, &u.comm);
		break;
	case SP_REC_TASK:
		memcpy(&u.task, p, sizeof(u.task));
		if (!u.task.fork) {
			/*
			 * In stream order: no sample written after the exit
			 * shares with a copy before it (a reused tid starts
			 * afresh), and the record says so to its readers.
			 */
			sp_ustack_forget(&r->ustacks, u.task.tid);
			u.task.ustack_reset = true;
		}
		sp_write_task(r->w, &u.task);
		if (!u.task.fork)
			sp_rec_offcpu_forget(r, u.task.tid);
		break;
	case SP_REC_LOST:
		memcpy(&u.lost, p, sizeof(u.lost));
		sp_write_lost(r->w, &u.lost);
		break;
	default:
		memcpy(&u.throttle, p, sizeof(u.throttle));
		sp_write_throttle(r->w, &u.throttle);
		break;
	}
}

void sp_rec_handle_record(struct sp_capture *r, const unsigned char *rec, size_t size)
{
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE: sp_rec_handle_sample(r, rec, size); break;
	case PERF_RECORD_MMAP2: handle_mmap2(r, rec, size, h.misc); break;
	case PERF_RECORD_COMM: handle_comm(r, rec, size, h.misc); break;
	case PERF_RECORD_FORK: handle_task(r, rec, size, true); break;
	case PERF_RECORD_EXIT: handle_task(r, rec, size, false); break;
	case PERF_RECORD_LOST: handle_lost(r, rec, size, false); break;
	case PERF_RECORD_LOST_SAMPLES: handle_lost(r, rec, size, true); break;
	case PERF_RECORD_THROTTLE: handle_throttle(r, rec, size, true); break;
	case PERF_RECORD_UNTHROTTLE: handle_throttle(r, rec, size, false); break;
	case PERF_RECORD_SWITCH: handle_switch(r, rec, size, h.misc, false); break;
	case PERF_RECORD_SWITCH_CPU_WIDE: handle_switch(r, rec, size, h.misc, true); break;
	default: break;	/* other side-band records are not needed */
	}
}

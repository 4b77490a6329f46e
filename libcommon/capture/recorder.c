/*
 * The recorder (see recorder.h).
 *
 * One perf event is opened per (thread, CPU), because the kernel refuses
 * mmap() of an inherited per-task event with cpu == -1.  The events of a
 * CPU are redirected (PERF_EVENT_IOC_SET_OUTPUT) into one ring buffer per
 * CPU.  Each drain copies every record out of every ring, converts it to
 * a stream record in a queue, and writes the queue in time order up to
 * the instant the drain began: a record stamped before that instant is
 * already in its ring, so an mmap on one CPU is written before a sample
 * that follows it on another.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/buildid.h"
#include "stream/header.h"
#include "util/procfs.h"
#include "capture/recorder.h"

#if defined(__x86_64__)
/* perf_regs bits: ax bx cx dx si di bp sp ip (0-8) and r8-r15 (16-23). */
#define REGS_MASK 0xff01ffull
#define SP_INDEX 7
static const char *const reg_names[] = {
	"ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
#elif defined(__aarch64__)
/* perf_regs bits 0-32: x0-x29, lr, sp, pc. */
#define REGS_MASK 0x1ffffffffull
#define SP_INDEX 31
static const char *const reg_names[] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20",
	"x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr",
	"sp", "pc",
};
#else
#error "stackpulse records registers for x86_64 and aarch64 only"
#endif
#define NREGS (sizeof(reg_names) / sizeof(reg_names[0]))

#define MAX_CPUS 1024
#define MAX_STOPPED 4096

/* Targets stopped with SIGSTOP and not yet continued (for signal handlers). */
static volatile pid_t stopped_pids[MAX_STOPPED];

struct ring {
	int fd;			/* the event whose buffer this is; -1 for none */
	unsigned char *base;	/* the control page, then the data */
	size_t data_size;
};

struct event {
	int fd;
	pid_t pid, tid;
	int cpu;
};

/* What the recorder knows of a process, keyed by pid. */
struct proc {
	pid_t pid;		/* 0: free slot */
	bool cpython;
	bool alive;
	uint64_t start_key;	/* start_time of its process record, or its fork's time */
	uid_t uid;		/* its owner, for the trust rules of its perf map */
};

struct target {
	pid_t pid;
	int pidfd;		/* -1 when pidfd_open is unavailable */
	bool alive;
	bool launched;
};

/*
 * The last stack copy written for a thread.  A sample's copy shares its
 * top end (the outer frames, the environment) with the thread's previous
 * one; only the differing start is written, with "ustack_shared" saying
 * how many bytes to take from the end of the previous copy.
 */
struct ustk {
	pid_t tid;		/* 0: free slot */
	uint64_t top;		/* stack pointer + length */
	size_t len;
	unsigned char *buf;	/* stack_size bytes */
};

/*
 * A table of records keyed by a pid or tid, the record's first member
 * (0: a free slot): open addressing over a power-of-two array.  Pointers
 * into it hold until the next insertion.
 */
struct pidtab {
	unsigned char *v;
	size_t elem, cap, n;
};

/* A sample as the queue keeps it, followed by regs, kernel ips, stack. */
struct pending_sample {
	uint32_t pid, tid, cpu;
	uint64_t time, period, abi, nregs, nk, dyn;
	bool full, kernel;
};

/* A stream record waiting in the queue to be written in time order. */
struct qent {
	uint64_t time, seq;
	size_t off, len;
	pid_t sample_pid;	/* a sample's pid, checked when written; else 0 */
	bool pending;		/* a struct pending_sample, packed when written */
};

struct sp_recorder {
	struct sp_recorder_options o;
	struct sp_writer *w;
	char err[512];

	int ncpus;
	int cpus[MAX_CPUS];
	struct ring rings[MAX_CPUS];
	size_t ring_pages;

	struct event *events;
	size_t nevents, capevents;

	struct pidtab procs;	/* of struct proc */
	struct pidtab tids;	/* of pid_t: the threads seen */
	struct pidtab ustks;	/* of struct ustk */

	struct target *targets;
	size_t ntargets;

	/* Launched command. */
	pid_t child;
	int go_fd, err_fd;
	int child_status;
	char **command;

	/* The queue. */
	msgpack_sbuffer qbuf;
	msgpack_packer qpk;
	struct qent *q;
	size_t nq, capq;
	uint64_t seq;
	unsigned char *tmp;	/* a record that wraps around the ring's end */

	bool kernel_enabled, kernel_fell_back;
	bool use_build_id, use_format_lost;
	bool started, finished;
	uint64_t start_ns;

	/* Build-id cache by (device, inode). */
	struct bid { uint64_t dev, ino; int len; unsigned char id[SP_BUILD_ID_MAX]; } *bids;
	size_t nbids, capbids;

	/* Counters for the summary. */
	uint64_t sample_events, samples, lost_events, lost_samples_format;
	uint64_t empty_stack, truncated, ignored_user, throttles;
	uint64_t skipped_no_pid, skipped_no_tid, skipped_no_time, skipped_no_frames;
	uint64_t errors[SP_E_COUNT];
};

static int fail(struct sp_recorder *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct sp_recorder *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t read_u64_file(const char *path, bool *ok)
{
	char buf[64];
	*ok = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	long long v = strtoll(buf, &end, 10);
	*ok = end != buf;
	return (uint64_t)v;
}

uint64_t sp_max_sample_rate(void)
{
	bool ok;
	uint64_t v = read_u64_file("/proc/sys/kernel/perf_event_max_sample_rate", &ok);
	return ok ? v : 0;
}

int sp_perf_paranoid(void)
{
	bool ok;
	uint64_t v = read_u64_file("/proc/sys/kernel/perf_event_paranoid", &ok);
	return ok ? (int)(int64_t)v : INT32_MIN;
}

/* The online CPUs, from /sys (a list such as "0-3,6"). */
static int online_cpus(int *cpus)
{
	char buf[1024];
	int n = 0;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (k <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (int i = 0; i < c && i < MAX_CPUS; i++)
			cpus[n++] = i;
		return n;
	}
	buf[k] = '\0';
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save)) {
		int a, b;
		if (sscanf(tok, "%d-%d", &a, &b) != 2)
			b = a = atoi(tok);
		for (int i = a; i <= b && n < MAX_CPUS; i++)
			cpus[n++] = i;
	}
	return n;
}

/* Process and thread tables: open addressing on the pid. */

static size_t hash_pid(pid_t p, size_t cap)
{
	return ((uint32_t)p * 2654435761u) & (cap - 1);
}

static pid_t slot_key(const struct pidtab *t, size_t i)
{
	pid_t k;
	memcpy(&k, t->v + i * t->elem, sizeof(k));
	return k;
}

/*
 * The record of key.  With create, a zeroed one with its key is added when
 * absent (*created says so, when not NULL).  NULL when absent, or when
 * memory runs out.
 */
static void *pidtab_get(struct pidtab *t, pid_t key, bool create, bool *created)
{
	if (created)
		*created = false;
	if (create && (t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		unsigned char *nv = calloc(ncap, t->elem);
		if (!nv)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			pid_t k = slot_key(t, i);
			if (!k)
				continue;
			size_t h = hash_pid(k, ncap);
			while (memcmp(nv + h * t->elem, &(pid_t){ 0 }, sizeof(pid_t)) != 0)
				h = (h + 1) & (ncap - 1);
			memcpy(nv + h * t->elem, t->v + i * t->elem, t->elem);
		}
		free(t->v);
		t->v = nv;
		t->cap = ncap;
	}
	if (!t->cap)
		return NULL;
	size_t h = hash_pid(key, t->cap);
	pid_t k;
	while ((k = slot_key(t, h)) && k != key)
		h = (h + 1) & (t->cap - 1);
	if (k == key)
		return t->v + h * t->elem;
	if (!create)
		return NULL;
	memcpy(t->v + h * t->elem, &key, sizeof(key));
	t->n++;
	if (created)
		*created = true;
	return t->v + h * t->elem;
}

static struct proc *proc_get(struct sp_recorder *r, pid_t pid, bool create)
{
	return pidtab_get(&r->procs, pid, create, NULL);
}

/* Notes a thread id; returns true the first time it is seen. */
static bool tid_note(struct sp_recorder *r, pid_t tid)
{
	bool created;
	pidtab_get(&r->tids, tid, true, &created);
	return created;
}

/* The last stack copy of a thread, created empty when create is set. */
static struct ustk *ustk_get(struct sp_recorder *r, pid_t tid, bool create)
{
	struct ustk *u = pidtab_get(&r->ustks, tid, create, NULL);
	if (u && !u->buf && !(u->buf = malloc(r->o.stack_size)))
		return NULL;
	return u;
}

/*
 * Notes a thread's stack copy; returns how many bytes at its end equal
 * the end of the thread's previous copy at the same addresses.
 */
static size_t ustk_share(struct sp_recorder *r, pid_t tid, uint64_t sp,
			 const unsigned char *stack, size_t len)
{
	struct ustk *u = ustk_get(r, tid, true);
	if (!u)
		return 0;
	size_t shared = 0;
	if (u->len && u->top == sp + len) {
		size_t max = len < u->len ? len : u->len;
		const unsigned char *a = stack + len, *b = u->buf + u->len;
		/* Eight bytes at a time, then the rest. */
		while (shared + 8 <= max && memcmp(a - shared - 8, b - shared - 8, 8) == 0)
			shared += 8;
		while (shared < max && a[-(ptrdiff_t)shared - 1] == b[-(ptrdiff_t)shared - 1])
			shared++;
	}
	memcpy(u->buf, stack, len);
	u->len = len;
	u->top = sp + len;
	return shared;
}

/* The queue. */

static void q_begin(struct sp_recorder *r, uint64_t time, size_t *start)
{
	(void)time;
	*start = r->qbuf.size;
}

static int q_end(struct sp_recorder *r, uint64_t time, size_t start)
{
	if (r->nq == r->capq) {
		size_t ncap = r->capq ? r->capq * 2 : 1024;
		struct qent *nq = realloc(r->q, ncap * sizeof(*nq));
		if (!nq)
			return fail(r, "out of memory");
		r->q = nq;
		r->capq = ncap;
	}
	r->q[r->nq++] = (struct qent){ time, r->seq++, start, r->qbuf.size - start, 0, false };
	return 0;
}

static int cmp_qent(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Packs a queued sample into the output, sharing its stack copy's tail. */
static void write_sample(struct sp_recorder *r, const unsigned char *p)
{
	struct pending_sample ps;
	memcpy(&ps, p, sizeof(ps));
	const unsigned char *regs = p + sizeof(ps);
	const unsigned char *kips = regs + ps.nregs * 8;
	const unsigned char *stack = kips + ps.nk * 8;
	size_t shared = 0;
	if (ps.dyn > 0 && ps.nregs > SP_INDEX) {
		uint64_t sp;
		memcpy(&sp, regs + SP_INDEX * 8, 8);
		shared = ustk_share(r, (pid_t)ps.tid, sp, stack, ps.dyn);
	}
	msgpack_packer *pk = sp_writer_packer(r->w);
	bool kstack = ps.kernel && ps.nk > 0;
	msgpack_pack_map(pk, 10 + kstack + (shared > 0));
	sp_pack_kv_str(pk, "t", "sample");
	sp_pack_kv_u64(pk, "pid", ps.pid);
	sp_pack_kv_u64(pk, "tid", ps.tid);
	sp_pack_kv_u64(pk, "time", ps.time);
	sp_pack_kv_u64(pk, "cpu", ps.cpu);
	sp_pack_kv_u64(pk, "period", ps.period);
	sp_pack_kv_u64(pk, "abi", ps.abi);
	sp_pack_key(pk, "regs");
	msgpack_pack_array(pk, ps.nregs);
	for (size_t i = 0; i < ps.nregs; i++) {
		uint64_t v;
		memcpy(&v, regs + i * 8, 8);
		msgpack_pack_uint64(pk, v);
	}
	sp_pack_kv_bin(pk, "ustack", stack, ps.dyn - shared);
	if (shared > 0)
		sp_pack_kv_u64(pk, "ustack_shared", shared);
	sp_pack_kv_bool(pk, "ustack_full", ps.full);
	if (kstack) {
		sp_pack_key(pk, "kstack");
		msgpack_pack_array(pk, ps.nk);
		for (size_t i = 0; i < ps.nk; i++) {
			uint64_t ip;
			memcpy(&ip, kips + i * 8, 8);
			msgpack_pack_uint64(pk, ip);
		}
	}
}

/* Writes queued records stamped at or before limit, in time order. */
static int q_flush(struct sp_recorder *r, uint64_t limit)
{
	if (r->nq == 0)
		return 0;
	qsort(r->q, r->nq, sizeof(*r->q), cmp_qent);
	size_t i = 0;
	for (; i < r->nq && r->q[i].time <= limit; i++) {
		/*
		 * Every record stamped before a sample has been converted by
		 * now, so a fork that precedes it has made its process known.
		 */
		if (r->q[i].sample_pid && !proc_get(r, r->q[i].sample_pid, false))
			r->errors[SP_E_UNKNOWN_PROCESS]++;
		if (r->q[i].pending)
			write_sample(r, (const unsigned char *)r->qbuf.data + r->q[i].off);
		else
			sp_writer_raw(r->w, r->qbuf.data + r->q[i].off, r->q[i].len);
		if (sp_writer_failed(r->w))
			return fail(r, "%s", sp_writer_error(r->w));
	}
	/* Keep the rest, compacted, for the next round. */
	msgpack_sbuffer keep;
	msgpack_sbuffer_init(&keep);
	for (size_t j = i; j < r->nq; j++) {
		struct qent e = r->q[j];
		size_t off = keep.size;
		if (msgpack_sbuffer_write(&keep, r->qbuf.data + e.off, e.len) < 0) {
			msgpack_sbuffer_destroy(&keep);
			return fail(r, "out of memory");
		}
		e.off = off;
		r->q[j - i] = e;
	}
	r->nq -= i;
	msgpack_sbuffer_destroy(&r->qbuf);
	r->qbuf = keep;
	return 0;
}

/* Build-ids. */

static int build_id_cached(struct sp_recorder *r, const char *path, const char *alt,
			   uint64_t dev, uint64_t ino, unsigned char *id)
{
	for (size_t i = 0; i < r->nbids; i++)
		if (r->bids[i].dev == dev && r->bids[i].ino == ino && ino != 0) {
			memcpy(id, r->bids[i].id, (size_t)(r->bids[i].len > 0 ? r->bids[i].len : 0));
			return r->bids[i].len;
		}
	int n = sp_build_id_path(path, id);
	if (n < 0 && alt)
		n = sp_build_id_path(alt, id);
	if (n < 0)
		r->errors[SP_E_BUILD_ID_UNREADABLE]++;
	if (ino != 0 && r->nbids < 4096) {
		if (r->nbids == r->capbids) {
			size_t ncap = r->capbids ? r->capbids * 2 : 64;
			struct bid *nb = realloc(r->bids, ncap * sizeof(*nb));
			if (!nb)
				return n;
			r->bids = nb;
			r->capbids = ncap;
		}
		struct bid *b = &r->bids[r->nbids++];
		b->dev = dev;
		b->ino = ino;
		b->len = n;
		if (n > 0)
			memcpy(b->id, id, (size_t)n);
	}
	return n;
}

/* Whether a mapping's path names a file (not //anon, [vdso], ...). */
static bool is_file_path(const char *path)
{
	return path[0] == '/' && strncmp(path, "//anon", 6) != 0 &&
	       strncmp(path, "/memfd:", 7) != 0 && strncmp(path, "/dev/zero", 9) != 0;
}

/* Record writers: each packs one record into the queue. */

static void pack_runtime(struct sp_recorder *r, pid_t pid, uint64_t time,
			 bool cpython, const char *via)
{
	size_t s;
	q_begin(r, time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 5);
	sp_pack_kv_str(pk, "t", "runtime");
	sp_pack_kv_u64(pk, "pid", (uint64_t)pid);
	sp_pack_kv_bool(pk, "cpython", cpython);
	sp_pack_kv_str(pk, "via", via);
	sp_pack_kv_u64(pk, "time", time);
	q_end(r, time, s);
}

/* Updates a process's CPython status from a newly mapped file. */
static void note_mapping_runtime(struct sp_recorder *r, pid_t pid, const char *path,
				 uint64_t time)
{
	const char *via;
	struct proc *p = proc_get(r, pid, true);
	if (p && !p->cpython && sp_path_is_cpython(path, &via)) {
		p->cpython = true;
		pack_runtime(r, pid, time, true, via);
	}
}

static void pack_map(struct sp_recorder *r, pid_t pid, pid_t tid, uint64_t time,
		     uint64_t start, uint64_t len, uint64_t pgoff, const char *path,
		     bool have_dev, unsigned maj, unsigned min, uint64_t ino,
		     int prot, int flags, const unsigned char *bid, int bidlen,
		     const unsigned char *cid, bool deleted)
{
	size_t s;
	q_begin(r, time, &s);
	msgpack_packer *pk = &r->qpk;
	int n = 9 + (tid ? 1 : 0) + (have_dev ? 3 : 0) + (bidlen > 0) + (flags >= 0) + (cid != NULL);
	msgpack_pack_map(pk, (size_t)n);
	sp_pack_kv_str(pk, "t", "map");
	sp_pack_kv_u64(pk, "pid", (uint64_t)pid);
	sp_pack_kv_u64(pk, "start", start);
	sp_pack_kv_u64(pk, "len", len);
	sp_pack_kv_u64(pk, "pgoff", pgoff);
	sp_pack_kv_str(pk, "path", path);
	if (tid)
		sp_pack_kv_u64(pk, "tid", (uint64_t)tid);
	sp_pack_kv_u64(pk, "time", time);
	if (have_dev) {
		sp_pack_kv_u64(pk, "maj", maj);
		sp_pack_kv_u64(pk, "min", min);
		sp_pack_kv_u64(pk, "ino", ino);
	}
	sp_pack_kv_u64(pk, "prot", (uint64_t)prot);
	if (flags >= 0)
		sp_pack_kv_u64(pk, "flags", (uint64_t)flags);
	if (bidlen > 0)
		sp_pack_kv_bin(pk, "build_id", bid, (size_t)bidlen);
	if (cid)
		sp_pack_kv_bin(pk, "content_id", cid, 20);
	sp_pack_kv_bool(pk, "deleted", deleted);
	q_end(r, time, s);
}

/* An "archive" record: a file kept in the --archive directory. */
static void pack_archive(struct sp_recorder *r, uint64_t time, const char *kind,
			 const char *file, const char *path, const unsigned char *id, int idlen,
			 bool content, bool debug, pid_t pid, uint64_t start_time)
{
	size_t s;
	q_begin(r, time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 3 + (path != NULL) + (idlen > 0) + debug + 2 * (pid != 0));
	sp_pack_kv_str(pk, "t", "archive");
	sp_pack_kv_str(pk, "kind", kind);
	sp_pack_kv_str(pk, "file", file);
	if (path)
		sp_pack_kv_str(pk, "path", path);
	if (idlen > 0)
		sp_pack_kv_bin(pk, content ? "content_id" : "build_id", id, (size_t)idlen);
	if (debug)
		sp_pack_kv_bool(pk, "debug", true);
	if (pid) {
		sp_pack_kv_u64(pk, "pid", (uint64_t)pid);
		sp_pack_kv_u64(pk, "start_time", start_time);
	}
	q_end(r, time, s);
}

/*
 * With --archive: the identity of a mapped file without a build-id (its
 * content), and the file itself kept once in the archive.
 */
static void archive_map(struct sp_recorder *r, pid_t pid, uint64_t time, uint64_t start,
			uint64_t end, const char *path, const unsigned char *bid, int bidlen,
			unsigned char *cid, bool *have_cid)
{
	*have_cid = false;
	if (!r->o.archive || !is_file_path(path))
		return;
	if (bidlen <= 0) {
		if (sp_archive_content_id(pid, start, end, path, cid) < 0) {
			r->errors[SP_E_ARCHIVE_FAILED]++;
			return;
		}
		*have_cid = true;
	}
	char rel[512];
	bool debug;
	int rc = sp_archive_module(r->o.archive, pid, start, end, path, *have_cid ? cid : bid,
				   *have_cid ? 20 : bidlen, *have_cid, rel, sizeof(rel), &debug);
	if (rc < 0)
		r->errors[SP_E_ARCHIVE_FAILED]++;
	else if (rc > 0)
		pack_archive(r, time, "module", rel, path, *have_cid ? cid : bid,
			     *have_cid ? 20 : bidlen, *have_cid, debug, 0, 0);
}

/* State synthesized from /proc at attach. */

struct synth_ctx {
	struct sp_recorder *r;
	pid_t pid;
	uint64_t time;
	const char *via;	/* why the process is CPython, or NULL */
};

static int synth_map(const struct sp_proc_map *m, void *arg)
{
	struct synth_ctx *c = arg;
	if (!(m->prot & PROT_EXEC))
		return 0;
	char path[4096], alt[128];
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen = 0;
	if (m->path[0] == '\0')
		snprintf(path, sizeof(path), "//anon");
	else
		snprintf(path, sizeof(path), "%s", m->path);
	if (is_file_path(path)) {
		/* A deleted or replaced file is still readable via map_files. */
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)c->pid, m->start, m->end);
		bidlen = build_id_cached(c->r, m->deleted ? alt : path, alt,
					 (uint64_t)m->maj << 32 | m->min, m->ino, bid);
	}
	unsigned char cid[20];
	bool have_cid;
	archive_map(c->r, c->pid, c->time, m->start, m->end, path, bid, bidlen, cid, &have_cid);
	pack_map(c->r, c->pid, 0, c->time, m->start, m->end - m->start, m->pgoff, path,
		 true, m->maj, m->min, m->ino, m->prot,
		 m->shared ? MAP_SHARED : MAP_PRIVATE, bid, bidlen, have_cid ? cid : NULL,
		 m->deleted);
	const char *via;
	if (!c->via && sp_path_is_cpython(path, &via))
		c->via = via;
	return 0;
}

static void synth_process(struct sp_recorder *r, pid_t pid, const struct sp_proc_stat *st,
			  uint64_t time)
{
	char exe[4096], cmd[8192];
	bool have_exe = sp_proc_exe(pid, exe, sizeof(exe)) == 0;
	ssize_t cl = sp_proc_cmdline(pid, cmd, sizeof(cmd));
	size_t nargs = 0;
	for (ssize_t i = 0; i < cl; i++)
		nargs += cmd[i] == '\0';
	if (cl > 0 && cmd[cl - 1] != '\0')
		nargs++;

	size_t s;
	q_begin(r, time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 7 + have_exe + (cl > 0));
	sp_pack_kv_str(pk, "t", "process");
	sp_pack_kv_u64(pk, "pid", (uint64_t)pid);
	sp_pack_kv_u64(pk, "ppid", (uint64_t)st->ppid);
	sp_pack_kv_u64(pk, "start_time", st->start_ns);
	if (have_exe) {
		size_t el = strlen(exe);
		static const char del[] = " (deleted)";
		if (el > sizeof(del) - 1 && strcmp(exe + el - (sizeof(del) - 1), del) == 0)
			exe[el - (sizeof(del) - 1)] = '\0';
		sp_pack_kv_str(pk, "exe", exe);
	}
	sp_pack_kv_str(pk, "comm", st->comm);
	if (cl > 0) {
		sp_pack_key(pk, "cmdline");
		msgpack_pack_array(pk, nargs);
		for (ssize_t i = 0; i < cl;) {
			size_t n = strnlen(cmd + i, (size_t)(cl - i));
			msgpack_pack_str(pk, n);
			msgpack_pack_str_body(pk, cmd + i, n);
			i += (ssize_t)n + 1;
		}
	}
	sp_pack_kv_u64(pk, "uid", (uint64_t)st->uid);
	sp_pack_kv_u64(pk, "time", time);
	q_end(r, time, s);
}

static void synth_thread(struct sp_recorder *r, pid_t pid, pid_t tid, uint64_t time)
{
	char comm[64];
	bool have = sp_proc_thread_comm(pid, tid, comm, sizeof(comm)) == 0;
	size_t s;
	q_begin(r, time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 4 + have);
	sp_pack_kv_str(pk, "t", "thread");
	sp_pack_kv_u64(pk, "pid", (uint64_t)pid);
	sp_pack_kv_u64(pk, "tid", (uint64_t)tid);
	if (have)
		sp_pack_kv_str(pk, "comm", comm);
	sp_pack_kv_u64(pk, "time", time);
	q_end(r, time, s);
	tid_note(r, tid);
}

/* Events and rings. */

static long perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void fill_attr(struct sp_recorder *r, struct perf_event_attr *a, bool on_exec)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = r->o.frequency;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER;
	if (r->kernel_enabled)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = r->o.stack_size;
	a->exclude_kernel = !r->kernel_enabled;
	a->exclude_hv = 1;
	/* User frames come from the stack copy, never from the callchain. */
	a->exclude_callchain_user = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->build_id = r->use_build_id;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(r->ring_pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
	a->inherit = r->o.inherit;
	a->disabled = 1;
	a->enable_on_exec = on_exec;
	if (r->use_format_lost)
		a->read_format = PERF_FORMAT_LOST;
}

static int add_event(struct sp_recorder *r, int fd, pid_t pid, pid_t tid, int cpu)
{
	if (r->nevents == r->capevents) {
		size_t ncap = r->capevents ? r->capevents * 2 : 64;
		struct event *ne = realloc(r->events, ncap * sizeof(*ne));
		if (!ne)
			return fail(r, "out of memory");
		r->events = ne;
		r->capevents = ncap;
	}
	r->events[r->nevents++] = (struct event){ fd, pid, tid, cpu };
	return 0;
}

/* Gives the event a ring: the CPU's existing one, or a new mapping. */
static int attach_ring(struct sp_recorder *r, int fd, int ci)
{
	struct ring *g = &r->rings[ci];
	if (g->fd >= 0) {
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g->fd) < 0)
			return fail(r, "cannot redirect a perf event into the CPU %d buffer: %s",
				    r->cpus[ci], strerror(errno));
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
		return fail(r, "cannot map a %zu-page perf buffer for CPU %d: %s "
			    "(lower --mmap-pages, or raise kernel.perf_event_mlock_kb)",
			    r->ring_pages, r->cpus[ci], strerror(errno));
	}
}

static int permission_hint(struct sp_recorder *r, pid_t tid, int e)
{
	int par = sp_perf_paranoid();
	return fail(r, "cannot open a perf event for thread %d: %s (perf_event_paranoid is %d); "
		    "profile a process you own%s, lower -F, grant CAP_PERFMON "
		    "(setcap cap_perfmon,cap_sys_ptrace+ep sp-capture), "
		    "or lower kernel.perf_event_paranoid", (int)tid, strerror(e), par,
		    r->kernel_enabled ? ", drop --kernel" : "");
}

/*
 * Opens the events of one thread on every CPU.  Returns 0, 1 when the
 * thread no longer exists, or -1.
 */
static int open_thread(struct sp_recorder *r, pid_t pid, pid_t tid, bool on_exec)
{
	for (int ci = 0; ci < r->ncpus; ci++) {
		struct perf_event_attr a;
		long fd;
		for (;;) {
			fill_attr(r, &a, on_exec);
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
			if (e == EACCES || e == EPERM)
				return permission_hint(r, tid, e);
			if (e == EMFILE)
				return fail(r, "too many open files opening events for thread %d "
					    "(raise the limit with ulimit -n)", (int)tid);
			return fail(r, "cannot open a perf event for thread %d on CPU %d: %s",
				    (int)tid, r->cpus[ci], strerror(e));
		}
		if (attach_ring(r, (int)fd, ci) < 0 || add_event(r, (int)fd, pid, tid, r->cpus[ci]) < 0) {
			close((int)fd);
			return -1;
		}
	}
	return 0;
}

static void enable_events(struct sp_recorder *r, size_t from)
{
	for (size_t i = from; i < r->nevents; i++)
		ioctl(r->events[i].fd, PERF_EVENT_IOC_ENABLE, 0);
}

static void close_events_from(struct sp_recorder *r, size_t from)
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

/* Stopping targets while attaching. */

static void stopped_add(pid_t pid)
{
	for (int i = 0; i < MAX_STOPPED; i++)
		if (stopped_pids[i] == 0) {
			stopped_pids[i] = pid;
			return;
		}
}

static void stopped_continue(pid_t pid)
{
	for (int i = 0; i < MAX_STOPPED; i++)
		if (stopped_pids[i] == pid) {
			kill(pid, SIGCONT);
			stopped_pids[i] = 0;
		}
}

void sp_recorder_continue_targets(void)
{
	for (int i = 0; i < MAX_STOPPED; i++)
		if (stopped_pids[i] != 0) {
			kill(stopped_pids[i], SIGCONT);
			stopped_pids[i] = 0;
		}
}

/* Waits up to 500 ms for a process to show as stopped. */
static void wait_stopped(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		struct sp_proc_stat st;
		if (sp_proc_stat(pid, &st) < 0 || st.state == 'T' || st.state == 't')
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static int add_target(struct sp_recorder *r, pid_t pid, bool launched)
{
	struct target *nt = realloc(r->targets, (r->ntargets + 1) * sizeof(*nt));
	if (!nt)
		return fail(r, "out of memory");
	r->targets = nt;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r->targets[r->ntargets++] = (struct target){ pid, pfd, true, launched };
	return 0;
}

struct sp_recorder *sp_recorder_new(const struct sp_recorder_options *o,
				    struct sp_writer *w)
{
	struct sp_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->o = *o;
	r->w = w;
	r->procs.elem = sizeof(struct proc);
	r->tids.elem = sizeof(pid_t);
	r->ustks.elem = sizeof(struct ustk);
	r->ncpus = online_cpus(r->cpus);
	for (int i = 0; i < MAX_CPUS; i++)
		r->rings[i].fd = -1;
	r->kernel_enabled = o->kernel;
	r->use_build_id = true;
	r->use_format_lost = true;
	r->child = -1;
	r->go_fd = r->err_fd = -1;
	r->child_status = -1;
	if (o->mmap_pages) {
		r->ring_pages = o->mmap_pages;
	} else {
		/* Room for about 256 samples of the stack window per CPU. */
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t want = 256 * ((size_t)o->stack_size + 512) / page;
		r->ring_pages = 16;
		while (r->ring_pages * 2 <= want && r->ring_pages < 4096)
			r->ring_pages *= 2;
		/*
		 * Without privilege the rings of all CPUs share one budget:
		 * perf_event_mlock_kb per CPU plus RLIMIT_MEMLOCK.
		 */
		if (geteuid() != 0) {
			bool ok;
			uint64_t kb = read_u64_file("/proc/sys/kernel/perf_event_mlock_kb", &ok);
			struct rlimit rl;
			uint64_t memlock = getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
					   rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 0;
			uint64_t budget = (ok ? kb * 1024 / page * (uint64_t)r->ncpus : 0) +
					  memlock / page;
			uint64_t per_cpu = r->ncpus ? budget / (uint64_t)r->ncpus : budget;
			while (r->ring_pages > 8 && r->ring_pages + 1 > per_cpu)
				r->ring_pages /= 2;
		}
	}
	msgpack_sbuffer_init(&r->qbuf);
	msgpack_packer_init(&r->qpk, &r->qbuf, msgpack_sbuffer_write);
	r->tmp = malloc(65536);
	if (!r->tmp) {
		free(r);
		return NULL;
	}
	return r;
}

void sp_recorder_free(struct sp_recorder *r)
{
	if (!r)
		return;
	sp_recorder_continue_targets();
	close_events_from(r, 0);
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
	msgpack_sbuffer_destroy(&r->qbuf);
	free(r->q);
	free(r->tmp);
	free(r->events);
	free(r->procs.v);
	free(r->tids.v);
	for (size_t i = 0; i < r->ustks.cap; i++)
		free(((struct ustk *)r->ustks.v)[i].buf);
	free(r->ustks.v);
	free(r->targets);
	free(r->bids);
	free(r);
}

const char *sp_recorder_error(const struct sp_recorder *r)
{
	return r->err;
}

bool sp_recorder_kernel_fell_back(const struct sp_recorder *r)
{
	return r->kernel_fell_back;
}

int sp_recorder_command_status(const struct sp_recorder *r)
{
	return r->child_status;
}

void sp_recorder_get_stats(const struct sp_recorder *r, struct sp_recorder_stats *s)
{
	s->samples = r->samples;
	s->lost = r->lost_events;
	s->bytes = sp_writer_bytes(r->w);
	s->processes_alive = 0;
	for (size_t i = 0; i < r->ntargets; i++)
		s->processes_alive += r->targets[i].alive;
}

/* Opens events for every thread of pid not yet covered. */
static int open_threads(struct sp_recorder *r, pid_t pid, uint64_t time, bool synth)
{
	pid_t *tids;
	size_t n;
	if (sp_proc_tasks(pid, &tids, &n) < 0)
		return errno == ENOENT ? 1 : fail(r, "cannot list the threads of %d: %s",
						   (int)pid, strerror(errno));
	int rc = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		bool have = false;
		for (size_t j = 0; j < r->nevents && !have; j++)
			have = r->events[j].tid == tids[i];
		if (have)
			continue;
		int k = open_thread(r, pid, tids[i], false);
		if (k < 0)
			rc = -1;
		else if (k == 0 && synth)
			synth_thread(r, pid, tids[i], time);
		else if (k == 1 && tids[i] != pid)
			r->errors[SP_E_THREAD_ATTACH_FAILED]++;
		else if (k == 1)
			rc = 1;
	}
	free(tids);
	return rc;
}

int sp_recorder_attach(struct sp_recorder *r, pid_t pid)
{
	struct sp_proc_stat st;
	if (sp_proc_stat(pid, &st) < 0)
		return fail(r, "no process with pid %d", (int)pid);
	bool stopped_by_us = false;
	if (r->o.stop && st.state != 'T' && st.state != 't') {
		if (kill(pid, SIGSTOP) < 0)
			return fail(r, "cannot stop process %d while attaching: %s "
				    "(profile a process you own, or use --no-stop)",
				    (int)pid, strerror(errno));
		stopped_add(pid);
		stopped_by_us = true;
		wait_stopped(pid);
	}
	size_t first_event = r->nevents;
	uint64_t t = now_ns();
	size_t first_q = r->nq;
	synth_process(r, pid, &st, t);
	int rc = open_threads(r, pid, t, true);
	if (rc != 0) {
		if (rc > 0)
			fail(r, "process %d exited while attaching", (int)pid);
		close_events_from(r, first_event);
		r->nq = first_q;	/* drop what was queued for it */
		if (stopped_by_us)
			stopped_continue(pid);
		return -1;
	}
	struct proc *p = proc_get(r, pid, true);
	if (p) {
		p->alive = true;
		p->cpython = false;
		p->start_key = st.start_ns;
		p->uid = st.uid;
	}
	char exe[4096];
	struct synth_ctx c = { r, pid, t, NULL };
	if (sp_proc_exe(pid, exe, sizeof(exe)) < 0 || !sp_path_is_cpython(exe, &c.via))
		c.via = NULL;
	if (sp_proc_maps(pid, synth_map, &c) < 0)
		r->errors[SP_E_PROC_UNREADABLE]++;
	/* The marker follows the maps it was judged from. */
	if (p)
		p->cpython = c.via != NULL;
	pack_runtime(r, pid, t, c.via != NULL, c.via ? c.via : "none");
	enable_events(r, first_event);
	if (stopped_by_us)
		stopped_continue(pid);
	return add_target(r, pid, false);
}

int sp_recorder_launch(struct sp_recorder *r, char *const argv[], pid_t *child)
{
	int go[2], ep[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
		return fail(r, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return fail(r, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* Held until the events are open, then exec. */
		char c;
		close(go[1]);
		close(ep[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		/* The stream owns standard output: the command writes to stderr. */
		if (r->o.command_stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		int e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	r->child = pid;
	r->go_fd = go[1];
	r->err_fd = ep[0];
	*child = pid;

	uint64_t t = now_ns();
	int k = open_thread(r, pid, pid, true);
	if (k != 0)
		return k > 0 ? fail(r, "the command exited before it could be profiled") : -1;
	struct sp_proc_stat st = { 0 };
	if (sp_proc_stat(pid, &st) == 0) {
		const char *base = strrchr(argv[0], '/');
		snprintf(st.comm, sizeof(st.comm), "%.15s", base ? base + 1 : argv[0]);
		synth_process(r, pid, &st, t);
	}
	synth_thread(r, pid, pid, t);
	struct proc *p = proc_get(r, pid, true);
	if (p) {
		p->alive = true;
		p->cpython = false;
		p->start_key = st.start_ns;
		p->uid = getuid();
	}
	pack_runtime(r, pid, t, false, "none");
	size_t n = 0;
	while (argv[n])
		n++;
	r->command = (char **)argv;
	return add_target(r, pid, true);
}

static void pack_options(struct sp_recorder *r)
{
	msgpack_packer *pk = sp_writer_packer(r->w);
	bool pids = !r->command;
	sp_pack_key(pk, "options");
	msgpack_pack_map(pk, 11 + (r->o.frequency_arg != NULL) + (r->o.kallsyms_out != NULL));
	sp_pack_kv_u64(pk, "frequency", r->o.frequency);
	if (r->o.frequency_arg)
		sp_pack_kv_str(pk, "frequency_arg", r->o.frequency_arg);
	if (r->o.kallsyms_out)
		sp_pack_kv_str(pk, "kallsyms_out", r->o.kallsyms_out);
	sp_pack_kv_u64(pk, "stack_size", r->o.stack_size);
	sp_pack_kv_bool(pk, "kernel", r->o.kernel);
	sp_pack_kv_bool(pk, "inherit", r->o.inherit);
	sp_pack_kv_bool(pk, "descendants", r->o.descendants);
	sp_pack_kv_bool(pk, "stop", r->o.stop);
	sp_pack_kv_u64(pk, "refresh_threads_ms", (uint64_t)r->o.refresh_threads_ms);
	sp_pack_kv_u64(pk, "duration_ms", (uint64_t)(r->o.duration_s * 1000 + 0.5));
	sp_pack_kv_u64(pk, "poll_ms", (uint64_t)r->o.poll_ms);
	sp_pack_kv_u64(pk, "mmap_pages", r->ring_pages);
	if (pids) {
		sp_pack_key(pk, "pids");
		msgpack_pack_array(pk, r->ntargets);
		for (size_t i = 0; i < r->ntargets; i++)
			msgpack_pack_uint64(pk, (uint64_t)r->targets[i].pid);
	} else {
		size_t n = 0;
		while (r->command[n])
			n++;
		sp_pack_key(pk, "command");
		msgpack_pack_array(pk, n);
		for (size_t i = 0; i < n; i++)
			sp_pack_str(pk, r->command[i]);
	}
}

int sp_recorder_start(struct sp_recorder *r, int argc, char **argv)
{
	if (r->child > 0) {
		/* Let the command exec, and learn whether it could. */
		if (write(r->go_fd, "g", 1) != 1)
			return fail(r, "cannot release the command: %s", strerror(errno));
		close(r->go_fd);
		r->go_fd = -1;
		int e = 0;
		ssize_t k;
		do
			k = read(r->err_fd, &e, sizeof(e));
		while (k < 0 && errno == EINTR);
		close(r->err_fd);
		r->err_fd = -1;
		if (k == (ssize_t)sizeof(e)) {
			waitpid(r->child, &r->child_status, 0);
			return fail(r, "cannot run '%s': %s", r->command[0], strerror(e));
		}
	}
	msgpack_packer *pk = sp_writer_packer(r->w);
	int n = 7 + 1 + 1 + r->o.has_start_timestamp + r->o.has_sample_interval;
	msgpack_pack_map(pk, (size_t)n);
	sp_pack_kv_str(pk, "t", "header");
	sp_pack_kv_str(pk, "format", SP_FORMAT_NAME);
	sp_pack_key(pk, "version");
	msgpack_pack_array(pk, 2);
	msgpack_pack_uint64(pk, SP_FORMAT_MAJOR);
	msgpack_pack_uint64(pk, SP_FORMAT_MINOR);
	sp_pack_kv_str(pk, "stage", "raw");
	sp_pack_key(pk, "tools");
	msgpack_pack_array(pk, 1);
	sp_pack_tool(pk, "sp-capture", argc, argv);
	sp_pack_host(pk);
	pack_options(r);
	sp_pack_kv_bool(pk, "kernel_enabled", r->kernel_enabled);
	sp_pack_key(pk, "reg_names");
	msgpack_pack_array(pk, NREGS);
	for (size_t i = 0; i < NREGS; i++)
		sp_pack_str(pk, reg_names[i]);
	if (r->o.has_start_timestamp)
		sp_pack_kv_u64(pk, "start_timestamp_us", r->o.start_timestamp_us);
	if (r->o.has_sample_interval)
		sp_pack_kv_u64(pk, "sample_interval_us", r->o.sample_interval_us);
	r->started = true;
	r->start_ns = now_ns();
	if (q_flush(r, UINT64_MAX) < 0 || sp_writer_flush(r->w) < 0)
		return fail(r, "%s", sp_writer_error(r->w));
	return 0;
}

/* Converting kernel records. */

struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	bool ok;
};

/* The sample_id_all trailer: TID, TIME, CPU (the order of sample_type bits). */
static struct sample_id trailer(const unsigned char *rec, size_t size)
{
	struct sample_id s = { 0 };
	if (size < sizeof(struct perf_event_header) + 24)
		return s;
	const unsigned char *p = rec + size - 24;
	memcpy(&s.pid, p, 4);
	memcpy(&s.tid, p + 4, 4);
	memcpy(&s.time, p + 8, 8);
	memcpy(&s.cpu, p + 16, 4);
	s.ok = true;
	return s;
}

static void bad_record(struct sp_recorder *r)
{
	r->errors[SP_E_BAD_KERNEL_RECORD]++;
}

static void handle_sample(struct sp_recorder *r, const unsigned char *rec, size_t size)
{
	const unsigned char *p = rec + sizeof(struct perf_event_header), *end = rec + size;
	uint32_t pid, tid, cpu;
	uint64_t time, period, nr = 0, abi = 0, ssize = 0, dyn = 0;
	const unsigned char *ips = NULL, *regs = NULL, *stack = NULL;

#define TAKE(dst, n) do { if ((size_t)(end - p) < (n)) goto bad; memcpy((dst), p, (n)); p += (n); } while (0)
	TAKE(&pid, 4);
	TAKE(&tid, 4);
	TAKE(&time, 8);
	TAKE(&cpu, 4);
	p += 4;
	TAKE(&period, 8);
	if (r->kernel_enabled) {
		TAKE(&nr, 8);
		if ((size_t)(end - p) / 8 < nr)
			goto bad;
		ips = p;
		p += nr * 8;
	}
	TAKE(&abi, 8);
	if (abi) {
		if ((size_t)(end - p) < NREGS * 8)
			goto bad;
		regs = p;
		p += NREGS * 8;
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
#undef TAKE

	r->sample_events++;
	if (pid == 0 || pid == UINT32_MAX) {
		r->skipped_no_pid++;
		return;
	}
	if (tid == 0 || tid == UINT32_MAX) {
		r->skipped_no_tid++;
		return;
	}
	if (time == 0) {
		r->skipped_no_time++;
		return;
	}
	/* Kernel entries only: markers dropped, user entries counted. */
	uint64_t kframes = 0, ctx = 0;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip;
		memcpy(&ip, ips + i * 8, 8);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			ctx = ip;
		else if (ctx == (uint64_t)PERF_CONTEXT_KERNEL)
			kframes++;
		else if (ctx == (uint64_t)PERF_CONTEXT_USER)
			r->ignored_user++;
	}
	if (!abi)
		r->errors[SP_E_NO_USER_REGS]++;
	if (!abi && kframes == 0) {
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
	/*
	 * Kept as it came until it is written: a stack copy can share its
	 * tail only with the copy written just before it, in time order.
	 */
	struct pending_sample ps = {
		.pid = pid, .tid = tid, .cpu = cpu, .time = time, .period = period,
		.abi = abi, .nregs = abi ? NREGS : 0, .nk = kframes, .dyn = dyn,
		.full = full, .kernel = r->kernel_enabled,
	};
	size_t s = r->qbuf.size;
	msgpack_sbuffer_write(&r->qbuf, (const char *)&ps, sizeof(ps));
	if (abi)
		msgpack_sbuffer_write(&r->qbuf, (const char *)regs, NREGS * 8);
	ctx = 0;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip;
		memcpy(&ip, ips + i * 8, 8);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			ctx = ip;
		else if (ctx == (uint64_t)PERF_CONTEXT_KERNEL)
			msgpack_sbuffer_write(&r->qbuf, (const char *)&ip, 8);
	}
	if (dyn)
		msgpack_sbuffer_write(&r->qbuf, (const char *)stack, dyn);
	if (q_end(r, time, s) == 0) {
		r->q[r->nq - 1].sample_pid = (pid_t)pid;
		r->q[r->nq - 1].pending = true;
	}
	r->samples++;
	tid_note(r, (pid_t)tid);
	return;
bad:
	bad_record(r);
}

static void handle_mmap2(struct sp_recorder *r, const unsigned char *rec, size_t size,
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
	struct sample_id id = trailer(rec, size);
	if (!(m.prot & PROT_EXEC))
		return;
	bool deleted = false;
	static const char del[] = " (deleted)";
	if (pl > sizeof(del) - 1 && strcmp(path + pl - (sizeof(del) - 1), del) == 0) {
		path[pl - (sizeof(del) - 1)] = '\0';
		deleted = true;
	}
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen = 0;
	bool have_dev = !(misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
	if (!have_dev) {
		bidlen = m.build_id_size > 20 ? 20 : m.build_id_size;
		memcpy(bid, m.build_id, (size_t)bidlen);
	} else if (is_file_path(path) && !deleted) {
		bidlen = build_id_cached(r, path, NULL, (uint64_t)m.maj << 32 | m.min, m.ino, bid);
	}
	if (bidlen < 0)
		bidlen = 0;
	unsigned char cid[20];
	bool have_cid;
	archive_map(r, (pid_t)m.pid, id.time, m.addr, m.addr + m.len, path, bid, bidlen, cid,
		    &have_cid);
	pack_map(r, (pid_t)m.pid, (pid_t)m.tid, id.time, m.addr, m.len, m.pgoff, path,
		 have_dev, have_dev ? m.maj : 0, have_dev ? m.min : 0, have_dev ? m.ino : 0,
		 (int)m.prot, (int)m.flags, bid, bidlen, have_cid ? cid : NULL, deleted);
	note_mapping_runtime(r, (pid_t)m.pid, path, id.time);
}

static void handle_comm(struct sp_recorder *r, const unsigned char *rec, size_t size,
			uint16_t misc)
{
	size_t hdr = sizeof(struct perf_event_header);
	uint32_t pid, tid;
	if (size < hdr + 8 + 24) {
		bad_record(r);
		return;
	}
	memcpy(&pid, rec + hdr, 4);
	memcpy(&tid, rec + hdr + 4, 4);
	char comm[64];
	size_t cl = strnlen((const char *)rec + hdr + 8, size - hdr - 8 - 24);
	if (cl >= sizeof(comm))
		cl = sizeof(comm) - 1;
	memcpy(comm, rec + hdr + 8, cl);
	comm[cl] = '\0';
	struct sample_id id = trailer(rec, size);
	bool exec = misc & PERF_RECORD_MISC_COMM_EXEC;

	size_t s;
	q_begin(r, id.time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 5);
	sp_pack_kv_str(pk, "t", exec ? "exec" : "comm");
	sp_pack_kv_u64(pk, "pid", pid);
	sp_pack_kv_u64(pk, "tid", tid);
	sp_pack_kv_str(pk, "comm", comm);
	sp_pack_kv_u64(pk, "time", id.time);
	q_end(r, id.time, s);
	if (exec) {
		/* A new program: the status starts over from its name. */
		struct proc *p = proc_get(r, (pid_t)pid, true);
		const char *via = "none";
		bool cpy = sp_path_is_cpython(comm, &via);
		if (p)
			p->cpython = cpy;
		pack_runtime(r, (pid_t)pid, id.time, cpy, cpy ? via : "none");
	}
}

static void handle_task(struct sp_recorder *r, const unsigned char *rec, size_t size,
			bool fork)
{
	size_t hdr = sizeof(struct perf_event_header);
	struct { uint32_t pid, ppid, tid, ptid; uint64_t time; } t;
	if (size < hdr + sizeof(t)) {
		bad_record(r);
		return;
	}
	memcpy(&t, rec + hdr, sizeof(t));
	size_t s;
	q_begin(r, t.time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 6);
	sp_pack_kv_str(pk, "t", fork ? "fork" : "exit");
	sp_pack_kv_u64(pk, "pid", t.pid);
	sp_pack_kv_u64(pk, "ppid", t.ppid);
	sp_pack_kv_u64(pk, "tid", t.tid);
	sp_pack_kv_u64(pk, "ptid", t.ptid);
	sp_pack_kv_u64(pk, "time", t.time);
	q_end(r, t.time, s);
	if (fork && t.pid != t.ppid) {
		/* A new process: it starts with its parent's state. */
		struct proc *parent = proc_get(r, (pid_t)t.ppid, false);
		bool cpy = parent && parent->cpython;
		struct proc *p = proc_get(r, (pid_t)t.pid, true);
		if (p) {
			p->cpython = cpy;
			p->alive = true;
			p->start_key = t.time;
			parent = proc_get(r, (pid_t)t.ppid, false);	/* the table may have moved */
			p->uid = parent ? parent->uid : getuid();
		}
		pack_runtime(r, (pid_t)t.pid, t.time, cpy, cpy ? "parent" : "none");
	}
	if (fork)
		tid_note(r, (pid_t)t.tid);
	struct ustk *u = fork ? NULL : ustk_get(r, (pid_t)t.tid, false);
	if (u)
		u->len = 0;	/* a reused tid starts afresh */
	if (!fork && t.pid == t.tid) {
		struct proc *p = proc_get(r, (pid_t)t.pid, false);
		if (p)
			p->alive = false;
	}
}

static void handle_lost(struct sp_recorder *r, const unsigned char *rec, size_t size,
			bool samples)
{
	size_t hdr = sizeof(struct perf_event_header);
	uint64_t lost;
	/* PERF_RECORD_LOST has an id before the count; LOST_SAMPLES does not. */
	size_t off = hdr + (samples ? 0 : 8);
	if (size < off + 8 + 24) {
		bad_record(r);
		return;
	}
	memcpy(&lost, rec + off, 8);
	struct sample_id id = trailer(rec, size);
	r->lost_events += lost;
	size_t s;
	q_begin(r, id.time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 5);
	sp_pack_kv_str(pk, "t", "lost");
	sp_pack_kv_u64(pk, "lost", lost);
	sp_pack_kv_str(pk, "kind", samples ? "samples" : "records");
	sp_pack_kv_u64(pk, "time", id.time);
	sp_pack_kv_u64(pk, "cpu", id.cpu);
	q_end(r, id.time, s);
}

static void handle_throttle(struct sp_recorder *r, const unsigned char *rec, size_t size,
			    bool throttle)
{
	size_t hdr = sizeof(struct perf_event_header);
	uint64_t time;
	if (size < hdr + 24 + 24) {
		bad_record(r);
		return;
	}
	memcpy(&time, rec + hdr, 8);
	struct sample_id id = trailer(rec, size);
	if (throttle)
		r->throttles++;
	size_t s;
	q_begin(r, time, &s);
	msgpack_packer *pk = &r->qpk;
	msgpack_pack_map(pk, 3);
	sp_pack_kv_str(pk, "t", throttle ? "throttle" : "unthrottle");
	sp_pack_kv_u64(pk, "time", time);
	sp_pack_kv_u64(pk, "cpu", id.cpu);
	q_end(r, time, s);
}

static void handle_record(struct sp_recorder *r, const unsigned char *rec, size_t size)
{
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE: handle_sample(r, rec, size); break;
	case PERF_RECORD_MMAP2: handle_mmap2(r, rec, size, h.misc); break;
	case PERF_RECORD_COMM: handle_comm(r, rec, size, h.misc); break;
	case PERF_RECORD_FORK: handle_task(r, rec, size, true); break;
	case PERF_RECORD_EXIT: handle_task(r, rec, size, false); break;
	case PERF_RECORD_LOST: handle_lost(r, rec, size, false); break;
	case PERF_RECORD_LOST_SAMPLES: handle_lost(r, rec, size, true); break;
	case PERF_RECORD_THROTTLE: handle_throttle(r, rec, size, true); break;
	case PERF_RECORD_UNTHROTTLE: handle_throttle(r, rec, size, false); break;
	default: break;	/* other side-band records are not needed */
	}
}

/* Copies every complete record out of one ring. */
static void drain_ring(struct sp_recorder *r, struct ring *g)
{
	struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)g->base;
	unsigned char *data = g->base + (size_t)sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	uint64_t mask = g->data_size - 1;
	while (tail < head) {
		struct perf_event_header h;
		size_t at = (size_t)(tail & mask);
		/* Records are 8-byte aligned, so a header never wraps. */
		memcpy(&h, data + at, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			bad_record(r);
			tail = head;
			break;
		}
		const unsigned char *rec = data + at;
		if (at + h.size > g->data_size) {
			size_t first = g->data_size - at;
			memcpy(r->tmp, data + at, first);
			memcpy(r->tmp + first, data, h.size - first);
			rec = r->tmp;
		}
		handle_record(r, rec, h.size);
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static int drain_all(struct sp_recorder *r, uint64_t limit)
{
	for (int ci = 0; ci < r->ncpus; ci++)
		if (r->rings[ci].fd >= 0)
			drain_ring(r, &r->rings[ci]);
	if (q_flush(r, limit) < 0)
		return -1;
	if (sp_writer_flush(r->w) < 0)
		return fail(r, "%s", sp_writer_error(r->w));
	return 0;
}

static void reap_child(struct sp_recorder *r)
{
	if (r->child > 0 && r->child_status < 0) {
		int st;
		if (waitpid(r->child, &st, WNOHANG) == r->child)
			r->child_status = st;
	}
}

int sp_recorder_poll(struct sp_recorder *r, int timeout_ms)
{
	struct pollfd pfd[MAX_CPUS + 64];
	nfds_t n = 0;
	for (int ci = 0; ci < r->ncpus; ci++)
		if (r->rings[ci].fd >= 0)
			pfd[n++] = (struct pollfd){ r->rings[ci].fd, POLLIN, 0 };
	size_t tfirst = n;
	for (size_t i = 0; i < r->ntargets && n < sizeof(pfd) / sizeof(pfd[0]); i++)
		if (r->targets[i].alive && r->targets[i].pidfd >= 0)
			pfd[n++] = (struct pollfd){ r->targets[i].pidfd, POLLIN, 0 };
	if (poll(pfd, n, timeout_ms) < 0 && errno != EINTR)
		return fail(r, "poll: %s", strerror(errno));

	uint64_t limit = now_ns();
	if (drain_all(r, limit) < 0)
		return -1;

	reap_child(r);
	unsigned alive = 0;
	size_t k = tfirst;
	for (size_t i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];
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
	return alive > 0;
}

int sp_recorder_refresh_threads(struct sp_recorder *r)
{
	uint64_t t = now_ns();
	for (size_t i = 0; i < r->ntargets; i++) {
		if (!r->targets[i].alive)
			continue;
		size_t first = r->nevents;
		if (open_threads(r, r->targets[i].pid, t, true) < 0)
			return -1;
		enable_events(r, first);
	}
	return 0;
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

int sp_recorder_finish(struct sp_recorder *r)
{
	if (r->finished)
		return 0;
	r->finished = true;
	for (size_t i = 0; i < r->nevents; i++)
		ioctl(r->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	if (drain_all(r, UINT64_MAX) < 0)
		return -1;
	/* Per-event lost counts (PERF_FORMAT_LOST). */
	if (r->use_format_lost)
		for (size_t i = 0; i < r->nevents; i++) {
			uint64_t v[2];
			if (read(r->events[i].fd, v, sizeof(v)) == (ssize_t)sizeof(v))
				r->lost_samples_format += v[1];
		}
	/* End a launched command that is still running, as perf record does. */
	reap_child(r);
	if (r->child > 0 && r->child_status < 0) {
		/* SIGTERM, and SIGKILL if it is still there after two seconds. */
		kill(r->child, SIGTERM);
		for (int i = 0; i < 200 && r->child_status < 0; i++) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
			reap_child(r);
		}
		if (r->child_status < 0) {
			kill(r->child, SIGKILL);
			int st;
			if (waitpid(r->child, &st, 0) == r->child)
				r->child_status = st;
		}
	}

	uint64_t end = now_ns();
	if (r->o.archive) {
		/* Each process's perf map, keyed by pid and start, and kallsyms. */
		for (size_t i = 0; i < r->procs.cap; i++) {
			const struct proc *p = &((const struct proc *)r->procs.v)[i];
			char src[64], rel[128];
			if (!p->pid)
				continue;
			snprintf(src, sizeof(src), "/tmp/perf-%d.map", (int)p->pid);
			if (access(src, R_OK) != 0)
				continue;
			snprintf(rel, sizeof(rel), "perf-maps/perf-%d-%" PRIu64 ".map", (int)p->pid,
				 p->start_key);
			if (sp_archive_copy(r->o.archive, src, rel, 0644, true, p->uid) < 0)
				r->errors[SP_E_ARCHIVE_FAILED]++;
			else
				pack_archive(r, end, "perf-map", rel, src, NULL, 0, false, false,
					     p->pid, p->start_key);
		}
		/* Kernel addresses are private; without privilege they read as zero. */
		if (!kallsyms_has_addresses())
			r->errors[SP_E_ARCHIVE_FAILED]++;
		else if (sp_archive_copy(r->o.archive, "/proc/kallsyms", "kallsyms", 0600, false, 0) < 0)
			r->errors[SP_E_ARCHIVE_FAILED]++;
		else
			pack_archive(r, end, "kallsyms", "kallsyms", "/proc/kallsyms", NULL, 0,
				     false, false, 0, 0);
		if (q_flush(r, UINT64_MAX) < 0)
			return -1;
	}
	uint64_t lost = r->lost_events > r->lost_samples_format ?
			r->lost_events : r->lost_samples_format;
	msgpack_packer *pk = sp_writer_packer(r->w);
	bool cmd = r->child > 0 && r->child_status >= 0;
	msgpack_pack_map(pk, 19 + cmd);
	sp_pack_kv_str(pk, "t", "summary");
	sp_pack_kv_u64(pk, "sample_events", r->sample_events);
	sp_pack_kv_u64(pk, "samples", r->samples);
	sp_pack_kv_u64(pk, "lost_events", lost);
	sp_pack_kv_u64(pk, "empty_stack_samples", r->empty_stack);
	sp_pack_kv_u64(pk, "truncated_frame_markers", r->truncated);
	sp_pack_kv_u64(pk, "ignored_user_callchain_frames", r->ignored_user);
	sp_pack_kv_bool(pk, "kernel_enabled", r->kernel_enabled);
	sp_pack_key(pk, "error_stats");
	msgpack_pack_array(pk, SP_E_COUNT);
	for (int e = 0; e < SP_E_COUNT; e++) {
		msgpack_pack_map(pk, 3);
		sp_pack_kv_str(pk, "kind", sp_error_kind_name((enum sp_error_kind)e));
		sp_pack_kv_u64(pk, "count", r->errors[e]);
		sp_pack_kv_str(pk, "description",
			       sp_error_kind_description((enum sp_error_kind)e));
	}
	sp_pack_kv_u64(pk, "skipped_no_pid", r->skipped_no_pid);
	sp_pack_kv_u64(pk, "skipped_no_tid", r->skipped_no_tid);
	sp_pack_kv_u64(pk, "skipped_no_time", r->skipped_no_time);
	sp_pack_kv_u64(pk, "skipped_no_frames", r->skipped_no_frames);
	sp_pack_kv_u64(pk, "lost_samples", r->lost_samples_format);
	sp_pack_kv_u64(pk, "throttle_events", r->throttles);
	sp_pack_kv_u64(pk, "processes", r->procs.n);
	sp_pack_kv_u64(pk, "threads", r->tids.n);
	sp_pack_kv_u64(pk, "duration_ns", r->started ? end - r->start_ns : 0);
	sp_pack_kv_u64(pk, "time", end);
	if (cmd) {
		int st = r->child_status;
		sp_pack_kv_i64(pk, "command_status",
			       WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
	}
	if (sp_writer_flush(r->w) < 0)
		return fail(r, "%s", sp_writer_error(r->w));
	return 0;
}

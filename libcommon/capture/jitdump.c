/* SPDX-License-Identifier: MIT
 * jitdump files (internal.h): a process that maps a file named
 * jit-PID.dump executable announces that it writes its JIT's code loads
 * there.  The recorder opens the file once, when it sees the mapping,
 * reads what the file has gained on each pass of the main loop (at most
 * every SP_REC_JIT_PERIOD_NS) and at the end, and writes the new bytes as
 * jitdump records, at most 1 MiB each, contiguous from offset 0, through
 * the queue.
 *
 * A consumer applies a code load to the samples after the record that
 * completes it, so the records of one read are stamped with the timestamp
 * of the first jitdump record they complete, when the file's clock is the
 * stream's (CLOCK_MONOTONIC), kept between the limit of the last drain (so
 * the stream's time never decreases for the process) and now: the queue
 * then puts them among the samples where the code appeared, not a poll
 * period later.  A parser per file finds the timestamps and the end of
 * the last whole record.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/internal.h"
#include "stream/jitdump.h"
#include "stream/records.h"
#include "util/alloc.h"
#include "util/procns.h"

/* The data of a record: room is left for its keys and path within the 1 MiB a record may take. */
#define SP_REC_JIT_CHUNK ((1u << 20) - 8192)
#define SP_REC_JIT_PERIOD_NS 100000000u

struct sp_rec_jit {
	pid_t pid;
	char *path;
	int fd;
	uint64_t off;		/* bytes read and queued */
	uint64_t map_time;	/* the map record that announced it */
	uint64_t last_time;	/* of the last record queued */
	uint64_t start_key;	/* the process's identity, for the archive's name */
	struct sp_jitdump *parser;	/* where whole records end, and their timestamps */
};

/* A queued jitdump record: the struct, then the path, then the data. */
struct q_jit {
	pid_t pid;
	uint64_t time, off;
	size_t pathlen, len;
};

/* Whether path's last component is jit-DIGITS.dump. */
bool sp_rec_is_jitdump_path(const char *path)
{
	const char *base = strrchr(path, '/');
	if (!base || strncmp(base, "/jit-", 5) != 0)
		return false;
	const char *p = base + 5, *d = p;
	while (*p >= '0' && *p <= '9')
		p++;
	return p > d && strcmp(p, ".dump") == 0;
}

/*
 * The file the process mapped: through map_files (the very file, even
 * renamed), else by its path in the process's root, refusing a symlink,
 * a file that is not regular, or one owned by another user than root or
 * the process's (as for perf maps: another user must not choose what
 * lands in the stream).
 */
static int open_jitdump(struct sp_capture *r, pid_t pid, uint64_t start, uint64_t len,
			const char *path)
{
	char p[4200];
	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start,
		 start + len);
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)	/* resolved inside its root: a container's links stay in it */
		fd = sp_proc_open_in_root(pid, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	const struct sp_rec_proc *pr = sp_rec_proc_get(r, pid, false);
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (sb.st_mode & S_IWOTH) ||
	    (sb.st_uid != 0 && (!pr || sb.st_uid != pr->uid))) {
		close(fd);
		return -1;
	}
	return fd;
}

void sp_rec_jitdump_note(struct sp_capture *r, pid_t pid, uint64_t start, uint64_t len,
			 const char *path, uint64_t time)
{
	if (!sp_rec_is_jitdump_path(path))
		return;
	for (size_t i = 0; i < r->njits; i++)
		if (r->jits[i].pid == pid && strcmp(r->jits[i].path, path) == 0)
			return;
	int fd = open_jitdump(r, pid, start, len, path);
	if (fd < 0) {
		r->errors[SP_E_PROC_UNREADABLE]++;
		return;
	}
	const struct sp_rec_proc *pr = sp_rec_proc_get(r, pid, false);
	struct sp_rec_jit j = {
		.pid = pid, .path = strdup(path), .fd = fd, .map_time = time,
		.last_time = time, .start_key = pr ? pr->start_key : 0,
		.parser = sp_jitdump_new(),
	};
	if (!j.path || !j.parser || SP_ALLOC_GROW(r->jits, r->njits + 1, r->allocjits) < 0) {
		free(j.path);
		sp_jitdump_free(j.parser);
		close(fd);
		r->errors[SP_E_PROC_UNREADABLE]++;
		return;
	}
	r->jits[r->njits++] = j;
}

/*
 * Whether the file's timestamps are the stream's clock: not a cycle
 * counter, and the header's between the process's start and now (V8
 * writes the wall clock in microseconds, for one).
 */
static bool clock_is_ours(struct sp_capture *r, const struct sp_rec_jit *j, uint64_t now)
{
	const struct sp_jitdump_header *h = sp_jitdump_header(j->parser);
	const struct sp_rec_proc *pr = sp_rec_proc_get(r, j->pid, false);
	uint64_t born = pr && pr->start_key > 1000000000u ? pr->start_key - 1000000000u : 0;
	return !(h->flags & SP_JITDUMP_FLAG_ARCH_TIMESTAMP) && h->timestamp <= now &&
	       h->timestamp >= born;
}

/*
 * Feeds the parser what the file has gained; returns the timestamp of the
 * first record that completes, when the file's clock is the stream's,
 * else 0.
 */
static uint64_t parse_new(struct sp_capture *r, struct sp_rec_jit *j, uint64_t now,
			  unsigned char *buf)
{
	uint64_t first = 0;
	struct sp_jit_rec rec;
	while (!sp_jitdump_failed(j->parser)) {
		ssize_t n = pread(j->fd, buf, SP_REC_JIT_CHUNK, (off_t)sp_jitdump_fed(j->parser));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r->errors[SP_E_PROC_UNREADABLE]++;
		if (n <= 0 || sp_jitdump_feed(j->parser, buf, (size_t)n) < 0)
			break;
		while (sp_jitdump_next(j->parser, &rec) == 1)
			if (!first && clock_is_ours(r, j, now))
				first = rec.timestamp;
	}
	return first;
}

/*
 * Queues what j's file has gained since the last read, up to the end of
 * its last whole record: the JIT may be in the middle of writing the next
 * (V8 writes 4 KiB at a time), and a record cut there would look cut
 * short when the recording ends.  Bytes the parser cannot read (a file
 * that is no jitdump) are queued to the end, for the consumer to report.
 */
static void read_jit(struct sp_capture *r, struct sp_rec_jit *j, uint64_t now,
		     unsigned char *buf)
{
	uint64_t ts = parse_new(r, j, now, buf);
	uint64_t end = sp_jitdump_offset(j->parser);
	struct stat sb;
	if (sp_jitdump_failed(j->parser))
		end = fstat(j->fd, &sb) == 0 ? (uint64_t)sb.st_size : j->off;
	uint64_t lo = j->last_time > r->jit_floor ? j->last_time : r->jit_floor;
	uint64_t t = ts > now ? now : ts < lo ? lo : ts;
	while (j->off < end) {
		size_t want = end - j->off < SP_REC_JIT_CHUNK ? (size_t)(end - j->off)
							      : SP_REC_JIT_CHUNK;
		ssize_t n = pread(j->fd, buf, want, (off_t)j->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->errors[SP_E_PROC_UNREADABLE] += n < 0;
			return;
		}
		struct q_jit q = {
			.pid = j->pid, .time = t, .off = j->off, .pathlen = strlen(j->path),
			.len = (size_t)n,
		};
		size_t s = sp_rec_q_begin(r);
		sp_rec_q_add(r, &q, sizeof(q));
		sp_rec_q_add(r, j->path, q.pathlen);
		sp_rec_q_add(r, buf, q.len);
		sp_rec_q_end(r, SP_REC_JITDUMP, q.time, s);
		j->off += (uint64_t)n;
		j->last_time = t;
	}
}

void sp_rec_jitdump_read(struct sp_capture *r, uint64_t now, bool last)
{
	if (r->njits && (last || now - r->jit_read_ns >= SP_REC_JIT_PERIOD_NS)) {
		unsigned char *buf = malloc(SP_REC_JIT_CHUNK);
		if (!buf) {
			r->errors[SP_E_PROC_UNREADABLE]++;
		} else {
			for (size_t i = 0; i < r->njits; i++)
				read_jit(r, &r->jits[i], now, buf);
			free(buf);
		}
		r->jit_read_ns = now;
	}
	/* The caller drains up to now next: nothing may be stamped before it later. */
	r->jit_floor = now;
}

void sp_rec_write_jitdump(struct sp_capture *r, const unsigned char *p)
{
	struct q_jit q;
	memcpy(&q, p, sizeof(q));
	sp_write_jitdump(r->w, &(struct sp_jitdump_rec){
		.pid = (uint32_t)q.pid, .path = (const char *)p + sizeof(q),
		.pathlen = q.pathlen, .off = q.off, .data = p + sizeof(q) + q.pathlen,
		.len = q.len, .time = q.time,
	});
}

void sp_rec_jitdump_archive(struct sp_capture *r, uint64_t end)
{
	for (size_t i = 0; i < r->njits; i++) {
		const struct sp_rec_jit *j = &r->jits[i];
		const struct sp_rec_proc *pr = sp_rec_proc_get(r, j->pid, false);
		uint64_t start_key = pr ? pr->start_key : j->start_key;
		char rel[128];
		snprintf(rel, sizeof(rel), "jitdump/jit-%d-%" PRIu64 ".dump", (int)j->pid,
			 start_key);
		if (sp_archive_copy_fd(r->o.archive, j->fd, rel, 0644) < 0)
			r->errors[SP_E_ARCHIVE_FAILED]++;
		else
			sp_rec_queue_archive(r, &(struct sp_rec_archive){
				.time = end, .kind = "jitdump", .file = rel, .path = j->path,
				.pid = j->pid, .start_time = start_key,
			});
	}
}

void sp_rec_jitdump_release(struct sp_capture *r)
{
	for (size_t i = 0; i < r->njits; i++) {
		close(r->jits[i].fd);
		free(r->jits[i].path);
		sp_jitdump_free(r->jits[i].parser);
	}
	free(r->jits);
	r->jits = NULL;
	r->njits = r->allocjits = 0;
}

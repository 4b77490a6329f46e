/* SPDX-License-Identifier: MIT */
/* The stream reader (see stream.h and format/sp-stream.md). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stream/rawmap.h"
#include "stream/stream.h"
#include "stream/zstd.h"
#include "util/error.h"

#define READ_CHUNK (256u * 1024)
/* The most pairs of a record read undecoded: one with more is decoded. */
#define READER_PAIRS 64

struct sp_reader {
	int fd;
	char *name;
	unsigned char *buf;
	size_t cap, start, end;	/* unread bytes are buf[start..end) */
	uint64_t buf_offset;	/* input offset of buf[0] */
	size_t max_record;
	uint64_t records;
	bool eof, failed, seekable_growth;
	bool saw_summary, have_header;
	uint64_t pass_through;	/* 1 << type: framed, not decoded (sp_reader_pass_through()) */
	uint64_t undecoded;	/* 1 << type: checked, not decoded (sp_reader_undecoded()) */
	struct sp_rawpair pairs[READER_PAIRS];	/* such a record's */
	uint32_t npairs;
	volatile int *stop;
	int poll_ms;
	void (*idle)(void *arg);
	void *idle_arg;
	struct follow *fw;	/* following a path (sp_reader_follow()) */
	struct sp_zin *z;	/* once the input turned compressed: buf holds its decompressed bytes */
	msgpack_zone zone;
	msgpack_object obj;
	/* The current segment's header, kept in its own memory. */
	char *hdr_raw;
	msgpack_zone hdr_zone;
	msgpack_object hdr_obj;
	struct sp_header hdr;
	struct sp_error err;
};

/*
 * Following a path: the file now open and how it looked, to notice when
 * the path names another file.  head holds the file's first bytes as
 * read, since a file rewritten in place keeps its inode; the header
 * record in them differs between two recordings (its clock anchors).
 */
struct follow {
	char *path;
	void (*note)(void *arg, const char *msg);
	void *arg;
	dev_t dev;
	ino_t ino;
	unsigned char head[4096];
	size_t headlen;
	uint64_t read_bytes;	/* bytes read from the open file */
	uint64_t idle_since;	/* ms when the file last had nothing new */
	uint64_t checked;	/* ms of the last look for a writer */
	bool waiting_said;
	bool plain;		/* a FIFO or device: read as a pipe, to its end */
};

static void reader_fail(struct sp_reader *r, uint64_t offset, enum sp_err code,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void reader_fail(struct sp_reader *r, uint64_t offset, enum sp_err code,
			const char *fmt, ...)
{
	char why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (r->z)
		sp_error_set(&r->err, code, "byte offset %" PRIu64 " of the decompressed stream "
			     "(compressed input read to byte %" PRIu64 "), record %" PRIu64 ": %s",
			     offset, sp_zin_offset(r->z), r->records, why);
	else
		sp_error_set(&r->err, code, "byte offset %" PRIu64 ", record %" PRIu64 ": %s",
			     offset, r->records, why);
	r->failed = true;
}

struct sp_reader *sp_reader_new(int fd, const char *name)
{
	struct sp_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = fd;
	r->name = strdup(name ? name : "-");
	r->cap = READ_CHUNK;
	r->buf = malloc(r->cap);
	r->max_record = SP_DEFAULT_MAX_RECORD;
	r->poll_ms = 100;
	if (!r->name || !r->buf ||
	    !msgpack_zone_init(&r->zone, 8192) ||
	    !msgpack_zone_init(&r->hdr_zone, 2048)) {
		free(r->name);
		free(r->buf);
		free(r);
		return NULL;
	}
	struct stat st;
	r->seekable_growth = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	return r;
}

void sp_reader_free(struct sp_reader *r)
{
	if (!r)
		return;
	if (r->fw) {
		if (r->fd >= 0)
			close(r->fd);
		free(r->fw->path);
		free(r->fw);
	}
	sp_zin_free(r->z);
	msgpack_zone_destroy(&r->zone);
	msgpack_zone_destroy(&r->hdr_zone);
	free(r->hdr_raw);
	free(r->buf);
	free(r->name);
	free(r);
}

void sp_reader_set_max_record(struct sp_reader *r, size_t bytes)
{
	r->max_record = bytes < 64 ? 64 : bytes;
}

void sp_reader_pass_through(struct sp_reader *r, uint64_t types)
{
	/* Headers begin segments and summaries end them: always decoded. */
	r->pass_through = types & ~(1ull << SP_R_HEADER | 1ull << SP_R_SUMMARY);
}

void sp_reader_undecoded(struct sp_reader *r, uint64_t types)
{
	r->undecoded = types & ~(1ull << SP_R_HEADER | 1ull << SP_R_SUMMARY);
}

/* Where the type's name lies when "t" is a record's first key; false when it is not. */
static bool peek_name(const unsigned char *p, size_t len, const char **name, size_t *namelen)
{
	size_t at = p[0] >= 0x81 && p[0] <= 0x8f ? 1 : p[0] == 0xde ? 3 : p[0] == 0xdf ? 5 : 0;
	if (!at || at + 3 > len || p[at] != 0xa1 || p[at + 1] != 't' || (p[at + 2] & 0xe0) != 0xa0)
		return false;
	size_t n = p[at + 2] & 0x1f;
	if (at + 3 + n > len)
		return false;
	*name = (const char *)p + at + 3;
	*namelen = n;
	return true;
}

/*
 * The type of the record at p (len bytes, framed) from its first key
 * alone, when that is "t" with a short string, as every writer puts it;
 * SP_R_UNKNOWN otherwise, and then the record is decoded whole.
 */
static enum sp_rtype peek_type(const unsigned char *p, size_t len, const char **name,
			       size_t *namelen)
{
	return peek_name(p, len, name, namelen) ? sp_rtype_from_name(*name, *namelen)
						: SP_R_UNKNOWN;
}

void sp_reader_set_follow(struct sp_reader *r, volatile int *stop, int poll_ms)
{
	static volatile int never;
	r->stop = stop ? stop : &never;
	r->poll_ms = poll_ms > 0 ? poll_ms : 100;
}

void sp_reader_set_idle(struct sp_reader *r, void (*idle)(void *arg), void *arg)
{
	r->idle = idle;
	r->idle_arg = arg;
}

const char *sp_reader_error(const struct sp_reader *r)
{
	return sp_error_message(&r->err);
}

bool sp_reader_failed(const struct sp_reader *r)
{
	return r->failed;
}

uint64_t sp_reader_offset(const struct sp_reader *r)
{
	return r->buf_offset + r->start;
}

uint64_t sp_reader_records(const struct sp_reader *r)
{
	return r->records;
}

size_t sp_reader_head(const struct sp_reader *r, unsigned char *buf, size_t n)
{
	if (r->buf_offset != 0)
		return 0;
	if (n > r->end)
		n = r->end;
	memcpy(buf, r->buf, n);
	return n;
}

const struct sp_header *sp_reader_header(const struct sp_reader *r)
{
	return r->have_header ? &r->hdr : NULL;
}

bool sp_reader_saw_summary(const struct sp_reader *r)
{
	return r->saw_summary;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void follow_note(struct sp_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void follow_note(struct sp_reader *r, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	if (!r->fw->note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->fw->note(r->fw->arg, msg);
}

/* Whether the descriptor /proc/PID/fd/FD was opened for writing. */
static bool fd_writes(const char *pid, const char *fd)
{
	char path[600], line[128];
	snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pid, fd);
	FILE *f = fopen(path, "re");
	bool w = false;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "flags:", 6) == 0) {
			w = (strtoul(line + 6, NULL, 8) & O_ACCMODE) != O_RDONLY;
			break;
		}
	if (f)
		fclose(f);
	return w;
}

/*
 * Whether any process has the file dev/ino open for writing: 1 yes, 0 no,
 * -1 when some process's descriptors cannot be seen (another user's),
 * which a caller takes as "perhaps".  There is no cheaper way to ask the
 * kernel who holds a file; it runs at most once per SP_FOLLOW_GONE_MS.
 */
static int file_has_writer(dev_t dev, ino_t ino)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return -1;
	bool found = false, unseen = false;
	struct dirent *pe;
	char self[24];
	snprintf(self, sizeof(self), "%d", (int)getpid());
	while (!found && (pe = readdir(proc))) {
		/* Not this process: a descriptor it inherited is no writer it waits for. */
		if (!isdigit((unsigned char)pe->d_name[0]) || strcmp(pe->d_name, self) == 0)
			continue;
		char path[600];
		snprintf(path, sizeof(path), "/proc/%s/fd", pe->d_name);
		DIR *fds = opendir(path);
		if (!fds) {
			unseen |= errno == EACCES;
			continue;
		}
		struct dirent *fe;
		while (!found && (fe = readdir(fds))) {
			struct stat st;
			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fd/%s", pe->d_name, fe->d_name);
			if (stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
				found = fd_writes(pe->d_name, fe->d_name);
		}
		closedir(fds);
	}
	closedir(proc);
	return found ? 1 : unseen ? -1 : 0;
}

/* Forgets the open file and everything not yet handed out. */
static void follow_drop(struct sp_reader *r)
{
	close(r->fd);
	r->fd = -1;
	r->start = r->end = 0;
	r->buf_offset = 0;
	sp_zin_free(r->z);
	r->z = NULL;
	r->records = 0;
	r->have_header = false;
	r->saw_summary = false;
}

/*
 * A file nobody writes is a finished recording, most likely the one a new
 * capture is about to replace: wait a little for that before taking it.
 * Returns true when the path now names another file.
 */
static bool follow_finished(struct sp_reader *r, const struct stat *st)
{
	if (st->st_size == 0 || file_has_writer(st->st_dev, st->st_ino) != 0)
		return false;
	for (uint64_t t0 = now_ms(); !*r->stop && now_ms() - t0 < SP_FOLLOW_GRACE_MS;) {
		struct stat now;
		if (stat(r->fw->path, &now) == 0 &&
		    (now.st_ino != st->st_ino || now.st_dev != st->st_dev)) {
			follow_note(r, "'%s' was a finished recording and a new one took its "
				    "place; following the new one", r->fw->path);
			return true;
		}
		/* Truncated for rewriting in place: nothing of it was read. */
		if (fstat(r->fd, &now) == 0 && now.st_size < st->st_size)
			return false;
		sleep_ms(r->poll_ms);
	}
	return false;
}

/* Opens the path: 1 when open, 0 when there is no file there yet, -1 on error. */
static int follow_open(struct sp_reader *r)
{
	struct follow *fw = r->fw;
	for (;;) {
		int fd = open(fw->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return 0;
		if (fd < 0) {
			reader_fail(r, 0, SP_ERR_ERRNO, "cannot open '%s': %s", fw->path,
				    strerror(errno));
			return -1;
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
			close(fd);
			reader_fail(r, 0, SP_ERR_BAD_INPUT, "'%s' is a directory, not a stream",
				    fw->path);
			return -1;
		}
		r->fd = fd;
		/* A named pipe has nothing to follow: it ends when its writer closes it. */
		fw->plain = !S_ISREG(st.st_mode);
		if (fw->plain)
			return 1;
		fw->dev = st.st_dev;
		fw->ino = st.st_ino;
		fw->headlen = 0;
		fw->read_bytes = 0;
		fw->idle_since = 0;
		if (!follow_finished(r, &st))
			return 1;
		follow_drop(r);
	}
}

/*
 * Whether the open file was truncated or written again from its start:
 * why, or NULL.  Asked after every read, the bytes just read not yet
 * taken: a writer that starts over writes its new first bytes before
 * those at any later offset, so bytes read from the new content at the
 * old offset are always caught here, never handed out.
 */
static const char *follow_rewritten(struct sp_reader *r)
{
	struct follow *fw = r->fw;
	struct stat st;
	unsigned char head[sizeof(fw->head)];
	if (fstat(r->fd, &st) == 0 && (uint64_t)st.st_size < fw->read_bytes)
		return "shrank";
	if (fw->headlen && (pread(r->fd, head, fw->headlen, 0) != (ssize_t)fw->headlen ||
			    memcmp(head, fw->head, fw->headlen) != 0))
		return "was rewritten from its start";
	return NULL;
}

/* Why the path no longer names the file as it was read, or NULL. */
static const char *follow_replaced(struct sp_reader *r)
{
	struct follow *fw = r->fw;
	struct stat st;
	if (stat(fw->path, &st) == 0 && (st.st_ino != fw->ino || st.st_dev != fw->dev))
		return "was replaced by a new file";
	return follow_rewritten(r);
}

/* Starts over on whatever the path names now. */
static void follow_restart(struct sp_reader *r, const char *why)
{
	follow_note(r, "'%s' %s; starting over on it%s", r->fw->path, why,
		    r->records || r->end > r->start ?
		    " (the records before are of the old file)" : "");
	follow_drop(r);
}

/* A followed path that named a FIFO or a device: read to its end. */
static int follow_plain_fill(struct sp_reader *r)
{
	struct pollfd pfd = { r->fd, POLLIN, 0 };
	if (r->idle && poll(&pfd, 1, 0) == 0)
		r->idle(r->idle_arg);
	for (;;) {
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n > 0) {
			r->end += (size_t)n;
			return 1;
		}
		if (n == 0 || *r->stop)
			return 0;
		if (errno != EINTR) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_ERRNO, "read error: %s",
				    strerror(errno));
			return -1;
		}
	}
}

/* reader_fill() for a followed path. */
static int follow_fill(struct sp_reader *r)
{
	struct follow *fw = r->fw;
	bool gone = false;
	if (r->fd >= 0 && fw->plain)
		return follow_plain_fill(r);
	for (;;) {
		if (r->fd < 0) {
			if (*r->stop)
				return 0;
			int k = follow_open(r);
			if (k < 0)
				return -1;
			if (k > 0 && fw->plain)
				return follow_plain_fill(r);
			if (k > 0)
				continue;
			if (!fw->waiting_said)
				follow_note(r, "waiting for '%s' to appear", fw->path);
			fw->waiting_said = true;
			sleep_ms(r->poll_ms);
			continue;
		}
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n > 0) {
			fw->read_bytes += (uint64_t)n;
			const char *why = follow_rewritten(r);
			fw->read_bytes -= (uint64_t)n;
			if (why) {
				follow_restart(r, why);
				continue;
			}
			if (fw->read_bytes < sizeof(fw->head)) {
				size_t k = sizeof(fw->head) - fw->read_bytes;
				if (k > (size_t)n)
					k = (size_t)n;
				memcpy(fw->head + fw->headlen, r->buf + r->end, k);
				fw->headlen += k;
			}
			fw->read_bytes += (uint64_t)n;
			r->end += (size_t)n;
			fw->idle_since = 0;
			return 1;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_ERRNO, "read error: %s",
				    strerror(errno));
			return -1;
		}
		/* At the end of the file as it is now. */
		if (*r->stop)
			return 0;
		const char *why = follow_replaced(r);
		if (why) {
			follow_restart(r, why);
			continue;
		}
		if (r->saw_summary && r->start == r->end)
			return 0;
		if (gone)
			return 0;
		if (r->idle)
			r->idle(r->idle_arg);
		uint64_t now = now_ms();
		if (!fw->idle_since)
			fw->idle_since = now;
		/* An empty file is waited on as a missing one: a writer may yet come. */
		if (fw->read_bytes > 0 && now - fw->idle_since >= SP_FOLLOW_GONE_MS &&
		    now - fw->checked >= SP_FOLLOW_GONE_MS) {
			fw->checked = now;
			/* One more read after this catches the writer's last bytes. */
			gone = file_has_writer(fw->dev, fw->ino) == 0;
			if (gone) {
				follow_note(r, "no process writes '%s' any more", fw->path);
				continue;
			}
		}
		sleep_ms(r->poll_ms);
	}
}

struct sp_reader *sp_reader_follow(const char *path, volatile int *stop,
				   void (*note)(void *arg, const char *msg), void *arg)
{
	struct sp_reader *r = sp_reader_new(-1, path);
	if (!r)
		return NULL;
	r->fw = calloc(1, sizeof(*r->fw));
	if (!r->fw || !(r->fw->path = strdup(path))) {
		free(r->fw);
		r->fw = NULL;
		sp_reader_free(r);
		return NULL;
	}
	r->fw->note = note;
	r->fw->arg = arg;
	sp_reader_set_follow(r, stop, 50);
	return r;
}

/*
 * Makes room after the unread bytes.  Returns 1, 0 when the buffer is
 * at its limit (the caller reports the size limit), -1 on no memory.
 */
static int reader_room(struct sp_reader *r)
{
	if (r->start > 0 && (r->start == r->end || r->cap - r->end < READ_CHUNK / 4)) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->buf_offset += r->start;
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end == r->cap) {
		size_t ncap = r->cap * 2;
		if (ncap > r->max_record + READ_CHUNK)
			ncap = r->max_record + READ_CHUNK;
		if (ncap <= r->cap)
			return 0;	/* caller reports the size limit */
		unsigned char *nb = realloc(r->buf, ncap);
		if (!nb) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_NOMEM, "out of memory");
			return -1;
		}
		r->buf = nb;
		r->cap = ncap;
	}
	return 1;
}

/*
 * Reads more of the input as it is, after the unread bytes.  Returns 1
 * when bytes were added, 0 at the end of the input, -1 on a read error.
 */
static int reader_fill_raw(struct sp_reader *r)
{
	if (r->fw)
		return follow_fill(r);
	/* A pipe with nothing in it: let the tool flush before the wait. */
	if (r->idle && !r->seekable_growth) {
		struct pollfd pfd = { r->fd, POLLIN, 0 };
		if (poll(&pfd, 1, 0) == 0)
			r->idle(r->idle_arg);
	}
	for (;;) {
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n > 0) {
			r->end += (size_t)n;
			return 1;
		}
		if (n < 0 && errno != EINTR) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_ERRNO, "read error: %s",
				    strerror(errno));
			return -1;
		}
		if (r->stop && *r->stop)
			return 0;
		if (n < 0)
			continue;
		/* End of input.  In follow mode a regular file may grow. */
		if (!r->stop || !r->seekable_growth)
			return 0;
		if (r->idle)
			r->idle(r->idle_arg);
		sleep_ms(r->poll_ms);
	}
}

/* A fault of the decompressor: its message, at the record it stopped. */
static int reader_zfail(struct sp_reader *r)
{
	reader_fail(r, sp_reader_offset(r), SP_ERR_BAD_INPUT, "%s", sp_zin_error(r->z));
	return -1;
}

/*
 * reader_fill() of compressed input: decompresses what was read, reading
 * more when all of it is, and takes plain bytes after the last frame as
 * they are.
 */
static int reader_fill_zstd(struct sp_reader *r)
{
	for (;;) {
		long n = sp_zin_read(r->z, r->buf + r->end, r->cap - r->end);
		if (n < 0)
			return reader_zfail(r);
		const unsigned char *p;
		if (n == 0 && (n = (long)sp_zin_take_plain(r->z, &p, r->cap - r->end)) > 0)
			memcpy(r->buf + r->end, p, (size_t)n);
		if (n > 0) {
			r->end += (size_t)n;
			return 1;
		}
		size_t old = r->end;
		int f = reader_fill_raw(r);
		if (!r->z)	/* a followed path started over: plain bytes again */
			return f;
		if (f < 0)
			return -1;
		/*
		 * Stopped, or a followed file's summary read (its writer ends
		 * the frame in a later write, which the follower need not wait
		 * for): what the frame held so far was handed out; no fault.
		 */
		if (f == 0 && (sp_zin_at_end(r->z) || (r->stop && *r->stop) ||
			       (r->fw && r->saw_summary)))
			return 0;
		if (f == 0) {
			sp_zin_truncated(r->z);
			return reader_zfail(r);
		}
		if (sp_zin_feed(r->z, r->buf + old, r->end - old) < 0) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_NOMEM, "out of memory");
			return -1;
		}
		r->end = old;
	}
}

/*
 * Reads more input after the unread bytes.  Returns 1 when bytes were
 * added, 0 at the end of the input, -1 on a read error.
 */
static int reader_fill(struct sp_reader *r)
{
	int k = reader_room(r);
	if (k <= 0)
		return k;
	return r->z ? reader_fill_zstd(r) : reader_fill_raw(r);
}

/*
 * The unread bytes begin a zstd frame, at a record boundary: from here
 * the input is decompressed.  Returns 0, or -1 after reader_fail().
 */
static int reader_begin_zstd(struct sp_reader *r)
{
	size_t n = r->end - r->start;
	if (r->z && sp_zin_unread(r->z, r->buf + r->start, n) < 0) {
		reader_fail(r, sp_reader_offset(r), SP_ERR_BAD_INPUT,
			    "a zstd frame begins inside the decompressed stream "
			    "(was it compressed twice?)");
		return -1;
	}
	if (!r->z && (!(r->z = sp_zin_new(sp_reader_offset(r))) ||
		      sp_zin_feed(r->z, r->buf + r->start, n) < 0)) {
		reader_fail(r, sp_reader_offset(r), SP_ERR_NOMEM, "out of memory");
		return -1;
	}
	r->end = r->start;
	return 0;
}

static const char *first_byte_kind(unsigned char b)
{
	if (b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3))
		return "an integer";
	if ((b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd)
		return "an array";
	if ((b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb))
		return "a string";
	if (b >= 0xc4 && b <= 0xc6)
		return "binary data";
	if (b == 0xc0)
		return "nil";
	if (b == 0xc2 || b == 0xc3)
		return "a boolean";
	if (b == 0xca || b == 0xcb)
		return "a float";
	if (b == 0xc1)
		return "the never-used byte 0xc1";
	return "an extension value";
}

static bool is_map_byte(unsigned char b)
{
	return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf;
}

/* Checks and keeps a header record; returns -1 after reader_fail(). */
static int reader_take_header(struct sp_reader *r, const struct sp_record *rec)
{
	const msgpack_object *m = rec->map;
	const char *s;
	size_t n;

	sp_map_str(m, "format", &s, &n);
	if (n != strlen(SP_FORMAT_NAME) || memcmp(s, SP_FORMAT_NAME, n) != 0) {
		reader_fail(r, rec->offset, SP_ERR_UNSUPPORTED, "foreign format '%.*s' (expected '%s')",
			    (int)(n > 64 ? 64 : n), s, SP_FORMAT_NAME);
		return -1;
	}
	const msgpack_object_array *v = sp_map_array(m, "version");
	if (v->size < 2 || v->ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    v->ptr[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
		reader_fail(r, rec->offset, SP_ERR_BAD_INPUT, "header 'version' is not [major, minor]");
		return -1;
	}
	uint64_t major = v->ptr[0].via.u64, minor = v->ptr[1].via.u64;
	if (major != SP_FORMAT_MAJOR) {
		reader_fail(r, rec->offset, SP_ERR_UNSUPPORTED, "stream format version %" PRIu64 ".%" PRIu64
			    " is not supported (this reader knows version %d.x)",
			    major, minor, SP_FORMAT_MAJOR);
		return -1;
	}
	enum sp_stage stage;
	if (sp_map_str(m, "stage", &s, &n) && n == 3 && !memcmp(s, "raw", 3))
		stage = SP_STAGE_RAW;
	else if (n == 7 && !memcmp(s, "unwound", 7))
		stage = SP_STAGE_UNWOUND;
	else if (n == 10 && !memcmp(s, "symbolized", 10))
		stage = SP_STAGE_SYMBOLIZED;
	else {
		reader_fail(r, rec->offset, SP_ERR_BAD_INPUT, "unknown stage '%.*s' in header",
			    (int)(n > 64 ? 64 : n), s);
		return -1;
	}

	char *copy = malloc(rec->raw_len);
	if (!copy) {
		reader_fail(r, rec->offset, SP_ERR_NOMEM, "out of memory");
		return -1;
	}
	memcpy(copy, rec->raw, rec->raw_len);
	msgpack_zone_clear(&r->hdr_zone);
	size_t off = 0;
	if (msgpack_unpack(copy, rec->raw_len, &off, &r->hdr_zone, &r->hdr_obj) < 0) {
		free(copy);
		reader_fail(r, rec->offset, SP_ERR_NOMEM, "out of memory");
		return -1;
	}
	free(r->hdr_raw);
	r->hdr_raw = copy;
	r->hdr.major = (unsigned)major;
	r->hdr.minor = minor > UINT32_MAX ? UINT32_MAX : (unsigned)minor;
	r->hdr.stage = stage;
	r->hdr.map = &r->hdr_obj;
	r->have_header = true;
	r->saw_summary = false;
	return 0;
}

/*
 * A record of a type sp_reader_undecoded() named, whole in the buffer and
 * plainly valid, read from its bytes in one walk (framing, checking and
 * finding its pairs); false leaves it to be framed and decoded.
 */
static bool take_undecoded(struct sp_reader *r, struct sp_record *rec, size_t avail,
			   enum sp_rtype *peeked)
{
	const unsigned char *p = r->buf + r->start;
	const char *name;
	size_t namelen, len;
	*peeked = SP_R_COUNT;
	if (!peek_name(p, avail, &name, &namelen))
		return false;
	/* Kept for the pass-through check: the type of the name found whole. */
	enum sp_rtype t = *peeked = sp_rtype_from_name(name, namelen);
	if (t == SP_R_UNKNOWN || !(r->undecoded & 1ull << t))
		return false;
	len = sp_record_scan_raw(t, p, avail < r->max_record ? avail : r->max_record,
				 r->pairs, READER_PAIRS, &r->npairs);
	if (!len)
		return false;
	*rec = (struct sp_record){ .type = t, .type_name = name, .type_len = namelen,
				   .raw = (const char *)p, .raw_len = len,
				   .pairs = r->pairs, .npairs = r->npairs,
				   .offset = sp_reader_offset(r), .index = r->records };
	r->start += len;
	r->records++;
	return true;
}

size_t sp_msgpack_frame_flat(const unsigned char *p, size_t len)
{
	if (!len || (p[0] & 0xf0) != 0x80)
		return 0;
	size_t pos = 1;
	for (unsigned n = 2u * (p[0] & 0x0f); n; n--) {
		if (pos >= len)
			return 0;
		unsigned char b = p[pos];
		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
			pos++;
		else if (b >= 0xa0 && b <= 0xbf)
			pos += 1 + (size_t)(b & 0x1f);
		else if (b >= 0xcc && b <= 0xd3)
			pos += 1 + ((size_t)1 << ((b - 0xcc) & 3));
		else
			return 0;
	}
	return pos <= len ? pos : 0;
}

enum sp_read_status sp_reader_next(struct sp_reader *r, struct sp_record *rec)
{
	if (r->failed)
		return SP_READ_ERROR;
	msgpack_zone_clear(&r->zone);

	long len;
	const char *why = NULL;
	enum sp_rtype peeked = SP_R_COUNT;	/* not peeked yet */
	for (;;) {
		size_t avail = r->end - r->start;
		int zm = avail > 0 && !is_map_byte(r->buf[r->start]) ?
			 sp_zstd_magic(r->buf + r->start, avail) : 0;
		if (zm > 0) {
			if (reader_begin_zstd(r) < 0)
				return SP_READ_ERROR;
			continue;
		}
		if (zm < 0) {
			/* Too few bytes to tell a zstd frame's magic number. */
			int f = reader_fill(r);
			if (f < 0)
				return SP_READ_ERROR;
			if (f > 0)
				continue;
		}
		if (avail > 0 && !is_map_byte(r->buf[r->start])) {
			unsigned char b = r->buf[r->start];
			if (r->records == 0 && avail >= 8 &&
			    memcmp(r->buf + r->start, "PERFILE2", 8) == 0)
				reader_fail(r, sp_reader_offset(r), SP_ERR_UNSUPPORTED,
					    "this is a perf.data file, not a stackpulse stream");
			else
				reader_fail(r, sp_reader_offset(r), SP_ERR_BAD_INPUT,
					    "expected a record (a MessagePack map), found %s (byte 0x%02x)%s",
					    first_byte_kind(b), b,
					    r->records == 0 ? ": not a stackpulse stream" : "");
			return SP_READ_ERROR;
		}
		if (r->undecoded && r->have_header && avail && take_undecoded(r, rec, avail, &peeked))
			return SP_READ_RECORD;
		len = (long)sp_msgpack_frame_flat(r->buf + r->start, avail);
		if (!len)
			len = avail ? sp_msgpack_frame(r->buf + r->start, avail,
						       SP_MAX_DEPTH, &why) : 0;
		if (len < 0) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_BAD_INPUT, "malformed record: %s", why);
			return SP_READ_ERROR;
		}
		if (len > 0)
			break;
		if (avail >= r->max_record) {
			reader_fail(r, sp_reader_offset(r), SP_ERR_LIMIT,
				    "record larger than the limit of %zu bytes", r->max_record);
			return SP_READ_ERROR;
		}
		int f = reader_fill(r);
		if (f < 0)
			return SP_READ_ERROR;
		if (f == 0) {
			if (r->end - r->start >= r->max_record) {
				reader_fail(r, sp_reader_offset(r), SP_ERR_LIMIT,
					    "record larger than the limit of %zu bytes",
					    r->max_record);
				return SP_READ_ERROR;
			}
			if (r->end == r->start) {
				r->eof = true;
				return SP_READ_END;
			}
			reader_fail(r, sp_reader_offset(r), SP_ERR_BAD_INPUT,
				    "stream ends inside a record (%zu bytes of an incomplete record)",
				    r->end - r->start);
			return SP_READ_ERROR;
		}
	}
	if ((size_t)len > r->max_record) {
		reader_fail(r, sp_reader_offset(r), SP_ERR_LIMIT,
			    "record of %ld bytes is larger than the limit of %zu bytes",
			    len, r->max_record);
		return SP_READ_ERROR;
	}

	const char *raw = (const char *)r->buf + r->start;
	if (r->pass_through && r->have_header) {
		const char *name;
		size_t namelen;
		/* The type take_undecoded() found, when its name lies whole in the record. */
		enum sp_rtype t = peeked != SP_R_COUNT && peek_name(r->buf + r->start, (size_t)len,
								      &name, &namelen) ? peeked :
				  peek_type(r->buf + r->start, (size_t)len, &name, &namelen);
		if (t != SP_R_UNKNOWN && (r->pass_through & 1ull << t)) {
			*rec = (struct sp_record){ .type = t, .type_name = name, .type_len = namelen,
						   .raw = raw, .raw_len = (size_t)len,
						   .offset = sp_reader_offset(r), .index = r->records };
			r->start += (size_t)len;
			r->records++;
			return SP_READ_RECORD;
		}
	}
	size_t off = 0;
	if (msgpack_unpack(raw, (size_t)len, &off, &r->zone, &r->obj) < 0) {
		reader_fail(r, sp_reader_offset(r), SP_ERR_NOMEM, "out of memory decoding a record");
		return SP_READ_ERROR;
	}
	memset(rec, 0, sizeof(*rec));
	rec->map = &r->obj;
	rec->raw = raw;
	rec->raw_len = (size_t)len;
	rec->offset = sp_reader_offset(r);
	rec->index = r->records;

	const msgpack_object *t = sp_map_get(rec->map, "t");
	if (!t || t->type != MSGPACK_OBJECT_STR) {
		reader_fail(r, rec->offset, SP_ERR_BAD_INPUT, t ? "record type key 't' is not a string"
					      : "record has no type key 't'");
		return SP_READ_ERROR;
	}
	rec->type_name = t->via.str.ptr;
	rec->type_len = t->via.str.size;
	rec->type = sp_rtype_from_name(rec->type_name, rec->type_len);
	const char *key = NULL;
	if (rec->type != SP_R_UNKNOWN &&
	    sp_record_validate(rec->type, rec->map, &why, &key) < 0) {
		reader_fail(r, rec->offset, SP_ERR_BAD_INPUT, "%s record: %s '%s'",
			    sp_rtype_name(rec->type), why, key);
		return SP_READ_ERROR;
	}
	if (rec->type == SP_R_HEADER) {
		if (reader_take_header(r, rec) < 0)
			return SP_READ_ERROR;
	} else if (!r->have_header) {
		reader_fail(r, rec->offset, SP_ERR_BAD_INPUT,
			    "stream does not start with a header record (found '%.*s')",
			    (int)(rec->type_len > 64 ? 64 : rec->type_len), rec->type_name);
		return SP_READ_ERROR;
	}
	if (rec->type == SP_R_SUMMARY)
		r->saw_summary = true;

	r->start += (size_t)len;
	r->records++;
	return SP_READ_RECORD;
}

/* Reads a big-endian unsigned integer of n bytes. */
static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

long sp_msgpack_frame(const unsigned char *p, size_t len, int max_depth,
		      const char **why)
{
	uint64_t left[SP_MAX_DEPTH + 1];
	int depth = 0;
	size_t pos = 0;

	if (max_depth > SP_MAX_DEPTH)
		max_depth = SP_MAX_DEPTH;
	left[0] = 1;
	while (depth >= 0) {
		if (pos >= len)
			return 0;
		unsigned char b = p[pos];
		uint64_t head = 1, body = 0, children = 0;

		/* The commonest elements, short strings and integers, at once. */
		if (b <= 0x7f || (b >= 0xa0 && b <= 0xbf) || b >= 0xcc) {
			if (b >= 0xa0 && b <= 0xbf)
				pos += 1 + (size_t)(b & 0x1f);
			else if (b >= 0xcc && b <= 0xcf)
				pos += 1 + ((size_t)1 << (b - 0xcc));
			else if (b >= 0xd0 && b <= 0xd3)
				pos += 1 + ((size_t)1 << (b - 0xd0));
			else if (b <= 0x7f || b >= 0xe0)
				pos++;
			else
				goto general;
			if (pos > len)
				return 0;
			if (--left[depth])
				continue;
			while (depth >= 0 && left[depth] == 0)
				depth--;
			continue;
		}
general:

		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
			/* one-byte value */
		} else if (b <= 0x8f) {
			children = 2u * (b & 0x0f);
		} else if (b <= 0x9f) {
			children = b & 0x0f;
		} else if (b <= 0xbf) {
			body = b & 0x1f;
		} else {
			static const signed char lenbytes[] = {
				/* c4-c6 bin */ 1, 2, 4,
				/* c7-c9 ext */ 1, 2, 4,
			};
			switch (b) {
			case 0xc1:
				*why = "byte 0xc1 is never used in MessagePack";
				return -1;
			case 0xc4: case 0xc5: case 0xc6:
			case 0xc7: case 0xc8: case 0xc9: {
				int n = lenbytes[b - 0xc4];
				head = 1 + (uint64_t)n + (b >= 0xc7);
				if (pos + 1 + (size_t)n > len)
					return 0;
				body = be(p + pos + 1, n);
				break;
			}
			case 0xca: body = 4; break;
			case 0xcb: body = 8; break;
			case 0xcc: case 0xd0: body = 1; break;
			case 0xcd: case 0xd1: body = 2; break;
			case 0xce: case 0xd2: body = 4; break;
			case 0xcf: case 0xd3: body = 8; break;
			case 0xd4: body = 2; break;
			case 0xd5: body = 3; break;
			case 0xd6: body = 5; break;
			case 0xd7: body = 9; break;
			case 0xd8: body = 17; break;
			case 0xd9: case 0xda: case 0xdb: {
				int n = 1 << (b - 0xd9);
				head = 1 + (uint64_t)n;
				if (pos + 1 + (size_t)n > len)
					return 0;
				body = be(p + pos + 1, n);
				break;
			}
			case 0xdc: case 0xdd: case 0xde: case 0xdf: {
				int n = (b & 1) ? 4 : 2;
				head = 1 + (uint64_t)n;
				if (pos + 1 + (size_t)n > len)
					return 0;
				children = be(p + pos + 1, n);
				if (b >= 0xde)
					children *= 2;
				break;
			}
			}
		}
		if (head + body > len - pos)
			return 0;
		pos += (size_t)(head + body);
		if (children > 0) {
			/* Every element takes at least one byte. */
			if (children > len - pos)
				return 0;
			if (depth + 1 > max_depth) {
				*why = "nesting deeper than the limit";
				return -1;
			}
			left[depth]--;
			left[++depth] = children;
			continue;
		}
		left[depth]--;
		while (depth >= 0 && left[depth] == 0)
			depth--;
	}
	return (long)pos;
}

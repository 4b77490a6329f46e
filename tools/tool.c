/* SPDX-License-Identifier: MIT */
/* Tool helpers (see tool.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "stream/stream.h"
#include "stream/header.h"
#include "stream/sniff.h"
#include "stream/zstd.h"
#include "tool.h"

/* What a pipe between two stages holds (widen_pipe()). */
#define PIPE_BYTES (1 << 20)

const char *sp_progname = "stackpulse";

/*
 * A FILE that writes to fd and keeps the first write error: glibc
 * drops its buffer when a write fails, and a later fflush() then
 * succeeds with errno long gone, so the error is kept here instead.
 */
struct out_cookie {
	int fd;
	int err;
};

static struct out_cookie stdout_cookie = { STDOUT_FILENO, 0 };
static bool stdout_wrapped;
static pid_t owner;

/*
 * A file written under a temporary and put in place when it is complete,
 * so that the file it replaces survives every failure before that.
 */
struct tmpout {
	char *path;		/* the file it replaces, links resolved */
	int fd;			/* the temporary */
	char *tmp;		/* its name, or NULL: unnamed (O_TMPFILE) */
	bool pending;		/* not yet in place */
	bool keep_old;		/* keep a replaced file as NAME.old */
};

/* The output file (-o). */
static struct {
	const char *name;	/* for messages: as given, or "standard output" */
	char *where;		/* the file as a path resolved, for the inputs to follow */
	struct tmpout t;
	bool failed;		/* a write to it failed */
	bool have_id;		/* dev and ino of the output are known */
	dev_t dev;
	ino_t ino;
	struct out_cookie cookie;	/* for sp_output_file() */
} output = { .name = "standard output", .t = { .fd = -1 }, .cookie = { -1, 0 } };

/* The other files a tool writes (sp_extra_open()), while they are open. */
struct extra {
	struct tmpout t;
	struct out_cookie k;
	FILE *f;
	struct extra *next;
};
static struct extra *extras;

/* The regular files read so far, so that none is also the output. */
static struct input_id {
	dev_t dev;
	ino_t ino;
	char *name;
} *inputs;
static size_t ninputs;

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	struct out_cookie *k = c;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(k->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			if (!k->err)
				k->err = errno;
			return done ? (ssize_t)done : -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static int cookie_close(void *c)
{
	(void)c;
	return 0;
}

static FILE *cookie_file(struct out_cookie *k)
{
	cookie_io_functions_t io = { .write = cookie_write, .close = cookie_close };
	return fopencookie(k, "w", io);
}

/* Removes the named temporaries; an unnamed one goes with the process. */
static void remove_temporaries(void)
{
	if (getpid() != owner)
		return;
	if (output.t.pending && output.t.tmp)
		unlink(output.t.tmp);
	for (struct extra *e = extras; e; e = e->next)
		if (e->t.pending && e->t.tmp)
			unlink(e->t.tmp);
}

/* Interrupted before the output was complete: leave no temporary behind. */
static void on_interrupt(int sig)
{
	remove_temporaries();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void finish_outputs(int status, void *unused);

void sp_tool_init(const char *argv0)
{
	if (argv0 && *argv0) {
		const char *slash = strrchr(argv0, '/');
		sp_progname = slash ? slash + 1 : argv0;
	}
	signal(SIGPIPE, SIG_IGN);
	owner = getpid();
	/*
	 * Off a terminal, standard output keeps its write error for the
	 * check at exit (a terminal keeps stdout itself, for curses).
	 */
	if (!isatty(STDOUT_FILENO)) {
		FILE *f = cookie_file(&stdout_cookie);
		if (f) {
			setvbuf(f, NULL, _IOFBF, BUFSIZ);
			stdout = f;
			stdout_wrapped = true;
		}
	}
	on_exit(finish_outputs, NULL);
}

static void vwarn(const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%s: %s\n", sp_progname, msg);
}

void sp_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void sp_die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(status);
}

void sp_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", sp_progname);
	exit(SP_EXIT_USAGE);
}

void *sp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory allocating %zu bytes", n);
	return p;
}

void *sp_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory allocating %zu bytes", n * size);
	return p;
}

void *sp_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		sp_die(SP_EXIT_FATAL, "out of memory allocating %zu bytes", n);
	return q;
}

char *sp_xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory");
	return p;
}

size_t sp_parse_max_record(const char *arg)
{
	uint64_t v;
	if (sp_parse_u64(arg, 1u << 30, &v) < 0 || v < 64)
		sp_usage_error("invalid --max-record '%s' (64 to 1073741824)", arg);
	return (size_t)v;
}

int sp_parse_compress(const char *arg)
{
	uint64_t v;
	if (!arg)
		return SP_ZSTD_DEFAULT_LEVEL;
	if (sp_parse_u64(arg, (uint64_t)sp_zstd_max_level(), &v) < 0 ||
	    v < (uint64_t)sp_zstd_min_level())
		sp_usage_error("invalid --compress level '%s': give %d to %d", arg,
			       sp_zstd_min_level(), sp_zstd_max_level());
	return (int)v;
}

void sp_compress_output(struct sp_writer *w, int level)
{
	if (level && sp_writer_compress(w, level) < 0)
		sp_die(SP_EXIT_FATAL, "%s", sp_writer_error(w));
}

unsigned sp_parse_jobs(const char *arg)
{
	uint64_t v;
	if (sp_parse_u64(arg, SP_MAX_JOBS, &v) < 0 || v == 0)
		sp_usage_error("invalid --jobs '%s' (1 to %u)", arg, SP_MAX_JOBS);
	return (unsigned)v;
}

unsigned sp_default_jobs(void)
{
	/*
	 * One: with two jobs on two idle CPUs sp-unwind made 0.83 of one
	 * job's samples a second, and the pipeline 0.95 (figures 4e and 4f):
	 * the reading and writing threads, which every job waits on, do most
	 * of the work.  More jobs are for deep stacks and more CPUs.
	 */
	return 1;
}

/* Whether a is --NAME or an abbreviation getopt_long took for it, with or without =VALUE. */
static bool long_option_is(const char *a, const char *name, bool *joined)
{
	if (strncmp(a, "--", 2) != 0)
		return false;
	size_t len = strcspn(a + 2, "=");
	*joined = a[2 + len] == '=';
	return len && len <= strlen(name) && strncmp(a + 2, name, len) == 0;
}

char **sp_output_args(int argc, char **argv, int *n)
{
	char **out = sp_xmalloc(((size_t)argc + 1) * sizeof(*out));
	bool joined;
	*n = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (i > 0 && strcmp(a, "--") == 0) {
			while (i < argc)
				out[(*n)++] = argv[i++];
			break;
		}
		if (i > 0 && strcmp(a, "-j") == 0)
			i++;
		else if (i > 0 && long_option_is(a, "jobs", &joined))
			i += !joined;
		else if (i == 0 || (strncmp(a, "-j", 2) != 0 && !long_option_is(a, "stats", &joined)))
			out[(*n)++] = argv[i];
	}
	out[*n] = NULL;
	return out;
}

double sp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int sp_show_version(void)
{
	printf("%s %s (stackpulse, commit %s)\nLicense: MIT <https://spdx.org/licenses/MIT.html>\n",
	       sp_progname, SP_VERSION, SP_COMMIT);
	return SP_EXIT_OK;
}

int sp_bad_option(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", sp_progname);
	return SP_EXIT_USAGE;
}

int sp_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* How messages name an input: 'PATH', or standard input. */
static const char *input_name(const char *path, char *buf, size_t n)
{
	if (!path)
		return "standard input";
	snprintf(buf, n, "'%s'", path);
	return buf;
}

static _Noreturn void same_file(const char *input)
{
	bool std = strcmp(output.name, "standard output") == 0;
	sp_die(SP_EXIT_USAGE, "the output %s%s%s is the same file as the input '%s': "
	       "write to another file", std ? "" : "'", output.name, std ? "" : "'", input);
}

/* Remembers a regular input; refuses one that is the output. */
static void note_input(const char *name, const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return;
	if (output.have_id && output.dev == st->st_dev && output.ino == st->st_ino)
		same_file(name);
	inputs = sp_xrealloc(inputs, (ninputs + 1) * sizeof(*inputs));
	inputs[ninputs++] = (struct input_id){ st->st_dev, st->st_ino, sp_xstrdup(name) };
}

/*
 * A FIFO is a live pipe: wait for its writer, and say what is awaited
 * when nothing has come for a while.
 */
static void wait_for_writer(int fd, const char *name)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int k;
	while ((k = poll(&p, 1, 2000)) < 0 && errno == EINTR)
		;
	if (k == 0) {
		sp_warn("%s is a FIFO and nothing has been written to it yet: waiting for "
			"its writer", name);
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	}
}

/* The first bytes of a pipe, left in it for the reader (tee(2) copies them). */
static ssize_t peek_pipe(int fd, unsigned char *buf, size_t n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	int t[2];
	if (pipe2(t, O_CLOEXEC) < 0)
		return -1;
	ssize_t k = tee(fd, t[1], n, SPLICE_F_NONBLOCK);
	if (k > 0)
		k = read(t[0], buf, (size_t)k);
	close(t[0]);
	close(t[1]);
	return k;
}

/*
 * Refuses, with what to do instead, an input whose first bytes are of the
 * kind given: path as given (NULL: standard input), name as messages show it.
 */
static void refuse_kind(enum sp_sniff kind, const char *path, const char *name)
{
	const char *file = path ? path : "FILE", *unpack = NULL;
	switch (kind) {
	case SP_SNIFF_PERF_DATA:
		sp_die(SP_EXIT_FATAL, "%s is a perf.data file (from perf record), not a stackpulse "
		       "stream: record with sp-capture instead (there is no converter from "
		       "perf.data)", name);
	case SP_SNIFF_GZIP: unpack = "zcat"; break;
	case SP_SNIFF_ZSTD:
		return;	/* the reader decompresses it */
	case SP_SNIFF_XZ: unpack = "xzcat"; break;
	case SP_SNIFF_BZIP2: unpack = "bzcat"; break;
	case SP_SNIFF_ELF:
		sp_die(SP_EXIT_FATAL, "%s is an ELF file (a program or library), not a stackpulse "
		       "stream: to profile a program, run it under sp-capture "
		       "(sp-capture -o rec.sps -- PROGRAM)", name);
	case SP_SNIFF_JSON:
		sp_die(SP_EXIT_FATAL, "%s is JSON text, not a stackpulse stream: if it holds "
		       "sp-cat's JSON lines, make a stream of it with sp-cat --from-json %s",
		       name, file);
	case SP_SNIFF_TEXT:
		sp_die(SP_EXIT_FATAL, "%s is text, not a stackpulse stream (folded stacks are "
		       "drawn with sp-flame; sp-cat --from-json reads JSON lines)", name);
	default:
		return;
	}
	sp_die(SP_EXIT_FATAL, "%s is %s-compressed: %s %s | %s", name,
	       strcmp(unpack, "zcat") == 0 ? "gzip" :
	       unpack[0] == 'x' ? "xz" : "bzip2", unpack, file, sp_progname);
}

/* Refuses an input that is plainly not a stream. */
static void sniff_input(int fd, const char *path, const char *name, const struct stat *st)
{
	unsigned char buf[16];
	ssize_t n = -1;
	if (S_ISREG(st->st_mode)) {
		off_t at = lseek(fd, 0, SEEK_CUR);
		n = pread(fd, buf, sizeof(buf), at < 0 ? 0 : at);
	} else if (S_ISFIFO(st->st_mode)) {
		n = peek_pipe(fd, buf, sizeof(buf));
	}
	if (n > 0)
		refuse_kind(sp_sniff(buf, (size_t)n), path, name);
}

/*
 * A pipe between two stages holds 1 MiB instead of the kernel's 64 KiB:
 * the stage before then runs on while the one after starts up (opening
 * its modules) or takes a long record, instead of waiting on it each
 * time the pipe fills.  Where the kernel refuses (a user past the limit
 * of pipe-user-pages-soft), the pipe stays as it was.
 */
static void widen_pipe(int fd, const struct stat *st)
{
	if (S_ISFIFO(st->st_mode) && fcntl(fd, F_GETPIPE_SZ) < PIPE_BYTES)
		(void)fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES);
}

static int open_input(const char *path, bool stream)
{
	char buf[PATH_MAX + 8];
	if (path && strcmp(path, "-") == 0)
		path = NULL;
	const char *name = input_name(path, buf, sizeof(buf));
	int fd = STDIN_FILENO;
	if (path && (fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		sp_die(SP_EXIT_FATAL, "cannot open '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0)
		sp_die(SP_EXIT_FATAL, "cannot read %s: %s", name, strerror(errno));
	if (S_ISDIR(st.st_mode))
		sp_die(SP_EXIT_FATAL, "%s is a directory, not a %s", name, stream ? "stream" : "file");
	if (stream && isatty(fd))
		sp_die(SP_EXIT_FATAL, "refusing to read a binary stream from a terminal (%s): give "
		       "a file, or pipe a stream in", name);
	note_input(path ? path : "standard input", &st);
	if (path && S_ISFIFO(st.st_mode))
		wait_for_writer(fd, name);
	if (path)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (stream) {
		widen_pipe(fd, &st);
		sniff_input(fd, path, name, &st);
	}
	return fd;
}

int sp_open_input(const char *path)
{
	return open_input(path, true);
}

int sp_open_text_input(const char *path)
{
	return open_input(path, false);
}

/*
 * Where a file at path is or would be: its directory with links resolved
 * and its own name, so that two spellings of a path not yet made compare
 * equal.  Falls back to the path as given.
 */
static char *resolve_path(const char *path)
{
	char *full = realpath(path, NULL);
	if (full)
		return full;
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : NULL;
	char *rdir = realpath(dir ? dir : ".", NULL);
	free(dir);
	if (!rdir)
		return sp_xstrdup(path);
	const char *base = slash ? slash + 1 : path;
	size_t n = strlen(rdir) + strlen(base) + 2;
	char *r = sp_xmalloc(n);
	snprintf(r, n, "%s%s%s", rdir, strcmp(rdir, "/") == 0 ? "" : "/", base);
	free(rdir);
	return r;
}

/* Followed paths that named no file yet: none of them may become the output. */
static struct future_input {
	char *where;
	char *name;
} *futures;
static size_t nfutures;

int sp_follow_input(const char *path)
{
	char buf[PATH_MAX + 8];
	const char *name = input_name(path, buf, sizeof(buf));
	struct stat st;
	/*
	 * A FIFO is not opened here: a reader that came and went would let
	 * its writer start, and then fail it (EPIPE) or leave its bytes to
	 * nobody.  The reader opens it, and reads it as a pipe.
	 */
	if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
		note_input(path, &st);
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT) {
		/*
		 * The output is put in place when the tool ends: at the
		 * followed path it would replace the recording that appears
		 * there meanwhile.
		 */
		char *where = resolve_path(path);
		if (output.where && strcmp(where, output.where) == 0)
			same_file(path);
		futures = sp_xrealloc(futures, (nfutures + 1) * sizeof(*futures));
		futures[nfutures++] = (struct future_input){ where, sp_xstrdup(path) };
		return -1;
	}
	if (fd < 0)
		sp_die(SP_EXIT_FATAL, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		sp_die(SP_EXIT_FATAL, "cannot read %s: %s", name, strerror(errno));
	if (S_ISDIR(st.st_mode))
		sp_die(SP_EXIT_FATAL, "%s is a directory, not a stream", name);
	if (isatty(fd))
		sp_die(SP_EXIT_FATAL, "refusing to read a binary stream from a terminal (%s): give "
		       "a file, or pipe a stream in", name);
	note_input(path, &st);
	if (S_ISREG(st.st_mode))
		sniff_input(fd, path, name, &st);
	close(fd);
	return -1;
}

/* Refuses an output that is one of the inputs read so far. */
static void check_output_id(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return;
	output.have_id = true;
	output.dev = st->st_dev;
	output.ino = st->st_ino;
	for (size_t i = 0; i < ninputs; i++)
		if (inputs[i].dev == st->st_dev && inputs[i].ino == st->st_ino)
			same_file(inputs[i].name);
}

/* The umask, which only changing it tells. */
static mode_t current_umask(void)
{
	mode_t mask = umask(0);
	umask(mask);
	return mask;
}

/* A named temporary ".NAME.XXXXXX" beside t->path; its fd, or -1. */
static int named_temporary(struct tmpout *t)
{
	const char *slash = strrchr(t->path, '/');
	int dirlen = slash ? (int)(slash - t->path + 1) : 0;
	size_t n = strlen(t->path) + 16;
	char *tmp = sp_xmalloc(n);
	snprintf(tmp, n, "%.*s.%s.XXXXXX", dirlen, t->path, t->path + dirlen);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		free(tmp);
		return -1;
	}
	/* mkostemp() makes it 0600: make it what open(O_CREAT, 0666) would. */
	fchmod(fd, 0666 & ~current_umask());
	t->tmp = tmp;
	return fd;
}

/*
 * Starts a temporary in the directory of the file it will replace, so
 * that putting it in place is atomic.  It is unnamed (O_TMPFILE): a tool
 * killed outright, even by SIGKILL, leaves nothing behind, and the file
 * gets its name only when complete (tmpout_commit()).  Where the file
 * system refuses O_TMPFILE (EOPNOTSUPP; EISDIR from kernels before 3.11,
 * which take the flag for O_DIRECTORY) or /proc, through which it is
 * linked, is not mounted, a named ".NAME.XXXXXX" stands in, removed at
 * exit and on SIGINT, SIGTERM and SIGHUP, though not after SIGKILL.
 * Returns its fd, or -1 when the directory takes no new file.
 */
static int tmpout_open(struct tmpout *t, const char *path, const struct stat *old)
{
	t->path = old ? realpath(path, NULL) : NULL;
	if (!t->path)
		t->path = sp_xstrdup(path);
	const char *slash = strrchr(t->path, '/');
	char *dir = slash ? strndup(t->path, (size_t)(slash - t->path) + (slash == t->path)) : NULL;
	bool proc = access("/proc/self/fd", X_OK) == 0;
	/* The kernel applies the umask, as to open(O_CREAT, 0666). */
	int fd = proc ? open(dir ? dir : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666) : -1;
	if (fd < 0 && (!proc || errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
		fd = named_temporary(t);
	free(dir);
	if (fd < 0) {
		free(t->path);
		t->path = NULL;
		return -1;
	}
	if (old) {
		/* Owner and mode as before; a user who is not root keeps the file as theirs. */
		fchmod(fd, old->st_mode & 07777);
		(void)!fchown(fd, old->st_uid, old->st_gid);
	}
	t->fd = fd;
	t->pending = true;
	return fd;
}

/* Keeps the file at path as path.old, for a recording replaced. */
static void keep_old(const char *path)
{
	if (access(path, F_OK) != 0)
		return;
	size_t n = strlen(path) + 5;
	char *old = sp_xmalloc(n);
	snprintf(old, n, "%s.old", path);
	unlink(old);
	/* A link keeps NAME in place until the rename replaces it. */
	if (link(path, old) < 0 && rename(path, old) < 0)
		sp_warn("cannot keep '%s' as '%s': %s", path, old, strerror(errno));
	free(old);
}

/*
 * Gives an unnamed temporary its name: linked straight to it when no
 * file is there, else linked under a temporary name renamed over the
 * file, since a link never replaces one.  Returns 0, or -1 with errno.
 */
static int link_unnamed(struct tmpout *t)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", t->fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, t->path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	const char *slash = strrchr(t->path, '/');
	int dirlen = slash ? (int)(slash - t->path + 1) : 0;
	size_t n = strlen(t->path) + 16;
	char *tmp = sp_xmalloc(n);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)ts.tv_nsec;
	int rc = -1;
	for (unsigned i = 0; i < 100 && rc < 0; i++) {
		snprintf(tmp, n, "%.*s.%s.%06x", dirlen, t->path, t->path + dirlen,
			 (seed + i * 7919u) & 0xffffff);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0) {
			if (errno != EEXIST)
				break;
			continue;
		}
		rc = rename(tmp, t->path);
		int e = errno;
		if (rc < 0)
			unlink(tmp);
		errno = e;
		break;
	}
	int e = errno;
	free(tmp);
	errno = e;
	return rc;
}

/* Puts the temporary in place.  Returns 0, or -1 with errno. */
static int tmpout_commit(struct tmpout *t)
{
	if (!t->pending)
		return 0;
	if (t->keep_old)
		keep_old(t->path);
	if (t->tmp ? rename(t->tmp, t->path) < 0 : link_unnamed(t) < 0)
		return -1;
	free(t->tmp);
	t->tmp = NULL;
	t->pending = false;
	return 0;
}

/* Gives the temporary up: a named one is removed. */
static void tmpout_drop(struct tmpout *t)
{
	if (t->pending && t->tmp)
		unlink(t->tmp);
	free(t->tmp);
	t->tmp = NULL;
	t->pending = false;
}

/* A temporary with a name is removed when SIGINT, SIGTERM or SIGHUP ends the tool. */
static void remove_on_signals(void)
{
	struct sigaction sa = { 0 }, old;
	sa.sa_handler = on_interrupt;
	int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(*sigs); i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
}

static int open_output(const char *path, bool binary)
{
	struct stat st;
	int fd = STDOUT_FILENO;
	if (!path || strcmp(path, "-") == 0) {
		if (fstat(fd, &st) == 0)
			check_output_id(&st);
	} else {
		output.name = path;
		output.where = resolve_path(path);
		for (size_t i = 0; i < nfutures; i++)
			if (strcmp(futures[i].where, output.where) == 0)
				same_file(futures[i].name);
		bool exists = stat(path, &st) == 0;
		if (exists)
			check_output_id(&st);
		fd = -1;
		if (!exists || S_ISREG(st.st_mode)) {
			fd = tmpout_open(&output.t, path, exists ? &st : NULL);
			if (fd >= 0 && output.t.tmp && !output.t.keep_old)
				remove_on_signals();
		}
		/* A device, a FIFO, or a directory that takes no new file: in place. */
		if (fd < 0)
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd < 0)
			sp_die(SP_EXIT_FATAL, "cannot create '%s': %s", path,
			       strerror(errno));
	}
	if (binary && isatty(fd))
		sp_die(SP_EXIT_USAGE, "refusing to write a binary stream to a terminal; "
		       "redirect it to a file or a pipe, or use -o FILE");
	if (binary && fstat(fd, &st) == 0)
		widen_pipe(fd, &st);
	output.cookie.fd = fd;
	return fd;
}

int sp_open_output(const char *path, bool binary)
{
	return open_output(path, binary);
}

int sp_open_recording(const char *path)
{
	output.t.keep_old = true;
	return open_output(path, true);
}

const char *sp_output_name(void)
{
	return output.name;
}

/* Puts the output in place, saying why not. */
static int output_commit(void)
{
	if (tmpout_commit(&output.t) == 0)
		return 0;
	sp_warn("cannot put the new '%s' in place: %s", output.name, strerror(errno));
	return -1;
}

int sp_output_commit(void)
{
	return output_commit();
}

FILE *sp_output_file(int fd)
{
	output.cookie.fd = fd;
	output.cookie.err = 0;
	FILE *f = cookie_file(&output.cookie);
	if (!f)
		sp_die(SP_EXIT_FATAL, "out of memory");
	return f;
}

int sp_write_failed(int err)
{
	output.failed = true;
	sp_warn("cannot write '%s': %s", output.name, strerror(err));
	return SP_EXIT_FATAL;
}

int sp_output_close(FILE *f, int status)
{
	int bad = fflush(f) != 0 || ferror(f);
	int err = output.cookie.err ? output.cookie.err : errno ? errno : EIO;
	fclose(f);
	/* A reader that stopped early (sp-cat | head) is not an error. */
	if (!bad || err == EPIPE)
		return status;
	return sp_write_failed(err);
}

FILE *sp_extra_open(const char *path, bool keep_old)
{
	struct stat st;
	bool exists = stat(path, &st) == 0;
	if (exists && S_ISREG(st.st_mode))
		for (size_t i = 0; i < ninputs; i++)
			if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino)
				sp_die(SP_EXIT_USAGE, "the output '%s' is the same file as the input "
				       "'%s': write to another file", path, inputs[i].name);
	struct extra *e = sp_xcalloc(1, sizeof(*e));
	e->t.fd = -1;
	e->t.keep_old = keep_old;
	int fd = -1;
	if (!exists || S_ISREG(st.st_mode))
		fd = tmpout_open(&e->t, path, exists ? &st : NULL);
	if (fd >= 0 && e->t.tmp)
		remove_on_signals();
	if (fd < 0)
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		int err = errno;
		free(e);
		errno = err;
		return NULL;
	}
	e->t.fd = fd;
	e->k = (struct out_cookie){ fd, 0 };
	e->f = cookie_file(&e->k);
	if (!e->f)
		sp_die(SP_EXIT_FATAL, "out of memory");
	e->next = extras;
	extras = e;
	return e->f;
}

int sp_extra_close(FILE *f, bool complete)
{
	struct extra **p = &extras;
	while (*p && (*p)->f != f)
		p = &(*p)->next;
	struct extra *e = *p;
	if (!e)
		return fclose(f);
	errno = 0;
	int bad = fflush(f) != 0 || ferror(f);
	int err = e->k.err ? e->k.err : errno ? errno : EIO;
	fclose(f);
	int rc = 0;
	if (bad && complete)
		rc = -1;
	else if (complete && tmpout_commit(&e->t) < 0)
		rc = -1, err = errno;
	tmpout_drop(&e->t);
	close(e->t.fd);
	*p = e->next;
	free(e->t.path);
	free(e);
	errno = err;
	return rc;
}

/*
 * Whether the output replaces the file of its name at exit: a result
 * whole or partial (0 or 1), and the records written before a fatal
 * fault in the input (2), but not an output that nothing or a failed
 * write went into, so that the file it would replace stays as it was.
 */
static bool worth_keeping(int status)
{
	struct stat st;
	if (status == SP_EXIT_OK || status == SP_EXIT_PARTIAL)
		return true;
	return status == SP_EXIT_FATAL && !output.failed && output.cookie.fd >= 0 &&
	       fstat(output.cookie.fd, &st) == 0 && st.st_size > 0;
}

/*
 * At exit: standard output's stdio buffer is written and checked, the
 * output file is put in place or dropped (worth_keeping()), and the
 * other files a tool left open, being incomplete, are dropped.
 */
static void finish_outputs(int status, void *unused)
{
	(void)unused;
	if (getpid() != owner)
		return;
	int st = status;
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = stdout_wrapped && stdout_cookie.err ? stdout_cookie.err :
			errno ? errno : EIO;
		if (e != EPIPE) {
			sp_warn("cannot write 'standard output': %s", strerror(e));
			st = SP_EXIT_FATAL;
		}
	}
	if (output.t.pending && worth_keeping(st) && output_commit() < 0)
		st = SP_EXIT_FATAL;
	tmpout_drop(&output.t);
	for (struct extra *e = extras; e; e = e->next)
		tmpout_drop(&e->t);
	if (st != status)
		_exit(st);
}

void sp_die_unread(struct sp_reader *r, const char *name)
{
	unsigned char head[16];
	char buf[PATH_MAX + 8];
	const char *path = strcmp(name, "-") == 0 ? NULL : name;
	const char *shown = input_name(path, buf, sizeof(buf));
	size_t n = sp_reader_head(r, head, sizeof(head));
	enum sp_sniff kind = sp_sniff(head, n);
	refuse_kind(kind, path, shown);
	if (kind == SP_SNIFF_EMPTY || kind == SP_SNIFF_ZSTD)
		sp_die(SP_EXIT_FATAL, "cannot read %s: %s", shown, sp_reader_error(r));
	if (kind == SP_SNIFF_STREAM)
		sp_die(SP_EXIT_FATAL, "%s begins as a stackpulse stream does, but not one record "
		       "of it can be read: %s", shown, sp_reader_error(r));
	char hex[8 * 3 + 1] = "";
	size_t len = 0;
	for (size_t i = 0; i < n && i < 8; i++)
		len += (size_t)snprintf(hex + len, sizeof(hex) - len, "%s%02x", i ? " " : "",
					head[i]);
	sp_die(SP_EXIT_FATAL, "%s is not a stackpulse stream: it begins with bytes of no kind "
	       "known here (%s%s), where a stream begins with its header record", shown, hex,
	       n > 8 ? " ..." : "");
}

int sp_report_input_end(struct sp_reader *r, int read_status, const char *name,
			const char *done)
{
	if (read_status == SP_READ_ERROR) {
		if (sp_reader_records(r) == 0)
			sp_die_unread(r, name);
		sp_warn("'%s': %s", name, sp_reader_error(r));
		return SP_EXIT_PARTIAL;
	}
	struct stat st;
	if (read_status == SP_READ_END && sp_reader_records(r) == 0 && strcmp(name, "-") != 0 &&
	    stat(name, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
		sp_die(SP_EXIT_FATAL, "'%s' is empty: it holds no stream", name);
	if (read_status == SP_READ_END && sp_reader_records(r) > 0 && !sp_reader_saw_summary(r)) {
		sp_warn("'%s': stream ends without a summary record after %llu record%s: it was "
			"cut short%s%s", name, (unsigned long long)sp_reader_records(r),
			sp_reader_records(r) == 1 ? "" : "s",
			done ? "; everything before the cut was " : ", and its counts are lower bounds",
			done ? done : "");
		return SP_EXIT_PARTIAL;
	}
	return SP_EXIT_OK;
}

const char *sp_single_input(int argc, char **argv, int optind)
{
	if (argc - optind > 1)
		sp_usage_error("give at most one input file");
	return optind < argc ? argv[optind] : NULL;
}

volatile int sp_interrupted;

void sp_on_signal(int sig)
{
	(void)sig;
	sp_interrupted = 1;
}

void sp_note_warn(void *arg, const char *msg)
{
	(void)arg;
	sp_warn("%s", msg);
}

/* SPDX-License-Identifier: MIT
 * sp-top: the profiler's top.  It reads a symbolized stackpulse stream
 * (standard input, a file, or a file still being written) or runs
 * sp-capture | sp-unwind | sp-symbolize itself on a process or a command,
 * and shows, refreshed every second, the functions with most self and
 * total time over the last seconds, with samples per second, lost
 * samples and the processes and threads seen.  On a terminal it is a
 * full-screen view (ncurses) driven by keys; otherwise, or with --once or
 * -n, it prints text reports and exits.
 *
 * The reader blocks in read(), so records are read and folded by a
 * thread of their own; the screen takes the fold's lock to make a report.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fold/fold.h"
#include "stream/stream.h"
#include "stream/vocab.h"
#include "tool.h"
#include "util/strbuf.h"

#include <curses.h>

struct top_options {
	const char *input;	/* a file; NULL: standard input */
	const char *pids;	/* -p: run the pipeline on these */
	char **command;		/* or on this command */
	const char *frequency;
	const char *event;	/* -e: fold only this event (and record it with -p) */
	bool follow, once, text;
	double delay, window;	/* seconds */
	enum sp_top_sort sort;
	uint32_t pid;		/* only this process; 0: all */
	const char *filter;
	uint64_t reports;	/* text reports to print; 0: until the input ends */
	size_t rows;		/* rows of a text report; 0: all */
};

/* SIGINT, SIGTERM, SIGHUP: end as after q. */
static volatile sig_atomic_t got_signal;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The input and what has been folded of it, shared by the reading
 * thread and the screen under lock.
 */
struct feed {
	pthread_mutex_t lock;
	struct sp_reader *r;
	struct sp_fold *f;
	const char *name;
	int fd;
	uint64_t samples;	/* sample records read */
	uint64_t lost;		/* lost records' counts, or a summary's when larger */
	uint64_t seg_lost;	/* lost records' counts in this segment */
	bool ended;		/* the thread is done */
	int status;		/* how the input ended: SP_EXIT_* */
	char why[600];		/* and why, when not well */
	bool unwound;		/* a segment was unwound only: names by module */
	bool follow;		/* a file still being written */
	bool screen;		/* notes go to the screen, not to stderr */
	const char *event;	/* --event, or NULL */
	bool told_events;	/* the events left out were said */
	char note[256];		/* the reader's last note, for the screen */
	volatile int stop;	/* follow mode: stop waiting */
	int wake[2];		/* the thread writes a byte here at its end */
};

static void feed_fail(struct feed *fd, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void feed_fail(struct feed *fd, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fd->why, sizeof(fd->why), fmt, ap);
	va_end(ap);
	fd->status = status;
}

/* Counts what a record says of lost samples; the lock is held. */
static void feed_lost(struct feed *fd, const struct sp_record *rec)
{
	uint64_t n;
	if (rec->type == SP_R_HEADER) {
		fd->seg_lost = 0;
	} else if (rec->type == SP_R_LOST && sp_map_u64(rec->map, "lost", &n)) {
		fd->lost += n;
		fd->seg_lost += n;
	} else if (rec->type == SP_R_SUMMARY && sp_map_u64(rec->map, "lost_events", &n) &&
		   n > fd->seg_lost) {
		/* The counts read at the end cover what no lost record said. */
		fd->lost += n - fd->seg_lost;
		fd->seg_lost = n;
	}
}

/*
 * After a header, as sp-fold has it: an --event the recording does not
 * have ends the reading (status 3); without --event, a recording of
 * several events shows its first, and says once which it leaves out.
 */
static bool feed_events(struct feed *fd)
{
	const char *const *names;
	long picked;
	size_t n = sp_fold_events(fd->f, &names, &picked);
	char list[400] = "";
	for (size_t i = picked < 0 ? 0 : 1; i < n; i++) {
		size_t len = strlen(list);
		/* The events folded with the first (a name twice) are not left out. */
		if (picked < 0 || strcmp(names[i], names[0]) != 0)
			snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
				 names[i]);
	}
	if (picked < 0) {
		feed_fail(fd, SP_EXIT_USAGE, "the recording has no event '%s': its events are "
			  "%s (give one of them to --event)", fd->event, n ? list : "none");
		return false;
	}
	if (list[0] && picked == 0 && !fd->event && !fd->told_events) {
		char msg[600];
		snprintf(msg, sizeof(msg), "the recording has %zu events: showing the samples of "
			 "'%s' only, leaving out those of %s; pick one with --event NAME", n,
			 names[0], list);
		fd->told_events = true;
		if (fd->screen)
			snprintf(fd->note, sizeof(fd->note), "%.255s", msg);
		else
			sp_warn("%s", msg);
	}
	return true;
}

/* Takes one record under the lock; false when reading must stop. */
static bool feed_record(struct feed *fd, const struct sp_record *rec)
{
	if (rec->type == SP_R_HEADER) {
		const struct sp_header *h = sp_reader_header(fd->r);
		if (h->stage == SP_STAGE_RAW) {
			feed_fail(fd, SP_EXIT_FATAL, "'%s': the stream is raw; run sp-unwind and "
				  "sp-symbolize first, or give -p PID to run them", fd->name);
			return false;
		}
		if (h->stage == SP_STAGE_UNWOUND)
			fd->unwound = true;
	}
	feed_lost(fd, rec);
	fd->samples += rec->type == SP_R_SAMPLE;
	if (sp_fold_record(fd->f, rec) < 0) {
		feed_fail(fd, SP_EXIT_PARTIAL, "'%s': byte offset %llu, record %llu: %s", fd->name,
			  (unsigned long long)rec->offset, (unsigned long long)rec->index,
			  sp_fold_error(fd->f));
		return false;
	}
	return rec->type != SP_R_HEADER || feed_events(fd);
}

/* The reading thread: folds records as they come, to the input's end. */
static void *feed_main(void *arg)
{
	struct feed *fd = arg;
	struct sp_record rec;
	enum sp_read_status rs;
	bool go = true;
	while (go && (rs = sp_reader_next(fd->r, &rec)) == SP_READ_RECORD) {
		pthread_mutex_lock(&fd->lock);
		go = feed_record(fd, &rec);
		pthread_mutex_unlock(&fd->lock);
		/* A file being written is done at its summary, as sp-unwind -f has it. */
		if (fd->follow && rec.type == SP_R_SUMMARY) {
			rs = SP_READ_END;
			break;
		}
	}
	pthread_mutex_lock(&fd->lock);
	if (go && rs == SP_READ_ERROR)
		feed_fail(fd, SP_EXIT_PARTIAL, "%s", sp_reader_error(fd->r));
	else if (go && sp_reader_header(fd->r) && !sp_reader_saw_summary(fd->r))
		feed_fail(fd, SP_EXIT_PARTIAL, "'%s': the stream ends without its summary "
			  "(cut short)", fd->name);
	fd->ended = true;
	pthread_mutex_unlock(&fd->lock);
	if (write(fd->wake[1], "", 1) < 0) {
		/* The screen then notices the end at its next refresh. */
	}
	return NULL;
}

/*
 * The pipeline sp-top runs for -p and a command: sp-capture | sp-unwind |
 * sp-symbolize, from the folder of sp-top's own executable when they are
 * there, else from PATH.  In the screen's mode their messages go to a
 * pipe that the screen shows and prints at the end.
 */
struct pipeline {
	pid_t pid[3];
	int out;		/* sp-symbolize's output */
	int err;		/* their messages, or -1 */
};

static const char *const stage_name[3] = { "sp-capture", "sp-unwind", "sp-symbolize" };

/* The path of a tool beside this one, or its bare name; static storage. */
static const char *tool_path(const char *name)
{
	static char buf[3][PATH_MAX];
	static int next;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return name;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return name;
	*slash = '\0';
	char *p = buf[next++ % 3];
	if ((size_t)snprintf(p, PATH_MAX, "%s/%s", self, name) >= PATH_MAX ||
	    access(p, X_OK) < 0)
		return name;
	return p;
}

/* Starts one stage with in and out as its standard input and output. */
static pid_t start_stage(char **argv, int in, int out, int err)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if ((in >= 0 && dup2(in, STDIN_FILENO) < 0) || dup2(out, STDOUT_FILENO) < 0 ||
	    (err >= 0 && dup2(err, STDERR_FILENO) < 0))
		_exit(127);
	execvp(argv[0], argv);
	fprintf(stderr, "%s: cannot run '%s': %s\n", sp_progname, argv[0], strerror(errno));
	_exit(127);
}

static void start_pipeline(struct pipeline *p, const struct top_options *o, bool screen)
{
	int a[2], b[2], c[2], e[2] = { -1, -1 };
	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0 || pipe2(c, O_CLOEXEC) < 0 ||
	    (screen && pipe2(e, O_CLOEXEC) < 0))
		sp_die(SP_EXIT_FATAL, "cannot make a pipe: %s", strerror(errno));
	/* sp-capture -q [-F HZ] -p PIDS, or -- COMMAND ARGS. */
	size_t k = 0;
	while (o->command && o->command[k])
		k++;
	char **cap = sp_xcalloc(k + 10, sizeof(*cap));
	size_t n = 0;
	cap[n++] = (char *)tool_path(stage_name[0]);
	cap[n++] = "-q";
	if (o->frequency) {
		cap[n++] = "-F";
		cap[n++] = (char *)o->frequency;
	}
	if (o->event) {
		cap[n++] = "-e";
		cap[n++] = (char *)o->event;
	}
	if (o->pids) {
		cap[n++] = "-p";
		cap[n++] = (char *)o->pids;
	} else {
		cap[n++] = "--";
		memcpy(cap + n, o->command, k * sizeof(*cap));
	}
	/* A launched command must not read the screen's keys. */
	int null = screen ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
	p->pid[0] = start_stage(cap, null, a[1], e[1]);
	if (null >= 0)
		close(null);
	free(cap);
	char *unw[] = { (char *)tool_path(stage_name[1]), NULL };
	char *sym[] = { (char *)tool_path(stage_name[2]), NULL };
	p->pid[1] = start_stage(unw, a[0], b[1], e[1]);
	p->pid[2] = start_stage(sym, b[0], c[1], e[1]);
	for (int i = 0; i < 3; i++)
		if (p->pid[i] < 0)
			sp_die(SP_EXIT_FATAL, "cannot start %s: %s", stage_name[i], strerror(errno));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(c[1]);
	if (e[1] >= 0)
		close(e[1]);
	p->out = c[0];
	p->err = e[0];
	if (p->err >= 0)
		fcntl(p->err, F_SETFL, O_NONBLOCK);
}

/*
 * Ends the pipeline: when the input has not ended, each stage is sent
 * SIGTERM (sp-capture then stops its recording as on a signal).  Returns
 * the exit status to report for it: SP_EXIT_FATAL when a stage failed by
 * itself, else SP_EXIT_OK.
 */
static int stop_pipeline(struct pipeline *p, bool kill_it)
{
	int status = SP_EXIT_OK;
	if (kill_it)
		for (int i = 0; i < 3; i++)
			kill(p->pid[i], SIGTERM);
	for (int i = 0; i < 3; i++) {
		int ws;
		while (waitpid(p->pid[i], &ws, 0) < 0 && errno == EINTR)
			;
		if (kill_it)
			continue;
		if (WIFEXITED(ws) && WEXITSTATUS(ws) >= SP_EXIT_FATAL) {
			sp_warn("%s exited with status %d", stage_name[i], WEXITSTATUS(ws));
			status = SP_EXIT_FATAL;
		} else if (WIFSIGNALED(ws)) {
			sp_warn("%s was killed by signal %d", stage_name[i], WTERMSIG(ws));
			status = SP_EXIT_FATAL;
		}
	}
	return status;
}

/*
 * The sliding window: a copy of every count's samples taken at each
 * refresh, the oldest one window seconds back.  A count's weight in the
 * window is its samples now less those in the oldest copy.
 */
struct snapshot {
	uint64_t *samples;
	size_t n;
	uint64_t lost;
	double t;
};

struct window {
	struct snapshot *snap;	/* a ring */
	size_t nsnap, head, used;
	uint64_t *weights;	/* of the last refresh, by count */
	size_t nweights, allocweights;
	double span;		/* seconds the weights cover */
	uint64_t lost;		/* lost in the window */
	bool whole;		/* the weights are every sample read */
};

static void window_init(struct window *w, const struct top_options *o)
{
	memset(w, 0, sizeof(*w));
	w->nsnap = (size_t)ceil(o->window / o->delay) + 1;
	w->snap = sp_xcalloc(w->nsnap, sizeof(*w->snap));
	/* An empty copy at the start: the first refresh counts from there. */
	w->snap[0].t = now_s();
	w->head = 1 % w->nsnap;
	w->used = 1;
}

static void window_release(struct window *w)
{
	for (size_t i = 0; i < w->nsnap; i++)
		free(w->snap[i].samples);
	free(w->snap);
	free(w->weights);
}

/*
 * Moves the window to now: the weights of what was read since the oldest
 * copy kept.  whole: of everything read (a file read to its end, --once).
 * The lock is held.
 */
static void window_move(struct window *w, const struct feed *fd, const struct sp_fold_view *v,
			double t, bool whole)
{
	if (v->ncounts > w->allocweights) {
		w->weights = sp_xrealloc(w->weights, v->ncounts * sizeof(*w->weights));
		w->allocweights = v->ncounts;
	}
	w->nweights = v->ncounts;
	for (size_t i = 0; i < v->ncounts; i++)
		w->weights[i] = v->counts[i].samples;
	w->whole = whole;
	if (whole) {
		w->lost = fd->lost;
		return;
	}
	/* Keep a copy of now; the oldest copy is the window's start. */
	struct snapshot *s = &w->snap[w->head];
	s->samples = sp_xrealloc(s->samples, (v->ncounts ? v->ncounts : 1) * sizeof(*s->samples));
	if (v->ncounts)
		memcpy(s->samples, w->weights, v->ncounts * sizeof(*s->samples));
	s->n = v->ncounts;
	s->lost = fd->lost;
	s->t = t;
	w->head = (w->head + 1) % w->nsnap;
	if (w->used < w->nsnap)
		w->used++;
	const struct snapshot *old = &w->snap[(w->head + w->nsnap - w->used) % w->nsnap];
	for (size_t i = 0; i < old->n; i++)
		w->weights[i] -= old->samples[i];
	w->span = t - old->t;
	w->lost = fd->lost - old->lost;
}

/* One row as shown: copied out of the fold, so the screen needs no lock. */
struct shown_row {
	uint32_t frame;
	uint64_t self, total;
	char *text;		/* "function (module)" */
};

/* A process's share of the window. */
struct shown_proc {
	uint32_t pid;
	uint64_t samples;
	char comm[32];
};

/* A report: what one refresh shows. */
struct report {
	struct shown_row *rows;
	size_t nrows, allocrows;
	struct shown_proc *procs;	/* most samples first */
	size_t nprocs, allocprocs;
	uint64_t samples, function_samples;
	size_t threads, processes;
	uint64_t read_samples, lost, window_lost;
	double span;
	bool whole;
	char callee[256];	/* the function whose callers the rows are */
};

static void report_clear(struct report *rp)
{
	for (size_t i = 0; i < rp->nrows; i++)
		free(rp->rows[i].text);
	rp->nrows = 0;
	rp->nprocs = 0;
}

static void report_release(struct report *rp)
{
	report_clear(rp);
	free(rp->rows);
	free(rp->procs);
}

static int proc_order(const void *a, const void *b)
{
	const struct shown_proc *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Each process's samples in the window, most first. */
static void report_procs(struct report *rp, const struct sp_fold_view *v, const struct window *w)
{
	for (size_t i = 0; i < v->ncounts && i < w->nweights; i++) {
		uint64_t n = w->weights[i];
		if (!n)
			continue;
		const struct sp_fold_thread *t = &v->threads[v->counts[i].thread];
		size_t j = 0;
		while (j < rp->nprocs && rp->procs[j].pid != t->pid)
			j++;
		if (j == rp->nprocs) {
			if (rp->nprocs >= 1024)
				continue;	/* the screen shows a handful */
			if (rp->nprocs == rp->allocprocs) {
				rp->allocprocs = rp->allocprocs ? 2 * rp->allocprocs : 16;
				rp->procs = sp_xrealloc(rp->procs, rp->allocprocs * sizeof(*rp->procs));
			}
			rp->procs[j] = (struct shown_proc){ .pid = t->pid };
			snprintf(rp->procs[j].comm, sizeof(rp->procs[j].comm), "%s", t->comm);
			rp->nprocs++;
		}
		rp->procs[j].samples += n;
	}
	if (rp->nprocs)
		qsort(rp->procs, rp->nprocs, sizeof(*rp->procs), proc_order);
}

/* How a report is asked for: the keys' state. */
struct view_state {
	enum sp_top_sort sort;
	uint32_t pid;
	char filter[128];
	uint32_t callers_of;	/* SP_TOP_NONE: the functions */
};

/*
 * Makes the report of the window's weights; the lock is held.  Returns
 * 0, or -1 when memory ran out.
 */
static int report_make(struct report *rp, struct sp_top *t, const struct sp_fold_view *v,
		       const struct window *w, const struct feed *fd, const struct view_state *vs)
{
	struct sp_top_options to = {
		.sort = vs->sort, .weights = w->weights, .nweights = w->nweights,
		.pid = vs->pid, .callers_of = vs->callers_of,
		/* The filter picks a function; its callers are all shown. */
		.filter = vs->callers_of == SP_TOP_NONE ? vs->filter : NULL,
	};
	struct sp_error err = { 0 };
	report_clear(rp);
	if (sp_top_compute(t, v, &to, &err) < 0)
		return -1;
	if (rp->allocrows < t->nrows) {
		rp->rows = sp_xrealloc(rp->rows, t->nrows * sizeof(*rp->rows));
		rp->allocrows = t->nrows;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		const struct sp_top_row *r = &t->rows[i];
		const char *mod = sp_top_module(v, r);
		char *text;
		if (asprintf(&text, "%s%s%s%s", sp_top_name(v, r), mod ? " (" : "", mod ? mod : "",
			     mod ? ")" : "") < 0)
			return -1;
		rp->rows[rp->nrows++] = (struct shown_row){ r->frame, r->self, r->total, text };
	}
	rp->samples = t->samples;
	rp->function_samples = t->function_samples;
	rp->threads = t->threads;
	rp->processes = t->processes;
	rp->read_samples = fd->samples;
	rp->lost = fd->lost;
	rp->window_lost = w->lost;
	rp->span = w->span;
	rp->whole = w->whole;
	rp->callee[0] = '\0';
	if (vs->callers_of < v->nframes)
		snprintf(rp->callee, sizeof(rp->callee), "%s", v->frames[vs->callers_of].name);
	report_procs(rp, v, w);
	return 0;
}

/* Makes the report of the fold now: takes the lock and a view. */
static int make_report(struct report *rp, struct sp_top *t, struct window *w, struct feed *fd,
		   const struct view_state *vs, bool move, bool whole)
{
	struct sp_fold_view v;
	int rc = -1;
	pthread_mutex_lock(&fd->lock);
	if (sp_fold_view_get(fd->f, &v) == 0) {
		if (move)
			window_move(w, fd, &v, now_s(), whole);
		rc = report_make(rp, t, &v, w, fd, vs);
		sp_fold_view_release(&v);
	}
	pthread_mutex_unlock(&fd->lock);
	return rc;
}

static double percent(uint64_t part, uint64_t all)
{
	return all ? 100.0 * part / all : 0;
}

/* The header's first lines, as the screen and the text show them. */
static void header_lines(const struct report *rp, char *l1, char *l2, size_t len)
{
	char rate[64] = "";
	if (rp->span > 0)
		snprintf(rate, sizeof(rate), ", %.1f samples/s", rp->samples / rp->span);
	if (rp->whole)
		snprintf(l1, len, "whole input: %llu samples%s, lost %llu, %zu process%s, %zu thread%s",
			 (unsigned long long)rp->samples, rate, (unsigned long long)rp->lost,
			 rp->processes, rp->processes == 1 ? "" : "es", rp->threads,
			 rp->threads == 1 ? "" : "s");
	else
		snprintf(l1, len, "last %.1f s: %llu samples%s, lost %llu (%llu in all), "
			 "%zu process%s, %zu thread%s", rp->span, (unsigned long long)rp->samples,
			 rate, (unsigned long long)rp->window_lost, (unsigned long long)rp->lost,
			 rp->processes, rp->processes == 1 ? "" : "es", rp->threads,
			 rp->threads == 1 ? "" : "s");
	size_t off = (size_t)snprintf(l2, len, "processes:");
	uint64_t all = 0;
	for (size_t i = 0; i < rp->nprocs; i++)
		all += rp->procs[i].samples;
	for (size_t i = 0; i < rp->nprocs && i < 8 && off < len; i++)
		off += (size_t)snprintf(l2 + off, len - off, " %u %s %.1f%%", rp->procs[i].pid,
					rp->procs[i].comm, percent(rp->procs[i].samples, all));
	if (!rp->nprocs)
		snprintf(l2, len, "processes: none sampled");
}

/* One text report on stdout. */
static void print_report(const struct report *rp, const struct view_state *vs, size_t rows,
			 uint64_t nr)
{
	char l1[512], l2[512];
	header_lines(rp, l1, l2, sizeof(l1));
	printf("sp-top report %llu: %s\n%s\nsorted by %s", (unsigned long long)nr, l1, l2,
	       vs->sort == SP_TOP_SELF ? "self" : "total");
	if (vs->pid)
		printf(", process %u", vs->pid);
	if (vs->filter[0])
		printf(", functions holding \"%s\"", vs->filter);
	printf("\n# %llu samples\n# %7s %9s %7s %9s  %s\n", (unsigned long long)rp->samples,
	       "self%", "self", "total%", "total", "function (module)");
	for (size_t i = 0; i < rp->nrows && (!rows || i < rows); i++) {
		const struct shown_row *r = &rp->rows[i];
		printf("  %6.2f%% %9llu %6.2f%% %9llu  %s\n", percent(r->self, rp->samples),
		       (unsigned long long)r->self, percent(r->total, rp->samples),
		       (unsigned long long)r->total, r->text);
	}
	putchar('\n');
	fflush(stdout);
}

/* The screen's state besides the report. */
struct screen {
	struct view_state vs;
	size_t sel;		/* the selected row */
	uint32_t sel_frame;	/* its frame, kept across refreshes */
	size_t first;		/* the first row shown */
	bool paused, prompting, quit;
	char entry[128];	/* the filter being typed */
	size_t nentry;
	char note[256];		/* the last message of the pipeline, or the input's end */
	uint32_t saved_sel;	/* the function selected before Enter */
	struct sp_buf *errs;
};

static void draw_rows(const struct screen *sc, const struct report *rp, int top, int height)
{
	attron(A_BOLD);
	if (sc->vs.callers_of != SP_TOP_NONE)
		mvprintw(top - 1, 0, "%7s %9s %7s %9s  CALLER (MODULE) of %s", "SELF%", "SELF",
			 "TOTAL%", "TOTAL", rp->callee);
	else
		mvprintw(top - 1, 0, "%7s %9s %7s %9s  FUNCTION (MODULE)",
			 sc->vs.sort == SP_TOP_SELF ? "*SELF%" : "SELF%", "SELF",
			 sc->vs.sort == SP_TOP_TOTAL ? "*TOTAL%" : "TOTAL%", "TOTAL");
	attroff(A_BOLD);
	for (int y = 0; y < height; y++) {
		size_t i = sc->first + (size_t)y;
		if (i >= rp->nrows)
			break;
		const struct shown_row *r = &rp->rows[i];
		if (i == sc->sel)
			attron(A_REVERSE);
		mvprintw(top + y, 0, "%6.2f%% %9llu %6.2f%% %9llu  %-.*s", percent(r->self, rp->samples),
			 (unsigned long long)r->self, percent(r->total, rp->samples),
			 (unsigned long long)r->total, COLS > 38 ? COLS - 38 : 0, r->text);
		if (i == sc->sel) {
			clrtoeol();
			attroff(A_REVERSE);
		}
	}
}

static void draw(struct screen *sc, const struct report *rp, const char *source)
{
	char l1[512], l2[512];
	header_lines(rp, l1, l2, sizeof(l1));
	erase();
	attron(A_BOLD);
	mvprintw(0, 0, "sp-top  %s%s", source, sc->paused ? "  [paused]" : "");
	attroff(A_BOLD);
	mvprintw(1, 0, "%.*s", COLS, l1);
	mvprintw(2, 0, "%.*s", COLS, l2);
	mvprintw(3, 0, "sort: %s  process: ", sc->vs.sort == SP_TOP_SELF ? "self" : "total");
	if (sc->vs.pid)
		printw("%u", sc->vs.pid);
	else
		printw("all");
	printw("  filter: %s", sc->vs.filter[0] ? sc->vs.filter : "-");
	if (sc->note[0])
		mvprintw(4, 0, "%.*s", COLS, sc->note);
	int height = LINES - 7;
	if (height > 0) {
		if (sc->sel < sc->first)
			sc->first = sc->sel;
		if (sc->sel >= sc->first + (size_t)height)
			sc->first = sc->sel - (size_t)height + 1;
		draw_rows(sc, rp, 6, height);
	}
	if (sc->prompting)
		mvprintw(LINES - 1, 0, "filter: %s", sc->entry);
	else
		mvprintw(LINES - 1, 0, "%.*s", COLS - 1,
			 sc->vs.callers_of == SP_TOP_NONE
			 ? "q quit  s/t sort  p process  / filter  Enter callers  space pause"
			 : "q quit  Esc back  Enter callers of the selected caller  space pause");
	refresh();
}

/* Keeps the selection on the same function after the rows changed. */
static void keep_selection(struct screen *sc, const struct report *rp)
{
	for (size_t i = 0; i < rp->nrows; i++)
		if (rp->rows[i].frame == sc->sel_frame) {
			sc->sel = i;
			return;
		}
	if (sc->sel >= rp->nrows)
		sc->sel = rp->nrows ? rp->nrows - 1 : 0;
	sc->sel_frame = rp->nrows ? rp->rows[sc->sel].frame : SP_TOP_NONE;
}

/* The process after the one shown, in the order of their samples; 0 after the last. */
static uint32_t next_pid(const struct report *rp, uint32_t pid)
{
	size_t i = 0;
	if (!pid)
		return rp->nprocs ? rp->procs[0].pid : 0;
	while (i < rp->nprocs && rp->procs[i].pid != pid)
		i++;
	return i + 1 < rp->nprocs ? rp->procs[i + 1].pid : 0;
}

/* A key typed into the filter's prompt. */
static void prompt_key(struct screen *sc, int ch)
{
	if (ch == '\n' || ch == KEY_ENTER || ch == '\r') {
		memcpy(sc->vs.filter, sc->entry, sc->nentry + 1);
		sc->prompting = false;
	} else if (ch == 27) {
		sc->prompting = false;
	} else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (sc->nentry)
			sc->entry[--sc->nentry] = '\0';
	} else if (ch >= ' ' && ch < 127 && sc->nentry + 1 < sizeof(sc->entry)) {
		sc->entry[sc->nentry++] = (char)ch;
		sc->entry[sc->nentry] = '\0';
	}
}

/*
 * A key: changes the state; returns whether the report must be made
 * again (the rows change), not just drawn.
 */
static bool screen_key(struct screen *sc, const struct report *rp, int ch)
{
	if (sc->prompting) {
		prompt_key(sc, ch);
		return !sc->prompting;
	}
	switch (ch) {
	case 'q': case 'Q':
		sc->quit = true;
		return false;
	case 's': sc->vs.sort = SP_TOP_SELF; return true;
	case 't': sc->vs.sort = SP_TOP_TOTAL; return true;
	case 'p': sc->vs.pid = next_pid(rp, sc->vs.pid); return true;
	case ' ': sc->paused = !sc->paused; return false;
	case '/':
		sc->prompting = true;
		snprintf(sc->entry, sizeof(sc->entry), "%s", sc->vs.filter);
		sc->nentry = strlen(sc->entry);
		return false;
	case KEY_UP: case 'k':
		if (sc->sel)
			sc->sel--;
		break;
	case KEY_DOWN: case 'j':
		if (sc->sel + 1 < rp->nrows)
			sc->sel++;
		break;
	case KEY_PPAGE:
		sc->sel = sc->sel > (size_t)LINES ? sc->sel - (size_t)LINES : 0;
		break;
	case KEY_NPAGE:
		sc->sel = rp->nrows && sc->sel + (size_t)LINES < rp->nrows ? sc->sel + (size_t)LINES
		: (rp->nrows ? rp->nrows - 1 : 0);
		break;
	case '\n': case '\r': case KEY_ENTER: case KEY_RIGHT:
		if (sc->sel >= rp->nrows || rp->rows[sc->sel].frame == SP_TOP_ROOT)
			return false;
		if (sc->vs.callers_of == SP_TOP_NONE)
			sc->saved_sel = rp->rows[sc->sel].frame;
		sc->vs.callers_of = rp->rows[sc->sel].frame;
		sc->sel = 0;
		sc->sel_frame = SP_TOP_NONE;
		return true;
	case 27: case KEY_LEFT: case KEY_BACKSPACE: case 127:
		if (sc->vs.callers_of == SP_TOP_NONE)
			return false;
		sc->vs.callers_of = SP_TOP_NONE;
		sc->sel_frame = sc->saved_sel;
		return true;
	default:
		return false;
	}
	sc->sel_frame = sc->sel < rp->nrows ? rp->rows[sc->sel].frame : SP_TOP_NONE;
	return false;
}

/* Keeps the pipeline's messages; the last line is the screen's note. */
static void read_messages(struct screen *sc, int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		sp_buf_add(sc->errs, buf, (size_t)n);
		const char *end = sc->errs->p + sc->errs->len;
		while (end > sc->errs->p && end[-1] == '\n')
			end--;
		const char *start = end;
		while (start > sc->errs->p && start[-1] != '\n')
			start--;
		snprintf(sc->note, sizeof(sc->note), "%.*s", (int)(end - start), start);
	}
}

/*
 * What the reader of a followed file says (it waits for the file, or
 * starts over on a new one): on the screen's note line, or on stderr.
 */
static void follow_note(void *arg, const char *msg)
{
	struct feed *fd = arg;
	if (!fd->screen) {
		sp_warn("%s", msg);
		return;
	}
	pthread_mutex_lock(&fd->lock);
	snprintf(fd->note, sizeof(fd->note), "%s", msg);
	pthread_mutex_unlock(&fd->lock);
}

/* The input: a file, standard input, or the pipeline's output. */
static int open_feed(struct feed *fd, const struct top_options *o, struct pipeline *p,
		     bool screen)
{
	memset(fd, 0, sizeof(*fd));
	pthread_mutex_init(&fd->lock, NULL);
	p->err = -1;
	if (o->pids || o->command) {
		start_pipeline(p, o, screen);
		fd->fd = p->out;
		fd->name = "sp-symbolize's output";
	} else if (o->follow) {
		/* The reader opens the file, waits for it, and ends at its summary. */
		fd->fd = -1;
		fd->name = o->input;
	} else {
		fd->fd = sp_open_input(o->input);
		fd->name = o->input ? o->input : "-";
	}
	if (pipe2(fd->wake, O_CLOEXEC) < 0)
		sp_die(SP_EXIT_FATAL, "cannot make a pipe: %s", strerror(errno));
	struct sp_fold_options fo = { .format = SP_FOLD_FOLDED, .to = INFINITY,
				      .event = o->event };
	fd->event = o->event;
	fd->screen = screen;
	fd->follow = o->follow;
	fd->r = fd->fd < 0 ? sp_reader_follow(o->input, &fd->stop, follow_note, fd)
			   : sp_reader_new(fd->fd, fd->name);
	fd->f = sp_fold_new(&fo);
	if (!fd->r || !fd->f)
		sp_die(SP_EXIT_FATAL, "out of memory");
	return 0;
}

static bool feed_ended(struct feed *fd)
{
	pthread_mutex_lock(&fd->lock);
	bool ended = fd->ended;
	pthread_mutex_unlock(&fd->lock);
	return ended;
}

/*
 * Waits until the next refresh at deadline, the input's end, or a
 * signal.  Returns whether the input has ended.
 */
static bool wait_tick(struct feed *fd, double deadline)
{
	for (;;) {
		if (feed_ended(fd) || got_signal)
			return feed_ended(fd);
		double left = deadline - now_s();
		if (left <= 0)
			return false;
		struct pollfd pfd = { .fd = fd->wake[0], .events = POLLIN };
		poll(&pfd, 1, (int)(left * 1000) + 1);
	}
}

/* Text reports: -n N, --once, or off a terminal. */
static void run_text(struct feed *fd, const struct top_options *o, struct view_state *vs,
		     struct window *w, struct sp_top *t, struct report *rp)
{
	uint64_t printed = 0;
	double deadline = now_s() + o->delay;
	for (;;) {
		bool ended = o->once ? wait_tick(fd, INFINITY) : wait_tick(fd, deadline);
		if (got_signal || (ended && (fd->status == SP_EXIT_FATAL ||
					       fd->status == SP_EXIT_USAGE)))
			return;
		if (ended && !sp_reader_header(fd->r))
			return;		/* not even a header: nothing to report */
		/* A finished input shows all of itself when no window was shown of it. */
		bool whole = ended && (o->once || printed == 0);
		if (make_report(rp, t, w, fd, vs, true, whole) < 0)
			sp_die(SP_EXIT_FATAL, "out of memory");
		print_report(rp, vs, o->rows, ++printed);
		if (ended || (o->reports && printed >= o->reports))
			return;
		deadline += o->delay;
		if (deadline < now_s())
			deadline = now_s() + o->delay;
	}
}

/* The full-screen view, until q, a signal, or a terminal that cannot be used. */
static int run_screen(struct feed *fd, const struct top_options *o, struct view_state *vs,
		      struct window *w, struct sp_top *t, struct report *rp, int errfd,
		      struct sp_buf *errs)
{
	const char *source = o->pids ? o->pids : o->command ? o->command[0]
			     : o->input ? o->input : "standard input";
	char label[300];
	snprintf(label, sizeof(label), "%s%s", o->pids ? "process " : "", source);
	FILE *tty = fopen("/dev/tty", "r+e");
	SCREEN *scr = tty ? newterm(NULL, stdout, tty) : NULL;
	if (!scr) {
		sp_warn("cannot use the terminal%s; use -n N for text reports",
			tty ? "" : " (/dev/tty)");
		if (tty)
			fclose(tty);
		return SP_EXIT_FATAL;
	}
	set_term(scr);
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(50);
	curs_set(0);

	struct screen sc = { .vs = *vs, .sel_frame = SP_TOP_NONE, .errs = errs };
	bool ended = false, rebuild = true;
	double deadline = now_s() + o->delay;
	while (!sc.quit && !got_signal) {
		if (rebuild) {
			/* The window moves at refreshes; keys show the same window anew. */
			if (make_report(rp, t, w, fd, &sc.vs, false, false) < 0)
				break;
			keep_selection(&sc, rp);
			rebuild = false;
		}
		draw(&sc, rp, label);
		struct pollfd pfd[3] = {
			{ .fd = fileno(tty), .events = POLLIN },
			{ .fd = ended ? -1 : fd->wake[0], .events = POLLIN },
			{ .fd = errfd, .events = POLLIN },
		};
		double left = deadline - now_s();
		poll(pfd, 3, left > 0 ? (int)(left * 1000) + 1 : 0);
		if (errfd >= 0 && pfd[2].revents)
			read_messages(&sc, errfd);
		if (pfd[2].revents & (POLLHUP | POLLERR) && !(pfd[2].revents & POLLIN))
			errfd = -1;
		int ch;
		while ((ch = getch()) != ERR) {
			if (ch == KEY_RESIZE)
				continue;	/* drawn anew below, at the new size */
			if (screen_key(&sc, rp, ch))
				rebuild = true;
			if (sc.quit)
				break;
		}
		pthread_mutex_lock(&fd->lock);
		if (fd->note[0]) {
			snprintf(sc.note, sizeof(sc.note), "%s", fd->note);
			fd->note[0] = '\0';
		}
		pthread_mutex_unlock(&fd->lock);
		if (!ended && feed_ended(fd)) {
			ended = true;
			pthread_mutex_lock(&fd->lock);
			snprintf(sc.note, sizeof(sc.note), "the input has ended%s%.200s; q quits",
				 fd->why[0] ? ": " : "", fd->why);
			pthread_mutex_unlock(&fd->lock);
			/* A file read at once: its whole; else the window as it stood. */
			if (make_report(rp, t, w, fd, &sc.vs, true, w->used <= 1) < 0)
				break;
			keep_selection(&sc, rp);
		}
		if (now_s() >= deadline) {
			deadline += o->delay;
			if (deadline < now_s())
				deadline = now_s() + o->delay;
			if (!sc.paused && !ended) {
				if (make_report(rp, t, w, fd, &sc.vs, true, false) < 0)
					break;
				keep_selection(&sc, rp);
			}
		}
	}
	endwin();
	delscreen(scr);
	fclose(tty);
	*vs = sc.vs;
	return SP_EXIT_OK;
}

/*
 * Runs sp-top: opens the input, starts the reading thread, shows reports
 * until done, then stops the input and returns the exit status.
 */
static int top_run(const struct top_options *o)
{
	bool screen = !o->text;
	/* On the heap: a thread that cannot be stopped may outlive this call. */
	struct feed *fd = sp_xcalloc(1, sizeof(*fd));
	struct pipeline p = { .out = -1, .err = -1 };
	struct view_state vs = { .sort = o->sort, .pid = o->pid, .callers_of = SP_TOP_NONE };
	struct window w;
	struct sp_top t;
	struct report rp = { 0 };
	struct sp_buf errs = SP_BUF_INIT;
	pthread_t thread;

	if (o->filter)
		snprintf(vs.filter, sizeof(vs.filter), "%s", o->filter);
	open_feed(fd, o, &p, screen);
	window_init(&w, o);
	sp_top_init(&t);
	int err = pthread_create(&thread, NULL, feed_main, fd);
	if (err)
		sp_die(SP_EXIT_FATAL, "cannot start the reading thread: %s", strerror(err));

	int status = screen ? run_screen(fd, o, &vs, &w, &t, &rp, p.err, &errs) : SP_EXIT_OK;
	if (!screen)
		run_text(fd, o, &vs, &w, &t, &rp);

	bool ended = feed_ended(fd);
	bool joinable = true;
	if ((o->pids || o->command) && !ended) {
		/* sp-capture ends its recording; the rest drain what it wrote. */
		kill(p.pid[0], SIGTERM);
		got_signal = 0;
		double deadline = now_s() + 5;
		while (!wait_tick(fd, deadline) && now_s() < deadline && !got_signal)
			;
		ended = feed_ended(fd);
	}
	if (o->pids || o->command) {
		int ps = stop_pipeline(&p, !ended);
		if (ps != SP_EXIT_OK)
			status = ps;
	} else if (o->follow) {
		fd->stop = 1;
	} else if (!ended) {
		/* Standard input from a pipe that has not ended: it cannot be interrupted. */
		joinable = false;
	}
	if (p.err >= 0) {
		/* What the pipeline said after the screen closed. */
		char buf[4096];
		ssize_t n;
		fcntl(p.err, F_SETFL, 0);
		while ((n = read(p.err, buf, sizeof(buf))) > 0)
			sp_buf_add(&errs, buf, (size_t)n);
	}
	if (errs.len)
		fprintf(stderr, "%.*s", (int)errs.len, errs.p);
	if (joinable) {
		pthread_join(thread, NULL);
		if (ended && fd->status != SP_EXIT_OK) {
			sp_warn("%s", fd->why);
			if (status == SP_EXIT_OK)
				status = fd->status;
		}
	}
	pthread_mutex_lock(&fd->lock);
	uint64_t samples = fd->samples;
	pthread_mutex_unlock(&fd->lock);
	if (status == SP_EXIT_OK && !samples && (ended || !screen)) {
		sp_warn("'%s' holds no samples%s", fd->name,
			o->pids || o->command ? ": see sp-capture's messages above" : "");
		status = SP_EXIT_PARTIAL;
	}
	report_release(&rp);
	sp_top_release(&t);
	window_release(&w);
	sp_buf_release(&errs);
	if (!joinable)
		return status;	/* the thread still reads: leave what it uses be */
	sp_fold_free(fd->f);
	sp_reader_free(fd->r);
	if (fd->fd >= 0)
		close(fd->fd);
	close(fd->wake[0]);
	close(fd->wake[1]);
	free(fd);
	if (p.err >= 0)
		close(p.err);
	return status;
}

static void usage(void)
{
	printf("Usage: %s [options] [FILE]\n"
	       "       %s [options] -p PID[,PID...]\n"
	       "       %s [options] -- COMMAND [ARG...]\n"
	       "Show the functions with most samples of a symbolized stackpulse stream, live.\n"
	       "\n"
	       "  -p, --pid PID[,PID...]  profile these processes (runs sp-capture | sp-unwind |\n"
	       "                          sp-symbolize)\n"
	       "  -F, --frequency HZ      with -p or a command: sp-capture's -F\n"
	       "  -e, --event NAME        only the samples of this event of the recording\n"
	       "                          (default: its first); with -p or a command, the\n"
	       "                          event sp-capture records (its -e)\n"
	       "  -f, --follow            FILE is still being written: wait for more at its end\n"
	       "  -d, --delay SECS        refresh every SECS seconds (default 1)\n"
	       "  -w, --window SECS       count the samples of the last SECS seconds (default 10)\n"
	       "  -s, --sort KEY          self (default) or total\n"
	       "      --only-pid PID      only this process\n"
	       "      --filter TEXT       only functions whose name holds TEXT\n"
	       "  -n, --iterations N      print N text reports, one every delay, and exit\n"
	       "      --once              print one report of the whole input at its end and exit\n"
	       "      --rows N            rows of a text report (default 25; 0: all)\n"
	       "  -h, --help              show this help\n"
	       "  -V, --version           show the version\n"
	       "\n"
	       "Keys: q quit, s/t sort by self/total, p next process, / filter, Up/Down select,\n"
	       "Enter callers of the selected function (Esc back), space pause.\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, sp_progname, sp_progname);
}

static double parse_secs(const char *arg, const char *opt, double min)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= min) || !(v <= 86400))
		sp_usage_error("invalid %s '%s': give seconds, at least %g", opt, arg, min);
	return v;
}

static uint64_t parse_count(const char *arg, const char *opt, uint64_t max)
{
	uint64_t v;
	if (sp_parse_u64(arg, max, &v) < 0)
		sp_usage_error("invalid %s '%s'", opt, arg);
	return v;
}

static void on_signal(int sig)
{
	got_signal = sig;
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int main(int argc, char **argv)
{
	enum { ONCE = 256, ONLY_PID, FILTER, ROWS };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "event", required_argument, NULL, 'e' },
		{ "follow", no_argument, NULL, 'f' },
		{ "delay", required_argument, NULL, 'd' },
		{ "window", required_argument, NULL, 'w' },
		{ "sort", required_argument, NULL, 's' },
		{ "only-pid", required_argument, NULL, ONLY_PID },
		{ "filter", required_argument, NULL, FILTER },
		{ "iterations", required_argument, NULL, 'n' },
		{ "once", no_argument, NULL, ONCE },
		{ "rows", required_argument, NULL, ROWS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_options o = { .delay = 1, .window = 10, .rows = 25 };
	bool want_n = false;
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "p:F:e:fd:w:s:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': o.pids = optarg; break;
		case 'F': o.frequency = optarg; break;
		case 'e': o.event = optarg; break;
		case 'f': o.follow = true; break;
		case 'd': o.delay = parse_secs(optarg, "--delay", 0.1); break;
		case 'w': o.window = parse_secs(optarg, "--window", 0.1); break;
		case 's':
			if (strcmp(optarg, "self") && strcmp(optarg, "total"))
				sp_usage_error("invalid --sort '%s': self or total", optarg);
			o.sort = optarg[0] == 't' ? SP_TOP_TOTAL : SP_TOP_SELF;
			break;
		case ONLY_PID: o.pid = (uint32_t)parse_count(optarg, "--only-pid", UINT32_MAX); break;
		case FILTER: o.filter = optarg; break;
		case 'n':
			o.reports = parse_count(optarg, "-n", UINT32_MAX);
			if (!o.reports)
				sp_usage_error("invalid -n '%s': give at least 1", optarg);
			want_n = true;
			break;
		case ONCE: o.once = true; break;
		case ROWS: o.rows = (size_t)parse_count(optarg, "--rows", 1u << 20); break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	bool launch = optind < argc && strcmp(argv[optind - 1], "--") == 0;
	if (launch)
		o.command = argv + optind;
	else
		o.input = sp_single_input(argc, argv, optind);
	if (o.pids && (launch || o.input))
		sp_usage_error("give -p, a command or a file, not two of them");
	if (o.frequency && !o.pids && !launch)
		sp_usage_error("-F is for -p or a command");
	if (o.follow && !o.input)
		sp_usage_error("--follow is for a file");
	if (o.once && want_n)
		sp_usage_error("--once and -n: give one of them");
	if (o.once && (o.pids || launch))
		sp_usage_error("--once reads a stream to its end: give a file or standard input");
	/* Off a terminal, reports until the input ends, as top -b prints them. */
	o.text = o.once || want_n || !isatty(STDOUT_FILENO);

	catch_signals();
	return top_run(&o);
}

/* SPDX-License-Identifier: MIT
 * sp-fold: aggregates the samples of a symbolized stackpulse stream into
 * folded stacks, "root;...;leaf COUNT" a line, as flamegraph.pl,
 * inferno, speedscope and the Firefox Profiler read them; the process
 * name is the root frame.  Given an unwound stream it folds with
 * address-only names.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fold/fold.h"
#include "stream/stream.h"
#include "stream/vocab.h"
#include "tool.h"
#include "util/alloc.h"
#include "util/strbuf.h"

static void usage(void)
{
	printf("Usage: %s [options] [FILE]\n"
	       "Fold the samples of a symbolized stackpulse stream into stacks.\n"
	       "\n"
	       "  -o, --output FILE        write to FILE instead of standard output\n"
	       "      --format F           folded (default), pprof, speedscope or firefox\n"
	       "                           (the Firefox Profiler's processed profile;\n"
	       "                           gzipped when FILE ends in .gz)\n"
	       "      --pid                root frames comm-PID\n"
	       "      --tid                root frames comm-PID/TID\n"
	       "      --by-process         root frames the process name, every pid of a\n"
	       "                           name merged (the default)\n"
	       "      --by-thread          root frames the process name, then the thread's\n"
	       "                           name, every thread of a name merged\n"
	       "      --kernel             annotate kernel frames with _[k]\n"
	       "      --jit                annotate JIT (perf-map) frames with _[j]\n"
	       "      --inline             show inlined functions as frames, annotated _[i]\n"
	       "      --addrs              address-only frames keep their address\n"
	       "      --all                --kernel --jit\n"
	       "      --show-hidden        keep frames hidden by default (start-up scaffolding)\n"
	       "      --weight W           samples (default) or period\n"
	       "      --off-cpu            only the time threads spent off the CPU (a\n"
	       "                           recording of sp-capture --off-cpu), in ns; each\n"
	       "                           stack ends in [off-cpu], or [preempted] when\n"
	       "                           the thread could have run\n"
	       "      --wall               on-CPU and off-CPU time together, in ns\n"
	       "      --only-pid PID,...   only these processes\n"
	       "      --only-tid TID,...   only these threads\n"
	       "      --only-comm NAME,... only processes of these names\n"
	       "      --event NAME         only the samples of this event of the recording\n"
	       "                           (default: its first, cpu-clock unless -e said)\n"
	       "      --from SEC           only samples at or after SEC seconds into the recording\n"
	       "      --to SEC             only samples before SEC seconds into the recording\n"
	       "      --per-thread DIR     also write one folded file per thread into DIR\n"
	       "      --top N              instead, a report of the N functions with most\n"
	       "                           self time (0: all), with their total time\n"
	       "      --sort KEY           with --top: self (default) or total\n"
	       "      --allow-empty        exit 0 when the filters match no sample\n"
	       "  -f, --follow             write the lines of new samples whenever the input\n"
	       "                           is idle; a file is followed while it is written\n"
	       "  -h, --help               show this help\n"
	       "  -V, --version            show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname);
}

/* Makes room for one more element of an option's list. */
#define LIST_GROW(v, n, alloc) \
	do { \
		if (SP_ALLOC_GROW(v, (n) + 1, alloc) < 0) \
			sp_die(SP_EXIT_FATAL, "out of memory"); \
	} while (0)

/* Splits "a,b,c" into numbers or strings. */
static void split_u64(const char *arg, const char *opt, uint64_t **v, size_t *n, size_t *alloc)
{
	char *copy = sp_xstrdup(arg), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t x;
		if (sp_parse_u64(t, UINT32_MAX, &x) < 0)
			sp_usage_error("invalid %s '%s'", opt, arg);
		LIST_GROW(*v, *n, *alloc);
		(*v)[(*n)++] = x;
	}
	free(copy);
	if (!*n)
		sp_usage_error("invalid %s '%s'", opt, arg);
}

static void split_str(const char *arg, char ***v, size_t *n, size_t *alloc)
{
	char *copy = sp_xstrdup(arg), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		LIST_GROW(*v, *n, *alloc);
		(*v)[(*n)++] = sp_xstrdup(t);
	}
	free(copy);
}

/* The index of arg in names (NULL-terminated); a usage error when it is none of them. */
static int choice(const char *arg, const char *opt, const char *const *names, const char *hint)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(arg, names[i]) == 0)
			return i;
	sp_usage_error("invalid %s '%s': %s", opt, arg, hint);
}

static double parse_seconds(const char *arg, const char *opt)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0) || !isfinite(v))
		sp_usage_error("invalid %s '%s': give seconds from the recording's start", opt, arg);
	return v;
}

/*
 * The input has samples but the filters kept none: an empty result that
 * looks like a successful one.  Says which filters, and returns true.
 */
static bool filtered_out(const struct sp_fold_options *o, uint64_t samples)
{
	char what[256] = "";
	size_t n = 0;
	if (o->npids)
		n += (size_t)snprintf(what + n, sizeof(what) - n, "--only-pid, ");
	if (o->ntids && n < sizeof(what))
		n += (size_t)snprintf(what + n, sizeof(what) - n, "--only-tid, ");
	if (o->ncomms && n < sizeof(what))
		n += (size_t)snprintf(what + n, sizeof(what) - n, "--only-comm, ");
	if ((o->from > 0 || isfinite(o->to)) && n < sizeof(what))
		n += (size_t)snprintf(what + n, sizeof(what) - n, "--from/--to, ");
	if (!n)
		return false;
	what[n - 2] = '\0';
	sp_warn("no sample matches %s (the input has %llu): the result is empty; list the "
		"processes and the time span with sp-stat, or give --allow-empty", what,
		(unsigned long long)samples);
	return true;
}

/* --follow: the input is idle, so the lines of the samples since the last time leave. */
struct follow_out {
	struct sp_fold *f;
	FILE *out;
};

static void write_new(void *arg)
{
	struct follow_out *fo = arg;
	if (sp_fold_write_new(fo->f, fo->out) == 0)
		fflush(fo->out);
}

/* A --per-thread file, written as the output is: complete, or not at all. */
static FILE *open_thread_file(const char *path)
{
	return sp_extra_open(path, false);
}

/*
 * After a header: an --event the recording does not have is a usage
 * error; without --event, a recording of several events is folded for
 * its first, and that is said once.
 */
static void check_events(struct sp_fold *f, const struct sp_fold_options *o, bool *told)
{
	const char *const *names;
	long picked;
	const char *want = o->event;
	size_t n = sp_fold_events(f, &names, &picked);
	long off = sp_fold_off_cpu_event(f);
	if ((o->off_cpu || o->wall) && off < 0)
		sp_die(SP_EXIT_FATAL, "the recording has no off-CPU time for %s: record it "
		       "with sp-capture --off-cpu", o->off_cpu ? "--off-cpu" : "--wall");
	if (o->wall && picked >= 0 && strcmp(names[picked], "cpu-clock") != 0 &&
	    strcmp(names[picked], "task-clock") != 0)
		sp_die(SP_EXIT_FATAL, "--wall adds off-CPU time to time on the CPU, but the "
		       "recording's event '%s' counts no time: record with -e cpu-clock (the "
		       "default) or task-clock, or give --event with one of them",
		       names[picked]);
	if (picked < 0) {
		struct sp_buf list = SP_BUF_INIT;
		for (size_t i = 0; i < n; i++)
			sp_buf_addf(&list, "%s%s", i ? ", " : "", names[i]);
		sp_usage_error("the recording has no event '%s': its events are %s (give one "
			       "of them to --event)", want, n ? list.p : "none");
	}
	struct sp_buf left = SP_BUF_INIT;
	bool off_left = false;
	for (size_t i = 1; !want && !o->off_cpu && i < n; i++) {
		if (strcmp(names[i], names[0]) == 0)
			continue;
		if ((long)i == off) {
			off_left = !o->wall;
			continue;
		}
		sp_buf_addf(&left, "%s%s", left.len ? ", " : "", names[i]);
	}
	if (left.len && !*told) {
		sp_warn("the recording has %zu events: folding the samples of '%s' only, "
			"leaving out those of %s; pick one with --event NAME", n, names[0],
			left.p);
		*told = true;
	}
	if (off_left && !*told) {
		sp_warn("the recording has off-CPU time too, left out: --off-cpu folds it, "
			"--wall folds it with the time on the CPU");
		*told = true;
	}
	sp_buf_release(&left);
}

/* --top: the report of the functions with most self (or total) time. */
static int write_top(struct sp_fold *f, FILE *out, size_t n, enum sp_top_sort sort)
{
	struct sp_top_options to = { .sort = sort, .callers_of = SP_TOP_NONE };
	struct sp_fold_view v;
	struct sp_top t;
	struct sp_error err = { 0 };
	if (sp_fold_view_get(f, &v) < 0) {
		sp_warn("%s", sp_fold_error(f));
		return SP_EXIT_FATAL;
	}
	sp_top_init(&t);
	int rc = sp_top_compute(&t, &v, &to, &err);
	if (rc == 0)
		sp_top_write(&t, &v, n, out);
	else
		sp_warn("%s", sp_error_message(&err));
	sp_top_release(&t);
	sp_fold_view_release(&v);
	return rc < 0 ? SP_EXIT_FATAL : SP_EXIT_OK;
}

/* --format firefox: the Firefox Profiler's processed profile, of the view. */
static int write_firefox(struct sp_fold *f, FILE *out, bool gzip)
{
	struct sp_fold_view v;
	struct sp_error err = { 0 };
	if (sp_fold_view_get(f, &v) < 0) {
		sp_warn("%s", sp_fold_error(f));
		return SP_EXIT_FATAL;
	}
	int rc = sp_fold_write_firefox(&v, gzip, out, &err);
	if (rc < 0)
		sp_warn("%s", sp_error_message(&err));
	sp_fold_view_release(&v);
	return rc < 0 ? SP_EXIT_FATAL : SP_EXIT_OK;
}

int main(int argc, char **argv)
{
	enum { FORMAT = 256, PID, TID, KERNEL, JIT, INLINE, ADDRS, ALL, SHOW_HIDDEN, WEIGHT,
	       ONLY_PID, ONLY_TID, ONLY_COMM, FROM, TO, PER_THREAD, ALLOW_EMPTY, TOP, SORT,
	       BY_PROCESS, BY_THREAD, EVENT, OFF_CPU, WALL };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, FORMAT },
		{ "pid", no_argument, NULL, PID },
		{ "tid", no_argument, NULL, TID },
		{ "by-process", no_argument, NULL, BY_PROCESS },
		{ "by-thread", no_argument, NULL, BY_THREAD },
		{ "kernel", no_argument, NULL, KERNEL },
		{ "jit", no_argument, NULL, JIT },
		{ "inline", no_argument, NULL, INLINE },
		{ "addrs", no_argument, NULL, ADDRS },
		{ "all", no_argument, NULL, ALL },
		{ "show-hidden", no_argument, NULL, SHOW_HIDDEN },
		{ "weight", required_argument, NULL, WEIGHT },
		{ "off-cpu", no_argument, NULL, OFF_CPU },
		{ "wall", no_argument, NULL, WALL },
		{ "only-pid", required_argument, NULL, ONLY_PID },
		{ "only-tid", required_argument, NULL, ONLY_TID },
		{ "only-comm", required_argument, NULL, ONLY_COMM },
		{ "event", required_argument, NULL, EVENT },
		{ "from", required_argument, NULL, FROM },
		{ "to", required_argument, NULL, TO },
		{ "per-thread", required_argument, NULL, PER_THREAD },
		{ "top", required_argument, NULL, TOP },
		{ "sort", required_argument, NULL, SORT },
		{ "allow-empty", no_argument, NULL, ALLOW_EMPTY },
		{ "follow", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	/* In the order of enum sp_fold_format. */
	static const char *const formats[] = { "folded", "pprof", "speedscope", "firefox", NULL };
	static const char *const weights[] = { "samples", "period", NULL };
	/* In the order of enum sp_top_sort. */
	static const char *const sorts[] = { "self", "total", NULL };
	uint64_t top = 0;
	bool want_top = false, want_sort = false;
	enum sp_top_sort sort = SP_TOP_SELF;
	struct sp_fold_options o = { .format = SP_FOLD_FOLDED, .to = INFINITY };
	size_t alloc_pids = 0, alloc_tids = 0, alloc_comms = 0;
	const char *output = NULL;
	bool allow_empty = false, follow = false, told_events = false;
	uint64_t samples = 0;
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "o:fhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case FORMAT:
			o.format = (enum sp_fold_format)choice(optarg, "--format", formats,
							       "folded, pprof, speedscope or firefox");
			break;
		case PID: o.root = SP_ROOT_PID; break;
		case TID: o.root = SP_ROOT_TID; break;
		case BY_PROCESS: o.root = SP_ROOT_COMM; break;
		case BY_THREAD: o.root = SP_ROOT_THREAD; break;
		case KERNEL: o.kernel = true; break;
		case JIT: o.jit = true; break;
		case INLINE: o.inline_frames = true; break;
		case ADDRS: o.addrs = true; break;
		case ALL: o.kernel = o.jit = true; break;
		case SHOW_HIDDEN: o.show_hidden = true; break;
		case WEIGHT:
			o.period = choice(optarg, "--weight", weights, "samples or period") == 1;
			break;
		case ONLY_PID: split_u64(optarg, "--only-pid", &o.pids, &o.npids, &alloc_pids); break;
		case ONLY_TID: split_u64(optarg, "--only-tid", &o.tids, &o.ntids, &alloc_tids); break;
		case ONLY_COMM: split_str(optarg, &o.comms, &o.ncomms, &alloc_comms); break;
		case EVENT: o.event = optarg; break;
		case OFF_CPU: o.off_cpu = true; break;
		case WALL: o.wall = true; break;
		case FROM: o.from = parse_seconds(optarg, "--from"); break;
		case TO: o.to = parse_seconds(optarg, "--to"); break;
		case PER_THREAD:
			o.per_thread_dir = optarg;
			o.open_file = open_thread_file;
			o.close_file = sp_extra_close;
			break;
		case TOP:
			if (sp_parse_u64(optarg, SIZE_MAX, &top) < 0)
				sp_usage_error("invalid --top '%s': give a number of rows", optarg);
			want_top = true;
			break;
		case SORT:
			sort = (enum sp_top_sort)choice(optarg, "--sort", sorts, "self or total");
			want_sort = true;
			break;
		case ALLOW_EMPTY: allow_empty = true; break;
		case 'f': follow = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	const char *input = sp_single_input(argc, argv, optind);
	/* pprof places each frame at its address in a mapping of the process. */
	o.locations = o.format == SP_FOLD_PPROF;
	if (o.from >= o.to)
		sp_usage_error("--from must be before --to");
	if (o.off_cpu && o.wall)
		sp_usage_error("give --off-cpu (off-CPU time only) or --wall (all of it), not both");
	if (o.off_cpu && o.event)
		sp_usage_error("--off-cpu folds the off-CPU time: no --event with it");
	if (want_sort && !want_top)
		sp_usage_error("--sort is for --top");
	if (want_top && (o.format != SP_FOLD_FOLDED || o.per_thread_dir))
		sp_usage_error("--top writes a text report: no --format or --per-thread with it");
	if (follow && (want_top || o.format != SP_FOLD_FOLDED || o.per_thread_dir))
		sp_usage_error("--follow writes folded lines as they come: no --top, --format "
			       "or --per-thread with it");
	if (o.format == SP_FOLD_FIREFOX && o.per_thread_dir)
		sp_usage_error("--per-thread writes folded files: the firefox profile has a track "
			       "per thread already");
	/* A firefox profile named *.gz is gzip-compressed, as the profiler reads it. */
	size_t outlen = output ? strlen(output) : 0;
	bool gzip = o.format == SP_FOLD_FIREFOX && outlen > 3 && strcmp(output + outlen - 3, ".gz") == 0;
	if (o.per_thread_dir && mkdir(o.per_thread_dir, 0755) < 0 && errno != EEXIST)
		sp_die(SP_EXIT_FATAL, "cannot create '%s': %s", o.per_thread_dir, strerror(errno));

	/* Following a file opens it when it appears; a pipe needs no following. */
	bool follow_file = follow && input && strcmp(input, "-") != 0;
	int infd = follow_file ? sp_follow_input(input) : sp_open_input(input);
	int outfd = sp_open_output(output, o.format == SP_FOLD_PPROF || gzip);
	FILE *out = sp_output_file(outfd);
	struct sp_reader *r = follow_file ? sp_reader_follow(input, &sp_interrupted, sp_note_warn, NULL)
					  : sp_reader_new(infd, input ? input : "-");
	struct sp_fold *f = sp_fold_new(&o);
	if (!out || !r || !f)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_reader_undecoded(r, 1ull << SP_R_SAMPLE);	/* read from their bytes */
	struct follow_out fo = { f, out };
	if (follow) {
		struct sigaction sa = { .sa_handler = sp_on_signal };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sp_reader_set_idle(r, write_new, &fo);
	}

	int status = SP_EXIT_OK;
	struct sp_record rec;
	enum sp_read_status rs;
	while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		if (rec.type == SP_R_HEADER) {
			const struct sp_header *h = sp_reader_header(r);
			if (h->stage == SP_STAGE_RAW) {
				sp_warn("'%s': byte offset %llu, record %llu: the stream is raw; "
					"run sp-unwind (and sp-symbolize) first",
					input ? input : "-", (unsigned long long)rec.offset,
					(unsigned long long)rec.index);
				status = SP_EXIT_FATAL;
				goto done;
			}
			if (h->stage == SP_STAGE_UNWOUND)
				sp_warn("'%s': the stream is unwound but not symbolized: frames are "
					"named by module (with --addrs, and address); run sp-symbolize "
					"for names",
					input ? input : "-");
		}
		samples += rec.type == SP_R_SAMPLE;
		if (sp_fold_record(f, &rec) < 0) {
			sp_warn("'%s': byte offset %llu, record %llu: %s", input ? input : "-",
				(unsigned long long)rec.offset, (unsigned long long)rec.index,
				sp_fold_error(f));
			status = SP_EXIT_PARTIAL;
			break;
		}
		if (rec.type == SP_R_HEADER)
			check_events(f, &o, &told_events);
	}
	if (sp_report_input_end(r, rs, input ? input : "-", "folded") != SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
	if (samples && !sp_fold_any_sample(f) && !allow_empty && filtered_out(&o, samples))
		status = SP_EXIT_PARTIAL;
	if (want_top) {
		if (write_top(f, out, (size_t)top, sort) != SP_EXIT_OK)
			status = SP_EXIT_FATAL;
	} else if (o.format == SP_FOLD_FIREFOX) {
		if (write_firefox(f, out, gzip) != SP_EXIT_OK)
			status = SP_EXIT_FATAL;
	} else if (follow ? sp_fold_write_new(f, out) < 0 : sp_fold_write(f, out) < 0) {
		sp_warn("%s", sp_fold_error(f));
		status = SP_EXIT_FATAL;
	}
done:
	status = sp_output_close(out, status);
	sp_fold_free(f);
	sp_reader_free(r);
	for (size_t i = 0; i < o.ncomms; i++)
		free(o.comms[i]);
	free(o.comms);
	free(o.pids);
	free(o.tids);
	if (infd != STDIN_FILENO)
		close(infd);
	return status;
}

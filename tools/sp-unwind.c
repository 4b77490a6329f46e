/* SPDX-License-Identifier: MIT
 * sp-unwind: turns each raw sample's registers and stack copy into a
 * stack of frames by DWARF CFI, against the mappings the stream recorded
 * for its process at its time, and writes the unwound stream: interned
 * stacks that samples refer to by id, the modules they lie in, and every
 * other record passed through.  The work is the unwinding stage's
 * (unwind/stage.h); this is its loop, its options and its messages.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stream/advice.h"
#include "stream/header.h"
#include "stream/stream.h"
#include "tool.h"
#include "unwind/libunwind.h"
#include "unwind/parallel.h"
#include "unwind/stage.h"
#include "util/modfile.h"

#define DEFAULT_MAX_DEPTH 512

static void usage(void)
{
	printf("Usage: %s [options] [FILE]\n"
	       "Unwind the stack copies of a raw stackpulse stream by DWARF CFI, and\n"
	       "resolve the frame-pointer callchains of sp-capture --call-graph fp.\n"
	       "FILE is '-' or absent for standard input.\n"
	       "\n"
	       "  -o, --output FILE      write the unwound stream to FILE\n"
	       "  -z, --compress[=LEVEL] write it in zstd frames (level 1 to 22, default 1)\n"
	       "      --root DIR         look recorded module paths up under DIR\n"
	       "      --module-dir DIR   a directory in build-id layout (DIR/.build-id/xx/rest),\n"
	       "                         searched before the recorded path; repeatable\n"
	       "      --archive DIR      an archive of sp-capture --archive: a module dir\n"
	       "  -f, --follow           read a file still being written; end at its summary\n"
	       "                         or on SIGINT\n"
	       "      --max-depth N      user frames per stack at most (default %d)\n"
	       "      --no-fp-fallback   never walk frame pointers where no CFI covers an address\n"
	       "      --engine NAME      stackpulse (the default) or libunwind: who steps\n"
	       "                         from frame to frame\n"
	       "      --max-record BYTES largest input record accepted (default %u)\n"
	       "      --allow-empty      exit 0 even when no stack is complete\n"
	       "  -j, --jobs N           unwind on N threads (default %u);\n"
	       "                         the output is the same for every N\n"
	       "      --stats            at the end, print the samples and frames unwound\n"
	       "                         per second and the jobs used (with one, also\n"
	       "                         the most threads' stack copies kept)\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, DEFAULT_MAX_DEPTH, SP_DEFAULT_MAX_RECORD, sp_default_jobs());
}

/* The most frequent way a stack ended early. */
static enum sp_unwind_end worst_end(const uint64_t *ends)
{
	enum sp_unwind_end worst = SP_END_TRUNCATED;
	for (int e = SP_END_TRUNCATED; e < SP_END_COUNT; e++)
		if (e != SP_END_MAX_DEPTH && ends[e] > ends[worst])
			worst = (enum sp_unwind_end)e;
	return worst;
}

/*
 * At the end of a segment: no complete stack at all is an unusable
 * result (SP_EXIT_PARTIAL unless allow_empty); more than 5% of stacks
 * cut short is one warning.  Both name the cause and the fix.  A stack
 * cut at --max-depth is what the user asked for: it counts as complete.
 */
static int check_stacks(const struct sp_unwind_stage *stage, bool allow_empty, bool containers)
{
	uint64_t n;
	const uint64_t *ends = sp_unwind_stage_ends(stage, &n);
	uint64_t cut = n - ends[SP_END_COMPLETE] - ends[SP_END_MAX_DEPTH];
	if (!n || 100.0 * (double)cut / (double)n <= SP_DEGRADED_PCT)
		return SP_EXIT_OK;
	/* sp-stat's words (stream/advice.h): the warning and the diagnosis read alike. */
	enum sp_unwind_end worst = worst_end(ends);
	struct sp_finding f;
	/* A container's files are in its own root: no rebuild or --module-dir of the host's helps. */
	bool elsewhere = containers && (worst == SP_END_MISSING_MODULE ||
					worst == SP_END_BUILD_ID_MISMATCH);
	sp_finding_incomplete(&f, n - cut, n, sp_unwind_end_description(worst),
			      elsewhere ? sp_container_remedy(NULL) : sp_end_remedy(worst, NULL, false));
	if (cut == n)
		sp_warn("no stack is complete: %s; %s%s", f.what, f.fix,
			allow_empty ? "" : " (or give --allow-empty)");
	else
		sp_warn("warning: %s; %s", f.what, f.fix);
	return cut == n && !allow_empty ? SP_EXIT_PARTIAL : SP_EXIT_OK;
}

/* A directory to search that is not there: said once, not at every module. */
static void check_dir(const char *opt, const char *dir)
{
	struct stat sb;
	if (stat(dir, &sb) < 0)
		sp_warn("%s '%s': %s; no module file is found there", opt, dir, strerror(errno));
	else if (!S_ISDIR(sb.st_mode))
		sp_warn("%s '%s': not a directory; no module file is found there", opt, dir);
}

/* --engine=libunwind: libunwind steps, through unwind/libunwind.h. */
static void *lu_segment(const struct sp_unwind_engine *e, struct sp_unwinder *u,
			struct sp_error *err)
{
	(void)e;
	return sp_lunwinder_new(u, err);
}

static void lu_free(void *l)
{
	sp_lunwinder_free(l);
}

static enum sp_unwind_end lu_unwind(void *l, struct sp_addrspaces *a, uint32_t pid,
				    const uint64_t *regs, size_t nregs,
				    const unsigned char *stack, size_t len, bool full,
				    struct sp_uframe *out, size_t max, size_t *n)
{
	return sp_lunwind(l, a, pid, regs, nregs, stack, len, full, out, max, n);
}

static const struct sp_unwind_engine libunwind_engine = {
	"libunwind", lu_segment, lu_free, lu_unwind,
};

/* A module file the unwinder could not read, and how to let it. */
static void warn_denied(const struct sp_unwind_stage *stage)
{
	uint32_t pid;
	int err;
	const char *denied = sp_unwind_stage_denied(stage, &pid, &err);
	if (denied)
		sp_warn("cannot read '%s' as process %u maps it (/proc/%u/root, map_files): %s "
			"(run sp-unwind as root, or give it CAP_SYS_PTRACE and "
			"CAP_DAC_READ_SEARCH)", denied, pid, pid, strerror(err));
}

/* The input is idle: what was unwound so far leaves now (a write error stays on w). */
static void flush_out(void *w)
{
	sp_writer_flush(w);
}

/* With -j N: the records handed over so far go to the workers, and out. */
static void flush_par(void *p)
{
	sp_unwind_par_flush(p);
}

/* What the stage's taking a record calls for, on the thread that writes. */
struct run {
	bool allow_empty;
	bool containers;	/* the segment has a process in another mount namespace */
	int status;
};

static void taken(void *arg, const struct sp_record *rec, const struct sp_unwind_stage *stage)
{
	struct run *run = arg;
	uint64_t ns;
	if (rec->type == SP_R_HEADER)
		run->containers = false;
	else if (rec->type == SP_R_PROCESS && sp_map_u64(rec->map, "mntns", &ns))
		run->containers = true;
	if (rec->type == SP_R_SUMMARY) {
		warn_denied(stage);
		if (check_stacks(stage, run->allow_empty, run->containers) != SP_EXIT_OK &&
		    run->status == SP_EXIT_OK)
			run->status = SP_EXIT_PARTIAL;
	}
}

/* --stats: this stage's throughput, on standard error. */
static void print_stats(const struct sp_unwind_stage *stage, double seconds, unsigned jobs)
{
	uint64_t samples, frames;
	sp_unwind_stage_totals(stage, &samples, &frames);
	if (seconds <= 0)
		seconds = 1e-9;
	fprintf(stderr, "%s: %llu samples, %llu frames in %.3f s: %.0f samples/s, "
		"%.0f frames/s, %u job%s\n", sp_progname, (unsigned long long)samples,
		(unsigned long long)frames, seconds, (double)samples / seconds,
		(double)frames / seconds, jobs, jobs == 1 ? "" : "s");
	if (jobs == 1) {
		fprintf(stderr, "%s: at most %zu threads' stack copies kept\n", sp_progname,
			sp_unwind_stage_copies_peak(stage));
		uint64_t taken = sp_unwind_stage_frames_taken(stage);
		fprintf(stderr, "%s: %llu frames (%.1f%%) taken from their thread's previous walk\n",
			sp_progname, (unsigned long long)taken,
			frames ? 100.0 * (double)taken / (double)frames : 0.0);
	}
}

int main(int argc, char **argv)
{
	enum { ROOT = 256, MODULE_DIR, MAX_DEPTH, NO_FP, MAX_RECORD, ARCHIVE, ENGINE,
	       ALLOW_EMPTY, COMPRESS, STATS };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "compress", optional_argument, NULL, COMPRESS },
		{ "root", required_argument, NULL, ROOT },
		{ "module-dir", required_argument, NULL, MODULE_DIR },
		{ "archive", required_argument, NULL, ARCHIVE },
		{ "follow", no_argument, NULL, 'f' },
		{ "max-depth", required_argument, NULL, MAX_DEPTH },
		{ "no-fp-fallback", no_argument, NULL, NO_FP },
		{ "engine", required_argument, NULL, ENGINE },
		{ "max-record", required_argument, NULL, MAX_RECORD },
		{ "allow-empty", no_argument, NULL, ALLOW_EMPTY },
		{ "jobs", required_argument, NULL, 'j' },
		{ "stats", no_argument, NULL, STATS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	struct sp_modfile_search ms;
	sp_modfile_search_init(&ms);
	size_t max_record = SP_DEFAULT_MAX_RECORD;
	bool follow = false, fp = true, allow_empty = false, use_lu = false, stats = false;
	unsigned jobs = sp_default_jobs();
	unsigned max_depth = DEFAULT_MAX_DEPTH;
	uint64_t v;
	int c, compress = 0;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "o:zfj:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'z': compress = sp_parse_compress(NULL); break;
		case COMPRESS: compress = sp_parse_compress(optarg); break;
		case ROOT:
			check_dir("--root", optarg);
			sp_modfile_search_set_root(&ms, optarg);
			break;
		case ARCHIVE:
		case MODULE_DIR:
			check_dir(c == ARCHIVE ? "--archive" : "--module-dir", optarg);
			if (sp_modfile_search_add_dir(&ms, optarg) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory");
			break;
		case 'f': follow = true; break;
		case MAX_DEPTH:
			if (sp_parse_u64(optarg, 65536, &v) < 0 || v == 0)
				sp_usage_error("invalid --max-depth '%s' (1 to 65536)", optarg);
			max_depth = (unsigned)v;
			break;
		case NO_FP: fp = false; break;
		case ENGINE:
			if (strcmp(optarg, "libunwind") == 0)
				use_lu = true;
			else if (strcmp(optarg, "stackpulse") != 0)
				sp_usage_error("invalid --engine '%s' (stackpulse or libunwind)", optarg);
			break;
		case MAX_RECORD:
			max_record = sp_parse_max_record(optarg);
			break;
		case ALLOW_EMPTY: allow_empty = true; break;
		case 'j': jobs = sp_parse_jobs(optarg); break;
		case STATS: stats = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	const char *input = sp_single_input(argc, argv, optind);
	const char *name = input ? input : "-";
	/* libunwind's engine steps on one thread: its state is not the workers' own. */
	if (use_lu)
		jobs = 1;

	/* Following a file opens it when it appears; a pipe needs no following. */
	if (follow && (!input || strcmp(input, "-") == 0))
		follow = false;
	int infd = follow ? sp_follow_input(input) : sp_open_input(input);
	int outfd = sp_open_output(output, true);
	struct sp_writer *w = sp_writer_new(outfd, output ? output : "-");
	if (w)
		sp_compress_output(w, compress);
	int nargs;
	char **args = sp_output_args(argc, argv, &nargs);
	struct sp_unwind_stage_options so = {
		.uo = { .root = ms.root, .module_dirs = ms.dirs, .nmodule_dirs = ms.ndirs,
			.max_depth = max_depth, .fp_fallback = fp },
		.engine = use_lu ? &libunwind_engine : NULL, .tool = "sp-unwind",
		.argc = nargs, .argv = args,
	};
	struct run run = { .allow_empty = allow_empty, .status = SP_EXIT_OK };
	struct sp_error err = { 0 };
	/* One job: no thread, the stage right here; more: the parallel driver's. */
	struct sp_unwind_stage *stage = w && jobs == 1 ? sp_unwind_stage_new(&so, w) : NULL;
	struct sp_unwind_par *par = w && jobs > 1 ?
		sp_unwind_par_new(&so, jobs, w, taken, &run, &err) : NULL;
	if (w && jobs > 1 && !par && err.code != SP_ERR_NOMEM)
		sp_die(SP_EXIT_FATAL, "%s", sp_error_message(&err));
	struct sp_reader *r = follow ? sp_reader_follow(input, &sp_interrupted, sp_note_warn, NULL)
				     : sp_reader_new(infd, name);
	if (!w || !(stage || par) || !r)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_reader_set_max_record(r, max_record);
	sp_reader_undecoded(r, 1ull << SP_R_SAMPLE);	/* read from their bytes */
	if (par)
		sp_reader_set_idle(r, flush_par, par);
	else
		sp_reader_set_idle(r, flush_out, w);
	if (follow) {
		struct sigaction sa = { .sa_handler = sp_on_signal };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}

	double start = sp_now();
	struct sp_record rec;
	enum sp_read_status rs;
	while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		const struct sp_header *h = sp_reader_header(r);
		if (rec.type == SP_R_HEADER && h->stage != SP_STAGE_RAW) {
			if (par && sp_unwind_par_finish(par, &err) < 0)
				goto refused;
			sp_warn("'%s': byte offset %llu, record %llu: the stream is already %s; "
				"sp-unwind reads raw streams from sp-capture",
				name, (unsigned long long)rec.offset,
				(unsigned long long)rec.index, sp_stage_name(h->stage));
			run.status = SP_EXIT_FATAL;
			goto done;
		}
		int rc = par ? sp_unwind_par_record(par, &rec, h, &err) :
			       sp_unwind_stage_record(stage, &rec, h, &err);
		if (rc < 0)
			goto refused;
		if (rc > 0)
			break;	/* with -j N, the writer stopped at a failed write */
		if (stage) {
			taken(&run, &rec, stage);
			if (sp_writer_failed(w))
				break;
		}
		if (follow && rec.type == SP_R_SUMMARY)
			break;
	}
	if (par && sp_unwind_par_finish(par, &err) < 0)
		goto refused;
	if (sp_report_input_end(r, rs, name, "unwound") != SP_EXIT_OK)
		run.status = SP_EXIT_PARTIAL;
	goto done;
refused:
	/* The stage refused a record, or memory ran out: what came before is written. */
	if (par)
		sp_unwind_par_finish(par, &err);
	if (err.code == SP_ERR_NOMEM)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_warn("%s", sp_error_message(&err));
	run.status = SP_EXIT_FATAL;
done:
	if (stats)
		print_stats(par ? sp_unwind_par_stage(par) : stage, sp_now() - start, jobs);
	if (sp_writer_close(w) < 0) {
		/* The reader went away (a failed sp-symbolize): its message is the one. */
		if (errno != EPIPE)
			sp_write_failed(errno);
		run.status = SP_EXIT_FATAL;
	}
	sp_reader_free(r);
	sp_unwind_par_free(par);
	sp_unwind_stage_free(stage);
	sp_modfile_search_release(&ms);
	free(args);
	if (infd >= 0 && infd != STDIN_FILENO)
		close(infd);
	return run.status;
}

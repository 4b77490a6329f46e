/*
 * sp-capture: samples running processes, or a command it launches, with
 * perf_event_open, and writes the raw stackpulse stream: registers, the
 * used part of a copy of the user stack and the kernel callchain of every
 * sample, with the process, thread and mapping events needed to interpret
 * them later, on this host or another.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stream/header.h"
#include "capture/recorder.h"
#include "stream/stream.h"
#include "tool.h"
#include "util/alloc.h"
#include "util/procfs.h"
#include "util/procns.h"

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* A fatal signal while targets are stopped: continue them, then die. */
static void on_fatal(int sig)
{
	sp_recorder_continue_targets();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void usage(void)
{
	printf("Usage: %s [options] -p PID[,PID...]\n"
	       "       %s [options] -- COMMAND [ARG...]\n"
	       "Sample processes with perf events and write a raw stackpulse stream.\n"
	       "\n"
	       "  -p, --pid PID[,PID...]    attach to running processes\n"
	       "  -o, --output FILE         write the stream to FILE (default: standard output)\n"
	       "  -F, --frequency HZ|max    samples per second per thread (default %u);\n"
	       "                            max: the kernel's current cap\n"
	       "      --max-rate            print the kernel's cap on -F and exit\n"
	       "      --stack-size BYTES    user stack copied per sample (default %u, at most\n"
	       "                            %u; K suffix for KiB; rounded up to a multiple of 8)\n"
	       "      --kernel              also record kernel callchains\n"
	       "      --inherit             follow threads and children created later\n"
	       "                            (default with a command)\n"
	       "      --no-inherit          do not (default with -p)\n"
	       "      --descendants         with -p, also attach every existing descendant\n"
	       "      --refresh-threads MS  look for new threads of the targets every MS ms\n"
	       "      --no-stop             do not stop a -p target while attaching\n"
	       "      --duration SECONDS    stop after SECONDS (a decimal number)\n"
	       "      --poll-ms MS          drain the buffers at least every MS ms (default 100)\n"
	       "      --mmap-pages N        ring buffer pages per CPU, a power of two\n"
	       "                            (default: room for 256 samples of the stack window)\n"
	       "      --start-timestamp-us N   metadata for the header\n"
	       "      --sample-interval-us N   metadata for the header\n"
	       "      --kallsyms-out FILE   save this host's /proc/kallsyms to FILE\n"
	       "      --archive DIR         keep the exact mapped files (build-id layout),\n"
	       "                            the perf maps and kallsyms in DIR\n"
	       "  -q, --quiet               no status line or closing summary\n"
	       "  -h, --help                show this help\n"
	       "  -V, --version             show the version\n"
	       "\n"
	       "The recording ends at --duration, on SIGINT, SIGTERM or SIGHUP, or when\n"
	       "every target has exited; the stream always ends with a summary record.\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, sp_progname, SP_DEFAULT_FREQUENCY, SP_DEFAULT_STACK_SIZE,
	       SP_MAX_STACK_SIZE);
}

struct cli {
	struct sp_recorder_options o;
	const char *output;
	const char *archive;
	const char *kallsyms_out;
	pid_t *pids;
	size_t npids, allocpids;
	char **command;
	bool quiet;
	int inherit;	/* -1: the default for the mode */
};

static void parse_pids(struct cli *c, const char *arg)
{
	char *copy = sp_xstrdup(arg), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (sp_parse_u64(tok, 4194304, &v) < 0 || v == 0)
			sp_usage_error("invalid pid '%s'", tok);
		if (SP_ALLOC_GROW(c->pids, c->npids + 1, c->allocpids) < 0)
			sp_die(SP_EXIT_FATAL, "out of memory");
		c->pids[c->npids++] = (pid_t)v;
	}
	free(copy);
}

static uint64_t parse_frequency(const char *arg)
{
	uint64_t cap = sp_max_sample_rate(), v;
	if (strcmp(arg, "max") == 0) {
		if (!cap)
			sp_die(SP_EXIT_FATAL, "cannot read /proc/sys/kernel/perf_event_max_sample_rate");
		return cap;
	}
	if (sp_parse_u64(arg, UINT32_MAX, &v) < 0 || v == 0)
		sp_usage_error("invalid frequency '%s': give a positive number of Hz, "
			       "at most the kernel's cap of %llu, or 'max'", arg,
			       (unsigned long long)cap);
	if (cap && v > cap)
		sp_usage_error("frequency %llu Hz is above the kernel's cap of %llu Hz "
			       "(kernel.perf_event_max_sample_rate); use -F max or lower -F",
			       (unsigned long long)v, (unsigned long long)cap);
	return v;
}

static uint32_t parse_stack_size(const char *arg)
{
	char buf[64];
	size_t n = strlen(arg);
	uint64_t mult = 1, v;
	if (n >= sizeof(buf))
		sp_usage_error("invalid stack size '%s'", arg);
	memcpy(buf, arg, n + 1);
	if (n > 0 && (buf[n - 1] == 'K' || buf[n - 1] == 'k')) {
		buf[n - 1] = '\0';
		mult = 1024;
	}
	if (sp_parse_u64(buf, UINT32_MAX, &v) < 0 || v == 0)
		sp_usage_error("invalid stack size '%s': give a positive number of bytes "
			       "(K suffix for KiB), at most %u", arg, SP_MAX_STACK_SIZE);
	v *= mult;
	if (v > SP_MAX_STACK_SIZE)
		sp_usage_error("stack size %llu is above the kernel's limit of %u bytes",
			       (unsigned long long)v, SP_MAX_STACK_SIZE);
	/* The kernel wants a multiple of 8: round up (65528 is one). */
	return (uint32_t)((v + 7) & ~7ull);
}

static int parse_ms(const char *arg, const char *what)
{
	uint64_t v;
	if (sp_parse_u64(arg, 3600000, &v) < 0 || v == 0)
		sp_usage_error("invalid %s '%s': give a positive number of milliseconds", what, arg);
	return (int)v;
}

static void parse_args(struct cli *c, int argc, char **argv)
{
	enum { MAX_RATE = 256, STACK_SIZE, KERNEL, INHERIT, NO_INHERIT, DESCENDANTS,
	       REFRESH, NO_STOP, DURATION, POLL_MS, MMAP_PAGES, START_TS, INTERVAL,
	       KALLSYMS_OUT, ARCHIVE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "freq", required_argument, NULL, 'F' },
		{ "max-rate", no_argument, NULL, MAX_RATE },
		{ "stack-size", required_argument, NULL, STACK_SIZE },
		{ "kernel", no_argument, NULL, KERNEL },
		{ "inherit", no_argument, NULL, INHERIT },
		{ "no-inherit", no_argument, NULL, NO_INHERIT },
		{ "descendants", no_argument, NULL, DESCENDANTS },
		{ "refresh-threads", required_argument, NULL, REFRESH },
		{ "no-stop", no_argument, NULL, NO_STOP },
		{ "duration", required_argument, NULL, DURATION },
		{ "poll-ms", required_argument, NULL, POLL_MS },
		{ "mmap-pages", required_argument, NULL, MMAP_PAGES },
		{ "start-timestamp-us", required_argument, NULL, START_TS },
		{ "sample-interval-us", required_argument, NULL, INTERVAL },
		{ "kallsyms-out", required_argument, NULL, KALLSYMS_OUT },
		{ "archive", required_argument, NULL, ARCHIVE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	uint64_t v;
	char *end;

	c->o.frequency = SP_DEFAULT_FREQUENCY;
	c->o.stack_size = SP_DEFAULT_STACK_SIZE;
	c->o.stop = true;
	c->o.poll_ms = 100;
	c->inherit = -1;
	/* '+': options end at the first non-option, the command. */
	while ((opt = getopt_long(argc, argv, "+p:o:F:qhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': parse_pids(c, optarg); break;
		case 'o': c->output = optarg; break;
		case 'F':
			c->o.frequency = parse_frequency(optarg);
			c->o.frequency_arg = optarg;
			break;
		case MAX_RATE: {
			uint64_t cap = sp_max_sample_rate();
			if (!cap)
				sp_die(SP_EXIT_FATAL, "cannot read /proc/sys/kernel/perf_event_max_sample_rate");
			printf("%llu\n", (unsigned long long)cap);
			exit(SP_EXIT_OK);
		}
		case STACK_SIZE: c->o.stack_size = parse_stack_size(optarg); break;
		case KERNEL: c->o.kernel = true; break;
		case INHERIT: c->inherit = 1; break;
		case NO_INHERIT: c->inherit = 0; break;
		case DESCENDANTS: c->o.descendants = true; break;
		case REFRESH: c->o.refresh_threads_ms = parse_ms(optarg, "--refresh-threads"); break;
		case NO_STOP: c->o.stop = false; break;
		case DURATION:
			errno = 0;
			c->o.duration_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(c->o.duration_s > 0) ||
			    !isfinite(c->o.duration_s) || c->o.duration_s > 31536000)
				sp_usage_error("invalid duration '%s': give a positive number of seconds",
					       optarg);
			break;
		case POLL_MS: c->o.poll_ms = parse_ms(optarg, "--poll-ms"); break;
		case MMAP_PAGES:
			if (sp_parse_u64(optarg, 1u << 20, &v) < 0 || v == 0 || (v & (v - 1)))
				sp_usage_error("invalid --mmap-pages '%s': give a power of two", optarg);
			c->o.mmap_pages = (unsigned)v;
			break;
		case START_TS:
			if (sp_parse_u64(optarg, UINT64_MAX, &c->o.start_timestamp_us) < 0)
				sp_usage_error("invalid --start-timestamp-us '%s'", optarg);
			c->o.has_start_timestamp = true;
			break;
		case INTERVAL:
			if (sp_parse_u64(optarg, UINT64_MAX, &c->o.sample_interval_us) < 0)
				sp_usage_error("invalid --sample-interval-us '%s'", optarg);
			c->o.has_sample_interval = true;
			break;
		case KALLSYMS_OUT: c->kallsyms_out = c->o.kallsyms_out = optarg; break;
		case ARCHIVE: c->archive = optarg; break;
		case 'q': c->quiet = true; break;
		case 'h': usage(); exit(SP_EXIT_OK);
		case 'V': exit(sp_show_version());
		default:
			exit(sp_bad_option());
		}
	}
	if (optind < argc)
		c->command = argv + optind;

	/* How the options combine, checked in one place. */
	if (c->npids && c->command)
		sp_usage_error("give either -p PID or a command, not both");
	if (!c->npids && !c->command)
		sp_usage_error("nothing to profile: give -p PID or -- COMMAND");
	if (c->o.descendants && !c->npids)
		sp_usage_error("--descendants applies to -p");
	c->o.inherit = c->inherit >= 0 ? c->inherit : c->command != NULL;
}

/* Copies /proc/kallsyms; warns when its addresses read as zero. */
static int save_kallsyms(const char *path)
{
	FILE *in = fopen("/proc/kallsyms", "re");
	if (!in) {
		sp_warn("cannot read '/proc/kallsyms': %s", strerror(errno));
		return -1;
	}
	FILE *out = fopen(path, "we");
	if (!out) {
		sp_warn("cannot create '%s': %s", path, strerror(errno));
		fclose(in);
		return -1;
	}
	char line[512];
	bool nonzero = false;
	unsigned long lines = 0;
	while (fgets(line, sizeof(line), in)) {
		if (strspn(line, "0") < 16)
			nonzero = true;
		fputs(line, out);
		lines++;
	}
	fclose(in);
	if (fclose(out) != 0) {
		sp_warn("cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	if (lines && !nonzero)
		sp_warn("'%s': every kallsyms address reads as zero (kernel.kptr_restrict); "
			"run as root or lower kernel.kptr_restrict to save usable kernel symbols",
			path);
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void status_line(struct sp_recorder *r, double elapsed, bool final)
{
	struct sp_recorder_stats s;
	sp_recorder_get_stats(r, &s);
	fprintf(stderr, "\r%s: %6.1fs  %llu samples  %llu lost  %.0f/s  %.1f MB%s",
		sp_progname, elapsed, (unsigned long long)s.samples,
		(unsigned long long)s.lost, elapsed > 0 ? (double)s.samples / elapsed : 0.0,
		(double)s.bytes / 1e6, final ? "\n" : "  ");
}

/*
 * A target in a container whose files this process may not read: its
 * samples are recorded, but not the build-ids that name its files.
 */
static void check_root(pid_t pid)
{
	char what[4200];
	if (sp_proc_root_check(pid, what, sizeof(what)) < 0)
		sp_warn("cannot read the files of process %d in its own mount namespace: "
			"'%s': %s (run sp-capture as root, or give it CAP_SYS_PTRACE and "
			"CAP_DAC_READ_SEARCH)", (int)pid, what, strerror(errno));
}

/*
 * Attaches every -p target (and with --descendants, their descendants).
 * Returns 0, or -1 after a message.
 */
static int attach_all(struct cli *c, struct sp_recorder *r)
{
	pid_t *all = c->pids;
	size_t n = c->npids;
	if (c->o.descendants) {
		pid_t *desc;
		size_t nd;
		if (sp_proc_descendants(c->pids, c->npids, &desc, &nd) < 0)
			sp_die(SP_EXIT_FATAL, "cannot list descendants: %s", strerror(errno));
		all = sp_xmalloc((n + nd) * sizeof(*all));
		memcpy(all, c->pids, n * sizeof(*all));
		memcpy(all + n, desc, nd * sizeof(*all));
		free(desc);
		for (size_t i = c->npids; i < c->npids + nd; i++)
			/* A descendant that exits meanwhile is not an error. */
			if (sp_recorder_attach(r, all[i]) < 0 && kill(all[i], 0) == 0)
				sp_warn("%s", sp_recorder_error(r));
	}
	int rc = 0;
	for (size_t i = 0; i < c->npids && rc == 0; i++)
		if (sp_recorder_attach(r, c->pids[i]) < 0) {
			sp_warn("%s", sp_recorder_error(r));
			rc = -1;
		} else {
			check_root(c->pids[i]);
		}
	if (all != c->pids)
		free(all);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	sp_tool_init(argv[0]);
	parse_args(&c, argc, argv);

	/* Many threads need many descriptors: one per thread and CPU. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (c.archive && !(c.o.archive = sp_archive_new(c.archive)))
		sp_die(SP_EXIT_FATAL, "cannot create the archive '%s': %s", c.archive, strerror(errno));
	int outfd = sp_open_output(c.output, true);
	c.o.command_stdout_to_stderr = outfd == STDOUT_FILENO;
	struct sp_writer *w = sp_writer_new(outfd, c.output ? c.output : "-");
	struct sp_recorder *r = w ? sp_recorder_new(&c.o, w) : NULL;
	if (!r)
		sp_die(SP_EXIT_FATAL, "out of memory");

	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct sigaction fatal = { .sa_handler = on_fatal };
	int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGQUIT };
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(*fatal_signals); i++)
		sigaction(fatal_signals[i], &fatal, NULL);

	pid_t child = -1;
	int status = SP_EXIT_OK;
	if (c.command && sp_recorder_launch(r, c.command, &child) < 0) {
		sp_warn("%s", sp_recorder_error(r));
		status = SP_EXIT_FATAL;
	} else if (!c.command && attach_all(&c, r) < 0) {
		status = SP_EXIT_FATAL;
	}
	if (status == SP_EXIT_OK && sp_recorder_kernel_fell_back(r))
		sp_warn("kernel sampling was denied (perf_event_paranoid is %d); recording "
			"user frames only (kernel_enabled is false in the stream)",
			sp_perf_paranoid());
	if (status == SP_EXIT_OK && sp_recorder_start(r, argc, argv) < 0) {
		sp_warn("%s", sp_recorder_error(r));
		status = SP_EXIT_FATAL;
	}
	if (status != SP_EXIT_OK) {
		sp_recorder_free(r);
		sp_writer_close(w);
		free(c.pids);
		sp_archive_free(c.o.archive);
		return status;
	}

	bool live = !c.quiet && isatty(STDERR_FILENO);
	double t0 = mono_s(), last_status = 0, last_refresh = t0;
	for (;;) {
		int timeout = c.o.poll_ms;
		double now = mono_s();
		if (c.o.duration_s > 0) {
			double left = t0 + c.o.duration_s - now;
			if (left <= 0)
				break;
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (live && timeout > 250)
			timeout = 250;
		int k = sp_recorder_poll(r, timeout);
		if (k < 0) {
			sp_warn("%s; recording stopped", sp_recorder_error(r));
			status = SP_EXIT_FATAL;
			break;
		}
		if (k == 0 || stop_signal)
			break;
		now = mono_s();
		if (c.o.refresh_threads_ms && (now - last_refresh) * 1000 >= c.o.refresh_threads_ms) {
			last_refresh = now;
			if (sp_recorder_refresh_threads(r) < 0)
				sp_warn("%s", sp_recorder_error(r));
		}
		if (live && now - last_status >= 0.25) {
			last_status = now;
			status_line(r, now - t0, false);
		}
	}
	if (status == SP_EXIT_OK && sp_recorder_finish(r) < 0) {
		sp_warn("%s", sp_recorder_error(r));
		status = SP_EXIT_FATAL;
	}
	if (live)
		status_line(r, mono_s() - t0, true);
	int cs = sp_recorder_command_status(r);
	if (child > 0 && cs >= 0 && !c.quiet) {
		if (WIFEXITED(cs))
			sp_warn("command '%s' exited with status %d", c.command[0], WEXITSTATUS(cs));
		else if (WIFSIGNALED(cs))
			sp_warn("command '%s' was killed by signal %d (%s)", c.command[0],
				WTERMSIG(cs), strsignal(WTERMSIG(cs)));
	}
	if (c.kallsyms_out && save_kallsyms(c.kallsyms_out) < 0 && status == SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
	sp_recorder_free(r);
	if (sp_writer_close(w) < 0 && status == SP_EXIT_OK) {
		sp_warn("cannot write to '%s': %s", c.output ? c.output : "-", strerror(errno));
		status = SP_EXIT_FATAL;
	}
	free(c.pids);
	sp_archive_free(c.o.archive);
	return status;
}

/* SPDX-License-Identifier: MIT
 * sp-capture: samples running processes, or a command it launches, with
 * perf_event_open, and writes the raw stackpulse stream: registers, the
 * used part of a copy of the user stack and the kernel callchain of every
 * sample, with the process, thread and mapping events needed to interpret
 * them later, on this host or another.
 *
 * The recording goes through libstackpulse's recorder (sp_recorder_new(3)),
 * made through the tools' door of api/internal.h with the options only
 * the tool has; -t, --refresh-threads and the status line use the capture
 * handle behind it.
 */
#include <dirent.h>
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

#include "api/internal.h"
#include "stream/advice.h"
#include "stream/header.h"
#include "capture/recorder.h"
#include "stream/stream.h"
#include "stream/zstd.h"
#include "tool.h"
#include "unwind/stage.h"
#include "util/alloc.h"
#include "util/procfs.h"
#include "util/procns.h"
#include "util/strbuf.h"

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* A fatal signal while targets are stopped: continue them, then die. */
static void on_fatal(int sig)
{
	sp_capture_continue_targets();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void usage(void)
{
	printf("Usage: %s [options] -p PID[,PID...]\n"
	       "       %s [options] -t TID[,TID...]\n"
	       "       %s [options] --name NAME | --pid-file FILE\n"
	       "       %s [options] -- COMMAND [ARG...]\n"
	       "       %s [options] -a | -C CPUS\n"
	       "Sample processes with perf events and write a raw stackpulse stream.\n"
	       "\n"
	       "  -p, --pid PID[,PID...]    attach to running processes (a thread id:\n"
	       "                            its whole process)\n"
	       "  -t, --tid TID[,TID...]    attach to exactly these threads\n"
	       "      --name NAME           attach to every process whose command name or\n"
	       "                            executable's name is NAME (as pgrep -x)\n"
	       "      --pid-file FILE       attach to the process whose pid FILE holds\n"
	       "  -a, --all-cpus            record every process on every CPU (needs\n"
	       "                            kernel.perf_event_paranoid <= 0 or CAP_PERFMON);\n"
	       "                            idle CPUs show as swapper;[idle]\n"
	       "  -C, --cpu CPUS            with or without -a: only these CPUs, a list\n"
	       "                            as 0,2-3\n"
	       "  -o, --output FILE         write the stream to FILE (default: standard output)\n"
	       "  -z, --compress[=LEVEL]    write the stream in zstd frames at LEVEL (%d to %d,\n"
	       "                            default %d); every tool reads it as it is\n"
	       "  -F, --frequency HZ|max    samples per second per thread (default %u);\n"
	       "                            max: the kernel's current cap\n"
	       "      --freq HZ|max         the same as --frequency\n"
	       "      --max-rate            print the kernel's cap on -F and exit\n"
	       "  -e, --event EVENT[,EVENT...]  sample on these events (default cpu-clock):\n"
	       "                            cpu-clock, task-clock, page-faults (faults),\n"
	       "                            context-switches (cs), cpu-migrations\n"
	       "                            (migrations), cycles, instructions, or a\n"
	       "                            tracepoint SUBSYSTEM:NAME (sched:sched_switch)\n"
	       "  -c, --count PERIOD        a sample every PERIOD events, not -F's rate\n"
	       "                            (a tracepoint's default is every hit)\n"
	       "      --event-fallback      use cpu-clock for a hardware event this\n"
	       "                            machine cannot count (no PMU)\n"
	       "      --stack-size BYTES    user stack copied per sample (default %u, at most\n"
	       "                            %u; K suffix for KiB; rounded up to a multiple of 8)\n"
	       "      --stack-size auto     calibrate: copy the most at first, then the\n"
	       "                            smallest window that kept 99.5%% of the stacks\n"
	       "                            complete\n"
	       "      --calibrate SECONDS   with --stack-size auto: calibrate for at least\n"
	       "                            SECONDS and 300 samples, at most 6 x SECONDS\n"
	       "                            (default 0.5)\n"
	       "      --call-graph MODE     how user stacks are recorded: dwarf (the default:\n"
	       "                            a copy of the stack, unwound later; dwarf,SIZE\n"
	       "                            sets its size as --stack-size) or fp (the\n"
	       "                            kernel walks frame pointers: no copy, a tiny\n"
	       "                            stream, complete only for code built with frame\n"
	       "                            pointers; there is no auto mode)\n"
	       "      --off-cpu             also record where threads wait: a stack at each\n"
	       "                            switch-out, weighted by the time until the thread\n"
	       "                            runs again (event \"off-cpu\"; see sp-fold --wall)\n"
	       "      --kernel              also record kernel callchains\n"
	       "      --inherit             follow threads and children created later\n"
	       "                            (the default, but with -t)\n"
	       "      --no-inherit          do not\n"
	       "      --descendants         with -p, also attach every existing descendant\n"
	       "      --refresh-threads MS  look for new threads of the targets every MS ms\n"
	       "      --stop                stop each target with SIGSTOP while attaching\n"
	       "      --no-stop             do not (the default: no signal is sent)\n"
	       "      --duration SECONDS    stop after SECONDS (a decimal number)\n"
	       "      --poll-ms MS          drain the buffers at least every MS ms (default 100)\n"
	       "      --mmap-pages N        ring buffer pages per CPU, a power of two\n"
	       "                            (default: room for 256 samples of the stack window)\n"
	       "      --start-timestamp-us N   metadata for the header\n"
	       "      --sample-interval-us N   metadata for the header\n"
	       "      --kallsyms-out FILE   save this host's /proc/kallsyms to FILE\n"
	       "      --archive DIR         keep the exact mapped files (build-id layout),\n"
	       "                            the perf maps and kallsyms in DIR\n"
	       "      --force               record at a rate or with a ring buffer that this\n"
	       "                            machine is not expected to sustain\n"
	       "      --allow-empty         exit 0 even when no sample was taken\n"
	       "  -q, --quiet               no status line or closing summary\n"
	       "  -h, --help                show this help\n"
	       "  -V, --version             show the version\n"
	       "\n"
	       "The recording ends at --duration, on SIGINT, SIGTERM or SIGHUP, or when\n"
	       "every target has exited (with -a, only at --duration or on a signal);\n"
	       "the stream always ends with a summary record.\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, sp_progname, sp_progname, sp_progname, sp_progname,
	       sp_zstd_min_level(), sp_zstd_max_level(), SP_ZSTD_DEFAULT_LEVEL,
	       SP_DEFAULT_FREQUENCY, SP_DEFAULT_STACK_SIZE, SP_MAX_STACK_SIZE);
}

struct cli {
	struct sp_capture_options o;
	const char *output;
	const char *archive;
	const char *kallsyms_out;
	pid_t *pids;
	size_t npids, allocpids;
	pid_t *tids;		/* -t */
	size_t ntids, alloctids;
	const char *name;	/* --name */
	const char *pid_file;
	char **command;
	bool quiet;
	int compress;		/* -z: the zstd level, 0 for none */
	bool force;		/* --force: a rate or ring that will not keep up */
	bool allow_empty;	/* --allow-empty: 0 samples is not an error */
	bool stack_size_given;	/* --stack-size or --call-graph dwarf,SIZE */
	bool stack_auto;	/* --stack-size auto */
	double calibrate_s;	/* --calibrate; 0: not given */
	bool by_period;		/* samples come every so many events, not at -F's rate */
	int inherit;	/* -1: the default for the mode */
	bool all_cpus;		/* -a, or -C alone */
	int *cpus;		/* -C */
	size_t ncpus, alloccpus;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static void add_id(pid_t **ids, size_t *n, size_t *alloc, pid_t id)
{
	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i] == id)
			return;
	if (SP_ALLOC_GROW(*ids, *n + 1, *alloc) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	(*ids)[(*n)++] = id;
}

static void parse_ids(pid_t **ids, size_t *n, size_t *alloc, const char *arg, const char *what)
{
	char *copy = sp_xstrdup(arg), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (sp_parse_u64(tok, 4194304, &v) < 0 || v == 0)
			sp_usage_error("invalid %s '%s'", what, tok);
		add_id(ids, n, alloc, (pid_t)v);
	}
	free(copy);
}

static uint64_t parse_frequency(const char *arg)
{
	uint64_t cap = sp_kernel_max_sample_rate(), v;
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

/*
 * --call-graph: "dwarf", "dwarf,SIZE" or "fp".  There is no "auto" (a copy
 * only when the frame-pointer chain is incomplete): the kernel cannot tell
 * at sample time whether its walk reached the thread's entry.
 */
static void parse_call_graph(struct cli *c, const char *arg)
{
	if (strcmp(arg, "fp") == 0) {
		c->o.call_graph_fp = true;
		return;
	}
	if (strcmp(arg, "dwarf") == 0 || strncmp(arg, "dwarf,", 6) == 0) {
		c->o.call_graph_fp = false;
		if (arg[5] == ',') {
			c->o.stack_size = parse_stack_size(arg + 6);
			c->stack_size_given = true;
			c->stack_auto = false;
		}
		return;
	}
	if (strcmp(arg, "auto") == 0)
		sp_usage_error("--call-graph auto is not offered: the kernel cannot tell at sample "
			       "time whether its frame-pointer walk reached the thread's entry, so "
			       "it cannot copy the stack only when the chain is incomplete; give "
			       "--call-graph fp or dwarf");
	sp_usage_error("invalid --call-graph '%s': give dwarf, dwarf,SIZE or fp", arg);
}

static int parse_ms(const char *arg, const char *what)
{
	uint64_t v;
	if (sp_parse_u64(arg, 3600000, &v) < 0 || v == 0)
		sp_usage_error("invalid %s '%s': give a positive number of milliseconds", what, arg);
	return (int)v;
}

/*
 * What one sample costs the sampled thread, in nanoseconds: the kernel
 * copies the stack window into the ring, then sp-capture copies it out.
 * A model (about 2 us, and 4 bytes a nanosecond), not a measurement.
 */
static double sample_cost_ns(const struct cli *c)
{
	return 2000.0 + (double)c->o.stack_size / 4.0;
}

/*
 * Refuses a rate whose stack copies would take more than a tenth of the
 * sampled threads' time: at -F max the target ran ~290 times slower.
 */
static void check_rate(const struct cli *c)
{
	double cost = sample_cost_ns(c), share = (double)c->o.frequency * cost / 1e9;
	uint64_t sustained = (uint64_t)(0.10 * 1e9 / cost);
	if (share <= 0.10)
		return;
	char slow[64];
	if (share < 0.9)
		snprintf(slow, sizeof(slow), "about %.1fx slower", 1.0 / (1.0 - share));
	else
		snprintf(slow, sizeof(slow), "more than 10x slower");
	sp_usage_error("-F %s is %llu Hz: each sample copies %u bytes of stack (about %.0f us), "
		       "%.0f%% of a sampled thread's time, so the target would run %s; this "
		       "machine sustains about %llu Hz: give -F %llu or less, or --force",
		       c->o.frequency_arg ? c->o.frequency_arg : "", (unsigned long long)c->o.frequency,
		       c->o.stack_size, cost / 1000.0, share * 100.0, slow,
		       (unsigned long long)sustained, (unsigned long long)sustained);
}

/*
 * Refuses an --mmap-pages ring that cannot hold the samples taken while
 * sp-capture is being woken (5 ms at the rate, at least 2): every one
 * of them would be lost.
 */
static void check_ring(const struct cli *c)
{
	if (!c->o.mmap_pages)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t sample = (uint64_t)c->o.stack_size + 512, bytes = (uint64_t)c->o.mmap_pages * page;
	uint64_t need = c->o.frequency / 200 > 2 ? c->o.frequency / 200 : 2;
	if (bytes / sample >= need)
		return;
	uint64_t pages = 1;
	while (pages * page < need * sample)
		pages *= 2;
	sp_usage_error("--mmap-pages %u (%llu KiB a CPU) holds %llu samples of the %u-byte stack "
		       "window, and at %llu Hz it must hold %llu: give --mmap-pages %llu or more, "
		       "a smaller --stack-size, or --force", c->o.mmap_pages,
		       (unsigned long long)(bytes / 1024), (unsigned long long)(bytes / sample),
		       c->o.stack_size, (unsigned long long)c->o.frequency,
		       (unsigned long long)need, (unsigned long long)pages);
}

/*
 * -C: a list of CPUs as perf takes it, "0,2-3", each one online; the
 * lists of several -C add up.
 */
static void parse_cpus(struct cli *c, const char *arg)
{
	int online[1024];
	int nonline = sp_online_cpus(online, 1024);
	char *copy = sp_xstrdup(arg), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t a, b;
		if (dash)
			*dash = '\0';
		if (sp_parse_u64(tok, 1023, &a) < 0 || (dash && sp_parse_u64(dash + 1, 1023, &b) < 0))
			sp_usage_error("invalid CPU list '%s': give CPU numbers and ranges, as 0,2-3",
				       arg);
		if (!dash)
			b = a;
		if (b < a)
			sp_usage_error("invalid CPU range '%s-%s' in '%s': give the lower CPU first",
				       tok, dash + 1, arg);
		for (uint64_t cpu = a; cpu <= b; cpu++) {
			bool on = false;
			for (int i = 0; i < nonline && !on; i++)
				on = online[i] == (int)cpu;
			if (!on)
				sp_usage_error("CPU %llu of '%s' is not online (the online CPUs are in "
					       "/sys/devices/system/cpu/online)",
					       (unsigned long long)cpu, arg);
			bool have = false;
			for (size_t i = 0; i < c->ncpus && !have; i++)
				have = c->cpus[i] == (int)cpu;
			if (have)
				continue;
			c->cpus = sp_xrealloc(c->cpus, (c->ncpus + 1) * sizeof(*c->cpus));
			c->cpus[c->ncpus++] = (int)cpu;
		}
	}
	free(copy);
}

/* -e: a list of events, each parsed as the library parses it. */
static void parse_events(struct cli *c, const char *arg)
{
	char *copy = sp_xstrdup(arg), *save = NULL;
	c->o.nevents = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct sp_error err = { 0 };
		struct sp_event *ev = &c->o.events[c->o.nevents];
		if (c->o.nevents == SP_MAX_EVENTS)
			sp_usage_error("too many events in -e '%s': at most %d", arg, SP_MAX_EVENTS);
		if (sp_event_parse(tok, ev, &err) < 0) {
			if (err.code == SP_ERR_INVALID)
				sp_usage_error("%s", sp_error_message(&err));
			sp_die(SP_EXIT_FATAL, "%s", sp_error_message(&err));
		}
		for (size_t i = 0; i < c->o.nevents; i++)
			if (strcmp(c->o.events[i].name, ev->name) == 0)
				sp_usage_error("event '%s' is given twice in -e '%s'", ev->name, arg);
		c->o.nevents++;
	}
	free(copy);
	if (c->o.nevents == 0)
		sp_usage_error("no event in -e '%s': known events are %s", arg,
			       sp_event_known_names());
}

static void parse_args(struct cli *c, int argc, char **argv)
{
	enum { MAX_RATE = 256, STACK_SIZE, KERNEL, INHERIT, NO_INHERIT, DESCENDANTS,
	       REFRESH, NO_STOP, DURATION, POLL_MS, MMAP_PAGES, START_TS, INTERVAL,
	       KALLSYMS_OUT, ARCHIVE, NAME, PID_FILE, STOP, FORCE, ALLOW_EMPTY,
	       CALL_GRAPH, EVENT_FALLBACK, OFF_CPU, CALIBRATE, COMPRESS };
	bool stop_given = false;
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, NAME },
		{ "pid-file", required_argument, NULL, PID_FILE },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "stop", no_argument, NULL, STOP },
		{ "output", required_argument, NULL, 'o' },
		{ "compress", optional_argument, NULL, COMPRESS },
		{ "frequency", required_argument, NULL, 'F' },
		{ "freq", required_argument, NULL, 'F' },
		{ "max-rate", no_argument, NULL, MAX_RATE },
		{ "event", required_argument, NULL, 'e' },
		{ "count", required_argument, NULL, 'c' },
		{ "event-fallback", no_argument, NULL, EVENT_FALLBACK },
		{ "stack-size", required_argument, NULL, STACK_SIZE },
		{ "calibrate", required_argument, NULL, CALIBRATE },
		{ "kernel", no_argument, NULL, KERNEL },
		{ "off-cpu", no_argument, NULL, OFF_CPU },
		{ "call-graph", required_argument, NULL, CALL_GRAPH },
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
		{ "force", no_argument, NULL, FORCE },
		{ "allow-empty", no_argument, NULL, ALLOW_EMPTY },
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
	c->o.stop = false;
	c->o.poll_ms = 100;
	c->inherit = -1;
	/* '+': options end at the first non-option, the command. */
	while ((opt = getopt_long(argc, argv, "+p:t:o:zF:aC:e:c:qhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': parse_ids(&c->pids, &c->npids, &c->allocpids, optarg, "pid"); break;
		case 't': parse_ids(&c->tids, &c->ntids, &c->alloctids, optarg, "tid"); break;
		case NAME: c->name = optarg; break;
		case PID_FILE: c->pid_file = optarg; break;
		case STOP: c->o.stop = stop_given = true; break;
		case 'a': c->all_cpus = true; break;
		case 'C': parse_cpus(c, optarg); break;
		case 'o': c->output = optarg; break;
		case 'z': c->compress = SP_ZSTD_DEFAULT_LEVEL; break;
		case COMPRESS: c->compress = sp_parse_compress(optarg); break;
		case 'F':
			c->o.frequency = parse_frequency(optarg);
			c->o.frequency_arg = optarg;
			c->o.frequency_given = true;
			break;
		case 'e': parse_events(c, optarg); break;
		case 'c':
			if (sp_parse_u64(optarg, UINT64_MAX >> 1, &v) < 0 || v == 0)
				sp_usage_error("invalid -c '%s': give a positive number of events "
					       "between samples", optarg);
			c->o.period = v;
			break;
		case EVENT_FALLBACK: c->o.event_fallback = true; break;
		case MAX_RATE: {
			uint64_t cap = sp_kernel_max_sample_rate();
			if (!cap)
				sp_die(SP_EXIT_FATAL, "cannot read /proc/sys/kernel/perf_event_max_sample_rate");
			printf("%llu\n", (unsigned long long)cap);
			exit(SP_EXIT_OK);
		}
		case STACK_SIZE:
			c->stack_auto = strcmp(optarg, "auto") == 0;
			c->o.stack_size = c->stack_auto ? SP_MAX_STACK_SIZE : parse_stack_size(optarg);
			c->stack_size_given = true;
			break;
		case CALIBRATE:
			errno = 0;
			c->calibrate_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(c->calibrate_s > 0) ||
			    c->calibrate_s > 600)
				sp_usage_error("invalid --calibrate '%s': give a positive number of "
					       "seconds, at most 600", optarg);
			break;
		case CALL_GRAPH: parse_call_graph(c, optarg); break;
		case KERNEL: c->o.kernel = true; break;
		case OFF_CPU: c->o.off_cpu = true; break;
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
			if (sp_parse_u64(optarg, UINT64_MAX, &v) < 0 || v == 0 || (v & (v - 1)))
				sp_usage_error("invalid --mmap-pages '%s': give a power of two", optarg);
			if (v > 1u << 20)
				sp_usage_error("--mmap-pages %s is above the limit of %u pages a CPU",
					       optarg, 1u << 20);
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
		case FORCE: c->force = true; break;
		case ALLOW_EMPTY: c->allow_empty = true; break;
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
	int modes = !!c->npids + !!c->ntids + !!c->name + !!c->pid_file;
	/* -C alone records those CPUs system-wide, as perf record -C does. */
	c->all_cpus = c->all_cpus || c->ncpus;
	if (c->all_cpus && (modes || c->command))
		sp_usage_error("%s records every process: drop %s, or drop %s to profile "
			       "only %s", c->ncpus ? "-C" : "-a",
			       c->command ? "the command" : c->npids ? "-p" : c->ntids ? "-t" :
			       c->name ? "--name" : "--pid-file", c->ncpus ? "-C (and -a)" : "-a",
			       c->command ? "the command" : "the processes given");
	if (c->all_cpus && (c->o.descendants || stop_given || c->o.refresh_threads_ms))
		sp_usage_error("%s applies to the processes given, not to -a",
			       c->o.descendants ? "--descendants" : stop_given ? "--stop" :
			       "--refresh-threads");
	modes += c->all_cpus;
	if (modes && c->command)
		sp_usage_error("give either -p PID or a command, not both (nor -t, --name "
			       "or --pid-file with a command)");
	if (modes > 1)
		sp_usage_error("give one of -p PID, -t TID, --name NAME and --pid-file FILE");
	modes += !!c->command;
	if (modes == 0)
		sp_usage_error("nothing to profile: give -p PID, -t TID, --name NAME, "
			       "--pid-file FILE, -a or -- COMMAND");
	if (c->o.descendants && (c->ntids || c->command))
		sp_usage_error("--descendants applies to -p, --name and --pid-file");
	if (c->o.stop && c->command)
		sp_usage_error("--stop applies to running processes, not to a command");
	if (c->o.call_graph_fp && c->stack_auto)
		sp_usage_error("--stack-size auto applies to --call-graph dwarf: with fp no stack "
			       "is copied, so there is no window to choose");
	if (c->calibrate_s && !c->stack_auto)
		sp_usage_error("--calibrate applies to --stack-size auto");
	if (c->o.call_graph_fp && c->stack_size_given)
		sp_usage_error("--stack-size applies to --call-graph dwarf: with fp no stack is copied");
	if (c->o.call_graph_fp)
		c->o.stack_size = 0;
	if (c->o.off_cpu && c->o.nevents >= SP_MAX_EVENTS)
		sp_usage_error("--off-cpu takes one of the %d events a recording may have: "
			       "give at most %d with -e", SP_MAX_EVENTS, SP_MAX_EVENTS - 1);
	if (c->o.period && c->o.frequency_given)
		sp_usage_error("give either -c PERIOD or -F HZ, not both");
	/* The rate checks know -F's rate; tracepoints sample every hit unless -F says. */
	bool tp_only = c->o.nevents > 0;
	for (size_t i = 0; i < c->o.nevents; i++)
		tp_only = tp_only && c->o.events[i].kind == SP_EVENT_TRACEPOINT;
	c->by_period = c->o.period || (tp_only && !c->o.frequency_given);
	/* -t picks threads: the ones they create are not asked for. */
	c->o.inherit = c->inherit >= 0 ? c->inherit : !c->ntids;
	c->o.system_wide = c->all_cpus;
	c->o.cpu_list = c->cpus;
	c->o.ncpu_list = (int)c->ncpus;
	if (!c->force && !c->by_period) {
		check_rate(c);
		check_ring(c);
	}
}

/* -p takes thread ids too: each stands for its whole process. */
static void resolve_pids(struct cli *c)
{
	pid_t *ids = c->pids;
	size_t n = c->npids;
	c->pids = NULL;
	c->npids = c->allocpids = 0;
	for (size_t i = 0; i < n; i++) {
		pid_t tgid = sp_proc_tgid(ids[i]);
		if (tgid > 0 && tgid != ids[i]) {
			/* sp-stat's words: it finds the thread id in the header's args. */
			struct sp_finding f;
			sp_finding_pid_is_thread(&f, (uint64_t)ids[i], (uint64_t)tgid);
			sp_warn("%s; %s", f.what, f.fix);
		}
		/* One that does not exist is reported when attaching. */
		add_id(&c->pids, &c->npids, &c->allocpids, tgid > 0 ? tgid : ids[i]);
	}
	free(ids);
}

/* --pid-file: the first number in FILE. */
static void read_pid_file(struct cli *c)
{
	FILE *f = fopen(c->pid_file, "re");
	if (!f)
		sp_die(SP_EXIT_FATAL, "cannot read the pid file '%s': %s (give the file the "
		       "service writes its pid to)", c->pid_file, strerror(errno));
	char line[64];
	size_t n = fread(line, 1, sizeof(line), f);
	fclose(f);
	pid_t pid = sp_pidfile_parse(line, n);
	if (pid <= 0)
		sp_die(SP_EXIT_FATAL, "the pid file '%s' does not hold a pid (it should begin "
		       "with one, as a service's pid file does)", c->pid_file);
	add_id(&c->pids, &c->npids, &c->allocpids, pid);
}

/* A process's command name and executable's base name ("" when hidden). */
static void proc_names(pid_t pid, char *comm, size_t ncomm, char *exe, size_t nexe)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	comm[0] = exe[0] = '\0';
	if (f) {
		if (fgets(comm, (int)ncomm, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	char buf[4096];
	if (sp_proc_exe(pid, buf, sizeof(buf)) == 0) {
		sp_path_strip_deleted(buf);
		const char *base = strrchr(buf, '/');
		base = base ? base + 1 : buf;
		size_t n = strlen(base);
		if (n >= nexe)
			n = nexe - 1;
		memcpy(exe, base, n);
		exe[n] = '\0';
	}
}

/*
 * --name: every process but this one whose command name or executable's
 * base name is NAME.  None: the message lists the names that come close.
 */
static void find_by_name(struct cli *c)
{
	DIR *d = opendir("/proc");
	if (!d)
		sp_die(SP_EXIT_FATAL, "cannot list /proc: %s", strerror(errno));
	struct sp_buf near = SP_BUF_INIT;
	int nnear = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		char comm[64], exe[256];
		proc_names(pid, comm, sizeof(comm), exe, sizeof(exe));
		if (strcmp(comm, c->name) == 0 || strcmp(exe, c->name) == 0) {
			add_id(&c->pids, &c->npids, &c->allocpids, pid);
		} else if (nnear < 8 && (strcasestr(comm, c->name) || strcasestr(exe, c->name) ||
					 (comm[0] && strcasestr(c->name, comm)))) {
			sp_buf_addf(&near, "%s%s (%d)", nnear ? ", " : "",
				       exe[0] ? exe : comm, (int)pid);
			nnear++;
		}
	}
	closedir(d);
	if (c->npids == 0)
		sp_die(SP_EXIT_FATAL, "no process is named '%s' (the command name or the "
		       "executable's, exactly, as pgrep -x): %s%s", c->name,
		       nnear ? "close are " : "none comes close; check the name with ps -e",
		       nnear ? near.p : "");
	sp_buf_release(&near);
	qsort(c->pids, c->npids, sizeof(*c->pids), cmp_pid);
	if (c->npids > 1)
		sp_warn("%zu processes are named '%s': attaching to all of them", c->npids,
			c->name);
}

/* -t: the threads, grouped by their process. */
static int attach_tids(struct cli *c, struct sp_capture *r)
{
	pid_t *tg = sp_xmalloc(c->ntids * sizeof(*tg));
	for (size_t i = 0; i < c->ntids; i++)
		if ((tg[i] = sp_proc_tgid(c->tids[i])) < 0) {
			sp_warn("no thread %d: it does not exist or has ended (list a process's "
				"threads with ls /proc/PID/task)", (int)c->tids[i]);
			free(tg);
			return -1;
		}
	pid_t *group = sp_xmalloc(c->ntids * sizeof(*group));
	int rc = 0;
	for (size_t i = 0; i < c->ntids && rc == 0; i++) {
		size_t n = 0;
		bool first = true;
		for (size_t j = 0; j < c->ntids; j++) {
			if (tg[j] != tg[i])
				continue;
			first = first && j >= i;
			group[n++] = c->tids[j];
		}
		if (first && sp_capture_attach_threads(r, tg[i], group, n) < 0) {
			sp_warn("%s", sp_capture_error(r));
			rc = -1;
		}
	}
	free(group);
	free(tg);
	return rc;
}

static const char *kallsyms_hider(void);

/*
 * --kallsyms-out is saved after the recording: a path that cannot be
 * written is found before it, not after minutes of recording.
 */
static void check_kallsyms_out(const char *path)
{
	char *dir = sp_xstrdup(path), *slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir] = '\0';
	int rc = access(path, W_OK) == 0 ? 0 :
		 errno == ENOENT ? access(slash ? dir : ".", W_OK | X_OK) : -1;
	if (rc < 0)
		sp_die(SP_EXIT_FATAL, "cannot create the --kallsyms-out file '%s': %s", path,
		       strerror(errno));
	free(dir);
}

/* Copies /proc/kallsyms; warns when its addresses read as zero. */
static int save_kallsyms(const char *path)
{
	FILE *in = fopen("/proc/kallsyms", "re");
	if (!in) {
		sp_warn("cannot read '/proc/kallsyms': %s", strerror(errno));
		return -1;
	}
	/* Written as the recording is: a file it replaces is kept as FILE.old. */
	FILE *out = sp_extra_open(path, true);
	if (!out) {
		sp_warn("cannot create the --kallsyms-out file '%s': %s", path, strerror(errno));
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
	int read_err = ferror(in) ? errno : 0;
	fclose(in);
	/* A copy cut short by a read error is no kallsyms: the old file stays. */
	if (sp_extra_close(out, !read_err) != 0) {
		sp_warn("cannot write the --kallsyms-out file '%s': %s", path, strerror(errno));
		return -1;
	}
	if (read_err) {
		sp_warn("cannot read '/proc/kallsyms': %s", strerror(read_err));
		return -1;
	}
	if (lines && !nonzero)
		sp_warn("'%s': every kallsyms address reads as zero (%s); run as root or lower "
			"it to save usable kernel symbols", path, kallsyms_hider());
	return 0;
}

/*
 * The setting that hides kallsyms addresses from this user: with
 * kernel.kptr_restrict 0 the kernel shows them to whoever may use perf
 * kernel events, so perf_event_paranoid above 1 is the one that applies.
 */
static const char *kallsyms_hider(void)
{
	static char what[64];
	int64_t k = 1;
	sp_read_i64_file("/proc/sys/kernel/kptr_restrict", &k);
	if (k == 0)
		snprintf(what, sizeof(what), "kernel.perf_event_paranoid is %d", sp_perf_paranoid());
	else
		snprintf(what, sizeof(what), "kernel.kptr_restrict is %lld", (long long)k);
	return what;
}

/*
 * The recorder's last error (sp_errmsg(-1)), or a write error on the
 * output told as every tool tells it; either way the recording ends
 * there, wherever the pipe's reader went away (at the header, at a poll
 * or at the last flush), and the message says so.
 */
static void recorder_failed(struct sp_writer *w)
{
	if (!sp_writer_failed(w) || sp_writer_flush(w) == 0) {
		sp_warn("%s; recording stopped", sp_errmsg(-1));
		return;
	}
	sp_write_failed(errno);
	sp_warn("recording stopped");
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The status: redrawn in place on a terminal (live), else written once at
 * the end as the closing summary.  With --duration, the time is "elapsed
 * of duration".
 */
static void status_line(const struct cli *c, struct sp_capture *r, double elapsed, bool live,
			bool final)
{
	struct sp_capture_stats s;
	char of[32] = "";
	sp_capture_get_stats(r, &s);
	if (c->o.duration_s > 0)
		snprintf(of, sizeof(of), " of %.1fs", c->o.duration_s);
	fprintf(stderr, "%s%s: %6.1fs%s  %llu samples  %llu lost  %.0f/s  %.1f MB%s",
		live ? "\r" : "", sp_progname, elapsed, of, (unsigned long long)s.samples,
		(unsigned long long)s.lost, elapsed > 0 ? (double)s.samples / elapsed : 0.0,
		(double)s.bytes / 1e6, final ? "\n" : "  ");
}

/* Whether every event is a clock, whose samples come at -F's rate. */
static bool clock_only(const struct cli *c)
{
	for (size_t i = 0; i < c->o.nevents; i++)
		if (c->o.events[i].kind != SP_EVENT_CLOCK)
			return false;
	return true;
}

/*
 * After the recording: no sample, or a few of a launched command that
 * used almost no CPU, is an unusable result (SP_EXIT_FATAL unless --allow-empty); more
 * than 5% of events lost is one warning.
 * The words are sp-stat's (stream/advice.h), so the warning and the
 * diagnosis read alike.
 */
static int check_samples(const struct cli *c, struct sp_capture *r, double seconds)
{
	struct sp_capture_stats s;
	struct sp_finding f;
	sp_capture_get_stats(r, &s);
	if (s.samples == 0 && s.lost)
		sp_finding_all_lost(&f, s.lost, c->o.frequency, c->o.stack_size, c->o.mmap_pages);
	else if (s.samples == 0)
		sp_finding_no_samples(&f, c->command ? SP_TARGET_LAUNCHED : SP_TARGET_ATTACHED,
				      seconds);
	/* A shell's start-up sampled while its child sleeps is no profile either. */
	bool few = c->command && s.samples && !s.lost && !c->by_period && clock_only(c) &&
		   sp_few_samples(s.samples, seconds, c->o.frequency);
	if (few)
		sp_finding_few_samples(&f, SP_TARGET_LAUNCHED, seconds, s.samples);
	if (s.samples == 0 || few) {
		sp_warn("%s; %s%s", f.what, f.fix, c->allow_empty ? "" : " (or give --allow-empty)");
		return c->allow_empty ? SP_EXIT_OK : SP_EXIT_FATAL;
	}
	if (100.0 * (double)s.lost / (double)(s.lost + s.samples) > SP_DEGRADED_PCT) {
		sp_finding_lost(&f, s.lost, s.samples, c->o.frequency, (uint64_t)c->o.poll_ms,
				c->o.mmap_pages);
		sp_warn("warning: %s; %s", f.what, f.fix);
	}
	return SP_EXIT_OK;
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
	enum sp_attach_mode mode = c->o.stop ? SP_ATTACH_STOP : SP_ATTACH_NO_STOP;
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
			if (sp_recorder_attach_process(r, all[i], mode) < 0 && kill(all[i], 0) == 0)
				sp_warn("%s", sp_errmsg(-1));
	}
	int rc = 0;
	for (size_t i = 0; i < c->npids && rc == 0; i++)
		if (sp_recorder_attach_process(r, c->pids[i], mode) < 0) {
			sp_warn("%s", sp_errmsg(-1));
			rc = -1;
		} else {
			check_root(c->pids[i]);
		}
	if (all != c->pids)
		free(all);
	return rc;
}

/*
 * --stack-size auto: the calibration records with the largest window
 * for at least --calibrate seconds and 300 samples, at most six times as
 * long, and stops early at 256 MiB of stream; a thread then unwinds
 * what it recorded (api/internal.h, sp_calib_*), and the events are
 * opened again with the smallest window that kept 99.5% of the stacks
 * complete, at least 4096 bytes.  Too few stacks keep the default.
 */
#define CAL_SECONDS 0.5
#define CAL_SAMPLES 300
#define CAL_MAX_BYTES (256u << 20)
#define CAL_MIN_STACKS 50
#define CAL_KEEP 0.995
#define CAL_FLOOR 4096u

enum cal_phase { CAL_OFF, CAL_RECORDING, CAL_UNWINDING, CAL_DONE };

/* Whether the calibration has recorded enough (or must stop). */
static bool cal_recorded(const struct cli *c, struct sp_capture *r, struct sp_writer *w,
			 double elapsed)
{
	struct sp_capture_stats st;
	sp_capture_get_stats(r, &st);
	double least = c->calibrate_s ? c->calibrate_s : CAL_SECONDS;
	return (elapsed >= least && st.samples >= CAL_SAMPLES) || elapsed >= 6 * least ||
	       sp_writer_bytes(w) >= CAL_MAX_BYTES;
}

/* Chooses the window from what the calibration measured and opens the events with it. */
static int cal_apply(const struct cli *c, struct sp_calib *cal, struct sp_capture *r)
{
	uint64_t samples;
	const struct sp_error *err;
	const struct sp_copy_used *u = sp_calib_result(cal, &samples, &err);
	uint64_t counted = u->n + u->truncated;
	uint32_t size;
	if (err)
		sp_warn("--stack-size auto: the calibration stopped short: %s",
			sp_error_message(err));
	if (counted < CAL_MIN_STACKS) {
		size = SP_DEFAULT_STACK_SIZE;
		if (!c->quiet)
			sp_warn("--stack-size auto: the calibration saw %llu complete or truncated "
				"stacks in %llu samples, too few to choose from (the target was "
				"idle?); copying the default %u bytes (give --stack-size BYTES, or "
				"a longer --calibrate)", (unsigned long long)counted,
				(unsigned long long)samples, size);
	} else {
		size = sp_copy_used_window(u, CAL_KEEP, CAL_FLOOR, SP_MAX_STACK_SIZE);
		uint64_t kept = 0;
		for (size_t i = 0; i < SP_COPY_BUCKETS && i * SP_COPY_BUCKET < size + SP_COPY_BUCKET; i++)
			kept += u->hist[i];
		if (!c->quiet)
			sp_warn("--stack-size auto: copying %u bytes, which would have kept %.1f%% "
				"of %llu calibration stacks complete (the complete ones needed at "
				"most %llu bytes, half of them %llu; %llu truncated at %u)", size,
				100.0 * (double)kept / (double)counted, (unsigned long long)counted,
				(unsigned long long)u->max,
				(unsigned long long)sp_copy_used_quantile(u, 0.5),
				(unsigned long long)u->truncated, SP_MAX_STACK_SIZE);
	}
	if (sp_capture_set_stack_size(r, size, u->n) < 0) {
		sp_warn("--stack-size auto: %s", sp_capture_error(r));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	sp_tool_init(argv[0]);
	parse_args(&c, argc, argv);
	if (c.pid_file)
		read_pid_file(&c);
	if (c.name)
		find_by_name(&c);
	resolve_pids(&c);

	/* Many threads need many descriptors: one per thread and CPU. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (c.kallsyms_out)
		check_kallsyms_out(c.kallsyms_out);
	if (c.archive && !(c.o.archive = sp_archive_new(c.archive)))
		sp_die(SP_EXIT_FATAL, "cannot create the archive '%s': %s", c.archive, strerror(errno));
	int outfd = sp_open_recording(c.output);
	c.o.command_stdout_to_stderr = outfd == STDOUT_FILENO;
	struct sp_calib *cal = NULL;
	enum cal_phase phase = CAL_OFF;
	if (c.stack_auto) {
		struct sp_error err = { 0 };
		if (!(cal = sp_calib_new(outfd, &err)))
			sp_die(SP_EXIT_FATAL, "%s", sp_error_message(&err));
		phase = CAL_RECORDING;
	}
	struct sp_recorder *rec = sp_recorder_new_tool(&c.o, cal ? sp_calib_fd(cal) : outfd,
						       c.output ? c.output : "-", argc, argv);
	if (!rec)
		sp_die(SP_EXIT_FATAL, "%s", sp_errmsg(-1));
	struct sp_capture *r = sp_recorder_capture(rec);
	struct sp_writer *w = sp_recorder_writer(rec);
	sp_compress_output(w, c.compress);

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
	if (c.command && sp_recorder_attach_command(rec, c.command, &child) < 0) {
		sp_warn("%s", sp_errmsg(-1));
		status = SP_EXIT_FATAL;
	} else if (c.ntids && attach_tids(&c, r) < 0) {
		status = SP_EXIT_FATAL;
	} else if (c.all_cpus && sp_capture_attach_system(r) < 0) {
		sp_warn("%s", sp_capture_error(r));
		status = SP_EXIT_FATAL;
	} else if (!c.all_cpus && !c.command && !c.ntids && attach_all(&c, rec) < 0) {
		status = SP_EXIT_FATAL;
	}
	struct sp_summary sum;
	sp_recorder_summary(rec, &sum);
	for (size_t i = 0; status == SP_EXIT_OK && i < c.o.nevents; i++)
		if (sp_capture_event_fell_back(r, i))
			sp_warn("cannot open the hardware event '%s' (this machine has no PMU for "
				"it): sampling on cpu-clock in its place (--event-fallback)",
				sp_capture_event_fell_back(r, i));
	if (status == SP_EXIT_OK && c.o.kernel && !sum.kernel_enabled)
		sp_warn("kernel sampling was denied (perf_event_paranoid is %d); recording "
			"user frames only (kernel_enabled is false in the stream)",
			sp_perf_paranoid());
	/* The first flush starts the recording: the header, what attach read. */
	if (status == SP_EXIT_OK && sp_recorder_flush(rec) < 0) {
		recorder_failed(w);
		status = SP_EXIT_FATAL;
	}
	/*
	 * The header and the records of the targets are written: from now on
	 * the recording is worth more than the file it replaces (kept as
	 * FILE.old), and a follower finds it under its name.
	 */
	if (status == SP_EXIT_OK && sp_writer_flush(w) < 0) {
		recorder_failed(w);
		status = SP_EXIT_FATAL;
	}
	if (status == SP_EXIT_OK && sp_output_commit() < 0)
		status = SP_EXIT_FATAL;
	if (status != SP_EXIT_OK) {
		sp_recorder_free(rec);
		sp_calib_free(cal);
		free(c.pids);
		free(c.tids);
		free(c.cpus);
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
		if ((phase == CAL_RECORDING || phase == CAL_UNWINDING) && timeout > 50)
			timeout = 50;
		if (sp_recorder_poll(rec, timeout) < 0) {
			recorder_failed(w);
			status = SP_EXIT_FATAL;
			break;
		}
		if (sp_recorder_targets_active(rec) != 1 || stop_signal)
			break;
		now = mono_s();
		if (phase == CAL_RECORDING && cal_recorded(&c, r, w, now - t0)) {
			struct sp_error err = { 0 };
			phase = CAL_UNWINDING;
			if (sp_calib_switch(cal, w, &err) < 0) {
				sp_warn("%s; recording stopped", sp_error_message(&err));
				status = SP_EXIT_FATAL;
				break;
			}
		} else if (phase == CAL_UNWINDING && sp_calib_ready(cal)) {
			phase = CAL_DONE;
			if (cal_apply(&c, cal, r) < 0 && status == SP_EXIT_OK)
				status = SP_EXIT_PARTIAL;
		}
		if (c.o.refresh_threads_ms && (now - last_refresh) * 1000 >= c.o.refresh_threads_ms) {
			last_refresh = now;
			if (sp_capture_refresh_threads(r) < 0)
				sp_warn("%s", sp_capture_error(r));
		}
		if (live && now - last_status >= 0.25) {
			last_status = now;
			status_line(&c, r, now - t0, true, false);
		}
	}
	/* Ended while calibrating: what was recorded goes out, with the window it had. */
	if (phase == CAL_RECORDING) {
		struct sp_error err = { 0 };
		if (sp_calib_switch(cal, w, &err) < 0) {
			sp_warn("%s", sp_error_message(&err));
			status = SP_EXIT_FATAL;
		}
	}
	if (cal && phase != CAL_DONE && !c.quiet)
		sp_warn("--stack-size auto: the recording ended before the calibration did; "
			"every sample copied %u bytes (give a longer recording, or a shorter "
			"--calibrate)", SP_MAX_STACK_SIZE);
	if (status == SP_EXIT_OK && sp_recorder_finish(rec, &sum) < 0) {
		recorder_failed(w);
		status = SP_EXIT_FATAL;
	}
	/* The closing summary, on a terminal or not, unless -q. */
	if (!c.quiet)
		status_line(&c, r, mono_s() - t0, live, true);
	int cs = sum.command_status;
	if (child > 0 && sum.has_command_status && !c.quiet) {
		if (cs >= 0)
			sp_warn("command '%s' exited with status %d", c.command[0], cs);
		else
			sp_warn("command '%s' was killed by signal %d (%s)", c.command[0], -cs,
				strsignal(-cs));
	}
	if (c.kallsyms_out && save_kallsyms(c.kallsyms_out) < 0 && status == SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
	if (status == SP_EXIT_OK)
		status = check_samples(&c, r, mono_s() - t0);
	if (sp_writer_end(w) < 0 && status == SP_EXIT_OK)
		status = sp_write_failed(errno);
	sp_recorder_free(rec);
	sp_calib_free(cal);
	free(c.pids);
	free(c.tids);
	free(c.cpus);
	sp_archive_free(c.o.archive);
	return status;
}

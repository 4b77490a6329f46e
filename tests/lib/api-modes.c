/* SPDX-License-Identifier: MIT
 * api-modes: the capture modes of the public library (several events, a
 * period, frame-pointer call graphs, off-CPU time, every CPU), used to
 * record and used wrongly.
 *
 *   api-modes record OUT.sps [OPTION...] [-- COMMAND [ARG...]]
 *
 * records COMMAND from its start to its exit, or with -a or -C every
 * task for -d SECONDS, then prints every counter of the summary as
 * "name value" lines.  Each option is one call, in the order given:
 *
 *   -E EVENT   sp_options_set_event()      -e EVENT  sp_options_add_event()
 *   -c EVENTS  sp_options_set_period()     -F HZ     sp_options_set_rate()
 *   -s BYTES   sp_options_set_stack_size() -g fp|dwarf  sp_options_set_call_graph()
 *   -o         sp_options_set_off_cpu(on)  -O        sp_options_set_off_cpu(off)
 *   -a         sp_recorder_attach_all_cpus() of every online CPU
 *   -C CPU     that CPU (repeated: a list)  -d SECONDS  how long -a records
 *
 * A call that fails prints "api-modes: WHAT: SP_ERR_CODE: MESSAGE" on
 * standard error and exits 2.
 *
 *   api-modes misuse OUT.sps PID
 *
 * calls each new function wrongly and prints "ok WHAT: MESSAGE" for a
 * check that holds, "FAIL ..." for one that does not (exit 1).  PID is a
 * running process the recorders attach; OUT.sps and OUT.sps.all are the
 * streams they write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

static const char *code_name(int code)
{
	switch (code) {
#define X(e, m) case SP_ERR_##e: return "SP_ERR_" #e;
	SP_ERRORS(X)
#undef X
	}
	return "SP_ERR_?";
}

static int die(const char *what)
{
	fprintf(stderr, "api-modes: %s: %s: %s\n", what, code_name(sp_errno()), sp_errmsg(-1));
	return 2;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_summary(const struct sp_summary *s)
{
	printf("sample_events %llu\n", (unsigned long long)s->sample_events);
	printf("samples %llu\n", (unsigned long long)s->samples);
	printf("lost_events %llu\n", (unsigned long long)s->lost_events);
	printf("processes %llu\n", (unsigned long long)s->processes);
	printf("threads %llu\n", (unsigned long long)s->threads);
	printf("duration_ns %llu\n", (unsigned long long)s->duration_ns);
	printf("kernel_enabled %d\n", s->kernel_enabled);
	if (s->has_command_status)
		printf("command_status %d\n", s->command_status);
}

/* The options of argv[*i...] until "--" or the end; NULL after a failure. */
static struct sp_options *parse_options(int argc, char **argv, int *i, int *cpus, size_t *ncpus,
					int *all, double *seconds)
{
	struct sp_options *o = sp_options_new();
	if (!o) {
		die("sp_options_new");
		return NULL;
	}
	for (; *i < argc && strcmp(argv[*i], "--") != 0; (*i)++) {
		const char *opt = argv[*i], *arg = *i + 1 < argc ? argv[*i + 1] : NULL;
		int rc = 0;
		if (strcmp(opt, "-o") == 0) {
			rc = sp_options_set_off_cpu(o, true);
		} else if (strcmp(opt, "-O") == 0) {
			rc = sp_options_set_off_cpu(o, false);
		} else if (strcmp(opt, "-a") == 0) {
			*all = 1;
		} else if (!arg) {
			fprintf(stderr, "api-modes: unknown option or missing argument '%s'\n", opt);
			sp_options_free(o);
			return NULL;
		} else {
			(*i)++;
			if (strcmp(opt, "-E") == 0)
				rc = sp_options_set_event(o, arg);
			else if (strcmp(opt, "-e") == 0)
				rc = sp_options_add_event(o, arg);
			else if (strcmp(opt, "-c") == 0)
				rc = sp_options_set_period(o, strtoull(arg, NULL, 10));
			else if (strcmp(opt, "-F") == 0)
				rc = sp_options_set_rate(o, strtoull(arg, NULL, 10));
			else if (strcmp(opt, "-s") == 0)
				rc = sp_options_set_stack_size(o, (uint32_t)strtoul(arg, NULL, 10));
			else if (strcmp(opt, "-g") == 0)
				rc = sp_options_set_call_graph(o, strcmp(arg, "fp") == 0 ?
							       SP_CALL_GRAPH_FP : SP_CALL_GRAPH_DWARF);
			else if (strcmp(opt, "-C") == 0 && *ncpus < 64)
				cpus[(*ncpus)++] = atoi(arg), *all = 1;
			else if (strcmp(opt, "-d") == 0)
				*seconds = atof(arg);
			else
				rc = -2;
		}
		if (rc == -2) {
			fprintf(stderr, "api-modes: unknown option '%s'\n", opt);
			sp_options_free(o);
			return NULL;
		}
		if (rc < 0) {
			die(opt);
			sp_options_free(o);
			return NULL;
		}
	}
	return o;
}

static int record(int argc, char **argv)
{
	int i = 3, cpus[64], all = 0;
	size_t ncpus = 0;
	double seconds = 1;
	if (argc < 3) {
		fprintf(stderr, "usage: api-modes record OUT.sps [OPTION...] [-- COMMAND...]\n");
		return 2;
	}
	struct sp_options *o = parse_options(argc, argv, &i, cpus, &ncpus, &all, &seconds);
	if (!o)
		return 2;
	char **command = i + 1 < argc ? argv + i + 1 : NULL;
	struct sp_recorder *r = sp_recorder_new(o, argv[2]);
	sp_options_free(o);
	if (!r)
		return die(argv[2]);
	int rc = 0;
	pid_t pid = 0;
	if (all && sp_recorder_attach_all_cpus(r, ncpus ? cpus : NULL, ncpus) < 0)
		rc = die("sp_recorder_attach_all_cpus");
	else if (command && sp_recorder_attach_command(r, command, &pid) < 0)
		rc = die(command[0]);
	else if (!all && !command)
		rc = (fprintf(stderr, "api-modes: give -a, -C or a command\n"), 2);
	if (rc) {
		sp_recorder_free(r);
		return rc;
	}
	/* The first poll starts the recording. */
	double end = now_s() + seconds;
	while (command ? sp_recorder_process_is_active(r, pid) == 1 :
	       sp_recorder_targets_active(r) == 1 && now_s() < end)
		if (sp_recorder_poll(r, 50) < 0) {
			rc = die("sp_recorder_poll");
			sp_recorder_free(r);
			return rc;
		}
	struct sp_summary s;
	if (sp_recorder_finish(r, &s) < 0) {
		rc = die("sp_recorder_finish");
		sp_recorder_free(r);
		return rc;
	}
	sp_recorder_free(r);
	print_summary(&s);
	return 0;
}

static int failures;

/* Polls r for seconds: 0, or -1 at the first failure. */
static int poll_for(struct sp_recorder *r, double seconds)
{
	double end = now_s() + seconds;
	while (now_s() < end)
		if (sp_recorder_poll(r, 50) < 0)
			return -1;
	return 0;
}

static void expect(const char *what, long rc, int code)
{
	int got = sp_errno();
	const char *msg = sp_errmsg(-1);
	if (rc != -1 || got != code || !msg || !*msg) {
		printf("FAIL %s: returned %ld, code %s (%s), wanted -1 and %s\n", what, rc,
		       code_name(got), msg ? msg : "(null)", code_name(code));
		failures++;
		return;
	}
	printf("ok %s: %s\n", what, msg);
}

static void expect_ok(const char *what, long rc)
{
	if (rc < 0) {
		printf("FAIL %s: %s: %s\n", what, code_name(sp_errno()), sp_errmsg(-1));
		failures++;
		return;
	}
	printf("ok %s\n", what);
}

/* Whether a tracepoint can be named here (tracefs mounted and readable). */
static int have_tracefs(void)
{
	return access("/sys/kernel/tracing/events", X_OK) == 0 ||
	       access("/sys/kernel/debug/tracing/events", X_OK) == 0;
}

static void misuse_events(void)
{
	struct sp_options *o = sp_options_new();
	expect("sp_options_add_event(NULL)", sp_options_add_event(NULL, "cpu-clock"),
	       SP_ERR_INVALID);
	expect("sp_options_add_event(NULL name)", sp_options_add_event(o, NULL), SP_ERR_INVALID);
	expect("sp_options_add_event(\"cpu-cycles-please\")",
	       sp_options_add_event(o, "cpu-cycles-please"), SP_ERR_UNSUPPORTED);
	expect("sp_options_add_event(\"off-cpu\")", sp_options_add_event(o, "off-cpu"),
	       SP_ERR_UNSUPPORTED);
	expect("sp_options_set_event(\"off-cpu\")", sp_options_set_event(o, "off-cpu"),
	       SP_ERR_UNSUPPORTED);
	int tp = have_tracefs() ? SP_ERR_NOT_FOUND :
		 access("/sys/kernel/tracing/events", F_OK) == 0 ? SP_ERR_PERMISSION :
		 SP_ERR_UNSUPPORTED;
	expect("sp_options_add_event(\"sched:no_such_tracepoint_here\")",
	       sp_options_add_event(o, "sched:no_such_tracepoint_here"), tp);
	expect_ok("sp_options_add_event(\"task-clock\")", sp_options_add_event(o, "task-clock"));
	expect("sp_options_add_event(\"task-clock\") twice", sp_options_add_event(o, "task-clock"),
	       SP_ERR_INVALID);
	expect_ok("sp_options_add_event(\"context-switches\")",
		  sp_options_add_event(o, "context-switches"));
	expect("sp_options_add_event(\"cs\") after its own name", sp_options_add_event(o, "cs"),
	       SP_ERR_INVALID);
	sp_options_free(o);

	/* Seven events and off-CPU time fill a recording. */
	static const char *const seven[] = { "cpu-clock", "task-clock", "page-faults",
		"context-switches", "cpu-migrations", "cycles", "instructions" };
	o = sp_options_new();
	expect_ok("sp_options_set_off_cpu(true)", sp_options_set_off_cpu(o, true));
	for (size_t i = 0; i < 7; i++)
		if (sp_options_add_event(o, seven[i]) < 0) {
			printf("FAIL sp_options_add_event(\"%s\"): %s\n", seven[i], sp_errmsg(-1));
			failures++;
		}
	expect("sp_options_add_event: an eighth beside off-CPU time",
	       sp_options_add_event(o, "faults"), SP_ERR_LIMIT);
	expect_ok("sp_options_set_off_cpu(true) again", sp_options_set_off_cpu(o, true));
	expect_ok("sp_options_set_off_cpu(false)", sp_options_set_off_cpu(o, false));
	/* An eighth event needs a tracepoint's name: then off-CPU time has no room. */
	if (have_tracefs()) {
		expect_ok("sp_options_add_event(\"sched:sched_switch\")",
			  sp_options_add_event(o, "sched:sched_switch"));
		expect("sp_options_set_off_cpu(true) beside eight events",
		       sp_options_set_off_cpu(o, true), SP_ERR_LIMIT);
	} else {
		printf("untested sp_options_set_off_cpu beside eight events: no tracefs\n");
	}
	/* set_event leaves exactly one, whatever was added. */
	expect_ok("sp_options_set_event(\"cpu-clock\") after eight",
		  sp_options_set_event(o, "cpu-clock"));
	expect_ok("sp_options_set_off_cpu(true) beside one event", sp_options_set_off_cpu(o, true));
	sp_options_free(o);
	expect("sp_options_set_off_cpu(NULL)", sp_options_set_off_cpu(NULL, true), SP_ERR_INVALID);
}

static void misuse_period_call_graph(void)
{
	struct sp_options *o = sp_options_new();
	expect("sp_options_set_period(NULL)", sp_options_set_period(NULL, 100), SP_ERR_INVALID);
	expect("sp_options_set_period(0)", sp_options_set_period(o, 0), SP_ERR_INVALID);
	expect_ok("sp_options_set_rate(99)", sp_options_set_rate(o, 99));
	expect("sp_options_set_period after a rate", sp_options_set_period(o, 100), SP_ERR_INVALID);
	sp_options_free(o);
	o = sp_options_new();
	expect_ok("sp_options_set_period(100)", sp_options_set_period(o, 100));
	expect("sp_options_set_rate after a period", sp_options_set_rate(o, 99), SP_ERR_INVALID);
	expect("sp_options_set_rate(SP_RATE_MAX) after a period",
	       sp_options_set_rate(o, SP_RATE_MAX), SP_ERR_INVALID);
	expect_ok("sp_options_set_period(1000) again", sp_options_set_period(o, 1000));
	sp_options_free(o);

	o = sp_options_new();
	expect("sp_options_set_call_graph(NULL)", sp_options_set_call_graph(NULL, SP_CALL_GRAPH_FP),
	       SP_ERR_INVALID);
	expect("sp_options_set_call_graph(7)",
	       sp_options_set_call_graph(o, (enum sp_call_graph)7), SP_ERR_INVALID);
	expect_ok("sp_options_set_stack_size(8192)", sp_options_set_stack_size(o, 8192));
	expect("sp_options_set_call_graph(FP) after a stack size",
	       sp_options_set_call_graph(o, SP_CALL_GRAPH_FP), SP_ERR_INVALID);
	expect_ok("sp_options_set_call_graph(DWARF) after a stack size",
		  sp_options_set_call_graph(o, SP_CALL_GRAPH_DWARF));
	sp_options_free(o);
	o = sp_options_new();
	expect_ok("sp_options_set_call_graph(FP)", sp_options_set_call_graph(o, SP_CALL_GRAPH_FP));
	expect("sp_options_set_stack_size with FP", sp_options_set_stack_size(o, 8192),
	       SP_ERR_INVALID);
	expect_ok("sp_options_set_call_graph(DWARF) after FP",
		  sp_options_set_call_graph(o, SP_CALL_GRAPH_DWARF));
	expect_ok("sp_options_set_stack_size(8192) with DWARF again",
		  sp_options_set_stack_size(o, 8192));
	sp_options_free(o);
}

static void misuse_all_cpus(const char *out, pid_t target)
{
	char path[4096];
	char *argv[] = { "true", NULL };
	int bad[] = { 99999 }, negative[] = { -1 };
	pid_t child;
	struct sp_options *o = sp_options_new();
	expect("sp_recorder_attach_all_cpus(NULL)", sp_recorder_attach_all_cpus(NULL, NULL, 0),
	       SP_ERR_INVALID);

	/* Processes attached first: every CPU is refused. */
	struct sp_recorder *r = sp_recorder_new(o, out);
	expect_ok("sp_recorder_attach(PID)", sp_recorder_attach(r, target));
	expect("sp_recorder_attach_all_cpus with a process attached",
	       sp_recorder_attach_all_cpus(r, NULL, 0), SP_ERR_STATE);
	expect_ok("sp_recorder_poll of the process's recording", poll_for(r, 0.3));
	expect_ok("sp_recorder_finish of the process's recording", sp_recorder_finish(r, NULL));
	sp_recorder_free(r);

	r = sp_recorder_new(o, "/dev/null");
	expect_ok("sp_recorder_attach_command(true)", sp_recorder_attach_command(r, argv, &child));
	expect("sp_recorder_attach_all_cpus with a command", sp_recorder_attach_all_cpus(r, NULL, 0),
	       SP_ERR_STATE);
	sp_recorder_free(r);

	r = sp_recorder_new(o, "/dev/null");
	expect_ok("sp_recorder_poll of a recorder with no target", sp_recorder_poll(r, 0));
	expect("sp_recorder_attach_all_cpus after the start",
	       sp_recorder_attach_all_cpus(r, NULL, 0), SP_ERR_STATE);
	sp_recorder_free(r);

	/* Bad CPU lists leave the recorder as it was. */
	snprintf(path, sizeof(path), "%s.all", out);
	r = sp_recorder_new(o, path);
	expect("sp_recorder_attach_all_cpus(NULL cpus, 1)", sp_recorder_attach_all_cpus(r, NULL, 1),
	       SP_ERR_INVALID);
	expect("sp_recorder_attach_all_cpus(CPU 99999)", sp_recorder_attach_all_cpus(r, bad, 1),
	       SP_ERR_INVALID);
	expect("sp_recorder_attach_all_cpus(CPU -1)", sp_recorder_attach_all_cpus(r, negative, 1),
	       SP_ERR_INVALID);
	expect_ok("sp_recorder_attach_all_cpus(every CPU)", sp_recorder_attach_all_cpus(r, NULL, 0));
	/* Every CPU attached: no process can be. */
	expect("sp_recorder_attach_all_cpus twice", sp_recorder_attach_all_cpus(r, NULL, 0),
	       SP_ERR_STATE);
	expect("sp_recorder_attach after every CPU", sp_recorder_attach(r, target), SP_ERR_STATE);
	expect("sp_recorder_attach_process after every CPU",
	       sp_recorder_attach_process(r, target, SP_ATTACH_NO_STOP), SP_ERR_STATE);
	expect("sp_recorder_attach_command after every CPU",
	       sp_recorder_attach_command(r, argv, &child), SP_ERR_STATE);
	expect("sp_recorder_refresh_threads after every CPU", sp_recorder_refresh_threads(r, target),
	       SP_ERR_STATE);
	if (sp_recorder_targets_active(r) != 1) {
		printf("FAIL sp_recorder_targets_active of every CPU is not 1\n");
		failures++;
	}
	expect_ok("sp_recorder_poll of every CPU", poll_for(r, 0.3));
	expect("sp_recorder_attach_process while every CPU records",
	       sp_recorder_attach_process(r, target, SP_ATTACH_NO_STOP), SP_ERR_STATE);
	struct sp_summary s;
	expect_ok("sp_recorder_finish of every CPU", sp_recorder_finish(r, &s));
	expect("sp_recorder_attach_all_cpus after finish", sp_recorder_attach_all_cpus(r, NULL, 0),
	       SP_ERR_STATE);
	sp_recorder_free(r);
	sp_options_free(o);
}

static int misuse(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: api-modes misuse OUT.sps PID\n");
		return 2;
	}
	misuse_events();
	misuse_period_call_graph();
	misuse_all_cpus(argv[2], (pid_t)atoi(argv[3]));
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "record") == 0)
		return record(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "misuse") == 0)
		return misuse(argc, argv);
	fprintf(stderr, "usage: api-modes record|misuse ...\n");
	return 2;
}

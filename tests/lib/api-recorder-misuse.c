/* SPDX-License-Identifier: MIT
 * api-recorder-misuse: every recorder and options function used wrongly
 * (a NULL handle, the wrong state, a bad value) must fail with its error
 * code and a message, never crash.  Prints "ok WHAT: MESSAGE" for each
 * check, "FAIL ..." for one that does not hold; exits 1 after a failure.
 *
 *   api-recorder-misuse OUT.sps PID
 *
 * OUT.sps is written by a recorder of the running process PID, which is
 * attached, recorded briefly and finished, then used again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

static int failures;

static void expect(const char *what, long rc, int code)
{
	int got = sp_errno();
	const char *msg = sp_errmsg(-1);
	if (rc != -1 || got != code || !msg || !*msg) {
		printf("FAIL %s: returned %ld, code %d (%s), wanted -1 and code %d (%s)\n", what,
		       rc, got, msg ? msg : "(null)", code, sp_errmsg(code));
		failures++;
		return;
	}
	printf("ok %s: %s\n", what, msg);
}

static void expect_null(const char *what, const void *p, int code)
{
	expect(what, p ? 0 : -1, code);
}

static void null_handles(void)
{
	struct sp_summary s;
	pid_t pid;
	char *argv[] = { "true", NULL };
	expect("sp_options_set_rate(NULL)", sp_options_set_rate(NULL, 99), SP_ERR_INVALID);
	expect("sp_options_set_stack_size(NULL)", sp_options_set_stack_size(NULL, 8),
	       SP_ERR_INVALID);
	expect("sp_options_set_kernel(NULL)", sp_options_set_kernel(NULL, true), SP_ERR_INVALID);
	expect("sp_options_set_inherit(NULL)", sp_options_set_inherit(NULL, true),
	       SP_ERR_INVALID);
	expect("sp_options_set_event(NULL)", sp_options_set_event(NULL, "cpu-clock"),
	       SP_ERR_INVALID);
	expect("sp_options_set_start_timestamp_us(NULL)",
	       sp_options_set_start_timestamp_us(NULL, 1), SP_ERR_INVALID);
	expect("sp_options_set_sample_interval_us(NULL)",
	       sp_options_set_sample_interval_us(NULL, 1), SP_ERR_INVALID);
	sp_options_free(NULL);
	expect_null("sp_recorder_new(NULL options)", sp_recorder_new(NULL, "/dev/null"),
		    SP_ERR_INVALID);
	expect_null("sp_recorder_new_fd(NULL options)", sp_recorder_new_fd(NULL, 1),
		    SP_ERR_INVALID);
	expect("sp_recorder_attach(NULL)", sp_recorder_attach(NULL, 1), SP_ERR_INVALID);
	expect("sp_recorder_attach_command(NULL)", sp_recorder_attach_command(NULL, argv, &pid),
	       SP_ERR_INVALID);
	expect("sp_recorder_attach_process(NULL)",
	       sp_recorder_attach_process(NULL, 1, SP_ATTACH_NO_STOP), SP_ERR_INVALID);
	expect("sp_recorder_refresh_threads(NULL)", sp_recorder_refresh_threads(NULL, 1),
	       SP_ERR_INVALID);
	expect("sp_recorder_poll(NULL)", sp_recorder_poll(NULL, 0), SP_ERR_INVALID);
	expect("sp_recorder_has_pending_events(NULL)", sp_recorder_has_pending_events(NULL),
	       SP_ERR_INVALID);
	expect("sp_recorder_process_is_active(NULL)", sp_recorder_process_is_active(NULL, 1),
	       SP_ERR_INVALID);
	expect("sp_recorder_targets_active(NULL)", sp_recorder_targets_active(NULL),
	       SP_ERR_INVALID);
	expect("sp_recorder_flush(NULL)", sp_recorder_flush(NULL), SP_ERR_INVALID);
	expect("sp_recorder_summary(NULL)", sp_recorder_summary(NULL, &s), SP_ERR_INVALID);
	expect("sp_recorder_finish(NULL)", sp_recorder_finish(NULL, &s), SP_ERR_INVALID);
	expect_null("sp_recorder_tail(NULL)", sp_recorder_tail(NULL), SP_ERR_INVALID);
	sp_recorder_free(NULL);
	expect("sp_discover_descendants(0)", sp_discover_descendants(0, NULL, 0), SP_ERR_INVALID);
}

static void bad_options(struct sp_options *o)
{
	expect("sp_options_set_rate(0)", sp_options_set_rate(o, 0), SP_ERR_INVALID);
	expect("sp_options_set_stack_size(7)", sp_options_set_stack_size(o, 7), SP_ERR_INVALID);
	expect("sp_options_set_stack_size(65536)", sp_options_set_stack_size(o, 65536),
	       SP_ERR_INVALID);
	expect("sp_options_set_event(\"cpu-cycles-please\")",
	       sp_options_set_event(o, "cpu-cycles-please"), SP_ERR_UNSUPPORTED);
	/* No such tracepoint; or tracefs not mounted; or not this user's to read. */
	int tp = access("/sys/kernel/tracing/events", X_OK) == 0 ||
		 access("/sys/kernel/debug/tracing/events", X_OK) == 0 ? SP_ERR_NOT_FOUND :
		 access("/sys/kernel/tracing/events", F_OK) == 0 ? SP_ERR_PERMISSION :
		 SP_ERR_UNSUPPORTED;
	expect("sp_options_set_event(\"sched:no_such_tracepoint_here\")",
	       sp_options_set_event(o, "sched:no_such_tracepoint_here"), tp);
	/* Every name sp-capture -e takes, aliases too; the last one set stays. */
	static const char *const names[] = { "task-clock", "page-faults", "faults",
		"context-switches", "cs", "cpu-migrations", "migrations", "cycles",
		"instructions", "cpu-clock" };
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (sp_options_set_event(o, names[i]) != 0) {
			printf("FAIL sp_options_set_event(\"%s\"): %s\n", names[i], sp_errmsg(-1));
			failures++;
		}
	expect("sp_options_set_event(NULL name)", sp_options_set_event(o, NULL), SP_ERR_INVALID);
	expect_null("sp_recorder_new(NULL path)", sp_recorder_new(o, NULL), SP_ERR_INVALID);
	expect_null("sp_recorder_new(a directory that does not exist)",
		    sp_recorder_new(o, "/nonexistent/dir/x.sps"), SP_ERR_ERRNO);
	expect_null("sp_recorder_new_fd(-1)", sp_recorder_new_fd(o, -1), SP_ERR_INVALID);
	if (sp_error_kind_name(SP_ERROR_KINDS_MAX) || sp_error_kind_description(1000)) {
		printf("FAIL sp_error_kind_name past the last kind is not NULL\n");
		failures++;
	}
}

/* A recorder used in the wrong states, before and after it finished. */
static void wrong_states(struct sp_options *o, const char *out, pid_t target)
{
	char *argv[] = { "true", NULL };
	char *empty[] = { NULL };
	struct sp_summary s;
	pid_t pid;
	FILE *f = tmpfile();
	struct sp_recorder *fd_rec = f ? sp_recorder_new_fd(o, fileno(f)) : NULL;
	if (!fd_rec) {
		printf("FAIL sp_recorder_new_fd(a temporary file): %s\n", sp_errmsg(-1));
		failures++;
	}
	if (fd_rec)
		expect_null("sp_recorder_tail of a recorder writing to a descriptor",
			    sp_recorder_tail(fd_rec), SP_ERR_STATE);
	sp_recorder_free(fd_rec);
	if (f)
		fclose(f);

	struct sp_recorder *r = sp_recorder_new(o, out);
	if (!r) {
		printf("FAIL sp_recorder_new(%s): %s\n", out, sp_errmsg(-1));
		failures++;
		return;
	}
	expect("sp_recorder_attach(pid 0)", sp_recorder_attach(r, 0), SP_ERR_INVALID);
	expect("sp_recorder_attach_command(empty argv)", sp_recorder_attach_command(r, empty, &pid),
	       SP_ERR_INVALID);
	expect("sp_recorder_attach_process(bad mode)",
	       sp_recorder_attach_process(r, target, (enum sp_attach_mode)7), SP_ERR_INVALID);
	expect("sp_recorder_refresh_threads(a process not attached)",
	       sp_recorder_refresh_threads(r, target), SP_ERR_NOT_FOUND);
	expect("sp_recorder_process_is_active(a process not attached)",
	       sp_recorder_process_is_active(r, target), SP_ERR_NOT_FOUND);
	expect("sp_recorder_poll(-1 ms)", sp_recorder_poll(r, -1), SP_ERR_INVALID);
	if (sp_recorder_attach(r, target) < 0 || sp_recorder_poll(r, 50) < 0) {
		printf("FAIL attach %d and poll: %s\n", (int)target, sp_errmsg(-1));
		failures++;
	}
	/* The target spins: its samples reach the rings within a few polls' time. */
	int pending = 0;
	for (int i = 0; i < 100 && pending == 0; i++) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
		pending = sp_recorder_has_pending_events(r);
	}
	if (pending != 1 || sp_recorder_flush(r) < 0 || sp_recorder_process_is_active(r, target) != 1 ||
	    sp_recorder_targets_active(r) != 1) {
		printf("FAIL pending events %d, flush, or the target's liveness: %s\n", pending,
		       sp_errmsg(-1));
		failures++;
	} else {
		printf("ok sp_recorder_has_pending_events while the target runs: 1\n");
	}
	expect("sp_recorder_attach after the start", sp_recorder_attach(r, target), SP_ERR_STATE);
	expect("sp_recorder_attach_command after the start",
	       sp_recorder_attach_command(r, argv, &pid), SP_ERR_STATE);
	expect("sp_recorder_summary(NULL summary)", sp_recorder_summary(r, NULL), SP_ERR_INVALID);
	if (sp_recorder_finish(r, &s) < 0) {
		printf("FAIL sp_recorder_finish: %s\n", sp_errmsg(-1));
		failures++;
	}
	expect("sp_recorder_finish twice", sp_recorder_finish(r, &s), SP_ERR_STATE);
	expect("sp_recorder_attach after finish", sp_recorder_attach(r, target), SP_ERR_STATE);
	expect("sp_recorder_attach_command after finish",
	       sp_recorder_attach_command(r, argv, &pid), SP_ERR_STATE);
	expect("sp_recorder_attach_process after finish",
	       sp_recorder_attach_process(r, target, SP_ATTACH_STOP), SP_ERR_STATE);
	expect("sp_recorder_refresh_threads after finish", sp_recorder_refresh_threads(r, target),
	       SP_ERR_STATE);
	expect("sp_recorder_poll after finish", sp_recorder_poll(r, 0), SP_ERR_STATE);
	expect("sp_recorder_flush after finish", sp_recorder_flush(r), SP_ERR_STATE);
	expect("sp_recorder_has_pending_events after finish", sp_recorder_has_pending_events(r),
	       SP_ERR_STATE);
	expect("sp_recorder_process_is_active after finish",
	       sp_recorder_process_is_active(r, target), SP_ERR_STATE);
	expect("sp_recorder_targets_active after finish", sp_recorder_targets_active(r),
	       SP_ERR_STATE);
	struct sp_summary again;
	if (sp_recorder_summary(r, &again) < 0 || memcmp(&again, &s, sizeof(s)) != 0) {
		printf("FAIL sp_recorder_summary after finish is not finish's summary\n");
		failures++;
	} else {
		printf("ok sp_recorder_summary after finish: %llu samples\n",
		       (unsigned long long)s.samples);
	}
	sp_recorder_free(r);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: api-recorder-misuse OUT.sps PID\n");
		return 2;
	}
	struct sp_options *o = sp_options_new();
	if (!o)
		return 1;
	null_handles();
	bad_options(o);
	wrong_states(o, argv[1], (pid_t)atoi(argv[2]));
	sp_options_free(o);
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}

/* SPDX-License-Identifier: MIT
 * Targets (internal.h): attaching to running processes (events first,
 * then their state read from /proc; stopped with SIGSTOP meanwhile only
 * when told to), launching a command held before exec until the events
 * are open, and ending it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/internal.h"
#include "util/alloc.h"
#include "util/hashmap.h"

#define MAX_STOPPED 4096

/* Targets stopped with SIGSTOP and not yet continued (for signal handlers). */
static volatile pid_t stopped_pids[MAX_STOPPED];

static void stopped_add(pid_t pid)
{
	for (int i = 0; i < MAX_STOPPED; i++)
		if (stopped_pids[i] == 0) {
			stopped_pids[i] = pid;
			return;
		}
}

static void stopped_continue(pid_t pid)
{
	for (int i = 0; i < MAX_STOPPED; i++)
		if (stopped_pids[i] == pid) {
			kill(pid, SIGCONT);
			stopped_pids[i] = 0;
		}
}

void sp_capture_continue_targets(void)
{
	for (int i = 0; i < MAX_STOPPED; i++)
		if (stopped_pids[i] != 0) {
			kill(stopped_pids[i], SIGCONT);
			stopped_pids[i] = 0;
		}
}

/* Waits up to 500 ms for a process to show as stopped. */
static void wait_stopped(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		struct sp_proc_stat st;
		if (sp_proc_stat(pid, &st) < 0 || st.state == 'T' || st.state == 't')
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static int add_target(struct sp_capture *r, pid_t pid, bool launched)
{
	if (SP_ALLOC_GROW(r->targets, r->ntargets + 1, r->alloctargets) < 0)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r->targets[r->ntargets++] = (struct sp_rec_target){ pid, pfd, true, launched };
	return 0;
}

/* Notes a process the recorder follows from now on. */
static void proc_start(struct sp_capture *r, pid_t pid, uint64_t start_key, uid_t uid)
{
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, true);
	if (p) {
		p->alive = true;
		p->cpython = false;
		p->start_key = start_key;
		p->uid = uid;
	}
}

static bool has_event(const struct sp_capture *r, pid_t tid)
{
	for (size_t j = 0; j < r->nevents; j++)
		if (r->events[j].tid == tid)
			return true;
	return false;
}

/*
 * Opens events on the threads of pid, each enabled as soon as it is in
 * its ring, and notes in *opened the threads given events.  The task
 * list is read again until it shows no thread without events: a thread
 * born between a listing and its creator's events is found by the next
 * one.  With inherit, a thread born after its creator's events opened
 * has inherited them, and the kernel's fork record says so: the rings
 * are drained into the queue (not written) after each listing, and a
 * listed thread whose fork is there gets no events of its own, which
 * would sample it twice.  (The kernel lists a new thread a moment
 * before it writes the fork record, before the thread first runs: one
 * born in that moment is still opened twice.)  Returns 0, 1 when pid
 * has gone, or -1.
 */
static int open_process(struct sp_capture *r, pid_t pid, pid_t **opened, size_t *nopened)
{
	size_t alloc = 0;
	for (int round = 0; round < 100; round++) {
		pid_t *tids;
		size_t n, fresh = 0;
		if (sp_proc_tasks(pid, &tids, &n) < 0)
			return errno == ENOENT ? 1 :
				sp_error_errno(&r->err, "cannot list the threads of %d", (int)pid);
		if (r->o.inherit && round > 0 && sp_rec_drain(r, 0) < 0) {
			free(tids);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			if (has_event(r, tids[i]) ||
			    (r->o.inherit && round > 0 && sp_u64map_get(&r->tids, (uint64_t)tids[i])))
				continue;
			int k = sp_rec_open_thread(r, pid, tids[i], false);
			if (k == 1 && tids[i] == pid) {
				free(tids);
				return 1;
			}
			if (k == 1)
				continue;	/* it ended meanwhile */
			if (k < 0 || SP_ALLOC_GROW(*opened, *nopened + 1, alloc) < 0) {
				free(tids);
				return k < 0 ? -1 : sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
			}
			(*opened)[(*nopened)++] = tids[i];
			sp_rec_tid_note(r, tids[i]);
			fresh++;
		}
		free(tids);
		if (fresh == 0)
			return 0;
	}
	return 0;
}

/* Opens events on exactly the threads given: 0, 1 when one has gone, or -1. */
static int open_listed(struct sp_capture *r, pid_t pid, const pid_t *only, size_t nonly,
		       pid_t **opened, size_t *nopened)
{
	*opened = malloc((nonly ? nonly : 1) * sizeof(**opened));
	if (!*opened)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < nonly; i++) {
		if (has_event(r, only[i]))
			continue;
		int k = sp_rec_open_thread(r, pid, only[i], false);
		if (k != 0) {
			if (k > 0)
				sp_error_set(&r->err, SP_ERR_NOT_FOUND,
					     "thread %d of process %d exited while attaching; "
					     "give the threads that run now (ls /proc/%d/task)",
					     (int)only[i], (int)pid, (int)pid);
			return -1;
		}
		(*opened)[(*nopened)++] = only[i];
		sp_rec_tid_note(r, only[i]);
	}
	return 0;
}

/*
 * Attaches to pid (to the threads in only[], when nonly > 0).  The events
 * are enabled first and /proc is read after, every record read from it
 * stamped with a time taken before the first event opened: a record the
 * kernel writes about the process from then on sorts after what /proc
 * said and so overrides it, and nothing that happens while attaching
 * falls between the two.
 */
static int attach(struct sp_capture *r, pid_t pid, const pid_t *only, size_t nonly)
{
	struct sp_proc_stat st;
	if (sp_proc_stat(pid, &st) < 0)
		return sp_error_set(&r->err, SP_ERR_NOT_FOUND,
				    "no process with pid %d: it does not exist or has ended "
				    "(check the pid with ps, or attach by --name)", (int)pid);
	bool stopped_by_us = false;
	if (r->o.stop && st.state != 'T' && st.state != 't') {
		if (kill(pid, SIGSTOP) < 0) {
			int e = errno;
			sp_error_set(&r->err, SP_ERR_PERMISSION,
				     "cannot stop process %d while attaching: %s "
				     "(profile a process you own, or drop --stop)",
				     (int)pid, strerror(e));
			r->err.errnum = e;
			return -1;
		}
		stopped_add(pid);
		stopped_by_us = true;
		wait_stopped(pid);
	}
	size_t first_event = r->nevents;
	uint64_t t = sp_rec_now_ns();
	pid_t *tids = NULL;
	size_t ntids = 0;
	int rc = nonly ? open_listed(r, pid, only, nonly, &tids, &ntids) :
			 open_process(r, pid, &tids, &ntids);
	/* What /proc says now, after the events are on. */
	if (rc == 0 && sp_proc_stat(pid, &st) < 0)
		rc = 1;
	if (rc != 0) {
		if (rc > 0)
			sp_error_set(&r->err, SP_ERR_NOT_FOUND,
				     "process %d exited while attaching; nothing left to profile "
				     "(attach while it runs, or launch it: sp-capture -- COMMAND)",
				     (int)pid);
		sp_rec_close_events(r, first_event);
		free(tids);
		if (stopped_by_us)
			stopped_continue(pid);
		return -1;
	}
	sp_rec_synth_process(r, pid, &st, t);
	for (size_t i = 0; i < ntids; i++)
		sp_rec_synth_thread(r, pid, tids[i], t);
	free(tids);
	proc_start(r, pid, st.start_ns, st.uid);
	const char *via = sp_rec_synth_maps(r, pid, t);
	/* The marker follows the maps it was judged from. */
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, false);
	if (p)
		p->cpython = via != NULL;
	sp_rec_queue_runtime(r, pid, t, via != NULL, via ? via : "none");
	if (stopped_by_us)
		stopped_continue(pid);
	return add_target(r, pid, false);
}

int sp_capture_attach(struct sp_capture *r, pid_t pid)
{
	return attach(r, pid, NULL, 0);
}

int sp_capture_attach_stop(struct sp_capture *r, pid_t pid, bool stop)
{
	bool saved = r->o.stop;
	r->o.stop = stop;
	int rc = attach(r, pid, NULL, 0);
	r->o.stop = saved;
	return rc;
}

int sp_capture_attach_threads(struct sp_capture *r, pid_t pid, const pid_t *tids, size_t n)
{
	if (SP_ALLOC_GROW(r->only_tids, r->nonly_tids + n, r->alloconly_tids) < 0)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	if (attach(r, pid, tids, n) < 0)
		return -1;
	memcpy(r->only_tids + r->nonly_tids, tids, n * sizeof(*tids));
	r->nonly_tids += n;
	return 0;
}

int sp_capture_launch(struct sp_capture *r, char *const argv[], pid_t *child)
{
	int go[2], ep[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
		return sp_error_errno(&r->err, "pipe");
	pid_t pid = fork();
	if (pid < 0)
		return sp_error_errno(&r->err, "fork");
	if (pid == 0) {
		/* Held until the events are open, then exec. */
		char c;
		close(go[1]);
		close(ep[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		/* The stream owns standard output: the command writes to stderr. */
		if (r->o.command_stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		int e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	r->child = pid;
	r->go_fd = go[1];
	r->err_fd = ep[0];
	*child = pid;

	uint64_t t = sp_rec_now_ns();
	int k = sp_rec_open_thread(r, pid, pid, true);
	if (k != 0)
		return k > 0 ? sp_error_set(&r->err, SP_ERR_NOT_FOUND,
					    "the command exited before it could be profiled") : -1;
	struct sp_proc_stat st = { 0 };
	if (sp_proc_stat(pid, &st) == 0) {
		const char *base = strrchr(argv[0], '/');
		snprintf(st.comm, sizeof(st.comm), "%.15s", base ? base + 1 : argv[0]);
		sp_rec_synth_process(r, pid, &st, t);
	}
	sp_rec_synth_thread(r, pid, pid, t);
	proc_start(r, pid, st.start_ns, getuid());
	sp_rec_queue_runtime(r, pid, t, false, "none");
	r->command = (char **)argv;
	return add_target(r, pid, true);
}

/* Lets a launched command exec, and learns whether it could. */
int sp_rec_release_command(struct sp_capture *r)
{
	if (r->child <= 0)
		return 0;
	if (write(r->go_fd, "g", 1) != 1)
		return sp_error_errno(&r->err, "cannot release the command");
	close(r->go_fd);
	r->go_fd = -1;
	int e = 0;
	ssize_t k;
	do
		k = read(r->err_fd, &e, sizeof(e));
	while (k < 0 && errno == EINTR);
	close(r->err_fd);
	r->err_fd = -1;
	if (k == (ssize_t)sizeof(e)) {
		waitpid(r->child, &r->child_status, 0);
		errno = e;
		return sp_error_errno(&r->err, "cannot run '%s'", r->command[0]);
	}
	return 0;
}

/* Notes the command's status once it has ended. */
void sp_rec_reap_command(struct sp_capture *r)
{
	if (r->child > 0 && r->child_status < 0) {
		int st;
		if (waitpid(r->child, &st, WNOHANG) == r->child)
			r->child_status = st;
	}
}

/*
 * Ends a launched command that is still running, as perf record does:
 * SIGTERM, and SIGKILL if it is still there after two seconds.
 */
void sp_rec_end_command(struct sp_capture *r)
{
	sp_rec_reap_command(r);
	if (r->child <= 0 || r->child_status >= 0)
		return;
	kill(r->child, SIGTERM);
	for (int i = 0; i < 200 && r->child_status < 0; i++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
		sp_rec_reap_command(r);
	}
	if (r->child_status < 0) {
		kill(r->child, SIGKILL);
		int st;
		if (waitpid(r->child, &st, 0) == r->child)
			r->child_status = st;
	}
}

/* Whether target t still runs, looked at now. */
static bool target_check(struct sp_capture *r, struct sp_rec_target *t)
{
	if (t->alive && t->launched) {
		sp_rec_reap_command(r);
		t->alive = r->child_status < 0;
	} else if (t->alive && t->pidfd >= 0) {
		struct pollfd p = { t->pidfd, POLLIN, 0 };
		if (poll(&p, 1, 0) > 0)
			t->alive = false;
	} else if (t->alive && kill(t->pid, 0) < 0 && errno == ESRCH) {
		t->alive = false;
	}
	return t->alive;
}

int sp_capture_target_alive(struct sp_capture *r, pid_t pid)
{
	/* The latest entry: a pid attached again after it was reused. */
	for (size_t i = r->ntargets; i-- > 0;)
		if (r->targets[i].pid == pid)
			return target_check(r, &r->targets[i]);
	return -1;
}

unsigned sp_capture_targets_alive(struct sp_capture *r)
{
	/* Recording every task, the machine is the target. */
	unsigned n = r->o.system_wide;
	for (size_t i = 0; i < r->ntargets; i++)
		n += target_check(r, &r->targets[i]);
	return n;
}

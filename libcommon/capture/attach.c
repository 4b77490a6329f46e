/*
 * Targets (internal.h): attaching to running processes (stopped with
 * SIGSTOP while their events open and their state is read, unless told
 * not to), launching a command held before exec until the events are
 * open, and ending it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/internal.h"
#include "util/alloc.h"

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

void sp_recorder_continue_targets(void)
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

static int add_target(struct sp_recorder *r, pid_t pid, bool launched)
{
	if (SP_ALLOC_GROW(r->targets, r->ntargets + 1, r->alloctargets) < 0)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r->targets[r->ntargets++] = (struct sp_rec_target){ pid, pfd, true, launched };
	return 0;
}

/* Notes a process the recorder follows from now on. */
static void proc_start(struct sp_recorder *r, pid_t pid, uint64_t start_key, uid_t uid)
{
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, true);
	if (p) {
		p->alive = true;
		p->cpython = false;
		p->start_key = start_key;
		p->uid = uid;
	}
}

int sp_recorder_attach(struct sp_recorder *r, pid_t pid)
{
	struct sp_proc_stat st;
	if (sp_proc_stat(pid, &st) < 0)
		return sp_error_set(&r->err, SP_ERR_NOT_FOUND, "no process with pid %d", (int)pid);
	bool stopped_by_us = false;
	if (r->o.stop && st.state != 'T' && st.state != 't') {
		if (kill(pid, SIGSTOP) < 0) {
			int e = errno;
			sp_error_set(&r->err, SP_ERR_PERMISSION,
				     "cannot stop process %d while attaching: %s "
				     "(profile a process you own, or use --no-stop)",
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
	size_t first_q = r->nq;
	sp_rec_synth_process(r, pid, &st, t);
	int rc = sp_rec_open_threads(r, pid, t, true);
	if (rc != 0) {
		if (rc > 0)
			sp_error_set(&r->err, SP_ERR_NOT_FOUND, "process %d exited while attaching",
				     (int)pid);
		sp_rec_close_events(r, first_event);
		r->nq = first_q;	/* drop what was queued for it */
		if (stopped_by_us)
			stopped_continue(pid);
		return -1;
	}
	proc_start(r, pid, st.start_ns, st.uid);
	const char *via = sp_rec_synth_maps(r, pid, t);
	/* The marker follows the maps it was judged from. */
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, false);
	if (p)
		p->cpython = via != NULL;
	sp_rec_queue_runtime(r, pid, t, via != NULL, via ? via : "none");
	sp_rec_enable_events(r, first_event);
	if (stopped_by_us)
		stopped_continue(pid);
	return add_target(r, pid, false);
}

int sp_recorder_launch(struct sp_recorder *r, char *const argv[], pid_t *child)
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
int sp_rec_release_command(struct sp_recorder *r)
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
void sp_rec_reap_command(struct sp_recorder *r)
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
void sp_rec_end_command(struct sp_recorder *r)
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

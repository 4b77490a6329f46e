/* SPDX-License-Identifier: MIT
 * struct sp_recorder: the public recorder over the capture layer's
 * (capture/recorder.h).  It adds the states the public API promises
 * (attach before the start, chosen processes or every CPU but never
 * both, the start at the first poll, nothing but the summary after
 * finish), the summary as a public struct, the exact images a tail
 * takes over, and the door sp-capture goes through (internal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/images.h"
#include "api/internal.h"
#include "capture/recorder.h"
#include "stream/records.h"
#include "util/procfs.h"
#include "util/procns.h"

struct sp_recorder {
	struct sp_error err;
	struct sp_capture_options co;
	struct sp_capture *cap;
	struct sp_writer *w;
	int fd;
	bool own_fd;
	char *path;			/* NULL: a descriptor */
	struct sp_images *images;	/* NULL: none kept (a descriptor) */
	bool images_taken;
	char **command;			/* a copy of the launched argv */
	char **argv;			/* the header's command line */
	int argc;
	bool started, finished;
	bool attached;			/* a process or a command is a target */
	bool all_cpus;			/* every task: sp_recorder_attach_all_cpus() */
	struct sp_summary final;
};

/* Fails the calling function with r's error, published. */
static int fail(struct sp_recorder *r)
{
	return sp_error_publish(&r->err);
}

/* The capture layer's last error, made r's and published. */
static int fail_capture(struct sp_recorder *r)
{
	r->err = *sp_capture_last_error(r->cap);
	return fail(r);
}

static int fail_state(struct sp_recorder *r, const char *func, const char *why)
{
	sp_error_set(&r->err, SP_ERR_STATE, "%s: %s", func, why);
	return fail(r);
}

/* Everything but the summary, the tail and free ends at finish. */
#define CHECK_LIVE(r, ret) \
	do { \
		SP_API_CHECK(r, ret); \
		if ((r)->finished) { \
			fail_state(r, __func__, "the recording has finished"); \
			return ret; \
		} \
	} while (0)

/* A recorder of every CPU has no processes of its own. */
#define CHECK_NOT_ALL_CPUS(r, ret) \
	do { \
		if ((r)->all_cpus) { \
			fail_state(r, __func__, "the recorder records every process on the " \
				   "CPUs (sp_recorder_attach_all_cpus()): a recording holds " \
				   "either chosen processes or all of them"); \
			return ret; \
		} \
	} while (0)

static char **copy_argv(int argc, char *const argv[])
{
	char **v = calloc((size_t)argc + 1, sizeof(*v));
	for (int i = 0; v && i < argc; i++)
		if (!(v[i] = strdup(argv[i]))) {
			while (i-- > 0)
				free(v[i]);
			free(v);
			return NULL;
		}
	return v;
}

static void free_argv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void recorder_release(struct sp_recorder *r)
{
	sp_capture_free(r->cap);
	sp_writer_close(r->w);
	if (r->own_fd && r->fd >= 0)
		close(r->fd);
	sp_images_free(r->images);
	free_argv(r->command);
	free_argv(r->argv);
	free(r->path);
	free(r);
}

/* Made around fd (own_fd: closed at finish), with capture options co. */
static struct sp_recorder *recorder_make(const struct sp_capture_options *co, int fd,
					 bool own_fd, const char *path, const char *name,
					 int argc, char **argv)
{
	struct sp_recorder *r = calloc(1, sizeof(*r));
	if (!r) {
		if (own_fd)
			close(fd);
		sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	r->co = *co;
	r->fd = fd;
	r->own_fd = own_fd;
	/*
	 * A file a tail may read: keep the exact images for it.  Without a
	 * directory for them the recording goes on, and its tail reads the
	 * recorded paths.
	 */
	if (path && (r->images = sp_images_new(&r->err))) {
		r->co.on_module = sp_images_note;
		r->co.on_module_arg = r->images;
	}
	sp_error_clear(&r->err);
	r->argc = argc;
	if ((path && !(r->path = strdup(path))) || !(r->argv = copy_argv(argc, argv)) ||
	    !(r->w = sp_writer_new(fd, name)) || !(r->cap = sp_capture_new(&r->co, r->w))) {
		sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
		goto fail;
	}
	return r;
fail:
	sp_error_publish(&r->err);
	recorder_release(r);
	return NULL;
}

static char *const library_argv[] = { "libstackpulse", NULL };

/* Whether fd is where this process's standard output goes. */
static bool is_stdout(int fd)
{
	struct stat a, b;
	return fd == STDOUT_FILENO || (fstat(fd, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 &&
				       a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static struct sp_recorder *recorder_new(const struct sp_options *o, int fd, bool own_fd,
					const char *path)
{
	struct sp_capture_options co;
	struct sp_error err = { 0 };
	if (sp_options_to_capture(o, &co, &err) < 0) {
		if (own_fd)
			close(fd);
		sp_error_publish(&err);
		return NULL;
	}
	/* A command must not write into the stream: its output goes to stderr. */
	co.command_stdout_to_stderr = !path && is_stdout(fd);
	return recorder_make(&co, fd, own_fd, path, path ? path : "-", 1,
			     (char **)library_argv);
}

struct sp_recorder *sp_recorder_new(const struct sp_options *o, const char *path)
{
	SP_API_CHECK(o, NULL);
	SP_API_CHECK(path, NULL);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		struct sp_error err = { 0 };
		sp_error_errno(&err, "cannot create '%s'", path);
		sp_error_publish(&err);
		return NULL;
	}
	return recorder_new(o, fd, true, path);
}

struct sp_recorder *sp_recorder_new_fd(const struct sp_options *o, int fd)
{
	SP_API_CHECK(o, NULL);
	if (fd < 0 || fcntl(fd, F_GETFL) < 0) {
		sp_error_publish_new(SP_ERR_INVALID, "sp_recorder_new_fd: %d is not an open "
				     "descriptor", fd);
		return NULL;
	}
	return recorder_new(o, fd, false, NULL);
}


struct sp_recorder *sp_recorder_new_tool(const struct sp_capture_options *co, int fd,
					 const char *name, int argc, char **argv)
{
	return recorder_make(co, fd, false, NULL, name, argc, argv);
}

struct sp_capture *sp_recorder_capture(struct sp_recorder *r)
{
	return r->cap;
}

struct sp_writer *sp_recorder_writer(struct sp_recorder *r)
{
	return r->w;
}

static void keep_final(struct sp_recorder *r);

/*
 * Writes the header and lets a launched command run, once.  A recording
 * that cannot start (the command cannot be run) is over: it counts as
 * finished, and nothing more is written.
 */
static int start(struct sp_recorder *r)
{
	if (r->started)
		return 0;
	r->started = true;
	if (sp_capture_start(r->cap, r->argc, r->argv) < 0) {
		r->finished = true;
		keep_final(r);
		return fail_capture(r);
	}
	return 0;
}

static int check_pid(pid_t pid)
{
	if (pid > 0)
		return 0;
	return sp_error_publish_new(SP_ERR_INVALID, "invalid pid %d", (int)pid);
}

/* The process of thread id pid: a thread stands for its whole process. */
static pid_t process_of(pid_t pid)
{
	pid_t tgid = sp_proc_tgid(pid);
	return tgid > 0 ? tgid : pid;
}

int sp_recorder_attach(struct sp_recorder *r, pid_t pid)
{
	CHECK_LIVE(r, -1);
	if (r->started)
		return fail_state(r, __func__, "the recording has started: attach with "
				  "sp_recorder_attach_process()");
	CHECK_NOT_ALL_CPUS(r, -1);
	if (check_pid(pid) < 0)
		return -1;
	pid = process_of(pid);
	if (sp_capture_target_alive(r->cap, pid) == 1)
		return 0;
	if (sp_capture_attach_stop(r->cap, pid, false) < 0)
		return fail_capture(r);
	r->attached = true;
	return 0;
}

int sp_recorder_attach_command(struct sp_recorder *r, char *const argv[], pid_t *pid)
{
	CHECK_LIVE(r, -1);
	SP_API_CHECK(argv, -1);
	if (!argv[0])
		return sp_error_publish_new(SP_ERR_INVALID, "%s: argv is empty", __func__);
	if (r->started)
		return fail_state(r, __func__, "the recording has started: a command is "
				  "launched before it");
	if (r->command)
		return fail_state(r, __func__, "a recorder launches one command");
	CHECK_NOT_ALL_CPUS(r, -1);
	int argc = 0;
	while (argv[argc])
		argc++;
	if (!(r->command = copy_argv(argc, argv)))
		return sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
	pid_t child;
	if (sp_capture_launch(r->cap, r->command, &child) < 0)
		return fail_capture(r);
	r->attached = true;
	if (pid)
		*pid = child;
	return 0;
}

int sp_recorder_attach_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode)
{
	CHECK_LIVE(r, -1);
	if (check_pid(pid) < 0)
		return -1;
	if (mode != SP_ATTACH_STOP && mode != SP_ATTACH_NO_STOP)
		return sp_error_publish_new(SP_ERR_INVALID, "%s: unknown attach mode %d",
					    __func__, (int)mode);
	CHECK_NOT_ALL_CPUS(r, -1);
	pid = process_of(pid);
	if (sp_capture_target_alive(r->cap, pid) == 1)
		return 0;
	if (sp_capture_attach_stop(r->cap, pid, mode == SP_ATTACH_STOP) < 0)
		return fail_capture(r);
	r->attached = true;
	return 0;
}

ssize_t sp_discover_descendants(pid_t root, pid_t *pids, size_t max)
{
	if (check_pid(root) < 0)
		return -1;
	if (!pids && max)
		return sp_error_publish_new(SP_ERR_INVALID, "%s: pids is NULL", __func__);
	struct sp_proc_stat st;
	if (sp_proc_stat(root, &st) < 0)
		return sp_error_publish_new(SP_ERR_NOT_FOUND, "no process with pid %d",
					    (int)root);
	pid_t *all;
	size_t n;
	if (sp_proc_descendants(&root, 1, &all, &n) < 0) {
		struct sp_error err = { 0 };
		sp_error_errno(&err, "cannot list the descendants of %d", (int)root);
		return sp_error_publish(&err);
	}
	if (n)
		memcpy(pids, all, (n < max ? n : max) * sizeof(*pids));
	free(all);
	return (ssize_t)n;
}

int sp_recorder_refresh_threads(struct sp_recorder *r, pid_t pid)
{
	CHECK_LIVE(r, -1);
	if (check_pid(pid) < 0)
		return -1;
	CHECK_NOT_ALL_CPUS(r, -1);
	if (sp_capture_target_alive(r->cap, pid) < 0) {
		sp_error_set(&r->err, SP_ERR_NOT_FOUND, "process %d is not attached", (int)pid);
		return fail(r);
	}
	int n = sp_capture_refresh_process(r->cap, pid);
	return n < 0 ? fail_capture(r) : n;
}

/*
 * The capture layer reads system_wide and the CPU list when its handle is
 * made, and the recorder made one at sp_recorder_new(): a recorder of
 * every CPU gets a new one, made from the same options, while nothing
 * has been attached or written.  The old one is dropped only once the
 * new one records, so a refusal leaves the recorder as it was.
 */
int sp_recorder_attach_all_cpus(struct sp_recorder *r, const int *cpus, size_t n)
{
	CHECK_LIVE(r, -1);
	if (!cpus && n)
		return sp_error_publish_new(SP_ERR_INVALID, "%s: cpus is NULL", __func__);
	if (r->started)
		return fail_state(r, __func__, "the recording has started: every CPU is "
				  "attached before it");
	if (r->all_cpus)
		return fail_state(r, __func__, "the recorder records every CPU already");
	if (r->attached)
		return fail_state(r, __func__, "a process or a command is attached: a "
				  "recording holds either chosen processes or all of them; "
				  "record every CPU with another recorder");
	int online[1024];
	int nonline = sp_online_cpus(online, 1024);
	if (n > (size_t)nonline)
		return sp_error_publish_new(SP_ERR_INVALID, "%zu CPUs given, but %d are online "
					    "(/sys/devices/system/cpu/online)", n, nonline);
	for (size_t i = 0; i < n; i++) {
		bool on = false;
		for (int j = 0; j < nonline && !on; j++)
			on = online[j] == cpus[i];
		if (!on)
			return sp_error_publish_new(SP_ERR_INVALID, "CPU %d is not online (the "
						    "online CPUs are in "
						    "/sys/devices/system/cpu/online)", cpus[i]);
	}
	struct sp_capture_options co = r->co;
	co.system_wide = true;
	co.cpu_list = cpus;
	co.ncpu_list = (int)n;
	struct sp_capture *cap = sp_capture_new(&co, r->w);
	if (!cap)
		return sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
	if (sp_capture_attach_system(cap) < 0) {
		r->err = *sp_capture_last_error(cap);
		sp_capture_free(cap);
		return fail(r);
	}
	sp_capture_free(r->cap);
	r->cap = cap;
	r->co = co;
	r->co.cpu_list = NULL;	/* the caller's; read by sp_capture_new() only */
	r->all_cpus = true;
	return 0;
}

int sp_recorder_poll(struct sp_recorder *r, int timeout_ms)
{
	CHECK_LIVE(r, -1);
	if (timeout_ms < 0)
		return sp_error_publish_new(SP_ERR_INVALID, "%s: negative timeout %d",
					    __func__, timeout_ms);
	if (start(r) < 0)
		return -1;
	if (sp_capture_poll(r->cap, timeout_ms) < 0)
		return fail_capture(r);
	return 0;
}

int sp_recorder_has_pending_events(struct sp_recorder *r)
{
	CHECK_LIVE(r, -1);
	return sp_capture_has_pending(r->cap);
}

int sp_recorder_process_is_active(struct sp_recorder *r, pid_t pid)
{
	CHECK_LIVE(r, -1);
	int k = sp_capture_target_alive(r->cap, pid);
	if (k < 0) {
		sp_error_set(&r->err, SP_ERR_NOT_FOUND, "process %d is not a target of "
			     "the recorder", (int)pid);
		return fail(r);
	}
	return k;
}

int sp_recorder_targets_active(struct sp_recorder *r)
{
	CHECK_LIVE(r, -1);
	return r->all_cpus || sp_capture_targets_alive(r->cap) > 0;
}

int sp_recorder_flush(struct sp_recorder *r)
{
	CHECK_LIVE(r, -1);
	/* A drain that does not wait writes what attach queued as well. */
	return sp_recorder_poll(r, 0);
}

static void public_summary(const struct sp_summary_rec *in, struct sp_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->sample_events = in->sample_events;
	s->samples = in->samples;
	s->lost_events = in->lost_events;
	s->lost_samples = in->lost_samples;
	s->empty_stack_samples = in->empty_stack_samples;
	s->truncated_frame_markers = in->truncated_frame_markers;
	s->ignored_user_callchain_frames = in->ignored_user_callchain_frames;
	s->skipped_no_pid = in->skipped_no_pid;
	s->skipped_no_tid = in->skipped_no_tid;
	s->skipped_no_time = in->skipped_no_time;
	s->skipped_no_frames = in->skipped_no_frames;
	s->throttle_events = in->throttle_events;
	s->processes = in->processes;
	s->threads = in->threads;
	s->duration_ns = in->duration_ns;
	s->kernel_enabled = in->kernel_enabled;
	s->has_command_status = in->has_command_status;
	s->command_status = (int)in->command_status;
	s->nerrors = SP_E_COUNT;
	for (unsigned k = 0; k < SP_E_COUNT; k++)
		s->errors[k] = in->errors[k];
}

/* The summary as the recording ended, for every later question. */
static void keep_final(struct sp_recorder *r)
{
	struct sp_summary_rec rec;
	sp_capture_summary(r->cap, &rec);
	public_summary(&rec, &r->final);
}

int sp_recorder_summary(struct sp_recorder *r, struct sp_summary *s)
{
	SP_API_CHECK(r, -1);
	SP_API_CHECK(s, -1);
	if (r->finished) {
		*s = r->final;
		return 0;
	}
	struct sp_summary_rec rec;
	sp_capture_summary(r->cap, &rec);
	public_summary(&rec, s);
	return 0;
}

int sp_recorder_finish(struct sp_recorder *r, struct sp_summary *s)
{
	CHECK_LIVE(r, -1);
	if (start(r) < 0) {
		if (s)
			*s = r->final;
		return -1;
	}
	int rc = 0;
	r->finished = true;
	if (sp_capture_finish(r->cap) < 0)
		rc = fail_capture(r);
	keep_final(r);
	if (rc == 0 && sp_writer_flush(r->w) < 0) {
		sp_error_set(&r->err, SP_ERR_ERRNO, "%s", sp_writer_error(r->w));
		rc = fail(r);
	}
	if (r->own_fd && r->fd >= 0) {
		if (close(r->fd) < 0 && rc == 0) {
			sp_error_errno(&r->err, "cannot write '%s'", r->path);
			rc = fail(r);
		}
		r->fd = -1;
	}
	if (s)
		*s = r->final;
	return rc;
}

void sp_recorder_free(struct sp_recorder *r)
{
	if (!r)
		return;
	/* A recording never started writes nothing: its command never ran. */
	if (r->started && !r->finished)
		sp_recorder_finish(r, NULL);
	recorder_release(r);
}

const char *sp_recorder_path(const struct sp_recorder *r)
{
	return r ? r->path : NULL;
}

int sp_recorder_take_images(struct sp_recorder *r, struct sp_images **im)
{
	SP_API_CHECK(r, -1);
	SP_API_CHECK(im, -1);
	if (!r->path)
		return fail_state(r, "sp_recorder_tail", "the recorder writes to a "
				  "descriptor, not a file a tail can read");
	if (r->images_taken)
		return fail_state(r, "sp_recorder_tail", "a tail was taken from this "
				  "recorder before");
	r->images_taken = true;
	/*
	 * The recording goes on adding to the set the tail now holds: both
	 * hold a reference, and the last to let go removes the directory.
	 */
	*im = sp_images_ref(r->images);
	return 0;
}

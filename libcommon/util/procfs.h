/* SPDX-License-Identifier: MIT
 * Reading /proc and /sys: a process's state, and the kernel settings that
 * govern perf events.  The library's one /proc reader: functions return
 * 0 or -1 with errno set, and never print.
 */
#ifndef SP_PROCFS_H
#define SP_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What /proc/PID/stat says of a process. */
struct sp_proc_stat {
	pid_t pid, ppid;
	char state;		/* R, S, D, T, t, Z, ... */
	char comm[64];
	uint64_t start_ns;	/* start time in ns since boot (field 22) */
	uid_t uid;		/* owner of /proc/PID */
	bool kthread;		/* a kernel thread (PF_KTHREAD in field 9) */
};

/* Reads /proc/PID/stat (and the owner of /proc/PID). */
int sp_proc_stat(pid_t pid, struct sp_proc_stat *st);

/* One line of /proc/PID/maps. */
struct sp_proc_map {
	uint64_t start, end, pgoff;
	unsigned maj, min;
	uint64_t ino;
	int prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
	bool shared;
	bool deleted;		/* the path ended in " (deleted)", now removed */
	const char *path;	/* "" for anonymous memory */
};

/*
 * Parses one line of /proc/PID/maps: len bytes at line, followed by a NUL
 * (what getline() gives); a final newline is removed.  The line is
 * changed in place and m->path points into it.  Returns 0, or -1 for a
 * malformed line.
 */
int sp_proc_maps_parse_line(char *line, size_t len, struct sp_proc_map *m);

/*
 * Calls fn for every mapping of pid, in address order, stopping when fn
 * returns nonzero.  The map and its path are valid only during the call.
 */
int sp_proc_maps(pid_t pid, int (*fn)(const struct sp_proc_map *m, void *arg),
		 void *arg);

/*
 * The thread ids of pid, from /proc/PID/task.  *tids is malloc'd and
 * owned by the caller.
 */
int sp_proc_tasks(pid_t pid, pid_t **tids, size_t *n);

/* Thread comm from /proc/PID/task/TID/comm into buf (NUL-terminated). */
int sp_proc_thread_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/* The target of /proc/PID/exe into buf (NUL-terminated). */
int sp_proc_exe(pid_t pid, char *buf, size_t len);

/*
 * The NUL-separated arguments of /proc/PID/cmdline into buf; returns the
 * number of bytes stored (0 for a kernel thread or an exited process).
 */
ssize_t sp_proc_cmdline(pid_t pid, char *buf, size_t len);

/*
 * Every living descendant of the given processes (not the processes
 * themselves), found by walking /proc.  *out is malloc'd, owned by the
 * caller.
 */
int sp_proc_descendants(const pid_t *roots, size_t nroots, pid_t **out, size_t *n);

/*
 * Removes the " (deleted)" the kernel appends to the path of a file that
 * was removed (in maps, mmap records, /proc/PID/exe); says whether it was
 * there.
 */
bool sp_path_strip_deleted(char *path);

/* Whether the file name looks like a CPython runtime: python3, python3.12,
   libpython3.12.so.1.0.  *via is set to "exe" or "libpython". */
bool sp_path_is_cpython(const char *path, const char **via);

/*
 * Reads the decimal integer that starts a one-value file such as
 * /proc/sys/kernel/perf_event_paranoid.  Returns 0, or -1 with errno set
 * (EINVAL when the file does not start with a number).
 */
int sp_read_i64_file(const char *path, int64_t *v);

/*
 * The pid a service's pid file holds: its text (len bytes, no NUL needed)
 * must begin with a decimal pid, from 1 to 4194304 (the kernel's highest),
 * and may go on after a blank or a newline.  Returns it, or 0.
 */
pid_t sp_pidfile_parse(const char *text, size_t len);

/*
 * /proc/sys/kernel/perf_event_max_sample_rate: the highest sampling
 * frequency allowed, which the kernel lowers on its own under load.
 * Returns the cap, or 0 when it cannot be read.
 */
uint64_t sp_kernel_max_sample_rate(void);

/* /proc/sys/kernel/perf_event_paranoid; INT32_MIN when it cannot be read. */
int sp_perf_paranoid(void);

/*
 * Whether this process has capability number cap (38 CAP_PERFMON, 21
 * CAP_SYS_ADMIN, ...) in its effective set (CapEff of /proc/self/status).
 */
bool sp_cap_effective(int cap);

/*
 * The online CPUs, from /sys/devices/system/cpu/online (a list such as
 * "0-3,6"), at most max of them into cpus; when the list cannot be read,
 * CPUs 0 to sysconf(_SC_NPROCESSORS_ONLN) - 1.  Returns how many.
 */
int sp_online_cpus(int *cpus, int max);

#endif

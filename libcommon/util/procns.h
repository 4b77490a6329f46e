/* SPDX-License-Identifier: MIT
 * Processes in containers: whether a process has a mount namespace of
 * its own, its pid in its own PID namespace, and opening a file by the
 * path the process sees (through /proc/PID/root).  The util layer.
 */
#ifndef SP_PROCNS_H
#define SP_PROCNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sp_proc_ns {
	/*
	 * The inode of /proc/PID/ns/mnt, when it differs from this
	 * process's: then the process's paths name files in its own root,
	 * not ours.  0: the same mount namespace (or unreadable).
	 */
	uint64_t mntns;
	/*
	 * The pid the process has in its own PID namespace (the last field
	 * of NSpid in /proc/PID/status), when that namespace is not ours;
	 * 0: the same PID namespace (or unreadable).
	 */
	uint32_t nspid;
};

/*
 * The pid in its own PID namespace from the text of /proc/PID/status
 * (len bytes, no NUL needed): the last number of the NSpid: line, when it
 * has more than one (the process is in a PID namespace below ours); else
 * 0, also for a number that does not fit 32 bits.
 */
uint32_t sp_proc_status_nspid(const char *text, size_t len);

/*
 * The process a thread belongs to, from the text of /proc/TID/status:
 * the number of the Tgid: line; 0 when there is none or it is malformed.
 */
uint32_t sp_proc_status_tgid(const char *text, size_t len);

/* The process thread tid belongs to (its Tgid), or -1 when unreadable. */
pid_t sp_proc_tgid(pid_t tid);

/*
 * Fills ns for pid.  Returns 0, or -1 with errno set when /proc/PID/ns/mnt
 * cannot be read (EACCES: no permission to look into the process; ns is
 * then zero, as for a process of our own namespaces).
 */
int sp_proc_ns_get(pid_t pid, struct sp_proc_ns *ns);

/*
 * Opens path as process pid sees it: resolved inside /proc/PID/root, with
 * absolute symlinks and ".." kept inside that root (openat2's
 * RESOLVE_IN_ROOT; on kernels without openat2, /proc/PID/root + path).
 * flags as for open(2).  Returns an fd, or -1 with errno set.
 */
int sp_proc_open_in_root(pid_t pid, const char *path, int flags);

/*
 * Whether this process may read the files of process pid: 0 when pid
 * shares our mount namespace or its executable opens inside its root;
 * -1 with errno set (EACCES, EPERM: no permission) and the path that
 * failed in what.  A missing executable (deleted) is not a failure.
 */
int sp_proc_root_check(pid_t pid, char *what, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
/* Processes in containers (see procns.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/procns.h"

/*
 * The numbers of the line of a /proc/PID/status text that starts with
 * key (a process's name cannot forge one: it is escaped on its own line):
 * the first and the last, and how many.  Returns false when there is no
 * such line, or it holds anything but blanks and numbers of 32 bits.
 */
static bool status_numbers(const char *text, size_t len, const char *key, uint32_t *first,
			   uint32_t *last, int *count)
{
	const char *p = text, *end = text + len;
	size_t kl = strlen(key);
	while (p < end && !((size_t)(end - p) >= kl && memcmp(p, key, kl) == 0)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	if (p >= end)
		return false;
	*count = 0;
	for (p += kl; p < end && *p != '\n';) {
		uint64_t v;
		if (*p == ' ' || *p == '\t') {
			p++;
			continue;
		}
		if (*p < '0' || *p > '9')
			return false;
		for (v = 0; p < end && *p >= '0' && *p <= '9'; p++)
			if ((v = v * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
				return false;
		if (!(*count)++)
			*first = (uint32_t)v;
		*last = (uint32_t)v;
	}
	return true;
}

uint32_t sp_proc_status_nspid(const char *text, size_t len)
{
	uint32_t first, last;
	int n;
	return status_numbers(text, len, "NSpid:", &first, &last, &n) && n > 1 ? last : 0;
}

uint32_t sp_proc_status_tgid(const char *text, size_t len)
{
	uint32_t first, last;
	int n;
	return status_numbers(text, len, "Tgid:", &first, &last, &n) && n == 1 ? first : 0;
}

/* Reads /proc/PID/status into buf; returns the bytes read (0: none). */
static size_t read_status(pid_t pid, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t got = 0;
	ssize_t k;
	while (got < size && (k = read(fd, buf + got, size - got)) > 0)
		got += (size_t)k;
	close(fd);
	return got;
}

pid_t sp_proc_tgid(pid_t tid)
{
	char buf[8192];
	uint32_t t = sp_proc_status_tgid(buf, read_status(tid, buf, sizeof(buf)));
	return t > 0 && t <= INT32_MAX ? (pid_t)t : -1;
}

static uint32_t nspid_of(pid_t pid)
{
	char buf[8192];
	return sp_proc_status_nspid(buf, read_status(pid, buf, sizeof(buf)));
}

int sp_proc_ns_get(pid_t pid, struct sp_proc_ns *ns)
{
	char path[64];
	struct stat self, them;
	memset(ns, 0, sizeof(*ns));
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat(path, &them) < 0)
		return -1;
	if (stat("/proc/self/ns/mnt", &self) == 0 &&
	    (self.st_ino != them.st_ino || self.st_dev != them.st_dev))
		ns->mntns = them.st_ino;
	ns->nspid = nspid_of(pid);
	return 0;
}

int sp_proc_root_check(pid_t pid, char *what, size_t len)
{
	struct sp_proc_ns ns;
	char exe[4096];
	snprintf(what, len, "/proc/%d/ns/mnt", (int)pid);
	if (sp_proc_ns_get(pid, &ns) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!ns.mntns)
		return 0;
	snprintf(what, len, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(what, exe, sizeof(exe) - 1);
	if (n < 0)
		return errno == ENOENT ? 0 : -1;
	exe[n] = '\0';
	snprintf(what, len, "/proc/%d/root%s", (int)pid, exe);
	int fd = sp_proc_open_in_root(pid, exe, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return errno == EACCES || errno == EPERM ? -1 : 0;
	close(fd);
	return 0;
}

int sp_proc_open_in_root(pid_t pid, const char *path, int flags)
{
	char p[4200];
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	int dir = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, path);
		fd = open(p, flags | O_CLOEXEC);
	}
	int e = errno;
	close(dir);
	errno = e;
	return fd;
}

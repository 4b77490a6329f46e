/* SPDX-License-Identifier: MIT */
/* Reading process state from /proc (see procfs.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/procfs.h"

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	int e = errno;
	close(fd);
	errno = e;
	return (ssize_t)got;
}

int sp_proc_stat(pid_t pid, struct sp_proc_stat *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t n = read_file(path, buf, sizeof(buf) - 1);
	if (n <= 0) {
		if (n == 0)
			errno = ESRCH;
		return -1;
	}
	buf[n] = '\0';
	/* The comm is in parentheses and may itself hold ')' and spaces. */
	char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || rp[1] != ' ') {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	st->pid = pid;
	size_t cl = (size_t)(rp - lp - 1);
	if (cl >= sizeof(st->comm))
		cl = sizeof(st->comm) - 1;
	memcpy(st->comm, lp + 1, cl);
	st->comm[cl] = '\0';
	/* Fields from 3 (state) on. */
	char *p = rp + 2;
	st->state = *p;
	unsigned long long v[20];
	int field = 3;
	char *save = NULL;
	for (char *tok = strtok_r(p, " ", &save); tok && field <= 22;
	     tok = strtok_r(NULL, " ", &save), field++)
		if (field >= 3)
			v[field - 3] = strtoull(tok, NULL, 10);
	if (field <= 22) {
		errno = EINVAL;
		return -1;
	}
	st->ppid = (pid_t)v[4 - 3];
	st->kthread = (v[9 - 3] & 0x00200000u) != 0;
	long hz = sysconf(_SC_CLK_TCK);
	st->start_ns = v[22 - 3] * (1000000000ull / (unsigned long long)(hz > 0 ? hz : 100));
	struct stat sb;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &sb) == 0)
		st->uid = sb.st_uid;
	return 0;
}

int sp_proc_maps_parse_line(char *line, size_t len, struct sp_proc_map *m)
{
	if (len > 0 && line[len - 1] == '\n')
		line[--len] = '\0';
	char perms[8] = "";	/* a short field reads as "-" beyond its end */
	unsigned long long start, end, off, ino;
	int pathpos = 0;
	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms,
		   &off, &m->maj, &m->min, &ino, &pathpos) < 7)
		return -1;
	m->start = start;
	m->end = end;
	m->pgoff = off;
	m->ino = ino;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
		  (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->shared = perms[3] == 's';
	char *p = pathpos ? line + pathpos : line + len;
	m->deleted = sp_path_strip_deleted(p);
	m->path = p;
	return 0;
}

int sp_proc_maps(pid_t pid, int (*fn)(const struct sp_proc_map *m, void *arg),
		 void *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct sp_proc_map m;
		if (sp_proc_maps_parse_line(line, (size_t)n, &m) < 0)
			continue;
		if ((rc = fn(&m, arg)) != 0)
			break;
	}
	free(line);
	fclose(f);
	return rc < 0 ? -1 : 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

int sp_proc_tasks(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	size_t alloc = 0, k = 0;
	pid_t *v = NULL;
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if ((rc = SP_ALLOC_GROW(v, k + 1, alloc)) == 0)
			v[k++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	if (rc < 0) {
		free(v);
		errno = ENOMEM;
		return -1;
	}
	if (k)
		qsort(v, k, sizeof(*v), cmp_pid);
	*tids = v;
	*n = k;
	return 0;
}

int sp_proc_thread_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	ssize_t n = read_file(path, buf, len - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int sp_proc_exe(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, buf, len - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

ssize_t sp_proc_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	return read_file(path, buf, len);
}

int sp_proc_descendants(const pid_t *roots, size_t nroots, pid_t **out, size_t *n)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	/* Every process with its parent, then a walk from the roots. */
	size_t alloc = 0, k = 0;
	struct pp { pid_t pid, ppid; } *all = NULL;
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		struct sp_proc_stat st;
		if (sp_proc_stat((pid_t)atoi(e->d_name), &st) < 0)
			continue;
		if ((rc = SP_ALLOC_GROW(all, k + 1, alloc)) == 0) {
			all[k].pid = st.pid;
			all[k++].ppid = st.ppid;
		}
	}
	closedir(d);
	pid_t *res = rc == 0 ? malloc((k + nroots + 1) * sizeof(*res)) : NULL;
	if (!res) {
		free(all);
		errno = ENOMEM;
		return -1;
	}
	/* res[0..nroots) are the roots; found descendants follow them. */
	memcpy(res, roots, nroots * sizeof(*res));
	size_t nres = nroots;
	for (size_t i = 0; i < nres; i++)
		for (size_t j = 0; j < k; j++) {
			if (all[j].ppid != res[i] || all[j].pid == 0)
				continue;
			bool seen = false;
			for (size_t q = 0; q < nres && !seen; q++)
				seen = res[q] == all[j].pid;
			if (!seen)
				res[nres++] = all[j].pid;
		}
	free(all);
	memmove(res, res + nroots, (nres - nroots) * sizeof(*res));
	*out = res;
	*n = nres - nroots;
	return 0;
}

bool sp_path_is_cpython(const char *path, const char **via)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "libpython3", 10) == 0) {
		*via = "libpython";
		return true;
	}
	if (strncmp(base, "python3", 7) == 0) {
		const char *p = base + 7;
		while (*p == '.' || isdigit((unsigned char)*p))
			p++;
		/* "python3", "python3.12", "python3.12d" (debug build) */
		if (*p == '\0' || (p[0] == 'd' && p[1] == '\0')) {
			*via = "exe";
			return true;
		}
	}
	return false;
}

bool sp_path_strip_deleted(char *path)
{
	static const char del[] = " (deleted)";
	size_t n = strlen(path), d = sizeof(del) - 1;
	if (n <= d || strcmp(path + n - d, del) != 0)
		return false;
	path[n - d] = '\0';
	return true;
}

int sp_read_i64_file(const char *path, int64_t *v)
{
	char buf[64];
	ssize_t n = read_file(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	char *end;
	errno = 0;
	long long x = strtoll(buf, &end, 10);
	if (end == buf) {
		errno = EINVAL;
		return -1;
	}
	*v = x;
	return 0;
}

uint64_t sp_kernel_max_sample_rate(void)
{
	int64_t v;
	if (sp_read_i64_file("/proc/sys/kernel/perf_event_max_sample_rate", &v) < 0)
		return 0;
	return (uint64_t)v;
}

int sp_perf_paranoid(void)
{
	int64_t v;
	if (sp_read_i64_file("/proc/sys/kernel/perf_event_paranoid", &v) < 0)
		return INT32_MIN;
	return (int)v;
}

bool sp_cap_effective(int cap)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0)
			v = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	return cap >= 0 && cap < 64 && (v & (1ull << cap));
}

int sp_online_cpus(int *cpus, int max)
{
	char buf[1024];
	int n = 0;
	ssize_t k = read_file("/sys/devices/system/cpu/online", buf, sizeof(buf) - 1);
	if (k <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (int i = 0; i < c && i < max; i++)
			cpus[n++] = i;
		return n;
	}
	buf[k] = '\0';
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save)) {
		int a, b;
		if (sscanf(tok, "%d-%d", &a, &b) != 2)
			b = a = atoi(tok);
		for (int i = a; i <= b && n < max; i++)
			cpus[n++] = i;
	}
	return n;
}

pid_t sp_pidfile_parse(const char *text, size_t len)
{
	uint64_t v = 0;
	size_t i = 0;
	for (; i < len && text[i] >= '0' && text[i] <= '9'; i++)
		if ((v = v * 10 + (uint64_t)(text[i] - '0')) > 4194304)
			return 0;
	if (i == 0 || (i < len && !strchr(" \t\r\n", text[i])) || (i < len && text[i] == '\0'))
		return 0;
	return (pid_t)v;
}

/* SPDX-License-Identifier: MIT */
/* Perf maps and the rules for trusting them (see perfmaps.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/perfmaps.h"
#include "util/hashmap.h"
#include "util/procns.h"

/* What the stream said of a process. */
struct proc {
	uint32_t uid;
	bool have_uid, cpython, have_start;
	uint64_t start;		/* as sp-capture saw it: the key of an archived map */
	/*
	 * In a container (process record's mntns and nspid): its map is in
	 * its own /tmp under its own pid; a forked child inherits own_root and
	 * pidns, not the pid (0: unknown, no map then).
	 */
	bool own_root, pidns;
	uint32_t nspid;
};

struct perfmap {
	bool loaded, refused;
	off_t size;		/* when last read */
	unsigned gen;
	struct sp_symtab t;
};

struct sp_perfmaps {
	const struct sp_sym_search *s;
	sp_sym_warn_fn *warn;
	void *warn_arg;
	struct sp_u64map procs;	/* pid -> struct proc */
	struct sp_u64map maps;	/* pid -> struct perfmap */
	struct sp_perfmaps_stats st;
};

struct sp_perfmaps *sp_perfmaps_new(const struct sp_sym_search *s, sp_sym_warn_fn *warn,
				    void *warn_arg)
{
	struct sp_perfmaps *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	pm->s = s;
	pm->warn = warn;
	pm->warn_arg = warn_arg;
	sp_u64map_init(&pm->procs);
	sp_u64map_init(&pm->maps);
	return pm;
}

void sp_perfmaps_reset(struct sp_perfmaps *pm)
{
	sp_u64map_release(&pm->procs, free);
}

static void perfmap_free(void *v)
{
	struct perfmap *m = v;
	sp_symtab_release(&m->t);
	free(m);
}

void sp_perfmaps_free(struct sp_perfmaps *pm)
{
	if (!pm)
		return;
	sp_perfmaps_reset(pm);
	sp_u64map_release(&pm->maps, perfmap_free);
	free(pm);
}

static struct proc *proc_get(struct sp_perfmaps *pm, uint32_t pid)
{
	struct proc *p = sp_u64map_get(&pm->procs, pid);
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (p && sp_u64map_put(&pm->procs, pid, p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

int sp_perfmaps_note(struct sp_perfmaps *pm, const struct sp_record *rec)
{
	uint64_t pid = 0, v, ppid;
	bool b;
	struct proc *p;
	if (rec->type != SP_R_RUNTIME && rec->type != SP_R_PROCESS && rec->type != SP_R_FORK)
		return 0;	/* samples above all: the most records, nothing to learn */
	sp_map_u64(rec->map, "pid", &pid);
	switch (rec->type) {
	case SP_R_RUNTIME:
		if (!sp_map_bool(rec->map, "cpython", &b))
			return 0;
		if (!(p = proc_get(pm, (uint32_t)pid)))
			return -1;
		p->cpython = b;
		return 0;
	case SP_R_PROCESS:
		if (!(p = proc_get(pm, (uint32_t)pid)))
			return -1;
		if (sp_map_u64(rec->map, "uid", &v)) {
			p->uid = (uint32_t)v;
			p->have_uid = true;
		}
		if (sp_map_u64(rec->map, "start_time", &v)) {
			p->start = v;
			p->have_start = true;
		}
		p->own_root = sp_map_u64(rec->map, "mntns", &v) && v != 0;
		p->nspid = sp_map_u64(rec->map, "nspid", &v) && v <= UINT32_MAX ? (uint32_t)v : 0;
		p->pidns = p->nspid != 0;
		return 0;
	case SP_R_FORK:
		/* A new process (not a thread): it starts now, as its parent's user. */
		if (!sp_map_u64(rec->map, "ppid", &ppid) || ppid == pid)
			return 0;
		if (!(p = proc_get(pm, (uint32_t)pid)))
			return -1;
		if (sp_map_u64(rec->map, "time", &v)) {
			p->start = v;
			p->have_start = true;
		}
		const struct proc *parent = sp_u64map_get(&pm->procs, (uint32_t)ppid);
		p->uid = parent ? parent->uid : 0;
		p->have_uid = parent && parent->have_uid;
		p->own_root = parent && parent->own_root;
		p->pidns = parent && parent->pidns;
		p->nspid = 0;
		return 0;
	default:
		return 0;
	}
}

static bool wanted(const struct sp_perfmaps *pm, uint32_t pid)
{
	const struct proc *p;
	switch (pm->s->perf_maps) {
	case SP_PERF_MAPS_NONE:
		return false;
	case SP_PERF_MAPS_PYTHON:
		p = sp_u64map_get(&pm->procs, pid);
		return p && p->cpython;
	case SP_PERF_MAPS_PIDS:
		for (size_t i = 0; i < pm->s->nperf_map_pids; i++)
			if (pm->s->perf_map_pids[i] == pid)
				return true;
		return false;
	default:
		return true;
	}
}

static void refuse(struct sp_perfmaps *pm, struct perfmap *m, const char *path, const char *why)
{
	if (!m->refused && pm->warn) {
		char msg[4400];
		snprintf(msg, sizeof(msg), "refusing '%s': %s", path, why);
		pm->warn(pm->warn_arg, msg);
	}
	m->refused = true;
	pm->st.refused++;
}

/* Reads pid's map into m the first time, and again when it has grown. */
static void load(struct sp_perfmaps *pm, uint32_t pid, struct perfmap *m)
{
	const struct sp_sym_search *s = pm->s;
	const struct proc *p = sp_u64map_get(&pm->procs, pid);
	char path[4096], inroot[64];
	/* A container's map is in its own root, named by the pid it has there. */
	bool in_root = !s->archive && p && p->own_root && strcmp(s->perf_map_dir, "/tmp") == 0;
	if (in_root && p->pidns && !p->nspid)
		return;
	if (s->archive && p && p->have_start)
		snprintf(path, sizeof(path), "%s/perf-maps/perf-%u-%llu.map", s->archive, pid,
			 (unsigned long long)p->start);
	else if (in_root) {
		snprintf(inroot, sizeof(inroot), "/tmp/perf-%u.map", p->nspid ? p->nspid : pid);
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, inroot);
	} else
		snprintf(path, sizeof(path), "%s/perf-%u.map", s->perf_map_dir, pid);
	/* Not through a symlink, and only a regular file of a trusted owner. */
	int fd = in_root ? sp_proc_open_in_root((pid_t)pid, inroot, O_RDONLY | O_NOFOLLOW |
						 O_NONBLOCK) :
		open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0 || (m->loaded && sb.st_size <= m->size)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	uid_t owner = p && p->have_uid ? p->uid : geteuid();
	/* An archived map was checked when it was kept; its copier owns it now. */
	bool archived = s->archive && strncmp(path, s->archive, strlen(s->archive)) == 0;
	bool owned = sb.st_uid == 0 || sb.st_uid == owner || (archived && sb.st_uid == geteuid());
	const char *why = !S_ISREG(sb.st_mode) ? "not a regular file" :
		s->force_perf_maps ? NULL :
		(sb.st_mode & S_IWOTH) ? "writable by every user (use --force-perf-maps to read it anyway)" :
		!owned ? "owned by neither root nor the process's user "
			 "(use --force-perf-maps to read it anyway)" : NULL;
	if (why) {
		close(fd);
		refuse(pm, m, path, why);
		return;
	}
	sp_symtab_release(&m->t);
	sp_symtab_init(&m->t);
	/* Read from the descriptor that was checked, not the path again. */
	if (sp_perfmap_load_fd(fd, &m->t, &pm->st.lines_skipped) == 0) {
		m->loaded = true;
		m->size = sb.st_size;
		m->gen++;
		pm->st.loaded++;
	}
}

const struct sp_sym *sp_perfmaps_find(struct sp_perfmaps *pm, uint32_t pid, uint64_t addr)
{
	if (!wanted(pm, pid))
		return NULL;
	struct perfmap *m = sp_u64map_get(&pm->maps, pid);
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m || sp_u64map_put(&pm->maps, pid, m) < 0) {
			free(m);
			return NULL;
		}
		sp_symtab_init(&m->t);
	}
	if (m->refused)
		return NULL;
	if (!m->loaded)
		load(pm, pid, m);
	const struct sp_sym *sym = m->loaded ? sp_symtab_find(&m->t, addr) : NULL;
	if (!sym && m->loaded && !m->refused) {
		load(pm, pid, m);	/* it may have grown */
		sym = m->loaded ? sp_symtab_find(&m->t, addr) : NULL;
	}
	return sym;
}

unsigned sp_perfmaps_generation(const struct sp_perfmaps *pm, uint32_t pid)
{
	const struct perfmap *m = sp_u64map_get(&pm->maps, pid);
	return m ? m->gen : 0;
}

void sp_perfmaps_stats(const struct sp_perfmaps *pm, struct sp_perfmaps_stats *st)
{
	*st = pm->st;
}

/*
 * sp-symbolize: names the frames of an unwound stackpulse stream:
 * functions, inline frames and source lines from ELF and DWARF files
 * (found by build-id, .gnu_debuglink or debuginfod), kernel functions
 * from a saved kallsyms, JIT functions from perf maps.  Every frame is
 * resolved once and interned; each stack becomes a symstack with the
 * same id, so samples pass through unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <elfutils/debuginfod.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buildid.h"
#include "sym/elfsym.h"
#include "stream/header.h"
#include "util/modfile.h"
#include "stream/stream.h"
#include "sym/symtab.h"
#include "tool.h"
#include "unwind/unwind.h"

static void usage(void)
{
	printf("Usage: %s [options] [FILE]\n"
	       "Name the frames of an unwound stackpulse stream.\n"
	       "\n"
	       "  -o, --output FILE         write the symbolized stream to FILE\n"
	       "      --kallsyms FILE|none  kernel names from a saved kallsyms, or none;\n"
	       "                            default: /proc/kallsyms if recorded in this boot\n"
	       "      --root DIR            look recorded module paths up under DIR\n"
	       "      --module-dir DIR      build-id layout (DIR/.build-id/xx/rest); repeatable\n"
	       "      --archive DIR         an archive of sp-capture --archive: module and debug\n"
	       "                            files, perf maps (by pid and start) and kallsyms\n"
	       "      --debug-dir DIR       debug files in build-id layout (xx/rest.debug) or by\n"
	       "                            .gnu_debuglink; repeatable (default /usr/lib/debug)\n"
	       "      --no-debuginfod       do not ask DEBUGINFOD_URLS servers for debug files\n"
	       "      --perf-map-dir DIR    read perf-PID.map files from DIR (default /tmp)\n"
	       "      --perf-maps-for all|python|PID[,PID...]\n"
	       "                            whose perf maps to use (default all)\n"
	       "      --no-perf-maps        use no perf maps\n"
	       "      --force-perf-maps     use perf maps owned by other users too\n"
	       "      --no-inline           no inline frames\n"
	       "      --no-lines            no source files and lines\n"
	       "      --no-demangle         keep C++ and Rust names mangled\n"
	       "      --no-cache            do not keep inflated copies of compressed debug files\n"
	       "                            (in $XDG_CACHE_HOME/stackpulse or ~/.cache/stackpulse)\n"
	       "      --max-record BYTES    largest input record accepted (default %u)\n"
	       "  -h, --help                show this help\n"
	       "  -V, --version             show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, SP_DEFAULT_MAX_RECORD);
}

/* Functions hidden in a profiler's default view: start-up scaffolding. */
static const char *const hidden_names[] = {
	"_start", "__libc_start_main", "__libc_start_main_impl",
	"__libc_start_call_main", "start_thread", "clone", "clone3", "__clone3",
	"__clone", "thread_start", "entry_SYSCALL_64", "entry_SYSCALL_64_after_hwframe",
	"do_syscall_64", "ret_from_fork", "ret_from_fork_asm", "asm_sysvec_apic_timer_interrupt",
};

enum perfmaps_mode { PM_ALL, PM_PYTHON, PM_PIDS, PM_NONE };

struct options {
	const char *kallsyms;	/* NULL: the default rule; "none" */
	struct sp_modfile_search search;
	struct sp_elfsym_options eo;
	const char *perf_map_dir;
	const char *archive;	/* perf maps there are named perf-PID-START.map */
	bool kallsyms_archived;	/* kallsyms is the archive's: a bad one is not fatal */
	enum perfmaps_mode pm;
	uint32_t *pm_pids;
	size_t npm_pids;
	bool force_perf_maps;
	bool debuginfod;	/* DEBUGINFOD_URLS set and not --no-debuginfod */
};

/* A module file's symbolizer, kept across segments by (path, build-id). */
struct modsym {
	char *path;
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen;
	bool content;		/* bid is a content identity */
	struct sp_elfsym *es;	/* NULL: missing or mismatched */
	bool mismatch;
};

/* A module record of the current segment. */
struct module {
	bool defined;
	char *path;
	char kind[16];
	uint32_t pid;
	struct modsym *ms;	/* elf modules, once looked at */
};

struct perfmap {
	uint32_t pid;
	bool loaded, refused;
	off_t size;
	unsigned gen;
	struct sp_symtab t;
};

/* A frame as interned: what it was resolved from. */
struct fkey {
	uint64_t module, addr, flags, gen;
};

struct state {
	struct options o;
	struct sp_writer *w;
	bool this_boot;

	struct modsym **mods;
	size_t nmods;
	struct module *modules;	/* by id */
	size_t nmodules;

	struct sp_elfsym *vdso;	/* this process's vDSO, for streams of this boot */
	bool vdso_tried;

	struct sp_symtab ksyms;
	int kstate;		/* 0 not tried, 1 loaded, -1 none */

	struct perfmap *maps;
	size_t nmaps;
	struct { uint32_t pid; bool cpython; uint32_t uid; bool have_uid;
		 uint64_t start; bool have_start; } *procs;
	size_t nprocs;

	struct fkey *fkeys;	/* frame id -> key */
	size_t nframes, capframes;
	uint64_t *fslots;	/* frame id + 1; 0: empty */
	size_t capfslots;

	/* Counters for the symbolize record. */
	uint64_t by_origin[6], address_only, modules_missing, modules_mismatched;
	uint64_t perf_map_lines_skipped, perf_maps_refused, perf_maps_loaded;
	uint64_t debuginfo_modules;
};

static const char *const origins[6] = { "symtab", "dynsym", "debuginfo", "perf-map",
					 "kallsyms", "address-only" };

static void count_origin(struct state *st, const char *origin)
{
	for (int i = 0; i < 6; i++)
		if (strcmp(origins[i], origin) == 0)
			st->by_origin[i]++;
	if (strcmp(origin, "address-only") == 0)
		st->address_only++;
}

static bool is_hidden(const char *name)
{
	for (size_t i = 0; name && i < sizeof(hidden_names) / sizeof(*hidden_names); i++)
		if (strcmp(name, hidden_names[i]) == 0)
			return true;
	return false;
}

/* Process table: uid (for perf-map ownership) and the latest CPython status. */
static size_t proc_index(struct state *st, uint32_t pid)
{
	for (size_t i = 0; i < st->nprocs; i++)
		if (st->procs[i].pid == pid)
			return i;
	st->procs = sp_xrealloc(st->procs, (st->nprocs + 1) * sizeof(*st->procs));
	memset(&st->procs[st->nprocs], 0, sizeof(*st->procs));
	st->procs[st->nprocs].pid = pid;
	return st->nprocs++;
}

static void note_record(struct state *st, const struct sp_record *rec)
{
	uint64_t pid = 0, v;
	bool b;
	sp_map_u64(rec->map, "pid", &pid);
	if (rec->type == SP_R_RUNTIME && sp_map_bool(rec->map, "cpython", &b)) {
		size_t i = proc_index(st, (uint32_t)pid);	/* may move st->procs */
		st->procs[i].cpython = b;
	}
	if (rec->type == SP_R_PROCESS && sp_map_u64(rec->map, "uid", &v)) {
		size_t i = proc_index(st, (uint32_t)pid);
		st->procs[i].uid = (uint32_t)v;
		st->procs[i].have_uid = true;
	}
	/* The start that keys an archived perf map: as sp-capture saw it. */
	if (rec->type == SP_R_PROCESS && sp_map_u64(rec->map, "start_time", &v)) {
		size_t i = proc_index(st, (uint32_t)pid);
		st->procs[i].start = v;
		st->procs[i].have_start = true;
	}
	if (rec->type == SP_R_FORK && sp_map_u64(rec->map, "ppid", &v) && v != pid &&
	    sp_map_u64(rec->map, "time", &v)) {
		size_t i = proc_index(st, (uint32_t)pid);
		st->procs[i].start = v;
		st->procs[i].have_start = true;
	}
	if (rec->type == SP_R_FORK && sp_map_u64(rec->map, "ppid", &v) && v != pid) {
		size_t p = proc_index(st, (uint32_t)v), c = proc_index(st, (uint32_t)pid);
		st->procs[c].uid = st->procs[p].uid;
		st->procs[c].have_uid = st->procs[p].have_uid;
	}
}

static bool perf_maps_allowed(struct state *st, uint32_t pid)
{
	switch (st->o.pm) {
	case PM_NONE:
		return false;
	case PM_PYTHON:
		for (size_t i = 0; i < st->nprocs; i++)
			if (st->procs[i].pid == pid)
				return st->procs[i].cpython;
		return false;
	case PM_PIDS:
		for (size_t i = 0; i < st->o.npm_pids; i++)
			if (st->o.pm_pids[i] == pid)
				return true;
		return false;
	default:
		return true;
	}
}

/* The perf map of pid, loaded (or reloaded after it grew) if trusted. */
static struct perfmap *perfmap_get(struct state *st, uint32_t pid, bool reload_if_grown)
{
	struct perfmap *m = NULL;
	for (size_t i = 0; i < st->nmaps && !m; i++)
		if (st->maps[i].pid == pid)
			m = &st->maps[i];
	if (!m) {
		st->maps = sp_xrealloc(st->maps, (st->nmaps + 1) * sizeof(*st->maps));
		m = &st->maps[st->nmaps++];
		memset(m, 0, sizeof(*m));
		m->pid = pid;
		sp_symtab_init(&m->t);
	}
	if (m->refused || (m->loaded && !reload_if_grown))
		return m;
	char path[4096];
	snprintf(path, sizeof(path), "%s/perf-%u.map", st->o.perf_map_dir, pid);
	for (size_t i = 0; st->o.archive && i < st->nprocs; i++)
		if (st->procs[i].pid == pid && st->procs[i].have_start)
			snprintf(path, sizeof(path), "%s/perf-maps/perf-%u-%llu.map", st->o.archive, pid,
				 (unsigned long long)st->procs[i].start);
	/* Not through a symlink, and only a regular file of a trusted owner. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return m;
	}
	if (m->loaded && sb.st_size <= m->size) {
		close(fd);
		return m;
	}
	uid_t owner_ok = geteuid();
	for (size_t i = 0; i < st->nprocs; i++)
		if (st->procs[i].pid == pid && st->procs[i].have_uid)
			owner_ok = st->procs[i].uid;
	/* An archived map was checked when it was kept; its copier owns it now. */
	bool archived = st->o.archive && strncmp(path, st->o.archive, strlen(st->o.archive)) == 0;
	bool owner = sb.st_uid == 0 || sb.st_uid == owner_ok || (archived && sb.st_uid == geteuid());
	if (!S_ISREG(sb.st_mode) || (!st->o.force_perf_maps && (!owner || (sb.st_mode & S_IWOTH)))) {
		close(fd);
		if (!m->refused)
			sp_warn("refusing '%s': %s", path,
				!S_ISREG(sb.st_mode) ? "not a regular file" :
				(sb.st_mode & S_IWOTH) ?
				"writable by every user (use --force-perf-maps to read it anyway)" :
				"owned by neither root nor the process's user "
				"(use --force-perf-maps to read it anyway)");
		m->refused = true;
		st->perf_maps_refused++;
		return m;
	}
	sp_symtab_release(&m->t);
	sp_symtab_init(&m->t);
	/* Read from the descriptor that was checked, not the path again. */
	if (sp_perfmap_load_fd(fd, &m->t, &st->perf_map_lines_skipped) == 0) {
		m->loaded = true;
		m->size = sb.st_size;
		m->gen++;
		st->perf_maps_loaded++;
	}
	return m;
}

static struct modsym *modsym_get(struct state *st, const char *path, const void *bid, int bidlen,
				  bool content)
{
	for (size_t i = 0; i < st->nmods; i++) {
		struct modsym *m = st->mods[i];
		if (m->bidlen == bidlen && memcmp(m->bid, bid, (size_t)bidlen) == 0 &&
		    (bidlen > 0 || strcmp(m->path, path) == 0))
			return m;
	}
	struct modsym *m = sp_xcalloc(1, sizeof(*m));
	m->path = sp_xstrdup(path);
	m->bidlen = bidlen > SP_BUILD_ID_MAX ? SP_BUILD_ID_MAX : bidlen;
	memcpy(m->bid, bid, (size_t)m->bidlen);
	m->content = content;
	char found[4096];
	int fd = sp_modfile_open(&st->o.search, path, m->bid, m->bidlen, content, found,
				 sizeof(found), &m->mismatch);
	if (fd < 0 && st->o.debuginfod && !content && m->bidlen > 0) {
		/* The executable itself from a debuginfod server, by build-id. */
		debuginfod_client *dc = debuginfod_begin();
		char *where = NULL;
		if (dc) {
			fd = debuginfod_find_executable(dc, m->bid, m->bidlen, &where);
			debuginfod_end(dc);
		}
		if (fd >= 0) {
			unsigned char id[SP_BUILD_ID_MAX];
			int n = sp_build_id_fd(fd, id);
			if (n != m->bidlen || memcmp(id, m->bid, (size_t)n) != 0) {
				close(fd);
				fd = -1;
				m->mismatch = true;
			} else {
				snprintf(found, sizeof(found), "%s", where);
			}
		} else {
			fd = -1;
		}
		free(where);
	}
	if (fd >= 0)
		m->es = sp_elfsym_open(fd, found, &st->o.eo);
	if (!m->es) {
		if (m->mismatch)
			st->modules_mismatched++;
		else
			st->modules_missing++;
	} else if (sp_elfsym_has_debuginfo(m->es)) {
		st->debuginfo_modules++;
	}
	st->mods = sp_xrealloc(st->mods, (st->nmods + 1) * sizeof(*st->mods));
	st->mods[st->nmods++] = m;
	return m;
}

static void kallsyms_load(struct state *st)
{
	if (st->kstate)
		return;
	st->kstate = -1;
	const char *path = st->o.kallsyms;
	if (path && strcmp(path, "none") == 0)
		return;
	if (!path) {
		if (!st->this_boot) {
			sp_warn("kernel frames stay addresses: the stream was recorded on another "
				"host or boot; pass --kallsyms FILE (saved there with sp-capture "
				"--kallsyms-out)");
			return;
		}
		path = "/proc/kallsyms";
	}
	char err[512];
	int rc = sp_kallsyms_load(path, &st->ksyms, err, sizeof(err));
	if (rc == 0)
		st->kstate = 1;
	else if (st->o.kallsyms && !st->o.kallsyms_archived)
		sp_die(SP_EXIT_FATAL, "%s", err);
	else
		sp_warn("kernel frames stay addresses: %s", err);
}

/*
 * The vDSO of this process: in the same boot it is the image the
 * recorded processes had.  Handed to libdwfl through a memfd.
 */
static bool own_vdso(struct state *st)
{
	if (st->vdso_tried)
		return st->vdso != NULL;
	st->vdso_tried = true;
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return false;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || size > (1u << 20))
		return false;
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return false;
	if (write(fd, (const void *)base, size) != (ssize_t)size) {
		close(fd);
		return false;
	}
	st->vdso = sp_elfsym_open(fd, "[vdso]", &st->o.eo);
	return st->vdso != NULL;
}

/* Packs the frame record for one stack frame. */
static void write_frame(struct state *st, uint64_t id, const msgpack_object *fr)
{
	const msgpack_object *e = fr->via.array.ptr;
	uint64_t addr = e[0].via.u64, rel = e[2].via.u64, flags = e[3].via.u64;
	bool has_mod = e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER;
	uint64_t mid = has_mod ? e[1].via.u64 : 0;
	struct module *mod = has_mod && mid < st->nmodules && st->modules[mid].defined ?
			     &st->modules[mid] : NULL;
	bool ret = flags & SP_FRAME_RETADDR;
	uint32_t out_flags = (uint32_t)(flags & SP_FRAME_RETADDR);
	unsigned kind = flags & SP_FRAME_KIND_MASK;
	if (kind == SP_FRAME_KERNEL)
		out_flags |= SP_SYM_KERNEL;
	else if (kind == SP_FRAME_JIT)
		out_flags |= SP_SYM_JIT;

	const char *origin = "address-only", *name = NULL, *file = NULL;
	uint64_t offset = 0;
	unsigned line = 0;
	const struct sp_inline *inl = NULL;
	size_t ninl = 0;
	char buf[4096];

	if (flags & SP_FRAME_MARKER) {
		if (rel < SP_END_COUNT)
			snprintf(buf, sizeof(buf), "[%s]", sp_unwind_end_name((enum sp_unwind_end)rel));
		else
			snprintf(buf, sizeof(buf), "[marker %llu]", (unsigned long long)rel);
		name = buf;
		out_flags = SP_FRAME_MARKER;
		mod = NULL;
		has_mod = false;
	} else if (kind == SP_FRAME_KERNEL) {
		kallsyms_load(st);
		const struct sp_sym *s = st->kstate > 0 ?
			sp_symtab_find(&st->ksyms, addr - (ret ? 1 : 0)) : NULL;
		if (s) {
			origin = "kallsyms";
			name = s->name;
			offset = addr - s->start;
		}
	} else if (mod && strcmp(mod->kind, "jit") == 0) {
		uint32_t pid = mod->pid;
		if (perf_maps_allowed(st, pid)) {
			struct perfmap *pm = perfmap_get(st, pid, false);
			const struct sp_sym *s = pm->loaded ? sp_symtab_find(&pm->t, addr - (ret ? 1 : 0)) : NULL;
			if (!s && !pm->refused) {
				pm = perfmap_get(st, pid, true);	/* it may have grown */
				s = pm->loaded ? sp_symtab_find(&pm->t, addr - (ret ? 1 : 0)) : NULL;
			}
			if (s) {
				origin = "perf-map";
				name = s->name;
				offset = addr - s->start;
			}
		}
	} else if (mod && strcmp(mod->kind, "vdso") == 0) {
		const struct sp_symres *r = st->this_boot && own_vdso(st) ?
			sp_elfsym_lookup(st->vdso, rel - (ret ? 1 : 0)) : NULL;
		if (r && r->name) {
			origin = r->origin;
			name = r->name;
			offset = r->offset + (ret ? 1 : 0);
		}
	} else if (mod && strcmp(mod->kind, "elf") == 0) {
		if (!mod->ms) {
			const void *bid = NULL;
			mod->ms = modsym_get(st, mod->path, bid, 0, false);
		}
		if (mod->ms->es) {
			const struct sp_symres *r = sp_elfsym_lookup(mod->ms->es, rel - (ret ? 1 : 0));
			if (r && r->name) {
				origin = r->origin;
				name = r->name;
				offset = r->offset + (ret ? 1 : 0);	/* from addr itself */
				file = r->file;
				line = r->line;
				inl = r->inl;
				ninl = r->ninl;
			}
		}
	}
	if (!name) {
		/* Still say where: the module's file name and the offset. */
		const char *base = mod ? strrchr(mod->path, '/') : NULL;
		base = base ? base + 1 : mod ? mod->path : NULL;
		if (kind == SP_FRAME_KERNEL)
			snprintf(buf, sizeof(buf), "[kernel]+0x%llx", (unsigned long long)addr);
		else if (base)
			snprintf(buf, sizeof(buf), "%s+0x%llx", base, (unsigned long long)rel);
		else
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
		name = buf;
	}
	if (is_hidden(name))
		out_flags |= SP_SYM_HIDDEN;
	if (ninl)
		out_flags |= SP_SYM_INLINE;
	count_origin(st, origin);

	msgpack_packer *pk = sp_writer_packer(st->w);
	size_t n = 5 + has_mod + (offset || strcmp(origin, "address-only") != 0) + (file != NULL) +
		   (line > 0) + (ninl > 0) + (out_flags != 0);
	msgpack_pack_map(pk, n);
	sp_pack_kv_str(pk, "t", "frame");
	sp_pack_kv_u64(pk, "id", id);
	sp_pack_kv_u64(pk, "addr", addr);
	sp_pack_kv_str(pk, "origin", origin);
	sp_pack_kv_str(pk, "name", name);
	if (has_mod)
		sp_pack_kv_u64(pk, "module", mid);
	if (offset || strcmp(origin, "address-only") != 0)
		sp_pack_kv_u64(pk, "offset", offset);
	if (file)
		sp_pack_kv_str(pk, "file", file);
	if (line > 0)
		sp_pack_kv_u64(pk, "line", line);
	if (ninl > 0) {
		sp_pack_key(pk, "inline");
		msgpack_pack_array(pk, ninl);
		for (size_t i = 0; i < ninl; i++) {
			msgpack_pack_map(pk, 1 + (inl[i].file != NULL) + (inl[i].line > 0));
			sp_pack_kv_str(pk, "name", inl[i].name ? inl[i].name : "??");
			if (inl[i].file)
				sp_pack_kv_str(pk, "file", inl[i].file);
			if (inl[i].line > 0)
				sp_pack_kv_u64(pk, "line", inl[i].line);
		}
	}
	if (out_flags)
		sp_pack_kv_u64(pk, "flags", out_flags);
}

/* The id of a frame, writing its record the first time. */
static uint64_t frame_id(struct state *st, const msgpack_object *fr)
{
	const msgpack_object *e = fr->via.array.ptr;
	struct fkey k = { e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER ? e[1].via.u64 : UINT64_MAX,
			  e[0].via.u64, e[3].via.u64, 0 };
	if (k.flags & SP_FRAME_MARKER)
		k.addr = e[2].via.u64;	/* markers differ by their reason */
	if (k.module < st->nmodules && strcmp(st->modules[k.module].kind, "jit") == 0) {
		/* A JIT name holds only until its perf map is reloaded. */
		for (size_t i = 0; i < st->nmaps; i++)
			if (st->maps[i].pid == st->modules[k.module].pid)
				k.gen = st->maps[i].gen;
	}
	uint64_t h = (k.module * 31 + k.addr) * 0x9e3779b97f4a7c15ull ^ k.flags ^ (k.gen << 32);
	if (st->capfslots)
		for (size_t i = (size_t)(h >> 20) & (st->capfslots - 1); st->fslots[i];
		     i = (i + 1) & (st->capfslots - 1))
			if (memcmp(&st->fkeys[st->fslots[i] - 1], &k, sizeof(k)) == 0)
				return st->fslots[i] - 1;
	if ((st->nframes + 1) * 2 > st->capfslots) {
		size_t ncap = st->capfslots ? st->capfslots * 2 : 1024;
		uint64_t *ns = sp_xcalloc(ncap, sizeof(*ns));
		for (size_t f = 0; f < st->nframes; f++) {
			struct fkey *x = &st->fkeys[f];
			uint64_t hh = (x->module * 31 + x->addr) * 0x9e3779b97f4a7c15ull ^ x->flags ^
				      (x->gen << 32);
			size_t i = (size_t)(hh >> 20) & (ncap - 1);
			while (ns[i])
				i = (i + 1) & (ncap - 1);
			ns[i] = f + 1;
		}
		free(st->fslots);
		st->fslots = ns;
		st->capfslots = ncap;
		st->fkeys = sp_xrealloc(st->fkeys, ncap / 2 * sizeof(*st->fkeys));
	}
	uint64_t id = st->nframes++;
	st->fkeys[id] = k;
	size_t i = (size_t)(h >> 20) & (st->capfslots - 1);
	while (st->fslots[i])
		i = (i + 1) & (st->capfslots - 1);
	st->fslots[i] = id + 1;
	write_frame(st, id, fr);
	return id;
}

static bool valid_frame(const msgpack_object *fr)
{
	if (fr->type != MSGPACK_OBJECT_ARRAY || fr->via.array.size < 4)
		return false;
	const msgpack_object *e = fr->via.array.ptr;
	return e[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	       (e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER || e[1].type == MSGPACK_OBJECT_NIL) &&
	       e[2].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	       e[3].type == MSGPACK_OBJECT_POSITIVE_INTEGER;
}

/* A stack becomes frame records and a symstack of the same id. */
static int symbolize_stack(struct state *st, const struct sp_record *rec)
{
	uint64_t id = 0;
	sp_map_u64(rec->map, "id", &id);
	const msgpack_object_array *fr = sp_map_array(rec->map, "frames");
	uint64_t *ids = sp_xmalloc((fr->size ? fr->size : 1) * sizeof(*ids));
	size_t n = 0;
	for (uint32_t i = 0; i < fr->size; i++) {
		if (!valid_frame(&fr->ptr[i])) {
			free(ids);
			return -1;
		}
		ids[n++] = frame_id(st, &fr->ptr[i]);
	}
	msgpack_packer *pk = sp_writer_packer(st->w);
	msgpack_pack_map(pk, 3);
	sp_pack_kv_str(pk, "t", "symstack");
	sp_pack_kv_u64(pk, "id", id);
	sp_pack_key(pk, "frames");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		msgpack_pack_uint64(pk, ids[i]);
	free(ids);
	return 0;
}

static void note_module(struct state *st, const struct sp_record *rec)
{
	uint64_t id = 0, pid = 0;
	const char *p = "", *k = NULL;
	size_t pl = 0, kl = 0;
	const void *bid = NULL;
	size_t bidlen = 0;
	sp_map_u64(rec->map, "id", &id);
	sp_map_str(rec->map, "path", &p, &pl);
	if (!sp_map_str(rec->map, "kind", &k, &kl)) {
		/* No kind: a file if the path names one. */
		sp_map_str(rec->map, "path", &p, &pl);
		k = pl && p[0] == '/' ? "elf" : "anon";
		kl = strlen(k);
	}
	sp_map_u64(rec->map, "pid", &pid);
	bool content = false;
	if (!sp_map_bin(rec->map, "build_id", &bid, &bidlen)) {
		bidlen = 0;
		content = sp_map_bin(rec->map, "content_id", &bid, &bidlen);
	}
	if (id > 1000000)
		return;
	if (id >= st->nmodules) {
		st->modules = sp_xrealloc(st->modules, (id + 1) * sizeof(*st->modules));
		memset(st->modules + st->nmodules, 0, (id + 1 - st->nmodules) * sizeof(*st->modules));
		st->nmodules = id + 1;
	}
	struct module *m = &st->modules[id];
	free(m->path);
	m->path = sp_xmalloc(pl + 1);
	memcpy(m->path, p, pl);
	m->path[pl] = '\0';
	snprintf(m->kind, sizeof(m->kind), "%.*s", (int)(kl < 15 ? kl : 15), k);
	m->pid = (uint32_t)pid;
	m->ms = strcmp(m->kind, "elf") == 0 ?
		modsym_get(st, m->path, bid, (int)(bidlen > SP_BUILD_ID_MAX ? SP_BUILD_ID_MAX : bidlen),
			   content) :
		NULL;
	m->defined = true;
}

static void reset_segment(struct state *st)
{
	for (size_t i = 0; i < st->nmodules; i++)
		free(st->modules[i].path);
	free(st->modules);
	st->modules = NULL;
	st->nmodules = 0;
	st->nframes = 0;
	if (st->fslots)
		memset(st->fslots, 0, st->capfslots * sizeof(*st->fslots));
	st->nprocs = 0;
}

static void write_counters(struct state *st)
{
	msgpack_packer *pk = sp_writer_packer(st->w);
	msgpack_pack_map(pk, 11);
	sp_pack_kv_str(pk, "t", "symbolize");
	sp_pack_kv_u64(pk, "frames", st->nframes);
	sp_pack_key(pk, "origins");
	msgpack_pack_map(pk, 6);
	for (int i = 0; i < 6; i++)
		sp_pack_kv_u64(pk, origins[i], st->by_origin[i]);
	sp_pack_kv_u64(pk, "address_only", st->address_only);
	sp_pack_kv_u64(pk, "modules_missing", st->modules_missing);
	sp_pack_kv_u64(pk, "modules_mismatched", st->modules_mismatched);
	sp_pack_kv_u64(pk, "debuginfo_modules", st->debuginfo_modules);
	sp_pack_kv_u64(pk, "perf_maps_loaded", st->perf_maps_loaded);
	sp_pack_kv_u64(pk, "perf_maps_refused", st->perf_maps_refused);
	sp_pack_kv_u64(pk, "perf_map_lines_skipped", st->perf_map_lines_skipped);
	sp_pack_kv_str(pk, "kallsyms", st->kstate > 0 ? (st->o.kallsyms ? st->o.kallsyms :
			"/proc/kallsyms") : "none");
}


static void parse_perf_maps_for(struct options *o, const char *arg)
{
	if (strcmp(arg, "all") == 0) {
		o->pm = PM_ALL;
		return;
	}
	if (strcmp(arg, "python") == 0) {
		o->pm = PM_PYTHON;
		return;
	}
	o->pm = PM_PIDS;
	char *copy = sp_xstrdup(arg), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (sp_parse_u64(t, UINT32_MAX, &v) < 0 || v == 0)
			sp_usage_error("invalid --perf-maps-for '%s': all, python or PID[,PID...]", arg);
		o->pm_pids = sp_xrealloc(o->pm_pids, (o->npm_pids + 1) * sizeof(*o->pm_pids));
		o->pm_pids[o->npm_pids++] = (uint32_t)v;
	}
	free(copy);
	if (!o->npm_pids)
		sp_usage_error("invalid --perf-maps-for '%s'", arg);
}

int main(int argc, char **argv)
{
	enum { KALLSYMS = 256, ROOT, MODULE_DIR, ARCHIVE, DEBUG_DIR, NO_DEBUGINFOD, PERF_MAP_DIR,
	       PERF_MAPS_FOR, NO_PERF_MAPS, FORCE_PERF_MAPS, NO_INLINE, NO_LINES,
	       NO_DEMANGLE, MAX_RECORD, NO_CACHE };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "kallsyms", required_argument, NULL, KALLSYMS },
		{ "root", required_argument, NULL, ROOT },
		{ "module-dir", required_argument, NULL, MODULE_DIR },
		{ "archive", required_argument, NULL, ARCHIVE },
		{ "debug-dir", required_argument, NULL, DEBUG_DIR },
		{ "no-debuginfod", no_argument, NULL, NO_DEBUGINFOD },
		{ "perf-map-dir", required_argument, NULL, PERF_MAP_DIR },
		{ "perf-maps-for", required_argument, NULL, PERF_MAPS_FOR },
		{ "no-perf-maps", no_argument, NULL, NO_PERF_MAPS },
		{ "force-perf-maps", no_argument, NULL, FORCE_PERF_MAPS },
		{ "no-inline", no_argument, NULL, NO_INLINE },
		{ "no-lines", no_argument, NULL, NO_LINES },
		{ "no-demangle", no_argument, NULL, NO_DEMANGLE },
		{ "no-cache", no_argument, NULL, NO_CACHE },
		{ "max-record", required_argument, NULL, MAX_RECORD },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct state st = { 0 };
	struct options *o = &st.o;
	const char *output = NULL;
	const char **mdirs = NULL, **ddirs = NULL;
	size_t nmdirs = 0, nddirs = 0, max_record = SP_DEFAULT_MAX_RECORD;
	bool no_debuginfod = false, no_cache = false;
	int c;

	sp_tool_init(argv[0]);
	o->eo = (struct sp_elfsym_options){ .inline_frames = true, .lines = true, .demangle = true };
	o->perf_map_dir = "/tmp";
	while ((c = getopt_long(argc, argv, "o:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case KALLSYMS: o->kallsyms = optarg; break;
		case ROOT: o->search.root = strcmp(optarg, "/") == 0 ? NULL : optarg; break;
		case MODULE_DIR:
			mdirs = sp_xrealloc(mdirs, (nmdirs + 1) * sizeof(*mdirs));
			mdirs[nmdirs++] = optarg;
			break;
		case DEBUG_DIR:
			ddirs = sp_xrealloc(ddirs, (nddirs + 1) * sizeof(*ddirs));
			ddirs[nddirs++] = optarg;
			break;
		case ARCHIVE:
			/* A module dir and a debug dir at once; maps and kallsyms below. */
			o->archive = optarg;
			mdirs = sp_xrealloc(mdirs, (nmdirs + 1) * sizeof(*mdirs));
			mdirs[nmdirs++] = optarg;
			ddirs = sp_xrealloc(ddirs, (nddirs + 1) * sizeof(*ddirs));
			ddirs[nddirs++] = optarg;
			break;
		case NO_DEBUGINFOD: no_debuginfod = true; break;
		case PERF_MAP_DIR: o->perf_map_dir = optarg; break;
		case PERF_MAPS_FOR: parse_perf_maps_for(o, optarg); break;
		case NO_PERF_MAPS: o->pm = PM_NONE; break;
		case FORCE_PERF_MAPS: o->force_perf_maps = true; break;
		case NO_INLINE: o->eo.inline_frames = false; break;
		case NO_LINES: o->eo.lines = false; break;
		case NO_DEMANGLE: o->eo.demangle = false; break;
		case NO_CACHE: no_cache = true; break;
		case MAX_RECORD:
			max_record = sp_parse_max_record(optarg);
			break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	if (argc - optind > 1)
		sp_usage_error("give at most one input file");
	const char *input = optind < argc ? argv[optind] : NULL;
	char archived_kallsyms[4096];
	if (o->archive && !o->kallsyms) {
		snprintf(archived_kallsyms, sizeof(archived_kallsyms), "%s/kallsyms", o->archive);
		if (access(archived_kallsyms, R_OK) == 0) {
			o->kallsyms = archived_kallsyms;
			o->kallsyms_archived = true;
		}
	}
	o->search.dirs = mdirs;
	o->search.ndirs = nmdirs;

	/*
	 * The cache of inflated debug files: $XDG_CACHE_HOME/stackpulse or
	 * ~/.cache/stackpulse, searched first.
	 */
	char cache[4096] = "";
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (!no_cache && xdg && *xdg)
		snprintf(cache, sizeof(cache), "%s/stackpulse", xdg);
	else if (!no_cache && home && *home)
		snprintf(cache, sizeof(cache), "%s/.cache/stackpulse", home);
	if (cache[0]) {
		char parent[4096];
		snprintf(parent, sizeof(parent), "%.4000s", cache);
		*strrchr(parent, '/') = '\0';
		mkdir(parent, 0755);
		if (mkdir(cache, 0755) < 0 && errno != EEXIST)
			cache[0] = '\0';
	}
	o->eo.cache_dir = cache[0] ? cache : NULL;

	/* libdwfl's debug-file search path: "-" (no CRC check), .debug, the dirs. */
	size_t plen = 32 + strlen(cache);
	for (size_t i = 0; i < nddirs; i++)
		plen += strlen(ddirs[i]) + 1;
	char *dpath = sp_xmalloc(plen);
	strcpy(dpath, "-:.debug");
	if (cache[0]) {
		strcat(dpath, ":");
		strcat(dpath, cache);
	}
	for (size_t i = 0; i < nddirs; i++) {
		strcat(dpath, ":");
		strcat(dpath, ddirs[i]);
	}
	if (!nddirs)
		strcat(dpath, ":/usr/lib/debug");
	o->eo.debuginfo_path = dpath;
	/* debuginfod: off on request; otherwise bounded in time, with progress. */
	const char *urls = getenv("DEBUGINFOD_URLS");
	o->debuginfod = !no_debuginfod && urls && *urls;
	if (no_debuginfod) {
		unsetenv("DEBUGINFOD_URLS");
	} else {
		setenv("DEBUGINFOD_TIMEOUT", "5", 0);
		setenv("DEBUGINFOD_MAXTIME", "30", 0);
		setenv("DEBUGINFOD_PROGRESS", "1", 0);
	}

	int infd = sp_open_input(input);
	int outfd = sp_open_output(output, true);
	st.w = sp_writer_new(outfd, output ? output : "-");
	struct sp_reader *r = sp_reader_new(infd, input ? input : "-");
	if (!st.w || !r)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_reader_set_max_record(r, max_record);
	sp_symtab_init(&st.ksyms);
	/* A kallsyms file given is checked before anything is written. */
	if (o->kallsyms)
		kallsyms_load(&st);

	int status = SP_EXIT_OK;
	struct sp_record rec;
	enum sp_read_status rs;
	while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		switch (rec.type) {
		case SP_R_HEADER: {
			const struct sp_header *h = sp_reader_header(r);
			if (h->stage != SP_STAGE_UNWOUND) {
				sp_warn("'%s': byte offset %llu, record %llu: the stream is %s; sp-symbolize "
					"reads unwound streams: %s", input ? input : "-",
					(unsigned long long)rec.offset, (unsigned long long)rec.index,
					sp_stage_name(h->stage), h->stage == SP_STAGE_RAW ?
					"run sp-unwind first" : "it is already symbolized");
				status = SP_EXIT_FATAL;
				goto done;
			}
			reset_segment(&st);
			bool boot = sp_header_same_boot(rec.map);
			if (!o->kallsyms && boot != st.this_boot) {
				/* The default source depends on the segment's boot. */
				sp_symtab_release(&st.ksyms);
				sp_symtab_init(&st.ksyms);
				st.kstate = 0;
			}
			st.this_boot = boot;
			o->search.trust_unidentified = boot;
			sp_pack_derived_header(sp_writer_packer(st.w), rec.map, SP_STAGE_SYMBOLIZED,
					       "sp-symbolize", argc, argv);
			break;
		}
		case SP_R_MODULE:
			note_module(&st, &rec);
			sp_writer_raw(st.w, rec.raw, rec.raw_len);
			break;
		case SP_R_STACK:
			if (symbolize_stack(&st, &rec) < 0) {
				sp_warn("'%s': byte offset %llu, record %llu: malformed frame in a stack record",
					input ? input : "-", (unsigned long long)rec.offset,
					(unsigned long long)rec.index);
				status = SP_EXIT_PARTIAL;
				goto done;
			}
			break;
		case SP_R_SUMMARY:
			write_counters(&st);
			sp_writer_raw(st.w, rec.raw, rec.raw_len);
			break;
		default:
			note_record(&st, &rec);
			sp_writer_raw(st.w, rec.raw, rec.raw_len);
			break;
		}
		if (sp_writer_failed(st.w))
			break;
	}
	if (sp_report_input_end(r, rs, input ? input : "-", "symbolized") != SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
done:
	if (sp_writer_close(st.w) < 0) {
		sp_warn("cannot write to '%s': %s", output ? output : "-", strerror(errno));
		status = SP_EXIT_FATAL;
	}
	sp_reader_free(r);
	reset_segment(&st);
	for (size_t i = 0; i < st.nmods; i++) {
		sp_elfsym_free(st.mods[i]->es);
		free(st.mods[i]->path);
		free(st.mods[i]);
	}
	free(st.mods);
	for (size_t i = 0; i < st.nmaps; i++)
		sp_symtab_release(&st.maps[i].t);
	free(st.maps);
	free(st.procs);
	free(st.fkeys);
	free(st.fslots);
	sp_symtab_release(&st.ksyms);
	sp_elfsym_free(st.vdso);
	free(dpath);
	free(mdirs);
	free(ddirs);
	free(o->pm_pids);
	if (infd != STDIN_FILENO)
		close(infd);
	return status;
}

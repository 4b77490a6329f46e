/* SPDX-License-Identifier: MIT */
/* Naming the frames of an unwound stream (see symbolizer.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stream/header.h"
#include "sym/debuginfod.h"
#include "util/arena.h"
#include "stream/vocab.h"
#include "sym/symbolizer.h"
#include "sym/symtab.h"
#include "util/alloc.h"
#include "util/buildid.h"
#include "util/hashmap.h"

/* Functions hidden in a profiler's default view: start-up scaffolding. */
static const char *const hidden_names[] = {
	"_start", "__libc_start_main", "__libc_start_main_impl",
	"__libc_start_call_main", "start_thread", "clone", "clone3", "__clone3",
	"__clone", "thread_start", "entry_SYSCALL_64", "entry_SYSCALL_64_after_hwframe",
	"do_syscall_64", "ret_from_fork", "ret_from_fork_asm", "asm_sysvec_apic_timer_interrupt",
};

static const char *const origin_names[SP_ORIGIN_COUNT] = {
#define SP_X_ORIGIN(e, s) [SP_ORIGIN_##e] = s,
	SP_SYM_ORIGINS(SP_X_ORIGIN)
#undef SP_X_ORIGIN
};

/* A module file's symbolizer, kept across segments by (path, build-id). */
struct modsym {
	struct sp_hashmap_entry e;
	char *path;
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen;
	bool content;		/* bid is a content identity */
	bool mismatch;
	struct sp_elfsym *es;	/* NULL: missing or mismatched */
};

/* Module ids index a table; a stream has a few hundred modules. */
#define MAX_MODULE_ID 1000000

enum module_kind { MOD_OTHER, MOD_ELF, MOD_JIT, MOD_VDSO };

/*
 * The image of a vDSO an image record carried, kept across segments by
 * path and build-id; opened on first use, when data is let go.
 */
struct vimage {
	char *path;
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen;
	void *data;
	size_t len;
	bool tried;
	struct sp_elfsym *es;
};

/* A module record of the current segment. */
struct module {
	bool defined;
	enum module_kind kind;
	char *path;
	uint32_t pid;
	struct modsym *ms;	/* elf modules, once looked at */
	struct vimage *vimg;	/* vdso modules: the stream's image, or NULL */
	bool vdso_other;	/* vdso modules: of a build-id this process's vDSO has not */
};

/* A frame as interned: what it was resolved from. */
struct fkey {
	uint64_t module, addr, flags, gen;
};

struct frame {
	struct sp_hashmap_entry e;
	struct fkey k;
	uint64_t id;
};

enum { KALLSYMS_UNTRIED, KALLSYMS_LOADED, KALLSYMS_NONE };

/* A stack kept for naming again (sp_namer_keep_stack()). */
struct kept {
	uint64_t id;
	struct sp_stack_frame *f;
	size_t n;
};

/* At most this many frames of kept stacks (32 MiB). */
#define MAX_KEPT_FRAMES (1u << 20)

struct sp_namer {
	const struct sp_sym_search *s;
	sp_sym_warn_fn *warn;
	void *warn_arg;
	struct sp_error err;
	bool this_boot;
	struct sp_modfile_search modules_search;	/* s->modules, trust by segment */

	struct sp_hashmap modsyms;	/* struct modsym, across segments */
	struct module *modules;		/* by id, this segment */
	size_t nmodules, alloc_modules;
	struct sp_hashmap frames;	/* struct frame, this segment */
	struct sp_arena frame_arena;	/* where the frames are */
	uint64_t nframes;

	struct sp_elfsym *vdso;		/* this process's vDSO, for streams of this boot */
	bool vdso_tried;
	unsigned char vdso_bid[SP_BUILD_ID_MAX];
	int vdso_bidlen;
	struct vimage **vimages;	/* from image records */
	size_t nvimages, alloc_vimages;
	struct sp_symtab ksyms;
	int kstate;
	struct sp_perfmaps *perfmaps;
	struct sp_jitdumps *jitdumps;	/* the stream's jitdump records, this segment */
	struct kept *kept, *stale;	/* kept stacks; those being handed back */
	size_t nkept, allockept, nstale, nextstale, kept_frames;
	struct sp_u64map jit_pids;	/* processes that announced a jitdump file */
	/*
	 * By a file's path (lastmap_key): its latest mapping (struct
	 * sp_modfile_proc), where a stream of this boot may still find it.
	 * Keys that collide cost a candidate, never a wrong file: the
	 * identity is checked.
	 */
	struct sp_u64map lastmaps;
	bool proc_denied_said;		/* the message on reading them was given */
	bool debuginfod_said;		/* the servers were found unreachable */
	bool jit_renamed;		/* a jitdump record changed names since the last hand-back */
	unsigned char *unnamed;		/* by frame id: a JIT frame left unnamed */
	size_t nunnamed, allocunnamed;
	uint64_t fresh_id;		/* the frame interned last, when new: resolved next */
	bool fresh;

	uint64_t by_origin[SP_ORIGIN_COUNT];
	uint64_t modules_missing, modules_mismatched, debuginfo_modules;
	/*
	 * With workers (sp_namer_defer_debuginfo()): module files opened
	 * whose DWARF is left to the first lookup, counted at the stats.
	 */
	bool defer_debuginfo;
	struct sp_elfsym **deferred;
	size_t ndeferred, allocdeferred;
};

const char *sp_sym_origin_name(enum sp_sym_origin o)
{
	return (unsigned)o < SP_ORIGIN_COUNT ? origin_names[o] : "address-only";
}

static void warnf(struct sp_namer *sym, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warnf(struct sp_namer *sym, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	if (!sym->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sym->warn(sym->warn_arg, msg);
}

static int modsym_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		      const void *keydata)
{
	const struct modsym *x = sp_container_of(a, struct modsym, e);
	const struct modsym *y = sp_container_of(b, struct modsym, e);
	(void)keydata;
	if (x->bidlen != y->bidlen || memcmp(x->bid, y->bid, (size_t)x->bidlen) != 0)
		return 1;
	return x->bidlen == 0 && strcmp(x->path, y->path) != 0;
}

static int frame_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		     const void *keydata)
{
	const struct frame *x = sp_container_of(a, struct frame, e);
	const struct frame *y = sp_container_of(b, struct frame, e);
	(void)keydata;
	return memcmp(&x->k, &y->k, sizeof(x->k));
}

static void modsym_free(struct sp_hashmap_entry *e)
{
	struct modsym *m = sp_container_of(e, struct modsym, e);
	sp_elfsym_free(m->es);
	free(m->path);
	free(m);
}

/* Reads the kallsyms that names kernel frames, once per boot of the stream. */
static int kallsyms_load(struct sp_namer *sym, struct sp_error *err)
{
	const char *path = sym->s->kallsyms;
	if (sym->kstate != KALLSYMS_UNTRIED)
		return 0;
	sym->kstate = KALLSYMS_NONE;
	if (path && strcmp(path, "none") == 0)
		return 0;
	if (!path && !sym->this_boot) {
		warnf(sym, "kernel frames stay addresses: the stream was recorded on another host "
		      "or boot; pass --kallsyms FILE (saved there with sp-capture --kallsyms-out)");
		return 0;
	}
	if (sp_kallsyms_load(path ? path : "/proc/kallsyms", &sym->ksyms, err) == 0) {
		sym->kstate = KALLSYMS_LOADED;
		return 0;
	}
	if (path && !sym->s->kallsyms_archived)
		return -1;
	warnf(sym, "kernel frames stay addresses: %s", sp_error_message(err));
	return 0;
}

struct sp_namer *sp_namer_new(const struct sp_sym_search *s, sp_sym_warn_fn *warn,
			      void *warn_arg, struct sp_error *err)
{
	struct sp_namer *sym = calloc(1, sizeof(*sym));
	if (sym) {
		sym->perfmaps = sp_perfmaps_new(s, warn, warn_arg);
		sym->jitdumps = sp_jitdumps_new(warn, warn_arg);
	}
	if (!sym || !sym->perfmaps || !sym->jitdumps) {
		if (sym) {
			sp_perfmaps_free(sym->perfmaps);
			sp_jitdumps_free(sym->jitdumps);
		}
		free(sym);
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	sym->s = s;
	sym->warn = warn;
	sym->warn_arg = warn_arg;
	sym->modules_search = s->modules;
	sp_hashmap_init(&sym->modsyms, modsym_cmp);
	sp_hashmap_init(&sym->frames, frame_cmp);
	sp_u64map_init(&sym->jit_pids);
	sp_u64map_init(&sym->lastmaps);
	sp_symtab_init(&sym->ksyms);
	/* A kallsyms file given is checked before anything is written. */
	if (s->kallsyms && kallsyms_load(sym, err) < 0) {
		sp_namer_free(sym);
		return NULL;
	}
	return sym;
}

static void reset_segment(struct sp_namer *sym)
{
	for (size_t i = 0; i < sym->nmodules; i++)
		free(sym->modules[i].path);
	sym->nmodules = 0;
	sp_hashmap_release(&sym->frames, NULL);
	sp_arena_release(&sym->frame_arena);
	sp_hashmap_init(&sym->frames, frame_cmp);
	sym->nframes = 0;
	sp_perfmaps_reset(sym->perfmaps);
	sp_jitdumps_reset(sym->jitdumps);
	for (size_t i = 0; i < sym->nkept; i++)
		free(sym->kept[i].f);
	for (size_t i = sym->nextstale ? sym->nextstale - 1 : 0; i < sym->nstale; i++)
		free(sym->stale[i].f);
	free(sym->stale);
	sym->stale = NULL;
	sym->nkept = sym->nstale = sym->nextstale = sym->kept_frames = 0;
	sym->jit_renamed = false;
	sp_u64map_release(&sym->jit_pids, NULL);
	sp_u64map_init(&sym->jit_pids);
	sp_u64map_release(&sym->lastmaps, free);
	sp_u64map_init(&sym->lastmaps);
	sym->nunnamed = 0;
	sym->fresh = false;
}

void sp_namer_end(struct sp_namer *sym)
{
	sp_jitdumps_end(sym->jitdumps);
}

void sp_namer_free(struct sp_namer *sym)
{
	if (!sym)
		return;
	reset_segment(sym);
	free(sym->modules);
	sp_hashmap_release(&sym->frames, NULL);
	sp_arena_release(&sym->frame_arena);
	sp_hashmap_release(&sym->modsyms, modsym_free);
	sp_perfmaps_free(sym->perfmaps);
	sp_jitdumps_free(sym->jitdumps);
	free(sym->kept);
	free(sym->unnamed);
	free(sym->deferred);
	sp_u64map_release(&sym->jit_pids, NULL);
	sp_u64map_release(&sym->lastmaps, free);
	sp_symtab_release(&sym->ksyms);
	sp_elfsym_free(sym->vdso);
	for (size_t i = 0; i < sym->nvimages; i++) {
		sp_elfsym_free(sym->vimages[i]->es);
		free(sym->vimages[i]->data);
		free(sym->vimages[i]->path);
		free(sym->vimages[i]);
	}
	free(sym->vimages);
	free(sym);
}

const char *sp_namer_error(const struct sp_namer *sym)
{
	return sp_error_message(&sym->err);
}

void sp_namer_begin_segment(struct sp_namer *sym, const msgpack_object *hdr)
{
	bool boot = sp_header_same_boot(hdr);
	reset_segment(sym);
	if (!sym->s->kallsyms && boot != sym->this_boot) {
		/* The default source depends on the segment's boot. */
		sp_symtab_release(&sym->ksyms);
		sp_symtab_init(&sym->ksyms);
		sym->kstate = KALLSYMS_UNTRIED;
	}
	sym->this_boot = boot;
	sym->modules_search.trust_unidentified = boot;
}

/*
 * The executable itself from a debuginfod server, by build-id; -1: none.
 * A server that cannot be reached is said once: otherwise a wrong
 * DEBUGINFOD_URLS looks the same as a server without the file.
 */
static int debuginfod_find(struct sp_namer *sym, struct modsym *m, char *found,
			   size_t foundlen)
{
	char *where = NULL;
	int fd = sp_debuginfod_find_executable(m->bid, m->bidlen, &where);
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (fd == -ENOSYS && urls && *urls && !sym->debuginfod_said) {
		sym->debuginfod_said = true;
		warnf(sym, "DEBUGINFOD_URLS is set, but libdebuginfod.so.1 cannot be loaded: "
		      "no file was fetched (install libdebuginfod1)");
	}
	if (fd < 0 && fd != -ENOENT && fd != -ENOSYS && !sym->debuginfod_said) {
		sym->debuginfod_said = true;
		warnf(sym, "cannot reach the debuginfod server '%s': %s; no file was fetched "
		      "(check DEBUGINFOD_URLS, or give --no-debuginfod)",
		      urls, strerror(-fd));
	}
	if (fd >= 0) {
		unsigned char id[SP_BUILD_ID_MAX];
		int n = sp_build_id_fd(fd, id);
		if (n != m->bidlen || memcmp(id, m->bid, (size_t)n) != 0) {
			close(fd);
			fd = -1;
			m->mismatch = true;
		} else {
			snprintf(found, foundlen, "%s", where);
		}
	}
	free(where);
	return fd < 0 ? -1 : fd;
}

/* The key of a path in lastmaps: its hash and its length. */
static uint64_t lastmap_key(const char *path, size_t len)
{
	return (uint64_t)sp_hash_bytes(path, len) << 32 | (uint32_t)len;
}

/*
 * A module file's DWARF left to the worker that looks up its first
 * address; if memory runs out, it is read now.
 */
static void defer_debuginfo(struct sp_namer *sym, struct modsym *m)
{
	if (SP_ALLOC_GROW(sym->deferred, sym->ndeferred + 1, sym->allocdeferred) == 0)
		sym->deferred[sym->ndeferred++] = m->es;
	else if (sp_elfsym_has_debuginfo(m->es))
		sym->debuginfo_modules++;
}

void sp_namer_defer_debuginfo(struct sp_namer *sym)
{
	sym->defer_debuginfo = true;
}

/* The symbolizer of the file of a module at path with identity bid. */
static struct modsym *modsym_get(struct sp_namer *sym, const char *path, const void *bid,
				 size_t bidlen, bool content)
{
	const struct sp_modfile_proc *live = sym->this_boot ?
		sp_u64map_get(&sym->lastmaps, lastmap_key(path, strlen(path))) : NULL;
	struct modsym key = { .path = (char *)path };
	key.bidlen = (int)(bidlen > SP_BUILD_ID_MAX ? SP_BUILD_ID_MAX : bidlen);
	if (key.bidlen)
		memcpy(key.bid, bid, (size_t)key.bidlen);
	key.e.hash = key.bidlen ? sp_hash_bytes(key.bid, (size_t)key.bidlen) : sp_hash_str(path);
	struct sp_hashmap_entry *e = sp_hashmap_get(&sym->modsyms, &key.e, NULL);
	if (e)
		return sp_container_of(e, struct modsym, e);

	struct modsym *m = malloc(sizeof(*m));
	if (!m)
		return NULL;
	*m = key;
	m->content = content;
	if (!(m->path = strdup(path)) || sp_hashmap_add(&sym->modsyms, &m->e) < 0) {
		free(m->path);
		free(m);
		return NULL;
	}
	char found[4096];
	int fd = sp_modfile_open_proc(&sym->modules_search, path, m->bid, m->bidlen, content,
				      live, found, sizeof(found), &m->mismatch);
	if (fd < 0 && live && (errno == EACCES || errno == EPERM) && !sym->proc_denied_said) {
		/* Once: the same want of privilege hides every such file. */
		sym->proc_denied_said = true;
		warnf(sym, "cannot read '%s' as process %u maps it (/proc/%u/root, map_files): "
		      "%s (run sp-symbolize as root, or give it CAP_SYS_PTRACE and "
		      "CAP_DAC_READ_SEARCH)", path, live->pid, live->pid, strerror(errno));
	}
	if (fd < 0 && sym->s->debuginfod && !content && m->bidlen > 0)
		fd = debuginfod_find(sym, m, found, sizeof(found));
	if (fd >= 0)
		m->es = sp_elfsym_open(fd, found, &sym->s->elf);
	if (m->es && sp_elfsym_problem(m->es) && strcmp(path, found) == 0)
		warnf(sym, "'%s': %s: ignored, no name is taken from it", path,
		      sp_elfsym_problem(m->es));
	else if (m->es && sp_elfsym_problem(m->es))
		warnf(sym, "'%s' (read from '%s'): %s: ignored, no name is taken from it", path,
		      found, sp_elfsym_problem(m->es));
	if (!m->es && m->mismatch)
		sym->modules_mismatched++;
	else if (!m->es)
		sym->modules_missing++;
	else if (sym->defer_debuginfo)
		defer_debuginfo(sym, m);
	else if (sp_elfsym_has_debuginfo(m->es))
		sym->debuginfo_modules++;
	return m;
}

/*
 * A vDSO image handed to libdwfl through a memfd, when it is ELF with
 * the build-id bid (bidlen 0: any, or none); its build-id goes to *out
 * when out is given.  NULL when it is not.
 */
static struct sp_elfsym *open_image(struct sp_namer *sym, const void *image, size_t size,
				    const unsigned char *bid, int bidlen, unsigned char *out,
				    int *outlen)
{
	unsigned char id[SP_BUILD_ID_MAX];
	int fd = image ? memfd_create("vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return NULL;
	int n = -1;
	if (write(fd, image, size) == (ssize_t)size)
		n = sp_build_id_fd(fd, id);
	if (n < 0 || (bidlen > 0 && (n != bidlen || memcmp(id, bid, (size_t)n) != 0))) {
		close(fd);
		return NULL;
	}
	if (out) {
		memcpy(out, id, (size_t)n);
		*outlen = n;
	}
	return sp_elfsym_open(fd, "[vdso]", &sym->s->elf);
}

/*
 * The vDSO of this process: in the same boot it is the image the
 * recorded processes of its ABI had.
 */
static struct sp_elfsym *own_vdso(struct sp_namer *sym)
{
	if (sym->vdso_tried)
		return sym->vdso;
	sym->vdso_tried = true;
	size_t size;
	const void *image = sp_vdso_image(&size);
	sym->vdso = open_image(sym, image, size, NULL, 0, sym->vdso_bid, &sym->vdso_bidlen);
	return sym->vdso;
}

/* The stream's image of a vDSO of this path and build-id, or NULL. */
static struct vimage *vimage_find(struct sp_namer *sym, const char *path, const void *bid,
				  size_t bidlen)
{
	for (size_t i = 0; bidlen && i < sym->nvimages; i++) {
		struct vimage *v = sym->vimages[i];
		if ((size_t)v->bidlen == bidlen && memcmp(v->bid, bid, bidlen) == 0 &&
		    strcmp(v->path, path) == 0)
			return v;
	}
	return NULL;
}

/* Keeps an image record's bytes, the first of each path and build-id. */
static int vimage_note(struct sp_namer *sym, const struct sp_record *rec)
{
	const char *p;
	size_t pl, bidlen, len;
	const void *bid, *data;
	if (!sp_map_str(rec->map, "path", &p, &pl) || !sp_map_bin(rec->map, "build_id", &bid, &bidlen) ||
	    !sp_map_bin(rec->map, "data", &data, &len) || bidlen == 0 ||
	    bidlen > SP_BUILD_ID_MAX || len == 0 || memchr(p, '\0', pl))
		return 0;
	char *path = strndup(p, pl);
	struct vimage *v = path ? calloc(1, sizeof(*v)) : NULL;
	if (!v || vimage_find(sym, path, bid, bidlen)) {
		free(path);
		free(v);
		return v ? 0 : sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	}
	v->path = path;
	v->bidlen = (int)bidlen;
	memcpy(v->bid, bid, bidlen);
	v->len = len;
	if (!(v->data = malloc(len)) ||
	    SP_ALLOC_GROW(sym->vimages, sym->nvimages + 1, sym->alloc_vimages) < 0) {
		free(v->data);
		free(path);
		free(v);
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	}
	memcpy(v->data, data, len);
	sym->vimages[sym->nvimages++] = v;
	return 0;
}

/* The symbolizer of a vDSO module: its image from the stream, or this process's. */
static struct sp_elfsym *vdso_of(struct sp_namer *sym, const struct module *mod)
{
	struct vimage *v = mod->vimg;
	if (v && !v->tried) {
		v->tried = true;
		v->es = open_image(sym, v->data, v->len, v->bid, v->bidlen, NULL, NULL);
		free(v->data);
		v->data = NULL;
	}
	if (v && v->es)
		return v->es;
	return sym->this_boot && !mod->vdso_other ? own_vdso(sym) : NULL;
}

/*
 * Finds a vDSO module's image; without a usable one, this process's vDSO
 * is used for a stream of this boot, unless the module's build-id is
 * another.
 */
static void vdso_module(struct sp_namer *sym, struct module *m, const void *bid,
			size_t bidlen)
{
	m->vimg = vimage_find(sym, m->path, bid, bidlen);
	if (bidlen && sym->this_boot && own_vdso(sym))
		m->vdso_other = (size_t)sym->vdso_bidlen != bidlen ||
				memcmp(sym->vdso_bid, bid, bidlen) != 0;
}

int sp_namer_add_module(struct sp_namer *sym, const struct sp_record *rec)
{
	uint64_t id = 0, pid = 0;
	const char *p = "", *k = NULL;
	size_t pl = 0, kl = 0, bidlen = 0;
	const void *bid = NULL;
	bool content = false;
	sp_map_u64(rec->map, "id", &id);
	sp_map_u64(rec->map, "pid", &pid);
	sp_map_str(rec->map, "path", &p, &pl);
	if (!sp_map_str(rec->map, "kind", &k, &kl)) {
		/* No kind: a file if the path names one. */
		k = pl && p[0] == '/' ? "elf" : "anon";
		kl = strlen(k);
	}
	if (!sp_map_bin(rec->map, "build_id", &bid, &bidlen)) {
		bidlen = 0;
		content = sp_map_bin(rec->map, "content_id", &bid, &bidlen);
	}
	if (id > MAX_MODULE_ID)
		return 0;	/* no table that large for a corrupt id: its frames stay unnamed */
	if (id >= sym->nmodules) {
		if (SP_ALLOC_GROW(sym->modules, id + 1, sym->alloc_modules) < 0)
			return sp_error_errno(&sym->err, "module %llu", (unsigned long long)id);
		memset(sym->modules + sym->nmodules, 0, (id + 1 - sym->nmodules) * sizeof(*sym->modules));
		sym->nmodules = id + 1;
	}
	struct module *m = &sym->modules[id];
	free(m->path);
	memset(m, 0, sizeof(*m));
	if (!(m->path = strndup(p, pl)))
		return sp_error_errno(&sym->err, "module %llu", (unsigned long long)id);
	m->kind = kl == 3 && memcmp(k, "elf", 3) == 0 ? MOD_ELF :
		  kl == 3 && memcmp(k, "jit", 3) == 0 ? MOD_JIT :
		  kl == 4 && memcmp(k, "vdso", 4) == 0 ? MOD_VDSO : MOD_OTHER;
	m->pid = (uint32_t)pid;
	m->defined = true;
	if (m->kind == MOD_ELF && !(m->ms = modsym_get(sym, m->path, bid, bidlen, content)))
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	if (m->kind == MOD_VDSO && !content)
		vdso_module(sym, m, bid, bidlen);
	return 0;
}

/* Remembers the latest mapping of a file, by its path (see lastmaps). */
static int note_lastmap(struct sp_namer *sym, const struct sp_record *rec)
{
	uint64_t pid = 0, start = 0, len = 0;
	const char *p;
	size_t pl;
	char path[4096];
	if (!sp_map_u64(rec->map, "pid", &pid) || !sp_map_u64(rec->map, "start", &start) ||
	    !sp_map_u64(rec->map, "len", &len) || !sp_map_str(rec->map, "path", &p, &pl) ||
	    pl == 0 || pl >= sizeof(path) || p[0] != '/' || pid > UINT32_MAX)
		return 0;
	memcpy(path, p, pl);
	path[pl] = '\0';
	uint64_t key = lastmap_key(path, pl);
	struct sp_modfile_proc *l = sp_u64map_get(&sym->lastmaps, key);
	if (!l) {
		if (!(l = malloc(sizeof(*l))))
			return -1;
		if (sp_u64map_put(&sym->lastmaps, key, l) < 0) {
			free(l);
			return -1;
		}
	}
	*l = (struct sp_modfile_proc){ (unsigned)pid, start, start + len };
	return 0;
}

int sp_namer_note(struct sp_namer *sym, const struct sp_record *rec)
{
	if (sp_perfmaps_note(sym->perfmaps, rec) < 0)
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	if (rec->type == SP_R_IMAGE)
		return vimage_note(sym, rec);
	if (rec->type == SP_R_MAP && sym->this_boot && note_lastmap(sym, rec) < 0)
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	if (rec->type == SP_R_MAP) {
		/* A jitdump announced: its records may name JIT frames met before them. */
		static char yes;
		uint64_t pid = 0;
		const char *p;
		size_t pl;
		if (sp_map_u64(rec->map, "pid", &pid) && sp_map_str(rec->map, "path", &p, &pl) &&
		    pl > 5 && memcmp(p + pl - 5, ".dump", 5) == 0 && memmem(p, pl, "/jit-", 5) &&
		    sp_u64map_put(&sym->jit_pids, pid, &yes) < 0)
			return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	}
	if (rec->type == SP_R_JITDUMP) {
		uint64_t pid = 0;
		sp_map_u64(rec->map, "pid", &pid);
		unsigned gen = sp_jitdumps_generation(sym->jitdumps, (uint32_t)pid);
		if (sp_jitdumps_note(sym->jitdumps, rec) < 0)
			return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
		if (sp_jitdumps_generation(sym->jitdumps, (uint32_t)pid) != gen)
			sym->jit_renamed = true;
	}
	return 0;
}

static struct module *module_of(struct sp_namer *sym, uint64_t id);

int sp_namer_keep_stack(struct sp_namer *sym, uint64_t id,
			const struct sp_stack_frame *f, size_t n)
{
	if (sym->kept_frames + n > MAX_KEPT_FRAMES)
		return 0;
	/* Only stacks of processes whose jitdump may still name them. */
	bool jit = false;
	for (size_t i = 0; i < n && !jit; i++) {
		const struct module *m = module_of(sym, f[i].module);
		jit = m && m->kind == MOD_JIT && sp_u64map_get(&sym->jit_pids, m->pid);
	}
	if (!jit)
		return 0;
	struct kept k = { id, malloc(n * sizeof(*f)), n };
	if (!k.f || SP_ALLOC_GROW(sym->kept, sym->nkept + 1, sym->allockept) < 0) {
		free(k.f);
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	}
	memcpy(k.f, f, n * sizeof(*f));
	sym->kept[sym->nkept++] = k;
	sym->kept_frames += n;
	return 0;
}

bool sp_namer_next_stale(struct sp_namer *sym, uint64_t *id,
			 const struct sp_stack_frame **f, size_t *n)
{
	if (sym->nextstale)	/* the one handed back last is done with */
		free(sym->stale[sym->nextstale - 1].f);
	if (sym->nextstale >= sym->nstale) {
		/* A round ends; the next begins when names have changed. */
		free(sym->stale);
		sym->stale = NULL;
		sym->nstale = sym->nextstale = 0;
		if (!sym->jit_renamed || !sym->nkept)
			return false;
		sym->jit_renamed = false;
		sym->stale = sym->kept;
		sym->nstale = sym->nkept;
		sym->kept = NULL;
		sym->nkept = sym->allockept = sym->kept_frames = 0;
	}
	const struct kept *k = &sym->stale[sym->nextstale++];
	*id = k->id;
	*f = k->f;
	*n = k->n;
	return true;
}

static struct module *module_of(struct sp_namer *sym, uint64_t id)
{
	return id < sym->nmodules && sym->modules[id].defined ? &sym->modules[id] : NULL;
}

int sp_namer_intern(struct sp_namer *sym, const struct sp_stack_frame *f, uint64_t *id)
{
	struct frame key = { .k = { f->module, f->addr, f->flags, 0 } };
	if (f->flags & SP_FRAME_MARKER)
		key.k.addr = f->rel;	/* markers differ by their reason */
	const struct module *mod = module_of(sym, f->module);
	if (mod && mod->kind == MOD_JIT)	/* a JIT name holds until its map is read again */
		key.k.gen = sp_namer_jit_generation(sym, mod->pid);
	key.e.hash = (uint32_t)(sp_hash_u64(key.k.module * 31 + key.k.addr) ^ key.k.flags ^
				(key.k.gen << 16));
	struct sp_hashmap_entry *e = sp_hashmap_get(&sym->frames, &key.e, NULL);
	if (e) {
		*id = sp_container_of(e, struct frame, e)->id;
		return 0;
	}
	struct frame *fr = sp_arena_alloc(&sym->frame_arena, sizeof(*fr));
	if (!fr)
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	*fr = key;
	fr->id = sym->nframes;
	if (sp_hashmap_add(&sym->frames, &fr->e) < 0)
		return sp_error_set(&sym->err, SP_ERR_NOMEM, "out of memory");
	*id = sym->nframes++;
	sym->fresh_id = *id;
	sym->fresh = true;
	return 1;
}

uint64_t sp_namer_jit_generation(const struct sp_namer *sym, uint32_t pid)
{
	return sp_perfmaps_generation(sym->perfmaps, pid) |
	       (uint64_t)sp_jitdumps_generation(sym->jitdumps, pid) << 32;
}

bool sp_namer_unnamed(const struct sp_namer *sym, uint64_t id)
{
	return id < sym->nunnamed && sym->unnamed[id];
}

/* Notes whether the frame interned last, resolved now, is JIT code left unnamed. */
static void note_unnamed(struct sp_namer *sym, const struct sp_symframe *out)
{
	if (!sym->fresh)
		return;
	sym->fresh = false;
	if ((out->flags & SP_SYM_JIT) && out->origin == SP_ORIGIN_ADDRESS_ONLY &&
	    SP_ALLOC_SLOT(sym->unnamed, sym->fresh_id, sym->nunnamed, sym->allocunnamed) == 0)
		sym->unnamed[sym->fresh_id] = 1;
}

static enum sp_sym_origin origin_of(const char *s)
{
	for (int i = 0; i < SP_ORIGIN_COUNT; i++)
		if (origin_names[i] == s || (origin_names[i][0] == s[0] && strcmp(origin_names[i], s) == 0))
			return (enum sp_sym_origin)i;
	return SP_ORIGIN_ADDRESS_ONLY;
}

/* A name from a symbol table: kallsyms or a perf map. */
static void from_sym(struct sp_symframe *out, const struct sp_sym *s, uint64_t addr,
		     enum sp_sym_origin origin)
{
	if (!s)
		return;
	out->origin = origin;
	out->name = s->name;
	out->offset = addr - s->start;
}

/* A name from an ELF file; the offset is from addr itself, not addr - 1. */
static void from_elf(struct sp_symframe *out, const struct sp_symres *r, unsigned back,
		     bool lines)
{
	if (!r || !r->name)
		return;
	out->origin = origin_of(r->origin);
	out->name = r->name;
	out->offset = r->offset + back;
	if (lines) {
		out->file = r->file;
		out->line = r->line;
		out->inl = r->inl;
		out->ninl = r->ninl;
	}
}

bool sp_namer_elf_job(struct sp_namer *sym, const struct sp_stack_frame *f,
		      struct sp_elf_job *q)
{
	struct module *mod = module_of(sym, f->module);
	unsigned kind = f->flags & SP_FRAME_KIND_MASK;
	if ((f->flags & SP_FRAME_MARKER) || kind == SP_FRAME_KERNEL || !mod || mod->kind != MOD_ELF)
		return false;
	if (!mod->ms)
		mod->ms = modsym_get(sym, mod->path, NULL, 0, false);
	*q = (struct sp_elf_job){ .es = mod->ms ? mod->ms->es : NULL, .rel = f->rel,
				  .back = f->flags & SP_FRAME_RETADDR ? 1 : 0 };
	return true;
}

void sp_elf_job_run(struct sp_elf_job *q)
{
	if (!q->es)
		return;
	q->r = sp_elfsym_lookup(q->es, q->rel - q->back);
	/*
	 * A return address at a function's first byte that the byte before
	 * does not explain: a signal trampoline (__restore_rt), which no
	 * call precedes; the kernel made it the handler's return address.
	 */
	if (q->back && (!q->r || !q->r->name)) {
		const struct sp_symres *at = sp_elfsym_lookup(q->es, q->rel);
		if (at && at->name && at->offset == 0) {
			q->r = at;
			q->back = 0;
		}
	}
}

void sp_namer_resolve(struct sp_namer *sym, const struct sp_stack_frame *f,
		      struct sp_symframe *out)
{
	struct sp_elf_job q;
	bool elf = sp_namer_elf_job(sym, f, &q);
	if (elf)
		sp_elf_job_run(&q);
	sp_namer_resolve_job(sym, f, elf ? &q : NULL, out);
}

void sp_namer_resolve_job(struct sp_namer *sym, const struct sp_stack_frame *f,
			  const struct sp_elf_job *q, struct sp_symframe *out)
{
	unsigned kind = f->flags & SP_FRAME_KIND_MASK, back = f->flags & SP_FRAME_RETADDR ? 1 : 0;
	struct module *mod = module_of(sym, f->module);
	const struct sp_symres *start = NULL;
	out->name = NULL;
	out->origin = SP_ORIGIN_ADDRESS_ONLY;
	out->offset = 0;
	out->file = NULL;
	out->line = 0;
	out->inl = NULL;
	out->ninl = 0;
	out->has_module = f->module != SP_NO_MODULE;
	out->module = f->module;
	out->flags = (back ? SP_SYM_RETADDR : 0) |
		     (kind == SP_FRAME_KERNEL ? SP_SYM_KERNEL : kind == SP_FRAME_JIT ? SP_SYM_JIT : 0);

	if (f->flags & SP_FRAME_MARKER) {
		if (f->rel < SP_END_COUNT)
			snprintf(out->buf, sizeof(out->buf), "[%s]",
				 sp_unwind_end_name((enum sp_unwind_end)f->rel));
		else
			snprintf(out->buf, sizeof(out->buf), "[marker %llu]", (unsigned long long)f->rel);
		out->name = out->buf;
		out->flags = SP_SYM_MARKER;
		out->has_module = false;
		mod = NULL;
	} else if (kind == SP_FRAME_KERNEL) {
		kallsyms_load(sym, &sym->err);
		if (sym->kstate == KALLSYMS_LOADED)
			from_sym(out, sp_symtab_find(&sym->ksyms, f->addr - back), f->addr,
				 SP_ORIGIN_KALLSYMS);
	} else if (mod && mod->kind == MOD_JIT) {
		/* A jitdump's code ranges are exact and its own: it wins over a perf map. */
		struct sp_jitdump_sym js;
		if (sp_jitdumps_find(sym->jitdumps, mod->pid, f->addr - back, &js)) {
			out->origin = SP_ORIGIN_JITDUMP;
			out->name = js.name;
			out->offset = f->addr - js.start;
			out->file = js.file;
			out->line = js.line;
		} else {
			from_sym(out, sp_perfmaps_find(sym->perfmaps, mod->pid, f->addr - back),
				 f->addr, SP_ORIGIN_PERF_MAP);
		}
	} else if (mod && mod->kind == MOD_VDSO) {
		struct sp_elfsym *v = vdso_of(sym, mod);
		from_elf(out, v ? sp_elfsym_lookup(v, f->rel - back) : NULL, back, false);
	} else if (q) {
		back = q->back;
		from_elf(out, q->r, back, true);
		start = q->r && !q->r->name && q->r->has_start ? q->r : NULL;
	}
	if (!out->name) {
		/* Still say where: the module's file name and the offset. */
		const char *base = mod ? strrchr(mod->path, '/') : NULL;
		base = base ? base + 1 : mod ? mod->path : NULL;
		if (start && base) {
			/* A stripped module: where the function starts in its file. */
			snprintf(out->buf, sizeof(out->buf), "%.400s+0x%llx", base,
				 (unsigned long long)start->start_off);
			out->origin = SP_ORIGIN_FUNCTION_START;
			out->offset = start->offset + back;
		} else if (kind == SP_FRAME_KERNEL)
			snprintf(out->buf, sizeof(out->buf), "[kernel]+0x%llx", (unsigned long long)f->addr);
		else if (base)
			snprintf(out->buf, sizeof(out->buf), "%.400s+0x%llx", base,
				 (unsigned long long)f->rel);
		else
			snprintf(out->buf, sizeof(out->buf), "0x%llx", (unsigned long long)f->addr);
		out->name = out->buf;
	}
	for (size_t i = 0; i < sizeof(hidden_names) / sizeof(*hidden_names); i++)
		if (out->name[0] == hidden_names[i][0] && strcmp(out->name, hidden_names[i]) == 0)
			out->flags |= SP_SYM_HIDDEN;
	if (out->ninl)
		out->flags |= SP_SYM_INLINE;
	out->has_offset = out->offset || out->origin != SP_ORIGIN_ADDRESS_ONLY;
	sym->by_origin[out->origin]++;
	note_unnamed(sym, out);
}

void sp_namer_stats(const struct sp_namer *sym, struct sp_sym_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->frames = sym->nframes;
	memcpy(st->by_origin, sym->by_origin, sizeof(st->by_origin));
	st->modules_missing = sym->modules_missing;
	st->modules_mismatched = sym->modules_mismatched;
	st->debuginfo_modules = sym->debuginfo_modules;
	for (size_t i = 0; i < sym->ndeferred; i++)
		st->debuginfo_modules += sp_elfsym_has_debuginfo(sym->deferred[i]);
	sp_perfmaps_stats(sym->perfmaps, &st->perf_maps);
	st->kallsyms = sym->kstate == KALLSYMS_LOADED ?
		       (sym->s->kallsyms ? sym->s->kallsyms : "/proc/kallsyms") : "none";
}

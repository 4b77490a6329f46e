/* SPDX-License-Identifier: MIT
 * sp-stat: says what happened in a recording, at any stage: the host and
 * options, the counters of the capture summary, how unwinding and
 * symbolization went, and a diagnosis that names the exact option to
 * change.  --system says whether this host can profile at all.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "stream/advice.h"
#include "stream/records.h"
#include "stream/stream.h"
#include "tool.h"
#include "stream/vocab.h"
#include "util/alloc.h"
#include "util/buildid.h"
#include "util/hashmap.h"
#include "util/jsonw.h"
#include "util/procfs.h"
#include "util/strbuf.h"

#define EXIT_CHECK 4	/* sp-stat --check: a threshold was exceeded */

static void usage(void)
{
	printf("Usage: %s [options] [FILE...]\n"
	       "       %s --system [--json]\n"
	       "Report what happened in a stackpulse recording (any stage), and what to do.\n"
	       "\n"
	       "      --json                   one JSON document instead of text\n"
	       "      --top N                  processes and threads to list (default 10)\n"
	       "      --check                  exit %d when a threshold below is exceeded\n"
	       "      --max-lost-pct P         lost events, in %% of samples and lost\n"
	       "      --max-truncated-pct P    truncated stacks, in %% of samples\n"
	       "      --min-complete-pct P     stacks reaching their thread's entry, in %%\n"
	       "      --max-address-only-pct P address-only frames, in %% of frames\n"
	       "      --max-unnamed-pct P      address-only and function-start frames, in %% of frames\n"
	       "      --system                 can this host profile, and what to change\n"
	       "  -h, --help                   show this help\n"
	       "  -V, --version                show the version\n"
	       "\n" SP_EXIT_STATUS_HELP
	       "  %d  --check: a threshold was exceeded\n",
	       sp_progname, sp_progname, EXIT_CHECK, EXIT_CHECK);
}

struct named_count {
	uint32_t pid, tid;
	char comm[64];
	uint64_t samples;
	/* Processes: the runtimes seen in it, a bit each, and its stacks. */
	unsigned runtimes;
	uint64_t early, early_in_code;
};

/*
 * The runtimes sp-stat tells apart, from what the stream holds: the
 * files a process maps, CPython's runtime records, the names of frames.
 * RT_NATIVE is compiled code of none of them (C, C++, Rust...); RT_JIT
 * is JIT code in a process of no runtime known here.
 */
enum runtime { RT_NATIVE, RT_NODE, RT_JVM, RT_CPYTHON, RT_GO, RT_JIT, RT_COUNT };

static const struct {
	const char *key, *name, *remedy;
} runtimes[RT_COUNT] = {
	{ "native", "native code", NULL },
	{ "node", "Node.js (V8)",
	  "run node with --perf-basic-prof (names of JIT code in /tmp/perf-PID.map) or --perf-prof "
	  "(a jitdump), and with --interpreted-frames-native-stack so that interpreted functions "
	  "have frames of their own; V8 keeps frame pointers itself, rebuilding nothing helps" },
	{ "jvm", "Java (JVM)",
	  "run java with -XX:+PreserveFramePointer, so that compiled Java code keeps frame pointers, "
	  "and write a perf map for the names: -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, "
	  "or jcmd PID Compiler.perfmap while it runs" },
	{ "cpython", "CPython",
	  "run Python 3.12 or later with -X perf (or PYTHONPERFSUPPORT=1): each Python function "
	  "then runs in a trampoline the walk steps over, named in /tmp/perf-PID.map" },
	{ "go", "Go",
	  "keep the Go binary's DWARF and symbols (no -ldflags='-s -w', no strip): its unwind "
	  "information is in .debug_frame; or give sp-unwind and sp-symbolize the unstripped file "
	  "(--module-dir)" },
	{ "jit", "JIT code of an unknown runtime",
	  "have the JIT keep frame pointers in its code and describe the code in a perf map "
	  "(/tmp/perf-PID.map) or a jitdump (jit-PID.dump)" },
};

/* A module record of the current segment. */
struct modinfo {
	char *path;
	bool vdso, jit;
	enum runtime rt;	/* whose code the file is: node, libjvm.so... */
	uint64_t pid;		/* a jit module's process */
	size_t mod;		/* its struct modcount, by path */
};

/*
 * Per runtime, over every segment.  A process counts as the runtime it
 * was last seen to be: a JVM's samples taken before libjvm.so was
 * mapped are the JVM's.
 */
struct rtcount {
	uint64_t processes, samples;
	uint64_t early;		/* stacks of its processes that ended early */
	uint64_t early_in_code;	/* ... in a runtime's code: JIT code or builtins */
	uint64_t jit_frames, jit_unnamed;	/* symbolized JIT frames of its processes */
	uint64_t jit_perf_map, jit_jitdump;	/* ... named from a perf map, a jitdump */
	uint64_t stops[SP_END_COUNT];	/* walks that stopped in its code, by reason */
};

/* Counts by (pid, tid), indexed for lookup by the key pid << 32 | tid. */
struct counts {
	struct named_count *v;
	size_t n, alloc;
	struct sp_u64map index;	/* key -> position in v, plus 1 */
};

/*
 * The origins of a frame's name, in the order of the symbolize record's
 * map (format 1.1 added jitdump, 1.2 gopclntab and function-start),
 * address-only last.  NORIGINS stands for an origin sp-stat does not know.
 */
enum origin {
	O_SYMTAB, O_DYNSYM, O_DEBUGINFO, O_PERF_MAP, O_JITDUMP, O_KALLSYMS,
	O_GOPCLNTAB, O_FUNCTION_START, O_ADDRESS_ONLY, NORIGINS
};

/*
 * How a module file's frames were named, from the best to the worst:
 * what its samples' frames show, by the origin most of them have.
 */
enum naming { N_DEBUGINFO, N_SYMBOLS, N_GOPCLNTAB, N_FUNCTION_START, N_ADDRESS_ONLY, N_COUNT };

static const struct {
	const char *key, *name;
} namings[N_COUNT] = {
	{ "debuginfo", "full debug info" },
	{ "symbols", "symbols only" },
	{ "gopclntab", "Go table" },
	{ "function-start", "function starts only" },
	{ "address-only", "no names" },
};

/* A module, by path, over every segment. */
struct modcount {
	char *path;
	uint64_t address_only, function_start, frames;	/* its frame records */
	bool file;		/* a file of its own: not the vDSO, the kernel, JIT code */
	char id[2 * SP_BUILD_ID_MAX + 1];	/* its latest recorded identity, in hex */
	bool content_id;	/* ... the SHA-1 of its content, not a build-id */
	uint64_t samples;	/* samples whose stack has a frame in it */
	uint64_t sframes[NORIGINS + 1];	/* those frames (one per sample), by origin */
	uint64_t seen;		/* the symstack being read last had a frame in it... */
	uint32_t at;		/* ... at this place of its list of modules */
};

/* The events a recording's header lists, at most this many told apart. */
#define STAT_EVENTS 16

struct stats {
	unsigned segments;
	/* The last header's events (or the one its options name) and their samples. */
	char events[STAT_EVENTS][208];
	uint64_t event_samples[STAT_EVENTS];
	size_t nevents;
	bool have_summary, cut_short;
	char stage[16], hostname[128], kernel[128], arch[32];
	char call_graph[8];	/* options.call_graph: "dwarf" (also when absent) or "fp" */
	uint64_t frequency, stack_size, poll_ms, mmap_pages;
	bool opt_kernel, have_opts;
	bool kernel_enabled;
	bool has_start_ts, has_interval;
	uint64_t start_ts, interval;
	/* Summary counters, summed over segments. */
	uint64_t sample_events, samples, lost, empty, truncated, ignored_user, throttles;
	uint64_t skipped[4];
	uint64_t duration_ns, lost_samples;
	uint64_t errors[SP_E_COUNT];
	/* Counted from the records themselves. */
	uint64_t sample_records, period_sum, first_time, last_time;
	uint64_t period_n;		/* samples in period_sum: not the off-CPU ones */
	long off_cpu_event;		/* the index of "off-cpu" in events; -1: none */
	uint64_t off_cpu_ns, preempted, preempted_ns;
	uint64_t lost_records;
	/* Unwinding. */
	bool have_unwind;
	uint64_t uw_samples, uw_user, uw_complete, uw_frames, uw_ends[SP_END_COUNT];
	/* Symbolization. */
	bool have_symbolize;
	uint64_t frames, origins[NORIGINS + 1], address_only, modules_missing, modules_mismatched;
	/* Address-only and function-start frames of native code: not the vDSO's, not JIT code. */
	uint64_t native_frames, native_address_only, native_function_start;
	struct modcount *mods;
	size_t nmods, allocmods;
	struct sp_hashmap mod_paths;	/* path -> struct modpath */
	const struct modcount **named;	/* module files with samples, most first */
	size_t nnamed;
	/* Symstack id -> its frames in module files, current segment; symstacks read. */
	struct sp_u64map stack_mods;
	uint64_t symstacks;
	struct stackmod *scratch;	/* take_symstack_modules's */
	size_t allocscratch;
	struct modinfo *modinfo;	/* module id -> module, current segment */
	size_t nmodinfo, allocmodinfo;
	struct counts procs, threads;
	/* Runtimes: per pid, stack and frame of the current segment, packed. */
	struct sp_u64map proc_rt, stack_info, frame_info;
	bool have_stacks;
	struct rtcount rt[RT_COUNT];
	/* What the findings that fit the recording need. */
	char boot_id[64], kallsyms[256];	/* host.boot_id; the symbolize record's kallsyms */
	bool launched, attached;	/* the header's options: a command, pids */
	bool archived, archived_kallsyms;	/* archive records, one of them of kallsyms */
	char archive_dir[256];		/* sp-capture's --archive DIR, "" when not known */
	uint64_t kernel_frames, kernel_address_only;	/* symbolized kernel frames */
	uint64_t perf_maps_loaded;
	uint64_t uw_modules_missing, uw_modules_opened, uw_max_depth_full;
	/* What complete stacks needed of their copies (the largest over segments). */
	uint64_t uw_used_stacks, uw_used_p50, uw_used_p995, uw_used_max;
	uint64_t stack_chosen, cal_stacks;	/* sp-capture --stack-size auto's choice */
	uint64_t pyeval_only;		/* CPython samples in the eval loop, no Python frame */
	bool jit_map_asked;		/* a command line asked a JIT for a perf map or jitdump */
	/* The ids sp-capture -p was given, and the processes it recorded (options.pids). */
	uint64_t given_pids[16], opt_pids[64];
	size_t ngiven, nopt;
	struct sp_u64map container;	/* pid -> 1: a process in another mount namespace */
	uint64_t container_stops;	/* ... whose stack ended at a missing or other file */
};

static const char *const origin_names[NORIGINS] = {
	"symtab", "dynsym", "debuginfo", "perf-map", "jitdump", "kallsyms",
	"gopclntab", "function-start", "address-only"
};

/* The origin of this name, or NORIGINS. */
static enum origin origin_of(const char *o, size_t n)
{
	for (int i = 0; i < NORIGINS; i++)
		if (strlen(origin_names[i]) == n && memcmp(origin_names[i], o, n) == 0)
			return (enum origin)i;
	return NORIGINS;
}

/* The way of naming an origin stands for, or N_COUNT for the runtimes' and the kernel's. */
static enum naming origin_naming(enum origin o)
{
	switch (o) {
	case O_DEBUGINFO: return N_DEBUGINFO;
	case O_SYMTAB: case O_DYNSYM: return N_SYMBOLS;
	case O_GOPCLNTAB: return N_GOPCLNTAB;
	case O_FUNCTION_START: return N_FUNCTION_START;
	case O_ADDRESS_ONLY: return N_ADDRESS_ONLY;
	default: return N_COUNT;
	}
}

static struct named_count *count_get(struct counts *c, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uintptr_t at = (uintptr_t)sp_u64map_get(&c->index, key);
	if (at)
		return &c->v[at - 1];
	if (SP_ALLOC_GROW(c->v, c->n + 1, c->alloc) < 0 ||
	    sp_u64map_put(&c->index, key, (void *)(uintptr_t)(c->n + 1)) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	struct named_count *nc = &c->v[c->n++];
	memset(nc, 0, sizeof(*nc));
	nc->pid = pid;
	nc->tid = tid;
	return nc;
}

static void set_name(struct named_count *c, const char *s, size_t n)
{
	snprintf(c->comm, sizeof(c->comm), "%.*s", (int)(n < 63 ? n : 63), s);
}

static void copy_str(char *dst, size_t len, const msgpack_object *m, const char *key)
{
	const char *s;
	size_t n;
	if (sp_map_str(m, key, &s, &n))
		snprintf(dst, len, "%.*s", (int)(n < len - 1 ? n : len - 1), s);
}

/* Whether the recording's user frames are the kernel's frame-pointer walk. */
static bool call_graph_fp(const struct stats *st)
{
	return strcmp(st->call_graph, "fp") == 0;
}

/* A stack of the unwound or symbolized stage: how it ended, and where. */
struct stackinfo {
	unsigned end;		/* 0, or the marker's reason */
	bool stopped;		/* a frame precedes the marker */
	bool stop_jit;		/* ... and it is JIT code */
	uint64_t stop_module;	/* ... in this module, or SP_NO_MODULE */
	enum runtime stop_name;	/* the runtime the stop frame's name shows */
	unsigned names;		/* the runtimes its frames' names show, a bit each */
	bool pyeval;		/* a frame is CPython's eval loop */
};

/* A symbolized frame, for the symstacks that use it. */
struct frameinfo {
	uint64_t module;
	unsigned kind, reason;
	bool marker;
	enum runtime name_rt;
	enum origin origin;
	bool pyeval;		/* CPython's eval loop: _PyEval_EvalFrame... */
};

/* Ids and process state are scoped to their segment. */
static void forget_segment(struct stats *st)
{
	for (size_t i = 0; i < st->nmodinfo; i++)
		free(st->modinfo[i].path);
	free(st->modinfo);
	st->modinfo = NULL;
	st->nmodinfo = st->allocmodinfo = 0;
	sp_u64map_release(&st->proc_rt, NULL);
	sp_u64map_release(&st->stack_info, free);
	sp_u64map_release(&st->frame_info, free);
	sp_u64map_release(&st->stack_mods, free);
	sp_u64map_release(&st->container, NULL);
}

static bool has_str(const char *s, size_t n, const char *what)
{
	return memmem(s, n, what, strlen(what)) != NULL;
}

/* Whose code a mapped file is, by its name. */
static enum runtime path_runtime(const char *p, size_t n)
{
	const char *slash = memrchr(p, '/', n), *b = slash ? slash + 1 : p;
	size_t bn = (size_t)(p + n - b);
	if ((bn == 4 && memcmp(b, "node", 4) == 0) || (bn == 6 && memcmp(b, "nodejs", 6) == 0) ||
	    has_str(b, bn, "libnode.so"))
		return RT_NODE;
	if (has_str(b, bn, "libjvm.so"))
		return RT_JVM;
	if (has_str(b, bn, "libpython") ||
	    (bn >= 6 && memcmp(b, "python", 6) == 0 && strspn(b + 6, "0123456789.") >= bn - 6))
		return RT_CPYTHON;
	return RT_NATIVE;
}

/*
 * The runtime a frame's name shows: V8's builtins (Builtins_*, in the
 * node executable) and its perf-map names (JS:*, Builtin:*), CPython's
 * (py::*), and Go's runtime package, which every Go program has.
 */
static enum runtime name_runtime(const char *s, size_t n, bool jit)
{
	static const struct { const char *prefix; enum runtime rt; bool jit; } names[] = {
		{ "Builtins_", RT_NODE, false }, { "JS:", RT_NODE, true }, { "Builtin:", RT_NODE, true },
		{ "py::", RT_CPYTHON, true }, { "runtime.", RT_GO, false },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].jit == jit && n > strlen(names[i].prefix) &&
		    memcmp(s, names[i].prefix, strlen(names[i].prefix)) == 0)
			return names[i].rt;
	return RT_NATIVE;
}

static unsigned proc_runtimes(const struct stats *st, uint64_t pid)
{
	return (unsigned)(uintptr_t)sp_u64map_get(&st->proc_rt, pid) & 0xffff;
}

static void set_proc_runtimes(struct stats *st, uint64_t pid, unsigned bits)
{
	if (sp_u64map_put(&st->proc_rt, pid, (void *)(uintptr_t)(bits | 0x10000)) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
}

/* The runtime a process is, from its bits: at most one, in practice. */
static enum runtime main_runtime(unsigned bits)
{
	static const enum runtime order[] = { RT_NODE, RT_JVM, RT_CPYTHON, RT_GO };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (bits & 1u << order[i])
			return order[i];
	return RT_NATIVE;
}

/* The runtime whose JIT wrote code in a process of these bits. */
static enum runtime jit_runtime(unsigned bits)
{
	enum runtime r = main_runtime(bits);
	return r == RT_NATIVE || r == RT_GO ? RT_JIT : r;
}

static struct modinfo *module_info(const struct stats *st, uint64_t id)
{
	return id < st->nmodinfo && st->modinfo[id].path ? &st->modinfo[id] : NULL;
}

/* The modules by path: an index into stats.mods, found by hash. */
struct modpath {
	struct sp_hashmap_entry e;
	const char *path;	/* the struct modcount's */
	size_t at;
};

static int modpath_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		       const void *keydata)
{
	const struct modpath *x = sp_container_of(a, struct modpath, e);
	const struct modpath *y = sp_container_of(b, struct modpath, e);
	return strcmp(x->path, keydata ? (const char *)keydata : y->path);
}

static void modpath_free(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct modpath, e));
}

/* The struct modcount of a path, made when first met. */
static size_t module_count(struct stats *st, const char *path)
{
	struct modpath key = { .e.hash = sp_hash_str(path), .path = path };
	struct sp_hashmap_entry *e = sp_hashmap_get(&st->mod_paths, &key.e, path);
	if (e)
		return sp_container_of(e, struct modpath, e)->at;
	if (SP_ALLOC_GROW(st->mods, st->nmods + 1, st->allocmods) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	struct modcount *c = &st->mods[st->nmods];
	memset(c, 0, sizeof(*c));
	c->path = sp_xstrdup(path);
	struct modpath *mp = sp_xmalloc(sizeof(*mp));
	*mp = key;
	mp->path = c->path;
	mp->at = st->nmods;
	if (sp_hashmap_add(&st->mod_paths, &mp->e) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	return st->nmods++;
}

/*
 * Whether a module is a file of its own, whose debug information can be
 * looked for (a kind sp-stat does not know is taken by its path, as the
 * format says), and its identity, for the paths of the advice.
 */
static void take_module_file(struct modcount *c, const msgpack_object *m,
			     const struct modinfo *mi, const char *k, size_t kn)
{
	static const char *const others[] = { "kernel", "vdso", "jit", "anon" };
	const unsigned char *id;
	size_t n;
	bool other = mi->vdso || mi->jit;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		other = other || (kn == strlen(others[i]) && memcmp(k, others[i], kn) == 0);
	c->file = !other && ((kn == 3 && memcmp(k, "elf", 3) == 0) || mi->path[0] == '/');
	c->id[0] = 0;
	c->content_id = false;
	if (!sp_map_bin(m, "build_id", (const void **)&id, &n)) {
		if (!sp_map_bin(m, "content_id", (const void **)&id, &n))
			return;
		c->content_id = true;
	}
	if (n > SP_BUILD_ID_MAX)
		n = SP_BUILD_ID_MAX;
	for (size_t i = 0; i < n; i++)
		snprintf(c->id + 2 * i, 3, "%02x", id[i]);
	c->id[2 * n] = 0;
}

static void take_module(struct stats *st, const msgpack_object *m)
{
	uint64_t id, pid = 0;
	const char *s, *k = "";
	size_t n, kn = 0;
	if (!sp_map_u64(m, "id", &id) || id >= 100000 || !sp_map_str(m, "path", &s, &n))
		return;
	if (id >= st->nmodinfo) {
		if (SP_ALLOC_GROW(st->modinfo, id + 1, st->allocmodinfo) < 0)
			sp_die(SP_EXIT_FATAL, "out of memory");
		memset(st->modinfo + st->nmodinfo, 0, (id + 1 - st->nmodinfo) * sizeof(*st->modinfo));
		st->nmodinfo = id + 1;
	}
	struct modinfo *mi = &st->modinfo[id];
	free(mi->path);
	if (!(mi->path = strndup(s, n)))
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_map_str(m, "kind", &k, &kn);
	sp_map_u64(m, "pid", &pid);
	mi->vdso = (kn == 4 && memcmp(k, "vdso", 4) == 0) || strcmp(mi->path, "[vdso]") == 0;
	mi->jit = kn == 3 && memcmp(k, "jit", 3) == 0;
	mi->pid = pid;
	mi->rt = mi->jit || mi->vdso ? RT_NATIVE : path_runtime(s, n);
	mi->mod = module_count(st, mi->path);
	take_module_file(&st->mods[mi->mod], m, mi, k, kn);
}

/* Whether a command line asks its JIT for a perf map or a jitdump. */
static void take_map_flags(struct stats *st, const msgpack_object_array *args)
{
	for (uint32_t i = 0; args && i < args->size; i++)
		if (args->ptr[i].type == MSGPACK_OBJECT_STR &&
		    sp_jit_map_flag(args->ptr[i].via.str.ptr, args->ptr[i].via.str.size))
			st->jit_map_asked = true;
}

/* A process in a container, from its record; a child forked from one is in it too. */
static void take_container(struct stats *st, const struct sp_record *rec)
{
	uint64_t pid, ppid, ns;
	if (!sp_map_u64(rec->map, "pid", &pid))
		return;
	bool in = rec->type == SP_R_PROCESS ? sp_map_u64(rec->map, "mntns", &ns) :
		  sp_map_u64(rec->map, "ppid", &ppid) && ppid != pid &&
		  sp_u64map_get(&st->container, ppid);
	if (rec->type == SP_R_PROCESS)
		take_map_flags(st, sp_map_array(rec->map, "cmdline"));
	if (in && sp_u64map_put(&st->container, pid, (void *)1) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
}

/* A sample of a process in a container whose stack ended at a file not found, or another. */
static void take_sample_container(struct stats *st, uint64_t pid, const msgpack_object *m)
{
	uint64_t stack;
	const struct stackinfo *si;
	if (sp_u64map_get(&st->container, pid) && sp_map_u64(m, "stack", &stack) &&
	    (si = sp_u64map_get(&st->stack_info, stack)) &&
	    (si->end == SP_END_MISSING_MODULE || si->end == SP_END_BUILD_ID_MISMATCH))
		st->container_stops++;
}

/* The runtime bits of a process, from its map and runtime records. */
static void take_process_state(struct stats *st, const struct sp_record *rec)
{
	const msgpack_object *m = rec->map;
	uint64_t pid, ppid;
	const char *s;
	size_t n;
	bool b;
	if (!sp_map_u64(m, "pid", &pid))
		return;
	switch (rec->type) {
	case SP_R_PROCESS: case SP_R_EXEC:
		set_proc_runtimes(st, pid, 0);
		break;
	case SP_R_FORK:
		if (sp_map_u64(m, "ppid", &ppid) && ppid != pid)
			set_proc_runtimes(st, pid, proc_runtimes(st, ppid));
		break;
	case SP_R_MAP:
		if (sp_map_str(m, "path", &s, &n) && path_runtime(s, n) != RT_NATIVE)
			set_proc_runtimes(st, pid, proc_runtimes(st, pid) | 1u << path_runtime(s, n));
		break;
	case SP_R_RUNTIME:
		if (sp_map_bool(m, "cpython", &b))
			set_proc_runtimes(st, pid, b ? proc_runtimes(st, pid) | 1u << RT_CPYTHON :
						 proc_runtimes(st, pid) & ~(1u << RT_CPYTHON));
		break;
	default:
		break;
	}
}

static void put_stack(struct stats *st, uint64_t id, const struct stackinfo *si)
{
	struct stackinfo *p = malloc(sizeof(*p));
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory");
	*p = *si;
	free(sp_u64map_remove(&st->stack_info, id));
	if (sp_u64map_put(&st->stack_info, id, p) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	st->have_stacks = true;
}

/* An unwound stack: its marker, and the frame before it. */
static void take_stack(struct stats *st, const msgpack_object *m)
{
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	struct stackinfo si = { .stop_module = SP_NO_MODULE };
	struct sp_stack_frame f, last = { .module = SP_NO_MODULE };
	bool have_last = false;
	uint64_t id;
	if (!sp_map_u64(m, "id", &id) || !fr)
		return;
	for (uint32_t i = 0; i < fr->size; i++) {
		if (sp_stack_frame_decode(&fr->ptr[i], &f) < 0)
			continue;
		if (f.flags & SP_FRAME_MARKER) {
			si.end = f.rel < SP_END_COUNT ? (unsigned)f.rel : SP_END_COUNT;
			break;
		}
		last = f;
		have_last = true;
	}
	if (si.end && have_last) {
		si.stopped = true;
		si.stop_jit = (last.flags & SP_FRAME_KIND_MASK) == SP_FRAME_JIT;
		si.stop_module = last.module;
	}
	put_stack(st, id, &si);
}

/* A symstack: the same, from the frames it is made of. */
static void take_symstack(struct stats *st, const msgpack_object *m)
{
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	struct stackinfo si = { .stop_module = SP_NO_MODULE };
	const struct frameinfo *last = NULL;
	uint64_t id;
	if (!sp_map_u64(m, "id", &id) || !fr)
		return;
	for (uint32_t i = 0; i < fr->size; i++) {
		const struct frameinfo *fi;
		if (fr->ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    !(fi = sp_u64map_get(&st->frame_info, fr->ptr[i].via.u64)))
			continue;
		if (fi->marker) {
			si.end = fi->reason;
			break;
		}
		if (fi->name_rt != RT_NATIVE)
			si.names |= 1u << fi->name_rt;
		si.pyeval |= fi->pyeval;
		last = fi;
	}
	if (si.end && last) {
		si.stopped = true;
		si.stop_jit = last->kind == SP_FRAME_JIT;
		si.stop_module = last->module;
		si.stop_name = last->name_rt;
	}
	put_stack(st, id, &si);
}

/* A symstack's frames in module files: per module, by origin. */
struct stackmod {
	size_t mod;	/* in stats.mods */
	uint32_t origins[NORIGINS + 1];
};

struct stackmods {
	uint32_t n;
	struct stackmod m[];
};

/*
 * The frames of a symstack in module files, counted per module and
 * origin once, to be added up for every sample that uses the stack.
 */
static void take_symstack_modules(struct stats *st, const msgpack_object *m)
{
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	uint64_t id;
	size_t n = 0;
	if (!sp_map_u64(m, "id", &id) || !fr)
		return;
	st->symstacks++;
	for (uint32_t i = 0; i < fr->size; i++) {
		const struct frameinfo *fi;
		const struct modinfo *mi;
		if (fr->ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    !(fi = sp_u64map_get(&st->frame_info, fr->ptr[i].via.u64)) || fi->marker ||
		    !(mi = module_info(st, fi->module)) || !st->mods[mi->mod].file)
			continue;
		struct modcount *c = &st->mods[mi->mod];
		if (c->seen != st->symstacks) {
			if (SP_ALLOC_GROW(st->scratch, n + 1, st->allocscratch) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory");
			memset(&st->scratch[n], 0, sizeof(st->scratch[n]));
			st->scratch[n].mod = mi->mod;
			c->seen = st->symstacks;
			c->at = (uint32_t)n++;
		}
		st->scratch[c->at].origins[fi->origin]++;
	}
	/* A consumer keeps the latest definition of a symstack id. */
	free(sp_u64map_remove(&st->stack_mods, id));
	if (!n)
		return;
	struct stackmods *sm = sp_xmalloc(sizeof(*sm) + n * sizeof(sm->m[0]));
	sm->n = (uint32_t)n;
	memcpy(sm->m, st->scratch, n * sizeof(sm->m[0]));
	if (sp_u64map_put(&st->stack_mods, id, sm) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
}

/* A symbolized sample: its stack's frames in each module file. */
static void take_sample_modules(struct stats *st, const msgpack_object *m)
{
	uint64_t stack;
	const struct stackmods *sm;
	if (!sp_map_u64(m, "stack", &stack) || !(sm = sp_u64map_get(&st->stack_mods, stack)))
		return;
	for (uint32_t i = 0; i < sm->n; i++) {
		struct modcount *c = &st->mods[sm->m[i].mod];
		c->samples++;
		for (int o = 0; o <= NORIGINS; o++)
			c->sframes[o] += sm->m[i].origins[o];
	}
}

/* A marker frame's reason, from its name "[REASON]". */
static unsigned marker_reason(const char *s, size_t n)
{
	for (unsigned e = 1; e < SP_END_COUNT; e++) {
		const char *r = sp_unwind_end_name((enum sp_unwind_end)e);
		if (n == strlen(r) + 2 && s[0] == '[' && memcmp(s + 1, r, n - 2) == 0 && s[n - 1] == ']')
			return e;
	}
	return SP_END_COUNT;	/* a reason this sp-stat does not know */
}

/*
 * Where a walk that ended early stopped: in native code, or in the code
 * of a runtime (its JIT code, or its own builtins and interpreter) for
 * the reasons that say the walk could not step over that code.  The
 * other reasons (a missing file, a short stack copy...) have one remedy
 * whatever the code.
 */
static enum runtime stop_runtime(const struct stats *st, const struct stackinfo *si, unsigned bits)
{
	switch (si->end) {
	case SP_END_TRUNCATED: case SP_END_MISSING_MODULE: case SP_END_BUILD_ID_MISMATCH:
	case SP_END_MAX_DEPTH: case SP_END_NO_USER_STACK:
		return RT_NATIVE;
	case SP_END_JIT_NO_MAP:
		return jit_runtime(bits);
	default:
		break;
	}
	if (!si->stopped)
		return RT_NATIVE;
	const struct modinfo *mi = module_info(st, si->stop_module);
	if (si->stop_jit || (mi && mi->jit))
		return jit_runtime(bits);
	/* A runtime's own file: its builtins and stubs have no CFI. */
	if (si->end != SP_END_NO_CFI && si->end != SP_END_BAD_FP)
		return RT_NATIVE;
	if (si->stop_name != RT_NATIVE)
		return si->stop_name;
	return mi ? mi->rt : RT_NATIVE;
}

/* A sample: its process's runtime, and where its stack ended. */
static void take_sample_runtime(struct stats *st, uint64_t pid, const msgpack_object *m,
				struct named_count *proc)
{
	uint64_t stack;
	const struct stackinfo *si = NULL;
	unsigned bits = proc_runtimes(st, pid);
	if (sp_map_u64(m, "stack", &stack) && (si = sp_u64map_get(&st->stack_info, stack)) &&
	    (si->names & ~bits)) {
		bits |= si->names;
		set_proc_runtimes(st, pid, bits);
	}
	proc->runtimes |= bits;
	/* Python code that runs without a frame of its own: the eval loop only. */
	if (si && si->pyeval && !(si->names & 1u << RT_CPYTHON))
		st->pyeval_only++;
	if (!si || !si->end)
		return;
	proc->early++;
	enum runtime where = stop_runtime(st, si, bits);
	proc->early_in_code += where != RT_NATIVE;
	if (si->end < SP_END_COUNT)
		st->rt[where].stops[si->end]++;
}

/* sp-capture's --archive DIR, from its arguments in the header's tools. */
static void take_capture_args(struct stats *st, const msgpack_object *m)
{
	const msgpack_object_array *tools = sp_map_array(m, "tools"), *args;
	const char *s;
	size_t n;
	if (!tools || !tools->size || !(args = sp_map_array(&tools->ptr[0], "args")))
		return;
	for (uint32_t i = 0; i < args->size; i++) {
		const msgpack_object *a = &args->ptr[i];
		if (a->type != MSGPACK_OBJECT_STR)
			continue;
		s = a->via.str.ptr;
		n = a->via.str.size;
		if (n == 2 && memcmp(s, "--", 2) == 0)
			return;	/* the launched command's own arguments follow */
		if (n > 10 && memcmp(s, "--archive=", 10) == 0)
			snprintf(st->archive_dir, sizeof(st->archive_dir), "%.*s", (int)(n - 10), s + 10);
		else if (n == 9 && memcmp(s, "--archive", 9) == 0 && i + 1 < args->size &&
			 args->ptr[i + 1].type == MSGPACK_OBJECT_STR)
			snprintf(st->archive_dir, sizeof(st->archive_dir), "%.*s",
				 (int)args->ptr[i + 1].via.str.size, args->ptr[i + 1].via.str.ptr);
	}
}

/* The ids of one -p argument ("123,456"), kept in st->given_pids. */
static void take_given_pids(struct stats *st, const char *s, size_t n)
{
	char buf[256], *p, *end;
	snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) - 1 ? n : sizeof(buf) - 1), s);
	for (p = buf; *p && st->ngiven < sizeof(st->given_pids) / sizeof(st->given_pids[0]); p = end) {
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p)
			return;
		st->given_pids[st->ngiven++] = v;
		if (*end == ',')
			end++;
	}
}

/*
 * What sp-capture was asked to record, from its arguments and options:
 * the ids given to -p, the processes it took them for, and whether the
 * command asked its JIT for a perf map.
 */
static void take_targets(struct stats *st, const msgpack_object *m, const msgpack_object *o)
{
	const msgpack_object_array *tools = sp_map_array(m, "tools"), *args, *a;
	const size_t max = sizeof(st->opt_pids) / sizeof(st->opt_pids[0]);
	const char *name;
	size_t nn;
	st->ngiven = st->nopt = 0;
	if (o && (a = sp_map_array(o, "pids")))
		for (uint32_t i = 0; i < a->size && st->nopt < max; i++)
			if (a->ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
				st->opt_pids[st->nopt++] = a->ptr[i].via.u64;
	if (o)
		take_map_flags(st, sp_map_array(o, "command"));
	/* Another recorder's -p (sp-import's, say) means something else. */
	if (!tools || !tools->size || !sp_map_str(&tools->ptr[0], "name", &name, &nn) ||
	    nn != 10 || memcmp(name, "sp-capture", 10) != 0 ||
	    !(args = sp_map_array(&tools->ptr[0], "args")))
		return;
	for (uint32_t i = 0; i < args->size; i++) {
		const msgpack_object *x = &args->ptr[i];
		if (x->type != MSGPACK_OBJECT_STR)
			continue;
		const char *s = x->via.str.ptr;
		size_t n = x->via.str.size;
		if (n == 2 && memcmp(s, "--", 2) == 0)
			return;
		bool next = (n == 2 && memcmp(s, "-p", 2) == 0) || (n == 5 && memcmp(s, "--pid", 5) == 0);
		if (next && i + 1 < args->size && args->ptr[i + 1].type == MSGPACK_OBJECT_STR)
			take_given_pids(st, args->ptr[i + 1].via.str.ptr, args->ptr[i + 1].via.str.size);
		else if (n > 2 && memcmp(s, "-p", 2) == 0 && isdigit((unsigned char)s[2]))
			take_given_pids(st, s + 2, n - 2);
		else if (n > 6 && memcmp(s, "--pid=", 6) == 0)
			take_given_pids(st, s + 6, n - 6);
	}
}

/* An archive record: the recording was archived, and whether kallsyms was kept. */
static void take_archive(struct stats *st, const msgpack_object *m)
{
	const char *k;
	size_t n;
	st->archived = true;
	if (sp_map_str(m, "kind", &k, &n) && n == 8 && memcmp(k, "kallsyms", 8) == 0)
		st->archived_kallsyms = true;
}

/*
 * The header's events (1.3), or the one event a 1.2 header's options
 * name; a segment of other events starts their counts again.
 */
static void take_events(struct stats *st, const msgpack_object *m, const msgpack_object *o)
{
	char names[STAT_EVENTS][208];
	size_t n = 0;
	const msgpack_object_array *a = sp_map_array(m, "events");
	for (uint32_t i = 0; a && i < a->size && n < STAT_EVENTS; i++, n++) {
		const msgpack_object *e = &a->ptr[i];
		if (e->type == MSGPACK_OBJECT_STR)
			snprintf(names[n], sizeof(names[n]), "%.*s", (int)e->via.str.size,
				 e->via.str.ptr);
		else
			snprintf(names[n], sizeof(names[n]), "?");
	}
	if (n == 0) {
		const char *s = "cpu-clock";
		size_t len = 9;
		if (o)
			sp_map_str(o, "event", &s, &len);
		snprintf(names[n++], sizeof(names[0]), "%.*s", (int)len, s);
	}
	bool same = n == st->nevents;
	for (size_t i = 0; same && i < n; i++)
		same = strcmp(names[i], st->events[i]) == 0;
	if (same)
		return;
	memcpy(st->events, names, sizeof(names));
	memset(st->event_samples, 0, sizeof(st->event_samples));
	st->nevents = n;
	st->off_cpu_event = -1;
	for (size_t i = 0; i < n && st->off_cpu_event < 0; i++)
		if (strcmp(names[i], "off-cpu") == 0)
			st->off_cpu_event = (long)i;
}

static void take_header(struct stats *st, const struct sp_record *rec, const struct sp_header *h)
{
	const msgpack_object *m = rec->map, *host = sp_map_get(m, "host"), *o = sp_map_get(m, "options");
	st->segments++;
	snprintf(st->stage, sizeof(st->stage), "%s", sp_stage_name(h->stage));
	if (host) {
		copy_str(st->hostname, sizeof(st->hostname), host, "hostname");
		copy_str(st->kernel, sizeof(st->kernel), host, "kernel");
		copy_str(st->arch, sizeof(st->arch), host, "arch");
	}
	if (host)
		copy_str(st->boot_id, sizeof(st->boot_id), host, "boot_id");
	take_capture_args(st, m);
	take_targets(st, m, o);
	if (o) {
		st->have_opts = true;
		st->launched = sp_map_array(o, "command") != NULL;
		st->attached = sp_map_array(o, "pids") != NULL || sp_map_array(o, "tids") != NULL;
		sp_map_u64(o, "frequency", &st->frequency);
		sp_map_u64(o, "stack_size", &st->stack_size);
		copy_str(st->call_graph, sizeof(st->call_graph), o, "call_graph");
		sp_map_u64(o, "poll_ms", &st->poll_ms);
		sp_map_u64(o, "mmap_pages", &st->mmap_pages);
		sp_map_bool(o, "kernel", &st->opt_kernel);
	}
	take_events(st, m, o);
	sp_map_bool(m, "kernel_enabled", &st->kernel_enabled);
	st->has_start_ts = sp_map_u64(m, "start_timestamp_us", &st->start_ts) || st->has_start_ts;
	st->has_interval = sp_map_u64(m, "sample_interval_us", &st->interval) || st->has_interval;
	forget_segment(st);
	st->have_summary = false;
}

static void take_summary(struct stats *st, const msgpack_object *m)
{
	uint64_t v;
	st->have_summary = true;
#define ADD(key, field) if (sp_map_u64(m, key, &v)) st->field += v
	ADD("sample_events", sample_events);
	ADD("samples", samples);
	ADD("lost_events", lost);
	ADD("empty_stack_samples", empty);
	ADD("truncated_frame_markers", truncated);
	ADD("ignored_user_callchain_frames", ignored_user);
	ADD("throttle_events", throttles);
	ADD("skipped_no_pid", skipped[0]);
	ADD("skipped_no_tid", skipped[1]);
	ADD("skipped_no_time", skipped[2]);
	ADD("skipped_no_frames", skipped[3]);
	ADD("duration_ns", duration_ns);
	ADD("lost_samples", lost_samples);
#undef ADD
	if (sp_map_u64(m, "stack_size_chosen", &v)) {
		st->stack_chosen = v;
		st->cal_stacks = 0;
		sp_map_u64(m, "stack_calibration_stacks", &st->cal_stacks);
	}
	bool b;
	if (sp_map_bool(m, "kernel_enabled", &b))
		st->kernel_enabled = b;
	const msgpack_object_array *es = sp_map_array(m, "error_stats");
	for (uint32_t i = 0; es && i < es->size; i++) {
		const char *k;
		size_t n;
		if (!sp_map_str(&es->ptr[i], "kind", &k, &n) || !sp_map_u64(&es->ptr[i], "count", &v))
			continue;
		for (int e = 0; e < SP_E_COUNT; e++)
			if (strlen(sp_errkind_name((enum sp_error_kind)e)) == n &&
			    memcmp(sp_errkind_name((enum sp_error_kind)e), k, n) == 0)
				st->errors[e] += v;
	}
}

static void take_unwind(struct stats *st, const msgpack_object *m)
{
	uint64_t v;
	st->have_unwind = true;
	if (sp_map_u64(m, "samples", &v)) st->uw_samples += v;
	if (sp_map_u64(m, "user_samples", &v)) st->uw_user += v;
	if (sp_map_u64(m, "complete", &v)) st->uw_complete += v;
	if (sp_map_u64(m, "frames", &v)) st->uw_frames += v;
	if (sp_map_u64(m, "modules_missing", &v)) st->uw_modules_missing += v;
	if (sp_map_u64(m, "modules_opened", &v)) st->uw_modules_opened += v;
	if (sp_map_u64(m, "max_depth_full", &v)) st->uw_max_depth_full += v;
	if (sp_map_u64(m, "copy_used_stacks", &v)) st->uw_used_stacks += v;
#define MAX(key, field) if (sp_map_u64(m, key, &v) && v > st->field) st->field = v
	MAX("copy_used_p50", uw_used_p50);
	MAX("copy_used_p995", uw_used_p995);
	MAX("copy_used_max", uw_used_max);
#undef MAX
	const msgpack_object_array *ends = sp_map_array(m, "ends");
	for (uint32_t i = 0; ends && i < ends->size; i++) {
		uint64_t code, count;
		if (sp_map_u64(&ends->ptr[i], "code", &code) && sp_map_u64(&ends->ptr[i], "count", &count) &&
		    code < SP_END_COUNT)
			st->uw_ends[code] += count;
	}
}

static void take_symbolize(struct stats *st, const msgpack_object *m)
{
	uint64_t v;
	st->have_symbolize = true;
	/* sp-symbolize counts these over its whole run: the last one holds. */
	if (sp_map_u64(m, "modules_missing", &v)) st->modules_missing = v;
	if (sp_map_u64(m, "modules_mismatched", &v)) st->modules_mismatched = v;
	if (sp_map_u64(m, "perf_maps_loaded", &v)) st->perf_maps_loaded = v;
	copy_str(st->kallsyms, sizeof(st->kallsyms), m, "kallsyms");
}

/* Keeps what symstacks need of a frame record. */
static void keep_frame(struct stats *st, const msgpack_object *m, uint64_t flags,
		       struct modinfo *mi, uint64_t mid)
{
	uint64_t id;
	const char *name = "";
	size_t nn = 0;
	if (!sp_map_u64(m, "id", &id))
		return;
	sp_map_str(m, "name", &name, &nn);
	struct frameinfo *fi = malloc(sizeof(*fi));
	if (!fi)
		sp_die(SP_EXIT_FATAL, "out of memory");
	fi->module = mi ? mid : SP_NO_MODULE;
	fi->origin = NORIGINS;	/* take_frame's to set */
	fi->marker = flags & SP_SYM_MARKER;
	fi->kind = (unsigned)(flags >> 8) & SP_FRAME_KIND_MASK;
	fi->reason = fi->marker ? marker_reason(name, nn) : 0;
	fi->name_rt = fi->marker || fi->kind == SP_FRAME_KERNEL ? RT_NATIVE :
		      name_runtime(name, nn, fi->kind == SP_FRAME_JIT || (mi && mi->jit));
	fi->pyeval = !fi->marker && nn > 17 && memcmp(name, "_PyEval_EvalFrame", 17) == 0;
	/* Go's runtime package is in the program's own file. */
	if (fi->name_rt == RT_GO && mi && mi->rt == RT_NATIVE)
		mi->rt = RT_GO;
	free(sp_u64map_remove(&st->frame_info, id));
	if (sp_u64map_put(&st->frame_info, id, fi) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
}

static void take_frame(struct stats *st, const msgpack_object *m)
{
	const char *o;
	size_t n;
	uint64_t flags = 0, mid = SP_NO_MODULE, id;
	sp_map_u64(m, "flags", &flags);
	sp_map_u64(m, "module", &mid);
	struct modinfo *mi = module_info(st, mid);
	keep_frame(st, m, flags, mi, mid);
	if (flags & SP_SYM_MARKER || !sp_map_str(m, "origin", &o, &n))
		return;
	enum origin origin = origin_of(o, n);
	struct frameinfo *fi;
	if (sp_map_u64(m, "id", &id) && (fi = sp_u64map_get(&st->frame_info, id)))
		fi->origin = origin;
	st->frames++;
	st->origins[origin]++;
	bool addr_only = origin == O_ADDRESS_ONLY, fstart = origin == O_FUNCTION_START;
	if (addr_only)
		st->address_only++;
	/*
	 * JIT code is named by its runtime, and the vDSO comes with the
	 * kernel: neither is the user's code to find symbols for.
	 */
	bool jit = flags & SP_SYM_JIT || (mi && mi->jit);
	if (flags & SP_SYM_KERNEL) {
		/* Named from a kallsyms file, not from the user's binaries. */
		st->kernel_frames++;
		st->kernel_address_only += addr_only;
	} else if (jit) {
		enum runtime r = jit_runtime(proc_runtimes(st, mi ? mi->pid : 0));
		st->rt[r].jit_frames++;
		st->rt[r].jit_unnamed += addr_only;
		st->rt[r].jit_perf_map += origin == O_PERF_MAP;
		st->rt[r].jit_jitdump += origin == O_JITDUMP;
	} else if (!(mi && mi->vdso)) {
		st->native_frames++;
		st->native_address_only += addr_only;
		st->native_function_start += fstart;
	}
	if (mi) {
		struct modcount *c = &st->mods[mi->mod];
		c->frames++;
		c->address_only += addr_only;
		c->function_start += fstart;
	}
}

static void take_record(struct stats *st, const struct sp_record *rec, const struct sp_header *h)
{
	const msgpack_object *m = rec->map;
	uint64_t pid = 0, tid = 0, v;
	const char *s;
	size_t n;
	switch (rec->type) {
	case SP_R_HEADER: take_header(st, rec, h); break;
	case SP_R_SUMMARY: take_summary(st, m); break;
	case SP_R_UNWIND: take_unwind(st, m); break;
	case SP_R_SYMBOLIZE: take_symbolize(st, m); break;
	case SP_R_ARCHIVE: take_archive(st, m); break;
	case SP_R_FRAME: take_frame(st, m); break;
	case SP_R_LOST:
		if (sp_map_u64(m, "lost", &v))
			st->lost_records += v;
		break;
	case SP_R_MODULE: take_module(st, m); break;
	case SP_R_STACK: take_stack(st, m); break;
	case SP_R_SYMSTACK:
		take_symstack(st, m);
		take_symstack_modules(st, m);
		break;
	case SP_R_MAP: case SP_R_RUNTIME: take_process_state(st, rec); break;
	case SP_R_PROCESS: case SP_R_EXEC: case SP_R_COMM: case SP_R_THREAD:
		take_process_state(st, rec);
		if (rec->type == SP_R_PROCESS)
			take_container(st, rec);
		sp_map_u64(m, "pid", &pid);
		if (!sp_map_u64(m, "tid", &tid))
			tid = pid;
		if (sp_map_str(m, "comm", &s, &n)) {
			if (pid == tid || rec->type == SP_R_PROCESS)
				set_name(count_get(&st->procs, (uint32_t)pid, 0), s, n);
			set_name(count_get(&st->threads, (uint32_t)pid, (uint32_t)tid), s, n);
		}
		break;
	case SP_R_FORK:
		take_process_state(st, rec);
		take_container(st, rec);
		sp_map_u64(m, "pid", &pid);
		sp_map_u64(m, "tid", &tid);
		if (sp_map_u64(m, "ppid", &v) && v != pid) {
			struct named_count *p = count_get(&st->procs, (uint32_t)v, 0);
			char name[64];
			snprintf(name, sizeof(name), "%s", p->comm);
			set_name(count_get(&st->procs, (uint32_t)pid, 0), name, strlen(name));
		}
		break;
	case SP_R_SAMPLE:
		sp_map_u64(m, "pid", &pid);
		sp_map_u64(m, "tid", &tid);
		st->sample_records++;
		v = 0;
		sp_map_u64(m, "event", &v);
		if (v < st->nevents)
			st->event_samples[v]++;
		if (st->off_cpu_event >= 0 && v == (uint64_t)st->off_cpu_event) {
			/* Weighted by the time off the CPU: no part of the sampling rate. */
			bool pre = false;
			v = 0;
			sp_map_u64(m, "period", &v);
			sp_map_bool(m, "preempted", &pre);
			st->off_cpu_ns += v;
			st->preempted += pre;
			st->preempted_ns += pre ? v : 0;
		} else if (sp_map_u64(m, "period", &v)) {
			st->period_sum += v;
			st->period_n++;
		}
		if (sp_map_u64(m, "time", &v)) {
			if (!st->first_time || v < st->first_time)
				st->first_time = v;
			if (v > st->last_time)
				st->last_time = v;
		}
		count_get(&st->procs, (uint32_t)pid, 0)->samples++;
		count_get(&st->threads, (uint32_t)pid, (uint32_t)tid)->samples++;
		take_sample_runtime(st, pid, m, count_get(&st->procs, (uint32_t)pid, 0));
		take_sample_container(st, pid, m);
		take_sample_modules(st, m);
		break;
	default:
		break;
	}
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static int cmp_count(const void *a, const void *b)
{
	const struct named_count *x = a, *y = b;
	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct modcount *x = a, *y = b;
	uint64_t u = x->address_only + x->function_start, v = y->address_only + y->function_start;
	return u < v ? 1 : u > v ? -1 : 0;
}

/* One piece of advice: what is wrong, and the exact change. */
struct advice {
	char what[512], fix[2048];
};

static void advise(struct advice *a, size_t *n, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void advise(struct advice *a, size_t *n, const char *what, const char *fmt, ...)
{
	if (*n >= 16)
		return;
	snprintf(a[*n].what, sizeof(a[*n].what), "%s", what);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a[*n].fix, sizeof(a[*n].fix), fmt, ap);
	va_end(ap);
	(*n)++;
}

/* The directory the recording was archived in, "" when not known; NULL: not archived. */
static const char *archive_of(const struct stats *st)
{
	return st->archived || st->archive_dir[0] ? st->archive_dir : NULL;
}

/*
 * The fix for stacks that ended for reason e; the string lives until the
 * next call.  Files not found, or others, mostly of processes in a
 * container are the container's to give (sp-unwind says the same).
 */
static const char *end_remedy(const struct stats *st, int e)
{
	if ((e == SP_END_MISSING_MODULE || e == SP_END_BUILD_ID_MISMATCH) &&
	    st->container_stops * 2 > st->uw_ends[SP_END_MISSING_MODULE] +
				      st->uw_ends[SP_END_BUILD_ID_MISMATCH])
		return sp_container_remedy(archive_of(st));
	return sp_end_remedy((enum sp_unwind_end)e, archive_of(st),
			     e == SP_END_MAX_DEPTH && st->uw_max_depth_full);
}

/* The walks that stopped in the code of runtime r, for reason e or any. */
static uint64_t rt_stops(const struct stats *st, int r, int e)
{
	uint64_t v = 0;
	for (int i = 1; i < SP_END_COUNT; i++)
		if (e < 0 || i == e)
			v += st->rt[r].stops[i];
	return v;
}

/*
 * Stacks that ended early in native code, by reason, each with its
 * remedy; the walks that stopped in a runtime's code are advised on by
 * runtime.  Without stacks to look at (a stream cut short), every count
 * of the unwind record is taken as native.
 */
static void diagnose_ends(const struct stats *st, struct advice *a, size_t *n, int said)
{
	char what[512];
	for (int e = 1; e < SP_END_COUNT; e++) {
		if (e == said)
			continue;
		uint64_t in_rt = 0;
		for (int r = RT_NODE; r < RT_COUNT; r++)
			in_rt += rt_stops(st, r, e);
		uint64_t native = st->uw_ends[e] > in_rt ? st->uw_ends[e] - in_rt : 0;
		if (e == SP_END_TRUNCATED || !native || pct(native, st->uw_user) < 1)
			continue;
		snprintf(what, sizeof(what), "%" PRIu64 " stacks (%.1f%%) ended early%s: %s",
			 native, pct(native, st->uw_user), in_rt ? " in native code" : "",
			 sp_unwind_end_description((enum sp_unwind_end)e));
		advise(a, n, what, "%s", end_remedy(st, e));
	}
}

/* Stacks that ended early in a runtime's code: that runtime's remedy, never a C compiler's. */
static void diagnose_runtime_ends(const struct stats *st, struct advice *a, size_t *n)
{
	char what[512];
	for (int r = RT_NODE; r < RT_COUNT; r++) {
		uint64_t total = rt_stops(st, r, -1);
		if (!total || pct(total, st->uw_user) < 1)
			continue;
		struct sp_buf why = SP_BUF_INIT;
		for (int e = 1; e < SP_END_COUNT; e++)
			if (st->rt[r].stops[e])
				sp_buf_addf(&why, "%s%s %" PRIu64, why.len ? ", " : "",
					    sp_unwind_end_name((enum sp_unwind_end)e), st->rt[r].stops[e]);
		const char *code = r == RT_JIT ? "" : r == RT_GO ? "Go code" : "the JIT code or builtins of ";
		snprintf(what, sizeof(what), "%" PRIu64 " stacks (%.1f%%) ended early in %s%s (%s)",
			 total, pct(total, st->uw_user), code,
			 r == RT_GO ? "" : runtimes[r].name, why.oom || !why.p ? "" : why.p);
		sp_buf_release(&why);
		advise(a, n, what, "%s", runtimes[r].remedy);
	}
}

/* The samples' frames in a module, of every origin. */
static uint64_t module_sframes(const struct modcount *c)
{
	uint64_t v = 0;
	for (int o = 0; o <= NORIGINS; o++)
		v += c->sframes[o];
	return v;
}

/*
 * How a module file's frames were named: as most of its samples' frames
 * were, the better way when two tie; N_COUNT when none of its frames
 * was named in one of these ways.
 */
static enum naming module_naming(const struct modcount *c)
{
	uint64_t by[N_COUNT] = { 0 };
	enum naming best = N_COUNT;
	for (int o = 0; o < NORIGINS; o++)
		if (origin_naming((enum origin)o) < N_COUNT)
			by[origin_naming((enum origin)o)] += c->sframes[o];
	for (int k = 0; k < N_COUNT; k++)
		if (by[k] && (best == N_COUNT || by[k] > by[best]))
			best = (enum naming)k;
	return best;
}

static int cmp_samples(const void *a, const void *b)
{
	const struct modcount *x = *(const struct modcount *const *)a;
	const struct modcount *y = *(const struct modcount *const *)b;
	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return strcmp(x->path, y->path);
}

/* The module files whose frames samples have, most samples first, into st->named. */
static void list_named(struct stats *st)
{
	st->named = sp_xcalloc(st->nmods ? st->nmods : 1, sizeof(*st->named));
	for (size_t i = 0; i < st->nmods; i++)
		if (st->mods[i].file && st->mods[i].samples && module_naming(&st->mods[i]) < N_COUNT)
			st->named[st->nnamed++] = &st->mods[i];
	if (st->nnamed)
		qsort(st->named, st->nnamed, sizeof(*st->named), cmp_samples);
}

/*
 * A file a distribution installed, whose debug information comes in a
 * package of its own: what /usr/local and other directories hold is
 * taken for a build of the user's.
 */
static bool packaged(const char *p)
{
	static const char *const dirs[] = { "/usr/", "/lib/", "/lib32/", "/lib64/", "/bin/", "/sbin/" };
	if (strncmp(p, "/usr/local/", 11) == 0)
		return false;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (strncmp(p, dirs[i], strlen(dirs[i])) == 0)
			return true;
	return false;
}

/* Whether most frames without a name are in files a distribution installed. */
static bool packaged_unnamed(const struct stats *st)
{
	uint64_t pkg = 0, all = 0;
	for (size_t i = 0; i < st->nmods; i++) {
		uint64_t u = st->mods[i].address_only + st->mods[i].function_start;
		if (!st->mods[i].file)
			continue;
		all += u;
		pkg += packaged(st->mods[i].path) ? u : 0;
	}
	return pkg * 2 > all;
}

/*
 * The fix for native frames without names: with every file found, they
 * are stripped, so debug files come first; else the missing files.
 */
static const char *native_unnamed_fix(const struct stats *st)
{
	static char fix[512];
	if (!st->modules_missing && !st->modules_mismatched && packaged_unnamed(st))
		return "the files were found but are stripped: install their debug packages first "
		       "(-dbgsym or -dbg: `dpkg -S FILE` names the package) or give sp-symbolize a "
		       "debuginfod server (DEBUGINFOD_URLS); for your own builds, keep the unstripped "
		       "file and give sp-symbolize --module-dir or --debug-dir";
	if (!st->modules_missing && !st->modules_mismatched)
		return "the files were found but are stripped: keep the unstripped build and give "
		       "sp-symbolize --module-dir, --debug-dir (its debug file), or a debuginfod server "
		       "(DEBUGINFOD_URLS)";
	if (archive_of(st)) {
		snprintf(fix, sizeof(fix), "the recording was archived with sp-capture --archive: give "
			 "sp-symbolize --archive %s; or give it --module-dir, --debug-dir, or a debuginfod "
			 "server (DEBUGINFOD_URLS)", *archive_of(st) ? archive_of(st) : "DIR");
		return fix;
	}
	return "keep the binaries where they were recorded, or give sp-symbolize --module-dir, --debug-dir, or a debuginfod server (DEBUGINFOD_URLS); install debug packages (-dbgsym)";
}

#define MAX_FIXES 3

struct fix {
	char s[1024];
};

static void add_fix(struct fix *f, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_fix(struct fix *f, size_t *n, const char *fmt, ...)
{
	va_list ap;
	if (*n >= MAX_FIXES)
		return;
	va_start(ap, fmt);
	vsnprintf(f[*n].s, sizeof(f[*n].s), fmt, ap);
	va_end(ap);
	(*n)++;
}

/*
 * Where sp-symbolize takes the recorded file of a module from: by its
 * identity under --module-dir, or, recorded without one, at its path
 * under --root.
 */
static void file_place(const struct modcount *c, char *out, size_t len)
{
	if (strlen(c->id) > 2)
		snprintf(out, len, "--module-dir DIR, the file at DIR/.build-id/%.2s/%s", c->id, c->id + 2);
	else
		snprintf(out, len, "--root DIR, the file at DIR%s", c->path);
}

/*
 * How sp-symbolize is given the unstripped build of a module instead:
 * as its recorded file, since stripping keeps a build-id.  A file
 * recorded by its content (sp-capture --archive, for a file without a
 * build-id) is not the unstripped one, whose content differs.
 */
static void unstripped_place(const struct modcount *c, char *out, size_t len)
{
	char place[384];
	if (c->content_id) {
		snprintf(out, len, "record it instead: a file recorded by its content (sp-capture --archive, "
			 "as it has no build-id) is never taken for another; or link it with -Wl,--build-id");
		return;
	}
	file_place(c, place, sizeof(place));
	snprintf(out, len, "run sp-symbolize again with %s", place);
}

/*
 * The changes that would name a module's frames better, for that module:
 * the debug package of a distribution's file, a debuginfod server when
 * the module has a build-id to ask it by, the unstripped build of the
 * user's own.  Returns how many; none for full debug info.
 */
static size_t module_fixes(const struct stats *st, const struct modcount *c, enum naming nm,
			   struct fix *f)
{
	char place[384], unstripped[512];
	size_t n = 0;
	bool build_id = strlen(c->id) > 2 && !c->content_id;
	if (nm == N_DEBUGINFO || nm == N_COUNT)
		return 0;
	file_place(c, place, sizeof(place));
	unstripped_place(c, unstripped, sizeof(unstripped));
	if (nm == N_GOPCLNTAB) {
		add_fix(f, &n, "names and lines from the Go table; for full inline and variable info keep "
			"the unstripped build (no -ldflags='-s -w') and %s", unstripped);
		return n;
	}
	if (nm == N_ADDRESS_ONLY && (st->modules_missing || st->modules_mismatched) && archive_of(st))
		add_fix(f, &n, "if sp-symbolize found no file for it (%" PRIu64 " missing, %" PRIu64
			" mismatched): the recording was archived, give it --archive %s",
			st->modules_missing, st->modules_mismatched,
			*archive_of(st) ? archive_of(st) : "DIR");
	else if (nm == N_ADDRESS_ONLY && (st->modules_missing || st->modules_mismatched))
		add_fix(f, &n, "if sp-symbolize found no file for it (%" PRIu64 " missing, %" PRIu64
			" mismatched): give it the recorded file, with %s, or record with sp-capture --archive",
			st->modules_missing, st->modules_mismatched, place);
	if (packaged(c->path)) {
		add_fix(f, &n, "install its debug symbols: `dpkg -S %s` names its package PKG, then "
			"`apt install PKG-dbgsym` (from the debian-debug archive) or `apt install PKG-dbg`",
			c->path);
		if (build_id)
			add_fix(f, &n, "or run sp-symbolize again with DEBUGINFOD_URLS=https://debuginfod.debian.net "
				"(or another debuginfod server), which finds its debug file by build-id");
		return n;
	}
	if (build_id)
		add_fix(f, &n, "keep the unstripped build and %s, or with --debug-dir DIR, its debug file "
			"(objcopy --only-keep-debug) at DIR/.build-id/%.2s/%s.debug",
			unstripped, c->id, c->id + 2);
	else
		add_fix(f, &n, "keep the unstripped build and %s", unstripped);
	if (build_id)
		add_fix(f, &n, "or run sp-symbolize again with DEBUGINFOD_URLS naming a debuginfod server "
			"that has build-id %s", c->id);
	return n;
}

/*
 * Modules most of whose samples' frames have no symbol, in at least 1%
 * of the samples: one piece of advice each, for the few with most
 * samples, with that module's own fixes.
 */
static void diagnose_modules(const struct stats *st, struct advice *a, size_t *n)
{
	size_t given = 0;
	for (size_t i = 0; i < st->nnamed && given < 4; i++) {
		const struct modcount *c = st->named[i];
		uint64_t all = module_sframes(c);
		uint64_t fs = c->sframes[O_FUNCTION_START], ao = c->sframes[O_ADDRESS_ONLY];
		if ((fs + ao) * 2 <= all || pct(c->samples, st->sample_records) < 1)
			continue;
		struct fix f[MAX_FIXES];
		size_t nf = module_fixes(st, c, module_naming(c), f);
		struct sp_buf what = SP_BUF_INIT, fix = SP_BUF_INIT;
		sp_buf_addf(&what, "%s has no symbols: of its frames in %" PRIu64 " samples (%.1f%%), ",
			    c->path, c->samples, pct(c->samples, st->sample_records));
		if (fs)
			sp_buf_addf(&what, "%.1f%% are function-start (named by their function's start only)%s",
				    pct(fs, all), ao ? " and " : "");
		if (ao)
			sp_buf_addf(&what, "%.1f%% address-only (no name at all)", pct(ao, all));
		for (size_t k = 0; k < nf; k++)
			sp_buf_addf(&fix, "%s%s", k ? "; " : "", f[k].s);
		if (what.oom || fix.oom)
			sp_die(SP_EXIT_FATAL, "out of memory");
		advise(a, n, what.p, "%s", fix.p ? fix.p : "");
		sp_buf_release(&what);
		sp_buf_release(&fix);
		given++;
	}
}

static void advise_finding(struct advice *a, size_t *n, const struct sp_finding *f)
{
	advise(a, n, f->what, "%s", f->fix);
}

/* The module files of the recording: files of their own, not the kernel, vDSO or JIT code. */
static uint64_t module_files(const struct stats *st)
{
	uint64_t v = 0;
	for (size_t i = 0; i < st->nmods; i++)
		v += st->mods[i].file;
	return v;
}

/* The reason most incomplete stacks ended for. */
static int main_end(const struct stats *st)
{
	int best = SP_END_TRUNCATED;
	for (int e = 1; e < SP_END_COUNT; e++)
		if (st->uw_ends[e] > st->uw_ends[best])
			best = e;
	return best;
}

/*
 * Whether the recording is unusable (no samples, all lost, no stack
 * complete, no frame of native code named), and if so the finding
 * that says why, first of the diagnosis.
 */
static bool diagnose_unusable(const struct stats *st, struct advice *a, size_t *n)
{
	struct sp_finding f;
	double secs = (double)(st->duration_ns ? st->duration_ns : st->last_time - st->first_time) / 1e9;
	if (!st->segments) {
		snprintf(f.what, sizeof(f.what), "the input holds no stream: not one record");
		snprintf(f.fix, sizeof(f.fix), "give sp-stat the file sp-capture, sp-unwind or "
			 "sp-symbolize wrote; an empty file is what a stage leaves that failed before "
			 "its first record (its own message says why)");
	} else if (!st->samples && !st->sample_records && st->lost) {
		sp_finding_all_lost(&f, st->lost, st->frequency, st->stack_size, st->mmap_pages);
	} else if (!st->samples && !st->sample_records) {
		if (!st->have_summary)
			return false;	/* said as a stream cut short */
		sp_finding_no_samples(&f, st->attached ? SP_TARGET_ATTACHED :
				      st->launched ? SP_TARGET_LAUNCHED : SP_TARGET_UNKNOWN, secs);
	} else if (st->have_summary && !st->lost && st->launched &&
		   sp_few_samples(st->samples, secs, st->frequency)) {
		/* sp-capture's words for the same recording. */
		sp_finding_few_samples(&f, SP_TARGET_LAUNCHED, secs, st->samples);
	} else if (st->have_unwind && st->uw_user && !st->uw_complete) {
		int e = main_end(st);
		sp_finding_incomplete(&f, 0, st->uw_user, sp_unwind_end_description((enum sp_unwind_end)e),
				      end_remedy(st, e));
		snprintf(f.what + strlen(f.what), sizeof(f.what) - strlen(f.what), " (%" PRIu64 " stacks, %.1f%%)",
			 st->uw_ends[e], pct(st->uw_ends[e], st->uw_user));
	} else if (st->have_symbolize && st->native_frames &&
		   st->native_address_only == st->native_frames) {
		uint64_t files = module_files(st);
		if (st->modules_missing)
			sp_finding_missing_modules(&f, st->modules_missing,
						   files > st->modules_missing ? files : st->modules_missing,
						   archive_of(st));
		else
			snprintf(f.what, sizeof(f.what), "no frame of native code has a name (%" PRIu64
				 " frames, 100.0%% address-only)", st->native_frames);
		if (!st->modules_missing)
			snprintf(f.fix, sizeof(f.fix), "%s", native_unnamed_fix(st));
	} else {
		return false;
	}
	char what[sizeof(f.what) + 32];
	snprintf(what, sizeof(what), "the recording is unusable: %s", f.what);
	advise(a, n, what, "%s", f.fix);
	return true;
}

/* Kernel frames without names: another boot without --kallsyms, or kallsyms hidden. */
static void diagnose_kernel(const struct stats *st, struct advice *a, size_t *n)
{
	struct sp_finding f;
	char boot[64] = "";
	FILE *bf;
	if (!st->kernel_address_only || pct(st->kernel_address_only, st->kernel_frames) < 10 ||
	    strcmp(st->kallsyms, "none") != 0)
		return;
	if ((bf = fopen("/proc/sys/kernel/random/boot_id", "re"))) {
		if (fgets(boot, sizeof(boot), bf))
			boot[strcspn(boot, "\n")] = 0;
		fclose(bf);
	}
	if (st->boot_id[0] && strcmp(st->boot_id, boot) != 0) {
		sp_finding_kallsyms_other_boot(&f, st->kernel_address_only, st->kernel_frames);
	} else {
		/* This boot: /proc/kallsyms was there, but hid its addresses. */
		int64_t par = -1, kptr = -1;
		sp_read_i64_file("/proc/sys/kernel/perf_event_paranoid", &par);
		sp_read_i64_file("/proc/sys/kernel/kptr_restrict", &kptr);
		sp_finding_kallsyms_hidden(&f, (long)par, (long)kptr);
	}
	advise_finding(a, n, &f);
}

/*
 * Ids given to sp-capture -p that it recorded as another process: each
 * a thread of the process named by the thread records.
 */
static void diagnose_targets(const struct stats *st, struct advice *a, size_t *n)
{
	struct sp_finding f;
	for (size_t i = 0; i < st->ngiven; i++) {
		bool recorded = false;
		for (size_t k = 0; k < st->nopt; k++)
			recorded |= st->opt_pids[k] == st->given_pids[i];
		for (size_t k = 0; k < st->threads.n && !recorded; k++) {
			const struct named_count *t = &st->threads.v[k];
			if (t->tid != st->given_pids[i] || t->pid == t->tid)
				continue;
			sp_finding_pid_is_thread(&f, t->tid, t->pid);
			advise_finding(a, n, &f);
			break;
		}
	}
}

/* Stacks of processes in containers that ended at a file not found or another. */
static void diagnose_containers(const struct stats *st, struct advice *a, size_t *n)
{
	struct sp_finding f;
	if (!st->container_stops || pct(st->container_stops, st->uw_user) < 1)
		return;
	sp_finding_container_files(&f, st->container_stops, st->uw_user, archive_of(st));
	advise_finding(a, n, &f);
}

/* The recording's own settings and captures: lost events, the archive, the kernel. */
static void diagnose_capture(const struct stats *st, struct advice *a, size_t *n)
{
	struct sp_finding f;
	char what[512];
	double lostp = pct(st->lost, st->samples + st->lost);
	if (st->lost > 0 && lostp >= 0.1 && (st->samples || st->sample_records)) {
		sp_finding_lost(&f, st->lost, st->samples, st->frequency, st->poll_ms, st->mmap_pages);
		advise_finding(a, n, &f);
	}
	if (st->throttles) {
		snprintf(what, sizeof(what), "the kernel throttled sampling %" PRIu64 " times", st->throttles);
		advise(a, n, what, "lower -F (now %" PRIu64 "): the kernel lowers kernel.perf_event_max_sample_rate under load", st->frequency);
	}
	if (st->errors[SP_E_ARCHIVE_FAILED]) {
		sp_finding_archive_failed(&f, st->errors[SP_E_ARCHIVE_FAILED],
					  st->archived && !st->archived_kallsyms);
		advise_finding(a, n, &f);
	}
}

/*
 * A usable recording with more than 5% of its stacks incomplete: the
 * share and the reason most of them ended for, with its fix; that of
 * the runtime in whose code most of those walks stopped, if one did.
 * Returns the reason when its native advice was given, else 0.
 */
static int diagnose_incomplete(const struct stats *st, struct advice *a, size_t *n)
{
	struct sp_finding f;
	int e = main_end(st), rt = RT_NATIVE;
	for (int r = RT_NODE; r < RT_COUNT; r++)
		if (st->rt[r].stops[e] * 2 > st->uw_ends[e] &&
		    (rt == RT_NATIVE || st->rt[r].stops[e] > st->rt[rt].stops[e]))
			rt = r;
	sp_finding_incomplete(&f, st->uw_complete, st->uw_user,
			      sp_unwind_end_description((enum sp_unwind_end)e),
			      rt != RT_NATIVE ? runtimes[rt].remedy : end_remedy(st, e));
	snprintf(f.what + strlen(f.what), sizeof(f.what) - strlen(f.what), " (%" PRIu64 " stacks, %.1f%%)",
		 st->uw_ends[e], pct(st->uw_ends[e], st->uw_user));
	advise_finding(a, n, &f);
	return rt == RT_NATIVE ? e : 0;
}

/*
 * Module files that sp-unwind or sp-symbolize did not find, above the
 * degraded share; all of them said already when that made the
 * recording unusable.
 */
static void diagnose_missing(const struct stats *st, struct advice *a, size_t *n, bool unusable)
{
	struct sp_finding f;
	uint64_t missing = st->modules_missing > st->uw_modules_missing ? st->modules_missing :
			   st->uw_modules_missing;
	uint64_t files = module_files(st);
	if (files < missing)
		files = missing;
	if (!missing || pct(missing, files) <= SP_DEGRADED_PCT ||
	    (unusable && st->native_frames && st->native_address_only == st->native_frames))
		return;
	sp_finding_missing_modules(&f, missing, files, archive_of(st));
	advise_finding(a, n, &f);
}

/* CPython whose Python functions have no frames: 3.11 or older, or no -X perf. */
static void diagnose_python(const struct stats *st, struct advice *a, size_t *n)
{
	char what[512];
	const struct rtcount *c = &st->rt[RT_CPYTHON];
	/* With JIT code (-X perf's trampolines) the names are the perf map's to give. */
	if (!st->have_symbolize || !c->samples || c->jit_frames || pct(st->pyeval_only, c->samples) < 10)
		return;
	snprintf(what, sizeof(what), "%" PRIu64 " of %" PRIu64 " CPython samples (%.1f%%) show no Python "
		 "function: all Python time is _PyEval_EvalFrameDefault, as without -X perf or before "
		 "Python 3.12", st->pyeval_only, c->samples, pct(st->pyeval_only, c->samples));
	advise(a, n, what, "run Python 3.12 or later with -X perf (or PYTHONPERFSUPPORT=1), so that "
	       "each Python function has a frame named in /tmp/perf-PID.map; Python 3.11 and older "
	       "cannot be profiled by function this way");
}

/*
 * JIT code of Node, a JVM or another runtime, none of it named, with no
 * command line that asked for a map: sp-symbolize's words, the runtime
 * wrote none.  Returns whether it was said.
 */
static bool diagnose_jit_no_map(const struct stats *st, int r, struct advice *a, size_t *n)
{
	const struct rtcount *c = &st->rt[r];
	struct sp_finding f;
	if (r != RT_NODE && r != RT_JVM && r != RT_JIT)
		return false;
	if (c->jit_perf_map || c->jit_jitdump || st->perf_maps_loaded)
		return false;
	if (st->jit_map_asked) {
		/* Asked for, but none read: it was moved, as CPython's. */
		sp_finding_perf_map_moved(&f, c->jit_unnamed, c->jit_frames, runtimes[r].name,
					  archive_of(st));
	} else {
		sp_finding_jit_no_map(&f, c->jit_unnamed, c->jit_frames, r == RT_NODE ? SP_JIT_NODE :
				      r == RT_JVM ? SP_JIT_JVM : SP_JIT_UNKNOWN);
	}
	advise_finding(a, n, &f);
	return true;
}

/* JIT code without names: the runtime's remedy, or a perf map that was moved away. */
static void diagnose_jit_names(const struct stats *st, struct advice *a, size_t *n)
{
	char what[512];
	for (int r = RT_NODE; r < RT_COUNT; r++) {
		const struct rtcount *c = &st->rt[r];
		if (!c->jit_unnamed || pct(c->jit_unnamed, c->jit_frames) < 10)
			continue;
		if (diagnose_jit_no_map(st, r, a, n))
			continue;
		/* CPython has JIT code (trampolines) only with -X perf, which writes the map. */
		if (r == RT_CPYTHON && !st->perf_maps_loaded && !c->jit_perf_map) {
			struct sp_finding f;
			sp_finding_perf_map_moved(&f, c->jit_unnamed, c->jit_frames, runtimes[r].name,
						  archive_of(st));
			advise_finding(a, n, &f);
			continue;
		}
		/* A map or jitdump that names part of the code: said, as the advice is the same. */
		const char *from = c->jit_perf_map && c->jit_jitdump ? "a perf map and a jitdump" :
				   c->jit_perf_map ? "a perf map" : c->jit_jitdump ? "a jitdump" : NULL;
		snprintf(what, sizeof(what), "%" PRIu64 " of %" PRIu64 " frames of %s JIT code have no name%s%s%s",
			 c->jit_unnamed, c->jit_frames, runtimes[r].name,
			 from ? " (the others were named from " : "", from ? from : "", from ? ")" : "");
		advise(a, n, what, "%s", runtimes[r].remedy);
	}
}

static size_t diagnose(const struct stats *st, struct advice *a, bool *unusable)
{
	size_t n = 0;
	char what[512];
	*unusable = diagnose_unusable(st, a, &n);
	if (!st->have_summary && st->segments) {
		advise(a, &n, "the stream was cut short: it has no summary record, so every count is a lower bound",
		       "let sp-capture end cleanly (SIGINT, --duration, or the target exiting) and keep the whole stream");
	}
	if (st->sample_events > st->samples) {
		snprintf(what, sizeof(what), "%" PRIu64 " of %" PRIu64 " sample events were skipped: "
			 "%" PRIu64 " without pid, %" PRIu64 " without tid, %" PRIu64 " without time, %" PRIu64 " with nothing to unwind",
			 st->sample_events - st->samples, st->sample_events, st->skipped[0], st->skipped[1],
			 st->skipped[2], st->skipped[3]);
		advise(a, &n, what, "samples with nothing to unwind come from kernel-only threads; add --kernel to see their kernel frames");
	}
	diagnose_capture(st, a, &n);
	diagnose_targets(st, a, &n);
	if (st->empty && pct(st->empty, st->samples) >= 1) {
		snprintf(what, sizeof(what), "%" PRIu64 " samples (%.1f%%) had no stack: no user stack copy and no kernel frames (error kinds: no_user_stack %" PRIu64 ", no_user_regs %" PRIu64 ")",
			 st->empty, pct(st->empty, st->samples), st->errors[SP_E_NO_USER_STACK], st->errors[SP_E_NO_USER_REGS]);
		advise(a, &n, what, "add --kernel to see where such threads are in the kernel");
	}
	uint64_t trunc = st->have_unwind ? st->uw_ends[SP_END_TRUNCATED] : st->truncated;
	if (trunc && pct(trunc, st->samples) >= 1) {
		snprintf(what, sizeof(what), "%" PRIu64 " stacks (%.1f%%) were truncated: the stack copy ended before the stack did",
			 trunc, pct(trunc, st->samples));
		if (call_graph_fp(st))
			advise(a, &n, what, "raise kernel.perf_event_max_stack, the kernel's limit on the "
			       "frame-pointer walk of --call-graph fp, or record with --call-graph dwarf");
		else
			advise(a, &n, what, "raise sp-capture --stack-size (now %" PRIu64 "%s, at most 65528)",
			       st->stack_chosen ? st->stack_chosen : st->stack_size,
			       st->stack_chosen ? ", as --stack-size auto chose" : "");
	}
	if (st->have_unwind && st->uw_user && pct(st->uw_complete, st->uw_user) < 95) {
		int said = *unusable && !st->uw_complete ? main_end(st) : 0;
		if (!*unusable)
			said = diagnose_incomplete(st, a, &n);
		diagnose_ends(st, a, &n, said);
		diagnose_runtime_ends(st, a, &n);
	}
	diagnose_containers(st, a, &n);
	diagnose_missing(st, a, &n, *unusable);
	diagnose_jit_names(st, a, &n);
	diagnose_python(st, a, &n);
	/* A frame named by its function's start only has no symbol either. */
	uint64_t unnamed = st->native_address_only + st->native_function_start;
	if (st->have_symbolize && st->native_frames && pct(unnamed, st->native_frames) >= 10) {
		snprintf(what, sizeof(what), "%.1f%% of frames have no name (address-only)%s, of native code (the vDSO and JIT code aside)",
			 pct(unnamed, st->native_frames),
			 st->native_function_start ? " or only their function's start (function-start)" : "");
		advise(a, &n, what, "%s", native_unnamed_fix(st));
	}
	if (st->have_symbolize)
		diagnose_modules(st, a, &n);
	diagnose_kernel(st, a, &n);
	if (st->opt_kernel && !st->kernel_enabled) {
		advise(a, &n, "kernel frames were asked for (--kernel) but the kernel denied them: the recording is user-only",
		       "grant the recorder CAP_PERFMON (setcap cap_perfmon+ep sp-capture), run it as root, or lower kernel.perf_event_paranoid to 1 on the recording host");
	}
	return n;
}

/* A number with three decimals, as the report has always shown them. */
static void jw_fixed3(struct sp_jw *j, const char *key, double v)
{
	char t[48];
	snprintf(t, sizeof(t), "%.3f", v);
	sp_jw_key(j, key);
	sp_jw_raw(j, t, strlen(t));
}

static void counts_json(struct sp_jw *j, const char *key, const struct counts *c,
			size_t top, bool threads)
{
	sp_jw_key(j, key);
	sp_jw_array_begin(j);
	for (size_t i = 0; i < c->n && i < top; i++) {
		sp_jw_object_begin(j);
		sp_jw_kv_u64(j, "pid", c->v[i].pid);
		if (threads)
			sp_jw_kv_u64(j, "tid", c->v[i].tid);
		sp_jw_kv_str(j, "comm", c->v[i].comm);
		sp_jw_kv_u64(j, "samples", c->v[i].samples);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
}

/* The diagnosis: a list of problems and the change that fixes each. */
static void advice_json(struct sp_jw *j, const struct advice *a, size_t na)
{
	sp_jw_key(j, "diagnosis");
	sp_jw_array_begin(j);
	for (size_t i = 0; i < na; i++) {
		sp_jw_object_begin(j);
		sp_jw_kv_str(j, "problem", a[i].what);
		sp_jw_kv_str(j, "advice", a[i].fix);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
}

static void json_out(struct sp_buf *b, FILE *out)
{
	sp_buf_addc(b, '\n');
	if (b->oom)
		sp_die(SP_EXIT_FATAL, "out of memory");
	fwrite(b->p, 1, b->len, out);
	sp_buf_release(b);
}

static double effective_rate(const struct stats *st)
{
	/* cpu-clock periods are nanoseconds of CPU time between samples. */
	return st->period_n && st->period_sum ?
		1e9 / ((double)st->period_sum / (double)st->period_n) : 0;
}

/* Whether a runtime has anything to report. */
static bool rt_seen(const struct stats *st, int r)
{
	return st->rt[r].samples || (r != RT_NATIVE && (st->rt[r].jit_frames || rt_stops(st, r, -1)));
}

static void runtimes_json(struct sp_jw *j, const struct stats *st)
{
	sp_jw_key(j, "runtimes");
	sp_jw_array_begin(j);
	for (int r = 0; r < RT_COUNT; r++) {
		const struct rtcount *c = &st->rt[r];
		if (!rt_seen(st, r))
			continue;
		sp_jw_object_begin(j);
		sp_jw_kv_str(j, "runtime", runtimes[r].key);
		sp_jw_kv_str(j, "name", runtimes[r].name);
		sp_jw_kv_u64(j, "processes", c->processes);
		sp_jw_kv_u64(j, "samples", c->samples);
		sp_jw_kv_u64(j, "ended_early", c->early);
		sp_jw_kv_u64(j, "ended_in_own_code", c->early_in_code);
		sp_jw_kv_u64(j, "jit_frames", c->jit_frames);
		sp_jw_kv_u64(j, "jit_frames_unnamed", c->jit_unnamed);
		sp_jw_key(j, "stopped_here");
		sp_jw_object_begin(j);
		for (int e = 1; e < SP_END_COUNT; e++)
			sp_jw_kv_u64(j, sp_unwind_end_name((enum sp_unwind_end)e), c->stops[e]);
		sp_jw_object_end(j);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
}

static void runtimes_text(const struct stats *st, FILE *out)
{
	fprintf(out, "runtimes:\n");
	for (int r = 0; r < RT_COUNT; r++) {
		const struct rtcount *c = &st->rt[r];
		if (!rt_seen(st, r))
			continue;
		fprintf(out, "  %8" PRIu64 "  %s: %" PRIu64 " process%s", c->samples, runtimes[r].name,
			c->processes, c->processes == 1 ? "" : "es");
		if (st->have_stacks)
			fprintf(out, ", %" PRIu64 " stacks ended early", c->early);
		if (st->have_stacks && r != RT_NATIVE)
			fprintf(out, " (%" PRIu64 " in its own code)", c->early_in_code);
		if (c->jit_frames)
			fprintf(out, ", %" PRIu64 " JIT frames (%" PRIu64 " without a name)", c->jit_frames,
				c->jit_unnamed);
		fprintf(out, "\n");
	}
}

/* The split of a module's samples' frames by origin, most first, as "symtab 80.0%, ...". */
static void origin_split(const struct modcount *c, struct sp_buf *b)
{
	uint64_t all = module_sframes(c);
	bool done[NORIGINS] = { false };
	for (;;) {
		int best = -1;
		for (int o = 0; o < NORIGINS; o++)
			if (!done[o] && c->sframes[o] && (best < 0 || c->sframes[o] > c->sframes[best]))
				best = o;
		if (best < 0)
			break;
		done[best] = true;
		sp_buf_addf(b, "%s%s %.1f%%", b->len ? ", " : "", origin_names[best],
			    pct(c->sframes[best], all));
	}
}

/* Per way of naming, the module files after the first top. */
static size_t naming_rest(const struct stats *st, size_t top, uint64_t *by)
{
	for (size_t i = top; i < st->nnamed; i++)
		by[module_naming(st->named[i])]++;
	return st->nnamed > top ? st->nnamed - top : 0;
}

/*
 * Per module file, most samples first: where its frames' names came
 * from, and what would name them better.
 */
static void naming_text(const struct stats *st, size_t top, FILE *out)
{
	if (!st->nnamed)
		return;
	fprintf(out, "names by module (samples with frames in it, where those frames' names came from):\n");
	for (size_t i = 0; i < st->nnamed && i < top; i++) {
		const struct modcount *c = st->named[i];
		enum naming nm = module_naming(c);
		struct sp_buf split = SP_BUF_INIT;
		struct fix f[MAX_FIXES];
		size_t nf = module_fixes(st, c, nm, f);
		origin_split(c, &split);
		bool mixed = split.p && strchr(split.p, ',');
		fprintf(out, "  %8" PRIu64 "  %s: %s", c->samples, c->path, namings[nm].name);
		if ((nm != N_DEBUGINFO || mixed) && split.p)
			fprintf(out, " (%s)", split.p);
		fprintf(out, "\n");
		for (size_t k = 0; k < nf; k++)
			fprintf(out, "  %8s    -> %s\n", "", f[k].s);
		sp_buf_release(&split);
	}
	uint64_t by[N_COUNT] = { 0 };
	size_t rest = naming_rest(st, top, by);
	if (!rest)
		return;
	fprintf(out, "  %8s  and %zu more module%s:", "", rest, rest == 1 ? "" : "s");
	for (int k = 0, any = 0; k < N_COUNT; k++)
		if (by[k])
			fprintf(out, "%s %" PRIu64 " %s", any++ ? "," : "", by[k], namings[k].name);
	fprintf(out, "\n");
}

static void naming_json(struct sp_jw *j, const struct stats *st, size_t top)
{
	sp_jw_key(j, "naming");
	sp_jw_object_begin(j);
	sp_jw_key(j, "modules");
	sp_jw_array_begin(j);
	for (size_t i = 0; i < st->nnamed && i < top; i++) {
		const struct modcount *c = st->named[i];
		enum naming nm = module_naming(c);
		struct fix f[MAX_FIXES];
		size_t nf = module_fixes(st, c, nm, f);
		sp_jw_object_begin(j);
		sp_jw_kv_str(j, "path", c->path);
		sp_jw_kv_str(j, "class", namings[nm].key);
		sp_jw_kv_u64(j, "samples", c->samples);
		sp_jw_kv_u64(j, "frames", module_sframes(c));
		sp_jw_key(j, "origins");
		sp_jw_object_begin(j);
		for (int o = 0; o < NORIGINS; o++)
			sp_jw_kv_u64(j, origin_names[o], c->sframes[o]);
		sp_jw_object_end(j);
		sp_jw_key(j, "fixes");
		sp_jw_array_begin(j);
		for (size_t k = 0; k < nf; k++)
			sp_jw_str(j, f[k].s);
		sp_jw_array_end(j);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
	uint64_t by[N_COUNT] = { 0 };
	size_t rest = naming_rest(st, top, by);
	sp_jw_key(j, "others");
	sp_jw_object_begin(j);
	sp_jw_kv_u64(j, "modules", rest);
	for (int k = 0; k < N_COUNT; k++)
		sp_jw_kv_u64(j, namings[k].key, by[k]);
	sp_jw_object_end(j);
	sp_jw_object_end(j);
}

/* The stack window of the samples: --stack-size auto's choice, else the header's. */
static uint64_t window_used(const struct stats *st)
{
	return st->stack_chosen ? st->stack_chosen : st->stack_size;
}

/*
 * The window that would have kept 99.5% of the complete stacks complete,
 * as sp-capture --stack-size auto picks one (a multiple of 512, at least
 * 4096), and by how much it would copy less, in %; 0 when it would not
 * save a quarter of the window used.
 */
static uint64_t smaller_window(const struct stats *st, double *less)
{
	uint64_t w = window_used(st), m = st->uw_used_p995;
	if (!st->uw_used_stacks || call_graph_fp(st) || !w)
		return 0;
	m = (m + 511) / 512 * 512;
	if (m < 4096)
		m = 4096;
	if (m * 4 > w * 3)
		return 0;
	*less = 100.0 * (1.0 - (double)m / (double)w);
	return m;
}

static void report_json(const struct stats *st, const struct advice *a, size_t na, bool unusable,
			size_t top, FILE *out)
{
	struct sp_buf b = SP_BUF_INIT;
	struct sp_jw j;
	sp_jw_init(&j, &b);
	sp_jw_object_begin(&j);
	sp_jw_kv_str(&j, "stage", st->stage);
	sp_jw_kv_u64(&j, "segments", st->segments);
	sp_jw_kv_bool(&j, "complete", st->have_summary);
	sp_jw_key(&j, "recording");
	sp_jw_object_begin(&j);
	sp_jw_kv_str(&j, "hostname", st->hostname);
	sp_jw_kv_str(&j, "kernel", st->kernel);
	sp_jw_kv_str(&j, "arch", st->arch);
	sp_jw_kv_u64(&j, "duration_ns", st->duration_ns ? st->duration_ns : st->last_time - st->first_time);
	sp_jw_kv_u64(&j, "requested_rate", st->frequency);
	jw_fixed3(&j, "effective_rate", effective_rate(st));
	sp_jw_kv_u64(&j, "stack_size", st->stack_size);
	if (st->stack_chosen) {
		sp_jw_kv_u64(&j, "stack_size_chosen", st->stack_chosen);
		sp_jw_kv_u64(&j, "stack_calibration_stacks", st->cal_stacks);
	}
	sp_jw_kv_str(&j, "call_graph", call_graph_fp(st) ? "fp" : "dwarf");
	sp_jw_kv_bool(&j, "kernel_requested", st->opt_kernel);
	sp_jw_kv_bool(&j, "kernel_enabled", st->kernel_enabled);
	sp_jw_kv_u64(&j, "poll_ms", st->poll_ms);
	sp_jw_kv_u64(&j, "mmap_pages", st->mmap_pages);
	if (st->has_start_ts)
		sp_jw_kv_u64(&j, "start_timestamp_us", st->start_ts);
	if (st->has_interval)
		sp_jw_kv_u64(&j, "sample_interval_us", st->interval);
	sp_jw_key(&j, "events");
	sp_jw_array_begin(&j);
	for (size_t i = 0; i < st->nevents; i++) {
		sp_jw_object_begin(&j);
		sp_jw_kv_str(&j, "name", st->events[i]);
		sp_jw_kv_u64(&j, "samples", st->event_samples[i]);
		if ((long)i == st->off_cpu_event) {
			sp_jw_kv_u64(&j, "off_cpu_ns", st->off_cpu_ns);
			sp_jw_kv_u64(&j, "preempted", st->preempted);
			sp_jw_kv_u64(&j, "preempted_ns", st->preempted_ns);
		}
		sp_jw_object_end(&j);
	}
	sp_jw_array_end(&j);
	sp_jw_object_end(&j);
	sp_jw_key(&j, "summary");
	sp_jw_object_begin(&j);
	sp_jw_kv_u64(&j, "sample_events", st->sample_events);
	sp_jw_kv_u64(&j, "samples", st->samples);
	sp_jw_kv_u64(&j, "lost_events", st->lost);
	sp_jw_kv_u64(&j, "empty_stack_samples", st->empty);
	sp_jw_kv_u64(&j, "truncated_frame_markers", st->truncated);
	sp_jw_kv_u64(&j, "ignored_user_callchain_frames", st->ignored_user);
	sp_jw_kv_bool(&j, "kernel_enabled", st->kernel_enabled);
	sp_jw_kv_u64(&j, "skipped_no_pid", st->skipped[0]);
	sp_jw_kv_u64(&j, "skipped_no_tid", st->skipped[1]);
	sp_jw_kv_u64(&j, "skipped_no_time", st->skipped[2]);
	sp_jw_kv_u64(&j, "skipped_no_frames", st->skipped[3]);
	sp_jw_kv_u64(&j, "throttle_events", st->throttles);
	sp_jw_key(&j, "error_stats");
	sp_jw_array_begin(&j);
	for (int e = 0; e < SP_E_COUNT; e++) {
		if (!st->errors[e])
			continue;
		sp_jw_object_begin(&j);
		sp_jw_kv_str(&j, "kind", sp_errkind_name((enum sp_error_kind)e));
		sp_jw_kv_u64(&j, "count", st->errors[e]);
		sp_jw_kv_str(&j, "description", sp_errkind_description((enum sp_error_kind)e));
		sp_jw_object_end(&j);
	}
	sp_jw_array_end(&j);
	sp_jw_object_end(&j);
	jw_fixed3(&j, "lost_pct", pct(st->lost, st->samples + st->lost));
	sp_jw_kv_u64(&j, "sample_records", st->sample_records);
	counts_json(&j, "processes", &st->procs, top, false);
	counts_json(&j, "threads", &st->threads, top, true);
	runtimes_json(&j, st);
	if (st->have_unwind) {
		sp_jw_key(&j, "unwinding");
		sp_jw_object_begin(&j);
		sp_jw_kv_u64(&j, "samples", st->uw_samples);
		sp_jw_kv_u64(&j, "user_samples", st->uw_user);
		sp_jw_kv_u64(&j, "complete", st->uw_complete);
		jw_fixed3(&j, "complete_pct", pct(st->uw_complete, st->uw_user));
		jw_fixed3(&j, "frames_per_sample",
			  st->uw_samples ? (double)st->uw_frames / (double)st->uw_samples : 0);
		if (st->uw_used_stacks) {
			double less = 0;
			uint64_t m = smaller_window(st, &less);
			sp_jw_key(&j, "copy_used");
			sp_jw_object_begin(&j);
			sp_jw_kv_u64(&j, "stacks", st->uw_used_stacks);
			sp_jw_kv_u64(&j, "p50", st->uw_used_p50);
			sp_jw_kv_u64(&j, "p995", st->uw_used_p995);
			sp_jw_kv_u64(&j, "max", st->uw_used_max);
			sp_jw_kv_u64(&j, "window", window_used(st));
			if (m) {
				sp_jw_kv_u64(&j, "suggested_stack_size", m);
				jw_fixed3(&j, "copy_less_pct", less);
			}
			sp_jw_object_end(&j);
		}
		sp_jw_key(&j, "failures");
		sp_jw_object_begin(&j);
		for (int e = 1; e < SP_END_COUNT; e++)
			sp_jw_kv_u64(&j, sp_unwind_end_name((enum sp_unwind_end)e), st->uw_ends[e]);
		sp_jw_object_end(&j);
		sp_jw_object_end(&j);
	}
	if (st->have_symbolize) {
		sp_jw_key(&j, "symbolization");
		sp_jw_object_begin(&j);
		sp_jw_kv_u64(&j, "frames", st->frames);
		sp_jw_key(&j, "origins");
		sp_jw_object_begin(&j);
		for (int i = 0; i < NORIGINS; i++)
			sp_jw_kv_u64(&j, origin_names[i], st->origins[i]);
		sp_jw_object_end(&j);
		jw_fixed3(&j, "address_only_pct", pct(st->address_only, st->frames));
		jw_fixed3(&j, "function_start_pct", pct(st->origins[O_FUNCTION_START], st->frames));
		sp_jw_kv_u64(&j, "modules_missing", st->modules_missing);
		sp_jw_kv_u64(&j, "modules_mismatched", st->modules_mismatched);
		sp_jw_key(&j, "modules_lacking_symbols");
		sp_jw_array_begin(&j);
		size_t k = 0;
		for (size_t i = 0; i < st->nmods && k < top; i++) {
			if (!st->mods[i].address_only && !st->mods[i].function_start)
				continue;
			k++;
			sp_jw_object_begin(&j);
			sp_jw_kv_str(&j, "path", st->mods[i].path);
			sp_jw_kv_u64(&j, "address_only", st->mods[i].address_only);
			sp_jw_kv_u64(&j, "function_start", st->mods[i].function_start);
			sp_jw_kv_u64(&j, "frames", st->mods[i].frames);
			sp_jw_object_end(&j);
		}
		sp_jw_array_end(&j);
		naming_json(&j, st, top);
		sp_jw_object_end(&j);
	}
	advice_json(&j, a, na);
	sp_jw_kv_bool(&j, "unusable", unusable);
	sp_jw_object_end(&j);
	json_out(&b, out);
}

static void report_text(const struct stats *st, const struct advice *a, size_t na, size_t top, FILE *out)
{
	uint64_t dur = st->duration_ns ? st->duration_ns : st->last_time - st->first_time;
	if (!st->segments) {
		/* No header: no host, no options to show. */
		fprintf(out, "recording: no stream, not one record\n");
	} else {
		fprintf(out, "recording: %s stream, %u segment%s, %s\n", st->stage, st->segments,
			st->segments == 1 ? "" : "s", st->have_summary ? "complete" : "CUT SHORT (no summary)");
		fprintf(out, "  host %s, kernel %s, %s\n", st->hostname[0] ? st->hostname : "unknown",
			st->kernel[0] ? st->kernel : "unknown", st->arch[0] ? st->arch : "unknown");
		fprintf(out, "  duration %.3f s, rate %" PRIu64 " Hz requested, %.0f Hz effective, ",
			(double)dur / 1e9, st->frequency, effective_rate(st));
		if (call_graph_fp(st))
			fprintf(out, "call graph fp (the kernel's frame-pointer walk, no stack copy)\n");
		else if (st->stack_chosen)
			fprintf(out, "stack window %" PRIu64 " bytes (--stack-size auto: chosen from "
				"%" PRIu64 " stacks copied with %" PRIu64 " bytes)\n", st->stack_chosen,
				st->cal_stacks, st->stack_size);
		else
			fprintf(out, "stack window %" PRIu64 " bytes\n", st->stack_size);
		fprintf(out, "  kernel frames: %s%s\n", st->kernel_enabled ? "recorded" : "not recorded",
			st->opt_kernel && !st->kernel_enabled ? " (asked for, but denied)" : "");
	}
	/* Said when the events are not the default cpu-clock alone. */
	if (st->nevents > 1 || (st->nevents == 1 && strcmp(st->events[0], "cpu-clock") != 0)) {
		fprintf(out, "  events:");
		for (size_t i = 0; i < st->nevents; i++)
			if ((long)i == st->off_cpu_event)
				fprintf(out, "%s off-cpu %" PRIu64 " intervals, %.3f s off the CPU "
					"(%" PRIu64 " preempted, %.3f s)", i ? "," : "",
					st->event_samples[i], (double)st->off_cpu_ns / 1e9,
					st->preempted, (double)st->preempted_ns / 1e9);
			else
				fprintf(out, "%s %s %" PRIu64 " samples", i ? "," : "",
					st->events[i], st->event_samples[i]);
		fputc('\n', out);
	}
	if (st->has_start_ts || st->has_interval)
		fprintf(out, "  metadata: start timestamp %" PRIu64 " us, sample interval %" PRIu64 " us\n",
			st->start_ts, st->interval);
	fprintf(out, "counts:\n");
	fprintf(out, "  sample_events %" PRIu64 ", samples %" PRIu64 ", lost_events %" PRIu64 " (%.2f%%)\n",
		st->sample_events, st->samples, st->lost, pct(st->lost, st->samples + st->lost));
	fprintf(out, "  empty_stack_samples %" PRIu64 ", truncated_frame_markers %" PRIu64
		", ignored_user_callchain_frames %" PRIu64 ", throttling %" PRIu64 "\n",
		st->empty, st->truncated, st->ignored_user, st->throttles);
	fprintf(out, "  skipped: no pid %" PRIu64 ", no tid %" PRIu64 ", no time %" PRIu64 ", no frames %" PRIu64 "\n",
		st->skipped[0], st->skipped[1], st->skipped[2], st->skipped[3]);
	fprintf(out, "processes (top %zu):\n", top);
	for (size_t i = 0; i < st->procs.n && i < top; i++)
		fprintf(out, "  %8" PRIu64 "  %s (pid %u)\n", st->procs.v[i].samples, st->procs.v[i].comm, st->procs.v[i].pid);
	fprintf(out, "threads (top %zu):\n", top);
	for (size_t i = 0; i < st->threads.n && i < top; i++)
		fprintf(out, "  %8" PRIu64 "  %s (pid %u, tid %u)\n", st->threads.v[i].samples,
			st->threads.v[i].comm, st->threads.v[i].pid, st->threads.v[i].tid);
	runtimes_text(st, out);
	if (st->have_unwind) {
		fprintf(out, "unwinding: %.1f%% of %" PRIu64 " stacks reach their thread's entry, %.1f frames per sample\n",
			pct(st->uw_complete, st->uw_user), st->uw_user,
			st->uw_samples ? (double)st->uw_frames / (double)st->uw_samples : 0);
		double less = 0;
		uint64_t m = smaller_window(st, &less);
		if (st->uw_used_stacks)
			fprintf(out, "  complete stacks needed at most %" PRIu64 " bytes of their copy "
				"(99.5%% within %" PRIu64 ", half within %" PRIu64 ")", st->uw_used_max,
				st->uw_used_p995, st->uw_used_p50);
		if (m)
			fprintf(out, "; --stack-size %" PRIu64 " would copy %.0f%% less", m, less);
		if (st->uw_used_stacks)
			fputc('\n', out);
		for (int e = 1; e < SP_END_COUNT; e++) {
			if (!st->uw_ends[e])
				continue;
			fprintf(out, "  %8" PRIu64 "  %s: %s\n", st->uw_ends[e],
				sp_unwind_end_name((enum sp_unwind_end)e),
				sp_unwind_end_description((enum sp_unwind_end)e));
			for (int r = RT_NODE; r < RT_COUNT; r++)
				if (st->rt[r].stops[e])
					fprintf(out, "  %8s  %8" PRIu64 " in %s\n", "", st->rt[r].stops[e],
						runtimes[r].name);
		}
	}
	if (st->have_symbolize) {
		fprintf(out, "symbolization: %" PRIu64 " frames, %.1f%% address-only", st->frames,
			pct(st->address_only, st->frames));
		if (st->origins[O_FUNCTION_START])
			fprintf(out, ", %.1f%% function-start", pct(st->origins[O_FUNCTION_START], st->frames));
		fprintf(out, "; missing files %" PRIu64 ", mismatched %" PRIu64 "\n",
			st->modules_missing, st->modules_mismatched);
		for (int i = 0; i < NORIGINS; i++)
			if (st->origins[i])
				fprintf(out, "  %8" PRIu64 "  %s\n", st->origins[i], origin_names[i]);
		size_t k = 0;
		for (size_t i = 0; i < st->nmods && k < top; i++)
			if (st->mods[i].address_only || st->mods[i].function_start) {
				if (!k++)
					fprintf(out, "  modules most lacking symbols:\n");
				fprintf(out, "  %8" PRIu64 "  of %" PRIu64 " frames in %s\n",
					st->mods[i].address_only + st->mods[i].function_start,
					st->mods[i].frames, st->mods[i].path);
			}
		naming_text(st, top, out);
	}
	bool any = false;
	for (int e = 0; e < SP_E_COUNT; e++)
		if (st->errors[e]) {
			if (!any)
				fprintf(out, "error_stats:\n");
			any = true;
			fprintf(out, "  %8" PRIu64 "  %s: %s\n", st->errors[e],
				sp_errkind_name((enum sp_error_kind)e),
				sp_errkind_description((enum sp_error_kind)e));
		}
	fprintf(out, "diagnosis:%s\n", na ? "" : " nothing to change");
	for (size_t i = 0; i < na; i++)
		fprintf(out, "  - %s\n    -> %s\n", a[i].what, a[i].fix);
}

/* --system: can this host profile?  A kernel setting, or -1 when unreadable. */
static long read_setting(const char *path)
{
	int64_t v;
	return sp_read_i64_file(path, &v) == 0 ? (long)v : -1;
}

static bool try_event(bool kernel)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_CPU_CLOCK, .sample_freq = 99, .freq = 1,
				     .exclude_kernel = !kernel, .exclude_hv = 1, .disabled = 1 };
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* A python3.12 or later: on PATH, or under pyenv's versions folder. */
static bool find_python(char *out, size_t len)
{
	const char *home = getenv("HOME");
	char dirs[2][512];
	if (getenv("PYENV_ROOT"))
		snprintf(dirs[0], sizeof(dirs[0]), "%s/versions", getenv("PYENV_ROOT"));
	else
		snprintf(dirs[0], sizeof(dirs[0]), "%s/.pyenv/versions", home ? home : "/root");
	snprintf(dirs[1], sizeof(dirs[1]), "/usr/bin");
	for (int d = 0; d < 2; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;
		while (dir && (e = readdir(dir))) {
			int maj, min;
			const char *n = e->d_name;
			if (d == 1 && strncmp(n, "python", 6) == 0)
				n += 6;
			if (sscanf(n, "%d.%d", &maj, &min) == 2 && (maj > 3 || (maj == 3 && min >= 12)) &&
			    (d == 0 || strspn(n, "0123456789.") == strlen(n))) {
				snprintf(out, len, d == 0 ? "%s/%s/bin/python3" : "%s/python%s", dirs[d], n);
				if (access(out, X_OK) == 0) {
					closedir(dir);
					return true;
				}
			}
		}
		if (dir)
			closedir(dir);
	}
	return false;
}

static int report_system(bool json, FILE *out)
{
	long paranoid = read_setting("/proc/sys/kernel/perf_event_paranoid");
	long kptr = read_setting("/proc/sys/kernel/kptr_restrict");
	long maxrate = read_setting("/proc/sys/kernel/perf_event_max_sample_rate");
	long mlock = read_setting("/proc/sys/kernel/perf_event_mlock_kb");
	bool perfmon = sp_cap_effective(38), sysadmin = sp_cap_effective(21);
	bool user_ok = try_event(false), kernel_ok = try_event(true);
	char py[1024] = "";
	bool have_py = find_python(py, sizeof(py));
	/* Said in every form of the report: these answers are this host's, not a recording's. */
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	struct advice a[8];
	size_t n = 0;
	if (!user_ok)
		advise(a, &n, "perf events cannot be opened at all",
		       "lower kernel.perf_event_paranoid to 2 or less (now %ld), or grant CAP_PERFMON", paranoid);
	if (!kernel_ok)
		advise(a, &n, "kernel frames (--kernel) are not allowed for this user",
		       "grant CAP_PERFMON (setcap cap_perfmon+ep sp-capture), run as root, or set kernel.perf_event_paranoid to 1 (now %ld)", paranoid);
	/* kptr_restrict 0 hides them too while perf_event_paranoid is above 1: name what applies. */
	if (geteuid() != 0 && !sysadmin && (kptr > 0 || (kptr == 0 && paranoid > 1))) {
		struct sp_finding f;
		sp_finding_kallsyms_hidden(&f, paranoid, kptr);
		advise_finding(a, &n, &f);
	}
	if (!have_py)
		advise(a, &n, "no Python 3.12 or later found: Python frames need -X perf",
		       "install python3.12 or later to profile Python code by name");
	if (json) {
		struct sp_buf b = SP_BUF_INIT;
		struct sp_jw j;
		sp_jw_init(&j, &b);
		sp_jw_object_begin(&j);
		sp_jw_key(&j, "this_host");
		sp_jw_object_begin(&j);
		sp_jw_kv_str(&j, "hostname", u.nodename);
		sp_jw_kv_str(&j, "kernel", u.release);
		sp_jw_kv_str(&j, "arch", u.machine);
		sp_jw_object_end(&j);
		sp_jw_kv_i64(&j, "perf_event_paranoid", paranoid);
		sp_jw_kv_i64(&j, "kptr_restrict", kptr);
		sp_jw_kv_i64(&j, "max_sample_rate", maxrate);
		sp_jw_kv_i64(&j, "perf_event_mlock_kb", mlock);
		sp_jw_kv_bool(&j, "root", geteuid() == 0);
		sp_jw_kv_bool(&j, "cap_perfmon", perfmon);
		sp_jw_kv_bool(&j, "cap_sys_admin", sysadmin);
		sp_jw_kv_bool(&j, "user_sampling", user_ok);
		sp_jw_kv_bool(&j, "kernel_sampling", kernel_ok);
		sp_jw_kv_str(&j, "python_with_perf", have_py ? py : "");
		advice_json(&j, a, n);
		sp_jw_object_end(&j);
		json_out(&b, out);
	} else {
		fprintf(out, "This host: %s, kernel %s, %s\n", u.nodename[0] ? u.nodename : "unknown",
			u.release[0] ? u.release : "unknown", u.machine[0] ? u.machine : "unknown");
		fprintf(out, "  kernel.perf_event_paranoid %ld, kernel.kptr_restrict %ld\n", paranoid, kptr);
		fprintf(out, "  kernel.perf_event_max_sample_rate %ld Hz, perf_event_mlock_kb %ld\n", maxrate, mlock);
		fprintf(out, "  running as %s; CAP_PERFMON %s, CAP_SYS_ADMIN %s\n", geteuid() == 0 ? "root" : "a user",
			perfmon ? "yes" : "no", sysadmin ? "yes" : "no");
		fprintf(out, "  user-space sampling: %s; kernel sampling (--kernel): %s\n",
			user_ok ? "allowed" : "DENIED", kernel_ok ? "allowed" : "denied");
		fprintf(out, "  Python with -X perf: %s\n", have_py ? py : "none found");
		fprintf(out, "diagnosis:%s\n", n ? "" : " ready to profile");
		for (size_t i = 0; i < n; i++)
			fprintf(out, "  - %s\n    -> %s\n", a[i].what, a[i].fix);
	}
	return user_ok ? SP_EXIT_OK : SP_EXIT_FATAL;
}

static double parse_pct(const char *arg, const char *opt)
{
	char *end;
	double v = strtod(arg, &end);
	if (end == arg || *end || !(v >= 0 && v <= 100))
		sp_usage_error("invalid %s '%s': a percentage from 0 to 100", opt, arg);
	return v;
}

int main(int argc, char **argv)
{
	enum { JSON = 256, TOP, CHECK, MAX_LOST, MAX_TRUNC, MIN_COMPLETE, MAX_ADDR, MAX_UNNAMED, SYSTEM };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, JSON },
		{ "top", required_argument, NULL, TOP },
		{ "check", no_argument, NULL, CHECK },
		{ "max-lost-pct", required_argument, NULL, MAX_LOST },
		{ "max-truncated-pct", required_argument, NULL, MAX_TRUNC },
		{ "min-complete-pct", required_argument, NULL, MIN_COMPLETE },
		{ "max-address-only-pct", required_argument, NULL, MAX_ADDR },
		{ "max-unnamed-pct", required_argument, NULL, MAX_UNNAMED },
		{ "system", no_argument, NULL, SYSTEM },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, check = false, system_report = false;
	double max_lost = -1, max_trunc = -1, min_complete = -1, max_addr = -1, max_unnamed = -1;
	uint64_t top = 10;
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		switch (c) {
		case JSON: json = true; break;
		case TOP:
			if (sp_parse_u64(optarg, 1000000, &top) < 0 || top == 0)
				sp_usage_error("invalid --top '%s'", optarg);
			break;
		case CHECK: check = true; break;
		case MAX_LOST: max_lost = parse_pct(optarg, "--max-lost-pct"); break;
		case MAX_TRUNC: max_trunc = parse_pct(optarg, "--max-truncated-pct"); break;
		case MIN_COMPLETE: min_complete = parse_pct(optarg, "--min-complete-pct"); break;
		case MAX_ADDR: max_addr = parse_pct(optarg, "--max-address-only-pct"); break;
		case MAX_UNNAMED: max_unnamed = parse_pct(optarg, "--max-unnamed-pct"); break;
		case SYSTEM: system_report = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	if (system_report && optind < argc)
		sp_usage_error("--system reads no stream");
	if (!check && (max_lost >= 0 || max_trunc >= 0 || min_complete >= 0 || max_addr >= 0 ||
		       max_unnamed >= 0))
		sp_usage_error("the thresholds apply with --check");
	if (system_report)
		return report_system(json, stdout);

	struct stats st = { .off_cpu_event = -1 };
	sp_hashmap_init(&st.mod_paths, modpath_cmp);
	int status = SP_EXIT_OK;
	int nin = argc - optind;
	for (int i = 0; i < (nin ? nin : 1); i++) {
		const char *path = nin ? argv[optind + i] : NULL;
		int fd = sp_open_input(path);
		struct sp_reader *r = sp_reader_new(fd, path ? path : "-");
		if (!r)
			sp_die(SP_EXIT_FATAL, "out of memory");
		struct sp_record rec;
		enum sp_read_status rs;
		while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD)
			take_record(&st, &rec, sp_reader_header(r));
		if (rs == SP_READ_ERROR) {
			if (sp_reader_records(r) == 0)
				sp_die_unread(r, path ? path : "-");
			sp_warn("'%s': %s", path ? path : "-", sp_reader_error(r));
			status = SP_EXIT_PARTIAL;
			st.have_summary = false;
		} else if (sp_reader_records(r) > 0 && !sp_reader_saw_summary(r)) {
			status = SP_EXIT_PARTIAL;
		}
		sp_reader_free(r);
		if (fd != STDIN_FILENO)
			close(fd);
	}
	/* Counts before the summary arrived (a stream cut short). */
	if (!st.have_summary && !st.samples)
		st.samples = st.sample_events = st.sample_records;
	if (!st.have_summary && !st.lost)
		st.lost = st.lost_records;
	/* A thread known only from samples goes by its process's name. */
	for (size_t i = 0; i < st.threads.n; i++)
		if (!st.threads.v[i].comm[0])
			for (size_t j = 0; j < st.procs.n; j++)
				if (st.procs.v[j].pid == st.threads.v[i].pid)
					snprintf(st.threads.v[i].comm, sizeof(st.threads.v[i].comm), "%s",
						 st.procs.v[j].comm);
	if (st.procs.n)
		qsort(st.procs.v, st.procs.n, sizeof(*st.procs.v), cmp_count);
	if (st.threads.n)
		qsort(st.threads.v, st.threads.n, sizeof(*st.threads.v), cmp_count);
	if (st.nmods)
		qsort(st.mods, st.nmods, sizeof(*st.mods), cmp_mod);
	list_named(&st);
	for (size_t i = 0; i < st.procs.n; i++) {
		const struct named_count *p = &st.procs.v[i];
		struct rtcount *r = &st.rt[main_runtime(p->runtimes)];
		if (!p->samples)
			continue;
		r->processes++;
		r->samples += p->samples;
		r->early += p->early;
		r->early_in_code += p->early_in_code;
	}
	struct advice adv[16];
	bool unusable;
	size_t na = diagnose(&st, adv, &unusable);
	if (json)
		report_json(&st, adv, na, unusable, top, stdout);
	else
		report_text(&st, adv, na, top, stdout);

	if (check) {
		double lost = pct(st.lost, st.samples + st.lost);
		uint64_t tr = st.have_unwind ? st.uw_ends[SP_END_TRUNCATED] : st.truncated;
		double trp = pct(tr, st.samples);
		double comp = pct(st.uw_complete, st.uw_user);
		double addr = pct(st.address_only, st.frames);
		double unnamed = pct(st.address_only + st.origins[O_FUNCTION_START], st.frames);
		bool over = unusable;
		struct sp_finding f;
		if (unusable)
			sp_warn("check: %s", adv[0].what);
		if (max_lost >= 0 && lost > max_lost)
			over = true, sp_warn("check: lost %.2f%% > %.2f%%", lost, max_lost);
		if (max_trunc >= 0 && trp > max_trunc)
			over = true, sp_warn("check: truncated %.2f%% > %.2f%%", trp, max_trunc);
		if (min_complete >= 0 && !st.have_unwind) {
			sp_finding_not_at_stage(&f, "complete stacks", st.stage, "unwound", "sp-unwind");
			over = true, sp_warn("check: %s; %s", f.what, f.fix);
		} else if (min_complete >= 0 && comp < min_complete) {
			over = true, sp_warn("check: complete %.2f%% < %.2f%%", comp, min_complete);
		}
		if ((max_addr >= 0 || max_unnamed >= 0) && !st.have_symbolize) {
			sp_finding_not_at_stage(&f, max_addr >= 0 ? "address-only frames" : "unnamed frames",
						st.stage, "symbolized", "sp-symbolize");
			over = true, sp_warn("check: %s; %s", f.what, f.fix);
		} else {
			if (max_addr >= 0 && addr > max_addr)
				over = true, sp_warn("check: address-only %.2f%% > %.2f%%", addr, max_addr);
			if (max_unnamed >= 0 && unnamed > max_unnamed)
				over = true, sp_warn("check: unnamed %.2f%% > %.2f%%", unnamed, max_unnamed);
		}
		if (over && status == SP_EXIT_OK)
			status = EXIT_CHECK;
	}
	for (size_t i = 0; i < st.nmods; i++)
		free(st.mods[i].path);
	free(st.mods);
	free(st.named);
	free(st.scratch);
	sp_hashmap_release(&st.mod_paths, modpath_free);
	forget_segment(&st);
	free(st.procs.v);
	sp_u64map_release(&st.procs.index, NULL);
	free(st.threads.v);
	sp_u64map_release(&st.threads.index, NULL);
	return status;
}

/*
 * sp-unwind: turns each raw sample's registers and stack copy into a
 * stack of frames by DWARF CFI, against the mappings the stream recorded
 * for its process at its time, and writes the unwound stream: interned
 * stacks that samples refer to by id, the modules they lie in, and every
 * other record passed through.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream/advice.h"
#include "stream/header.h"
#include "stream/records.h"
#include "stream/stream.h"
#include "stream/ustack.h"
#include "tool.h"
#include "util/alloc.h"
#include "util/hashmap.h"
#include "unwind/addrspace.h"
#include "unwind/arch.h"
#include "unwind/libunwind.h"
#include "unwind/unwind.h"
#include "util/modfile.h"

#define DEFAULT_MAX_DEPTH 512
#define MAX_KERNEL_FRAMES 512

static void usage(void)
{
	printf("Usage: %s [options] [FILE]\n"
	       "Unwind the stack copies of a raw stackpulse stream by DWARF CFI.\n"
	       "FILE is '-' or absent for standard input.\n"
	       "\n"
	       "  -o, --output FILE      write the unwound stream to FILE\n"
	       "      --root DIR         look recorded module paths up under DIR\n"
	       "      --module-dir DIR   a directory in build-id layout (DIR/.build-id/xx/rest),\n"
	       "                         searched before the recorded path; repeatable\n"
	       "      --archive DIR      an archive of sp-capture --archive: a module dir\n"
	       "  -f, --follow           read a file still being written; end at its summary\n"
	       "                         or on SIGINT\n"
	       "      --max-depth N      user frames per stack at most (default %d)\n"
	       "      --no-fp-fallback   never walk frame pointers where no CFI covers an address\n"
	       "      --engine NAME      stackpulse (the default) or libunwind: who steps\n"
	       "                         from frame to frame\n"
	       "      --max-record BYTES largest input record accepted (default %u)\n"
	       "      --allow-empty      exit 0 even when no stack is complete\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, DEFAULT_MAX_DEPTH, SP_DEFAULT_MAX_RECORD);
}

/* One output frame, as hashed for interning. */
/* An interned stack: n frames at off in the arena, and its id. */
struct ostack {
	struct sp_hashmap_entry ent;
	size_t off, n, id;
};

/* The frames of a stack looked up, and the arena the stored ones lie in. */
struct stackkey {
	const struct sp_stack_frame *f, *arena;
	size_t n;
};

static int stack_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		     const void *keydata)
{
	const struct ostack *s = sp_container_of(a, const struct ostack, ent);
	const struct stackkey *k = keydata;
	(void)b;
	return s->n != k->n || memcmp(k->arena + s->off, k->f, k->n * sizeof(*k->f)) != 0;
}

static void free_stack(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct ostack, ent));
}

struct state {
	struct sp_writer *w;
	struct sp_addrspaces *as;
	struct sp_unwinder *u;
	struct sp_lunwinder *lu;	/* --engine=libunwind; else NULL */
	bool use_lu;
	struct sp_unwind_options uo;
	struct sp_unwind_regmap regs;	/* the segment's architecture */
	struct sp_object kernel;	/* the pseudo-module of kernel frames */
	uint64_t next_module;

	struct sp_ustack_cache copies;	/* the last full stack copy of each thread */

	/* Interned stacks: frames in one arena, a map of struct ostack. */
	struct sp_stack_frame *arena;
	size_t narena, allocarena;
	struct sp_hashmap stacks;
	size_t nstacks;

	struct sp_uframe *uframes;
	struct sp_stack_frame *frames;

	/* Counters for the unwind record. */
	uint64_t samples, user_samples, frames_out, bad_copies;
	uint64_t ends[SP_END_COUNT];
	uint64_t max_depth_full;	/* max_depth ends of copies that filled their window */
};

static void reset_segment(struct state *st)
{
	sp_addrspaces_reset(st->as, sp_unwinder_free_object);
	sp_ustack_cache_release(&st->copies);
	st->narena = st->nstacks = 0;
	sp_hashmap_release(&st->stacks, free_stack);
	sp_hashmap_init(&st->stacks, stack_cmp);
	st->kernel.out_id = UINT64_MAX;
	st->next_module = 0;
	st->samples = st->user_samples = st->frames_out = st->bad_copies = 0;
	st->max_depth_full = 0;
	memset(st->ends, 0, sizeof(st->ends));
}

static const char *object_kind(const struct sp_object *o)
{
	if (o->vdso)
		return "vdso";
	if (o->anon)
		return "jit";
	return o->path[0] == '[' ? "anon" : "elf";
}

/* Writes the module record of an object the first time a stack uses it. */
static uint64_t module_id(struct state *st, struct sp_object *o)
{
	if (o->out_id != UINT64_MAX)
		return o->out_id;
	o->out_id = st->next_module++;
	struct sp_module_rec m = {
		.id = o->out_id, .path = o->path,
		.kind = o == &st->kernel ? "kernel" : object_kind(o),
		.ident = o->build_id, .identlen = o->build_id_len, .content = o->content_id,
		.pid = o->anon_pid,
	};
	sp_write_module(st->w, &m);
	return o->out_id;
}

static uint64_t hash_frames(const struct sp_stack_frame *f, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ f[i].addr) * 1099511628211ull;
		h = (h ^ (f[i].module + (f[i].flags << 40))) * 1099511628211ull;
	}
	h ^= h >> 29;
	return h ^ (h >> 32);
}

/* Returns the id of a stack, writing its record when it is new. */
static uint64_t intern(struct state *st, const struct sp_stack_frame *f, size_t n)
{
	struct stackkey key = { f, st->arena, n };
	struct sp_hashmap_entry probe = { NULL, (uint32_t)hash_frames(f, n) };
	struct sp_hashmap_entry *e = sp_hashmap_get(&st->stacks, &probe, &key);
	if (e)
		return sp_container_of(e, struct ostack, ent)->id;
	if (SP_ALLOC_GROW(st->arena, st->narena + n, st->allocarena) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	memcpy(st->arena + st->narena, f, n * sizeof(*f));
	struct ostack *s = sp_xmalloc(sizeof(*s));
	*s = (struct ostack){ probe, st->narena, n, st->nstacks++ };
	if (sp_hashmap_add(&st->stacks, &s->ent) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	st->narena += n;
	uint64_t k = s->id;

	sp_write_stack(st->w, k, f, n);
	return k;
}

/* Whether a raw sample key is one sp-unwind consumes. */
static bool raw_key(const msgpack_object *k)
{
	static const char *const keys[] = { "t", "pid", "tid", "time", "cpu", "period",
		"abi", "regs", "ustack", "ustack_shared", "ustack_full", "kstack", "stack" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (sp_obj_str_eq(k, keys[i]))
			return true;
	return false;
}

/* Kernel frames, then the user frames; returns how many are in st->frames. */
static size_t unwind_frames(struct state *st, const msgpack_object *m, uint64_t pid,
			    const unsigned char *copy, size_t len, bool full, unsigned max_depth)
{
	size_t n = 0;
	uint64_t abi = 0;
	const msgpack_object_array *ks = sp_map_array(m, "kstack");
	for (uint32_t i = 0; ks && i < ks->size && n < MAX_KERNEL_FRAMES; i++) {
		if (ks->ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			continue;
		uint64_t a = ks->ptr[i].via.u64;
		uint64_t flags = SP_FRAME_KERNEL | (n ? SP_FRAME_RETADDR : 0);
		st->frames[n] = (struct sp_stack_frame){ a, module_id(st, &st->kernel), a, flags };
		n++;
	}
	sp_map_u64(m, "abi", &abi);
	const msgpack_object_array *regs = sp_map_array(m, "regs");
	if (!abi || !regs || regs->size < st->regs.need)
		return n;
	uint64_t r[256];
	size_t nr = regs->size < 256 ? regs->size : 256;
	for (size_t i = 0; i < nr; i++)
		r[i] = regs->ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER ? regs->ptr[i].via.u64 : 0;
	size_t nu = 0;
	enum sp_unwind_end end = st->lu ?
		sp_lunwind(st->lu, st->as, (uint32_t)pid, r, nr, copy, len, full,
			   st->uframes, max_depth, &nu) :
		sp_unwind(st->u, st->as, (uint32_t)pid, r, nr, copy, len, full,
			  st->uframes, max_depth, &nu);
	st->user_samples++;
	st->ends[end]++;
	/* The walk stopped before the copy's end, which may be too short as well. */
	st->max_depth_full += end == SP_END_MAX_DEPTH && full;
	for (size_t i = 0; i < nu; i++) {
		const struct sp_uframe *f = &st->uframes[i];
		st->frames[n++] = (struct sp_stack_frame){ f->addr,
			f->obj ? module_id(st, f->obj) : UINT64_MAX, f->rel, f->flags };
	}
	if (end != SP_END_COMPLETE)
		st->frames[n++] = (struct sp_stack_frame){ 0, UINT64_MAX, (uint64_t)end, SP_FRAME_MARKER };
	return n;
}

static void unwind_sample(struct state *st, const struct sp_record *rec, unsigned max_depth)
{
	const msgpack_object *m = rec->map;
	uint64_t pid = 0, tid = 0, shared = 0, v;
	bool full = false;
	sp_map_u64(m, "pid", &pid);
	sp_map_u64(m, "tid", &tid);
	sp_map_u64(m, "ustack_shared", &shared);
	sp_map_bool(m, "ustack_full", &full);
	const void *us = NULL;
	size_t uslen = 0;
	if (!sp_map_bin(m, "ustack", &us, &uslen))
		uslen = 0;
	st->samples++;

	/* The full copy: this sample's bytes, then the shared tail. */
	const unsigned char *copy;
	size_t len;
	int rc = sp_ustack_decode(&st->copies, (uint32_t)tid, us, uslen, shared, &copy, &len);
	if (rc < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	if (rc == SP_USTACK_BAD_SHARE)
		st->bad_copies++;
	size_t n = unwind_frames(st, m, pid, copy, len, full, max_depth);
	st->frames_out += n;

	/* Module and stack records first, then the sample that uses them. */
	uint64_t id = n ? intern(st, st->frames, n) : 0;
	struct sp_mapw out;
	sp_mapw_begin(&out, st->w);
	sp_mapw_str(&out, "t", "sample");
	sp_mapw_u64(&out, "pid", pid);
	sp_mapw_u64(&out, "tid", tid);
	if (sp_map_u64(m, "time", &v))
		sp_mapw_u64(&out, "time", v);
	if (sp_map_u64(m, "cpu", &v))
		sp_mapw_u64(&out, "cpu", v);
	if (sp_map_u64(m, "period", &v))
		sp_mapw_u64(&out, "period", v);
	const msgpack_object_map *mm = &m->via.map;
	for (uint32_t i = 0; i < mm->size; i++)
		if (!raw_key(&mm->ptr[i].key))
			sp_mapw_kv(&out, &mm->ptr[i]);
	if (n)
		sp_mapw_u64(&out, "stack", id);
	sp_mapw_end(&out);
}

/* The unwinder's counters, written just before the capture summary. */
static void write_unwind_record(struct state *st)
{
	struct sp_unwind_stats us;
	uint32_t pid;
	int err;
	const char *denied = sp_unwinder_denied(st->u, &pid, &err);
	if (denied)
		sp_warn("cannot read '%s' as process %u maps it (/proc/%u/root, map_files): %s "
			"(run sp-unwind as root, or give it CAP_SYS_PTRACE and "
			"CAP_DAC_READ_SEARCH)", denied, pid, pid, strerror(err));
	sp_unwinder_stats(st->u, &us);
	struct sp_unwind_rec u = {
		.samples = st->samples, .user_samples = st->user_samples,
		.frames = st->frames_out, .stacks = st->nstacks, .modules = st->next_module,
		.ends = st->ends, .bad_shared_copies = st->bad_copies,
		.cache_hits = us.cache_hits, .cache_misses = us.cache_misses,
		.fp_frames = us.fp_frames, .scan_frames = us.scan_frames,
		.modules_opened = us.modules_opened, .modules_missing = us.modules_missing,
		.modules_mismatched = us.modules_mismatched,
		.max_depth_full = st->max_depth_full,
		.engine = st->lu ? "libunwind" : "stackpulse",
	};
	sp_write_unwind(st->w, &u);
}

/* The most frequent way a stack ended early. */
static enum sp_unwind_end worst_end(const struct state *st)
{
	enum sp_unwind_end worst = SP_END_TRUNCATED;
	for (int e = SP_END_TRUNCATED; e < SP_END_COUNT; e++)
		if (e != SP_END_MAX_DEPTH && st->ends[e] > st->ends[worst])
			worst = (enum sp_unwind_end)e;
	return worst;
}

/*
 * At the end of a segment: no complete stack at all is an unusable
 * result (SP_EXIT_PARTIAL unless allow_empty); more than 5% of stacks
 * cut short is one warning.  Both name the cause and the fix.  A stack
 * cut at --max-depth is what the user asked for: it counts as complete.
 */
static int check_stacks(const struct state *st, bool allow_empty)
{
	uint64_t n = st->user_samples;
	uint64_t cut = n - st->ends[SP_END_COMPLETE] - st->ends[SP_END_MAX_DEPTH];
	if (!n || 100.0 * (double)cut / (double)n <= SP_DEGRADED_PCT)
		return SP_EXIT_OK;
	/* sp-stat's words (stream/advice.h): the warning and the diagnosis read alike. */
	enum sp_unwind_end worst = worst_end(st);
	struct sp_finding f;
	sp_finding_incomplete(&f, n - cut, n, sp_unwind_end_description(worst),
			      sp_end_remedy(worst, NULL, false));
	if (cut == n)
		sp_warn("no stack is complete: %s; %s%s", f.what, f.fix,
			allow_empty ? "" : " (or give --allow-empty)");
	else
		sp_warn("warning: %s; %s", f.what, f.fix);
	return cut == n && !allow_empty ? SP_EXIT_PARTIAL : SP_EXIT_OK;
}

/* A directory to search that is not there: said once, not at every module. */
static void check_dir(const char *opt, const char *dir)
{
	struct stat sb;
	if (stat(dir, &sb) < 0)
		sp_warn("%s '%s': %s; no module file is found there", opt, dir, strerror(errno));
	else if (!S_ISDIR(sb.st_mode))
		sp_warn("%s '%s': not a directory; no module file is found there", opt, dir);
}

/* The capture summary with this stage's truncation count. */
static void write_summary(struct state *st, const msgpack_object *m)
{
	msgpack_packer *pk = sp_writer_packer(st->w);
	const msgpack_object_map *mm = &m->via.map;
	msgpack_pack_map(pk, mm->size);
	for (uint32_t i = 0; i < mm->size; i++) {
		msgpack_pack_object(pk, mm->ptr[i].key);
		if (sp_obj_str_eq(&mm->ptr[i].key, "truncated_frame_markers"))
			msgpack_pack_uint64(pk, st->ends[SP_END_TRUNCATED]);
		else
			msgpack_pack_object(pk, mm->ptr[i].val);
	}
}


/* The input is idle: what was unwound so far leaves now (a write error stays on w). */
static void flush_out(void *w)
{
	sp_writer_flush(w);
}

int main(int argc, char **argv)
{
	enum { ROOT = 256, MODULE_DIR, MAX_DEPTH, NO_FP, MAX_RECORD, ARCHIVE, ENGINE,
	       ALLOW_EMPTY };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "root", required_argument, NULL, ROOT },
		{ "module-dir", required_argument, NULL, MODULE_DIR },
		{ "archive", required_argument, NULL, ARCHIVE },
		{ "follow", no_argument, NULL, 'f' },
		{ "max-depth", required_argument, NULL, MAX_DEPTH },
		{ "no-fp-fallback", no_argument, NULL, NO_FP },
		{ "engine", required_argument, NULL, ENGINE },
		{ "max-record", required_argument, NULL, MAX_RECORD },
		{ "allow-empty", no_argument, NULL, ALLOW_EMPTY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	struct sp_modfile_search ms;
	sp_modfile_search_init(&ms);
	size_t max_record = SP_DEFAULT_MAX_RECORD;
	bool follow = false, fp = true, allow_empty = false;
	unsigned max_depth = DEFAULT_MAX_DEPTH;
	uint64_t v;
	int c;
	struct state st = { 0 };

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "o:fhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case ROOT:
			check_dir("--root", optarg);
			sp_modfile_search_set_root(&ms, optarg);
			break;
		case ARCHIVE:
		case MODULE_DIR:
			check_dir(c == ARCHIVE ? "--archive" : "--module-dir", optarg);
			if (sp_modfile_search_add_dir(&ms, optarg) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory");
			break;
		case 'f': follow = true; break;
		case MAX_DEPTH:
			if (sp_parse_u64(optarg, 65536, &v) < 0 || v == 0)
				sp_usage_error("invalid --max-depth '%s' (1 to 65536)", optarg);
			max_depth = (unsigned)v;
			break;
		case NO_FP: fp = false; break;
		case ENGINE:
			if (strcmp(optarg, "libunwind") == 0)
				st.use_lu = true;
			else if (strcmp(optarg, "stackpulse") != 0)
				sp_usage_error("invalid --engine '%s' (stackpulse or libunwind)", optarg);
			break;
		case MAX_RECORD:
			max_record = sp_parse_max_record(optarg);
			break;
		case ALLOW_EMPTY: allow_empty = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	const char *input = sp_single_input(argc, argv, optind);

	/* Following a file opens it when it appears; a pipe needs no following. */
	if (follow && (!input || strcmp(input, "-") == 0))
		follow = false;
	int infd = follow ? -1 : sp_open_input(input);
	int outfd = sp_open_output(output, true);
	st.w = sp_writer_new(outfd, output ? output : "-");
	st.as = sp_addrspaces_new();
	st.uo = (struct sp_unwind_options){ .root = ms.root, .module_dirs = ms.dirs,
					    .nmodule_dirs = ms.ndirs, .max_depth = max_depth,
					    .fp_fallback = fp };
	sp_unwind_regmap_native(&st.regs, &sp_arch_x86_64);
	sp_ustack_cache_init(&st.copies);
	sp_hashmap_init(&st.stacks, stack_cmp);
	st.u = sp_unwinder_new(&st.uo);
	st.kernel.path = "[kernel.kallsyms]";
	st.kernel.out_id = UINT64_MAX;
	st.uframes = sp_xmalloc((max_depth + 1) * sizeof(*st.uframes));
	st.frames = sp_xmalloc((max_depth + MAX_KERNEL_FRAMES + 2) * sizeof(*st.frames));
	struct sp_reader *r = follow ? sp_reader_follow(input, &sp_interrupted, sp_note_warn, NULL)
				     : sp_reader_new(infd, input ? input : "-");
	if (!st.w || !st.as || !st.u || !r)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_reader_set_max_record(r, max_record);
	sp_reader_set_idle(r, flush_out, st.w);
	if (follow) {
		struct sigaction sa = { .sa_handler = sp_on_signal };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}

	int status = SP_EXIT_OK;
	struct sp_record rec;
	enum sp_read_status rs;
	while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		switch (rec.type) {
		case SP_R_HEADER: {
			const struct sp_header *h = sp_reader_header(r);
			if (h->stage != SP_STAGE_RAW) {
				sp_warn("'%s': byte offset %llu, record %llu: the stream is already %s; "
					"sp-unwind reads raw streams from sp-capture",
					input ? input : "-", (unsigned long long)rec.offset,
					(unsigned long long)rec.index, sp_stage_name(h->stage));
				status = SP_EXIT_FATAL;
				goto done;
			}
			struct sp_error err = { 0 };
			if (sp_unwind_regmap_select(&st.regs, rec.map, &err) < 0) {
				sp_warn("%s", sp_error_message(&err));
				status = SP_EXIT_FATAL;
				goto done;
			}
			reset_segment(&st);
			sp_unwinder_free(st.u);
			st.uo.this_host = sp_header_same_boot(rec.map);
			st.uo.regs = &st.regs;
			st.u = sp_unwinder_new(&st.uo);
			if (!st.u)
				sp_die(SP_EXIT_FATAL, "out of memory");
			sp_lunwinder_free(st.lu);
			st.lu = NULL;
			if (st.use_lu && !(st.lu = sp_lunwinder_new(st.u, &err))) {
				sp_warn("%s", sp_error_message(&err));
				status = SP_EXIT_FATAL;
				goto done;
			}
			sp_pack_derived_header(st.w, rec.map, SP_STAGE_UNWOUND,
					       "sp-unwind", argc, argv);
			break;
		}
		case SP_R_SAMPLE:
			unwind_sample(&st, &rec, max_depth);
			break;
		case SP_R_SUMMARY:
			write_unwind_record(&st);
			write_summary(&st, rec.map);
			if (check_stacks(&st, allow_empty) != SP_EXIT_OK && status == SP_EXIT_OK)
				status = SP_EXIT_PARTIAL;
			break;
		case SP_R_RUNTIME: {
			uint64_t pid = 0;
			bool cpython = false;
			if (sp_map_u64(rec.map, "pid", &pid) && pid <= UINT32_MAX &&
			    sp_map_bool(rec.map, "cpython", &cpython) &&
			    sp_unwinder_set_cpython(st.u, (uint32_t)pid, cpython) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory");
			sp_writer_raw(st.w, rec.raw, rec.raw_len);
			break;
		}
		case SP_R_PROCESS: case SP_R_MAP: case SP_R_FORK: case SP_R_EXEC: case SP_R_EXIT:
		case SP_R_IMAGE: case SP_R_JITDUMP:
			if (sp_addrspaces_apply(st.as, rec.type, rec.map) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory");
			sp_writer_raw(st.w, rec.raw, rec.raw_len);
			break;
		default:
			sp_writer_raw(st.w, rec.raw, rec.raw_len);
			break;
		}
		if (sp_writer_failed(st.w))
			break;
		if (follow && rec.type == SP_R_SUMMARY)
			break;
	}
	if (sp_report_input_end(r, rs, input ? input : "-", "unwound") != SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
done:
	if (sp_writer_close(st.w) < 0) {
		/* The reader went away (a failed sp-symbolize): its message is the one. */
		if (errno != EPIPE)
			sp_write_failed(errno);
		status = SP_EXIT_FATAL;
	}
	sp_reader_free(r);
	sp_lunwinder_free(st.lu);
	sp_addrspaces_free(st.as, sp_unwinder_free_object);
	sp_unwinder_free(st.u);
	sp_ustack_cache_release(&st.copies);
	free(st.arena);
	sp_hashmap_release(&st.stacks, free_stack);
	free(st.uframes);
	free(st.frames);
	sp_modfile_search_release(&ms);
	if (infd >= 0 && infd != STDIN_FILENO)
		close(infd);
	return status;
}

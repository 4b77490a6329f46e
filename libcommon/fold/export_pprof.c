/* SPDX-License-Identifier: MIT
 * The pprof exporter (see fold.h): the folded view as a gzip-compressed
 * perftools.profiles.Profile (github.com/google/pprof, proto/profile.proto).
 * The protobuf encoding is written by hand, as Go's runtime/pprof does: the
 * schema is small and stable, and only varints and length-delimited fields
 * are needed.
 *
 * The model: a Sample per (thread, stack) count, with the values
 * [samples/count, cpu/nanoseconds] and the labels pid, tid, comm and
 * thread; a Location per physical frame together with the inline frames
 * that follow it in a root-first stack (its Lines innermost first, as pprof
 * wants them); a Function per distinct (name, file).  Folded with
 * locations (sp-fold does for pprof), a physical frame is one address in
 * one mapping of the stream's map records: its Location has that address
 * and a Mapping with the file's real range and offset, as perf's and
 * Go's profiles do, so that a re-symbolizer (pprof -disasm, Parca) finds
 * the instruction.  Without (an unwound stream), a Mapping per module
 * path and the module-relative address.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fold/internal.h"
#include "util/alloc.h"
#include "util/hashmap.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4, MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

/* Wire types. */
#define WT_VARINT 0
#define WT_LEN 2

static void pb_varint(struct sp_buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	sp_buf_add(b, tmp, n);
}

static void pb_key(struct sp_buf *b, unsigned field, unsigned wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field; zero is the default and is left out. */
static void pb_u64(struct sp_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, WT_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct sp_buf *b, unsigned field, const void *p, size_t n)
{
	pb_key(b, field, WT_LEN);
	pb_varint(b, n);
	if (n)
		sp_buf_add(b, p, n);
}

/* Appends the bytes of another buffer. */
static void add_buf(struct sp_buf *b, const struct sp_buf *from)
{
	if (from->len)
		sp_buf_add(b, from->p, from->len);
	if (from->oom)
		b->oom = 1;
}

/* Appends the message in sub as a field of b and empties sub for reuse. */
static void pb_msg(struct sp_buf *b, unsigned field, struct sp_buf *sub)
{
	pb_bytes(b, field, sub->p, sub->len);
	if (sub->oom)
		b->oom = 1;
	sub->len = 0;
}

struct mapping {
	uint32_t path;			/* string index */
	const struct sp_fold_frame *first;	/* a frame of it, for the build-id */
	const struct sp_fold_mapping *real;	/* its range in a process; NULL: unknown */
	uint64_t samples;		/* of the samples with a frame in it */
	bool functions, filenames, lines, inlines;
	bool unnamed;		/* a frame without a name (address or function start) */
	uint32_t id;			/* as written: the main binary's is 1 */
};

struct function {
	uint32_t name, file;		/* string indices */
};

/* A Location: a run of display frames, the physical one first. */
struct location {
	const uint32_t *frames;
	size_t n;
	uint32_t mapping;		/* index + 1; 0: none */
	uint64_t samples;		/* of the samples it is in */
};

/* A string of the table, found by its bytes. */
struct str_ent {
	struct sp_hashmap_entry e;
	const char *s;
	uint32_t idx;
};

/* A location, found by its run of frames. */
struct loc_ent {
	struct sp_hashmap_entry e;
	const uint32_t *frames;
	size_t n;
	uint32_t idx;
};

struct pp {
	const struct sp_fold_view *v;
	bool oom;
	/* Strings: copies, made valid UTF-8, and the encoded table. */
	char **strs;
	size_t nstrs, allocstrs;
	struct sp_hashmap str_map;
	struct sp_buf table;
	struct sp_buf clean;	/* scratch for str_id() */
	struct mapping *maps;
	size_t nmaps, allocmaps;
	struct sp_u64map map_ids;	/* path string -> index + 1 */
	struct function *funcs;
	size_t nfuncs, allocfuncs;
	struct sp_u64map func_ids;	/* name << 32 | file -> index + 1 */
	struct location *locs;
	size_t nlocs, alloclocs;
	struct sp_hashmap loc_map;
};

static int str_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		   const void *keydata)
{
	(void)keydata;
	return strcmp(sp_container_of(a, struct str_ent, e)->s, sp_container_of(b, struct str_ent, e)->s);
}

static int loc_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		   const void *keydata)
{
	const struct loc_ent *x = sp_container_of(a, struct loc_ent, e);
	const struct loc_ent *y = sp_container_of(b, struct loc_ent, e);
	(void)keydata;
	return x->n != y->n || memcmp(x->frames, y->frames, x->n * sizeof(*x->frames)) != 0;
}

static void free_str_ent(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct str_ent, e));
}

static void free_loc_ent(struct sp_hashmap_entry *e)
{
	free(sp_container_of(e, struct loc_ent, e));
}

/* Adds s to the string table (as index p->nstrs).  Returns 0, or -1 when memory ran out. */
static int add_string(struct pp *p, const char *s, size_t n, uint32_t hash)
{
	struct str_ent *e = malloc(sizeof(*e));
	char *copy = strndup(s, n);
	if (!e || !copy || SP_ALLOC_GROW(p->strs, p->nstrs + 1, p->allocstrs) < 0)
		goto nomem;
	*e = (struct str_ent){ .s = copy, .idx = (uint32_t)p->nstrs };
	e->e.hash = hash;
	if (sp_hashmap_add(&p->str_map, &e->e) < 0)
		goto nomem;
	p->strs[p->nstrs++] = copy;
	pb_bytes(&p->table, PROFILE_STRING_TABLE, copy, n);
	return 0;
nomem:
	free(e);
	free(copy);
	p->oom = true;
	return -1;
}

/* The string table index of s (NULL: ""), added when new. */
static uint32_t str_id(struct pp *p, const char *s)
{
	if (!s || !*s)
		return 0;
	/* Protobuf strings are UTF-8. */
	sp_utf8_sanitize(&p->clean, s, strlen(s));
	if (p->clean.oom) {
		p->oom = true;
		return 0;
	}
	struct str_ent key = { .s = p->clean.p };
	key.e.hash = sp_hash_bytes(p->clean.p, p->clean.len);
	struct sp_hashmap_entry *hit = sp_hashmap_get(&p->str_map, &key.e, NULL);
	if (hit)
		return sp_container_of(hit, struct str_ent, e)->idx;
	if (add_string(p, p->clean.p, p->clean.len, key.e.hash) < 0)
		return 0;
	return (uint32_t)(p->nstrs - 1);
}

/*
 * The index + 1 of the element of *arr (of elem bytes, *n used) found
 * under key in ids; val is appended as a new element when there is none.
 * 0 when memory ran out.
 */
static uint32_t intern_u64(struct pp *p, struct sp_u64map *ids, uint64_t key, void **arr,
			   size_t elem, size_t *n, size_t *alloc, const void *val)
{
	uintptr_t hit = (uintptr_t)sp_u64map_get(ids, key);
	if (hit)
		return (uint32_t)hit;
	if (sp_alloc_grow(arr, elem, *n + 1, alloc) < 0 ||
	    sp_u64map_put(ids, key, (void *)(uintptr_t)(*n + 1)) < 0) {
		p->oom = true;
		return 0;
	}
	memcpy((char *)*arr + *n * elem, val, elem);
	return (uint32_t)++*n;
}

/* The mapping index + 1 of a frame's module; 0 when it has none. */
static uint32_t mapping_of(struct pp *p, const struct sp_fold_frame *fr)
{
	if (fr->mapping && fr->mapping <= p->v->nmappings) {
		/* A range of a process: by the view's mapping, apart from the paths' keys. */
		const struct sp_fold_mapping *r = &p->v->mappings[fr->mapping - 1];
		struct mapping m = { .path = str_id(p, r->path), .first = fr, .real = r };
		return intern_u64(p, &p->map_ids, 1ull << 63 | fr->mapping, (void **)&p->maps,
				  sizeof(m), &p->nmaps, &p->allocmaps, &m);
	}
	if (!fr->module)
		return 0;
	struct mapping m = { .path = str_id(p, fr->module), .first = fr };
	return intern_u64(p, &p->map_ids, m.path, (void **)&p->maps, sizeof(m), &p->nmaps,
			  &p->allocmaps, &m);
}

/* The Function id of a display frame, added when new. */
static uint32_t function_of(struct pp *p, const struct sp_fold_frame *fr)
{
	struct function f = { str_id(p, fr->function), str_id(p, fr->file) };
	return intern_u64(p, &p->func_ids, (uint64_t)f.name << 32 | f.file, (void **)&p->funcs,
			  sizeof(f), &p->nfuncs, &p->allocfuncs, &f);
}

/* The Location id of a run of display frames, added when new. */
static uint32_t location_of(struct pp *p, const uint32_t *frames, size_t n)
{
	struct loc_ent key = { .frames = frames, .n = n };
	key.e.hash = sp_hash_bytes(frames, n * sizeof(*frames));
	struct sp_hashmap_entry *hit = sp_hashmap_get(&p->loc_map, &key.e, NULL);
	if (hit)
		return sp_container_of(hit, struct loc_ent, e)->idx + 1;
	struct loc_ent *e = malloc(sizeof(*e));
	if (!e || SP_ALLOC_GROW(p->locs, p->nlocs + 1, p->alloclocs) < 0) {
		free(e);
		p->oom = true;
		return 0;
	}
	*e = key;
	e->idx = (uint32_t)p->nlocs;
	if (sp_hashmap_add(&p->loc_map, &e->e) < 0) {
		free(e);
		p->oom = true;
		return 0;
	}
	p->locs[p->nlocs] = (struct location){ frames, n, 0, 0 };
	return (uint32_t)++p->nlocs;
}

static void label(struct sp_buf *b, struct sp_buf *tmp, uint32_t key, uint32_t str, int64_t num,
		  bool is_num)
{
	pb_u64(tmp, LABEL_KEY, key);
	if (is_num) {
		/* Written even when 0: a label with neither str nor num is dropped. */
		pb_key(tmp, LABEL_NUM, WT_VARINT);
		pb_varint(tmp, (uint64_t)num);
	} else {
		pb_u64(tmp, LABEL_STR, str);
	}
	pb_msg(b, SAMPLE_LABEL, tmp);
}

static void packed(struct sp_buf *b, unsigned field, struct sp_buf *tmp, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pb_varint(tmp, v[i]);
	pb_msg(b, field, tmp);
}

static void value_type(struct sp_buf *b, unsigned field, struct sp_buf *tmp, uint32_t type,
		       uint32_t unit)
{
	pb_u64(tmp, VALUETYPE_TYPE, type);
	pb_u64(tmp, VALUETYPE_UNIT, unit);
	pb_msg(b, field, tmp);
}

/* Whether a module path names the main binary rather than a library. */
static bool main_binary(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return base[0] != '[' && !strstr(base, ".so") && strncmp(path, "//anon", 6) != 0;
}

/* The samples, then the locations, mappings and functions they use. */
static void encode(struct pp *p, struct sp_buf *out)
{
	const struct sp_fold_view *v = p->v;
	struct sp_buf samples, tmp, sub;
	sp_buf_init(&samples);
	sp_buf_init(&tmp);
	sp_buf_init(&sub);
	uint64_t *ids = NULL;
	size_t allocids = 0;

	/* string_table[0] is "", for every field that is left unset. */
	if (add_string(p, "", 0, sp_hash_bytes("", 0)) < 0)
		return;
	uint32_t s_samples = str_id(p, "samples"), s_count = str_id(p, "count");
	uint32_t s_cpu = str_id(p, v->time_name ? v->time_name : "cpu");
	uint32_t s_ns = str_id(p, "nanoseconds");
	uint32_t s_pid = str_id(p, "pid"), s_tid = str_id(p, "tid");
	uint32_t s_comm = str_id(p, "comm"), s_thread = str_id(p, "thread");

	for (size_t c = 0; c < v->ncounts && !p->oom; c++) {
		const struct sp_fold_count *cnt = &v->counts[c];
		const struct sp_fold_stack *st = &v->stacks[cnt->stack];
		const struct sp_fold_thread *th = &v->threads[cnt->thread];
		if (SP_ALLOC_GROW(ids, st->n, allocids) < 0) {
			p->oom = true;
			break;
		}
		/* Runs of a physical frame and the inline frames after it, root first. */
		size_t nids = 0;
		for (size_t i = 0; i < st->n;) {
			size_t j = i + 1;
			while (j < st->n && v->frames[st->frames[j]].inlined)
				j++;
			ids[nids++] = location_of(p, st->frames + i, j - i);
			i = j;
		}
		for (size_t i = 0; i < nids; i++)
			if (ids[i])
				p->locs[ids[i] - 1].samples += cnt->samples;
		/* pprof wants the leaf first. */
		for (size_t i = 0; i < nids / 2; i++) {
			uint64_t t = ids[i];
			ids[i] = ids[nids - 1 - i];
			ids[nids - 1 - i] = t;
		}
		packed(&sub, SAMPLE_LOCATION_ID, &tmp, ids, nids);
		uint64_t values[2] = { cnt->samples, cnt->period };
		packed(&sub, SAMPLE_VALUE, &tmp, values, 2);
		label(&sub, &tmp, s_pid, 0, th->pid, true);
		label(&sub, &tmp, s_tid, 0, th->tid, true);
		label(&sub, &tmp, s_comm, str_id(p, th->comm), 0, false);
		label(&sub, &tmp, s_thread, str_id(p, th->thread_comm), 0, false);
		pb_msg(&samples, PROFILE_SAMPLE, &sub);
	}
	free(ids);

	/* Mappings of the locations, and what their frames tell about them. */
	for (size_t i = 0; i < p->nlocs && !p->oom; i++) {
		struct location *l = &p->locs[i];
		l->mapping = mapping_of(p, &v->frames[l->frames[0]]);
		if (!l->mapping)
			continue;
		struct mapping *m = &p->maps[l->mapping - 1];
		for (size_t k = 0; k < l->n; k++) {
			const struct sp_fold_frame *fr = &v->frames[l->frames[k]];
			/*
			 * Names for all its frames, or a re-symbolizer should
			 * look again: a function start is no name.
			 */
			m->functions |= !fr->address_only && !fr->function_start;
			m->unnamed |= fr->address_only || fr->function_start;
			m->filenames |= fr->file != NULL;
			m->lines |= fr->line > 0;
		}
		m->inlines |= l->n > 1;
	}
	/*
	 * Mapping 1 is the main binary, as pprof expects: of those that are
	 * not libraries, the one with the most samples, so that a program is
	 * main rather than the shell or launcher that started it.
	 */
	for (size_t i = 0; i < p->nlocs; i++)
		if (p->locs[i].mapping)
			p->maps[p->locs[i].mapping - 1].samples += p->locs[i].samples;
	size_t main_map = SIZE_MAX;
	for (size_t i = 0; i < p->nmaps; i++)
		if (main_binary(p->strs[p->maps[i].path]) &&
		    (main_map == SIZE_MAX || p->maps[i].samples > p->maps[main_map].samples))
			main_map = i;
	if (main_map == SIZE_MAX)
		main_map = 0;
	for (size_t i = 0, id = 2; i < p->nmaps; i++)
		p->maps[i].id = i == main_map ? 1 : (uint32_t)id++;

	struct sp_buf locs, funcs, maps;
	sp_buf_init(&locs);
	sp_buf_init(&funcs);
	sp_buf_init(&maps);
	for (size_t i = 0; i < p->nlocs && !p->oom; i++) {
		const struct location *l = &p->locs[i];
		const struct sp_fold_frame *phys = &v->frames[l->frames[0]];
		pb_u64(&sub, LOCATION_ID, i + 1);
		pb_u64(&sub, LOCATION_MAPPING_ID, l->mapping ? p->maps[l->mapping - 1].id : 0);
		/*
		 * The sampled address in a mapping of known range; else, in a
		 * module, its module-relative one (see the mappings below).
		 */
		const struct mapping *lm = l->mapping ? &p->maps[l->mapping - 1] : NULL;
		pb_u64(&sub, LOCATION_ADDRESS, lm && lm->real ? phys->addr :
			   phys->has_rel && lm ? phys->rel : phys->addr);
		/* Lines innermost first: the physical frame, the caller, is last. */
		for (size_t k = l->n; k-- > 0;) {
			const struct sp_fold_frame *fr = &v->frames[l->frames[k]];
			pb_u64(&tmp, LINE_FUNCTION_ID, function_of(p, fr));
			pb_u64(&tmp, LINE_LINE, fr->line);
			pb_msg(&sub, LOCATION_LINE, &tmp);
		}
		pb_msg(&locs, PROFILE_LOCATION, &sub);
	}
	for (size_t i = 0; i < p->nfuncs && !p->oom; i++) {
		pb_u64(&sub, FUNCTION_ID, i + 1);
		pb_u64(&sub, FUNCTION_NAME, p->funcs[i].name);
		pb_u64(&sub, FUNCTION_SYSTEM_NAME, p->funcs[i].name);
		pb_u64(&sub, FUNCTION_FILENAME, p->funcs[i].file);
		pb_msg(&funcs, PROFILE_FUNCTION, &sub);
	}
	for (size_t n = 0; n < p->nmaps && !p->oom; n++) {
		/* In id order. */
		size_t i = n == 0 ? main_map : n <= main_map ? n - 1 : n;
		const struct mapping *m = &p->maps[i];
		char hex[2 * 64 + 1] = "";
		for (int k = 0; k < m->first->build_id_len && k < 64; k++)
			snprintf(hex + 2 * k, 3, "%02x", m->first->build_id[k]);
		/*
		 * A range of a process, where its locations' addresses are.
		 * Without one, memory_start, memory_limit and file_offset stay
		 * 0 and a location's address is its module-relative one (the
		 * ELF address), as if the module were loaded at 0, which is
		 * how a re-symbolizer reads it in the file of this build-id.
		 */
		pb_u64(&sub, MAPPING_ID, m->id);
		if (m->real) {
			pb_u64(&sub, MAPPING_MEMORY_START, m->real->start);
			pb_u64(&sub, MAPPING_MEMORY_LIMIT, m->real->limit);
			pb_u64(&sub, MAPPING_FILE_OFFSET, m->real->offset);
		}
		pb_u64(&sub, MAPPING_FILENAME, m->path);
		pb_u64(&sub, MAPPING_BUILD_ID, str_id(p, hex));
		pb_u64(&sub, MAPPING_HAS_FUNCTIONS, m->functions && !m->unnamed);
		pb_u64(&sub, MAPPING_HAS_FILENAMES, m->filenames);
		pb_u64(&sub, MAPPING_HAS_LINE_NUMBERS, m->lines);
		pb_u64(&sub, MAPPING_HAS_INLINE_FRAMES, m->inlines);
		pb_msg(&maps, PROFILE_MAPPING, &sub);
	}

	value_type(out, PROFILE_SAMPLE_TYPE, &tmp, s_samples, s_count);
	value_type(out, PROFILE_SAMPLE_TYPE, &tmp, s_cpu, s_ns);
	add_buf(out, &samples);
	add_buf(out, &maps);
	add_buf(out, &locs);
	add_buf(out, &funcs);
	add_buf(out, &p->table);
	pb_u64(out, PROFILE_TIME_NANOS, v->wall_start_ns);
	pb_u64(out, PROFILE_DURATION_NANOS, v->end_ns > v->start_ns ? v->end_ns - v->start_ns : 0);
	value_type(out, PROFILE_PERIOD_TYPE, &tmp, s_cpu, s_ns);
	pb_u64(out, PROFILE_PERIOD, v->sample_period_ns);
	/* The value pprof shows unless told otherwise: what sp-fold weighs by. */
	pb_u64(out, PROFILE_DEFAULT_SAMPLE_TYPE, v->weight_period ? s_cpu : s_samples);
	p->oom |= samples.oom || maps.oom || locs.oom || funcs.oom || p->table.oom || tmp.oom ||
		  sub.oom;
	sp_buf_release(&samples);
	sp_buf_release(&maps);
	sp_buf_release(&locs);
	sp_buf_release(&funcs);
	sp_buf_release(&tmp);
	sp_buf_release(&sub);
}

/*
 * Writes p[0..n) gzip-compressed.  Returns 0, or -1 with err set when
 * zlib fails; a failed write stops it and leaves ferror(out) set.
 */
static int write_gzip(const void *p, size_t n, FILE *out, struct sp_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	/* 16 + MAX_WBITS: a gzip wrapper, not zlib's own. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		return sp_error_set(err, SP_ERR_NOMEM, "cannot compress the profile: %s",
				    zs.msg ? zs.msg : "deflateInit2 failed");
	}
	unsigned char chunk[65536];
	const unsigned char *in = p;
	size_t left = n;
	int zrc;
	do {
		/* avail_in is 32 bits wide: feed at most 1 GiB at a time. */
		if (zs.avail_in == 0 && left) {
			size_t k = left > (1u << 30) ? (1u << 30) : left;
			zs.next_in = (unsigned char *)in;
			zs.avail_in = (uInt)k;
			in += k;
			left -= k;
		}
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		zrc = deflate(&zs, left ? Z_NO_FLUSH : Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			sp_error_set(err, SP_ERR_LIMIT, "cannot compress the profile: %s",
				     zs.msg ? zs.msg : "deflate failed");
			deflateEnd(&zs);
			return -1;
		}
		size_t have = sizeof(chunk) - zs.avail_out;
		/* A write error is the caller's to report, from ferror(out). */
		if (have && fwrite(chunk, 1, have, out) != have)
			break;
	} while (zrc != Z_STREAM_END);
	deflateEnd(&zs);
	return 0;
}

int sp_fold_write_pprof(const struct sp_fold_view *v, FILE *out, struct sp_error *err)
{
	struct pp p = { .v = v };
	struct sp_buf body = SP_BUF_INIT;
	sp_buf_init(&p.table);
	sp_buf_init(&p.clean);
	sp_hashmap_init(&p.str_map, str_cmp);
	sp_hashmap_init(&p.loc_map, loc_cmp);
	sp_u64map_init(&p.map_ids);
	sp_u64map_init(&p.func_ids);
	encode(&p, &body);
	int rc;
	if (p.oom || body.oom)
		rc = sp_error_set(err, SP_ERR_NOMEM, "out of memory");
	else
		rc = write_gzip(body.p, body.len, out, err);
	for (size_t i = 0; i < p.nstrs; i++)
		free(p.strs[i]);
	free(p.strs);
	free(p.maps);
	free(p.funcs);
	free(p.locs);
	sp_hashmap_release(&p.str_map, free_str_ent);
	sp_hashmap_release(&p.loc_map, free_loc_ent);
	sp_u64map_release(&p.map_ids, NULL);
	sp_u64map_release(&p.func_ids, NULL);
	sp_buf_release(&p.table);
	sp_buf_release(&p.clean);
	sp_buf_release(&body);
	return rc;
}

/* SPDX-License-Identifier: MIT
 * What a snapshot and a tail share: reading a stream record by record,
 * unwinding the stacks of raw segments, and cutting batches of records
 * and the stacks of their samples (internal.h, struct sp_batch).
 *
 * A raw segment goes through an unwinding stage that writes to a memfd,
 * read back after each batch: the stage is the one sp-unwind runs, so a
 * stack read from a raw stream is the stack sp-unwind would write, and
 * the rest of this file sees one kind of stream.  A memfd needs nothing
 * new of the stream writer, and it is emptied after every batch.
 *
 * Following a file (a tail), the bytes read are framed here into whole
 * records, which go to a second memfd that the stream reader reads: the
 * reader ends cleanly at the end of what is complete, and reads on from
 * there at the next poll, so a record half written is never an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/internal.h"
#include "stream/sniff.h"
#include "stream/vocab.h"
#include "unwind/stage.h"
#include "util/alloc.h"
#include "util/hashmap.h"
#include "util/strbuf.h"

/* A batch ends after this many samples, or this many bytes of records. */
#define BATCH_STACKS 4096
#define BATCH_BYTES (8u << 20)
/* A tail takes at most this much of the file per poll. */
#define FOLLOW_CHUNK (8u << 20)
#define DEFAULT_MAX_DEPTH 512

/* A stack as a segment defines it: frames at offsets in the arenas. */
struct stackdef {
	size_t raw, nraw;	/* in raw: the frames as decoded, marker included */
	size_t frm, nfrm;	/* in frm: the public view */
	int end;
};

#define NO_DEF SIZE_MAX

struct sp_source {
	const void *profile;
	char *name;
	struct sp_error err;

	/* The input. */
	int fd;
	bool follow;
	int feedfd;		/* following: the whole records read so far */
	uint64_t feedlen;	/* bytes written to feedfd */
	struct sp_buf part;	/* following: bytes read, not yet a whole record */
	bool unframed;		/* following: bytes that are no record go on as they are */
	struct sp_reader *r;
	struct sp_record rec;
	bool pending;		/* rec is read but not yet taken */
	bool failed;		/* the reader failed: the next call says so */
	bool at_end, done;

	/* Raw segments: the stage and the memfd it writes to. */
	struct sp_unwind_stage *stage;
	struct sp_writer *sw;
	int stagefd;
	bool seg_raw;
	const char *module_dir;

	/* The profile. */
	struct sp_module *modules;
	size_t nmodules, allocmodules;
	struct sp_runtime *runtimes;
	size_t nruntimes, allocruntimes;
	struct sp_metadata meta;
	char *arch;
	bool have_meta, have_summary, seg_started, zone_ok, have_stage;
	enum sp_stage first_stage;	/* the first segment's, as read */
	struct sp_summary summary;
	uint32_t segment;

	/* The segment. */
	struct sp_u64map modmap;	/* module id -> profile index + 1 */
	struct sp_u64map stackmap;	/* stack (symstack) id -> def + 1 */
	struct sp_u64map framemap;	/* symbolized frame id -> symframes index + 1 */
	struct stackdef *defs;
	size_t ndefs, allocdefs;
	struct sp_stack_frame *raw;
	size_t nraw, allocraw;
	struct sp_frame *frm;
	size_t nfrm, allocfrm;
	struct sp_stack_frame *symframes;
	size_t nsymframes, allocsymframes;

	/* The batch. */
	struct sp_batch batch;
	struct sp_buf bytes;
	msgpack_zone zone;
	struct sp_record *records;
	size_t allocrecords;
	struct sp_stack *stacks;
	size_t allocstacks;
	size_t *stackdef;	/* per stack of the batch: its def, or NO_DEF */
	size_t allocstackdef;
	size_t nfed;
	uint64_t stage_bytes;	/* what the stage had written when the batch began */
};

static int nomem(struct sp_source *s)
{
	return sp_error_set(&s->err, SP_ERR_NOMEM, "out of memory");
}

static void reset_segment(struct sp_source *s)
{
	sp_u64map_release(&s->modmap, NULL);
	sp_u64map_release(&s->stackmap, NULL);
	sp_u64map_release(&s->framemap, NULL);
	s->ndefs = s->nraw = s->nfrm = s->nsymframes = 0;
}

struct sp_source *sp_source_new(const void *profile, int fd, const char *name, bool follow,
				const char *module_dir, struct sp_error *err)
{
	struct sp_source *s = calloc(1, sizeof(*s));
	if (!s) {
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->profile = profile;
	s->fd = fd;
	s->follow = follow;
	s->feedfd = s->stagefd = -1;
	s->module_dir = module_dir;
	sp_buf_init(&s->part);
	sp_buf_init(&s->bytes);
	sp_u64map_init(&s->modmap);
	sp_u64map_init(&s->stackmap);
	sp_u64map_init(&s->framemap);
	s->name = strdup(name);
	s->zone_ok = msgpack_zone_init(&s->zone, 16384);
	if (follow)
		s->feedfd = memfd_create("sp-tail", MFD_CLOEXEC);
	if (!s->name || !s->zone_ok || (follow && s->feedfd < 0)) {
		sp_error_errno(err, "cannot set up reading '%s'", name);
		sp_source_free(s);
		return NULL;
	}
	s->r = sp_reader_new(follow ? s->feedfd : fd, name);
	if (!s->r) {
		sp_error_set(err, SP_ERR_NOMEM, "out of memory");
		sp_source_free(s);
		return NULL;
	}
	return s;
}

void sp_source_free(struct sp_source *s)
{
	if (!s)
		return;
	sp_reader_free(s->r);
	sp_unwind_stage_free(s->stage);
	sp_writer_close(s->sw);
	if (s->stagefd >= 0)
		close(s->stagefd);
	if (s->feedfd >= 0)
		close(s->feedfd);
	for (size_t i = 0; i < s->nmodules; i++) {
		free((char *)s->modules[i].path);
		free((unsigned char *)s->modules[i].build_id);
	}
	free(s->modules);
	free(s->runtimes);
	free(s->arch);
	reset_segment(s);
	free(s->defs);
	free(s->raw);
	free(s->frm);
	free(s->symframes);
	sp_buf_release(&s->part);
	sp_buf_release(&s->bytes);
	if (s->zone_ok)
		msgpack_zone_destroy(&s->zone);
	free(s->records);
	free(s->stacks);
	free(s->stackdef);
	free(s->name);
	free(s);
}

const struct sp_error *sp_source_error(const struct sp_source *s)
{
	return &s->err;
}

/* ---- reading ------------------------------------------------------------ */

/* What an input that holds no stream looks like, in the tools' words. */
static void refuse(struct sp_source *s)
{
	unsigned char head[16];
	size_t n = sp_reader_head(s->r, head, sizeof(head));
	const char *what = NULL;
	/*
	 * Nothing decompressed (a compressed input corrupt from its start), or
	 * a frame inside the decompressed bytes: the reader's own message.
	 */
	enum sp_sniff kind = sp_sniff(head, n);
	if ((kind == SP_SNIFF_EMPTY || kind == SP_SNIFF_ZSTD) && sp_reader_failed(s->r)) {
		sp_error_set(&s->err, SP_ERR_BAD_INPUT, "cannot read '%s': %s", s->name,
			     sp_reader_error(s->r));
		return;
	}
	switch (kind) {
	case SP_SNIFF_PERF_DATA:
		what = "a perf.data file (from perf record), not a stackpulse stream: "
		       "record with sp-capture instead";
		break;
	case SP_SNIFF_GZIP: case SP_SNIFF_XZ: case SP_SNIFF_BZIP2:
		what = "compressed, not with zstd, so not read: uncompress it first";
		break;
	case SP_SNIFF_ELF:
		what = "an ELF file (a program or library), not a stackpulse stream";
		break;
	case SP_SNIFF_JSON:
		what = "JSON text, not a stackpulse stream (sp-cat --from-json makes one)";
		break;
	case SP_SNIFF_TEXT:
		what = "text, not a stackpulse stream";
		break;
	case SP_SNIFF_EMPTY:
		sp_error_set(&s->err, SP_ERR_BAD_INPUT, "'%s' is empty, not a stackpulse stream",
			     s->name);
		return;
	case SP_SNIFF_STREAM:
		sp_error_set(&s->err, SP_ERR_BAD_INPUT, "'%s' begins as a stackpulse stream "
			     "does, but not one record of it can be read: %s", s->name,
			     sp_reader_error(s->r));
		return;
	default: {
		char hex[8 * 3 + 1] = "";
		size_t len = 0;
		for (size_t i = 0; i < n && i < 8; i++)
			len += (size_t)snprintf(hex + len, sizeof(hex) - len, "%s%02x",
						i ? " " : "", head[i]);
		sp_error_set(&s->err, SP_ERR_BAD_INPUT, "'%s' is not a stackpulse stream: it "
			     "begins with bytes of no kind known here (%s%s), where a stream "
			     "begins with its header record", s->name, hex, n > 8 ? " ..." : "");
		return;
	}
	}
	sp_error_set(&s->err, SP_ERR_BAD_INPUT, "'%s' is %s", s->name, what);
}

/* The reader failed: its message, or what the input is when it read nothing. */
static void reader_failed(struct sp_source *s)
{
	s->failed = true;
	if (sp_reader_records(s->r) == 0) {
		refuse(s);
		return;
	}
	/* The reader's own code (bad input, a limit, a read error), its message. */
	struct sp_error e = { 0 };
	sp_error_set(&e, SP_ERR_BAD_INPUT, "'%s': %s", s->name, sp_reader_error(s->r));
	s->err = e;
}

/*
 * Following: moves what the file holds now to feedfd, whole records
 * only.  Returns 1 when more is left in the file than was taken, 0, -1.
 */
static int follow_feed(struct sp_source *s)
{
	size_t taken = 0;
	bool more = false;
	for (;;) {
		if (sp_buf_grow(&s->part, 65536) < 0)
			return nomem(s);
		ssize_t n = read(s->fd, s->part.p + s->part.len, s->part.cap - s->part.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sp_error_errno(&s->err, "cannot read '%s'", s->name);
		if (n == 0)
			break;
		s->part.len += (size_t)n;
		taken += (size_t)n;
		if (taken >= FOLLOW_CHUNK) {
			more = true;
			break;
		}
	}
	/* The whole records at the front; a malformed one goes on for the reader to name. */
	size_t off = 0;
	while (off < s->part.len && !s->unframed) {
		const char *why;
		long len = sp_msgpack_frame((const unsigned char *)s->part.p + off,
					    s->part.len - off, SP_MAX_DEPTH, &why);
		if (len == 0 && s->part.len - off < SP_DEFAULT_MAX_RECORD)
			break;
		if (len <= 0)
			s->unframed = true;
		else
			off += (size_t)len;
	}
	if (s->unframed)
		off = s->part.len;
	if (off) {
		if (pwrite(s->feedfd, s->part.p, off, (off_t)s->feedlen) != (ssize_t)off)
			return sp_error_errno(&s->err, "cannot keep what was read of '%s'", s->name);
		s->feedlen += off;
		memmove(s->part.p, s->part.p + off, s->part.len - off);
		s->part.len -= off;
	}
	return more;
}

/* Following: the reader has read all of feedfd; start it over empty. */
static void follow_drain(struct sp_source *s)
{
	if (s->feedlen && ftruncate(s->feedfd, 0) == 0 && lseek(s->feedfd, 0, SEEK_SET) == 0)
		s->feedlen = 0;
}

int sp_source_check(struct sp_source *s)
{
	enum sp_read_status rs = sp_reader_next(s->r, &s->rec);
	if (rs == SP_READ_RECORD) {
		s->pending = true;
		return 0;
	}
	if (rs == SP_READ_END) {
		sp_error_set(&s->err, SP_ERR_BAD_INPUT, "'%s' is empty, not a stackpulse stream",
			     s->name);
		return -1;
	}
	reader_failed(s);
	s->failed = false;
	return -1;
}

/* ---- raw segments --------------------------------------------------------- */

static int stage_begin(struct sp_source *s)
{
	if (s->stage)
		return 0;
	s->stagefd = memfd_create("sp-unwound", MFD_CLOEXEC);
	if (s->stagefd < 0)
		return sp_error_errno(&s->err, "cannot unwind '%s'", s->name);
	s->sw = sp_writer_new(s->stagefd, "unwound");
	static char *no_args[] = { NULL };
	struct sp_unwind_stage_options o = {
		.uo = { .max_depth = DEFAULT_MAX_DEPTH, .fp_fallback = true,
			.module_dirs = s->module_dir ? &s->module_dir : NULL,
			.nmodule_dirs = s->module_dir ? 1 : 0 },
		.tool = "libstackpulse", .argc = 0, .argv = no_args,
	};
	if (!s->sw || !(s->stage = sp_unwind_stage_new(&o, s->sw)))
		return nomem(s);
	return 0;
}

/* Appends what the stage wrote since the last batch to the batch's bytes. */
static int stage_collect(struct sp_source *s)
{
	if (!s->sw)
		return 0;
	if (sp_writer_flush(s->sw) < 0)
		return sp_error_set(&s->err, SP_ERR_ERRNO, "cannot unwind '%s': %s", s->name,
				    sp_writer_error(s->sw));
	off_t len = lseek(s->stagefd, 0, SEEK_CUR);
	if (len <= 0)
		return 0;
	if (sp_buf_grow(&s->bytes, (size_t)len) < 0)
		return nomem(s);
	if (pread(s->stagefd, s->bytes.p + s->bytes.len, (size_t)len, 0) != len)
		return sp_error_errno(&s->err, "cannot unwind '%s'", s->name);
	s->bytes.len += (size_t)len;
	if (ftruncate(s->stagefd, 0) < 0 || lseek(s->stagefd, 0, SEEK_SET) < 0)
		return sp_error_errno(&s->err, "cannot unwind '%s'", s->name);
	return 0;
}

/* Takes one record read: through the stage in a raw segment, else as it is. */
static int take(struct sp_source *s, const struct sp_record *rec)
{
	if (rec->type == SP_R_HEADER) {
		const struct sp_header *h = sp_reader_header(s->r);
		s->seg_raw = h->stage == SP_STAGE_RAW;
		if (!s->have_stage)
			s->first_stage = h->stage;
		s->have_stage = true;
		if (s->seg_raw && stage_begin(s) < 0)
			return -1;
	}
	if (!s->seg_raw) {
		sp_buf_add(&s->bytes, rec->raw, rec->raw_len);
		return s->bytes.oom ? nomem(s) : 0;
	}
	struct sp_error e = { 0 };
	if (sp_unwind_stage_record(s->stage, rec, sp_reader_header(s->r), &e) < 0) {
		sp_error_set(&s->err, e.code, "'%s': byte offset %llu, record %llu: %s", s->name,
			     (unsigned long long)rec->offset, (unsigned long long)rec->index,
			     sp_error_message(&e));
		return -1;
	}
	return 0;
}

/* ---- the profile: modules, stacks, metadata, summary ---------------------- */

static const char *module_kind(const msgpack_object *m, const char *path)
{
	static const char *const kinds[] = { "elf", "vdso", "kernel", "jit", "anon" };
	const char *k;
	size_t n;
	if (sp_map_str(m, "kind", &k, &n))
		for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
			if (strlen(kinds[i]) == n && memcmp(kinds[i], k, n) == 0)
				return kinds[i];
	return path[0] == '/' ? "elf" : "anon";
}

static int add_module(struct sp_source *s, const msgpack_object *m)
{
	uint64_t id = 0;
	const char *p = "";
	size_t n = 0;
	const void *bid = NULL;
	size_t blen = 0;
	sp_map_u64(m, "id", &id);
	sp_map_str(m, "path", &p, &n);
	if (!sp_map_bin(m, "build_id", &bid, &blen))
		blen = 0;
	if (SP_ALLOC_GROW(s->modules, s->nmodules + 1, s->allocmodules) < 0)
		return nomem(s);
	char *path = strndup(p, n);
	unsigned char *b = blen ? malloc(blen) : NULL;
	if (!path || (blen && !b) ||
	    sp_u64map_put(&s->modmap, id, (void *)(uintptr_t)(s->nmodules + 1)) < 0) {
		free(path);
		free(b);
		return nomem(s);
	}
	if (b)
		memcpy(b, bid, blen);
	s->modules[s->nmodules++] = (struct sp_module){ path, b, blen, module_kind(m, path) };
	return 0;
}

static uint32_t module_index(struct sp_source *s, uint64_t id)
{
	uintptr_t v = id == SP_NO_MODULE ? 0 : (uintptr_t)sp_u64map_get(&s->modmap, id);
	return v ? (uint32_t)(v - 1) : SP_MODULE_NONE;
}

/* The public flags of a stack frame's: its kind and whether it returns. */
static uint32_t public_flags(uint64_t f)
{
	uint32_t kind = (uint32_t)(f & SP_FRAME_KIND_MASK);
	return (kind == 3 ? 0 : kind) | (uint32_t)(f & SP_FRAME_RETADDR);
}

/* Defines stack id from the n frames at s->raw + off (already appended). */
static int define_stack(struct sp_source *s, uint64_t id, size_t off, size_t n)
{
	if (SP_ALLOC_GROW(s->defs, s->ndefs + 1, s->allocdefs) < 0 ||
	    SP_ALLOC_GROW(s->frm, s->nfrm + n, s->allocfrm) < 0)
		return nomem(s);
	struct stackdef *d = &s->defs[s->ndefs];
	*d = (struct stackdef){ off, n, s->nfrm, 0, SP_END_COMPLETE };
	for (size_t i = 0; i < n; i++) {
		const struct sp_stack_frame *f = &s->raw[off + i];
		if (f->flags & SP_FRAME_MARKER) {
			d->end = f->rel > INT32_MAX ? INT32_MAX : (int)f->rel;
			continue;
		}
		s->frm[s->nfrm++] = (struct sp_frame){ f->addr, f->rel, module_index(s, f->module),
						       public_flags(f->flags) };
	}
	d->nfrm = s->nfrm - d->frm;
	if (sp_u64map_put(&s->stackmap, id, (void *)(uintptr_t)(s->ndefs + 1)) < 0)
		return nomem(s);
	s->ndefs++;
	return 0;
}

static int add_stack(struct sp_source *s, const msgpack_object *m)
{
	uint64_t id = 0;
	sp_map_u64(m, "id", &id);
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	size_t n = fr ? fr->size : 0, off = s->nraw;
	if (SP_ALLOC_GROW(s->raw, s->nraw + n, s->allocraw) < 0)
		return nomem(s);
	for (size_t i = 0; i < n; i++)
		if (sp_stack_frame_decode(&fr->ptr[i], &s->raw[s->nraw]) == 0)
			s->nraw++;
	return define_stack(s, id, off, s->nraw - off);
}

/* A symbolized frame record, kept as the stack frame it names. */
static int add_symframe(struct sp_source *s, const msgpack_object *m)
{
	uint64_t id = 0, flags = 0;
	struct sp_stack_frame f = { 0, SP_NO_MODULE, 0, 0 };
	sp_map_u64(m, "id", &id);
	sp_map_u64(m, "addr", &f.addr);
	sp_map_u64(m, "flags", &flags);
	f.rel = f.addr;
	if (sp_map_u64(m, "module", &f.module))
		sp_map_u64(m, "rel", &f.rel);
	f.flags = (flags & SP_SYM_KERNEL ? SP_FRAME_KERNEL : 0) |
		  (flags & SP_SYM_JIT ? SP_FRAME_JIT : 0) | (flags & (SP_FRAME_RETADDR | SP_FRAME_MARKER));
	if (flags & SP_SYM_MARKER) {
		/* A marker says its reason only in its name, "[REASON]". */
		const char *name;
		size_t n;
		f.rel = SP_END_TRUNCATED;
		if (sp_map_str(m, "name", &name, &n) && n > 2)
			for (int e = 1; e < SP_END_COUNT; e++) {
				const char *en = sp_unwind_end_name((enum sp_unwind_end)e);
				if (strlen(en) == n - 2 && memcmp(en, name + 1, n - 2) == 0)
					f.rel = (uint64_t)e;
			}
	}
	if (SP_ALLOC_GROW(s->symframes, s->nsymframes + 1, s->allocsymframes) < 0 ||
	    sp_u64map_put(&s->framemap, id, (void *)(uintptr_t)(s->nsymframes + 1)) < 0)
		return nomem(s);
	s->symframes[s->nsymframes++] = f;
	return 0;
}

static int add_symstack(struct sp_source *s, const msgpack_object *m)
{
	uint64_t id = 0;
	sp_map_u64(m, "id", &id);
	const msgpack_object_array *fr = sp_map_array(m, "frames");
	size_t n = fr ? fr->size : 0, off = s->nraw;
	if (SP_ALLOC_GROW(s->raw, s->nraw + n, s->allocraw) < 0)
		return nomem(s);
	for (size_t i = 0; i < n; i++) {
		uintptr_t v = fr->ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
			(uintptr_t)sp_u64map_get(&s->framemap, fr->ptr[i].via.u64) : 0;
		if (v)
			s->raw[s->nraw++] = s->symframes[v - 1];
	}
	return define_stack(s, id, off, s->nraw - off);
}

static void take_metadata(struct sp_source *s, const msgpack_object *m)
{
	const msgpack_object *host = sp_map_get(m, "host");
	const msgpack_object *opts = sp_map_get(m, "options");
	const char *a = "";
	size_t n = 0;
	if (host && host->type == MSGPACK_OBJECT_MAP)
		sp_map_str(host, "arch", &a, &n);
	s->arch = strndup(a, n);
	s->meta.stage = sp_stage_name(s->first_stage);
	s->meta.arch = s->arch ? s->arch : "";
	s->meta.has_start_timestamp = sp_map_u64(m, "start_timestamp_us",
						 &s->meta.start_timestamp_us);
	s->meta.has_sample_interval = sp_map_u64(m, "sample_interval_us",
						 &s->meta.sample_interval_us);
	if (!opts || opts->type != MSGPACK_OBJECT_MAP ||
	    !sp_map_u64(opts, "frequency", &s->meta.frequency))
		s->meta.frequency = 0;
	s->have_meta = true;
}

static void take_summary(struct sp_source *s, const msgpack_object *m)
{
	struct sp_summary *u = &s->summary;
	int64_t status;
	memset(u, 0, sizeof(*u));
	sp_map_u64(m, "sample_events", &u->sample_events);
	sp_map_u64(m, "samples", &u->samples);
	sp_map_u64(m, "lost_events", &u->lost_events);
	sp_map_u64(m, "lost_samples", &u->lost_samples);
	sp_map_u64(m, "empty_stack_samples", &u->empty_stack_samples);
	sp_map_u64(m, "truncated_frame_markers", &u->truncated_frame_markers);
	sp_map_u64(m, "ignored_user_callchain_frames", &u->ignored_user_callchain_frames);
	sp_map_u64(m, "skipped_no_pid", &u->skipped_no_pid);
	sp_map_u64(m, "skipped_no_tid", &u->skipped_no_tid);
	sp_map_u64(m, "skipped_no_time", &u->skipped_no_time);
	sp_map_u64(m, "skipped_no_frames", &u->skipped_no_frames);
	sp_map_u64(m, "throttle_events", &u->throttle_events);
	sp_map_u64(m, "processes", &u->processes);
	sp_map_u64(m, "threads", &u->threads);
	sp_map_u64(m, "duration_ns", &u->duration_ns);
	sp_map_bool(m, "kernel_enabled", &u->kernel_enabled);
	if (sp_map_i64(m, "command_status", &status)) {
		u->has_command_status = true;
		u->command_status = (int)status;
	}
	/* error_stats in the order of the error kinds, each named: counted by name. */
	const msgpack_object_array *es = sp_map_array(m, "error_stats");
	for (uint32_t i = 0; es && i < es->size; i++) {
		uint64_t count = 0;
		if (es->ptr[i].type != MSGPACK_OBJECT_MAP || !sp_map_u64(&es->ptr[i], "count", &count))
			continue;
		const msgpack_object *kind = sp_map_get(&es->ptr[i], "kind");
		for (unsigned k = 0; k < SP_E_COUNT && k < SP_ERROR_KINDS_MAX; k++)
			if (kind && sp_obj_str_eq(kind, sp_errkind_name((enum sp_error_kind)k)))
				u->errors[k] = count;
	}
	u->nerrors = SP_E_COUNT < SP_ERROR_KINDS_MAX ? SP_E_COUNT : SP_ERROR_KINDS_MAX;
	s->have_summary = true;
}

static int add_runtime(struct sp_source *s, const msgpack_object *m)
{
	uint64_t pid = 0;
	bool cpython = false;
	sp_map_u64(m, "pid", &pid);
	sp_map_bool(m, "cpython", &cpython);
	if (SP_ALLOC_GROW(s->runtimes, s->nruntimes + 1, s->allocruntimes) < 0)
		return nomem(s);
	s->runtimes[s->nruntimes++] = (struct sp_runtime){ (uint32_t)pid, cpython };
	return 0;
}

/* ---- batches -------------------------------------------------------------- */

static int add_sample(struct sp_source *s, const msgpack_object *m)
{
	struct sp_batch *b = &s->batch;
	struct sp_sample_head h;
	uint64_t cpu = 0;
	sp_sample_head_read(m, &h);
	sp_map_u64(m, "cpu", &cpu);
	if (SP_ALLOC_GROW(s->stacks, b->nstacks + 1, s->allocstacks) < 0 ||
	    SP_ALLOC_GROW(s->stackdef, b->nstacks + 1, s->allocstackdef) < 0)
		return nomem(s);
	uintptr_t v = h.stack == UINT64_MAX ? 0 : (uintptr_t)sp_u64map_get(&s->stackmap, h.stack);
	s->stackdef[b->nstacks] = v ? v - 1 : NO_DEF;
	s->stacks[b->nstacks++] = (struct sp_stack){
		.profile = s->profile, .segment = s->segment, .id = h.stack,
		.info = { (uint32_t)h.pid, (uint32_t)h.tid, (uint32_t)cpu, h.time, h.period },
		/* A sample without frames had nothing to unwind. */
		.end = SP_END_NO_USER_STACK,
	};
	return 0;
}

/* One record of the batch's bytes: kept, and learnt from. */
static int parse_record(struct sp_source *s, const char *raw, size_t len)
{
	struct sp_batch *b = &s->batch;
	msgpack_object *m = msgpack_zone_malloc(&s->zone, sizeof(*m));
	size_t off = 0;
	if (!m || msgpack_unpack(raw, len, &off, &s->zone, m) < 0)
		return nomem(s);
	const msgpack_object *t = sp_map_get(m, "t");
	struct sp_record rec = { .map = m, .raw = raw, .raw_len = len, .type = SP_R_UNKNOWN };
	if (t && t->type == MSGPACK_OBJECT_STR) {
		rec.type_name = t->via.str.ptr;
		rec.type_len = t->via.str.size;
		rec.type = sp_rtype_from_name(rec.type_name, rec.type_len);
	}
	int rc = 0;
	switch (rec.type) {
	case SP_R_HEADER:
		if (s->seg_started) {
			s->segment++;
			reset_segment(s);
		}
		s->seg_started = true;
		b->segment = s->segment;
		if (!s->have_meta)
			take_metadata(s, m);
		break;
	case SP_R_MODULE: rc = add_module(s, m); break;
	case SP_R_STACK: return add_stack(s, m);
	case SP_R_FRAME: rc = add_symframe(s, m); break;
	case SP_R_SYMSTACK: rc = add_symstack(s, m); break;
	case SP_R_SAMPLE: rc = add_sample(s, m); break;
	case SP_R_RUNTIME: rc = add_runtime(s, m); break;
	case SP_R_SUMMARY: take_summary(s, m); break;
	default: break;
	}
	if (rc < 0)
		return -1;
	if (SP_ALLOC_GROW(s->records, b->nrecords + 1, s->allocrecords) < 0)
		return nomem(s);
	s->records[b->nrecords++] = rec;
	return 0;
}

/* Cuts the batch's bytes into records, then points its stacks at their frames. */
static int finish_batch(struct sp_source *s)
{
	struct sp_batch *b = &s->batch;
	for (size_t off = 0; off < s->bytes.len;) {
		const char *why;
		long len = sp_msgpack_frame((const unsigned char *)s->bytes.p + off,
					    s->bytes.len - off, SP_MAX_DEPTH, &why);
		if (len <= 0)
			return sp_error_set(&s->err, SP_ERR_BAD_INPUT, "'%s': a record read "
					    "cannot be decoded again", s->name);
		if (parse_record(s, s->bytes.p + off, (size_t)len) < 0)
			return -1;
		off += (size_t)len;
	}
	for (size_t i = 0; i < b->nstacks; i++) {
		struct sp_stack *st = &s->stacks[i];
		st->modules = s->modules;
		st->nmodules = s->nmodules;
		if (s->stackdef[i] == NO_DEF)
			continue;
		const struct stackdef *d = &s->defs[s->stackdef[i]];
		/* A segment whose stacks have no frames at all has no arenas. */
		st->raw = s->raw ? s->raw + d->raw : NULL;
		st->nraw = d->nraw;
		st->frames = s->frm ? s->frm + d->frm : NULL;
		st->nframes = d->nfrm;
		st->end = d->end;
	}
	b->records = s->records;
	b->stacks = s->stacks;
	return 0;
}

static void batch_reset(struct sp_source *s)
{
	msgpack_zone_clear(&s->zone);
	sp_buf_reset(&s->bytes);
	s->batch = (struct sp_batch){ .profile = s->profile, .segment = s->segment };
	s->nfed = 0;
	s->stage_bytes = s->sw ? sp_writer_bytes(s->sw) : 0;
}

/* The batch's bytes so far, the stage's output included. */
static size_t batch_bytes(const struct sp_source *s)
{
	size_t n = s->bytes.len;
	if (s->sw)
		n += (size_t)(sp_writer_bytes(s->sw) - s->stage_bytes);
	return n;
}

/* Reads records into the batch until it is full, a segment ends, or the input does. */
static int fill_batch(struct sp_source *s)
{
	size_t samples = 0;
	for (;;) {
		if (!s->pending) {
			enum sp_read_status rs = sp_reader_next(s->r, &s->rec);
			if (rs == SP_READ_END) {
				s->at_end = true;
				return 0;
			}
			if (rs == SP_READ_ERROR) {
				reader_failed(s);
				return 0;
			}
			s->pending = true;
		}
		if (s->rec.type == SP_R_HEADER && s->nfed) {
			s->batch.has_more = true;
			return 0;
		}
		if (samples >= BATCH_STACKS || batch_bytes(s) >= BATCH_BYTES) {
			s->batch.has_more = true;
			return 0;
		}
		if (take(s, &s->rec) < 0)
			return -1;
		s->pending = false;
		s->nfed++;
		samples += s->rec.type == SP_R_SAMPLE;
		if (s->rec.type == SP_R_SUMMARY && s->follow) {
			s->done = true;
			return 0;
		}
	}
}

int sp_source_next(struct sp_source *s, const struct sp_batch **b)
{
	*b = NULL;
	if (s->failed)
		return -1;
	if (s->done || (s->at_end && !s->follow))
		return 0;
	batch_reset(s);
	int more = 0;
	if (s->follow) {
		if (s->at_end) {
			follow_drain(s);
			s->at_end = false;
		}
		if ((more = follow_feed(s)) < 0)
			return -1;
	}
	if (fill_batch(s) < 0 || stage_collect(s) < 0 || finish_batch(s) < 0) {
		s->failed = true;
		return -1;
	}
	s->batch.has_more |= more > 0;
	*b = &s->batch;
	/* Records before an error are a batch of their own; the error comes next. */
	if (s->failed && !s->batch.nrecords)
		return -1;
	if (!s->follow && s->at_end && !s->batch.nrecords)
		return 0;
	if (s->done && !s->batch.nrecords)
		return 0;
	return 1;
}

int sp_source_metadata(struct sp_source *s, struct sp_metadata *m)
{
	if (!s->have_meta) {
		const struct sp_header *h = sp_reader_header(s->r);
		if (!h)
			return sp_error_set(&s->err, SP_ERR_STATE, "'%s': no header read yet",
					    s->name);
		s->first_stage = h->stage;
		take_metadata(s, h->map);
	}
	*m = s->meta;
	return 0;
}

int sp_source_summary(struct sp_source *s, struct sp_summary *sum)
{
	if (!s->have_summary)
		return sp_error_set(&s->err, SP_ERR_STATE, "'%s': no summary record read%s",
				    s->name, s->at_end || s->failed ?
				    " (the stream was cut short)" : " yet");
	*sum = s->summary;
	return 0;
}

size_t sp_source_runtimes(struct sp_source *s, const struct sp_runtime **r)
{
	*r = s->runtimes;
	return s->nruntimes;
}

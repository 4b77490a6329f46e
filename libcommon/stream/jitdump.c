/* SPDX-License-Identifier: MIT
 * The jitdump reader (jitdump.h): whole records out of a file fed in
 * pieces, in either byte order, each record's sizes checked against its
 * fields before anything is read from it.
 */
#include <byteswap.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stream/jitdump.h"
#include "stream/record.h"
#include "util/alloc.h"
#include "util/error.h"

/* The fixed part of each record after the 16-byte record header. */
#define REC_HEAD 16
#define LOAD_FIXED (REC_HEAD + 4 + 4 + 8 * 4)
#define MOVE_FIXED (REC_HEAD + 4 + 4 + 8 * 5)
#define DEBUG_FIXED (REC_HEAD + 8 * 2)
#define DEBUG_ENTRY_FIXED (8 + 4 + 4)
#define UNWIND_FIXED (REC_HEAD + 8 * 3)

struct sp_jitdump {
	struct sp_error err;
	int failed;
	int have_header;
	struct sp_jitdump_header hdr;
	unsigned char *buf;	/* the bytes fed and not yet consumed */
	size_t len, alloc;
	size_t pos;		/* consumed bytes at the start of buf */
	uint64_t base;		/* the file offset of buf[0] */
	struct sp_jit_line *lines;
	size_t alloc_lines;
};

struct sp_jitdump *sp_jitdump_new(void)
{
	return calloc(1, sizeof(struct sp_jitdump));
}

void sp_jitdump_free(struct sp_jitdump *j)
{
	if (!j)
		return;
	free(j->buf);
	free(j->lines);
	free(j);
}

const struct sp_jitdump_header *sp_jitdump_header(const struct sp_jitdump *j)
{
	return j->have_header ? &j->hdr : NULL;
}

uint64_t sp_jitdump_fed(const struct sp_jitdump *j)
{
	return j->base + j->len;
}

uint64_t sp_jitdump_offset(const struct sp_jitdump *j)
{
	return j->base + j->pos;
}

const char *sp_jitdump_error(const struct sp_jitdump *j)
{
	return sp_error_message(&j->err);
}

int sp_jitdump_failed(const struct sp_jitdump *j)
{
	return j->failed;
}

static int fail(struct sp_jitdump *j, uint64_t off, const char *what, uint64_t val)
{
	j->failed = 1;
	return sp_error_set(&j->err, SP_ERR_BAD_INPUT,
			    "jitdump: %s (%llu) at offset %llu", what,
			    (unsigned long long)val, (unsigned long long)off);
}

int sp_jitdump_feed(struct sp_jitdump *j, const void *data, size_t n)
{
	if (j->failed)
		return -1;
	if (!n)
		return 0;
	/* Drop what was consumed, so the buffer holds at most one record and what follows. */
	if (j->pos) {
		memmove(j->buf, j->buf + j->pos, j->len - j->pos);
		j->len -= j->pos;
		j->base += j->pos;
		j->pos = 0;
	}
	if (SP_ALLOC_GROW(j->buf, j->len + n, j->alloc) < 0) {
		j->failed = 1;
		return sp_error_set(&j->err, SP_ERR_NOMEM, "jitdump: out of memory");
	}
	memcpy(j->buf + j->len, data, n);
	j->len += n;
	return 0;
}

static uint32_t get32(const struct sp_jitdump *j, const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return j->hdr.swapped ? bswap_32(v) : v;
}

static uint64_t get64(const struct sp_jitdump *j, const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return j->hdr.swapped ? bswap_64(v) : v;
}

/* Reads the header; 1 done, 0 need more, -1 bad. */
static int read_header(struct sp_jitdump *j)
{
	const unsigned char *p = j->buf + j->pos;
	size_t avail = j->len - j->pos;
	uint32_t magic;

	if (avail < 12)
		return 0;
	memcpy(&magic, p, 4);
	if (magic == SP_JITDUMP_MAGIC)
		j->hdr.swapped = 0;
	else if (magic == bswap_32(SP_JITDUMP_MAGIC))
		j->hdr.swapped = 1;
	else
		return fail(j, 0, "not a jitdump file: bad magic", magic);
	j->hdr.version = get32(j, p + 4);
	j->hdr.total_size = get32(j, p + 8);
	if (j->hdr.version != 1)
		return fail(j, 4, "unsupported version", j->hdr.version);
	if (j->hdr.total_size < SP_JITDUMP_HEADER_SIZE ||
	    j->hdr.total_size > SP_JITDUMP_MAX_RECORD)
		return fail(j, 8, "bad header size", j->hdr.total_size);
	if (avail < j->hdr.total_size)
		return 0;
	j->hdr.elf_mach = get32(j, p + 12);
	/* p + 16 is padding. */
	j->hdr.pid = get32(j, p + 20);
	j->hdr.timestamp = get64(j, p + 24);
	j->hdr.flags = get64(j, p + 32);
	j->pos += j->hdr.total_size;
	j->have_header = 1;
	return 1;
}

static int read_load(struct sp_jitdump *j, const unsigned char *p, struct sp_jit_rec *r)
{
	r->u.load.pid = get32(j, p + 16);
	r->u.load.tid = get32(j, p + 20);
	r->u.load.vma = get64(j, p + 24);
	r->u.load.code_addr = get64(j, p + 32);
	r->u.load.code_size = get64(j, p + 40);
	r->u.load.code_index = get64(j, p + 48);
	/* The name, NUL-terminated, then the code, which ends the record. */
	if (r->u.load.code_size >= r->size - LOAD_FIXED)
		return fail(j, r->off + 40, "code size beyond its record", r->u.load.code_size);
	size_t room = r->size - LOAD_FIXED - r->u.load.code_size;
	const char *name = (const char *)p + LOAD_FIXED;
	const char *nul = memchr(name, '\0', room);
	if (!nul)
		return fail(j, r->off + LOAD_FIXED, "code-load name without its end, record size", r->size);
	r->u.load.name = name;
	r->u.load.namelen = (size_t)(nul - name);
	r->u.load.code = p + r->size - r->u.load.code_size;
	return 1;
}

static int read_move(struct sp_jitdump *j, const unsigned char *p, struct sp_jit_rec *r)
{
	r->u.move.pid = get32(j, p + 16);
	r->u.move.tid = get32(j, p + 20);
	r->u.move.vma = get64(j, p + 24);
	r->u.move.old_code_addr = get64(j, p + 32);
	r->u.move.new_code_addr = get64(j, p + 40);
	r->u.move.code_size = get64(j, p + 48);
	r->u.move.code_index = get64(j, p + 56);
	return 1;
}

static int read_debug(struct sp_jitdump *j, const unsigned char *p, struct sp_jit_rec *r)
{
	uint64_t nr = get64(j, p + 24);
	size_t at = DEBUG_FIXED;
	const char *prev = NULL;
	size_t prevlen = 0;

	r->u.debug.code_addr = get64(j, p + 16);
	/* Each entry takes at least 17 bytes: no count beyond that is believed. */
	if (nr > (r->size - DEBUG_FIXED) / (DEBUG_ENTRY_FIXED + 1))
		return fail(j, r->off + 24, "debug-info entries beyond their record", nr);
	if (SP_ALLOC_GROW(j->lines, nr, j->alloc_lines) < 0) {
		j->failed = 1;
		return sp_error_set(&j->err, SP_ERR_NOMEM, "jitdump: out of memory");
	}
	for (uint64_t i = 0; i < nr; i++) {
		struct sp_jit_line *l = &j->lines[i];
		if (r->size - at < DEBUG_ENTRY_FIXED + 1)
			return fail(j, r->off + at, "debug-info entry beyond its record, entry", i);
		l->addr = get64(j, p + at);
		l->line = get32(j, p + at + 8);
		l->discrim = get32(j, p + at + 12);
		at += DEBUG_ENTRY_FIXED;
		const char *name = (const char *)p + at;
		const char *nul = memchr(name, '\0', r->size - at);
		if (!nul)
			return fail(j, r->off + at, "debug-info file name without its end, entry", i);
		size_t n = (size_t)(nul - name);
		at += n + 1;
		/* "\xff" repeats the previous entry's file (perf's jitdump.c). */
		if (n == 1 && (unsigned char)name[0] == 0xff && prev) {
			name = prev;
			n = prevlen;
		}
		l->file = name;
		l->filelen = n;
		prev = name;
		prevlen = n;
	}
	r->u.debug.lines = j->lines;
	r->u.debug.nlines = (size_t)nr;
	return 1;
}

static int read_unwind(struct sp_jitdump *j, const unsigned char *p, struct sp_jit_rec *r)
{
	r->u.unwind.unwinding_size = get64(j, p + 16);
	r->u.unwind.eh_frame_hdr_size = get64(j, p + 24);
	r->u.unwind.mapped_size = get64(j, p + 32);
	r->u.unwind.data = p + UNWIND_FIXED;
	if (r->u.unwind.unwinding_size > r->size - UNWIND_FIXED)
		return fail(j, r->off + 16, "unwinding data beyond its record", r->u.unwind.unwinding_size);
	if (r->u.unwind.eh_frame_hdr_size > r->u.unwind.unwinding_size)
		return fail(j, r->off + 24, "eh_frame_hdr beyond its unwinding data", r->u.unwind.eh_frame_hdr_size);
	return 1;
}

/* The least size of a record of each known id. */
static uint32_t min_size(uint32_t id)
{
	switch (id) {
	case SP_JIT_CODE_LOAD: return LOAD_FIXED + 1;
	case SP_JIT_CODE_MOVE: return MOVE_FIXED;
	case SP_JIT_CODE_DEBUG_INFO: return DEBUG_FIXED;
	case SP_JIT_CODE_UNWINDING_INFO: return UNWIND_FIXED;
	default: return REC_HEAD;
	}
}

int sp_jitdump_next(struct sp_jitdump *j, struct sp_jit_rec *r)
{
	if (j->failed)
		return -1;
	if (!j->have_header) {
		int ret = read_header(j);
		if (ret <= 0)
			return ret;
	}
	const unsigned char *p = j->buf + j->pos;
	size_t avail = j->len - j->pos;
	if (avail < REC_HEAD)
		return 0;
	memset(r, 0, sizeof(*r));
	r->off = sp_jitdump_offset(j);
	r->id = get32(j, p);
	r->size = get32(j, p + 4);
	r->timestamp = get64(j, p + 8);
	if (r->size < min_size(r->id) || r->size > SP_JITDUMP_MAX_RECORD)
		return fail(j, r->off + 4, "bad record size", r->size);
	if (avail < r->size)
		return 0;

	int ret;
	switch (r->id) {
	case SP_JIT_CODE_LOAD: ret = read_load(j, p, r); break;
	case SP_JIT_CODE_MOVE: ret = read_move(j, p, r); break;
	case SP_JIT_CODE_DEBUG_INFO: ret = read_debug(j, p, r); break;
	case SP_JIT_CODE_UNWINDING_INFO: ret = read_unwind(j, p, r); break;
	case SP_JIT_CODE_CLOSE: ret = 1; break;
	default: ret = 1; break;
	}
	if (ret < 0)
		return -1;
	r->type = r->id <= SP_JIT_CODE_UNWINDING_INFO ? (enum sp_jit_type)r->id : SP_JIT_UNKNOWN;
	j->pos += r->size;
	return 1;
}

bool sp_jitdump_piece_read(const msgpack_object *rec, struct sp_jitdump_piece *pc)
{
	return sp_map_u64(rec, "pid", &pc->pid) && pc->pid <= UINT32_MAX &&
	       sp_map_str(rec, "path", &pc->path, &pc->pathlen) &&
	       !memchr(pc->path, '\0', pc->pathlen) && sp_map_u64(rec, "off", &pc->off) &&
	       sp_map_bin(rec, "data", &pc->data, &pc->len);
}

static struct sp_jitdump_file *file_get(struct sp_jitdump_files *fs, const char *path,
					size_t pl)
{
	for (size_t i = 0; i < fs->n; i++)
		if (strlen(fs->v[i].path) == pl && memcmp(fs->v[i].path, path, pl) == 0)
			return &fs->v[i];
	if (SP_ALLOC_GROW(fs->v, fs->n + 1, fs->alloc) < 0)
		return NULL;
	struct sp_jitdump_file f = { strndup(path, pl), sp_jitdump_new() };
	if (!f.path || !f.rd) {
		free(f.path);
		sp_jitdump_free(f.rd);
		return NULL;
	}
	fs->v[fs->n] = f;
	return &fs->v[fs->n++];
}

int sp_jitdump_files_feed(struct sp_jitdump_files *fs, const struct sp_jitdump_piece *pc,
			  struct sp_jitdump_file **f)
{
	if (!(*f = file_get(fs, pc->path, pc->pathlen)))
		return -1;
	struct sp_jitdump *j = (*f)->rd;
	uint64_t fed = sp_jitdump_fed(j);
	if (j->failed || pc->off + pc->len <= fed)
		return 0;	/* stopped, or bytes seen before (a piece repeated) */
	if (pc->off > fed) {
		j->failed = 1;
		sp_error_set(&j->err, SP_ERR_BAD_INPUT,
			     "bytes %llu to %llu are missing from the stream",
			     (unsigned long long)fed, (unsigned long long)pc->off);
		return 2;
	}
	size_t skip = (size_t)(fed - pc->off);
	if (sp_jitdump_feed(j, (const char *)pc->data + skip, pc->len - skip) < 0)
		return -1;
	return 1;
}

void sp_jitdump_files_release(struct sp_jitdump_files *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free(fs->v[i].path);
		sp_jitdump_free(fs->v[i].rd);
	}
	free(fs->v);
	*fs = (struct sp_jitdump_files){ 0 };
}

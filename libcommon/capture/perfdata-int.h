/* SPDX-License-Identifier: MIT
 * The files of the perf.data import (perfdata.h), and nothing else:
 *
 *   perfdata.c          the input, the loop over records, the handle
 *   perfdata-header.c   attributes, feature sections, the file header,
 *                       and the stream's header made from them
 *   perfdata-records.c  each kernel record put in a ring's layout and
 *                       given to the capture layer's converters
 *   perfdata-compressed.c  perf record -z's COMPRESSED records, decompressed
 *
 * Functions returning int return 0 or -1 with the message in im->err.
 */
#ifndef SP_CAPTURE_PERFDATA_INT_H
#define SP_CAPTURE_PERFDATA_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "capture/internal.h"
#include "capture/perfdata.h"

#define PERF_MAGIC2 0x32454c4946524550ull	/* "PERFILE2" read on a little-endian host */
#define PERF_MAGIC1 0x454c494646524550ull	/* "PERFFILE": perf's first format */
#define FILE_HEADER_SIZE 104u
#define PIPE_HEADER_SIZE 16u
#define ATTR_SIZE_VER0 64u
#define ATTR_SIZE_VER3 96u		/* sample_regs_user, sample_stack_user, clockid */
#define MAX_FEATURE_SIZE (64u << 20)

/* perf's own record types, after the kernel's. */
enum {
	HEADER_ATTR = 64, HEADER_EVENT_TYPE = 65, HEADER_TRACING_DATA = 66,
	HEADER_BUILD_ID = 67, FINISHED_ROUND = 68, ID_INDEX = 69, AUXTRACE_INFO = 70,
	AUXTRACE = 71, AUXTRACE_ERROR = 72, THREAD_MAP = 73, CPU_MAP = 74,
	STAT_CONFIG = 75, STAT = 76, STAT_ROUND = 77, EVENT_UPDATE = 78, TIME_CONV = 79,
	HEADER_FEATURE = 80, COMPRESSED = 81, FINISHED_INIT = 82,
};

/* The feature sections read (perf's HEADER_* bits). */
enum {
	FEAT_BUILD_ID = 2, FEAT_HOSTNAME = 3, FEAT_OSRELEASE = 4, FEAT_VERSION = 5,
	FEAT_ARCH = 6, FEAT_CMDLINE = 11, FEAT_EVENT_DESC = 12, FEAT_CLOCKID = 23,
	FEAT_COMPRESSED = 27, FEAT_CLOCK_DATA = 29,
};

/* What an attribute tells of its records' layout. */
struct attr {
	uint32_t type;
	uint64_t config, period_or_freq, sample_type, read_format, flags;
	uint64_t branch_sample_type, regs_user;
	uint32_t stack_user;
	int32_t clockid;
	char name[208];
};

#define ATTR_FLAG(a, bit) (((a)->flags >> (bit)) & 1)
#define A_EXCLUDE_KERNEL 5
#define A_FREQ 10
#define A_SAMPLE_ID_ALL 18
#define A_EXCLUDE_CALLCHAIN_KERNEL 21
#define A_USE_CLOCKID 25

struct bid {
	char *path;
	int len;
	unsigned char id[20];
};

struct sp_perf_import {
	int fd;
	struct sp_writer *w;
	const char *tool;
	int argc;
	char **argv;
	struct sp_capture *r;
	struct sp_error err;

	/* The input, read through a buffer; off is the offset of buf[pos]. */
	unsigned char *buf;
	size_t len, pos;
	uint64_t off;
	bool pipe;
	uint64_t data_end;		/* file mode: the end of the data section */

	struct attr attrs[SP_MAX_EVENTS];
	size_t nattrs;
	struct sp_u64map ids;		/* a perf event id -> its attribute's index + 1 */

	char *hostname, *osrelease, *arch, *version;
	char **cmdline;
	size_t ncmdline;
	bool have_clock_data, compressed_feature;
	uint32_t comp_type;		/* the COMPRESSED feature's type (1: zstd), 0 unknown */
	uint64_t clock_wall, clock_ref;
	struct bid *bids;
	size_t nbids, allocbids;

	bool header_written;
	uint64_t round_max, prev_round_max, first_time, last_time;
	struct sp_perf_import_stats st;

	unsigned char *rec;		/* the record read */
	unsigned char *out;		/* it, in the capture layer's layout */

	/* perf record -z: the decompressor and what it made that is not yet taken. */
	struct sp_zin *zin;
	unsigned char *zout;
	size_t zlen;
};

/* Bounded readers of a record or a feature section. */
struct cur {
	const unsigned char *p, *end;
	bool bad;
};

static inline uint64_t cur_u64(struct cur *c)
{
	uint64_t v = 0;
	if (c->bad || (size_t)(c->end - c->p) < 8) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static inline uint32_t cur_u32(struct cur *c)
{
	uint32_t v = 0;
	if (c->bad || (size_t)(c->end - c->p) < 4) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static inline const unsigned char *cur_skip(struct cur *c, uint64_t n)
{
	const unsigned char *at = c->p;
	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return at;
}

static inline bool sp_pd_attr_dwarf(const struct attr *a)
{
	return a->sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
}

/* perfdata.c: exactly n bytes at offset off of a seekable input; what names them in messages. */
int sp_pd_read_at(struct sp_perf_import *im, void *dst, size_t n, uint64_t off,
		  const char *what);
/*
 * perfdata.c: the record of size bytes in im->rec, read in the record at
 * offset at (itself, or the COMPRESSED record it came in): 0, or -1.
 */
int sp_pd_take_record(struct sp_perf_import *im, uint64_t at, size_t size);

/* perfdata-header.c */

/* An attribute of size bytes (perf's own size of its struct), added to im->attrs. */
int sp_pd_take_attr(struct sp_perf_import *im, const unsigned char *p, size_t size);
/* Notes that event id belongs to attribute ai. */
void sp_pd_note_id(struct sp_perf_import *im, uint64_t id, size_t ai);
/* The attribute of an event id, its index in *ai; the first when the id is unknown. */
const struct attr *sp_pd_attr_of(const struct sp_perf_import *im, uint64_t id, size_t *ai);
/* A build-id record (of the build-id section, or PERF_RECORD_HEADER_BUILD_ID). */
void sp_pd_take_build_id(struct sp_perf_import *im, const unsigned char *p, size_t size,
			 uint16_t misc);
/* The build-id perf listed for a path, or NULL. */
const struct bid *sp_pd_find_bid(const struct sp_perf_import *im, const char *path);
/* Feature section feat (perf's HEADER_* bit) of n bytes. */
int sp_pd_take_feature(struct sp_perf_import *im, int feat, const unsigned char *p, size_t n);
/* File mode: the header whose first 16 bytes are h8, attributes and features; seeks to the data. */
int sp_pd_read_file_header(struct sp_perf_import *im, const unsigned char *h8);
/* Makes im->r, the recorder that converts and orders, once the attributes are known. */
int sp_pd_make_recorder(struct sp_perf_import *im);
/* Writes the stream's header, from perf's. */
int sp_pd_write_header(struct sp_perf_import *im);

/* perfdata-records.c: one kernel record of size bytes, converted and queued. */
void sp_pd_convert_other(struct sp_perf_import *im, const unsigned char *rec, size_t size);
bool sp_pd_convert_sample(struct sp_perf_import *im, const unsigned char *rec, size_t size,
			  uint16_t misc);

/*
 * perfdata-compressed.c: the COMPRESSED record of size bytes in im->rec,
 * at offset at, decompressed and each record complete in it taken.
 */
int sp_pd_take_compressed(struct sp_perf_import *im, uint64_t at, size_t size);
/* At the end of the data: -1 when a decompressed record was left incomplete. */
int sp_pd_compressed_end(struct sp_perf_import *im);
void sp_pd_compressed_free(struct sp_perf_import *im);

#endif

/*
 * perf.data import (perfdata.h).  The layout read here is perf's
 * (tools/perf/Documentation/perf.data-file-format.txt): in file mode a
 * header, the attributes with their ids, the data section and the
 * feature sections after it; in pipe mode a 16-byte header, then
 * records only, the attributes and features among them as
 * PERF_RECORD_HEADER_* records.
 *
 * Each kernel record is rewritten into the layout the capture layer's
 * converters read from a ring (ring.c, sample.c): a sample with TID,
 * TIME, CPU, PERIOD, the callchain, the user registers of internal.h's
 * mask and the stack copy; any other record with the sample_id trailer
 * TID, TIME, CPU.  They go through the capture queue and its writers,
 * so an imported stream says what a captured one says, in the same
 * words.  Samples without a callchain or a stack copy carry their one
 * address as a callchain of one entry (a uchain, or a kstack for a
 * kernel address).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture/internal.h"
#include "capture/perfdata.h"
#include "stream/header.h"
#include "stream/records.h"
#include "util/alloc.h"
#include "util/buildid.h"

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
	uint64_t clock_wall, clock_ref;
	struct bid *bids;
	size_t nbids, allocbids;

	bool header_written;
	uint64_t round_max, prev_round_max, first_time, last_time;
	struct sp_perf_import_stats st;

	unsigned char *rec;		/* the record read */
	unsigned char *out;		/* it, in the capture layer's layout */
};

/* Names of perf's records, for messages. */
static const char *record_name(uint32_t type)
{
	static const char *const kernel[] = {
		[PERF_RECORD_MMAP] = "MMAP", [PERF_RECORD_LOST] = "LOST",
		[PERF_RECORD_COMM] = "COMM", [PERF_RECORD_EXIT] = "EXIT",
		[PERF_RECORD_THROTTLE] = "THROTTLE", [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
		[PERF_RECORD_FORK] = "FORK", [PERF_RECORD_READ] = "READ",
		[PERF_RECORD_SAMPLE] = "SAMPLE", [PERF_RECORD_MMAP2] = "MMAP2",
		[PERF_RECORD_AUX] = "AUX", [PERF_RECORD_ITRACE_START] = "ITRACE_START",
		[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES", [PERF_RECORD_SWITCH] = "SWITCH",
		[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
		[PERF_RECORD_NAMESPACES] = "NAMESPACES", [PERF_RECORD_KSYMBOL] = "KSYMBOL",
		[PERF_RECORD_BPF_EVENT] = "BPF_EVENT", [PERF_RECORD_CGROUP] = "CGROUP",
		[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
	};
	static const char *const user[] = {
		"HEADER_ATTR", "HEADER_EVENT_TYPE", "HEADER_TRACING_DATA",
		"HEADER_BUILD_ID", "FINISHED_ROUND", "ID_INDEX", "AUXTRACE_INFO",
		"AUXTRACE", "AUXTRACE_ERROR", "THREAD_MAP", "CPU_MAP", "STAT_CONFIG",
		"STAT", "STAT_ROUND", "EVENT_UPDATE", "TIME_CONV", "HEADER_FEATURE",
		"COMPRESSED", "FINISHED_INIT",
	};
	if (type < sizeof(kernel) / sizeof(kernel[0]) && kernel[type])
		return kernel[type];
	if (type >= 64 && type - 64 < sizeof(user) / sizeof(user[0]))
		return user[type - 64];
	return "unknown";
}

/* Reading the input. */

/* Up to n bytes into dst (NULL: skipped): the number read, short at the end; -1 on error. */
static ssize_t in_read(struct sp_perf_import *im, void *dst, size_t n)
{
	size_t done = 0;
	while (done < n) {
		if (im->pos == im->len) {
			ssize_t k;
			do
				k = read(im->fd, im->buf, 65536);
			while (k < 0 && errno == EINTR);
			if (k < 0)
				return sp_error_errno(&im->err, "cannot read the perf.data");
			if (k == 0)
				break;
			im->len = (size_t)k;
			im->pos = 0;
		}
		size_t take = im->len - im->pos;
		if (take > n - done)
			take = n - done;
		if (dst)
			memcpy((unsigned char *)dst + done, im->buf + im->pos, take);
		im->pos += take;
		im->off += take;
		done += take;
	}
	return (ssize_t)done;
}

/* Exactly n bytes at offset off of a seekable file: 0, or -1 with a message. */
static int read_at(struct sp_perf_import *im, void *dst, size_t n, uint64_t off,
		   const char *what)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = pread(im->fd, (unsigned char *)dst + done, n - done,
				  (off_t)(off + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sp_error_errno(&im->err, "cannot read the perf.data's %s", what);
		if (k == 0)
			return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
					    "perf.data is cut short: its %s (%zu bytes at offset %llu) "
					    "ends past the end of the file", what, n,
					    (unsigned long long)off);
		done += (size_t)k;
	}
	return 0;
}

/* Bounded readers of a record or a feature section. */
struct cur {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t cur_u64(struct cur *c)
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

static uint32_t cur_u32(struct cur *c)
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

static const unsigned char *cur_skip(struct cur *c, uint64_t n)
{
	const unsigned char *at = c->p;
	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return at;
}

/* perf's string: a u32 length (with its padding), then the bytes, NUL-padded. */
static char *cur_string(struct cur *c)
{
	uint32_t n = cur_u32(c);
	const unsigned char *s = cur_skip(c, n);
	if (!s)
		return NULL;
	return strndup((const char *)s, n);
}

/* Attributes, ids and names. */

static const char *event_name(const struct attr *a, const char *desc)
{
	static const char *const sw[] = {
		"cpu-clock", "task-clock", "page-faults", "context-switches",
		"cpu-migrations", "minor-faults", "major-faults",
	};
	static const char *const hw[] = {
		"cycles", "instructions", "cache-references", "cache-misses",
		"branches", "branch-misses", "bus-cycles",
	};
	if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(sw[0]))
		return sw[a->config];
	if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(hw[0]))
		return hw[a->config];
	return desc;
}

/* Reads one attribute of size bytes (perf's own size of its struct). */
static int take_attr(struct sp_perf_import *im, const unsigned char *p, size_t size)
{
	if (im->nattrs == SP_MAX_EVENTS)
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data has more than %d events: sp-import reads at most %d",
				    SP_MAX_EVENTS, SP_MAX_EVENTS);
	uint32_t asize;
	memcpy(&asize, p + 4, 4);
	/* perf writes attributes of its own size; the fields read are at fixed places. */
	if (size < ATTR_SIZE_VER0 || (asize && asize < ATTR_SIZE_VER0))
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data's event attributes are %zu bytes (attr size %u): "
				    "an attribute layout sp-import does not know",
				    size, asize);
	unsigned char a0[ATTR_SIZE_VER3 + 16] = { 0 };
	memcpy(a0, p, size < sizeof(a0) ? size : sizeof(a0));
	struct attr *a = &im->attrs[im->nattrs];
	memset(a, 0, sizeof(*a));
	memcpy(&a->type, a0, 4);
	memcpy(&a->config, a0 + 8, 8);
	memcpy(&a->period_or_freq, a0 + 16, 8);
	memcpy(&a->sample_type, a0 + 24, 8);
	memcpy(&a->read_format, a0 + 32, 8);
	memcpy(&a->flags, a0 + 40, 8);
	memcpy(&a->branch_sample_type, a0 + 72, 8);
	memcpy(&a->regs_user, a0 + 80, 8);
	memcpy(&a->stack_user, a0 + 88, 4);
	memcpy(&a->clockid, a0 + 92, 4);
	if (size < ATTR_SIZE_VER3 &&
	    (a->sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)))
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data's event attributes are %zu bytes, too short for "
				    "the user registers and stack copy its samples carry", size);
	snprintf(a->name, sizeof(a->name), "%s:0x%llx", a->type == PERF_TYPE_TRACEPOINT ?
		 "tracepoint" : "event", (unsigned long long)a->config);
	im->nattrs++;
	return 0;
}

static void note_id(struct sp_perf_import *im, uint64_t id, size_t ai)
{
	if (!sp_u64map_get(&im->ids, id))
		sp_u64map_put(&im->ids, id, (void *)(uintptr_t)(ai + 1));
}

/* The attribute of an event id; the first when unknown. */
static const struct attr *attr_of(const struct sp_perf_import *im, uint64_t id, size_t *ai)
{
	uintptr_t v = (uintptr_t)sp_u64map_get(&im->ids, id);
	*ai = v ? v - 1 : 0;
	return &im->attrs[*ai];
}

/* Features. */

static void add_bid(struct sp_perf_import *im, const char *path, const unsigned char *id,
		    int len)
{
	for (size_t i = 0; i < im->nbids; i++)
		if (strcmp(im->bids[i].path, path) == 0)
			return;
	if (SP_ALLOC_GROW(im->bids, im->nbids + 1, im->allocbids) < 0)
		return;
	struct bid *b = &im->bids[im->nbids];
	if (!(b->path = strdup(path)))
		return;
	b->len = len;
	memcpy(b->id, id, (size_t)len);
	im->nbids++;
}

/*
 * One build-id record (the build-id section holds a run of them): a
 * header, pid, the build-id in 24 bytes (with its size in the 21st when
 * misc says so, else 20), the file name.
 */
static void take_build_id(struct sp_perf_import *im, const unsigned char *p, size_t size,
			  uint16_t misc)
{
	if (size < 8 + 4 + 24 + 1)
		return;
	const unsigned char *id = p + 12;
	int len = misc & (1 << 15) ? id[20] : 20;
	if (len > 20)
		len = 20;
	/* A build-id of 20 bytes whose last are zero was shorter (perf pads). */
	while (!(misc & (1 << 15)) && len > 0 && id[len - 1] == 0)
		len--;
	char path[4096];
	size_t n = strnlen((const char *)p + 36, size - 36);
	if (n >= sizeof(path) || len == 0)
		return;
	memcpy(path, p + 36, n);
	path[n] = '\0';
	add_bid(im, path, id, len);
}

static const struct bid *find_bid(const struct sp_perf_import *im, const char *path)
{
	for (size_t i = 0; i < im->nbids; i++)
		if (strcmp(im->bids[i].path, path) == 0)
			return &im->bids[i];
	return NULL;
}

static int take_feature(struct sp_perf_import *im, int feat, const unsigned char *p, size_t n)
{
	struct cur c = { p, p + n, false };
	switch (feat) {
	case FEAT_HOSTNAME:
		free(im->hostname);
		im->hostname = cur_string(&c);
		break;
	case FEAT_OSRELEASE:
		free(im->osrelease);
		im->osrelease = cur_string(&c);
		break;
	case FEAT_VERSION:
		free(im->version);
		im->version = cur_string(&c);
		break;
	case FEAT_ARCH:
		free(im->arch);
		im->arch = cur_string(&c);
		break;
	case FEAT_CMDLINE: {
		uint32_t nr = cur_u32(&c);
		for (size_t i = 0; i < im->ncmdline; i++)
			free(im->cmdline[i]);
		free(im->cmdline);
		im->ncmdline = 0;
		im->cmdline = nr < 4096 ? calloc(nr ? nr : 1, sizeof(char *)) : NULL;
		for (uint32_t i = 0; im->cmdline && i < nr; i++) {
			char *s = cur_string(&c);
			if (!s)
				break;
			im->cmdline[im->ncmdline++] = s;
		}
		break;
	}
	case FEAT_EVENT_DESC: {
		uint32_t nr = cur_u32(&c), asz = cur_u32(&c);
		for (uint32_t i = 0; i < nr && !c.bad; i++) {
			cur_skip(&c, asz);
			uint32_t nids = cur_u32(&c);
			char *name = cur_string(&c);
			cur_skip(&c, (uint64_t)nids * 8);
			if (name && i < im->nattrs)
				snprintf(im->attrs[i].name, sizeof(im->attrs[i].name), "%s", name);
			free(name);
		}
		break;
	}
	case FEAT_BUILD_ID:
		while ((size_t)(c.end - c.p) >= 8) {
			struct perf_event_header h;
			memcpy(&h, c.p, 8);
			if (h.size < 8 || h.size > (size_t)(c.end - c.p))
				break;
			take_build_id(im, c.p, h.size, h.misc);
			c.p += h.size;
		}
		break;
	case FEAT_CLOCK_DATA: {
		uint32_t version = cur_u32(&c);
		cur_u32(&c);
		uint64_t wall = cur_u64(&c), ref = cur_u64(&c);
		if (!c.bad && version >= 1) {
			im->have_clock_data = true;
			im->clock_wall = wall;
			im->clock_ref = ref;
		}
		break;
	}
	case FEAT_COMPRESSED:
		im->compressed_feature = true;
		break;
	default:
		break;
	}
	return 0;
}

/* File mode: the header, attributes and feature sections, then the data's place. */
static int read_file_header(struct sp_perf_import *im, const unsigned char *h8)
{
	unsigned char h[FILE_HEADER_SIZE];
	memcpy(h, h8, 16);
	if (read_at(im, h + 16, sizeof(h) - 16, 16, "header") < 0)
		return -1;
	uint64_t attr_size, attrs_off, attrs_size, data_off, data_size;
	memcpy(&attr_size, h + 16, 8);
	memcpy(&attrs_off, h + 24, 8);
	memcpy(&attrs_size, h + 32, 8);
	memcpy(&data_off, h + 40, 8);
	memcpy(&data_size, h + 48, 8);
	if (attr_size < ATTR_SIZE_VER0 + 16 || attr_size > 4096 || attr_size % 8)
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data's attribute entries are %llu bytes: an attr "
				    "size sp-import does not know", (unsigned long long)attr_size);
	if (attrs_size % attr_size || attrs_size / attr_size == 0)
		return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				    "the perf.data's attribute section (%llu bytes at offset %llu) "
				    "holds no whole attribute of %llu bytes",
				    (unsigned long long)attrs_size, (unsigned long long)attrs_off,
				    (unsigned long long)attr_size);
	size_t nattr = attrs_size / attr_size;
	unsigned char *ab = malloc((size_t)attr_size);
	if (!ab)
		return sp_error_set(&im->err, SP_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < nattr; i++) {
		if (read_at(im, ab, attr_size, attrs_off + i * attr_size, "attribute section") < 0 ||
		    take_attr(im, ab, attr_size - 16) < 0) {
			free(ab);
			return -1;
		}
		uint64_t ids_off, ids_size;
		memcpy(&ids_off, ab + attr_size - 16, 8);
		memcpy(&ids_size, ab + attr_size - 8, 8);
		for (uint64_t k = 0; k < ids_size / 8 && k < 65536; k++) {
			uint64_t id;
			if (read_at(im, &id, 8, ids_off + k * 8, "event ids") < 0) {
				free(ab);
				return -1;
			}
			note_id(im, id, i);
		}
	}
	free(ab);

	/* A recording perf did not finish has a data size of 0: read to the end. */
	off_t fsize = lseek(im->fd, 0, SEEK_END);
	bool unfinished = data_size == 0;
	im->data_end = unfinished ? (uint64_t)(fsize > 0 ? fsize : 0) : data_off + data_size;
	if (!unfinished) {
		uint64_t feat_off = data_off + data_size;
		int nth = 0;
		for (int bit = 0; bit < 256; bit++) {
			if (!(h[72 + bit / 8] >> (bit % 8) & 1))
				continue;
			/* A file cut short has lost its features; its records say so. */
			uint64_t sec[2];
			if (read_at(im, sec, 16, feat_off + (uint64_t)nth++ * 16,
				    "feature index") < 0)
				break;
			if (sec[1] > MAX_FEATURE_SIZE)
				continue;
			unsigned char *fb = malloc(sec[1] ? sec[1] : 1);
			if (!fb)
				return sp_error_set(&im->err, SP_ERR_NOMEM, "out of memory");
			if (read_at(im, fb, sec[1], sec[0], "feature section") < 0) {
				free(fb);
				continue;
			}
			take_feature(im, bit, fb, sec[1]);
			free(fb);
		}
	}
	if (lseek(im->fd, (off_t)data_off, SEEK_SET) < 0)
		return sp_error_errno(&im->err, "cannot seek to the perf.data's data section");
	im->off = data_off;
	im->len = im->pos = 0;
	return 0;
}

/* The stream's header, from perf's. */

static const char *clock_name(int32_t id)
{
	switch (id) {
	case 0: return "realtime";
	case 1: return "monotonic";
	case 4: return "monotonic_raw";
	case 7: return "boottime";
	case 11: return "tai";
	default: return "unknown";
	}
}

static bool attr_dwarf(const struct attr *a)
{
	return a->sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
}

static int write_header(struct sp_perf_import *im)
{
	struct sp_writer *w = im->w;
	const struct attr *a0 = &im->attrs[0];
	struct sp_mapw m, t, h, o;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "header");
	sp_mapw_str(&m, "format", SP_FORMAT_NAME);
	msgpack_packer *pk = sp_mapw_key(&m, "version");
	msgpack_pack_array(pk, 2);
	msgpack_pack_uint64(pk, SP_FORMAT_MAJOR);
	msgpack_pack_uint64(pk, SP_FORMAT_MINOR);
	sp_mapw_str(&m, "stage", "raw");
	/* perf recorded it: the first tool, with its version and arguments. */
	pk = sp_mapw_key(&m, "tools");
	msgpack_pack_array(pk, 2);
	sp_mapw_begin(&t, w);
	sp_mapw_str(&t, "name", "perf");
	sp_mapw_str(&t, "version", im->version ? im->version : "");
	pk = sp_mapw_key(&t, "args");
	msgpack_pack_array(pk, im->ncmdline > 1 ? im->ncmdline - 1 : 0);
	for (size_t i = 1; i < im->ncmdline; i++)
		sp_pack_str(pk, im->cmdline[i]);
	sp_mapw_end(&t);
	sp_pack_tool(w, im->tool, im->argc, im->argv);

	sp_mapw_key(&m, "host");
	sp_mapw_begin(&h, w);
	if (im->hostname)
		sp_mapw_str(&h, "hostname", im->hostname);
	if (im->osrelease)
		sp_mapw_str(&h, "kernel", im->osrelease);
	if (im->arch)
		sp_mapw_str(&h, "arch", im->arch);
	/* Without --clockid, perf's times are its own clock (the kernel's local_clock). */
	bool use_clockid = ATTR_FLAG(a0, A_USE_CLOCKID);
	sp_mapw_str(&h, "clock", use_clockid ? clock_name(a0->clockid) : "perf");
	if (use_clockid)
		sp_mapw_u64(&h, "clock_id", (uint64_t)(uint32_t)a0->clockid);
	if (im->have_clock_data) {
		sp_mapw_u64(&h, "anchor_clock_ns", im->clock_ref);
		sp_mapw_u64(&h, "anchor_realtime_ns", im->clock_wall);
	}
	sp_mapw_end(&h);

	bool dwarf = attr_dwarf(a0);
	sp_mapw_key(&m, "options");
	sp_mapw_begin(&o, w);
	if (ATTR_FLAG(a0, A_FREQ))
		sp_mapw_u64(&o, "frequency", a0->period_or_freq);
	else
		sp_mapw_u64(&o, "period", a0->period_or_freq);
	sp_mapw_u64(&o, "stack_size", dwarf ? a0->stack_user : 0);
	sp_mapw_str(&o, "call_graph", dwarf ? "dwarf" : "fp");
	sp_mapw_bool(&o, "kernel", im->r->kernel_enabled);
	sp_mapw_end(&o);

	pk = sp_mapw_key(&m, "events");
	msgpack_pack_array(pk, im->nattrs);
	for (size_t i = 0; i < im->nattrs; i++)
		sp_pack_str(pk, im->r->ev[i].name);
	sp_mapw_bool(&m, "kernel_enabled", im->r->kernel_enabled);
	sp_rec_pack_reg_names(&m);
	sp_mapw_end(&m);
	im->header_written = true;
	im->r->started = true;
	return sp_writer_failed(w) ? sp_error_set(&im->err, SP_ERR_ERRNO, "%s",
						 sp_writer_error(w)) : 0;
}

/*
 * Makes the recorder that converts and orders the records, once the
 * attributes are known: one event per attribute, named as the stream
 * names them.
 */
static int make_recorder(struct sp_perf_import *im)
{
	if (im->nattrs == 0)
		return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				    "the perf.data describes no event (no attribute before its records)");
	struct sp_capture_options o = { 0 };
	o.nevents = im->nattrs;
	o.frequency_given = true;	/* every sample carries its period */
	o.tool_name = im->tool;
	bool kernel = false, regs = false;
	for (size_t i = 0; i < im->nattrs; i++) {
		const struct attr *a = &im->attrs[i];
		struct sp_event *ev = &o.events[i];
		const char *name = event_name(a, a->name);
		snprintf(ev->name, sizeof(ev->name), "%s", name);
		/* perf's modifiers (":u", ":ppp") are not part of the name. */
		char *colon = a->type == PERF_TYPE_TRACEPOINT ? NULL : strrchr(ev->name, ':');
		if (colon && colon[1] && strspn(colon + 1, "ukhpPGHISDW") == strlen(colon + 1))
			*colon = '\0';
		ev->type = a->type;
		ev->config = a->config;
		ev->kind = a->type == PERF_TYPE_TRACEPOINT ? SP_EVENT_TRACEPOINT :
			   a->type == PERF_TYPE_HARDWARE ? SP_EVENT_HARDWARE :
			   a->type == PERF_TYPE_SOFTWARE && a->config <= 1 ? SP_EVENT_CLOCK :
			   SP_EVENT_SOFTWARE;
		if (!ATTR_FLAG(a, A_EXCLUDE_KERNEL) &&
		    (!(a->sample_type & PERF_SAMPLE_CALLCHAIN) ||
		     !ATTR_FLAG(a, A_EXCLUDE_CALLCHAIN_KERNEL)))
			kernel = true;
		regs |= attr_dwarf(a);
	}
#if defined(__x86_64__)
	const char *ours = "x86_64";
#else
	const char *ours = "aarch64";
#endif
	if (regs && im->arch && strcmp(im->arch, ours) != 0)
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data was recorded on %s with user registers "
				    "(--call-graph dwarf): this sp-import reads the registers of %s only",
				    im->arch, ours);
	/* A file cut short has lost its features: as perf does, it is taken to be ours. */
	if (!im->arch && !(im->arch = strdup(ours)))
		return sp_error_set(&im->err, SP_ERR_NOMEM, "out of memory");
	o.kernel = kernel;
	o.call_graph_fp = !attr_dwarf(&im->attrs[0]);
	im->r = sp_capture_new(&o, im->w);
	if (!im->r)
		return sp_error_set(&im->err, SP_ERR_NOMEM, "out of memory");
	im->r->kernel_enabled = kernel;
	im->r->imported = true;
	/* Samples in the capture layout carry the event's index + 1 as their id. */
	if (im->r->nev > 1)
		for (size_t i = 0; i < im->r->nev; i++)
			sp_u64map_put(&im->r->ids, i + 1, (void *)(uintptr_t)(i + 1));
	return 0;
}

/* Records. */

/* The sample_id trailer of a record other than a sample. */
struct trailer {
	uint32_t pid, tid, cpu;
	uint64_t time;
	size_t len;		/* its bytes at the record's end */
};

static struct trailer take_trailer(const struct sp_perf_import *im, const unsigned char *rec,
				   size_t size)
{
	struct trailer t = { 0 };
	const struct attr *a = &im->attrs[0];
	if (!ATTR_FLAG(a, A_SAMPLE_ID_ALL))
		return t;
	uint64_t st = a->sample_type;
	size_t n = 8 * (!!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) +
			!!(st & PERF_SAMPLE_ID) + !!(st & PERF_SAMPLE_STREAM_ID) +
			!!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER));
	if (size < sizeof(struct perf_event_header) + n)
		return t;
	struct cur c = { rec + size - n, rec + size, false };
	if (st & PERF_SAMPLE_TID) {
		t.pid = cur_u32(&c);
		t.tid = cur_u32(&c);
	}
	if (st & PERF_SAMPLE_TIME)
		t.time = cur_u64(&c);
	if (st & PERF_SAMPLE_ID)
		cur_u64(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		cur_u64(&c);
	if (st & PERF_SAMPLE_CPU)
		t.cpu = cur_u32(&c);
	t.len = n;
	return t;
}

static void note_time(struct sp_perf_import *im, uint64_t time)
{
	if (!time)
		return;
	if (!im->first_time || time < im->first_time)
		im->first_time = time;
	if (time > im->last_time)
		im->last_time = time;
	if (time > im->round_max)
		im->round_max = time;
}

/* Whether the recording was made on this host, under this kernel release. */
static bool this_kernel(const struct sp_perf_import *im)
{
	struct utsname u;
	char host[256];
	if (!im->hostname || !im->osrelease || uname(&u) < 0 ||
	    gethostname(host, sizeof(host)) < 0)
		return false;
	host[sizeof(host) - 1] = '\0';
	return strcmp(im->hostname, host) == 0 && strcmp(im->osrelease, u.release) == 0;
}

/* Whether path here is the file of an mmap2's maj, min and ino. */
static bool same_file(const char *path, const unsigned char *dev)
{
	uint32_t maj, min;
	uint64_t ino;
	struct stat sb;
	memcpy(&maj, dev, 4);
	memcpy(&min, dev + 4, 4);
	memcpy(&ino, dev + 8, 8);
	return path[0] == '/' && ino && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
	       sb.st_ino == ino && major(sb.st_dev) == maj && minor(sb.st_dev) == min;
}

/*
 * A record other than a sample, as a ring holds it: its body (mmap as
 * mmap2), then TID, TIME, CPU and, with several events, an id.
 */
static void convert_other(struct sp_perf_import *im, const unsigned char *rec, size_t size)
{
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	struct trailer t = take_trailer(im, rec, size);
	const unsigned char *body = rec + sizeof(h);
	size_t blen = size - sizeof(h) - t.len;
	unsigned char *o = im->out + sizeof(h);
	size_t olen;
	uint32_t pid;
	memcpy(&pid, body, blen >= 4 ? 4 : 0);
	if (blen < 4)
		pid = 0;

	if (h.type == PERF_RECORD_MMAP || h.type == PERF_RECORD_MMAP2) {
		/* The kernel's own mappings (pid -1) are kallsyms' business. */
		if (pid == UINT32_MAX || (h.misc & PERF_RECORD_MISC_MMAP_DATA))
			return;
		size_t fixed = h.type == PERF_RECORD_MMAP ? 32 : 64;
		if (blen <= fixed) {
			im->r->errors[SP_E_BAD_KERNEL_RECORD]++;
			return;
		}
		const char *path = (const char *)body + fixed;
		size_t pl = strnlen(path, blen - fixed);
		if (pl >= 4096)
			pl = 4095;
		memcpy(o, body, 32);	/* pid, tid, addr, len, pgoff */
		memset(o + 32, 0, 32);
		if (h.type == PERF_RECORD_MMAP2) {
			memcpy(o + 32, body + 32, 32);
		} else {
			uint32_t prot = PROT_READ | PROT_EXEC, flags = MAP_PRIVATE;
			memcpy(o + 56, &prot, 4);
			memcpy(o + 60, &flags, 4);
		}
		char pbuf[4096];
		memcpy(pbuf, path, pl);
		pbuf[pl] = '\0';
		const struct bid *b = NULL;
		if (!(h.type == PERF_RECORD_MMAP2 && (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)))
			b = find_bid(im, pbuf);
		/*
		 * A file perf did not list (it lists those its samples hit):
		 * the build-id of the file at that path here, only when it is
		 * the very inode of the device the recording mapped.
		 */
		struct bid local;
		if (!b && h.type == PERF_RECORD_MMAP2 &&
		    !(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && same_file(pbuf, body + 32)) {
			local.len = sp_build_id_path(pbuf, local.id);
			if (local.len > 0 && local.len <= 20)
				b = &local;
		}
		/*
		 * The vDSO: this process's own image when it has the build-id
		 * perf listed or, with none listed (pipe mode), when the
		 * recording was made on this host under this kernel release.
		 */
		if (strcmp(pbuf, "[vdso]") == 0 && (b || this_kernel(im))) {
			local.len = sp_rec_vdso_own(im->r, b ? b->id : NULL, b ? b->len : 0,
						    local.id);
			if (local.len > 0)
				b = &local;
		}
		/* The build-id form, also for an old mmap, which has no device. */
		if (b || h.type == PERF_RECORD_MMAP) {
			h.misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
			memset(o + 32, 0, 24);
			if (b) {
				o[32] = (unsigned char)b->len;
				memcpy(o + 36, b->id, (size_t)b->len);
			}
		}
		h.type = PERF_RECORD_MMAP2;
		memcpy(o + 64, pbuf, pl + 1);
		olen = 64 + ((pl + 1 + 7) & ~(size_t)7);
		memset(o + 64 + pl + 1, 0, olen - 64 - pl - 1);
	} else {
		memcpy(o, body, blen);
		olen = blen;
	}
	if (h.type == PERF_RECORD_COMM && blen >= 8) {
		/* perf's records of the processes already running: known from now on. */
		sp_rec_proc_get(im->r, (pid_t)pid, true);
	}
	uint32_t tr[6] = { t.pid, t.tid, 0, 0, t.cpu, 0 };
	memcpy(tr + 2, &t.time, 8);
	memcpy(o + olen, tr, 24);
	olen += 24;
	if (im->r->nev > 1) {
		memset(o + olen, 0, 8);
		olen += 8;
	}
	h.size = (uint16_t)(sizeof(h) + olen);
	memcpy(im->out, &h, sizeof(h));
	uint64_t time = t.time;
	if (h.type == PERF_RECORD_FORK || h.type == PERF_RECORD_EXIT ||
	    h.type == PERF_RECORD_THROTTLE || h.type == PERF_RECORD_UNTHROTTLE)
		memcpy(&time, body + (h.type == PERF_RECORD_FORK || h.type == PERF_RECORD_EXIT ?
				      16 : 0), blen >= 24 ? 8 : 0);
	note_time(im, time);
	sp_rec_handle_record(im->r, im->out, sizeof(h) + olen);
}

static bool bad_sample(struct sp_perf_import *im)
{
	im->r->errors[SP_E_BAD_KERNEL_RECORD]++;
	return false;
}

/*
 * A sample, as a ring holds it (sample.c): [id,] TID, TIME, CPU, PERIOD,
 * [CALLCHAIN,] and for --call-graph dwarf REGS_USER (internal.h's
 * registers) and STACK_USER.
 */
static bool convert_sample(struct sp_perf_import *im, const unsigned char *rec, size_t size,
			   uint16_t misc)
{
	struct cur c = { rec + sizeof(struct perf_event_header), rec + size, false };
	const struct attr *a = &im->attrs[0];
	size_t ai = 0;
	uint64_t st = a->sample_type, ip = 0, time = 0, period, nr = 0, abi = 0, ssize = 0, dyn = 0;
	uint32_t pid = 0, tid = 0, cpu = 0;
	const unsigned char *ips = NULL, *regs = NULL, *stack = NULL;
	bool have_ip = false;

	if (st & PERF_SAMPLE_IDENTIFIER)
		a = attr_of(im, cur_u64(&c), &ai);
	if (st & PERF_SAMPLE_IP) {
		ip = cur_u64(&c);
		have_ip = true;
	}
	if (st & PERF_SAMPLE_TID) {
		pid = cur_u32(&c);
		tid = cur_u32(&c);
	}
	if (st & PERF_SAMPLE_TIME)
		time = cur_u64(&c);
	if (st & PERF_SAMPLE_ADDR)
		cur_u64(&c);
	if (st & PERF_SAMPLE_ID) {
		uint64_t id = cur_u64(&c);
		if (!(st & PERF_SAMPLE_IDENTIFIER))
			a = attr_of(im, id, &ai);
	}
	/* The fields before the id are the same for every event (perf requires it). */
	st = a->sample_type;
	period = a->period_or_freq;
	if (st & PERF_SAMPLE_STREAM_ID)
		cur_u64(&c);
	if (st & PERF_SAMPLE_CPU) {
		cpu = cur_u32(&c);
		cur_u32(&c);
	}
	if (st & PERF_SAMPLE_PERIOD)
		period = cur_u64(&c);
	if (st & PERF_SAMPLE_READ) {
		uint64_t rf = a->read_format;
		uint64_t extra = 8 * (!!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
				      !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING));
		uint64_t each = 8 * (1 + !!(rf & PERF_FORMAT_ID) + !!(rf & (1u << 4)));
		if (rf & PERF_FORMAT_GROUP) {
			uint64_t n = cur_u64(&c);
			if (n > 65536)
				return bad_sample(im);
			cur_skip(&c, extra + n * each);
		} else {
			cur_skip(&c, extra + each);
		}
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		nr = cur_u64(&c);
		if (nr > 65536 || !(ips = cur_skip(&c, nr * 8)))
			return bad_sample(im);
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t rs = cur_u32(&c);
		cur_skip(&c, rs);
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t bnr = cur_u64(&c);
		if (a->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			cur_u64(&c);
		if (bnr > 65536)
			return bad_sample(im);
		cur_skip(&c, bnr * 24);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		abi = cur_u64(&c);
		if (abi)
			regs = cur_skip(&c, 8 * (uint64_t)__builtin_popcountll(a->regs_user));
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		ssize = cur_u64(&c);
		if (ssize) {
			stack = cur_skip(&c, ssize);
			dyn = cur_u64(&c);
			if (dyn > ssize)
				dyn = ssize;
		}
	}
	if (c.bad)
		return bad_sample(im);

	struct sp_capture *r = im->r;
	bool fp = !attr_dwarf(a);
	r->o.call_graph_fp = fp;
	unsigned char *o = im->out + sizeof(struct perf_event_header);
	size_t n = 0;
#define PUT(src, len) do { memcpy(o + n, (src), (len)); n += (len); } while (0)
	if (r->nev > 1) {
		uint64_t id = ai + 1;
		PUT(&id, 8);
	}
	uint32_t cpu2[2] = { cpu, 0 };
	PUT(&pid, 4);
	PUT(&tid, 4);
	PUT(&time, 8);
	PUT(cpu2, 8);
	PUT(&period, 8);
	/* A sample without a callchain: its one address, in its context. */
	uint64_t one[2];
	bool kernel_ip = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	if (!ips && have_ip && (fp || kernel_ip)) {
		one[0] = kernel_ip ? (uint64_t)PERF_CONTEXT_KERNEL : (uint64_t)PERF_CONTEXT_USER;
		one[1] = ip;
		ips = (const unsigned char *)one;
		nr = 2;
	}
	if (r->kernel_enabled || fp) {
		PUT(&nr, 8);
		if (nr)
			PUT(ips, nr * 8);
	}
	if (!fp) {
		/* The registers of internal.h's mask, picked out of perf's. */
		uint64_t want = SP_REC_REGS_MASK, have = a->regs_user;
		int sp_bit = -1, i = 0;
		for (int b = 0; b < 64; b++)
			if (want >> b & 1 && i++ == SP_REC_SP_INDEX)
				sp_bit = b;
		if (abi && (!regs || sp_bit < 0 || !(have >> sp_bit & 1)))
			abi = 0;
		PUT(&abi, 8);
		if (abi) {
			for (int b = 0; b < 64; b++) {
				if (!(want >> b & 1))
					continue;
				uint64_t v = 0;
				if (have >> b & 1)
					memcpy(&v, regs + 8 * __builtin_popcountll(have & ((1ull << b) - 1)), 8);
				PUT(&v, 8);
			}
		}
		/* The whole window, as the ring has it: its size says whether dyn filled it. */
		uint64_t osz = abi ? ssize : 0;
		PUT(&osz, 8);
		if (osz) {
			PUT(stack, dyn);
			memset(o + n, 0, ssize - dyn);
			n += ssize - dyn;
			PUT(&dyn, 8);
		}
	}
#undef PUT
	note_time(im, time);
	im->st.samples++;
	sp_rec_handle_sample(r, im->out, sizeof(struct perf_event_header) + n);
	return true;
}

/* The loop. */

static int ensure_recorder(struct sp_perf_import *im)
{
	return im->r ? 0 : make_recorder(im);
}

/*
 * Writes what is queued up to limit, the header first.  perf marks a
 * round when it has drained every buffer once: a record of a later round
 * may be older than the previous round's newest, never older than the
 * round before's, so a round's end writes what the round before saw.
 */
static int flush(struct sp_perf_import *im, uint64_t limit)
{
	if (ensure_recorder(im) < 0 || (!im->header_written && write_header(im) < 0))
		return -1;
	if (sp_rec_q_flush(im->r, limit) < 0 || sp_writer_flush(im->w) < 0)
		return sp_error_set(&im->err, SP_ERR_ERRNO, "%s", sp_capture_error(im->r));
	return 0;
}

/* Bytes perf wrote after a record (tracing data, AUX data): skipped. */
static int skip_payload(struct sp_perf_import *im, uint64_t n, uint64_t at, const char *what)
{
	ssize_t k = in_read(im, NULL, n);
	if (k < 0)
		return -1;
	if ((uint64_t)k < n)
		return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				    "perf.data is cut short at offset %llu: the %s of the record at "
				    "offset %llu ends past the end of the input",
				    (unsigned long long)im->off, what, (unsigned long long)at);
	return 0;
}

/* One record of size bytes, read at offset at: 0, or -1 (fatal). */
static int take_record(struct sp_perf_import *im, uint64_t at, size_t size)
{
	const unsigned char *rec = im->rec;
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	uint32_t u32;
	uint64_t u64;
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		if (ensure_recorder(im) < 0)
			return -1;
		convert_sample(im, rec, size, h.misc);
		return 0;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (ensure_recorder(im) < 0)
			return -1;
		convert_other(im, rec, size);
		return 0;
	case HEADER_ATTR: {
		if (im->r)
			return 0;	/* an event added after the records began is not read */
		if (size < 8 + ATTR_SIZE_VER0)
			return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
					    "the perf.data's attribute record at offset %llu is %zu bytes: "
					    "an attr layout sp-import does not know",
					    (unsigned long long)at, size);
		memcpy(&u32, rec + 12, 4);
		size_t asz = u32 ? u32 : ATTR_SIZE_VER0;
		if (asz > size - 8 || asz % 8)
			return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
					    "the perf.data's attribute record at offset %llu has an attr "
					    "size of %u: an attr layout sp-import does not know",
					    (unsigned long long)at, u32);
		if (take_attr(im, rec + 8, asz) < 0)
			return -1;
		for (size_t off = 8 + asz; off + 8 <= size; off += 8) {
			memcpy(&u64, rec + off, 8);
			note_id(im, u64, im->nattrs - 1);
		}
		return 0;
	}
	case HEADER_FEATURE:
		if (size >= 16) {
			memcpy(&u64, rec + 8, 8);
			if (u64 < 256)
				take_feature(im, (int)u64, rec + 16, size - 16);
		}
		return 0;
	case HEADER_BUILD_ID:
		take_build_id(im, rec, size, h.misc);
		return 0;
	case HEADER_TRACING_DATA:
		if (size < 12)
			break;
		memcpy(&u32, rec + 8, 4);
		return skip_payload(im, ((uint64_t)u32 + 7) & ~7ull, at, "tracing data");
	case AUXTRACE:
		if (size < 16)
			break;
		memcpy(&u64, rec + 8, 8);
		return skip_payload(im, u64, at, "AUX data");
	case COMPRESSED:
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data holds compressed records (PERF_RECORD_COMPRESSED, "
				    "perf record -z) at offset %llu: sp-import reads no zstd; "
				    "decompress them with 'perf inject -i FILE -o NEW'",
				    (unsigned long long)at);
	case FINISHED_ROUND:
		if (flush(im, im->prev_round_max) < 0)
			return -1;
		im->prev_round_max = im->round_max;
		return 0;
	default:
		break;
	}
	im->st.skipped++;
	return 0;
}

static int cut_short(struct sp_perf_import *im, uint64_t at, const struct perf_event_header *h,
		     uint64_t have)
{
	sp_error_set(&im->err, SP_ERR_BAD_INPUT,
		     "perf.data is cut short at offset %llu: its record %s (type %u) of %u bytes "
		     "there ends after %llu; every record before it was imported",
		     (unsigned long long)at, record_name(h->type), h->type, h->size,
		     (unsigned long long)have);
	return 1;
}

/* Every record of the data: 0, 1 at a fault in the input (the message says where), -1. */
static int read_records(struct sp_perf_import *im)
{
	for (;;) {
		uint64_t at = im->off;
		if (!im->pipe && at >= im->data_end)
			return 0;
		struct perf_event_header h;
		ssize_t k = in_read(im, &h, sizeof(h));
		if (k < 0)
			return -1;
		if (k == 0)
			return 0;
		if ((size_t)k < sizeof(h)) {
			sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				     "perf.data is cut short at offset %llu: a record's header there "
				     "has %zd of its 8 bytes; every record before it was imported",
				     (unsigned long long)at, k);
			return 1;
		}
		if (h.size < sizeof(h) || (!im->pipe && at + h.size > im->data_end)) {
			sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				     "perf.data is corrupt at offset %llu: a record %s (type %u) of "
				     "%u bytes %s; every record before it was imported",
				     (unsigned long long)at, record_name(h.type), h.type, h.size,
				     h.size < sizeof(h) ? "is shorter than its header" :
				     "runs past the end of the data section");
			return 1;
		}
		memcpy(im->rec, &h, sizeof(h));
		k = in_read(im, im->rec + sizeof(h), h.size - sizeof(h));
		if (k < 0)
			return -1;
		if ((size_t)k < h.size - sizeof(h))
			return cut_short(im, at, &h, (uint64_t)k + sizeof(h));
		im->st.records++;
		if (take_record(im, at, h.size) < 0)
			return im->err.code == SP_ERR_BAD_INPUT ? 1 : -1;
	}
}

struct sp_perf_import *sp_perf_import_new(int fd, struct sp_writer *w, const char *tool,
					  int argc, char **argv)
{
	struct sp_perf_import *im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	im->fd = fd;
	im->w = w;
	im->tool = tool;
	im->argc = argc;
	im->argv = argv;
	sp_u64map_init(&im->ids);
	im->buf = malloc(65536);
	im->rec = malloc(65536);
	/* A sample in the capture layout: at most its own size and the registers added. */
	im->out = malloc(2 * 65536);
	if (!im->buf || !im->rec || !im->out) {
		sp_perf_import_free(im);
		return NULL;
	}
	return im;
}

void sp_perf_import_free(struct sp_perf_import *im)
{
	if (!im)
		return;
	sp_capture_free(im->r);
	sp_u64map_release(&im->ids, NULL);
	free(im->hostname);
	free(im->osrelease);
	free(im->arch);
	free(im->version);
	for (size_t i = 0; i < im->ncmdline; i++)
		free(im->cmdline[i]);
	free(im->cmdline);
	for (size_t i = 0; i < im->nbids; i++)
		free(im->bids[i].path);
	free(im->bids);
	free(im->buf);
	free(im->rec);
	free(im->out);
	free(im);
}

const char *sp_perf_import_error(const struct sp_perf_import *im)
{
	return sp_error_message(&im->err);
}

void sp_perf_import_get_stats(const struct sp_perf_import *im, struct sp_perf_import_stats *s)
{
	*s = im->st;
	s->pipe_mode = im->pipe;
}

/* Which perf.data this is, from its first 16 bytes: 0, or -1 with the reason. */
static int check_magic(struct sp_perf_import *im, const unsigned char *h, ssize_t n)
{
	uint64_t magic = 0, size = 0;
	if (n >= 8)
		memcpy(&magic, h, 8);
	if (n >= 16)
		memcpy(&size, h + 8, 8);
	if (magic == __builtin_bswap64(PERF_MAGIC2))
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data was written on a machine of the other byte order "
				    "(big-endian): sp-import reads little-endian perf.data only; "
				    "run 'perf script' or 'perf inject' on a big-endian machine");
	if (magic == PERF_MAGIC1 || magic == __builtin_bswap64(PERF_MAGIC1))
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data is of perf's first format (PERFFILE, perf of Linux "
				    "2.6.3x): sp-import reads the PERFILE2 format");
	if (magic != PERF_MAGIC2)
		return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				    "the input is not a perf.data file: it does not begin with "
				    "perf's magic 'PERFILE2'");
	if (n < 16)
		return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
				    "perf.data is cut short in its header (%zd bytes)", n);
	if (size == PIPE_HEADER_SIZE) {
		im->pipe = true;
		return 0;
	}
	if (size < FILE_HEADER_SIZE)
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data's header is %llu bytes: a header sp-import does "
				    "not know (file mode is %u bytes, pipe mode %u)",
				    (unsigned long long)size, FILE_HEADER_SIZE, PIPE_HEADER_SIZE);
	if (lseek(im->fd, 0, SEEK_CUR) < 0)
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data is in file mode, whose feature sections follow "
				    "its data, and the input cannot seek: give the file's name, or "
				    "record with 'perf record -o -' for pipe mode");
	return 0;
}

int sp_perf_import_run(struct sp_perf_import *im)
{
	unsigned char h[16];
	ssize_t n = in_read(im, h, sizeof(h));
	if (n < 0 || check_magic(im, h, n) < 0)
		return -1;
	if (!im->pipe && (read_file_header(im, h) < 0 || make_recorder(im) < 0))
		return -1;
	int st = read_records(im);
	if (st < 0)
		return -1;
	/* What came before a fault is written, and the summary after it. */
	char msg[sizeof(im->err.msg)];
	snprintf(msg, sizeof(msg), "%s", st ? sp_error_message(&im->err) : "");
	enum sp_err code = im->err.code;
	if (flush(im, UINT64_MAX) < 0)
		return -1;
	struct sp_capture *r = im->r;
	if (st)
		r->errors[SP_E_BAD_KERNEL_RECORD]++;
	r->finished = true;
	r->start_ns = im->first_time;
	r->end_ns = im->last_time;
	struct sp_summary_rec s;
	sp_capture_summary(r, &s);
	sp_write_summary(im->w, &s);
	if (sp_writer_flush(im->w) < 0)
		return sp_error_set(&im->err, SP_ERR_ERRNO, "%s", sp_writer_error(im->w));
	if (st)
		sp_error_set(&im->err, code, "%s", msg);
	return st;
}

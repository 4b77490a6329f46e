/* SPDX-License-Identifier: MIT
 * perf.data import (perfdata-int.h): the event attributes and their ids,
 * the feature sections, the file-mode header that locates them, and the
 * stream's header and the recorder made from what they say.
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/perfdata-int.h"
#include "stream/header.h"
#include "util/alloc.h"

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
int sp_pd_take_attr(struct sp_perf_import *im, const unsigned char *p, size_t size)
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

void sp_pd_note_id(struct sp_perf_import *im, uint64_t id, size_t ai)
{
	if (!sp_u64map_get(&im->ids, id))
		sp_u64map_put(&im->ids, id, (void *)(uintptr_t)(ai + 1));
}

/* The attribute of an event id; the first when unknown. */
const struct attr *sp_pd_attr_of(const struct sp_perf_import *im, uint64_t id, size_t *ai)
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
void sp_pd_take_build_id(struct sp_perf_import *im, const unsigned char *p, size_t size,
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

const struct bid *sp_pd_find_bid(const struct sp_perf_import *im, const char *path)
{
	for (size_t i = 0; i < im->nbids; i++)
		if (strcmp(im->bids[i].path, path) == 0)
			return &im->bids[i];
	return NULL;
}

int sp_pd_take_feature(struct sp_perf_import *im, int feat, const unsigned char *p, size_t n)
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
			sp_pd_take_build_id(im, c.p, h.size, h.misc);
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
	case FEAT_COMPRESSED: {
		/* version, type, level, ratio, mmap_len: u32 each. */
		cur_u32(&c);
		uint32_t type = cur_u32(&c);
		im->compressed_feature = true;
		if (!c.bad)
			im->comp_type = type;
		break;
	}
	default:
		break;
	}
	return 0;
}

/* File mode: the header, attributes and feature sections, then the data's place. */
int sp_pd_read_file_header(struct sp_perf_import *im, const unsigned char *h8)
{
	unsigned char h[FILE_HEADER_SIZE];
	memcpy(h, h8, 16);
	if (sp_pd_read_at(im, h + 16, sizeof(h) - 16, 16, "header") < 0)
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
		if (sp_pd_read_at(im, ab, attr_size, attrs_off + i * attr_size, "attribute section") < 0 ||
		    sp_pd_take_attr(im, ab, attr_size - 16) < 0) {
			free(ab);
			return -1;
		}
		uint64_t ids_off, ids_size;
		memcpy(&ids_off, ab + attr_size - 16, 8);
		memcpy(&ids_size, ab + attr_size - 8, 8);
		for (uint64_t k = 0; k < ids_size / 8 && k < 65536; k++) {
			uint64_t id;
			if (sp_pd_read_at(im, &id, 8, ids_off + k * 8, "event ids") < 0) {
				free(ab);
				return -1;
			}
			sp_pd_note_id(im, id, i);
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
			if (sp_pd_read_at(im, sec, 16, feat_off + (uint64_t)nth++ * 16,
				    "feature index") < 0)
				break;
			if (sec[1] > MAX_FEATURE_SIZE)
				continue;
			unsigned char *fb = malloc(sec[1] ? sec[1] : 1);
			if (!fb)
				return sp_error_set(&im->err, SP_ERR_NOMEM, "out of memory");
			if (sp_pd_read_at(im, fb, sec[1], sec[0], "feature section") < 0) {
				free(fb);
				continue;
			}
			sp_pd_take_feature(im, bit, fb, sec[1]);
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

int sp_pd_write_header(struct sp_perf_import *im)
{
	struct sp_writer *w = im->w;
	const struct attr *a0 = &im->attrs[0];
	struct sp_mapw m, t, h, o;
	sp_mapw_raw_header(&m, w);
	/* perf recorded it: the first tool, with its version and arguments. */
	msgpack_packer *pk = sp_mapw_key(&m, "tools");
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

	bool dwarf = sp_pd_attr_dwarf(a0);
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
int sp_pd_make_recorder(struct sp_perf_import *im)
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
		regs |= sp_pd_attr_dwarf(a);
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
	o.call_graph_fp = !sp_pd_attr_dwarf(&im->attrs[0]);
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

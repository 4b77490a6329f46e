/* SPDX-License-Identifier: MIT
 * perf.data import (perfdata.h, perfdata-int.h): the input and the loop
 * over its records.  The layout read is perf's
 * (tools/perf/Documentation/perf.data-file-format.txt): in file mode a
 * header, the attributes with their ids, the data section and the
 * feature sections after it; in pipe mode a 16-byte header, then records
 * only, the attributes and features among them as PERF_RECORD_HEADER_*
 * records.  The kernel's records go to perfdata-records.c, and through
 * the capture queue to its writers, so an imported stream says what a
 * captured one says, in the same words; the queue is flushed at perf's
 * FINISHED_ROUND marks.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/perfdata-int.h"
#include "stream/records.h"

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
int sp_pd_read_at(struct sp_perf_import *im, void *dst, size_t n, uint64_t off,
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

/* The loop. */

static int ensure_recorder(struct sp_perf_import *im)
{
	return im->r ? 0 : sp_pd_make_recorder(im);
}

/*
 * Writes what is queued up to limit, the header first.  perf marks a
 * round when it has drained every buffer once: a record of a later round
 * may be older than the previous round's newest, never older than the
 * round before's, so a round's end writes what the round before saw.
 */
static int flush(struct sp_perf_import *im, uint64_t limit)
{
	if (ensure_recorder(im) < 0 || (!im->header_written && sp_pd_write_header(im) < 0))
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
int sp_pd_take_record(struct sp_perf_import *im, uint64_t at, size_t size)
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
		sp_pd_convert_sample(im, rec, size, h.misc);
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
		sp_pd_convert_other(im, rec, size);
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
		if (sp_pd_take_attr(im, rec + 8, asz) < 0)
			return -1;
		for (size_t off = 8 + asz; off + 8 <= size; off += 8) {
			memcpy(&u64, rec + off, 8);
			sp_pd_note_id(im, u64, im->nattrs - 1);
		}
		return 0;
	}
	case HEADER_FEATURE:
		if (size >= 16) {
			memcpy(&u64, rec + 8, 8);
			if (u64 < 256)
				sp_pd_take_feature(im, (int)u64, rec + 16, size - 16);
		}
		return 0;
	case HEADER_BUILD_ID:
		sp_pd_take_build_id(im, rec, size, h.misc);
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
		return sp_pd_take_compressed(im, at, size);
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
			return sp_pd_compressed_end(im) < 0 ? 1 : 0;
		struct perf_event_header h;
		ssize_t k = in_read(im, &h, sizeof(h));
		if (k < 0)
			return -1;
		if (k == 0)
			return sp_pd_compressed_end(im) < 0 ? 1 : 0;
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
		if (sp_pd_take_record(im, at, h.size) < 0)
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
	sp_pd_compressed_free(im);
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
	if (!im->pipe && (sp_pd_read_file_header(im, h) < 0 || sp_pd_make_recorder(im) < 0))
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

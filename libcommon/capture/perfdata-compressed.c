/* SPDX-License-Identifier: MIT
 * perf record -z (perfdata-int.h): the zstd data of PERF_RECORD_COMPRESSED
 * records decompressed, and the records in it taken as any other.  perf
 * compresses its ring buffers' bytes into one zstd stream, cut into
 * COMPRESSED records wherever a write ended, so a record may begin in one
 * COMPRESSED record and end in the next: what is left of the decompressed
 * bytes waits for the next.
 */
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "capture/perfdata-int.h"
#include "stream/zstd.h"

/* Decompressed bytes taken at a time; a record is at most 64 KiB. */
#define ZOUT_CAP (256u * 1024)

/* perf's compression type of zstd, in its COMPRESSED feature section. */
#define PERF_COMP_ZSTD 1

static int nomem(struct sp_perf_import *im)
{
	return sp_error_set(&im->err, SP_ERR_NOMEM, "out of memory decompressing the perf.data");
}

/* The records complete in im->zout, each taken; what is left moved to its start. */
static int take_decompressed(struct sp_perf_import *im, uint64_t at)
{
	size_t pos = 0;
	while (im->zlen - pos >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		memcpy(&h, im->zout + pos, sizeof(h));
		if (h.size < sizeof(h))
			return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
					    "perf.data is corrupt in the compressed record at offset "
					    "%llu: a record in it (type %u) of %u bytes is shorter "
					    "than its header", (unsigned long long)at, h.type, h.size);
		if (h.size > im->zlen - pos)
			break;
		if (h.type == COMPRESSED || h.type == HEADER_TRACING_DATA || h.type == AUXTRACE)
			return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
					    "perf.data is corrupt in the compressed record at offset "
					    "%llu: a record of type %u, which perf never compresses, "
					    "is in it", (unsigned long long)at, h.type);
		memcpy(im->rec, im->zout + pos, h.size);
		im->st.records++;
		if (sp_pd_take_record(im, at, h.size) < 0)
			return -1;
		pos += h.size;
	}
	memmove(im->zout, im->zout + pos, im->zlen - pos);
	im->zlen -= pos;
	return 0;
}

int sp_pd_take_compressed(struct sp_perf_import *im, uint64_t at, size_t size)
{
	if (im->comp_type && im->comp_type != PERF_COMP_ZSTD)
		return sp_error_set(&im->err, SP_ERR_UNSUPPORTED,
				    "the perf.data's records are compressed with perf's compression "
				    "type %u, not zstd (1): sp-import cannot read them",
				    im->comp_type);
	if (!im->zin && !(im->zin = sp_zin_new(0)))
		return nomem(im);
	if (!im->zout && !(im->zout = malloc(ZOUT_CAP)))
		return nomem(im);
	if (sp_zin_feed(im->zin, im->rec + sizeof(struct perf_event_header),
			size - sizeof(struct perf_event_header)) < 0)
		return nomem(im);
	for (;;) {
		long n = sp_zin_read(im->zin, im->zout + im->zlen, ZOUT_CAP - im->zlen);
		if (n < 0)
			return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
					    "perf.data is corrupt in the compressed record at offset "
					    "%llu (%s, counting the compressed bytes of every "
					    "COMPRESSED record); every record before it was imported",
					    (unsigned long long)at, sp_zin_error(im->zin));
		if (n == 0)
			return 0;
		im->zlen += (size_t)n;
		if (take_decompressed(im, at) < 0)
			return -1;
	}
}

int sp_pd_compressed_end(struct sp_perf_import *im)
{
	if (!im->zlen)
		return 0;
	return sp_error_set(&im->err, SP_ERR_BAD_INPUT,
			    "perf.data is cut short: its compressed records end inside a record "
			    "(%zu bytes of it); every record before it was imported", im->zlen);
}

void sp_pd_compressed_free(struct sp_perf_import *im)
{
	sp_zin_free(im->zin);
	free(im->zout);
}

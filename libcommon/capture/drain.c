/* SPDX-License-Identifier: MIT
 * The drain of the ring buffers (internal.h), in time-ordered slices.
 *
 * The kernel orders the records of one ring, not those of different
 * CPUs, so a record can be written only when every ring has given up
 * what is stamped before it.  Taking every ring whole and writing after
 * would hold all they had, each sample with its stack copy: the longer
 * the recorder waited for a CPU, the more.  So a drain takes a slice at
 * a time: the slice ends at the time of the record SLICE_BYTES into the
 * fullest ring (or at the drain's limit), every ring gives up the
 * records stamped up to that time, they are written in time order, their
 * space goes back to the kernel, and the next slice begins.  What a
 * drain holds is then about a slice from each ring, whatever it waited.
 *
 * Within one ring the kernel may write a record a little ahead of one
 * stamped before it (a sample's NMI between another record's time and
 * its place in the ring): a slice takes up to the last record stamped in
 * it, looking LOOKAHEAD records past the first one stamped later, and
 * the later ones it takes with it wait in the queue for their turn.
 */
#include <linux/perf_event.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "capture/internal.h"

#define SLICE_BYTES (128u * 1024)
#define LOOKAHEAD 16

/* A ring's data and the bounds of what it holds, as of one look. */
struct view {
	struct perf_event_mmap_page *pg;
	unsigned char *data;
	size_t size;
	uint64_t head, tail;
};

static struct view look(const struct sp_rec_ring *g)
{
	struct view v = {
		.pg = (struct perf_event_mmap_page *)g->base,
		.data = g->base + (size_t)sysconf(_SC_PAGESIZE),
		.size = g->data_size,
	};
	v.head = __atomic_load_n(&v.pg->data_head, __ATOMIC_ACQUIRE);
	v.tail = v.pg->data_tail;
	return v;
}

/* n bytes at pos in the ring, taken around its end when they wrap. */
static void ring_copy(const struct view *v, uint64_t pos, void *dst, size_t n)
{
	size_t at = (size_t)(pos & (v->size - 1)), first = v->size - at;
	if (n <= first) {
		memcpy(dst, v->data + at, n);
		return;
	}
	memcpy(dst, v->data + at, first);
	memcpy((unsigned char *)dst + first, v->data, n - first);
}

/* The header of the record at pos: false when it is bad. */
static bool header_at(const struct view *v, uint64_t pos, struct perf_event_header *h)
{
	/* Records are 8-byte aligned, so a header never wraps. */
	ring_copy(v, pos, h, sizeof(*h));
	return h->size >= sizeof(*h) && h->size <= v->head - pos;
}

/*
 * The record at pos, whole: in the ring, or copied to r->tmp when it
 * wraps around the end.  NULL when its header is bad.
 */
static const unsigned char *record_at(struct sp_capture *r, const struct view *v,
				      uint64_t pos, size_t *size)
{
	struct perf_event_header h;
	if (!header_at(v, pos, &h))
		return NULL;
	*size = h.size;
	size_t at = (size_t)(pos & (v->size - 1));
	if (at + h.size <= v->size)
		return v->data + at;
	ring_copy(v, pos, r->tmp, h.size);
	return r->tmp;
}

/*
 * The time its converter stamps the record at pos with (header h): a
 * sample's own, the body's of fork, exit, throttle and unthrottle, the
 * sample_id trailer's of the rest.  0 for a record too short to hold it
 * (the converter counts it).  Read in place, without copying the record.
 */
static uint64_t record_time(const struct sp_capture *r, const struct view *v, uint64_t pos,
			    const struct perf_event_header *h)
{
	size_t hdr = sizeof(*h), idn = r->nev > 1 ? 32 : 24, off;
	uint64_t t;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		off = hdr + (r->nev > 1 ? 8 : 0) + 8;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		off = hdr + 16;
		break;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		off = hdr;
		break;
	default:
		if (h->size < hdr + idn)
			return 0;
		off = h->size - idn + 8;
		break;
	}
	if (h->size < off + 8)
		return 0;
	ring_copy(v, pos + off, &t, 8);
	return t;
}

/*
 * Where a slice of the ring would end: the time of its first record at
 * least SLICE_BYTES past the tail, UINT64_MAX when it holds less, 0 at a
 * bad header.  *past receives the end of that record (the ring's head at
 * a bad header): a slice that ends at its time takes the ring up to
 * there at least, so that each slice makes progress.
 */
static uint64_t slice_end(const struct sp_capture *r, const struct view *v, uint64_t *past)
{
	uint64_t pos = v->tail;
	*past = v->head;
	while (pos < v->head) {
		struct perf_event_header h;
		if (!header_at(v, pos, &h))
			return 0;
		if (pos - v->tail >= SLICE_BYTES) {
			*past = pos + h.size;
			return record_time(r, v, pos, &h);
		}
		pos += h.size;
	}
	return UINT64_MAX;
}

/* The end of the last record stamped at or before w (see the top). */
static uint64_t cut_at(const struct sp_capture *r, const struct view *v, uint64_t w)
{
	if (w == UINT64_MAX)
		return v->head;
	uint64_t pos = v->tail, cut = v->tail;
	unsigned later = 0;
	while (pos < v->head && later <= LOOKAHEAD) {
		struct perf_event_header h;
		if (!header_at(v, pos, &h))
			return v->head;
		if (record_time(r, v, pos, &h) <= w) {
			cut = pos + h.size;
			later = 0;
		} else {
			later++;
		}
		pos += h.size;
	}
	return cut;
}

/* Converts the records up to cut into the queue and gives their space back. */
static void take(struct sp_capture *r, struct view *v, uint64_t cut)
{
	while (v->tail < cut) {
		size_t size;
		const unsigned char *rec = record_at(r, v, v->tail, &size);
		if (!rec) {
			r->errors[SP_E_BAD_KERNEL_RECORD]++;
			v->tail = v->head;
			break;
		}
		sp_rec_handle_record(r, rec, size);
		v->tail += size;
	}
	__atomic_store_n(&v->pg->data_tail, v->tail, __ATOMIC_RELEASE);
}

static int flush_writer(struct sp_capture *r)
{
	if (sp_writer_flush(r->w) < 0)
		return sp_error_set(&r->err, SP_ERR_ERRNO, "%s", sp_writer_error(r->w));
	return 0;
}

/*
 * Takes one slice, ending at or before limit, from every ring and writes
 * it.  Returns the time it ended at (limit for the last), or 0 with
 * *failed set when writing failed.
 */
static uint64_t one_slice(struct sp_capture *r, uint64_t limit, bool *failed)
{
	uint64_t w = limit, end[SP_REC_MAX_CPUS], past[SP_REC_MAX_CPUS];
	for (int ci = 0; ci < r->ncpus; ci++) {
		if (r->rings[ci].fd < 0)
			continue;
		struct view v = look(&r->rings[ci]);
		end[ci] = slice_end(r, &v, &past[ci]);
		if (end[ci] < w)
			w = end[ci];
	}
	for (int ci = 0; ci < r->ncpus; ci++) {
		if (r->rings[ci].fd < 0)
			continue;
		struct view v = look(&r->rings[ci]);
		uint64_t cut = cut_at(r, &v, w);
		if (end[ci] <= w && past[ci] > cut)
			cut = past[ci];
		take(r, &v, cut);
	}
	*failed = sp_rec_q_flush(r, w) < 0;
	return w;
}

/*
 * Takes the records stamped up to limit from every ring, a slice at a
 * time, and writes them.  A limit of 0, and any drain before the header,
 * converts everything the rings hold into the queue and writes nothing
 * stamped after 0 (attach and the window's change of events need every
 * fork seen before they go on).
 */
int sp_rec_drain(struct sp_capture *r, uint64_t limit)
{
	bool failed = false;
	if (limit == 0 || !r->started) {
		for (int ci = 0; ci < r->ncpus; ci++) {
			if (r->rings[ci].fd < 0)
				continue;
			struct view v = look(&r->rings[ci]);
			take(r, &v, v.head);
		}
		if (!r->started)
			return 0;
		failed = sp_rec_q_flush(r, limit) < 0;
	} else {
		while (!failed && one_slice(r, limit, &failed) < limit)
			;
	}
	return failed ? -1 : flush_writer(r);
}

bool sp_capture_has_pending(const struct sp_capture *r)
{
	for (int ci = 0; ci < r->ncpus; ci++) {
		if (r->rings[ci].fd < 0)
			continue;
		struct view v = look(&r->rings[ci]);
		if (v.head != v.tail)
			return true;
	}
	return false;
}

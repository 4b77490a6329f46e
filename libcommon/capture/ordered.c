/* SPDX-License-Identifier: MIT
 * The queue (internal.h): records converted from every ring, written
 * in time order.  The kernel orders the records of one ring, not those of
 * different CPUs, and a sample must follow the mmap or fork that explains
 * it: so a drain (drain.c) converts what every ring holds up to a time,
 * then writes only what is stamped up to that time, and keeps the rest
 * for the next slice or round.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"
#include "util/alloc.h"

int sp_rec_q_end(struct sp_capture *r, enum sp_rec_kind kind, uint64_t time, size_t start)
{
	if (r->qbuf.oom || SP_ALLOC_GROW(r->q, r->nq + 1, r->allocq) < 0) {
		/* Sticky, like a failed add: the next flush reports it. */
		r->qbuf.oom = 1;
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory");
	}
	r->q[r->nq++] = (struct sp_rec_qent){
		.time = time, .seq = r->seq++, .off = start, .len = r->qbuf.len - start,
		.kind = kind,
	};
	return 0;
}

static int cmp_qent(const void *a, const void *b)
{
	const struct sp_rec_qent *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void write_one(struct sp_capture *r, const struct sp_rec_qent *e)
{
	const unsigned char *p = (const unsigned char *)r->qbuf.p + e->off;
	switch (e->kind) {
	case SP_REC_SAMPLE:
		sp_rec_write_sample(r, p, e->len, NULL);
		break;
	case SP_REC_SWITCH:
		sp_rec_write_switch(r, p);
		break;
	case SP_REC_COMM:
	case SP_REC_TASK:
	case SP_REC_LOST:
	case SP_REC_THROTTLE:
		sp_rec_write_event(r, e->kind, p);
		break;
	case SP_REC_MAP:
	case SP_REC_RUNTIME:
	case SP_REC_ARCHIVE:
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
		sp_rec_write_synth(r, e->kind, p);
		break;
	case SP_REC_IMAGE:
		sp_rec_write_image(r, p);
		break;
	case SP_REC_JITDUMP:
		sp_rec_write_jitdump(r, p);
		break;
	}
}

static int cmp_off(const void *a, const void *b)
{
	const struct sp_rec_qent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Moves the bytes of the records left in the queue to the start of qbuf,
 * in place: qbuf keeps its memory, so a drain's slices reuse it rather
 * than each allocating its own.  The next flush sorts the queue again.
 */
static void compact(struct sp_capture *r)
{
	size_t len = 0;
	qsort(r->q, r->nq, sizeof(*r->q), cmp_off);
	for (size_t j = 0; j < r->nq; j++) {
		struct sp_rec_qent *e = &r->q[j];
		if (e->off != len)
			memmove(r->qbuf.p + len, r->qbuf.p + e->off, e->len);
		e->off = len;
		len += e->len;
	}
	r->qbuf.len = len;
	if (r->qbuf.p)
		r->qbuf.p[len] = '\0';
}

/* Writes queued records stamped at or before limit, in time order. */
int sp_rec_q_flush(struct sp_capture *r, uint64_t limit)
{
	if (r->qbuf.oom)
		return sp_error_set(&r->err, SP_ERR_NOMEM, "out of memory queueing records");
	if (r->nq == 0) {
		r->qbuf.len = 0;
		return 0;
	}
	qsort(r->q, r->nq, sizeof(*r->q), cmp_qent);
	size_t i = 0;
	for (; i < r->nq && r->q[i].time <= limit; i++) {
		/*
		 * Every record stamped before a sample has been converted by
		 * now, so a fork that precedes it has made its process known.
		 */
		if (r->q[i].sample_pid && !sp_rec_proc_get(r, r->q[i].sample_pid, false))
			r->errors[SP_E_UNKNOWN_PROCESS]++;
		write_one(r, &r->q[i]);
		if (sp_writer_failed(r->w))
			return sp_error_set(&r->err, SP_ERR_ERRNO, "%s", sp_writer_error(r->w));
	}
	/* Keep the rest for the next round, moved down in qbuf. */
	r->nq -= i;
	memmove(r->q, r->q + i, r->nq * sizeof(*r->q));
	compact(r);
	return 0;
}

/* SPDX-License-Identifier: MIT
 * Off-CPU time (internal.h): with --off-cpu, the context-switches event
 * samples a thread as it leaves the CPU, and the switch records of the
 * same event say when it left and when it came back.  The queue writes
 * both in time order; the sample is held here, one per thread (a thread
 * cannot leave the CPU twice without running in between), until the
 * thread runs again, and is then written stamped with that instant and
 * weighted by the nanoseconds in between.  Every interval counts, however
 * short: a switch-out whose sample the kernel did not take (throttled,
 * lost) is still written, without a stack, so that its time is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/internal.h"
#include "stream/records.h"

/* A thread off the CPU: when it left, and its switch-out sample if taken. */
struct held {
	uint32_t pid;
	uint64_t out;
	bool out_seen;		/* the switch-out record came */
	bool preempted;
	size_t len;		/* 0: no sample */
	unsigned char bytes[];
};

void sp_rec_offcpu_queue(struct sp_capture *r, const struct sp_rec_switch *s)
{
	size_t start = sp_rec_q_begin(r);
	sp_rec_q_add(r, s, sizeof(*s));
	sp_rec_q_end(r, SP_REC_SWITCH, s->time, start);
}

static void hold(struct sp_capture *r, uint32_t tid, struct held *h)
{
	free(sp_u64map_remove(&r->offcpu, tid));
	if (sp_u64map_put(&r->offcpu, tid, h) < 0) {
		free(h);
		r->qbuf.oom = 1;	/* reported by the next flush */
	}
}

void sp_rec_offcpu_keep(struct sp_capture *r, const unsigned char *p, size_t len)
{
	uint32_t pid, tid;
	uint64_t time;
	sp_rec_sample_tid_time(p, &pid, &tid, &time);
	if (pid == 0)
		return;	/* the idle task leaves the CPU when work comes */
	struct held *h = malloc(sizeof(*h) + len);
	if (!h) {
		r->qbuf.oom = 1;
		return;
	}
	*h = (struct held){ .pid = pid, .out = time, .len = len };
	memcpy(h->bytes, p, len);
	hold(r, tid, h);
}

/* Writes what tid held, off the CPU until end. */
static void release(struct sp_capture *r, uint32_t tid, struct held *h, uint64_t end)
{
	struct sp_rec_off off = {
		.time = end, .period = end > h->out ? end - h->out : 0,
		.preempted = h->preempted,
	};
	r->offcpu_intervals++;
	if (h->len) {
		sp_rec_write_sample(r, h->bytes, h->len, &off);
	} else {
		r->offcpu_no_stack++;
		sp_write_raw_sample(r->w, &(struct sp_raw_sample_rec){
			.pid = h->pid, .tid = tid, .time = off.time, .period = off.period,
			.event = (uint32_t)r->offcpu_ev, .preempted = off.preempted,
		});
	}
	free(h);
}

void sp_rec_write_switch(struct sp_capture *r, const unsigned char *p)
{
	struct sp_rec_switch s;
	memcpy(&s, p, sizeof(s));
	struct held *h = sp_u64map_get(&r->offcpu, s.tid);
	if (s.in) {
		if (h)
			release(r, s.tid, sp_u64map_remove(&r->offcpu, s.tid), s.time);
		return;
	}
	if (h && !h->out_seen) {
		/* The sample came first: the record only says how it left. */
		h->out_seen = true;
		h->preempted = s.preempted;
		return;
	}
	/* No sample for this switch: its time is kept all the same. */
	if (!(h = malloc(sizeof(*h)))) {
		r->qbuf.oom = 1;
		return;
	}
	*h = (struct held){ .pid = s.pid, .out = s.time, .out_seen = true,
			    .preempted = s.preempted };
	hold(r, s.tid, h);
}

void sp_rec_offcpu_forget(struct sp_capture *r, uint32_t tid)
{
	free(sp_u64map_remove(&r->offcpu, tid));
}

void sp_rec_offcpu_end(struct sp_capture *r, uint64_t end)
{
	size_t i = 0;
	uint64_t tid;
	void *v;
	while (sp_u64map_next(&r->offcpu, &i, &tid, &v))
		release(r, (uint32_t)tid, v, end);
	sp_u64map_release(&r->offcpu, NULL);
	sp_u64map_init(&r->offcpu);
}

void sp_rec_offcpu_release(struct sp_capture *r)
{
	sp_u64map_release(&r->offcpu, free);
}

/* SPDX-License-Identifier: MIT
 * Unit tests of the capture layer's queue: records converted out of time
 * order are written in time order, and a sample's stack copy shares its
 * tail with the copy written before it, not the one converted before it.
 * No perf event is opened: kernel records are made here.
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "capture/internal.h"
#include "stream/stream.h"
#include "stream/ustack.h"

enum { STACK = 256 };

/* A PERF_RECORD_SAMPLE as the recorder asks for it without --kernel. */
static size_t make_sample(unsigned char *rec, uint32_t pid, uint32_t tid, uint64_t time,
			  uint64_t sp, const unsigned char *stack, uint64_t dyn)
{
	unsigned char *p = rec + sizeof(struct perf_event_header);
	uint64_t period = 1001001, abi = 2, size = STACK;
	uint32_t cpu = 0, res = 0;
	uint64_t regs[SP_REC_NREGS] = { 0 };
	regs[SP_REC_SP_INDEX] = sp;
#define PUT(v, n) do { memcpy(p, (v), (n)); p += (n); } while (0)
	PUT(&pid, 4);
	PUT(&tid, 4);
	PUT(&time, 8);
	PUT(&cpu, 4);
	PUT(&res, 4);
	PUT(&period, 8);
	PUT(&abi, 8);
	PUT(regs, sizeof(regs));
	PUT(&size, 8);
	memset(p, 0, STACK);
	PUT(stack, dyn);
	p += STACK - dyn;
	PUT(&dyn, 8);
#undef PUT
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, (uint16_t)(p - rec) };
	memcpy(rec, &h, sizeof(h));
	return (size_t)(p - rec);
}

SP_TEST(capture_queue_writes_in_time_order_and_shares_in_that_order)
{
	FILE *f = tmpfile();
	struct sp_writer *w = sp_writer_new(fileno(f), "unit");
	struct sp_capture_options o = { .frequency = 999, .stack_size = STACK, .poll_ms = 100 };
	struct sp_capture *r = sp_capture_new(&o, w);
	SP_CHECK(r != NULL);
	char *argv[] = { "sp-capture", NULL };
	SP_CHECK(sp_capture_start(r, 1, argv) == 0);

	/*
	 * One thread's stack at three instants, converted in the order
	 * 300, 100, 200: the top 200 bytes stay, the rest changes.
	 */
	static unsigned char mem[3][STACK];
	static const uint64_t times[3] = { 300, 100, 200 };
	const uint64_t top = 0x7ffe0000;
	static unsigned char rec[4096];
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < STACK; i++)
			mem[k][i] = i < STACK - 200 ? (unsigned char)(k * 50 + i) : (unsigned char)i;
		size_t n = make_sample(rec, 42, 43, times[k], top - STACK, mem[k], STACK);
		sp_rec_handle_sample(r, rec, n);
	}
	sp_rec_queue_runtime(r, 42, 150, false, "none");
	SP_CHECK(sp_rec_q_flush(r, 250) == 0);
	SP_CHECK(r->nq == 1);		/* the sample at 300 waits */
	SP_CHECK(sp_capture_finish(r) == 0);
	sp_capture_free(r);
	SP_CHECK(sp_writer_close(w) == 0);

	rewind(f);
	struct sp_reader *rd = sp_reader_new(fileno(f), "unit");
	struct sp_record x;
	struct sp_ustack_cache c;
	sp_ustack_cache_init(&c);
	const char *want[] = { "header", "sample", "runtime", "sample", "sample", "summary" };
	static const uint64_t want_time[] = { 0, 100, 150, 200, 300, 0 };
	static const int which[] = { -1, 1, -1, 2, 0, -1 };
	static const uint64_t want_shared[] = { 0, 0, 0, 200, 200, 0 };
	size_t i = 0;
	while (sp_reader_next(rd, &x) == SP_READ_RECORD && i < 6) {
		SP_CHECK(x.type_len == strlen(want[i]) && memcmp(x.type_name, want[i], x.type_len) == 0);
		uint64_t t = 0, shared = 0;
		if (want_time[i]) {
			SP_CHECK(sp_map_u64(x.map, "time", &t) && t == want_time[i]);
		}
		if (which[i] >= 0) {
			const void *us = NULL;
			size_t uslen = 0, len = 0;
			const unsigned char *full = NULL;
			sp_map_u64(x.map, "ustack_shared", &shared);
			SP_CHECK(shared == want_shared[i]);
			SP_CHECK(sp_map_bin(x.map, "ustack", &us, &uslen));
			SP_CHECK(sp_ustack_decode(&c, 43, us, uslen, shared, &full, &len) == SP_USTACK_OK);
			SP_CHECK(len == STACK);
			if (len == STACK)
				SP_CHECK_MEM(full, mem[which[i]], STACK);
		}
		i++;
	}
	SP_CHECK(i == 6);
	sp_ustack_cache_release(&c);
	sp_reader_free(rd);
	fclose(f);
}

/*
 * The drain's slices: two rings of 512 KiB filled by hand, their times
 * interleaved, a record in one written after a later one, and records
 * that wrap around the rings' end.  Everything comes out in time order,
 * the rings are emptied, and the queue never held much more than a
 * slice (128 KiB) of each ring: taking them whole would have held them
 * whole, some 900 KiB.
 */
enum { RING_DATA = 512 * 1024, PER_RING = 1000 };

static void ring_put(unsigned char *data, uint64_t *pos, const unsigned char *rec, size_t n)
{
	for (size_t i = 0; i < n; i++)
		data[(*pos + i) & (RING_DATA - 1)] = rec[i];
	*pos += n;
}

SP_TEST(capture_drain_takes_the_rings_in_time_ordered_slices)
{
	FILE *f = tmpfile();
	struct sp_writer *w = sp_writer_new(fileno(f), "unit");
	struct sp_capture_options o = { .frequency = 999, .stack_size = STACK, .poll_ms = 100 };
	struct sp_capture *r = sp_capture_new(&o, w);
	SP_CHECK(r != NULL);
	char *argv[] = { "sp-capture", NULL };
	SP_CHECK(sp_capture_start(r, 1, argv) == 0);

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	static unsigned char stack[STACK], rec[4096];
	unsigned char *base[2];
	r->ncpus = 2;
	for (int ci = 0; ci < 2; ci++) {
		base[ci] = aligned_alloc(page, page + RING_DATA);
		SP_CHECK(base[ci] != NULL);
		memset(base[ci], 0, page);
		struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)base[ci];
		/* Both start near the end, so that records wrap around it. */
		uint64_t pos = RING_DATA - 1000 - 456 * (uint64_t)ci;
		pg->data_tail = pos;
		for (uint64_t k = 0; k < PER_RING; k++) {
			uint64_t t = 1000 + 20 * k + 10 * (uint64_t)ci;
			/*
			 * Written two records after the one that ends the
			 * first slice (128 KiB into the ring: record 288, of
			 * 456 bytes each) but stamped before it.
			 */
			if (ci == 0 && k == 290)
				t = 1000 + 20 * 288 - 10;
			size_t n = make_sample(rec, 42, 43 + (uint32_t)ci, t, 0x7ffe0000 - STACK,
					       stack, STACK);
			ring_put(base[ci] + page, &pos, rec, n);
		}
		pg->data_head = pos;
		r->rings[ci] = (struct sp_rec_ring){ .fd = 1000 + ci, .base = base[ci],
						     .data_size = RING_DATA };
	}
	SP_CHECK(sp_rec_drain(r, 1000000000) == 0);
	for (int ci = 0; ci < 2; ci++) {
		struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)base[ci];
		SP_CHECK(pg->data_tail == pg->data_head);
		r->rings[ci].fd = -1;
	}
	SP_CHECK(r->nq == 0);
	SP_CHECK(r->qbuf.cap <= 2 * 2 * 128 * 1024);
	SP_CHECK(sp_capture_finish(r) == 0);
	sp_capture_free(r);
	SP_CHECK(sp_writer_close(w) == 0);
	free(base[0]);
	free(base[1]);

	rewind(f);
	struct sp_reader *rd = sp_reader_new(fileno(f), "unit");
	struct sp_record x;
	uint64_t last = 0, n = 0;
	bool ordered = true;
	while (sp_reader_next(rd, &x) == SP_READ_RECORD) {
		uint64_t t;
		if (x.type != SP_R_SAMPLE || !sp_map_u64(x.map, "time", &t))
			continue;
		ordered = ordered && t >= last;
		last = t;
		n++;
	}
	SP_CHECK(ordered);
	SP_CHECK(n == 2 * PER_RING);
	sp_reader_free(rd);
	fclose(f);
}

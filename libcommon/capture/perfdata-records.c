/* SPDX-License-Identifier: MIT
 * perf.data import (perfdata-int.h): each kernel record rewritten into the
 * layout the capture layer's converters read from a ring (ring.c,
 * sample.c), then handed to them: a sample with TID, TIME, CPU, PERIOD,
 * the callchain, the user registers of internal.h's mask and the stack
 * copy; any other record with the sample_id trailer TID, TIME, CPU.
 * Samples without a callchain or a stack copy carry their one address as
 * a callchain of one entry (a uchain, or a kstack for a kernel address).
 */
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture/perfdata-int.h"
#include "util/buildid.h"

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
void sp_pd_convert_other(struct sp_perf_import *im, const unsigned char *rec, size_t size)
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
			b = sp_pd_find_bid(im, pbuf);
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
bool sp_pd_convert_sample(struct sp_perf_import *im, const unsigned char *rec, size_t size,
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
		a = sp_pd_attr_of(im, cur_u64(&c), &ai);
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
			a = sp_pd_attr_of(im, id, &ai);
	}
	/* The fields before the id are the same for every event (perf requires it). */
	st = a->sample_type;
	/* Without PERIOD, the event's fixed period; sampled at a frequency, 1. */
	period = ATTR_FLAG(a, A_FREQ) ? 1 : a->period_or_freq;
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
	bool fp = !sp_pd_attr_dwarf(a);
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

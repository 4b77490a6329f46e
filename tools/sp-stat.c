/*
 * sp-stat: says what happened in a recording, at any stage: the host and
 * options, the counters of the capture summary, how unwinding and
 * symbolization went, and a diagnosis that names the exact option to
 * change.  --system says whether this host can profile at all.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stream/stream.h"
#include "tool.h"
#include "stream/vocab.h"
#include "util/alloc.h"
#include "util/hashmap.h"
#include "util/jsonw.h"
#include "util/procfs.h"
#include "util/strbuf.h"

#define EXIT_CHECK 4	/* sp-stat --check: a threshold was exceeded */

static void usage(void)
{
	printf("Usage: %s [options] [FILE...]\n"
	       "       %s --system [--json]\n"
	       "Report what happened in a stackpulse recording (any stage), and what to do.\n"
	       "\n"
	       "      --json                   one JSON document instead of text\n"
	       "      --top N                  processes and threads to list (default 10)\n"
	       "      --check                  exit %d when a threshold below is exceeded\n"
	       "      --max-lost-pct P         lost events, in %% of samples and lost\n"
	       "      --max-truncated-pct P    truncated stacks, in %% of samples\n"
	       "      --min-complete-pct P     stacks reaching their thread's entry, in %%\n"
	       "      --max-address-only-pct P address-only frames, in %% of frames\n"
	       "      --system                 can this host profile, and what to change\n"
	       "  -h, --help                   show this help\n"
	       "  -V, --version                show the version\n"
	       "\n" SP_EXIT_STATUS_HELP
	       "  %d  --check: a threshold was exceeded\n",
	       sp_progname, sp_progname, EXIT_CHECK, EXIT_CHECK);
}

struct named_count {
	uint32_t pid, tid;
	char comm[64];
	uint64_t samples;
};

/* Counts by (pid, tid), indexed for lookup by the key pid << 32 | tid. */
struct counts {
	struct named_count *v;
	size_t n, alloc;
	struct sp_u64map index;	/* key -> position in v, plus 1 */
};

struct modcount {
	char *path;
	uint64_t address_only, frames;
};

struct stats {
	unsigned segments;
	bool have_summary, cut_short;
	char stage[16], hostname[128], kernel[128], arch[32];
	uint64_t frequency, stack_size, poll_ms, mmap_pages;
	bool opt_kernel, have_opts;
	bool kernel_enabled;
	bool has_start_ts, has_interval;
	uint64_t start_ts, interval;
	/* Summary counters, summed over segments. */
	uint64_t sample_events, samples, lost, empty, truncated, ignored_user, throttles;
	uint64_t skipped[4];
	uint64_t duration_ns, lost_samples;
	uint64_t errors[SP_E_COUNT];
	/* Counted from the records themselves. */
	uint64_t sample_records, period_sum, first_time, last_time;
	uint64_t lost_records;
	/* Unwinding. */
	bool have_unwind;
	uint64_t uw_samples, uw_user, uw_complete, uw_frames, uw_ends[SP_END_COUNT];
	/* Symbolization. */
	bool have_symbolize;
	uint64_t frames, origins[6], address_only, modules_missing, modules_mismatched;
	struct modcount *mods;
	size_t nmods, allocmods;
	char **modpaths;	/* module id -> path, current segment */
	size_t nmodpaths, allocmodpaths;
	struct counts procs, threads;
};

static const char *const origin_names[6] = { "symtab", "dynsym", "debuginfo", "perf-map",
					      "kallsyms", "address-only" };

static struct named_count *count_get(struct counts *c, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uintptr_t at = (uintptr_t)sp_u64map_get(&c->index, key);
	if (at)
		return &c->v[at - 1];
	if (SP_ALLOC_GROW(c->v, c->n + 1, c->alloc) < 0 ||
	    sp_u64map_put(&c->index, key, (void *)(uintptr_t)(c->n + 1)) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	struct named_count *nc = &c->v[c->n++];
	memset(nc, 0, sizeof(*nc));
	nc->pid = pid;
	nc->tid = tid;
	return nc;
}

static void set_name(struct named_count *c, const char *s, size_t n)
{
	snprintf(c->comm, sizeof(c->comm), "%.*s", (int)(n < 63 ? n : 63), s);
}

static void copy_str(char *dst, size_t len, const msgpack_object *m, const char *key)
{
	const char *s;
	size_t n;
	if (sp_map_str(m, key, &s, &n))
		snprintf(dst, len, "%.*s", (int)(n < len - 1 ? n : len - 1), s);
}

static void take_header(struct stats *st, const struct sp_record *rec, const struct sp_header *h)
{
	const msgpack_object *m = rec->map, *host = sp_map_get(m, "host"), *o = sp_map_get(m, "options");
	st->segments++;
	snprintf(st->stage, sizeof(st->stage), "%s", sp_stage_name(h->stage));
	if (host) {
		copy_str(st->hostname, sizeof(st->hostname), host, "hostname");
		copy_str(st->kernel, sizeof(st->kernel), host, "kernel");
		copy_str(st->arch, sizeof(st->arch), host, "arch");
	}
	if (o) {
		st->have_opts = true;
		sp_map_u64(o, "frequency", &st->frequency);
		sp_map_u64(o, "stack_size", &st->stack_size);
		sp_map_u64(o, "poll_ms", &st->poll_ms);
		sp_map_u64(o, "mmap_pages", &st->mmap_pages);
		sp_map_bool(o, "kernel", &st->opt_kernel);
	}
	sp_map_bool(m, "kernel_enabled", &st->kernel_enabled);
	st->has_start_ts = sp_map_u64(m, "start_timestamp_us", &st->start_ts) || st->has_start_ts;
	st->has_interval = sp_map_u64(m, "sample_interval_us", &st->interval) || st->has_interval;
	for (size_t i = 0; i < st->nmodpaths; i++)
		free(st->modpaths[i]);
	free(st->modpaths);
	st->modpaths = NULL;
	st->nmodpaths = 0;
	st->have_summary = false;
}

static void take_summary(struct stats *st, const msgpack_object *m)
{
	uint64_t v;
	st->have_summary = true;
#define ADD(key, field) if (sp_map_u64(m, key, &v)) st->field += v
	ADD("sample_events", sample_events);
	ADD("samples", samples);
	ADD("lost_events", lost);
	ADD("empty_stack_samples", empty);
	ADD("truncated_frame_markers", truncated);
	ADD("ignored_user_callchain_frames", ignored_user);
	ADD("throttle_events", throttles);
	ADD("skipped_no_pid", skipped[0]);
	ADD("skipped_no_tid", skipped[1]);
	ADD("skipped_no_time", skipped[2]);
	ADD("skipped_no_frames", skipped[3]);
	ADD("duration_ns", duration_ns);
	ADD("lost_samples", lost_samples);
#undef ADD
	bool b;
	if (sp_map_bool(m, "kernel_enabled", &b))
		st->kernel_enabled = b;
	const msgpack_object_array *es = sp_map_array(m, "error_stats");
	for (uint32_t i = 0; es && i < es->size; i++) {
		const char *k;
		size_t n;
		if (!sp_map_str(&es->ptr[i], "kind", &k, &n) || !sp_map_u64(&es->ptr[i], "count", &v))
			continue;
		for (int e = 0; e < SP_E_COUNT; e++)
			if (strlen(sp_error_kind_name((enum sp_error_kind)e)) == n &&
			    memcmp(sp_error_kind_name((enum sp_error_kind)e), k, n) == 0)
				st->errors[e] += v;
	}
}

static void take_unwind(struct stats *st, const msgpack_object *m)
{
	uint64_t v;
	st->have_unwind = true;
	if (sp_map_u64(m, "samples", &v)) st->uw_samples += v;
	if (sp_map_u64(m, "user_samples", &v)) st->uw_user += v;
	if (sp_map_u64(m, "complete", &v)) st->uw_complete += v;
	if (sp_map_u64(m, "frames", &v)) st->uw_frames += v;
	const msgpack_object_array *ends = sp_map_array(m, "ends");
	for (uint32_t i = 0; ends && i < ends->size; i++) {
		uint64_t code, count;
		if (sp_map_u64(&ends->ptr[i], "code", &code) && sp_map_u64(&ends->ptr[i], "count", &count) &&
		    code < SP_END_COUNT)
			st->uw_ends[code] += count;
	}
}

static void take_symbolize(struct stats *st, const msgpack_object *m)
{
	uint64_t v;
	st->have_symbolize = true;
	/* sp-symbolize counts these over its whole run: the last one holds. */
	if (sp_map_u64(m, "modules_missing", &v)) st->modules_missing = v;
	if (sp_map_u64(m, "modules_mismatched", &v)) st->modules_mismatched = v;
}

static void take_frame(struct stats *st, const msgpack_object *m)
{
	const char *o;
	size_t n;
	uint64_t flags = 0, mid;
	sp_map_u64(m, "flags", &flags);
	if (flags & 0x8 || !sp_map_str(m, "origin", &o, &n))
		return;
	st->frames++;
	bool addr_only = false;
	for (int i = 0; i < 6; i++)
		if (strlen(origin_names[i]) == n && memcmp(origin_names[i], o, n) == 0) {
			st->origins[i]++;
			addr_only = i == 5;
		}
	if (addr_only)
		st->address_only++;
	if (sp_map_u64(m, "module", &mid) && mid < st->nmodpaths && st->modpaths[mid]) {
		struct modcount *c = NULL;
		for (size_t i = 0; i < st->nmods && !c; i++)
			if (strcmp(st->mods[i].path, st->modpaths[mid]) == 0)
				c = &st->mods[i];
		if (!c) {
			if (SP_ALLOC_GROW(st->mods, st->nmods + 1, st->allocmods) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory");
			c = &st->mods[st->nmods++];
			c->path = sp_xstrdup(st->modpaths[mid]);
			c->address_only = c->frames = 0;
		}
		c->frames++;
		c->address_only += addr_only;
	}
}

static void take_record(struct stats *st, const struct sp_record *rec, const struct sp_header *h)
{
	const msgpack_object *m = rec->map;
	uint64_t pid = 0, tid = 0, v;
	const char *s;
	size_t n;
	switch (rec->type) {
	case SP_R_HEADER: take_header(st, rec, h); break;
	case SP_R_SUMMARY: take_summary(st, m); break;
	case SP_R_UNWIND: take_unwind(st, m); break;
	case SP_R_SYMBOLIZE: take_symbolize(st, m); break;
	case SP_R_FRAME: take_frame(st, m); break;
	case SP_R_LOST:
		if (sp_map_u64(m, "lost", &v))
			st->lost_records += v;
		break;
	case SP_R_MODULE:
		if (sp_map_u64(m, "id", &v) && v < 100000 && sp_map_str(m, "path", &s, &n)) {
			if (v >= st->nmodpaths) {
				if (SP_ALLOC_GROW(st->modpaths, v + 1, st->allocmodpaths) < 0)
					sp_die(SP_EXIT_FATAL, "out of memory");
				memset(st->modpaths + st->nmodpaths, 0,
				       (v + 1 - st->nmodpaths) * sizeof(*st->modpaths));
				st->nmodpaths = v + 1;
			}
			free(st->modpaths[v]);
			st->modpaths[v] = strndup(s, n);
		}
		break;
	case SP_R_PROCESS: case SP_R_EXEC: case SP_R_COMM: case SP_R_THREAD:
		sp_map_u64(m, "pid", &pid);
		if (!sp_map_u64(m, "tid", &tid))
			tid = pid;
		if (sp_map_str(m, "comm", &s, &n)) {
			if (pid == tid || rec->type == SP_R_PROCESS)
				set_name(count_get(&st->procs, (uint32_t)pid, 0), s, n);
			set_name(count_get(&st->threads, (uint32_t)pid, (uint32_t)tid), s, n);
		}
		break;
	case SP_R_FORK:
		sp_map_u64(m, "pid", &pid);
		sp_map_u64(m, "tid", &tid);
		if (sp_map_u64(m, "ppid", &v) && v != pid) {
			struct named_count *p = count_get(&st->procs, (uint32_t)v, 0);
			char name[64];
			snprintf(name, sizeof(name), "%s", p->comm);
			set_name(count_get(&st->procs, (uint32_t)pid, 0), name, strlen(name));
		}
		break;
	case SP_R_SAMPLE:
		sp_map_u64(m, "pid", &pid);
		sp_map_u64(m, "tid", &tid);
		st->sample_records++;
		if (sp_map_u64(m, "period", &v))
			st->period_sum += v;
		if (sp_map_u64(m, "time", &v)) {
			if (!st->first_time || v < st->first_time)
				st->first_time = v;
			if (v > st->last_time)
				st->last_time = v;
		}
		count_get(&st->procs, (uint32_t)pid, 0)->samples++;
		count_get(&st->threads, (uint32_t)pid, (uint32_t)tid)->samples++;
		break;
	default:
		break;
	}
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static int cmp_count(const void *a, const void *b)
{
	const struct named_count *x = a, *y = b;
	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct modcount *x = a, *y = b;
	return x->address_only < y->address_only ? 1 : x->address_only > y->address_only ? -1 : 0;
}

/* One piece of advice: what is wrong, and the exact change. */
struct advice {
	char what[512], fix[768];
};

static void advise(struct advice *a, size_t *n, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void advise(struct advice *a, size_t *n, const char *what, const char *fmt, ...)
{
	if (*n >= 16)
		return;
	snprintf(a[*n].what, sizeof(a[*n].what), "%s", what);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a[*n].fix, sizeof(a[*n].fix), fmt, ap);
	va_end(ap);
	(*n)++;
}

static const char *end_remedy(int e)
{
	switch (e) {
	case SP_END_TRUNCATED: return "raise sp-capture --stack-size (up to 65528)";
	case SP_END_MISSING_MODULE: return "give sp-unwind the binaries: --module-dir DIR (build-id layout) or --root DIR";
	case SP_END_BUILD_ID_MISMATCH: return "the binaries changed after the recording: give the exact files with --module-dir (sp-capture --archive keeps them)";
	case SP_END_NO_CFI: return "build with unwind tables (-fasynchronous-unwind-tables) or frame pointers (-fno-omit-frame-pointer)";
	case SP_END_MAX_DEPTH: return "raise sp-unwind --max-depth";
	case SP_END_NO_USER_STACK: return "the thread ran kernel code only, or the stack copy failed: check error_stats";
	default: return "check the binaries and their unwind tables";
	}
}

static size_t diagnose(const struct stats *st, struct advice *a)
{
	size_t n = 0;
	char what[512];
	if (!st->have_summary) {
		advise(a, &n, "the stream was cut short: it has no summary record, so every count is a lower bound",
		       "let sp-capture end cleanly (SIGINT, --duration, or the target exiting) and keep the whole stream");
	}
	if (st->sample_events > st->samples) {
		snprintf(what, sizeof(what), "%" PRIu64 " of %" PRIu64 " sample events were skipped: "
			 "%" PRIu64 " without pid, %" PRIu64 " without tid, %" PRIu64 " without time, %" PRIu64 " with nothing to unwind",
			 st->sample_events - st->samples, st->sample_events, st->skipped[0], st->skipped[1],
			 st->skipped[2], st->skipped[3]);
		advise(a, &n, what, "samples with nothing to unwind come from kernel-only threads; add --kernel to see their kernel frames");
	}
	double lostp = pct(st->lost, st->samples + st->lost);
	if (st->lost > 0 && lostp >= 0.1) {
		snprintf(what, sizeof(what), "%" PRIu64 " events lost (%.1f%%): the ring buffers overran", st->lost, lostp);
		advise(a, &n, what, "lower -F (now %" PRIu64 "), drain more often (--poll-ms, now %" PRIu64 "), use bigger buffers (--mmap-pages, now %" PRIu64 ", a power of two), or profile fewer processes",
		       st->frequency, st->poll_ms, st->mmap_pages);
	}
	if (st->throttles) {
		snprintf(what, sizeof(what), "the kernel throttled sampling %" PRIu64 " times", st->throttles);
		advise(a, &n, what, "lower -F (now %" PRIu64 "): the kernel lowers kernel.perf_event_max_sample_rate under load", st->frequency);
	}
	if (st->empty && pct(st->empty, st->samples) >= 1) {
		snprintf(what, sizeof(what), "%" PRIu64 " samples (%.1f%%) had no stack: no user stack copy and no kernel frames (error kinds: no_user_stack %" PRIu64 ", no_user_regs %" PRIu64 ")",
			 st->empty, pct(st->empty, st->samples), st->errors[SP_E_NO_USER_STACK], st->errors[SP_E_NO_USER_REGS]);
		advise(a, &n, what, "add --kernel to see where such threads are in the kernel");
	}
	uint64_t trunc = st->have_unwind ? st->uw_ends[SP_END_TRUNCATED] : st->truncated;
	if (trunc && pct(trunc, st->samples) >= 1) {
		snprintf(what, sizeof(what), "%" PRIu64 " stacks (%.1f%%) were truncated: the stack copy ended before the stack did",
			 trunc, pct(trunc, st->samples));
		advise(a, &n, what, "raise sp-capture --stack-size (now %" PRIu64 ", at most 65528)", st->stack_size);
	}
	if (st->have_unwind && st->uw_user && pct(st->uw_complete, st->uw_user) < 95) {
		for (int e = 1; e < SP_END_COUNT; e++) {
			if (e == SP_END_TRUNCATED || !st->uw_ends[e] || pct(st->uw_ends[e], st->uw_user) < 1)
				continue;
			snprintf(what, sizeof(what), "%" PRIu64 " stacks (%.1f%%) ended early: %s",
				 st->uw_ends[e], pct(st->uw_ends[e], st->uw_user),
				 sp_unwind_end_description((enum sp_unwind_end)e));
			advise(a, &n, what, "%s", end_remedy(e));
		}
	}
	if (st->have_symbolize && st->frames && pct(st->address_only, st->frames) >= 10) {
		snprintf(what, sizeof(what), "%.1f%% of frames have no name (address-only)", pct(st->address_only, st->frames));
		advise(a, &n, what, "keep the binaries where they were recorded, or give sp-symbolize --module-dir, --debug-dir, or a debuginfod server (DEBUGINFOD_URLS); install debug packages (-dbgsym)");
	}
	if (st->opt_kernel && !st->kernel_enabled) {
		advise(a, &n, "kernel frames were asked for (--kernel) but the kernel denied them: the recording is user-only",
		       "grant the recorder CAP_PERFMON (setcap cap_perfmon+ep sp-capture), run it as root, or lower kernel.perf_event_paranoid to 1 on the recording host");
	}
	return n;
}

/* A number with three decimals, as the report has always shown them. */
static void jw_fixed3(struct sp_jw *j, const char *key, double v)
{
	char t[48];
	snprintf(t, sizeof(t), "%.3f", v);
	sp_jw_key(j, key);
	sp_jw_raw(j, t, strlen(t));
}

static void counts_json(struct sp_jw *j, const char *key, const struct counts *c,
			size_t top, bool threads)
{
	sp_jw_key(j, key);
	sp_jw_array_begin(j);
	for (size_t i = 0; i < c->n && i < top; i++) {
		sp_jw_object_begin(j);
		sp_jw_kv_u64(j, "pid", c->v[i].pid);
		if (threads)
			sp_jw_kv_u64(j, "tid", c->v[i].tid);
		sp_jw_kv_str(j, "comm", c->v[i].comm);
		sp_jw_kv_u64(j, "samples", c->v[i].samples);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
}

/* The diagnosis: a list of problems and the change that fixes each. */
static void advice_json(struct sp_jw *j, const struct advice *a, size_t na)
{
	sp_jw_key(j, "diagnosis");
	sp_jw_array_begin(j);
	for (size_t i = 0; i < na; i++) {
		sp_jw_object_begin(j);
		sp_jw_kv_str(j, "problem", a[i].what);
		sp_jw_kv_str(j, "advice", a[i].fix);
		sp_jw_object_end(j);
	}
	sp_jw_array_end(j);
}

static void json_out(struct sp_buf *b, FILE *out)
{
	sp_buf_addc(b, '\n');
	if (b->oom)
		sp_die(SP_EXIT_FATAL, "out of memory");
	fwrite(b->p, 1, b->len, out);
	sp_buf_release(b);
}

static double effective_rate(const struct stats *st)
{
	/* cpu-clock periods are nanoseconds of CPU time between samples. */
	return st->sample_records && st->period_sum ?
		1e9 / ((double)st->period_sum / (double)st->sample_records) : 0;
}

static void report_json(const struct stats *st, const struct advice *a, size_t na, size_t top, FILE *out)
{
	struct sp_buf b = SP_BUF_INIT;
	struct sp_jw j;
	sp_jw_init(&j, &b);
	sp_jw_object_begin(&j);
	sp_jw_kv_str(&j, "stage", st->stage);
	sp_jw_kv_u64(&j, "segments", st->segments);
	sp_jw_kv_bool(&j, "complete", st->have_summary);
	sp_jw_key(&j, "recording");
	sp_jw_object_begin(&j);
	sp_jw_kv_str(&j, "hostname", st->hostname);
	sp_jw_kv_str(&j, "kernel", st->kernel);
	sp_jw_kv_str(&j, "arch", st->arch);
	sp_jw_kv_u64(&j, "duration_ns", st->duration_ns ? st->duration_ns : st->last_time - st->first_time);
	sp_jw_kv_u64(&j, "requested_rate", st->frequency);
	jw_fixed3(&j, "effective_rate", effective_rate(st));
	sp_jw_kv_u64(&j, "stack_size", st->stack_size);
	sp_jw_kv_bool(&j, "kernel_requested", st->opt_kernel);
	sp_jw_kv_bool(&j, "kernel_enabled", st->kernel_enabled);
	sp_jw_kv_u64(&j, "poll_ms", st->poll_ms);
	sp_jw_kv_u64(&j, "mmap_pages", st->mmap_pages);
	if (st->has_start_ts)
		sp_jw_kv_u64(&j, "start_timestamp_us", st->start_ts);
	if (st->has_interval)
		sp_jw_kv_u64(&j, "sample_interval_us", st->interval);
	sp_jw_object_end(&j);
	sp_jw_key(&j, "summary");
	sp_jw_object_begin(&j);
	sp_jw_kv_u64(&j, "sample_events", st->sample_events);
	sp_jw_kv_u64(&j, "samples", st->samples);
	sp_jw_kv_u64(&j, "lost_events", st->lost);
	sp_jw_kv_u64(&j, "empty_stack_samples", st->empty);
	sp_jw_kv_u64(&j, "truncated_frame_markers", st->truncated);
	sp_jw_kv_u64(&j, "ignored_user_callchain_frames", st->ignored_user);
	sp_jw_kv_bool(&j, "kernel_enabled", st->kernel_enabled);
	sp_jw_kv_u64(&j, "skipped_no_pid", st->skipped[0]);
	sp_jw_kv_u64(&j, "skipped_no_tid", st->skipped[1]);
	sp_jw_kv_u64(&j, "skipped_no_time", st->skipped[2]);
	sp_jw_kv_u64(&j, "skipped_no_frames", st->skipped[3]);
	sp_jw_kv_u64(&j, "throttle_events", st->throttles);
	sp_jw_key(&j, "error_stats");
	sp_jw_array_begin(&j);
	for (int e = 0; e < SP_E_COUNT; e++) {
		if (!st->errors[e])
			continue;
		sp_jw_object_begin(&j);
		sp_jw_kv_str(&j, "kind", sp_error_kind_name((enum sp_error_kind)e));
		sp_jw_kv_u64(&j, "count", st->errors[e]);
		sp_jw_kv_str(&j, "description", sp_error_kind_description((enum sp_error_kind)e));
		sp_jw_object_end(&j);
	}
	sp_jw_array_end(&j);
	sp_jw_object_end(&j);
	jw_fixed3(&j, "lost_pct", pct(st->lost, st->samples + st->lost));
	sp_jw_kv_u64(&j, "sample_records", st->sample_records);
	counts_json(&j, "processes", &st->procs, top, false);
	counts_json(&j, "threads", &st->threads, top, true);
	if (st->have_unwind) {
		sp_jw_key(&j, "unwinding");
		sp_jw_object_begin(&j);
		sp_jw_kv_u64(&j, "samples", st->uw_samples);
		sp_jw_kv_u64(&j, "user_samples", st->uw_user);
		sp_jw_kv_u64(&j, "complete", st->uw_complete);
		jw_fixed3(&j, "complete_pct", pct(st->uw_complete, st->uw_user));
		jw_fixed3(&j, "frames_per_sample",
			  st->uw_samples ? (double)st->uw_frames / (double)st->uw_samples : 0);
		sp_jw_key(&j, "failures");
		sp_jw_object_begin(&j);
		for (int e = 1; e < SP_END_COUNT; e++)
			sp_jw_kv_u64(&j, sp_unwind_end_name((enum sp_unwind_end)e), st->uw_ends[e]);
		sp_jw_object_end(&j);
		sp_jw_object_end(&j);
	}
	if (st->have_symbolize) {
		sp_jw_key(&j, "symbolization");
		sp_jw_object_begin(&j);
		sp_jw_kv_u64(&j, "frames", st->frames);
		sp_jw_key(&j, "origins");
		sp_jw_object_begin(&j);
		for (int i = 0; i < 6; i++)
			sp_jw_kv_u64(&j, origin_names[i], st->origins[i]);
		sp_jw_object_end(&j);
		jw_fixed3(&j, "address_only_pct", pct(st->address_only, st->frames));
		sp_jw_kv_u64(&j, "modules_missing", st->modules_missing);
		sp_jw_kv_u64(&j, "modules_mismatched", st->modules_mismatched);
		sp_jw_key(&j, "modules_lacking_symbols");
		sp_jw_array_begin(&j);
		size_t k = 0;
		for (size_t i = 0; i < st->nmods && k < top; i++) {
			if (!st->mods[i].address_only)
				continue;
			k++;
			sp_jw_object_begin(&j);
			sp_jw_kv_str(&j, "path", st->mods[i].path);
			sp_jw_kv_u64(&j, "address_only", st->mods[i].address_only);
			sp_jw_kv_u64(&j, "frames", st->mods[i].frames);
			sp_jw_object_end(&j);
		}
		sp_jw_array_end(&j);
		sp_jw_object_end(&j);
	}
	advice_json(&j, a, na);
	sp_jw_object_end(&j);
	json_out(&b, out);
}

static void report_text(const struct stats *st, const struct advice *a, size_t na, size_t top, FILE *out)
{
	uint64_t dur = st->duration_ns ? st->duration_ns : st->last_time - st->first_time;
	fprintf(out, "recording: %s stream, %u segment%s, %s\n", st->stage, st->segments,
		st->segments == 1 ? "" : "s", st->have_summary ? "complete" : "CUT SHORT (no summary)");
	fprintf(out, "  host %s, kernel %s, %s\n", st->hostname, st->kernel, st->arch);
	fprintf(out, "  duration %.3f s, rate %" PRIu64 " Hz requested, %.0f Hz effective, stack window %" PRIu64 " bytes\n",
		(double)dur / 1e9, st->frequency, effective_rate(st), st->stack_size);
	fprintf(out, "  kernel frames: %s%s\n", st->kernel_enabled ? "recorded" : "not recorded",
		st->opt_kernel && !st->kernel_enabled ? " (asked for, but denied)" : "");
	if (st->has_start_ts || st->has_interval)
		fprintf(out, "  metadata: start timestamp %" PRIu64 " us, sample interval %" PRIu64 " us\n",
			st->start_ts, st->interval);
	fprintf(out, "counts:\n");
	fprintf(out, "  sample_events %" PRIu64 ", samples %" PRIu64 ", lost_events %" PRIu64 " (%.2f%%)\n",
		st->sample_events, st->samples, st->lost, pct(st->lost, st->samples + st->lost));
	fprintf(out, "  empty_stack_samples %" PRIu64 ", truncated_frame_markers %" PRIu64
		", ignored_user_callchain_frames %" PRIu64 ", throttling %" PRIu64 "\n",
		st->empty, st->truncated, st->ignored_user, st->throttles);
	fprintf(out, "  skipped: no pid %" PRIu64 ", no tid %" PRIu64 ", no time %" PRIu64 ", no frames %" PRIu64 "\n",
		st->skipped[0], st->skipped[1], st->skipped[2], st->skipped[3]);
	fprintf(out, "processes (top %zu):\n", top);
	for (size_t i = 0; i < st->procs.n && i < top; i++)
		fprintf(out, "  %8" PRIu64 "  %s (pid %u)\n", st->procs.v[i].samples, st->procs.v[i].comm, st->procs.v[i].pid);
	fprintf(out, "threads (top %zu):\n", top);
	for (size_t i = 0; i < st->threads.n && i < top; i++)
		fprintf(out, "  %8" PRIu64 "  %s (pid %u, tid %u)\n", st->threads.v[i].samples,
			st->threads.v[i].comm, st->threads.v[i].pid, st->threads.v[i].tid);
	if (st->have_unwind) {
		fprintf(out, "unwinding: %.1f%% of %" PRIu64 " stacks reach their thread's entry, %.1f frames per sample\n",
			pct(st->uw_complete, st->uw_user), st->uw_user,
			st->uw_samples ? (double)st->uw_frames / (double)st->uw_samples : 0);
		for (int e = 1; e < SP_END_COUNT; e++)
			if (st->uw_ends[e])
				fprintf(out, "  %8" PRIu64 "  %s: %s\n", st->uw_ends[e],
					sp_unwind_end_name((enum sp_unwind_end)e),
					sp_unwind_end_description((enum sp_unwind_end)e));
	}
	if (st->have_symbolize) {
		fprintf(out, "symbolization: %" PRIu64 " frames, %.1f%% address-only; missing files %" PRIu64 ", mismatched %" PRIu64 "\n",
			st->frames, pct(st->address_only, st->frames), st->modules_missing, st->modules_mismatched);
		for (int i = 0; i < 6; i++)
			if (st->origins[i])
				fprintf(out, "  %8" PRIu64 "  %s\n", st->origins[i], origin_names[i]);
		size_t k = 0;
		for (size_t i = 0; i < st->nmods && k < top; i++)
			if (st->mods[i].address_only) {
				if (!k++)
					fprintf(out, "  modules most lacking symbols:\n");
				fprintf(out, "  %8" PRIu64 "  of %" PRIu64 " frames in %s\n", st->mods[i].address_only,
					st->mods[i].frames, st->mods[i].path);
			}
	}
	bool any = false;
	for (int e = 0; e < SP_E_COUNT; e++)
		if (st->errors[e]) {
			if (!any)
				fprintf(out, "error_stats:\n");
			any = true;
			fprintf(out, "  %8" PRIu64 "  %s: %s\n", st->errors[e],
				sp_error_kind_name((enum sp_error_kind)e),
				sp_error_kind_description((enum sp_error_kind)e));
		}
	fprintf(out, "diagnosis:%s\n", na ? "" : " nothing to change");
	for (size_t i = 0; i < na; i++)
		fprintf(out, "  - %s\n    -> %s\n", a[i].what, a[i].fix);
}

/* --system: can this host profile?  A kernel setting, or -1 when unreadable. */
static long read_setting(const char *path)
{
	int64_t v;
	return sp_read_i64_file(path, &v) == 0 ? (long)v : -1;
}

static bool try_event(bool kernel)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_CPU_CLOCK, .sample_freq = 99, .freq = 1,
				     .exclude_kernel = !kernel, .exclude_hv = 1, .disabled = 1 };
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* A python3.12 or later: on PATH, or under pyenv's versions folder. */
static bool find_python(char *out, size_t len)
{
	const char *home = getenv("HOME");
	char dirs[2][512];
	if (getenv("PYENV_ROOT"))
		snprintf(dirs[0], sizeof(dirs[0]), "%s/versions", getenv("PYENV_ROOT"));
	else
		snprintf(dirs[0], sizeof(dirs[0]), "%s/.pyenv/versions", home ? home : "/root");
	snprintf(dirs[1], sizeof(dirs[1]), "/usr/bin");
	for (int d = 0; d < 2; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;
		while (dir && (e = readdir(dir))) {
			int maj, min;
			const char *n = e->d_name;
			if (d == 1 && strncmp(n, "python", 6) == 0)
				n += 6;
			if (sscanf(n, "%d.%d", &maj, &min) == 2 && (maj > 3 || (maj == 3 && min >= 12)) &&
			    (d == 0 || strspn(n, "0123456789.") == strlen(n))) {
				snprintf(out, len, d == 0 ? "%s/%s/bin/python3" : "%s/python%s", dirs[d], n);
				if (access(out, X_OK) == 0) {
					closedir(dir);
					return true;
				}
			}
		}
		if (dir)
			closedir(dir);
	}
	return false;
}

static int report_system(bool json, FILE *out)
{
	long paranoid = read_setting("/proc/sys/kernel/perf_event_paranoid");
	long kptr = read_setting("/proc/sys/kernel/kptr_restrict");
	long maxrate = read_setting("/proc/sys/kernel/perf_event_max_sample_rate");
	long mlock = read_setting("/proc/sys/kernel/perf_event_mlock_kb");
	bool perfmon = sp_cap_effective(38), sysadmin = sp_cap_effective(21);
	bool user_ok = try_event(false), kernel_ok = try_event(true);
	char py[1024] = "";
	bool have_py = find_python(py, sizeof(py));
	struct advice a[8];
	size_t n = 0;
	if (!user_ok)
		advise(a, &n, "perf events cannot be opened at all",
		       "lower kernel.perf_event_paranoid to 2 or less (now %ld), or grant CAP_PERFMON", paranoid);
	if (!kernel_ok)
		advise(a, &n, "kernel frames (--kernel) are not allowed for this user",
		       "grant CAP_PERFMON (setcap cap_perfmon+ep sp-capture), run as root, or set kernel.perf_event_paranoid to 1 (now %ld)", paranoid);
	if (kptr > 0 && geteuid() != 0 && !sysadmin)
		advise(a, &n, "kernel symbol addresses read as zero for this user (kernel.kptr_restrict)",
		       "save kallsyms as root (sp-capture --kallsyms-out as root), or set kernel.kptr_restrict to 0 (now %ld)", kptr);
	if (!have_py)
		advise(a, &n, "no Python 3.12 or later found: Python frames need -X perf",
		       "install python3.12 or later to profile Python code by name");
	if (json) {
		struct sp_buf b = SP_BUF_INIT;
		struct sp_jw j;
		sp_jw_init(&j, &b);
		sp_jw_object_begin(&j);
		sp_jw_kv_i64(&j, "perf_event_paranoid", paranoid);
		sp_jw_kv_i64(&j, "kptr_restrict", kptr);
		sp_jw_kv_i64(&j, "max_sample_rate", maxrate);
		sp_jw_kv_i64(&j, "perf_event_mlock_kb", mlock);
		sp_jw_kv_bool(&j, "root", geteuid() == 0);
		sp_jw_kv_bool(&j, "cap_perfmon", perfmon);
		sp_jw_kv_bool(&j, "cap_sys_admin", sysadmin);
		sp_jw_kv_bool(&j, "user_sampling", user_ok);
		sp_jw_kv_bool(&j, "kernel_sampling", kernel_ok);
		sp_jw_kv_str(&j, "python_with_perf", have_py ? py : "");
		advice_json(&j, a, n);
		sp_jw_object_end(&j);
		json_out(&b, out);
	} else {
		fprintf(out, "this host:\n");
		fprintf(out, "  kernel.perf_event_paranoid %ld, kernel.kptr_restrict %ld\n", paranoid, kptr);
		fprintf(out, "  kernel.perf_event_max_sample_rate %ld Hz, perf_event_mlock_kb %ld\n", maxrate, mlock);
		fprintf(out, "  running as %s; CAP_PERFMON %s, CAP_SYS_ADMIN %s\n", geteuid() == 0 ? "root" : "a user",
			perfmon ? "yes" : "no", sysadmin ? "yes" : "no");
		fprintf(out, "  user-space sampling: %s; kernel sampling (--kernel): %s\n",
			user_ok ? "allowed" : "DENIED", kernel_ok ? "allowed" : "denied");
		fprintf(out, "  Python with -X perf: %s\n", have_py ? py : "none found");
		fprintf(out, "diagnosis:%s\n", n ? "" : " ready to profile");
		for (size_t i = 0; i < n; i++)
			fprintf(out, "  - %s\n    -> %s\n", a[i].what, a[i].fix);
	}
	return user_ok ? SP_EXIT_OK : SP_EXIT_FATAL;
}

static double parse_pct(const char *arg, const char *opt)
{
	char *end;
	double v = strtod(arg, &end);
	if (end == arg || *end || !(v >= 0 && v <= 100))
		sp_usage_error("invalid %s '%s': a percentage from 0 to 100", opt, arg);
	return v;
}

int main(int argc, char **argv)
{
	enum { JSON = 256, TOP, CHECK, MAX_LOST, MAX_TRUNC, MIN_COMPLETE, MAX_ADDR, SYSTEM };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, JSON },
		{ "top", required_argument, NULL, TOP },
		{ "check", no_argument, NULL, CHECK },
		{ "max-lost-pct", required_argument, NULL, MAX_LOST },
		{ "max-truncated-pct", required_argument, NULL, MAX_TRUNC },
		{ "min-complete-pct", required_argument, NULL, MIN_COMPLETE },
		{ "max-address-only-pct", required_argument, NULL, MAX_ADDR },
		{ "system", no_argument, NULL, SYSTEM },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, check = false, system_report = false;
	double max_lost = -1, max_trunc = -1, min_complete = -1, max_addr = -1;
	uint64_t top = 10;
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		switch (c) {
		case JSON: json = true; break;
		case TOP:
			if (sp_parse_u64(optarg, 1000000, &top) < 0 || top == 0)
				sp_usage_error("invalid --top '%s'", optarg);
			break;
		case CHECK: check = true; break;
		case MAX_LOST: max_lost = parse_pct(optarg, "--max-lost-pct"); break;
		case MAX_TRUNC: max_trunc = parse_pct(optarg, "--max-truncated-pct"); break;
		case MIN_COMPLETE: min_complete = parse_pct(optarg, "--min-complete-pct"); break;
		case MAX_ADDR: max_addr = parse_pct(optarg, "--max-address-only-pct"); break;
		case SYSTEM: system_report = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	if (system_report && optind < argc)
		sp_usage_error("--system reads no stream");
	if (!check && (max_lost >= 0 || max_trunc >= 0 || min_complete >= 0 || max_addr >= 0))
		sp_usage_error("the thresholds apply with --check");
	if (system_report)
		return report_system(json, stdout);

	struct stats st = { 0 };
	int status = SP_EXIT_OK;
	int nin = argc - optind;
	for (int i = 0; i < (nin ? nin : 1); i++) {
		const char *path = nin ? argv[optind + i] : NULL;
		int fd = sp_open_input(path);
		struct sp_reader *r = sp_reader_new(fd, path ? path : "-");
		if (!r)
			sp_die(SP_EXIT_FATAL, "out of memory");
		struct sp_record rec;
		enum sp_read_status rs;
		while ((rs = sp_reader_next(r, &rec)) == SP_READ_RECORD)
			take_record(&st, &rec, sp_reader_header(r));
		if (rs == SP_READ_ERROR) {
			sp_warn("'%s': %s", path ? path : "-", sp_reader_error(r));
			status = SP_EXIT_PARTIAL;
			st.have_summary = false;
		} else if (sp_reader_records(r) > 0 && !sp_reader_saw_summary(r)) {
			status = SP_EXIT_PARTIAL;
		}
		sp_reader_free(r);
		if (fd != STDIN_FILENO)
			close(fd);
	}
	/* Counts before the summary arrived (a stream cut short). */
	if (!st.have_summary && !st.samples)
		st.samples = st.sample_events = st.sample_records;
	if (!st.have_summary && !st.lost)
		st.lost = st.lost_records;
	/* A thread known only from samples goes by its process's name. */
	for (size_t i = 0; i < st.threads.n; i++)
		if (!st.threads.v[i].comm[0])
			for (size_t j = 0; j < st.procs.n; j++)
				if (st.procs.v[j].pid == st.threads.v[i].pid)
					snprintf(st.threads.v[i].comm, sizeof(st.threads.v[i].comm), "%s",
						 st.procs.v[j].comm);
	if (st.procs.n)
		qsort(st.procs.v, st.procs.n, sizeof(*st.procs.v), cmp_count);
	if (st.threads.n)
		qsort(st.threads.v, st.threads.n, sizeof(*st.threads.v), cmp_count);
	if (st.nmods)
		qsort(st.mods, st.nmods, sizeof(*st.mods), cmp_mod);
	struct advice adv[16];
	size_t na = diagnose(&st, adv);
	if (json)
		report_json(&st, adv, na, top, stdout);
	else
		report_text(&st, adv, na, top, stdout);

	if (check) {
		double lost = pct(st.lost, st.samples + st.lost);
		uint64_t tr = st.have_unwind ? st.uw_ends[SP_END_TRUNCATED] : st.truncated;
		double trp = pct(tr, st.samples);
		double comp = pct(st.uw_complete, st.uw_user);
		double addr = pct(st.address_only, st.frames);
		bool over = false;
		if (max_lost >= 0 && lost > max_lost)
			over = true, sp_warn("check: lost %.2f%% > %.2f%%", lost, max_lost);
		if (max_trunc >= 0 && trp > max_trunc)
			over = true, sp_warn("check: truncated %.2f%% > %.2f%%", trp, max_trunc);
		if (min_complete >= 0 && (!st.have_unwind || comp < min_complete))
			over = true, sp_warn("check: complete %.2f%% < %.2f%%%s", comp, min_complete,
					     st.have_unwind ? "" : " (the stream is not unwound)");
		if (max_addr >= 0 && (!st.have_symbolize || addr > max_addr))
			over = true, sp_warn("check: address-only %.2f%% > %.2f%%%s", addr, max_addr,
					     st.have_symbolize ? "" : " (the stream is not symbolized)");
		if (over && status == SP_EXIT_OK)
			status = EXIT_CHECK;
	}
	for (size_t i = 0; i < st.nmods; i++)
		free(st.mods[i].path);
	free(st.mods);
	for (size_t i = 0; i < st.nmodpaths; i++)
		free(st.modpaths[i]);
	free(st.modpaths);
	free(st.procs.v);
	sp_u64map_release(&st.procs.index, NULL);
	free(st.threads.v);
	sp_u64map_release(&st.threads.index, NULL);
	return status;
}

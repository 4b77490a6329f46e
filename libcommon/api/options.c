/* SPDX-License-Identifier: MIT
 * struct sp_options: the recording options a recorder is created with,
 * checked as they are set, and turned into the capture layer's options
 * (capture/recorder.h) when the recorder is made.  Also the names of
 * the error kinds a summary counts.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "capture/recorder.h"
#include "stream/vocab.h"
#include "util/procfs.h"

_Static_assert(SP_E_COUNT <= SP_ERROR_KINDS_MAX, "sp_summary.errors holds every error kind");

struct sp_options {
	uint64_t rate;			/* Hz, or SP_RATE_MAX */
	uint64_t period;		/* every so many events, not at the rate; 0: none */
	uint32_t stack_size;
	bool kernel, inherit;
	bool rate_set;			/* a tracepoint samples at the rate only when set */
	bool stack_size_set;		/* refused with frame-pointer call graphs */
	bool call_graph_fp;
	bool off_cpu;
	struct sp_event events[SP_MAX_EVENTS];	/* none: cpu-clock */
	size_t nevents;
	bool has_start_timestamp, has_sample_interval;
	uint64_t start_timestamp_us, sample_interval_us;
};

struct sp_options *sp_options_new(void)
{
	struct sp_options *o = calloc(1, sizeof(*o));
	if (!o) {
		sp_error_publish_new(SP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	o->rate = SP_DEFAULT_FREQUENCY;
	o->stack_size = SP_DEFAULT_STACK_SIZE;
	return o;
}

void sp_options_free(struct sp_options *o)
{
	free(o);
}

int sp_options_set_rate(struct sp_options *o, uint64_t hz)
{
	SP_API_CHECK(o, -1);
	if (hz == 0)
		return sp_error_publish_new(SP_ERR_INVALID, "sample rate 0: give a positive "
					    "number of Hz, or SP_RATE_MAX");
	if (o->period)
		return sp_error_publish_new(SP_ERR_INVALID, "a period of %llu events is set: "
					    "give either a rate or a period, not both",
					    (unsigned long long)o->period);
	o->rate = hz;
	o->rate_set = true;
	return 0;
}

int sp_options_set_stack_size(struct sp_options *o, uint32_t bytes)
{
	SP_API_CHECK(o, -1);
	if (bytes == 0 || bytes % 8 || bytes > SP_MAX_STACK_SIZE)
		return sp_error_publish_new(SP_ERR_INVALID, "stack size %u: give a positive "
					    "multiple of 8, at most %u bytes", bytes,
					    SP_MAX_STACK_SIZE);
	if (o->call_graph_fp)
		return sp_error_publish_new(SP_ERR_INVALID, "stack size %u: frame-pointer call "
					    "graphs copy no stack; set SP_CALL_GRAPH_DWARF first",
					    bytes);
	o->stack_size = bytes;
	o->stack_size_set = true;
	return 0;
}

int sp_options_set_kernel(struct sp_options *o, bool on)
{
	SP_API_CHECK(o, -1);
	o->kernel = on;
	return 0;
}

int sp_options_set_inherit(struct sp_options *o, bool on)
{
	SP_API_CHECK(o, -1);
	o->inherit = on;
	return 0;
}

/* Parses name into *ev, published on failure. */
static int parse_event(const char *name, struct sp_event *ev)
{
	struct sp_error err = { 0 };
	if (strcmp(name, "off-cpu") == 0)
		return sp_error_publish_new(SP_ERR_UNSUPPORTED, "'off-cpu' is not an event to "
					    "sample on: ask for off-CPU time with "
					    "sp_options_set_off_cpu()");
	if (sp_event_parse(name, ev, &err) < 0) {
		/* A name that is no event stays what it was before tracepoints: unsupported. */
		if (err.code == SP_ERR_INVALID)
			err.code = SP_ERR_UNSUPPORTED;
		return sp_error_publish(&err);
	}
	return 0;
}

int sp_options_set_event(struct sp_options *o, const char *name)
{
	SP_API_CHECK(o, -1);
	SP_API_CHECK(name, -1);
	struct sp_event ev;
	if (parse_event(name, &ev) < 0)
		return -1;
	o->events[0] = ev;
	o->nevents = 1;
	return 0;
}

int sp_options_add_event(struct sp_options *o, const char *name)
{
	SP_API_CHECK(o, -1);
	SP_API_CHECK(name, -1);
	/* Off-CPU time takes one of the recording's events. */
	size_t max = SP_MAX_EVENTS - (o->off_cpu ? 1 : 0);
	if (o->nevents >= max)
		return sp_error_publish_new(SP_ERR_LIMIT, "event '%.64s': a recording has at "
					    "most %d events%s", name, SP_MAX_EVENTS,
					    o->off_cpu ? ", off-CPU time one of them" : "");
	struct sp_event ev;
	if (parse_event(name, &ev) < 0)
		return -1;
	for (size_t i = 0; i < o->nevents; i++)
		if (strcmp(o->events[i].name, ev.name) == 0)
			return sp_error_publish_new(SP_ERR_INVALID, "event '%s' is added twice",
						    ev.name);
	o->events[o->nevents++] = ev;
	return 0;
}

int sp_options_set_period(struct sp_options *o, uint64_t events)
{
	SP_API_CHECK(o, -1);
	if (events == 0)
		return sp_error_publish_new(SP_ERR_INVALID, "period 0: give a positive number "
					    "of events");
	if (o->rate_set)
		return sp_error_publish_new(SP_ERR_INVALID, "a sample rate is set: give either "
					    "a rate or a period, not both");
	o->period = events;
	return 0;
}

int sp_options_set_call_graph(struct sp_options *o, enum sp_call_graph mode)
{
	SP_API_CHECK(o, -1);
	if (mode != SP_CALL_GRAPH_DWARF && mode != SP_CALL_GRAPH_FP)
		return sp_error_publish_new(SP_ERR_INVALID, "%s: unknown call graph mode %d",
					    __func__, (int)mode);
	if (mode == SP_CALL_GRAPH_FP && o->stack_size_set)
		return sp_error_publish_new(SP_ERR_INVALID, "a stack size of %u bytes is set: "
					    "frame-pointer call graphs copy no stack, so give "
					    "either a stack size or SP_CALL_GRAPH_FP", o->stack_size);
	o->call_graph_fp = mode == SP_CALL_GRAPH_FP;
	return 0;
}

int sp_options_set_off_cpu(struct sp_options *o, bool on)
{
	SP_API_CHECK(o, -1);
	if (on && !o->off_cpu && o->nevents >= SP_MAX_EVENTS)
		return sp_error_publish_new(SP_ERR_LIMIT, "off-CPU time takes one of the %d "
					    "events a recording may have: %zu are set",
					    SP_MAX_EVENTS, o->nevents);
	o->off_cpu = on;
	return 0;
}

int sp_options_set_start_timestamp_us(struct sp_options *o, uint64_t us)
{
	SP_API_CHECK(o, -1);
	o->has_start_timestamp = true;
	o->start_timestamp_us = us;
	return 0;
}

int sp_options_set_sample_interval_us(struct sp_options *o, uint64_t us)
{
	SP_API_CHECK(o, -1);
	o->has_sample_interval = true;
	o->sample_interval_us = us;
	return 0;
}

uint64_t sp_max_sample_rate(void)
{
	return sp_kernel_max_sample_rate();
}

int sp_options_to_capture(const struct sp_options *o, struct sp_capture_options *co,
			  struct sp_error *err)
{
	uint64_t cap = sp_kernel_max_sample_rate(), rate = o->rate;
	if (o->period) {
		/* Sampled by period, the rate is not asked of the kernel. */
	} else if (rate == SP_RATE_MAX) {
		if (!cap)
			return sp_error_set(err, SP_ERR_UNSUPPORTED, "cannot read the kernel's "
					    "cap on the sample rate "
					    "(/proc/sys/kernel/perf_event_max_sample_rate)");
		rate = cap;
	} else if (cap && rate > cap) {
		return sp_error_set(err, SP_ERR_LIMIT, "sample rate %llu Hz is above the "
				    "kernel's cap of %llu Hz (kernel.perf_event_max_sample_rate)",
				    (unsigned long long)rate, (unsigned long long)cap);
	}
	memset(co, 0, sizeof(*co));
	co->frequency = rate;
	co->frequency_arg = o->rate == SP_RATE_MAX ? "max" : NULL;
	co->stack_size = o->call_graph_fp ? 0 : o->stack_size;
	co->call_graph_fp = o->call_graph_fp;
	co->kernel = o->kernel;
	co->inherit = o->inherit;
	memcpy(co->events, o->events, o->nevents * sizeof(*o->events));
	co->nevents = o->nevents;
	co->off_cpu = o->off_cpu;
	co->period = o->period;
	co->frequency_given = o->rate_set;
	co->poll_ms = 100;
	co->tool_name = "libstackpulse";
	co->has_start_timestamp = o->has_start_timestamp;
	co->start_timestamp_us = o->start_timestamp_us;
	co->has_sample_interval = o->has_sample_interval;
	co->sample_interval_us = o->sample_interval_us;
	return 0;
}

const char *sp_error_kind_name(unsigned k)
{
	return k < SP_E_COUNT ? sp_errkind_name((enum sp_error_kind)k) : NULL;
}

const char *sp_error_kind_description(unsigned k)
{
	return k < SP_E_COUNT ? sp_errkind_description((enum sp_error_kind)k) : NULL;
}

/* SPDX-License-Identifier: MIT
 * Event names (capture/recorder.h): what -e accepts, turned into the
 * type and config of a perf_event_attr.  A tracepoint's config is its
 * id, read from tracefs where it is mounted.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capture/recorder.h"
#include "util/error.h"
#include "util/procfs.h"

struct known_event {
	const char *name, *alias;
	uint32_t type;
	uint64_t config;
	enum sp_event_kind kind;
	bool in_kernel;
};

static const struct known_event known[] = {
	{ "cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, SP_EVENT_CLOCK },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, SP_EVENT_CLOCK },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, SP_EVENT_SOFTWARE },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
	  SP_EVENT_SOFTWARE, true },
	{ "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
	  SP_EVENT_SOFTWARE, true },
	{ "cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, SP_EVENT_HARDWARE },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, SP_EVENT_HARDWARE },
};

#define NKNOWN (sizeof(known) / sizeof(*known))

/* Where tracefs is mounted, newest place first. */
static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

const char *sp_event_known_names(void)
{
	return "cpu-clock, task-clock, page-faults (faults), context-switches (cs), "
	       "cpu-migrations (migrations), cycles, instructions, or a tracepoint "
	       "SUBSYSTEM:NAME such as sched:sched_switch";
}

void sp_event_default(struct sp_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "%s", known[0].name);
	ev->type = known[0].type;
	ev->config = known[0].config;
	ev->kind = known[0].kind;
}

void sp_event_off_cpu(struct sp_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "off-cpu");
	ev->type = PERF_TYPE_SOFTWARE;
	ev->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	ev->kind = SP_EVENT_OFF_CPU;
	ev->in_kernel = true;
}

/* A tracepoint's subsystem or name: letters, digits and '_' only. */
static bool tp_word(const char *s, size_t n)
{
	if (n == 0 || n > 100)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
		      ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
			return false;
	return true;
}

/* tracefs is root's unless mounted otherwise. */
static int no_access(struct sp_error *err, const char *name, const char *path, int e)
{
	return sp_error_set(err, SP_ERR_PERMISSION, "cannot read the id of tracepoint '%s' "
			    "from '%s': %s (run as root, or let this user read tracefs and "
			    "lower kernel.perf_event_paranoid to 1, or to -1 for every event)",
			    name, path, strerror(e));
}

static int tracepoint(const char *name, const char *colon, struct sp_event *ev,
		      struct sp_error *err)
{
	size_t ns = (size_t)(colon - name), nn = strlen(colon + 1);
	if (!tp_word(name, ns) || !tp_word(colon + 1, nn))
		return sp_error_set(err, SP_ERR_INVALID, "invalid event '%s': a tracepoint is "
				    "SUBSYSTEM:NAME in letters, digits and '_'; known events "
				    "are %s", name, sp_event_known_names());
	char path[300];
	int first_errno = 0;
	const char *first_dir = NULL;
	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(*tracefs_dirs); i++) {
		char events[64];
		snprintf(events, sizeof(events), "%s/events", tracefs_dirs[i]);
		if (access(events, X_OK) < 0) {
			if (!first_dir) {
				first_dir = tracefs_dirs[i];
				first_errno = errno;
			}
			continue;
		}
		snprintf(path, sizeof(path), "%s/%.*s/%s/id", events, (int)ns, name, colon + 1);
		int64_t id;
		if (sp_read_i64_file(path, &id) == 0 && id >= 0) {
			memset(ev, 0, sizeof(*ev));
			snprintf(ev->name, sizeof(ev->name), "%s", name);
			ev->type = PERF_TYPE_TRACEPOINT;
			ev->config = (uint64_t)id;
			ev->kind = SP_EVENT_TRACEPOINT;
			ev->in_kernel = true;
			return 0;
		}
		if (errno == ENOENT)
			return sp_error_set(err, SP_ERR_NOT_FOUND, "no tracepoint '%s': '%s' does "
					    "not exist (list the tracepoints with ls %s/%.*s, or "
					    "perf list tracepoint)", name, path, events, (int)ns, name);
		return no_access(err, name, path, errno);
	}
	snprintf(path, sizeof(path), "%s/events/%.*s/%s/id", first_dir, (int)ns, name, colon + 1);
	if (first_errno == EACCES || first_errno == EPERM)
		return no_access(err, name, path, first_errno);
	return sp_error_set(err, SP_ERR_UNSUPPORTED, "cannot read the id of tracepoint '%s' "
			    "from '%s': tracefs is not mounted (%s): mount it (mount -t tracefs "
			    "nodev %s) and run as root; an unprivileged user also needs "
			    "kernel.perf_event_paranoid lowered to 1, or to -1 for every event",
			    name, path, strerror(first_errno), first_dir);
}

int sp_event_parse(const char *name, struct sp_event *ev, struct sp_error *err)
{
	const char *colon = strchr(name, ':');
	if (colon)
		return tracepoint(name, colon, ev, err);
	for (size_t i = 0; i < NKNOWN; i++)
		if (strcmp(name, known[i].name) == 0 ||
		    (known[i].alias && strcmp(name, known[i].alias) == 0)) {
			memset(ev, 0, sizeof(*ev));
			snprintf(ev->name, sizeof(ev->name), "%s", known[i].name);
			ev->type = known[i].type;
			ev->config = known[i].config;
			ev->kind = known[i].kind;
			ev->in_kernel = known[i].in_kernel;
			return 0;
		}
	return sp_error_set(err, SP_ERR_INVALID, "unknown event '%.64s': known events are %s",
			    name, sp_event_known_names());
}

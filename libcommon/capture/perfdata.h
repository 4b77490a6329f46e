/* SPDX-License-Identifier: MIT
 * Importing a perf.data file (perf record's output, file or pipe mode)
 * into the raw stream.  The kernel records it holds are the ones
 * sp-capture reads from its rings: each is put in the layout the
 * capture layer's converters read (ring.c, sample.c) and goes through
 * the same queue (ordered.c), flushed at perf's FINISHED_ROUND marks.
 * The stream's header comes from perf's header and feature sections
 * (hostname, osrelease, arch, cmdline, version, clock, events), map
 * records get their build-ids from the build-id section.
 *
 * Functions return 0 or -1 with the message on the handle
 * (sp_perf_import_error()); nothing prints.
 */
#ifndef SP_CAPTURE_PERFDATA_H
#define SP_CAPTURE_PERFDATA_H

#include <stdbool.h>
#include <stdint.h>

struct sp_writer;
struct sp_perf_import;

/*
 * A handle reading perf.data from fd (not owned; a file-mode perf.data
 * must be seekable, a pipe-mode one need not be) and writing the raw
 * stream to w (not owned).  tool, argc and argv name the importing tool
 * in the header.  NULL only when memory runs out.
 */
struct sp_perf_import *sp_perf_import_new(int fd, struct sp_writer *w, const char *tool,
					  int argc, char **argv);
void sp_perf_import_free(struct sp_perf_import *im);

/*
 * Reads the whole input and writes the stream, summary last.  Returns
 * 0; 1 when the input was cut short or corrupt at some record (every
 * complete record before it was written, the message says where);
 * -1 when nothing usable could be read or written (not a perf.data,
 * the other byte order, a feature it cannot read, a write error).
 */
int sp_perf_import_run(struct sp_perf_import *im);

const char *sp_perf_import_error(const struct sp_perf_import *im);

/* Counters of a finished import, for the tool's last words. */
struct sp_perf_import_stats {
	uint64_t records, samples, skipped;	/* skipped: records of kinds not imported */
	bool pipe_mode;
};
void sp_perf_import_get_stats(const struct sp_perf_import *im, struct sp_perf_import_stats *s);

#endif

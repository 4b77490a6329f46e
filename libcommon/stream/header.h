/* SPDX-License-Identifier: MIT
 * Building header records: the recording host's identity, and the
 * header a tool writes for a stream it has transformed.  Core layer.
 */
#ifndef SP_HEADER_H
#define SP_HEADER_H

#include <stdbool.h>
#include <msgpack.h>

#include "stream/record.h"

#ifndef SP_VERSION
#define SP_VERSION "0.1.0"
#endif

struct sp_writer;

/*
 * Packs the value of a header's "host" key, a map describing this
 * machine: hostname, kernel release, boot id, architecture, page size,
 * the stream clock (CLOCK_MONOTONIC) and a wall-clock anchor read at
 * the same instant.
 */
void sp_pack_host(struct sp_writer *w);

/*
 * Begins a new raw stream's header record in m: its type, the format's
 * name and version, and stage "raw"; the caller adds the rest and ends m.
 */
struct sp_mapw;
void sp_mapw_raw_header(struct sp_mapw *m, struct sp_writer *w);

/* Packs one entry of a header's "tools" array for this program. */
void sp_pack_tool(struct sp_writer *w, const char *name, int argc, char **argv);

/*
 * Packs a header for the output of a tool that turns a stream at one
 * stage into the next: every key of the input header is copied, "stage"
 * is replaced and the tool is appended to "tools".
 */
void sp_pack_derived_header(struct sp_writer *w, const msgpack_object *in,
			    enum sp_stage stage, const char *tool,
			    int argc, char **argv);

/*
 * Whether a header was written on this host in this boot (its host's
 * boot_id is this machine's): then /proc/kallsyms and this process's vDSO
 * are the recording's own.
 */
bool sp_header_same_boot(const msgpack_object *hdr);

#endif

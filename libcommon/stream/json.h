/* SPDX-License-Identifier: MIT
 * The JSON rendering of stream records (format/sp-stream.md, "JSON
 * rendering", in json.c) and its exact inverse (json_parse.c).  The
 * string escaping and UTF-8 validation they share with the other JSON
 * writers are util/utf8.h's.
 */
#ifndef SP_JSON_H
#define SP_JSON_H

#include <stddef.h>
#include <msgpack.h>

#include "util/error.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/*
 * Appends the JSON rendering of o to b (no newline).  Returns 0, or -1
 * when memory ran out.
 */
int sp_json_render(const msgpack_object *o, struct sp_buf *b);

/* The deepest JSON nesting sp_json_parse() accepts. */
#define SP_JSON_MAX_DEPTH 64

/*
 * Parses one JSON text of len bytes (one line of sp-cat output) and packs
 * the MessagePack value it renders into pk.  Nothing is packed unless the
 * whole text is valid.  Returns 0, or -1 with err set: a message naming
 * the column (1-based byte position) of the fault, and the code
 * SP_ERR_BAD_INPUT, SP_ERR_LIMIT (nesting) or SP_ERR_NOMEM.
 */
int sp_json_parse(const char *text, size_t len, msgpack_packer *pk, struct sp_error *err);

#endif

/*
 * The JSON rendering of stream records (format/sp-stream.md, "JSON
 * rendering") and its exact inverse.  Core layer: no printing.
 */
#ifndef SP_JSON_H
#define SP_JSON_H

#include <stddef.h>
#include <msgpack.h>

/* A growable byte buffer.  p is NUL-terminated when len > 0. */
struct sp_buf {
	char *p;
	size_t len, cap;
	int oom;	/* set when a growth failed; contents are then cut short */
};

void sp_buf_init(struct sp_buf *b);
void sp_buf_release(struct sp_buf *b);
void sp_buf_add(struct sp_buf *b, const void *p, size_t n);
void sp_buf_addc(struct sp_buf *b, char c);
void sp_buf_adds(struct sp_buf *b, const char *s);

/*
 * Appends the JSON rendering of o to b (no newline).  Returns 0, or -1
 * when memory ran out.
 */
int sp_json_render(const msgpack_object *o, struct sp_buf *b);

/*
 * Length of the valid UTF-8 sequence at p (n bytes available), or 0 when
 * it is not one: overlong forms, surrogates and values past U+10FFFF are
 * not valid.
 */
size_t sp_utf8_len(const unsigned char *p, size_t n);

/* The deepest JSON nesting sp_json_parse() accepts. */
#define SP_JSON_MAX_DEPTH 64

/*
 * Parses one JSON text of len bytes (one line of sp-cat output) and packs
 * the MessagePack value it renders into pk.  Nothing is packed unless the
 * whole text is valid.  Returns 0, or -1 with a message in err naming the
 * column (1-based byte position) of the fault.
 */
int sp_json_parse(const char *text, size_t len, msgpack_packer *pk,
		  char *err, size_t errlen);

#endif

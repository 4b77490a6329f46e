/* SPDX-License-Identifier: MIT
 * fuzz-json: feeds the input to sp_json_parse() as one line (what
 * sp-cat --from-json passes it: the bytes before the first newline) and,
 * when it parses, checks that the render -> parse cycle is stable:
 *
 *   line --parse--> A --unpack--> object --render--> R1 --parse--> B
 *   B --unpack--> object --render--> R2
 *
 * A and B must be the same MessagePack bytes and R1 and R2 the same
 * text.  A must be one well-formed MessagePack object, and nothing may
 * be packed when parsing fails.  Any broken invariant calls abort().
 * Nothing is printed on success and everything is freed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json.h"
#include "stream/stream.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/*
 * Parses len bytes at text into sb.  Returns 0 or -1 like sp_json_parse()
 * and checks its error contract.
 */
static int parse(const char *text, size_t len, msgpack_sbuffer *sb)
{
	msgpack_packer pk;
	struct sp_error err;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	memset(&err, 'x', sizeof(err));
	int rc = sp_json_parse(text, len, &pk, &err);
	check(rc == 0 || rc == -1);
	check(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
	if (rc < 0)
		check(sb->size == 0 && strncmp(err.msg, "column ", 7) == 0 &&
		      (err.code == SP_ERR_BAD_INPUT || err.code == SP_ERR_LIMIT ||
		       err.code == SP_ERR_NOMEM));
	else
		check(sb->size > 0 && err.code == SP_ERR_OK && err.msg[0] == '\0');
	return rc;
}

/*
 * Unpacks sb, which must hold exactly one well-formed object, into *obj
 * (memory in zone).  Returns 0, or -1 when the object is nested deeper
 * than msgpack-c's unpacker allows, which sp_json_parse() may produce.
 */
static int unpack(const msgpack_sbuffer *sb, msgpack_zone *zone, msgpack_object *obj)
{
	const char *why = NULL;
	long n = sp_msgpack_frame((const unsigned char *)sb->data, sb->size,
				  SP_MAX_DEPTH, &why);
	size_t off = 0;
	int rc = msgpack_unpack(sb->data, sb->size, &off, zone, obj);

	if (n == -1) {
		/* Only nesting may exceed the stream's limit. */
		check(strstr(why, "nesting") != NULL);
		if (rc == MSGPACK_UNPACK_NOMEM_ERROR)
			return -1;
	} else {
		check(n > 0 && (size_t)n == sb->size);
	}
	check(rc == MSGPACK_UNPACK_SUCCESS && off == sb->size);
	return 0;
}

static void render(const msgpack_object *obj, struct sp_buf *b)
{
	check(sp_json_render(obj, b) == 0);
	check(b->len > 0 && strlen(b->p) == b->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - data) : size;

	/* A copy of exactly the line, so that reading past it is caught. */
	char *line = malloc(len ? len : 1);
	check(line != NULL);
	memcpy(line, data, len);

	msgpack_sbuffer a, b;
	msgpack_zone za, zb;
	msgpack_object oa, ob;
	struct sp_buf r1, r2;
	msgpack_sbuffer_init(&a);
	msgpack_sbuffer_init(&b);
	check(msgpack_zone_init(&za, 2048) && msgpack_zone_init(&zb, 2048));
	sp_buf_init(&r1);
	sp_buf_init(&r2);

	if (parse(line, len, &a) == 0 && unpack(&a, &za, &oa) == 0) {
		render(&oa, &r1);
		check(parse(r1.p, r1.len, &b) == 0);
		check(a.size == b.size && memcmp(a.data, b.data, a.size) == 0);
		check(unpack(&b, &zb, &ob) == 0);
		render(&ob, &r2);
		check(r1.len == r2.len && memcmp(r1.p, r2.p, r1.len) == 0);
	}

	sp_buf_release(&r1);
	sp_buf_release(&r2);
	msgpack_zone_destroy(&za);
	msgpack_zone_destroy(&zb);
	msgpack_sbuffer_destroy(&a);
	msgpack_sbuffer_destroy(&b);
	free(line);
	return 0;
}

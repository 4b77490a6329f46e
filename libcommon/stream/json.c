/* SPDX-License-Identifier: MIT
 * JSON rendering of MessagePack values (format/sp-stream.md, "JSON
 * rendering"); json_parse.c is its exact inverse.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json.h"
#include "util/utf8.h"

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void add_base64(struct sp_buf *b, const unsigned char *p, size_t n)
{
	if (sp_buf_grow(b, (n + 2) / 3 * 4) < 0)
		return;
	char *o = b->p + b->len;
	size_t i;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	b->len = (size_t)(o - b->p);
	b->p[b->len] = '\0';
}

/*
 * A string known to be valid UTF-8.  msgpack-c gives an empty one a NULL
 * pointer, and NULL + 0 is undefined.
 */
static void add_json_string(struct sp_buf *b, const char *s, size_t n)
{
	if (n == 0)
		sp_buf_adds(b, "\"\"");
	else
		sp_json_escape(b, s, n);
}

static void add_double(struct sp_buf *b, double d)
{
	char tmp[40];
	if (isnan(d) || isinf(d)) {
		sp_buf_adds(b, isnan(d) ? "{\"$f64\":\"nan\"}" :
			       d > 0 ? "{\"$f64\":\"inf\"}" : "{\"$f64\":\"-inf\"}");
		return;
	}
	/* The shortest form that reads back as the same double. */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	sp_buf_adds(b, tmp);
	if (!strpbrk(tmp, ".e"))
		sp_buf_adds(b, ".0");
}

static bool map_keys_plain(const msgpack_object_map *m)
{
	for (uint32_t i = 0; i < m->size; i++) {
		const msgpack_object *k = &m->ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR || k->via.str.size == 0 ||
		    k->via.str.ptr[0] == '$' ||
		    !sp_utf8_valid((const unsigned char *)k->via.str.ptr, k->via.str.size))
			return false;
	}
	return true;
}

int sp_json_render(const msgpack_object *o, struct sp_buf *b)
{
	char tmp[48];
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		sp_buf_adds(b, "null");
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		sp_buf_adds(b, o->via.boolean ? "true" : "false");
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		snprintf(tmp, sizeof(tmp), "%" PRIu64, o->via.u64);
		sp_buf_adds(b, tmp);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		snprintf(tmp, sizeof(tmp), "%" PRId64, o->via.i64);
		sp_buf_adds(b, tmp);
		break;
	case MSGPACK_OBJECT_FLOAT32:
		snprintf(tmp, sizeof(tmp), "%.9g", (double)(float)o->via.f64);
		if (isnan(o->via.f64) || isinf(o->via.f64))
			snprintf(tmp, sizeof(tmp), "\"%s\"", isnan(o->via.f64) ? "nan" :
				 o->via.f64 > 0 ? "inf" : "-inf");
		sp_buf_adds(b, "{\"$f32\":");
		sp_buf_adds(b, tmp);
		sp_buf_addc(b, '}');
		break;
	case MSGPACK_OBJECT_FLOAT64:
		add_double(b, o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		if (sp_utf8_valid((const unsigned char *)o->via.str.ptr, o->via.str.size)) {
			add_json_string(b, o->via.str.ptr, o->via.str.size);
		} else {
			sp_buf_adds(b, "{\"$strb\":\"");
			add_base64(b, (const unsigned char *)o->via.str.ptr, o->via.str.size);
			sp_buf_adds(b, "\"}");
		}
		break;
	case MSGPACK_OBJECT_BIN:
		sp_buf_adds(b, "{\"$bin\":\"");
		add_base64(b, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
		sp_buf_adds(b, "\"}");
		break;
	case MSGPACK_OBJECT_EXT:
		snprintf(tmp, sizeof(tmp), "{\"$ext\":%d,\"data\":\"", o->via.ext.type);
		sp_buf_adds(b, tmp);
		add_base64(b, (const unsigned char *)o->via.ext.ptr, o->via.ext.size);
		sp_buf_adds(b, "\"}");
		break;
	case MSGPACK_OBJECT_ARRAY:
		sp_buf_addc(b, '[');
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			if (i)
				sp_buf_addc(b, ',');
			sp_json_render(&o->via.array.ptr[i], b);
		}
		sp_buf_addc(b, ']');
		break;
	case MSGPACK_OBJECT_MAP: {
		const msgpack_object_map *m = &o->via.map;
		bool plain = map_keys_plain(m);
		sp_buf_adds(b, plain ? "{" : "{\"$map\":[");
		for (uint32_t i = 0; i < m->size; i++) {
			if (i)
				sp_buf_addc(b, ',');
			if (plain) {
				sp_json_render(&m->ptr[i].key, b);
				sp_buf_addc(b, ':');
				sp_json_render(&m->ptr[i].val, b);
			} else {
				sp_buf_addc(b, '[');
				sp_json_render(&m->ptr[i].key, b);
				sp_buf_addc(b, ',');
				sp_json_render(&m->ptr[i].val, b);
				sp_buf_addc(b, ']');
			}
		}
		sp_buf_adds(b, plain ? "}" : "]}");
		break;
	}
	}
	return b->oom ? -1 : 0;
}

/* SPDX-License-Identifier: MIT
 * Parsing JSON lines back into MessagePack (see json.h): the exact
 * inverse of sp_json_render(), special objects ($bin, $strb, $f32, $f64,
 * $ext, $map) included.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json.h"
#include "util/alloc.h"

/*
 * The parser builds a small tree first, so that nothing is packed unless
 * the whole line is valid and so that element counts are known.
 */
enum jkind { J_NIL, J_TRUE, J_FALSE, J_UINT, J_INT, J_F64, J_F32, J_STR,
	     J_BIN, J_EXT, J_ARRAY, J_MAP };

struct jnode {
	enum jkind kind;
	union {
		uint64_t u;
		int64_t i;
		double d;
	} v;
	size_t off, len;	/* bytes in the parser's data buffer */
	int ext_type;
	uint32_t count;		/* children; a map has 2 per entry */
	long first, next;	/* node indices, -1 for none */
};

struct jparser {
	const char *s;
	size_t n, pos;
	struct jnode *nodes;
	size_t nnodes, allocnodes;
	struct sp_buf data;	/* decoded strings and binary */
	struct sp_error *err;
	bool failed;
};

static int jfail_code(struct jparser *p, enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records the first fault, at the current column; returns -1. */
static int jfail_code(struct jparser *p, enum sp_err code, const char *fmt, ...)
{
	if (p->failed)
		return -1;
	p->failed = true;
	char why[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return sp_error_set(p->err, code, "column %zu: %s", p->pos + 1, why);
}

/* A fault of the text itself. */
#define jfail(p, ...) jfail_code((p), SP_ERR_BAD_INPUT, __VA_ARGS__)

static long jnew(struct jparser *p, enum jkind kind)
{
	if (SP_ALLOC_GROW(p->nodes, p->nnodes + 1, p->allocnodes) < 0)
		return jfail_code(p, SP_ERR_NOMEM, "out of memory");
	struct jnode *j = &p->nodes[p->nnodes];
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	j->first = j->next = -1;
	return (long)p->nnodes++;
}

/* Appends node child to the children of parent; *last is the child before it, -1 for none. */
static void jlink(struct jparser *p, long parent, long *last, long child)
{
	if (*last < 0)
		p->nodes[parent].first = child;
	else
		p->nodes[*last].next = child;
	*last = child;
	p->nodes[parent].count++;
}

static void jws(struct jparser *p)
{
	while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				 p->s[p->pos] == '\r' || p->s[p->pos] == '\n'))
		p->pos++;
}

static bool jeat(struct jparser *p, char c)
{
	jws(p);
	if (p->pos < p->n && p->s[p->pos] == c) {
		p->pos++;
		return true;
	}
	return false;
}

static int jexpect(struct jparser *p, char c)
{
	if (jeat(p, c))
		return 0;
	return jfail(p, "expected '%c'", c);
}

static void put_utf8(struct sp_buf *b, uint32_t cp)
{
	char o[4];
	size_t k;
	if (cp < 0x80) {
		o[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		o[0] = (char)(0xf0 | cp >> 18);
		o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[3] = (char)(0x80 | (cp & 0x3f));
		k = 4;
	}
	sp_buf_add(b, o, k);
}

static int hex4(struct jparser *p, uint32_t *out)
{
	uint32_t v = 0;
	if (p->n - p->pos < 4)
		return jfail(p, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos++];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return jfail(p, "bad hex digit in \\u escape");
	}
	*out = v;
	return 0;
}

/* Parses a JSON string into the data buffer, at *off for *len bytes. */
static int jstring(struct jparser *p, size_t *off, size_t *len)
{
	jws(p);
	if (p->pos >= p->n || p->s[p->pos] != '"')
		return jfail(p, "expected a string");
	p->pos++;
	*off = p->data.len;
	for (;;) {
		if (p->pos >= p->n)
			return jfail(p, "unterminated string");
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20)
			return jfail(p, "control character in string");
		if (c != '\\') {
			size_t run = p->pos;
			while (p->pos < p->n && p->s[p->pos] != '"' &&
			       p->s[p->pos] != '\\' && (unsigned char)p->s[p->pos] >= 0x20)
				p->pos++;
			sp_buf_add(&p->data, p->s + run, p->pos - run);
			continue;
		}
		p->pos++;
		if (p->pos >= p->n)
			return jfail(p, "unterminated escape");
		char e = p->s[p->pos++];
		uint32_t cp;
		switch (e) {
		case '"': sp_buf_addc(&p->data, '"'); break;
		case '\\': sp_buf_addc(&p->data, '\\'); break;
		case '/': sp_buf_addc(&p->data, '/'); break;
		case 'b': sp_buf_addc(&p->data, '\b'); break;
		case 'f': sp_buf_addc(&p->data, '\f'); break;
		case 'n': sp_buf_addc(&p->data, '\n'); break;
		case 'r': sp_buf_addc(&p->data, '\r'); break;
		case 't': sp_buf_addc(&p->data, '\t'); break;
		case 'u':
			if (hex4(p, &cp) < 0)
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				uint32_t lo;
				if (p->n - p->pos < 2 || p->s[p->pos] != '\\' ||
				    p->s[p->pos + 1] != 'u')
					return jfail(p, "unpaired surrogate");
				p->pos += 2;
				if (hex4(p, &lo) < 0)
					return -1;
				if (lo < 0xdc00 || lo > 0xdfff)
					return jfail(p, "unpaired surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				return jfail(p, "unpaired surrogate");
			}
			put_utf8(&p->data, cp);
			break;
		default:
			return jfail(p, "bad escape '\\%c'", e);
		}
	}
	if (p->data.oom)
		return jfail_code(p, SP_ERR_NOMEM, "out of memory");
	*len = p->data.len - *off;
	return 0;
}

/* The value of a base64 digit (RFC 4648, the standard alphabet), or -1. */
static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes base64 (with padding) in the data buffer, in place. */
static int jbase64(struct jparser *p, size_t off, size_t len, size_t *outlen)
{
	if (len % 4)
		return jfail(p, "base64 length is not a multiple of 4");
	unsigned char *s = (unsigned char *)p->data.p + off, *o = s;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			char c = (char)s[i + (size_t)k];
			if (c == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64val(c)) < 0) {
				return jfail(p, "bad base64 data");
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
			     (uint32_t)v[2] << 6 | (uint32_t)v[3];
		*o++ = (unsigned char)(w >> 16);
		if (pad < 2)
			*o++ = (unsigned char)(w >> 8);
		if (pad < 1)
			*o++ = (unsigned char)w;
	}
	*outlen = (size_t)(o - s);
	return 0;
}

static long jvalue(struct jparser *p, int depth);

static long jnumber(struct jparser *p)
{
	jws(p);
	size_t start = p->pos;
	bool is_float = false;
	if (p->pos < p->n && p->s[p->pos] == '-')
		p->pos++;
	if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9')
		return jfail(p, "expected a value");
	while (p->pos < p->n) {
		char c = p->s[p->pos];
		if (c == '.' || c == 'e' || c == 'E' || c == '+' ||
		    (c == '-' && p->pos > start))
			is_float = true;
		else if (c < '0' || c > '9')
			break;
		p->pos++;
	}
	size_t k = p->pos - start;
	if (k > 400)
		return jfail(p, "number too long");
	char tmp[408];
	memcpy(tmp, p->s + start, k);
	tmp[k] = '\0';
	char *end;
	errno = 0;
	long id;
	if (is_float) {
		double d = strtod(tmp, &end);
		if (*end)
			return jfail(p, "bad number");
		if ((id = jnew(p, J_F64)) < 0)
			return -1;
		p->nodes[id].v.d = d;
	} else if (tmp[0] == '-') {
		long long v = strtoll(tmp, &end, 10);
		if (*end || errno == ERANGE)
			return jfail(p, "integer out of range");
		if ((id = jnew(p, v < 0 ? J_INT : J_UINT)) < 0)
			return -1;
		p->nodes[id].v.i = v;
	} else {
		unsigned long long v = strtoull(tmp, &end, 10);
		if (*end || errno == ERANGE)
			return jfail(p, "integer out of range");
		if ((id = jnew(p, J_UINT)) < 0)
			return -1;
		p->nodes[id].v.u = v;
	}
	return id;
}

static bool data_is(struct jparser *p, size_t off, size_t len, const char *s)
{
	return strlen(s) == len && memcmp(p->data.p + off, s, len) == 0;
}

/* The special objects: {"$bin": ...}, {"$map": ...} and the others. */
static long jspecial(struct jparser *p, size_t koff, size_t klen, int depth)
{
	long id;
	size_t off, len;
	if (jexpect(p, ':') < 0)
		return -1;
	if (data_is(p, koff, klen, "$bin") || data_is(p, koff, klen, "$strb")) {
		bool bin = data_is(p, koff, klen, "$bin");
		if (jstring(p, &off, &len) < 0 || jbase64(p, off, len, &len) < 0)
			return -1;
		if ((id = jnew(p, bin ? J_BIN : J_STR)) < 0)
			return -1;
		p->nodes[id].off = off;
		p->nodes[id].len = len;
	} else if (data_is(p, koff, klen, "$f32") || data_is(p, koff, klen, "$f64")) {
		bool f32 = data_is(p, koff, klen, "$f32");
		jws(p);
		double d;
		if (p->pos < p->n && p->s[p->pos] == '"') {
			if (jstring(p, &off, &len) < 0)
				return -1;
			if (data_is(p, off, len, "nan"))
				d = NAN;
			else if (data_is(p, off, len, "inf"))
				d = INFINITY;
			else if (data_is(p, off, len, "-inf"))
				d = -INFINITY;
			else
				return jfail(p, "expected nan, inf or -inf");
		} else {
			size_t start = p->pos;
			long n = jnumber(p);
			if (n < 0)
				return -1;
			struct jnode *j = &p->nodes[n];
			d = j->kind == J_F64 ? j->v.d : j->kind == J_UINT ?
				(double)j->v.u : (double)j->v.i;
			/* "-0" reads as the integer 0; as a float it is -0.0. */
			if (d == 0 && p->s[start] == '-')
				d = -0.0;
			p->nnodes--;
		}
		if ((id = jnew(p, f32 ? J_F32 : J_F64)) < 0)
			return -1;
		p->nodes[id].v.d = d;
	} else if (data_is(p, koff, klen, "$ext")) {
		long t = jnumber(p);
		if (t < 0)
			return -1;
		struct jnode *j = &p->nodes[t];
		if ((j->kind != J_UINT && j->kind != J_INT) ||
		    (j->kind == J_UINT && j->v.u > 127) || (j->kind == J_INT && j->v.i < -128))
			return jfail(p, "$ext type must be an integer from -128 to 127");
		int type = (int)j->v.i;
		p->nnodes--;
		if (jexpect(p, ',') < 0 || jstring(p, &off, &len) < 0)
			return -1;
		if (!data_is(p, off, len, "data"))
			return jfail(p, "expected key \"data\" in $ext");
		p->data.len = off;
		if (jexpect(p, ':') < 0 || jstring(p, &off, &len) < 0 ||
		    jbase64(p, off, len, &len) < 0)
			return -1;
		if ((id = jnew(p, J_EXT)) < 0)
			return -1;
		p->nodes[id].ext_type = type;
		p->nodes[id].off = off;
		p->nodes[id].len = len;
	} else if (data_is(p, koff, klen, "$map")) {
		if ((id = jnew(p, J_MAP)) < 0 || jexpect(p, '[') < 0)
			return -1;
		long last = -1;
		if (!jeat(p, ']')) {
			do {
				if (jexpect(p, '[') < 0)
					return -1;
				long k = jvalue(p, depth + 1);
				if (k < 0 || jexpect(p, ',') < 0)
					return -1;
				jlink(p, id, &last, k);
				long v = jvalue(p, depth + 1);
				if (v < 0 || jexpect(p, ']') < 0)
					return -1;
				jlink(p, id, &last, v);
				if (p->nodes[id].count >= UINT32_MAX - 2)
					return jfail(p, "too many keys");
			} while (jeat(p, ','));
			if (jexpect(p, ']') < 0)
				return -1;
		}
	} else {
		return jfail(p, "unknown special key '%.*s'", (int)(klen > 32 ? 32 : klen),
			     p->data.p + koff);
	}
	if (jexpect(p, '}') < 0)
		return -1;
	return id;
}

static long jvalue(struct jparser *p, int depth)
{
	if (depth > SP_JSON_MAX_DEPTH)
		return jfail_code(p, SP_ERR_LIMIT, "nesting deeper than %d", SP_JSON_MAX_DEPTH);
	jws(p);
	if (p->pos >= p->n)
		return jfail(p, "expected a value");
	char c = p->s[p->pos];
	long id;
	if (c == '{') {
		p->pos++;
		if (jeat(p, '}'))
			return jnew(p, J_MAP);
		size_t koff, klen;
		if (jstring(p, &koff, &klen) < 0)
			return -1;
		if (klen > 0 && p->data.p[koff] == '$')
			return jspecial(p, koff, klen, depth);
		if ((id = jnew(p, J_MAP)) < 0)
			return -1;
		long last = -1;
		for (;;) {
			long k = jnew(p, J_STR);
			if (k < 0)
				return -1;
			p->nodes[k].off = koff;
			p->nodes[k].len = klen;
			jlink(p, id, &last, k);
			if (jexpect(p, ':') < 0)
				return -1;
			long v = jvalue(p, depth + 1);
			if (v < 0)
				return -1;
			jlink(p, id, &last, v);
			if (p->nodes[id].count >= UINT32_MAX - 2)
				return jfail(p, "too many keys");
			if (!jeat(p, ','))
				break;
			if (jstring(p, &koff, &klen) < 0)
				return -1;
			if (klen > 0 && p->data.p[koff] == '$')
				return jfail(p, "a key starting with '$' outside a $map");
		}
		if (jexpect(p, '}') < 0)
			return -1;
		return id;
	}
	if (c == '[') {
		p->pos++;
		if ((id = jnew(p, J_ARRAY)) < 0)
			return -1;
		if (jeat(p, ']'))
			return id;
		long last = -1;
		do {
			long v = jvalue(p, depth + 1);
			if (v < 0)
				return -1;
			jlink(p, id, &last, v);
			if (p->nodes[id].count == UINT32_MAX)
				return jfail(p, "too many elements");
		} while (jeat(p, ','));
		if (jexpect(p, ']') < 0)
			return -1;
		return id;
	}
	if (c == '"') {
		size_t off, len;
		if (jstring(p, &off, &len) < 0 || (id = jnew(p, J_STR)) < 0)
			return -1;
		p->nodes[id].off = off;
		p->nodes[id].len = len;
		return id;
	}
	static const struct { const char *word; enum jkind kind; } words[] = {
		{ "null", J_NIL }, { "true", J_TRUE }, { "false", J_FALSE },
	};
	for (size_t i = 0; i < 3; i++) {
		size_t wl = strlen(words[i].word);
		if (p->n - p->pos >= wl && memcmp(p->s + p->pos, words[i].word, wl) == 0) {
			p->pos += wl;
			return jnew(p, words[i].kind);
		}
	}
	return jnumber(p);
}

static void jpack(struct jparser *p, long id, msgpack_packer *pk)
{
	const struct jnode *j = &p->nodes[id];
	/* data.p is NULL until a string is parsed, and NULL + 0 is undefined. */
	const char *data = p->data.p ? p->data.p + j->off : "";
	switch (j->kind) {
	case J_NIL: msgpack_pack_nil(pk); break;
	case J_TRUE: msgpack_pack_true(pk); break;
	case J_FALSE: msgpack_pack_false(pk); break;
	case J_UINT: msgpack_pack_uint64(pk, j->v.u); break;
	case J_INT: msgpack_pack_int64(pk, j->v.i); break;
	case J_F64: msgpack_pack_double(pk, j->v.d); break;
	case J_F32: msgpack_pack_float(pk, (float)j->v.d); break;
	case J_STR:
		msgpack_pack_str(pk, j->len);
		msgpack_pack_str_body(pk, data, j->len);
		break;
	case J_BIN:
		msgpack_pack_bin(pk, j->len);
		msgpack_pack_bin_body(pk, data, j->len);
		break;
	case J_EXT:
		msgpack_pack_ext(pk, j->len, (int8_t)j->ext_type);
		msgpack_pack_ext_body(pk, data, j->len);
		break;
	case J_ARRAY:
	case J_MAP:
		if (j->kind == J_ARRAY)
			msgpack_pack_array(pk, j->count);
		else
			msgpack_pack_map(pk, j->count / 2);
		for (long c = j->first; c >= 0; c = p->nodes[c].next)
			jpack(p, c, pk);
		break;
	}
}

int sp_json_parse(const char *text, size_t len, msgpack_packer *pk, struct sp_error *err)
{
	struct jparser p = { .s = text, .n = len, .err = err };
	sp_buf_init(&p.data);
	sp_error_clear(err);
	long root = jvalue(&p, 0);
	if (root >= 0) {
		jws(&p);
		if (p.pos != p.n)
			root = jfail(&p, "unexpected text after the value");
	}
	if (root >= 0 && p.data.oom)
		root = jfail_code(&p, SP_ERR_NOMEM, "out of memory");
	if (root >= 0)
		jpack(&p, root, pk);
	free(p.nodes);
	sp_buf_release(&p.data);
	return root >= 0 ? 0 : -1;
}

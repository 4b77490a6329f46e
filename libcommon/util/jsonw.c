/* SPDX-License-Identifier: MIT */
/* The JSON writer (jsonw.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonw.h"
#include "util/utf8.h"

void sp_jw_init(struct sp_jw *j, struct sp_buf *b)
{
	memset(j, 0, sizeof(*j));
	j->b = b;
}

/* Before any value or key: the comma that separates it from the last. */
static void sep(struct sp_jw *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		sp_buf_addc(j->b, ',');
	j->need_comma[j->depth] = true;
}

static void jw_open(struct sp_jw *j, char c)
{
	sep(j);
	sp_buf_addc(j->b, c);
	if (j->depth < SP_JW_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void jw_close(struct sp_jw *j, char c)
{
	sp_buf_addc(j->b, c);
	if (j->depth > 0)
		j->depth--;
}

void sp_jw_object_begin(struct sp_jw *j) { jw_open(j, '{'); }
void sp_jw_object_end(struct sp_jw *j) { jw_close(j, '}'); }
void sp_jw_array_begin(struct sp_jw *j) { jw_open(j, '['); }
void sp_jw_array_end(struct sp_jw *j) { jw_close(j, ']'); }

void sp_jw_key(struct sp_jw *j, const char *key)
{
	sep(j);
	sp_json_escape(j->b, key, strlen(key));
	sp_buf_addc(j->b, ':');
	j->after_key = true;
}

void sp_jw_strn(struct sp_jw *j, const char *s, size_t n)
{
	sep(j);
	sp_json_escape(j->b, s, n);
}

void sp_jw_str(struct sp_jw *j, const char *s)
{
	sp_jw_strn(j, s, strlen(s));
}

/* Decimal digits without printf: numbers are most of what exporters write. */
static void add_digits(struct sp_buf *b, uint64_t v, bool minus)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (minus)
		*--p = '-';
	sp_buf_add(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void sp_jw_u64(struct sp_jw *j, uint64_t v)
{
	sep(j);
	add_digits(j->b, v, false);
}

void sp_jw_i64(struct sp_jw *j, int64_t v)
{
	sep(j);
	add_digits(j->b, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void sp_jw_double(struct sp_jw *j, double v)
{
	sep(j);
	if (!isfinite(v)) {
		sp_buf_adds(j->b, "null");
		return;
	}
	char tmp[40];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	sp_buf_adds(j->b, tmp);
}

void sp_jw_bool(struct sp_jw *j, bool v)
{
	sep(j);
	sp_buf_adds(j->b, v ? "true" : "false");
}

void sp_jw_null(struct sp_jw *j)
{
	sep(j);
	sp_buf_adds(j->b, "null");
}

void sp_jw_raw(struct sp_jw *j, const char *json, size_t n)
{
	sep(j);
	sp_buf_add(j->b, json, n);
}

/* sp_jw_kv_TYPE(): the key, then sp_jw_TYPE() of the value. */
#define KV(type, ctype) \
	void sp_jw_kv_##type(struct sp_jw *j, const char *key, ctype v) \
	{ \
		sp_jw_key(j, key); \
		sp_jw_##type(j, v); \
	}
KV(str, const char *)
KV(u64, uint64_t)
KV(i64, int64_t)
KV(double, double)
KV(bool, bool)

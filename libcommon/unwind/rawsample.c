/* SPDX-License-Identifier: MIT */
/* A raw sample's keys that unwinding consumes (rawsample.h). */
#include <pthread.h>
#include <string.h>

#include "stream/record.h"
#include "stream/stream.h"
#include "unwind/rawsample.h"

static const struct { const char *s; uint32_t n; } raw_keys[RK_COUNT] = {
#define RAW_NAME(e, s) { s, sizeof(s) - 1 },
	SP_RAW_SAMPLE_KEYS(RAW_NAME)
#undef RAW_NAME
};

/*
 * Which of the keys k is, or RK_COUNT; the search starts at *at, past
 * the key found last (a writer puts them in this order), and moves it.
 */
static enum sp_rawkey raw_key_from(const struct sp_rawval *k, int *at)
{
	if (k->kind != SP_RAW_STR)
		return RK_COUNT;
	for (int n = 0, i = *at; n < RK_COUNT; n++, i = i + 1 < RK_COUNT ? i + 1 : 0)
		if (raw_keys[i].n == k->u && sp_raw_bytes_eq(raw_keys[i].s, k->p, raw_keys[i].n)) {
			*at = i + 1 < RK_COUNT ? i + 1 : 0;
			return (enum sp_rawkey)i;
		}
	return RK_COUNT;
}

/* Takes one pair of a raw sample: the first value of each key, as sp_map_get() finds it. */
static void raw_sample_take(struct sp_raw_sample *rs, const struct sp_rawval *k,
			    const struct sp_rawval *v, int *at)
{
	enum sp_rawkey key = raw_key_from(k, at);
	if (key < RK_COUNT) {
		if (rs->v[key].kind == SP_RAW_NONE)
			rs->v[key] = *v;
	} else if (rs->nothers < SP_RAW_OTHERS) {
		rs->others[rs->nothers].p = k->at;
		rs->others[rs->nothers++].len = (size_t)(v->end - k->at);
	} else {
		rs->many_others = true;
	}
}

/* The keys by their index in the sample's schema (a pair's id). */
#define MAX_IDS 64
static unsigned char by_id[MAX_IDS];
static pthread_once_t by_id_once = PTHREAD_ONCE_INIT;

static void index_ids(void)
{
	for (int i = 0; i < MAX_IDS; i++)
		by_id[i] = RK_COUNT;
	for (int k = 0; k < RK_COUNT; k++) {
		int id = sp_record_key_index(SP_R_SAMPLE, raw_keys[k].s);
		if (id >= 0 && id < MAX_IDS)
			by_id[id] = (unsigned char)k;
	}
}

/* A pair the reader found: its key known by its id. */
static void raw_pair_take(struct sp_raw_sample *rs, const struct sp_rawpair *pr)
{
	enum sp_rawkey key = pr->id == SP_KEY_TYPE ? RK_T :
			     pr->id >= 0 && pr->id < MAX_IDS ? (enum sp_rawkey)by_id[pr->id] :
			     RK_COUNT;
	if (key < RK_COUNT) {
		if (rs->v[key].kind == SP_RAW_NONE)
			rs->v[key] = pr->val;
	} else if (rs->nothers < SP_RAW_OTHERS) {
		rs->others[rs->nothers].p = pr->key.at;
		rs->others[rs->nothers++].len = (size_t)(pr->val.end - pr->key.at);
	} else {
		rs->many_others = true;
	}
}

bool sp_raw_sample_read(const struct sp_record *rec, struct sp_raw_sample *rs)
{
	for (int i = 0; i < RK_COUNT; i++)
		rs->v[i].kind = SP_RAW_NONE;
	rs->nothers = 0;
	rs->many_others = false;
	rs->raw = rec->raw;
	rs->len = rec->raw_len;
	int at = 0;
	if (rec->pairs && rec->type == SP_R_SAMPLE) {
		pthread_once(&by_id_once, index_ids);
		for (uint32_t i = 0; i < rec->npairs; i++)
			raw_pair_take(rs, &rec->pairs[i]);
		return true;
	}
	struct sp_rawmap m;
	struct sp_rawval k, v;
	int rc;
	if (!sp_rawmap_open(&m, rec->raw, rec->raw_len))
		return false;
	while ((rc = sp_rawmap_next(&m, &k, &v)) > 0)
		raw_sample_take(rs, &k, &v, &at);
	return rc == 0;
}

void sp_raw_sample_others(const struct sp_raw_sample *rs, struct sp_mapw *out)
{
	if (!rs->many_others) {
		for (unsigned i = 0; i < rs->nothers; i++)
			sp_mapw_raw(out, rs->others[i].p, rs->others[i].len);
		return;
	}
	struct sp_rawmap m;
	struct sp_rawval k, v;
	int at = 0;
	sp_rawmap_open(&m, rs->raw, rs->len);
	while (sp_rawmap_next(&m, &k, &v) > 0)
		if (raw_key_from(&k, &at) == RK_COUNT)
			sp_mapw_raw(out, k.at, (size_t)(v.end - k.at));
}

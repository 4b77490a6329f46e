/* SPDX-License-Identifier: MIT */
/* Unit tests of the toolkit: util/alloc, strbuf, hashmap, jsonw, utf8, error. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/hashmap.h"
#include "util/jsonw.h"
#include "util/search.h"
#include "util/sha1.h"
#include "util/strbuf.h"
#include "util/strpool.h"
#include "util/utf8.h"

SP_TEST(alloc_grow_keeps_contents)
{
	int *a = NULL;
	size_t n = 0, alloc = 0;
	for (int i = 0; i < 1000; i++) {
		SP_CHECK(SP_ALLOC_GROW(a, n + 1, alloc) == 0);
		a[n++] = i;
	}
	SP_CHECK(alloc >= 1000);
	int ok = 1;
	for (int i = 0; i < 1000; i++)
		ok &= a[i] == i;
	SP_CHECK(ok);
	free(a);
}

SP_TEST(alloc_grow_failure_leaves_array)
{
	int *a = NULL;
	size_t alloc = 0;
	SP_CHECK(SP_ALLOC_GROW(a, 4, alloc) == 0);
	int *before = a;
	size_t before_alloc = alloc;
	sp_alloc_fail_after = 1;
	SP_CHECK(SP_ALLOC_GROW(a, alloc + 1, alloc) < 0);
	SP_CHECK(errno == ENOMEM);
	SP_CHECK(a == before && alloc == before_alloc);
	SP_CHECK(sp_alloc_fail_after == 0);
	/* Room that is already there needs no growth, so it cannot fail. */
	SP_CHECK(SP_ALLOC_GROW(a, alloc, alloc) == 0);
	free(a);
}

SP_TEST(strbuf_add_and_format)
{
	struct sp_buf b = SP_BUF_INIT;
	SP_CHECK(b.p == NULL && b.len == 0);
	sp_buf_adds(&b, "abc");
	sp_buf_addc(&b, '-');
	sp_buf_addf(&b, "%d/%s", 42, "x");
	SP_CHECK_STR(b.p, "abc-42/x");
	SP_CHECK(b.len == 8);
	/* A long formatted string takes the second path of sp_buf_addf. */
	char big[300];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sp_buf_addf(&b, "%s", big);
	SP_CHECK(b.len == 8 + 299 && b.p[b.len] == '\0' && b.p[b.len - 1] == 'y');
	sp_buf_reset(&b);
	SP_CHECK(b.len == 0 && b.p[0] == '\0');
	size_t len;
	char *p = sp_buf_detach(&b, &len);
	SP_CHECK(p && len == 0 && p[0] == '\0');
	SP_CHECK(b.p == NULL);
	free(p);
}

SP_TEST(strbuf_oom_is_sticky)
{
	struct sp_buf b = SP_BUF_INIT;
	sp_buf_adds(&b, "kept");
	sp_alloc_fail_after = 1;
	sp_buf_add(&b, "x", b.cap);	/* needs a growth, which fails */
	SP_CHECK(b.oom);
	sp_buf_adds(&b, "ignored");
	SP_CHECK_STR(b.p, "kept");
	SP_CHECK(sp_buf_detach(&b, NULL) == NULL);
	SP_CHECK(b.p == NULL && !b.oom);
}

SP_TEST(u64map_put_get_remove)
{
	struct sp_u64map m = SP_U64MAP_INIT;
	static int vals[5000];
	for (uint64_t k = 0; k < 5000; k++)
		SP_CHECK(sp_u64map_put(&m, k * 4096, &vals[k]) == 0);
	SP_CHECK(m.count == 5000);
	SP_CHECK(m.count * 4 <= m.cap * 3);
	int ok = 1;
	for (uint64_t k = 0; k < 5000; k++)
		ok &= sp_u64map_get(&m, k * 4096) == &vals[k];
	SP_CHECK(ok);
	SP_CHECK(sp_u64map_get(&m, 1) == NULL);
	/* Replacing keeps the count. */
	SP_CHECK(sp_u64map_put(&m, 0, &vals[1]) == 0 && m.count == 5000);
	SP_CHECK(sp_u64map_get(&m, 0) == &vals[1]);
	/* Remove every other key; the rest must stay reachable (no tombstones). */
	for (uint64_t k = 0; k < 5000; k += 2)
		SP_CHECK(sp_u64map_remove(&m, k * 4096) != NULL);
	SP_CHECK(sp_u64map_remove(&m, 0) == NULL);
	SP_CHECK(m.count == 2500);
	ok = 1;
	for (uint64_t k = 0; k < 5000; k++)
		ok &= sp_u64map_get(&m, k * 4096) == (k % 2 ? &vals[k] : NULL);
	SP_CHECK(ok);
	size_t i = 0, seen = 0;
	uint64_t key;
	void *val;
	while (sp_u64map_next(&m, &i, &key, &val)) {
		seen++;
		ok &= key % 8192 == 4096 && val == &vals[key / 4096];
	}
	SP_CHECK(ok && seen == 2500);
	sp_u64map_release(&m, NULL);
	SP_CHECK(sp_u64map_get(&m, 4096) == NULL);
}

SP_TEST(u64map_colliding_keys)
{
	/* Keys that share a home slot in a small table, removed from the middle of their run. */
	struct sp_u64map m = SP_U64MAP_INIT;
	static int v[64];
	uint64_t keys[64];
	size_t n = 0;
	SP_CHECK(sp_u64map_put(&m, 0, &v[0]) == 0);
	size_t home = sp_hash_u64(0) & (m.cap - 1);
	for (uint64_t k = 1; n < 8 && k < 100000; k++)
		if ((sp_hash_u64(k) & 15) == home)
			keys[n++] = k;
	for (size_t j = 0; j < n; j++)
		SP_CHECK(sp_u64map_put(&m, keys[j], &v[j + 1]) == 0);
	SP_CHECK(sp_u64map_remove(&m, keys[2]) == &v[3]);
	int ok = 1;
	for (size_t j = 0; j < n; j++)
		ok &= sp_u64map_get(&m, keys[j]) == (j == 2 ? NULL : &v[j + 1]);
	SP_CHECK(ok && sp_u64map_get(&m, 0) == &v[0]);
	sp_u64map_release(&m, NULL);
}

struct word {
	struct sp_hashmap_entry e;
	const char *s;
	int count;
};

static int word_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		    const void *keydata)
{
	const struct word *x = sp_container_of(a, struct word, e);
	const struct word *y = sp_container_of(b, struct word, e);
	return strcmp(x->s, keydata ? (const char *)keydata : y->s);
}

static int freed;

static void word_free(struct sp_hashmap_entry *e)
{
	freed++;
	free(sp_container_of(e, struct word, e));
}

SP_TEST(hashmap_intrusive_strings)
{
	struct sp_hashmap m;
	sp_hashmap_init(&m, word_cmp);
	static const char *const text[] = { "a", "b", "a", "c", "b", "a" };
	char names[200][8];
	for (size_t i = 0; i < 6; i++) {
		struct word key = { .s = text[i] };
		key.e.hash = sp_hash_str(text[i]);
		struct sp_hashmap_entry *e = sp_hashmap_get(&m, &key.e, NULL);
		if (e) {
			sp_container_of(e, struct word, e)->count++;
			continue;
		}
		struct word *w = calloc(1, sizeof(*w));
		w->s = text[i];
		w->count = 1;
		w->e.hash = key.e.hash;
		SP_CHECK(sp_hashmap_add(&m, &w->e) == 0);
	}
	SP_CHECK(m.count == 3);
	struct word key = { .s = "a" };
	key.e.hash = sp_hash_str("a");
	struct sp_hashmap_entry *e = sp_hashmap_get(&m, &key.e, "a");
	SP_CHECK(e && sp_container_of(e, struct word, e)->count == 3);
	/* Enough entries to make the table grow several times. */
	for (int i = 0; i < 200; i++) {
		snprintf(names[i], sizeof(names[i]), "w%d", i);
		struct word *w = calloc(1, sizeof(*w));
		w->s = names[i];
		w->e.hash = sp_hash_str(names[i]);
		SP_CHECK(sp_hashmap_add(&m, &w->e) == 0);
	}
	key.s = "w150";
	key.e.hash = sp_hash_str("w150");
	SP_CHECK(sp_hashmap_get(&m, &key.e, NULL) != NULL);
	e = sp_hashmap_remove(&m, &key.e, NULL);
	SP_CHECK(e && sp_hashmap_get(&m, &key.e, NULL) == NULL);
	word_free(e);
	struct sp_hashmap_iter it;
	sp_hashmap_iter_init(&m, &it);
	size_t seen = 0;
	while (sp_hashmap_iter_next(&it))
		seen++;
	SP_CHECK(seen == 202 && m.count == 202);
	freed = 0;
	sp_hashmap_release(&m, word_free);
	SP_CHECK(freed == 202);
}

SP_TEST(jsonw_nesting_and_escapes)
{
	struct sp_buf b = SP_BUF_INIT;
	struct sp_jw j;
	sp_jw_init(&j, &b);
	sp_jw_object_begin(&j);
	sp_jw_kv_str(&j, "name", "a\"b\\c\n\x01");
	sp_jw_kv_u64(&j, "n", UINT64_MAX);
	sp_jw_kv_i64(&j, "i", -5);
	sp_jw_kv_bool(&j, "ok", true);
	sp_jw_kv_double(&j, "d", 0.1);
	sp_jw_key(&j, "list");
	sp_jw_array_begin(&j);
	sp_jw_u64(&j, 1);
	sp_jw_array_begin(&j);
	sp_jw_array_end(&j);
	sp_jw_object_begin(&j);
	sp_jw_object_end(&j);
	sp_jw_null(&j);
	sp_jw_strn(&j, "\xff" "z", 2);
	sp_jw_array_end(&j);
	sp_jw_object_end(&j);
	SP_CHECK_STR(b.p, "{\"name\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":18446744073709551615,"
		     "\"i\":-5,\"ok\":true,\"d\":0.1,\"list\":[1,[],{},null,\"\\u00ffz\"]}");
	sp_buf_release(&b);
}

SP_TEST(utf8_validation)
{
	SP_CHECK(sp_utf8_valid("plain", 5));
	SP_CHECK(sp_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	SP_CHECK(!sp_utf8_valid("\xc0\xaf", 2));		/* overlong */
	SP_CHECK(!sp_utf8_valid("\xed\xa0\x80", 3));		/* surrogate */
	SP_CHECK(!sp_utf8_valid("\xf4\x90\x80\x80", 4));	/* past U+10FFFF */
	SP_CHECK(!sp_utf8_valid("\xe2\x82", 2));		/* cut short */
	struct sp_buf b = SP_BUF_INIT;
	sp_json_escape(&b, "\xc3\xa9\x80", 3);
	SP_CHECK_STR(b.p, "\"\xc3\xa9\\u0080\"");
	sp_buf_release(&b);
}

SP_TEST(error_convention)
{
	struct sp_error e = { 0 };
	SP_CHECK_STR(sp_error_message(&e), "no error");
	SP_CHECK(sp_error_set(&e, SP_ERR_BAD_INPUT, "record %d", 7) == -1);
	SP_CHECK(e.code == SP_ERR_BAD_INPUT);
	SP_CHECK_STR(sp_error_message(&e), "record 7");
	errno = ENOENT;
	SP_CHECK(sp_error_errno(&e, "cannot open '%s'", "x") == -1);
	SP_CHECK(e.code == SP_ERR_ERRNO && e.errnum == ENOENT && errno == ENOENT);
	SP_CHECK_STR(sp_error_message(&e), "cannot open 'x': No such file or directory");
	errno = ENOMEM;
	sp_error_errno(&e, "grow");
	SP_CHECK(e.code == SP_ERR_NOMEM);
	sp_error_clear(&e);
	SP_CHECK_STR(sp_error_message(&e), "no error");
	SP_CHECK_STR(sp_errmsg(SP_ERR_UNSUPPORTED), "not supported");
	SP_CHECK_STR(sp_errmsg(SP_ERR_COUNT), "unknown error");
}

SP_TEST(alloc_slot_zeroes_new_elements)
{
	uint32_t *a = NULL;
	size_t n = 0, alloc = 0;
	SP_CHECK(SP_ALLOC_SLOT(a, 5, n, alloc) == 0);
	SP_CHECK(n == 6 && a[0] == 0 && a[5] == 0);
	a[5] = 7;
	SP_CHECK(SP_ALLOC_SLOT(a, 3, n, alloc) == 0 && n == 6 && a[5] == 7);
	SP_CHECK(SP_ALLOC_SLOT(a, 100, n, alloc) == 0 && n == 101);
	int zero = 1;
	for (size_t i = 6; i <= 100; i++)
		zero &= a[i] == 0;
	SP_CHECK(zero && a[5] == 7);
	SP_CHECK(sp_alloc_slot((void **)&a, sizeof(*a), UINT64_MAX, &n, &alloc) < 0);
	SP_CHECK(n == 101);
	free(a);
}

SP_TEST(strbuf_read_fd_whole_file)
{
	FILE *f = tmpfile();
	for (int i = 0; i < 100000; i++)
		fprintf(f, "%d\n", i);
	long size = ftell(f);
	rewind(f);
	struct sp_buf b = SP_BUF_INIT;
	sp_buf_adds(&b, ">");
	SP_CHECK(sp_buf_read_fd(&b, fileno(f)) == 0);
	SP_CHECK(b.len == (size_t)size + 1 && b.p[b.len] == '\0');
	SP_CHECK(strncmp(b.p, ">0\n1\n", 5) == 0 && strcmp(b.p + b.len - 6, "99999\n") == 0);
	fclose(f);
	sp_buf_release(&b);
}

SP_TEST(utf8_sanitize_and_numbers)
{
	struct sp_buf b = SP_BUF_INIT;
	sp_utf8_sanitize(&b, "a\xff\xc3\xa9", 4);
	SP_CHECK_STR(b.p, "a\xef\xbf\xbd\xc3\xa9");
	sp_buf_reset(&b);
	sp_json_escape(&b, NULL, 0);
	SP_CHECK_STR(b.p, "\"\"");
	sp_buf_reset(&b);
	struct sp_jw j;
	sp_jw_init(&j, &b);
	sp_jw_array_begin(&j);
	sp_jw_i64(&j, INT64_MIN);
	sp_jw_i64(&j, 0);
	sp_jw_u64(&j, 10);
	sp_jw_array_end(&j);
	SP_CHECK_STR(b.p, "[-9223372036854775808,0,10]");
	sp_buf_release(&b);
}

SP_TEST(partition_point)
{
	static const int v[] = { 1, 3, 3, 5, 9 };
	SP_CHECK(SP_PARTITION_POINT(5, i, v[i] <= 0) == 0);
	SP_CHECK(SP_PARTITION_POINT(5, i, v[i] <= 3) == 3);
	SP_CHECK(SP_PARTITION_POINT(5, i, v[i] < 3) == 1);
	SP_CHECK(SP_PARTITION_POINT(5, i, v[i] <= 9) == 5);
	SP_CHECK(SP_PARTITION_POINT(0, i, v[i] <= 9) == 0);
}

static int values_freed;

static void count_free(void *v)
{
	values_freed++;
	free(v);
}

SP_TEST(u64map_release_frees_every_value)
{
	struct sp_u64map m = SP_U64MAP_INIT;
	for (uint64_t k = 0; k < 100; k++)
		SP_CHECK(sp_u64map_put(&m, k, malloc(8)) == 0);
	free(sp_u64map_remove(&m, 5));	/* a removed value is the caller's */
	values_freed = 0;
	sp_u64map_release(&m, count_free);
	SP_CHECK(values_freed == 99);
	SP_CHECK(m.count == 0 && sp_u64map_get(&m, 7) == NULL);
}

/* FIPS 180 examples, and a file read in pieces. */
SP_TEST(sha1_known_digests)
{
	static const struct { const char *in, *hex; } v[] = {
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		struct sp_sha1 s;
		unsigned char out[20];
		char hex[41];
		sp_sha1_init(&s);
		sp_sha1_update(&s, v[i].in, strlen(v[i].in));
		sp_sha1_final(&s, out);
		for (int k = 0; k < 20; k++)
			snprintf(hex + 2 * k, 3, "%02x", out[k]);
		SP_CHECK(strcmp(hex, v[i].hex) == 0);
	}
	/* A million 'a's through a pipe-sized file read. */
	char path[] = "/tmp/sp-unit-sha1.XXXXXX";
	int fd = mkstemp(path);
	SP_CHECK(fd >= 0);
	if (fd < 0)
		return;
	unlink(path);
	char block[1000];
	memset(block, 'a', sizeof(block));
	for (int i = 0; i < 1000; i++)
		SP_CHECK(write(fd, block, sizeof(block)) == (ssize_t)sizeof(block));
	lseek(fd, 0, SEEK_SET);
	unsigned char out[20];
	char hex[41];
	SP_CHECK(sp_sha1_fd(fd, out) == 0);
	for (int k = 0; k < 20; k++)
		snprintf(hex + 2 * k, 3, "%02x", out[k]);
	SP_CHECK(strcmp(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f") == 0);
	close(fd);
}

static int made;

static char *upper(const char *s, void *arg)
{
	(void)arg;
	made++;
	if (s[0] == 'k')	/* kept as it is */
		return NULL;
	char *u = strdup(s);
	for (char *p = u; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	return u;
}

SP_TEST(strpool_keeps_each_text_once_and_makes_it_once)
{
	struct sp_strpool p;
	sp_strpool_init(&p, upper, NULL);
	made = 0;
	char a[] = "name", b[] = "name";
	const char *x = sp_strpool_get(&p, a), *y = sp_strpool_get(&p, b);
	SP_CHECK(x == y);
	SP_CHECK_STR(x, "NAME");
	SP_CHECK(made == 1);
	SP_CHECK_STR(sp_strpool_get(&p, "keep"), "keep");
	SP_CHECK(sp_strpool_get(&p, "keep") == sp_strpool_get(&p, "keep"));
	SP_CHECK(made == 2);
	SP_CHECK(sp_strpool_get(&p, NULL) == NULL);
	SP_CHECK_STR(sp_strpool_get(&p, ""), "");
	sp_strpool_release(&p);
}

SP_TEST(arena_aligns_and_keeps_every_allocation)
{
	struct sp_arena a = SP_ARENA_INIT;
	unsigned char *v[3000];
	for (int i = 0; i < 3000; i++) {
		size_t n = 1 + (size_t)(i * 37) % 200 + (i == 1500 ? 200000 : 0);
		v[i] = sp_arena_alloc(&a, n);
		SP_CHECK(v[i] != NULL);
		SP_CHECK(((uintptr_t)v[i] & 15) == 0);
		memset(v[i], i & 0xff, n);
	}
	for (int i = 0; i < 3000; i++)
		SP_CHECK(v[i][0] == (unsigned char)(i & 0xff));
	/* Reset keeps the blocks; the next allocations reuse them. */
	sp_arena_reset(&a);
	SP_CHECK(a.used == NULL && a.spare != NULL);
	SP_CHECK(sp_arena_alloc(&a, 100) != NULL && a.used != NULL);
	sp_arena_release(&a);
	SP_CHECK(a.used == NULL && a.spare == NULL);
	SP_CHECK(sp_arena_alloc(&a, 8) != NULL);
	sp_arena_release(&a);
}

/* SPDX-License-Identifier: MIT
 * api-symbolizer-caches: the internal stack cache against no cache.
 * Follows FILE while a recorder writes it, with two symbolizers of the
 * same tail: one keeps resolved stacks (SP_CACHE_INTERNAL), the other
 * keeps none (SP_CACHE_EXTERNAL, and the program caches nothing), so
 * every stack is named afresh.  Whatever the first returns from its
 * cache must read as what the second names now: a cached stack the
 * invalidations should have dropped shows as a mismatch.  Prints
 *
 *	stacks N cached C mismatches M invalidations I
 *
 *	api-symbolizer-caches FILE
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <stackpulse.h>

/* Whether two resolved stacks name the same frames. */
static bool same(const struct sp_symbol *a, ssize_t na, const struct sp_symbol *b, ssize_t nb)
{
	if (na != nb)
		return false;
	for (ssize_t i = 0; i < na; i++)
		if (strcmp(a[i].name, b[i].name) != 0 || a[i].flags != b[i].flags)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: api-symbolizer-caches FILE\n");
		return 2;
	}
	struct sp_tail *t = sp_tail_open(argv[1]);
	struct sp_symbolizer_options *o = sp_symbolizer_options_new();
	struct sp_symbolizer *cached = NULL, *fresh = NULL;
	if (t && o) {
		cached = sp_symbolizer_new(NULL, t, o);
		sp_symbolizer_options_stack_cache(o, SP_CACHE_EXTERNAL);
		fresh = sp_symbolizer_new(NULL, t, o);
	}
	sp_symbolizer_options_free(o);
	if (!cached || !fresh) {
		fprintf(stderr, "api-symbolizer-caches: %s\n", sp_errmsg(-1));
		return 1;
	}
	unsigned long stacks = 0, hits = 0, mismatches = 0, invalidations = 0;
	const struct sp_batch *b;
	int rc;
	while ((rc = sp_tail_poll(t, &b)) == 1) {
		struct sp_invalidation inv, ignored;
		if (sp_symbolizer_update(cached, b, &inv) < 0 ||
		    sp_symbolizer_update(fresh, b, &ignored) < 0) {
			rc = -1;
			break;
		}
		invalidations += inv.all || inv.npids;
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_stack *st = sp_batch_stack(b, i);
			const struct sp_symbol *a, *again, *f;
			ssize_t na = sp_symbolizer_resolve(cached, st, &a);
			ssize_t nagain = sp_symbolizer_resolve(cached, st, &again);
			ssize_t nf = sp_symbolizer_resolve(fresh, st, &f);
			if (na < 0 || nagain != na || nf < 0) {
				rc = -1;
				break;
			}
			stacks++;
			hits += again == a;
			mismatches += !same(a, na, f, nf);
		}
		if (rc < 0)
			break;
		if (!sp_batch_has_more(b) && !sp_batch_count(b)) {
			struct timespec ts = { 0, 50 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	if (rc != 0)
		fprintf(stderr, "api-symbolizer-caches: %s\n", sp_errmsg(-1));
	printf("stacks %lu cached %lu mismatches %lu invalidations %lu\n", stacks, hits,
	       mismatches, invalidations);
	sp_symbolizer_free(cached);
	sp_symbolizer_free(fresh);
	sp_tail_close(t);
	return rc != 0;
}

/* SPDX-License-Identifier: MIT
 * fuzz-symbolizer: reads the input as a recording through a snapshot and
 * names every stack with two symbolizers of it (libcommon/api/
 * symbolizer.c over sym's namer): one with the internal stack cache, one
 * with the external.  Kernel names, perf maps and debuginfod are off, so
 * that only the input decides; module paths the input names are looked up
 * on this host as sp-symbolize would.
 *
 * Checks for every stack: both give the same number of frames with the
 * same names and flags; every name and source is a string, no flag lies
 * outside SP_SYM_*, an origin is one of the two; the internal cache gives
 * the same array for the same stack again.  Any broken invariant calls
 * abort().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stackpulse.h>

#define KNOWN_FLAGS (SP_SYM_HIDDEN | SP_SYM_INLINE | SP_SYM_KERNEL | SP_SYM_JIT)

static volatile unsigned sink;

static void check(int cond)
{
	if (!cond)
		abort();
}

static void touch(const char *s)
{
	check(s != NULL);
	for (; *s; s++)
		sink += (unsigned char)*s;
}

static struct sp_symbolizer *symbolizer(struct sp_snapshot *s, enum sp_stack_cache c)
{
	struct sp_symbolizer_options *o = sp_symbolizer_options_new();
	check(o != NULL);
	check(sp_symbolizer_options_kallsyms(o, "none") == 0);
	check(sp_symbolizer_options_perf_maps(o, SP_PERF_MAP_OFF) == 0);
	check(sp_symbolizer_options_debuginfod(o, false) == 0);
	check(sp_symbolizer_options_set(o, "no-cache", NULL) == 0);
	check(sp_symbolizer_options_stack_cache(o, c) == 0);
	struct sp_symbolizer *sym = sp_symbolizer_new(s, NULL, o);
	sp_symbolizer_options_free(o);
	check(sym != NULL);
	return sym;
}

static void check_frames(const struct sp_symbol *f, ssize_t n)
{
	for (ssize_t i = 0; i < n; i++) {
		touch(f[i].name);
		touch(f[i].source);
		if (f[i].module)
			touch(f[i].module);
		if (f[i].file)
			touch(f[i].file);
		check((f[i].flags & ~KNOWN_FLAGS) == 0);
		check(f[i].origin == SP_SYMBOL_RESOLVED || f[i].origin == SP_SYMBOL_ADDRESS_ONLY);
	}
}

static void check_stack(struct sp_symbolizer *in, struct sp_symbolizer *ex, const struct sp_stack *st)
{
	const struct sp_symbol *a, *again, *b;
	ssize_t na = sp_symbolizer_resolve(in, st, &a);
	check(na >= 0);
	check_frames(a, na);
	check(sp_symbolizer_resolve(in, st, &again) == na && again == a);
	ssize_t nb = sp_symbolizer_resolve(ex, st, &b);
	check(nb == na);
	for (ssize_t i = 0; i < na; i++)
		check(strcmp(a[i].name, b[i].name) == 0 && a[i].flags == b[i].flags);
	sink += sp_symbolizer_is_cacheable(ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("fuzz-symbolizer", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct sp_snapshot *s = NULL;
	if (write(fd, data, size) == (ssize_t)size)
		s = sp_snapshot_open(path);
	if (!s) {
		close(fd);
		return 0;
	}
	struct sp_symbolizer *in = symbolizer(s, SP_CACHE_INTERNAL);
	struct sp_symbolizer *ex = symbolizer(s, SP_CACHE_EXTERNAL);
	const struct sp_batch *b;
	while (sp_snapshot_next(s, &b) > 0) {
		struct sp_invalidation inv;
		check(sp_symbolizer_update(in, b, &inv) == 0);
		check(inv.npids == 0 || inv.pids != NULL);
		check(sp_symbolizer_update(ex, b, NULL) == 0);
		for (size_t i = 0; i < sp_batch_count(b); i++)
			check_stack(in, ex, sp_batch_stack(b, i));
	}
	sp_symbolizer_free(in);
	sp_symbolizer_free(ex);
	sp_snapshot_close(s);
	close(fd);
	return 0;
}

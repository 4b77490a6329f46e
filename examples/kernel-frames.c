/* SPDX-License-Identifier: MIT
 * kernel-frames: the recipe "Kernel frames".  Names the kernel frames of
 * a recording made with kernel frames (sp-capture --kernel, or
 * sp_options_set_kernel()) from a kallsyms saved on the recording host
 * (sp-capture --kallsyms-out FILE), or leaves them addresses with
 * "none", as a symbolizer on another host should rather than use its
 * own kernel's names.  Prints how many kernel frames there were and how
 * many got a name, then each kernel function with its frame count:
 *
 *	kernel frames 812 named 812
 *	entry_SYSCALL_64 203
 *	...
 *
 *	kernel-frames FILE KALLSYMS|none
 */
#define _POSIX_C_SOURCE 200809L	/* strdup() */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

/* Distinct names and their counts, in a table of open addressing. */
struct name {
	char *text;
	unsigned long count;
};

static struct name *table;
static size_t table_size, table_used;

static size_t slot(const struct name *t, size_t size, const char *s)
{
	unsigned long h = 5381;
	for (const char *p = s; *p; p++)
		h = h * 33 + (unsigned char)*p;
	size_t i = h & (size - 1);
	while (t[i].text && strcmp(t[i].text, s) != 0)
		i = (i + 1) & (size - 1);
	return i;
}

static int count(const char *s)
{
	if ((table_used + 1) * 2 > table_size) {
		size_t size = table_size ? table_size * 2 : 256;
		struct name *t = calloc(size, sizeof(*t));
		if (!t)
			return -1;
		for (size_t i = 0; i < table_size; i++)
			if (table[i].text)
				t[slot(t, size, table[i].text)] = table[i];
		free(table);
		table = t;
		table_size = size;
	}
	struct name *n = &table[slot(table, table_size, s)];
	if (!n->text) {
		if (!(n->text = strdup(s)))
			return -1;
		table_used++;
	}
	n->count++;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: kernel-frames FILE KALLSYMS|none\n");
		return 2;
	}
	struct sp_symbolizer_options *o = sp_symbolizer_options_new();
	struct sp_snapshot *snap = NULL;
	struct sp_symbolizer *sym = NULL;
	if (o && sp_symbolizer_options_kallsyms(o, argv[2]) == 0)
		snap = sp_snapshot_open(argv[1]);
	if (snap)
		sym = sp_symbolizer_new(snap, NULL, o);
	sp_symbolizer_options_free(o);
	if (!sym) {
		fprintf(stderr, "kernel-frames: %s\n", sp_errmsg(-1));
		sp_snapshot_close(snap);
		return 1;
	}
	unsigned long frames = 0, named = 0;
	const struct sp_batch *b;
	int rc;
	while ((rc = sp_snapshot_next(snap, &b)) == 1 && sp_symbolizer_update(sym, b, NULL) == 0) {
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_symbol *f;
			ssize_t n = sp_symbolizer_resolve(sym, sp_batch_stack(b, i), &f);
			if (n < 0)
				goto done;
			for (ssize_t j = 0; j < n; j++) {
				if (!(f[j].flags & SP_SYM_KERNEL))
					continue;
				frames++;
				named += f[j].origin == SP_SYMBOL_RESOLVED;
				if (count(f[j].name) < 0) {
					fprintf(stderr, "kernel-frames: out of memory\n");
					return 1;
				}
			}
		}
	}
done:
	if (rc != 0)
		fprintf(stderr, "kernel-frames: %s\n", sp_errmsg(-1));
	printf("kernel frames %lu named %lu\n", frames, named);
	for (size_t i = 0; i < table_size; i++)
		if (table[i].text)
			printf("%s %lu\n", table[i].text, table[i].count);
	sp_symbolizer_free(sym);
	sp_snapshot_close(snap);
	return rc != 0;
}

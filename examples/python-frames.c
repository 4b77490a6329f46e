/* SPDX-License-Identifier: MIT
 * python-frames: the recipe "Python frames", with the guard against a
 * reused PID.  A CPython 3.12+ started with -X perf (or
 * PYTHONPERFSUPPORT=1) writes /tmp/perf-PID.map, which names its Python
 * functions.  A map of that path may as well belong to an earlier
 * process that had the same PID, so the maps are read only for the
 * processes whose latest runtime marker in the recording says CPython.
 *
 * The first pass reads the markers, the second names the frames with
 * perf maps of those processes only, and prints the processes, then
 * each function named by a perf map with its frame count:
 *
 *	python 4242
 *	py::py_inner:/src/pywork.py 1873
 *	...
 *
 *	python-frames FILE
 */
#define _POSIX_C_SOURCE 200809L	/* strdup() */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

#define MAX_PIDS 1024

/* The processes whose latest marker says CPython, in pids; their number. */
static size_t python_pids(const char *path, uint32_t *pids)
{
	struct sp_snapshot *snap = sp_snapshot_open(path);
	const struct sp_batch *b;
	const struct sp_runtime *rt;
	size_t n = 0;
	if (!snap)
		return 0;
	while (sp_snapshot_next(snap, &b) == 1)
		;
	size_t nrt = sp_snapshot_runtimes(snap, &rt);
	for (size_t i = 0; i < nrt; i++) {
		size_t j = 0;
		while (j < n && pids[j] != rt[i].pid)
			j++;
		if (rt[i].cpython && j == n && n < MAX_PIDS)
			pids[n++] = rt[i].pid;
		else if (!rt[i].cpython && j < n)
			pids[j] = pids[--n];	/* the PID now runs something else */
	}
	sp_snapshot_close(snap);
	return n;
}

/* Names from perf maps and their counts; few, so a list does. */
struct name {
	char *text;
	unsigned long count;
};

static struct name *names;
static size_t nnames;

static int count(const char *s)
{
	for (size_t i = 0; i < nnames; i++)
		if (strcmp(names[i].text, s) == 0) {
			names[i].count++;
			return 0;
		}
	struct name *t = realloc(names, (nnames + 1) * sizeof(*t));
	if (!t)
		return -1;
	names = t;
	if (!(names[nnames].text = strdup(s)))
		return -1;
	names[nnames++].count = 1;
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t pids[MAX_PIDS];
	if (argc != 2) {
		fprintf(stderr, "usage: python-frames FILE\n");
		return 2;
	}
	size_t npids = python_pids(argv[1], pids);
	for (size_t i = 0; i < npids; i++)
		printf("python %u\n", pids[i]);

	struct sp_symbolizer_options *o = sp_symbolizer_options_new();
	struct sp_snapshot *snap = NULL;
	struct sp_symbolizer *sym = NULL;
	if (o && sp_symbolizer_options_perf_maps(o, SP_PERF_MAP_PIDS) == 0 &&
	    sp_symbolizer_options_perf_map_pids(o, pids, npids) == 0)
		snap = sp_snapshot_open(argv[1]);
	if (snap)
		sym = sp_symbolizer_new(snap, NULL, o);
	sp_symbolizer_options_free(o);
	if (!sym) {
		fprintf(stderr, "python-frames: %s\n", sp_errmsg(-1));
		sp_snapshot_close(snap);
		return 1;
	}
	const struct sp_batch *b;
	int rc;
	while ((rc = sp_snapshot_next(snap, &b)) == 1 && sp_symbolizer_update(sym, b, NULL) == 0) {
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_symbol *f;
			ssize_t n = sp_symbolizer_resolve(sym, sp_batch_stack(b, i), &f);
			if (n < 0)
				goto done;
			for (ssize_t j = 0; j < n; j++)
				if (strcmp(f[j].source, "perf-map") == 0 && count(f[j].name) < 0) {
					fprintf(stderr, "python-frames: out of memory\n");
					return 1;
				}
		}
	}
done:
	if (rc != 0)
		fprintf(stderr, "python-frames: %s\n", sp_errmsg(-1));
	for (size_t i = 0; i < nnames; i++)
		printf("%s %lu\n", names[i].text, names[i].count);
	sp_symbolizer_free(sym);
	sp_snapshot_close(snap);
	return rc != 0;
}

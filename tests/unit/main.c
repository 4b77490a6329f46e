/* SPDX-License-Identifier: MIT
 * The unit-test driver: runs every test registered by SP_TEST() in the
 * tests/unit files linked into it, and prints TAP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static struct sp_unit_test *tests;
static int current_failed;
static const char *build_dir = ".";

void sp_unit_register(struct sp_unit_test *t)
{
	/* Kept in name order, so the output does not depend on link order. */
	struct sp_unit_test **pp = &tests;
	while (*pp && strcmp((*pp)->name, t->name) < 0)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
}

void sp_unit_fail(const char *file, int line, const char *what)
{
	printf("# %s:%d: check failed: %s\n", file, line, what);
	current_failed = 1;
}

const char *sp_unit_build_dir(void)
{
	return build_dir;
}

int main(int argc, char **argv)
{
	const char *pattern = argc > 1 ? argv[1] : NULL;
	const char *b = getenv("SP_BUILD");
	if (b && *b)
		build_dir = b;
	setvbuf(stdout, NULL, _IOLBF, 0);
	int n = 0, failed = 0;
	for (struct sp_unit_test *t = tests; t; t = t->next)
		if (!pattern || strstr(t->name, pattern))
			n++;
	printf("1..%d\n", n);
	int i = 0;
	for (struct sp_unit_test *t = tests; t; t = t->next) {
		if (pattern && !strstr(t->name, pattern))
			continue;
		current_failed = 0;
		t->fn();
		printf("%sok %d unit: %s\n", current_failed ? "not " : "", ++i, t->name);
		failed += current_failed;
	}
	return failed ? 1 : 0;
}

/* SPDX-License-Identifier: MIT
 * In-process unit tests of the library, in the spirit of git's
 * t/helper: one driver (build/unit/sp-unit) links every layer and runs
 * the tests of every .c file in tests/unit.
 *
 *	SP_TEST(strbuf_grows)
 *	{
 *		struct sp_buf b = SP_BUF_INIT;
 *		sp_buf_adds(&b, "abc");
 *		SP_CHECK(b.len == 3);
 *		SP_CHECK_STR(b.p, "abc");
 *		sp_buf_release(&b);
 *	}
 *
 * A failed check prints the file, line and expression and marks the test
 * failed; the test goes on (so one run shows every failure).  The driver
 * prints TAP ("ok N name" / "not ok N name") and exits 1 when any test
 * failed.  `sp-unit PATTERN` runs the tests whose names contain PATTERN.
 */
#ifndef SP_UNIT_H
#define SP_UNIT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct sp_unit_test {
	const char *name;
	void (*fn)(void);
	struct sp_unit_test *next;
};

void sp_unit_register(struct sp_unit_test *t);
void sp_unit_fail(const char *file, int line, const char *what);

/* The folder of the driver's build (for test inputs such as workloads). */
const char *sp_unit_build_dir(void);

#define SP_TEST(name) \
	static void sp_test_##name(void); \
	static struct sp_unit_test sp_test_rec_##name = { #name, sp_test_##name, NULL }; \
	__attribute__((constructor)) static void sp_test_reg_##name(void) \
	{ sp_unit_register(&sp_test_rec_##name); } \
	static void sp_test_##name(void)

#define SP_CHECK(cond) \
	do { if (!(cond)) sp_unit_fail(__FILE__, __LINE__, #cond); } while (0)

#define SP_CHECK_STR(a, b) \
	do { const char *sp_a_ = (a), *sp_b_ = (b); \
	     if (!sp_a_ || !sp_b_ || strcmp(sp_a_, sp_b_) != 0) \
		sp_unit_fail(__FILE__, __LINE__, #a " equals " #b); } while (0)

#define SP_CHECK_MEM(a, b, n) \
	do { if (memcmp((a), (b), (n)) != 0) \
		sp_unit_fail(__FILE__, __LINE__, #a " equals " #b); } while (0)

#endif

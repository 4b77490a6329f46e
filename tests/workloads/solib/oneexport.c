/* SPDX-License-Identifier: MIT
 * A shared library that exports one function, one_export, which calls
 * two static functions; stripped, only .dynsym names anything in it.
 * Right after one_export stands one_marker, a function symbol without a
 * size (as hand-written assembly leaves them): a symbolizer that lets a
 * symbol without a size reach up to the next symbol names the static
 * functions after it one_marker, which is wrong.  Built with
 * -fno-toplevel-reorder so that the functions keep this order.
 */
#include <stdint.h>

uint64_t one_export(uint64_t n);

static volatile uint64_t sink;

uint64_t one_export(uint64_t n)
{
	extern uint64_t one_inner(uint64_t n) __attribute__((visibility("hidden")));
	uint64_t h = one_inner(n);
	sink = h;
	return h;
}

__asm__(".text\n"
	".globl one_marker\n"
	".type one_marker, @function\n"
	"one_marker:\n"
	"\tret\n");

static __attribute__((noinline)) uint64_t one_leaf(uint64_t n)
{
	uint64_t h = 1469598103934665603u;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ i) * 1099511628211u;
	return h;
}

static __attribute__((noinline)) uint64_t one_middle(uint64_t n)
{
	return one_leaf(n) + one_leaf(n / 2) + 1;
}

__attribute__((visibility("hidden"), noinline)) uint64_t one_inner(uint64_t n)
{
	return one_middle(n) ^ sink;
}

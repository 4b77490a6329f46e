/* SPDX-License-Identifier: MIT
 * Calls the one exported function of liboneexport.so until SECONDS (the
 * first argument, default 2) have passed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

uint64_t one_export(uint64_t n);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 2.0);
	uint64_t h = 0;
	while (now() < end)
		h += one_export(200000);
	return (int)(h & 1) * 0;
}

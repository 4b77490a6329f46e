/* SPDX-License-Identifier: MIT
 * fuzz-aranges: the input as a .debug_aranges section, decoded by
 * sp_aranges_decode() against a .debug_info of 4096 bytes that holds
 * units of 256 bytes, each with its DIE 11 bytes after its start (a
 * DWARF 4 header).
 *
 * It checks that
 *   - the result is SP_ARANGES_OK, SP_ARANGES_ASK_LIBDW or
 *     SP_ARANGES_NOMEM, with no runs unless it is SP_ARANGES_OK;
 *   - the runs are sorted by start, each names one of the units' DIEs,
 *     and no two neighbours name the same unit;
 *   - sp_aranges_find() gives, at each run's start and the bytes around
 *     it and around the end of the last range, no unit below the first
 *     run, and otherwise a run that starts at or below the address with
 *     the next one (if any) starting above it, or one of equal start.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sym/aranges.h"

#define INFO_LEN 4096
#define UNIT_LEN 256

static void check(int cond)
{
	if (!cond)
		abort();
}

static void lookup(const struct sp_aranges *a, uint64_t addr)
{
	uint64_t die = UINT64_MAX;
	bool found = sp_aranges_find(a, addr, &die);
	if (a->nruns == 0 || addr < a->runs[0].lo) {
		check(!found);
		return;
	}
	if (!found) {
		/* Only past the end of the last range. */
		check(addr > a->last_end && addr >= a->runs[a->nruns - 1].lo);
		return;
	}
	size_t i = 0;
	while (i < a->nruns && a->runs[i].die != die)
		i++;
	check(i < a->nruns);
	/* Some run of that unit holds addr: start at or below, the next above. */
	bool holds = false;
	for (size_t k = 0; k < a->nruns; k++)
		if (a->runs[k].die == die && a->runs[k].lo <= addr &&
		    (k + 1 == a->nruns || a->runs[k + 1].lo > addr || a->runs[k + 1].lo == a->runs[k].lo))
			holds = true;
	check(holds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_unit_span units[INFO_LEN / UNIT_LEN];
	for (size_t i = 0; i < INFO_LEN / UNIT_LEN; i++)
		units[i] = (struct sp_unit_span){ i * UNIT_LEN, (i + 1) * UNIT_LEN, i * UNIT_LEN + 11 };
	struct sp_aranges a;
	int rc = sp_aranges_decode(&a, data, size, INFO_LEN, units, INFO_LEN / UNIT_LEN);
	check(rc == SP_ARANGES_OK || rc == SP_ARANGES_ASK_LIBDW || rc == SP_ARANGES_NOMEM);
	if (rc != SP_ARANGES_OK) {
		check(a.nruns == 0 && a.runs == NULL);
		return 0;
	}
	for (size_t i = 0; i < a.nruns; i++) {
		check(a.runs[i].die % UNIT_LEN == 11 && a.runs[i].die < INFO_LEN);
		if (i > 0) {
			check(a.runs[i - 1].lo <= a.runs[i].lo);
			check(a.runs[i - 1].die != a.runs[i].die);
		}
	}
	for (size_t i = 0; i < a.nruns; i++)
		for (int d = -1; d <= 1; d++)
			lookup(&a, a.runs[i].lo + (uint64_t)(int64_t)d);
	for (int d = -1; d <= 1; d++)
		lookup(&a, a.last_end + (uint64_t)(int64_t)d);
	sp_aranges_free(&a);
	return 0;
}

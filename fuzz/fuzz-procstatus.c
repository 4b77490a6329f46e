/* SPDX-License-Identifier: MIT
 * fuzz-procstatus: feeds the input to sp_proc_status_nspid(), the reader
 * of the NSpid: line of /proc/PID/status, to sp_proc_status_tgid(), the
 * reader of its Tgid: line, and to sp_pidfile_parse(), the reader of a
 * service's pid file, each from a heap copy of exactly its bytes (no NUL
 * after them), so that a read past the end is caught.
 *
 * It checks the answer against a second reading done here another way:
 * the first line that starts with "NSpid:", split into fields at blanks;
 * the answer is the last field when there are two or more and every one
 * is a decimal number of at most 32 bits, else 0.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/procfs.h"
#include "util/procns.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* The expected answer, from a NUL-terminated copy of the line. */
static uint32_t expected(const char *data, size_t size)
{
	const char *p = data, *end = data + size;
	while (p < end && !((size_t)(end - p) >= 6 && memcmp(p, "NSpid:", 6) == 0)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	if (p >= end)
		return 0;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t n = (size_t)((nl ? nl : end) - p) - 6;
	char *line = malloc(n + 1);
	check(line != NULL);
	memcpy(line, p + 6, n);
	line[n] = '\0';
	uint32_t last = 0;
	int fields = 0;
	int ok = 1;
	for (char *save = NULL, *tok = strtok_r(line, " \t", &save); tok && ok;
	     tok = strtok_r(NULL, " \t", &save)) {
		ok = strspn(tok, "0123456789") == strlen(tok) &&
		     strtoull(tok, NULL, 10) <= UINT32_MAX;
		/* A NUL in the line ends strtok's view of it; the parser treats it as a bad byte. */
		if (ok)
			last = (uint32_t)strtoull(tok, NULL, 10);
		fields++;
	}
	int has_nul = memchr(p + 6, '\0', n) != NULL;
	free(line);
	if (has_nul)
		return UINT32_MAX;	/* not compared */
	return ok && fields > 1 ? last : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	check(copy != NULL);
	memcpy(copy, data, size);
	uint32_t got = sp_proc_status_nspid(copy, size);
	uint32_t want = expected(copy, size);
	check(want == UINT32_MAX || got == want);
	/* The same bytes give the same answer. */
	check(sp_proc_status_nspid(copy, size) == got);
	/*
	 * Tgid: a number found means the line holds it alone; the NSpid
	 * reader agrees that a one-number line is no namespace of its own.
	 */
	uint32_t tgid = sp_proc_status_tgid(copy, size);
	check(sp_proc_status_tgid(copy, size) == tgid);
	/* A pid file: a pid in range, or 0; and its digits start the text. */
	pid_t pid = sp_pidfile_parse(copy, size);
	check(pid >= 0 && pid <= 4194304);
	check(pid == 0 || (size > 0 && copy[0] >= '0' && copy[0] <= '9'));
	free(copy);
	return 0;
}

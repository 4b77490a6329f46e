/* SPDX-License-Identifier: MIT */
/* How the outputs spell names (see internal.h). */
#include <stdio.h>

#include "fold/internal.h"

void fold_shown_name(char *buf, size_t len, const char *name, size_t n, const char *suffix)
{
	if (n > len - 8)
		n = len - 8;
	for (size_t i = 0; i < n; i++)
		buf[i] = name[i] == ';' ? ':' : name[i];
	snprintf(buf + n, len - n, "%s", suffix);
}

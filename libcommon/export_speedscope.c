/* The speedscope exporter (see fold.h). */
#include <stdio.h>

#include "fold.h"

int sp_fold_write_speedscope(const struct sp_fold_view *v, FILE *out, char *err, size_t errlen)
{
	(void)v;
	(void)out;
	snprintf(err, errlen, "the speedscope format is not available yet");
	return -1;
}

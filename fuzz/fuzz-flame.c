/* SPDX-License-Identifier: MIT
 * fuzz-flame: the input as sp-flame's folded text (one or two counts a
 * line, as sp-fold --off-cpu and --wall write it too): sp_flame_read()
 * takes it from a memfd, sp_flame_finish() lays it out, sp_flame_write()
 * draws it into a memory stream.  The first byte picks the options
 * (inverted, reversed, the kinds palette, a minimum width) so that every
 * layout path is reached.
 *
 * It checks that
 *   - sp_flame_read() returns 0 or -1 with a message, and fills the
 *     input's description: one or two columns, or none for no stack;
 *   - a finished graph is drawn to a complete SVG (its end tag last),
 *     and an empty one is sp_flame_empty().
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fold/flame.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t pick = data[0];
	data++;
	size--;
	int fd = memfd_create("fuzz-flame", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	struct sp_flame_options o = {
		.inverted = pick & 1, .reverse = pick & 2,
		.colors = pick & 4 ? SP_FLAME_COLORS_KINDS : SP_FLAME_COLORS_DEFAULT,
		.minwidth = (pick >> 3) & 3, .minwidth_percent = pick & 32,
	};
	struct sp_flame *f = sp_flame_new(&o);
	check(f != NULL);
	struct sp_flame_input in;
	memset(&in, 0xa5, sizeof(in));
	int rc = sp_flame_read(f, fd, "fuzz", SP_FLAME_AS_IS, &in);
	close(fd);
	check(rc == 0 || rc == -1);
	check(in.columns >= 0 && in.columns <= 2);
	if (rc < 0) {
		check(sp_flame_error(f) && *sp_flame_error(f));
	} else if (sp_flame_finish(f) == 0) {
		char *svg = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&svg, &len);
		check(out != NULL);
		check(sp_flame_write(f, out) == 0);
		check(fclose(out) == 0);
		check(len > 6 && strstr(svg, "</svg>\n") == svg + len - 7);
		if (in.columns == 0)
			check(sp_flame_empty(f));
		free(svg);
	}
	sp_flame_free(f);
	return 0;
}

/* SPDX-License-Identifier: MIT
 * sp-flame: draws folded stacks, sp-fold's or any other tool's, as one
 * self-contained interactive SVG: a flame graph, an icicle graph, or a
 * differential flame graph of two profiles.  The drawing is the fold
 * layer's (fold/flame.h); this is the command line around it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold/flame.h"
#include "tool.h"

/* Long options without a short form. */
enum { OPT_SELF_TEST = 256 };

static void usage(void)
{
	printf("Usage: %s [options] [FOLDED...]\n"
	       "       %s --diff [options] BEFORE AFTER\n"
	       "Draw folded stacks ('root;...;leaf COUNT' lines) as an interactive SVG flame\n"
	       "graph.  FOLDED is '-' or absent for standard input; several are added up.\n"
	       "Lines of two counts ('STACK BEFORE AFTER') draw a differential graph.\n"
	       "\n"
	       "  -o, --output FILE      write the SVG to FILE instead of standard output\n"
	       "  -t, --title TEXT       the title (default \"Flame Graph\")\n"
	       "  -w, --width PX         the picture's width (default %d)\n"
	       "  -m, --minwidth PX|P%%   leave out frames narrower than PX pixels, or than\n"
	       "                         P percent of the width (default %g)\n"
	       "  -c, --colors PALETTE   default (warm colours by name) or kinds (kernel _[k],\n"
	       "                         JIT _[j], inline _[i] and user frames apart)\n"
	       "  -i, --inverted         an icicle graph: the root at the top\n"
	       "  -r, --reverse          reverse each stack before merging: leaves at the root\n"
	       "  -d, --diff             a differential graph of two files, BEFORE and AFTER:\n"
	       "                         widths from AFTER, red for a frame that grew, blue for\n"
	       "                         one that shrank, hatched grey for one that vanished\n"
	       "      --self-test        for the test suite: add the script's self-test, run\n"
	       "                         when the picture's URL ends in #selftest\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, sp_progname, SP_FLAME_DEFAULT_WIDTH, SP_FLAME_DEFAULT_MINWIDTH);
}

/* Parses --minwidth: PX, or P% of the frames' width. */
static void parse_minwidth(const char *s, struct sp_flame_options *o)
{
	char *end;
	double v = s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789.%") == strlen(s) ?
		strtod(s, &end) : -1;
	bool pct = v >= 0 && strcmp(end, "%") == 0;
	if (v < 0 || (*end && !pct))
		sp_usage_error("invalid --minwidth '%s' (pixels such as 0.5, or a percentage "
			       "of the width such as 0.1%%)", s);
	if (pct && v > 100)
		sp_usage_error("invalid --minwidth '%s' (at most 100%%)", s);
	o->minwidth = v;
	o->minwidth_percent = pct;
}

/*
 * Reads each input (standard input when there is none) into the graph,
 * BEFORE and AFTER for --diff, and warns of the lines it skipped.
 * Returns SP_EXIT_OK or SP_EXIT_PARTIAL; sets *two when an input had
 * two counts a line.
 */
static int read_inputs(struct sp_flame *f, char **paths, int n, bool diff, bool *two)
{
	int status = SP_EXIT_OK;
	for (int i = 0; i < (n ? n : 1); i++) {
		const char *path = n ? paths[i] : NULL, *name = path ? path : "-";
		struct sp_flame_input in;
		int fd = sp_open_text_input(path);
		int r = sp_flame_read(f, fd, name, diff ? (enum sp_flame_side)i : SP_FLAME_AS_IS,
				      &in);
		if (fd != STDIN_FILENO)
			close(fd);
		if (r < 0)
			sp_die(SP_EXIT_FATAL, "%s", sp_flame_error(f));
		*two |= in.columns == 2;
		if (in.skipped) {
			sp_warn("'%s': skipped %lu malformed line%s; the first, line %lu: %s",
				name, in.skipped, in.skipped == 1 ? "" : "s", in.first_bad, in.why);
			status = SP_EXIT_PARTIAL;
		}
	}
	return status;
}

/* Draws the stacks of every FOLDED, added up, or of BEFORE and AFTER, as one SVG. */
int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "width", required_argument, NULL, 'w' },
		{ "minwidth", required_argument, NULL, 'm' },
		{ "colors", required_argument, NULL, 'c' },
		{ "inverted", no_argument, NULL, 'i' },
		{ "reverse", no_argument, NULL, 'r' },
		{ "diff", no_argument, NULL, 'd' },
		{ "self-test", no_argument, NULL, OPT_SELF_TEST },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct sp_flame_options o = { .width = SP_FLAME_DEFAULT_WIDTH,
				      .minwidth = SP_FLAME_DEFAULT_MINWIDTH };
	const char *output = NULL, *minwidth = NULL;
	bool diff = false, colors_given = false, two = false;
	uint64_t v;
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "o:t:w:m:c:irdhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 't': o.title = optarg; break;
		case 'w':
			if (sp_parse_u64(optarg, SP_FLAME_MAX_WIDTH, &v) < 0 || v < SP_FLAME_MIN_WIDTH)
				sp_usage_error("invalid --width '%s' (%d to %d pixels)", optarg,
					       SP_FLAME_MIN_WIDTH, SP_FLAME_MAX_WIDTH);
			o.width = (unsigned)v;
			break;
		case 'm': minwidth = optarg; break;
		case 'c':
			if (strcmp(optarg, "default") == 0)
				o.colors = SP_FLAME_COLORS_DEFAULT;
			else if (strcmp(optarg, "kinds") == 0)
				o.colors = SP_FLAME_COLORS_KINDS;
			else
				sp_usage_error("invalid --colors '%s' (default or kinds)", optarg);
			colors_given = true;
			break;
		case 'i': o.inverted = true; break;
		case 'r': o.reverse = true; break;
		case 'd': diff = true; break;
		case OPT_SELF_TEST: o.self_test = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	int nin = argc - optind;
	if (diff && nin != 2)
		sp_usage_error("--diff takes two files, BEFORE and AFTER");
	if (diff && colors_given)
		sp_usage_error("--colors does not apply to --diff: a differential graph is "
			       "coloured by change");
	if (minwidth)
		parse_minwidth(minwidth, &o);

	/* Merge every input into one graph, then lay it out. */
	struct sp_flame *f = sp_flame_new(&o);
	if (!f)
		sp_die(SP_EXIT_FATAL, "out of memory");
	int status = read_inputs(f, argv + optind, nin, diff, &two);
	if (sp_flame_finish(f) < 0)
		sp_die(SP_EXIT_FATAL, "%s", sp_flame_error(f));
	if (two && colors_given)
		sp_warn("--colors does not apply to input of two counts a line: "
			"a differential graph is coloured by change");
	if (sp_flame_empty(f))
		sp_warn("the input holds no samples");

	/* Draw it. */
	FILE *out = sp_output_file(sp_open_output(output, false));
	setvbuf(out, NULL, _IOFBF, 1 << 16);
	if (sp_flame_write(f, out) < 0 && !ferror(out))
		sp_die(SP_EXIT_FATAL, "%s", sp_flame_error(f));
	status = sp_output_close(out, status);
	sp_flame_free(f);
	return status;
}

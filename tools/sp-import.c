/* SPDX-License-Identifier: MIT
 * sp-import: reads a perf.data file (perf record's output, in file mode,
 * or in pipe mode from 'perf record -o -') and writes the raw stream, so
 * that an existing recording runs through sp-unwind, sp-symbolize and
 * sp-fold as if sp-capture had made it.  The reading and the conversion
 * are the capture layer's (capture/perfdata.h); this is its options and
 * its messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/perfdata.h"
#include "stream/stream.h"
#include "tool.h"

static void usage(void)
{
	printf("Usage: %s [options] FILE\n"
	       "Read a perf.data file (perf record's output) and write the raw stackpulse\n"
	       "stream: samples of --call-graph dwarf, fp or -g, or without a call graph,\n"
	       "with the mappings, processes and threads perf recorded.  FILE is '-' for\n"
	       "standard input, which may be perf's pipe mode ('perf record -o -').\n"
	       "\n"
	       "  -o, --output FILE      write the stream to FILE\n"
	       "  -z, --compress[=LEVEL] write it in zstd frames (level 1 to 22, default 1)\n"
	       "  -q, --quiet            no line of counts at the end\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname);
}

/* The perf.data: a regular file or a pipe, never a terminal or a directory. */
static int open_perfdata(const char *path)
{
	int fd = STDIN_FILENO;
	const char *name = path;
	if (strcmp(path, "-") == 0) {
		name = "standard input";
		if (isatty(fd))
			sp_die(SP_EXIT_USAGE, "standard input is a terminal: give a perf.data file, "
			       "or pipe 'perf record -o -' into %s -", sp_progname);
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		sp_die(SP_EXIT_FATAL, "cannot open '%s': %s", path, strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		sp_die(SP_EXIT_FATAL, "cannot read '%s': it is a directory", name);
	return fd;
}

int main(int argc, char **argv)
{
	enum { COMPRESS = 256 };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "compress", optional_argument, NULL, COMPRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	bool quiet = false;
	int c, compress = 0;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "o:zqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'z': compress = sp_parse_compress(NULL); break;
		case COMPRESS: compress = sp_parse_compress(optarg); break;
		case 'q': quiet = true; break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	if (optind == argc)
		sp_usage_error("no perf.data given (a file, or '-' for standard input)");
	const char *input = sp_single_input(argc, argv, optind);
	const char *name = strcmp(input, "-") == 0 ? "standard input" : input;

	int infd = open_perfdata(input);
	int outfd = sp_open_output(output, true);
	struct sp_writer *w = sp_writer_new(outfd, output ? output : "-");
	struct sp_perf_import *im = w ? sp_perf_import_new(infd, w, "sp-import", argc, argv) : NULL;
	if (!w || !im)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_compress_output(w, compress);

	int status = SP_EXIT_OK;
	int st = sp_perf_import_run(im);
	if (st < 0) {
		sp_warn("'%s': %s", name, sp_perf_import_error(im));
		status = SP_EXIT_FATAL;
	} else if (st > 0) {
		sp_warn("'%s': %s", name, sp_perf_import_error(im));
		status = SP_EXIT_PARTIAL;
	}
	struct sp_perf_import_stats s;
	sp_perf_import_get_stats(im, &s);
	if (!quiet && st >= 0)
		fprintf(stderr, "%s: %llu records of '%s' read (%s mode), %llu samples written, "
			"%llu records of kinds not imported\n", sp_progname,
			(unsigned long long)s.records, name, s.pipe_mode ? "pipe" : "file",
			(unsigned long long)s.samples, (unsigned long long)s.skipped);
	if (sp_writer_close(w) < 0) {
		if (errno != EPIPE)
			sp_write_failed(errno);
		status = SP_EXIT_FATAL;
	}
	sp_perf_import_free(im);
	if (infd != STDIN_FILENO)
		close(infd);
	return status;
}

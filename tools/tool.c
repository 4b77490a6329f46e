/* Tool helpers (see tool.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/stream.h"
#include "stream/header.h"
#include "tool.h"

const char *sp_progname = "stackpulse";

void sp_tool_init(const char *argv0)
{
	if (argv0 && *argv0) {
		const char *slash = strrchr(argv0, '/');
		sp_progname = slash ? slash + 1 : argv0;
	}
	signal(SIGPIPE, SIG_IGN);
}

static void vwarn(const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%s: %s\n", sp_progname, msg);
}

void sp_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void sp_die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(status);
}

void sp_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", sp_progname);
	exit(SP_EXIT_USAGE);
}

void *sp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory allocating %zu bytes", n);
	return p;
}

void *sp_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory allocating %zu bytes", n * size);
	return p;
}

void *sp_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		sp_die(SP_EXIT_FATAL, "out of memory allocating %zu bytes", n);
	return q;
}

char *sp_xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		sp_die(SP_EXIT_FATAL, "out of memory");
	return p;
}

size_t sp_parse_max_record(const char *arg)
{
	uint64_t v;
	if (sp_parse_u64(arg, 1u << 30, &v) < 0 || v < 64)
		sp_usage_error("invalid --max-record '%s' (64 to 1073741824)", arg);
	return (size_t)v;
}

int sp_show_version(void)
{
	printf("%s %s\n", sp_progname, SP_VERSION);
	return SP_EXIT_OK;
}

int sp_bad_option(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", sp_progname);
	return SP_EXIT_USAGE;
}

int sp_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

int sp_open_input(const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return STDIN_FILENO;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		sp_die(SP_EXIT_FATAL, "cannot open '%s': %s", path, strerror(errno));
	return fd;
}

int sp_open_output(const char *path, bool binary)
{
	int fd = STDOUT_FILENO;
	if (path && strcmp(path, "-") != 0) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			sp_die(SP_EXIT_FATAL, "cannot create '%s': %s", path,
			       strerror(errno));
	}
	if (binary && isatty(fd))
		sp_die(SP_EXIT_USAGE, "refusing to write a binary stream to a terminal; "
		       "redirect it to a file or a pipe, or use -o FILE");
	return fd;
}

int sp_report_input_end(struct sp_reader *r, int read_status, const char *name,
			const char *done)
{
	if (read_status == SP_READ_ERROR) {
		sp_warn("'%s': %s", name, sp_reader_error(r));
		return SP_EXIT_PARTIAL;
	}
	if (read_status == SP_READ_END && sp_reader_records(r) > 0 && !sp_reader_saw_summary(r)) {
		sp_warn("'%s': stream ends without a summary record after %llu records: it was "
			"cut short%s%s", name, (unsigned long long)sp_reader_records(r),
			done ? "; everything before the cut was " : ", and its counts are lower bounds",
			done ? done : "");
		return SP_EXIT_PARTIAL;
	}
	return SP_EXIT_OK;
}

const char *sp_single_input(int argc, char **argv, int optind)
{
	if (argc - optind > 1)
		sp_usage_error("give at most one input file");
	return optind < argc ? argv[optind] : NULL;
}

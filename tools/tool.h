/*
 * Tool helpers: messages, exit statuses, number parsing, allocation that
 * dies on failure, opening inputs and outputs.  Unlike the core
 * (stream.h, record.h, json.h) these may print and exit.
 */
#ifndef SP_TOOL_H
#define SP_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The one exit-status table of every tool. */
enum sp_exit {
	SP_EXIT_OK = 0,		/* success */
	SP_EXIT_PARTIAL = 1,	/* finished, but input was bad or cut short,
				   or records were skipped */
	SP_EXIT_FATAL = 2,	/* stopped by an error */
	SP_EXIT_USAGE = 3,	/* bad command line */
};

/* The same table as text, for --help. */
#define SP_EXIT_STATUS_HELP \
	"Exit status:\n" \
	"  0  success\n" \
	"  1  finished, but the result is partial: the input was truncated or\n" \
	"     corrupt, had no summary record, or records were skipped\n" \
	"  2  fatal error\n" \
	"  3  usage error\n"

/* The program name used in messages, set by sp_tool_init(). */
extern const char *sp_progname;

/*
 * Sets the program name from argv[0] and ignores SIGPIPE so that a
 * closed output shows up as EPIPE from write().
 */
void sp_tool_init(const char *argv0);

/* "prog: message" on stderr. */
void sp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sp_warn(), then exit(status). */
_Noreturn void sp_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "prog: message" and a hint to run --help; exits SP_EXIT_USAGE. */
_Noreturn void sp_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

void *sp_xmalloc(size_t n);
void *sp_xcalloc(size_t n, size_t size);
void *sp_xrealloc(void *p, size_t n);
char *sp_xstrdup(const char *s);

/* --max-record BYTES: 64 to 1 GiB; a usage error otherwise. */
size_t sp_parse_max_record(const char *arg);

/* -V: prints "prog VERSION"; returns SP_EXIT_OK. */
int sp_show_version(void);

/* An unknown option (getopt has said which): the hint; returns SP_EXIT_USAGE. */
int sp_bad_option(void);

/*
 * The one input file a stream tool takes after its options: argv[optind],
 * or NULL (standard input) when there is none.  More than one is a usage
 * error.
 */
const char *sp_single_input(int argc, char **argv, int optind);

/*
 * Parses a whole string as an unsigned decimal number no larger than max.
 * Returns 0, or -1 for garbage, a sign, or a value out of range.
 */
int sp_parse_u64(const char *s, uint64_t max, uint64_t *out);

/*
 * Opens FILE for reading ("-" or NULL is stdin).  Dies with a message
 * when it cannot be opened.
 */
int sp_open_input(const char *path);

/*
 * Opens FILE for writing ("-" or NULL is stdout), truncating it.  When
 * binary is true and the output is a terminal, dies with a hint to
 * redirect.  Dies when the file cannot be created.
 */
int sp_open_output(const char *path, bool binary);

struct sp_reader;

/*
 * Reports how a tool's input ended: a read error (with its byte offset
 * and record), or a stream without its summary (cut short; done says
 * what happened to the records before the cut, e.g. "unwound").
 * Returns SP_EXIT_PARTIAL for either, else SP_EXIT_OK.
 */
int sp_report_input_end(struct sp_reader *r, int read_status, const char *name,
			const char *done);

#endif

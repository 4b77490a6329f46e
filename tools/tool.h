/* SPDX-License-Identifier: MIT
 * Tool helpers: messages, exit statuses, number parsing, allocation that
 * dies on failure, opening inputs and outputs.  Unlike the core
 * (stream.h, record.h, json.h) these may print and exit.
 */
#ifndef SP_TOOL_H
#define SP_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
 * closed output shows up as EPIPE from write().  Arranges that at exit
 * standard output is flushed and checked (a write error other than
 * EPIPE is "cannot write 'standard output': ..." and exit status 2) and
 * that the output file is put in place or dropped (see
 * sp_open_output()), and any other file still open dropped
 * (sp_extra_open()).
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

/*
 * -z and --compress[=LEVEL] of a tool that writes a stream: the zstd
 * level of arg (NULL: the default level); a level libzstd has not is a
 * usage error.
 */
int sp_parse_compress(const char *arg);

/* Makes w compress at level (0: not at all), or dies. */
struct sp_writer;
void sp_compress_output(struct sp_writer *w, int level);

/* -j N, --jobs N: threads of a post-processing tool, 1 to SP_MAX_JOBS; a usage error otherwise. */
#define SP_MAX_JOBS 256
unsigned sp_parse_jobs(const char *arg);

/* The default of --jobs: 1 (see tool.c). */
unsigned sp_default_jobs(void);

/*
 * The arguments a tool names in its header's tools entry: argv without
 * -j/--jobs and --stats, which never change what it writes, so that the
 * stream is the same whatever they are.  A new array (*n entries, the
 * program first) of the same strings; free only the array.
 */
char **sp_output_args(int argc, char **argv, int *n);

/* CLOCK_MONOTONIC in seconds, for --stats. */
double sp_now(void);

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
 * Opens FILE as a stream ("-" or NULL is stdin).  Dies (SP_EXIT_FATAL)
 * with a message saying what it is when it cannot be opened, is a
 * directory or a terminal, or plainly holds no stream (perf.data, a
 * compressed file, JSON, text, a program); waits for the writer of a
 * FIFO, saying so when nothing comes.  Dies with SP_EXIT_USAGE when it
 * is the output file.
 */
int sp_open_input(const char *path);

/* The same for an input of text (folded stacks, JSON lines): a terminal is fine. */
int sp_open_text_input(const char *path);

/*
 * Checks a path a tool follows (sp_reader_follow(), which opens it
 * itself) as sp_open_input() checks an input, when it names a file
 * already: dies the same way for a directory, a terminal, or a file
 * that plainly holds no stream, and with SP_EXIT_USAGE when it is the
 * output file.  A path that names nothing yet may not be where the
 * output goes either (SP_EXIT_USAGE, whichever of the two is opened
 * first): the output, put there at exit, would replace the recording
 * that appeared meanwhile.  Returns -1, the fd a tool then has.
 */
int sp_follow_input(const char *path);

/*
 * Opens FILE for writing ("-" or NULL is stdout).  A regular file (new
 * or existing) is written as an unnamed temporary (O_TMPFILE) in its
 * directory, linked in as FILE when the tool exits with 0 or 1, or with
 * 2 after writing something (the records before a fault in the input);
 * dropped when nothing or a failed write went into it, or the tool is
 * interrupted or killed, so that an old FILE survives every such
 * failure and no temporary is left behind.  (Where the file system has
 * no O_TMPFILE, the temporary is ".FILE.XXXXXX", removed at exit and on
 * SIGINT, SIGTERM and SIGHUP.)  A new FILE gets the mode open(O_CREAT,
 * 0666) gives under the umask; a replaced one keeps its mode and
 * owner.  Refuses (SP_EXIT_USAGE) an output that is the same file as
 * an input opened before or after it.  When binary is true and the
 * output is a terminal, dies with a hint to redirect.  Dies when the
 * file cannot be created.
 */
int sp_open_output(const char *path, bool binary);

/*
 * sp_open_output() for sp-capture's recording: binary, and put in place
 * by sp_output_commit() as soon as its first records are written, the
 * file it replaces kept as FILE.old.
 */
int sp_open_recording(const char *path);

/*
 * Puts the output's temporary in place now (nothing when there is
 * none).  Returns 0, or -1 after a message.
 */
int sp_output_commit(void);

/* How messages name the output: the path as given, or "standard output". */
const char *sp_output_name(void);

/*
 * Another file a tool writes beside its output (sp-capture
 * --kallsyms-out, sp-fold --per-thread's files), written the same way:
 * to a temporary in its directory, put in place by sp_extra_close()
 * when complete (the file it replaces kept as FILE.old when keep_old),
 * dropped otherwise, also when the tool dies or is killed first.  Dies
 * (SP_EXIT_USAGE) when FILE is an input.  Returns a FILE that keeps its
 * first write error, or NULL with errno set when FILE cannot be created.
 */
FILE *sp_extra_open(const char *path, bool keep_old);

/*
 * Flushes and closes f, from sp_extra_open().  When complete is true
 * and every write succeeded, puts the file in place; otherwise drops
 * it, the file it would replace left as it was.  Returns 0, or -1 with
 * errno set after a failed write (a complete file only) or a failure to
 * put it in place; the caller says which file.
 */
int sp_extra_close(FILE *f, bool complete);

/*
 * A FILE on the output fd that keeps the first write error for
 * sp_output_close(), which flushes and closes it: on a write error
 * (except EPIPE, a reader that stopped early) it says "cannot write
 * 'NAME': ..." and returns SP_EXIT_FATAL, else status.
 */
FILE *sp_output_file(int fd);
int sp_output_close(FILE *f, int status);

/* "cannot write 'NAME': strerror(err)" for the output; returns SP_EXIT_FATAL. */
int sp_write_failed(int err);

struct sp_reader;

/*
 * Reports how a tool's input ended: a read error (with its byte offset
 * and record), or a stream without its summary (cut short; done says
 * what happened to the records before the cut, e.g. "unwound").
 * Returns SP_EXIT_PARTIAL for either, else SP_EXIT_OK.  A read error
 * before the first record is no partial result: sp_die_unread().
 */
int sp_report_input_end(struct sp_reader *r, int read_status, const char *name,
			const char *done);

/*
 * After a read error before the first record of the input named name
 * ("-": standard input), nothing was read: dies (SP_EXIT_FATAL) saying
 * what the input looks like, from its first bytes.
 */
_Noreturn void sp_die_unread(struct sp_reader *r, const char *name);

/*
 * Set by sp_on_signal(), the handler a tool installs for SIGINT and
 * SIGTERM: stop at the next record and finish the output.
 */
extern volatile int sp_interrupted;
void sp_on_signal(int sig);

/* A note of the library (a warning callback) as one line on stderr. */
void sp_note_warn(void *arg, const char *msg);

#endif

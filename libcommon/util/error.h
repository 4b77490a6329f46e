/*
 * The library's one error convention, after elfutils' libdwflP.h: a
 * code from one table (a new kind is one line of SP_ERRORS) and, on the
 * handle that failed, a message with the particulars.
 *
 *	struct sp_thing { struct sp_error err; ... };
 *	if (fd < 0)
 *		return sp_error_errno(&t->err, "cannot open '%s'", path);
 *	...
 *	const char *sp_thing_error(const struct sp_thing *t)
 *	{ return sp_error_message(&t->err); }
 *
 * Functions return 0 (or a count, or a pointer) on success and -1 (or
 * NULL) on failure; nothing in the library prints or exits.  Messages
 * follow the tools' style: lowercase, the subject quoted, no full stop.
 */
#ifndef SP_UTIL_ERROR_H
#define SP_UTIL_ERROR_H

/* X(code suffix, message) */
#define SP_ERRORS(X) \
	X(OK, "no error") \
	X(NOMEM, "out of memory") \
	X(ERRNO, "system call failed") \
	X(BAD_INPUT, "malformed input") \
	X(UNSUPPORTED, "not supported") \
	X(NOT_FOUND, "not found") \
	X(MISMATCH, "identity does not match") \
	X(PERMISSION, "permission denied") \
	X(LIMIT, "limit exceeded")

enum sp_err {
#define SP_X_ERR(e, m) SP_ERR_##e,
	SP_ERRORS(SP_X_ERR)
#undef SP_X_ERR
	SP_ERR_COUNT
};

struct sp_error {
	enum sp_err code;
	int errnum;		/* errno, for SP_ERR_ERRNO */
	char msg[512];		/* the particulars; empty: the table's message */
};

/* The table's message for a code. */
const char *sp_errmsg(enum sp_err code);

/* Records an error with a printf-style message; returns -1. */
int sp_error_set(struct sp_error *e, enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Records errno (read first) with a message, to which ": strerror(errno)"
 * is appended; ENOMEM gives SP_ERR_NOMEM.  Returns -1, errno kept.
 */
int sp_error_errno(struct sp_error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The message of the last error; "no error" when there is none. */
const char *sp_error_message(const struct sp_error *e);

void sp_error_clear(struct sp_error *e);

#endif

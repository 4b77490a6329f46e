/* SPDX-License-Identifier: MIT
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

/* The codes (SP_ERRORS, enum sp_err) are public: libstackpulse's own. */
#include "stackpulse/errors.h"

struct sp_error {
	enum sp_err code;
	int errnum;		/* errno, for SP_ERR_ERRNO */
	char msg[512];		/* the particulars; empty: the table's message */
};

/*
 * Makes e the last failure of this thread, which sp_errno() and
 * sp_errmsg(-1) report: the public API calls it as it returns -1.
 * Returns -1.
 */
int sp_error_publish(const struct sp_error *e);

/* The same for a failure of the public API's own (a NULL handle). */
int sp_error_publish_new(enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

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

/* SPDX-License-Identifier: MIT
 * libstackpulse's error codes: one table for the library and its public
 * API.  A function that fails returns -1 (or NULL) and leaves the code and
 * a message with the particulars for sp_errno() and sp_errmsg(-1), in the
 * manner of elfutils' dwfl_errno() and dwfl_errmsg().
 */
#ifndef STACKPULSE_ERRORS_H
#define STACKPULSE_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Built with hidden visibility, the library exports what is declared here. */
#pragma GCC visibility push(default)

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
	X(LIMIT, "limit exceeded") \
	X(INVALID, "invalid argument") \
	X(STATE, "not possible in this state")

enum sp_err {
#define SP_X_ERR(e, m) SP_ERR_##e,
	SP_ERRORS(SP_X_ERR)
#undef SP_X_ERR
	SP_ERR_COUNT
};

/*
 * The code of the last call of the public API that failed in this
 * thread; SP_ERR_OK when none has.  A call that succeeds leaves it.
 */
int sp_errno(void);

/*
 * The message of code (the table's words), or for -1 the message of the
 * last failure in this thread with its particulars ("cannot open 'x':
 * No such file or directory").  Never NULL.
 */
const char *sp_errmsg(int code);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: MIT */
/* The error convention (error.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

static const char *const messages[SP_ERR_COUNT] = {
#define SP_X_MSG(e, m) [SP_ERR_##e] = m,
	SP_ERRORS(SP_X_MSG)
#undef SP_X_MSG
};

/* The last failure of the public API in each thread (sp_errno()). */
static __thread struct sp_error last;

const char *sp_errmsg(int code)
{
	if (code == -1)
		return sp_error_message(&last);
	return code >= 0 && code < SP_ERR_COUNT ? messages[code] : "unknown error";
}

int sp_errno(void)
{
	return last.code;
}

int sp_error_publish(const struct sp_error *e)
{
	if (e != &last)
		last = *e;
	if (last.code == SP_ERR_OK)	/* a failure without a code of its own */
		last.code = SP_ERR_STATE;
	return -1;
}

int sp_error_publish_new(enum sp_err code, const char *fmt, ...)
{
	va_list ap;
	last.code = code;
	last.errnum = 0;
	va_start(ap, fmt);
	vsnprintf(last.msg, sizeof(last.msg), fmt, ap);
	va_end(ap);
	return -1;
}

int sp_error_set(struct sp_error *e, enum sp_err code, const char *fmt, ...)
{
	va_list ap;
	e->code = code;
	e->errnum = 0;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int sp_error_errno(struct sp_error *e, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	e->code = saved == ENOMEM ? SP_ERR_NOMEM : SP_ERR_ERRNO;
	e->errnum = saved;
	va_start(ap, fmt);
	int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(e->msg))
		snprintf(e->msg + n, sizeof(e->msg) - (size_t)n, ": %s", strerror(saved));
	errno = saved;
	return -1;
}

const char *sp_error_message(const struct sp_error *e)
{
	return e->msg[0] ? e->msg : sp_errmsg(e->code);
}

void sp_error_clear(struct sp_error *e)
{
	e->code = SP_ERR_OK;
	e->errnum = 0;
	e->msg[0] = '\0';
}

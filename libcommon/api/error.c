/* SPDX-License-Identifier: MIT
 * The public API's own entry points that belong to no handle: the
 * library's version.  (sp_errno() and sp_errmsg() are util/error.c's.)
 */
#include "api/internal.h"

const char *sp_version(void)
{
	return SP_VERSION;
}

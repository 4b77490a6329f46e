/* SPDX-License-Identifier: MIT */
/* Names and descriptions of the stream's shared vocabulary. */
#include "stream/vocab.h"

struct term {
	const char *name, *description;
};

static const struct term error_kinds[SP_E_COUNT] = {
#define SP_X_ERR(e, s, d) [SP_E_##e] = { s, d },
	SP_ERROR_KINDS(SP_X_ERR)
#undef SP_X_ERR
};

static const struct term end_names[SP_END_COUNT] = {
#define SP_X_END(e, n, s, d) [n] = { s, d },
	SP_UNWIND_ENDS(SP_X_END)
#undef SP_X_END
};

/* Entry i of a table of n terms; "unknown" past its end. */
static const char *term(const struct term *t, unsigned n, unsigned i, int description)
{
	if (i >= n)
		return "unknown";
	return description ? t[i].description : t[i].name;
}

const char *sp_errkind_name(enum sp_error_kind k)
{
	return term(error_kinds, SP_E_COUNT, k, 0);
}

const char *sp_errkind_description(enum sp_error_kind k)
{
	return term(error_kinds, SP_E_COUNT, k, 1);
}

const char *sp_unwind_end_name(enum sp_unwind_end e)
{
	return term(end_names, SP_END_COUNT, e, 0);
}

const char *sp_unwind_end_description(enum sp_unwind_end e)
{
	return term(end_names, SP_END_COUNT, e, 1);
}

const char *sp_stage_name(enum sp_stage s)
{
	switch (s) {
	case SP_STAGE_RAW: return "raw";
	case SP_STAGE_UNWOUND: return "unwound";
	case SP_STAGE_SYMBOLIZED: return "symbolized";
	}
	return "unknown";
}

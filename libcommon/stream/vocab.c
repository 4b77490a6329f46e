/* Names and descriptions of the stream's shared vocabulary. */
#include "stream/vocab.h"

static const struct {
	const char *name, *description;
} error_kinds[SP_E_COUNT] = {
#define SP_X_ERR(e, s, d) [SP_E_##e] = { s, d },
	SP_ERROR_KINDS(SP_X_ERR)
#undef SP_X_ERR
};

const char *sp_error_kind_name(enum sp_error_kind k)
{
	return k < SP_E_COUNT ? error_kinds[k].name : "unknown";
}

const char *sp_error_kind_description(enum sp_error_kind k)
{
	return k < SP_E_COUNT ? error_kinds[k].description : "unknown";
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

static const struct { const char *name, *description; } end_names[SP_END_COUNT] = {
#define SP_X_END(e, n, s, d) [n] = { s, d },
	SP_UNWIND_ENDS(SP_X_END)
#undef SP_X_END
};

const char *sp_unwind_end_name(enum sp_unwind_end e)
{
	return e < SP_END_COUNT ? end_names[e].name : "unknown";
}

const char *sp_unwind_end_description(enum sp_unwind_end e)
{
	return e < SP_END_COUNT ? end_names[e].description : "unknown";
}

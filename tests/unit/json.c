/* SPDX-License-Identifier: MIT
 * Unit tests of the JSON rendering of MessagePack values and its inverse
 * (stream/json.h): every value class renders as format/sp-stream.md
 * says and parses back to the same bytes; strings that are not UTF-8
 * render as $strb; bad JSON is refused with a column and packs nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "unit.h"
#include "stream/json.h"

typedef void (*packer_fn)(msgpack_packer *pk);

/* Renders what pack() packs, checks the text, parses it back and checks the bytes. */
static void round_trip(packer_fn pack, const char *want)
{
	msgpack_sbuffer in, back;
	msgpack_packer pk;
	msgpack_sbuffer_init(&in);
	msgpack_sbuffer_init(&back);
	msgpack_packer_init(&pk, &in, msgpack_sbuffer_write);
	pack(&pk);
	msgpack_unpacked up;
	msgpack_unpacked_init(&up);
	SP_CHECK(msgpack_unpack_next(&up, in.data, in.size, NULL) == MSGPACK_UNPACK_SUCCESS);
	struct sp_buf b = SP_BUF_INIT;
	SP_CHECK(sp_json_render(&up.data, &b) == 0);
	SP_CHECK_STR(b.len ? b.p : "", want);
	if (b.len && strcmp(b.p, want) != 0)
		printf("# rendered %s\n", b.p);
	struct sp_error err;
	msgpack_packer_init(&pk, &back, msgpack_sbuffer_write);
	SP_CHECK(sp_json_parse(b.p, b.len, &pk, &err) == 0);
	SP_CHECK(back.size == in.size);
	SP_CHECK(back.size == in.size && memcmp(back.data, in.data, in.size) == 0);
	sp_buf_release(&b);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&in);
	msgpack_sbuffer_destroy(&back);
}

static void str(msgpack_packer *pk, const char *s, size_t n)
{
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

#define STR(pk, lit) str(pk, lit, sizeof(lit) - 1)

static void p_nil(msgpack_packer *pk) { msgpack_pack_nil(pk); }
static void p_true(msgpack_packer *pk) { msgpack_pack_true(pk); }
static void p_false(msgpack_packer *pk) { msgpack_pack_false(pk); }
static void p_u0(msgpack_packer *pk) { msgpack_pack_uint64(pk, 0); }
static void p_u128(msgpack_packer *pk) { msgpack_pack_uint64(pk, 128); }
static void p_umax(msgpack_packer *pk) { msgpack_pack_uint64(pk, UINT64_MAX); }
static void p_im1(msgpack_packer *pk) { msgpack_pack_int64(pk, -1); }
static void p_im33(msgpack_packer *pk) { msgpack_pack_int64(pk, -33); }
static void p_imin(msgpack_packer *pk) { msgpack_pack_int64(pk, INT64_MIN); }
static void p_f64(msgpack_packer *pk) { msgpack_pack_double(pk, 0.1); }
static void p_f64_whole(msgpack_packer *pk) { msgpack_pack_double(pk, 2.0); }
static void p_f64_nan(msgpack_packer *pk) { msgpack_pack_double(pk, NAN); }
static void p_f64_ninf(msgpack_packer *pk) { msgpack_pack_double(pk, -INFINITY); }
static void p_f32(msgpack_packer *pk) { msgpack_pack_float(pk, 1.5f); }
static void p_f32_inf(msgpack_packer *pk) { msgpack_pack_float(pk, INFINITY); }
static void p_str(msgpack_packer *pk) { STR(pk, "a\"b\\c\n\t\r\x01/\x7f\xc3\xa9\xf0\x9f\x98\x80"); }
static void p_str_empty(msgpack_packer *pk) { str(pk, "", 0); }
static void p_bin(msgpack_packer *pk) { msgpack_pack_bin(pk, 3); msgpack_pack_bin_body(pk, "\x01\x02\x03", 3); }
static void p_bin_empty(msgpack_packer *pk) { msgpack_pack_bin(pk, 0); }
static void p_ext(msgpack_packer *pk) { msgpack_pack_ext(pk, 2, -5); msgpack_pack_ext_body(pk, "ab", 2); }

static void p_array(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, 1);
	STR(pk, "x");
	msgpack_pack_array(pk, 0);
}

static void p_map(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 2);
	STR(pk, "a");
	msgpack_pack_uint64(pk, 1);
	STR(pk, "b");
	msgpack_pack_map(pk, 0);
}

/* Maps whose keys a JSON object cannot hold. */
static void p_map_int_key(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	msgpack_pack_uint64(pk, 1);
	msgpack_pack_int64(pk, -2);
}

static void p_map_dollar_key(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 2);
	STR(pk, "$x");
	msgpack_pack_nil(pk);
	STR(pk, "y");
	msgpack_pack_true(pk);
}

static void p_map_bad_key(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	STR(pk, "\xff");
	msgpack_pack_uint64(pk, 1);
}

/* Strings that are not valid UTF-8. */
static void p_bad_byte(msgpack_packer *pk) { STR(pk, "a\xff\xfe"); }
static void p_overlong(msgpack_packer *pk) { STR(pk, "\xc0\xaf"); }
static void p_surrogate(msgpack_packer *pk) { STR(pk, "\xed\xa0\x80"); }
static void p_past_max(msgpack_packer *pk) { STR(pk, "\xf4\x90\x80\x80"); }
static void p_cut(msgpack_packer *pk) { STR(pk, "\xe2\x82"); }

SP_TEST(json_every_value_class_round_trips)
{
	round_trip(p_nil, "null");
	round_trip(p_true, "true");
	round_trip(p_false, "false");
	round_trip(p_u0, "0");
	round_trip(p_u128, "128");
	round_trip(p_umax, "18446744073709551615");
	round_trip(p_im1, "-1");
	round_trip(p_im33, "-33");
	round_trip(p_imin, "-9223372036854775808");
	round_trip(p_f64, "0.1");
	round_trip(p_f64_whole, "2.0");
	round_trip(p_f64_nan, "{\"$f64\":\"nan\"}");
	round_trip(p_f64_ninf, "{\"$f64\":\"-inf\"}");
	round_trip(p_f32, "{\"$f32\":1.5}");
	round_trip(p_f32_inf, "{\"$f32\":\"inf\"}");
	round_trip(p_str, "\"a\\\"b\\\\c\\n\\t\\r\\u0001/\x7f\xc3\xa9\xf0\x9f\x98\x80\"");
	round_trip(p_str_empty, "\"\"");
	round_trip(p_bin, "{\"$bin\":\"AQID\"}");
	round_trip(p_bin_empty, "{\"$bin\":\"\"}");
	round_trip(p_ext, "{\"$ext\":-5,\"data\":\"YWI=\"}");
	round_trip(p_array, "[1,\"x\",[]]");
	round_trip(p_map, "{\"a\":1,\"b\":{}}");
	round_trip(p_map_int_key, "{\"$map\":[[1,-2]]}");
	round_trip(p_map_dollar_key, "{\"$map\":[[\"$x\",null],[\"y\",true]]}");
	round_trip(p_map_bad_key, "{\"$map\":[[{\"$strb\":\"/w==\"},1]]}");
}

SP_TEST(json_invalid_utf8_renders_as_strb)
{
	round_trip(p_bad_byte, "{\"$strb\":\"Yf/+\"}");
	round_trip(p_overlong, "{\"$strb\":\"wK8=\"}");
	round_trip(p_surrogate, "{\"$strb\":\"7aCA\"}");
	round_trip(p_past_max, "{\"$strb\":\"9JCAgA==\"}");
	round_trip(p_cut, "{\"$strb\":\"4oI=\"}");
}

/* Parses text; returns its result, with the message in err and the packed size in *size. */
static int parse(const char *text, struct sp_error *err, size_t *size)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	int rc = sp_json_parse(text, strlen(text), &pk, err);
	*size = sb.size;
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

SP_TEST(json_parse_refuses_bad_text_and_packs_nothing)
{
	static const struct { const char *text, *msg; } bad[] = {
		{ "{\"a\":}", "column 6: expected a value" },
		{ "[1,2", "column 5: expected ']'" },
		{ "\"\\ud800\"", "column 8: unpaired surrogate" },
		{ "\"a\x01\"", "column 3: control character in string" },
		{ "{\"$bin\":\"abc\"}", "base64 length is not a multiple of 4" },
		{ "{\"$bin\":\"ab!=\"}", "bad base64 data" },
		{ "{\"$ext\":300,\"data\":\"\"}", "$ext type must be an integer from -128 to 127" },
		{ "{\"a\":1,\"$b\":2}", "a key starting with '$' outside a $map" },
		{ "{\"$nope\":1}", "unknown special key '$nope'" },
		{ "18446744073709551616", "integer out of range" },
		{ "1 2", "unexpected text after the value" },
		{ "nul", "expected a value" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sp_error err;
		size_t size = 1;
		SP_CHECK(parse(bad[i].text, &err, &size) < 0);
		SP_CHECK(size == 0 && err.code == SP_ERR_BAD_INPUT);
		if (!strstr(err.msg, bad[i].msg)) {
			printf("# %s: got '%s', want '%s'\n", bad[i].text, err.msg, bad[i].msg);
			SP_CHECK(!"the message names the fault");
		}
	}
	/* Nesting deeper than the limit. */
	char deep[2 * SP_JSON_MAX_DEPTH + 8];
	size_t n = 0;
	for (int i = 0; i <= SP_JSON_MAX_DEPTH + 1; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	struct sp_error err;
	size_t size;
	SP_CHECK(parse(deep, &err, &size) < 0 && strstr(err.msg, "nesting deeper than"));
	SP_CHECK(err.code == SP_ERR_LIMIT);
}

SP_TEST(json_parse_accepts_what_the_renderer_does_not_write)
{
	/* Escapes, whitespace and forms the renderer never writes mean the same values. */
	static const struct { const char *text; const char *bytes; size_t n; } ok[] = {
		{ " \"\\u00e9\\/\\b\\f\" ", "\xa5\xc3\xa9/\b\f", 6 },
		{ "\"\\ud83d\\ude00\"", "\xa4\xf0\x9f\x98\x80", 5 },
		{ "[ 1 , -0 ]", "\x92\x01\x00", 3 },
		{ "{\"$f64\":-0}", "\xcb\x80\x00\x00\x00\x00\x00\x00\x00", 9 },
		{ "{\"$map\":[]}", "\x80", 1 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		msgpack_sbuffer sb;
		msgpack_packer pk;
		struct sp_error err;
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		SP_CHECK(sp_json_parse(ok[i].text, strlen(ok[i].text), &pk, &err) == 0);
		SP_CHECK(sb.size == ok[i].n && memcmp(sb.data, ok[i].bytes, ok[i].n) == 0);
		msgpack_sbuffer_destroy(&sb);
	}
}

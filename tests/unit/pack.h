/* SPDX-License-Identifier: MIT
 * Packing a key and its value in one call, for unit tests that build
 * records by hand with msgpack_pack_map() (the library itself writes
 * records with struct sp_mapw, which counts the keys).
 */
#ifndef SP_UNIT_PACK_H
#define SP_UNIT_PACK_H

#include <stdbool.h>
#include <stdint.h>
#include <msgpack.h>

#include "stream/stream.h"

static inline void sp_pack_kv_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	sp_pack_key(pk, key);
	msgpack_pack_uint64(pk, v);
}

static inline void sp_pack_kv_i64(msgpack_packer *pk, const char *key, int64_t v)
{
	sp_pack_key(pk, key);
	msgpack_pack_int64(pk, v);
}

static inline void sp_pack_kv_str(msgpack_packer *pk, const char *key, const char *s)
{
	sp_pack_key(pk, key);
	sp_pack_str(pk, s);
}

static inline void sp_pack_kv_bool(msgpack_packer *pk, const char *key, bool v)
{
	sp_pack_key(pk, key);
	if (v)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

static inline void sp_pack_kv_bin(msgpack_packer *pk, const char *key, const void *p, size_t n)
{
	sp_pack_key(pk, key);
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

#endif

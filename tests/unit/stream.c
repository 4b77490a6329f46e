/* Unit tests of the stream layer's writer: the self-counting map writer. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"
#include "pack.h"
#include "stream/stream.h"

/* Writes through w into a pipe-less temporary file and reads the bytes back. */
struct capture {
	FILE *f;
	struct sp_writer *w;
};

static void cap_open(struct capture *c)
{
	c->f = tmpfile();
	c->w = sp_writer_new(fileno(c->f), "unit");
}

static size_t cap_close(struct capture *c, unsigned char *out, size_t max)
{
	sp_writer_close(c->w);
	rewind(c->f);
	size_t n = fread(out, 1, max, c->f);
	fclose(c->f);
	return n;
}

SP_TEST(mapw_matches_hand_counted_maps)
{
	struct capture a, b;
	static unsigned char ba[1 << 20], bb[1 << 20];
	cap_open(&a);
	cap_open(&b);
	/* Sizes that take each header form: fixmap, map16 and map32. */
	static const unsigned counts[] = { 0, 1, 15, 16, 300, 65535, 65536 };
	char key[16];
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		struct sp_mapw m;
		sp_mapw_begin(&m, a.w);
		msgpack_packer *pk = sp_writer_packer(b.w);
		msgpack_pack_map(pk, counts[c]);
		for (unsigned i = 0; i < counts[c]; i++) {
			snprintf(key, sizeof(key), "k%u", i);
			sp_mapw_u64(&m, key, i);
			sp_pack_kv_u64(pk, key, i);
		}
		SP_CHECK(sp_mapw_end(&m) == 0);
	}
	SP_CHECK(sp_writer_bytes(a.w) == sp_writer_bytes(b.w));
	size_t na = cap_close(&a, ba, sizeof(ba)), nb = cap_close(&b, bb, sizeof(bb));
	SP_CHECK(na == nb && na > 65536 * 4);
	SP_CHECK(na == nb && memcmp(ba, bb, na) == 0);
}

SP_TEST(mapw_nested_maps_and_every_value_kind)
{
	struct capture a, b;
	unsigned char ba[512], bb[512];
	cap_open(&a);
	cap_open(&b);
	struct sp_mapw m, inner;
	sp_mapw_begin(&m, a.w);
	sp_mapw_str(&m, "t", "header");
	sp_mapw_i64(&m, "i", -3);
	sp_mapw_bool(&m, "yes", true);
	sp_mapw_bin(&m, "id", "\x01\x02", 2);
	sp_mapw_strn(&m, "s", "abcdef", 3);
	sp_mapw_key(&m, "host");
	sp_mapw_begin(&inner, a.w);
	sp_mapw_str(&inner, "arch", "x86_64");
	SP_CHECK(sp_mapw_end(&inner) == 0);
	msgpack_pack_array(sp_mapw_key(&m, "a"), 0);
	SP_CHECK(sp_mapw_end(&m) == 0);

	msgpack_packer *pk = sp_writer_packer(b.w);
	msgpack_pack_map(pk, 7);
	sp_pack_kv_str(pk, "t", "header");
	sp_pack_kv_i64(pk, "i", -3);
	sp_pack_kv_bool(pk, "yes", true);
	sp_pack_kv_bin(pk, "id", "\x01\x02", 2);
	sp_pack_kv_str(pk, "s", "abc");
	sp_pack_key(pk, "host");
	msgpack_pack_map(pk, 1);
	sp_pack_kv_str(pk, "arch", "x86_64");
	sp_pack_key(pk, "a");
	msgpack_pack_array(pk, 0);
	size_t na = cap_close(&a, ba, sizeof(ba)), nb = cap_close(&b, bb, sizeof(bb));
	SP_CHECK(na == nb && na > 0 && memcmp(ba, bb, na) == 0);
}

SP_TEST(mapw_larger_than_the_write_buffer)
{
	/* A record bigger than the writer's buffer stays whole while it is open. */
	struct capture a;
	cap_open(&a);
	static unsigned char blob[600 * 1024], back[700 * 1024];
	memset(blob, 0xab, sizeof(blob));
	struct sp_mapw m;
	sp_mapw_begin(&m, a.w);
	sp_mapw_str(&m, "t", "sample");
	sp_mapw_bin(&m, "ustack", blob, sizeof(blob));
	SP_CHECK(sp_mapw_end(&m) == 0);
	size_t n = cap_close(&a, back, sizeof(back));
	const char *why = NULL;
	SP_CHECK(sp_msgpack_frame(back, n, 4, &why) == (long)n);
	SP_CHECK(back[0] == 0x82);
}

SP_TEST(mapw_records_reach_the_file_without_an_explicit_flush)
{
	/* Small records written one after another must not pile up in the buffer. */
	struct capture a;
	cap_open(&a);
	for (unsigned i = 0; i < 100000; i++) {
		struct sp_mapw m;
		sp_mapw_begin(&m, a.w);
		sp_mapw_str(&m, "t", "lost");
		sp_mapw_u64(&m, "lost", i);
		sp_mapw_end(&m);
	}
	uint64_t total = sp_writer_bytes(a.w);
	fflush(a.f);
	long on_disk = lseek(fileno(a.f), 0, SEEK_END);
	/* At most one buffer's worth (256 KiB) may still be waiting. */
	SP_CHECK(total > 1000000);
	SP_CHECK(on_disk > 0 && (uint64_t)on_disk + 256 * 1024 >= total);
	unsigned char *back = malloc(total);
	SP_CHECK(cap_close(&a, back, total) == total);
	free(back);
}

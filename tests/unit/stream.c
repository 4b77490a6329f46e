/* SPDX-License-Identifier: MIT */
/* Unit tests of the stream layer's writer: the self-counting map writer. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"
#include "pack.h"
#include "stream/json.h"
#include "stream/record.h"
#include "stream/records.h"
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

/* The JSON rendering of the one record in bytes b (n of them). */
static void render_one(const unsigned char *b, size_t n, struct sp_buf *out)
{
	msgpack_unpacked up;
	msgpack_unpacked_init(&up);
	SP_CHECK(msgpack_unpack_next(&up, (const char *)b, n, NULL) == MSGPACK_UNPACK_SUCCESS);
	sp_json_render(&up.data, out);
	msgpack_unpacked_destroy(&up);
}

/* Writes one record with WRITE(writer, REC) and checks its JSON rendering. */
#define CHECK_RECORD(write, rec, want) do { \
		struct capture a_; \
		unsigned char b_[1024]; \
		cap_open(&a_); \
		write(a_.w, rec); \
		size_t n_ = cap_close(&a_, b_, sizeof(b_)); \
		struct sp_buf out_ = SP_BUF_INIT; \
		render_one(b_, n_, &out_); \
		SP_CHECK_STR(out_.p, want); \
		if (!out_.p || strcmp(out_.p, want) != 0) \
			printf("# got %s\n", out_.p ? out_.p : ""); \
		sp_buf_release(&out_); \
	} while (0)

/* sp_write_stack() with the frames set aside, in the shape CHECK_RECORD calls. */
static const struct sp_stack_frame *stack_frames;

static void write_stack_2(struct sp_writer *w, uint64_t id)
{
	sp_write_stack(w, id, stack_frames, 2);
}

SP_TEST(record_writers_follow_the_spec)
{
	static const unsigned char bid[4] = { 1, 2, 3, 4 };
	struct sp_map_rec full = {
		.pid = 7, .tid = 8, .time = 9, .start = 4096, .len = 8192, .pgoff = 0,
		.path = "/bin/x-and-more", .pathlen = 6, .have_dev = true, .maj = 1, .min = 2,
		.ino = 3, .prot = 5, .flags = 2, .build_id = bid, .build_id_len = 4,
	};
	CHECK_RECORD(sp_write_map, &full,
		     "{\"t\":\"map\",\"pid\":7,\"start\":4096,\"len\":8192,\"pgoff\":0,"
		     "\"path\":\"/bin/x\",\"tid\":8,\"time\":9,\"maj\":1,\"min\":2,\"ino\":3,"
		     "\"prot\":5,\"flags\":2,\"build_id\":{\"$bin\":\"AQIDBA==\"},\"deleted\":false}");
	struct sp_map_rec bare = { .pid = 7, .start = 1, .len = 2, .path = "[vdso]",
				   .pathlen = 6, .prot = 5, .flags = -1, .deleted = true };
	CHECK_RECORD(sp_write_map, &bare,
		     "{\"t\":\"map\",\"pid\":7,\"start\":1,\"len\":2,\"pgoff\":0,"
		     "\"path\":\"[vdso]\",\"time\":0,\"prot\":5,\"deleted\":true}");
	/* The last argument has no NUL: it still counts. */
	struct sp_process_rec proc = { .pid = 7, .ppid = 1, .uid = 0, .start_time = 5, .time = 6,
				       .comm = "x", .cmdline = "a\0bc", .cmdlen = 4 };
	CHECK_RECORD(sp_write_process, &proc,
		     "{\"t\":\"process\",\"pid\":7,\"ppid\":1,\"start_time\":5,\"comm\":\"x\","
		     "\"cmdline\":[\"a\",\"bc\"],\"uid\":0,\"time\":6}");
	struct sp_thread_rec thr = { 7, 8, 9, NULL };
	CHECK_RECORD(sp_write_thread, &thr, "{\"t\":\"thread\",\"pid\":7,\"tid\":8,\"time\":9}");
	struct sp_stack_frame frames[2] = { { 0x10, 3, 0x4, 0 }, { 0, SP_NO_MODULE, 1, 8 } };
	stack_frames = frames;
	CHECK_RECORD(write_stack_2, 5, "{\"t\":\"stack\",\"id\":5,\"frames\":[[16,3,4,0],[0,null,1,8]]}");
	struct sp_inline inl = { "work", NULL, 22 };
	struct sp_frame_rec fr = { .id = 1, .addr = 0x10, .origin = "debuginfo", .name = "main",
				   .has_module = true, .module = 0, .rel = 0xc, .file = "w.c", .line = 31,
				   .inl = &inl, .ninl = 1, .flags = 6 };
	CHECK_RECORD(sp_write_frame, &fr,
		     "{\"t\":\"frame\",\"id\":1,\"addr\":16,\"origin\":\"debuginfo\",\"name\":\"main\","
		     "\"module\":0,\"rel\":12,\"file\":\"w.c\",\"line\":31,"
		     "\"inline\":[{\"name\":\"work\",\"line\":22}],\"flags\":6}");
	struct sp_module_rec mod = { .id = 2, .path = "[vdso]", .kind = "vdso", .pid = 4 };
	CHECK_RECORD(sp_write_module, &mod,
		     "{\"t\":\"module\",\"id\":2,\"path\":\"[vdso]\",\"kind\":\"vdso\",\"pid\":4}");
	struct sp_task_rec exit_rec = { 7, 1, 8, 1, 10, false };
	CHECK_RECORD(sp_write_task, &exit_rec,
		     "{\"t\":\"exit\",\"pid\":7,\"ppid\":1,\"tid\":8,\"ptid\":1,\"time\":10}");
}

SP_TEST(summary_writer_lists_every_error_kind)
{
	uint64_t errors[SP_E_COUNT] = { 0 };
	errors[SP_E_UNKNOWN_PROCESS] = 3;
	struct sp_summary_rec s = { .samples = 10, .errors = errors, .time = 5 };
	for (int with_status = 0; with_status < 2; with_status++) {
		s.has_command_status = with_status;
		s.command_status = -9;
		struct capture a;
		unsigned char b[4096];
		cap_open(&a);
		sp_write_summary(a.w, &s);
		size_t n = cap_close(&a, b, sizeof(b));
		struct sp_buf out = SP_BUF_INIT;
		render_one(b, n, &out);
		SP_CHECK(out.p && strncmp(out.p, "{\"t\":\"summary\",\"sample_events\":0,\"samples\":10,", 46) == 0);
		SP_CHECK(out.p && strstr(out.p, "{\"kind\":\"unknown_process\",\"count\":3,"));
		size_t kinds = 0;
		for (const char *q = out.p; q && (q = strstr(q, "\"kind\":")); q++)
			kinds++;
		SP_CHECK(kinds == SP_E_COUNT);
		SP_CHECK(out.p && (strstr(out.p, "\"command_status\":-9") != NULL) == with_status);
		sp_buf_release(&out);
	}
}

SP_TEST(reader_head_is_the_input_a_reader_could_not_read)
{
	/* Nothing readable: the tool names the input from these bytes. */
	static const unsigned char bytes[] = "\x12PERFILE-ish bytes, not a record";
	FILE *f = tmpfile();
	SP_CHECK(fwrite(bytes, 1, sizeof(bytes), f) == sizeof(bytes));
	rewind(f);
	struct sp_reader *r = sp_reader_new(fileno(f), "unit");
	struct sp_record rec;
	unsigned char head[16];
	SP_CHECK(sp_reader_next(r, &rec) == SP_READ_ERROR);
	SP_CHECK(sp_reader_records(r) == 0);
	SP_CHECK(sp_reader_head(r, head, sizeof(head)) == sizeof(head));
	SP_CHECK_MEM(head, bytes, sizeof(head));
	sp_reader_free(r);
	fclose(f);
	/* An empty input has no first bytes. */
	f = tmpfile();
	r = sp_reader_new(fileno(f), "unit");
	SP_CHECK(sp_reader_next(r, &rec) == SP_READ_END);
	SP_CHECK(sp_reader_head(r, head, sizeof(head)) == 0);
	sp_reader_free(r);
	fclose(f);
}

SP_TEST(record_types_are_found_by_name)
{
	for (int t = 1; t < SP_R_COUNT; t++) {
		const char *n = sp_rtype_name((enum sp_rtype)t);
		char longer[64];
		snprintf(longer, sizeof(longer), "%sx", n);
		SP_CHECK(sp_rtype_from_name(n, strlen(n)) == (enum sp_rtype)t);
		SP_CHECK(sp_rtype_from_name(longer, strlen(longer)) == SP_R_UNKNOWN);
		SP_CHECK(sp_rtype_from_name(n, strlen(n) - 1) == SP_R_UNKNOWN ||
			 strlen(n) == 1);
	}
	SP_CHECK(sp_rtype_from_name("", 0) == SP_R_UNKNOWN);
	SP_CHECK(sp_rtype_from_name("unknown", 7) == SP_R_UNKNOWN);
}

SP_TEST(mapw_short_keys_and_values_are_msgpack_s_own_bytes)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 255, 256, 65535, 65536,
					 0xffffffffull, 0x100000000ull, UINT64_MAX };
	static const char *const strs[] = { "", "a", "0123456789012345678901234567890",
					    "01234567890123456789012345678901" };
	struct capture a, b;
	static unsigned char ba[4096], bb[4096];
	cap_open(&a);
	cap_open(&b);
	struct sp_mapw m;
	sp_mapw_begin(&m, a.w);
	msgpack_packer *pk = sp_writer_packer(b.w);
	size_t n = sizeof(vals) / sizeof(*vals) + 2 * sizeof(strs) / sizeof(*strs);
	msgpack_pack_map(pk, n);
	for (size_t i = 0; i < sizeof(vals) / sizeof(*vals); i++) {
		sp_mapw_u64(&m, "k", vals[i]);
		msgpack_pack_str(pk, 1);
		msgpack_pack_str_body(pk, "k", 1);
		msgpack_pack_uint64(pk, vals[i]);
	}
	for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++) {
		/* The string as key and as value, each side of the 31-byte fixstr. */
		sp_mapw_str(&m, strs[i], "v");
		sp_mapw_str(&m, "k", strs[i]);
		msgpack_pack_str(pk, strlen(strs[i]));
		msgpack_pack_str_body(pk, strs[i], strlen(strs[i]));
		msgpack_pack_str(pk, 1);
		msgpack_pack_str_body(pk, "v", 1);
		msgpack_pack_str(pk, 1);
		msgpack_pack_str_body(pk, "k", 1);
		msgpack_pack_str(pk, strlen(strs[i]));
		msgpack_pack_str_body(pk, strs[i], strlen(strs[i]));
	}
	SP_CHECK(sp_mapw_end(&m) == 0);
	size_t na = cap_close(&a, ba, sizeof(ba)), nb = cap_close(&b, bb, sizeof(bb));
	SP_CHECK(na == nb);
	SP_CHECK_MEM(ba, bb, na);
}

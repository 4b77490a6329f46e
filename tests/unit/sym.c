/* SPDX-License-Identifier: MIT
 * Unit tests of the sym layer: address-sorted symbol tables (bisection,
 * the nearest-symbol extent rule, overlaps), kallsyms and perf-map
 * parsing, the symbolizer's settings from options, and the symbolizer
 * itself on records made here: interning, made-up names, markers, the
 * hidden flag, and which perf maps it trusts.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream/vocab.h"
#include "sym/search.h"
#include "sym/symbolizer.h"
#include "sym/symtab.h"
#include "unit.h"
#include "util/modfile.h"

static const char *name_at(const struct sp_symtab *t, uint64_t addr)
{
	const struct sp_sym *s = sp_symtab_find(t, addr);
	return s ? s->name : NULL;
}

/* A file with the given contents; the caller unlinks it. */
static void write_file(char *path, const char *contents)
{
	strcpy(path, "/tmp/sp-unit-sym-XXXXXX");
	int fd = mkstemp(path);
	SP_CHECK(fd >= 0);
	if (fd < 0)
		return;
	SP_CHECK(write(fd, contents, strlen(contents)) == (ssize_t)strlen(contents));
	close(fd);
}

SP_TEST(symtab_bisection_finds_each_symbol)
{
	struct sp_symtab t;
	sp_symtab_init(&t);
	/* Added out of order, with gaps between them. */
	SP_CHECK(sp_symtab_add(&t, 0x3000, 0x100, "c", 1) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x1000, 0x100, "a", 1) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x2000, 0x100, "b", 1) == 0);
	sp_symtab_finish(&t);
	SP_CHECK(t.sorted);
	SP_CHECK(t.v[0].start == 0x1000 && t.v[1].start == 0x2000 && t.v[2].start == 0x3000);
	SP_CHECK_STR(name_at(&t, 0x1000), "a");
	SP_CHECK_STR(name_at(&t, 0x10ff), "a");
	SP_CHECK_STR(name_at(&t, 0x2080), "b");
	SP_CHECK_STR(name_at(&t, 0x30ff), "c");
	SP_CHECK(name_at(&t, 0xfff) == NULL);
	SP_CHECK(name_at(&t, 0) == NULL);
	SP_CHECK(name_at(&t, UINT64_MAX) == NULL);
	sp_symtab_release(&t);
	SP_CHECK(t.n == 0 && t.v == NULL);
	SP_CHECK(sp_symtab_find(&t, 0x1000) == NULL);
}

/*
 * Sorting: by start, symbols that start together in the order they were
 * added, also for symbols added after a first sort; starts that differ
 * in any byte, high or low.
 */
SP_TEST(symtab_sort_keeps_the_order_of_equal_starts)
{
	struct sp_symtab t;
	sp_symtab_init(&t);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char name[16];
	for (int i = 0; i < 3000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Few distinct starts, so that many coincide; some far apart. */
		uint64_t start = (x % 97) * 0x10 + (i % 5 == 0 ? (x >> 40) << 32 : 0x400000);
		int n = snprintf(name, sizeof(name), "s%d", i);
		SP_CHECK(sp_symtab_add(&t, start, 8, name, (size_t)n) == 0);
		if (i == 1000)
			sp_symtab_finish(&t);
	}
	sp_symtab_finish(&t);
	SP_CHECK(t.n == 3000);
	for (size_t i = 1; i < t.n; i++)
		SP_CHECK(t.v[i - 1].start < t.v[i].start ||
			 (t.v[i - 1].start == t.v[i].start && t.v[i - 1].order < t.v[i].order));
	/* The names went with their symbols. */
	for (size_t i = 0; i < t.n; i++) {
		snprintf(name, sizeof(name), "s%u", t.v[i].order);
		SP_CHECK_STR(t.v[i].name, name);
	}
	sp_symtab_release(&t);
}

/* A symbol never names an address outside its own extent. */
SP_TEST(symtab_nearest_symbol_stays_in_its_extent)
{
	struct sp_symtab t;
	sp_symtab_init(&t);
	SP_CHECK(sp_symtab_add(&t, 0x1000, 0x10, "sized", 5) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x2000, 0, "unsized", 7) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x3000, 0, "next", 4) == 0);
	SP_CHECK(sp_symtab_add_limited(&t, 0x4000, 0x4020, "limited", 7) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x5000, 0, "last", 4) == 0);
	sp_symtab_finish(&t);
	/* Past the end of a sized symbol, in the gap: nothing. */
	SP_CHECK_STR(name_at(&t, 0x100f), "sized");
	SP_CHECK(name_at(&t, 0x1010) == NULL);
	SP_CHECK(name_at(&t, 0x1fff) == NULL);
	/* Without a size: up to the next symbol. */
	SP_CHECK_STR(name_at(&t, 0x2fff), "unsized");
	SP_CHECK_STR(name_at(&t, 0x3000), "next");
	/* Without a size but with a limit (its section's end): not past it. */
	SP_CHECK_STR(name_at(&t, 0x401f), "limited");
	SP_CHECK(name_at(&t, 0x4020) == NULL);
	/* The last symbol without a size: one byte. */
	SP_CHECK_STR(name_at(&t, 0x5000), "last");
	SP_CHECK(name_at(&t, 0x5001) == NULL);
	sp_symtab_release(&t);
}

SP_TEST(symtab_later_symbol_wins_an_overlap)
{
	struct sp_symtab t;
	sp_symtab_init(&t);
	SP_CHECK(sp_symtab_add(&t, 0x1000, 0x1000, "outer", 5) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x1400, 0x100, "inner", 5) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x1000, 0x10, "first", 5) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x1000, 0x10, "again", 5) == 0);
	sp_symtab_finish(&t);
	SP_CHECK_STR(name_at(&t, 0x1008), "again");
	SP_CHECK_STR(name_at(&t, 0x1010), "outer");
	SP_CHECK_STR(name_at(&t, 0x1450), "inner");
	SP_CHECK_STR(name_at(&t, 0x1500), "outer");
	/* A name is copied, up to its length. */
	SP_CHECK(sp_symtab_add(&t, 0x9000, 1, "abcdef", 3) == 0);
	sp_symtab_finish(&t);
	SP_CHECK_STR(name_at(&t, 0x9000), "abc");
	sp_symtab_release(&t);
}

SP_TEST(symtab_grows_past_one_string_chunk)
{
	struct sp_symtab t;
	char name[64];
	sp_symtab_init(&t);
	for (unsigned i = 0; i < 5000; i++) {
		int n = snprintf(name, sizeof(name), "function_with_a_long_name_%u", i);
		SP_CHECK(sp_symtab_add(&t, 0x100000 - 16 * (uint64_t)i, 16, name, (size_t)n) == 0);
	}
	sp_symtab_finish(&t);
	SP_CHECK(t.n == 5000 && t.nchunks > 1);
	SP_CHECK_STR(name_at(&t, 0x100000 - 16 * 4321 + 7), "function_with_a_long_name_4321");
	SP_CHECK_STR(name_at(&t, 0x100000), "function_with_a_long_name_0");
	sp_symtab_release(&t);
}

SP_TEST(kallsyms_keeps_text_symbols)
{
	char path[64];
	struct sp_symtab t;
	struct sp_error err = { 0 };
	write_file(path, "ffffffff81000000 T _stext\n"
			 "ffffffff81000100 t helper\n"
			 "ffffffff81000200 D some_data\n"
			 "ffffffff81000300 W weak_one\n"
			 "garbage line\n"
			 "ffffffff81000400\n"
			 "ffffffff81000500 T mod_func\t[ext4]\n");
	sp_symtab_init(&t);
	SP_CHECK(sp_kallsyms_load(path, &t, &err) == 0);
	SP_CHECK(t.n == 4);
	SP_CHECK_STR(name_at(&t, 0xffffffff81000010), "_stext");
	SP_CHECK_STR(name_at(&t, 0xffffffff81000250), "helper");	/* data is no symbol */
	SP_CHECK_STR(name_at(&t, 0xffffffff81000300), "weak_one");
	SP_CHECK_STR(name_at(&t, 0xffffffff81000500), "mod_func");	/* no module suffix */
	sp_symtab_release(&t);
	unlink(path);
}

SP_TEST(kallsyms_refuses_what_it_cannot_use)
{
	char path[64];
	struct sp_symtab t;
	struct sp_error err = { 0 };
	/* Read without privilege: every address zero. */
	write_file(path, "0000000000000000 T _stext\n0000000000000000 t helper\n");
	sp_symtab_init(&t);
	SP_CHECK(sp_kallsyms_load(path, &t, &err) == -1);
	SP_CHECK(err.code == SP_ERR_PERMISSION);
	SP_CHECK(strstr(sp_error_message(&err), "is zero") != NULL);
	sp_symtab_release(&t);
	unlink(path);
	/* No kallsyms line at all. */
	write_file(path, "hello\nworld\n");
	sp_symtab_init(&t);
	SP_CHECK(sp_kallsyms_load(path, &t, &err) == -1);
	SP_CHECK(err.code == SP_ERR_BAD_INPUT);
	sp_symtab_release(&t);
	unlink(path);
	/* No file. */
	sp_symtab_init(&t);
	SP_CHECK(sp_kallsyms_load("/nonexistent/kallsyms", &t, &err) == -1);
	SP_CHECK(err.code == SP_ERR_ERRNO);
	SP_CHECK(strstr(sp_error_message(&err), "cannot open '/nonexistent/kallsyms'") != NULL);
	sp_symtab_release(&t);
}

SP_TEST(perfmap_line_parsing)
{
	uint64_t start, size;
	const char *name;
	size_t nl;
	const char *l = "0x1000 100 first name with spaces\n";
	SP_CHECK(sp_perfmap_parse_line(l, strlen(l), &start, &size, &name, &nl));
	SP_CHECK(start == 0x1000 && size == 0x100);
	SP_CHECK(nl == strlen("first name with spaces") && memcmp(name, "first", 5) == 0);
	l = "7fAB0000 0X20 py::f:/x.py\r\n";
	SP_CHECK(sp_perfmap_parse_line(l, strlen(l), &start, &size, &name, &nl));
	SP_CHECK(start == 0x7fab0000 && size == 0x20 && nl == strlen("py::f:/x.py"));
	static const char *const bad[] = {
		"", "not a line", "1000", "1000 100", "1000 100 ", "1000 0 zero_size",
		"zz 10 bad", "10000000000000000 1 too_long", "ffffffffffffffff 2 wraps",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		SP_CHECK(!sp_perfmap_parse_line(bad[i], strlen(bad[i]), &start, &size, &name, &nl));
}

SP_TEST(perfmap_file_later_lines_win_and_bad_ones_count)
{
	char path[64];
	struct sp_symtab t;
	uint64_t skipped = 0;
	write_file(path, "0x1000 100 first\nnot a line\n2000 0x100 second\n1000 100 later wins\n"
			 "zz 10 bad\n");
	sp_symtab_init(&t);
	int fd = open(path, O_RDONLY);
	SP_CHECK(fd >= 0);
	SP_CHECK(sp_perfmap_load_fd(fd, &t, &skipped) == 0);
	SP_CHECK(skipped == 2);
	SP_CHECK_STR(name_at(&t, 0x1010), "later wins");
	SP_CHECK_STR(name_at(&t, 0x20ff), "second");
	SP_CHECK(name_at(&t, 0x2100) == NULL);
	sp_symtab_release(&t);
	unlink(path);
}

SP_TEST(search_options_fill_the_settings)
{
	struct sp_sym_search s;
	sp_sym_search_init(&s);
	SP_CHECK(s.elf.inline_frames && s.elf.lines && s.elf.demangle);
	SP_CHECK_STR(s.perf_map_dir, "/tmp");
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_ROOT, "/") == 0);
	SP_CHECK(s.modules.root == NULL);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_ROOT, "/srv/root") == 0);
	SP_CHECK_STR(s.modules.root, "/srv/root");
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_MODULE_DIR, "/m1") == 0);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_ARCHIVE, "/nonexistent-archive") == 0);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_DEBUG_DIR, "/d1") == 0);
	SP_CHECK(s.modules.ndirs == 2);
	SP_CHECK_STR(s.modules.dirs[0], "/m1");
	SP_CHECK_STR(s.modules.dirs[1], "/nonexistent-archive");
	SP_CHECK(s.ndebug_dirs == 2);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_NO_INLINE, NULL) == 0);
	SP_CHECK(!s.elf.inline_frames);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_PERF_MAPS_FOR, "12,345") == 0);
	SP_CHECK(s.perf_maps == SP_PERF_MAPS_PIDS && s.nperf_map_pids == 2);
	SP_CHECK(s.perf_map_pids[0] == 12 && s.perf_map_pids[1] == 345);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_NO_CACHE, NULL) == 0);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_NO_DEBUGINFOD, NULL) == 0);
	SP_CHECK(sp_sym_search_finish(&s) == 0);
	/* No kallsyms in an archive that does not exist; no cache asked for. */
	SP_CHECK(s.kallsyms == NULL && s.cache_dir == NULL);
	SP_CHECK_STR(s.elf.debuginfo_path, "-:.debug:/nonexistent-archive:/d1");
	SP_CHECK(!s.debuginfod && getenv("DEBUGINFOD_URLS") == NULL);
	sp_sym_search_release(&s);
}

SP_TEST(search_options_refuse_bad_arguments)
{
	struct sp_sym_search s;
	static const char *const bad[] = { "", "0", "12,", ",12", "12,,3", "x", "-1",
					   "4294967296", "python3" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		sp_sym_search_init(&s);
		SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_PERF_MAPS_FOR, bad[i]) == -1);
		SP_CHECK(s.err.code == SP_ERR_BAD_INPUT);
		sp_sym_search_release(&s);
	}
	sp_sym_search_init(&s);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_KALLSYMS, "") == -1);
	SP_CHECK(s.err.code == SP_ERR_BAD_INPUT);
	SP_CHECK_STR(sp_error_message(&s.err), "--kallsyms needs FILE|none");
	/* Of --perf-maps-for and --no-perf-maps the last counts; pid lists add up. */
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_PERF_MAPS_FOR, "7") == 0);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_NO_PERF_MAPS, NULL) == 0);
	SP_CHECK(s.perf_maps == SP_PERF_MAPS_NONE);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_PERF_MAPS_FOR, "8,9") == 0);
	SP_CHECK(s.perf_maps == SP_PERF_MAPS_PIDS && s.nperf_map_pids == 3);
	SP_CHECK(sp_sym_search_set(&s, SP_SYM_OPT_PERF_MAPS_FOR, "python") == 0);
	SP_CHECK(s.perf_maps == SP_PERF_MAPS_PYTHON);
	sp_sym_search_release(&s);
}

SP_TEST(modfile_search_options)
{
	struct sp_modfile_search m;
	sp_modfile_search_init(&m);
	sp_modfile_search_set_root(&m, "/");
	SP_CHECK(m.root == NULL);
	sp_modfile_search_set_root(&m, "/r");
	SP_CHECK_STR(m.root, "/r");
	for (int i = 0; i < 20; i++)
		SP_CHECK(sp_modfile_search_add_dir(&m, i % 2 ? "/odd" : "/even") == 0);
	SP_CHECK(m.ndirs == 20);
	SP_CHECK_STR(m.dirs[19], "/odd");
	sp_modfile_search_release(&m);
	SP_CHECK(m.ndirs == 0 && m.dirs == NULL);
}

/* ---- the symbolizer, fed records made here ---- */

struct fake_record {
	msgpack_sbuffer sb;
	msgpack_unpacked u;
	struct sp_record rec;
};

/* A record from "key", value pairs: values are strings or, after "#", numbers. */
static void fake(struct fake_record *f, enum sp_rtype type, const char *const *kv, size_t n)
{
	msgpack_packer pk;
	msgpack_sbuffer_init(&f->sb);
	msgpack_packer_init(&pk, &f->sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n / 2);
	for (size_t i = 0; i + 1 < n; i += 2) {
		msgpack_pack_str_with_body(&pk, kv[i], strlen(kv[i]));
		if (kv[i + 1][0] == '#')
			msgpack_pack_uint64(&pk, strtoull(kv[i + 1] + 1, NULL, 0));
		else
			msgpack_pack_str_with_body(&pk, kv[i + 1], strlen(kv[i + 1]));
	}
	msgpack_unpacked_init(&f->u);
	SP_CHECK(msgpack_unpack_next(&f->u, f->sb.data, f->sb.size, NULL) == MSGPACK_UNPACK_SUCCESS);
	memset(&f->rec, 0, sizeof(f->rec));
	f->rec.type = type;
	f->rec.map = &f->u.data;
}

static void fake_release(struct fake_record *f)
{
	msgpack_unpacked_destroy(&f->u);
	msgpack_sbuffer_destroy(&f->sb);
}

static struct sp_namer *symbolizer(struct sp_sym_search *s, const char *perf_map_dir)
{
	struct sp_error err = { 0 };
	sp_sym_search_init(s);
	SP_CHECK(sp_sym_search_set(s, SP_SYM_OPT_KALLSYMS, "none") == 0);
	SP_CHECK(sp_sym_search_set(s, SP_SYM_OPT_NO_CACHE, NULL) == 0);
	SP_CHECK(sp_sym_search_set(s, SP_SYM_OPT_NO_DEBUGINFOD, NULL) == 0);
	if (perf_map_dir)
		SP_CHECK(sp_sym_search_set(s, SP_SYM_OPT_PERF_MAP_DIR, perf_map_dir) == 0);
	SP_CHECK(sp_sym_search_finish(s) == 0);
	struct sp_namer *sym = sp_namer_new(s, NULL, NULL, &err);
	SP_CHECK(sym != NULL);
	struct fake_record hdr;
	static const char *const h[] = { "t", "header" };
	fake(&hdr, SP_R_HEADER, h, 2);
	sp_namer_begin_segment(sym, hdr.rec.map);
	fake_release(&hdr);
	return sym;
}

static void add_module(struct sp_namer *sym, const char *id, const char *path,
		       const char *kind, const char *pid)
{
	struct fake_record m;
	const char *const kv[] = { "t", "module", "id", id, "path", path, "kind", kind, "pid", pid };
	fake(&m, SP_R_MODULE, kv, 10);
	SP_CHECK(sp_namer_add_module(sym, &m.rec) == 0);
	fake_release(&m);
}

SP_TEST(symbolizer_interns_and_names_what_it_cannot_look_up)
{
	struct sp_sym_search s;
	struct sp_namer *sym = symbolizer(&s, NULL);
	struct sp_symframe out;
	uint64_t id, id2;
	add_module(sym, "#0", "/nonexistent/dir/libgone.so", "elf", "#1");
	struct sp_stack_frame f = { 0x7f0000001234, 0, 0x1234, SP_FRAME_USER | SP_FRAME_RETADDR };
	SP_CHECK(sp_namer_intern(sym, &f, &id) == 1 && id == 0);
	SP_CHECK(sp_namer_intern(sym, &f, &id2) == 0 && id2 == 0);
	sp_namer_resolve(sym, &f, &out);
	SP_CHECK_STR(out.name, "libgone.so+0x1234");
	SP_CHECK(out.origin == SP_ORIGIN_ADDRESS_ONLY && !out.has_offset);
	SP_CHECK(out.has_module && out.module == 0);
	SP_CHECK(out.flags == SP_SYM_RETADDR);
	/* Another address, a frame without a module, a kernel frame: new ids. */
	struct sp_stack_frame g = { 0x5000, SP_NO_MODULE, 0x5000, SP_FRAME_USER };
	SP_CHECK(sp_namer_intern(sym, &g, &id) == 1 && id == 1);
	sp_namer_resolve(sym, &g, &out);
	SP_CHECK_STR(out.name, "0x5000");
	SP_CHECK(!out.has_module);
	struct sp_stack_frame k = { 0xffffffff81000010, SP_NO_MODULE, 0, SP_FRAME_KERNEL };
	SP_CHECK(sp_namer_intern(sym, &k, &id) == 1 && id == 2);
	sp_namer_resolve(sym, &k, &out);
	SP_CHECK_STR(out.name, "[kernel]+0xffffffff81000010");
	SP_CHECK(out.flags == SP_SYM_KERNEL);
	/* Markers differ by their reason, not their address. */
	struct sp_stack_frame m1 = { 0x1, 0, SP_END_TRUNCATED, SP_FRAME_MARKER };
	struct sp_stack_frame m2 = { 0x2, 0, SP_END_TRUNCATED, SP_FRAME_MARKER };
	struct sp_stack_frame m3 = { 0x1, 0, SP_END_NO_CFI, SP_FRAME_MARKER };
	SP_CHECK(sp_namer_intern(sym, &m1, &id) == 1);
	SP_CHECK(sp_namer_intern(sym, &m2, &id2) == 0 && id2 == id);
	SP_CHECK(sp_namer_intern(sym, &m3, &id2) == 1 && id2 == id + 1);
	sp_namer_resolve(sym, &m3, &out);
	SP_CHECK_STR(out.name, "[no_cfi]");
	SP_CHECK(out.flags == SP_SYM_MARKER && !out.has_module);
	struct sp_stack_frame m4 = { 0x1, 0, 999, SP_FRAME_MARKER };
	sp_namer_resolve(sym, &m4, &out);
	SP_CHECK_STR(out.name, "[marker 999]");
	struct sp_sym_stats st;
	sp_namer_stats(sym, &st);
	SP_CHECK(st.frames == 5 && st.modules_missing == 1);
	SP_CHECK(st.by_origin[SP_ORIGIN_ADDRESS_ONLY] == 5);
	SP_CHECK_STR(st.kallsyms, "none");
	/* A new segment starts the ids again. */
	struct fake_record hdr;
	static const char *const h[] = { "t", "header" };
	fake(&hdr, SP_R_HEADER, h, 2);
	sp_namer_begin_segment(sym, hdr.rec.map);
	fake_release(&hdr);
	SP_CHECK(sp_namer_intern(sym, &g, &id) == 1 && id == 0);
	sp_namer_free(sym);
	sp_sym_search_release(&s);
}

SP_TEST(symbolizer_trusts_only_safe_perf_maps)
{
	char dir[] = "/tmp/sp-unit-maps-XXXXXX", path[128], link[128];
	SP_CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/perf-4242.map", dir);
	FILE *f = fopen(path, "w");
	SP_CHECK(f != NULL);
	if (!f)
		return;
	fputs("1000 100 jitted_fn\n3000 10 _start\n", f);
	fclose(f);
	struct sp_sym_search s;
	struct sp_namer *sym = symbolizer(&s, dir);
	struct sp_symframe out;
	uint64_t id;
	add_module(sym, "#3", "//anon", "jit", "#4242");
	struct sp_stack_frame fr = { 0x1010, 3, 0x10, SP_FRAME_JIT | SP_FRAME_RETADDR };
	SP_CHECK(sp_namer_intern(sym, &fr, &id) == 1);
	sp_namer_resolve(sym, &fr, &out);
	SP_CHECK_STR(out.name, "jitted_fn");
	SP_CHECK(out.origin == SP_ORIGIN_PERF_MAP && out.offset == 0x10 && out.has_offset);
	SP_CHECK(out.flags == (SP_SYM_JIT | SP_SYM_RETADDR));
	/* Start-up scaffolding is hidden, wherever its name comes from. */
	struct sp_stack_frame st = { 0x3001, 3, 0x1, SP_FRAME_JIT };
	sp_namer_resolve(sym, &st, &out);
	SP_CHECK_STR(out.name, "_start");
	SP_CHECK(out.flags == (SP_SYM_JIT | SP_SYM_HIDDEN));
	/* A map writable by every user is refused: the name stays an address. */
	add_module(sym, "#4", "//anon", "jit", "#4343");
	snprintf(path, sizeof(path), "%s/perf-4343.map", dir);
	f = fopen(path, "w");
	SP_CHECK(f != NULL);
	if (f) {
		fputs("1000 100 planted\n", f);
		fclose(f);
	}
	chmod(path, 0666);
	struct sp_stack_frame pl = { 0x1010, 4, 0x10, SP_FRAME_JIT };
	sp_namer_resolve(sym, &pl, &out);
	SP_CHECK(out.origin == SP_ORIGIN_ADDRESS_ONLY);
	SP_CHECK_STR(out.name, "anon+0x10");
	/* So is a symlink, even to a good map. */
	add_module(sym, "#5", "//anon", "jit", "#4444");
	snprintf(link, sizeof(link), "%s/perf-4444.map", dir);
	snprintf(path, sizeof(path), "%s/perf-4242.map", dir);
	SP_CHECK(symlink(path, link) == 0);
	struct sp_stack_frame sl = { 0x1010, 5, 0x10, SP_FRAME_JIT };
	sp_namer_resolve(sym, &sl, &out);
	SP_CHECK(out.origin == SP_ORIGIN_ADDRESS_ONLY);
	struct sp_sym_stats stats;
	sp_namer_stats(sym, &stats);
	SP_CHECK(stats.perf_maps.loaded == 1 && stats.perf_maps.refused == 1);
	sp_namer_free(sym);
	sp_sym_search_release(&s);
	unlink(link);
	unlink(path);
	snprintf(path, sizeof(path), "%s/perf-4343.map", dir);
	unlink(path);
	rmdir(dir);
}

SP_TEST(symtab_lookup_finds_an_outer_symbol_behind_many_inner_ones)
{
	struct sp_symtab t;
	sp_symtab_init(&t);
	/* One long symbol, then 40 short ones inside it, then one after. */
	SP_CHECK(sp_symtab_add(&t, 0x1000, 0x1000, "outer", 5) == 0);
	for (int i = 0; i < 40; i++)
		SP_CHECK(sp_symtab_add(&t, 0x1010 + (uint64_t)i * 0x10, 8, "inner", 5) == 0);
	SP_CHECK(sp_symtab_add(&t, 0x3000, 0x10, "after", 5) == 0);
	sp_symtab_finish(&t);
	SP_CHECK_STR(sp_symtab_find(&t, 0x1011)->name, "inner");
	/* In a gap between inner ones: the outer symbol, 40 entries back. */
	SP_CHECK_STR(sp_symtab_find(&t, 0x1019)->name, "outer");
	SP_CHECK_STR(sp_symtab_find(&t, 0x1fff)->name, "outer");
	SP_CHECK(sp_symtab_find(&t, 0x2000) == NULL);
	SP_CHECK(sp_symtab_find(&t, 0xfff) == NULL);
	SP_CHECK_STR(sp_symtab_find(&t, 0x3005)->name, "after");
	SP_CHECK(sp_symtab_find(&t, 0x3010) == NULL);
	sp_symtab_release(&t);
}

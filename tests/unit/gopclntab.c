/* SPDX-License-Identifier: MIT
 * Unit tests of sym/gopclntab.c on tables built here, one per layout
 * (Go 1.2, 1.16, 1.18, 1.20), in both byte orders and both pointer
 * sizes: three functions with names, file:line tables and one inlined
 * call; then damaged tables, refused with the reason or, when the
 * damage is in one function, that function alone not found; then ELF
 * files written here: moduledata found in writable data, the 1.2
 * layout's inline frames only for the Go release .go.buildinfo names,
 * the table of an externally linked program found by its symbols.
 *
 * With SP_UNIT_GOPCLN_SEEDS=DIR in the environment the test
 * gopclntab_fuzz_seeds writes the tables as fuzz/fuzz-gopclntab's
 * input (fuzz/make-corpus does that).
 */
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/gopclntab.h"
#include "unit.h"

#define TEXT	0x401000u
#define TABLE	0x500000u	/* the table's address */
#define IMAGE	0x600000u	/* the image region: moduledata, inline tree */

/* A table and the image region beside it, as they are built. */
struct gb {
	int layout;		/* 12, 116, 118, 120 */
	unsigned ps;
	bool be;
	unsigned char t[2048], img[1024];
	size_t len, imglen;
	size_t nameoff[8];	/* of each name, relative to its table */
	size_t fileoff[3];
	size_t funcat[3];	/* each function's record */
};

static void put(unsigned char *b, size_t off, uint64_t v, unsigned n, bool be)
{
	for (unsigned i = 0; i < n; i++)
		b[off + (be ? n - 1 - i : i)] = v >> (8 * i);
}

static size_t add(struct gb *g, uint64_t v, unsigned n)
{
	size_t at = g->len;
	put(g->t, at, v, n, g->be);
	g->len += n;
	return at;
}

static size_t add_str(struct gb *g, const char *s)
{
	size_t at = g->len;
	memcpy(g->t + at, s, strlen(s) + 1);
	g->len += strlen(s) + 1;
	return at;
}

static void align(struct gb *g, unsigned a)
{
	while (g->len % a)
		g->t[g->len++] = 0;
}

static void add_uvarint(struct gb *g, uint32_t v)
{
	do {
		g->t[g->len++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
}

/* A pc-value table: value vals[i] up to function offset ends[i]. */
static size_t add_pcvalue(struct gb *g, size_t base, const int32_t *vals,
			  const uint32_t *ends, int n)
{
	size_t at = g->len - base;
	int32_t prev = -1;
	uint32_t pc = 0;
	for (int i = 0; i < n; i++) {
		int32_t d = vals[i] - prev;
		add_uvarint(g, ((uint32_t)d << 1) ^ (uint32_t)(d >> 31));
		add_uvarint(g, ends[i] - pc);
		prev = vals[i], pc = ends[i];
	}
	g->t[g->len++] = 0;
	return at;
}

static const char *const fnames[] = {
	"main.alpha", "main.beta", "main.sum[go.shape.int_0]", "main.gamma",
};
static const char *const files[] = { "a.go", "b.go", "c.go" };
static const uint32_t starts[] = { 0x00, 0x40, 0x80, 0xc0 };	/* from TEXT */

/* The three functions' tables: where each begins, per function. */
struct ftabs { size_t pcfile[3], pcln[3], inl[3]; };

/*
 * main.alpha: a.go line 10, then 11 from +0x10.  main.beta: b.go line
 * 20; at +0x10..+0x20 main.gamma (c.go line 5) inlined, called from
 * +0x8; then b.go line 21.  main.sum[...]: a.go line 30.
 */
static void add_tables(struct gb *g, size_t base, struct ftabs *ft, int32_t f0)
{
	int32_t fa = f0, fb = f0 + 1, fc = f0 + 2;
	ft->pcfile[0] = add_pcvalue(g, base, (int32_t[]){ fa }, (uint32_t[]){ 0x40 }, 1);
	ft->pcln[0] = add_pcvalue(g, base, (int32_t[]){ 10, 11 }, (uint32_t[]){ 0x10, 0x40 }, 2);
	ft->pcfile[1] = add_pcvalue(g, base, (int32_t[]){ fb, fc, fb },
				    (uint32_t[]){ 0x10, 0x20, 0x40 }, 3);
	ft->pcln[1] = add_pcvalue(g, base, (int32_t[]){ 20, 5, 21 },
				  (uint32_t[]){ 0x10, 0x20, 0x40 }, 3);
	ft->inl[1] = add_pcvalue(g, base, (int32_t[]){ -1, 0, -1 },
				 (uint32_t[]){ 0x10, 0x20, 0x40 }, 3);
	ft->pcfile[2] = add_pcvalue(g, base, (int32_t[]){ fa }, (uint32_t[]){ 0x40 }, 1);
	ft->pcln[2] = add_pcvalue(g, base, (int32_t[]){ 30 }, (uint32_t[]){ 0x40 }, 1);
	ft->inl[0] = ft->inl[2] = 0;
}

/* The inline tree (one call, of main.gamma from beta+0x8) in the image at its start. */
static void add_inltree(struct gb *g)
{
	unsigned char *e = g->img;
	memset(e, 0, 20);
	if (g->layout == 120) {
		put(e, 4, g->nameoff[3], 4, g->be);
		put(e, 8, 0x8, 4, g->be);
		put(e, 12, 5, 4, g->be);
	} else {
		put(e, 0, (uint16_t)-1, 2, g->be);
		put(e, 4, 2, 4, g->be);		/* file, line: unused */
		put(e, 8, 20, 4, g->be);
		put(e, 12, g->nameoff[3], 4, g->be);
		put(e, 16, 0x8, 4, g->be);
	}
	g->imglen = 64;
}

/* moduledata in the image, for 1.18+: it points at the table's parts. */
static void add_moduledata(struct gb *g, size_t names, size_t ftab, uint64_t nfunc)
{
	unsigned ps = g->ps, gofunc = g->layout == 118 ? 38 : 40;
	size_t at = g->imglen;
	memset(g->img + at, 0, (gofunc + 1) * ps);
	put(g->img, at, TABLE, ps, g->be);
	put(g->img, at + ps, TABLE + names, ps, g->be);
	put(g->img, at + 16 * ps, TABLE + ftab, ps, g->be);
	put(g->img, at + 18 * ps, nfunc + 1, ps, g->be);
	put(g->img, at + 22 * ps, TEXT, ps, g->be);
	put(g->img, at + gofunc * ps, IMAGE, ps, g->be);	/* gofunc: the tree's base */
	g->imglen = at + (gofunc + 1) * ps;
}

/* One _func record; funcdata: the inline tree for beta. */
static void add_func(struct gb *g, int i, const struct ftabs *ft)
{
	unsigned ps = g->ps;
	bool newer = g->layout >= 118;
	g->funcat[i] = add(g, newer ? starts[i] : TEXT + starts[i], newer ? 4 : ps);
	add(g, g->nameoff[i], 4);
	add(g, 0, 4);			/* args */
	add(g, 0, 4);			/* deferreturn */
	add(g, 0, 4);			/* pcsp */
	add(g, ft->pcfile[i], 4);
	add(g, ft->pcln[i], 4);
	add(g, 3, 4);			/* npcdata */
	if (g->layout != 12)
		add(g, 0, 4);		/* cuOffset */
	if (g->layout == 120)
		add(g, 0, 4);		/* startLine */
	unsigned inl = g->layout == 12 ? 4 : 3;
	add(g, 0, 1), add(g, 0, 1), add(g, 0, 1);
	add(g, i == 1 ? inl + 1 : 0, 1);	/* nfuncdata */
	add(g, 0, 4), add(g, 0, 4), add(g, ft->inl[i], 4);
	if (i != 1)
		return;
	if (newer) {
		for (unsigned k = 0; k < inl; k++)
			add(g, UINT32_MAX, 4);
		add(g, 0, 4);		/* the tree at gofunc + 0 */
	} else {
		if ((g->len - 0) % ps)
			add(g, 0, 4);
		for (unsigned k = 0; k < inl; k++)
			add(g, 0, ps);
		add(g, IMAGE, ps);
	}
}

/* The function table: nfunc + 1 entries, the last one the end. */
static size_t add_ftab(struct gb *g, size_t funcoff_at[3])
{
	bool newer = g->layout >= 118;
	unsigned w = newer ? 4 : g->ps;
	size_t at = g->len;
	for (int i = 0; i < 4; i++) {
		add(g, newer ? starts[i] : TEXT + starts[i], w);
		if (g->layout == 12 && i == 3)
			break;
		size_t o = add(g, 0, w);
		if (i < 3)
			funcoff_at[i] = o;
	}
	return at;
}

static void set_funcoff(struct gb *g, size_t at, size_t v)
{
	put(g->t, at, v, g->layout >= 118 ? 4 : g->ps, g->be);
}

static void build12(struct gb *g)
{
	unsigned ps = g->ps;
	size_t funcoff_at[3];
	add(g, 0xfffffffb, 4), add(g, 0, 2), add(g, 1, 1), add(g, ps, 1);
	add(g, 3, ps);				/* nfunc */
	add_ftab(g, funcoff_at);
	size_t filetab_at = add(g, 0, 4);
	for (int i = 0; i < 4; i++)
		g->nameoff[i] = add_str(g, fnames[i]);
	for (int i = 0; i < 3; i++)
		g->fileoff[i] = add_str(g, files[i]);
	align(g, 4);
	put(g->t, filetab_at, g->len, 4, g->be);
	add(g, 4, 4);				/* the count, entry 0 */
	for (int i = 0; i < 3; i++)
		add(g, g->fileoff[i], 4);
	struct ftabs ft;
	add_tables(g, 0, &ft, 1);
	for (int i = 0; i < 3; i++) {
		align(g, ps);
		set_funcoff(g, funcoff_at[i], g->len);
		add_func(g, i, &ft);
	}
	add_inltree(g);
}

static void build116(struct gb *g)
{
	unsigned ps = g->ps, nwords = g->layout == 116 ? 7 : 8;
	size_t funcoff_at[3];
	add(g, g->layout == 116 ? 0xfffffffa : g->layout == 118 ? 0xfffffff0 : 0xfffffff1, 4);
	add(g, 0, 2), add(g, 1, 1), add(g, ps, 1);
	size_t hdr = g->len;
	for (unsigned i = 0; i < nwords; i++)
		add(g, 0, ps);
	put(g->t, hdr, 3, ps, g->be);		/* nfunc */
	put(g->t, hdr + ps, 3, ps, g->be);	/* nfiles */
	size_t k = 2;
	if (g->layout != 116)
		put(g->t, hdr + ps * k++, TEXT, ps, g->be);
	size_t names = g->len;
	for (int i = 0; i < 4; i++)
		g->nameoff[i] = add_str(g, fnames[i]) - names;
	size_t cu = g->len;
	add(g, 0, 4), add(g, 0, 4), add(g, 0, 4);
	size_t filetab = g->len;
	for (int i = 0; i < 3; i++)
		put(g->t, cu + 4 * i, add_str(g, files[i]) - filetab, 4, g->be);
	size_t pctab = g->len;
	add(g, 0, 1);
	struct ftabs ft;
	add_tables(g, pctab, &ft, 0);
	align(g, ps);
	size_t pcln = g->len;
	add_ftab(g, funcoff_at);
	for (int i = 0; i < 3; i++) {
		align(g, ps);
		set_funcoff(g, funcoff_at[i], g->len - pcln);
		add_func(g, i, &ft);
	}
	size_t offs[] = { names, cu, filetab, pctab, pcln };
	for (int i = 0; i < 5; i++)
		put(g->t, hdr + ps * (k + i), offs[i], ps, g->be);
	add_inltree(g);
	if (g->layout >= 118)
		add_moduledata(g, names, pcln, 3);
}

static void build(struct gb *g, int layout, unsigned ps, bool be)
{
	memset(g, 0, sizeof(*g));
	g->layout = layout, g->ps = ps, g->be = be;
	if (layout == 12)
		build12(g);
	else
		build116(g);
}

static struct sp_gopclntab *open_gb(const struct gb *g, size_t len, const char **why)
{
	struct sp_goregion r = { IMAGE, g->img, g->imglen, true };
	struct sp_goimage img = { &r, 1, 0, g->layout == 12 ? 15 : 0 };
	return sp_gopclntab_from_bytes(g->t, len, TABLE, &img, why);
}

static const char *layout_name(int layout)
{
	return layout == 12 ? "1.2" : layout == 116 ? "1.16" : layout == 118 ? "1.18" : "1.20";
}

static void check_layout(int layout, unsigned ps, bool be)
{
	struct gb g;
	build(&g, layout, ps, be);
	const char *why = "unset";
	struct sp_gopclntab *t = open_gb(&g, g.len, &why);
	SP_CHECK(t != NULL);
	if (!t) {
		printf("# layout %d ps %u be %d: %s\n", layout, ps, be, why);
		return;
	}
	SP_CHECK(why == NULL);
	SP_CHECK_STR(sp_gopclntab_layout(t), layout_name(layout));
	SP_CHECK(sp_gopclntab_count(t) == 3);
	SP_CHECK(sp_gopclntab_has_inline(t));
	struct sp_gofunc f;

	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x4, SP_GOPCLN_LINES, &f) == 1);
	SP_CHECK_STR(f.name, "main.alpha");
	SP_CHECK(f.entry == TEXT && f.end == TEXT + 0x40);
	SP_CHECK_STR(f.file, "a.go");
	SP_CHECK(f.line == 10 && f.ninl == 0);
	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x3f, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK(f.line == 11 && f.ninl == 0);

	/* In the inlined call: gamma's position, then beta's call site. */
	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK_STR(f.name, "main.beta");
	SP_CHECK(f.ninl == 1);
	if (f.ninl == 1) {
		SP_CHECK_STR(f.inl[0].name, "main.gamma");
		SP_CHECK_STR(f.inl[0].file, "c.go");
		SP_CHECK(f.inl[0].line == 5);
	}
	SP_CHECK_STR(f.file, "b.go");
	SP_CHECK(f.line == 20);
	/* Lines without inline frames give the innermost position. */
	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_LINES, &f) == 1);
	SP_CHECK(f.ninl == 0 && f.line == 5);
	SP_CHECK_STR(f.file, "c.go");
	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x60, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK(f.ninl == 0 && f.line == 21);
	/* The name alone. */
	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x58, 0, &f) == 1);
	SP_CHECK(f.file == NULL && f.ninl == 0);

	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x80, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK_STR(f.name, "main.sum[...]");
	SP_CHECK(f.line == 30);
	SP_CHECK(f.end == TEXT + 0xc0);

	/* Outside every function. */
	SP_CHECK(sp_gopclntab_lookup(t, TEXT - 1, 0, &f) == 0);
	SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0xc0, 0, &f) == 0);
	sp_gopclntab_free(t);
}

SP_TEST(gopclntab_layout_12)
{
	check_layout(12, 8, false);
	check_layout(12, 4, false);
	check_layout(12, 8, true);
}

SP_TEST(gopclntab_layout_116)
{
	check_layout(116, 8, false);
	check_layout(116, 4, true);
}

SP_TEST(gopclntab_layout_118)
{
	check_layout(118, 8, false);
	check_layout(118, 4, false);
	check_layout(118, 8, true);
}

SP_TEST(gopclntab_layout_120)
{
	check_layout(120, 8, false);
	check_layout(120, 4, true);
}

/* Without the image (or moduledata), names and lines, no inline frames. */
SP_TEST(gopclntab_without_image_no_inline)
{
	int layouts[] = { 12, 116, 118, 120 };
	for (int i = 0; i < 4; i++) {
		struct gb g;
		build(&g, layouts[i], 8, false);
		const char *why;
		struct sp_gopclntab *t = sp_gopclntab_from_bytes(g.t, g.len, TABLE, NULL, &why);
		SP_CHECK(t != NULL);
		if (!t)
			continue;
		SP_CHECK(!sp_gopclntab_has_inline(t));
		struct sp_gofunc f;
		SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
		SP_CHECK_STR(f.name, "main.beta");
		SP_CHECK(f.ninl == 0 && f.line == 5);
		sp_gopclntab_free(t);
	}
	/* The 1.2 layout's tree, of an unknown release: not guessed. */
	struct gb g;
	build(&g, 12, 8, false);
	struct sp_goregion r = { IMAGE, g.img, g.imglen, true };
	struct sp_goimage img = { &r, 1, 0, 0 };
	struct sp_gopclntab *t = sp_gopclntab_from_bytes(g.t, g.len, TABLE, &img, NULL);
	SP_CHECK(t && !sp_gopclntab_has_inline(t));
	sp_gopclntab_free(t);
}

static void check_refused(struct gb *g, size_t len, const char *reason)
{
	const char *why = NULL;
	struct sp_gopclntab *t = open_gb(g, len, &why);
	SP_CHECK(t == NULL);
	SP_CHECK_STR(why, reason);
	sp_gopclntab_free(t);
}

SP_TEST(gopclntab_bad_tables_refused)
{
	struct gb g;
	build(&g, 118, 8, false);
	check_refused(&g, 6, "truncated");
	check_refused(&g, 40, "truncated");
	check_refused(&g, g.len / 2, "truncated");
	/* The functions' entries out of order. */
	size_t pcln = g.t[8 + 7 * 8] | g.t[8 + 7 * 8 + 1] << 8;
	unsigned char keep[4];
	memcpy(keep, g.t + pcln, 4);
	put(g.t, pcln, 0x50, 4, false);
	check_refused(&g, g.len, "function table not sorted");
	memcpy(g.t + pcln, keep, 4);
	/* Equal entries: a function of no bytes is no function. */
	put(g.t, pcln + 8, 0, 4, false);
	check_refused(&g, g.len, "function table not sorted");
	put(g.t, pcln + 8, 0x40, 4, false);
	/* A function's record past the end. */
	put(g.t, pcln + 4, 0x10000, 4, false);
	check_refused(&g, g.len, "offset out of range");
	/* The parts of the header out of order. */
	build(&g, 118, 8, false);
	put(g.t, 8 + 3 * 8, 0x1000, 8, false);
	check_refused(&g, g.len, "offset out of range");
	/* Not a table. */
	build(&g, 120, 8, false);
	put(g.t, 0, 0x12345678, 4, false);
	check_refused(&g, g.len, "unknown magic 0x12345678");
	build(&g, 120, 8, false);
	g.t[7] = 3;
	check_refused(&g, g.len, "bad header");
	/* The 1.2 layout: its file table past the end. */
	build(&g, 12, 8, false);
	put(g.t, 8 + 8 + 3 * 16 + 8, 0xffff, 4, false);
	check_refused(&g, g.len, "offset out of range");
	/* The 1.2 layout cut inside its function table. */
	build(&g, 12, 8, false);
	check_refused(&g, 30, "truncated");
}

/* Damage inside one function's record: that function is not found, the others are. */
SP_TEST(gopclntab_bad_function_not_named)
{
	int layouts[] = { 12, 116, 118, 120 };
	for (int l = 0; l < 4; l++) {
		struct gb g;
		build(&g, layouts[l], 8, false);
		struct sp_gopclntab *t = open_gb(&g, g.len, NULL);
		SP_CHECK(t != NULL);
		if (!t)
			continue;
		/* Alpha's name offset sent past the names. */
		struct sp_gofunc f;
		put(g.t, g.funcat[0] + (layouts[l] >= 118 ? 4 : 8), 0xfffff, 4, false);
		SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x4, SP_GOPCLN_INLINE, &f) == 0);
		SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
		SP_CHECK_STR(f.name, "main.beta");
		sp_gopclntab_free(t);
	}
}

/* A damaged inline tree: no inline frames rather than wrong ones. */
SP_TEST(gopclntab_bad_inline_tree)
{
	struct gb g;
	build(&g, 120, 8, false);
	put(g.img, 4, 0xfffffff, 4, false);	/* the callee's name off the table */
	struct sp_gopclntab *t = open_gb(&g, g.len, NULL);
	struct sp_gofunc f;
	SP_CHECK(t && sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK(f.ninl == 0 && f.line == 5);
	sp_gopclntab_free(t);
	build(&g, 118, 8, false);
	put(g.img, 16, 0x1000, 4, false);	/* parentPc past the function */
	t = open_gb(&g, g.len, NULL);
	SP_CHECK(t && sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK(f.ninl == 0);
	sp_gopclntab_free(t);
	/* A tree whose entry is its own parent: the chain is cut, not followed forever. */
	build(&g, 118, 8, false);
	put(g.img, 0, 0, 2, false);
	t = open_gb(&g, g.len, NULL);
	SP_CHECK(t && sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
	SP_CHECK(f.ninl == 0);
	sp_gopclntab_free(t);
}

/* Every prefix of every layout's table: refused, or looked up safely. */
SP_TEST(gopclntab_every_prefix)
{
	int layouts[] = { 12, 116, 118, 120 };
	for (int l = 0; l < 4; l++) {
		struct gb g;
		build(&g, layouts[l], 4, false);
		for (size_t len = 0; len <= g.len; len++) {
			const char *why = NULL;
			struct sp_gopclntab *t = open_gb(&g, len, &why);
			SP_CHECK(t || why);
			struct sp_gofunc f;
			for (uint64_t a = TEXT - 4; t && a < TEXT + 0xc4; a += 4)
				sp_gopclntab_lookup(t, a, SP_GOPCLN_INLINE, &f);
			sp_gopclntab_free(t);
		}
	}
}

SP_TEST(gopclntab_go_names)
{
	static const char *const cases[][2] = {
		{ "main.main", NULL },
		{ "runtime.goexit.abi0", "runtime.goexit" },
		{ "main.f.abiinternal", "main.f" },
		{ "main.sum[go.shape.int_0]", "main.sum[...]" },
		{ "main.(*T[go.shape.string]).m", "main.(*T[...]).m" },
		{ "main.g[go.shape.int_0].func1", "main.g[...].func1" },
		{ "type:.eq.[2]int", "type:.eq.[...]int" },
		{ "main.x[", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = sp_go_name(cases[i][0]);
		if (cases[i][1])
			SP_CHECK_STR(d, cases[i][1]);
		else
			SP_CHECK(d == NULL);
		free(d);
	}
}

/* fuzz/fuzz-gopclntab's input: 4 bytes of the table's length, the table, the image. */
SP_TEST(gopclntab_fuzz_seeds)
{
	const char *dir = getenv("SP_UNIT_GOPCLN_SEEDS");
	if (!dir)
		return;
	int layouts[] = { 12, 116, 118, 120 };
	for (int l = 0; l < 4; l++)
		for (int v = 0; v < 2; v++) {
			struct gb g;
			build(&g, layouts[l], v ? 4 : 8, v);
			char path[512];
			snprintf(path, sizeof(path), "%s/%s-%s", dir, layout_name(layouts[l]),
				 v ? "be32" : "le64");
			FILE *fp = fopen(path, "wb");
			SP_CHECK(fp != NULL);
			if (!fp)
				continue;
			unsigned char n[4];
			put(n, 0, g.len, 4, false);
			fwrite(n, 1, 4, fp);
			fwrite(g.t, 1, g.len, fp);
			fwrite(g.img, 1, g.imglen, fp);
			SP_CHECK(fclose(fp) == 0);
		}
}

/* ---- through an ELF file ---- */

struct sec {
	const char *name;
	uint32_t type;
	uint64_t flags, addr;
	const void *p;
	size_t len;
};

/* An x86-64 ELF executable of the given sections in a temporary file; its descriptor. */
static int write_elf(const struct sec *s, int n)
{
	char path[] = "/tmp/sp-unit-gopcln-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	Elf64_Ehdr *eh = e ? elf64_newehdr(e) : NULL;
	if (!eh) {
		close(fd);
		return -1;
	}
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_type = ET_EXEC;
	eh->e_version = EV_CURRENT;
	static char names[512];
	size_t nlen = 1;
	for (int i = 0; i <= n; i++) {
		const struct sec *x = i < n ? &s[i] : &(struct sec){ ".shstrtab", SHT_STRTAB };
		Elf_Scn *scn = elf_newscn(e);
		Elf_Data *d = elf_newdata(scn);
		Elf64_Shdr *sh = elf64_getshdr(scn);
		sh->sh_name = nlen;
		strcpy(names + nlen, x->name);
		nlen += strlen(x->name) + 1;
		sh->sh_type = x->type;
		sh->sh_flags = x->flags;
		sh->sh_addr = x->addr;
		sh->sh_addralign = 8;
		d->d_buf = (void *)x->p;
		d->d_size = x->len;
		d->d_align = 8;
		if (x->type == SHT_SYMTAB) {
			sh->sh_link = i + 2;	/* the .strtab that follows it */
			sh->sh_entsize = sizeof(Elf64_Sym);
			d->d_type = ELF_T_SYM;
		}
		if (i == n) {
			d->d_buf = names;
			d->d_size = nlen;
			eh->e_shstrndx = elf_ndxscn(scn);
		}
	}
	int ok = elf_update(e, ELF_C_WRITE) >= 0;
	elf_end(e);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

/* An ELF file of those sections, open: its table, the handle and the descriptor. */
struct elf_file {
	int fd;
	Elf *e;
	struct sp_gopclntab *t;
	const char *why;
};

static void open_elf(struct elf_file *f, const struct sec *s, int n)
{
	f->fd = write_elf(s, n);
	SP_CHECK(f->fd >= 0);
	f->e = f->fd >= 0 ? elf_begin(f->fd, ELF_C_READ_MMAP, NULL) : NULL;
	f->why = "no ELF";
	f->t = f->e ? sp_gopclntab_open(f->e, &f->why) : NULL;
}

/* The table first: it points into the handle's mapping. */
static void close_elf(struct elf_file *f)
{
	sp_gopclntab_free(f->t);
	if (f->e)
		elf_end(f->e);
	if (f->fd >= 0)
		close(f->fd);
}

static const unsigned char code[0xc0];

/* .go.buildinfo as Go 1.13-1.17 write it: a pointer to the version's string header. */
static void buildinfo(unsigned char *b, uint64_t vaddr, uint64_t str, size_t len)
{
	memset(b, 0, 48);
	memcpy(b, "\xff Go buildinf:", 14);
	b[14] = 8;
	put(b, 16, vaddr + 32, 8, false);
	put(b, 32, str, 8, false);
	put(b, 40, len, 8, false);
}

SP_TEST(gopclntab_elf_go115_inline_from_buildinfo)
{
	static const char *const versions[] = { "go1.15.2", "go1.13" };
	for (int v = 0; v < 2; v++) {
		struct gb g;
		build(&g, 12, 8, false);
		unsigned char bi[48];
		buildinfo(bi, 0x710000, 0x700000, strlen(versions[v]));
		struct sec s[] = {
			{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT, code, sizeof(code) },
			{ ".rodata", SHT_PROGBITS, SHF_ALLOC, 0x700000, versions[v], strlen(versions[v]) },
			{ ".gopclntab", SHT_PROGBITS, SHF_ALLOC, TABLE, g.t, g.len },
			{ ".noptrdata", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, IMAGE, g.img, g.imglen },
			{ ".go.buildinfo", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 0x710000, bi, sizeof(bi) },
		};
		struct elf_file ef;
		open_elf(&ef, s, 5);
		struct sp_gopclntab *t = ef.t;
		SP_CHECK(t != NULL);
		if (t) {
			SP_CHECK_STR(sp_gopclntab_layout(t), "1.2");
			SP_CHECK(sp_gopclntab_has_inline(t) == (v == 0));
			struct sp_gofunc f;
			SP_CHECK(sp_gopclntab_lookup(t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1);
			SP_CHECK(f.ninl == (v == 0 ? 1u : 0u));
			SP_CHECK(f.line == (v == 0 ? 20u : 5u));
		}
		close_elf(&ef);
	}
}

SP_TEST(gopclntab_elf_moduledata_found)
{
	struct gb g;
	build(&g, 120, 8, false);
	struct sec s[] = {
		{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT, code, sizeof(code) },
		{ ".gopclntab", SHT_PROGBITS, SHF_ALLOC, TABLE, g.t, g.len },
		{ ".noptrdata", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, IMAGE, g.img, g.imglen },
	};
	struct elf_file ef;
	open_elf(&ef, s, 3);
	SP_CHECK(ef.t && sp_gopclntab_has_inline(ef.t));
	struct sp_gofunc f;
	SP_CHECK(ef.t && sp_gopclntab_lookup(ef.t, TEXT + 0x58, SP_GOPCLN_INLINE, &f) == 1 &&
		 f.ninl == 1);
	close_elf(&ef);
	/* moduledata in a read-only section is not looked for there. */
	s[2].flags = SHF_ALLOC;
	s[2].name = ".rodata";
	open_elf(&ef, s, 3);
	SP_CHECK(ef.t && !sp_gopclntab_has_inline(ef.t));
	close_elf(&ef);
}

/* Linked by the system's linker: the table inside .data.rel.ro, found by its symbols. */
SP_TEST(gopclntab_elf_table_by_symbols)
{
	struct gb g;
	build(&g, 118, 8, false);
	static unsigned char relro[4096];
	memcpy(relro + 0x100, g.t, g.len);
	Elf64_Sym syms[3] = { { 0 } };
	char strs[] = "\0runtime.pclntab\0runtime.epclntab";
	syms[1] = (Elf64_Sym){ .st_name = 1, .st_value = TABLE + 0x100, .st_shndx = 2 };
	syms[2] = (Elf64_Sym){ .st_name = 17, .st_value = TABLE + 0x100 + g.len, .st_shndx = 2 };
	struct sec s[] = {
		{ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT, code, sizeof(code) },
		{ ".data.rel.ro", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, TABLE, relro, sizeof(relro) },
		{ ".noptrdata", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, IMAGE, g.img, g.imglen },
		{ ".symtab", SHT_SYMTAB, 0, 0, syms, sizeof(syms) },
		{ ".strtab", SHT_STRTAB, 0, 0, strs, sizeof(strs) },
	};
	struct elf_file ef;
	open_elf(&ef, s, 5);
	SP_CHECK(ef.t != NULL);
	struct sp_gofunc f;
	SP_CHECK(ef.t && sp_gopclntab_lookup(ef.t, TEXT + 0x80, 0, &f) == 1);
	if (ef.t)
		SP_CHECK_STR(f.name, "main.sum[...]");
	close_elf(&ef);
	/* Without the symbols, and without the section, there is no table. */
	open_elf(&ef, s, 3);
	SP_CHECK(ef.t == NULL && ef.why == NULL);
	close_elf(&ef);
}

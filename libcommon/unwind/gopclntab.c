/* SPDX-License-Identifier: MIT
 * Reading Go's .gopclntab (see gopclntab.h).  Every offset the table
 * holds is checked against the bytes it points into before it is
 * followed, so a damaged or hostile table gives "no function", never a
 * read out of bounds or a name taken from the wrong place.
 *
 * The layout, as Go's linker writes it (cmd/link pcln.go, runtime
 * symtab.go): a header, then (from 1.16) the function names, the
 * compilation units' file indices, the file names, the pc-value tables
 * and the function table with each function's _func record.  Go 1.2 to
 * 1.15 keep all of that in one area addressed from the table's start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/gopclntab.h"
#include "util/alloc.h"
#include "util/buildid.h"
#include "util/search.h"

enum layout { L12 = 12, L116 = 116, L118 = 118, L120 = 120 };

#define MAX_INLINE	64	/* deeper chains are taken as a damaged table */
#define PCDATA_INLTREE	2

struct sp_gopclntab {
	const unsigned char *p;
	size_t len;
	uint64_t vaddr;
	enum layout layout;
	bool be;
	unsigned ptrsize, quantum;
	uint64_t nfunc;
	uint64_t text;		/* base of 1.18+ entry offsets */
	/* Offsets into p and the ends of the parts they start. */
	size_t names, names_end;	/* 1.2: the whole table */
	size_t cutab, cutab_end;
	size_t files, files_end;	/* 1.2: the file offset table */
	size_t pctab, pctab_end;
	size_t ftab;			/* the function table */
	size_t funcs;			/* base of the _func offsets */
	size_t ftab_entsize;
	/* The rest of the image, for funcdata. */
	struct sp_goregion *regions;
	size_t nregions;
	bool inline_ok;
	uint64_t gofunc;
	unsigned inl_funcdata;		/* FUNCDATA_InlTree's index */
	/* The last result's storage. */
	struct sp_goinline inl[MAX_INLINE];
	char *owned[MAX_INLINE + 1];
	size_t nowned;
};

static uint32_t rd32(const struct sp_gopclntab *t, size_t off)
{
	const unsigned char *b = t->p + off;
	if (t->be)
		return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

/* A pointer-sized word at b (anywhere: the table or a region). */
static uint64_t rdword(const struct sp_gopclntab *t, const unsigned char *b)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < t->ptrsize; i++) {
		unsigned k = t->be ? i : t->ptrsize - 1 - i;
		v = v << 8 | b[k];
	}
	return v;
}

static uint32_t rd32at(const struct sp_gopclntab *t, const unsigned char *b)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < 4; i++)
		v = v << 8 | b[t->be ? i : 3 - i];
	return v;
}

/* Whether [off, off + n) lies inside [0, end). */
static bool in(size_t off, size_t n, size_t end)
{
	return off <= end && n <= end - off;
}

/* The NUL-terminated string at off inside [lo, hi) of the table; NULL if none. */
static const char *str_at(const struct sp_gopclntab *t, uint64_t off, size_t lo, size_t hi)
{
	if (off >= hi - lo)
		return NULL;
	const char *s = (const char *)t->p + lo + off;
	if (!memchr(s, 0, hi - lo - off))
		return NULL;
	return s;
}

/* The image bytes [vaddr, vaddr + n) from the regions; NULL if not all there. */
static const unsigned char *image_at(const struct sp_gopclntab *t, uint64_t vaddr, size_t n)
{
	for (size_t i = 0; i < t->nregions; i++) {
		const struct sp_goregion *r = &t->regions[i];
		if (vaddr >= r->vaddr && vaddr - r->vaddr < r->len &&
		    n <= r->len - (vaddr - r->vaddr))
			return r->p + (vaddr - r->vaddr);
	}
	return NULL;
}

char *sp_go_name(const char *s)
{
	static const char *const suffix[] = { ".abiinternal", ".abi0" };
	size_t len = strlen(s);
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(suffix[i]);
		if (len > n && memcmp(s + len - n, suffix[i], n) == 0) {
			len -= n;
			break;
		}
	}
	/* The shape arguments: from the first '[' to the last ']'. */
	const char *open = memchr(s, '[', len), *close = NULL;
	for (size_t i = len; open && i > (size_t)(open - s) && !close; i--)
		if (s[i - 1] == ']')
			close = s + i - 1;
	if (len == strlen(s) && !close)
		return NULL;
	if (!close)
		return strndup(s, len);
	size_t head = open - s, tail = s + len - close - 1;
	char *d = malloc(head + tail + 6);
	if (d)
		snprintf(d, head + tail + 6, "%.*s[...]%.*s", (int)head, s,
			 (int)tail, close + 1);
	return d;
}

/* A name for a result: the table's own bytes, or a cleaned copy owned until the next lookup. */
static const char *result_name(struct sp_gopclntab *t, const char *s)
{
	char *d = sp_go_name(s);
	if (!d || t->nowned >= MAX_INLINE + 1) {
		free(d);
		return s;
	}
	t->owned[t->nowned++] = d;
	return d;
}

/* ---- opening ---- */

static const char *bad_magic(uint32_t m)
{
	static __thread char buf[32];
	snprintf(buf, sizeof(buf), "unknown magic 0x%08x", m);
	return buf;
}

static int parse_magic(struct sp_gopclntab *t, const char **why)
{
	static const struct { uint32_t magic; enum layout l; } magics[] = {
		{ 0xfffffffb, L12 }, { 0xfffffffa, L116 },
		{ 0xfffffff0, L118 }, { 0xfffffff1, L120 },
	};
	if (t->len < 8) {
		*why = "truncated";
		return -1;
	}
	for (int be = 0; be < 2; be++) {
		t->be = be;
		uint32_t m = rd32(t, 0);
		for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
			if (m == magics[i].magic)
				t->layout = magics[i].l;
		if (t->layout)
			break;
	}
	if (!t->layout) {
		t->be = false;
		*why = bad_magic(rd32(t, 0));
		return -1;
	}
	t->quantum = t->p[6];
	t->ptrsize = t->p[7];
	if (t->p[4] || t->p[5] || (t->ptrsize != 4 && t->ptrsize != 8) ||
	    (t->quantum != 1 && t->quantum != 2 && t->quantum != 4)) {
		*why = "bad header";
		return -1;
	}
	return 0;
}

/* The 1.16+ header: counts, then the offsets of the parts, in the order written. */
static int parse_header116(struct sp_gopclntab *t, const char **why)
{
	unsigned ps = t->ptrsize, nwords = t->layout == L116 ? 7 : 8;
	if (!in(8, (size_t)nwords * ps, t->len)) {
		*why = "truncated";
		return -1;
	}
	uint64_t w[8];
	for (unsigned i = 0; i < nwords; i++)
		w[i] = rdword(t, t->p + 8 + i * ps);
	t->nfunc = w[0];
	unsigned k = 2;
	if (t->layout != L116)
		t->text = w[k++];
	uint64_t names = w[k], cu = w[k + 1], files = w[k + 2], pc = w[k + 3], ln = w[k + 4];
	if (!(8 + nwords * ps <= names && names <= cu && cu <= files && files <= pc &&
	      pc <= ln)) {
		*why = "offset out of range";
		return -1;
	}
	if (ln >= t->len) {
		*why = "truncated";
		return -1;
	}
	t->names = names, t->names_end = cu;
	t->cutab = cu, t->cutab_end = files;
	t->files = files, t->files_end = pc;
	t->pctab = pc, t->pctab_end = ln;
	t->ftab = t->funcs = ln;
	t->ftab_entsize = t->layout == L116 ? 2 * ps : 8;
	return 0;
}

/* The 1.2 header: nfunc, the function table, then the file table's offset. */
static int parse_header12(struct sp_gopclntab *t, const char **why)
{
	unsigned ps = t->ptrsize;
	if (!in(8, ps, t->len)) {
		*why = "truncated";
		return -1;
	}
	t->nfunc = rdword(t, t->p + 8);
	t->ftab = 8 + ps;
	t->ftab_entsize = 2 * ps;
	if (t->nfunc > (t->len - t->ftab) / t->ftab_entsize ||
	    !in(t->ftab + t->nfunc * t->ftab_entsize, ps + 4, t->len)) {
		*why = "truncated";
		return -1;
	}
	size_t fo = rd32(t, t->ftab + t->nfunc * t->ftab_entsize + ps);
	if (!in(fo, 4, t->len) || rd32(t, fo) > (t->len - fo) / 4) {
		*why = "offset out of range";
		return -1;
	}
	t->names = 0, t->names_end = t->len;
	t->files = fo, t->files_end = fo + 4 * (size_t)rd32(t, fo);
	t->pctab = 0, t->pctab_end = t->len;
	t->funcs = 0;
	return 0;
}

/* Function i's entry address (i <= nfunc: nfunc gives the end of the last). */
static uint64_t ftab_entry(const struct sp_gopclntab *t, uint64_t i)
{
	size_t off = t->ftab + i * t->ftab_entsize;
	if (t->layout >= L118)
		return t->text + rd32(t, off);
	return rdword(t, t->p + off);
}

static uint64_t ftab_funcoff(const struct sp_gopclntab *t, uint64_t i)
{
	size_t off = t->ftab + i * t->ftab_entsize;
	if (t->layout >= L118)
		return rd32(t, off + 4);
	return rdword(t, t->p + off + t->ptrsize);
}

static int check_ftab(struct sp_gopclntab *t, const char **why)
{
	/* nfunc + 1 entries: the last holds the end of the last function. */
	if (t->nfunc > (t->len - t->ftab) / t->ftab_entsize ||
	    !in(t->ftab, (t->nfunc + 1) * t->ftab_entsize, t->len)) {
		*why = "truncated";
		return -1;
	}
	for (uint64_t i = 0; i < t->nfunc; i++) {
		if (ftab_entry(t, i) >= ftab_entry(t, i + 1)) {
			*why = "function table not sorted";
			return -1;
		}
		if (ftab_funcoff(t, i) >= t->len - t->funcs) {
			*why = "offset out of range";
			return -1;
		}
	}
	return 0;
}

/*
 * Go 1.18+: funcdata are offsets from moduledata.gofunc.  moduledata's
 * first word points at the table; its funcnametab and ftab slices must
 * point into it, and its text must be the table's.  The field offsets
 * (in words) are those of runtime.moduledata: gofunc follows types,
 * etypes and rodata, and 1.20 added covctrs and ecovctrs before them.
 */
static void find_gofunc(struct sp_gopclntab *t)
{
	unsigned ps = t->ptrsize, gofunc_word = t->layout == L118 ? 38 : 40;
	size_t need = (size_t)(gofunc_word + 1) * ps;
	for (size_t i = 0; i < t->nregions; i++) {
		const struct sp_goregion *r = &t->regions[i];
		if (!r->data || r->len < need)
			continue;
		size_t skew = (ps - r->vaddr % ps) % ps;
		for (size_t o = skew; o <= r->len - need; o += ps) {
			const unsigned char *m = r->p + o;
			if (rdword(t, m) != t->vaddr ||
			    rdword(t, m + ps) != t->vaddr + t->names ||
			    rdword(t, m + 16 * ps) != t->vaddr + t->ftab ||
			    rdword(t, m + 18 * ps) != t->nfunc + 1)
				continue;
			uint64_t text = rdword(t, m + 22 * ps);
			if (text != t->text)
				continue;
			t->gofunc = rdword(t, m + gofunc_word * ps);
			t->inline_ok = t->gofunc != 0;
			return;
		}
	}
}

static int copy_image(struct sp_gopclntab *t, const struct sp_goimage *img)
{
	if (!img || !img->nregions)
		return 0;
	t->regions = calloc(img->nregions, sizeof(*t->regions));
	if (!t->regions)
		return -1;
	memcpy(t->regions, img->regions, img->nregions * sizeof(*t->regions));
	t->nregions = img->nregions;
	return 0;
}

struct sp_gopclntab *sp_gopclntab_from_bytes(const unsigned char *p, size_t len,
		uint64_t vaddr, const struct sp_goimage *img, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	struct sp_gopclntab *t = calloc(1, sizeof(*t));
	if (!t) {
		*why = "out of memory";
		return NULL;
	}
	t->p = p, t->len = len, t->vaddr = vaddr;
	if (parse_magic(t, why) < 0)
		goto bad;
	if ((t->layout == L12 ? parse_header12(t, why) : parse_header116(t, why)) < 0)
		goto bad;
	if (t->layout >= L118 && t->text == 0 && img)
		t->text = img->text;
	if (check_ftab(t, why) < 0)
		goto bad;
	if (copy_image(t, img) < 0) {
		*why = "out of memory";
		goto bad;
	}
	if (t->layout >= L118) {
		t->inl_funcdata = 3;
		find_gofunc(t);
	} else if (t->layout == L116) {
		t->inl_funcdata = 3;
		t->inline_ok = t->nregions > 0;
	} else {
		/* 1.15's indices; earlier releases numbered them otherwise. */
		t->inl_funcdata = 4;
		t->inline_ok = t->nregions > 0 && img->go_minor == 15;
	}
	return t;
bad:
	sp_gopclntab_free(t);
	return NULL;
}

/*
 * Every allocated section with bytes in the file, as an image region;
 * not code, where nothing the table points to lies (and whose bytes a
 * handle not opened with ELF_C_READ_MMAP would read into memory).
 */
static struct sp_goregion *elf_regions(Elf *elf, size_t *n)
{
	size_t shstrndx, cap = 0;
	struct sp_goregion *r = NULL;
	Elf_Scn *scn = NULL;
	*n = 0;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    (sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_type == SHT_NOBITS || !(d = elf_rawdata(scn, NULL)) ||
		    !d->d_buf || !d->d_size)
			continue;
		if (SP_ALLOC_GROW(r, *n + 1, cap) < 0)
			break;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		r[*n] = (struct sp_goregion){
			.vaddr = sh.sh_addr, .p = d->d_buf, .len = d->d_size,
			.data = name && (!strcmp(name, ".noptrdata") ||
					 !strcmp(name, ".data") ||
					 !strcmp(name, ".data.rel.ro")),
		};
		(*n)++;
	}
	return r;
}

/*
 * Go's minor version from .go.buildinfo, in the form Go 1.13 to 1.17
 * write it (a pointer to runtime.buildVersion); 0 when not found.
 * Only the 1.2 layout needs it.
 */
static int go_minor(Elf *elf, const struct sp_goregion *r, size_t n)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sp_elf_section(elf, ".go.buildinfo", &sh);
	Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;
	if (!d || d->d_size < 32 || memcmp(d->d_buf, "\xff Go buildinf:", 14) != 0)
		return 0;
	const unsigned char *b = d->d_buf;
	struct sp_gopclntab t = { .ptrsize = b[14], .be = b[15] & 1,
				  .regions = (struct sp_goregion *)r, .nregions = n };
	if ((t.ptrsize != 4 && t.ptrsize != 8) || (b[15] & 2))
		return 0;
	const unsigned char *hdr = image_at(&t, rdword(&t, b + 16), 2 * t.ptrsize);
	uint64_t slen = hdr ? rdword(&t, hdr + t.ptrsize) : 0;
	const unsigned char *s = hdr && slen >= 5 && slen < 64 ?
		image_at(&t, rdword(&t, hdr), slen) : NULL;
	if (!s || memcmp(s, "go1.", 4) != 0)
		return 0;
	int minor = 0;
	for (size_t i = 4; i < slen && s[i] >= '0' && s[i] <= '9' && minor < 1000; i++)
		minor = minor * 10 + (s[i] - '0');
	return minor;
}

/* The value of the symbol named name in .symtab; 0 when there is none. */
static uint64_t symbol(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *s;
			if (gelf_getsym(d, i, &sym) &&
			    (s = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
			    strcmp(s, name) == 0)
				return sym.st_value;
		}
	}
	return 0;
}

/*
 * Where the table is: its own section (.gopclntab, or in a
 * position-independent executable .data.rel.ro.gopclntab), or, when the system's linker
 * linked the program (cgo, -linkmode=external), inside .data.rel.ro
 * between the symbols runtime.pclntab and runtime.epclntab.
 */
static const unsigned char *find_table(Elf *elf, const struct sp_goregion *r, size_t n,
				       uint64_t *vaddr, size_t *len)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sp_elf_section(elf, ".gopclntab", &sh);
	if (!scn)	/* where a position-independent build keeps it */
		scn = sp_elf_section(elf, ".data.rel.ro.gopclntab", &sh);
	if (scn) {
		Elf_Data *d = sh.sh_type != SHT_NOBITS ? elf_rawdata(scn, NULL) : NULL;
		*vaddr = sh.sh_addr;
		*len = d && d->d_buf ? d->d_size : 0;
		return d && d->d_buf ? d->d_buf : (const unsigned char *)"";
	}
	uint64_t start = symbol(elf, "runtime.pclntab"), end = symbol(elf, "runtime.epclntab");
	for (size_t i = 0; start && end > start && i < n; i++)
		if (start >= r[i].vaddr && end - r[i].vaddr <= r[i].len) {
			*vaddr = start;
			*len = end - start;
			return r[i].p + (start - r[i].vaddr);
		}
	return NULL;
}

struct sp_gopclntab *sp_gopclntab_open(Elf *elf, const char **why)
{
	GElf_Shdr tsh;
	*why = NULL;
	/* Without section headers there is no name to find it by. */
	if (!elf)
		return NULL;
	struct sp_goimage img = { 0 };
	struct sp_goregion *r = elf_regions(elf, &img.nregions);
	uint64_t vaddr;
	size_t len;
	const unsigned char *p = find_table(elf, r, img.nregions, &vaddr, &len);
	if (!p) {
		free(r);
		return NULL;
	}
	if (len < 8) {
		*why = "truncated";
		free(r);
		return NULL;
	}
	img.regions = r;
	if (sp_elf_section(elf, ".text", &tsh))
		img.text = tsh.sh_addr;
	img.go_minor = go_minor(elf, r, img.nregions);
	struct sp_gopclntab *t = sp_gopclntab_from_bytes(p, len, vaddr, &img, why);
	free(r);
	return t;
}

void sp_gopclntab_free(struct sp_gopclntab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->regions);
	free(t);
}

const char *sp_gopclntab_layout(const struct sp_gopclntab *t)
{
	switch (t->layout) {
	case L12: return "1.2";
	case L116: return "1.16";
	case L118: return "1.18";
	default: return "1.20";
	}
}

bool sp_gopclntab_has_inline(const struct sp_gopclntab *t)
{
	return t->inline_ok;
}

size_t sp_gopclntab_count(const struct sp_gopclntab *t)
{
	return t->nfunc;
}

int sp_gopclntab_extent(const struct sp_gopclntab *t, size_t i, uint64_t *entry, uint64_t *end)
{
	if (i >= t->nfunc)
		return -1;
	*entry = ftab_entry(t, i);
	*end = ftab_entry(t, i + 1);
	return 0;
}

/* ---- one function ---- */

/* A function's _func record, checked. */
struct func {
	size_t off;		/* in the table */
	uint64_t entry, end;
	size_t fields;		/* offset of nameoff from off */
	size_t size;		/* of the fixed part */
	uint32_t pcsp, pcfile, pcln, npcdata, cu;
	unsigned nfuncdata;
	const char *name;
};

static int read_func(const struct sp_gopclntab *t, uint64_t i, struct func *f)
{
	unsigned ps = t->ptrsize;
	f->entry = ftab_entry(t, i);
	f->end = ftab_entry(t, i + 1);
	f->off = t->funcs + ftab_funcoff(t, i);
	f->fields = t->layout >= L118 ? 4 : ps;
	f->size = f->fields + (t->layout == L12 ? 32 : t->layout == L120 ? 40 : 36);
	if (!in(f->off, f->size, t->len))
		return -1;
	uint64_t entry = t->layout >= L118 ? t->text + rd32(t, f->off) :
		rdword(t, t->p + f->off);
	if (entry != f->entry)
		return -1;
	size_t b = f->off + f->fields;
	f->name = str_at(t, rd32(t, b), t->names, t->names_end);
	f->pcsp = rd32(t, b + 12);
	f->pcfile = rd32(t, b + 16);
	f->pcln = rd32(t, b + 20);
	f->npcdata = rd32(t, b + 24);
	f->cu = t->layout == L12 ? 0 : rd32(t, b + 28);
	f->nfuncdata = t->p[f->off + f->size - 1];
	if (!f->name || f->npcdata > (t->len - f->off - f->size) / 4)
		return -1;
	return 0;
}

/* An unsigned LEB128 of at most 32 bits at *pos below end. */
static int varint(const struct sp_gopclntab *t, size_t *pos, size_t end, uint32_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (*pos >= end)
			return -1;
		unsigned char c = t->p[(*pos)++];
		*v |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/*
 * The value of the pc-value table at off for pc: pairs of (value delta,
 * zig-zag; pc delta in quanta), the value holding up to the pc reached.
 * -1 when the table has no value there.
 */
static int32_t pcvalue(const struct sp_gopclntab *t, const struct func *f,
		       uint32_t off, uint64_t pc)
{
	if (off == 0 || off >= t->pctab_end - t->pctab)
		return -1;
	size_t pos = t->pctab + off;
	uint64_t at = f->entry;
	int32_t val = -1;
	for (bool first = true;; first = false) {
		uint32_t uv, pd;
		if (varint(t, &pos, t->pctab_end, &uv) < 0 || (uv == 0 && !first))
			return -1;
		if (varint(t, &pos, t->pctab_end, &pd) < 0)
			return -1;
		/* Wrapping, as Go's own reader does. */
		val = (int32_t)((uint32_t)val + ((uv >> 1) ^ -(uv & 1)));
		at += (uint64_t)pd * t->quantum;
		if (pc < at)
			return val;
		if (at >= f->end)
			return -1;
	}
}

static const char *file_name(const struct sp_gopclntab *t, const struct func *f, int32_t fileno)
{
	if (fileno < 0)
		return NULL;
	if (t->layout == L12) {
		/* Entry 0 holds the count; file numbers start at 1. */
		if (fileno == 0 || (size_t)fileno >= (t->files_end - t->files) / 4)
			return NULL;
		return str_at(t, rd32(t, t->files + 4 * (size_t)fileno), 0, t->len);
	}
	uint64_t ix = (uint64_t)f->cu + (uint32_t)fileno;
	if (ix >= (t->cutab_end - t->cutab) / 4)
		return NULL;
	uint32_t off = rd32(t, t->cutab + 4 * ix);
	if (off == UINT32_MAX)
		return NULL;
	return str_at(t, off, t->files, t->files_end);
}

static void position(const struct sp_gopclntab *t, const struct func *f, uint64_t pc,
		     const char **file, unsigned *line)
{
	int32_t l = pcvalue(t, f, f->pcln, pc);
	*file = file_name(t, f, pcvalue(t, f, f->pcfile, pc));
	*line = l > 0 ? (unsigned)l : 0;
}

static int32_t pcdata(const struct sp_gopclntab *t, const struct func *f,
		      unsigned table, uint64_t pc)
{
	if (table >= f->npcdata)
		return -1;
	return pcvalue(t, f, rd32(t, f->off + f->size + 4 * table), pc);
}

/* The address of the inline tree of f, or 0. */
static uint64_t inltree(const struct sp_gopclntab *t, const struct func *f)
{
	unsigned i = t->inl_funcdata;
	if (!t->inline_ok || i >= f->nfuncdata)
		return 0;
	size_t pos = f->off + f->size + 4 * (size_t)f->npcdata;
	if (t->layout >= L118) {
		if (!in(pos, 4 * (size_t)(i + 1), t->len))
			return 0;
		uint32_t off = rd32(t, pos + 4 * i);
		return off == UINT32_MAX ? 0 : t->gofunc + off;
	}
	/* Pointers, aligned to their size from the record's start. */
	pos = f->off + (pos - f->off + t->ptrsize - 1) / t->ptrsize * t->ptrsize;
	if (!in(pos, (size_t)(i + 1) * t->ptrsize, t->len))
		return 0;
	return rdword(t, t->p + pos + (size_t)i * t->ptrsize);
}

/* One inline tree entry: the callee's name offset, parentPc, and parent (< -1: see pcdata). */
static int inl_entry(const struct sp_gopclntab *t, uint64_t tree, int32_t ix,
		     uint32_t *nameoff, uint32_t *parentpc, int32_t *parent)
{
	size_t sz = t->layout == L120 ? 16 : 20;
	const unsigned char *e = image_at(t, tree + (uint64_t)ix * sz, sz);
	if (!e)
		return -1;
	if (t->layout == L120) {
		*nameoff = rd32at(t, e + 4);
		*parentpc = rd32at(t, e + 8);
		*parent = -2;
	} else {
		uint16_t p = t->be ? e[0] << 8 | e[1] : e[1] << 8 | e[0];
		*parent = (int16_t)p;
		*nameoff = rd32at(t, e + 12);
		*parentpc = rd32at(t, e + 16);
	}
	return 0;
}

/*
 * The inlined calls at pc, innermost first: each one's name from the
 * tree and its position from the tables at the pc; the next one out is
 * found at the parentPc of the inner.  Returns the count and leaves in
 * *pc the address whose position is the physical function's, or -1 for
 * a damaged tree.
 */
static int inline_chain(struct sp_gopclntab *t, const struct func *f, uint64_t *pc)
{
	uint64_t tree = inltree(t, f);
	int32_t ix = tree ? pcdata(t, f, PCDATA_INLTREE, *pc) : -1;
	int n = 0;
	while (ix >= 0) {
		uint32_t nameoff, ppc;
		int32_t parent;
		if (n == MAX_INLINE || inl_entry(t, tree, ix, &nameoff, &ppc, &parent) < 0 ||
		    ppc >= f->end - f->entry)
			return -1;
		const char *name = str_at(t, nameoff, t->names, t->names_end);
		if (!name)
			return -1;
		struct sp_goinline *g = &t->inl[n++];
		g->name = result_name(t, name);
		position(t, f, *pc, &g->file, &g->line);
		*pc = f->entry + ppc;
		ix = parent >= -1 ? parent : pcdata(t, f, PCDATA_INLTREE, *pc);
	}
	return n;
}

int sp_gopclntab_lookup(struct sp_gopclntab *t, uint64_t addr, unsigned flags,
			struct sp_gofunc *out)
{
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	t->nowned = 0;
	memset(out, 0, sizeof(*out));
	if (!t->nfunc || addr < ftab_entry(t, 0) || addr >= ftab_entry(t, t->nfunc))
		return 0;
	size_t i = SP_PARTITION_POINT(t->nfunc, k, ftab_entry(t, k) <= addr) - 1;
	struct func f;
	if (read_func(t, i, &f) < 0)
		return 0;
	out->entry = f.entry;
	out->end = f.end;
	out->name = result_name(t, f.name);
	if (!(flags & (SP_GOPCLN_LINES | SP_GOPCLN_INLINE)))
		return 1;
	uint64_t pc = addr;
	int n = flags & SP_GOPCLN_INLINE ? inline_chain(t, &f, &pc) : 0;
	if (n < 0) {
		/* A damaged tree: no inline frames rather than wrong ones. */
		n = 0;
		pc = addr;
	}
	out->inl = n ? t->inl : NULL;
	out->ninl = n;
	position(t, &f, pc, &out->file, &out->line);
	return 1;
}

/* The function holding addr, read and checked; -1 when none. */
static int func_at(const struct sp_gopclntab *t, uint64_t addr, struct func *f)
{
	if (!t->nfunc || addr < ftab_entry(t, 0) || addr >= ftab_entry(t, t->nfunc))
		return -1;
	size_t i = SP_PARTITION_POINT(t->nfunc, k, ftab_entry(t, k) <= addr) - 1;
	return read_func(t, i, f);
}

bool sp_gopclntab_topframe(const struct sp_gopclntab *t, uint64_t addr)
{
	static const char *const top[] = { "runtime.goexit", "runtime.mstart", "runtime.rt0_go" };
	struct func f;
	if (func_at(t, addr, &f) < 0)
		return false;
	for (size_t i = 0; i < sizeof(top) / sizeof(*top); i++) {
		size_t n = strlen(top[i]);
		/* The linker's ABI suffix may follow: runtime.goexit.abi0. */
		if (strncmp(f.name, top[i], n) == 0 &&
		    (f.name[n] == '\0' || strncmp(f.name + n, ".abi", 4) == 0))
			return true;
	}
	return false;
}

int sp_gopclntab_spdelta(const struct sp_gopclntab *t, uint64_t addr, int64_t *delta)
{
	struct func f;
	if (func_at(t, addr, &f) < 0)
		return 0;
	int32_t v = pcvalue(t, &f, f.pcsp, addr);
	if (v < 0)
		return 0;
	*delta = v;
	return 1;
}

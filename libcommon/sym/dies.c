/* SPDX-License-Identifier: MIT */
/* A compile unit's functions by a walk of its DIEs' bytes (dies.h). */
#include <dwarf.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "sym/dies.h"
#include "util/alloc.h"

/* The largest abbreviation code taken: codes index an array. */
#define MAX_CODE 65536

/* An abbreviation: what a DIE's code says of it. */
struct abbrev {
	unsigned tag;
	bool defined, children;
	unsigned flags;		/* SP_DIE_LOW_PC, SP_DIE_HIGH_PC, SP_DIE_RANGES */
	/* The bytes of its attributes when every form has a fixed size, else -1. */
	long fixed;
	/*
	 * DW_AT_sibling's form, 0 for none; its index among the forms, and
	 * its offset in the DIE when the forms before it are fixed, else -1.
	 */
	unsigned sib_form;
	size_t sib_idx;
	long sib_at;
	/*
	 * The first DW_AT_low_pc and DW_AT_high_pc: their forms (0 for
	 * none) and offsets in the DIE when the forms before them are
	 * fixed, else -1.
	 */
	unsigned lo_form, hi_form;
	long lo_at, hi_at;
	/* Its forms, [first, first + n) of the walk's forms. */
	size_t first, n;
};

struct walk {
	const unsigned char *start, *end;	/* the unit, header included */
	unsigned version, addr_size, offset_size;
	struct abbrev *ab;
	size_t nab;
	unsigned *forms;
	size_t nforms, allocforms;
	bool c_only;
	int (*visit)(void *arg, const struct sp_die_seen *d);
	void *arg;
};

static inline bool uleb(const unsigned char **pp, const unsigned char *end, uint64_t *v)
{
	const unsigned char *p = *pp;
	if (p < end && *p < 0x80) {	/* most are one byte */
		*v = *p;
		*pp = p + 1;
		return true;
	}
	uint64_t r = 0;
	for (unsigned shift = 0; p < end && shift < 64; shift += 7) {
		unsigned char b = *p++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			*pp = p;
			return true;
		}
	}
	return false;
}

static inline uint64_t le(const unsigned char *p, unsigned n)
{
	if (n == 4) {
		uint32_t x;
		memcpy(&x, p, 4);
		return le32toh(x);
	}
	if (n == 8) {
		uint64_t x;
		memcpy(&x, p, 8);
		return le64toh(x);
	}
	uint64_t v = 0;
	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/*
 * The bytes a form's value takes when fixed (>= 0); -1 for a value whose
 * size it tells itself (LEB128, string, block); -2 for a form not taken.
 */
static long form_size(const struct walk *w, unsigned form)
{
	switch (form) {
	case DW_FORM_addr:
		return w->addr_size;
	case DW_FORM_ref_addr:
		return w->version == 2 ? w->addr_size : w->offset_size;
	case DW_FORM_strp: case DW_FORM_line_strp: case DW_FORM_sec_offset:
	case DW_FORM_strp_sup: case DW_FORM_GNU_ref_alt: case DW_FORM_GNU_strp_alt:
		return w->offset_size;
	case DW_FORM_data1: case DW_FORM_ref1: case DW_FORM_flag: case DW_FORM_strx1:
	case DW_FORM_addrx1:
		return 1;
	case DW_FORM_data2: case DW_FORM_ref2: case DW_FORM_strx2: case DW_FORM_addrx2:
		return 2;
	case DW_FORM_strx3: case DW_FORM_addrx3:
		return 3;
	case DW_FORM_data4: case DW_FORM_ref4: case DW_FORM_strx4: case DW_FORM_addrx4:
	case DW_FORM_ref_sup4:
		return 4;
	case DW_FORM_data8: case DW_FORM_ref8: case DW_FORM_ref_sig8: case DW_FORM_ref_sup8:
		return 8;
	case DW_FORM_data16:
		return 16;
	case DW_FORM_flag_present: case DW_FORM_implicit_const:
		return 0;
	case DW_FORM_udata: case DW_FORM_sdata: case DW_FORM_ref_udata: case DW_FORM_strx:
	case DW_FORM_addrx: case DW_FORM_rnglistx: case DW_FORM_loclistx:
	case DW_FORM_GNU_addr_index: case DW_FORM_GNU_str_index:
	case DW_FORM_string: case DW_FORM_block1: case DW_FORM_block2: case DW_FORM_block4:
	case DW_FORM_block: case DW_FORM_exprloc:
		return -1;
	default:
		return -2;	/* DW_FORM_indirect, and forms no version defines */
	}
}

/* Reads the unit's abbreviations at off; false when they do not read plainly. */
static int read_abbrevs(struct walk *w, const unsigned char *sec, size_t len, uint64_t off)
{
	if (off >= len)
		return SP_DIES_ASK_LIBDW;
	const unsigned char *p = sec + off, *end = sec + len;
	size_t alloc = 0;
	for (;;) {
		uint64_t code, tag, name, form;
		if (!uleb(&p, end, &code))
			return SP_DIES_ASK_LIBDW;
		if (code == 0)
			return SP_DIES_OK;
		if (code >= MAX_CODE || !uleb(&p, end, &tag) || p >= end || *p > DW_CHILDREN_yes ||
		    tag > UINT32_MAX)
			return SP_DIES_ASK_LIBDW;
		if (code >= w->nab) {
			size_t was = w->nab;
			if (SP_ALLOC_GROW(w->ab, code + 1, alloc) < 0)
				return SP_DIES_NOMEM;
			memset(w->ab + was, 0, (alloc - was) * sizeof(*w->ab));
			w->nab = alloc;
		}
		struct abbrev *a = &w->ab[code];
		if (a->defined)
			return SP_DIES_ASK_LIBDW;	/* a code twice */
		*a = (struct abbrev){ .tag = (unsigned)tag, .defined = true,
				      .children = *p++ == DW_CHILDREN_yes, .first = w->nforms,
				      .sib_at = -1, .lo_at = -1, .hi_at = -1 };
		long at = 0;
		for (;;) {
			if (!uleb(&p, end, &name) || !uleb(&p, end, &form))
				return SP_DIES_ASK_LIBDW;
			if (name == 0 && form == 0)
				break;
			long size = form_size(w, (unsigned)form);
			if (name == 0 || form == 0 || size == -2 || form > UINT32_MAX)
				return SP_DIES_ASK_LIBDW;
			if (form == DW_FORM_implicit_const) {
				uint64_t skip;
				if (!uleb(&p, end, &skip))	/* its value, an SLEB128 */
					return SP_DIES_ASK_LIBDW;
			}
			if (name == DW_AT_sibling) {
				if (a->sib_form || (form != DW_FORM_ref1 && form != DW_FORM_ref2 &&
						    form != DW_FORM_ref4 && form != DW_FORM_ref8 &&
						    form != DW_FORM_ref_udata))
					return SP_DIES_ASK_LIBDW;
				a->sib_form = (unsigned)form;
				a->sib_idx = w->nforms - a->first;
				a->sib_at = at;
			}
			if (name == DW_AT_low_pc && !a->lo_form) {
				a->lo_form = (unsigned)form;
				a->lo_at = at;
			} else if (name == DW_AT_high_pc && !a->hi_form) {
				a->hi_form = (unsigned)form;
				a->hi_at = at;
			}
			a->flags |= name == DW_AT_low_pc ? SP_DIE_LOW_PC :
				    name == DW_AT_high_pc ? SP_DIE_HIGH_PC :
				    name == DW_AT_ranges ? SP_DIE_RANGES : 0;
			if (SP_ALLOC_GROW(w->forms, w->nforms + 1, w->allocforms) < 0)
				return SP_DIES_NOMEM;
			w->forms[w->nforms++] = (unsigned)form;
			at = at >= 0 && size >= 0 ? at + size : -1;
		}
		a->n = w->nforms - a->first;
		a->fixed = at;
	}
}

/* Past one value of form at p; NULL when it runs past the unit. */
static const unsigned char *skip_value(const struct walk *w, const unsigned char *p, unsigned form)
{
	const unsigned char *end = w->end;
	long size = form_size(w, form);
	uint64_t n;
	if (size >= 0)
		return (size_t)(end - p) >= (size_t)size ? p + size : NULL;
	switch (form) {
	case DW_FORM_string: {
		const unsigned char *z = memchr(p, 0, (size_t)(end - p));
		return z ? z + 1 : NULL;
	}
	case DW_FORM_block1:
		if (p >= end)
			return NULL;
		n = *p++;
		break;
	case DW_FORM_block2:
		if (end - p < 2)
			return NULL;
		n = le(p, 2);
		p += 2;
		break;
	case DW_FORM_block4:
		if (end - p < 4)
			return NULL;
		n = le(p, 4);
		p += 4;
		break;
	case DW_FORM_block: case DW_FORM_exprloc:
		if (!uleb(&p, end, &n))
			return NULL;
		break;
	default:	/* the LEB128 forms */
		return uleb(&p, end, &n) ? p : NULL;
	}
	return (uint64_t)(end - p) >= n ? p + n : NULL;
}

/* The value of a DW_AT_sibling at p (a reference in the unit) into *v; false when cut. */
static inline bool sibling_at(const struct walk *w, const unsigned char *p, unsigned form, uint64_t *v)
{
	if (form == DW_FORM_ref_udata)
		return uleb(&p, w->end, v);
	unsigned n = form == DW_FORM_ref1 ? 1 : form == DW_FORM_ref2 ? 2 : form == DW_FORM_ref4 ? 4 : 8;
	if ((size_t)(w->end - p) < n)
		return false;
	*v = le(p, n);
	return true;
}

/* The abbreviation of the DIE at p and where its attributes start; NULL for a code not defined. */
static inline const struct abbrev *die_abbrev(const struct walk *w, const unsigned char **p)
{
	uint64_t code;
	if (*p >= w->end || !uleb(p, w->end, &code) || code == 0 || code >= w->nab ||
	    !w->ab[code].defined)
		return NULL;
	return &w->ab[code];
}

/*
 * Past the attributes at p of a DIE of abbreviation a; NULL when they run
 * past the unit.  With sib, stops at DW_AT_sibling as libdw's search for
 * it does: *sib its value, *has_sib set.
 */
static const unsigned char *die_attrs(const struct walk *w, const unsigned char *p,
				      const struct abbrev *a, uint64_t *sib, bool *has_sib)
{
	if (sib && a->sib_form && a->sib_at >= 0) {
		*has_sib = true;
		return sibling_at(w, p + a->sib_at, a->sib_form, sib) ? p : NULL;
	}
	if (a->fixed >= 0)
		return (size_t)(w->end - p) >= (size_t)a->fixed ? p + a->fixed : NULL;
	for (size_t i = 0; i < a->n && p; i++) {
		if (sib && a->sib_form && i == a->sib_idx) {
			*has_sib = true;
			return sibling_at(w, p, a->sib_form, sib) ? p : NULL;
		}
		p = skip_value(w, p, w->forms[a->first + i]);
	}
	return p;
}

/*
 * A function's range from its DW_AT_low_pc (DW_FORM_addr) and
 * DW_AT_high_pc (an address, or a constant added to low_pc), as
 * dwarf_ranges() gives it first; false for any other forms, or ones not
 * at a fixed place in the DIE, which are libdw's to read.
 */
static bool plain_range(const struct walk *w, const unsigned char *p, const struct abbrev *a,
			uint64_t *lo, uint64_t *hi)
{
	if (a->lo_form != DW_FORM_addr || a->lo_at < 0 || a->hi_at < 0 ||
	    (size_t)(w->end - p) < (size_t)a->lo_at + w->addr_size)
		return false;
	*lo = le(p + a->lo_at, w->addr_size);
	const unsigned char *h = p + a->hi_at, *q = h;
	uint64_t v;
	unsigned n;
	switch (a->hi_form) {
	case DW_FORM_addr:
		n = w->addr_size;
		break;
	case DW_FORM_data1: n = 1; break;
	case DW_FORM_data2: n = 2; break;
	case DW_FORM_data4: n = 4; break;
	case DW_FORM_data8: n = 8; break;
	case DW_FORM_udata:
		if (!uleb(&q, w->end, &v))
			return false;
		*hi = *lo + v;
		return true;
	default:
		return false;
	}
	if ((size_t)(w->end - h) < n)
		return false;
	v = le(h, n);
	*hi = a->hi_form == DW_FORM_addr ? v : *lo + v;
	return true;
}

/*
 * The DIE after the one at die on its level, found as libdw's
 * dwarf_siblingof() finds it: by DW_AT_sibling where a DIE has one, else
 * past its children.  Returns 0 with *next, 1 when the level has no
 * more, SP_DIES_ASK_LIBDW where libdw would fail.
 */
static int next_sibling(const struct walk *w, const unsigned char *die, const unsigned char **next)
{
	const unsigned char *addr;
	unsigned level = 0;
	do {
		const unsigned char *p = die;
		const struct abbrev *a = die_abbrev(w, &p);
		uint64_t sib = 0;
		bool has_sib = false;
		if (!a || !(addr = die_attrs(w, p, a, &sib, &has_sib)))
			return SP_DIES_ASK_LIBDW;
		if (has_sib) {
			/* After this DIE, inside the unit, or libdw fails. */
			if (sib >= (uint64_t)(w->end - w->start) || sib <= (uint64_t)(die - w->start))
				return SP_DIES_ASK_LIBDW;
			addr = w->start + sib;
		} else if (a->children) {
			level++;
		}
		/* Null entries end levels; a unit may end without them. */
		for (;;) {
			if (addr >= w->end)
				return 1;
			if (*addr)
				break;
			if (level-- == 0)
				return 1;
			addr++;
		}
		die = addr;
	} while (level > 0);
	*next = die;
	return 0;
}

/*
 * The first child of the DIE at die, as libdw's dwarf_child() finds it:
 * 0 with *child, 1 for none, SP_DIES_ASK_LIBDW where libdw would fail.
 */
static int first_child(const struct walk *w, const unsigned char *die, const unsigned char **child)
{
	const unsigned char *p = die;
	const struct abbrev *a = die_abbrev(w, &p);
	if (!a)
		return SP_DIES_ASK_LIBDW;
	if (!a->children)
		return 1;
	if (!(p = die_attrs(w, p, a, NULL, NULL)))
		return SP_DIES_ASK_LIBDW;
	/* A null entry, maybe written as a longer LEB128 of 0: no children. */
	const unsigned char *q = p;
	while (q < w->end && *q == 0x80)
		q++;
	if (q >= w->end || *q == 0)
		return 1;
	*child = p;
	return 0;
}

/*
 * Visits the DIE at die and those after it on its level, and the
 * children of namespaces and types where the unit is not C, as
 * index_functions() walked them through libdw.  Returns 0 or a nonzero
 * code that ends the walk.
 */
static int walk_list(const struct walk *w, const unsigned char *die, unsigned depth)
{
	for (;;) {
		const unsigned char *p = die;
		const struct abbrev *a = die_abbrev(w, &p);
		if (!a)
			return SP_DIES_ASK_LIBDW;
		struct sp_die_seen seen = { (uint64_t)(die - w->start), a->tag,
					    a->flags | (depth == 0 ? SP_DIE_TOP : 0), false, 0, 0 };
		if (a->tag == DW_TAG_subprogram)
			seen.plain_range = plain_range(w, p, a, &seen.lo, &seen.hi);
		int rc = w->visit(w->arg, &seen);
		if (rc)
			return rc;
		const unsigned char *child;
		if (!w->c_only && depth + 1 <= 16 &&
		    (a->tag == DW_TAG_namespace || a->tag == DW_TAG_class_type ||
		     a->tag == DW_TAG_structure_type || a->tag == DW_TAG_union_type ||
		     a->tag == DW_TAG_module)) {
			rc = first_child(w, die, &child);
			if (rc < 0 || (rc == 0 && (rc = walk_list(w, child, depth + 1)) != 0))
				return rc;
		}
		rc = next_sibling(w, die, &die);
		if (rc)
			return rc < 0 ? rc : 0;
	}
}

/*
 * Reads the header and abbreviations of the unit whose header starts at
 * unit_off into w; *die: the unit's DIE.  SP_DIES_OK, SP_DIES_ASK_LIBDW
 * or SP_DIES_NOMEM (w's memory is freed by the caller either way).
 */
static int unit_open(struct walk *w, const unsigned char *info, size_t len, uint64_t unit_off,
		     const unsigned char *abbrev, size_t abbrev_len, const unsigned char **die)
{
	if (!info || !abbrev || unit_off >= len || len - unit_off < 11)
		return SP_DIES_ASK_LIBDW;
	const unsigned char *p = info + unit_off, *end = info + len;
	w->start = p;
	uint64_t length = le(p, 4);
	p += 4;
	w->offset_size = 4;
	if (length == 0xffffffff) {
		if (end - p < 8)
			return SP_DIES_ASK_LIBDW;
		length = le(p, 8);
		p += 8;
		w->offset_size = 8;
	} else if (length >= 0xfffffff0) {
		return SP_DIES_ASK_LIBDW;
	}
	if (length > (uint64_t)(end - p) || length < 2)
		return SP_DIES_ASK_LIBDW;
	w->end = p + length;
	w->version = (unsigned)le(p, 2);
	p += 2;
	uint64_t abbrev_off;
	if (w->version < 2 || w->version > 5)
		return SP_DIES_ASK_LIBDW;
	if (w->version == 5) {
		if (w->end - p < 2 + w->offset_size || (p[0] != DW_UT_compile && p[0] != DW_UT_partial))
			return SP_DIES_ASK_LIBDW;
		w->addr_size = p[1];
		abbrev_off = le(p + 2, w->offset_size);
		p += 2 + w->offset_size;
	} else {
		if ((size_t)(w->end - p) < 1 + w->offset_size)
			return SP_DIES_ASK_LIBDW;
		abbrev_off = le(p, w->offset_size);
		w->addr_size = p[w->offset_size];
		p += w->offset_size + 1;
	}
	if (w->addr_size != 4 && w->addr_size != 8)
		return SP_DIES_ASK_LIBDW;
	*die = p;
	return read_abbrevs(w, abbrev, abbrev_len, abbrev_off);
}

int sp_dies_walk(const unsigned char *info, size_t len, uint64_t unit_off,
		 const unsigned char *abbrev, size_t abbrev_len, bool c_only,
		 int (*visit)(void *arg, const struct sp_die_seen *d), void *arg)
{
	struct walk w = { .c_only = c_only, .visit = visit, .arg = arg };
	const unsigned char *p;
	int rc = unit_open(&w, info, len, unit_off, abbrev, abbrev_len, &p);
	if (rc == SP_DIES_OK) {
		/* The unit's DIE, then its children. */
		const unsigned char *child;
		rc = first_child(&w, p, &child);
		if (rc == 0)
			rc = walk_list(&w, child, 0);
		else if (rc > 0)
			rc = SP_DIES_OK;
	}
	free(w.ab);
	free(w.forms);
	return rc;
}

/* ---- a unit's DIEs by offset ---- */

struct sp_dies_unit {
	struct walk w;
	uint64_t unit_off;
	const unsigned char *die;	/* the unit's DIE */
};

int sp_dies_unit_open(struct sp_dies_unit **out, const struct sp_linesecs *s, uint64_t unit_off)
{
	*out = NULL;
	struct sp_dies_unit *u = calloc(1, sizeof(*u));
	if (!u)
		return SP_DIES_NOMEM;
	int rc = unit_open(&u->w, s->info, s->info_len, unit_off, s->abbrev, s->abbrev_len, &u->die);
	if (rc != SP_DIES_OK) {
		sp_dies_unit_free(u);
		return rc;
	}
	u->unit_off = unit_off;
	*out = u;
	return SP_DIES_OK;
}

void sp_dies_unit_free(struct sp_dies_unit *u)
{
	if (!u)
		return;
	free(u->w.ab);
	free(u->w.forms);
	free(u);
}

int sp_dies_walk_unit(const struct sp_dies_unit *u, bool c_only,
		      int (*visit)(void *arg, const struct sp_die_seen *d), void *arg)
{
	struct walk w = u->w;
	w.c_only = c_only;
	w.visit = visit;
	w.arg = arg;
	/* The unit's DIE, then its children. */
	const unsigned char *child;
	int rc = first_child(&w, u->die, &child);
	if (rc == 0)
		rc = walk_list(&w, child, 0);
	else if (rc > 0)
		rc = SP_DIES_OK;
	return rc;
}

/* The DIE at off of .debug_info, when it lies in the unit. */
static const unsigned char *die_at(const struct sp_dies_unit *u, uint64_t off)
{
	if (off < u->unit_off || off - u->unit_off >= (uint64_t)(u->w.end - u->w.start))
		return NULL;
	return u->w.start + (off - u->unit_off);
}

int sp_dies_read(const struct sp_dies_unit *u, uint64_t off, struct sp_die_seen *d)
{
	const unsigned char *die = die_at(u, off), *p = die;
	const struct abbrev *a = die ? die_abbrev(&u->w, &p) : NULL;
	if (!a)
		return SP_DIES_ASK_LIBDW;
	*d = (struct sp_die_seen){ off, a->tag, a->flags, false, 0, 0 };
	d->plain_range = plain_range(&u->w, p, a, &d->lo, &d->hi);
	return SP_DIES_OK;
}

int sp_dies_child(const struct sp_dies_unit *u, uint64_t off, uint64_t *child)
{
	const unsigned char *die = die_at(u, off), *c;
	int rc = die ? first_child(&u->w, die, &c) : SP_DIES_ASK_LIBDW;
	if (rc == 0)
		*child = u->unit_off + (uint64_t)(c - u->w.start);
	return rc;
}

int sp_dies_sibling(const struct sp_dies_unit *u, uint64_t off, uint64_t *next)
{
	const unsigned char *die = die_at(u, off), *n;
	int rc = die ? next_sibling(&u->w, die, &n) : SP_DIES_ASK_LIBDW;
	if (rc == 0)
		*next = u->unit_off + (uint64_t)(n - u->w.start);
	return rc;
}

static int add_fn(struct sp_unit_fns *f, uint64_t lo, uint64_t hi, uint64_t die)
{
	if (SP_ALLOC_GROW(f->v, f->n + 1, f->alloc) < 0)
		return SP_DIES_NOMEM;
	f->v[f->n++] = (struct sp_unit_fn){ lo, hi, die };
	return SP_DIES_OK;
}

/* A function's ranges, as the walk through libdw adds them. */
static int add_ranges(struct sp_unit_fns *f, Dwarf_Die *d, uint64_t off)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t at = 0;
	while ((at = dwarf_ranges(d, at, &base, &lo, &hi)) > 0)
		if (hi > lo && add_fn(f, lo, hi, off) < 0)
			return SP_DIES_NOMEM;
	return SP_DIES_OK;
}

struct by_bytes {
	struct sp_unit_fns *f;
	Dwarf *dw;
	uint64_t unit_off;
};

static int visit_die(void *arg, const struct sp_die_seen *d)
{
	struct by_bytes *b = arg;
	struct sp_unit_fns *f = b->f;
	uint64_t off = b->unit_off + d->off;
	if (d->tag == DW_TAG_subprogram) {
		if (d->plain_range)
			return d->hi > d->lo ? add_fn(f, d->lo, d->hi, off) : 0;
		/* Without DW_AT_high_pc and DW_AT_ranges, dwarf_ranges() finds none. */
		if (!(d->flags & (SP_DIE_HIGH_PC | SP_DIE_RANGES)))
			return 0;
		Dwarf_Die die;
		if (!dwarf_offdie(b->dw, off, &die))
			return SP_DIES_ASK_LIBDW;
		return add_ranges(f, &die, off);
	}
	if ((d->flags & SP_DIE_TOP) && !f->other_pc &&
	    (d->tag == DW_TAG_imported_unit || (d->flags & (SP_DIE_LOW_PC | SP_DIE_RANGES))))
		f->other_pc = true;
	return 0;
}

/* The walk through libdw: the DIEs under parent, as sp_dies_walk() visits them. */
static int walk_libdw(struct sp_unit_fns *f, Dwarf_Die *parent, int depth, bool c_only)
{
	Dwarf_Die d;
	if (depth > 16 || dwarf_child(parent, &d) != 0)
		return SP_DIES_OK;
	do {
		int tag = dwarf_tag(&d);
		if (tag == DW_TAG_subprogram) {
			if (add_ranges(f, &d, dwarf_dieoffset(&d)) < 0)
				return SP_DIES_NOMEM;
		} else if (depth == 0 && !f->other_pc &&
			   (tag == DW_TAG_imported_unit || dwarf_hasattr(&d, DW_AT_low_pc) ||
			    dwarf_hasattr(&d, DW_AT_ranges))) {
			f->other_pc = true;
		}
		if (!c_only && (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
				tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
				tag == DW_TAG_module) &&
		    walk_libdw(f, &d, depth + 1, false) < 0)
			return SP_DIES_NOMEM;
	} while (dwarf_siblingof(&d, &d) == 0);
	return SP_DIES_OK;
}

/*
 * The walk through libdw, when the bytes were not walked (rc): whatever
 * that walk found is dropped, libdw's walk is the answer.
 */
static int fns_by_libdw(struct sp_unit_fns *f, Dwarf_Die *cu, bool c_only, int rc)
{
	if (rc == SP_DIES_OK || rc == SP_DIES_NOMEM)
		return rc;
	f->n = 0;
	f->other_pc = false;
	f->by_libdw = true;
	return walk_libdw(f, cu, 0, c_only);
}

bool sp_dies_unit_of(Dwarf *dw, Dwarf_Die *cu, const struct sp_linesecs *s, uint64_t *unit_off)
{
	Dwarf_Half version;
	uint8_t unit_type;
	/* Only compile and partial units are in .debug_info for sure (v4's type units are not). */
	if (!s->info || !s->abbrev || dwarf_cu_getdwarf(cu->cu) != dw ||
	    dwarf_cu_info(cu->cu, &version, &unit_type, NULL, NULL, NULL, NULL, NULL) != 0 ||
	    (unit_type != DW_UT_compile && unit_type != DW_UT_partial))
		return false;
	*unit_off = dwarf_dieoffset(cu) - dwarf_cuoffset(cu);
	return true;
}

int sp_unit_fns_find_in(struct sp_unit_fns *f, Dwarf *dw, Dwarf_Die *cu,
			const struct sp_dies_unit *u, bool c_only)
{
	memset(f, 0, sizeof(*f));
	int rc = SP_DIES_ASK_LIBDW;
	if (u) {
		struct by_bytes b = { f, dw, u->unit_off };
		rc = sp_dies_walk_unit(u, c_only, visit_die, &b);
	}
	return fns_by_libdw(f, cu, c_only, rc);
}

int sp_unit_fns_find(struct sp_unit_fns *f, Dwarf *dw, Dwarf_Die *cu,
		     const struct sp_linesecs *s, bool c_only, bool libdw_only)
{
	memset(f, 0, sizeof(*f));
	int rc = SP_DIES_ASK_LIBDW;
	uint64_t unit_off;
	if (!libdw_only && sp_dies_unit_of(dw, cu, s, &unit_off)) {
		struct by_bytes b = { f, dw, unit_off };
		rc = sp_dies_walk(s->info, s->info_len, b.unit_off, s->abbrev, s->abbrev_len,
				  c_only, visit_die, &b);
	}
	return fns_by_libdw(f, cu, c_only, rc);
}

void sp_unit_fns_free(struct sp_unit_fns *f)
{
	free(f->v);
	memset(f, 0, sizeof(*f));
}

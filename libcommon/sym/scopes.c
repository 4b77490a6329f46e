/* SPDX-License-Identifier: MIT */
/* A function's inlined calls and blocks, read once and kept flat (see scopes.h). */
#include <dwarf.h>
#include <stdlib.h>

#include "sym/dies.h"
#include "sym/scopes.h"
#include "util/alloc.h"

/*
 * A scope below the function, in the DIEs' pre-order: its subtree is the
 * nodes after it up to end.  The function itself is node 0.
 */
struct node {
	uint32_t range, nranges;	/* its ranges: ranges[range...] */
	uint32_t end;
	uint32_t named;		/* 1 + its index in scopes once named (the first time asked for) */
	uint64_t off;		/* its DIE's offset */
};

struct sp_fn_scopes {
	struct node *v;
	size_t n, alloc;
	struct { uint64_t lo, hi; } *ranges;
	size_t nranges, alloc_ranges;
	bool oom;
	/*
	 * The nodes' DIEs when walked through libdw (in step with v), else
	 * NULL: a node's DIE is then made from its offset in dw when it is
	 * named, the function's own kept in fn.
	 */
	Dwarf_Die *dies;
	size_t alloc_dies;
	Dwarf *dw;
	Dwarf_Die fn;
	/*
	 * The unit and its files: a scope is named from its DIE the first
	 * time an address lies in it (a large function has thousands of
	 * inlined calls, and an address needs a few).
	 */
	Dwarf_Die cu;
	const struct sp_linetab *lt;
	struct sp_scope *scopes;	/* those named */
	size_t nscopes, alloc_scopes;
	bool by_libdw;		/* walked through libdw */
};

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	if (!n && dwarf_attr_integrate(die, DW_AT_name, &a))
		n = dwarf_formstring(&a);
	return n;
}

/*
 * The position of the call an inlined_subroutine DIE stands for: its
 * file from lt, the unit's files, or from libdw when lt is NULL.
 */
static void call_site(Dwarf_Die *inl, Dwarf_Die *cu, const struct sp_linetab *lt,
		      const char **file, unsigned *line)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(inl, DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
		*line = (unsigned)v;
	Dwarf_Files *files;
	size_t nfiles;
	if (!dwarf_attr(inl, DW_AT_call_file, &a) || dwarf_formudata(&a, &v) != 0)
		return;
	if (lt)
		*file = v < lt->nfiles ? lt->files[v] : NULL;
	else if (dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles)
		*file = dwarf_filesrc(files, v, NULL, NULL);
}

void sp_scope_from_die(Dwarf_Die *die, Dwarf_Die *cu, const struct sp_linetab *lt,
		       struct sp_scope *out)
{
	int tag = dwarf_tag(die);
	*out = (struct sp_scope){ .inlined = tag == DW_TAG_inlined_subroutine,
				  .subprogram = tag == DW_TAG_subprogram };
	if (out->inlined || out->subprogram)
		out->name = die_name(die);
	if (out->inlined)
		call_site(die, cu, lt, &out->call_file, &out->call_line);
	Dwarf_Addr lo;
	if (out->subprogram && dwarf_entrypc(die, &lo) == 0) {
		out->has_entry = true;
		out->entry = lo;
	}
}

/* The tags of scopes an address can lie in below its function. */
static bool is_scope(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_with_stmt || tag == DW_TAG_entry_point;
}

/* Adds die with its ranges, and its scopes below it; false when it has no range. */
static bool add_node(struct sp_fn_scopes *f, Dwarf_Die *die, int depth)
{
	size_t self = f->n, first = f->nranges;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (SP_ALLOC_GROW(f->ranges, f->nranges + 1, f->alloc_ranges) < 0) {
			f->oom = true;
			return false;
		}
		f->ranges[f->nranges].lo = lo;
		f->ranges[f->nranges++].hi = hi;
	}
	/* No range holds an address: neither it nor what is under it is found. */
	if (f->nranges == first && depth > 0)
		return false;
	if (SP_ALLOC_GROW(f->v, f->n + 1, f->alloc) < 0 ||
	    SP_ALLOC_GROW(f->dies, f->n + 1, f->alloc_dies) < 0) {
		f->oom = true;
		return false;
	}
	f->n++;
	f->v[self] = (struct node){ (uint32_t)first, (uint32_t)(f->nranges - first), 0, 0,
				    dwarf_dieoffset(die) };
	f->dies[self] = *die;
	Dwarf_Die d;
	if (depth + 1 < SP_SCOPES_MAX && dwarf_child(die, &d) == 0) {
		do {
			if (is_scope(dwarf_tag(&d)))
				add_node(f, &d, depth + 1);
		} while (!f->oom && dwarf_siblingof(&d, &d) == 0);
	}
	f->v[self].end = (uint32_t)f->n;
	return true;
}

struct sp_fn_scopes *sp_fn_scopes_read(Dwarf_Die *fn, Dwarf_Die *cu, const struct sp_linetab *lt)
{
	struct sp_fn_scopes *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->lt = lt;
	f->cu = *cu;
	f->by_libdw = true;
	add_node(f, fn, 0);
	if (f->oom || !f->n) {
		sp_fn_scopes_free(f);
		return NULL;
	}
	return f;
}

/* A node for the DIE at off, its DIE read when it is named; false when memory runs out. */
static bool add_by_offset(struct sp_fn_scopes *f, uint64_t off, size_t first)
{
	if (SP_ALLOC_GROW(f->v, f->n + 1, f->alloc) < 0) {
		f->oom = true;
		return false;
	}
	f->v[f->n++] = (struct node){ (uint32_t)first, (uint32_t)(f->nranges - first), 0, 0, off };
	return true;
}

/*
 * add_node() over the DIEs' bytes (dies.h): the same nodes in the same
 * order, each range from the bytes when it reads plainly, else from
 * dwarf_ranges() on the DIE.  Returns 1 when the DIE was added, 0 when
 * it has no range, -1 where the bytes are libdw's to read (or memory
 * ran out: f->oom).
 */
static int add_node_bytes(struct sp_fn_scopes *f, const struct sp_dies_unit *u, uint64_t off,
			  int depth)
{
	size_t self = f->n, first = f->nranges;
	struct sp_die_seen d;
	if (sp_dies_read(u, off, &d) != SP_DIES_OK)
		return -1;
	if (d.plain_range) {
		if (d.hi > d.lo) {
			if (SP_ALLOC_GROW(f->ranges, f->nranges + 1, f->alloc_ranges) < 0) {
				f->oom = true;
				return -1;
			}
			f->ranges[f->nranges].lo = d.lo;
			f->ranges[f->nranges++].hi = d.hi;
		}
	} else if (d.flags & (SP_DIE_HIGH_PC | SP_DIE_RANGES)) {
		/* libdw's reading (without DW_AT_high_pc and DW_AT_ranges it finds none). */
		Dwarf_Die die;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t at = 0;
		if (!dwarf_offdie(f->dw, off, &die))
			return -1;
		while ((at = dwarf_ranges(&die, at, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (SP_ALLOC_GROW(f->ranges, f->nranges + 1, f->alloc_ranges) < 0) {
				f->oom = true;
				return -1;
			}
			f->ranges[f->nranges].lo = lo;
			f->ranges[f->nranges++].hi = hi;
		}
	}
	if (f->nranges == first && depth > 0)
		return 0;
	if (!add_by_offset(f, off, first))
		return -1;
	uint64_t c;
	int rc = depth + 1 < SP_SCOPES_MAX ? sp_dies_child(u, off, &c) : 1;
	while (rc == 0) {
		struct sp_die_seen cd;
		if (sp_dies_read(u, c, &cd) != SP_DIES_OK)
			return -1;
		if (is_scope((int)cd.tag) && add_node_bytes(f, u, c, depth + 1) < 0)
			return -1;
		rc = sp_dies_sibling(u, c, &c);
	}
	if (rc < 0)
		return -1;
	f->v[self].end = (uint32_t)f->n;
	return 1;
}

struct sp_fn_scopes *sp_fn_scopes_read_bytes(Dwarf *dw, const struct sp_dies_unit *u,
					     Dwarf_Die *fn, Dwarf_Die *cu,
					     const struct sp_linetab *lt)
{
	struct sp_fn_scopes *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->lt = lt;
	f->cu = *cu;
	f->dw = dw;
	if (add_node_bytes(f, u, dwarf_dieoffset(fn), 0) < 0 || !f->n) {
		bool oom = f->oom;
		sp_fn_scopes_free(f);
		return oom ? NULL : sp_fn_scopes_read(fn, cu, lt);
	}
	f->fn = *fn;
	return f;
}

bool sp_fn_scopes_same(const struct sp_fn_scopes *a, const struct sp_fn_scopes *b)
{
	if (a->n != b->n || a->nranges != b->nranges)
		return false;
	for (size_t i = 0; i < a->nranges; i++)
		if (a->ranges[i].lo != b->ranges[i].lo || a->ranges[i].hi != b->ranges[i].hi)
			return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].range != b->v[i].range || a->v[i].nranges != b->v[i].nranges ||
		    a->v[i].end != b->v[i].end || a->v[i].off != b->v[i].off)
			return false;
	return true;
}

bool sp_fn_scopes_by_libdw(const struct sp_fn_scopes *f)
{
	return f->by_libdw;
}

void sp_fn_scopes_free(struct sp_fn_scopes *f)
{
	if (!f)
		return;
	free(f->v);
	free(f->ranges);
	free(f->dies);
	free(f->scopes);
	free(f);
}

static bool holds(const struct sp_fn_scopes *f, const struct node *x, uint64_t pc)
{
	for (uint32_t i = 0; i < x->nranges; i++)
		if (pc >= f->ranges[x->range + i].lo && pc < f->ranges[x->range + i].hi)
			return true;
	return false;
}

int sp_fn_scopes_of(struct sp_fn_scopes *f, uint64_t pc, struct sp_scope *out)
{
	uint32_t chain[SP_SCOPES_MAX];
	int n = 0;
	chain[n++] = 0;
	for (uint32_t i = 1; i < f->v[chain[n - 1]].end && n < SP_SCOPES_MAX;) {
		if (holds(f, &f->v[i], pc))
			chain[n++] = i++;	/* into its subtree */
		else
			i = f->v[i].end;	/* past it */
	}
	for (int k = 0; k < n; k++) {
		uint32_t i = chain[n - 1 - k];
		struct node *x = &f->v[i];
		if (!x->named) {
			Dwarf_Die die, *d = f->dies ? &f->dies[i] : i == 0 ? &f->fn : &die;
			struct sp_scope sc = { 0 };
			if (d != &die || dwarf_offdie(f->dw, x->off, &die))
				sp_scope_from_die(d, &f->cu, f->lt, &sc);
			if (SP_ALLOC_GROW(f->scopes, f->nscopes + 1, f->alloc_scopes) < 0) {
				out[k] = sc;	/* named again next time */
				continue;
			}
			f->scopes[f->nscopes++] = sc;
			x->named = (uint32_t)f->nscopes;
		}
		out[k] = f->scopes[x->named - 1];
	}
	return n;
}

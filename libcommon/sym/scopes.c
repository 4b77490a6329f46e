/* SPDX-License-Identifier: MIT */
/* A function's inlined calls and blocks, read once and kept flat (see scopes.h). */
#include <dwarf.h>
#include <stdlib.h>

#include "sym/scopes.h"
#include "util/alloc.h"

/*
 * A scope below the function, in the DIEs' pre-order: its subtree is the
 * nodes after it up to end.  The function itself is node 0.
 */
struct node {
	uint32_t range, nranges;	/* its ranges: ranges[range...] */
	uint32_t end;
	bool named;		/* s is filled (the first time it is asked for) */
	Dwarf_Die die;
	struct sp_scope s;
};

struct sp_fn_scopes {
	struct node *v;
	size_t n, alloc;
	struct { uint64_t lo, hi; } *ranges;
	size_t nranges, alloc_ranges;
	bool oom;
	/*
	 * The unit and its files: a scope is named from its DIE the first
	 * time an address lies in it (a large function has thousands of
	 * inlined calls, and an address needs a few).
	 */
	Dwarf_Die cu;
	const struct sp_linetab *lt;
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
	if (SP_ALLOC_GROW(f->v, f->n + 1, f->alloc) < 0) {
		f->oom = true;
		return false;
	}
	f->n++;
	f->v[self].range = (uint32_t)first;
	f->v[self].nranges = (uint32_t)(f->nranges - first);
	f->v[self].named = false;
	f->v[self].die = *die;
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
	add_node(f, fn, 0);
	if (f->oom || !f->n) {
		sp_fn_scopes_free(f);
		return NULL;
	}
	return f;
}

void sp_fn_scopes_free(struct sp_fn_scopes *f)
{
	if (!f)
		return;
	free(f->v);
	free(f->ranges);
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
		struct node *x = &f->v[chain[n - 1 - k]];
		if (!x->named) {
			sp_scope_from_die(&x->die, &f->cu, f->lt, &x->s);
			x->named = true;
		}
		out[k] = x->s;
	}
	return n;
}

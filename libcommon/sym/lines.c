/* SPDX-License-Identifier: MIT */
/* A unit's line table decoded as libdw decodes it, rows kept flat (see lines.h). */
#include <dwarf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "sym/lines.h"
#include "util/alloc.h"

/*
 * A reader over a table's bytes.  Every read that libdw would take
 * differently (past the end, a number longer than it reads alike)
 * marks the reader bad, and the table goes to libdw.
 */
struct rd {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t rd_le(struct rd *r, unsigned n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (unsigned i = n; i-- > 0;)
		v = v << 8 | r->p[i];
	r->p += n;
	return v;
}

static unsigned rd_u8(struct rd *r)
{
	return (unsigned)rd_le(r, 1);
}

/* A ULEB128 of at most 9 bytes (63 bits), read the same by anyone. */
static inline uint64_t rd_uleb(struct rd *r)
{
	if (r->p < r->end && *r->p < 0x80)
		return *r->p++;		/* most are one byte */
	uint64_t v = 0;
	for (unsigned i = 0; i < 9 && !r->bad && r->p < r->end; i++) {
		unsigned char b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* A ULEB128 that libdw keeps in an unsigned int. */
static uint32_t rd_uleb32(struct rd *r)
{
	uint64_t v = rd_uleb(r);
	if (v > UINT32_MAX)
		r->bad = true;
	return (uint32_t)v;
}

/* An SLEB128 that libdw keeps in an int. */
static int32_t rd_sleb32(struct rd *r)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < 8 && !r->bad && r->p < r->end; i++) {
		unsigned char b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (b & 0x40)
				v |= ~(uint64_t)0 << (7 * (i + 1));
			int64_t s = (int64_t)v;
			if (s < INT32_MIN || s > INT32_MAX)
				break;
			return (int32_t)s;
		}
	}
	r->bad = true;
	return 0;
}

/* A NUL-terminated string at the reader, stepped over. */
static const char *rd_str(struct rd *r)
{
	const unsigned char *z = r->bad ? NULL : memchr(r->p, 0, (size_t)(r->end - r->p));
	if (!z) {
		r->bad = true;
		return NULL;
	}
	const char *s = (const char *)r->p;
	r->p = z + 1;
	return s;
}

/* A string at off in a string section, NUL-terminated within it. */
static const char *sec_str(struct rd *r, const unsigned char *sec, size_t len, uint64_t off)
{
	if (!sec || off >= len || !memchr(sec + off, 0, len - off)) {
		r->bad = true;
		return NULL;
	}
	return (const char *)sec + off;
}

/* A file as the header or DW_LNE_define_file names it. */
struct fent {
	const char *dir;	/* NULL: the name alone */
	const char *name;
};

struct dec {
	struct rd r;
	const struct sp_linesecs *s;
	unsigned offset_size, address_size;
	const char **dirs;
	size_t ndirs;
	struct fent *files;
	size_t nfiles, alloc_files;
	struct sp_linerow *rows;
	size_t nrows, alloc_rows;
	bool nomem;
};

static void add_file(struct dec *d, size_t at, const char *dir, const char *name)
{
	if (at >= d->nfiles) {
		if (SP_ALLOC_GROW(d->files, at + 1, d->alloc_files) < 0) {
			d->nomem = true;
			return;
		}
		d->nfiles = at + 1;
	}
	/* An absolute name ignores its directory, as libdw's does. */
	d->files[at] = (struct fent){ name[0] == '/' ? NULL : dir, name };
}

/*
 * One entry of a DWARF 5 directory or file list: its path (form fpath)
 * and directory index (form fidx; -1: none wanted).  Only the forms
 * compilers write are taken.
 */
static void v5_entry(struct dec *d, const uint16_t *forms, unsigned nforms, int fpath, int fidx,
		     const char **path, uint64_t *idx)
{
	struct rd *r = &d->r;
	*path = NULL;
	*idx = UINT64_MAX;
	for (unsigned m = 0; m < nforms && !r->bad; m++) {
		uint64_t v = 0;
		const char *s = NULL;
		switch (forms[m]) {
		case DW_FORM_string:
			s = rd_str(r);
			break;
		case DW_FORM_line_strp:
			v = rd_le(r, d->offset_size);
			if ((int)m == fpath)
				s = sec_str(r, d->s->line_str, d->s->line_str_len, v);
			break;
		case DW_FORM_strp:
			v = rd_le(r, d->offset_size);
			if ((int)m == fpath)
				s = sec_str(r, d->s->str, d->s->str_len, v);
			break;
		case DW_FORM_udata:
			v = rd_uleb(r);
			break;
		case DW_FORM_data1:
			v = rd_le(r, 1);
			break;
		case DW_FORM_data2:
			v = rd_le(r, 2);
			break;
		case DW_FORM_data4:
			v = rd_le(r, 4);
			break;
		case DW_FORM_data8:
			v = rd_le(r, 8);
			break;
		case DW_FORM_data16:	/* an MD5, never an index or a path */
			if ((int)m == fpath || (int)m == fidx)
				r->bad = true;
			rd_le(r, 8);
			rd_le(r, 8);
			break;
		case DW_FORM_block: {
			uint64_t n = rd_uleb(r);
			if ((int)m == fpath || (int)m == fidx || n > (uint64_t)(r->end - r->p))
				r->bad = true;
			else
				r->p += n;
			break;
		}
		default:
			r->bad = true;
			break;
		}
		/* An index is read as data (libdw's dwarf_formudata), a path as a string. */
		bool data = forms[m] == DW_FORM_udata || forms[m] == DW_FORM_data1 ||
			    forms[m] == DW_FORM_data2 || forms[m] == DW_FORM_data4 ||
			    forms[m] == DW_FORM_data8;
		if ((int)m == fpath) {
			if (!s)
				r->bad = true;
			*path = s;
		} else if ((int)m == fidx) {
			if (!data)
				r->bad = true;
			*idx = v;
		}
	}
}

/* A DWARF 5 entry format: its (content, form) pairs, the path's and the index's places. */
static unsigned v5_format(struct rd *r, uint16_t *forms, int *fpath, int *fidx)
{
	unsigned n = rd_u8(r);
	*fpath = *fidx = -1;
	for (unsigned i = 0; i < n && !r->bad; i++) {
		uint64_t desc = rd_uleb(r), form = rd_uleb(r);
		if (desc > 0xffff || form > 0xffff)
			r->bad = true;
		forms[i] = (uint16_t)form;
		if (desc == DW_LNCT_path)
			*fpath = (int)i;
		else if (desc == DW_LNCT_directory_index)
			*fidx = (int)i;
	}
	return n;
}

static bool read_v5_lists(struct dec *d)
{
	struct rd *r = &d->r;
	uint16_t forms[256];
	int fpath, fidx;
	unsigned nforms = v5_format(r, forms, &fpath, &fidx);
	uint64_t n = rd_uleb(r);
	if (r->bad || (nforms > 0 && fpath < 0) || (nforms == 0 && n != 0) ||
	    (nforms && n > (uint64_t)(r->end - r->p) / nforms))
		return false;
	if (n && !(d->dirs = calloc(n, sizeof(*d->dirs)))) {
		d->nomem = true;
		return false;
	}
	d->ndirs = n;
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		uint64_t ignored;
		v5_entry(d, forms, nforms, fpath, -1, &d->dirs[i], &ignored);
	}
	nforms = v5_format(r, forms, &fpath, &fidx);
	n = rd_uleb(r);
	if (r->bad || (nforms > 0 && (fpath < 0 || fidx < 0)) || (nforms == 0 && n != 0) ||
	    (nforms && n > (uint64_t)(r->end - r->p) / nforms))
		return false;
	/* libdw's file 0 is the list's first entry, or "???" for none. */
	add_file(d, 0, NULL, "???");
	for (uint64_t i = 0; i < n && !r->bad && !d->nomem; i++) {
		const char *path;
		uint64_t dir;
		v5_entry(d, forms, nforms, fpath, fidx, &path, &dir);
		if (r->bad || dir >= d->ndirs)
			return false;
		add_file(d, i, d->dirs[dir], path);
	}
	return !r->bad && !d->nomem;
}

static bool read_v4_lists(struct dec *d, const char *comp_dir)
{
	struct rd *r = &d->r;
	/* Directory 0 is the unit's; the list follows, ended by an empty name. */
	size_t n = 1;
	for (struct rd c = *r; c.p < c.end && *c.p; n++)
		if (!rd_str(&c))
			return false;
	if (!(d->dirs = calloc(n, sizeof(*d->dirs)))) {
		d->nomem = true;
		return false;
	}
	d->ndirs = n;
	d->dirs[0] = comp_dir;
	for (size_t i = 1; i < n; i++)
		d->dirs[i] = rd_str(r);
	if (rd_u8(r) != 0)
		return false;
	add_file(d, 0, NULL, "???");
	while (!r->bad && !d->nomem && r->p < r->end && *r->p) {
		const char *name = rd_str(r);
		uint64_t dir = rd_uleb(r);
		rd_uleb(r);	/* modification time */
		rd_uleb(r);	/* length */
		if (r->bad || dir >= d->ndirs)
			return false;
		add_file(d, d->nfiles, d->dirs[dir], name);
	}
	return rd_u8(r) == 0 && !r->bad && !d->nomem;
}

/* The state machine's registers that a row keeps or libdw checks. */
struct regs {
	uint64_t addr;
	uint32_t file;
	int64_t line;
	uint32_t column, isa, discriminator;
	unsigned is_stmt;
};

/*
 * Adds a row.  libdw keeps some registers in bit-fields and finds a
 * table invalid when one does not fit: such a table is libdw's.
 */
static inline bool add_row(struct dec *d, const struct regs *g, bool end)
{
	if (g->line < INT32_MIN || g->line > INT32_MAX || g->column > 0xffff ||
	    g->isa > 0xff || g->discriminator > 0xffffff || g->is_stmt > 1)
		return false;
	if (d->nrows == d->alloc_rows &&
	    SP_ALLOC_GROW(d->rows, d->nrows + 1, d->alloc_rows) < 0) {
		d->nomem = true;
		return false;
	}
	d->rows[d->nrows++] = (struct sp_linerow){ g->addr, g->file, (int32_t)g->line, end };
	return true;
}

static void reset(struct regs *g, unsigned default_is_stmt)
{
	*g = (struct regs){ .file = 1, .line = 1, .is_stmt = default_is_stmt };
}

/* The operands the standard gives each standard opcode. */
static const unsigned char operands[DW_LNS_set_isa + 1] = {
	[DW_LNS_advance_pc] = 1, [DW_LNS_advance_line] = 1,
	[DW_LNS_set_file] = 1, [DW_LNS_set_column] = 1,
	[DW_LNS_fixed_advance_pc] = 1, [DW_LNS_set_isa] = 1,
};

/* What each special opcode adds to the line and the address. */
struct specials {
	int line[256];
	uint32_t addr[256];
};

/*
 * Runs the line program from the reader to its end.  std_ok: every
 * standard opcode this program has takes the operands the standard
 * gives it (else meeting one that does not leaves the table to libdw).
 */
static inline __attribute__((always_inline)) bool
run(struct dec *d, unsigned min_len, unsigned default_is_stmt, unsigned line_range,
    unsigned opcode_base, const unsigned char *oplen, const struct specials *sp, bool std_ok)
{
	struct rd *r = &d->r;
	struct regs g;
	reset(&g, default_is_stmt);
	while (r->p < r->end) {
		unsigned op = *r->p++;
		if (op >= opcode_base) {
			g.line += sp->line[op];
			g.addr += sp->addr[op];
			if (!add_row(d, &g, false))
				return false;
			g.discriminator = 0;
			continue;
		}
		if (op == 0) {
			if (r->end - r->p < 2)
				return false;
			unsigned len = *r->p++;
			if ((size_t)(r->end - r->p) < len)
				return false;
			unsigned sub = *r->p++;
			switch (sub) {
			case DW_LNE_end_sequence:
				if (!add_row(d, &g, true))
					return false;
				reset(&g, default_is_stmt);
				break;
			case DW_LNE_set_address:
				g.addr = rd_le(r, d->address_size);
				break;
			case DW_LNE_define_file: {
				const char *name = rd_str(r);
				uint32_t dir = rd_uleb32(r);
				rd_uleb(r);
				rd_uleb(r);
				if (r->bad || dir >= d->ndirs)
					return false;
				add_file(d, d->nfiles, d->dirs[dir], name);
				if (d->nomem)
					return false;
				break;
			}
			case DW_LNE_set_discriminator:
				/* libdw looks this up among the standard opcodes' lengths. */
				if (oplen[DW_LNE_set_discriminator] != 1)
					return false;
				g.discriminator = rd_uleb32(r);
				break;
			case DW_LNE_lo_user:	/* NVIDIA's, which libdw reads its own way */
			case DW_LNE_lo_user + 1:
				return false;
			default:
				if (len == 0)
					return false;
				r->p += len - 1;
				break;
			}
		} else if (op <= DW_LNS_set_isa) {
			if (!std_ok && oplen[op] != operands[op])
				return false;
			switch (op) {
			case DW_LNS_copy:
				if (!add_row(d, &g, false))
					return false;
				g.discriminator = 0;
				break;
			case DW_LNS_advance_pc:
				g.addr += (uint32_t)(min_len * rd_uleb32(r));
				break;
			case DW_LNS_advance_line:
				g.line += rd_sleb32(r);
				break;
			case DW_LNS_set_file:
				g.file = rd_uleb32(r);
				break;
			case DW_LNS_set_column:
				g.column = rd_uleb32(r);
				break;
			case DW_LNS_negate_stmt:
				g.is_stmt = 1 - g.is_stmt;
				break;
			case DW_LNS_const_add_pc:
				g.addr += (uint32_t)(min_len * ((255 - opcode_base) / line_range));
				break;
			case DW_LNS_fixed_advance_pc:
				g.addr += rd_le(r, 2);
				break;
			case DW_LNS_set_isa:
				g.isa = rd_uleb32(r);
				break;
			default:	/* basic_block, prologue_end, epilogue_begin */
				break;
			}
		} else {
			/* An opcode of a later standard: its operands skipped. */
			for (unsigned n = oplen[op]; n > 0; n--)
				rd_uleb(r);
		}
		if (r->bad)
			return false;
	}
	return true;
}

static bool run_program(struct dec *d, unsigned min_len, unsigned default_is_stmt, int line_base,
			unsigned line_range, unsigned opcode_base, const unsigned char *oplen)
{
	/* libdw's arithmetic for a special opcode, in its types (unsigned int), once for each. */
	struct specials sp;
	for (unsigned op = opcode_base; op < 256; op++) {
		unsigned adj = op - opcode_base;
		sp.line[op] = (int)((unsigned)line_base + adj % line_range);
		sp.addr[op] = (uint32_t)(min_len * (adj / line_range));
	}
	bool std_ok = true;
	for (unsigned op = 1; op < opcode_base && op <= DW_LNS_set_isa; op++)
		std_ok = std_ok && oplen[op] == operands[op];
	return std_ok ? run(d, min_len, default_is_stmt, line_range, opcode_base, oplen, &sp, true)
		      : run(d, min_len, default_is_stmt, line_range, opcode_base, oplen, &sp, false);
}

/* Row order: by address, an end row before another at its address, else as read. */
static bool row_before(const struct sp_linerow *a, const struct sp_linerow *b)
{
	return a->addr < b->addr || (a->addr == b->addr && a->end && !b->end);
}

/*
 * Sorts the rows stably: a unit's sequences are each in order already,
 * so runs in order are found and merged, as few as there are sequences
 * out of place.
 */
static bool sort_rows(struct dec *d)
{
	size_t n = d->nrows, i = 1;
	while (i < n && !row_before(&d->rows[i], &d->rows[i - 1]))
		i++;
	if (i >= n)
		return true;
	struct sp_linerow *tmp = malloc(n * sizeof(*tmp)), *a = d->rows, *b = tmp;
	if (!tmp) {
		d->nomem = true;
		return false;
	}
	for (;;) {
		size_t runs = 0;
		for (size_t lo = 0; lo < n;) {
			size_t mid = lo + 1;
			while (mid < n && !row_before(&a[mid], &a[mid - 1]))
				mid++;
			size_t hi = mid < n ? mid + 1 : n;
			while (hi < n && !row_before(&a[hi], &a[hi - 1]))
				hi++;
			size_t x = lo, y = mid, k = lo;
			while (x < mid && y < hi)
				b[k++] = row_before(&a[y], &a[x]) ? a[y++] : a[x++];
			while (x < mid)
				b[k++] = a[x++];
			while (y < hi)
				b[k++] = a[y++];
			lo = hi;
			runs++;
		}
		struct sp_linerow *t = a;
		a = b;
		b = t;
		if (runs == 1)
			break;
	}
	if (a != d->rows)
		memcpy(d->rows, a, n * sizeof(*a));
	free(tmp);
	return true;
}

/* The files' names, a directory and a name joined as libdw joins them. */
static bool make_names(struct dec *d, struct sp_linetab *t)
{
	size_t size = 0;
	for (size_t i = 0; i < d->nfiles; i++)
		if (d->files[i].dir && d->files[i].name)
			size += strlen(d->files[i].dir) + 1 + strlen(d->files[i].name) + 1;
	if (!(t->files = calloc(d->nfiles ? d->nfiles : 1, sizeof(*t->files))) ||
	    (size && !(t->names = malloc(size))))
		return false;
	char *p = t->names;
	for (size_t i = 0; i < d->nfiles; i++) {
		const struct fent *f = &d->files[i];
		if (!f->dir || !f->name) {
			t->files[i] = f->name;
			continue;
		}
		t->files[i] = p;
		size_t dl = strlen(f->dir), nl = strlen(f->name);
		memcpy(p, f->dir, dl);
		p[dl] = '/';
		memcpy(p + dl + 1, f->name, nl + 1);
		p += dl + 1 + nl + 1;
	}
	t->nfiles = d->nfiles;
	return true;
}

static int decode(struct dec *d, struct sp_linetab *t, uint64_t off, const char *comp_dir)
{
	const struct sp_linesecs *s = d->s;
	if (!s->line || off >= s->line_len)
		return SP_LINES_ASK_LIBDW;
	struct rd *r = &d->r;
	*r = (struct rd){ s->line + off, s->line + s->line_len, false };
	uint64_t unit_length = rd_le(r, 4);
	d->offset_size = 4;
	if (unit_length == 0xffffffff) {
		unit_length = rd_le(r, 8);
		d->offset_size = 8;
	}
	if (r->bad || unit_length > (uint64_t)(r->end - r->p))
		return SP_LINES_ASK_LIBDW;
	r->end = r->p + unit_length;
	unsigned version = (unsigned)rd_le(r, 2);
	if (r->bad || version < 2 || version > 5)
		return SP_LINES_ASK_LIBDW;
	if (version >= 5 && (rd_u8(r) != d->address_size || rd_u8(r) != 0))
		return SP_LINES_ASK_LIBDW;
	uint64_t header_length = rd_le(r, d->offset_size);
	const unsigned char *header_start = r->p;
	unsigned min_len = rd_u8(r);
	unsigned max_ops = version >= 4 ? rd_u8(r) : 1;
	unsigned default_is_stmt = rd_u8(r);
	int line_base = (int8_t)rd_u8(r);
	unsigned line_range = rd_u8(r);
	unsigned opcode_base = rd_u8(r);
	/*
	 * One operation per instruction (VLIW's several are libdw's to
	 * read), and DWARF 2's standard opcodes at least.
	 */
	if (r->bad || max_ops != 1 || default_is_stmt > 1 || line_range == 0 ||
	    opcode_base < 10 || (size_t)(r->end - r->p) < opcode_base - 1)
		return SP_LINES_ASK_LIBDW;
	const unsigned char *oplen = r->p - 1;	/* oplen[op] for op 1 ... opcode_base - 1 */
	r->p += opcode_base - 1;
	if (!(version >= 5 ? read_v5_lists(d) : read_v4_lists(d, comp_dir)))
		return d->nomem ? SP_LINES_NOMEM : SP_LINES_ASK_LIBDW;
	if ((uint64_t)(r->p - header_start) != header_length)
		return SP_LINES_ASK_LIBDW;
	/* A guess at the rows, from the program's size, saves growing. */
	size_t guess = (size_t)(r->end - r->p) / 3 + 1;
	if (SP_ALLOC_GROW(d->rows, guess, d->alloc_rows) < 0)
		return SP_LINES_NOMEM;
	if (!run_program(d, min_len, default_is_stmt, line_base, line_range, opcode_base, oplen) ||
	    !sort_rows(d))
		return d->nomem ? SP_LINES_NOMEM : SP_LINES_ASK_LIBDW;
	/* libdw marks the last row an end, as its lookup relies on. */
	if (d->nrows)
		d->rows[d->nrows - 1].end = true;
	if (!make_names(d, t))
		return SP_LINES_NOMEM;
	t->rows = d->rows;
	t->nrows = d->nrows;
	d->rows = NULL;
	return SP_LINES_OK;
}

int sp_linetab_decode(struct sp_linetab *t, const struct sp_linesecs *s, uint64_t off,
		      const char *comp_dir, unsigned address_size)
{
	memset(t, 0, sizeof(*t));
	if (address_size != 4 && address_size != 8)
		return SP_LINES_ASK_LIBDW;
	struct dec d = { .s = s, .address_size = address_size };
	int rc = decode(&d, t, off, comp_dir);
	free(d.dirs);
	free(d.files);
	free(d.rows);
	if (rc != SP_LINES_OK)
		sp_linetab_free(t);
	return rc;
}

void sp_linetab_free(struct sp_linetab *t)
{
	free(t->rows);
	free(t->files);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

bool sp_linetab_find(const struct sp_linetab *t, uint64_t addr, const char **file, int *line)
{
	if (!t->nrows)
		return false;
	/* The last row at or below addr (libdw's search, to pick the same). */
	size_t l = 0, u = t->nrows - 1;
	while (l < u) {
		size_t i = u - (u - l) / 2;
		if (addr < t->rows[i].addr)
			u = i - 1;
		else
			l = i;
	}
	const struct sp_linerow *row = &t->rows[l];
	if (row->end || row->addr > addr)
		return false;
	*line = row->line;
	*file = row->file < t->nfiles ? t->files[row->file] : NULL;
	return true;
}

bool sp_linesecs_read(Elf *elf, struct sp_linesecs *out)
{
	GElf_Ehdr eh;
	size_t shstrndx;
	const unsigned char host = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
									      : ELFDATA2MSB;
	memset(out, 0, sizeof(*out));
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_DATA] != host ||
	    eh.e_type == ET_REL || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	struct sp_linesecs s = { 0 };
	/*
	 * libdw takes the first section of each name, leaving out those of
	 * no bytes and those in a group; a name seen twice, or also as
	 * GNU's .zdebug_ form, is one it may read otherwise than we would:
	 * then the units' sections are libdw's to read, and the tables too.
	 */
	bool twice[6] = { false };
	static const char *const names[6] = { "aranges", "info", "abbrev", "line", "line_str", "str" };
	const unsigned char **where[6] = { &s.aranges, &s.info, &s.abbrev, &s.line, &s.line_str,
					   &s.str };
	size_t *lens[6] = { &s.aranges_len, &s.info_len, &s.abbrev_len, &s.line_len,
			    &s.line_str_len, &s.str_len };
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		bool gnu_z = strncmp(name, ".zdebug_", 8) == 0;
		if (!gnu_z && strncmp(name, ".debug_", 7) != 0)
			continue;
		int k = 0;
		while (k < 6 && strcmp(name + (gnu_z ? 8 : 7), names[k]) != 0)
			k++;
		if (k == 6 || sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_GROUP))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!gnu_z && !(sh.sh_flags & SHF_COMPRESSED) && d && (!d->d_buf || !d->d_size))
			continue;	/* no bytes: libdw leaves it out */
		if (*where[k] || twice[k] || gnu_z) {
			twice[k] = true;
			*where[k] = NULL;
			*lens[k] = 0;
			continue;
		}
		/* The units' sections: read when they can be, never a reason to refuse. */
		if ((sh.sh_flags & SHF_COMPRESSED) || !d || !d->d_buf) {
			if (k >= 3)
				return false;
			twice[k] = true;	/* libdw's to read */
			continue;
		}
		*where[k] = d->d_buf;
		*lens[k] = d->d_size;
	}
	for (int k = 3; k < 6; k++)
		if (twice[k])
			return false;
	*out = s;
	return s.line != NULL;
}

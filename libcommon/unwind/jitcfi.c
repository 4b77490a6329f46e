/* SPDX-License-Identifier: MIT
 * Unwinding information of JIT code, from a stream's jitdump records.
 *
 * A jitdump's unwinding-info record holds an .eh_frame and its
 * .eh_frame_hdr for the code of the next code-load record (V8 writes one
 * with --perf-prof-unwinding-info).  Per process, the code ranges that
 * have one are kept, a later load over the same addresses replacing an
 * earlier one.  libdw reads CFI only from an Elf, so the first time an
 * address of a range is asked about, a small ELF image is built in
 * memory around the two sections (elf_memory(): an ELF header, the
 * .eh_frame_hdr, the .eh_frame and the section names, no program
 * headers), each section at the address where the hdr's search table
 * says it lies: the table's first entry is the code's start, relative to
 * the hdr (datarel), and the hdr points to its .eh_frame (pcrel).  Rules
 * are then compiled and cached as a module's are (cfi.c), keyed by the
 * absolute address.
 */
#include <elf.h>
#include <endian.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "stream/jitdump.h"
#include "unwind/internal.h"
#include "util/alloc.h"
#include "util/search.h"

/* One piece of code with unwinding information. */
struct jitrange {
	uint64_t start, end;
	unsigned char *data;	/* the .eh_frame, then the .eh_frame_hdr */
	size_t eh_len, hdr_len;
	uint64_t eh_vaddr, hdr_vaddr;
	unsigned machine;	/* the jitdump header's elf_mach */
	bool tried;		/* the Elf was built, or could not be */
	void *image;
	Elf *elf;
	struct modstate ms;	/* eh and the rules cache; the rest unused */
};

struct jitproc {
	struct sp_jitdump_files files;
	struct jitrange *ranges;	/* by start once sorted, not overlapping */
	size_t nranges, allocranges;
	bool sorted;
	unsigned char *pending;		/* an unwinding-info record's data, for the next load */
	size_t pending_eh, pending_hdr;
};

struct sp_jitcfi {
	struct sp_u64map procs;	/* pid -> struct jitproc */
};

static void range_release(struct jitrange *r)
{
	sp_unwind_rules_free(&r->ms);
	if (r->ms.eh)
		dwarf_cfi_end(r->ms.eh);
	if (r->elf)
		elf_end(r->elf);
	free(r->image);
	free(r->data);
}

static void proc_free(void *v)
{
	struct jitproc *p = v;
	sp_jitdump_files_release(&p->files);
	for (size_t i = 0; i < p->nranges; i++)
		range_release(&p->ranges[i]);
	free(p->ranges);
	free(p->pending);
	free(p);
}

void sp_jitcfi_free(struct sp_jitcfi *jc)
{
	if (!jc)
		return;
	sp_u64map_release(&jc->procs, proc_free);
	free(jc);
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/*
 * Where the hdr and the .eh_frame lie, for code starting at start: from
 * the hdr's own pointers.  Only the encodings every writer seen uses are
 * read: a pcrel sdata4 .eh_frame pointer, a udata4 count, a datarel
 * sdata4 table.  Returns false for anything else, or an empty table.
 */
static bool place(const unsigned char *hdr, size_t len, uint64_t start, uint64_t *hdr_vaddr,
		  uint64_t *eh_vaddr)
{
	if (len < 20 || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return false;
	if (rd32(hdr + 8) == 0)
		return false;
	int32_t eh_ptr = (int32_t)rd32(hdr + 4), first = (int32_t)rd32(hdr + 12);
	*hdr_vaddr = start - (uint64_t)(int64_t)first;
	*eh_vaddr = *hdr_vaddr + 4 + (uint64_t)(int64_t)eh_ptr;
	return true;
}

static void put_shdr(unsigned char *p, uint32_t name, uint32_t type, uint64_t flags,
		     uint64_t addr, uint64_t off, uint64_t size)
{
	Elf64_Shdr s = {
		.sh_name = name, .sh_type = type, .sh_flags = flags, .sh_addr = addr,
		.sh_offset = off, .sh_size = size, .sh_addralign = 1,
	};
	memcpy(p, &s, sizeof(s));
}

/* The ELF image around r's sections, and its CFI; false when libelf or libdw refuse it. */
static bool build_elf(struct jitrange *r)
{
	static const char names[] = "\0.eh_frame_hdr\0.eh_frame\0.shstrtab";
	size_t hdr_off = sizeof(Elf64_Ehdr), eh_off = hdr_off + r->hdr_len;
	size_t names_off = eh_off + r->eh_len;
	size_t sh_off = (names_off + sizeof(names) + 7) & ~(size_t)7;
	size_t size = sh_off + 4 * sizeof(Elf64_Shdr);
	unsigned char *im = calloc(1, size);
	if (!im)
		return false;
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			     __BYTE_ORDER == __LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB, EV_CURRENT },
		.e_type = ET_DYN, .e_machine = (Elf64_Half)r->machine, .e_version = EV_CURRENT,
		.e_ehsize = sizeof(Elf64_Ehdr), .e_shoff = sh_off,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 3,
	};
	memcpy(im, &eh, sizeof(eh));
	memcpy(im + hdr_off, r->data + r->eh_len, r->hdr_len);
	memcpy(im + eh_off, r->data, r->eh_len);
	memcpy(im + names_off, names, sizeof(names));
	/* libdw uses the hdr's table only when the hdr's section comes first. */
	unsigned char *sh = im + sh_off;
	put_shdr(sh + 1 * sizeof(Elf64_Shdr), 1, SHT_PROGBITS, SHF_ALLOC, r->hdr_vaddr, hdr_off,
		 r->hdr_len);
	put_shdr(sh + 2 * sizeof(Elf64_Shdr), 15, SHT_PROGBITS, SHF_ALLOC, r->eh_vaddr, eh_off,
		 r->eh_len);
	put_shdr(sh + 3 * sizeof(Elf64_Shdr), 25, SHT_STRTAB, 0, 0, names_off, sizeof(names));
	r->image = im;
	r->elf = elf_memory((char *)im, size);
	r->ms.eh = r->elf ? dwarf_getcfi_elf(r->elf) : NULL;
	return r->ms.eh != NULL;
}

static int cmp_range(const void *a, const void *b)
{
	const struct jitrange *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* A code load: the pending unwinding information now has its code. */
static int add_range(struct jitproc *p, const struct sp_jit_rec *rec, unsigned machine)
{
	uint64_t start = rec->u.load.code_addr, end = start + rec->u.load.code_size;
	unsigned char *data = p->pending;
	size_t eh = p->pending_eh, hdr = p->pending_hdr;
	p->pending = NULL;
	/* New code over old: the old ranges it covers are gone. */
	for (size_t i = 0; i < p->nranges;) {
		if (p->ranges[i].start < end && start < p->ranges[i].end) {
			range_release(&p->ranges[i]);
			p->ranges[i] = p->ranges[--p->nranges];
			p->sorted = false;
		} else {
			i++;
		}
	}
	uint64_t hv, ev;
	if (!data || end <= start || !place(data + eh, hdr, start, &hv, &ev)) {
		free(data);
		return 0;
	}
	if (SP_ALLOC_GROW(p->ranges, p->nranges + 1, p->allocranges) < 0) {
		free(data);
		return -1;
	}
	struct jitrange *r = &p->ranges[p->nranges++];
	*r = (struct jitrange){ .start = start, .end = end, .data = data, .eh_len = eh,
				.hdr_len = hdr, .eh_vaddr = ev, .hdr_vaddr = hv,
				.machine = machine };
	sp_u64map_init(&r->ms.rules);
	p->sorted = false;
	return 0;
}

static int apply(struct jitproc *p, struct sp_jitdump_file *f)
{
	struct sp_jit_rec r;
	while (sp_jitdump_next(f->rd, &r) == 1) {
		if (r.type == SP_JIT_CODE_UNWINDING_INFO) {
			free(p->pending);
			p->pending = NULL;
			size_t n = (size_t)r.u.unwind.unwinding_size;
			if (!n || !r.u.unwind.mapped_size)
				continue;	/* V8's empty stand-in: no information */
			if (!(p->pending = malloc(n)))
				return -1;
			memcpy(p->pending, r.u.unwind.data, n);
			p->pending_hdr = (size_t)r.u.unwind.eh_frame_hdr_size;
			p->pending_eh = n - p->pending_hdr;
		} else if (r.type == SP_JIT_CODE_LOAD) {
			if (add_range(p, &r, sp_jitdump_header(f->rd)->elf_mach) < 0)
				return -1;
		}
	}
	/* On an error the reader stays stopped; sp-symbolize tells why. */
	return 0;
}

static struct jitproc *proc_get(struct sp_jitcfi *jc, uint64_t pid)
{
	struct jitproc *p = sp_u64map_get(&jc->procs, pid);
	if (p)
		return p;
	if (!(p = calloc(1, sizeof(*p))) || sp_u64map_put(&jc->procs, pid, p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

int sp_jitcfi_note(struct sp_jitcfi **jcp, const msgpack_object *rec)
{
	struct sp_jitdump_piece pc;
	struct sp_jitdump_file *f;
	if (!sp_jitdump_piece_read(rec, &pc))
		return 0;
	if (!*jcp) {
		if (!(*jcp = calloc(1, sizeof(**jcp))))
			return -1;
		sp_u64map_init(&(*jcp)->procs);
	}
	struct jitproc *p = proc_get(*jcp, pc.pid);
	if (!p)
		return -1;
	int rc = sp_jitdump_files_feed(&p->files, &pc, &f);
	return rc == 1 ? apply(p, f) : rc < 0 ? -1 : 0;
}

const struct rule *sp_unwind_jit_rule(struct sp_unwinder *u, struct sp_addrspaces *a,
				      uint32_t pid, uint64_t addr)
{
	struct sp_jitcfi *jc = sp_addrspaces_jitcfi(a);
	struct jitproc *p = jc ? sp_u64map_get(&jc->procs, pid) : NULL;
	if (!p || !p->nranges)
		return NULL;
	if (!p->sorted) {
		qsort(p->ranges, p->nranges, sizeof(*p->ranges), cmp_range);
		p->sorted = true;
	}
	/* The first range ending after addr. */
	size_t lo = SP_PARTITION_POINT(p->nranges, i, p->ranges[i].end <= addr);
	struct jitrange *r = lo < p->nranges && p->ranges[lo].start <= addr ? &p->ranges[lo] : NULL;
	if (!r)
		return NULL;
	if (!r->tried) {
		r->tried = true;
		if (!build_elf(r)) {
			free(r->data);
			r->data = NULL;
		}
	}
	if (!r->ms.eh)
		return NULL;
	const struct rule *rule = sp_unwind_rule(u, &r->ms, addr);
	return rule && !rule->none ? rule : NULL;
}

void sp_jitcfi_rules(const struct sp_jitcfi *jc,
		     void (*fn)(void *arg, uint64_t pid, uint64_t start, uint64_t addr), void *arg)
{
	size_t i = 0;
	uint64_t pid;
	void *v;
	while (jc && sp_u64map_next(&jc->procs, &i, &pid, &v)) {
		const struct jitproc *p = v;
		for (size_t r = 0; r < p->nranges; r++) {
			size_t j = 0;
			uint64_t addr;
			void *rule;
			while (sp_u64map_next(&p->ranges[r].ms.rules, &j, &addr, &rule))
				fn(arg, pid, p->ranges[r].start, addr);
		}
	}
}

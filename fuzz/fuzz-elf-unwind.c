/* SPDX-License-Identifier: MIT
 * fuzz-elf-unwind: the input as a module file for the unwinder, so that
 * CFI lookup (.eh_frame_hdr, .eh_frame, .debug_frame through libdw),
 * rule compilation and the DWARF expression machine run on corrupt
 * files; and sp_build_id_fd() on the same file.
 *
 * The whole input is the file.  Its last 16 bytes (zeros for a shorter
 * input) also steer the unwind:
 *
 *   0-3    pc of the first unwind, an offset into the module's mapping
 *   4-7    pc of the second unwind, likewise
 *   8-9    length of the stack copy (at most 2048)
 *   10-11  bp, as an offset from sp
 *   12     bit 0: the copy filled its window (the second unwind says the
 *          opposite); bit 1: no frame-pointer fallback; bit 2: the
 *          second pc lies in the anonymous mapping; bit 3: the module
 *          is the vDSO of a stream of another boot (below)
 *
 * and the stack copy is that many bytes just before those 16 (fewer when
 * the input is shorter).  The address space of process PID has the
 * module mapped at BASE for 4 GiB from file offset 0, and anonymous
 * memory (JIT code) above it.  The module is recorded with no build-id,
 * at /proc/self/fd/N of a memfd holding the input, and the stream is
 * said to come from this host, so the file is used as found.  With bit 3
 * the module is "[vdso]" instead, recorded with the input's build-id (or
 * a made-up one when it has none) and given by an image record whose
 * data is the whole input, as sp-capture writes it; the stream is said
 * to come from another boot, so only the image can be used (through
 * elf_memory), and only when it carries that build-id.
 *
 * It checks that each unwind stores at least the interrupted
 * instruction and at most the frame limit, ends for a known reason, gives
 * each frame the module-relative address sp_unwind_rel() gives, and
 * that unwinding again from the rule cache gives the same frames, and
 * so do a thread's two walks by sp_unwind_thread(), the second taking
 * what it may from the first, with the same counters; that
 * sp_build_id_fd() answers the same twice within its bounds; and that
 * no descriptor is left open.  Any broken invariant calls abort().
 * Nothing is printed on success and everything is freed.
 *
 * One path of elfutils' own is cut short (see dwarf_cfi_addrframe()
 * below).
 */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unwind/addrspace.h"
#include "util/buildid.h"
#include "stream/record.h"
#include "unwind/unwind.h"

#define PID 4242
#define BASE 0x555500000000ull	/* the module's mapping, 4 GiB long */
#define MODLEN (1ull << 32)
#define ANON (BASE + MODLEN)	/* anonymous memory, 1 MiB long */
#define ANONLEN (1ull << 20)
#define SP 0x7ffc00001000ull	/* the stack pointer: the copy starts here */
#define CTL 16
#define MAX_STACK 2048
#define MAX_FRAMES 64
#define NFD 16			/* descriptors above the memfd checked for leaks */

static void check(int cond)
{
	if (!cond)
		abort();
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

/* Applies the record packed in sb, of the given type. */
static void apply(struct sp_addrspaces *a, enum sp_rtype type, msgpack_sbuffer *sb)
{
	msgpack_zone zone;
	msgpack_object obj;
	size_t off = 0;

	check(msgpack_zone_init(&zone, 1024));
	check(msgpack_unpack(sb->data, sb->size, &off, &zone, &obj) == MSGPACK_UNPACK_SUCCESS);
	check(sp_addrspaces_apply(a, type, &obj) == 0);
	msgpack_zone_destroy(&zone);
	msgpack_sbuffer_destroy(sb);
}

/*
 * Applies a map record of PID, with a build-id when idlen > 0; with
 * image, an image record of size bytes for it first.
 */
static void add_map(struct sp_addrspaces *a, uint64_t start, uint64_t len, const char *path,
		    const unsigned char *id, int idlen, const uint8_t *image, size_t size)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	if (image) {
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_map(&pk, 4);
		pack_str(&pk, "t");
		pack_str(&pk, "image");
		pack_str(&pk, "path");
		pack_str(&pk, path);
		pack_str(&pk, "build_id");
		msgpack_pack_bin(&pk, (size_t)idlen);
		msgpack_pack_bin_body(&pk, id, (size_t)idlen);
		pack_str(&pk, "data");
		msgpack_pack_bin(&pk, size);
		msgpack_pack_bin_body(&pk, image, size);
		apply(a, SP_R_IMAGE, &sb);
	}
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6 + (idlen > 0));
	pack_str(&pk, "t");
	pack_str(&pk, "map");
	pack_str(&pk, "pid");
	msgpack_pack_uint64(&pk, PID);
	pack_str(&pk, "start");
	msgpack_pack_uint64(&pk, start);
	pack_str(&pk, "len");
	msgpack_pack_uint64(&pk, len);
	pack_str(&pk, "pgoff");
	msgpack_pack_uint64(&pk, 0);
	pack_str(&pk, "path");
	pack_str(&pk, path);
	if (idlen > 0) {
		pack_str(&pk, "build_id");
		msgpack_pack_bin(&pk, (size_t)idlen);
		msgpack_pack_bin_body(&pk, id, (size_t)idlen);
	}
	apply(a, SP_R_MAP, &sb);
}

/*
 * libdw sizes a frame's register table by the largest register number
 * its CFI names, up to 2 GiB (elfutils 0.188 cfi.c, enough_registers()),
 * so one ULEB128 in a corrupt .eh_frame makes it allocate and clear that
 * much, which libFuzzer reports as running out of memory.  That is
 * elfutils' limit, not ours.  Here libdw's reallocs of more than 256 MiB
 * fail while it interprets CFI, as they might on a small machine, and it
 * reports DWARF_E_NOMEM; nothing else is changed.
 *
 * Both definitions stand in for the real ones in this program:
 * AddressSanitizer's realloc is a weak alias of __interceptor_realloc,
 * and the unwinder's calls of dwarf_cfi_addrframe() bind to this one.
 */
#define CFI_REALLOC_MAX (256u << 20)
static bool in_cfi;

void *__interceptor_realloc(void *p, size_t n);

void *realloc(void *p, size_t n)
{
	if (in_cfi && n > CFI_REALLOC_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	return __interceptor_realloc(p, n);
}

int dwarf_cfi_addrframe(Dwarf_CFI *cache, Dwarf_Addr address, Dwarf_Frame **frame)
{
	static int (*real)(Dwarf_CFI *, Dwarf_Addr, Dwarf_Frame **);
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "dwarf_cfi_addrframe");
		check(real != NULL);
	}
	in_cfi = true;
	int rc = real(cache, address, frame);
	in_cfi = false;
	return rc;
}

struct result {
	enum sp_unwind_end end;
	size_t n;
	uint64_t used;		/* sp_unwinder_copy_used() */
	struct sp_uframe f[MAX_FRAMES];
};

/*
 * One unwind, by sp_unwind(), or with wm by sp_unwind_thread() for a
 * copy whose last shared bytes are those of the thread's previous one.
 */
static void unwind(struct sp_unwinder *u, struct sp_addrspaces *a, uint64_t ip,
		   uint64_t bp, const unsigned char *stack, size_t len, bool full,
		   struct sp_walk_memo **wm, uint64_t shared, struct result *res)
{
	/* perf's order: ax bx cx dx si di bp sp ip r8-r15. */
	uint64_t regs[17] = { 0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666, bp, SP, ip,
			      8, 9, 10, 11, 12, 13, 14, 15 };

	memset(res, 0, sizeof(*res));
	res->end = wm ? sp_unwind_thread(u, a, PID, regs, 17, stack, len, full, shared, wm,
					 res->f, MAX_FRAMES, &res->n) :
			sp_unwind(u, a, PID, regs, 17, stack, len, full, res->f, MAX_FRAMES,
				  &res->n);
	res->used = sp_unwinder_copy_used(u);
	check(res->end < SP_END_COUNT);
	check(sp_unwind_end_name(res->end) && sp_unwind_end_description(res->end));
	check(res->n >= 1 && res->n <= MAX_FRAMES);
	check(res->f[0].addr == ip && !(res->f[0].flags & SP_FRAME_RETADDR));
	check(res->end != SP_END_MAX_DEPTH || res->n == MAX_FRAMES);
	for (size_t i = 0; i < res->n; i++) {
		const struct sp_uframe *f = &res->f[i];
		const struct sp_mapping *m = sp_addrspaces_find(a, PID, f->addr);
		check((m != NULL) == (f->obj != NULL));
		if (!m) {
			/* Only the last frame lies in no mapping. */
			check(i == res->n - 1 && res->end == SP_END_NO_MAPPING);
			check(f->rel == f->addr);
			continue;
		}
		check(m->obj == f->obj);
		check(f->rel == sp_unwind_rel(u, m, f->addr));
		check(!!(f->flags & SP_FRAME_JIT) == f->obj->anon);
	}
}

static bool same(const struct result *x, const struct result *y)
{
	if (x->end != y->end || x->n != y->n || x->used != y->used)
		return false;
	for (size_t i = 0; i < x->n; i++)
		if (x->f[i].addr != y->f[i].addr || x->f[i].obj != y->f[i].obj ||
		    x->f[i].rel != y->f[i].rel || x->f[i].flags != y->f[i].flags)
			return false;
	return true;
}

/* Which of the NFD descriptors above fd are open, as a bit set. */
static uint32_t open_fds(int fd)
{
	uint32_t set = 0;
	for (int i = 0; i < NFD; i++)
		if (fcntl(fd + 1 + i, F_GETFD) != -1)
			set |= 1u << i;
	return set;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t ctl[CTL] = { 0 };
	if (size >= CTL)
		memcpy(ctl, data + size - CTL, CTL);
	size_t before = size >= CTL ? size - CTL : 0;
	size_t slen = get16(ctl + 8);
	if (slen > MAX_STACK)
		slen = MAX_STACK;
	if (slen > before)
		slen = before;
	bool full = ctl[12] & 1, fp = !(ctl[12] & 2), anon2 = ctl[12] & 4, vdso = ctl[12] & 8;
	uint64_t ip1 = BASE + get32(ctl), ip2 = (anon2 ? ANON : BASE) + get32(ctl + 4);
	uint64_t bp = SP + get16(ctl + 10);

	/* A heap copy of exactly the stack, so that reads past it are caught. */
	unsigned char *stack = malloc(slen ? slen : 1);
	check(stack != NULL);
	memcpy(stack, data + before - slen, slen);

	int fd = memfd_create("fuzz-elf-unwind", MFD_CLOEXEC);
	check(fd >= 0);
	uint32_t fds = open_fds(fd);
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, data + done, size - done);
		check(k > 0);
		done += (size_t)k;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	/* The build-id, twice the same. */
	unsigned char id[SP_BUILD_ID_MAX], id2[SP_BUILD_ID_MAX];
	int idlen = sp_build_id_fd(fd, id);
	check(idlen >= -1 && idlen <= SP_BUILD_ID_MAX);
	check(sp_build_id_fd(fd, id2) == idlen);
	check(idlen <= 0 || memcmp(id, id2, (size_t)idlen) == 0);

	struct sp_addrspaces *a = sp_addrspaces_new();
	check(a != NULL);
	if (vdso) {
		/* An image of another build-id than its own is not used. */
		static const unsigned char other[20] = { 1, 2, 3 };
		add_map(a, BASE, MODLEN, "[vdso]", idlen > 0 ? id : other,
			idlen > 0 ? idlen : (int)sizeof(other), data, size);
	} else {
		add_map(a, BASE, MODLEN, path, NULL, 0, NULL, 0);
	}
	add_map(a, ANON, ANONLEN, "//anon", NULL, 0, NULL, 0);
	/* This host's stream: a module recorded without identity is used as found. */
	struct sp_unwind_options o = { .max_depth = MAX_FRAMES, .fp_fallback = fp,
				       .this_host = !vdso };
	struct sp_unwinder *u = sp_unwinder_new(&o);
	check(u != NULL);

	struct result *r = malloc(5 * sizeof(*r));
	check(r != NULL);
	unwind(u, a, ip1, bp, stack, slen, full, NULL, 0, &r[0]);
	unwind(u, a, ip2, bp, stack, slen, !full, NULL, 0, &r[1]);
	/* Again, from the rule cache: the same frames. */
	unwind(u, a, ip1, bp, stack, slen, full, NULL, 0, &r[2]);
	check(same(&r[0], &r[2]));
	/*
	 * A thread's walks: the first keeps its steps; the second, whose copy
	 * shares every byte with the first's, may take them.  Both give the
	 * frames sp_unwind() gave and move the counters as a walk from the
	 * rule cache does.
	 */
	struct sp_walk_memo *wm = NULL;
	struct sp_unwind_stats s0, s1, s2;
	sp_unwinder_stats(u, &s0);
	unwind(u, a, ip1, bp, stack, slen, full, &wm, 0, &r[3]);
	check(same(&r[0], &r[3]));
	sp_unwinder_stats(u, &s1);
	unwind(u, a, ip1, bp, stack, slen, full, &wm, slen, &r[4]);
	check(same(&r[0], &r[4]));
	sp_unwinder_stats(u, &s2);
	check(s2.cache_hits - s1.cache_hits == s1.cache_hits - s0.cache_hits);
	check(s2.cache_misses == s1.cache_misses && s1.cache_misses == s0.cache_misses);
	check(s2.fp_frames - s1.fp_frames == s1.fp_frames - s0.fp_frames);
	check(s2.scan_frames - s1.scan_frames == s1.scan_frames - s0.scan_frames);
	sp_walk_memo_free(wm);

	struct sp_unwind_stats st;
	sp_unwinder_stats(u, &st);
	check(st.modules_opened + st.modules_missing + st.modules_mismatched <= 1);
	check(st.modules_mismatched == 0);
	/* The module is found exactly when it is ELF; the vDSO is not counted. */
	const struct sp_object *obj = r[0].f[0].obj;
	if (obj && !obj->anon)
		check(st.modules_opened == (!vdso && idlen >= 0));
	/* The vDSO has the stream's image, whatever it holds. */
	if (obj && vdso)
		check(obj->vdso && obj->image && obj->image_len == size);

	free(r);
	sp_unwinder_free(u);
	sp_addrspaces_free(a, sp_unwinder_free_object);
	check(open_fds(fd) == fds);
	close(fd);
	free(stack);
	return 0;
}

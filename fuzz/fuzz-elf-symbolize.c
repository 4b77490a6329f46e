/* SPDX-License-Identifier: MIT
 * fuzz-elf-symbolize: the input as a module file for the symbolizer:
 * sp_elfsym_open() on a memfd holding it, then sp_elfsym_lookup() with
 * lines, inline frames and demangling on, so that libdwfl and libdw read
 * corrupt symbol tables, DWARF and line programs.
 *
 * The whole input is the file; its last 16 bytes (zeros for a shorter
 * input) are also four little-endian 32-bit addresses to look up, and
 * the ELF header's entry point is looked up too.  The module is named
 * /sp-fuzz-nonexistent/module and the debug-file path is "-" (the
 * module's own directory, which does not exist), and DEBUGINFOD_URLS is
 * unset, so that no separate debug file from this host or a server is
 * ever read and runs are repeatable.
 *
 * It checks that every result is well formed (an origin from the known
 * set, readable strings, as many inline frames as it says), that a
 * second lookup returns the cached result, and that the descriptor
 * handed over is closed once the module is freed or could not be
 * opened, with no other left open.  Any broken invariant calls abort().
 * Nothing is printed on success and everything is freed.
 *
 * One leak is elfutils' own, not ours, and is hidden from LeakSanitizer
 * as narrowly as it can be (see dwarf_getscopes() below).
 */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/lsan_interface.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sym/elfsym.h"

#define NFD 16			/* descriptors above the memfd checked for leaks */

/* Keeps the reads of strings from being optimised away. */
static volatile unsigned sink;

static void check(int cond)
{
	if (!cond)
		abort();
}

static void touch(const char *s)
{
	if (s)
		sink += (unsigned)strlen(s);
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
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

/*
 * elfutils' dwarf_getscopes() (0.188, and upstream as of early 2023) leaks the
 * scope array it has allocated when the walk then fails or finds no
 * abstract origin for an inlined instance: pc_record() returns -1 when
 * DW_AT_abstract_origin does not resolve, and the array is handed out
 * only for a positive result.  Corrupt DWARF reaches that at once.
 *
 * This definition stands in for libdw's in this program (sp_elfsym's
 * calls bind to it), calls the real one, and tells LeakSanitizer to
 * ignore the blocks allocated during a call that returned no scopes and
 * are still allocated after it.  Every other allocation, ours and
 * elfutils', is checked as usual.
 */
#define MAX_TRACKED 4096
static bool tracking;
static const void *tracked[MAX_TRACKED];
static size_t ntracked;

static void on_malloc(const volatile void *p, size_t n)
{
	(void)n;
	if (tracking && ntracked < MAX_TRACKED)
		tracked[ntracked++] = (const void *)p;
}

static void on_free(const volatile void *p)
{
	if (tracking)
		for (size_t i = 0; i < ntracked; i++)
			if (tracked[i] == (const void *)p)
				tracked[i] = NULL;
}

int dwarf_getscopes(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	static int (*real)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **);
	static bool hooked;
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "dwarf_getscopes");
		check(real != NULL);
	}
	if (!hooked)
		hooked = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
	check(hooked);
	ntracked = 0;
	tracking = true;
	int rc = real(cudie, pc, scopes);
	tracking = false;
	if (rc <= 0)
		for (size_t i = 0; i < ntracked; i++)
			if (tracked[i])
				__lsan_ignore_object(tracked[i]);
	return rc;
}

static void lookup(struct sp_elfsym *e, uint64_t addr)
{
	const struct sp_symres *r = sp_elfsym_lookup(e, addr);
	check(r != NULL);
	check(!r->origin || strcmp(r->origin, "symtab") == 0 ||
	      strcmp(r->origin, "dynsym") == 0 || strcmp(r->origin, "debuginfo") == 0 ||
	      strcmp(r->origin, "gopclntab") == 0 || strcmp(r->origin, "function-start") == 0);
	check(!r->name || r->origin);
	/* A function start stands in for a name, never beside one. */
	check(!r->has_start || (!r->name && strcmp(r->origin, "function-start") == 0));
	touch(r->name);
	touch(r->file);
	check((r->ninl == 0) || r->inl != NULL);
	for (size_t i = 0; i < r->ninl; i++) {
		touch(r->inl[i].name);
		touch(r->inl[i].file);
	}
	/* The second time from the cache. */
	check(sp_elfsym_lookup(e, addr) == r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	unsetenv("DEBUGINFOD_URLS");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-elf-symbolize", MFD_CLOEXEC);
	check(fd >= 0);
	uint32_t fds = open_fds(fd);
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, data + done, size - done);
		check(k > 0);
		done += (size_t)k;
	}

	struct sp_elfsym_options o = { .debuginfo_path = "-", .inline_frames = true,
				       .lines = true, .demangle = true };
	struct sp_elfsym *e = sp_elfsym_open(fd, "/sp-fuzz-nonexistent/module", &o);
	if (e) {
		(void)sp_elfsym_has_debuginfo(e);
		if (size >= 16)
			for (int i = 0; i < 4; i++)
				lookup(e, get_le(data + size - 16 + 4 * i, 4));
		/* The entry point of a 64- or 32-bit header. */
		if (size >= 32 && data[4] == 2)
			lookup(e, get_le(data + 24, 8));
		else if (size >= 28 && data[4] == 1)
			lookup(e, get_le(data + 24, 4));
		lookup(e, 0);
		sp_elfsym_free(e);
	}
	/* The descriptor was consumed, and nothing else is left open. */
	check(fcntl(fd, F_GETFD) == -1);
	check(open_fds(fd) == fds);
	return 0;
}

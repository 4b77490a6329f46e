/* SPDX-License-Identifier: MIT
 * The vDSO in the stream (internal.h): the kernel's image is no file on
 * disk, so a consumer on another host can unwind through it and name its
 * functions only from a copy in the stream.  Each process's [vdso]
 * mapping is read from /proc/PID/mem and known by its build-id; the
 * image of each build-id is written once, as an image record queued
 * ahead of everything not yet written.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/internal.h"
#include "stream/records.h"
#include "util/alloc.h"
#include "util/modfile.h"

/* A vDSO is a few pages; a mapping larger than this is not one. */
#define VDSO_MAX_LEN (1u << 20)

/* Reads pid's memory [start, start + len) into a new buffer, or NULL. */
static void *read_mem(pid_t pid, uint64_t start, uint64_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	unsigned char *buf = malloc(len);
	size_t got = 0;
	while (buf && got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(start + got));
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got < len) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct vdso_at {
	uint64_t start, end;
	bool found;
};

static int match_vdso(const struct sp_proc_map *m, void *arg)
{
	struct vdso_at *v = arg;
	v->found = m->start == v->start && m->end == v->end && strcmp(m->path, "[vdso]") == 0;
	return v->found;
}

/*
 * Whether pid still has its [vdso] at [start, start + len) after its
 * memory there was read.  The kernel's record of the mapping is read
 * some time after the exec that made it; had the process exec'd again
 * since, the bytes read would be whatever the new program has there.
 */
static bool still_vdso(pid_t pid, uint64_t start, uint64_t len)
{
	struct vdso_at v = { start, start + len, false };
	return sp_proc_maps(pid, match_vdso, &v) == 0 && v.found;
}

/*
 * Whether pid runs an executable of sp-capture's own ELF class and
 * machine.  The kernel maps one vDSO image per ABI in a boot, so such a
 * process has the image sp-capture has; a 32-bit or x32 process has
 * another.
 */
static bool same_abi(pid_t pid, const unsigned char *own)
{
	char path[64];
	unsigned char eh[EI_NIDENT + 4];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = pread(fd, eh, sizeof(eh), 0);
	close(fd);
	/* e_ident, then e_type and e_machine: the same offsets in both classes. */
	return n == (ssize_t)sizeof(eh) && memcmp(eh, ELFMAG, SELFMAG) == 0 &&
	       eh[EI_CLASS] == own[EI_CLASS] && eh[EI_DATA] == own[EI_DATA] &&
	       memcmp(eh + EI_NIDENT + 2, own + EI_NIDENT + 2, 2) == 0;
}

/*
 * sp-capture's own vDSO in place of pid's, when pid's memory could not be
 * read: only for a process of the same ABI whose mapping has the size of
 * sp-capture's, which then holds the same image.  A new buffer, or NULL.
 */
static void *own_image(pid_t pid, uint64_t len, size_t *size)
{
	long page = sysconf(_SC_PAGESIZE);
	const void *own = sp_vdso_image(size);
	if (!own || page <= 0 || (*size + (size_t)page - 1) / (size_t)page * (size_t)page != len ||
	    !same_abi(pid, own))
		return NULL;
	void *copy = malloc(*size);
	if (copy)
		memcpy(copy, own, *size);
	return copy;
}

/* Whether the image of this build-id was already given to the stream; notes it if not. */
static bool image_seen(struct sp_capture *r, const unsigned char *bid, int len)
{
	for (size_t i = 0; i < r->nimages; i++)
		if (r->images[i].len == len && memcmp(r->images[i].id, bid, (size_t)len) == 0)
			return true;
	if (SP_ALLOC_GROW(r->images, r->nimages + 1, r->allocimages) == 0) {
		struct sp_rec_image *im = &r->images[r->nimages++];
		im->len = len;
		memcpy(im->id, bid, (size_t)len);
	}
	return false;
}

/* An image as queued, followed by its bytes. */
struct q_image {
	int bidlen;
	unsigned char bid[SP_BUILD_ID_MAX];
	size_t len;
};

/*
 * The image belongs to no one process (every process of its ABI maps
 * it), and it goes out ahead of records of earlier times and of the
 * process records it may precede: it is written without pid and time.
 */
static void queue_image(struct sp_capture *r, const unsigned char *bid, int bidlen,
			const void *data, size_t len)
{
	struct q_image q = { .bidlen = bidlen, .len = len };
	memcpy(q.bid, bid, (size_t)bidlen);
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &q, sizeof(q));
	sp_rec_q_add(r, data, len);
	sp_rec_q_end(r, SP_REC_IMAGE, 0, s);
}

void sp_rec_write_image(struct sp_capture *r, const unsigned char *p)
{
	struct q_image q;
	memcpy(&q, p, sizeof(q));
	struct sp_image_rec im = {
		.path = "[vdso]", .build_id = q.bid, .build_id_len = q.bidlen,
		.data = p + sizeof(q), .len = q.len,
	};
	sp_write_image(r->w, &im);
}

int sp_rec_vdso_identify(struct sp_capture *r, pid_t pid, uint64_t start, uint64_t len,
			 unsigned char *bid)
{
	if (len == 0 || len > VDSO_MAX_LEN)
		return 0;
	void *buf = read_mem(pid, start, len);
	size_t n = len;
	if (buf && !still_vdso(pid, start, len)) {
		free(buf);
		r->errors[SP_E_BUILD_ID_UNREADABLE]++;
		return 0;
	}
	if (!buf)
		buf = own_image(pid, len, &n);
	/* libelf may convert a copy in place: the build-id is read from another. */
	void *probe = buf ? malloc(n) : NULL;
	int bidlen = probe ? sp_build_id_mem(memcpy(probe, buf, n), n, bid) : -1;
	free(probe);
	if (bidlen <= 0) {
		free(buf);
		r->errors[SP_E_BUILD_ID_UNREADABLE]++;
		return 0;
	}
	if (!image_seen(r, bid, bidlen))
		queue_image(r, bid, bidlen, buf, n);
	free(buf);
	return bidlen;
}

int sp_rec_vdso_own(struct sp_capture *r, const unsigned char *bid, int bidlen,
		    unsigned char *out)
{
	size_t n;
	const void *own = sp_vdso_image(&n);
	unsigned char id[SP_BUILD_ID_MAX];
	void *copy = own ? malloc(n) : NULL;
	if (!copy)
		return 0;
	/* libelf may convert a copy in place. */
	int len = sp_build_id_mem(memcpy(copy, own, n), n, id);
	free(copy);
	if (len <= 0 || (bid && (len != bidlen || memcmp(id, bid, (size_t)len) != 0)))
		return 0;
	if (!image_seen(r, id, len))
		queue_image(r, id, len, own, n);
	memcpy(out, id, (size_t)len);
	return len;
}

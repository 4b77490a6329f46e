/* SPDX-License-Identifier: MIT
 * The jitdump reader: the file format JIT compilers write for `perf
 * inject --jit` (the Linux kernel's
 * tools/perf/Documentation/jitdump-specification.txt).  A file is a
 * header, then records, each with an id, a total size and a timestamp;
 * the writer's byte order throughout, which the header's magic tells.
 *
 * The reader is incremental: it is fed the file's bytes in pieces, in
 * order, from offset 0 (as sp-capture reads a growing file, or as a
 * stream's jitdump records carry it), returns each whole record as
 * soon as its last byte is there, and keeps the rest for the next feed.
 * A record with an unknown id is returned with only its header read
 * (SP_JIT_UNKNOWN), so a newer writer's records are skipped by their
 * size.  A header or record whose sizes do not add up stops the reader
 * for good with an error naming the file offset: after a bad size the
 * next record's start is unknown.
 */
#ifndef SP_STREAM_JITDUMP_H
#define SP_STREAM_JITDUMP_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_jitdump;

/* The header's magic, 'JiTD', as a number in the writer's byte order. */
#define SP_JITDUMP_MAGIC 0x4A695444u
/* The bytes of the header this reader knows; total_size may be more. */
#define SP_JITDUMP_HEADER_SIZE 40
/* The largest record (or header) accepted, so a bad size cannot make the reader wait forever. */
#define SP_JITDUMP_MAX_RECORD (256u << 20)
/* Header flag: timestamps are the architecture's cycle counter, not a clock. */
#define SP_JITDUMP_FLAG_ARCH_TIMESTAMP 1u

struct sp_jitdump_header {
	uint32_t version, total_size, elf_mach, pid;
	uint64_t timestamp, flags;
	int swapped;		/* the writer's byte order is not this host's */
};

enum sp_jit_type {
	SP_JIT_CODE_LOAD = 0,
	SP_JIT_CODE_MOVE = 1,
	SP_JIT_CODE_DEBUG_INFO = 2,
	SP_JIT_CODE_CLOSE = 3,
	SP_JIT_CODE_UNWINDING_INFO = 4,
	SP_JIT_UNKNOWN = -1,	/* any other id: see sp_jit_rec.id */
};

/* One line-table entry of a debug-info record. */
struct sp_jit_line {
	uint64_t addr;
	uint32_t line, discrim;
	const char *file;	/* not NUL-terminated in general: filelen bytes */
	size_t filelen;
};

/*
 * A record.  Pointers point into the reader's buffer and stay valid
 * until the next call of sp_jitdump_feed() or sp_jitdump_next().
 */
struct sp_jit_rec {
	enum sp_jit_type type;
	uint32_t id, size;	/* as in the file */
	uint64_t off;		/* the file offset of the record */
	uint64_t timestamp;
	union {
		struct {
			uint32_t pid, tid;
			uint64_t vma, code_addr, code_size, code_index;
			const char *name;	/* namelen bytes, NUL after them */
			size_t namelen;
			const unsigned char *code;	/* code_size bytes */
		} load;
		struct {
			uint32_t pid, tid;
			uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
		} move;
		struct {
			uint64_t code_addr;
			const struct sp_jit_line *lines;	/* nlines, in file order */
			size_t nlines;
		} debug;
		struct {
			/*
			 * data holds unwinding_size bytes: an .eh_frame
			 * (unwinding_size - eh_frame_hdr_size bytes), then
			 * its .eh_frame_hdr.  It applies to the next code
			 * load.  mapped_size: the part the process mapped
			 * beside the code (0: none).
			 */
			uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;
			const unsigned char *data;
		} unwind;
	} u;
};

/* A new reader, or NULL when memory ran out. */
struct sp_jitdump *sp_jitdump_new(void);
void sp_jitdump_free(struct sp_jitdump *j);

/*
 * Appends the next n bytes of the file.  Returns 0, or -1 when memory ran
 * out or the reader already failed (sp_jitdump_error()).
 */
int sp_jitdump_feed(struct sp_jitdump *j, const void *data, size_t n);

/*
 * The next whole record: returns 1 and fills *r, 0 when the bytes fed so
 * far end before the next record does (feed more), -1 on an error (the
 * reader stays failed).  The header is read before the first record.
 */
int sp_jitdump_next(struct sp_jitdump *j, struct sp_jit_rec *r);

/* The header, or NULL before it has been read. */
const struct sp_jitdump_header *sp_jitdump_header(const struct sp_jitdump *j);

/* The bytes fed so far: the offset the next fed byte has in the file. */
uint64_t sp_jitdump_fed(const struct sp_jitdump *j);

/* The file offset of the first byte not yet returned as part of a record. */
uint64_t sp_jitdump_offset(const struct sp_jitdump *j);

/* The message of the error that stopped the reader. */
const char *sp_jitdump_error(const struct sp_jitdump *j);

/* Whether the reader has stopped on an error. */
int sp_jitdump_failed(const struct sp_jitdump *j);

/*
 * The jitdump files of one process as a stream's jitdump records carry
 * them (format/sp-stream.md): one reader per path, fed each record's
 * bytes that are new, in order.
 */
struct sp_jitdump_file {
	char *path;
	struct sp_jitdump *rd;
};

struct sp_jitdump_files {
	struct sp_jitdump_file *v;
	size_t n, alloc;
};

/* A jitdump record's keys; the pointers point into the record. */
struct sp_jitdump_piece {
	uint64_t pid, off;
	const char *path;
	size_t pathlen;
	const void *data;
	size_t len;
};

/* Reads a jitdump record; false when it lacks a key or has a bad one. */
bool sp_jitdump_piece_read(const msgpack_object *rec, struct sp_jitdump_piece *pc);

/*
 * Feeds the bytes of pc that are new to the reader of its path, made on
 * the path's first piece.  Returns 1 with *f set when bytes were fed
 * (sp_jitdump_next() then gives the records they complete); 0 when none
 * were (bytes seen before, or the reader stopped); 2 with *f set when
 * the piece starts after the bytes fed so far: the bytes in between are
 * missing, so the reader stops, with an error that says which; -1 when
 * memory runs out.
 */
int sp_jitdump_files_feed(struct sp_jitdump_files *fs, const struct sp_jitdump_piece *pc,
			  struct sp_jitdump_file **f);

/* Frees the files' readers and paths; fs is empty again. */
void sp_jitdump_files_release(struct sp_jitdump_files *fs);

#endif

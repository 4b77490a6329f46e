/* SPDX-License-Identifier: MIT
 * The stackpulse stream: a reader and a writer for the sequence of
 * MessagePack maps described in format/sp-stream.md.
 *
 * This is the core layer: nothing here prints or exits.  Every function
 * returns a status and keeps a message on its handle.
 */
#ifndef SP_STREAM_H
#define SP_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <msgpack.h>

#include "stream/record.h"

/* The format this code reads and writes. */
#define SP_FORMAT_NAME "stackpulse"
#define SP_FORMAT_MAJOR 1
#define SP_FORMAT_MINOR 6

/* Default limits of a reader (both configurable). */
#define SP_DEFAULT_MAX_RECORD (1u << 20)	/* bytes in one record */
#define SP_MAX_DEPTH 16				/* nesting of one record */

struct sp_reader;
struct sp_writer;
struct sp_rawpair;

/*
 * One record as the reader hands it out.  Everything it points to stays
 * valid until the next call of sp_reader_next() or sp_reader_free().
 */
struct sp_record {
	enum sp_rtype type;	/* SP_R_UNKNOWN for a type this code does not know */
	const char *type_name;	/* the value of the "t" key, not terminated */
	size_t type_len;
	const msgpack_object *map;	/* the whole record */
	const char *raw;	/* its exact bytes, for passing it through */
	size_t raw_len;
	/* A record read undecoded (sp_reader_undecoded()): its pairs, else NULL. */
	const struct sp_rawpair *pairs;
	uint32_t npairs;
	uint64_t offset;	/* byte offset of the record in the input */
	uint64_t index;		/* 0-based record index in the input */
};

/* What sp_reader_next() returns. */
enum sp_read_status {
	SP_READ_RECORD = 1,	/* *rec holds the next record */
	SP_READ_END = 0,	/* clean end of input at a record boundary */
	SP_READ_ERROR = -1,	/* bad input or I/O error; see sp_reader_error() */
};

/*
 * Opens a reader on fd, which the reader does not close.  name is how
 * messages refer to the input ("-" or a file name) and is copied.
 * Returns NULL only when memory runs out.
 */
struct sp_reader *sp_reader_new(int fd, const char *name);

/* Frees the reader and everything it handed out. */
void sp_reader_free(struct sp_reader *r);

/* The largest record accepted (default SP_DEFAULT_MAX_RECORD). */
void sp_reader_set_max_record(struct sp_reader *r, size_t bytes);

/*
 * Records of the types in the mask (1 << SP_R_...) are framed, checked to
 * be whole MessagePack, and given with their type and raw bytes but not
 * decoded nor checked against the schema: rec->map is NULL.  For a stage
 * that passes them on untouched; the stage that reads them checks them.
 * Headers and summaries are always decoded.
 */
void sp_reader_pass_through(struct sp_reader *r, uint64_t types);

/*
 * Records of the types in the mask are checked against the schema from
 * their bytes but not decoded: rec->map is NULL, and rec->pairs holds
 * their keys and values (stream/rawmap.h) until the next read.  One that
 * is not plainly valid, or has many keys, is decoded as usual, so that a
 * fault is told as any other record's: rec->map is then set and
 * rec->pairs NULL.  Headers and summaries are always decoded.
 */
void sp_reader_undecoded(struct sp_reader *r, uint64_t types);

/*
 * Follow mode: at the end of the input, wait for more to be written
 * instead of ending.  The wait ends (as a clean end or, in the middle
 * of a record, as a truncation) when *stop becomes nonzero; stop may be
 * NULL.  poll_ms is how often a regular file is checked for growth.
 */
void sp_reader_set_follow(struct sp_reader *r, volatile int *stop, int poll_ms);

/*
 * Called when the reader is about to wait for input that is not there
 * yet: a pipe with nothing in it, or a followed file at its end.  A tool
 * flushes its output there, so what it has made from the records read
 * so far leaves it while its input is idle, and a file read at full
 * speed pays nothing for it.
 */
void sp_reader_set_idle(struct sp_reader *r, void (*idle)(void *arg), void *arg);

/*
 * Follows the file at path while it is being written (format/sp-stream.md,
 * "Following a file being written"); the reader opens it itself, and it
 * need not exist yet: the reader waits for it to appear.  When the path
 * is replaced by another file (a new inode, the file shrinking, or its
 * first bytes rewritten), the reader drops what it had not yet handed out
 * and starts over on the new file with a new segment, so records of two
 * recordings never meet in one segment.  A file that nobody writes when it
 * is first opened is a finished recording: it is read only if it is not
 * replaced within SP_FOLLOW_GRACE_MS.  The input ends (SP_READ_END) after
 * a summary record, when no process writes the file any more (checked
 * after SP_FOLLOW_GONE_MS without growth), or when *stop becomes nonzero.
 * note, if not NULL, is given each such event as one line for the user
 * (it must not call the reader).  Returns NULL only when memory runs out.
 */
#define SP_FOLLOW_GRACE_MS 3000
#define SP_FOLLOW_GONE_MS 1000
struct sp_reader *sp_reader_follow(const char *path, volatile int *stop,
				   void (*note)(void *arg, const char *msg), void *arg);

/*
 * Reads the next record into *rec.  A header record is checked
 * (format name, major version, stage) and starts a new segment.
 * A record of a known type is checked for its required keys.
 * After SP_READ_ERROR the reader stays in the error state: the stream
 * cannot be resynchronised, since MessagePack has no markers.
 */
enum sp_read_status sp_reader_next(struct sp_reader *r, struct sp_record *rec);

/*
 * The message of the last error: "byte offset N, record M: ...".
 * Valid until the reader is freed.
 */
const char *sp_reader_error(const struct sp_reader *r);

/* Whether the reader is in the error state (sp_reader_error() says why). */
bool sp_reader_failed(const struct sp_reader *r);

/* Byte offset of the next unread byte and the number of records read. */
uint64_t sp_reader_offset(const struct sp_reader *r);
uint64_t sp_reader_records(const struct sp_reader *r);

/*
 * Copies up to n of the input's first bytes into buf, while the reader
 * still holds them (always before its first record is handed out, so a
 * tool can say what an input it could not read looks like).  Returns
 * how many, 0 once they are gone.
 */
size_t sp_reader_head(const struct sp_reader *r, unsigned char *buf, size_t n);

/*
 * The header of the current segment (NULL before the first one) and its
 * stage.  The header stays valid until the next header is read.
 */
const struct sp_header *sp_reader_header(const struct sp_reader *r);

/* Whether the last segment read ended with a summary record. */
bool sp_reader_saw_summary(const struct sp_reader *r);

/*
 * Checks bytes for one complete, well-formed MessagePack object of at
 * most max_depth nesting.  Returns its length; 0 when more bytes are
 * needed; -1 when the bytes cannot start a valid object (*why says why,
 * a static string).  Needs no memory: a declared element count larger
 * than the bytes that follow is simply incomplete.
 */
long sp_msgpack_frame(const unsigned char *p, size_t len, int max_depth,
		      const char **why);

/*
 * The length of a short map whose keys and values are all short strings,
 * integers, booleans or nil (most records after unwinding), as
 * sp_msgpack_frame() finds it, read at once; 0 for any other map, any
 * other object and one cut short.
 */
size_t sp_msgpack_frame_flat(const unsigned char *p, size_t len);

/*
 * A buffered writer on fd (not closed by the writer).  Output is written
 * when the buffer fills and on sp_writer_flush().  name is used in
 * messages.  Returns NULL only when memory runs out.
 */
struct sp_writer *sp_writer_new(int fd, const char *name);

/* Ends the output (sp_writer_end()), then frees; returns its status. */
int sp_writer_close(struct sp_writer *w);

/*
 * Compresses everything written from now on into zstd frames at level
 * (format/sp-stream.md, "Compressed streams"), before the first byte is
 * written.  Each sp_writer_flush() ends a zstd block, so a reader
 * decompresses every record flushed at once; sp_writer_end() ends the
 * frame.  Returns 0, or -1 with a message in sp_writer_error() (a level
 * libzstd refuses, or bytes already written); the writer stays usable,
 * uncompressed.
 */
int sp_writer_compress(struct sp_writer *w, int level);

/*
 * Flushes, and when compressing ends the zstd frame: the output is
 * complete.  Returns what sp_writer_flush() does.  Bytes written after
 * it begin a new frame.
 */
int sp_writer_end(struct sp_writer *w);

/*
 * The msgpack packer that appends to the writer's buffer.  A write error
 * while packing is remembered and returned by the next flush.
 */
msgpack_packer *sp_writer_packer(struct sp_writer *w);

/* Appends bytes exactly as given (a record passed through). */
int sp_writer_raw(struct sp_writer *w, const void *p, size_t len);

/*
 * Writes out everything buffered.  Returns 0, or -1 with errno set
 * (EPIPE, ENOSPC, ...) and a message in sp_writer_error().  After an
 * error every later call fails the same way.
 */
int sp_writer_flush(struct sp_writer *w);
const char *sp_writer_error(const struct sp_writer *w);

/* Whether a write has failed (the error is sticky). */
bool sp_writer_failed(const struct sp_writer *w);

/* Bytes accepted so far (written or buffered). */
uint64_t sp_writer_bytes(const struct sp_writer *w);

/* Packs a C string (a key, or a string value). */
void sp_pack_key(msgpack_packer *pk, const char *key);
void sp_pack_str(msgpack_packer *pk, const char *s);

/*
 * A record map that counts its own keys, so no packer counts them by
 * hand:
 *
 *	struct sp_mapw m;
 *	sp_mapw_begin(&m, w);
 *	sp_mapw_str(&m, "t", "sample");
 *	sp_mapw_u64(&m, "pid", pid);
 *	if (have_regs)
 *		pack_regs(sp_mapw_key(&m, "regs"));	(any one value)
 *	sp_mapw_end(&m);
 *
 * The map's bytes stay in the writer's buffer until sp_mapw_end() puts
 * the smallest header for the count in front of them, so the output is
 * byte for byte what msgpack_pack_map() with the right count gives.
 * Maps nest (a value may be a map written with its own sp_mapw on the
 * same writer); every begin needs its end, last opened first ended, and
 * nothing else may write to w meanwhile except through the packer.
 */
struct sp_mapw {
	struct sp_writer *w;
	size_t start;		/* offset of the header's room in the buffer */
	uint32_t n;		/* keys so far */
};

void sp_mapw_begin(struct sp_mapw *m, struct sp_writer *w);

/* Counts one key and packs it; the caller packs its value with the packer returned. */
msgpack_packer *sp_mapw_key(struct sp_mapw *m, const char *key);

/* Copies one key and its value of a record read (a record passed through in part). */
void sp_mapw_kv(struct sp_mapw *m, const msgpack_object_kv *kv);

/* Copies one key and its value as the len bytes at pair encode them. */
void sp_mapw_raw(struct sp_mapw *m, const void *pair, size_t len);

/* A key of kn bytes and an unsigned integer, in their shortest forms. */
void sp_mapw_u64n(struct sp_mapw *m, const char *key, size_t kn, uint64_t v);
static inline void sp_mapw_u64(struct sp_mapw *m, const char *key, uint64_t v)
{
	sp_mapw_u64n(m, key, __builtin_strlen(key), v);	/* known when key is a literal */
}
void sp_mapw_i64(struct sp_mapw *m, const char *key, int64_t v);
/* A key of kn bytes and a string of sn bytes. */
void sp_mapw_strkn(struct sp_mapw *m, const char *key, size_t kn, const char *s, size_t sn);
static inline void sp_mapw_str(struct sp_mapw *m, const char *key, const char *s)
{
	sp_mapw_strkn(m, key, __builtin_strlen(key), s, __builtin_strlen(s));
}
void sp_mapw_strn(struct sp_mapw *m, const char *key, const char *s, size_t n);
void sp_mapw_bin(struct sp_mapw *m, const char *key, const void *p, size_t n);
void sp_mapw_bool(struct sp_mapw *m, const char *key, bool v);

/* Writes the header.  Returns 0, or -1 after a write error (sp_writer_error()). */
int sp_mapw_end(struct sp_mapw *m);

#endif

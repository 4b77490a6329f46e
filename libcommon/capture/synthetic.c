/* SPDX-License-Identifier: MIT
 * Synthesized records (internal.h): what a process already was when
 * the recording began, read from /proc (process, thread and map records,
 * as perf's synthetic events), and the records both this path and the
 * kernel's side-band records write: map, runtime and archive.  Build-ids
 * of mapped files are read once per (device, inode).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/internal.h"
#include "stream/records.h"
#include "util/procns.h"

/* Whether a mapping's path names a file (not //anon, [vdso], ...). */
bool sp_rec_is_file_path(const char *path)
{
	return path[0] == '/' && strncmp(path, "//anon", 6) != 0 &&
	       strncmp(path, "/memfd:", 7) != 0 && strncmp(path, "/dev/zero", 9) != 0 &&
	       !sp_rec_is_jitdump_path(path);
}

int sp_rec_bid_cmp(const struct sp_hashmap_entry *a, const struct sp_hashmap_entry *b,
		   const void *keydata)
{
	(void)keydata;
	const struct sp_rec_bid *x = sp_container_of(a, struct sp_rec_bid, e);
	const struct sp_rec_bid *y = sp_container_of(b, struct sp_rec_bid, e);
	return x->dev != y->dev || x->ino != y->ino;
}

void sp_rec_proc_ns(struct sp_capture *r, pid_t pid, uint32_t *nspid, uint64_t *mntns)
{
	struct sp_proc_ns ns;
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, true);
	if (sp_proc_ns_get(pid, &ns) < 0 && errno == EACCES)
		r->errors[SP_E_PROC_UNREADABLE]++;
	if (ns.mntns) {
		int fd = sp_proc_open_in_root(pid, "/", O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			r->errors[SP_E_PROC_UNREADABLE]++;
		else
			close(fd);
	}
	if (p) {
		p->own_root = ns.mntns != 0;
		p->nspid = ns.nspid;
	}
	if (nspid)
		*nspid = ns.nspid;
	if (mntns)
		*mntns = ns.mntns;
}

/* The build-id of path inside pid's root; -1 when unreadable. */
static int build_id_in_root(pid_t pid, const char *path, unsigned char *id)
{
	int fd = sp_proc_open_in_root(pid, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	int n = sp_build_id_fd(fd, id);
	close(fd);
	return n;
}

/*
 * The build-id of a mapped file (alt: another path to it, or NULL) into
 * id; its length, 0 for none, -1 when unreadable.  Files with an inode
 * are remembered, 4096 at most.
 */
int sp_rec_build_id(struct sp_capture *r, pid_t pid, const char *path, const char *alt,
		    uint64_t dev, uint64_t ino, unsigned char *id)
{
	struct sp_rec_bid key = { .dev = dev, .ino = ino };
	uint64_t k[2] = { dev, ino };
	key.e.hash = sp_hash_bytes(k, sizeof(k));
	struct sp_hashmap_entry *e = ino ? sp_hashmap_get(&r->bids, &key.e, NULL) : NULL;
	if (e) {
		const struct sp_rec_bid *b = sp_container_of(e, struct sp_rec_bid, e);
		memcpy(id, b->id, (size_t)(b->len > 0 ? b->len : 0));
		return b->len;
	}
	const struct sp_rec_proc *p = sp_rec_proc_get(r, pid, false);
	int n;
	if (p && p->own_root) {
		/* The host's file at that path, if any, is another file. */
		n = alt ? sp_build_id_path(alt, id) : -1;
		if (n < 0)
			n = build_id_in_root(pid, path, id);
	} else {
		n = sp_build_id_path(path, id);
		if (n < 0 && alt)
			n = sp_build_id_path(alt, id);
	}
	if (n < 0)
		r->errors[SP_E_BUILD_ID_UNREADABLE]++;
	struct sp_rec_bid *b;
	if (ino != 0 && r->bids.count < 4096 && (b = malloc(sizeof(*b)))) {
		*b = key;
		b->len = n;
		if (n > 0)
			memcpy(b->id, id, (size_t)n);
		if (sp_hashmap_add(&r->bids, &b->e) < 0)
			free(b);
	}
	return n;
}

/* The records as queued.  Strings follow the struct, in field order. */

struct q_runtime {
	pid_t pid;
	uint64_t time;
	bool cpython;
	const char *via;	/* a string constant */
};

struct q_map {
	pid_t pid, tid;
	uint64_t time, start, len, pgoff;
	bool have_dev, deleted, have_cid;
	unsigned maj, min;
	uint64_t ino;
	int prot, flags;
	int bidlen;
	unsigned char bid[SP_BUILD_ID_MAX], cid[20];
	size_t pathlen;		/* then the path */
};

struct q_archive {
	uint64_t time, start_time;
	const char *kind;	/* a string constant */
	pid_t pid;
	bool content, debug, have_path;
	int idlen;
	unsigned char id[SP_BUILD_ID_MAX];
	size_t filelen, pathlen;	/* then the file and the path */
};

struct q_process {
	pid_t pid, ppid;
	uid_t uid;
	uint64_t start_time, time;
	char comm[64];
	bool have_exe, kthread;
	uint32_t nspid;
	uint64_t mntns;
	size_t exelen, cmdlen;	/* then the exe and the NUL-separated arguments */
};

struct q_thread {
	pid_t pid, tid;
	uint64_t time;
	bool have_comm;
	char comm[64];
};

void sp_rec_queue_runtime(struct sp_capture *r, pid_t pid, uint64_t time,
			  bool cpython, const char *via)
{
	struct q_runtime q = { pid, time, cpython, via };
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &q, sizeof(q));
	sp_rec_q_end(r, SP_REC_RUNTIME, time, s);
}

/* Updates a process's CPython status from a newly mapped file. */
void sp_rec_note_mapping_runtime(struct sp_capture *r, pid_t pid, const char *path,
				 uint64_t time)
{
	const char *via;
	struct sp_rec_proc *p = sp_rec_proc_get(r, pid, true);
	if (p && !p->cpython && sp_path_is_cpython(path, &via)) {
		p->cpython = true;
		sp_rec_queue_runtime(r, pid, time, true, via);
	}
}

void sp_rec_queue_map(struct sp_capture *r, const struct sp_rec_map *m)
{
	struct q_map q = {
		.pid = m->pid, .tid = m->tid, .time = m->time, .start = m->start,
		.len = m->len, .pgoff = m->pgoff, .have_dev = m->have_dev,
		.deleted = m->deleted, .have_cid = m->content_id != NULL, .maj = m->maj,
		.min = m->min, .ino = m->ino, .prot = m->prot, .flags = m->flags,
		.bidlen = m->build_id_len > 0 ? m->build_id_len : 0,
		.pathlen = strlen(m->path),
	};
	memcpy(q.bid, m->build_id, (size_t)q.bidlen);
	if (m->content_id)
		memcpy(q.cid, m->content_id, sizeof(q.cid));
	/* An imported recording's processes are not ours: nothing is read from them. */
	if (!q.bidlen && !r->imported && strcmp(m->path, "[vdso]") == 0)
		q.bidlen = sp_rec_vdso_identify(r, m->pid, m->start, m->len, q.bid);
	else if (q.bidlen && r->o.on_module && sp_rec_is_file_path(m->path))
		r->o.on_module(r->o.on_module_arg, m->pid, m->start, m->start + m->len, m->path,
			       m->deleted, q.bid, q.bidlen);
	if (!r->imported)
		sp_rec_jitdump_note(r, m->pid, m->start, m->len, m->path, m->time);
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &q, sizeof(q));
	sp_rec_q_add(r, m->path, q.pathlen);
	sp_rec_q_end(r, SP_REC_MAP, m->time, s);
}

void sp_rec_queue_archive(struct sp_capture *r, const struct sp_rec_archive *a)
{
	struct q_archive q = {
		.time = a->time, .start_time = a->start_time, .kind = a->kind, .pid = a->pid,
		.content = a->content, .debug = a->debug, .have_path = a->path != NULL,
		.idlen = a->idlen > 0 ? a->idlen : 0, .filelen = strlen(a->file),
		.pathlen = a->path ? strlen(a->path) : 0,
	};
	if (q.idlen)	/* a->id may be NULL when there is no identity */
		memcpy(q.id, a->id, (size_t)q.idlen);
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &q, sizeof(q));
	sp_rec_q_add(r, a->file, q.filelen);
	sp_rec_q_add(r, a->path, q.pathlen);
	sp_rec_q_end(r, SP_REC_ARCHIVE, a->time, s);
}

/*
 * With --archive: the identity of a mapped file without a build-id (its
 * content, into cid), and the file itself kept once in the archive.
 */
void sp_rec_archive_map(struct sp_capture *r, pid_t pid, uint64_t time, uint64_t start,
			uint64_t end, const char *path, const unsigned char *bid, int bidlen,
			unsigned char *cid, bool *have_cid)
{
	*have_cid = false;
	if (!r->o.archive || !sp_rec_is_file_path(path))
		return;
	if (bidlen <= 0) {
		if (sp_archive_content_id(pid, start, end, path, cid) < 0) {
			r->errors[SP_E_ARCHIVE_FAILED]++;
			return;
		}
		*have_cid = true;
	}
	char rel[512];
	bool debug;
	const unsigned char *id = *have_cid ? cid : bid;
	int idlen = *have_cid ? 20 : bidlen;
	int rc = sp_archive_module(r->o.archive, pid, start, end, path, id, idlen, *have_cid,
				   rel, sizeof(rel), &debug);
	if (rc < 0)
		r->errors[SP_E_ARCHIVE_FAILED]++;
	else if (rc > 0)
		sp_rec_queue_archive(r, &(struct sp_rec_archive){
			.time = time, .kind = "module", .file = rel, .path = path, .id = id,
			.idlen = idlen, .content = *have_cid, .debug = debug,
		});
}

/* State synthesized from /proc at attach. */

void sp_rec_synth_process(struct sp_capture *r, pid_t pid, const struct sp_proc_stat *st,
			  uint64_t time)
{
	char exe[4096], cmd[8192];
	struct q_process q = {
		.pid = pid, .ppid = st->ppid, .uid = st->uid, .start_time = st->start_ns,
		.time = time, .kthread = st->kthread,
	};
	snprintf(q.comm, sizeof(q.comm), "%s", st->comm);
	sp_rec_proc_ns(r, pid, &q.nspid, &q.mntns);
	q.have_exe = sp_proc_exe(pid, exe, sizeof(exe)) == 0;
	if (q.have_exe) {
		sp_path_strip_deleted(exe);
		q.exelen = strlen(exe);
	}
	ssize_t cl = sp_proc_cmdline(pid, cmd, sizeof(cmd));
	q.cmdlen = cl > 0 ? (size_t)cl : 0;
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &q, sizeof(q));
	sp_rec_q_add(r, exe, q.exelen);
	sp_rec_q_add(r, cmd, q.cmdlen);
	sp_rec_q_end(r, SP_REC_PROCESS, time, s);
}

void sp_rec_synth_thread(struct sp_capture *r, pid_t pid, pid_t tid, uint64_t time)
{
	struct q_thread q = { .pid = pid, .tid = tid, .time = time };
	q.have_comm = sp_proc_thread_comm(pid, tid, q.comm, sizeof(q.comm)) == 0;
	size_t s = sp_rec_q_begin(r);
	sp_rec_q_add(r, &q, sizeof(q));
	sp_rec_q_end(r, SP_REC_THREAD, time, s);
	sp_rec_tid_note(r, tid);
}

struct synth_ctx {
	struct sp_capture *r;
	pid_t pid;
	uint64_t time;
	const char *via;	/* why the process is CPython, or NULL */
};

static int synth_map(const struct sp_proc_map *m, void *arg)
{
	struct synth_ctx *c = arg;
	if (!(m->prot & PROT_EXEC))
		return 0;
	char path[4096], alt[128];
	unsigned char bid[SP_BUILD_ID_MAX];
	int bidlen = 0;
	snprintf(path, sizeof(path), "%s", m->path[0] ? m->path : "//anon");
	if (sp_rec_is_file_path(path)) {
		/* A deleted or replaced file is still readable via map_files. */
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)c->pid, m->start, m->end);
		bidlen = sp_rec_build_id(c->r, c->pid, m->deleted ? alt : path, alt,
					 (uint64_t)m->maj << 32 | m->min, m->ino, bid);
	}
	unsigned char cid[20];
	bool have_cid;
	sp_rec_archive_map(c->r, c->pid, c->time, m->start, m->end, path, bid, bidlen, cid,
			   &have_cid);
	sp_rec_queue_map(c->r, &(struct sp_rec_map){
		.pid = c->pid, .time = c->time, .start = m->start, .len = m->end - m->start,
		.pgoff = m->pgoff, .path = path, .have_dev = true, .maj = m->maj, .min = m->min,
		.ino = m->ino, .prot = m->prot, .flags = m->shared ? MAP_SHARED : MAP_PRIVATE,
		.build_id = bid, .build_id_len = bidlen, .content_id = have_cid ? cid : NULL,
		.deleted = m->deleted,
	});
	const char *via;
	if (!c->via && sp_path_is_cpython(path, &via))
		c->via = via;
	return 0;
}

const char *sp_rec_synth_maps(struct sp_capture *r, pid_t pid, uint64_t time)
{
	char exe[4096];
	struct synth_ctx c = { r, pid, time, NULL };
	if (sp_proc_exe(pid, exe, sizeof(exe)) < 0 || !sp_path_is_cpython(exe, &c.via))
		c.via = NULL;
	if (sp_proc_maps(pid, synth_map, &c) < 0)
		r->errors[SP_E_PROC_UNREADABLE]++;
	return c.via;
}

/* Writes a queued map, runtime, archive, process or thread record. */
void sp_rec_write_synth(struct sp_capture *r, enum sp_rec_kind kind, const unsigned char *p)
{
	if (kind == SP_REC_RUNTIME) {
		struct q_runtime q;
		memcpy(&q, p, sizeof(q));
		struct sp_runtime_rec rt = { (uint32_t)q.pid, q.time, q.cpython, q.via };
		sp_write_runtime(r->w, &rt);
	} else if (kind == SP_REC_MAP) {
		struct q_map q;
		memcpy(&q, p, sizeof(q));
		struct sp_map_rec m = {
			.pid = (uint32_t)q.pid, .tid = (uint32_t)q.tid, .time = q.time,
			.start = q.start, .len = q.len, .pgoff = q.pgoff,
			.path = (const char *)p + sizeof(q), .pathlen = q.pathlen,
			.have_dev = q.have_dev, .maj = q.maj, .min = q.min, .ino = q.ino,
			.prot = q.prot, .flags = q.flags,
			.build_id = q.bid, .build_id_len = q.bidlen,
			.content_id = q.have_cid ? q.cid : NULL, .deleted = q.deleted,
		};
		sp_write_map(r->w, &m);
	} else if (kind == SP_REC_ARCHIVE) {
		struct q_archive q;
		memcpy(&q, p, sizeof(q));
		const char *file = (const char *)p + sizeof(q);
		struct sp_archive_rec a = {
			.kind = q.kind, .file = file, .filelen = q.filelen,
			.path = q.have_path ? file + q.filelen : NULL, .pathlen = q.pathlen,
			.id = q.id, .idlen = q.idlen, .content = q.content, .debug = q.debug,
			.pid = (uint32_t)q.pid, .start_time = q.start_time,
		};
		sp_write_archive(r->w, &a);
	} else if (kind == SP_REC_PROCESS) {
		struct q_process q;
		memcpy(&q, p, sizeof(q));
		const char *exe = (const char *)p + sizeof(q);
		struct sp_process_rec pr = {
			.pid = (uint32_t)q.pid, .ppid = (uint32_t)q.ppid, .uid = (uint32_t)q.uid,
			.start_time = q.start_time, .time = q.time,
			.exe = q.have_exe ? exe : NULL, .exelen = q.exelen, .comm = q.comm,
			.cmdline = exe + q.exelen, .cmdlen = q.cmdlen,
			.nspid = q.nspid, .mntns = q.mntns, .kernel_thread = q.kthread,
		};
		sp_write_process(r->w, &pr);
	} else {
		struct q_thread q;
		memcpy(&q, p, sizeof(q));
		struct sp_thread_rec t = { (uint32_t)q.pid, (uint32_t)q.tid, q.time,
					   q.have_comm ? q.comm : NULL };
		sp_write_thread(r->w, &t);
	}
}

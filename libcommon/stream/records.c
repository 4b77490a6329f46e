/* SPDX-License-Identifier: MIT */
/* The writers of the recorder's records (records.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "stream/rawmap.h"
#include "stream/record.h"
#include "stream/records.h"
#include "stream/stream.h"
#include "stream/vocab.h"

void sp_write_comm(struct sp_writer *w, const struct sp_comm_rec *c)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", c->exec ? "exec" : "comm");
	sp_mapw_u64(&m, "pid", c->pid);
	sp_mapw_u64(&m, "tid", c->tid);
	sp_mapw_str(&m, "comm", c->comm);
	sp_mapw_u64(&m, "time", c->time);
	sp_mapw_end(&m);
}

void sp_write_task(struct sp_writer *w, const struct sp_task_rec *t)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", t->fork ? "fork" : "exit");
	sp_mapw_u64(&m, "pid", t->pid);
	sp_mapw_u64(&m, "ppid", t->ppid);
	sp_mapw_u64(&m, "tid", t->tid);
	sp_mapw_u64(&m, "ptid", t->ptid);
	sp_mapw_u64(&m, "time", t->time);
	if (!t->fork && t->ustack_reset)
		sp_mapw_bool(&m, "ustack_reset", true);
	sp_mapw_end(&m);
}

void sp_write_lost(struct sp_writer *w, const struct sp_lost_rec *l)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "lost");
	sp_mapw_u64(&m, "lost", l->lost);
	sp_mapw_str(&m, "kind", l->samples ? "samples" : "records");
	sp_mapw_u64(&m, "time", l->time);
	sp_mapw_u64(&m, "cpu", l->cpu);
	sp_mapw_end(&m);
}

void sp_write_throttle(struct sp_writer *w, const struct sp_throttle_rec *t)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", t->throttle ? "throttle" : "unthrottle");
	sp_mapw_u64(&m, "time", t->time);
	sp_mapw_u64(&m, "cpu", t->cpu);
	sp_mapw_end(&m);
}

void sp_write_runtime(struct sp_writer *w, const struct sp_runtime_rec *rt)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "runtime");
	sp_mapw_u64(&m, "pid", rt->pid);
	sp_mapw_bool(&m, "cpython", rt->cpython);
	sp_mapw_str(&m, "via", rt->via);
	sp_mapw_u64(&m, "time", rt->time);
	sp_mapw_end(&m);
}

void sp_write_map(struct sp_writer *w, const struct sp_map_rec *r)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "map");
	sp_mapw_u64(&m, "pid", r->pid);
	sp_mapw_u64(&m, "start", r->start);
	sp_mapw_u64(&m, "len", r->len);
	sp_mapw_u64(&m, "pgoff", r->pgoff);
	sp_mapw_strn(&m, "path", r->path, r->pathlen);
	if (r->tid)
		sp_mapw_u64(&m, "tid", r->tid);
	sp_mapw_u64(&m, "time", r->time);
	if (r->have_dev) {
		sp_mapw_u64(&m, "maj", r->maj);
		sp_mapw_u64(&m, "min", r->min);
		sp_mapw_u64(&m, "ino", r->ino);
	}
	sp_mapw_u64(&m, "prot", (uint64_t)r->prot);
	if (r->flags >= 0)
		sp_mapw_u64(&m, "flags", (uint64_t)r->flags);
	if (r->build_id_len > 0)
		sp_mapw_bin(&m, "build_id", r->build_id, (size_t)r->build_id_len);
	if (r->content_id)
		sp_mapw_bin(&m, "content_id", r->content_id, 20);
	sp_mapw_bool(&m, "deleted", r->deleted);
	sp_mapw_end(&m);
}

void sp_write_archive(struct sp_writer *w, const struct sp_archive_rec *a)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "archive");
	sp_mapw_str(&m, "kind", a->kind);
	sp_mapw_strn(&m, "file", a->file, a->filelen);
	if (a->path)
		sp_mapw_strn(&m, "path", a->path, a->pathlen);
	if (a->idlen > 0)
		sp_mapw_bin(&m, a->content ? "content_id" : "build_id", a->id, (size_t)a->idlen);
	if (a->debug)
		sp_mapw_bool(&m, "debug", true);
	if (a->pid) {
		sp_mapw_u64(&m, "pid", a->pid);
		sp_mapw_u64(&m, "start_time", a->start_time);
	}
	sp_mapw_end(&m);
}

void sp_write_jitdump(struct sp_writer *w, const struct sp_jitdump_rec *j)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "jitdump");
	sp_mapw_u64(&m, "pid", j->pid);
	sp_mapw_strn(&m, "path", j->path, j->pathlen);
	sp_mapw_u64(&m, "off", j->off);
	sp_mapw_bin(&m, "data", j->data, j->len);
	if (j->time)
		sp_mapw_u64(&m, "time", j->time);
	sp_mapw_end(&m);
}

/* Packs NUL-separated arguments (n bytes, the last NUL optional) as an array of strings. */
static void pack_args(msgpack_packer *pk, const char *cmd, size_t n)
{
	size_t nargs = 0;
	for (size_t i = 0; i < n; i++)
		nargs += cmd[i] == '\0';
	nargs += cmd[n - 1] != '\0';
	msgpack_pack_array(pk, nargs);
	for (size_t i = 0; i < n;) {
		size_t k = strnlen(cmd + i, n - i);
		msgpack_pack_str(pk, k);
		msgpack_pack_str_body(pk, cmd + i, k);
		i += k + 1;
	}
}

void sp_write_image(struct sp_writer *w, const struct sp_image_rec *im)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "image");
	sp_mapw_str(&m, "path", im->path);
	sp_mapw_bin(&m, "build_id", im->build_id, (size_t)im->build_id_len);
	sp_mapw_bin(&m, "data", im->data, im->len);
	if (im->pid) {
		sp_mapw_u64(&m, "pid", im->pid);
		sp_mapw_u64(&m, "time", im->time);
	}
	sp_mapw_end(&m);
}

void sp_write_process(struct sp_writer *w, const struct sp_process_rec *p)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "process");
	sp_mapw_u64(&m, "pid", p->pid);
	sp_mapw_u64(&m, "ppid", p->ppid);
	sp_mapw_u64(&m, "start_time", p->start_time);
	if (p->exe)
		sp_mapw_strn(&m, "exe", p->exe, p->exelen);
	sp_mapw_str(&m, "comm", p->comm);
	if (p->cmdlen > 0)
		pack_args(sp_mapw_key(&m, "cmdline"), p->cmdline, p->cmdlen);
	sp_mapw_u64(&m, "uid", p->uid);
	sp_mapw_u64(&m, "time", p->time);
	if (p->nspid)
		sp_mapw_u64(&m, "nspid", p->nspid);
	if (p->mntns)
		sp_mapw_u64(&m, "mntns", p->mntns);
	if (p->kernel_thread)
		sp_mapw_bool(&m, "kernel_thread", true);
	sp_mapw_end(&m);
}

void sp_write_thread(struct sp_writer *w, const struct sp_thread_rec *t)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "thread");
	sp_mapw_u64(&m, "pid", t->pid);
	sp_mapw_u64(&m, "tid", t->tid);
	if (t->comm)
		sp_mapw_str(&m, "comm", t->comm);
	sp_mapw_u64(&m, "time", t->time);
	sp_mapw_end(&m);
}

/* An array of n uint64_t stored unaligned at p. */
static void pack_u64s(msgpack_packer *pk, const unsigned char *p, size_t n)
{
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		memcpy(&v, p + i * 8, 8);
		msgpack_pack_uint64(pk, v);
	}
}

void sp_write_raw_sample(struct sp_writer *w, const struct sp_raw_sample_rec *s)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "sample");
	sp_mapw_u64(&m, "pid", s->pid);
	sp_mapw_u64(&m, "tid", s->tid);
	sp_mapw_u64(&m, "time", s->time);
	sp_mapw_u64(&m, "cpu", s->cpu);
	sp_mapw_u64(&m, "period", s->period);
	if (!s->uips) {
		sp_mapw_u64(&m, "abi", s->abi);
		pack_u64s(sp_mapw_key(&m, "regs"), s->regs, s->nregs);
		sp_mapw_bin(&m, "ustack", s->ustack, s->ustack_len);
		if (s->shared > 0)
			sp_mapw_u64(&m, "ustack_shared", s->shared);
		sp_mapw_bool(&m, "ustack_full", s->full);
	}
	if (s->kips && s->nk > 0)
		pack_u64s(sp_mapw_key(&m, "kstack"), s->kips, s->nk);
	if (s->uips && s->nu > 0) {
		pack_u64s(sp_mapw_key(&m, "uchain"), s->uips, s->nu);
		if (s->ufull)
			sp_mapw_bool(&m, "uchain_full", true);
	}
	if (s->event)
		sp_mapw_u64(&m, "event", s->event);
	if (s->preempted)
		sp_mapw_bool(&m, "preempted", true);
	sp_mapw_end(&m);
}

void sp_write_module(struct sp_writer *w, const struct sp_module_rec *r)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "module");
	sp_mapw_u64(&m, "id", r->id);
	sp_mapw_str(&m, "path", r->path);
	sp_mapw_str(&m, "kind", r->kind);
	if (r->identlen > 0)
		sp_mapw_bin(&m, r->content ? "content_id" : "build_id", r->ident,
			    (size_t)r->identlen);
	if (r->pid)
		sp_mapw_u64(&m, "pid", r->pid);
	sp_mapw_end(&m);
}

void sp_write_stack(struct sp_writer *w, uint64_t id, const struct sp_stack_frame *f, size_t n)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "stack");
	sp_mapw_u64(&m, "id", id);
	msgpack_packer *pk = sp_mapw_key(&m, "frames");
	msgpack_pack_array(pk, n);
	for (size_t j = 0; j < n; j++) {
		msgpack_pack_array(pk, 4);
		msgpack_pack_uint64(pk, f[j].addr);
		if (f[j].module == SP_NO_MODULE)
			msgpack_pack_nil(pk);
		else
			msgpack_pack_uint64(pk, f[j].module);
		msgpack_pack_uint64(pk, f[j].rel);
		msgpack_pack_uint64(pk, f[j].flags);
	}
	sp_mapw_end(&m);
}

int sp_stack_frame_decode(const msgpack_object *o, struct sp_stack_frame *f)
{
	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 4)
		return -1;
	const msgpack_object *e = o->via.array.ptr;
	if (e[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    (e[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER && e[1].type != MSGPACK_OBJECT_NIL) ||
	    e[2].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    e[3].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return -1;
	f->addr = e[0].via.u64;
	f->module = e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER ? e[1].via.u64 : SP_NO_MODULE;
	f->rel = e[2].via.u64;
	f->flags = e[3].via.u64;
	return 0;
}

/* One frame of a stack record read undecoded, as sp_stack_frame_decode() reads it decoded. */
static int frame_of_raw(const struct sp_rawval *o, struct sp_stack_frame *f)
{
	struct sp_rawval e[4];
	if (o->kind != SP_RAW_ARRAY || o->u < 4)
		return -1;
	const unsigned char *p = o->p;
	for (int i = 0; i < 4; i++) {
		if (!sp_raw_value(p, o->end, &e[i]))
			return -1;
		p = e[i].end;
	}
	if (e[0].kind != SP_RAW_UINT || (e[1].kind != SP_RAW_UINT && e[1].kind != SP_RAW_NIL) ||
	    e[2].kind != SP_RAW_UINT || e[3].kind != SP_RAW_UINT)
		return -1;
	f->addr = e[0].u;
	f->module = e[1].kind == SP_RAW_UINT ? e[1].u : SP_NO_MODULE;
	f->rel = e[2].u;
	f->flags = e[3].u;
	return 0;
}

static pthread_once_t stack_keys_once = PTHREAD_ONCE_INIT;
static int id_key, frames_key;

static void find_stack_keys(void)
{
	id_key = sp_record_key_index(SP_R_STACK, "id");
	frames_key = sp_record_key_index(SP_R_STACK, "frames");
}

int sp_stack_of(const struct sp_record *rec, uint64_t *id, struct sp_stack_frame **frames,
		size_t *n)
{
	*id = 0;
	*frames = NULL;
	*n = 0;
	if (!rec->pairs) {
		sp_map_u64(rec->map, "id", id);
		const msgpack_object_array *fr = sp_map_array(rec->map, "frames");
		size_t size = fr ? fr->size : 0;
		if (!(*frames = malloc((size ? size : 1) * sizeof(**frames))))
			return -2;
		for (size_t i = 0; i < size; i++)
			if (sp_stack_frame_decode(&fr->ptr[i], &(*frames)[i]) < 0)
				goto bad;
		*n = size;
		return 0;
	}
	pthread_once(&stack_keys_once, find_stack_keys);
	const struct sp_rawval *fr = NULL;
	for (uint32_t j = 0; j < rec->npairs; j++) {
		const struct sp_rawval *v = &rec->pairs[j].val;
		if (rec->pairs[j].id == id_key && v->kind == SP_RAW_UINT)
			*id = v->u;
		else if (rec->pairs[j].id == frames_key && v->kind == SP_RAW_ARRAY)
			fr = v;
	}
	size_t size = fr ? fr->u : 0;
	if (!(*frames = malloc((size ? size : 1) * sizeof(**frames))))
		return -2;
	const unsigned char *p = fr ? fr->p : NULL;
	for (size_t i = 0; i < size; i++) {
		struct sp_stack_frame *f = &(*frames)[i];
		size_t a, b = 1, c, d;
		/* The writer's own form, a fixarray of four integers (the module's maybe nil), at once. */
		if (p < fr->end && *p == 0x94 && (a = sp_raw_uint_at(p + 1, fr->end, &f->addr)) &&
		    p + 1 + a < fr->end &&
		    (p[1 + a] == 0xc0 || (b = sp_raw_uint_at(p + 1 + a, fr->end, &f->module))) &&
		    (c = sp_raw_uint_at(p + 1 + a + b, fr->end, &f->rel)) &&
		    (d = sp_raw_uint_at(p + 1 + a + b + c, fr->end, &f->flags))) {
			if (p[1 + a] == 0xc0)
				f->module = SP_NO_MODULE;
			p += 1 + a + b + c + d;
			continue;
		}
		struct sp_rawval e;
		if (!sp_raw_value(p, fr->end, &e) || frame_of_raw(&e, f) < 0)
			goto bad;
		p = e.end;
	}
	*n = size;
	return 0;
bad:
	free(*frames);
	*frames = NULL;
	return -1;
}

void sp_write_frame(struct sp_writer *w, const struct sp_frame_rec *f)
{
	struct sp_mapw m, im;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "frame");
	sp_mapw_u64(&m, "id", f->id);
	sp_mapw_u64(&m, "addr", f->addr);
	sp_mapw_str(&m, "origin", f->origin);
	sp_mapw_str(&m, "name", f->name);
	if (f->has_module) {
		sp_mapw_u64(&m, "module", f->module);
		sp_mapw_u64(&m, "rel", f->rel);
	}
	if (f->has_offset)
		sp_mapw_u64(&m, "offset", f->offset);
	if (f->file)
		sp_mapw_str(&m, "file", f->file);
	if (f->line > 0)
		sp_mapw_u64(&m, "line", f->line);
	if (f->ninl > 0) {
		msgpack_pack_array(sp_mapw_key(&m, "inline"), f->ninl);
		for (size_t i = 0; i < f->ninl; i++) {
			const struct sp_inline *in = &f->inl[i];
			sp_mapw_begin(&im, w);
			sp_mapw_str(&im, "name", in->name ? in->name : "??");
			if (in->file)
				sp_mapw_str(&im, "file", in->file);
			if (in->line > 0)
				sp_mapw_u64(&im, "line", in->line);
			sp_mapw_end(&im);
		}
	}
	if (f->flags)
		sp_mapw_u64(&m, "flags", f->flags);
	sp_mapw_end(&m);
}

void sp_write_symstack(struct sp_writer *w, uint64_t id, const uint64_t *frames, size_t n)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "symstack");
	sp_mapw_u64(&m, "id", id);
	msgpack_packer *pk = sp_mapw_key(&m, "frames");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		msgpack_pack_uint64(pk, frames[i]);
	sp_mapw_end(&m);
}

void sp_write_summary(struct sp_writer *w, const struct sp_summary_rec *s)
{
	struct sp_mapw m, e;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "summary");
	sp_mapw_u64(&m, "sample_events", s->sample_events);
	sp_mapw_u64(&m, "samples", s->samples);
	sp_mapw_u64(&m, "lost_events", s->lost_events);
	sp_mapw_u64(&m, "empty_stack_samples", s->empty_stack_samples);
	sp_mapw_u64(&m, "truncated_frame_markers", s->truncated_frame_markers);
	sp_mapw_u64(&m, "ignored_user_callchain_frames", s->ignored_user_callchain_frames);
	sp_mapw_bool(&m, "kernel_enabled", s->kernel_enabled);
	msgpack_pack_array(sp_mapw_key(&m, "error_stats"), SP_E_COUNT);
	for (int k = 0; k < SP_E_COUNT; k++) {
		sp_mapw_begin(&e, w);
		sp_mapw_str(&e, "kind", sp_errkind_name((enum sp_error_kind)k));
		sp_mapw_u64(&e, "count", s->errors[k]);
		sp_mapw_str(&e, "description", sp_errkind_description((enum sp_error_kind)k));
		sp_mapw_end(&e);
	}
	sp_mapw_u64(&m, "skipped_no_pid", s->skipped_no_pid);
	sp_mapw_u64(&m, "skipped_no_tid", s->skipped_no_tid);
	sp_mapw_u64(&m, "skipped_no_time", s->skipped_no_time);
	sp_mapw_u64(&m, "skipped_no_frames", s->skipped_no_frames);
	sp_mapw_u64(&m, "lost_samples", s->lost_samples);
	sp_mapw_u64(&m, "throttle_events", s->throttle_events);
	sp_mapw_u64(&m, "processes", s->processes);
	sp_mapw_u64(&m, "threads", s->threads);
	sp_mapw_u64(&m, "duration_ns", s->duration_ns);
	sp_mapw_u64(&m, "time", s->time);
	if (s->has_command_status)
		sp_mapw_i64(&m, "command_status", s->command_status);
	if (s->off_cpu) {
		sp_mapw_u64(&m, "off_cpu_intervals", s->off_cpu_intervals);
		sp_mapw_u64(&m, "off_cpu_no_stack", s->off_cpu_no_stack);
	}
	if (s->stack_size_chosen) {
		sp_mapw_u64(&m, "stack_size_chosen", s->stack_size_chosen);
		sp_mapw_u64(&m, "stack_calibration_stacks", s->stack_calibration_stacks);
	}
	sp_mapw_end(&m);
}

void sp_write_unwind(struct sp_writer *w, const struct sp_unwind_rec *u)
{
	struct sp_mapw m, e;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "unwind");
	sp_mapw_u64(&m, "samples", u->samples);
	sp_mapw_u64(&m, "user_samples", u->user_samples);
	sp_mapw_u64(&m, "complete", u->ends[SP_END_COMPLETE]);
	sp_mapw_u64(&m, "frames", u->frames);
	sp_mapw_u64(&m, "stacks", u->stacks);
	sp_mapw_u64(&m, "modules", u->modules);
	msgpack_pack_array(sp_mapw_key(&m, "ends"), SP_END_COUNT);
	for (int c = 0; c < SP_END_COUNT; c++) {
		sp_mapw_begin(&e, w);
		sp_mapw_u64(&e, "code", (uint64_t)c);
		sp_mapw_str(&e, "kind", sp_unwind_end_name((enum sp_unwind_end)c));
		sp_mapw_u64(&e, "count", u->ends[c]);
		sp_mapw_str(&e, "description", sp_unwind_end_description((enum sp_unwind_end)c));
		sp_mapw_end(&e);
	}
	sp_mapw_u64(&m, "bad_shared_copies", u->bad_shared_copies);
	sp_mapw_u64(&m, "cache_hits", u->cache_hits);
	sp_mapw_u64(&m, "cache_misses", u->cache_misses);
	sp_mapw_u64(&m, "fp_frames", u->fp_frames);
	sp_mapw_u64(&m, "scan_frames", u->scan_frames);
	sp_mapw_u64(&m, "modules_opened", u->modules_opened);
	sp_mapw_u64(&m, "modules_missing", u->modules_missing);
	sp_mapw_u64(&m, "modules_mismatched", u->modules_mismatched);
	if (u->max_depth_full)
		sp_mapw_u64(&m, "max_depth_full", u->max_depth_full);
	if (u->copy_used_stacks) {
		sp_mapw_u64(&m, "copy_used_stacks", u->copy_used_stacks);
		sp_mapw_u64(&m, "copy_used_p50", u->copy_used_p50);
		sp_mapw_u64(&m, "copy_used_p995", u->copy_used_p995);
		sp_mapw_u64(&m, "copy_used_max", u->copy_used_max);
	}
	if (u->engine)
		sp_mapw_str(&m, "engine", u->engine);
	sp_mapw_end(&m);
}

void sp_write_symbolize(struct sp_writer *w, const struct sp_symbolize_rec *s)
{
	struct sp_mapw m, om;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "t", "symbolize");
	sp_mapw_u64(&m, "frames", s->frames);
	sp_mapw_key(&m, "origins");
	sp_mapw_begin(&om, w);
	for (size_t i = 0; i < s->norigins; i++)
		sp_mapw_u64(&om, s->origin_names[i], s->origin_counts[i]);
	sp_mapw_end(&om);
	sp_mapw_u64(&m, "address_only", s->address_only);
	sp_mapw_u64(&m, "modules_missing", s->modules_missing);
	sp_mapw_u64(&m, "modules_mismatched", s->modules_mismatched);
	sp_mapw_u64(&m, "debuginfo_modules", s->debuginfo_modules);
	sp_mapw_u64(&m, "perf_maps_loaded", s->perf_maps_loaded);
	sp_mapw_u64(&m, "perf_maps_refused", s->perf_maps_refused);
	sp_mapw_u64(&m, "perf_map_lines_skipped", s->perf_map_lines_skipped);
	sp_mapw_str(&m, "kallsyms", s->kallsyms);
	sp_mapw_end(&m);
}

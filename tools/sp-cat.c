/* SPDX-License-Identifier: MIT
 * sp-cat: shows any stackpulse stream as JSON lines, one record a line,
 * and with --from-json turns such lines back into the exact stream.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/header.h"
#include "stream/json.h"
#include "stream/stream.h"
#include "tool.h"
#include "util/alloc.h"
#include "util/hashmap.h"

/* The longest JSON line --from-json accepts. */
#define MAX_JSON_LINE (16u << 20)

static void usage(void)
{
	printf("Usage: %s [options] [FILE...]\n"
	       "       %s --from-json [options] [FILE...]\n"
	       "Show stackpulse streams as JSON lines, or build a stream from them.\n"
	       "FILE is '-' or absent for standard input; several are read in turn.\n"
	       "\n"
	       "  -j, --from-json        read JSON lines and write the stream they render\n"
	       "  -t, --type TYPE[,...]  show only records of these types (e.g. sample,map)\n"
	       "      --format F         json (default), or perf-script: a symbolized stream\n"
	       "                         as `perf script` text (FlameScope, speedscope, ...)\n"
	       "  -f, --follow           keep reading a file that is still being written;\n"
	       "                         end at its summary record or on SIGINT\n"
	       "  -o, --output FILE      write to FILE instead of standard output\n"
	       "      --max-record BYTES largest record accepted (default %u)\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n" SP_EXIT_STATUS_HELP,
	       sp_progname, sp_progname, SP_DEFAULT_MAX_RECORD);
}

struct options {
	bool from_json, follow, perf_script;
	const char *output;
	char **types;	/* [0] owns the text, names from [1] to NULL; NULL for all */
	size_t max_record;
};

static bool type_wanted(const struct options *o, const struct sp_record *rec)
{
	if (!o->types)
		return true;
	for (char **t = o->types + 1; *t; t++)
		if (strlen(*t) == rec->type_len &&
		    memcmp(*t, rec->type_name, rec->type_len) == 0)
			return true;
	return false;
}

/* What perf-script text needs of a symbolized segment. */
struct ps_frame {
	char *name, *module;
	uint64_t addr, offset;
	bool address_only;
	char **inl;		/* inlined functions, innermost first */
	uint32_t ninl;
};

struct ps_state {
	struct ps_frame *frames;	/* by id */
	size_t nframes, allocframes;
	uint64_t **stacks;	/* by id: [0] = count, then frame ids */
	size_t nstacks, allocstacks;
	char **modules;		/* paths by id */
	size_t nmodules, allocmodules;
	struct sp_u64map procs;	/* pid -> process name (malloc'd) */
	char **events;		/* the header's event names, by index */
	size_t nevents;
};

static void ps_reset(struct ps_state *s)
{
	for (size_t i = 0; i < s->nframes; i++) {
		free(s->frames[i].name);
		for (uint32_t k = 0; k < s->frames[i].ninl; k++)
			free(s->frames[i].inl[k]);
		free(s->frames[i].inl);
	}
	for (size_t i = 0; i < s->nstacks; i++)
		free(s->stacks[i]);
	for (size_t i = 0; i < s->nmodules; i++)
		free(s->modules[i]);
	sp_u64map_release(&s->procs, free);
	for (size_t i = 0; i < s->nevents; i++)
		free(s->events[i]);
	free(s->events);
	free(s->frames);
	free(s->stacks);
	free(s->modules);
	memset(s, 0, sizeof(*s));
}

/*
 * Makes index id of an array indexed by id exist, new elements zeroed;
 * false when id is absurd.
 */
static bool ps_slot(void **v, size_t elem, uint64_t id, size_t *n, size_t *alloc)
{
	if (id >= 10000000)
		return false;
	if (sp_alloc_slot(v, elem, id, n, alloc) < 0)
		sp_die(SP_EXIT_FATAL, "out of memory");
	return true;
}

static char *ps_str(const msgpack_object *m, const char *key)
{
	const char *p;
	size_t n;
	return sp_map_str(m, key, &p, &n) ? strndup(p, n) : NULL;
}

static void ps_record(struct ps_state *s, const struct sp_record *rec, FILE *out)
{
	const msgpack_object *m = rec->map;
	uint64_t id = 0, v;
	sp_map_u64(m, "id", &id);
	switch (rec->type) {
	case SP_R_HEADER: {
		ps_reset(s);
		/* The events by index; a stream before 1.3 names its one in its options. */
		const msgpack_object_array *ev = sp_map_array(m, "events");
		const msgpack_object *opts = sp_map_get(m, "options");
		s->events = sp_xcalloc(ev && ev->size ? ev->size : 1, sizeof(*s->events));
		for (uint32_t k = 0; ev && k < ev->size; k++)
			s->events[s->nevents++] = ev->ptr[k].type == MSGPACK_OBJECT_STR ?
				strndup(ev->ptr[k].via.str.ptr, ev->ptr[k].via.str.size) : NULL;
		if (!s->nevents && opts && opts->type == MSGPACK_OBJECT_MAP)
			s->events[s->nevents++] = ps_str(opts, "event");
		break;
	}
	case SP_R_MODULE:
		if (ps_slot((void **)&s->modules, sizeof(*s->modules), id, &s->nmodules,
			    &s->allocmodules)) {
			free(s->modules[id]);
			s->modules[id] = ps_str(m, "path");
		}
		break;
	case SP_R_PROCESS: case SP_R_EXEC: case SP_R_COMM: {
		uint64_t pid = 0, tid = 0;
		const char *c;
		size_t n;
		sp_map_u64(m, "pid", &pid);
		if (sp_map_u64(m, "tid", &tid) && tid != pid)
			break;
		if (!sp_map_str(m, "comm", &c, &n))
			break;
		/* perf script shows at most 31 bytes of a name. */
		char *comm = strndup(c, n < 31 ? n : 31), *old = sp_u64map_get(&s->procs, pid);
		if (!comm || sp_u64map_put(&s->procs, pid, comm) < 0)
			sp_die(SP_EXIT_FATAL, "out of memory");
		free(old);
		break;
	}
	case SP_R_FRAME: {
		if (!ps_slot((void **)&s->frames, sizeof(*s->frames), id, &s->nframes, &s->allocframes))
			break;
		struct ps_frame *f = &s->frames[id];
		free(f->name);
		for (uint32_t k = 0; k < f->ninl; k++)
			free(f->inl[k]);
		free(f->inl);
		f->inl = NULL;
		f->name = ps_str(m, "name");
		f->addr = f->offset = 0;
		sp_map_u64(m, "addr", &f->addr);
		sp_map_u64(m, "offset", &f->offset);
		f->module = sp_map_u64(m, "module", &v) && v < s->nmodules ? s->modules[v] : NULL;
		const char *o;
		size_t n;
		f->address_only = sp_map_str(m, "origin", &o, &n) && n == 12 &&
				  memcmp(o, "address-only", 12) == 0;
		const msgpack_object_array *inl = sp_map_array(m, "inline");
		f->ninl = 0;
		if (inl && inl->size) {
			f->inl = sp_xcalloc(inl->size, sizeof(*f->inl));
			for (uint32_t k = 0; k < inl->size; k++)
				if ((f->inl[f->ninl] = ps_str(&inl->ptr[k], "name")))
					f->ninl++;
		}
		break;
	}
	case SP_R_SYMSTACK: {
		const msgpack_object_array *fr = sp_map_array(m, "frames");
		if (!ps_slot((void **)&s->stacks, sizeof(*s->stacks), id, &s->nstacks, &s->allocstacks))
			break;
		free(s->stacks[id]);
		uint64_t *st = sp_xmalloc((fr->size + 1) * sizeof(*st));
		st[0] = 0;
		for (uint32_t k = 0; k < fr->size; k++)
			if (fr->ptr[k].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
				st[++st[0]] = fr->ptr[k].via.u64;
		s->stacks[id] = st;
		break;
	}
	case SP_R_SAMPLE: {
		struct sp_sample_head h;
		sp_sample_head_read(m, &h);
		uint64_t pid = h.pid, tid = h.tid, time = h.time, period = h.period, stack = h.stack;
		const char *comm = sp_u64map_get(&s->procs, pid);
		const char *event = h.event < s->nevents ? s->events[h.event] : NULL;
		uint64_t cpu = 0;
		/* perf's form: COMM PID/TID [CPU] SECONDS: PERIOD EVENT:, and :PID for no name. */
		char unnamed[32];
		if (!comm) {
			snprintf(unnamed, sizeof(unnamed), ":%llu", (unsigned long long)pid);
			comm = unnamed;
		}
		sp_map_u64(m, "cpu", &cpu);
		fprintf(out, "%s %llu/%llu [%03llu] %llu.%06llu: %llu %s:\n", comm,
			(unsigned long long)pid, (unsigned long long)tid, (unsigned long long)cpu,
			(unsigned long long)(time / 1000000000u),
			(unsigned long long)(time % 1000000000u / 1000u), (unsigned long long)period,
			event ? event : "cpu-clock");
		const uint64_t *st = stack < s->nstacks ? s->stacks[stack] : NULL;
		for (uint64_t k = 1; st && k <= st[0]; k++) {
			const struct ps_frame *f = st[k] < s->nframes ? &s->frames[st[k]] : NULL;
			if (!f || !f->name)
				continue;
			for (uint32_t i = 0; i < f->ninl; i++)
				fprintf(out, "\t%16llx %s (inlined)\n", (unsigned long long)f->addr, f->inl[i]);
			if (f->address_only)
				fprintf(out, "\t%16llx [unknown] (%s)\n", (unsigned long long)f->addr,
					f->module ? f->module : "[unknown]");
			else
				fprintf(out, "\t%16llx %s+0x%llx (%s)\n", (unsigned long long)f->addr,
					f->name, (unsigned long long)f->offset,
					f->module ? f->module : "[unknown]");
		}
		fputc('\n', out);
		break;
	}
	default:
		break;
	}
}

/* The input is idle: what was shown so far leaves now. */
static void flush_out(void *out)
{
	fflush(out);
}

/* Writes one input's records as JSON lines; returns an exit status. */
static int stream_to_json(const struct options *o, const char *path, FILE *out)
{
	const char *name = path ? path : "-";
	bool follow = o->follow && strcmp(name, "-") != 0;
	int fd = follow ? sp_follow_input(path) : sp_open_input(path);
	struct sp_reader *r = follow ? sp_reader_follow(name, &sp_interrupted, sp_note_warn, NULL)
				     : sp_reader_new(fd, name);
	if (!r)
		sp_die(SP_EXIT_FATAL, "out of memory");
	sp_reader_set_max_record(r, o->max_record);
	sp_reader_set_idle(r, flush_out, out);

	struct sp_buf line;
	sp_buf_init(&line);
	struct sp_record rec;
	enum sp_read_status st;
	int status = SP_EXIT_OK;
	struct ps_state ps = { 0 };
	while ((st = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		if (o->perf_script) {
			if (rec.type == SP_R_HEADER && sp_reader_header(r)->stage != SP_STAGE_SYMBOLIZED) {
				sp_warn("'%s': byte offset %llu, record %llu: perf-script text needs a "
					"symbolized stream: run sp-unwind and sp-symbolize first", name,
					(unsigned long long)rec.offset, (unsigned long long)rec.index);
				status = SP_EXIT_FATAL;
				break;
			}
			ps_record(&ps, &rec, out);
			continue;
		}
		/* Following a file being written ends at its summary. */
		bool last = o->follow && rec.type == SP_R_SUMMARY;
		if (type_wanted(o, &rec)) {
			line.len = 0;
			if (sp_json_render(rec.map, &line) < 0)
				sp_die(SP_EXIT_FATAL, "out of memory rendering a record");
			sp_buf_addc(&line, '\n');
			if (fwrite(line.p, 1, line.len, out) != line.len)
				break;
		}
		if (last)
			break;
	}
	if (sp_report_input_end(r, st, name, NULL) != SP_EXIT_OK && status == SP_EXIT_OK)
		status = SP_EXIT_PARTIAL;
	ps_reset(&ps);
	sp_buf_release(&line);
	sp_reader_free(r);
	if (fd >= 0 && fd != STDIN_FILENO)
		close(fd);
	return status;
}

/*
 * Reads the next line of fd into line (without the newline).  Returns 1
 * for a line, 0 at the end, -1 for a line over the limit or a read error.
 */
static int read_line(int fd, struct sp_buf *in, size_t *pos, struct sp_buf *line,
		     bool *eof)
{
	line->len = 0;
	for (;;) {
		char *nl = in->len > *pos ? memchr(in->p + *pos, '\n', in->len - *pos) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - (in->p + *pos));
			sp_buf_add(line, in->p + *pos, n);
			*pos += n + 1;
			return 1;
		}
		if (*eof) {
			if (in->len == *pos)
				return 0;
			sp_buf_add(line, in->p + *pos, in->len - *pos);
			*pos = in->len;
			return 1;
		}
		if (in->len - *pos > MAX_JSON_LINE)
			return -1;
		/* Keep only the unread part, then read more. */
		if (*pos > 0) {
			memmove(in->p, in->p + *pos, in->len - *pos);
			in->len -= *pos;
			*pos = 0;
		}
		char chunk[65536];
		ssize_t k = read(fd, chunk, sizeof(chunk));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			*eof = true;
		else
			sp_buf_add(in, chunk, (size_t)k);
		if (in->oom)
			return -1;
	}
}

/* Turns one input's JSON lines into records; returns an exit status. */
static int json_to_stream(const char *path, struct sp_writer *w)
{
	int fd = sp_open_text_input(path);
	const char *name = path ? path : "-";
	struct sp_buf in, line;
	sp_buf_init(&in);
	sp_buf_init(&line);
	size_t pos = 0;
	bool eof = false;
	unsigned long lineno = 0, records = 0;
	int status = SP_EXIT_OK, got;
	struct sp_error err;

	while ((got = read_line(fd, &in, &pos, &line, &eof)) > 0) {
		lineno++;
		size_t n = line.len;
		while (n > 0 && (line.p[n - 1] == '\r' || line.p[n - 1] == ' '))
			n--;
		if (n == 0)
			continue;
		if (sp_json_parse(line.p, n, sp_writer_packer(w), &err) < 0) {
			sp_warn("'%s': line %lu: %s (the %lu record%s before it %s written)",
				name, lineno, sp_error_message(&err), records,
				records == 1 ? "" : "s", records == 1 ? "was" : "were");
			status = SP_EXIT_PARTIAL;
			break;
		}
		records++;
	}
	if (got < 0) {
		sp_warn("'%s': line %lu: %s", name, lineno + 1,
			errno ? strerror(errno) : "line longer than the limit");
		status = SP_EXIT_PARTIAL;
	}
	sp_buf_release(&in);
	sp_buf_release(&line);
	if (fd != STDIN_FILENO)
		close(fd);
	return status;
}

static char **split_types(const char *arg)
{
	size_t n = 1;
	for (const char *p = arg; *p; p++)
		n += *p == ',';
	/* v[0] keeps the copy that the tokens point into. */
	char **v = sp_xcalloc(n + 2, sizeof(*v));
	char *copy = sp_xstrdup(arg), *save = NULL, *tok;
	size_t i = 1;
	v[0] = copy;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		v[i++] = tok;
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from-json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'F' },
		{ "type", required_argument, NULL, 't' },
		{ "follow", no_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "max-record", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { .max_record = SP_DEFAULT_MAX_RECORD };
	int c;

	sp_tool_init(argv[0]);
	while ((c = getopt_long(argc, argv, "jt:fo:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': o.from_json = true; break;
		case 'F':
			if (strcmp(optarg, "perf-script") == 0)
				o.perf_script = true;
			else if (strcmp(optarg, "json") != 0)
				sp_usage_error("invalid --format '%s': json or perf-script", optarg);
			break;
		case 'f': o.follow = true; break;
		case 't':
			if (o.types) {
				free(o.types[0]);
				free(o.types);
			}
			o.types = split_types(optarg);
			break;
		case 'o': o.output = optarg; break;
		case 'M':
			o.max_record = sp_parse_max_record(optarg);
			break;
		case 'h': usage(); return SP_EXIT_OK;
		case 'V': return sp_show_version();
		default:
			return sp_bad_option();
		}
	}
	if (o.perf_script && (o.from_json || o.types))
		sp_usage_error("--format perf-script shows a whole symbolized stream");
	if (o.from_json && (o.types || o.follow))
		sp_usage_error("--type and --follow apply to showing a stream, not to --from-json");
	if (o.follow) {
		struct sigaction sa = { .sa_handler = sp_on_signal };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}

	int nin = argc - optind;
	int status = SP_EXIT_OK;
	int outfd = sp_open_output(o.output, o.from_json);
	if (o.from_json) {
		struct sp_writer *w = sp_writer_new(outfd, o.output ? o.output : "-");
		if (!w)
			sp_die(SP_EXIT_FATAL, "out of memory");
		for (int i = 0; i < (nin ? nin : 1); i++) {
			int s = json_to_stream(nin ? argv[optind + i] : NULL, w);
			if (s > status)
				status = s;
		}
		if (sp_writer_close(w) < 0)
			status = sp_write_failed(errno);
	} else {
		FILE *out = sp_output_file(outfd);
		setvbuf(out, NULL, _IOFBF, 1 << 16);
		for (int i = 0; i < (nin ? nin : 1); i++) {
			int s = stream_to_json(&o, nin ? argv[optind + i] : NULL, out);
			if (s > status)
				status = s;
			if (ferror(out))
				break;
		}
		status = sp_output_close(out, status);
	}
	if (o.types) {
		free(o.types[0]);
		free(o.types);
	}
	return status;
}

/* SPDX-License-Identifier: MIT */
/* Building header records (see header.h). */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "stream/header.h"
#include "stream/stream.h"

/* Reads the first line of a small file into buf; "" when unreadable. */
static void read_line(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sp_pack_host(struct sp_writer *w)
{
	struct utsname u;
	char boot_id[64], host[256];

	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	read_line("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id));
	if (gethostname(host, sizeof(host)) < 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';

	/* The anchor: the realtime clock read between two monotonic reads. */
	uint64_t m0 = clock_ns(CLOCK_MONOTONIC);
	uint64_t rt = clock_ns(CLOCK_REALTIME);
	uint64_t m1 = clock_ns(CLOCK_MONOTONIC);

	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "hostname", host);
	sp_mapw_str(&m, "kernel", u.release);
	sp_mapw_str(&m, "boot_id", boot_id);
	sp_mapw_str(&m, "arch", u.machine);
	sp_mapw_u64(&m, "page_size", (uint64_t)sysconf(_SC_PAGESIZE));
	sp_mapw_str(&m, "clock", "monotonic");
	sp_mapw_u64(&m, "clock_id", CLOCK_MONOTONIC);
	sp_mapw_u64(&m, "anchor_clock_ns", m0 + (m1 - m0) / 2);
	sp_mapw_u64(&m, "anchor_realtime_ns", rt);
	sp_mapw_end(&m);
}

bool sp_header_same_boot(const msgpack_object *hdr)
{
	const msgpack_object *host = sp_map_get(hdr, "host");
	const char *b;
	size_t n;
	char mine[64];
	read_line("/proc/sys/kernel/random/boot_id", mine, sizeof(mine));
	return host && sp_map_str(host, "boot_id", &b, &n) && n == strlen(mine) && n > 0 &&
	       memcmp(b, mine, n) == 0;
}

void sp_mapw_raw_header(struct sp_mapw *m, struct sp_writer *w)
{
	sp_mapw_begin(m, w);
	sp_mapw_str(m, "t", "header");
	sp_mapw_str(m, "format", SP_FORMAT_NAME);
	msgpack_packer *pk = sp_mapw_key(m, "version");
	msgpack_pack_array(pk, 2);
	msgpack_pack_uint64(pk, SP_FORMAT_MAJOR);
	msgpack_pack_uint64(pk, SP_FORMAT_MINOR);
	sp_mapw_str(m, "stage", "raw");
}

void sp_pack_tool(struct sp_writer *w, const char *name, int argc, char **argv)
{
	struct sp_mapw m;
	sp_mapw_begin(&m, w);
	sp_mapw_str(&m, "name", name);
	sp_mapw_str(&m, "version", SP_VERSION);
	msgpack_packer *pk = sp_mapw_key(&m, "args");
	msgpack_pack_array(pk, argc > 1 ? (size_t)argc - 1 : 0);
	for (int i = 1; i < argc; i++)
		sp_pack_str(pk, argv[i]);
	sp_mapw_end(&m);
}

void sp_pack_derived_header(struct sp_writer *w, const msgpack_object *in,
			    enum sp_stage stage, const char *tool,
			    int argc, char **argv)
{
	msgpack_packer *pk = sp_writer_packer(w);
	const msgpack_object_map *m = &in->via.map;
	msgpack_pack_map(pk, m->size);
	for (uint32_t i = 0; i < m->size; i++) {
		const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
		msgpack_pack_object(pk, *k);
		if (sp_obj_str_eq(k, "stage")) {
			sp_pack_str(pk, sp_stage_name(stage));
		} else if (sp_obj_str_eq(k, "tools") && v->type == MSGPACK_OBJECT_ARRAY) {
			msgpack_pack_array(pk, v->via.array.size + 1);
			for (uint32_t j = 0; j < v->via.array.size; j++)
				msgpack_pack_object(pk, v->via.array.ptr[j]);
			sp_pack_tool(w, tool, argc, argv);
		} else {
			msgpack_pack_object(pk, *v);
		}
	}
}

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

void sp_pack_host(msgpack_packer *pk)
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

	sp_pack_key(pk, "host");
	msgpack_pack_map(pk, 9);
	sp_pack_kv_str(pk, "hostname", host);
	sp_pack_kv_str(pk, "kernel", u.release);
	sp_pack_kv_str(pk, "boot_id", boot_id);
	sp_pack_kv_str(pk, "arch", u.machine);
	sp_pack_kv_u64(pk, "page_size", (uint64_t)sysconf(_SC_PAGESIZE));
	sp_pack_kv_str(pk, "clock", "monotonic");
	sp_pack_kv_u64(pk, "clock_id", CLOCK_MONOTONIC);
	sp_pack_kv_u64(pk, "anchor_clock_ns", m0 + (m1 - m0) / 2);
	sp_pack_kv_u64(pk, "anchor_realtime_ns", rt);
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

void sp_pack_tool(msgpack_packer *pk, const char *name, int argc, char **argv)
{
	msgpack_pack_map(pk, 3);
	sp_pack_kv_str(pk, "name", name);
	sp_pack_kv_str(pk, "version", SP_VERSION);
	sp_pack_key(pk, "args");
	msgpack_pack_array(pk, argc > 1 ? (size_t)argc - 1 : 0);
	for (int i = 1; i < argc; i++)
		sp_pack_str(pk, argv[i]);
}

void sp_pack_derived_header(msgpack_packer *pk, const msgpack_object *in,
			    enum sp_stage stage, const char *tool,
			    int argc, char **argv)
{
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
			sp_pack_tool(pk, tool, argc, argv);
		} else {
			msgpack_pack_object(pk, *v);
		}
	}
}

/* SPDX-License-Identifier: MIT
 * Unit tests of the vDSO's image in a stream: the build-id of an image
 * in memory, and the address spaces hanging image records on the [vdso]
 * objects of their path and build-id, in either order.
 */
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "unit.h"
#include "stream/record.h"
#include "unwind/addrspace.h"
#include "util/buildid.h"
#include "util/modfile.h"

/* Applies a record built by fn(pk, arg) to a; returns what apply returned. */
static int apply(struct sp_addrspaces *a, enum sp_rtype type,
		 void (*fn)(msgpack_packer *pk, const void *arg), const void *arg)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked up;
	size_t off = 0;
	int rc = -2;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_unpacked_init(&up);
	fn(&pk, arg);
	if (msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS)
		rc = sp_addrspaces_apply(a, type, &up.data);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

struct map {
	uint32_t pid;
	uint64_t start;
	const char *path;
	unsigned char bid;	/* the build-id: 20 bytes of this value */
};

static void pack_map(msgpack_packer *pk, const void *arg)
{
	const struct map *m = arg;
	unsigned char bid[20];
	memset(bid, m->bid, sizeof(bid));
	msgpack_pack_map(pk, 7);
	sp_pack_kv_str(pk, "t", "map");
	sp_pack_kv_u64(pk, "pid", m->pid);
	sp_pack_kv_u64(pk, "start", m->start);
	sp_pack_kv_u64(pk, "len", 8192);
	sp_pack_kv_u64(pk, "pgoff", 0);
	sp_pack_kv_str(pk, "path", m->path);
	sp_pack_kv_bin(pk, "build_id", bid, sizeof(bid));
}

struct image {
	const char *path;
	unsigned char bid;
	const char *data;
};

static void pack_image(msgpack_packer *pk, const void *arg)
{
	const struct image *im = arg;
	unsigned char bid[20];
	memset(bid, im->bid, sizeof(bid));
	msgpack_pack_map(pk, 4);
	sp_pack_kv_str(pk, "t", "image");
	sp_pack_kv_str(pk, "path", im->path);
	sp_pack_kv_bin(pk, "build_id", bid, sizeof(bid));
	sp_pack_kv_bin(pk, "data", im->data, strlen(im->data));
}

/* The object mapped at start in pid, or NULL. */
static const struct sp_object *object_at(struct sp_addrspaces *a, uint32_t pid, uint64_t start)
{
	const struct sp_mapping *m = sp_addrspaces_find(a, pid, start);
	return m ? m->obj : NULL;
}

static bool has_image(const struct sp_object *o, const char *data)
{
	return o && o->image && o->image_len == strlen(data) &&
	       memcmp(o->image, data, o->image_len) == 0;
}

SP_TEST(vdso_image_hangs_on_objects_of_its_identity)
{
	struct sp_addrspaces *a = sp_addrspaces_new();
	SP_CHECK(a != NULL);
	if (!a)
		return;
	/* A map before its image, and one after. */
	SP_CHECK(apply(a, SP_R_MAP, pack_map, &(struct map){ 1, 0x1000, "[vdso]", 0xaa }) == 0);
	SP_CHECK(apply(a, SP_R_IMAGE, pack_image, &(struct image){ "[vdso]", 0xaa, "first" }) == 0);
	SP_CHECK(apply(a, SP_R_MAP, pack_map, &(struct map){ 2, 0x1000, "[vdso]", 0xaa }) == 0);
	SP_CHECK(has_image(object_at(a, 1, 0x1000), "first"));
	SP_CHECK(object_at(a, 2, 0x1000) == object_at(a, 1, 0x1000));
	/* Of two images of one identity, the first is kept. */
	SP_CHECK(apply(a, SP_R_IMAGE, pack_image, &(struct image){ "[vdso]", 0xaa, "second" }) == 0);
	SP_CHECK(has_image(object_at(a, 2, 0x1000), "first"));
	/* Another build-id, or another path, is another identity. */
	SP_CHECK(apply(a, SP_R_MAP, pack_map, &(struct map){ 3, 0x1000, "[vdso]", 0xbb }) == 0);
	SP_CHECK(apply(a, SP_R_MAP, pack_map, &(struct map){ 3, 0x9000, "/lib/x.so", 0xaa }) == 0);
	SP_CHECK(object_at(a, 3, 0x1000) && !object_at(a, 3, 0x1000)->image);
	SP_CHECK(object_at(a, 3, 0x9000) && !object_at(a, 3, 0x9000)->image);
	SP_CHECK(apply(a, SP_R_IMAGE, pack_image, &(struct image){ "[vdso]", 0xbb, "32-bit" }) == 0);
	SP_CHECK(has_image(object_at(a, 3, 0x1000), "32-bit"));
	SP_CHECK(!object_at(a, 3, 0x9000)->image);
	/* A new segment forgets the images with the objects. */
	sp_addrspaces_reset(a, NULL);
	SP_CHECK(apply(a, SP_R_MAP, pack_map, &(struct map){ 1, 0x1000, "[vdso]", 0xaa }) == 0);
	SP_CHECK(object_at(a, 1, 0x1000) && !object_at(a, 1, 0x1000)->image);
	sp_addrspaces_free(a, NULL);
}

static void pack_bad_image(msgpack_packer *pk, const void *arg)
{
	(void)arg;
	msgpack_pack_map(pk, 4);
	sp_pack_kv_str(pk, "t", "image");
	sp_pack_kv_str(pk, "path", "[vdso]");
	sp_pack_kv_bin(pk, "build_id", "", 0);
	sp_pack_kv_bin(pk, "data", "x", 1);
}

SP_TEST(vdso_image_without_build_id_is_ignored)
{
	struct sp_addrspaces *a = sp_addrspaces_new();
	SP_CHECK(a && apply(a, SP_R_IMAGE, pack_bad_image, NULL) == 0);
	SP_CHECK(a && apply(a, SP_R_MAP, pack_map, &(struct map){ 1, 0x1000, "[vdso]", 0 }) == 0);
	SP_CHECK(a && object_at(a, 1, 0x1000) && !object_at(a, 1, 0x1000)->image);
	sp_addrspaces_free(a, NULL);
}

SP_TEST(build_id_of_an_image_in_memory)
{
	size_t size = 0;
	const void *own = sp_vdso_image(&size);
	unsigned char id[SP_BUILD_ID_MAX];
	char junk[256];
	memset(junk, 'x', sizeof(junk));
	SP_CHECK(sp_build_id_mem(junk, sizeof(junk), id) == -1);
	if (!own)
		return;	/* no vDSO in this process (a static build, vdso=0) */
	unsigned char *copy = malloc(size);
	SP_CHECK(copy != NULL);
	if (!copy)
		return;
	memcpy(copy, own, size);
	SP_CHECK(sp_build_id_mem(copy, size, id) > 0);
	/* Cut to its ELF header, it is ELF without a note. */
	memcpy(copy, own, size);
	SP_CHECK(sp_build_id_mem(copy, 64, id) == 0);
	free(copy);
}

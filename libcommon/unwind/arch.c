/* SPDX-License-Identifier: MIT */
/* Choosing an architecture backend for a stream (see arch.h). */
#include <string.h>

#include "stream/record.h"
#include "unwind/arch.h"

static const struct sp_unwind_arch *const backends[] = {
	&sp_arch_x86_64,
	&sp_arch_aarch64,
};

const struct sp_unwind_arch *sp_unwind_arch_find(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strlen(backends[i]->name) == len && memcmp(backends[i]->name, name, len) == 0)
			return backends[i];
	return NULL;
}

void sp_unwind_regmap_native(struct sp_unwind_regmap *m, const struct sp_unwind_arch *arch)
{
	memset(m, 0, sizeof(*m));
	m->arch = arch;
	for (size_t i = 0; i < arch->nreg_names; i++)
		m->pos[i] = (uint8_t)i;
	m->need = arch->nreg_names;
}

int sp_unwind_regmap_select(struct sp_unwind_regmap *m, const msgpack_object *hdr,
			    struct sp_error *err)
{
	const msgpack_object *host = sp_map_get(hdr, "host");
	const char *name = NULL;
	size_t len = 0;
	if (!host || host->type != MSGPACK_OBJECT_MAP || !sp_map_str(host, "arch", &name, &len))
		return sp_error_set(err, SP_ERR_UNSUPPORTED,
				    "cannot unwind: the header names no architecture (host.arch)");
	const struct sp_unwind_arch *arch = sp_unwind_arch_find(name, len);
	if (!arch)
		return sp_error_set(err, SP_ERR_UNSUPPORTED,
				    "cannot unwind %.*s stacks: no backend for this architecture",
				    (int)len, name);
	if (!arch->usable)
		return sp_error_set(err, SP_ERR_UNSUPPORTED, "cannot unwind %s stacks: %s",
				    arch->name, arch->unusable_why);
	sp_unwind_regmap_native(m, arch);
	const msgpack_object_array *names = sp_map_array(hdr, "reg_names");
	if (!names)
		return 0;
	/* Registers are found by name, so that a later version may add some. */
	m->need = 0;
	for (size_t i = 0; i < arch->nreg_names; i++) {
		uint32_t j = 0;
		while (j < names->size && !sp_obj_str_eq(&names->ptr[j], arch->reg_names[i]))
			j++;
		if (j == names->size || j > UINT8_MAX)
			return sp_error_set(err, SP_ERR_UNSUPPORTED,
					    "cannot unwind %s stacks: the header's reg_names have no '%s'",
					    arch->name, arch->reg_names[i]);
		m->pos[i] = (uint8_t)j;
		if (j + 1 > m->need)
			m->need = j + 1;
	}
	return 0;
}

int sp_unwind_regmap_load(const struct sp_unwind_regmap *m, const uint64_t *regs, size_t nregs,
			  struct sp_arch_regs *out)
{
	uint64_t v[SP_ARCH_MAX_NAMES];
	if (nregs < m->need)
		return -1;
	for (size_t i = 0; i < m->arch->nreg_names; i++)
		v[i] = regs[m->pos[i]];
	m->arch->load(v, out);
	return 0;
}

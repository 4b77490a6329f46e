/* SPDX-License-Identifier: MIT */
/* libdebuginfod, loaded when first needed (see debuginfod.h). */
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>

#include "sym/debuginfod.h"

static struct {
	debuginfod_client *(*begin)(void);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
	void (*end)(debuginfod_client *);
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	*(void **)&lib.begin = dlsym(h, "debuginfod_begin");
	*(void **)&lib.find_executable = dlsym(h, "debuginfod_find_executable");
	*(void **)&lib.end = dlsym(h, "debuginfod_end");
	if (!lib.begin || !lib.find_executable || !lib.end)
		lib.begin = NULL;	/* kept loaded: a library half-found is not used */
}

int sp_debuginfod_find_executable(const unsigned char *bid, int len, char **path)
{
	*path = NULL;
	pthread_once(&lib_once, load);
	debuginfod_client *dc = lib.begin ? lib.begin() : NULL;
	if (!dc)
		return -ENOSYS;
	int fd = lib.find_executable(dc, bid, len, path);
	lib.end(dc);
	return fd;
}

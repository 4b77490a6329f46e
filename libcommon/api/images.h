/* SPDX-License-Identifier: MIT
 * The recorder's side of the exact images (internal.h: struct
 * sp_images): made with the recorder, fed by the capture layer's
 * on_module hook (capture/recorder.h), handed to the tail.
 */
#ifndef SP_API_IMAGES_H
#define SP_API_IMAGES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/internal.h"

/* An empty set in a new private directory under $TMPDIR; NULL (err set). */
struct sp_images *sp_images_new(struct sp_error *err);

/*
 * One more holder of im (the tail): sp_images_free() lets go of one,
 * the last closes the descriptors and removes the directory.
 */
struct sp_images *sp_images_ref(struct sp_images *im);

/*
 * The on_module hook: keeps the file pid maps at [start, end) when its
 * build-id is bid and it has none kept yet.  A file that cannot be
 * opened, or whose build-id is not bid (replaced), is not kept: the
 * tail then reads the recorded path, as a tail of a file written
 * elsewhere does.
 */
void sp_images_note(void *arg, pid_t pid, uint64_t start, uint64_t end, const char *path,
		    bool deleted, const unsigned char *bid, int bidlen);

#endif

/* SPDX-License-Identifier: MIT
 * fuzz-import: feeds the input to sp-import's perf.data reader
 * (capture/perfdata.h) as a perf.data file (from a memfd, so file mode
 * can seek to its feature sections; an input whose header is perf's
 * 16-byte pipe header is read in pipe mode), writing the stream to a
 * second memfd.
 *
 * It checks that
 *   - the reader returns -1, 0 or 1, with a message unless it returns 0;
 *   - whenever it returns 0 or 1 the output is a whole stream that the
 *     stream reader (stream/stream.h) reads to its end without an error:
 *     a header first, a summary last, every record well-formed;
 *   - an input that does not begin with perf's magic is refused (-1)
 *     with nothing written.
 *
 * Any broken invariant calls abort().  Nothing is printed on success and
 * everything is freed before returning.  Seeds: fuzz/make-corpus-import.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/perfdata.h"
#include "stream/stream.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* Reads the stream written to fd: the header first, the summary last, no error. */
static void check_stream(int fd)
{
	check(lseek(fd, 0, SEEK_SET) == 0);
	struct sp_reader *r = sp_reader_new(fd, "fuzz");
	check(r != NULL);
	struct sp_record rec;
	enum sp_read_status st;
	uint64_t n = 0;
	enum sp_rtype last = SP_R_UNKNOWN;
	while ((st = sp_reader_next(r, &rec)) == SP_READ_RECORD) {
		check(n > 0 || rec.type == SP_R_HEADER);
		last = rec.type;
		n++;
	}
	check(st == SP_READ_END);
	check(n >= 2 && last == SP_R_SUMMARY);
	sp_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int in = memfd_create("fuzz-import-in", MFD_CLOEXEC);
	int out = memfd_create("fuzz-import-out", MFD_CLOEXEC);
	check(in >= 0 && out >= 0);
	check(size == 0 || write(in, data, size) == (ssize_t)size);
	check(lseek(in, 0, SEEK_SET) == 0);

	struct sp_writer *w = sp_writer_new(out, "fuzz");
	char *argv[] = { "sp-import", "fuzz", NULL };
	struct sp_perf_import *im = sp_perf_import_new(in, w, "sp-import", 2, argv);
	check(w != NULL && im != NULL);
	int st = sp_perf_import_run(im);
	check(st >= -1 && st <= 1);
	check(st == 0 || sp_perf_import_error(im)[0] != '\0');
	bool flushed = sp_writer_close(w) == 0;
	if (size < 8 || memcmp(data, "PERFILE2", 8) != 0)
		check(st == -1 && lseek(out, 0, SEEK_END) == 0);
	if (st >= 0) {
		check(flushed);
		check_stream(out);
	}
	sp_perf_import_free(im);
	close(in);
	close(out);
	return 0;
}

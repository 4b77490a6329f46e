/* SPDX-License-Identifier: MIT
 * A program that uses libstackpulse as an outside project would: it
 * includes <stackpulse.h> only and is built with what pkg-config says
 * (tests/103-libstackpulse.bats).  It prints the library's version, the
 * error a bad argument gets, and the stacks and samples of a stream.
 *
 *	consumer STREAM
 */
#include <stdio.h>
#include <stackpulse.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: consumer STREAM\n");
		return 2;
	}
	printf("version %s\n", sp_version());

	struct sp_options *o = sp_options_new();
	if (!o || sp_options_set_rate(o, 0) == 0) {
		fprintf(stderr, "consumer: a rate of 0 was taken\n");
		return 1;
	}
	printf("rate 0: %s (%s)\n", sp_errmsg(-1),
	       sp_errno() == SP_ERR_INVALID ? "SP_ERR_INVALID" : "another code");
	sp_options_free(o);

	struct sp_snapshot *s = sp_snapshot_open(argv[1]);
	if (!s) {
		fprintf(stderr, "consumer: %s\n", sp_errmsg(-1));
		return 1;
	}
	const struct sp_batch *b;
	size_t stacks = 0, frames = 0;
	int st;
	while ((st = sp_snapshot_next(s, &b)) > 0) {
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_frame *f;
			frames += sp_stack_frames(sp_batch_stack(b, i), &f);
			stacks++;
		}
	}
	if (st < 0) {
		fprintf(stderr, "consumer: %s\n", sp_errmsg(-1));
		sp_snapshot_close(s);
		return 1;
	}
	struct sp_summary sum;
	if (sp_snapshot_summary(s, &sum) == 0)
		printf("summary samples %llu\n", (unsigned long long)sum.samples);
	printf("stacks %zu frames %zu\n", stacks, frames);
	sp_snapshot_close(s);
	return 0;
}

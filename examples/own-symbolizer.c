/* SPDX-License-Identifier: MIT
 * own-symbolizer: the stacks of a recording with the module each frame
 * lies in, for a symbolizer of one's own.  For every stack, one line
 *
 *   stack ID pid PID tid TID end REASON frames N
 *
 * then one line per frame, leaf first,
 *
 *   IP MODULE REL FLAGS
 *
 * with IP and REL in hexadecimal, MODULE the path the target mapped ("-"
 * for a frame outside any module) and FLAGS a letter each: k kernel,
 * j JIT code, r return address (the call is at IP - 1).  For a module
 * of kind elf, REL is what `addr2line -e MODULE` looks up (minus one for
 * a return address).  The first line says what the stream is
 *
 *   stage STAGE arch ARCH frequency HZ [start_timestamp_us N] [sample_interval_us N]
 *
 * and the last counts the stacks, and the samples the summary counted:
 *
 *   stacks N complete N samples N
 *
 *   own-symbolizer FILE.sps     (any stage; "-" is standard input)
 */
#include <inttypes.h>
#include <stdio.h>

#include <stackpulse.h>

static void print_stack(const struct sp_stack *st)
{
	struct sp_sample_info info;
	const struct sp_frame *frames;
	size_t n = sp_stack_frames(st, &frames);

	sp_stack_sample(st, &info);
	printf("stack %" PRIu64 " pid %u tid %u end %s frames %zu\n", sp_stack_id(st),
	       (unsigned)info.pid, (unsigned)info.tid, sp_stack_end_name(sp_stack_end(st)), n);
	for (size_t i = 0; i < n; i++) {
		struct sp_frame_context c;
		if (sp_stack_context(st, i, &c) < 0)
			break;
		printf("  0x%" PRIx64 " %s 0x%" PRIx64 " %s%s%s%s\n", c.frame->ip,
		       c.module.path[0] ? c.module.path : "-", c.frame->rel,
		       c.frame->flags & SP_FRAME_KERNEL ? "k" : "",
		       c.frame->flags & SP_FRAME_JIT ? "j" : "",
		       c.frame->flags & SP_FRAME_RETADDR ? "r" : "",
		       c.frame->flags ? "" : "-");
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: own-symbolizer FILE.sps\n");
		return 2;
	}
	struct sp_snapshot *s = sp_snapshot_open(argv[1]);
	if (!s) {
		fprintf(stderr, "own-symbolizer: %s\n", sp_errmsg(-1));
		return 1;
	}
	const struct sp_batch *b;
	struct sp_metadata m;
	struct sp_summary sum;
	unsigned long long stacks = 0, complete = 0;
	int rc;
	if (sp_snapshot_metadata(s, &m) == 0) {
		printf("stage %s arch %s frequency %llu", m.stage, m.arch,
		       (unsigned long long)m.frequency);
		if (m.has_start_timestamp)
			printf(" start_timestamp_us %llu", (unsigned long long)m.start_timestamp_us);
		if (m.has_sample_interval)
			printf(" sample_interval_us %llu", (unsigned long long)m.sample_interval_us);
		printf("\n");
	}
	while ((rc = sp_snapshot_next(s, &b)) > 0) {
		for (size_t i = 0; i < sp_batch_count(b); i++) {
			const struct sp_stack *st = sp_batch_stack(b, i);
			print_stack(st);
			stacks++;
			complete += sp_stack_end(st) == 0;
		}
	}
	printf("stacks %llu complete %llu", stacks, complete);
	if (rc == 0 && sp_snapshot_summary(s, &sum) == 0)
		printf(" samples %llu", (unsigned long long)sum.samples);
	printf("\n");
	if (rc < 0)
		fprintf(stderr, "own-symbolizer: %s\n", sp_errmsg(-1));
	sp_snapshot_close(s);
	return rc < 0 ? 1 : 0;
}

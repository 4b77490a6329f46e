/* SPDX-License-Identifier: MIT
 * Unit tests of processes in containers (util/procns.h) and of finding a
 * module's file as a live process maps it (sp_modfile_open_proc).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "util/buildid.h"
#include "util/modfile.h"
#include "util/procfs.h"
#include "util/procns.h"

static uint32_t nspid(const char *s)
{
	return sp_proc_status_nspid(s, strlen(s));
}

SP_TEST(procns_status_nspid)
{
	SP_CHECK(nspid("Name:\tdeep\nNSpid:\t8073\t1\nNSpgid:\t1\n") == 1);
	SP_CHECK(nspid("NSpid:\t9\t5\t3") == 3);		/* nested twice, no newline */
	SP_CHECK(nspid("Name:\tsh\nNSpid:\t42\n") == 0);	/* our own namespace */
	SP_CHECK(nspid("Name:\tsh\n") == 0);			/* a kernel without NSpid */
	SP_CHECK(nspid("Name:\tNSpid:\t7\t3\nNSpid:\t12\n") == 0);	/* not at a line's start */
	SP_CHECK(nspid("NSpid:\t12\t99999999999\n") == 0);	/* beyond 32 bits */
	SP_CHECK(nspid("NSpid:\t12\tx3\n") == 0);
	SP_CHECK(nspid("NSpid:") == 0);
	SP_CHECK(sp_proc_status_nspid("NSpid:\t1\t2", 9) == 0);	/* cut after the first */
}

static uint32_t tgid(const char *s)
{
	return sp_proc_status_tgid(s, strlen(s));
}

static pid_t pidfile(const char *s)
{
	return sp_pidfile_parse(s, strlen(s));
}

SP_TEST(procns_status_tgid_and_pid_files)
{
	SP_CHECK(tgid("Name:\tworker\nTgid:\t812\nPid:\t815\n") == 812);
	SP_CHECK(tgid("Name:\tTgid:\t5\nTgid:\t6\n") == 6);	/* a name cannot forge it */
	SP_CHECK(tgid("Tgid:\t5\t6\n") == 0);
	SP_CHECK(tgid("Tgid:\t\n") == 0);
	SP_CHECK(tgid("Pid:\t3\n") == 0);
	SP_CHECK(sp_proc_tgid(getpid()) == getpid());
	SP_CHECK(pidfile("1234\n") == 1234);
	SP_CHECK(pidfile("77") == 77);
	SP_CHECK(pidfile("4194304 extra words") == 4194304);
	SP_CHECK(pidfile("4194305\n") == 0);
	SP_CHECK(pidfile("0\n") == 0);
	SP_CHECK(pidfile("12a\n") == 0);
	SP_CHECK(pidfile(" 12\n") == 0);
	SP_CHECK(pidfile("") == 0);
	SP_CHECK(sp_pidfile_parse("12\0""3", 4) == 0);
}

SP_TEST(procns_self_is_no_container)
{
	struct sp_proc_ns ns;
	char what[256];
	SP_CHECK(sp_proc_ns_get(getpid(), &ns) == 0);
	SP_CHECK(ns.mntns == 0);
	SP_CHECK(sp_proc_root_check(getpid(), what, sizeof(what)) == 0);
	/* Our own root: a path resolves as it does here. */
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	SP_CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	int fd = sp_proc_open_in_root(getpid(), exe, O_RDONLY);
	SP_CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	/* A magic link such as /proc/self/exe is not followed there. */
	SP_CHECK(sp_proc_open_in_root(getpid(), "/proc/self/exe", O_RDONLY) < 0);
}

/*
 * A copy of this program, mapped and then removed: only the mapping (and
 * map_files) has it any more, the way a container's file is out of the
 * host's sight.
 */
SP_TEST(modfile_open_proc_finds_a_mapped_file)
{
	char exe[4096], tmp[] = "/tmp/sp-unit-procns.XXXXXX";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	SP_CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	unsigned char bid[SP_BUILD_ID_MAX], other[SP_BUILD_ID_MAX];
	int bidlen = sp_build_id_path(exe, bid);
	SP_CHECK(bidlen > 0);
	int in = open(exe, O_RDONLY), out = mkstemp(tmp);
	SP_CHECK(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t k;
	while ((k = read(in, buf, sizeof(buf))) > 0)
		SP_CHECK(write(out, buf, (size_t)k) == k);
	close(in);
	struct stat sb;
	SP_CHECK(fstat(out, &sb) == 0);
	void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, out, 0);
	SP_CHECK(m != MAP_FAILED);
	close(out);
	unlink(tmp);

	struct sp_modfile_search s;
	sp_modfile_search_init(&s);
	s.trust_unidentified = true;	/* a stream of this boot */
	/* The mapping's end, as map_files names it, is page-aligned. */
	unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);
	unsigned long long len = ((unsigned long long)sb.st_size + page - 1) / page * page;
	struct sp_modfile_proc p = { (unsigned)getpid(), (unsigned long long)(uintptr_t)m,
				     (unsigned long long)(uintptr_t)m + len };
	char found[4200];
	bool mismatch;
	/* Without the process, or for another boot, the file is not found. */
	SP_CHECK(sp_modfile_open_proc(&s, tmp, bid, bidlen, false, NULL, found, sizeof(found),
				      &mismatch) < 0);
	s.trust_unidentified = false;
	SP_CHECK(sp_modfile_open_proc(&s, tmp, bid, bidlen, false, &p, found, sizeof(found),
				      &mismatch) < 0);
	s.trust_unidentified = true;
	/* map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE); the tests run as root. */
	if (geteuid() == 0) {
		int fd = sp_modfile_open_proc(&s, tmp, bid, bidlen, false, &p, found,
					      sizeof(found), &mismatch);
		SP_CHECK(fd >= 0);
		SP_CHECK(strstr(found, "/map_files/") != NULL);
		if (fd >= 0)
			close(fd);
		/* Another identity is refused, and said to be one. */
		memcpy(other, bid, (size_t)bidlen);
		other[0] ^= 1;
		SP_CHECK(sp_modfile_open_proc(&s, tmp, other, bidlen, false, &p, found,
					      sizeof(found), &mismatch) < 0);
		SP_CHECK(mismatch);
	}
	munmap(m, (size_t)sb.st_size);
}

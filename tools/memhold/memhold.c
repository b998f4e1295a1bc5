/*
 * tools/memhold/memhold.c — makes this machine look smaller: holds BYTES of
 * memory locked (mlock), out of reach of the page cache and of every other
 * process, until PARENT (the benchmark script that started it) ends.
 *
 *   memhold BYTES PARENT
 *
 * Prints "held N MiB" on stdout once all of it is locked, then waits; exits
 * when PARENT ends (or on SIGTERM), giving the memory back. A machine with
 * 24 GB less 21.6 GB held runs a command as one with 2.4 GB would: its page
 * cache is what is left, reclaimed by the kernel's own thread (kswapd) as on
 * a real machine of that size, where a cgroup v1 memory group reclaims in
 * the command's own page faults (docs/notes/bookdb.md, run 19). joseki's
 * commands leave locked memory out of the memory they may have
 * (shogi/memuse.h), so their defaults and read-ahead follow the smaller
 * machine. Needs root (or CAP_IPC_LOCK, or RLIMIT_MEMLOCK of BYTES). Used by
 * tools/bench-scale.sh (SCALE_HOLD=1) and tools/bench_cluster.sh
 * (BENCH_CLUSTER_RAM).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end;
	if (argc != 3) {
		fprintf(stderr, "usage: memhold BYTES PARENT\n");
		return 2;
	}
	errno = 0;
	unsigned long long bytes = strtoull(argv[1], &end, 10);
	if (errno || *end || !bytes) {
		fprintf(stderr, "memhold: '%s' is not a number of bytes\n", argv[1]);
		return 2;
	}
	long parent = strtol(argv[2], &end, 10);
	if (*end || parent <= 1) {
		fprintf(stderr, "memhold: '%s' is not a process id\n", argv[2]);
		return 2;
	}
	/* Killed when the process that started it ends (a script killed
	 * with -9 too); it may have ended already. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != (pid_t)parent) {
		fprintf(stderr, "memhold: process %ld is not the one that started it (gone?)\n",
		        parent);
		return 1;
	}
	size_t len = (size_t)bytes;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "memhold: cannot map %llu bytes: %s\n", bytes, strerror(errno));
		return 1;
	}
	if (mlock(p, len) < 0) {
		fprintf(stderr, "memhold: cannot lock %llu bytes: %s%s\n", bytes, strerror(errno),
		        errno == EPERM || errno == ENOMEM
		            ? " (more than the machine has, or no right to lock memory: root or "
		              "CAP_IPC_LOCK)"
		            : "");
		return 1;
	}
	printf("held %llu MiB\n", bytes >> 20);
	fflush(stdout);
	for (;;) pause();
}

/*
 * shogi/memuse.h — what a process's own memory costs: its peak anonymous
 * memory (heap, stacks, private maps: what it holds apart from the files it
 * maps) and the budget a whole-book pass may use (`--memory SIZE`).
 *
 * Resident memory says little about a command on a large book: LMDB maps the
 * book, and every page read counts as resident until the kernel wants it back
 * (a scan of a 100 GB book "uses" what is free of the machine's RAM). The
 * kernel keeps a peak only of the whole (VmHWM), so the meter samples the
 * process's anonymous resident memory (/proc/self/statm: resident less
 * file-backed and shared) from a thread every 10 ms, and once more when
 * asked: a peak shorter than that may be missed, a peak held longer is not.
 */
#ifndef SHOGI_MEMUSE_H
#define SHOGI_MEMUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Starts the sampler (once per process; later calls do nothing). Returns 0,
 * or -1 when no thread could be started (the peak is then sampled only when
 * asked). */
int memuse_start(void);

/* The anonymous resident bytes now; 0 when /proc cannot say. */
uint64_t memuse_anon_now(void);

/* The largest anonymous resident size seen since memuse_start (sampled now
 * too). */
uint64_t memuse_anon_peak(void);

/* The default budget of a whole-book pass: a quarter of the memory the
 * process may have (memuse_ram), at least 64 MiB. */
uint64_t memuse_default_budget(void);

/* The memory the process may have in bytes: the machine's physical memory
 * less what no page cache can ever use (memuse_unusable), or its control
 * group's limit where that is lower (a container's, a Slurm job's, systemd's
 * MemoryMax); 0 when neither can be read. */
uint64_t memuse_ram(void);

/* Of a machine's memory, the bytes locked out of the page cache: the
 * unevictable pages (mlock'ed by any process: a database's locked buffer
 * pool, a memory hold that makes a machine look smaller) and the huge pages
 * reserved for hugetlbfs, from meminfo, /proc/meminfo's text ("Unevictable:"
 * and "Hugetlb:", in kB); 0 when it names neither. */
uint64_t memuse_unusable(const char *meminfo);

/* A file of bytes read at random is better read without the kernel's
 * read-ahead: it is larger than half the memory the process may have, so
 * the windows read around each page would evict the pages later reads need
 * (smaller, read-ahead soon has the file in the page cache in large reads). */
bool memuse_too_large_to_cache(uint64_t bytes);

/* The memory limit of the control groups a process is in, the least of its
 * group's and its ancestors': groups is /proc/self/cgroup's text, root the
 * control groups' mount (/sys/fs/cgroup; version 1's memory hierarchy
 * under root/memory). UINT64_MAX when no group limits it. */
uint64_t memuse_group_limit(const char *groups, const char *root);

/*
 * Parses a size as `--memory` takes it: a whole or decimal number with an
 * optional unit K, M, G or T (powers of 1024; `k`, `KB`, `KiB`, `m`... the
 * same), `256M`, `1.5G`, `8G`, `100000` (bytes); no sign, exponent or hex.
 * Stores the bytes in *out and returns 0, or -1 when s is not a size, -2 when
 * it is one below 1 MiB (*out untouched).
 */
int memuse_parse_size(const char *s, uint64_t *out);

/* "256 MiB", "1.5 GiB": bytes as a person reads them, in buf (>= 24 bytes). */
const char *memuse_format(uint64_t bytes, char *buf, size_t len);

#endif

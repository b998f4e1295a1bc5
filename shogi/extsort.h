/*
 * shogi/extsort.h — sorting more records than memory holds: an external merge
 * sort, as database engines sort, for whole-book passes under `--memory`.
 *
 * Records (byte strings of any length up to EXTSORT_MAX_RECORD) are added one
 * at a time; while they fit in the budget they are kept in memory, and when
 * the next one would not, the ones held are sorted and written to disk as a
 * sorted run. At the end the runs are merged (several levels when there are
 * more runs than the budget can give a read buffer each) and the records come
 * back in order, one at a time. When everything fitted, nothing touched the
 * disk.
 *
 * The sort is stable: records the comparison calls equal come back in the
 * order they were added, so that a pass gives the same output whatever its
 * budget.
 *
 * Sorting uses a second thread where it can: a run is sorted and written by
 * a thread of its own while the next records are added (the two buffers then
 * share the budget), and records that all fit are sorted in two halves side
 * by side, then merged from both ends at once. The comparison may therefore
 * be called from two threads at once. Under the two byte-string comparisons
 * below (extsort_cmp_bytes, extsort_cmp_tail) the sort in memory reads the
 * records itself, 8 bytes at a time, and never calls back.
 *
 * Run files are made in the directory given without a name (O_TMPFILE;
 * where the file system cannot, named and unlinked at once), so only their
 * descriptors keep them and a process killed at any moment leaves no run
 * behind: a crash costs the pass, never disk space.
 */
#ifndef SHOGI_EXTSORT_H
#define SHOGI_EXTSORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shogi/errors.h"

#define EXTSORT_MAX_RECORD (1u << 24) /* bytes of one record at most */
#define EXTSORT_MIN_BUDGET (1u << 20) /* the least budget taken (smaller: this) */

/* <0, 0, >0 as a sorts before, with or after b. */
typedef int (*ExtSortCmp)(const void *a, size_t alen, const void *b, size_t blen, void *ctx);

typedef struct ExtSort ExtSort;

/* The comparison of records by their first n bytes, as memcmp orders them
 * (ctx: n, as (void *)(uintptr_t)n; every record at least n bytes long).
 * Given as the sorter's comparison it lets the sort compare a record's first
 * 8 bytes as a number kept beside it, without calling back. */
int extsort_cmp_bytes(const void *a, size_t alen, const void *b, size_t blen, void *ctx);

/* The comparison of records as byte strings from their byte n to their end,
 * as memcmp orders them and a prefix before what it starts (ctx: n, as
 * (void *)(uintptr_t)n). Given as the sorter's comparison it lets the sort
 * read the strings 8 bytes at a time, each byte about once however long the
 * prefixes the records share (a multikey quicksort). */
int extsort_cmp_tail(const void *a, size_t alen, const void *b, size_t blen, void *ctx);

typedef struct {
	uint64_t records, bytes; /* added */
	uint64_t runs;           /* sorted runs written to disk (0: all in memory) */
	uint64_t merge_passes;   /* merge levels before the last (0: one merge, or none) */
	uint64_t disk_bytes;     /* bytes written to run files in all */
} ExtSortStats;

/*
 * A sorter that keeps at most about budget bytes of records and bookkeeping in
 * memory (EXTSORT_MIN_BUDGET at least), writing runs into dir (NULL: $TMPDIR or
 * /tmp). Returns 0, or -1 with errno (ENOMEM).
 */
JOSEKI_MUST_USE int extsort_open(ExtSort **out, const char *dir, uint64_t budget, ExtSortCmp cmp,
                                 void *ctx);

/* Adds a record (copied). 0, or -1 with errno (EINVAL for a record over
 * EXTSORT_MAX_RECORD or after extsort_finish; a write error of a run). */
JOSEKI_MUST_USE int extsort_add(ExtSort *s, const void *rec, size_t len);

/* Ends the input and prepares the merge. 0, or -1 with errno. */
JOSEKI_MUST_USE int extsort_finish(ExtSort *s);

/* The next record in order: 1 with *rec (valid until the next call) and *len,
 * 0 at the end, -1 with errno on a read error. */
JOSEKI_MUST_USE int extsort_next(ExtSort *s, const void **rec, size_t *len);

/*
 * Reading from both ends at once, on two threads: a sorter told so before
 * its first record (its runs then keep each record's length after it too,
 * 4 bytes more a record) gives, after extsort_finish, the first half of the
 * records (rounded up) through extsort_next and the rest through
 * extsort_next_back, the last first. The two may be called from two threads
 * at once; each end has its own read buffers, half the size. Together they
 * give every record once, in the same order as one end would.
 */
void extsort_both_ends(ExtSort *s);

/* From the back of a sorter read from both ends: the record before the one
 * given last (the greatest first), as extsort_next gives. 1, 0 at the end of
 * this end's share, -1 with errno (EINVAL: not a sorter read from both ends,
 * or not finished). */
JOSEKI_MUST_USE int extsort_next_back(ExtSort *s, const void **rec, size_t *len);

void extsort_stats(const ExtSort *s, ExtSortStats *st);

/* A new temporary file in dir (NULL: $TMPDIR or /tmp), open for reading and
 * writing and already unlinked, as the runs are: for a pass's own spill
 * files. NULL with errno on failure. */
FILE *extsort_temp_file(const char *dir);

/* Frees everything; the run files go with their descriptors. */
void extsort_free(ExtSort *s);

#endif

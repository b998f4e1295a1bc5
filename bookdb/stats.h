/*
 * bookdb/stats.h — sizes and counts of a book: what `joseki stats` prints and
 * the HTTP server's /v1/stats answers, built in one place.
 *
 * By default everything is read, not counted: positions, games, the change
 * log, pages and bytes are database statistics, thought and moves the counts
 * the store keeps (bookdb_counts), leaves and corrupt what the last stored
 * scan counted (bookdb_scan_get), the start position's minimax value and the
 * last minimax run's cyclic count a few lookups; no record is read but the
 * start position's. The whole-book scan (`stats --scan`) counts thought,
 * moves, leaves (positions none of whose stored moves leads to a book
 * position) and corrupt over every record (seconds to minutes on a large
 * book). The leaves are found through a set of the book's keys in memory
 * (about 24 bytes a position) while that fits the scan's memory budget, and
 * beyond it by a sort-merge join: every stored move's child key, sorted on
 * disk (shogi/extsort.h), met with the book's keys in their order, one bit a
 * position in memory.
 */
#ifndef BOOKDB_STATS_H
#define BOOKDB_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"

typedef struct {
	bool scanned; /* thought, moves, leaves and corrupt were counted now (the scan) */
	uint64_t positions, thought, moves, games, leaves, corrupt, bytes, bytes_used;
	bool counts_known;   /* thought and moves: scanned, or kept (counts.kept) */
	bool leaves_known;   /* leaves and corrupt: scanned, or a stored scan's */
	bool leaves_current; /* and no commit came after the snapshot they count */
	int64_t leaves_time; /* when they were counted (unix seconds) */
	uint64_t txnid;      /* the snapshot's id (bookdb_txn_id) */
	BookCounts counts;   /* the kept counts as read (the scan compares them) */
	BookSpace space;
	BookChangesInfo changes;
	int minimax_seen, root_known;
	int root_value;
	int cyclic_known; /* meta "minimax" (the last run's summary) says how many */
	long long cyclic;
	uint64_t sorted_bytes; /* the scan's leaves join: bytes sorted on disk (0: in memory) */
} BookStats;

/* Fills st from txn's snapshot of db; the scan only when full. Returns 0 or a
 * negative BOOKDB_* code: BOOKDB_ECORRUPT when the database is damaged past a
 * record (st then counts what was read before). A record that is not sound
 * (as joseki check has it, bookdb/check.h) is counted in corrupt; thought and
 * moves count every record whose head decodes, as the kept counts do. */
JOSEKI_MUST_USE int bookdb_stats(BookStats *st, BookDB *db, BookTxn *txn, bool full);
/* As bookdb_stats; the scan ends with BOOKDB_ESTOPPED soon after *stop is set
 * (stop may be NULL). */
JOSEKI_MUST_USE int bookdb_stats_until(BookStats *st, BookDB *db, BookTxn *txn, bool full,
                                       const atomic_bool *stop);
/* As bookdb_stats_until, the scan within memory bytes (0: memuse_default_budget,
 * a quarter of the memory the process may have): past it, the leaves are
 * counted by the join above. */
JOSEKI_MUST_USE int bookdb_stats_budget(BookStats *st, BookDB *db, BookTxn *txn, bool full,
                                        const atomic_bool *stop, uint64_t memory);
/* As bookdb_stats_budget with the scan, telling progress (may be NULL) every
 * 65,536 records of its two passes over the book: done of total, total twice
 * the records the snapshot counts (the second pass of the sort-merge join may
 * end before it: its progress then stops short). */
JOSEKI_MUST_USE int bookdb_stats_scan(BookStats *st, BookDB *db, BookTxn *txn,
                                      const atomic_bool *stop, uint64_t memory,
                                      BookProgressFn progress, void *ctx);
/*
 * Keeps what the scan st counted (leaves, corrupt, when) in db's meta, in a
 * write transaction of its own: current until the next commit when nothing
 * was committed since st's snapshot. When the kept counts disagreed with the
 * scan's (*differed set: a write that bypassed them), they are counted again
 * in the same commit. Returns 0 or a negative BOOKDB_* code (BOOKDB_EREADONLY
 * for a book opened read-only).
 */
JOSEKI_MUST_USE int bookdb_stats_keep(BookDB *db, const BookStats *st, bool *differed);

/* One timed run of the lookup benchmark. */
typedef struct {
	const char *name; /* "lookups", "lookups_full", "index_lookups", "index_lookups_full" */
	uint64_t n;
	double ms, cpu_ms;
} BookLookupTime;

typedef struct {
	/* Moves only (what query and selection need: they know the position), then
	 * the whole record with its position unpacked; through LMDB, then through a
	 * snapshot index (bookdb/index.h), whose build is timed too. */
	BookLookupTime via[4];
	double index_ms, index_cpu_ms;
	uint64_t index_positions;
	size_t index_bytes;
} BookLookupBench;

/*
 * `stats --bench-lookups N`: N point lookups of random keys of the book (a
 * reservoir sample of min(N, positions) keys, looked up over and over), each
 * way in turn; rec is scratch. Returns 0, or BOOKDB_EINVAL for an empty book,
 * BOOKDB_ECORRUPT when a lookup fails, or the store's error, with a message in
 * err (BOOKDB_ERRLEN bytes).
 */
JOSEKI_MUST_USE int bookdb_bench_lookups(BookLookupBench *out, BookTxn *txn, BookRecord *rec,
                                         uint64_t n, char *err);

/* The `stats --json` object (a field not known null); NULL when out of
 * memory. */
struct json_t;
struct json_t *bookdb_stats_json(const BookStats *st);

#endif

/*
 * bookdb/stats.h — sizes and counts of a book: what `joseki stats` prints and
 * the HTTP server's /v1/stats answers, built in one place.
 *
 * positions, games, the change log, pages and bytes, the start position's
 * minimax value and the last minimax run's cyclic count are cheap (database
 * statistics and a few lookups); thought, moves, leaves (positions none of
 * whose stored moves leads to a book position) and corrupt need a scan of
 * every record (seconds to minutes on a large book).
 */
#ifndef BOOKDB_STATS_H
#define BOOKDB_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "bookdb/bookdb.h"

typedef struct {
	bool scanned; /* thought, moves, leaves and corrupt were counted (the whole-book scan) */
	uint64_t positions, thought, moves, games, leaves, corrupt, bytes, bytes_used;
	BookSpace space;
	BookChangesInfo changes;
	int minimax_seen, root_known;
	int root_value;
	int cyclic_known; /* meta "minimax" (the last run's summary) says how many */
	long long cyclic;
} BookStats;

/* Fills st from txn's snapshot of db; the scan only when full. Returns 0 or a
 * negative BOOKDB_* code. */
int bookdb_stats(BookStats *st, BookDB *db, BookTxn *txn, bool full);

/* The `stats --json` object (the scan's fields null without it); NULL when
 * out of memory. */
struct json_t;
struct json_t *bookdb_stats_json(const BookStats *st);

#endif

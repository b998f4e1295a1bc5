/*
 * bookdb/synth.h — a synthetic analysed book, for benchmarks and tests (`joseki
 * synth`): random legal lines from the start position (20-200 plies). Each
 * position stores 8 "analysed" moves chosen by a hash of (key, move), so every
 * visit of a position offers the same moves and lines that reach it by
 * different orders transpose; now and then both sides undo their last moves,
 * which puts repetition cycles into the book graph. Values are plausible (best
 * first, 5-64 cp apart, one depth 10-29 and node count per position).
 *
 * The positions are generated in memory (deduplicated by key, and against the
 * book when it is not empty), then sorted by key and written in large batches;
 * into an empty book they are appended (LMDB append mode: full pages).
 * unsorted writes them in generation order through ordinary puts instead, as
 * ingestion does (for the benchmark of random inserts). The same seed gives
 * the same book.
 */
#ifndef BOOKDB_SYNTH_H
#define BOOKDB_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"

#define BOOKDB_SYNTH_BATCH 1000000 /* puts per committed transaction by default */

typedef struct {
	uint64_t positions; /* new positions to add (< 2^32) */
	uint64_t seed;
	size_t batch; /* puts per transaction; 0: BOOKDB_SYNTH_BATCH */
	bool unsorted;
	/* Called every million positions ("generated", then "written"); may be NULL. */
	void (*progress)(void *ctx, const char *phase, size_t done, size_t total);
	void *progress_ctx;
} BookSynthOptions;

typedef struct {
	size_t positions;                /* added */
	double total_ms;                 /* the whole run */
	double insert_ms, insert_cpu_ms; /* the writing alone, wall and CPU time */
} BookSynthStats;

/*
 * Adds opt->positions synthetic positions to db (open read-write). Returns 0,
 * or BOOKDB_EINVAL (too many positions), BOOKDB_ENOMEM or the store's error,
 * with a message in err (BOOKDB_ERRLEN bytes); batches committed before a
 * failure stay.
 */
JOSEKI_MUST_USE int bookdb_synth(BookSynthStats *st, BookDB *db, const BookSynthOptions *opt,
                                 char *err);

#endif

/*
 * bookdb/synth.h — a synthetic analysed book, for benchmarks and tests (`joseki
 * synth`): random legal lines from the start position (20-200 plies). Each
 * position stores 8 "analysed" moves chosen by a hash of (key, move), so every
 * visit of a position offers the same moves and lines that reach it by
 * different orders transpose; now and then both sides undo their last moves,
 * which puts repetition cycles into the book graph. Values are plausible (best
 * first, 5-64 cp apart, one depth 10-29 and node count per position).
 *
 * What `positions = N` means: the walk's visits are numbered in the order
 * made; the book gets the positions of the shortest prefix of visits that holds
 * N positions it did not hold, each with its record as first visited (the
 * record says the ply it was met at, and a reversal the visit took is its 8th
 * move). The walk never looks at what is known, so this is one set whatever
 * the memory: the same seed gives the same book at any budget. (So a line
 * that undoes a move at a position first met by another visit goes on by a
 * move that position's record may lack: the positions after it are in the
 * book, not always reached by its edges from the start.)
 *
 * How: in rounds. While the positions still wanted are more than the budget
 * holds (about 320 bytes each), a round makes exactly that many visits, sorts
 * them by key through the external sort (shogi/extsort.h: stable, so a key's
 * first visit comes first; runs on disk in tmpdir beyond the budget), and
 * writes each key's first visit unless the book has it: appended into an
 * empty book (LMDB append mode: full pages), put otherwise. A round of V
 * visits adds at most V positions, so no round overshoots. The last round,
 * once the rest fits, is made in memory (deduplicated by a key map and
 * against the book), sorted and written; unsorted writes it in the order
 * found through ordinary puts, as ingestion does (for the benchmark of random
 * inserts), and always works this way, whatever the budget.
 *
 * A kill leaves the book as of its last committed batch (a valid book, fewer
 * positions) and no run file (they are unlinked at once).
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
	size_t batch; /* puts per transaction; 0: BOOKDB_SYNTH_BATCH, or fewer when the
	                 budget is small (budget / 512 bytes) */
	bool unsorted;
	uint64_t memory;    /* budget in bytes; 0: memuse_default_budget() */
	const char *tmpdir; /* the external sort's runs (NULL: $TMPDIR or /tmp) */
	/* Called every million positions ("generated", then "written"); may be NULL. */
	void (*progress)(void *ctx, const char *phase, size_t done, size_t total);
	void *progress_ctx;
} BookSynthOptions;

typedef struct {
	size_t positions;                /* added */
	double total_ms;                 /* the whole run */
	double insert_ms, insert_cpu_ms; /* the writing alone, wall and CPU time */
	uint64_t visits;                 /* positions the walk made, repeats included */
	uint64_t rounds;                 /* generation rounds (1: everything in one) */
	uint64_t sort_runs;              /* sorted runs written to disk */
	uint64_t sort_disk_bytes;        /* bytes of those runs */
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

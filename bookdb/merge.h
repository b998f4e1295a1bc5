/*
 * bookdb/merge.h — one book into another (joseki merge), and the record merge
 * rule that joseki import shares (docs/bookdb.md, "Merge").
 *
 * Positions are unioned. Of a position both books thought about, the deeper
 * analysis wins whole (its think depth and its engine evaluations; ties: more
 * nodes, then the newer book, then the larger analysis by a fixed order, so
 * that the result does not depend on which book is the destination); the
 * other side's engine evaluations go, its game-comment evaluations stay where
 * the winner has none. Game statistics add up, and a game both books counted
 * (the same id in both games databases) is taken out of the source's share by
 * replaying the plies its mark records (bookdb/game.h). Minimax values of a
 * rewritten record are cleared: the caller runs minimax afterwards (bookdb
 * does not; the change log tells the incremental run what changed).
 */
#ifndef BOOKDB_MERGE_H
#define BOOKDB_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "bookdb/record.h"
#include "shogi/errors.h"

/* Which analysis wins when both records were thought about. */
typedef enum {
	BOOKDB_PREFER_DEEPER = 0, /* think depth, then nodes, then tie (below) */
	BOOKDB_PREFER_FIRST = 1,  /* a's (the record already there) */
	BOOKDB_PREFER_LAST = 2,   /* b's (the one coming in) */
} BookPrefer;

/* What bookdb_record_merge changed relative to a. */
typedef struct {
	bool changed;     /* out differs from a (minimax values aside) */
	bool replaced;    /* b's analysis won and differs from a's */
	bool stats;       /* some move's game statistics changed */
	bool moves_added; /* b brought moves a did not have */
} BookMergeDiff;

/*
 * Merges record b (the incoming side, its statistics already net of shared
 * games) into a, into out (which may be a; not b). tie decides equal analyses
 * under BOOKDB_PREFER_DEEPER: > 0 a wins, < 0 b wins, 0 the larger analysis
 * in a fixed order. stats_max: instead of adding statistics, keep the larger
 * of the two per move (used when the shared games cannot be told apart).
 * Moves are a's in a's order, then b's new ones in b's order. When out differs
 * from a, its minimax flag and values are cleared. Never fails.
 */
void bookdb_record_merge(BookRecord *out, const BookRecord *a, const BookRecord *b,
                         BookPrefer prefer, int tie, bool stats_max, BookMergeDiff *diff);

/* Progress: records of the source looked at, of total. */
typedef void (*BookMergeProgressFn)(void *ctx, uint64_t done, uint64_t total);

typedef struct {
	bool dry_run;                 /* count what would change; write nothing */
	size_t batch;                 /* source records per write transaction (0: 10000) */
	BookMergeProgressFn progress; /* may be NULL */
	void *progress_ctx;
} BookMergeOptions;

typedef struct {
	uint64_t positions;       /* records in the source */
	uint64_t added;           /* positions new to the destination */
	uint64_t replaced;        /* positions whose analysis the source's replaced */
	uint64_t stats_merged;    /* positions whose game statistics changed */
	uint64_t changed;         /* positions rewritten (added ones not counted) */
	uint64_t unchanged;       /* positions the merge leaves as they are */
	uint64_t games_added;     /* games of the source new to the destination */
	uint64_t games_duplicate; /* games both books counted (counted once) */
	uint64_t games_completed; /* games DST counted cut short, without a result, and SRC
	                             whole: SRC's counting of them kept (not duplicates) */
	uint64_t games_unlocated; /* of those, with no plies kept: statistics of the
	                             whole merge taken as the larger, not the sum */
	uint64_t stats_clamped;   /* plies of shared games the source's records lacked */
	uint64_t bad_src;         /* source records that do not decode: not merged */
	uint64_t bad_dst;         /* destination records that do not decode: left as they are */
	Key first_bad;            /* the first of those (bad_src + bad_dst > 0) */
	bool first_bad_in_dst;    /* ...and in which book */
	uint64_t batches;         /* write transactions committed */
	bool resumed;             /* an interrupted merge of this source was completed */
	double seconds;
} BookMergeStats;

/* Size of the message buffer of bookdb_merge (NUL included). */
#define BOOKDB_MERGE_ERRLEN 512

/*
 * Merges src into dst (opened read-write; src may be opened read-only, or be
 * dst itself, which changes nothing). The source is read from one snapshot.
 * Writes go in batches, each one transaction that also records in dst's meta
 * (key "merge") which source is being merged and how far: a kill leaves dst
 * as before or after whole batches, and the same merge run again goes on from
 * the last batch to the same result. The source's game ids go in with the
 * last transaction, which also clears the mark. A dst holding the mark of
 * another source is refused (BOOKDB_EBUSY, message naming it) until that merge
 * is completed. Records that do not decode are counted (bad_src, bad_dst) and
 * skipped: a damaged source record is not copied, a damaged destination record
 * is left as it is. dry_run: dst may be read-only; nothing is written.
 * Returns 0 or a negative BOOKDB_ code with a message in err (BOOKDB_MERGE_ERRLEN).
 */
JOSEKI_MUST_USE int bookdb_merge(BookMergeStats *st, BookDB *dst, BookDB *src,
                                 const BookMergeOptions *opt, char *err);

/* How bookdb_merge_books merges several sources, and what it tells on the way. */
typedef struct {
	BookMergeOptions each; /* for every source (progress and progress_ctx unused:
	                          see progress below) */
	/* Progress of the source src (may be NULL). */
	void (*progress)(void *ctx, const char *src, uint64_t done, uint64_t total);
	/* Called after each source is merged, or failed to merge (rc < 0, err its
	 * message), with its own figures (may be NULL). */
	void (*source_done)(void *ctx, const char *src, const BookMergeStats *st, int rc,
	                    const char *err);
	void *ctx;
	/* Backs the values up after the merge (the front end passes minimax's hook;
	 * unset: the caller runs no minimax). It runs only when the merge wrote
	 * something: not a dry run, and a position added or changed or an
	 * interrupted merge completed. */
	BookMinimaxHook minimax;
} BookMergeBooksOptions;

/*
 * joseki merge: merges the books at srcs[0..n) into the book at dst (opened
 * with dst_opt, which may create it; read-only for a dry run), one after the
 * other, then runs the minimax hook (above) on it. Every source is opened
 * first, read-only (except a path naming dst's own book, which is merged into
 * itself): one that does not open fails the run before dst is opened, made or
 * written. *total gets the sum of the sources' figures (the first undecodable
 * record is the first source's that had one); *ran_minimax whether the hook
 * ran. Stops at the first failure: returns a negative BOOKDB_ code with the
 * message in err (BOOKDB_MERGE_ERRLEN): a book that does not open (its path
 * named), a failed merge (also passed to source_done), or BOOKDB_EIO with
 * "minimax: DST: ..." when the hook fails (the merge itself is then complete).
 */
JOSEKI_MUST_USE int bookdb_merge_books(BookMergeStats *total, bool *ran_minimax, const char *dst,
                                       const BookDBOptions *dst_opt, const char *const *srcs,
                                       size_t n, const BookMergeBooksOptions *opt, char *err);

#endif

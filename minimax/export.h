/*
 * minimax/export.h — writes a book as a YaneuraOu DB2016 book sorted for
 * BookOnTheFly, or as an Apery binary book (joseki export, docs/minimax.md).
 */
#ifndef MINIMAX_EXPORT_H
#define MINIMAX_EXPORT_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>

#include "bookdb/bookdb.h"

enum {
	EXPORT_OK = 0,
	EXPORT_EIO = ERR_EXPORT - 0,
	EXPORT_ENOMEM = ERR_EXPORT - 1,
	EXPORT_EBOOK = ERR_EXPORT - 2,
};

const char *export_strerror(int code);

typedef enum { EXPORT_MOVES_BEST, EXPORT_MOVES_WINDOW, EXPORT_MOVES_ALL } ExportMoves;

/*
 * The YaneuraOu depth field. SEARCH (the default): the depth of the analysis
 * a move's value rests on (its own analysis; for a value backed up through
 * the position it leads to, that position's analysis), which YaneuraOu's
 * BookDepthLimit compares; 0 for a value from games alone. DISTANCE: plies to
 * the leaf the value comes from, as YaneuraOu's makebook peta_shock writes it
 * (0 for a leaf: an engine must then set BookDepthLimit 0).
 */
typedef enum { EXPORT_DEPTH_SEARCH = 0, EXPORT_DEPTH_DISTANCE = 1 } ExportDepth;

/* YaneuraOu's defaults that leave book moves out (its options BookDepthLimit,
 * BookEvalBlackLimit, BookEvalWhiteLimit, BookMoves). */
#define EXPORT_YO_DEPTH_LIMIT 16
#define EXPORT_YO_BLACK_LIMIT 0
#define EXPORT_YO_WHITE_LIMIT (-140)
#define EXPORT_YO_BOOK_MOVES 16

/* Progress: phase "reading" (records done of total) or "writing" (positions
 * written of total); called every so often from the calling thread. */
typedef void (*ExportProgressFn)(void *ctx, const char *phase, size_t done, size_t total);

typedef struct {
	ExportMoves moves;         /* which moves of a position are written */
	int window;                /* EXPORT_MOVES_WINDOW: at most this far below the best */
	int min_depth;             /* engine evaluations shallower than this are left out */
	int max_ply;               /* positions first seen after this ply are left out (0: all) */
	int threads;               /* parts written at once (0: one a core; books under 20,000
	                              records: one); the output is the same for any number */
	ExportProgressFn progress; /* may be NULL */
	void *progress_ctx;
	bool with_avoided;       /* also moves joseki prune marked avoided (left out by default) */
	ExportDepth depth_field; /* YaneuraOu: what the depth field says */
} ExportOptions;

typedef struct {
	size_t records;    /* records in the book */
	size_t positions;  /* positions written */
	size_t moves;      /* move lines written */
	size_t minimaxed;  /* positions written with minimax values */
	size_t entries;    /* Apery: entries written */
	size_t collisions; /* Apery: entries left out, their key naming another position too */
	/* What YaneuraOu's defaults would leave out of the positions written
	 * (their best move): a depth field under EXPORT_YO_DEPTH_LIMIT, a value
	 * under the side's limit (by the side to move, BLACK/WHITE), a ply past
	 * EXPORT_YO_BOOK_MOVES; and the extremes: the smallest depth field and
	 * value of a best move (by side), the largest ply written. */
	size_t yo_shallow, yo_below[2], yo_late;
	size_t from_games; /* positions written whose values come from games alone */
	int depth_lo, value_lo[2], ply_hi;
} ExportStats;

/*
 * Writes db as a YaneuraOu book to out_path (through out_path.tmp, renamed at
 * the end). Records are sorted by the bytes of their "sfen ..." line. On
 * failure returns a negative EXPORT_E* code with the message in err
 * (EXPORT_ERRLEN bytes).
 */
#define EXPORT_ERRLEN 512
JOSEKI_MUST_USE int export_yaneuraou(ExportStats *stats, BookDB *db, const char *out_path,
                                     const ExportOptions *opt, char *err);

/*
 * Writes db as an Apery binary book (shogi/apery.h) to out_path (through
 * out_path.tmp): for each position the same moves export_yaneuraou writes,
 * as 16-byte entries (Apery's key, the move, count 1, the value as the
 * score), sorted by key and best first within a key, as Apery's binary
 * search and YaneuraOu's reader of Apery books expect. Apery chooses among a
 * position's moves in proportion to their counts: with all counts 1, give
 * ExportMoves BEST for the book's best move alone. Two positions with one
 * Apery key (its hash leaves the opponent's hand out): the first is kept.
 * Fails as export_yaneuraou.
 */
JOSEKI_MUST_USE int export_apery(ExportStats *stats, BookDB *db, const char *out_path,
                                 const ExportOptions *opt, char *err);

#endif

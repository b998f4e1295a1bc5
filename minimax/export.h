/*
 * minimax/export.h — writes a book as a YaneuraOu DB2016 book sorted for
 * BookOnTheFly, or as an Apery binary book (joseki export, docs/minimax.md).
 */
#ifndef MINIMAX_EXPORT_H
#define MINIMAX_EXPORT_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"

enum {
	EXPORT_OK = 0,
	EXPORT_EIO = ERR_EXPORT - 0,
	EXPORT_ENOMEM = ERR_EXPORT - 1,
	EXPORT_EBOOK = ERR_EXPORT - 2,
	EXPORT_EINVAL = ERR_EXPORT - 3, /* a bad option: a root not in the book, a tree too big */
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

/*
 * The count field (YaneuraOu's 5th, Apery's count). YaneuraOu orders a
 * position's moves by count before value (and measures BookEvalDiff and
 * BookDepthLimit from the first of that order); ConsiderBookMoveCount and
 * Apery choose in proportion to counts. VALUE (the default): the moves' game
 * counts, each raised to the count of the move ranked below it where it is
 * lower, at least 1, so that the count order is the value order (value still
 * decides) and counts still weigh a random choice by games; with no games
 * every count is 1. GAMES: the game counts as they are (at least 1): a book
 * whose most played move comes first whatever its value. ONE: every count 1.
 */
typedef enum { EXPORT_COUNT_VALUE = 0, EXPORT_COUNT_GAMES = 1, EXPORT_COUNT_ONE = 2 } ExportCount;

/* The side a partial book is for (ExportOptions.side). */
typedef enum { EXPORT_SIDE_BOTH = 0, EXPORT_SIDE_BLACK = 1, EXPORT_SIDE_WHITE = 2 } ExportSide;

/* The KIF tree's depth when none is given (ExportOptions.plies). */
#define EXPORT_KIF_PLIES 8
#define EXPORT_KIF_MAX_PLIES 256
/* The most moves a KIF tree may hold (a deeper tree: EXPORT_EINVAL). */
#define EXPORT_KIF_MAX_MOVES 2000000

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
	ExportMoves moves; /* which moves of a position are written */
	int window;        /* EXPORT_MOVES_WINDOW: at most this far below the best */
	int min_depth;     /* engine evaluations shallower than this are left out */
	int max_ply;       /* positions first seen after this ply are left out (0: all) */
	int threads;       /* workers reading records at once (0: one a core; books under 20,000
	                      records: one); the output is the same for any number */
	ExportProgressFn progress; /* may be NULL */
	void *progress_ctx;
	bool with_avoided;       /* also moves joseki prune marked avoided (left out by default) */
	ExportDepth depth_field; /* YaneuraOu: what the depth field says */
	/* Partial books (docs/minimax.md, "Partial books"). */
	int min_ply;              /* positions first seen before this ply are left out (0: all;
	                             export_kif: refused) */
	uint32_t min_games;       /* moves played in fewer games are left out (0: all) */
	ExportSide side;          /* the book for one side: YaneuraOu and Apery write only its
	                             positions; every format follows all the other side's
	                             replies from the roots */
	const char *const *roots; /* position specs (NULL/0: every position; KIF: the start) */
	int nroots;
	ExportCount count; /* YaneuraOu and Apery: the count field (KIF: none) */
	/* YaneuraOu and Apery: the memory the sorts may hold before they work
	 * in sorted runs on disk beside OUT (0: memuse_default_budget()). */
	uint64_t memory;
	/* KIF and KI2 (export_kif): the tree's depth from its root (0:
	 * EXPORT_KIF_PLIES), KI2 instead of KIF, Shift_JIS (CP932) instead of
	 * UTF-8, and the book's name for the header's comment (may be NULL). */
	int plies;
	bool ki2, sjis;
	const char *book_name;
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
	size_t reached; /* with roots: positions reached from them (before the side filter) */
	int tree_plies; /* KIF, KI2: the longest line of the tree, plies */
	/* YaneuraOu, Apery: bytes written to sorted runs on disk (0: all sorted in
	 * memory), and how many runs. */
	uint64_t spill_bytes, runs;
	/* YaneuraOu, Apery: milliseconds of the phases (reach: the walk from the
	 * roots, 0 without; read: the book's pass; join: the children's answers;
	 * blocks: the text blocks finished and sorted; write: the output
	 * written). */
	double reach_ms, read_ms, join_ms, blocks_ms, write_ms;
} ExportStats;

/*
 * Writes db as a YaneuraOu book to out_path (through out_path.tmp, renamed at
 * the end). Records are sorted by the bytes of their "sfen ..." line. Holds
 * about opt->memory at most (sorted runs, without names, in out_path's
 * directory beyond it). On failure returns a negative EXPORT_E* code with the
 * message in err (EXPORT_ERRLEN bytes); out_path is untouched and
 * out_path.tmp removed.
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

/*
 * Writes the book's tree from opt->roots[0] (the start position without
 * roots) as a KIF record, or KI2 with opt->ki2, to out_path (through
 * out_path.tmp): each position's book moves (the moves export_yaneuraou
 * would write; with opt->side, all of the other side's replies) best first,
 * the first the main line and the others its variations (変化), to opt->plies
 * plies; each move's value and source, depth and games in comment lines, a
 * repetition of the line or a position outside the book ends a line. UTF-8
 * (`#KIF version=2.0 encoding=UTF-8`), or Shift_JIS with opt->sjis. stats:
 * positions (expanded), moves (written), tree_plies (the longest line, which
 * the start position's comment states with the options that cut it). Fails
 * as export_yaneuraou, or with EXPORT_EINVAL for more than one root, a root
 * not in the book, a tree of more than EXPORT_KIF_MAX_MOVES moves, or
 * opt->min_ply (a tree starts at its root; opt->max_ply and opt->plies cut
 * it). opt->count is not used (a tree has no count field).
 */
JOSEKI_MUST_USE int export_kif(ExportStats *stats, BookDB *db, const char *out_path,
                               const ExportOptions *opt, char *err);

#endif

/*
 * minimax/export_priv.h — what the book's writers share (export.c: YaneuraOu
 * and Apery; export_kif.c: KIF and KI2): which moves of a position are
 * written, in which order, with which value, depth and count. Not for use
 * outside minimax/.
 */
#ifndef MINIMAX_EXPORT_PRIV_H
#define MINIMAX_EXPORT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "minimax/export.h"

/* One move to write. */
typedef struct {
	Move move, ponder;
	int value, depth; /* depth: the order's tie-break (minimax: the distance) */
	int field;        /* the depth field written (ExportOptions.depth_field) */
	uint32_t count;   /* the count field (ExportOptions.count) */
	int k;            /* the move's index in its record */
} OutMove;

/* What a move's line takes from the record it leads to (a minimax value
 * backed up through it): its best move as the export ranks it (not an
 * avoided one; a preferred one within its window), the ponder (MOVE_NONE
 * unless it is minimaxed), and the depth of its analysis (the depth field). */
typedef struct {
	Move best;
	int depth;
} ExportChild;
void export_child_info(ExportChild *c, const BookRecord *child, const ExportOptions *opt);
/* Sets o's ponder and depth field from its child c (rec_flags: the flags of
 * the record o is a move of). */
void export_child_apply(OutMove *o, const ExportChild *c, unsigned rec_flags,
                        const ExportOptions *opt);
/* Whether o (a move of a record with rec_flags) takes anything from its
 * child: a minimax value backed up through it. */
static inline bool export_needs_child(unsigned rec_flags, const OutMove *o)
{
	return (rec_flags & BOOKDB_REC_MINIMAX) && o->depth != 0;
}

/* export_pick's ways. */
enum {
	/* Every move that passes the filters (no --moves/--window cut): the
	 * replies of the side a partial book is not for. */
	PICK_ALL = 1,
	/* A preferred move the book plays goes first and the better moves stay
	 * after it (KIF shows them); without, they are left out, so that an
	 * engine, which plays the highest value, plays it. */
	PICK_KEEP_ABOVE = 2,
};

/*
 * The moves of rec (its position pos) to write, best first, into out
 * (BOOKDB_MAX_MOVES entries): valued, not avoided (unless opt->with_avoided),
 * not a declined promotion (bookdb_move_declined), evaluated at least opt->min_depth deep (a leaf's
 * analysis), played in at least opt->min_games games; a preferred move valued within its window of
 * the best first (how: PICK_*); cut by opt->moves and opt->window unless
 * PICK_ALL. After minimax, the ponder (the child's best move) and the depth
 * field from the child record read through txn (child: scratch space; txn
 * NULL: not looked up, export_child_info gives the child's part and
 * export_child_apply sets it later). Returns how many.
 */
size_t export_pick(OutMove *out, const BookRecord *rec, const Position *pos, BookTxn *txn,
                   BookRecord *child, const ExportOptions *opt, unsigned how);

/* Whether the position (side to move c) is the side's a partial book is for
 * (always with EXPORT_SIDE_BOTH). */
static inline bool export_side_ours(const ExportOptions *opt, Color c)
{
	return opt->side == EXPORT_SIDE_BOTH || (opt->side == EXPORT_SIDE_BLACK) == (c == BLACK);
}

/* The roots' positions (opt->roots, opt->nroots): their keys into keys
 * (nroots entries). 0, or EXPORT_EINVAL with err naming a root that does not
 * parse. */
int export_root_keys(Key *keys, const ExportOptions *opt, char *err);

#endif

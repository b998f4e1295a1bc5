/*
 * bookgen/plan.h — what to think next: the roots the book is grown from, the
 * share of the effort each root gets, and the selection policy. `think` and
 * the cluster coordinator both hand out the leaves a Plan gives them.
 *
 * Policies (docs/bookgen.md, "Growth policy"):
 *
 * - PLAN_COVER (the default): for every root and each book colour in turn,
 *   the leaves of the covered tree — the book side's best moves, the other
 *   side's moves within `window` centipawns of the best at its own node
 *   (sel_select_batch, SEL_BATCH_COVER) — shallowest first. A book grown so
 *   has an answer for the replies that are played, as deep as it reaches.
 * - PLAN_PV: the classic tera-shock selection, the leaf at the end of each
 *   root's principal variation, one at a time (sel_select).
 *
 * Effort: each (root, colour) is served in proportion to its weight — the
 * next batch comes from the one with the fewest leaves handed out per unit of
 * weight (ties: the first). Roots read from a file weigh 1 each; roots taken
 * from the ingested games weigh the number of games that reached them
 * (roots_from_games).
 *
 * A Plan borrows its Selector (which must outlive it) and is used by the
 * selector's thread only.
 */
#ifndef BOOKGEN_PLAN_H
#define BOOKGEN_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "bookgen/selector.h"
#include "shogi/position.h"
#include "shogi/errors.h"

typedef enum {
	PLAN_COVER = 0,
	PLAN_PV = 1,
} PlanMode;

/* The book side a PLAN_COVER tree is grown for. */
typedef enum {
	PLAN_SIDE_BOTH = 0, /* each root twice: once for Black's book, once for White's */
	PLAN_SIDE_BLACK = 1,
	PLAN_SIDE_WHITE = 2,
} PlanSide;

/* The default window of the opponent's replies (centipawns). */
#define PLAN_WINDOW_DEFAULT 30

typedef struct {
	PlanMode mode;
	int window;         /* PLAN_COVER: see above; < 0 means 0 */
	PlanSide book_side; /* PLAN_COVER */
	int batch;          /* PLAN_COVER: a ranged search walks to the depth where it finds
	                       this many leaves (and keeps all of that depth); 0: 16 */
} PlanOptions;

/* The defaults: PLAN_COVER, PLAN_WINDOW_DEFAULT, both sides, batch 16. */
void plan_options_init(PlanOptions *opt);

typedef struct Plan Plan;

/*
 * A plan over sel with n roots (position specs, docs/shogi.md; n == 0: the
 * start position). weights may be NULL (each 1); a weight must be > 0.
 * Adds the roots to sel. Returns 0, SEL_EINVAL with err (SHOGI_ERRLEN bytes,
 * may be NULL) naming a root that does not parse or a bad weight, or
 * SEL_ENOMEM.
 */
JOSEKI_MUST_USE int plan_new(Plan **out, Selector *sel, const PlanOptions *opt,
                             const char *const *specs, const double *weights, int n, char *err);
void plan_free(Plan *p);

/*
 * The next leaf to think about: returns 1 with *leaf and *pos (the leaf's
 * position, reached from its root) set, 0 when no root has a selectable leaf,
 * or a negative SEL_* code. The leaf is not leased: the caller leases it when
 * it hands it out (sel_lease), before the next call.
 */
JOSEKI_MUST_USE int plan_next(Plan *p, SelLeaf *leaf, Position *pos);

/*
 * The way to the roots (roots_from_games' and roots_paths_of_specs' paths,
 * docs/bookgen.md "The way to the roots"): positions plan_next gives before
 * any root's leaves, in this order, each skipped while it is leased and for
 * good once thought; such a leaf has root 0 and no moves (*pos is the
 * position itself). With only, plan_next gives nothing after them (think
 * --opponent thinks them before its walks). Replaces earlier paths. 0,
 * SEL_EINVAL with err
 * (SHOGI_ERRLEN bytes, may be NULL) naming a position that does not parse, or
 * SEL_ENOMEM.
 */
JOSEKI_MUST_USE int plan_set_paths(Plan *p, const char *const *specs, size_t n, bool only,
                                   char *err);
/* Path positions not thought yet. */
size_t plan_paths_left(Plan *p);
/* Path position i (its SFEN) and how many plies below it the roots lie: the
 * book's line from there to be kept analysed that deep (at least one ply;
 * think's lines, docs/bookgen.md "The way to the roots"). false when there
 * is no path position i. */
bool plan_path_line(const Plan *p, size_t i, const char **sfen, int *plies);

/* Roots of the plan; the SFEN of root r as added; leaves handed out under it. */
JOSEKI_MUST_USE int plan_nroots(const Plan *p);
const char *plan_root_sfen(const Plan *p, int r);
size_t plan_served(const Plan *p, int r);

#endif

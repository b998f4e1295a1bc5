/*
 * minimax/bookmm_priv.h — what the whole-book run (bookmm.c) and the
 * incremental run (bookinc.c) of joseki minimax share. Not a public header.
 */
#ifndef MINIMAX_BOOKMM_PRIV_H
#define MINIMAX_BOOKMM_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/keydir.h"
#include "minimax/bookmm.h"
#include "minimax/graph.h"
#include "shogi/movegen.h"
#include "shogi/position.h"

#define BOOKMM_BATCH 10000
/* Room for one record's graph moves: its edges, its best leaf, a mated leaf. */
#define BOOKMM_NODE_MOVES (MOVEGEN_MAX + 2)

int16_t bookmm_clamp(int v);

/* Looks a key up among the book's nodes: its node, or MM_NONE. */
typedef uint32_t (*BookmmFind)(const void *ctx, Key k);
/* Whether a node is an inner node of the leaf policy (MMF_INNER). */
typedef bool (*BookmmInner)(const void *ctx, uint32_t node);

/* Looks n keys up at once (out[i]: k[i]'s node or MM_NONE): their memory
 * asked for together, where one at a time waits for each miss in turn. */
typedef void (*BookmmFindMany)(const void *ctx, const Key *k, size_t n, uint32_t *out);

/* How a record's moves see the rest of the book. */
typedef struct {
	BookmmFind find;
	BookmmInner inner;
	const void *ctx;
	const BookmmPolicy *policy;
	BookmmFindMany find_many; /* NULL: find, a key at a time */
} BookmmLookup;

/* The policy with its defaults filled in (as the book's state keeps it), and
 * whether two policies give the same values. */
BookmmPolicy bookmm_policy_norm(const BookmmPolicy *p);
bool bookmm_policy_equal(const BookmmPolicy *a, const BookmmPolicy *b);

/* Whether the decoded record rec is an inner node under policy p. */
bool bookmm_record_inner(const BookRecord *rec, const BookmmPolicy *p);
/* The same from the record's bytes (rec is scratch space, used only when
 * p->min_games asks for the game counts); false for a record that does not
 * decode. */
bool bookmm_raw_inner(const uint8_t *raw, size_t len, const BookmmPolicy *p, BookRecord *rec);
/*
 * The value of each move of rec as a leaf under policy p, into value[m]
 * (BOOKMM_NOVALUE: none); returns how many have one. An evaluation
 * (bookdb_move_analysed; with p->game_evals also a game comment), clamped to
 * the mate bound and blended with the move's win rate when p->blend asks;
 * under p->games_book, the moves' game results instead (bookmm.h).
 */
int bookmm_leaves(const BookRecord *rec, const BookmmPolicy *p, int16_t *value);

/*
 * A record's moves in the graph. For an inner node (the leaf policy): every
 * legal move whose child is a book node is an edge (listed in the record or
 * not), except a move into a position that is not inner when the record has
 * a leaf value of the move (bookmm_leaves: that value is then the move's);
 * a node that is not inner has no edges. Then the best leaf among the record's
 * other moves with a leaf value, then, when there is no legal move, a mated
 * leaf (MOVE_NONE, -32000). out holds BOOKMM_NODE_MOVES. *flags gets
 * MMF_WHITE / MMF_INCHECK / MMF_INNER. Returns how many, or BOOKDB_ECORRUPT
 * for a record (at key) that is not sound as joseki check would have it (it
 * does not decode, holds an impossible position or another key's, or a move
 * that is not legal there: bookdb_record_read), with what is wrong in why
 * (BOOKDB_ERRLEN bytes): a damaged book must not be backed up as if those
 * positions had no moves. pos and rec are scratch space.
 */
int bookmm_record_moves(MmMove *out, uint8_t *flags, Key key, const uint8_t *raw, size_t len,
                        BookRecord *rec, Position *pos, const BookmmLookup *lk, char *why);

/* The (value, dist) an edge gets in its record (as peta-shock writes it). */
static inline MmVd bookmm_stored_vd(MmVd child, bool child_loop, bool child_checked)
{
	/* A move into a perpetual-check loop where the opponent is in check
	 * must not win a tie against an equal exit. */
	if (child_loop && child_checked) child.depth = MM_DEPTH_PCHECK;
	return child;
}

/* One edge to a valued child, with the (value, dist) it gets in the record. */
typedef struct {
	Move move;
	MmVd vd;
} BookmmEdge;

/*
 * Rewrites the record at raw (its moves' values and dists, transposition edges
 * it does not list appended, the MINIMAX flag) into out when that changes it
 * or when force; returns the new length, 0 when nothing changed, or a negative
 * code for a record that does not decode (left as it is).
 */
int bookmm_rewrite(uint8_t *out, const uint8_t *raw, size_t len, BookRecord *rec, bool valued,
                   const BookmmEdge *edges, int nedges, bool force, const BookmmPolicy *p);

/*
 * The state the book keeps about its last minimax run (meta key "mmstate"):
 * which graph file and how much of its journal belong to the records, how far
 * the change log has been consumed, the draw values, and totals to report.
 */
typedef struct {
	uint64_t stamp;
	uint64_t journal_len;
	uint64_t seq; /* change-log entries up to this one are reflected */
	int32_t draw[2];
	BookmmPolicy policy; /* the leaf policy the values were computed with */
	uint64_t positions, valued, settled, moves, edges;
} BookmmState;

/* A stamp no earlier graph file of this book carries. */
uint64_t bookmm_new_stamp(void);

/* 0, BOOKDB_ENOTFOUND (no state or another layout), or a bookdb error. */
int bookmm_state_get(BookmmState *out, BookTxn *txn);
int bookmm_state_put(BookTxn *txn, const BookmmState *st);
/*
 * Meta key a whole-book run puts when it starts (with the change log set on
 * or emptied, in one transaction) and deletes with its state when it ends: a
 * run killed or stopped in between may have consumed the log and rewritten
 * records the kept state knows nothing of, so while it is there only a
 * whole-book run answers. Its value is "1" when the run set the log on or
 * emptied it (the kept graph and the log then vouch for no key), "0" when the
 * log was on and left as it was.
 */
#define BOOKMM_META_FULLRUN BOOKDB_META_MMFULL
/* Set by an incremental run while its record writes are under way (bookinc.c). */
#define BOOKMM_META_RUNNING BOOKDB_META_MMRUN
/* Whether a whole-book run began and did not end (0/1; *hole: it set the log
 * on or emptied it), or a bookdb error. */
int bookmm_fullrun_pending(BookTxn *txn, bool *hole);

/* The plan keeps the run's lock (BOOK/minimax.lock) until it is freed. */
void bookmm_plan_keep_lock(BookMinimaxPlan *p, int fd);

/* Whether opt->stop asks the run to end. */
static inline bool bookmm_stopped(const BookmmOptions *opt)
{
	return opt->stop && atomic_load(opt->stop);
}
/* BOOKMM_ESTOPPED, with "stopped while WHERE" in err (BOOKMM_ERRLEN). */
int bookmm_stop_error(char *err, const char *where);

/* The human-readable summary under meta key "minimax". */
int bookmm_summary_put(BookTxn *txn, const BookmmStats *st, const BookmmOptions *opt);

/* File flags (MMF_*) of a node from the core's flags and its structure bits
 * (MMF_INCHECK, MMF_WHITE), and the core's flags of a node given as file
 * flags (its side to move included). */
uint8_t bookmm_file_flags(MmFlags core, uint8_t structure);
MmFlags bookmm_core_flags(uint8_t file);

/* The whole-book and incremental runs, messages in err (BOOKMM_ERRLEN
 * bytes). bookmm_incremental returns BOOKMM_EFULL (the reason in err) when
 * only a whole-book run can answer. */
#define BOOKMM_EFULL (ERR_BOOKMM - ERR_RANGE + 1) /* internal: the last of the range */
int bookmm_full(BookmmStats *st, BookDB *db, const char *dir, const BookmmOptions *opt, char *err);
int bookmm_incremental(BookmmStats *st, BookDB *db, const char *dir, const BookmmOptions *opt,
                       char *err);
/* bookmm_incremental without the writes: the analysis and the journal's
 * batch, the records to rewrite kept in *out (NULL when nothing changed). */
int bookmm_inc_prepare(BookMinimaxPlan **out, BookmmStats *st, BookDB *db, const char *dir,
                       const BookmmOptions *opt, char *err);

/* What a run that met a record that is not sound adds to its message. */
#define BOOKMM_DAMAGED                                                                             \
	"; the book is damaged: joseki check lists what, --repair copies what is sound"

/* A record's moves in two steps (bookmm_record_moves is both): first what
 * the record is (bookmm_record_children), then, once its children are
 * looked up, its graph moves (bookmm_record_edges). */
typedef struct {
	Move legal[MOVEGEN_MAX]; /* the legal moves, the avoided ones taken out */
	Key child[MOVEGEN_MAX];  /* with keys, for an inner record: the position each leads to */
	int nl;                  /* legal moves in legal[] */
	int nlegal;              /* legal moves, avoided or not (0: mated) */
	bool inner;              /* an inner node of the leaf policy (MMF_INNER) */
	/* Not inner though analysed: its analysis shallower than the policy's
	 * least depth (an imported position with no depth is 0 deep). */
	bool shallow;
	int16_t leafv[BOOKDB_MAX_MOVES]; /* bookmm_leaves of the record's moves */
} BookmmChildren;

/* Decodes and checks the record as bookmm_record_moves does, into rec, pos
 * and c (the children's keys only when keys asks: a caller that has its
 * children's nodes already needs none), *flags as there. 0, or
 * BOOKDB_ECORRUPT with why. */
int bookmm_record_children(BookmmChildren *c, uint8_t *flags, Key key, const uint8_t *raw,
                           size_t len, BookRecord *rec, Position *pos, const BookmmPolicy *policy,
                           bool keys, char *why);

/* The graph moves of the record c and rec hold (bookmm_record_moves), given
 * found[m], the node of c->legal[m]'s child or MM_NONE (read only for an
 * inner record), and found_inner[m], whether that node is an inner one (NULL:
 * lk->inner says). out holds BOOKMM_NODE_MOVES; returns how many. */
int bookmm_record_edges(MmMove *out, const BookmmChildren *c, const BookRecord *rec,
                        const BookmmLookup *lk, const uint32_t *found, const uint8_t *found_inner);

/* A child found: the legal move to it, its node, whether that is inner. */
typedef struct {
	Move move;
	uint32_t node;
	bool inner;
} BookmmFound;

/* Whether rec's moves and the children found f[0..nf) hold a move and the
 * same move promoting (bookdb_record_has_promotion_pair, with f): where a
 * declined promotion may be, told by the record's board. */
bool bookmm_promotion_pair(const BookRecord *rec, const BookmmFound *f, int nf);

/* bookmm_record_edges from what it reads of c alone: the record's leaf
 * values (bookmm_leaves), whether it has no legal move (mated), and
 * f[0..nf), the children found, in the order of the legal moves (none for a
 * record that is not inner); pairs: bookmm_promotion_pair(rec, f, nf), the
 * caller's (a declined promotion is looked for only then). So a caller that has them need not set
 * up the position again. */
int bookmm_found_edges(MmMove *out, const BookRecord *rec, const int16_t *leafv, bool mated,
                       const BookmmLookup *lk, const BookmmFound *f, int nf, bool pairs);

/* bookmm_record_moves with c as scratch space and kd: when kd is the key
 * directory find searches, the children are looked up in it together
 * (bookdb_keydir_find_many), not through find one by one. */
int bookmm_record_moves_kd(MmMove *out, uint8_t *flags, Key key, const uint8_t *raw, size_t len,
                           BookRecord *rec, Position *pos, BookmmChildren *c,
                           const BookmmLookup *lk, const BookKeyDir *kd, char *why);
/* A progress callback call, when opt has one. */
void bookmm_report(const BookmmOptions *opt, const char *phase, size_t done, size_t total);

#endif

/*
 * search/engine_priv.h — the built-in engine's state, shared by its root
 * (engine.c) and its tree search (alphabeta.c). Not for other modules.
 */
#ifndef SEARCH_ENGINE_PRIV_H
#define SEARCH_ENGINE_PRIV_H

#include <signal.h>
#include <stdatomic.h>

#include "search/engine.h"
#include "shogi/clock.h"
#include "search/tt.h"
#include "shogi/movegen.h"

#define PIECE_IDX_NB 28              /* (type - 1) + 14 * colour */
#define FROM_NB (SQ_NB + HAND_PT_NB) /* 81 squares, then 81 + the dropped type (1..7) */
#define STACK_OFFSET 4               /* stack entries before ply 0 (ss - 1 .. ss - 4) */

static inline int piece_idx(Piece p)
{
	return piece_type(p) - 1 + 14 * piece_color(p);
}

/* A continuation history: the worth of a (piece, destination) after one move. */
typedef int16_t ContHist[PIECE_IDX_NB][SQ_NB];

typedef struct {
	Move move;      /* the move made at this ply (MOVE_NONE, MOVE_NULL) */
	int pidx;       /* its piece */
	Square to;      /* its destination */
	ContHist *cont; /* the continuation table it selects (NULL: none) */
	Move killers[2];
	Move excluded; /* singular extension: the move left out */
	int static_eval;
	int ply;
	bool in_check;
} Stack;

typedef struct {
	Move move;
	int score;
	int prev_score;
} RootMove;

struct Engine {
	TT tt;
	size_t hash_mb;
	atomic_bool stop;
	atomic_bool pondering;
	atomic_llong start_ns;
	const volatile sig_atomic_t *cancel; /* the caller's flag, or NULL */
	int64_t (*now_ns)(void *ctx);        /* the clock (engine_set_clock) */
	void *now_ctx;

	/* Per search. */
	Position pos;
	uint64_t nodes;
	uint64_t node_limit;
	int64_t hard_ms;
	bool can_abort; /* false until depth 1 is complete */
	bool aborted;
	int seldepth;
	int root_depth;
	int nroot;
	RootMove root[MOVEGEN_MAX];
	Stack stack[ENGINE_MAX_PLY + STACK_OFFSET + 2];
	Move pv[ENGINE_MAX_PLY + 1][ENGINE_MAX_PLY + 1];
	int pv_len[ENGINE_MAX_PLY + 1];

	/* Learnt over a game (cleared by engine_clear). */
	int16_t main_hist[COLOR_NB][FROM_NB][SQ_NB];
	int16_t capt_hist[PIECE_IDX_NB][SQ_NB][PT_NB];
	Move counter[PIECE_IDX_NB][SQ_NB];
	ContHist cont_hist[PIECE_IDX_NB][SQ_NB];
};

/* The engine's clock: the caller's (engine_set_clock) or the system's. */
static inline int64_t engine_now_ns(const Engine *e)
{
	return e->now_ns ? e->now_ns(e->now_ctx) : clock_ns();
}

static inline int64_t engine_elapsed_ms(const Engine *e)
{
	return (engine_now_ns(e) - atomic_load_explicit(&e->start_ns, memory_order_relaxed)) /
	       1000000;
}

static inline bool is_capture(const Position *pos, Move m)
{
	return !move_is_drop(m) && pos->board[move_to(m)] != PIECE_NONE;
}

/* What GEN_CAPTURES generates: captures and pawn promotions. */
static inline bool is_tactical(const Position *pos, Move m)
{
	return is_capture(pos, m) ||
	       (move_is_promote(m) && piece_type(pos->board[move_from(m)]) == PAWN);
}

static inline Piece moved_piece(const Position *pos, Move m)
{
	return move_is_drop(m) ? piece_make(pos->side, move_drop_type(m))
	                       : pos->board[move_from(m)];
}

/* The butterfly history's origin: the square, or 81 + the dropped type. */
static inline int from_idx(Move m)
{
	return move_is_drop(m) ? SQ_NB + (int)move_drop_type(m) : (int)move_from(m);
}

static inline bool real_move(Move m)
{
	return m != MOVE_NONE && m != MOVE_NULL;
}

/* movepick.c: the staged move picker. */
enum {
	ST_TT,
	ST_CAPTURES_INIT,
	ST_GOOD_CAPTURES,
	ST_KILLER0,
	ST_KILLER1,
	ST_COUNTER,
	ST_QUIETS_INIT,
	ST_QUIETS,
	ST_BAD_CAPTURES,
	ST_EVASIONS_INIT,
	ST_EVASIONS,
	ST_QCAPTURES_INIT,
	ST_QCAPTURES,
	ST_QCHECKS_INIT,
	ST_QCHECKS,
	ST_END
};

typedef struct {
	Move moves[MOVEGEN_MAX];
	int scores[MOVEGEN_MAX];
	Move bad[MOVEGEN_MAX];
	int n, i, nbad, ibad, stage, next_stage;
	Move tt_move, refut[3];
	bool skip_quiets;
	bool qchecks;
} Picker;

void ab_picker_init(Picker *p, const Engine *e, const Stack *ss, Move tt_move, bool in_check,
                    bool qsearch, bool qchecks);
Move ab_picker_next(Engine *e, const Stack *ss, Picker *p);
bool ab_is_refutation(const Picker *p, Move m);
int ab_see_value(PieceType pt);
bool ab_see_ge(const Position *pos, Move m, int threshold);
int ab_stat_bonus(int depth);
void ab_hist_update(int16_t *h, int bonus);
int16_t *ab_capt_entry(Engine *e, const Position *pos, Move m);
int ab_quiet_score(const Engine *e, const Stack *ss, Move m, int pidx);
void ab_update_quiet(Engine *e, Stack *ss, Move m, int pidx, int bonus);
void ab_update_quiet_stats(Engine *e, Stack *ss, Move best, const Move *quiets, int nq, int depth);

/* alphabeta.c */
void ab_init_tables(void);
int ab_search(Engine *e, Stack *ss, int alpha, int beta, int depth, bool cut_node, bool pv_node);
int ab_lmr(int depth, int move_count);
void ab_update_pv(Engine *e, int ply, Move m);
bool ab_check_abort(Engine *e);

#endif

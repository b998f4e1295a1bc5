/*
 * play/match.h — games between two engine set-ups, to measure what a book
 * (or an engine, or an option) is worth. See docs/match.md.
 *
 * Each side (A, B) is an engine — the built-in core in process, or a USI
 * engine program through the driver (search/usi_engine.h) — with or without
 * a book. A side with a book plays the book's best legal move (bookdb_query's
 * order) while the book knows the position; from its first position the book
 * does not know, it asks its engine for the rest of the game. Every engine
 * move has a fixed budget (nodes or movetime), or the sides play on clocks
 * as in a tournament (main time, byoyomi, Fischer increment, each side its
 * own): the engine is told the clocks, a book move costs no time, and a side
 * whose move ends past its clock (beyond a margin) loses on time. Games start
 * from the start position or from the openings given (each opening played
 * twice, colours swapped: a pair); pair p plays opening p mod n of the
 * openings, shuffled by the seed.
 *
 * Results are counted per game (W/D/L, Elo) and per pair (pentanomial
 * counts, Elo and LOS from the pairs' variance); an SPRT, when asked for,
 * stops the match as soon as its log-likelihood ratio crosses a bound (the
 * games then in flight are abandoned and not counted). See docs/match.md for
 * the formulas.
 *
 * The rules core judges each game, in the order `joseki replay` does: after
 * every move a fourth repetition (draw, or a loss for the side that checked
 * throughout), then no legal move for the side to move (it loses), then the
 * move limit (draw). An engine's resign loses; its declaration ("bestmove
 * win") wins when pos_declaration_ok() holds and loses otherwise; an illegal
 * move, a crash, an unreadable answer or no answer in time loses that game
 * (the driver restarts the engine, so the match goes on) — also when the
 * driver's retry of the position succeeded. Each game can be written as a
 * CSA record that replays to the same result (shogi/csa_write.h).
 *
 * With a nodes budget, engines that are deterministic for a position (the
 * built-in core clears its hash for every search), and the same seed, a
 * match gives the same games and the same records, whatever the concurrency.
 */
#ifndef BOOKGEN_MATCH_H
#define BOOKGEN_MATCH_H

#include "shogi/errors.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "search/search.h"
#include "search/usi_engine.h"
#include "shogi/gameend.h"
#include "shogi/types.h"

/* Error codes (negative). */
enum {
	MATCH_OK = 0,
	MATCH_EINVAL = ERR_MATCH - 0, /* bad option or opening (message says which) */
	MATCH_ENGINE = ERR_MATCH - 1, /* an engine could not be started */
	MATCH_EBOOK = ERR_MATCH - 2,  /* a book could not be opened or read */
	MATCH_EIO = ERR_MATCH - 3,    /* the output directory or a record could not be written */
	MATCH_ENOMEM = ERR_MATCH - 4,
};

const char *match_strerror(int code);

/* Length of the message buffers (NUL included). */
#define MATCH_ERRLEN 512
/* Largest --max-moves: a Position holds POS_MAX_STATES - 1 plies. */
#define MATCH_MAX_MOVES_MAX 1000
#define MATCH_MAX_MOVES_DEFAULT 320
#define MATCH_CONCURRENCY_MAX 64
/* Moves of an engine's PV kept for the record's "'**" comment. */
#define MATCH_PV_MAX 16
/* The time margin `joseki match` allows past a clock (ms). */
#define MATCH_TIME_MARGIN_DEFAULT 100

/*
 * How a match game ended is shogi/gameend.h's GameEnd: resign, mate,
 * repetition, perpetual_check, declaration ("bestmove win": valid wins,
 * invalid loses), max_moves (a draw), illegal_move (an engine's), timeout (an
 * engine did not answer in time), crash (an engine exited or its answer was
 * unreadable), time_up (a side's move ended past its clock and margin); none
 * for a game not played (cancelled). The end `joseki replay` reports for the
 * game's CSA record: the same, except a timeout is time_up (%TIME_UP) and a
 * crash resign (%TORYO, as floodgate records a disconnection).
 */
GameEnd match_end_replayed(GameEnd end);

/* One side of the match. */
typedef struct {
	const char *engine;       /* "builtin" (in process) or the path of a USI engine */
	const char *book;         /* a BOOK directory, or NULL for none */
	const UsiOption *options; /* setoption for a USI engine; the built-in core takes USI_Hash */
	int noptions;
	bool restart; /* a USI engine: a new process for every game (restart_each_game) */
} MatchSide;

/* A sequential probability ratio test of H0: elo = elo0 against H1: elo = elo1. */
typedef struct {
	double elo0, elo1;  /* logistic Elo of A over B, elo0 < elo1 */
	double alpha, beta; /* the error rates, each in (0, 1) (0.05 is usual) */
} MatchSprt;

/* The SPRT's verdict. */
enum { MATCH_SPRT_H0 = -1, MATCH_SPRT_NONE = 0, MATCH_SPRT_H1 = 1 };

typedef struct MatchResult MatchResult;

/*
 * Progress of match_run, for MatchOptions.progress: phase "game" after a
 * finished game is counted, at most once a second and always for the last
 * one; then one "done" as the match ends. Called with the match's lock held:
 * res (the tally so far) may be read, not kept.
 */
typedef struct {
	int done, games;        /* games finished, of games */
	double seconds;         /* since the games began */
	bool sprt;              /* an SPRT runs (MatchOptions.sprt) */
	bool decided;           /* it crossed a bound (res->verdict says which) */
	const MatchResult *res; /* wins, draws, losses, score, llr, moves */
} MatchProgress;
typedef void (*MatchProgressFn)(void *ctx, const char *phase, const MatchProgress *p);

typedef struct {
	MatchSide side[2];   /* [0] = A, [1] = B */
	int games;           /* games to play (>= 1) */
	SearchBudget budget; /* nodes or movetime per move, or SEARCH_BUDGET_CLOCK */
	/* With SEARCH_BUDGET_CLOCK: each side's time control ([0] = A, [1] = B;
	 * each must give some time: main + byoyomi + inc >= 1 ms) and how many ms
	 * a move may end past the side's clock before it loses on time. */
	TimeControl clock[2];
	int time_margin_ms;
	const MatchSprt *sprt;       /* NULL: play all the games */
	const char *const *openings; /* position specs; NULL or none: the start position */
	int nopenings;
	int concurrency; /* games played at once, 1..MATCH_CONCURRENCY_MAX */
	int max_moves;   /* plies of a record, opening included; 0: the default */
	uint64_t seed;   /* shuffles the openings (and draws the node jitter) */
	/* With a nodes budget N: each search gets N * (1 + u * nodes_jitter / 100)
	 * nodes, u uniform in [-1, 1] drawn from the seed, the game and the ply
	 * (the same seed gives the same budgets whatever the concurrency); 0..50,
	 * 0: exactly N. Engines that play the same move at the same node count
	 * then play different games from the same opening. */
	int nodes_jitter;
	const char *out_dir;      /* CSA records game-NNNN.csa and engine logs; NULL: none */
	MatchProgressFn progress; /* NULL: quiet */
	void *progress_ctx;
	/* Set by the caller (e.g. on SIGINT): no new game starts, running searches
	 * stop, unfinished games are not counted. Must outlive match_run. */
	const volatile sig_atomic_t *cancel;
	/* Driver settings for USI engines (timeouts...); NULL: the defaults. */
	const UsiEngineConfig *usi;
	/* Only these game indices (0-based, each below games, ascending) of the
	 * match are played, as they would be in the whole match (the same
	 * opening, colours and node draws); the others are not (played false).
	 * NULL: every game. */
	const int *only;
	int nonly;
} MatchOptions;

/* The index of the first game of opt's match (opt->games games, opt->seed's
 * order of the openings) that plays opening (an index into opt->openings; -1
 * the start position, when there are none) with A as colour a; -1 when the
 * match plays no such game. */
int match_game_index(const MatchOptions *opt, int opening, Color a);

/* One game, from A's point of view. */
typedef struct {
	bool played;
	int opening;   /* index into the openings, -1 for the start position */
	Color a_color; /* the colour A played */
	GameEnd end;
	int winner;        /* BLACK, WHITE, or -1 for a draw */
	int result;        /* for A: 1 win, 0 draw, -1 loss */
	int plies;         /* moves in the record, opening included */
	int book_plies[2]; /* book moves played by A and by B */
	int exit_ply[2];   /* the move number (1-based, opening included) of A's and of
	                      B's first engine move; 0 when the side never used its engine */
	/* The side's own evaluation at that first engine move (centipawns for
	 * the side, bounded to ±MATCH_EXIT_EVAL_MAX); has_exit_eval: it gave one. */
	int exit_eval[2];
	bool has_exit_eval[2];
	int64_t time_ms[2];  /* engine time used by A and by B */
	int64_t clock_ms[2]; /* with clocks: the main time A and B had left at the end */
	/* With clocks: the main time A and B had left at A's exit ply ([0]) and
	 * at B's ([1]) (a book move costs none: how much a side's book saved it
	 * is the other side's time spent by then); -1 for a side that never used
	 * its engine. */
	int64_t exit_clock_ms[2][2];
	int engine_moves; /* moves the engines were asked for */
	char detail[160]; /* what went wrong (crash, timeout, illegal move), else "" */
	char *usi;        /* the game as a position spec ("startpos moves ..."); malloc'd */
} MatchGame;

/* Pentanomial counts of the pairs, from A's point of view. */
enum { MATCH_LL, MATCH_LD, MATCH_DD_WL, MATCH_WD, MATCH_WW, MATCH_PENTA_NB };

/* The statistics of the game pairs (both games of a pair played). */
typedef struct {
	int pairs;
	int penta[MATCH_PENTA_NB];     /* pairs scoring 0, 1/2, 1, 3/2, 2 points for A */
	int dd, wl;                    /* the two kinds of a 1-point pair */
	double score;                  /* A's points per game over the pairs */
	double elo, elo_low, elo_high; /* Elo A − B with its 95% interval from the pairs */
	double los;                    /* likelihood of superiority of A, 0..1; NAN: no pairs */
} MatchPairs;

/* An exit evaluation's bound: a mate or a won position weighs no more in a mean. */
#define MATCH_EXIT_EVAL_MAX 2000

/* A side's evaluations at its exits (MatchGame.exit_eval): how many, their
 * mean and its standard error (0 with fewer than two). */
typedef struct {
	int n;
	double mean, se;
} MatchExitEval;

/* Where a side left its book: the exit plies (MatchGame.exit_ply) of the played games. */
typedef struct {
	int games; /* games in which the side used its engine */
	int never; /* played games in which it did not */
	double mean;
	int min, q1, median, q3, max; /* nearest-rank quantiles; 0 when games = 0 */
} MatchExit;

struct MatchResult {
	int played, wins, draws, losses; /* games, from A's point of view */
	double score;                    /* A's points per game (win 1, draw 1/2) */
	double elo, elo_low, elo_high;   /* Elo difference A − B and its 95% interval */
	MatchPairs pairs;                /* the pairs among the played games */
	double book_plies[2];            /* average book moves per game of A and of B */
	MatchExit exit[2];               /* A's and B's exit plies */
	MatchExitEval exit_eval[2];      /* A's and B's evaluations there */
	/* A's exit evaluation less B's: what A's book left it with beyond where
	 * B's engine started (both the same engine: its own judgement), and the
	 * standard error of the difference. */
	double exit_gain, exit_gain_se;
	bool sprt;                        /* an SPRT ran (MatchOptions.sprt) */
	double llr, llr_lower, llr_upper; /* its log-likelihood ratio and bounds */
	int verdict;                      /* MATCH_SPRT_H1, _H0, or _NONE: no bound crossed */
	uint64_t engine_moves, book_moves;
	double seconds;   /* wall time of the match */
	char name[2][64]; /* the engines' names */
	int ngames;
	MatchGame *games; /* ngames, in game order (game i is games[i]) */
};

/*
 * Plays the match. Returns 0 with *out filled (match_result_free), also when
 * cancelled (the games not finished have played = false); or a negative
 * MATCH_E* code with a message in err (MATCH_ERRLEN bytes) and *out empty:
 * bad options or openings, an engine or a book that cannot be opened, an
 * output directory or record that cannot be written.
 */
JOSEKI_MUST_USE int match_run(MatchResult *out, const MatchOptions *opt, char *err);

/* Whether side's engine takes its options and budget (NULL: not asked): the
 * built-in core's are read, a USI engine is started with them (usi: its
 * configuration, may be NULL), asked whether it takes the budget
 * (usi_engine_check_budget) and ended. 0, or MATCH_EINVAL / MATCH_ENGINE /
 * MATCH_ENOMEM with err, as a match starting it would say. For a caller that
 * must not change anything before the engines are known to play (cycle). */
JOSEKI_MUST_USE int match_side_try(const MatchSide *side, const UsiEngineConfig *usi,
                                   const SearchBudget *budget, char *err);

void match_result_free(MatchResult *r);

/* ---- statistics (play/match_stats.c; formulas in docs/match.md) ---- */

/*
 * Elo difference for a score of w wins, d draws, l losses, with the 95%
 * interval from the games' own variance (normal approximation). A score of
 * 0 or 1 gives ±INFINITY; no games gives 0 for all three.
 */
void match_elo(int w, int d, int l, double *elo, double *low, double *high);

/* Counts one pair: A's results (1 win, 0 draw, -1 loss) in its two games. */
void match_pairs_add(MatchPairs *p, int result1, int result2);
/*
 * Fills p's score, Elo, interval and LOS from its counts: the mean and the
 * variance of the pairs' scores, the interval score ± 1.96·σ/√pairs, LOS =
 * Φ((score − ½)/(σ/√pairs)). No pairs: zeros and LOS NAN.
 */
void match_pairs_finish(MatchPairs *p);

/*
 * The generalised log-likelihood ratio of H1 (elo1) against H0 (elo0) for
 * the pentanomial counts, logistic Elo (the GSPRT of fishtest: each
 * hypothesis's maximum-likelihood pair distribution with the expected
 * score it fixes; empty classes counted as 1e-3). 0 without pairs.
 */
double match_sprt_llr(const int penta[MATCH_PENTA_NB], double elo0, double elo1);
/* The SPRT's bounds: ln(β/(1−α)) and ln((1−β)/α). */
void match_sprt_bounds(const MatchSprt *s, double *lower, double *upper);

/* The exit plies of side s (0 = A, 1 = B) over r's played games. */
void match_exit_stats(MatchExit *out, const MatchResult *r, int s);
/* The exit evaluations of side s over r's played games. */
void match_exit_eval_stats(MatchExitEval *out, const MatchResult *r, int s);

/* ---- option strings (play/match_opts.c) ---- */

#define MATCH_TIME_MAX_MS (100LL * 3600 * 1000) /* 100 hours */

/*
 * Parses a time control "BASE[+INC]": each a number (decimals allowed, to
 * the millisecond) of seconds, or with a unit "ms", "s", "m" or "h"
 * ("60+1", "10+0.1", "5m+10s", "500ms+50ms"), at most MATCH_TIME_MAX_MS.
 * Sets tc->main_ms and tc->inc_ms (byoyomi untouched). Returns 0, or
 * MATCH_EINVAL with a message in err (MATCH_ERRLEN bytes) and tc untouched.
 */
JOSEKI_MUST_USE int match_tc_parse(TimeControl *tc, const char *text, char *err);
/*
 * Parses "ELO0,ELO1[,ALPHA,BETA]" (alpha = beta = 0.05 when absent):
 * |elo| <= 1000, elo0 < elo1, alpha and beta in (0, 1) with alpha + beta < 1.
 * Returns 0, or MATCH_EINVAL with a message in err and s untouched.
 */
JOSEKI_MUST_USE int match_sprt_parse(MatchSprt *s, const char *text, char *err);

#endif

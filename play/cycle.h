/*
 * play/cycle.h — Shiba's extension/deletion cycle (docs/cycle.md): play games
 * with the book on one side only (play/match.h) against one or more
 * opponents, delete the book moves that lose (prune: the paper's rule, or
 * the last decision of each lost game the book would play again), follow
 * the lost games further (extend: queue where the book ran out, or walk the
 * lines the opponents play), think, back the values up, and again.
 *
 * Games reach this module as position specs ("startpos moves ...", "sfen ...
 * moves ...") with the book side's colour and result: match gives them so,
 * and play/games.h reads them from game files (through ingest/replay.h).
 */
#ifndef BOOKGEN_CYCLE_H
#define BOOKGEN_CYCLE_H

#include "shogi/errors.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "play/match.h"
#include "bookgen/probe.h"
#include "bookgen/think.h"

enum {
	CYCLE_OK = 0,
	CYCLE_EINVAL = ERR_CYCLE - 0, /* a bad option or game (message says which) */
	CYCLE_EBOOK = ERR_CYCLE - 1,  /* the book could not be read or written */
	CYCLE_ENOMEM = ERR_CYCLE - 2,
	CYCLE_ESTEP = ERR_CYCLE - 3, /* a step (match, think, minimax) failed: message says which */
};
const char *cycle_strerror(int code);

#define CYCLE_ERRLEN 640

/* The most opponents a cycle plays (--opponent given this often). */
#define CYCLE_OPPONENTS_MAX 16

/* One game, from the book side's point of view. */
typedef struct {
	const char *spec; /* the whole game as a position spec */
	int book_color;   /* BLACK or WHITE: the side that played from the book */
	int result;       /* for the book side: 1 win, 0 draw, -1 loss */
	int opponent;     /* which opponent it was played against, 0-based (0 for game files) */
	int opening;      /* the opening it started from, 1-based; 0: not known (game files) */
	int start_ply;    /* the opening's plies at the start of spec: played as given, not by
	                     the sides, so the rules look at the moves after them */
} CycleGame;

/* ---- deletion ---- */

typedef struct {
	double max_winrate; /* a move loses badly against an opponent when its score (wins +
	                       draws/2) / games against that opponent is at most this ... */
	uint32_t min_games; /* ... over at least this many games (0 counts as 1) */
} CyclePruneOptions;

typedef struct {
	size_t games;   /* games looked at */
	size_t moves;   /* distinct book moves of the book side met in them */
	size_t marked;  /* moves newly marked avoided */
	size_t avoided; /* moves marked avoided in the book after the run */
	size_t opp_marked[CYCLE_OPPONENTS_MAX]; /* of marked: for losing against each opponent */
} CyclePruneStats;

/*
 * Counts, for each move of the book side found in a record of the book
 * (position and move) and each opponent, the games it was played in against
 * that opponent and the book side's results (a game counts once per move
 * however often it passes), and marks as avoided (BOOKDB_MOVE_AVOIDED;
 * statistics and values kept) the moves that lose badly against one opponent:
 * at or below opt->max_winrate over at least opt->min_games of its games
 * against it (Hefeweizen's rule: a move that wins against the others goes
 * too). Marks already there stay. One write transaction. Returns 0, or
 * CYCLE_EINVAL (a game that does not parse, or an opponent out of range: err
 * names it), CYCLE_EBOOK, CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_prune(CyclePruneStats *st, BookDB *db, const CycleGame *games, size_t n,
                                const CyclePruneOptions *opt, char *err);
/* cycle_prune in the caller's write transaction (left open, also on failure:
 * the caller aborts it then). */
JOSEKI_MUST_USE int cycle_prune_txn(CyclePruneStats *st, BookTxn *txn, const CycleGame *games,
                                    size_t n, const CyclePruneOptions *opt, char *err);

/* The moves marked avoided in the book (txn's view). 0 or CYCLE_EBOOK / CYCLE_ENOMEM. */
JOSEKI_MUST_USE int cycle_avoided_txn(size_t *avoided, BookTxn *txn, char *err);

/* Clears every avoided mark (one write transaction); *cleared gets how many
 * moves were marked. 0, CYCLE_EBOOK or CYCLE_ENOMEM. */
JOSEKI_MUST_USE int cycle_prune_undo(size_t *cleared, BookDB *db, char *err);

/* ---- backtracking: the last book decision of a lost game ---- */

typedef struct {
	size_t lost;    /* lost games looked at */
	size_t changed; /* of them, games the book no longer plays: it leaves them somewhere */
	size_t marked;  /* moves newly avoided: one a lost game the book would play again */
	size_t stuck;   /* lost games the book would play again, with no decision to change */
	size_t opp_marked[CYCLE_OPPONENTS_MAX], opp_stuck[CYCLE_OPPONENTS_MAX];
} CycleBacktrackStats;

/*
 * Against an opponent that plays the same game from the same position (an
 * engine at a node budget in a new process every game), a line the book
 * plays again is the same game with the same result. For each lost game,
 * replays it over the book as it is now (its choices, bookdb_best_move, at
 * the book side's positions after the opening, up to where the book has no
 * move): if the book chooses another move somewhere the game is changed
 * (think followed it further, or a mark above); else the book side's last
 * decision in it is changed: the deepest of its book moves whose position
 * keeps another valued move that is not avoided, and that loses badly
 * against the game's opponent (opt, over the games given), is marked
 * avoided — the next alternative is tried there, and when a position has
 * none left, the decision one level up. A depth-first search over the book's
 * alternatives, one step a lost game. In the caller's write transaction
 * (left open); games are taken in order, each seeing the marks of the ones
 * before. 0, CYCLE_EINVAL, CYCLE_EBOOK or CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_backtrack_txn(CycleBacktrackStats *st, BookTxn *txn,
                                        const CycleGame *games, size_t n,
                                        const CyclePruneOptions *opt, char *err);

typedef struct {
	size_t won;    /* won games looked at */
	size_t kept;   /* the book plays them as they were played */
	size_t marked; /* moves newly avoided so that the book plays them again */
	size_t lost;   /* won games the book no longer plays and cannot be brought back to */
	size_t opp_lost[CYCLE_OPPONENTS_MAX];
} CycleKeepStats;

/*
 * What won is kept: for each won game, replays it over the book as it is
 * now; where the book would choose another move than the game's (values
 * backed up through a position another line shares have moved, or a
 * position the game's engine played from got a record: the opponent's
 * position of the other colour's line, stored by the probe), the moves it
 * now ranks above the game's are marked avoided, so that it plays the
 * game's again; when the record does not hold the game's move, its every
 * move is, so that the book leaves the game there and the engine plays its
 * move again. A game whose move at such a position is in the record but
 * avoided (or, where the book has no move now, was played from the book) is
 * lost track of (counted). Values change with the marks: run minimax and
 * call again until nothing is marked. In the caller's write transaction
 * (left open). 0, CYCLE_EINVAL, CYCLE_EBOOK or CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_keep_won_txn(CycleKeepStats *st, BookTxn *txn, const CycleGame *games,
                                       size_t n, char *err);

/*
 * The lost games worth playing again (cycle --retries): of the games played
 * from each opening with the book side in each colour against each opponent,
 * the last one (games later in the array are newer), when the book side
 * lost it and the book, as it is now, would play it differently (it chooses
 * another move somewhere on its line: a decision backtracking changed, or a
 * line think followed further). Against an opponent that plays the same
 * game from the same position, any other game is the same again. Sets
 * replay[g] for those (false for the rest), *count to how many. Games of an
 * opening not known (opening < 0) are not. In the caller's transaction (read
 * only). 0, CYCLE_EINVAL, CYCLE_EBOOK or CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_replays_txn(size_t *count, bool *replay, BookTxn *txn,
                                      const CycleGame *games, size_t n, char *err);

/* ---- extension ---- */

typedef struct {
	size_t games;   /* games looked at */
	size_t ran_out; /* games in which the book side met a position without a book move */
	size_t queued;  /* positions newly queued */
	size_t pending; /* positions in the queue, not thought yet, after the run */
	size_t opp_queued[CYCLE_OPPONENTS_MAX];
} CycleExtendStats;

/*
 * For each game, finds the first position after its opening where the book
 * side was to move and the book had no move for it (bookdb_best_move: none,
 * or all avoided or illegal), and queues that position and the next `plies`
 * positions of the game (those not thought yet) as roots (roots_queue_add:
 * once each, so running it twice queues nothing more): first every game's
 * first such position, then every game's second, and so on, so that a
 * think that stops part-way has followed each game some way. Queued
 * positions already thought are dropped from the queue. One write
 * transaction. Returns 0, or CYCLE_EINVAL (a game that does not parse),
 * CYCLE_EBOOK, CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_extend(CycleExtendStats *st, BookDB *db, const CycleGame *games, size_t n,
                                 int plies, char *err);

/* Positions queued, each with the opponent of the game that queued it. */
typedef struct {
	Key *keys;
	uint8_t *owners;
	size_t n, cap;
} CycleKeys;
void cycle_keys_free(CycleKeys *k);

/* cycle_extend in the caller's write transaction (left open); the keys it
 * queues are appended to queued (may be NULL). */
JOSEKI_MUST_USE int cycle_extend_txn(CycleExtendStats *st, BookTxn *txn, const CycleGame *games,
                                     size_t n, int plies, CycleKeys *queued, char *err);

/* ---- the whole cycle ---- */

/* Which book moves of a generation's lost games are deleted (--delete). */
typedef enum {
	/* Each lost game the book would play again: its last decision
	 * (cycle_backtrack_txn), after think; and the won games kept
	 * (cycle_keep_won_txn). */
	CYCLE_DELETE_LAST = 0,
	/* Every book move that loses badly against one opponent (cycle_prune:
	 * the paper's rule, Hefeweizen's with several opponents), before extend. */
	CYCLE_DELETE_ALL,
	CYCLE_DELETE_NONE,
} CycleDelete;

/* Which games the book follows further (--extend): queued by extend, or
 * walked by the probe. */
typedef enum {
	CYCLE_EXTEND_LOST = 0, /* the lost games: a won game is left to replay as it was */
	CYCLE_EXTEND_ALL,
	CYCLE_EXTEND_NONE,
} CycleExtend;

/* A generation's games as the book keeps them (meta "cycle_games", written
 * as each opponent's match is over; layout in docs/bookdb.md). */
typedef struct {
	char *text; /* owned; the games' specs point into it */
	CycleGame *games;
	size_t n;
	int wins, draws, losses; /* the book side's, against every opponent */
} CycleGameSet;

/*
 * Parses len bytes of meta "cycle_games": "W D L\n", then one line a game,
 * "C[J:O] R SPEC\n": C the book side's colour (b or w), J the opponent and O
 * the opening, both 1-based (O 0: the start position; left out: opponent 1,
 * opening not known), R the result (-1, 0, 1). Any bytes may be given: 0, or
 * BOOKDB_ECORRUPT (out then holds what was read so far) or BOOKDB_ENOMEM.
 * The specs are not checked here (the steps that use them are). Free with
 * cycle_games_free, also after a failure.
 */
JOSEKI_MUST_USE int cycle_games_parse(CycleGameSet *out, const void *bytes, size_t len);
void cycle_games_free(CycleGameSet *gs);

/* One row of the cycle's table: a generation's figures against one opponent. */
typedef struct {
	int generation, opponent;          /* 1-based */
	int games, wins, draws, losses;    /* the book side's */
	int book_moves;                    /* the book side's book moves over those games */
	int exits;                         /* games in which it used its engine ... */
	int exit_q1, exit_median, exit_q3; /* ... and its exit ply's quartiles there */
	uint64_t queued;                   /* positions extend queued from its games */
	uint64_t thought;   /* positions think analysed for them (queued, or on the walks) */
	uint64_t marked;    /* moves newly avoided for losing against it */
	uint64_t repeats;   /* lost games the book would still play again as they were */
	uint64_t won_lost;  /* won games the book no longer plays */
	uint64_t engine_ms; /* think's engine time for it (the engines' own CPU time) */
	int retried;        /* lost games played again (--retries), not in games ... */
	int retry_wins;     /* ... and of them, won */
	char name[160];     /* the opponent engine's name, and its options: "NAME (A=1, B=2)" */
} CycleRow;

typedef struct {
	CycleRow *rows; /* by generation, then opponent */
	size_t n, cap;
} CycleTable;

/*
 * Parses len bytes of meta "cycle_table": one line a row, "G J GAMES W D L
 * BOOK EXITS Q1 MEDIAN Q3 QUEUED THOUGHT MARKED REPEATS WON_LOST ENGINE_MS NAME\n" (the
 * numbers decimal, the name the rest of the line); when the first line is
 * "v2", each row has RETRIED RETRY_WINS after ENGINE_MS (a table without it
 * was written before --retries: those are 0). 0, BOOKDB_ECORRUPT or
 * BOOKDB_ENOMEM; free with cycle_table_free, also after a failure.
 */
JOSEKI_MUST_USE int cycle_table_parse(CycleTable *t, const void *bytes, size_t len);
void cycle_table_free(CycleTable *t);
/* The table kept in db (empty for a book the cycle never ran on). 0 or CYCLE_EBOOK. */
JOSEKI_MUST_USE int cycle_table_read(CycleTable *t, BookDB *db);

/* One generation's figures. */
typedef struct {
	int generation;          /* 1-based */
	int games;               /* games played */
	int wins, draws, losses; /* the book side's */
	double score;            /* the book side's points per game */
	size_t queued;           /* positions queued by extend */
	uint64_t thought;        /* positions think added */
	size_t marked;           /* moves newly avoided */
	size_t avoided;          /* moves avoided in the book */
	bool resumed;            /* the generation was resumed after an interruption */
	const CycleRow *rows;    /* its rows of the table, one an opponent */
	int nrows;
} CycleGenStats;

typedef struct {
	const char *book;   /* the BOOK directory: side A's book, and the one grown */
	int generations;    /* total generations: a rerun goes on from the last finished step */
	MatchOptions match; /* side[0] = the book side (its book set to `book`), side[1] the
	                       opponent; out_dir is set per generation (BOOK/cycle/gen-NNNN),
	                       and the seed is match.seed + generation - 1 */
	/* The opponents: each plays match.games games against the book side
	 * every generation, from the same openings in the same order (records in
	 * gen-NNNN/opponent-J with several). NULL: match.side[1] alone. */
	const MatchSide *opponents;
	int nopponents; /* 1..CYCLE_OPPONENTS_MAX */
	CyclePruneOptions prune;
	CycleDelete delete_rule;
	/* With CYCLE_DELETE_LAST: after a generation's backtracking, up to this
	 * many rounds of playing again the lost games the book now plays
	 * differently (cycle_replays_txn; the same opening, colour and opponent,
	 * in BOOK/cycle/gen-NNNN/retry-K), then backtracking and keeping over
	 * them; a round with nothing to play ends them. No thinking: each round
	 * tries the next alternative of each lost line. The generation's score is
	 * its first match's. */
	int retries;
	CycleExtend extend_rule;
	int plies;          /* extend: positions after the first out of book */
	ThinkOptions think; /* first is the queue's (think_run); roots: the openings, or --roots */
	/* With probe.opponents set (think.nengines per opponent, opponent j's
	 * from [j * think.nengines]; opp_budget, book_side, max_plies, burst),
	 * the think step walks the lines the opponents play (bookgen/probe.h)
	 * instead of selecting: from the openings of the games --extend takes,
	 * each in the book side's colour, against that game's opponent (the
	 * engine-seconds shared among the opponents by their lines); with
	 * CYCLE_EXTEND_ALL, every line from think's roots. The rest of
	 * ProbeOptions is taken from think and minimax. */
	ProbeOptions probe;
	BookMinimaxHook minimax;           /* backs the values up (bookmm_hook(); unset: none) */
	const volatile sig_atomic_t *stop; /* raised: the current step ends, the state is kept */
	void (*on_generation)(void *ctx, const CycleGenStats *g);     /* after each generation */
	void (*on_step)(void *ctx, int generation, const char *step); /* before each step */
	/* A line worth saying (the opponents differ from the last run's), before
	 * the first step; may be NULL. */
	void (*on_note)(void *ctx, const char *note);
	void *ctx;
} CycleOptions;

/*
 * Runs generations until opt->generations are done. The state (the last
 * generation finished and the last step of the current one, the current
 * generation's games, the table) is kept in the book (meta "cycle",
 * "cycle_games", "cycle_table"), each step's effect and state written in one
 * transaction where the step makes one, so a run stopped at any moment
 * (Ctrl-C, kill -9) is resumed by the same command from the step it was in.
 * *done gets the generations finished in all. Returns 0 (also when stopped:
 * *stopped set), or CYCLE_E* with a message in err (CYCLE_ERRLEN).
 */
JOSEKI_MUST_USE int cycle_run(int *done, bool *stopped, const CycleOptions *opt, char *err);

/* The generations finished so far according to the book's state (0 for a
 * book the cycle never ran on). 0 or CYCLE_EBOOK. */
JOSEKI_MUST_USE int cycle_generations_done(int *done, BookDB *db);

#endif

/*
 * play/match.h — games between two engine set-ups, to measure what a book
 * (or an engine, or an option) is worth. See docs/match.md.
 *
 * Each side (A, B) is an engine — the built-in core in process, or a USI
 * engine program through the driver (search/usi_engine.h) — with or without
 * a book. A side with a book plays the book's best legal move (bookdb_query's
 * order) while the book knows the position; from its first position the book
 * does not know, it asks its engine for the rest of the game. Every move is
 * a fixed budget (nodes or movetime). Games start from the start position or
 * from the openings given (each opening played twice, colours swapped);
 * pair p plays opening p mod n of the openings, shuffled by the seed.
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

/* How a game ended. */
typedef enum {
	MATCH_END_NONE = 0,        /* not played (cancelled) */
	MATCH_END_RESIGN,          /* an engine resigned */
	MATCH_END_MATE,            /* the side to move has no legal move and loses */
	MATCH_END_REPETITION,      /* fourth repetition: a draw */
	MATCH_END_PERPETUAL_CHECK, /* fourth repetition, one side checked throughout and loses */
	MATCH_END_DECLARATION,     /* "bestmove win": valid wins, invalid loses */
	MATCH_END_MAX_MOVES,       /* the move limit: a draw */
	MATCH_END_ILLEGAL_MOVE,    /* an engine's move was illegal */
	MATCH_END_TIMEOUT,         /* an engine did not answer in time */
	MATCH_END_CRASH,           /* an engine exited or its answer was unreadable */
} MatchEnd;

/* "resign", "mate", "repetition", "perpetual_check", "declaration", "max_moves",
 * "illegal_move", "timeout", "crash" ("none" for MATCH_END_NONE). */
const char *match_end_name(MatchEnd end);
/*
 * The end `joseki replay` reports for the game's CSA record (replay_end_name
 * spelling): the same word, except a timeout is "time_up" (%TIME_UP) and a
 * crash "resign" (%TORYO, as floodgate records a disconnection).
 */
const char *match_end_replay_name(MatchEnd end);

/* One side of the match. */
typedef struct {
	const char *engine;       /* "builtin" (in process) or the path of a USI engine */
	const char *book;         /* a BOOK directory, or NULL for none */
	const UsiOption *options; /* setoption for a USI engine; the built-in core takes USI_Hash */
	int noptions;
} MatchSide;

typedef struct {
	MatchSide side[2];           /* [0] = A, [1] = B */
	int games;                   /* games to play (>= 1) */
	SearchBudget budget;         /* nodes or movetime per move */
	const char *const *openings; /* position specs; NULL or none: the start position */
	int nopenings;
	int concurrency;     /* games played at once, 1..MATCH_CONCURRENCY_MAX */
	int max_moves;       /* plies of a record, opening included; 0: the default */
	uint64_t seed;       /* shuffles the openings */
	const char *out_dir; /* CSA records game-NNNN.csa and engine logs; NULL: none */
	FILE *progress;      /* a line per finished game at most every second; NULL: quiet */
	/* Set by the caller (e.g. on SIGINT): no new game starts, running searches
	 * stop, unfinished games are not counted. Must outlive match_run. */
	const volatile sig_atomic_t *cancel;
	/* Driver settings for USI engines (timeouts...); NULL: the defaults. */
	const UsiEngineConfig *usi;
} MatchOptions;

/* One game, from A's point of view. */
typedef struct {
	bool played;
	int opening;   /* index into the openings, -1 for the start position */
	Color a_color; /* the colour A played */
	MatchEnd end;
	int winner;        /* BLACK, WHITE, or -1 for a draw */
	int result;        /* for A: 1 win, 0 draw, -1 loss */
	int plies;         /* moves in the record, opening included */
	int book_plies[2]; /* book moves played by A and by B */
	int engine_moves;  /* moves the engines were asked for */
	char detail[160];  /* what went wrong (crash, timeout, illegal move), else "" */
	char *usi;         /* the game as a position spec ("startpos moves ..."); malloc'd */
} MatchGame;

typedef struct {
	int played, wins, draws, losses; /* games, from A's point of view */
	double score;                    /* A's points per game (win 1, draw 1/2) */
	double elo, elo_low, elo_high;   /* Elo difference A − B and its 95% interval */
	double book_plies[2];            /* average book moves per game of A and of B */
	uint64_t engine_moves, book_moves;
	double seconds;   /* wall time of the match */
	char name[2][64]; /* the engines' names */
	int ngames;
	MatchGame *games; /* ngames, in game order (game i is games[i]) */
} MatchResult;

/*
 * Plays the match. Returns 0 with *out filled (match_result_free), also when
 * cancelled (the games not finished have played = false); or a negative
 * MATCH_E* code with a message in err (MATCH_ERRLEN bytes) and *out empty:
 * bad options or openings, an engine or a book that cannot be opened, an
 * output directory or record that cannot be written.
 */
int match_run(MatchResult *out, const MatchOptions *opt, char *err);

void match_result_free(MatchResult *r);

/*
 * Elo difference for a score of w wins, d draws, l losses, with the 95%
 * interval from the games' own variance (normal approximation). A score of
 * 0 or 1 gives ±INFINITY; no games gives 0 for all three.
 */
void match_elo(int w, int d, int l, double *elo, double *low, double *high);

#endif

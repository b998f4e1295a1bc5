/*
 * shogi/csa_write.h — writes a game as a CSA record (V2.2, the floodgate
 * dialect that ingest/kifu.h reads back; see docs/csa.md).
 *
 * The game is a Position whose history holds the moves from its set-up
 * position. The record gets: the version line, N+/N-, $EVENT, $START_TIME,
 * the time control ($TIME_LIMIT, $TIME, 'Increment), 'Max_Moves, the set-up
 * position as board lines P1..P9 with hand lines and
 * the side to move, then each move with its T line and its "'**" comment
 * ("'** <score> <pv>": the score from Black's point of view and the PV in CSA
 * moves; "'** 0" alone for a book move), then the % ending and free comments.
 */
#ifndef SHOGI_CSA_WRITE_H
#define SHOGI_CSA_WRITE_H

#include <stdbool.h>
#include <stdio.h>

#include "shogi/position.h"
#include "shogi/errors.h"

/* What is known about one move of the game (all optional). */
typedef struct {
	int time_ms;    /* written as "T<seconds>" (rounded down); < 0: no T line */
	bool book;      /* a book move: "'** 0" alone */
	bool has_eval;  /* an evaluation: "'** <eval> <pv>" */
	int eval;       /* centipawns or ±(VALUE_MATE − n), from Black's point of view */
	int pv_len;     /* moves in pv */
	const Move *pv; /* the PV after the move (the opponent's reply first) */
} CsaMoveInfo;

typedef struct {
	const char *name[COLOR_NB]; /* N+ / N- (NULL: no line) */
	const char *event;          /* $EVENT: (NULL: no line) */
	const char *start_time;     /* $START_TIME: "YYYY/MM/DD hh:mm:ss" (NULL: no line) */
	/*
	 * Each side's time control (both NULL: none). Written as V2.2's
	 * "$TIME_LIMIT:HH:MM+SS" when both sides have the same main time in whole
	 * minutes and byoyomi in whole seconds, without increment; always as
	 * V3.0's "$TIME:main+byoyomi+increment" in seconds ("$TIME+:" and
	 * "$TIME-:" when the sides differ); a shared increment also as
	 * floodgate's "'Increment:seconds".
	 */
	const TimeControl *time[COLOR_NB];
	int max_moves;               /* 'Max_Moves:N when > 0 */
	const CsaMoveInfo *info;     /* one per move of the history, or NULL */
	const char *end;             /* the % word without '%' ("TORYO", "KACHI"); NULL: none */
	const char *const *comments; /* lines written after the ending, each as "'<text>" */
	int ncomments;
} CsaGame;

/*
 * Writes game (the position reached, its history the game's moves) as one
 * CSA record to f. The position is unwound to its set-up and played forward
 * again, so it is unchanged on return. A PV is written up to its first move
 * that is not legal. Returns 0, or SHOGI_EILLEGAL with a message in err
 * (SHOGI_ERRLEN bytes, may be NULL) when the history holds a null move or the
 * ending word is not a CSA word (capitals, '+', '-', '_'). Write errors are
 * the caller's to see (ferror(f)).
 */
JOSEKI_MUST_USE int csa_game_write(FILE *f, Position *game, const CsaGame *g, char *err);

/*
 * Writes one floodgate-style CSA record of a legal random game from the start
 * position (`joseki gen-games`, the ingest benchmark's corpus): names and
 * ratings from id, 60..max_plies plies (max_plies >= 60; fewer when a
 * repetition or mate ends it), the first 8 from a small choice so openings
 * share lines, each with a "'**" evaluation comment and a one-move PV, then
 * %TORYO and a summary. The same *rng state gives the same game; *rng is
 * advanced. seed (the corpus's: gen-games --seed) is in the game's $EVENT,
 * its identity for ingest, unless 1: corpora of two seeds hold no game of the
 * same id. pos is scratch.
 */
void csa_random_game_write(FILE *f, uint64_t *rng, uint64_t seed, long id, int max_plies,
                           Position *pos);

#endif

/*
 * search/usi_server.h — the built-in engine as a USI engine: reads commands
 * from one stream and answers on another (`joseki usi` runs it on stdin and
 * stdout).
 *
 * Commands: usi, isready, setoption (USI_Hash/Hash, MultiPV, Threads 1,
 * USI_Ponder), usinewgame, position, go (btime wtime binc winc byoyomi
 * movetime nodes depth infinite ponder mate), stop, ponderhit, gameover, quit,
 * and `bench [DEPTH]`. The reading thread handles commands; `go` starts one
 * search thread, which prints the info lines and the bestmove. For `go
 * infinite` and `go ponder` the bestmove is held back until `stop` (or
 * `ponderhit`), as the protocol asks, even when the search ends sooner. All
 * output goes through one mutex, so lines of the two threads never mix.
 *
 * A book is the caller's: the optional book_move callback is asked before a
 * bounded search (not for infinite or ponder) and its legal move, when it has
 * one, is played at once with "info string book move ...". The search layer
 * knows no book.
 */
#ifndef SEARCH_USI_SERVER_H
#define SEARCH_USI_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "search/engine.h"
#include "shogi/position.h"

#define USI_HASH_MAX_MB 65536
#define USI_TIME_MARGIN_MS 60 /* GUI and pipe overhead kept in reserve */
#define USI_MOVES_TO_GO 40    /* the moves a clock is spread over */

/* The book's move for pos, or MOVE_NONE (must be legal in pos). */
typedef Move (*UsiBookMoveFn)(void *ctx, const Position *pos);

typedef struct {
	FILE *in;                /* commands, one a line */
	FILE *out;               /* answers, flushed a line at a time */
	FILE *log;               /* bench's progress; NULL: none */
	UsiBookMoveFn book_move; /* NULL: no book */
	void *book_ctx;
	int64_t (*now_ns)(void *ctx); /* the search's clock (a test's fake); NULL: the system's */
	void *now_ctx;
} UsiServerConfig;

/*
 * Runs until quit or the end of input (a bounded search still running at the
 * end of input finishes and prints its bestmove, so `echo ... | joseki usi`
 * works; an infinite or pondering one is stopped). Returns 0, or
 * ENGINE_ENOMEM (nothing read) when the engine cannot be made.
 */
int usi_server_run(const UsiServerConfig *cfg);

/* The clock part of a `go` command. Zero fields are absent. */
typedef struct {
	int64_t time[COLOR_NB], inc[COLOR_NB], byoyomi, movetime, nodes, depth;
	bool timed; /* any of btime/wtime/binc/winc/byoyomi given */
	bool infinite;
} UsiGo;

/*
 * The search limits for go as the side us: movetime less the margin (a tenth
 * of it when that is less; at least 10 ms). With a
 * clock (byoyomi, Fischer increment, or sudden death), the target is a 40th
 * of what is left plus 3/4 of the increment plus the whole byoyomi; no new
 * iteration starts after half the target (soft limit), and the search stops
 * at a quarter of the clock plus the increment and byoyomi, never more than
 * the clock and the byoyomi less the margin (hard limit; at least 10 ms).
 * Depth and nodes as given. multipv is copied.
 */
void usi_go_limits(EngineLimits *out, const UsiGo *go, Color us, int multipv);

#endif

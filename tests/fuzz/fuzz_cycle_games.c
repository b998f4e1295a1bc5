/*
 * tests/fuzz/fuzz_cycle_games.c — libFuzzer target for cycle_games_parse, the
 * reader of a generation's games kept in the book (meta "cycle_games",
 * play/cycle.h), and cycle_table_parse, the reader of the cycle's table (meta
 * "cycle_table"), both on the same bytes.
 *
 * Any bytes: a failure is BOOKDB_ECORRUPT (or out of memory); a success gives
 * W/D/L that are not negative and games with a colour, a result in -1..1, an
 * opponent in range, an opening not negative and a non-empty spec lying
 * inside the parsed text, which position_parse then reads without crashing
 * (it may refuse it: the cycle's steps check each game); a table's rows have
 * a generation from 1, an opponent in range, counts not negative (the
 * retries' too, in a "v2" table) and a name ending within its buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "play/cycle.h"
#include "shogi/notation.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static Position pos; /* large: not on the stack */
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	if (size > 1 << 16) return 0;
	CycleGameSet gs;
	int rc = cycle_games_parse(&gs, data, size);
	if (rc != 0 && rc != BOOKDB_ECORRUPT && rc != BOOKDB_ENOMEM) abort();
	if (rc == 0) {
		if (gs.wins < 0 || gs.draws < 0 || gs.losses < 0) abort();
		for (size_t i = 0; i < gs.n; i++) {
			const CycleGame *g = &gs.games[i];
			if ((g->book_color != BLACK && g->book_color != WHITE) || g->result < -1 ||
			    g->result > 1 || !g->spec[0] || g->spec < gs.text ||
			    g->spec >= gs.text + size || g->opponent < 0 ||
			    g->opponent >= CYCLE_OPPONENTS_MAX || g->opening < 0)
				abort();
			char err[SHOGI_ERRLEN];
			(void)position_parse(&pos, g->spec, err);
		}
	}
	cycle_games_free(&gs);
	CycleTable t;
	rc = cycle_table_parse(&t, data, size);
	if (rc != 0 && rc != BOOKDB_ECORRUPT && rc != BOOKDB_ENOMEM) abort();
	for (size_t i = 0; rc == 0 && i < t.n; i++) {
		const CycleRow *r = &t.rows[i];
		if (r->generation < 1 || r->opponent < 1 || r->opponent > CYCLE_OPPONENTS_MAX ||
		    r->games < 0 || r->wins < 0 || r->draws < 0 || r->losses < 0 ||
		    r->book_moves < 0 || r->exits < 0 || r->retried < 0 || r->retry_wins < 0 ||
		    !memchr(r->name, 0, sizeof r->name))
			abort();
	}
	cycle_table_free(&t);
	return 0;
}

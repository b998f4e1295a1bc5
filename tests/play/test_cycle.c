/*
 * tests/bookgen/test_cycle.c — Shiba's extension/deletion cycle
 * (play/cycle.h, joseki extend / prune / cycle) over real LMDB books:
 * prune's thresholds (win rate, games, a game counted once, the opponent's
 * moves not counted) and --undo; that export, query, the book move and
 * minimax leave an avoided move out; extend queues where the book side's
 * book ran out and the next plies, once, and think thinks them first; and the
 * whole cycle on a planted book whose first book move loses every game to
 * the built-in engine: after one generation it is avoided and the book side's
 * score rises, and a rerun resumes instead of starting over; a cycle stopped
 * as a step begins, and cycles killed (kill -9) at random moments: the book
 * passes check after each kill and the same command finishes the cycle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "play/cycle.h"
#include "bookgen/roots.h"
#include "minimax/bookmm.h"
#include "search/builtin.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

typedef struct {
	const char *usi;
	int eval; /* INT32_MIN: no evaluation, game statistics only */
} PlantMove;

/* Stores a record for spec with the moves given (thought when asked). */
static void plant(BookDB *db, const char *spec, const PlantMove *mv, int n, bool thought)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	bookdb_record_init(rec, pos);
	if (thought) {
		rec->flags = BOOKDB_REC_THOUGHT;
		rec->think_depth = 10;
	}
	for (int i = 0; i < n; i++) {
		BookMove *m = &rec->moves[i];
		memset(m, 0, sizeof *m);
		assert_int_equal(
		    usi_move_parse_legal(&m->move, pos, mv[i].usi, strlen(mv[i].usi), NULL), 0);
		if (mv[i].eval != INT32_MIN) {
			m->flags = BOOKDB_MOVE_EVAL;
			m->eval = (int16_t)mv[i].eval;
			m->depth = rec->think_depth;
		} else {
			m->flags = BOOKDB_MOVE_STATS;
			m->count = 1;
		}
	}
	rec->nmoves = (uint16_t)n;
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_put(t, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	free(rec);
	free(pos);
}

/* The record of spec (asserted present). */
static void get(BookRecord *rec, BookDB *db, const char *spec)
{
	Position *pos = malloc(sizeof *pos);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_get(rec, t, pos_key(pos)), 0);
	bookdb_txn_abort(t);
	free(pos);
}

/* Whether usi is marked avoided in rec. */
static bool avoided(const BookRecord *rec, const char *usi)
{
	char buf[USI_MOVE_MAX];
	for (int i = 0; i < rec->nmoves; i++) {
		usi_move_write(rec->moves[i].move, buf);
		if (!strcmp(buf, usi)) return rec->moves[i].flags & BOOKDB_MOVE_AVOIDED;
	}
	fail_msg("move %s not in the record", usi);
	return false;
}

static BookDB *open_book(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/book", dir);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, path, NULL, NULL), 0);
	return db;
}

static void test_cycle__prune_marks_moves_at_the_threshold_and_undo_clears_them(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[CYCLE_ERRLEN];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}, {"2g2f", 50}, {"5g5f", INT32_MIN}};
	static const PlantMove REPLY[] = {{"3c3d", 20}};
	plant(db, "startpos", START, 3, true);
	plant(db, "startpos moves 7g7f", REPLY, 1, true);
	/* Black is the book side: 7g7f scores 1/3, 2g2f 1/4, 5g5f (statistics
	 * only) 0/1. White's 3c3d, in the book too, is not the book side's. */
	CycleGame g[] = {
	    {"startpos moves 7g7f 3c3d", BLACK, -1, 0, 0, 0},
	    {"startpos moves 7g7f 3c3d 2g2f", BLACK, -1, 0, 0, 0},
	    {"startpos moves 7g7f 3c3d", BLACK, 1, 0, 0, 0},
	    {"startpos moves 2g2f 8c8d", BLACK, -1, 0, 0, 0},
	    {"startpos moves 2g2f", BLACK, 0, 0, 0, 0},
	    {"startpos moves 5g5f", BLACK, -1, 0, 0, 0},
	};
	CyclePruneStats st;
	/* At least 3 games: only 7g7f has them, and 1/3 is above 0.30. */
	CyclePruneOptions o = {.max_winrate = 0.30, .min_games = 3};
	assert_int_equal(cycle_prune(&st, db, g, 6, &o, err), 0);
	assert_int_equal(st.games, 6);
	assert_int_equal(st.moves, 3);
	assert_int_equal(st.marked, 0);
	assert_int_equal(st.avoided, 0);
	/* At least 2 games: 2g2f (0.25) goes, 7g7f (0.33) stays, 5g5f has 1 game. */
	o.min_games = 2;
	assert_int_equal(cycle_prune(&st, db, g, 6, &o, err), 0);
	assert_int_equal(st.marked, 1);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, "startpos");
	assert_false(avoided(rec, "7g7f"));
	assert_true(avoided(rec, "2g2f"));
	assert_false(avoided(rec, "5g5f"));
	/* The statistics and the evaluation stay with the mark. */
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].flags & BOOKDB_MOVE_AVOIDED)
			assert_int_equal(rec->moves[i].eval, 50);
	/* Again: nothing new; a threshold at the score itself marks (at or below). */
	assert_int_equal(cycle_prune(&st, db, g, 6, &o, err), 0);
	assert_int_equal(st.marked, 0);
	assert_int_equal(st.avoided, 1);
	o.max_winrate = 1.0 / 3;
	o.min_games = 1;
	assert_int_equal(cycle_prune(&st, db, g, 6, &o, err), 0);
	assert_int_equal(st.marked, 2);
	assert_int_equal(st.avoided, 3);
	get(rec, db, "startpos moves 7g7f");
	assert_false(avoided(rec, "3c3d"));
	/* A game passing one position twice counts once for its move. */
	static const PlantMove KING[] = {{"5i4h", 0}};
	plant(db, "startpos", KING, 1, true);
	CycleGame twice = {"startpos moves 5i4h 5a4b 4h5i 4b5a 5i4h 5a4b", BLACK, -1, 0, 0, 0};
	o.min_games = 2;
	assert_int_equal(cycle_prune(&st, db, &twice, 1, &o, err), 0);
	assert_int_equal(st.marked, 0);
	o.min_games = 1;
	assert_int_equal(cycle_prune(&st, db, &twice, 1, &o, err), 0);
	assert_int_equal(st.marked, 1);
	/* A bad game is named, and nothing is marked. */
	plant(db, "startpos", START, 3, true);
	CycleGame bad[] = {{"startpos moves 2g2f", BLACK, -1, 0, 0, 0},
	                   {"startpos moves 7g7f 7g7f", BLACK, -1, 0, 0, 0}};
	assert_int_equal(cycle_prune(&st, db, bad, 2, &o, err), CYCLE_EINVAL);
	assert_non_null(strstr(err, "game 2"));
	get(rec, db, "startpos");
	assert_false(avoided(rec, "2g2f"));
	/* --undo clears every mark, in every record. */
	assert_int_equal(cycle_prune(&st, db, g, 6, &o, err), 0);
	assert_int_equal(st.avoided, 3);
	size_t cleared;
	assert_int_equal(cycle_prune_undo(&cleared, db, err), 0);
	assert_int_equal(cleared, 3);
	get(rec, db, "startpos");
	for (int i = 0; i < rec->nmoves; i++)
		assert_false(rec->moves[i].flags & BOOKDB_MOVE_AVOIDED);
	assert_false(rec->flags & BOOKDB_REC_AVOID);
	assert_int_equal(cycle_prune_undo(&cleared, db, err), 0);
	assert_int_equal(cleared, 0);
	free(rec);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* Hefeweizen's rule: a move that wins against one opponent and loses against
 * another is deleted, where the games pooled would keep it. */
static void test_cycle__prune_deletes_what_loses_badly_against_one_opponent(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[CYCLE_ERRLEN];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}, {"2g2f", 50}};
	plant(db, "startpos", START, 2, true);
	CycleGame g[] = {
	    {"startpos moves 7g7f", BLACK, 1, 0, 0, 0},
	    {"startpos moves 7g7f 3c3d", BLACK, 1, 0, 0, 0},
	    {"startpos moves 7g7f 8c8d", BLACK, -1, 1, 0, 0},
	    {"startpos moves 2g2f", BLACK, 1, 1, 0, 0},
	    {"startpos moves 2g2f 8c8d", BLACK, 0, 1, 0, 0},
	};
	CyclePruneStats st;
	CyclePruneOptions o = {.max_winrate = 0.30, .min_games = 1};
	/* Pooled, 7g7f scores 2/3: all the games as one opponent's keep it. */
	CycleGame pooled[5];
	memcpy(pooled, g, sizeof g);
	for (int i = 0; i < 5; i++) pooled[i].opponent = 0;
	assert_int_equal(cycle_prune(&st, db, pooled, 5, &o, err), 0);
	assert_int_equal(st.marked, 0);
	/* Against opponent 2 alone it scores 0: deleted, and counted for it. */
	assert_int_equal(cycle_prune(&st, db, g, 5, &o, err), 0);
	assert_int_equal(st.moves, 2);
	assert_int_equal(st.marked, 1);
	assert_int_equal(st.opp_marked[0], 0);
	assert_int_equal(st.opp_marked[1], 1);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, "startpos");
	assert_true(avoided(rec, "7g7f"));
	assert_false(avoided(rec, "2g2f"));
	/* An opponent out of range is a bad game. */
	CycleGame bad = {"startpos moves 2g2f", BLACK, -1, CYCLE_OPPONENTS_MAX, 0, 0};
	assert_int_equal(cycle_prune(&st, db, &bad, 1, &o, err), CYCLE_EINVAL);
	free(rec);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* cycle_backtrack_txn (or cycle_keep_won_txn when keep) in a write
 * transaction of its own. */
static void backtrack(BookDB *db, CycleBacktrackStats *bs, CycleKeepStats *ks, const CycleGame *g,
                      size_t n, const CyclePruneOptions *o)
{
	char err[CYCLE_ERRLEN];
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	if (bs) assert_int_equal(cycle_backtrack_txn(bs, t, g, n, o, err), 0);
	if (ks) assert_int_equal(cycle_keep_won_txn(ks, t, g, n, err), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
}

/* The book's move at spec now (its usi text in out). */
static void book_move(BookDB *db, const char *spec, char *out)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_query(rec, t, pos), 1);
	usi_move_write(bookdb_best_move(rec, pos), out);
	bookdb_txn_abort(t);
	free(rec);
	free(pos);
}

#define P2 "startpos moves 7g7f 3c3d"
#define P3 "startpos moves 7g7f 3c3d 2g2f 8c8d"

/*
 * The depth-first search over the book's alternatives: a lost game the book
 * would play again has its last decision with an alternative changed (a
 * position with none left passes it to the one above), a game the book no
 * longer plays is left alone, the opening's moves are not the book's, and a
 * move that did not lose badly against the game's opponent is not changed.
 */
static void test_cycle__backtracking_changes_the_last_decision_of_a_lost_game(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], usi[USI_MOVE_MAX];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}, {"2g2f", 50}};
	static const PlantMove M2[] = {{"2g2f", 80}, {"6g6f", 40}};
	static const PlantMove M3[] = {{"2f2e", 60}}; /* no alternative */
	plant(db, "startpos", START, 2, true);
	plant(db, P2, M2, 2, true);
	plant(db, P3, M3, 1, true);
	CyclePruneOptions o = {.max_winrate = 0.30, .min_games = 1};
	CycleBacktrackStats bs;
	/* Lost with the book's moves at the start, P2 and P3: P3 has no
	 * alternative, so P2's 2g2f goes. A won game and a draw are not looked at. */
	CycleGame lost = {P3 " 2f2e 8d8e 6i7h", BLACK, -1, 0, 0, 0};
	CycleGame g[] = {lost,
	                 {"startpos moves 2g2f", BLACK, 1, 0, 0, 0},
	                 {"startpos moves 2g2f 8c8d", BLACK, 0, 0, 0, 0}};
	backtrack(db, &bs, NULL, g, 3, &o);
	assert_int_equal(bs.lost, 1);
	assert_int_equal(bs.marked, 1);
	assert_int_equal(bs.opp_marked[0], 1);
	assert_int_equal(bs.changed, 0);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, P2);
	assert_true(avoided(rec, "2g2f"));
	book_move(db, P2, usi);
	assert_string_equal(usi, "6g6f");
	/* Again: the book no longer plays that game; nothing more is marked. */
	backtrack(db, &bs, NULL, &lost, 1, &o);
	assert_int_equal(bs.changed, 1);
	assert_int_equal(bs.marked, 0);
	/* The next try at P2 loses too: P2 has nothing left, the decision one
	 * level up changes. */
	CycleGame lost2 = {P2 " 6g6f 8c8d", BLACK, -1, 0, 0, 0};
	backtrack(db, &bs, NULL, &lost2, 1, &o);
	assert_int_equal(bs.marked, 1);
	get(rec, db, "startpos");
	assert_true(avoided(rec, "7g7f"));
	/* With its first two plies the opening's (start_ply 2), the start's move
	 * is not the book's: nothing is left to change. */
	plant(db, "startpos", START, 2, true);
	CycleGame opening = {P2 " 6g6f 8c8d", BLACK, -1, 0, 0, 2};
	backtrack(db, &bs, NULL, &opening, 1, &o);
	assert_int_equal(bs.marked, 0);
	assert_int_equal(bs.stuck, 1);
	assert_int_equal(bs.opp_stuck[0], 1);
	/* A move that also won against the same opponent (1/2; a game from an
	 * opening that ends at P2) does not lose badly: the decision above
	 * changes instead; against another opponent it would (Hefeweizen's rule,
	 * per opponent). */
	plant(db, P2, M2, 2, true);
	CycleGame shared[] = {lost, {P2 " 2g2f 8c8d 2f2e 3a3b", BLACK, 1, 0, 0, 2}};
	backtrack(db, &bs, NULL, shared, 2, &o);
	assert_int_equal(bs.marked, 1);
	get(rec, db, P2);
	assert_false(avoided(rec, "2g2f"));
	get(rec, db, "startpos");
	assert_true(avoided(rec, "7g7f"));
	plant(db, "startpos", START, 2, true);
	shared[1].opponent = 1;
	backtrack(db, &bs, NULL, shared, 2, &o);
	assert_int_equal(bs.marked, 1);
	get(rec, db, P2);
	assert_true(avoided(rec, "2g2f"));
	free(rec);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * --retries plays again, of each opening, colour and opponent's games, the
 * newest, when it was lost and the book now plays it differently: a lost
 * game whose last decision backtracking changed is; one the book would
 * play again as it was, a won one, an older game of the same slot and one
 * of an opening not known are not.
 */
static void
test_cycle__the_games_played_again_are_the_newest_lost_ones_the_book_changed(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[CYCLE_ERRLEN];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}, {"2g2f", 50}};
	static const PlantMove M2[] = {{"2g2f", 80}, {"6g6f", 40}};
	static const PlantMove M3[] = {{"2f2e", 60}};
	plant(db, "startpos", START, 2, true);
	plant(db, P2, M2, 2, true);
	plant(db, P3, M3, 1, true);
	CycleGame g[] = {
	    /* 0: lost, opening 1, Black, opponent 0: an older game of slot 3's */
	    {P3 " 2f2e 8d8e 6i7h", BLACK, -1, 0, 1, 0},
	    /* 1: won */
	    {"startpos moves 2g2f", BLACK, 1, 0, 2, 0},
	    /* 2: lost against opponent 1 from the same opening: its own slot */
	    {P3 " 2f2e 8d8e 6i7h", BLACK, -1, 1, 1, 0},
	    /* 3: the newest of slot (0, 1, Black) */
	    {P3 " 2f2e 8d8e 6i7h", BLACK, -1, 0, 1, 0},
	    /* 4: lost as White, a line the book has nothing for */
	    {"startpos moves 7g7f 3c3d", WHITE, -1, 0, 3, 0},
	};
	bool replay[5];
	size_t count;
	BookTxn *t;
	/* Before backtracking the book plays each lost game as it was. */
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(cycle_replays_txn(&count, replay, t, g, 5, err), 0);
	bookdb_txn_abort(t);
	assert_int_equal(count, 0);
	for (int i = 0; i < 5; i++) assert_false(replay[i]);
	CyclePruneOptions o = {.max_winrate = 0.30, .min_games = 1};
	CycleBacktrackStats bs;
	backtrack(db, &bs, NULL, g, 5, &o);
	assert_int_equal(bs.marked, 1); /* P2's 2g2f: the book now plays 6g6f there */
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(cycle_replays_txn(&count, replay, t, g, 5, err), 0);
	assert_int_equal(count, 2);
	assert_false(replay[0]);
	assert_false(replay[1]);
	assert_true(replay[2]);
	assert_true(replay[3]);
	assert_false(replay[4]);
	/* An opening not known (a game read from a file) is not played again. */
	g[0].opening = g[2].opening = g[3].opening = -1;
	assert_int_equal(cycle_replays_txn(&count, replay, t, g, 5, err), 0);
	assert_int_equal(count, 0);
	/* Game 0, no longer of game 3's slot, is the newest of its own. */
	g[0].opening = 1;
	assert_int_equal(cycle_replays_txn(&count, replay, t, g, 5, err), 0);
	assert_int_equal(count, 1);
	assert_true(replay[0]);
	g[0].opening = -1;
	/* A bad game is named. */
	g[3].opening = 1;
	g[3].spec = "startpos moves 7g7f 7g7f";
	assert_int_equal(cycle_replays_txn(&count, replay, t, g, 5, err), CYCLE_EINVAL);
	assert_non_null(strstr(err, "game 4"));
	bookdb_txn_abort(t);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * What won is kept: where the book would now choose another move than a won
 * game's, the moves it ranks above the game's are avoided; where its record
 * does not hold the game's move (the game's engine played it: a position
 * that got a record since, as the probe stores the opponent's positions of
 * the other colour's line), every move is, and the engine plays it again; a
 * game's move avoided since cannot be brought back.
 */
static void test_cycle__a_won_game_is_kept_when_values_move(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], usi[USI_MOVE_MAX];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}, {"2g2f", 50}, {"5g5f", 20}};
	static const PlantMove REPLY[] = {{"2g2f", 30}}; /* as the probe stores one */
	plant(db, "startpos", START, 3, true);
	plant(db, P2, REPLY, 1, true);
	CycleGame won[] = {{"startpos moves 2g2f 8c8d", BLACK, 1, 0, 0, 0},
	                   {P2 " 6g6f 8c8d", BLACK, 1, 1, 0, 2},
	                   {"startpos moves 5g5f", BLACK, -1, 0, 0, 0}};
	CycleKeepStats ks;
	backtrack(db, NULL, &ks, won, 3, NULL);
	assert_int_equal(ks.won, 2);
	assert_int_equal(ks.marked, 2); /* 7g7f (5g5f ranks below 2g2f); P2's 2g2f */
	assert_int_equal(ks.kept, 0);
	assert_int_equal(ks.lost, 0);
	book_move(db, "startpos", usi);
	assert_string_equal(usi, "2g2f");
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookTxn *t;
	assert_int_equal(position_parse(pos, P2, NULL), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_query(rec, t, pos), 1);
	assert_int_equal(bookdb_best_move(rec, pos), MOVE_NONE); /* the engine's again */
	bookdb_txn_abort(t);
	backtrack(db, NULL, &ks, won, 3, NULL);
	assert_int_equal(ks.kept, 2);
	assert_int_equal(ks.marked, 0);
	get(rec, db, "startpos");
	assert_true(avoided(rec, "7g7f"));
	assert_false(avoided(rec, "5g5f"));
	/* The first game's 2g2f avoided (another game's loss): lost track of. */
	CyclePruneOptions o = {.max_winrate = 0.30, .min_games = 1};
	CycleGame lost = {"startpos moves 2g2f", BLACK, -1, 1, 0, 0};
	CyclePruneStats ps;
	char err[CYCLE_ERRLEN];
	assert_int_equal(cycle_prune(&ps, db, &lost, 1, &o, err), 0);
	backtrack(db, NULL, &ks, won, 1, NULL);
	assert_int_equal(ks.lost, 1);
	assert_int_equal(ks.opp_lost[0], 1);
	free(rec);
	free(pos);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* A won game whose book move was a declined promotion (8h2b, valued above
 * 8h2b+): the book no longer plays it, and keeping the game must not mark
 * the promotion avoided (which would make the book play the bishop
 * unpromoted again): the game counts as one the book left. */
static void test_cycle__a_won_game_by_a_declined_promotion_is_not_kept(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], usi[USI_MOVE_MAX];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}};
	static const PlantMove PAIR[] = {{"8h2b", 60}, {"8h2b+", 50}};
	plant(db, "startpos", START, 1, true);
	plant(db, P2, PAIR, 2, true);
	book_move(db, P2, usi);
	assert_string_equal(usi, "8h2b+");
	CycleGame won[] = {{P2 " 8h2b 3a2b", BLACK, 1, 0, 0, 0}};
	CycleKeepStats ks;
	backtrack(db, NULL, &ks, won, 1, NULL);
	assert_int_equal(ks.marked, 0);
	assert_int_equal(ks.lost, 1);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, P2);
	assert_false(avoided(rec, "8h2b+"));
	book_move(db, P2, usi);
	assert_string_equal(usi, "8h2b+");
	free(rec);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* Runs a joseki command that must succeed; its stdout (free it). */
static char *run_ok(const char *fmt, const char *a, const char *b)
{
	char cmd[2000], *out = NULL, *err = NULL;
	snprintf(cmd, sizeof cmd, fmt, ts_joseki(), a, b);
	int rc = ts_run(cmd, &out, &err);
	if (rc != 0) fail_msg("%s: exit %d\n%s%s", cmd, rc, out, err);
	free(err);
	return out;
}

static void test_cycle__export_query_and_minimax_leave_avoided_moves_out(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[CYCLE_ERRLEN];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}, {"2g2f", 50}};
	plant(db, "startpos", START, 2, true);
	CycleGame lost = {"startpos moves 7g7f", BLACK, -1, 0, 0, 0};
	CyclePruneStats st;
	CyclePruneOptions o = {.max_winrate = 0.3, .min_games = 1};
	char *out = run_ok("%s minimax %s --full --json", path, "");
	free(out);
	out = run_ok("%s query %s startpos --json%s", path, "");
	assert_non_null(strstr(out, "\"bestmove\":\"7g7f\",\"value\":100"));
	free(out);
	/* Marked: the minimax value, the best move and the export follow 2g2f. */
	bookdb_free(db);
	db = open_book(dir, path, sizeof path);
	assert_int_equal(cycle_prune(&st, db, &lost, 1, &o, err), 0);
	assert_int_equal(st.marked, 1);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	pos_set_startpos(pos);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_query(rec, t, pos), 1);
	char usi[USI_MOVE_MAX];
	usi_move_write(bookdb_best_move(rec, pos), usi);
	assert_string_equal(usi, "2g2f");
	bookdb_txn_abort(t);
	bookdb_free(db);
	/* Incremental minimax sees the mark as a change, and agrees with --full. */
	out = run_ok("%s minimax %s --json%s", path, "");
	assert_non_null(strstr(out, "\"incremental\":true"));
	assert_non_null(strstr(out, "\"root_value\":50"));
	free(out);
	out = run_ok("%s minimax %s --full --json%s", path, "");
	assert_non_null(strstr(out, "\"root_value\":50"));
	free(out);
	out = run_ok("%s query %s startpos --json%s", path, "");
	assert_non_null(strstr(out, "\"bestmove\":\"2g2f\",\"value\":50"));
	assert_non_null(strstr(out, "\"avoided\":true"));
	free(out);
	out = run_ok("%s query %s startpos --json --with-avoided%s", path, "");
	assert_non_null(strstr(out, "\"bestmove\":\"7g7f\""));
	free(out);
	char ex[700];
	snprintf(ex, sizeof ex, "%s/out.db", dir);
	free(run_ok("%s export %s %s --moves all --quiet", path, ex));
	char *text = ts_read_file(ex, NULL);
	assert_non_null(text);
	assert_null(strstr(text, "7g7f"));
	assert_non_null(strstr(text, "2g2f"));
	free(text);
	free(run_ok("%s export %s %s --moves all --with-avoided --quiet", path, ex));
	text = ts_read_file(ex, NULL);
	assert_non_null(strstr(text, "7g7f"));
	free(text);
	/* Every move avoided: no value, no best move (not "mated"). */
	free(run_ok("%s prune %s --undo%s", path, ""));
	db = open_book(dir, path, sizeof path);
	CycleGame both[] = {{"startpos moves 7g7f", BLACK, -1, 0, 0, 0},
	                    {"startpos moves 2g2f", BLACK, -1, 0, 0, 0}};
	assert_int_equal(cycle_prune(&st, db, both, 2, &o, err), 0);
	assert_int_equal(st.avoided, 2);
	bookdb_free(db);
	out = run_ok("%s minimax %s --json%s", path, "");
	assert_non_null(strstr(out, "\"root_value\":null"));
	free(out);
	out = run_ok("%s query %s startpos --json%s", path, "");
	assert_null(strstr(out, "bestmove"));
	free(out);
	free(pos);
	free(rec);
	ts_rmtree(dir);
	free(dir);
}

static void
test_cycle__extend_queues_where_the_book_ran_out_and_think_takes_them_first(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[CYCLE_ERRLEN];
	BookDB *db = open_book(dir, path, sizeof path);
	static const PlantMove START[] = {{"7g7f", 100}};
	plant(db, "startpos", START, 1, true);
	/* White is out of book at once, which is not the book side's business;
	 * Black's book runs out after 7g7f 3c3d (ply 2). */
	static const char *GAME = "startpos moves 7g7f 3c3d 2g2f 8c8d 2f2e 8d8e";
	CycleGame g[] = {{GAME, BLACK, -1, 0, 0, 0}, {"startpos moves 7g7f", BLACK, 1, 0, 0, 0}};
	CycleExtendStats st;
	assert_int_equal(cycle_extend(&st, db, g, 2, 2, err), 0);
	assert_int_equal(st.games, 2);
	assert_int_equal(st.ran_out, 1); /* the second game ended in book */
	assert_int_equal(st.queued, 3);  /* plies 2, 3 and 4 */
	assert_int_equal(st.pending, 3);
	/* Idempotent: the same games queue nothing more. */
	assert_int_equal(cycle_extend(&st, db, g, 2, 2, err), 0);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.pending, 3);
	RootList r = {0};
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(roots_queue_load(&r, t, err), 0);
	bookdb_txn_abort(t);
	assert_int_equal(r.n, 3);
	static const char *EXPECT[] = {"startpos moves 7g7f 3c3d", "startpos moves 7g7f 3c3d 2g2f",
	                               "startpos moves 7g7f 3c3d 2g2f 8c8d"};
	Position *pos = malloc(sizeof *pos);
	for (int i = 0; i < 3; i++) {
		char sfen[SFEN_MAX];
		assert_int_equal(position_parse(pos, EXPECT[i], NULL), 0);
		sfen_write(pos, sfen, sizeof sfen);
		assert_string_equal(r.specs[i], sfen); /* in game order */
	}
	roots_free(&r);
	/* An avoided book move counts as none: with 7g7f avoided, the start
	 * position is where the book ran out. */
	CyclePruneStats ps;
	CyclePruneOptions po = {.max_winrate = 0.5, .min_games = 1};
	assert_int_equal(cycle_prune(&ps, db, g, 1, &po, err), 0);
	assert_int_equal(ps.marked, 1);
	assert_int_equal(cycle_extend(&st, db, g, 1, 0, err), 0);
	assert_int_equal(st.queued, 0); /* the start position is thought */
	assert_int_equal(st.ran_out, 1);
	bookdb_free(db);
	/* think takes the queue first, in order: one position thinks the first. */
	free(run_ok("%s think %s --positions 1 --nodes 300 --multipv 2 --quiet%s", path, ""));
	db = open_book(dir, path, sizeof path);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, EXPECT[0]);
	assert_true(rec->flags & BOOKDB_REC_THOUGHT);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(roots_queue_load(&r, t, err), 0);
	bookdb_txn_abort(t);
	assert_int_equal(r.n, 2); /* thought positions are no longer handed out */
	roots_free(&r);
	assert_int_equal(cycle_extend(&st, db, NULL, 0, 8, err), 0);
	assert_int_equal(st.pending, 2); /* and extend drops them from the queue */
	free(rec);
	free(pos);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Both kings face a gold drop on the head (atama-kin): Black to move mates
 * with G*5b; any other move (the planted book's favourite, P*1e) lets White
 * mate with G*5h. So with the book on Black, the book side loses every game
 * it plays that move in, and wins with the other; with the book on White,
 * the built-in engine as Black mates at once in every generation.
 */
#define PLANTED "sfen 4k4/9/4P4/9/9/9/4p4/9/4K4 b GPg 1"

/* The planted book (P*1e loses, G*5b mates) in dir, and an openings file
 * holding its position (open_path). */
static void planted_book(const char *dir, char *path, size_t pathlen, char *open_path,
                         size_t openlen)
{
	BookDB *db = open_book(dir, path, pathlen);
	static const PlantMove P[] = {{"P*1e", 500}, {"G*5b", 300}};
	plant(db, PLANTED, P, 2, true);
	bookdb_free(db);
	snprintf(open_path, openlen, "%s/openings.txt", dir);
	assert_int_equal(ts_write_file(open_path, PLANTED "\n", strlen(PLANTED) + 1), 0);
}

/* `joseki cycle BOOK --generations G --openings OPEN ARGS` (path, open_path:
 * planted_book's), which must exit 0; its stdout (free it). */
static char *cycle_ok(const char *path, const char *open_path, int gens, const char *args)
{
	char cmd[2000], *out = NULL, *err = NULL;
	snprintf(cmd, sizeof cmd, "%s cycle %s --generations %d --openings %s %s", ts_joseki(),
	         path, gens, open_path, args);
	int rc = ts_run(cmd, &out, &err);
	if (rc) fail_msg("%s: exit %d\n%s%s", cmd, rc, out, err);
	free(err);
	return out;
}

static void
test_cycle__a_losing_book_move_is_avoided_after_one_generation_and_the_score_rises(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], open_path[700];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	char *out = NULL, *err = NULL;
	const char *args = "--games 2 --nodes 2000 --think-nodes 300 --positions 2 --multipv 2 "
	                   "--max-winrate 0.3 --min-games 1 --delete all --quiet";
	out = cycle_ok(path, open_path, 1, args);
	/* Generation 1: the book's P*1e loses, the engine as Black mates the book. */
	assert_non_null(strstr(out, "cycle generation 1 games 2 score 0.000 (+0 =0 -2)"));
	assert_non_null(strstr(out, "avoided_new 1 avoided 1"));
	assert_non_null(strstr(out, "cycle generations 1 of 1"));
	free(out);
	BookDB *db = open_book(dir, path, sizeof path);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, PLANTED);
	assert_true(avoided(rec, "P*1e"));
	assert_false(avoided(rec, "G*5b"));
	bookdb_free(db);
	/* The same command again has nothing left to do; asked for two, it goes
	 * on with generation 2 only. */
	out = cycle_ok(path, open_path, 1, args);
	assert_null(strstr(out, "cycle generation "));
	assert_non_null(strstr(out, "cycle generations 1 of 1"));
	free(out);
	out = cycle_ok(path, open_path, 2, args);
	assert_null(strstr(out, "cycle generation 1 "));
	assert_non_null(strstr(out, "cycle generation 2 games 2 score 0.500 (+1 =0 -1)"));
	free(out);
	/* The CSA records match wrote give prune the same verdict: the book side
	 * is told by its player name. */
	char gen1[700];
	snprintf(gen1, sizeof gen1, "%s/cycle/gen-0001", path);
	out = run_ok("%s prune %s --undo%s", path, "");
	assert_non_null(strstr(out, "cleared 1"));
	free(out);
	out = run_ok("%s prune %s %s --min-games 1", path, gen1);
	assert_non_null(strstr(out, "prune games 2 skipped 0 moves 1 marked 1 avoided 1"));
	free(out);
	out = run_ok("%s extend %s %s --plies 4", path, gen1);
	assert_non_null(strstr(out, "extend games 2 skipped 0"));
	free(out);
	/* Games where no player's name holds +book (the floodgate fixtures) are
	 * skipped, and stderr says why and what to give. */
	int src = ts_runf(&out, &err, "%s prune %s tests/data/floodgate", ts_joseki(), path);
	assert_int_equal(src, 0);
	assert_non_null(strstr(out, "prune games 0 skipped 15 "));
	if (!strstr(err, "prune: 15 games skipped: the book's side could not be told") ||
	    !strstr(err, "--book-side black|white"))
		fail_msg("said: %s", err);
	free(out);
	free(err);
	/* Bad input is named; bad usage is exit 2; a missing book is not made. */
	char bad[700];
	snprintf(bad, sizeof bad, "%s/bad.csa", dir);
	static const char BAD[] = "V2.2\nPI\n+\n+7776FU\n-3334FU\n+8822ZZ\n";
	assert_int_equal(ts_write_file(bad, BAD, sizeof BAD - 1), 0);
	int rc = ts_runf(&out, &err, "%s prune %s %s", ts_joseki(), path, bad);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, bad));
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s extend %s %s/none.csa", ts_joseki(), path, dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "none.csa"));
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s prune %s %s --plies 3", ts_joseki(), path, gen1);
	assert_int_equal(rc, 2);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s prune %s/nobook --undo", ts_joseki(), dir);
	assert_int_equal(rc, 1);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s cycle %s --games 2", ts_joseki(), path);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "--generations"));
	free(out);
	free(err);
	free(rec);
	ts_rmtree(dir);
	free(dir);
}

/* The generation's games as the book keeps them: read back exactly, and
 * anything else refused. */
static void test_cycle__the_kept_games_parse_back_and_bad_ones_are_refused(void **state)
{
	(void)state;
	static const char GOOD[] = "1 0 1\nb -1 startpos moves 7g7f\nw 1 " PLANTED "\n";
	CycleGameSet gs;
	assert_int_equal(cycle_games_parse(&gs, GOOD, sizeof GOOD - 1), 0);
	assert_int_equal(gs.wins, 1);
	assert_int_equal(gs.draws, 0);
	assert_int_equal(gs.losses, 1);
	assert_int_equal(gs.n, 2);
	assert_int_equal(gs.games[0].book_color, BLACK);
	assert_int_equal(gs.games[0].result, -1);
	assert_string_equal(gs.games[0].spec, "startpos moves 7g7f");
	assert_int_equal(gs.games[1].book_color, WHITE);
	assert_int_equal(gs.games[1].result, 1);
	assert_string_equal(gs.games[1].spec, PLANTED);
	cycle_games_free(&gs);
	static const char *BAD[] = {
	    "",
	    "1 0\n",
	    "1 0 -1\n",
	    "1 0 1\nx 1 startpos\n",
	    "1 0 1\nb 2 startpos\n",
	    "1 0 1\nb 1 \n",
	    "1 0 1\nb 1 startpos",
	    "99999999999999999999 0 0\n",
	};
	for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
		assert_int_equal(cycle_games_parse(&gs, BAD[i], strlen(BAD[i])), BOOKDB_ECORRUPT);
		cycle_games_free(&gs);
	}
	assert_int_equal(cycle_games_parse(&gs, "0 0 0\n\0", 7), BOOKDB_ECORRUPT);
	cycle_games_free(&gs);
}

/* The in-process cycle, stopped by its stop flag as a step begins. */
typedef struct {
	volatile sig_atomic_t stop;
	const char *stop_at; /* the step whose start raises the flag */
	char steps[256];     /* the steps begun, in order */
	CycleGenStats last;  /* its rows (cycle_run's, gone once it returns) in row0 */
	CycleRow row0;
	int generations;
	char note[256]; /* the last note */
} StopCtx;

static void note_note(void *ctx, const char *note)
{
	StopCtx *c = ctx;
	snprintf(c->note, sizeof c->note, "%s", note);
}

static void note_step(void *ctx, int gen, const char *step)
{
	StopCtx *c = ctx;
	size_t l = strlen(c->steps);
	snprintf(c->steps + l, sizeof c->steps - l, "%d:%s ", gen, step);
	if (c->stop_at && !strcmp(step, c->stop_at)) c->stop = 1;
}

static void note_generation(void *ctx, const CycleGenStats *g)
{
	StopCtx *c = ctx;
	c->last = *g;
	if (g->nrows > 0) c->row0 = g->rows[0];
	c->last.rows = g->nrows > 0 ? &c->row0 : NULL;
	c->generations++;
}

/* The in-process cycle over the planted book in a new dir: one generation
 * of 2 games, the built-in engine on both sides and for think (*eng, stopped
 * by c's flag), with c's callbacks. */
static CycleOptions stop_options(char **dir, char *path, size_t pathlen, StopCtx *c,
                                 SearchEngine **eng, const char **openings, CycleDelete del)
{
	*dir = ts_mkdtemp();
	BookDB *db = open_book(*dir, path, pathlen);
	static const PlantMove P[] = {{"P*1e", 500}, {"G*5b", 300}};
	plant(db, PLANTED, P, 2, true);
	bookdb_free(db);
	memset(c, 0, sizeof *c);
	assert_int_equal(builtin_engine_new(eng, 16, &c->stop), 0);
	openings[0] = PLANTED;
	return (CycleOptions){
	    .book = path,
	    .generations = 1,
	    .match = {.side = {{.engine = "builtin"}, {.engine = "builtin"}},
	              .games = 2,
	              .budget = {.kind = SEARCH_BUDGET_NODES, .amount = 2000},
	              .openings = openings,
	              .nopenings = 1,
	              .concurrency = 1},
	    .prune = {.max_winrate = 0.3, .min_games = 1},
	    .delete_rule = del,
	    .plies = 4,
	    .think = {.engines = eng,
	              .nengines = 1,
	              .budget = {.kind = SEARCH_BUDGET_NODES, .amount = 300},
	              .multipv = 2,
	              .max_positions = 1,
	              .stop = &c->stop,
	              .roots = openings,
	              .nroots = 1},
	    .minimax = bookmm_hook(NULL),
	    .stop = &c->stop,
	    .on_generation = note_generation,
	    .on_step = note_step,
	    .on_note = note_note,
	    .ctx = c,
	};
}

/* A generation stopped part-way and run again against other opponents (an
 * option of the opponent's changed) starts over, saying so: its match is
 * played again, the table keeps one row of it. Between generations, other
 * opponents are said and played. */
static void test_cycle__a_generation_begun_against_other_opponents_starts_over(void **state)
{
	(void)state;
	char *dir, path[600], err[CYCLE_ERRLEN];
	StopCtx c;
	SearchEngine *eng;
	const char *openings[1];
	CycleOptions o =
	    stop_options(&dir, path, sizeof path, &c, &eng, openings, CYCLE_DELETE_ALL);
	int done;
	bool stopped;
	c.stop_at = "extend";
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_true(stopped);
	assert_string_equal(c.note, "");
	/* An option the opponent refuses (a typo) stops the run before the book
	 * is touched: the generation is not dropped, and its state is as it was. */
	UsiOption typo = {"USI_Hsh", "17"};
	o.match.side[1].options = &typo;
	o.match.side[1].noptions = 1;
	c.steps[0] = 0;
	assert_true(cycle_run(&done, &stopped, &o, err) < 0);
	if (!strstr(err, "opponent 1: builtin engine: option USI_Hsh=17 not taken") ||
	    !strstr(err, "the book as it was"))
		fail_msg("%s", err);
	assert_string_equal(c.note, "");
	assert_string_equal(c.steps, "");
	{
		BookDB *bdb;
		BookTxn *tx;
		const void *v;
		size_t vl;
		assert_int_equal(bookdb_open(&bdb, path, NULL, NULL), 0);
		assert_int_equal(bookdb_txn_begin(&tx, bdb, false), 0);
		assert_int_equal(bookdb_kv_get(&v, &vl, tx, BOOKDB_META, "cycle_opponents", 15), 0);
		assert_null(
		    memmem(v, vl, "USI_Hsh", 7)); /* the opponents kept are the last run's */
		bookdb_txn_abort(tx);
		bookdb_free(bdb);
	}
	/* The same opponents: it goes on (the test above); others: over. */
	UsiOption hash = {"USI_Hash", "17"};
	o.match.side[1].options = &hash;
	o.match.side[1].noptions = 1;
	c.stop = 0;
	c.stop_at = NULL;
	c.steps[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_false(stopped);
	assert_int_equal(done, 1);
	assert_string_equal(c.note, "generation 1 was begun against other opponents (opponent 1 "
	                            "was 'builtin nodes 2000', is 'builtin USI_Hash=17 nodes "
	                            "2000'): it starts over against these (its games and rows so "
	                            "far dropped)");
	assert_string_equal(c.steps, "1:match 1:prune 1:extend 1:think 1:minimax ");
	assert_false(c.last.resumed);
	assert_int_equal(c.last.games, 2);
	assert_int_equal(c.last.nrows, 1);
	/* A second generation against yet another budget: said, and played. */
	o.generations = 2;
	o.match.budget.amount = 2500;
	c.note[0] = 0;
	c.steps[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_int_equal(done, 2);
	assert_string_equal(c.note, "the opponents differ from the last run's (opponent 1 was "
	                            "'builtin USI_Hash=17 nodes 2000', is 'builtin USI_Hash=17 "
	                            "nodes 2500'): generation 2 plays these");
	assert_string_equal(c.steps, "2:match 2:prune 2:extend 2:think 2:minimax ");
	/* Nothing left to play: said, with the opponents. */
	o.match.budget.amount = 3000;
	c.note[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_string_equal(c.note, "the book's cycle has done 2 generations already: nothing is "
	                            "played (a larger --generations adds generations; these "
	                            "opponents differ from the last run's: opponent 1 was "
	                            "'builtin USI_Hash=17 nodes 2500', is 'builtin USI_Hash=17 "
	                            "nodes 3000')");
	/* Another opponent added (the budget as it was): said by their number. */
	o.match.budget.amount = 2500;
	MatchSide two[2] = {o.match.side[1], o.match.side[1]};
	o.opponents = two;
	o.nopponents = 2;
	c.note[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_non_null(strstr(c.note, "from the last run's: 1 opponent then, 2 now)"));
	o.opponents = NULL;
	o.nopponents = 0;
	CycleTable t = {0};
	BookDB *db;
	assert_int_equal(bookdb_open(&db, path, NULL, NULL), 0);
	assert_int_equal(cycle_table_read(&t, db), 0);
	assert_int_equal(t.n, 2); /* one row a generation */
	cycle_table_free(&t);
	bookdb_free(db);
	search_free(eng);
	ts_rmtree(dir);
	free(dir);
}

static void test_cycle__a_stopped_cycle_resumes_at_the_step_it_was_in(void **state)
{
	(void)state;
	char *dir, path[600], err[CYCLE_ERRLEN];
	StopCtx c;
	SearchEngine *eng;
	const char *openings[1];
	CycleOptions o =
	    stop_options(&dir, path, sizeof path, &c, &eng, openings, CYCLE_DELETE_ALL);
	int done;
	bool stopped;
	/* Stopped as extend begins: extend (one transaction) ends, and match,
	 * prune and extend are kept. */
	c.stop_at = "extend";
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_true(stopped);
	assert_int_equal(done, 0);
	assert_int_equal(c.generations, 0);
	assert_string_equal(c.steps, "1:match 1:prune 1:extend ");
	/* The rerun goes on with think: no match is played again. */
	c.stop = 0;
	c.stop_at = NULL;
	c.steps[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_false(stopped);
	assert_int_equal(done, 1);
	assert_string_equal(c.steps, "1:think 1:minimax ");
	assert_int_equal(c.generations, 1);
	assert_true(c.last.resumed);
	assert_int_equal(c.last.games, 2);
	assert_int_equal(c.last.losses, 2);
	assert_int_equal(c.last.marked, 1); /* prune's figure, kept across the stop */
	assert_int_equal(c.last.avoided, 1);
	search_free(eng);
	ts_rmtree(dir);
	free(dir);
}

/*
 * --retries on the planted book: generation 1 loses both games; backtracking
 * turns the book from P*1e to G*5b, and the lost Black game, played again
 * within the generation (its record under retry-1), is won; the White game,
 * which the book has no say in, is not played again. The generation's score
 * stays its match's; the table counts the game played again and its win, in
 * the text, the JSON and the book (v2 rows), and an older table without them
 * still reads. Stopped as the round begins, the same run resumes with it.
 */
static void test_cycle__retries_play_the_lost_games_again_within_the_generation(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], open_path[700], rec_path[800];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	char *out = NULL, *err = NULL;
	const char *args = "--games 2 --nodes 2000 --think-nodes 300 --positions 2 --multipv 2 "
	                   "--delete last --retries 2 --quiet";
	out = cycle_ok(path, open_path, 1, args);
	assert_non_null(strstr(out, "cycle generation 1 games 2 score 0.000 (+0 =0 -2)"));
	assert_non_null(strstr(out, "repeats 1 won_lost 0 retried 1 retry_wins 1 "));
	assert_non_null(strstr(out, "retried  retry_wins  opponent"));
	free(out);
	snprintf(rec_path, sizeof rec_path, "%s/cycle/gen-0001/retry-1/game-0001.csa", path);
	char *csa = ts_read_file(rec_path, NULL);
	assert_non_null(csa);
	assert_non_null(strstr(csa, "+0052KI")); /* G*5b, from the book */
	free(csa);
	snprintf(rec_path, sizeof rec_path, "%s/cycle/gen-0001/retry-1/game-0002.csa", path);
	assert_null(ts_read_file(rec_path, NULL));
	/* Generation 2's match wins the Black game; nothing is left to play again. */
	char json_args[300];
	snprintf(json_args, sizeof json_args, "%s --json", args);
	out = cycle_ok(path, open_path, 2, json_args);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	assert_non_null(j);
	json_t *rows = json_object_get(j, "table");
	assert_int_equal(json_array_size(rows), 2);
	json_t *r1 = json_array_get(rows, 0), *r2 = json_array_get(rows, 1);
	assert_int_equal(ts_jint(r1, "retried"), 1);
	assert_int_equal(ts_jint(r1, "retry_wins"), 1);
	assert_int_equal(ts_jint(r1, "losses"), 2);
	assert_int_equal(ts_jint(r2, "wins"), 1);
	assert_int_equal(ts_jint(r2, "retried"), 0);
	/* Seconds as milliseconds say them, not 0.11799999999999999. */
	const char *es = strstr(out, "\"engine_seconds\":");
	assert_non_null(es);
	assert_true(strcspn(es + 17, ",}") <= 12);
	json_decref(j);
	free(out);
	free(err);
	/* Only with --delete last. */
	int rc = ts_runf(&out, &err,
	                 "%s cycle %s --generations 3 --openings %s --games 2 --delete all "
	                 "--retries 1 --quiet",
	                 ts_joseki(), path, open_path);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "--retries plays lost games again after --delete last"));
	free(out);
	free(err);
	/* A table written before --retries (17 numbers a row) reads with 0s. */
	static const char OLD[] = "1 1 2 0 0 2 0 2 1 1 1 0 2 1 1 0 500 Some Engine 1.0\n";
	CycleTable tb;
	assert_int_equal(cycle_table_parse(&tb, OLD, sizeof OLD - 1), 0);
	assert_int_equal(tb.n, 1);
	assert_int_equal(tb.rows[0].engine_ms, 500);
	assert_int_equal(tb.rows[0].retried, 0);
	assert_string_equal(tb.rows[0].name, "Some Engine 1.0");
	cycle_table_free(&tb);
	static const char NEW[] = "v2\n1 1 2 0 0 2 0 2 1 1 1 0 2 1 1 0 500 7 3 Some Engine\n";
	assert_int_equal(cycle_table_parse(&tb, NEW, sizeof NEW - 1), 0);
	assert_int_equal(tb.rows[0].retried, 7);
	assert_int_equal(tb.rows[0].retry_wins, 3);
	assert_string_equal(tb.rows[0].name, "Some Engine");
	cycle_table_free(&tb);
	static const char SHORT[] = "v2\n1 1 2 0 0 2 0 2 1 1 1 0 2 1 1 0 500\n";
	assert_int_equal(cycle_table_parse(&tb, SHORT, sizeof SHORT - 1), BOOKDB_ECORRUPT);
	cycle_table_free(&tb);
	ts_rmtree(dir);
	free(dir);
}

static void test_cycle__a_stopped_retry_round_is_played_when_run_again(void **state)
{
	(void)state;
	char *dir, path[600], err[CYCLE_ERRLEN];
	StopCtx c;
	SearchEngine *eng;
	const char *openings[1];
	CycleOptions o =
	    stop_options(&dir, path, sizeof path, &c, &eng, openings, CYCLE_DELETE_LAST);
	o.retries = 1;
	int done;
	bool stopped;
	c.stop_at = "retry";
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_true(stopped);
	assert_int_equal(done, 0);
	assert_non_null(strstr(c.steps, "1:minimax 1:backtrack "));
	size_t l = strlen(c.steps);
	assert_string_equal(c.steps + l - 8, "1:retry ");
	c.stop = 0;
	c.stop_at = NULL;
	c.steps[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_false(stopped);
	assert_int_equal(done, 1);
	/* Backtracking again marks nothing; the round is played, and after it
	 * backtracking finds nothing to change. */
	assert_string_equal(c.steps, "1:backtrack 1:retry 1:backtrack ");
	assert_int_equal(c.last.nrows, 1);
	assert_int_equal(c.last.rows[0].retried, 1);
	assert_int_equal(c.last.rows[0].retry_wins, 1);
	assert_int_equal(c.last.losses, 2); /* the generation's match */
	/* Another generation: the match wins with G*5b; the lost White game
	 * cannot change: no round is played. */
	o.generations = 2;
	c.steps[0] = 0;
	assert_int_equal(cycle_run(&done, &stopped, &o, err), 0);
	assert_int_equal(done, 2);
	assert_int_equal(c.last.wins, 1);
	assert_int_equal(c.last.rows[0].retried, 0);
	search_free(eng);
	ts_rmtree(dir);
	free(dir);
}

/* The cycle with a USI engine (joseki usi behind a script, two of them for
 * think): the book side plays with it, think analyses with it, and the
 * verdict on the planted book is the same as with the built-in core. */
static void test_cycle__a_usi_engine_plays_and_thinks(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], open_path[700], eng[700], script[1200];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	snprintf(eng, sizeof eng, "%s/engine.sh", dir);
	int n = snprintf(script, sizeof script, "#!/bin/sh\nexec '%s' usi\n", ts_joseki());
	assert_int_equal(ts_write_file(eng, script, (size_t)n), 0);
	assert_int_equal(chmod(eng, 0755), 0);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s cycle %s --generations 1 --openings %s --engine %s --engines 2 "
	                 "--usi-option USI_Hash=16 --games 2 --nodes 2000 --think-nodes 300 "
	                 "--positions 4 --max-winrate 0.3 --min-games 1 --delete all",
	                 ts_joseki(), path, open_path, eng);
	if (rc) fail_msg("exit %d\n%s%s", rc, out, err);
	assert_non_null(strstr(out, "cycle generation 1 games 2 score 0.000 (+0 =0 -2)"));
	assert_non_null(strstr(out, "avoided_new 1 avoided 1"));
	/* Said: a USI engine's move depends on its searches before, so a won
	 * line may not replay (a new user's won lines all went elsewhere). */
	if (!strstr(err, "is a USI engine: its move in a position depends on what it searched "
	                 "before in the game"))
		fail_msg("not said: %s", err);
	free(out);
	free(err);
	/* A missing engine: a clear error naming it, exit 1. */
	rc =
	    ts_runf(&out, &err, "%s cycle %s --generations 2 --games 1 --engine %s/missing --quiet",
	            ts_joseki(), path, dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "missing"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* The book's kept games of the generation (meta "cycle_games"). */
static void kept_games(const char *path, CycleGameSet *gs)
{
	BookDB *db;
	assert_int_equal(bookdb_open(&db, path, NULL, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	const void *v;
	size_t len;
	assert_int_equal(bookdb_kv_get(&v, &len, t, BOOKDB_META, "cycle_games", 11), 0);
	assert_int_equal(cycle_games_parse(gs, v, len), 0);
	bookdb_txn_abort(t);
	bookdb_free(db);
}

/* An executable script at dir/name. */
static void script(char *path, size_t len, const char *dir, const char *name, const char *body)
{
	snprintf(path, len, "%s/%s", dir, name);
	char text[3000];
	int n = snprintf(text, sizeof text, "#!/bin/sh\n%s\n", body);
	assert_int_equal(ts_write_file(path, text, (size_t)n), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

/*
 * An opponent that takes only time controls (gpsshogi; here the fake that
 * calls itself so) given the match's nodes: refused before anything is
 * played or recorded (it printed the generation's plan, and the next run
 * named it as the last run's opponent); with --movetime it plays.
 */
static void test_cycle__an_opponent_taking_only_time_controls(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], open_path[700], e1[700], body[1600], cwd[1024];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(body, sizeof body,
	         "exec python3 -S '%s/tests/search/fakes/fake_engine.py' --script timeonly", cwd);
	script(e1, sizeof e1, dir, "timeonly.sh", body);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s cycle %s --generations 1 --openings %s --games 2 --opponent %s "
	                 "--nodes 2000 --think-nodes 300 --positions 2 --quiet",
	                 ts_joseki(), path, open_path, e1);
	if (rc != 1 || !strstr(err, "opponent 1: ") ||
	    !strstr(err, "takes only time controls (go byoyomi), not a nodes budget") ||
	    !strstr(err, "(nothing played, the book as it was)"))
		fail_msg("exit %d: %s%s", rc, out, err);
	free(out), free(err);
	rc = ts_runf(
	    &out, &err,
	    "%s cycle %s --generations 1 --openings %s --games 2 --opponent %s --nodes 2000 "
	    "--movetime 300 --quiet",
	    ts_joseki(), path, open_path, e1);
	if (rc != 2 || !strstr(err, "give the match --nodes or --movetime, not both"))
		fail_msg("both: exit %d: %s", rc, err);
	free(out), free(err);
	rc = ts_runf(&out, &err,
	             "%s cycle %s --generations 1 --openings %s --games 2 --opponent %s "
	             "--movetime 300 --think-nodes 300 --positions 2",
	             ts_joseki(), path, open_path, e1);
	if (rc != 0 || !strstr(out, "cycle generation 1 games 2 ") || strstr(err, " was '"))
		fail_msg("--movetime: exit %d: %s%s", rc, out, err);
	free(out), free(err);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Two opponents, each with its own options: each engine is started with its
 * own setoption lines and no other's (both record what they are told); each
 * plays the book with either colour in turn; each has its row; and the
 * planted book's P*1e, which wins against the first (a fake engine that
 * resigns) and loses against the second (joseki usi), is deleted for losing
 * badly against the second alone (the games pooled score 0.5).
 */
static void test_cycle__several_opponents_each_with_its_options(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], open_path[700], e1[700], e2[700], body[2600];
	char cwd[1024], t1[700], t2[700];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(t1, sizeof t1, "%s/t1", dir);
	snprintf(t2, sizeof t2, "%s/t2", dir);
	snprintf(body, sizeof body,
	         "exec python3 -S '%s/tests/search/fakes/fake_engine.py' "
	         "--transcript '%s'",
	         cwd, t1);
	script(e1, sizeof e1, dir, "fake.sh", body);
	snprintf(body, sizeof body, "tee -a '%s' | '%s' usi", t2, ts_joseki());
	script(e2, sizeof e2, dir, "usi.sh", body);
	json_t *o = ts_run_json(0,
	                        "%s cycle %s --generations 1 --openings %s --games 4 --opponent %s "
	                        "--opponent-option EvalDir=one --opponent-option USI_Hash=16 "
	                        "--opponent %s --opponent-option Threads=1 --nodes 2000 "
	                        "--think-nodes 300 --positions 2 --multipv 2 --delete all --json "
	                        "--quiet",
	                        ts_joseki(), path, open_path, e1, e2);
	char *a = ts_read_file(t1, NULL), *b = ts_read_file(t2, NULL);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(strstr(a, "setoption name EvalDir value one\n"));
	assert_non_null(strstr(a, "setoption name USI_Hash value 16\n"));
	assert_null(strstr(a, "Threads"));
	assert_non_null(strstr(b, "setoption name Threads value 1\n"));
	assert_null(strstr(b, "EvalDir"));
	assert_null(strstr(b, "USI_Hash"));
	free(a);
	free(b);
	/* One row an opponent: 4 games each, won against the fake, lost to joseki. */
	json_t *rows = json_object_get(o, "table");
	assert_int_equal(json_array_size(rows), 2);
	for (int j = 0; j < 2; j++) {
		json_t *r = json_array_get(rows, (size_t)j);
		assert_int_equal(ts_jint(r, "generation"), 1);
		assert_int_equal(ts_jint(r, "opponent"), j + 1);
		assert_int_equal(ts_jint(r, "games"), 4);
		assert_int_equal(ts_jint(r, j ? "losses" : "wins"), 4);
		assert_int_equal(ts_jint(r, "avoided"), j);
	}
	/* Each row names its engine with its options. */
	const char *n0 = json_string_value(json_object_get(json_array_get(rows, 0), "name")),
	           *n1 = json_string_value(json_object_get(json_array_get(rows, 1), "name"));
	if (!strstr(n0, "FakeEngine") || !strstr(n0, " (EvalDir=one, USI_Hash=16)"))
		fail_msg("row 1: %s", n0);
	if (!strstr(n1, " (Threads=1)")) fail_msg("row 2: %s", n1);
	json_decref(o);
	/* Each opponent's games: the book Black, then White, then Black... */
	CycleGameSet gs;
	kept_games(path, &gs);
	assert_int_equal(gs.n, 8);
	int turn[2] = {0, 0};
	for (size_t i = 0; i < gs.n; i++) {
		const CycleGame *g = &gs.games[i];
		assert_true(g->opponent == 0 || g->opponent == 1);
		assert_int_equal(g->book_color, turn[g->opponent]++ % 2 ? WHITE : BLACK);
		assert_int_equal(g->opening, 1);
		assert_int_equal(g->result, g->opponent ? -1 : 1);
	}
	assert_int_equal(turn[0], 4);
	assert_int_equal(turn[1], 4);
	cycle_games_free(&gs);
	BookDB *db = open_book(dir, path, sizeof path);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, PLANTED);
	assert_true(avoided(rec, "P*1e"));
	free(rec);
	bookdb_free(db);
	/* --opponent-option before any --opponent is bad usage. */
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err,
	                         "%s cycle %s --generations 2 --games 2 --opponent-option Tag=x",
	                         ts_joseki(), path),
	                 2);
	assert_non_null(strstr(err, "goes after the --opponent"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A search at a node budget is the one the budget asks for, also on a busy
 * machine: an opponent that takes 2.5 s for 2,000 nodes (a scripted engine
 * that sleeps) is stopped by the USI driver's usual hard limit (2.06 s: 2,000
 * nodes at 100,000 a second, times 3, plus 2 s) in a match, and not in the
 * cycle's, which allows 5,000 nodes a second.
 */
static void test_cycle__a_slow_opponent_is_not_stopped_at_the_usual_hard_limit(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], open_path[700], eng[700], body[2600], cwd[1024];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	assert_non_null(getcwd(cwd, sizeof cwd));
	/* Black's move at the start and White's after the book's P*1e: mates. */
	snprintf(body, sizeof body,
	         "exec python3 -S '%s/tests/search/fakes/script_engine.py' --moves "
	         "'G*5b@2500 G*5h@2500'",
	         cwd);
	script(eng, sizeof eng, dir, "slow.sh", body);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s match --engine-a builtin --engine-b %s --book-a %s --openings %s "
	                 "--games 1 --nodes 2000 --out %s/match --quiet",
	                 ts_joseki(), eng, path, open_path, dir);
	if (rc) fail_msg("match: exit %d\n%s%s", rc, out, err);
	free(out);
	free(err);
	char log[800];
	snprintf(log, sizeof log, "%s/match/engine-b-1.log", dir);
	char *text = ts_read_file(log, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "hard limit of 2060 ms passed"));
	free(text);
	rc = ts_runf(&out, &err,
	             "%s cycle %s --generations 1 --openings %s --games 2 --opponent %s "
	             "--nodes 2000 --think-nodes 300 --positions 2 --quiet",
	             ts_joseki(), path, open_path, eng);
	if (rc) fail_msg("cycle: exit %d\n%s%s", rc, out, err);
	assert_non_null(strstr(out, "score 0.000 (+0 =0 -2)"));
	free(out);
	free(err);
	snprintf(log, sizeof log, "%s/cycle/gen-0001/engine-b-1.log", path);
	text = ts_read_file(log, NULL);
	assert_non_null(text);
	assert_null(strstr(text, "hard limit"));
	free(text);
	ts_rmtree(dir);
	free(dir);
}

/* cycle --restart-engines: the match's engines get a new process every game
 * (a USI engine that notes each start: more starts than without). */
static void test_cycle__restart_engines_starts_a_process_a_game(void **state)
{
	(void)state;
	int starts[2];
	for (int r = 0; r < 2; r++) {
		char *dir = ts_mkdtemp(), path[600], open_path[700], eng[700], script[1400];
		char log[700];
		planted_book(dir, path, sizeof path, open_path, sizeof open_path);
		snprintf(eng, sizeof eng, "%s/engine.sh", dir);
		snprintf(log, sizeof log, "%s/starts", dir);
		int n =
		    snprintf(script, sizeof script,
		             "#!/bin/sh\necho start >> '%s'\nexec '%s' usi\n", log, ts_joseki());
		assert_int_equal(ts_write_file(eng, script, (size_t)n), 0);
		assert_int_equal(chmod(eng, 0755), 0);
		char *out = NULL, *err = NULL;
		int rc =
		    ts_runf(&out, &err,
		            "%s cycle %s --generations 1 --openings %s --engine %s --opponent %s "
		            "--games 4 --nodes 500 --think-nodes 300 --positions 2 %s --quiet",
		            ts_joseki(), path, open_path, eng, eng, r ? "--restart-engines" : "");
		if (rc) fail_msg("exit %d\n%s%s", rc, out, err);
		free(out);
		free(err);
		char *text = ts_read_file(log, NULL);
		assert_non_null(text);
		starts[r] = 0;
		for (const char *p = text; (p = strstr(p, "start")); p++) starts[r]++;
		free(text);
		ts_rmtree(dir);
		free(dir);
	}
	/* Without: B once to ask whether it takes the match's budget, A and B
	 * once, think's engine once. With: B (which searches in every game)
	 * again for each of games 2-4, and A for those of them it searched in
	 * (a process that did not search is kept). */
	assert_int_equal(starts[0], 4);
	if (starts[1] < 4 + 3 || starts[1] > 4 + 2 * 3)
		fail_msg("%d starts with --restart-engines", starts[1]);
}

/* cycle --probe: the think step walks the lines the match's opponent plays
 * from the openings, so a match against that opponent afterwards stays in
 * book in every game. With --delete none: the marks of the games' results
 * (kept won games, pruned lost ones) may by design take the book out of a
 * line where a won game's engine chose a move the book does not hold
 * (docs/cycle.md), which is not the probe's to answer for. */
static void test_cycle__probe_grows_the_lines_the_opponent_plays(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], open_path[700];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(open_path, sizeof open_path, "%s/openings.txt", dir);
	static const char O[] = "startpos moves 7g7f 3c3d\nstartpos moves 2g2f 8c8d\n";
	assert_int_equal(ts_write_file(open_path, O, sizeof O - 1), 0);
	char *out = NULL, *err = NULL;
	/* A new, empty book (cycle refuses a missing one): an empty game list. */
	char empty[720];
	snprintf(empty, sizeof empty, "%s/empty.usi", dir);
	assert_int_equal(ts_write_file(empty, "", 0), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s %s --quiet", ts_joseki(), book, empty),
	                 0);
	int rc = ts_runf(
	    &out, &err,
	    "%s cycle %s --generations 2 --openings %s --games 4 --nodes 2000 "
	    "--think-nodes 2000 --multipv 3 --positions 24 --probe --extend all --delete none "
	    "--quiet",
	    ts_joseki(), book, open_path);
	if (rc) fail_msg("exit %d\n%s%s", rc, out, err);
	assert_non_null(strstr(out, "cycle generations 2 of 2"));
	free(out);
	free(err);
	json_t *m = ts_run_json(0,
	                        "%s match --engine-a builtin --engine-b builtin --book-a %s "
	                        "--openings %s --games 4 --nodes 2000 --json --quiet",
	                        ts_joseki(), book, open_path);
	json_t *res = json_object_get(m, "results");
	assert_int_equal(json_array_size(res), 4);
	for (size_t g = 0; g < 4; g++) {
		json_t *bp = json_object_get(json_array_get(res, g), "book_plies");
		assert_true(json_integer_value(json_array_get(bp, 0)) >= 2);
	}
	json_decref(m);
	ts_rmtree(dir);
	free(dir);
}

#define GENS "600"

/* The table's rows of the generations done, checked whole: each with a row
 * for each of the two opponents, of two games each. */
static void check_rows(const CycleTable *t, int done)
{
	int seen = 0;
	for (size_t i = 0; i < t->n; i++) {
		const CycleRow *r = &t->rows[i];
		if (r->generation > done) continue;
		assert_int_equal(r->games, 2);
		assert_int_equal(r->wins + r->draws + r->losses, 2);
		assert_int_equal(r->opponent, (int)(i % 2) + 1);
		assert_int_equal(r->generation, (int)(i / 2) + 1);
		seen++;
	}
	assert_int_equal(seen, 2 * done);
}

/* kill -9 at random moments of a cycle against two opponents: the book
 * passes check after each, the table keeps a whole row for each opponent of
 * every generation done, and those rows never change afterwards; the same
 * command then finishes the cycle from where it was. */
static void test_cycle__killed_cycles_leave_a_sound_book_and_finish_when_run_again(void **state)
{
	(void)state;
	uint64_t rng =
	    ts_seed("test_cycle__killed_cycles_leave_a_sound_book_and_finish_when_run_again");
	char *dir = ts_mkdtemp(), path[600], open_path[700], think[32];
	planted_book(dir, path, sizeof path, open_path, sizeof open_path);
	snprintf(think, sizeof think, "%d", 3);
	char *const argv[] = {(char *)ts_joseki(),
	                      "cycle",
	                      path,
	                      "--generations",
	                      GENS,
	                      "--games",
	                      "2",
	                      "--opponent",
	                      "builtin",
	                      "--opponent",
	                      "builtin",
	                      "--nodes",
	                      "2000",
	                      "--think-nodes",
	                      "300",
	                      "--positions",
	                      think,
	                      "--min-games",
	                      "1",
	                      "--delete",
	                      "all",
	                      "--openings",
	                      open_path,
	                      "--quiet",
	                      NULL};
	int done_before = 0, killed = 0;
	CycleTable before = {0};
	for (int round = 0; round < 10; round++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (!freopen("/dev/null", "w", stdout)) _exit(126);
			execv(ts_joseki(), argv);
			_exit(127);
		}
		struct timespec d = {0, (long)(30 + ts_rand(&rng) % 200) * 1000000L};
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) killed++;
		assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), path), 0);
		BookDB *b2 = open_book(dir, path, sizeof path);
		int prev = done_before;
		assert_int_equal(cycle_generations_done(&done_before, b2), 0);
		assert_true(done_before >= prev); /* nothing done is ever undone */
		CycleTable t;
		assert_int_equal(cycle_table_read(&t, b2), 0);
		bookdb_free(b2);
		check_rows(&t, done_before);
		/* The rows of the generations done before stay as they were. */
		assert_true(t.n >= (size_t)(2 * prev));
		for (int i = 0; i < 2 * prev; i++)
			assert_memory_equal(&t.rows[i], &before.rows[i], sizeof t.rows[i]);
		cycle_table_free(&before);
		before = t;
	}
	/* The kills landed inside the cycle: it takes far longer than they let
	 * it run (a generation of this small book takes a few ms). */
	assert_true(killed >= 5);
	assert_true(done_before < atoi(GENS));
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s cycle %s --generations " GENS
	                 " --games 2 --opponent builtin --opponent builtin "
	                 "--nodes 2000 --think-nodes 300 --positions %s --min-games 1 --delete all "
	                 "--openings %s --quiet",
	                 ts_joseki(), path, think, open_path);
	if (rc) fail_msg("exit %d\n%s%s", rc, out, err);
	assert_non_null(strstr(out, "cycle generations " GENS " of " GENS));
	assert_non_null(strstr(out, "cycle table\n"));
	free(out);
	free(err);
	BookDB *db = open_book(dir, path, sizeof path);
	int done;
	assert_int_equal(cycle_generations_done(&done, db), 0);
	assert_int_equal(done, atoi(GENS));
	CycleTable t;
	assert_int_equal(cycle_table_read(&t, db), 0);
	check_rows(&t, done);
	for (int i = 0; i < 2 * done_before; i++)
		assert_memory_equal(&t.rows[i], &before.rows[i], sizeof t.rows[i]);
	cycle_table_free(&t);
	cycle_table_free(&before);
	BookRecord *rec = malloc(sizeof *rec);
	get(rec, db, PLANTED);
	assert_true(avoided(rec, "P*1e"));
	free(rec);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cycle__prune_marks_moves_at_the_threshold_and_undo_clears_them),
	    cmocka_unit_test(test_cycle__prune_deletes_what_loses_badly_against_one_opponent),
	    cmocka_unit_test(test_cycle__backtracking_changes_the_last_decision_of_a_lost_game),
	    cmocka_unit_test(
	        test_cycle__the_games_played_again_are_the_newest_lost_ones_the_book_changed),
	    cmocka_unit_test(test_cycle__a_won_game_is_kept_when_values_move),
	    cmocka_unit_test(test_cycle__a_won_game_by_a_declined_promotion_is_not_kept),
	    cmocka_unit_test(test_cycle__export_query_and_minimax_leave_avoided_moves_out),
	    cmocka_unit_test(
	        test_cycle__extend_queues_where_the_book_ran_out_and_think_takes_them_first),
	    cmocka_unit_test(
	        test_cycle__a_losing_book_move_is_avoided_after_one_generation_and_the_score_rises),
	    cmocka_unit_test(test_cycle__a_usi_engine_plays_and_thinks),
	    cmocka_unit_test(test_cycle__retries_play_the_lost_games_again_within_the_generation),
	    cmocka_unit_test(test_cycle__a_stopped_retry_round_is_played_when_run_again),
	    cmocka_unit_test(test_cycle__probe_grows_the_lines_the_opponent_plays),
	    cmocka_unit_test(test_cycle__restart_engines_starts_a_process_a_game),
	    cmocka_unit_test(test_cycle__an_opponent_taking_only_time_controls),
	    cmocka_unit_test(test_cycle__several_opponents_each_with_its_options),
	    cmocka_unit_test(test_cycle__a_slow_opponent_is_not_stopped_at_the_usual_hard_limit),
	    cmocka_unit_test(test_cycle__the_kept_games_parse_back_and_bad_ones_are_refused),
	    cmocka_unit_test(test_cycle__a_stopped_cycle_resumes_at_the_step_it_was_in),
	    cmocka_unit_test(test_cycle__a_generation_begun_against_other_opponents_starts_over),
	    cmocka_unit_test(
	        test_cycle__killed_cycles_leave_a_sound_book_and_finish_when_run_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

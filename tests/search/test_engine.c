/*
 * tests/search/test_engine.c — the built-in engine: never an illegal move or
 * PV along the fixture games and openings; every mate in 1 and in 3 of a
 * generated set (each verified by brute force with the move generator);
 * MultiPV K gives K distinct legal moves, best first; fixed-depth node counts
 * are reproducible; node, time and stop limits end the search.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shogi/clock.h"
#include "search/builtin.h"
#include "search/engine.h"
#include "search/eval.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define GAMES_PATH "tests/data/positions/games-v1.usi"
#define OPENINGS_PATH "tests/data/positions/openings-v1.sfen"

static Position *pos_new(void)
{
	Position *p = malloc(sizeof *p);
	assert_non_null(p);
	return p;
}

/* Every line's PV is a legal sequence from pos, starting with its move. */
static void assert_result_legal(const Position *pos, const EngineResult *r)
{
	static Position tmp;
	if (r->nlines == 0) {
		assert_int_equal(movegen_count(pos), 0);
		return;
	}
	assert_true(pos_is_legal(pos, r->bestmove));
	assert_int_equal(r->bestmove, r->lines[0].move);
	for (int k = 0; k < r->nlines; k++) {
		const EngineLine *l = &r->lines[k];
		assert_true(l->pv_len >= 1);
		assert_int_equal(l->pv[0], l->move);
		memcpy(&tmp, pos, sizeof tmp);
		for (int i = 0; i < l->pv_len; i++) {
			if (!pos_is_legal(&tmp, l->pv[i])) {
				char s[USI_MOVE_MAX];
				usi_move_write(l->pv[i], s);
				fail_msg("line %d: PV move %d (%s) is illegal", k + 1, i + 1, s);
			}
			pos_do_move(&tmp, l->pv[i]);
		}
	}
}

static void search_and_check(Engine *e, const Position *pos, int depth, int multipv, int *count)
{
	EngineLimits lim = {.depth = depth, .multipv = multipv};
	EngineResult r;
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	assert_result_legal(pos, &r);
	(*count)++;
}

static void test_engine__moves_and_pvs_are_legal_along_fixture_games(void **state)
{
	(void)state;
	Engine *e;
	assert_int_equal(engine_new(&e, 4), 0);
	Position *pos = pos_new();
	char *buf = ts_read_file(GAMES_PATH, NULL);
	assert_non_null(buf);
	int searched = 0;
	for (char *save, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || !strchr(line, '\t')) continue;
		pos_set_startpos(pos);
		char *s2, *tok = strtok_r(strchr(line, '\t') + 1, " ", &s2);
		for (int ply = 0; tok; tok = strtok_r(NULL, " ", &s2), ply++) {
			search_and_check(e, pos, 1 + ply % 3, 1 + ply % 3, &searched);
			Move m;
			char err[SHOGI_ERRLEN];
			assert_int_equal(usi_move_parse_legal(&m, pos, tok, strlen(tok), err), 0);
			pos_do_move(pos, m);
		}
		search_and_check(e, pos, 3, 1, &searched);
	}
	free(buf);

	/* The openings: every position along each line, mostly at depth 1. */
	buf = ts_read_file(OPENINGS_PATH, NULL);
	assert_non_null(buf);
	for (char *save, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char err[SHOGI_ERRLEN];
		assert_int_equal(position_parse(pos, line, err), 0);
		search_and_check(e, pos, 3, 2, &searched);
		for (int ply = 0; pos_history_len(pos) > 0; ply++) {
			pos_undo_move(pos);
			search_and_check(e, pos, ply % 4 == 0 ? 2 : 1, 1 + ply % 2, &searched);
		}
	}
	free(buf);
	print_message("searched %d positions\n", searched);
	assert_true(searched >= 3000);
	free(pos);
	engine_free(e);
}

/* ---- mates: a generated set, verified by brute force -------------------- */

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Side to move has a move after which the opponent has no legal move. */
static bool has_mate1(Position *pos, Move *which)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen(pos, GEN_ALL, moves);
	for (int i = 0; i < n; i++) {
		pos_do_move(pos, moves[i]);
		bool mated = movegen_count(pos) == 0;
		pos_undo_move(pos);
		if (mated) {
			if (which) *which = moves[i];
			return true;
		}
	}
	return false;
}

/* The side to move (defender) has at least one move, and after each the
 * attacker mates in one. */
static bool every_reply_mated_in_1(Position *pos)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen(pos, GEN_ALL, moves);
	if (n == 0) return false;
	for (int i = 0; i < n; i++) {
		pos_do_move(pos, moves[i]);
		bool ok = has_mate1(pos, NULL);
		pos_undo_move(pos);
		if (!ok) return false;
	}
	return true;
}

/* A checking first move forcing mate in 3 plies (tsume style). */
static bool has_check_mate3(Position *pos)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen(pos, GEN_ALL, moves);
	for (int i = 0; i < n; i++) {
		if (!pos_gives_check(pos, moves[i])) continue;
		pos_do_move(pos, moves[i]);
		bool ok = every_reply_mated_in_1(pos);
		pos_undo_move(pos);
		if (ok) return true;
	}
	return false;
}

static Square random_near(uint64_t *s, Square c, int r)
{
	int f = sq_file(c) + (int)(rng(s) % (2 * r + 1)) - r;
	int k = sq_rank(c) + (int)(rng(s) % (2 * r + 1)) - r;
	if (f < 0 || f > 8 || k < 0 || k > 8) return SQ_NONE;
	return sq_make(f, k);
}

/* A sparse position around a White king near its edge, Black to move. */
static bool random_attack_position(Position *pos, uint64_t *s)
{
	static const PieceType ATT[] = {GOLD,   SILVER, KNIGHT, LANCE,   ROOK,
	                                BISHOP, DRAGON, HORSE,  PRO_PAWN};
	static const PieceType DEF[] = {GOLD, SILVER, PAWN, LANCE, KNIGHT, BISHOP};
	static const PieceType HANDP[] = {PAWN, LANCE, KNIGHT, SILVER, GOLD, BISHOP, ROOK};
	Piece board[SQ_NB] = {0};
	Hand hand[COLOR_NB] = {0, 0};
	Square wk = sq_make((int)(rng(s) % 9), (int)(rng(s) % 2));
	Square bk = sq_make((int)(rng(s) % 9), 8);
	board[wk] = piece_make(WHITE, KING);
	board[bk] = piece_make(BLACK, KING);
	int ndef = (int)(rng(s) % 3), natt = 1 + (int)(rng(s) % 2), nhand = 1 + (int)(rng(s) % 3);
	bool wpawn = false;
	for (int i = 0; i < ndef; i++) {
		Square sq = random_near(s, wk, 1);
		PieceType pt = DEF[rng(s) % 6];
		if (sq == SQ_NONE || board[sq]) continue;
		if (pt == PAWN && wpawn) continue;
		if ((pt == PAWN || pt == LANCE || pt == KNIGHT) && sq_rank(sq) >= 7) continue;
		wpawn |= pt == PAWN;
		board[sq] = piece_make(WHITE, pt);
	}
	for (int i = 0; i < natt; i++) {
		Square sq = random_near(s, wk, 3);
		PieceType pt = ATT[rng(s) % 9];
		if (sq == SQ_NONE || board[sq]) continue;
		if ((pt == LANCE && sq_rank(sq) == 0) || (pt == KNIGHT && sq_rank(sq) <= 1))
			continue;
		board[sq] = piece_make(BLACK, pt);
	}
	for (int i = 0; i < nhand; i++) hand[BLACK] = hand_add(hand[BLACK], HANDP[rng(s) % 7]);
	/* pos_set accepts White in check here; that is no mate problem. */
	return pos_set(pos, board, hand, BLACK, 1, NULL) == 0 && !pos_attacked(pos, BLACK, wk);
}

static void test_engine__finds_every_mate_in_1_and_3_of_a_generated_set(void **state)
{
	(void)state;
	Engine *e;
	assert_int_equal(engine_new(&e, 4), 0);
	Position *pos = pos_new();
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	int mate1 = 0, mate3 = 0;
	/* The classic 頭金 (gold drop on the king's head, supported) on every file. */
	for (int f = 0; f < 9; f++) {
		Piece board[SQ_NB] = {0};
		Hand hand[COLOR_NB] = {hand_add(0, GOLD), 0};
		board[sq_make(f, 0)] = piece_make(WHITE, KING);
		board[sq_make(f, 2)] = piece_make(BLACK, GOLD);
		board[sq_make(8 - f, 8)] = piece_make(BLACK, KING);
		assert_int_equal(pos_set(pos, board, hand, BLACK, 1, NULL), 0);
		EngineLimits lim = {.depth = 4, .clear_hash = true};
		EngineResult r;
		assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
		assert_int_equal(r.lines[0].value, VALUE_MATE - 1);
		pos_do_move(pos, r.bestmove);
		assert_int_equal(movegen_count(pos), 0);
		mate1++;
	}
	for (int tries = 0; tries < 40000 && (mate1 < 60 || mate3 < 25); tries++) {
		if (!random_attack_position(pos, &s)) continue;
		Move m;
		bool m1 = has_mate1(pos, &m);
		if (m1 && mate1 >= 60) continue;
		bool m3 = !m1 && mate3 < 25 && has_check_mate3(pos);
		if (!m1 && !m3) continue;
		EngineLimits lim = {.depth = m1 ? 4 : 6, .clear_hash = true};
		EngineResult r;
		assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
		char sfen[SFEN_MAX];
		sfen_write(pos, sfen, sizeof sfen);
		if (r.nlines == 0 || r.lines[0].value != VALUE_MATE - (m1 ? 1 : 3))
			fail_msg("%s: expected mate in %d, got value %d", sfen, m1 ? 1 : 3,
			         r.nlines ? r.lines[0].value : 0);
		assert_result_legal(pos, &r);
		pos_do_move(pos, r.bestmove);
		if (m1) {
			assert_int_equal(movegen_count(pos), 0);
			mate1++;
		} else {
			if (!every_reply_mated_in_1(pos))
				fail_msg("%s: first move does not force mate", sfen);
			mate3++;
		}
		pos_undo_move(pos);
	}
	print_message("mate in 1: %d positions, mate in 3: %d positions\n", mate1, mate3);
	assert_true(mate1 >= 60);
	assert_true(mate3 >= 25);
	free(pos);
	engine_free(e);
}

static void test_engine__never_captures_the_king_of_a_bad_setup(void **state)
{
	(void)state;
	Engine *e;
	assert_int_equal(engine_new(&e, 1), 0);
	Position *pos = pos_new();
	char err[SHOGI_ERRLEN];
	/* White's king stands in check from the gold with Black to move. */
	assert_int_equal(position_parse(pos, "sfen 9/3kG4/3s5/9/9/9/9/9/1K7 b LP 1", err), 0);
	EngineLimits lim = {.depth = 3, .multipv = 4};
	EngineResult r;
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	assert_int_equal(r.nlines, 4);
	assert_result_legal(pos, &r);
	for (int k = 0; k < r.nlines; k++)
		assert_int_not_equal(move_to(r.lines[k].move), pos->king_sq[WHITE]);
	free(pos);
	engine_free(e);
}

static void test_engine__mated_root_has_no_lines(void **state)
{
	(void)state;
	Engine *e;
	assert_int_equal(engine_new(&e, 1), 0);
	Position *pos = pos_new();
	char err[SHOGI_ERRLEN];
	assert_int_equal(position_parse(pos, "sfen 4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1", err), 0);
	EngineLimits lim = {.depth = 3};
	EngineResult r;
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	assert_true(r.mated);
	assert_int_equal(r.nlines, 0);
	assert_int_equal(r.bestmove, MOVE_NONE);
	free(pos);
	engine_free(e);
}

/* ---- MultiPV, determinism, limits ----------------------------------------- */

static void test_engine__multipv_gives_k_distinct_legal_moves_best_first(void **state)
{
	(void)state;
	static const char *const SPECS[] = {
	    "startpos",
	    "startpos moves 7g7f 3c3d 8h2b+",
	    "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
	    "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1",
	};
	Engine *e;
	assert_int_equal(engine_new(&e, 4), 0);
	Position *pos = pos_new();
	for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++) {
		char err[SHOGI_ERRLEN];
		assert_int_equal(position_parse(pos, SPECS[i], err), 0);
		int nlegal = movegen_count(pos);
		for (int k = 1; k <= 8; k += 3) {
			EngineLimits lim = {.depth = 4, .multipv = k, .clear_hash = true};
			EngineResult r;
			assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
			assert_int_equal(r.nlines, k < nlegal ? k : nlegal);
			assert_result_legal(pos, &r);
			for (int a = 0; a < r.nlines; a++) {
				assert_int_equal(r.lines[a].depth, 4);
				if (a) assert_true(r.lines[a].value <= r.lines[a - 1].value);
				for (int b = 0; b < a; b++)
					assert_int_not_equal(r.lines[a].move, r.lines[b].move);
			}
		}
	}
	free(pos);
	engine_free(e);
}

static void test_engine__fixed_depth_node_count_is_reproducible(void **state)
{
	(void)state;
	Engine *e1, *e2;
	assert_int_equal(engine_new(&e1, 8), 0);
	assert_int_equal(engine_new(&e2, 8), 0);
	Position *pos = pos_new();
	char err[SHOGI_ERRLEN];
	for (int i = 0; ENGINE_BENCH_POSITIONS[i]; i++) {
		assert_int_equal(position_parse(pos, ENGINE_BENCH_POSITIONS[i], err), 0);
		EngineLimits lim = {.depth = 4, .clear_hash = true, .multipv = 1 + i % 2};
		EngineResult a, b, c;
		assert_int_equal(engine_search(e1, &a, pos, &lim, NULL, NULL), 0);
		assert_int_equal(engine_search(e1, &b, pos, &lim, NULL, NULL), 0);
		assert_int_equal(engine_search(e2, &c, pos, &lim, NULL, NULL), 0);
		assert_true(a.nodes > 0);
		assert_int_equal(a.nodes, b.nodes);
		assert_int_equal(a.nodes, c.nodes);
		assert_int_equal(a.bestmove, b.bestmove);
		assert_int_equal(a.lines[0].value, c.lines[0].value);
	}
	free(pos);
	engine_free(e1);
	engine_free(e2);
}

static void test_engine__node_limit_ends_the_search(void **state)
{
	(void)state;
	Engine *e;
	assert_int_equal(engine_new(&e, 4), 0);
	Position *pos = pos_new();
	pos_set_startpos(pos);
	EngineLimits lim = {.nodes = 30000};
	EngineResult r;
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	assert_true(r.nodes <= 30000);
	assert_true(r.nodes >= 10000);
	assert_true(r.depth >= 2);
	assert_result_legal(pos, &r);
	free(pos);
	engine_free(e);
}

static void test_engine__movetime_ends_the_search(void **state)
{
	(void)state;
	Engine *e;
	assert_int_equal(engine_new(&e, 4), 0);
	Position *pos = pos_new();
	pos_set_startpos(pos);
	EngineLimits lim = {.hard_ms = 150, .soft_ms = 150};
	EngineResult r;
	int64_t t0 = clock_ms();
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	int64_t t = clock_ms() - t0;
	assert_true(t >= 100);
	assert_true(r.depth < ENGINE_MAX_PLY - 1); /* the time ended it, not the depth */
	assert_result_legal(pos, &r);
	free(pos);
	engine_free(e);
}

typedef struct {
	Engine *e;
	Position *pos;
	EngineResult r;
	atomic_int iterations;      /* completed, as the info callback reports them */
	atomic_bool stop_sent;      /* set just before engine_stop */
	bool stopped_when_it_ended; /* stop_sent, read as engine_search returned */
} SearchJob;

static void count_iteration(void *ctx, const EngineResult *partial)
{
	(void)partial;
	atomic_fetch_add(&((SearchJob *)ctx)->iterations, 1);
}

static void *run_search(void *arg)
{
	SearchJob *j = arg;
	EngineLimits lim = {0}; /* no limit at all: only engine_stop ends it */
	engine_search(j->e, &j->r, j->pos, &lim, count_iteration, j);
	j->stopped_when_it_ended = atomic_load(&j->stop_sent);
	return NULL;
}

static void test_engine__stop_from_another_thread_ends_an_unbounded_search(void **state)
{
	(void)state;
	SearchJob j = {0};
	assert_int_equal(engine_new(&j.e, 4), 0);
	j.pos = pos_new();
	pos_set_startpos(j.pos);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, run_search, &j), 0);
	/* Stopped once it is searching (two iterations done), and it ends only
	 * after that. */
	for (int i = 0; i < 30000 && atomic_load(&j.iterations) < 2; i++) usleep(1000);
	assert_true(atomic_load(&j.iterations) >= 2);
	atomic_store(&j.stop_sent, true);
	engine_stop(j.e);
	pthread_join(t, NULL);
	assert_true(j.stopped_when_it_ended);
	assert_true(j.r.depth >= 2);
	assert_result_legal(j.pos, &j.r);
	free(j.pos);
	engine_free(j.e);
}

static void test_engine__repetition_is_scored_as_a_draw(void **state)
{
	(void)state;
	/* Lone kings shuffling: after 5i4i 5a4a 4i5i the reply 4a5a repeats the
	 * start, so with White to move here that move is worth exactly 0 while
	 * the static evaluation of the kings' placement is not. */
	Engine *e;
	assert_int_equal(engine_new(&e, 1), 0);
	Position *pos = pos_new();
	char err[SHOGI_ERRLEN];
	assert_int_equal(
	    position_parse(pos, "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1 moves 5i4i 5a4a 4i5i", err), 0);
	Move m;
	assert_int_equal(usi_move_parse_legal(&m, pos, "4a5a", 4, err), 0);
	EngineLimits lim = {.depth = 1, .multipv = ENGINE_MULTIPV_MAX, .clear_hash = true};
	EngineResult r;
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	bool seen = false;
	for (int k = 0; k < r.nlines; k++)
		if (r.lines[k].move == m) {
			assert_int_equal(r.lines[k].value, 0);
			seen = true;
		}
	assert_true(seen);
	free(pos);
	engine_free(e);
}

static void test_engine__evaluation_counts_hand_pieces(void **state)
{
	(void)state;
	Position *pos = pos_new();
	char err[SHOGI_ERRLEN];
	assert_int_equal(position_parse(pos, "startpos", err), 0);
	assert_int_equal(eval_material(pos), 0);
	/* Black took the bishop for nothing and holds it. */
	assert_int_equal(position_parse(pos, "startpos moves 7g7f 3c3d 8h2b+ 3a2b", err), 0);
	assert_int_equal(eval_material(pos), 0);
	assert_int_equal(
	    position_parse(
	        pos, "sfen lnsgkgsnl/1r7/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b B 1", err),
	    0);
	assert_int_equal(eval_material(pos), EVAL_PIECE_VALUE[BISHOP] + EVAL_HAND_VALUE[BISHOP]);
	assert_true(eval_position(pos) > 500);
	pos->side = WHITE; /* the same from White's side: the sign flips */
	assert_true(eval_position(pos) < -500);
	free(pos);
}

/* ---- the SearchEngine adapter ---------------------------------------------- */

static void test_engine__builtin_answers_through_the_search_interface(void **state)
{
	(void)state;
	SearchEngine *se;
	assert_int_equal(builtin_engine_new(&se, 4, NULL), 0);
	assert_string_equal(search_name(se), "joseki builtin");
	assert_int_equal(search_new_game(se), 0);
	Position *pos = pos_new();
	static Position tmp;
	char err[SHOGI_ERRLEN];
	assert_int_equal(position_parse(pos, "startpos moves 7g7f 3c3d", err), 0);
	const SearchBudget budgets[] = {{.kind = SEARCH_BUDGET_DEPTH, .amount = 3},
	                                {.kind = SEARCH_BUDGET_NODES, .amount = 5000},
	                                {.kind = SEARCH_BUDGET_MOVETIME, .amount = 50}};
	for (size_t i = 0; i < 3; i++) {
		SearchResult r;
		assert_int_equal(search_analyse(se, &r, pos, &budgets[i], 3), 0);
		assert_int_equal(r.nlines, 3);
		assert_int_equal(r.bestmove, r.lines[0].move);
		char usi[USI_MOVE_MAX];
		usi_move_write(r.bestmove, usi);
		assert_string_equal(r.bestmove_usi, usi);
		for (int k = 0; k < 3; k++) {
			const SearchLine *l = &r.lines[k];
			assert_int_equal(l->multipv, k + 1);
			assert_false(l->mate);
			assert_true(l->depth >= 1);
			if (k) assert_true(l->value <= r.lines[k - 1].value);
			memcpy(&tmp, pos, sizeof tmp);
			for (int j = 0; j < l->pv_len; j++) {
				assert_true(pos_is_legal(&tmp, l->pv[j]));
				pos_do_move(&tmp, l->pv[j]);
			}
		}
		if (budgets[i].kind == SEARCH_BUDGET_DEPTH) assert_int_equal(r.lines[0].depth, 3);
		if (budgets[i].kind == SEARCH_BUDGET_NODES) assert_true(r.nodes <= 5000);
	}
	/* Mate in 1: a mate score with its distance. */
	SearchResult r;
	const SearchBudget d3 = {.kind = SEARCH_BUDGET_DEPTH, .amount = 3};
	assert_int_equal(position_parse(pos, "sfen 4k4/9/4G4/9/9/9/9/9/4K4 b G 1", err), 0);
	assert_int_equal(search_analyse(se, &r, pos, &d3, 1), 0);
	assert_true(r.lines[0].mate);
	assert_int_equal(r.lines[0].mate_plies, 1);
	assert_int_equal(r.lines[0].value, search_mate_value(1, false));
	/* Mated: resign, no lines. */
	assert_int_equal(position_parse(pos, "sfen 4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1", err), 0);
	assert_int_equal(search_analyse(se, &r, pos, &d3, 1), 0);
	assert_true(r.resign);
	assert_int_equal(r.nlines, 0);
	assert_int_equal(r.bestmove, MOVE_NONE);
	/* Bad arguments. */
	const SearchBudget zero = {.kind = SEARCH_BUDGET_NODES, .amount = 0};
	assert_int_equal(search_analyse(se, &r, pos, &zero, 1), SEARCH_EINVAL);
	assert_int_equal(search_analyse(se, &r, pos, &d3, 0), SEARCH_EINVAL);
	assert_int_equal(search_analyse(se, &r, pos, &d3, SEARCH_MULTIPV_MAX + 1), SEARCH_EINVAL);
	assert_true(strlen(search_last_error(se)) > 0);
	free(pos);
	search_free(se);
	search_free(NULL);
}

static volatile sig_atomic_t cancel_flag;

static void *raise_cancel(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 150 * 1000000};
	nanosleep(&ts, NULL);
	cancel_flag = 1;
	return NULL;
}

static void test_engine__builtin_cancel_flag_ends_the_analysis(void **state)
{
	(void)state;
	SearchEngine *se;
	assert_int_equal(builtin_engine_new(&se, 1, &cancel_flag), 0);
	Position *pos = pos_new();
	pos_set_startpos(pos);
	/* Raised during a search that would otherwise run for minutes. */
	cancel_flag = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, raise_cancel, NULL), 0);
	const SearchBudget budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 60};
	SearchResult r;
	assert_int_equal(search_analyse(se, &r, pos, &budget, 1), SEARCH_ECANCELED);
	pthread_join(t, NULL);
	/* Still raised: the next call ends at once; lowered: it works again. */
	assert_int_equal(search_analyse(se, &r, pos, &budget, 1), SEARCH_ECANCELED);
	cancel_flag = 0;
	const SearchBudget d2 = {.kind = SEARCH_BUDGET_DEPTH, .amount = 2};
	assert_int_equal(search_analyse(se, &r, pos, &d2, 1), 0);
	assert_true(pos_is_legal(pos, r.bestmove));
	free(pos);
	search_free(se);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_engine__moves_and_pvs_are_legal_along_fixture_games),
	    cmocka_unit_test(test_engine__finds_every_mate_in_1_and_3_of_a_generated_set),
	    cmocka_unit_test(test_engine__never_captures_the_king_of_a_bad_setup),
	    cmocka_unit_test(test_engine__mated_root_has_no_lines),
	    cmocka_unit_test(test_engine__multipv_gives_k_distinct_legal_moves_best_first),
	    cmocka_unit_test(test_engine__fixed_depth_node_count_is_reproducible),
	    cmocka_unit_test(test_engine__node_limit_ends_the_search),
	    cmocka_unit_test(test_engine__movetime_ends_the_search),
	    cmocka_unit_test(test_engine__stop_from_another_thread_ends_an_unbounded_search),
	    cmocka_unit_test(test_engine__repetition_is_scored_as_a_draw),
	    cmocka_unit_test(test_engine__evaluation_counts_hand_pieces),
	    cmocka_unit_test(test_engine__builtin_answers_through_the_search_interface),
	    cmocka_unit_test(test_engine__builtin_cancel_flag_ends_the_analysis),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

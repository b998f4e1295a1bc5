/*
 * tests/minimax/test_petashock.c — joseki peta-shock against YaneuraOu's
 * makebook peta_shock: the two reference fixtures byte for byte (modulo line
 * endings), shrink, and hand-derived cases: chains, unlisted transpositions,
 * colour-flipped transpositions, repetition cycles with and without an exit,
 * pure perpetual check; then a randomised tree whose values must be the
 * plain negamax of its leaves, and the command's errors. Every library case runs
 * with 1, 2 and 3 threads (the file cut into parts) and must give the same book.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "minimax/petashock.h"
#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define FIX "tests/data/yaneuraou-db/rshogi_book_backprop_"
#define HDR "#YANEURAOU-DB2016 1.00\n"
#define START "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL"

static char *strip_cr(char *s)
{
	char *w = s;
	for (char *p = s; *p; p++)
		if (*p != '\r') *w++ = *p;
	*w = '\0';
	return s;
}

/* Runs the library on `input` with `threads` threads, its edges found on
 * disk in `buckets` buckets of keys (0: in memory); returns the written book
 * (caller frees). */
static char *run_opt(const char *input, const PetashockOptions *opt, PetashockStats *st)
{
	char *dir = ts_mkdtemp();
	char in[512], out[512], err[PETASHOCK_ERRLEN] = "";
	snprintf(in, sizeof in, "%s/in.db", dir);
	snprintf(out, sizeof out, "%s/out.db", dir);
	assert_int_equal(ts_write_file(in, input, strlen(input)), 0);
	int rc = petashock_run(st, in, out, opt, err);
	if (rc != 0) fail_msg("petashock_run: %d %s", rc, err);
	char *text = ts_read_file(out, NULL);
	assert_non_null(text);
	/* Nothing beside the output: the join's files had no names. */
	assert_int_equal(ts_files_in(dir), 2);
	ts_rmtree(dir);
	free(dir);
	return text;
}

static char *run_disk(const char *input, bool shrink, int threads, unsigned buckets,
                      PetashockStats *st)
{
	PetashockOptions opt = {.shrink = shrink, .threads = threads, .disk_buckets = buckets};
	return run_opt(input, &opt, st);
}

static char *run_threads(const char *input, bool shrink, int threads, PetashockStats *st)
{
	return run_disk(input, shrink, threads, 0, st);
}

/* As run_threads with one thread; the file cut into 2 and 3 parts read side
 * by side, and the edges found on disk (in 1 and 3 buckets of keys, with 1
 * and 2 threads), must give the same book and counts. */
static char *run_text(const char *input, bool shrink, PetashockStats *st)
{
	PetashockStats one, many;
	char *text = run_threads(input, shrink, 1, &one);
	assert_int_equal(one.buckets, 0);
	const struct {
		int threads;
		unsigned buckets;
	} runs[] = {{2, 0}, {3, 0}, {1, 1}, {2, 3}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		char *other = run_disk(input, shrink, runs[r].threads, runs[r].buckets, &many);
		assert_int_equal(many.buckets, runs[r].buckets);
		assert_string_equal(other, text);
		assert_int_equal(many.nodes, one.nodes);
		assert_int_equal(many.moves, one.moves);
		assert_int_equal(many.edges, one.edges);
		assert_int_equal(many.converged_moves, one.converged_moves);
		assert_int_equal(many.warnings, one.warnings);
		free(other);
	}
	if (st) *st = one;
	return text;
}

static void check_fixture(const char *name, const char *flag)
{
	char *dir = ts_mkdtemp();
	char *err = NULL, *out = NULL;
	int rc = ts_runf(&out, &err, "%s peta-shock %s%s_in.db %s/out.db %s", ts_joseki(), FIX,
	                 name, dir, flag);
	if (rc != 0) fail_msg("exit %d: %s", rc, err);
	char path[512];
	snprintf(path, sizeof path, "%s%s_expected.db", FIX, name);
	char *expected = strip_cr(ts_read_file(path, NULL));
	snprintf(path, sizeof path, "%s/out.db", dir);
	char *got = ts_read_file(path, NULL);
	assert_non_null(got);
	assert_string_equal(got, expected);
	assert_non_null(strstr(out, "peta-shock positions "));
	/* The edges found on disk: the same bytes. */
	snprintf(path, sizeof path, "%s%s_in.db", FIX, name);
	char *input = ts_read_file(path, NULL);
	assert_non_null(input);
	char *disk = run_disk(input, strstr(flag, "shrink") != NULL, 2, 4, NULL);
	assert_string_equal(disk, expected);
	free(disk);
	free(input);
	free(expected);
	free(got);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

static void test_petashock__matches_yaneuraou_on_the_transposition_fixture(void **state)
{
	(void)state;
	check_fixture("yo", "");
}

static void test_petashock__matches_yaneuraou_on_the_perpetual_check_fixture(void **state)
{
	(void)state;
	check_fixture("check", "");
}

static void test_petashock__shrink_keeps_only_moves_with_the_best_value(void **state)
{
	(void)state;
	char *in = strip_cr(ts_read_file(FIX "check_in.db", NULL));
	char *got = run_text(in, true, NULL);
	/* 4c5c ties the best value (-80) and is kept, shown one lower. */
	assert_string_equal(got, HDR "# NOE:4\n"
	                             "sfen 4k4/9/4R4/9/9/9/9/9/K8 w - 1\n5a4a none 80 3\n"
	                             "sfen 5k3/9/4R4/9/9/9/9/9/K8 b - 2\n5c4c none -80 9997\n"
	                             "sfen 5k3/9/5R3/9/9/9/9/9/K8 w - 3\n4a5a none 80 1\n"
	                             "sfen 4k4/9/5R3/9/9/9/9/9/K8 b - 4\n4c4d none -80 0\n"
	                             "4c5c none -81 9997\n");
	free(got);
	free(in);
}

static void test_petashock__values_back_up_a_chain_with_depths(void **state)
{
	(void)state;
	PetashockStats st;
	char *got = run_text(
	    HDR "sfen " START " b - 1\n7g7f none 10 20 5\n"
	        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	        "3c3d none -20 18\n"
	        "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	        "2g2f none 30 16\n6g6f none 40 16\n9g9f none 99999 3\n",
	    false, &st);
	/* 9g9f is clamped to 32000 and wins; the leaf depths of the input are dropped. */
	assert_string_equal(
	    got, HDR "# NOE:3\n"
	             "sfen " START " b - 1\n7g7f none 32000 2\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	             "3c3d none -32000 1\n"
	             "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	             "9g9f none 32000 0\n6g6f none 40 0\n2g2f none 30 0\n");
	assert_int_equal(st.nodes, 3);
	assert_int_equal(st.const_nodes, 3);
	assert_int_equal(st.edges, 2);
	free(got);
}

static void test_petashock__unlisted_transpositions_become_edges(void **state)
{
	(void)state;
	PetashockStats st;
	/* 7g7f 3c3d 2g2f and 2g2f 3c3d 7g7f meet; the root lists only 7g7f. */
	char *got = run_text(
	    HDR "sfen " START " b - 1\n7g7f none 0 0\n"
	        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	        "3c3d none 0 0\n"
	        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2\n"
	        "3c3d none 0 0\n"
	        "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	        "2g2f none 0 0\n"
	        "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL b - 3\n"
	        "7g7f none 0 0\n"
	        "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P4P1/PP1PPPP1P/1B5R1/LNSGKGSNL w - 4\n"
	        "8c8d none -100 0\n",
	    false, &st);
	assert_string_equal(
	    got, HDR "# NOE:6\n"
	             "sfen " START " b - 1\n2g2f none 100 3\n7g7f none 100 3\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	             "3c3d none -100 2\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2\n"
	             "3c3d none -100 2\n"
	             "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	             "2g2f none 100 1\n"
	             "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL b - 3\n"
	             "7g7f none 100 1\n"
	             "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P4P1/PP1PPPP1P/1B5R1/LNSGKGSNL w - 4\n"
	             "8c8d none -100 0\n");
	assert_int_equal(st.converged_moves, 1);
	assert_int_equal(st.edges, 6);
	free(got);
}

static void test_petashock__a_position_and_its_colour_flip_are_one_node(void **state)
{
	(void)state;
	/* After 5h5i White is to move in the start position, which is the start
	 * position with Black to move seen from the other side: the record of the
	 * start position answers for it. */
	char *got =
	    run_text(HDR "sfen " START " b - 1\n7g7f none 50 0\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B2K2R1/LNSG1GSNL b - 1\n"
	                 "5h5i none 0 0\n5h4h none -10 0\n",
	             false, NULL);
	assert_string_equal(
	    got, HDR "# NOE:2\n"
	             "sfen " START " b - 1\n7g7f none 50 0\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B2K2R1/LNSG1GSNL b - 1\n"
	             "5h4h none -10 0\n5h5i none -50 1\n");
	free(got);
}

static void
test_petashock__a_repeated_record_is_written_twice_and_the_later_one_counts(void **state)
{
	(void)state;
	char *got =
	    run_text(HDR "sfen " START " b - 1\n7g7f none 10 0\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	                 "3c3d none -20 0\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 8\n"
	                 "8c8d none -30 0\n",
	             false, NULL);
	assert_string_equal(
	    got, HDR "# NOE:3\n"
	             "sfen " START " b - 1\n7g7f none 30 1\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	             "3c3d none -20 0\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 8\n"
	             "8c8d none -30 0\n");
	free(got);
}

static void test_petashock__exact_ties_follow_yaneuraou_generation_groups(void **state)
{
	(void)state;
	/* 8h7g and 4i4h tie exactly; YaneuraOu generates bishop and rook moves
	 * before gold moves, whatever the squares. */
	char *got = run_text(
	    HDR "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	        "1g1f none -500 0\n"
	        "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PPBPPPPPP/7R1/LNSGKGSNL w - 4\n"
	        "8c8d none -10 0\n"
	        "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B3G1R1/LNSGK1SNL w - 4\n"
	        "8c8d none -10 0\n",
	    false, NULL);
	assert_non_null(strstr(got, "b - 3\n8h7g none 10 1\n4i4h none 10 1\n1g1f none -500 0\n"));
	free(got);
}

static void test_petashock__exact_ties_follow_yaneuraou_illegal_move_removal(void **state)
{
	(void)state;
	/* YaneuraOu generates K5i-4h and K5i-4i (attacked by the rook) before the
	 * gold's moves, then replaces each illegal move by the list's last one:
	 * 9i9h ends up first, ahead of 5i5h. */
	char *got = run_text(HDR "sfen 8k/9/5r3/9/9/9/9/9/G3K4 b - 1\n9i8i none -500 0\n"
	                         "sfen 8k/9/5r3/9/9/9/9/G8/4K4 w - 2\n1a1b none -10 0\n"
	                         "sfen 8k/9/5r3/9/9/9/9/4K4/G8 w - 2\n1a1b none -10 0\n",
	                     false, NULL);
	assert_non_null(strstr(got, "b - 1\n9i9h none 10 1\n5i5h none 10 1\n9i8i none -500 0\n"));
	free(got);
}

/* Four king shuffles back to the first position; each position has one exit. */
static char *cycle_book(int e1, int e2, int e3, int e4)
{
	static char buf[1024];
	snprintf(buf, sizeof buf,
	         HDR "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1\n5i4i none 0 0\n5i6i none %d 0\n"
	             "sfen 4k4/9/9/9/9/9/9/9/5K3 w - 2\n5a4a none 0 0\n5a6a none %d 0\n"
	             "sfen 5k3/9/9/9/9/9/9/9/5K3 b - 3\n4i5i none 0 0\n4i3i none %d 0\n"
	             "sfen 5k3/9/9/9/9/9/9/9/4K4 w - 4\n4a5a none 0 0\n4a3a none %d 0\n",
	         e1, e2, e3, e4);
	return buf;
}

static void test_petashock__a_cycle_both_sides_prefer_stays_a_draw(void **state)
{
	(void)state;
	PetashockStats st;
	char *got = run_text(cycle_book(-100, -100, -100, -100), false, &st);
	assert_string_equal(
	    got, HDR "# NOE:4\n"
	             "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1\n5i4i none 0 9999\n5i6i none -100 0\n"
	             "sfen 4k4/9/9/9/9/9/9/9/5K3 w - 2\n5a4a none 0 9999\n5a6a none -100 0\n"
	             "sfen 5k3/9/9/9/9/9/9/9/5K3 b - 3\n4i5i none 0 9999\n4i3i none -100 0\n"
	             "sfen 5k3/9/9/9/9/9/9/9/4K4 w - 4\n4a5a none 0 9999\n4a3a none -100 0\n");
	assert_int_equal(st.const_nodes, 0);
	assert_int_equal(st.check_loop2, 0);
	free(got);
}

static void test_petashock__the_side_with_a_good_exit_leaves_the_cycle(void **state)
{
	(void)state;
	/* White's exits are worth +50 to White, Black's -100 to Black: White
	 * leaves at once; Black enters the cycle (-50) rather than exit (-100).
	 * White's cycle move ties the exit's value by a longer route: shown 49. */
	char *got = run_text(cycle_book(-100, 50, -100, 50), false, NULL);
	assert_string_equal(got, HDR
	                    "# NOE:4\n"
	                    "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1\n5i4i none -50 1\n5i6i none -100 0\n"
	                    "sfen 4k4/9/9/9/9/9/9/9/5K3 w - 2\n5a6a none 50 0\n5a4a none 49 2\n"
	                    "sfen 5k3/9/9/9/9/9/9/9/5K3 b - 3\n4i5i none -50 1\n4i3i none -100 0\n"
	                    "sfen 5k3/9/9/9/9/9/9/9/4K4 w - 4\n4a3a none 50 0\n4a5a none 49 2\n");
	free(got);
}

static void test_petashock__perpetual_check_without_an_exit_loses_for_the_checker(void **state)
{
	(void)state;
	PetashockStats st;
	char *got = run_text(
	    HDR "sfen 4k4/9/4R4/9/9/9/9/9/K8 w - 1\n5a4a none 0 17 3\n5a6a none -200 11 1\n"
	        "sfen 5k3/9/4R4/9/9/9/9/9/K8 b - 2\n5c4c none 0 19 3\n"
	        "sfen 5k3/9/5R3/9/9/9/9/9/K8 w - 3\n4a5a none 0 21 3\n4a3a none -200 15 1\n"
	        "sfen 4k4/9/5R3/9/9/9/9/9/K8 b - 4\n4c5c none 0 23 3\n",
	    false, &st);
	assert_string_equal(
	    got, HDR "# NOE:4\n"
	             "sfen 4k4/9/4R4/9/9/9/9/9/K8 w - 1\n5a4a none 32000 9999\n5a6a none -200 0\n"
	             "sfen 5k3/9/4R4/9/9/9/9/9/K8 b - 2\n5c4c none -32000 9997\n"
	             "sfen 5k3/9/5R3/9/9/9/9/9/K8 w - 3\n4a5a none 32000 9999\n4a3a none -200 0\n"
	             "sfen 4k4/9/5R3/9/9/9/9/9/K8 b - 4\n4c5c none -32000 9997\n");
	assert_int_equal(st.in_check, 2);
	assert_int_equal(st.check_loop1, 2);
	assert_int_equal(st.check_loop2, 4);
	free(got);
}

/*
 * Random books of legal lines from the start position, every record listing
 * one to three moves with random values. The oracle below is plain negamax
 * over the book graph, written from the rules alone: a node is a position up
 * to colour flip, every legal move reaching a book node is an edge, other
 * listed moves are leaves; ties by depth (shorter when winning, longer when
 * losing). Books where the oracle would meet a cycle are regenerated.
 */
enum { RT_N = 60 };
typedef struct {
	char sfen[SFEN_MAX];
	Position bpos; /* Black to move (flipped when the record is White's) */
	Key wkey;      /* key of the White-to-move form */
	int nmoves;
	Move moves[3]; /* as written (for the record's side to move) */
	int values[3];
	int parent;
	Move via;
	int state; /* oracle: 0 new, 1 on path, 2 done */
	int value, depth;
} RtNode;

static RtNode rt[RT_N];

static void flip_pos(Position *out, const Position *in)
{
	Piece board[SQ_NB];
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = in->board[sq];
		board[80 - sq] = p ? piece_make(color_flip(piece_color(p)), piece_type(p)) : 0;
	}
	Hand hand[COLOR_NB] = {in->hand[WHITE], in->hand[BLACK]};
	assert_int_equal(pos_set(out, board, hand, color_flip(in->side), in->game_ply, NULL), 0);
}

static Move flip_mv(Move m)
{
	if (move_is_drop(m)) return move_make_drop(move_drop_type(m), 80 - move_to(m));
	return move_make(80 - move_from(m), 80 - move_to(m), move_is_promote(m));
}

static int rt_find(int n, Key wkey)
{
	for (int i = 0; i < n; i++)
		if (key_equal(rt[i].wkey, wkey)) return i;
	return -1;
}

static void rt_set_node(int i, const Position *pos)
{
	static Position tmp;
	sfen_write(pos, rt[i].sfen, SFEN_MAX);
	flip_pos(&tmp, pos);
	if (pos->side == WHITE) {
		rt[i].wkey = pos_key(pos);
		rt[i].bpos = tmp;
	} else {
		rt[i].wkey = pos_key(&tmp);
		rt[i].bpos = *pos;
	}
}

/* Negamax of node i as (value for its side to move, depth); false on a cycle. */
static bool rt_negamax(int n, int i)
{
	if (rt[i].state == 2) return true;
	if (rt[i].state == 1) return false;
	rt[i].state = 1;
	const Position *bp = &rt[i].bpos;
	int bv = -100000, bd = 0;
	Move legal[MOVEGEN_MAX], edges[MOVEGEN_MAX];
	int nl = movegen_legal(bp, legal), ne = 0;
	for (int k = 0; k < nl; k++) {
		int j = rt_find(n, pos_key_after(bp, legal[k]));
		if (j < 0) continue;
		if (!rt_negamax(n, j)) return false;
		edges[ne++] = legal[k];
		int v = -rt[j].value, d = rt[j].depth;
		if (v > bv || (v == bv && (v >= 0 ? d < bd : d > bd))) {
			bv = v;
			bd = d;
		}
	}
	bool rec_white = strstr(rt[i].sfen, " w ") != NULL;
	for (int k = 0; k < rt[i].nmoves; k++) {
		Move m = rec_white ? flip_mv(rt[i].moves[k]) : rt[i].moves[k];
		bool is_edge = false;
		for (int e = 0; e < ne; e++)
			if (edges[e] == m) is_edge = true;
		if (is_edge) continue;
		int v = rt[i].values[k], d = 0;
		if (v > bv || (v == bv && (v >= 0 ? d < bd : d > bd))) {
			bv = v;
			bd = d;
		}
	}
	rt[i].value = bv;
	rt[i].depth = bd + 1;
	rt[i].state = 2;
	return true;
}

static void rt_position(int i, Position *out)
{
	Move path[RT_N];
	int len = 0;
	for (int q = i; rt[q].parent >= 0; q = rt[q].parent) path[len++] = rt[q].via;
	pos_set_startpos(out);
	for (int k = len - 1; k >= 0; k--) pos_do_move(out, path[k]);
}

/* Builds a random book of about RT_N nodes; returns the node count. */
static int rt_build(void)
{
	static Position walk, child;
	pos_set_startpos(&walk);
	memset(rt, 0, sizeof rt);
	rt_set_node(0, &walk);
	rt[0].parent = -1;
	int n = 1;
	for (int tries = 0; n < RT_N && tries < 10000; tries++) {
		int p = rand() % n;
		if (rt[p].nmoves == 3) continue;
		rt_position(p, &walk);
		Move legal[MOVEGEN_MAX];
		int nl = movegen_legal(&walk, legal);
		if (nl == 0) continue;
		Move m = legal[rand() % nl];
		bool dup = false;
		for (int k = 0; k < rt[p].nmoves; k++)
			if (rt[p].moves[k] == m) dup = true;
		if (dup) continue;
		child = walk;
		pos_do_move(&child, m);
		int slot = rt[p].nmoves;
		rt[p].moves[slot] = m;
		rt[p].values[slot] = (rand() % 7 - 3) * 50; /* few values: many ties */
		if (rand() % 4 == 0) { /* a leaf move, unless it reaches a book node */
			rt_set_node(n, &child);
			if (rt_find(n, rt[n].wkey) >= 0) continue;
			rt[p].nmoves++;
			continue;
		}
		rt_set_node(n, &child);
		if (rt_find(n, rt[n].wkey) >= 0) continue; /* one record per node */
		rt[p].nmoves++;
		rt[n].parent = p;
		rt[n].via = m;
		n++;
	}
	/* Every node lists at least one move, so it has a value of its own. */
	for (int i = 0; i < n; i++) {
		if (rt[i].nmoves) continue;
		rt_position(i, &walk);
		Move legal[MOVEGEN_MAX];
		int nl = movegen_legal(&walk, legal);
		assert_true(nl > 0);
		rt[i].moves[0] = legal[rand() % nl];
		rt[i].values[0] = (rand() % 7 - 3) * 50; /* few values: many ties */
		rt[i].nmoves = 1;
	}
	return n;
}

static void test_petashock__random_books_get_plain_negamax_values(void **state)
{
	(void)state;
	unsigned long long seed = ts_seed("petashock_random_books");
	srand((unsigned)seed);
	for (int round = 0; round < 5; round++) {
		int n;
		bool acyclic;
		do {
			n = rt_build();
			acyclic = true;
			for (int i = 0; i < n && acyclic; i++) acyclic = rt_negamax(n, i);
		} while (!acyclic);
		size_t cap = 64 * 1024, used = 0;
		char *text = malloc(cap);
		used += (size_t)snprintf(text + used, cap - used, HDR);
		for (int i = 0; i < n; i++) {
			used += (size_t)snprintf(text + used, cap - used, "sfen %s\n", rt[i].sfen);
			for (int k = 0; k < rt[i].nmoves; k++) {
				char us[USI_MOVE_MAX];
				usi_move_write(rt[i].moves[k], us);
				used += (size_t)snprintf(text + used, cap - used, "%s none %d 0\n",
				                         us, rt[i].values[k]);
			}
		}
		PetashockStats st;
		char *got = run_text(text, true, &st);
		assert_int_equal(st.nodes, (size_t)n);
		assert_int_equal(st.const_nodes, (size_t)n);
		assert_true(st.edges >= (size_t)n - 1);
		/* With shrink, a record's first move line is its best move. */
		char *line = got;
		for (int i = 0; i < n; i++) {
			char want[SFEN_MAX + 8] = "sfen ";
			size_t sl = strnlen(rt[i].sfen, SFEN_MAX - 1);
			memcpy(want + 5, rt[i].sfen, sl);
			memcpy(want + 5 + sl, "\n", 2);
			line = strstr(line, want);
			assert_non_null(line);
			line = strchr(line, '\n') + 1;
			char mv[16];
			int gv, gd;
			assert_int_equal(sscanf(line, "%15s none %d %d", mv, &gv, &gd), 3);
			if (gv != rt[i].value || gd != rt[i].depth - 1)
				fail_msg(
				    "seed %llu round %d node %d (%s): got %d %d, negamax %d %d",
				    seed, round, i, rt[i].sfen, gv, gd, rt[i].value,
				    rt[i].depth - 1);
		}
		free(got);
		free(text);
	}
}

static void test_petashock__bad_input_lines_are_reported_and_skipped(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char in[512];
	snprintf(in, sizeof in, "%s/in.db", dir);
	const char *book = HDR "sfen " START " b - 1\n7g7e none 5 0\n7g7f none 5 0\n";
	assert_int_equal(ts_write_file(in, book, strlen(book)), 0);
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s peta-shock %s %s/out.db", ts_joseki(), in, dir),
	                 0);
	assert_non_null(strstr(err, "in.db:3: illegal book move '7g7e'"));
	char path[512];
	snprintf(path, sizeof path, "%s/out.db", dir);
	char *got = ts_read_file(path, NULL);
	assert_string_equal(got, HDR "# NOE:1\nsfen " START " b - 1\n7g7f none 5 0\n");
	free(got);
	free(err);
	/* A file with no positions at all (empty, or not a book): an empty book,
	 * and a word that it was. */
	const char *nothing[] = {"", "\x7f"
	                             "ELF\x02\x01\x01\n\x01\x02garbage\n"};
	for (size_t i = 0; i < sizeof nothing / sizeof *nothing; i++) {
		assert_int_equal(ts_write_file(in, nothing[i], strlen(nothing[i])), 0);
		err = NULL;
		assert_int_equal(
		    ts_runf(NULL, &err, "%s peta-shock %s %s/out.db", ts_joseki(), in, dir), 0);
		if (!strstr(err, "in.db: no positions in it")) fail_msg("said: %s", err);
		free(err);
		got = ts_read_file(path, NULL);
		assert_string_equal(got, HDR "# NOE:0\n");
		free(got);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_petashock__command_errors_write_nothing(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s peta-shock %s/missing.db %s/out.db", ts_joseki(), dir, dir), 1);
	assert_non_null(strstr(err, "joseki: peta-shock:"));
	assert_non_null(strstr(err, "missing.db"));
	char path[512];
	snprintf(path, sizeof path, "%s/out.db", dir);
	assert_null(ts_read_file(path, NULL));
	free(err);
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s peta-shock %s/only-one.db", ts_joseki(), dir), 2);
	assert_non_null(strstr(err, "usage: joseki peta-shock"));
	free(err);
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s peta-shock a.db b.db --bogus", ts_joseki()), 2);
	free(err);
	/* An output that could not be written at the end is refused at once,
	 * named as the user gave it: OUT a directory, OUT's directory missing,
	 * the input a directory. */
	char in[600];
	snprintf(in, sizeof in, "%s/in.db", dir);
	const char *book = HDR "sfen " START " b - 1\n7g7f none 5 0\n";
	assert_int_equal(ts_write_file(in, book, strlen(book)), 0);
	const struct {
		const char *in, *out, *says;
	} bad[] = {{"in.db", "", "Is a directory"},
	           {"in.db", "nodir/out.db", "nodir/out.db: cannot write there: No such file"},
	           {"", "out.db", "cannot open: Is a directory"},
	           /* OUT the input: it would have been replaced */
	           {"in.db", "in.db", "in.db: is the input: give the output another name"}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err = NULL;
		assert_int_equal(ts_runf(NULL, &err, "%s peta-shock %s/%s %s/%s", ts_joseki(), dir,
		                         bad[i].in, dir, bad[i].out),
		                 1);
		if (!strstr(err, bad[i].says)) fail_msg("%s: wanted '%s'", err, bad[i].says);
		assert_null(strstr(err, ".tmp"));
		free(err);
	}
	assert_int_equal(ts_files_in(dir), 1);
	char *kept = ts_read_file(in, NULL);
	assert_string_equal(kept, book);
	free(kept);
	ts_rmtree(dir);
	free(dir);
}

static void test_petashock__more_threads_than_bytes_reads_each_line_once(void **state)
{
	(void)state;
	/* Files shorter than the thread count: parts start at the same byte,
	 * and every line must still be read by exactly one of them. */
	const char *inputs[] = {"sfen x\n", "sfen\n", "7g7f\n", "", "sfen " START " b - 1\n"};
	for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
		PetashockStats one, many;
		char *a = run_threads(inputs[i], false, 1, &one);
		char *b = run_threads(inputs[i], false, 8, &many);
		assert_string_equal(a, b);
		assert_int_equal(many.nodes, one.nodes);
		assert_int_equal(many.warnings, one.warnings);
		free(a);
		free(b);
	}
}

/* The figure after name in peta-shock's benchmark line of out. */
static long long bench_field(const char *out, const char *name)
{
	const char *line = strstr(out, "peta-shock positions ");
	assert_non_null(line);
	const char *f = strstr(line, name);
	if (!f) fail_msg("no %s in %s", name, line);
	return atoll(f + strlen(name));
}

/* Past its --memory, the graph's arrays in files beside the output and the
 * edges found on disk: the same bytes written. */
static void test_petashock__a_run_past_its_memory_budget_writes_the_same_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s peta-shock --gen-bench 100000 %s/in.db", ts_joseki(), dir), 0);
	char *out = NULL;
	assert_int_equal(
	    ts_runf(&out, NULL, "%s peta-shock %s/in.db %s/a.db --quiet", ts_joseki(), dir, dir),
	    0);
	assert_int_equal(bench_field(out, " files_kb "), 0);
	assert_int_equal(bench_field(out, " buckets "), 0);
	free(out);
	assert_int_equal(ts_runf(&out, NULL, "%s peta-shock %s/in.db %s/b.db --quiet --memory 1M",
	                         ts_joseki(), dir, dir),
	                 0);
	long long filed = bench_field(out, " files_kb "), anon = bench_field(out, " peak_anon_kb ");
	long long buckets = bench_field(out, " buckets "), disk = bench_field(out, " disk_kb ");
	print_message("within 1M: %lld KiB anonymous at the peak, %lld KiB of arrays in files, "
	              "edges in %lld buckets (%lld KiB on disk)\n",
	              anon, filed, buckets, disk);
	assert_true(filed > 1024);
	assert_true(buckets > 1);
	assert_true(disk > 1024);
	assert_non_null(strstr(out, "the edges were found on disk"));
	free(out);
	/* Fewer files may be open than it wants buckets: fewer, fuller buckets. */
	assert_int_equal(
	    ts_runf(&out, NULL,
	            "ulimit -n 96 && %s peta-shock %s/in.db %s/c.db --quiet --memory 1M",
	            ts_joseki(), dir, dir),
	    0);
	long long fewer = bench_field(out, " buckets ");
	print_message("with 96 files open at most: %lld buckets\n", fewer);
	assert_true(fewer > 1 && fewer < buckets && fewer <= 96);
	free(out);
	assert_int_equal(ts_runf(NULL, NULL, "cmp %s/a.db %s/c.db && rm %s/c.db", dir, dir, dir),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "cmp %s/a.db %s/b.db", dir, dir), 0);
	/* Nothing left beside the output. */
	assert_int_equal(ts_runf(&out, NULL, "ls %s", dir), 0);
	assert_string_equal(out, "a.db\nb.db\nin.db\n");
	free(out);
	ts_rmtree(dir);
	free(dir);
}

/* After a run killed at some moment: asserts that outdir holds what a kill
 * may leave, and removes it. OUT is absent, or the old one (when there was
 * one, "old"), or the whole new book (the kill came after it was named);
 * beside it nothing but, only when OUT was being replaced, the whole new
 * book as OUT.tmp<pid> (a kill between its naming and its rename). */
static void check_killed(const char *outdir, bool old, const char *want, size_t lw)
{
	DIR *d = opendir(outdir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.') continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", outdir, e->d_name);
		size_t l;
		char *got = ts_read_file(path, &l);
		assert_non_null(got);
		bool whole = l == lw && !memcmp(got, want, lw);
		if (!strcmp(e->d_name, "out.db")) {
			if (!whole && !(old && l == 3 && !memcmp(got, "old", 3)))
				fail_msg("out.db: neither the old book nor the whole new one (%zu "
				         "bytes)",
				         l);
		} else if (!(old && !strncmp(e->d_name, "out.db.tmp", 10) && whole)) {
			fail_msg("%s left behind", e->d_name);
		}
		free(got);
		unlink(path);
	}
	closedir(d);
}

/* kill -9 at random moments of runs within 1M (arrays in files, the edges
 * found on disk): never a half-written output, an old OUT (every other round
 * has one) as it was until the new one replaces it, and nothing else beside
 * it (every temporary file was unnamed); a run that ends writes the same
 * book. */
static void test_petashock__killed_mid_run_leaves_nothing_behind(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_petashock__killed_mid_run_leaves_nothing_behind");
	char *dir = ts_mkdtemp(), in[600], outdir[620], out[700], ref[700];
	snprintf(in, sizeof in, "%s/in.db", dir);
	snprintf(outdir, sizeof outdir, "%s/o", dir);
	snprintf(out, sizeof out, "%s/out.db", outdir);
	snprintf(ref, sizeof ref, "%s/ref.db", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s peta-shock --gen-bench 200000 %s", ts_joseki(), in), 0);
	long long t0 = (long long)clock_ms();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s peta-shock %s %s --memory 1M --quiet", ts_joseki(), in, ref),
	    0);
	long long span = (long long)clock_ms() - t0 + 1;
	size_t lr;
	char *want = ts_read_file(ref, &lr);
	assert_non_null(want);
	assert_int_equal(mkdir(outdir, 0755), 0);
	int killed = 0;
	for (int round = 0; round < 8; round++) {
		char *argv[] = {(char *)ts_joseki(), "peta-shock", in,        out,
		                "--memory",          "1M",         "--quiet", NULL};
		bool old = round % 2;
		if (old) assert_int_equal(ts_write_file(out, "old", 3), 0);
		/* The last round is never killed. */
		if (round < 7 && ts_run_killed(argv, span, &rng)) {
			killed++;
			check_killed(outdir, old, want, lr);
			continue;
		}
		if (round == 7)
			assert_int_equal(ts_runf(NULL, NULL,
			                         "%s peta-shock %s %s --memory 1M --quiet",
			                         ts_joseki(), in, out),
			                 0);
		/* It ended: the whole book, alone. */
		assert_int_equal(ts_files_in(outdir), 1);
		size_t l;
		char *got = ts_read_file(out, &l);
		assert_true(l == lr && !memcmp(got, want, lr));
		free(got);
		unlink(out);
	}
	assert_true(killed > 0);
	free(want);
	ts_rmtree(dir);
	free(dir);
}

/* A mark for the book rules: the move usi in the position sfen. */
static PetashockMark book_mark(const char *sfen, const char *usi, int kind)
{
	Position pos;
	char err[256];
	Move m;
	if (sfen_parse(&pos, sfen, NULL, err) < 0) fail_msg("%s: %s", sfen, err);
	if (usi_move_parse_legal(&m, &pos, usi, strlen(usi), err) < 0) fail_msg("%s: %s", usi, err);
	return (PetashockMark){pos_key(&pos), (uint16_t)m, (uint8_t)kind};
}

/* input with a joseki book's rules and marks[0..n): the same book in memory
 * and on disk, with 1 to 3 threads; returns it and its stats. */
static char *run_rules(const char *input, PetashockMark *marks, size_t n, PetashockStats *st)
{
	if (n) qsort(marks, n, sizeof *marks, petashock_mark_cmp);
	char *text = NULL;
	const struct {
		int threads;
		unsigned buckets;
	} runs[] = {{1, 0}, {2, 0}, {3, 0}, {1, 1}, {2, 3}};
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		PetashockOptions opt = {.threads = runs[r].threads,
		                        .disk_buckets = runs[r].buckets,
		                        .book_rules = true,
		                        .marks = marks,
		                        .nmarks = n};
		PetashockStats one;
		char *got = run_opt(input, &opt, &one);
		if (!text) {
			text = got;
			*st = one;
			continue;
		}
		assert_string_equal(got, text);
		assert_int_equal(one.left_out, st->left_out);
		assert_int_equal(one.converged_moves, st->converged_moves);
		assert_int_equal(one.edges, st->edges);
		free(got);
	}
	return text;
}

/* The move lines of the record of sfen in text (malloc'd), or NULL. */
static char *moves_of(const char *text, const char *sfen)
{
	char head[256];
	snprintf(head, sizeof head, "sfen %s\n", sfen);
	const char *p = strstr(text, head);
	if (!p) return NULL;
	p += strlen(head);
	const char *end = strstr(p, "sfen ");
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

/* Whether the record of sfen in text lists the move usi. */
static bool lists(const char *text, const char *sfen, const char *usi)
{
	char *m = moves_of(text, sfen), line[32];
	assert_non_null(m);
	snprintf(line, sizeof line, "%s ", usi);
	bool found = !strncmp(m, line, strlen(line));
	snprintf(line, sizeof line, "\n%s ", usi);
	found = found || strstr(m, line);
	free(m);
	return found;
}

#define AFTER_76 "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2"
#define AFTER_76_34 "lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3"

/* With a joseki book's rules, a move the book avoids, or a declined
 * promotion, is not added back as a transposition (joseki's export left it
 * out on purpose); a preferred unpromoted move is, and so is an unpromoted
 * one whose promotion the book avoids. Black's node and White's (a node in
 * its colour-flipped form) alike. */
static void test_petashock__a_books_rules_leave_out_avoided_and_declined_moves(void **state)
{
	(void)state;
	/* The root lists 7g7f, reaches 2g2f's position another way; after 7g7f
	 * White lists 3c3d, 8c8d's position is in the book; after 7g7f 3c3d,
	 * Black lists 8h2b+, and 8h2b's position is in the book. */
	const char *input =
	    HDR "sfen " START " b - 1\n7g7f none 50 0\n"
	        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2\n"
	        "8c8d none 0 0\n"
	        "sfen " AFTER_76 "\n3c3d none -50 0\n"
	        "sfen lnsgkgsnl/1r5b1/p1ppppppp/1p7/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	        "2g2f none 0 0\n"
	        "sfen " AFTER_76_34 "\n8h2b+ none 50 0\n"
	        "sfen lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4\n"
	        "8b2b none -50 0\n"
	        "sfen lnsgkgsnl/1r5B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4\n"
	        "8b2b none 900 0\n";
	PetashockStats st;
	/* Without the rules: 2g2f, 8c8d and 8h2b come back. */
	char *plain = run_threads(input, false, 1, &st);
	assert_int_equal(st.converged_moves, 3);
	assert_int_equal(st.left_out, 0);
	assert_true(lists(plain, AFTER_76_34, "8h2b"));
	assert_true(lists(plain, START " b - 1", "2g2f"));
	assert_true(lists(plain, AFTER_76, "8c8d"));
	free(plain);

	/* The rules, no marks: only the declined promotion stays out. */
	char *got = run_rules(input, NULL, 0, &st);
	assert_int_equal(st.left_out, 1);
	assert_int_equal(st.converged_moves, 2);
	assert_false(lists(got, AFTER_76_34, "8h2b"));
	assert_true(lists(got, AFTER_76_34, "8h2b+"));
	assert_true(lists(got, START " b - 1", "2g2f"));
	assert_true(lists(got, AFTER_76, "8c8d"));
	free(got);

	/* Avoided: 2g2f at the root (Black), 8c8d after 7g7f (White). */
	PetashockMark m[3] = {book_mark("sfen " START " b - 1", "2g2f", PETASHOCK_AVOIDED),
	                      book_mark("sfen " AFTER_76, "8c8d", PETASHOCK_AVOIDED)};
	got = run_rules(input, m, 2, &st);
	assert_int_equal(st.left_out, 3);
	assert_int_equal(st.converged_moves, 0);
	assert_false(lists(got, START " b - 1", "2g2f"));
	assert_false(lists(got, AFTER_76, "8c8d"));
	assert_false(lists(got, AFTER_76_34, "8h2b"));
	assert_true(lists(got, START " b - 1", "7g7f"));
	assert_true(lists(got, AFTER_76, "3c3d"));
	free(got);

	/* The unpromoted move preferred: kept. */
	m[0] = book_mark("sfen " AFTER_76_34, "8h2b", PETASHOCK_PREFERRED);
	got = run_rules(input, m, 1, &st);
	assert_int_equal(st.left_out, 0);
	assert_true(lists(got, AFTER_76_34, "8h2b"));
	free(got);

	/* The promotion avoided: the unpromoted move is a move like any other
	 * (the promotion, listed, stays: the input's own moves are kept). */
	m[0] = book_mark("sfen " AFTER_76_34, "8h2b+", PETASHOCK_AVOIDED);
	got = run_rules(input, m, 1, &st);
	assert_int_equal(st.left_out, 0);
	assert_true(lists(got, AFTER_76_34, "8h2b"));
	free(got);
}

/* joseki peta-shock --book BOOK on BOOK's export: the move BOOK avoids and
 * the declined promotion its export left out stay out (without --book they
 * come back as transpositions); a book that cannot be read is named, and
 * nothing is written. */
static void test_petashock__book_flag_keeps_out_what_the_export_left_out(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[600];
	snprintf(path, sizeof path, "%s/in.db", dir);
	const char *input =
	    HDR "sfen " START " b - 1\n7g7f none 50 0\n"
	        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2\n"
	        "8c8d none 0 0\n"
	        "sfen " AFTER_76_34 "\n8h2b+ none 50 0\n"
	        "sfen lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4\n"
	        "8b2b none -50 0\n"
	        "sfen lnsgkgsnl/1r5B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4\n"
	        "8b2b none 900 0\n";
	assert_int_equal(ts_write_file(path, input, strlen(input)), 0);
	const char *j = ts_joseki();
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s import %s/b %s --quiet && %s minimax %s/b --quiet && "
	                         "%s avoid %s/b startpos 2g2f && "
	                         "%s export %s/b %s/ex.db --moves all --quiet",
	                         j, dir, path, j, dir, j, dir, j, dir, dir),
	                 0);
	char *out = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(&out, &err, "%s peta-shock %s/ex.db %s/p1.db --quiet", j, dir, dir), 0);
	free(out);
	free(err);
	/* On a terminal, its progress taken off at the end. */
	char cmd[2400];
	snprintf(cmd, sizeof cmd, "%s peta-shock %s/ex.db %s/p2.db --book %s/b", j, dir, dir, dir);
	assert_int_equal(ts_run_tty(cmd, &out, &err), 0);
	if (!strstr(out, "/b: 1 marked move read, 2 transposition moves left out"))
		fail_msg("%s", out);
	size_t n = strlen(err);
	if (!strstr(err, "peta-shock: ") || n < 4 || strcmp(err + n - 4, "\r\033[K"))
		fail_msg("the progress line is left on the terminal: %s", err);
	free(out);
	free(err);
	snprintf(path, sizeof path, "%s/p1.db", dir);
	char *plain = ts_read_file(path, NULL);
	snprintf(path, sizeof path, "%s/p2.db", dir);
	char *ruled = ts_read_file(path, NULL);
	assert_non_null(plain);
	assert_non_null(ruled);
	assert_true(lists(plain, START " b - 1", "2g2f"));
	assert_true(lists(plain, AFTER_76_34, "8h2b"));
	assert_false(lists(ruled, START " b - 1", "2g2f"));
	assert_false(lists(ruled, AFTER_76_34, "8h2b"));
	assert_true(lists(ruled, START " b - 1", "7g7f"));
	assert_true(lists(ruled, AFTER_76_34, "8h2b+"));
	free(plain);
	free(ruled);
	/* A book that is not there. */
	assert_int_equal(ts_runf(&out, &err, "%s peta-shock %s/ex.db %s/p3.db --book %s/nobook", j,
	                         dir, dir, dir),
	                 1);
	if (!strstr(err, "--book") || !strstr(err, "/nobook")) fail_msg("%s", err);
	snprintf(path, sizeof path, "%s/p3.db", dir);
	assert_int_equal(access(path, F_OK), -1);
	free(out);
	free(err);
	assert_int_equal(
	    ts_runf(&out, &err, "%s peta-shock %s/ex.db %s/p3.db --book ''", j, dir, dir), 2);
	if (!strstr(err, "--book needs the book's directory")) fail_msg("%s", err);
	assert_int_equal(access(path, F_OK), -1);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_petashock__matches_yaneuraou_on_the_transposition_fixture),
	    cmocka_unit_test(test_petashock__matches_yaneuraou_on_the_perpetual_check_fixture),
	    cmocka_unit_test(test_petashock__shrink_keeps_only_moves_with_the_best_value),
	    cmocka_unit_test(test_petashock__values_back_up_a_chain_with_depths),
	    cmocka_unit_test(test_petashock__unlisted_transpositions_become_edges),
	    cmocka_unit_test(test_petashock__a_books_rules_leave_out_avoided_and_declined_moves),
	    cmocka_unit_test(test_petashock__book_flag_keeps_out_what_the_export_left_out),
	    cmocka_unit_test(test_petashock__a_position_and_its_colour_flip_are_one_node),
	    cmocka_unit_test(
	        test_petashock__a_repeated_record_is_written_twice_and_the_later_one_counts),
	    cmocka_unit_test(test_petashock__exact_ties_follow_yaneuraou_generation_groups),
	    cmocka_unit_test(test_petashock__exact_ties_follow_yaneuraou_illegal_move_removal),
	    cmocka_unit_test(test_petashock__a_cycle_both_sides_prefer_stays_a_draw),
	    cmocka_unit_test(test_petashock__the_side_with_a_good_exit_leaves_the_cycle),
	    cmocka_unit_test(test_petashock__perpetual_check_without_an_exit_loses_for_the_checker),
	    cmocka_unit_test(test_petashock__random_books_get_plain_negamax_values),
	    cmocka_unit_test(test_petashock__bad_input_lines_are_reported_and_skipped),
	    cmocka_unit_test(test_petashock__more_threads_than_bytes_reads_each_line_once),
	    cmocka_unit_test(test_petashock__command_errors_write_nothing),
	    cmocka_unit_test(test_petashock__a_run_past_its_memory_budget_writes_the_same_book),
	    cmocka_unit_test(test_petashock__killed_mid_run_leaves_nothing_behind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

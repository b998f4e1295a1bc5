/*
 * tests/minimax/test_export.c — joseki export --format yaneuraou: engine
 * evaluations exported as they are before minimax, minimax values with depth
 * and ponder after it, the move filters, and on random books: the file is
 * sorted by the bytes of its sfen lines, canonical (smallest ply), and an
 * engine-style bisection over byte offsets finds every position.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "bookdb/bookdb.h"
#include "minimax/bookmm.h"
#include "minimax/export.h"
#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define HDR "#YANEURAOU-DB2016 1.00\n"
#define S0 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"
#define SA "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2"

typedef struct {
	const char *usi;
	int eval, depth;
	bool stats_only;
} Mv;

static void put(BookDB *db, const char *sfen, int min_ply, const Mv *moves, int n)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(sfen_parse(pos, sfen, NULL, NULL), 0);
	bookdb_record_init(rec, pos);
	if (min_ply) rec->min_ply = (uint16_t)min_ply;
	for (int k = 0; k < n; k++) {
		Move m;
		assert_int_equal(
		    usi_move_parse_legal(&m, pos, moves[k].usi, strlen(moves[k].usi), NULL), 0);
		BookMove *bm = &rec->moves[rec->nmoves++];
		memset(bm, 0, sizeof *bm);
		bm->move = m;
		if (moves[k].stats_only) {
			bm->flags = BOOKDB_MOVE_STATS;
			bm->count = 5;
		} else {
			bm->flags = BOOKDB_MOVE_EVAL;
			bm->eval = (int16_t)moves[k].eval;
			bm->depth = (uint8_t)moves[k].depth;
		}
	}
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	free(pos);
	free(rec);
}

static BookDB *new_book(char **dir)
{
	*dir = ts_mkdtemp();
	char path[512];
	snprintf(path, sizeof path, "%s/book", *dir);
	BookDB *db;
	BookDBOptions o = {.no_sync = true};
	assert_int_equal(bookdb_open(&db, path, &o, NULL), 0);
	return db;
}

/* Runs joseki export with args and returns the written file (caller frees). */
static char *export(const char *dir, const char *args)
{
	char *err = NULL;
	int rc = ts_runf(NULL, &err, "%s export %s/book %s/out.db %s", ts_joseki(), dir, dir, args);
	if (rc != 0) fail_msg("export %s: %d %s", args, rc, err);
	free(err);
	char path[512];
	snprintf(path, sizeof path, "%s/out.db", dir);
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	return text;
}

/* The hand-built records are not marked thought: every one an inner node, so
 * that the export shows backed-up values (the leaf policy is minimax's test). */
static void run_minimax(BookDB *db)
{
	BookmmOptions opt = {.policy.leaves = BOOKMM_LEAVES_GAMES};
	char err[BOOKMM_ERRLEN] = "";
	if (bookmm_run(NULL, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
}

static void test_export__engine_evaluations_before_minimax(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = new_book(&dir);
	/* Seen at ply 1; a move with game statistics only is not an evaluation. */
	put(db, S0, 0,
	    (Mv[]){{"7g7f", 30, 12, false}, {"2g2f", 50, 14, false}, {"5i5h", 0, 0, true}}, 3);
	/* A White position first seen at ply 6 (reached by another order). */
	put(db, SA, 6, (Mv[]){{"3c3d", -20, 9, false}, {"8c8d", -90, 9, false}}, 2);
	bookdb_free(db);
	char *got = export(dir, "--moves all");
	assert_string_equal(
	    got, HDR "# NOE:2\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 6\n"
	             "3c3d none -20 9 1\n8c8d none -90 9 1\n" S0
	             "\n2g2f none 50 14 1\n7g7f none 30 12 1\n");
	free(got);
	/* The default is the moves within 30 of the best (sorted: "2P6" < "9/P"). */
	got = export(dir, "");
	assert_string_equal(
	    got, HDR "# NOE:2\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 6\n"
	             "3c3d none -20 9 1\n" S0 "\n2g2f none 50 14 1\n7g7f none 30 12 1\n");
	free(got);
	got = export(dir, "--moves window --window 10");
	assert_string_equal(
	    got, HDR "# NOE:2\n"
	             "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 6\n"
	             "3c3d none -20 9 1\n" S0 "\n2g2f none 50 14 1\n");
	free(got);
	/* Evaluations shallower than 13, or positions after ply 5, are left out. */
	got = export(dir, "--moves all --min-depth 13");
	assert_string_equal(got, HDR "# NOE:1\n" S0 "\n2g2f none 50 14 1\n");
	free(got);
	got = export(dir, "--moves all --max-ply 5");
	assert_string_equal(got, HDR "# NOE:1\n" S0 "\n2g2f none 50 14 1\n7g7f none 30 12 1\n");
	free(got);
	ts_rmtree(dir);
	free(dir);
}

static void test_export__minimax_values_with_depth_and_ponder(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = new_book(&dir);
	put(db, S0, 0, (Mv[]){{"7g7f", 30, 12, false}, {"2g2f", 10, 14, false}}, 2);
	put(db, SA, 0, (Mv[]){{"3c3d", -20, 9, false}, {"8c8d", -90, 9, false}}, 2);
	run_minimax(db);
	bookdb_free(db);
	/* 7g7f is worth 20 through White's best reply 3c3d (one ply to the leaf);
	 * the depth field says the search depth of the analysis each value rests
	 * on (7g7f's: SA's, 9), or with --depth-field distance the plies to the
	 * leaf, as peta_shock writes it. */
	char *got = export(dir, "--moves all");
	assert_string_equal(got, HDR "# NOE:2\n" SA "\n3c3d none -20 9 1\n8c8d none -90 9 1\n" S0
	                             "\n7g7f 3c3d 20 9 1\n2g2f none 10 14 1\n");
	free(got);
	got = export(dir, "--moves all --depth-field distance");
	assert_string_equal(got, HDR "# NOE:2\n" SA "\n3c3d none -20 0 1\n8c8d none -90 0 1\n" S0
	                             "\n7g7f 3c3d 20 1 1\n2g2f none 10 0 1\n");
	free(got);
	got = export(dir, "--moves best --depth-field distance");
	assert_string_equal(got,
	                    HDR "# NOE:2\n" SA "\n3c3d none -20 0 1\n" S0 "\n7g7f 3c3d 20 1 1\n");
	free(got);
	/* --min-depth drops shallow engine leaves but keeps backed-up values. */
	got = export(dir, "--moves all --min-depth 10 --depth-field distance");
	assert_string_equal(got, HDR "# NOE:1\n" S0 "\n7g7f 3c3d 20 1 1\n2g2f none 10 0 1\n");
	free(got);
	/* The summary names the YaneuraOu options that play the book as it is,
	 * each with why, in lines that fit 120 columns (the whys wrapped, their
	 * further lines indented as their first). */
	char *out = NULL;
	assert_int_equal(
	    ts_runf(&out, NULL, "%s export %s/book %s/o.db --moves best", ts_joseki(), dir, dir),
	    0);
	/* Each line fits; a why's further lines are joined to it again in one. */
	char *one = calloc(1, strlen(out) + 1);
	size_t used = 0;
	int whys = 0, further = 0, options = 0;
	bool in_why = false;
	for (const char *l = out; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n > 120) fail_msg("a line of %zu columns: %.*s", n, (int)n, l);
		bool why = !strncmp(l, "      ", 6);
		options += !strncmp(l, "  setoption name ", 17);
		if (why && in_why) {
			one[used - 1] = ' '; /* the newline before it */
			memcpy(one + used, l + 6, n - 6);
			used += n - 6;
			further++;
		} else {
			memcpy(one + used, l, n);
			used += n;
			whys += why;
		}
		if (nl) one[used++] = '\n';
		in_why = why;
		l += n + (nl != NULL);
	}
	assert_true(options >= 10);
	assert_int_equal(whys, options); /* one a setoption line */
	assert_true(further > 0);        /* BookFile's is long */
	free(out);
	out = one;
	assert_non_null(strstr(out, "setoption name BookDepthLimit value 9\n"));
	assert_non_null(strstr(out, "the default 16 leaves out 2 of 2 positions"));
	assert_non_null(strstr(out, "setoption name BookEvalWhiteLimit value -140\n"));
	assert_non_null(strstr(out, "setoption name IgnoreBookPly value true\n"));
	/* YaneuraOu's BookFile is one of its own names: the file is to be named so. */
	assert_non_null(strstr(out, "setoption name BookFile value user_book1.db\n"));
	assert_non_null(strstr(out, "ln -s o.db user_book1.db"));
	free(out);
	ts_rmtree(dir);
	free(dir);
}

/* ---- sorted, canonical, and found by bisection -------------------------------------- */

/* A book of random lines from the start position, an eval on every step. */
static void random_book(BookDB *db, uint64_t *rng, int lines)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	for (int l = 0; l < lines; l++) {
		pos_set_startpos(pos);
		int len = 1 + (int)(ts_rand(rng) % 10);
		for (int k = 0; k < len; k++) {
			Move legal[MOVEGEN_MAX];
			int n = movegen_legal(pos, legal);
			if (n == 0) break;
			Move m = legal[ts_rand(rng) % (uint64_t)(n < 6 ? n : 6)];
			BookTxn *txn;
			assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
			BookMove *bm = ts_record_move(rec, txn, pos, m);
			bm->flags = BOOKDB_MOVE_EVAL;
			bm->eval = (int16_t)((int)(ts_rand(rng) % 400) - 200);
			bm->depth = 10;
			assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
			assert_int_equal(bookdb_txn_commit(txn), 0);
			pos_do_move(pos, m);
		}
	}
	free(pos);
	free(rec);
}

/* The line starting at p (without its newline) compared with target, strcmp-style. */
static int cmp_line(const char *p, const char *target)
{
	size_t n = strcspn(p, "\n"), t = strlen(target);
	int c = memcmp(p, target, n < t ? n : t);
	if (c) return c;
	return (n > t) - (n < t);
}

/*
 * What BookOnTheFly does: bisect byte offsets; at an offset, discard the
 * (partial) line there, skip to the next "sfen " line and compare it. When
 * the range is small, scan it line by line.
 */
static bool bisect(const char *buf, size_t size, const char *target)
{
	size_t lo = 0, hi = size; /* lo: a line start; the target starts in [lo, hi) */
	while (hi - lo > 256) {
		size_t mid = lo + (hi - lo) / 2;
		const char *nl = memchr(buf + mid, '\n', size - mid);
		if (!nl) {
			hi = mid;
			continue;
		}
		size_t q = (size_t)(nl - buf) + 1;
		while (q < hi && strncmp(buf + q, "sfen ", 5)) {
			nl = memchr(buf + q, '\n', size - q);
			q = nl ? (size_t)(nl - buf) + 1 : size;
		}
		if (q >= hi) {
			hi = mid + 1;
			continue;
		}
		int c = cmp_line(buf + q, target);
		if (c == 0) return true;
		if (c < 0) {
			nl = memchr(buf + q, '\n', size - q);
			lo = nl ? (size_t)(nl - buf) + 1 : size;
		} else {
			hi = q;
		}
	}
	for (size_t p = lo; p < hi && p < size;) {
		if (!strncmp(buf + p, "sfen ", 5) && cmp_line(buf + p, target) == 0) return true;
		const char *nl = memchr(buf + p, '\n', size - p);
		p = nl ? (size_t)(nl - buf) + 1 : size;
	}
	return false;
}

static void check_sorted_and_found(const char *dir, BookDB *db)
{
	char *text = export(dir, "--moves all");
	size_t size = strlen(text);
	assert_true(strncmp(text, HDR "# NOE:", strlen(HDR) + 6) == 0);
	size_t noe = strtoul(text + strlen(HDR) + 6, NULL, 10);
	char *copy = strdup(text);
	size_t count = 0;
	char *prev = NULL;
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "sfen ", 5)) continue;
		count++;
		if (prev && strcmp(prev, line) >= 0)
			fail_msg("not sorted: '%s' before '%s'", prev, line);
		prev = line;
		/* Canonical: written as the rules module writes it, with the
		 * record's smallest ply. */
		assert_int_equal(sfen_parse(pos, line + 5, NULL, NULL), 0);
		assert_int_equal(bookdb_get(rec, txn, pos_key(pos)), 0);
		char again[SFEN_MAX];
		sfen_write_ply(pos, rec->min_ply, again, sizeof again);
		assert_string_equal(line + 5, again);
		if (!bisect(text, size, line)) fail_msg("bisection misses '%s'", line);
	}
	bookdb_txn_abort(txn);
	assert_int_equal(count, noe);
	assert_true(count > 20);
	/* A position that is not in the book is not found. */
	assert_false(bisect(text, size, "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1"));
	free(pos);
	free(rec);
	free(copy);
	free(text);
}

static void test_export__random_books_are_sorted_canonical_and_bisectable(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_export__random_books_are_sorted_canonical_and_bisectable");
	char *dir;
	BookDB *db = new_book(&dir);
	random_book(db, &rng, 60);
	check_sorted_and_found(dir, db); /* engine evaluations */
	run_minimax(db);
	check_sorted_and_found(dir, db); /* minimax values */
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* The file a library export wrote (caller frees), with its stats. */
static char *export_lib(BookDB *db, const char *path, ExportOptions o, bool apery, ExportStats *st,
                        size_t *len)
{
	char err[EXPORT_ERRLEN] = "";
	int rc =
	    apery ? export_apery(st, db, path, &o, err) : export_yaneuraou(st, db, path, &o, err);
	if (rc)
		fail_msg("export (threads %d, memory %llu): %s", o.threads,
		         (unsigned long long)o.memory, err);
	char *text = ts_read_file(path, len);
	assert_non_null(text);
	return text;
}

/* One part or three, all in memory or in sorted runs on disk under a budget
 * of 1 MiB: the same bytes, YaneuraOu and Apery. */
static void test_export__parts_and_budgets_give_the_same_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], path[600];
	snprintf(book, sizeof book, "%s/book", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 30000 --seed 5 --quiet",
	                         ts_joseki(), book),
	                 0);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, book, NULL, NULL), 0);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) run_minimax(db);
		for (int apery = 0; apery < 2; apery++) {
			ExportOptions o = {.moves = EXPORT_MOVES_ALL, .threads = 1};
			ExportStats s1, sk;
			size_t l1, lk;
			snprintf(path, sizeof path, "%s/one.%s", dir, apery ? "bin" : "db");
			char *a = export_lib(db, path, o, apery, &s1, &l1);
			assert_true(s1.positions > 20000);
			assert_int_equal(s1.spill_bytes, 0); /* the default budget holds it */
			static const struct {
				int threads;
				uint64_t memory;
			} K[] = {{3, 0}, {1, 1u << 20}, {3, 1u << 20}};
			for (size_t k = 0; k < sizeof K / sizeof *K; k++) {
				o.threads = K[k].threads;
				o.memory = K[k].memory;
				char *b = export_lib(db, path, o, apery, &sk, &lk);
				if (l1 != lk || memcmp(a, b, l1))
					fail_msg("%s, %d parts, memory %llu: other bytes",
					         apery ? "apery" : "yaneuraou", o.threads,
					         (unsigned long long)o.memory);
				assert_int_equal(s1.positions, sk.positions);
				assert_int_equal(s1.moves, sk.moves);
				/* 1 MiB: the sorts went to disk. */
				if (o.memory) assert_true(sk.spill_bytes > 0);
				free(b);
			}
			if (!apery) {
				/* And that one order is the sorted one (lines compared as
				 * strcmp would). */
				const char *prev = NULL;
				for (const char *p = strstr(a, "\nsfen "); p;
				     p = strstr(p + 1, "\nsfen ")) {
					if (prev) {
						size_t x = strcspn(prev + 1, "\n"),
						       y = strcspn(p + 1, "\n");
						int c = memcmp(prev + 1, p + 1, x < y ? x : y);
						if (c > 0 || (c == 0 && x >= y))
							fail_msg("not sorted at byte %zu",
							         (size_t)(p - a));
					}
					prev = p;
				}
			}
			free(a);
		}
	}
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* A book of ingested games (600 generated floodgate-style ones and the
 * floodgate fixtures) and an imported YaneuraOu book, minimaxed: every
 * format and filter writes the same bytes under --memory 1M (sorted runs on
 * disk) as with the default budget (all in memory). */
static void test_export__a_real_book_exports_the_same_bytes_within_one_megabyte(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s gen-games %s/games --games 600 --seed 7", ts_joseki(), dir), 0);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s ingest %s/book %s/games tests/data/floodgate --quiet",
	                         ts_joseki(), dir, dir),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s import %s/book tests/data/apery/yaneuraou.db",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s minimax %s/book --game-evals --quiet", ts_joseki(), dir), 0);
	static const char *const ARGS[] = {
	    "",
	    "--moves all",
	    "--format apery --moves all",
	    "--format apery --moves best --count games",
	    "--depth-field distance --count games --moves all",
	    "--root startpos --moves all",
	    "--root startpos --side black --max-ply 30",
	    "--min-games 2 --moves all",
	    "--min-ply 10 --max-ply 40 --side white --min-depth 1",
	};
	bool spilled = false;
	for (size_t k = 0; k < sizeof ARGS / sizeof *ARGS; k++) {
		char path[2][600];
		long long positions[2];
		for (int m = 0; m < 2; m++) {
			snprintf(path[m], sizeof path[m], "%s/out%d.db", dir, m);
			json_t *o = ts_run_json(0, "%s export %s/book %s %s --json%s", ts_joseki(),
			                        dir, path[m], ARGS[k], m ? " --memory 1M" : "");
			positions[m] = ts_jint(o, "positions");
			if (m)
				spilled |= ts_jint(o, "spill_bytes") > 0;
			else
				assert_int_equal(ts_jint(o, "spill_bytes"), 0);
			/* The whole book, and the walk from the start over it, go to
			 * disk in 1M. */
			if (m && (k == 1 || k == 5)) assert_true(ts_jint(o, "spill_bytes") > 0);
			assert_true(ts_jint(o, "peak_anon_bytes") > 0);
			json_decref(o);
		}
		size_t l0, l1;
		char *a = ts_read_file(path[0], &l0), *b = ts_read_file(path[1], &l1);
		assert_non_null(a);
		assert_non_null(b);
		if (l0 != l1 || memcmp(a, b, l0)) fail_msg("export %s: other bytes in 1M", ARGS[k]);
		assert_int_equal(positions[0], positions[1]);
		if (k < 2) assert_true(positions[0] > 10000);
		free(a);
		free(b);
	}
	assert_true(spilled);
	ts_rmtree(dir);
	free(dir);
}

/* The walk from a root over a deep book (synth: lines of 200 plies and
 * more), within 1M: its filter of the keys visited has about 8 bits a key
 * there, so a few percent of the keys it meets wait in doubt for a merge
 * with the keys visited, on disk; and with 16 MiB (no doubt to speak of)
 * and the default budget: every walk reaches the same positions, and the
 * three books are the same bytes. */
static void test_export__the_walk_from_a_root_is_the_same_in_any_budget(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s synth %s/book --positions 250000 --seed 3 --quiet && %s "
	                         "minimax %s/book --quiet",
	                         ts_joseki(), dir, ts_joseki(), dir),
	                 0);
	static const char *const MEM[] = {"", " --memory 16M", " --memory 1M"};
	char *first = NULL;
	size_t lfirst = 0;
	long long reached = -1;
	for (int m = 0; m < 3; m++) {
		char path[600];
		snprintf(path, sizeof path, "%s/out%d.db", dir, m);
		json_t *o =
		    ts_run_json(0, "%s export %s/book %s --root startpos --moves all --json%s",
		                ts_joseki(), dir, path, MEM[m]);
		if (m == 2) assert_true(ts_jint(o, "spill_bytes") > 0);
		if (m == 0) reached = ts_jint(o, "reached");
		assert_int_equal(ts_jint(o, "reached"), reached);
		json_decref(o);
		size_t l;
		char *b = ts_read_file(path, &l);
		assert_non_null(b);
		if (!first) {
			first = b;
			lfirst = l;
			continue;
		}
		if (l != lfirst || memcmp(b, first, l)) fail_msg("export%s: other bytes", MEM[m]);
		free(b);
	}
	/* Most of the book, through levels far deeper than a few. */
	assert_true(reached > 100000);
	free(first);
	ts_rmtree(dir);
	free(dir);
}

/* What `joseki export` says on stderr for the book in dir. */
static char *export_says(const char *dir)
{
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s export %s/book %s/out.db", ts_joseki(), dir, dir),
	                 0);
	return err;
}

/* An export after writes that no minimax run has backed up yet (a coordinator
 * just stopped, a `think` run) says how many and what to run; after minimax,
 * nothing; before the first minimax (no state to compare), nothing either. */
static void test_export__writes_since_the_last_minimax_are_said(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s/book tests/data/floodgate --quiet", ts_joseki(), dir),
	    0);
	char *e = export_says(dir);
	assert_null(strstr(e, "since its last minimax run"));
	free(e);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --quiet", ts_joseki(), dir), 0);
	e = export_says(dir);
	assert_null(strstr(e, "since its last minimax run"));
	free(e);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s think %s/book --engine builtin --positions 3 --nodes 2000 "
	                         "--quiet",
	                         ts_joseki(), dir),
	                 0);
	e = export_says(dir);
	if (!strstr(e, "joseki: export: ") ||
	    !strstr(e, "3 writes of positions since its last minimax run") ||
	    !strstr(e, "export):\n  joseki minimax "))
		fail_msg("export said: %s", e);
	free(e);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --quiet", ts_joseki(), dir), 0);
	e = export_says(dir);
	assert_null(strstr(e, "since its last minimax run"));
	free(e);
	ts_rmtree(dir);
	free(dir);
}

/* BOOK dir/book from the YaneuraOu book text db (written to dir/in.db),
 * minimaxed. */
static void import_and_minimax(const char *dir, const char *db)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/in.db", dir);
	assert_int_equal(ts_write_file(path, db, strlen(db)), 0);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s import %s/book %s --quiet && %s minimax %s/book --quiet",
	                         ts_joseki(), dir, path, ts_joseki(), dir),
	                 0);
}

/* The line of 7g7f in DIR/book's export (with the extra options), or NULL. */
static char *line_of_7g7f(const char *dir, const char *extra)
{
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s/book %s/p.db --moves all --quiet%s",
	                         ts_joseki(), dir, dir, extra),
	                 0);
	char path[4200];
	snprintf(path, sizeof path, "%s/p.db", dir);
	size_t len;
	char *text = ts_read_file(path, &len);
	assert_non_null(text);
	char *l = strstr(text, "\n7g7f ");
	char *r = l ? strndup(l + 1, strcspn(l + 1, "\n")) : NULL;
	free(text);
	return r;
}

/* The ponder is the reply the export plays in the position the move leads to:
 * not a reply marked avoided (it was: 7g7f's ponder 3c3d, which the child's
 * lines left out), a preferred one within its window; in the walk from a root
 * too, and the avoided one again with --with-avoided. */
static void test_export__the_ponder_is_the_reply_the_book_plays(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const char *db = "#YANEURAOU-DB2016 1.00\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
	                 "7g7f none 50 20 1\n2g2f none 30 20 1\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	                 "3c3d none -40 20 1\n8c8d none -70 20 1\n4a3b none -90 20 1\n";
	import_and_minimax(dir, db);
	char *l = line_of_7g7f(dir, "");
	assert_string_equal(l, "7g7f 3c3d 40 20 1");
	free(l);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s avoid %s/book 'startpos moves 7g7f' 3c3d", ts_joseki(), dir),
	    0);
	static const char *const HOW[] = {"", " --root startpos", " --memory 1M"};
	for (size_t i = 0; i < sizeof HOW / sizeof *HOW; i++) {
		l = line_of_7g7f(dir, HOW[i]);
		if (!l || strcmp(l, "7g7f 8c8d 70 20 1")) fail_msg("%s: %s", HOW[i], l);
		free(l);
	}
	l = line_of_7g7f(dir, " --with-avoided");
	assert_non_null(l);
	assert_non_null(strstr(l, "7g7f 3c3d "));
	free(l);
	/* 4a3b preferred, 20 below 8c8d, within its window of 50. */
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s prefer %s/book 'startpos moves 7g7f' 4a3b --window 50",
	                         ts_joseki(), dir),
	                 0);
	l = line_of_7g7f(dir, "");
	assert_non_null(l);
	if (strncmp(l, "7g7f 4a3b ", 10)) fail_msg("with 4a3b preferred: %s", l);
	free(l);
	ts_rmtree(dir);
	free(dir);
}

/* A preferred move is written first, and the moves valued as it is one
 * lower (as a tie by another route is), so that an engine that plays the
 * highest value plays it: 7g7f, 2g2f and 5g5f at 50 each, 7g7f preferred (it
 * was written beside 2g2f at 50, and YaneuraOu picks among equal values at
 * random). */
static void test_export__moves_tied_with_a_preferred_one_are_written_one_lower(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const char *db = "#YANEURAOU-DB2016 1.00\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
	                 "7g7f none 50 20 1\n2g2f none 50 20 1\n5g5f none 50 20 1\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	                 "3c3d none -50 20 1\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2\n"
	                 "8c8d none -50 20 1\n";
	import_and_minimax(dir, db);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s prefer %s/book startpos 7g7f --quiet", ts_joseki(), dir), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s/book %s/p.db --moves all --quiet",
	                         ts_joseki(), dir, dir),
	                 0);
	char out[4200];
	snprintf(out, sizeof out, "%s/p.db", dir);
	char *text = ts_read_file(out, NULL);
	const char *sp = strstr(text, "LNSGKGSNL b - 1\n7g7f 3c3d 50 20 1\n");
	if (!sp || !strstr(sp, "\n2g2f 8c8d 49 ")) fail_msg("with 7g7f preferred:\n%s", text);
	/* Every other move of the start position below 50. */
	sp = strchr(sp, '\n') + 1;
	sp = strchr(sp, '\n') + 1;
	for (int lines = 0; *sp && strncmp(sp, "sfen ", 5); lines++) {
		int v = 0;
		if (sscanf(sp, "%*s %*s %d", &v) != 1 || v >= 50) fail_msg("after 7g7f:\n%s", text);
		sp = strchr(sp, '\n');
		if (!sp) break;
		sp++;
	}
	free(text);
	ts_rmtree(dir);
	free(dir);
}

/* After 7g7f 3c3d an engine that lists every move valued 8h2b (the bishop
 * left unpromoted) above 8h2b+. The export leaves it out, and 3c3d's ponder
 * is the promotion, whatever the pass; with the promotion avoided, 8h2b is
 * written again. */
static void test_export__a_declined_promotion_is_not_exported(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const char *db =
	    "#YANEURAOU-DB2016 1.00\n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
	    "7g7f none 50 20 1\n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	    "3c3d none -40 20 1\n"
	    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	    "8h2b none 60 20 1\n8h2b+ none 50 20 1\n2g2f none 0 20 1\n";
	import_and_minimax(dir, db);
	static const char *const HOW[] = {"", " --root startpos", " --memory 1M"};
	char path[4200];
	snprintf(path, sizeof path, "%s/p.db", dir);
	for (size_t i = 0; i < sizeof HOW / sizeof *HOW; i++) {
		assert_int_equal(ts_runf(NULL, NULL, "%s export %s/book %s --moves all --quiet%s",
		                         ts_joseki(), dir, path, HOW[i]),
		                 0);
		char *text = ts_read_file(path, NULL);
		assert_non_null(text);
		if (strstr(text, "\n8h2b ")) fail_msg("%s: 8h2b exported:\n%s", HOW[i], text);
		if (!strstr(text, "\n8h2b+ none 50 ")) fail_msg("%s: no 8h2b+:\n%s", HOW[i], text);
		if (!strstr(text, "\n3c3d 8h2b+ -50 "))
			fail_msg("%s: 3c3d's ponder:\n%s", HOW[i], text);
		free(text);
	}
	/* query says why 8h2b (60) is ranked below 8h2b+ (50). */
	char *said = NULL;
	assert_int_equal(
	    ts_runf(&said, NULL, "%s query %s/book 'startpos moves 7g7f 3c3d'", ts_joseki(), dir),
	    0);
	const char *row = strstr(said, "\n8h2b ");
	if (!row || !strstr(row, "declined: not played while 8h2b+ has a value"))
		fail_msg("query:\n%s", said);
	free(said);
	/* Preferred by hand: the user's choice, written (and played first). */
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s prefer %s/book 'startpos moves 7g7f 3c3d' 8h2b --quiet && "
	                         "%s export %s/book %s --moves all --quiet",
	                         ts_joseki(), dir, ts_joseki(), dir, path),
	                 0);
	char *pref = ts_read_file(path, NULL);
	assert_non_null(pref);
	if (!strstr(pref, "\n8h2b none 60 ")) fail_msg("8h2b preferred: not written:\n%s", pref);
	free(pref);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s prefer %s/book 'startpos moves 7g7f 3c3d' 8h2b --undo --quiet",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s avoid %s/book 'startpos moves 7g7f 3c3d' 8h2b+",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s export %s/book %s --moves all --quiet", ts_joseki(), dir, path),
	    0);
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	if (!strstr(text, "\n8h2b none 60 ")) fail_msg("8h2b+ avoided: no 8h2b:\n%s", text);
	if (!strstr(text, "\n3c3d 8h2b -60 ")) fail_msg("8h2b+ avoided: 3c3d's ponder:\n%s", text);
	free(text);
	ts_rmtree(dir);
	free(dir);
}

/* Only out.db.tmp (or nothing) and out.db itself when want_out: what a
 * killed export may leave in its directory. Returns whether out.db is there. */
static bool only_output_left(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	bool out = false;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		if (!strcmp(e->d_name, "out.db")) {
			out = true;
			continue;
		}
		if (strcmp(e->d_name, "out.db.tmp")) fail_msg("%s/%s left behind", dir, e->d_name);
	}
	closedir(d);
	return out;
}

/* kill -9 at random moments of an export in sorted runs on disk: no OUT
 * or the whole book (killed after its rename), never a half-written one;
 * nothing beside it but OUT.tmp (the runs are unlinked as they are made);
 * and the next export writes the same book. */
static void test_export__killed_mid_export_leaves_no_output_and_no_runs(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_export__killed_mid_export_leaves_no_output_and_no_runs");
	char *dir = ts_mkdtemp(), book[600], outdir[620], out[700], ref[700];
	snprintf(book, sizeof book, "%s/book", dir);
	snprintf(outdir, sizeof outdir, "%s/o", dir);
	snprintf(out, sizeof out, "%s/out.db", outdir);
	snprintf(ref, sizeof ref, "%s/ref.db", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 60000 --seed 9 --quiet",
	                         ts_joseki(), book),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --full --quiet", ts_joseki(), book), 0);
	long long t0 = (long long)clock_ms();
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --moves all --memory 1M --quiet",
	                         ts_joseki(), book, ref),
	                 0);
	long long span = (long long)clock_ms() - t0 + 1;
	size_t lr;
	char *want = ts_read_file(ref, &lr);
	assert_non_null(want);
	assert_int_equal(mkdir(outdir, 0755), 0);
	int killed = 0;
	for (int round = 0; round < 8; round++) {
		char *argv[] = {(char *)ts_joseki(), "export", book,      out, "--moves", "all",
		                "--memory",          "1M",     "--quiet", NULL};
		bool was_killed = ts_run_killed(argv, span, &rng);
		killed += was_killed;
		/* Killed before its rename: no OUT. Killed after it (freeing, say),
		 * or ended first: the whole book. */
		if (only_output_left(outdir)) {
			size_t l;
			char *got = ts_read_file(out, &l);
			assert_true(l == lr && !memcmp(got, want, lr));
			free(got);
			unlink(out);
		} else {
			assert_true(was_killed);
		}
	}
	assert_true(killed > 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --moves all --memory 1M --quiet",
	                         ts_joseki(), book, out),
	                 0);
	assert_true(only_output_left(outdir));
	char tmp[720];
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	assert_null(ts_read_file(tmp, NULL));
	size_t l;
	char *got = ts_read_file(out, &l);
	assert_true(l == lr && !memcmp(got, want, lr));
	free(got);
	free(want);
	ts_rmtree(dir);
	free(dir);
}

static void test_export__bad_arguments_exit_2_and_failures_write_nothing(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *err = NULL;
	const char *bad[] = {"",
	                     "BOOK",
	                     "BOOK OUT --format csa",
	                     "BOOK OUT --moves some",
	                     "BOOK OUT --window",
	                     "BOOK OUT --window -5",
	                     "BOOK OUT --min-depth x",
	                     "BOOK OUT --max-ply 0",
	                     "BOOK OUT --plies 4",
	                     "BOOK OUT.kif --plies 0",
	                     "BOOK OUT --side both",
	                     "BOOK OUT --count many",
	                     "BOOK OUT --bogus",
	                     "BOOK OUT.kif --root startpos --root 'startpos moves 7g7f'",
	                     "BOOK OUT THIRD"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		int rc = ts_runf(NULL, NULL, "%s export %s", ts_joseki(), bad[k]);
		if (rc != 2) fail_msg("'export %s' exited %d, not 2", bad[k], rc);
	}
	assert_int_equal(
	    ts_runf(NULL, &err, "%s export %s/missing %s/out.db", ts_joseki(), dir, dir), 1);
	free(err);
	char path[512];
	snprintf(path, sizeof path, "%s/out.db", dir);
	assert_null(ts_read_file(path, NULL));
	/* --roots FILE: a bad line named by its file and line (a comment after a
	 * position is no move of it); a missing file with the system's reason. */
	char roots[600];
	snprintf(roots, sizeof roots, "%s/roots.txt", dir);
	const char *rl = "# roots\nstartpos\t# the start\nstartpos moves 7g7f # after 7g7f\n\n"
	                 "startpos moves 9z9y\n";
	assert_int_equal(ts_write_file(roots, rl, strlen(rl)), 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/rb --positions 300 --quiet", ts_joseki(), dir), 0);
	assert_int_equal(ts_runf(NULL, &err, "%s export %s/rb %s/out.db --roots %s", ts_joseki(),
	                         dir, dir, roots),
	                 1);
	if (!strstr(err, "roots.txt line 5: bad position: malformed move 1 '9z9y'"))
		fail_msg("said: %s", err);
	free(err);
	assert_null(ts_read_file(path, NULL));
	assert_int_equal(ts_runf(NULL, &err, "%s export %s/rb %s/out.db --roots %s/none.txt",
	                         ts_joseki(), dir, dir, dir),
	                 1);
	assert_non_null(strstr(err, "none.txt': No such file or directory"));
	free(err);
	/* An OUT that is not a regular file (/dev/null, a pipe) is refused, not
	 * replaced by the file written beside it: a book is there to export. */
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/book --positions 300 --quiet", ts_joseki(), dir), 0);
	char fifo[512];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	const char *kinds[] = {"", "--format kif", "--format apery"};
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(ts_runf(NULL, &err, "%s export %s/book %s %s", ts_joseki(), dir,
		                         fifo, kinds[k]),
		                 1);
		assert_non_null(strstr(err, "not a regular file (a pipe)"));
		free(err);
	}
	assert_int_equal(ts_runf(NULL, &err, "%s peta-shock %s %s", ts_joseki(), path, fifo), 1);
	assert_non_null(strstr(err, "not a regular file (a pipe)"));
	free(err);
	struct stat st;
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	ts_rmtree(dir);
	free(dir);
}

/* A book of games alone (ingested, never analysed) exports nothing, which
 * is said on stderr with what to do (it wrote an empty file without a word);
 * once minimax made it a book of its games' results, it exports them. */
static void test_export__a_book_of_games_alone_says_why_nothing_is_exported(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s/book tests/data/floodgate --quiet", ts_joseki(), dir),
	    0);
	char *out = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(&out, &err, "%s export %s/book %s/out.db --quiet", ts_joseki(), dir, dir), 0);
	if (!strstr(out, "export: 0 of ") ||
	    !strstr(err, "positions has an analysis, and a game") ||
	    !strstr(err, "--games-book most-played"))
		fail_msg("%s%s", out, err);
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --games-book most-played --quiet",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(
	    ts_runf(&out, &err, "%s export %s/book %s/out.db --quiet", ts_joseki(), dir, dir), 0);
	if (strstr(out, "export: 0 of ") || strstr(err, "has an analysis"))
		fail_msg("%s%s", out, err);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_export__engine_evaluations_before_minimax),
	    cmocka_unit_test(test_export__minimax_values_with_depth_and_ponder),
	    cmocka_unit_test(test_export__random_books_are_sorted_canonical_and_bisectable),
	    cmocka_unit_test(test_export__parts_and_budgets_give_the_same_book),
	    cmocka_unit_test(test_export__a_real_book_exports_the_same_bytes_within_one_megabyte),
	    cmocka_unit_test(test_export__the_walk_from_a_root_is_the_same_in_any_budget),
	    cmocka_unit_test(test_export__killed_mid_export_leaves_no_output_and_no_runs),
	    cmocka_unit_test(test_export__writes_since_the_last_minimax_are_said),
	    cmocka_unit_test(test_export__the_ponder_is_the_reply_the_book_plays),
	    cmocka_unit_test(test_export__moves_tied_with_a_preferred_one_are_written_one_lower),
	    cmocka_unit_test(test_export__a_declined_promotion_is_not_exported),
	    cmocka_unit_test(test_export__bad_arguments_exit_2_and_failures_write_nothing),
	    cmocka_unit_test(test_export__a_book_of_games_alone_says_why_nothing_is_exported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

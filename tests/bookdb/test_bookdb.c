/*
 * tests/bookdb/test_bookdb.c — the book store: records and packed positions
 * round-trip, the schema version is enforced, the map grows by itself, a
 * killed writer loses at most its open batch (and its change log holds exactly
 * the committed writes), and the commands (synth, stats,
 * query, check) report what the store holds. Every test uses a fresh mkdtemp
 * book; randomised tests print their seed (TEST_SEED repeats one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/synth.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* Plays up to plies random legal moves from the start position. */
static void random_position(Position *pos, uint64_t *rng, int plies)
{
	Move moves[MOVEGEN_MAX];
	pos_set_startpos(pos);
	for (int i = 0; i < plies; i++) {
		int n = movegen_legal(pos, moves);
		if (n == 0) break;
		pos_do_move(pos, moves[ts_rand(rng) % (uint64_t)n]);
	}
}

/* A record for pos with up to nmoves of its legal moves and random fields. */
static void random_record(BookRecord *rec, const Position *pos, uint64_t *rng, int nmoves, int full)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	bookdb_record_init(rec, pos);
	uint64_t r = ts_rand(rng);
	if (full)
		rec->flags = (uint8_t)(r & (BOOKDB_REC_THOUGHT | BOOKDB_REC_MINIMAX));
	else
		rec->flags = BOOKDB_REC_THOUGHT;
	rec->think_depth = (rec->flags & BOOKDB_REC_THOUGHT) ? (uint8_t)(r >> 8) : 0;
	rec->nmoves = (uint16_t)(n < nmoves ? n : nmoves);
	for (int i = 0; i < rec->nmoves; i++) {
		BookMove *m = &rec->moves[i];
		memset(m, 0, sizeof *m);
		uint64_t a = ts_rand(rng), b = ts_rand(rng);
		m->move = moves[i];
		/* Full: eval, statistics and the avoided mark at random. */
		m->flags = full ? (uint8_t)(a & 7) : BOOKDB_MOVE_EVAL;
		if (m->flags & BOOKDB_MOVE_AVOIDED) rec->flags |= BOOKDB_REC_AVOID;
		if (m->flags & BOOKDB_MOVE_EVAL) {
			m->eval = (int16_t)(a >> 16);
			m->source = (uint8_t)((a >> 32) % (BOOKDB_SOURCE_MAX + 1));
			m->depth = (a >> 40) & 1 ? rec->think_depth : (uint8_t)(a >> 48);
			m->nodes = bookdb_nodes_decode((uint8_t)((b & 0xff) % 248));
		}
		if (m->flags & BOOKDB_MOVE_STATS) {
			m->count = (uint32_t)(b >> 8) % 100000;
			m->wins = m->count / 3;
			m->draws = m->count / 7;
			m->losses = m->count / 4;
		}
		if (rec->flags & BOOKDB_REC_MINIMAX) {
			m->value = (int16_t)(b >> 24);
			m->dist = (uint16_t)(b >> 40);
		}
	}
}

static void assert_records_equal(const BookRecord *a, const BookRecord *b)
{
	assert_memory_equal(a->board, b->board, sizeof a->board);
	assert_int_equal(a->hand[BLACK], b->hand[BLACK]);
	assert_int_equal(a->hand[WHITE], b->hand[WHITE]);
	assert_int_equal(a->side, b->side);
	assert_int_equal(a->min_ply, b->min_ply);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->think_depth, b->think_depth);
	assert_int_equal(a->nmoves, b->nmoves);
	for (int i = 0; i < a->nmoves; i++) {
		const BookMove *x = &a->moves[i], *y = &b->moves[i];
		assert_int_equal(x->move, y->move);
		assert_int_equal(x->flags, y->flags);
		if (x->flags & BOOKDB_MOVE_EVAL) {
			assert_int_equal(x->eval, y->eval);
			assert_int_equal(x->source, y->source);
			assert_int_equal(x->depth, y->depth);
			assert_int_equal(x->nodes, y->nodes);
		}
		if (x->flags & BOOKDB_MOVE_STATS) {
			assert_int_equal(x->count, y->count);
			assert_int_equal(x->wins, y->wins);
			assert_int_equal(x->draws, y->draws);
			assert_int_equal(x->losses, y->losses);
		}
		if (a->flags & BOOKDB_REC_MINIMAX) {
			assert_int_equal(x->value, y->value);
			assert_int_equal(x->dist, y->dist);
		}
	}
}

static void test_bookdb__records_round_trip(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("records_round_trip");
	static Position pos;
	static BookRecord rec, back, moves_only;
	static uint8_t buf[BOOKDB_RECORD_MAX], buf2[BOOKDB_RECORD_MAX];
	for (int i = 0; i < 3000; i++) {
		random_position(&pos, &rng, (int)(ts_rand(&rng) % 160));
		random_record(&rec, &pos, &rng,
		              i % 50 == 0 ? BOOKDB_MAX_MOVES : (int)(ts_rand(&rng) % 12), 1);
		int n = bookdb_record_encode(buf, sizeof buf, &rec);
		assert_true(n > 0);
		assert_int_equal(bookdb_record_decode(&back, buf, (size_t)n), 0);
		assert_records_equal(&rec, &back);
		/* One encoding per record: re-encoding gives the same bytes. */
		assert_int_equal(bookdb_record_encode(buf2, sizeof buf2, &back), n);
		assert_memory_equal(buf, buf2, (size_t)n);
		/* Moves-only decoding agrees on everything but the position. */
		assert_int_equal(bookdb_record_decode_moves(&moves_only, buf, (size_t)n), 0);
		memcpy(moves_only.board, rec.board, sizeof rec.board);
		memcpy(moves_only.hand, rec.hand, sizeof rec.hand);
		moves_only.side = rec.side;
		assert_records_equal(&rec, &moves_only);
		/* Rewriting the moves over the packed bytes as they are (what
		 * minimax's write-back does) gives the same bytes again. */
		int head = bookdb_record_decode_head(&moves_only, buf, (size_t)n);
		assert_true(head > 0 && head < n);
		assert_int_equal(bookdb_record_encode_packed(buf2, sizeof buf2, &moves_only,
		                                             buf + head, (size_t)(n - head)),
		                 n);
		assert_memory_equal(buf, buf2, (size_t)n);
		/* Every strict prefix is refused, never misread. */
		assert_int_equal(
		    bookdb_record_decode(&back, buf, (size_t)(ts_rand(&rng) % (uint64_t)n)),
		    BOOKDB_ECORRUPT);
	}
}

static void test_bookdb__eight_analysed_moves_fit_in_80_bytes(void **state)
{
	(void)state;
	uint64_t rng = 7;
	static Position pos;
	static BookRecord rec;
	uint8_t buf[BOOKDB_RECORD_MAX];
	random_position(&pos, &rng, 30);
	random_record(&rec, &pos, &rng, 8, 0);
	for (int i = 0; i < rec.nmoves; i++) { /* a multi-PV search: one depth, one node count */
		rec.moves[i].eval = (int16_t)(120 - 17 * i);
		rec.moves[i].depth = rec.think_depth;
		rec.moves[i].nodes = 2000000;
	}
	int n = bookdb_record_encode(buf, sizeof buf, &rec);
	assert_int_equal(rec.nmoves, 8);
	assert_true(n > 0 && n <= 80);
}

static void test_bookdb__packing_rebuilds_random_positions(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("packing_rebuilds_random_positions");
	static Position pos, back;
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	uint8_t buf[BOOKDB_PACKED_MAX];
	char err[SHOGI_ERRLEN], a[SFEN_MAX], b[SFEN_MAX];
	Move moves[MOVEGEN_MAX];
	pos_set_startpos(&pos);
	for (int i = 0; i < 20000; i++) {
		int n = movegen_legal(&pos, moves);
		if (n == 0 || pos_history_len(&pos) > 300) {
			pos_set_startpos(&pos);
			continue;
		}
		pos_do_move(&pos, moves[ts_rand(&rng) % (uint64_t)n]);
		int len = bookdb_pack_position(buf, pos.board, pos.hand, pos.side);
		assert_true(len >= 30 && len <= 33); /* a full set packs to at most 33 bytes */
		assert_int_equal(bookdb_unpack_position(board, hand, &side, buf, (size_t)len), len);
		assert_int_equal(pos_set(&back, board, hand, side, pos.game_ply, err), 0);
		assert_true(key_equal(pos_key(&back), pos_key(&pos)));
		sfen_write(&pos, a, sizeof a);
		sfen_write(&back, b, sizeof b);
		assert_string_equal(a, b);
	}
	/* A position with pieces missing (tsume-style) packs and unpacks too. */
	assert_int_equal(sfen_parse(&pos, "4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1", NULL, err),
	                 0);
	int len = bookdb_pack_position(buf, pos.board, pos.hand, pos.side);
	assert_true(len > 0 && len <= BOOKDB_PACKED_MAX);
	assert_int_equal(bookdb_unpack_position(board, hand, &side, buf, (size_t)len), len);
	assert_int_equal(pos_set(&back, board, hand, side, 1, err), 0);
	assert_true(key_equal(pos_key(&back), pos_key(&pos)));
}

static void test_bookdb__nodes_keep_three_significant_bits(void **state)
{
	(void)state;
	assert_int_equal(bookdb_nodes_decode(bookdb_nodes_code(0)), 0);
	for (uint64_t n = 1; n < 16; n++)
		assert_int_equal(bookdb_nodes_decode(bookdb_nodes_code(n)), n);
	uint64_t rng = 3;
	for (int i = 0; i < 10000; i++) {
		uint64_t n = ts_rand(&rng) >> (ts_rand(&rng) % 64);
		if (n > (1ULL << 31)) continue;
		uint64_t d = bookdb_nodes_decode(bookdb_nodes_code(n));
		assert_true(d <= n && d * 9 / 8 + 1 >= n);
	}
}

static void test_bookdb__put_get_iterate(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookTxn *txn;
	static Position pos;
	static BookRecord rec, back;
	uint64_t rng = 11;
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	Key keys[200];
	int nkeys = 0;
	for (int i = 0; i < 200; i++) {
		random_position(&pos, &rng, i % 40);
		random_record(&rec, &pos, &rng, 8, 1);
		int dup = 0;
		for (int j = 0; j < nkeys; j++) dup |= key_equal(keys[j], pos_key(&pos));
		if (!dup) keys[nkeys++] = pos_key(&pos);
		assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
		assert_int_equal(bookdb_get(&back, txn, pos_key(&pos)), 0);
		assert_records_equal(&rec, &back);
	}
	const char id[] = "game-1";
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_GAMES, id, sizeof id, "x", 1), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);

	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	uint64_t count;
	assert_int_equal(bookdb_count(&count, txn, BOOKDB_POS), 0);
	assert_int_equal(count, (uint64_t)nkeys);
	assert_int_equal(bookdb_count(&count, txn, BOOKDB_GAMES), 0);
	assert_int_equal(count, 1);
	Key missing = {1, 2};
	assert_int_equal(bookdb_get(&back, txn, missing), BOOKDB_ENOTFOUND);
	BookIter *it;
	Key k, prev = {0, 0};
	const uint8_t *val;
	size_t len;
	int n = 0, rc;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		if (n) assert_true(key_cmp(prev, k) < 0); /* big-endian keys iterate in key order */
		prev = k;
		assert_int_equal(bookdb_record_decode(&back, val, len), 0);
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, nkeys);
	bookdb_iter_free(it);
	/* A read transaction cannot write. */
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_WORK, "k", 1, "v", 1), BOOKDB_EREADONLY);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* A pass over db: the records read, and a hash of their keys and values in order. */
static uint64_t pass_digest(BookDB *db, uint64_t *n)
{
	BookTxn *txn;
	BookIter *it;
	Key k;
	const uint8_t *val;
	size_t len;
	uint64_t h = 1469598103934665603ULL;
	int rc;
	*n = 0;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		h = (h ^ k.hi ^ (k.lo << 1)) * 1099511628211ULL;
		for (size_t i = 0; i < len; i++) h = (h ^ val[i]) * 1099511628211ULL;
		++*n;
	}
	assert_int_equal(rc, 0);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	return h;
}

/* Drops path's pages from the page cache: true when the file system let it. */
static bool evict(const char *path)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return ts_resident_pages(path) < 64;
}

/* One record read by a pass over db (opened for random reads), its pages
 * evicted first: the pages ahead of it come in (well past the handful a
 * lookup reads), asked for by the pass itself. Waits for them (the kernel
 * reads them in the background), for at most a minute. */
static void pass_reads_ahead(BookDB *db, const char *data)
{
	if (!evict(data)) {
		print_message("    (the file system keeps %s's pages: read-ahead not observable)\n",
		              data);
		return;
	}
	BookTxn *txn;
	BookIter *it;
	Key k;
	const uint8_t *val;
	size_t len;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	assert_int_equal(bookdb_iter_next(it, &k, &val, &len), 1);
	size_t n = 0;
	for (int i = 0; i < 60000 && (n = ts_resident_pages(data)) < 256; i++) usleep(1000);
	assert_true(n >= 256);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
}

/* A book opened for random reads (BookDBOptions.random: no read-ahead) gives
 * a pass the same records as one opened for passes, the pass asking for the
 * pages ahead itself; the option survives a reopen. */
static void test_bookdb__a_pass_over_a_book_read_at_random_reads_ahead(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], data[4300], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	snprintf(data, sizeof data, "%s/data.mdb", path);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	BookSynthOptions so = {.positions = 60000, .seed = 5};
	BookSynthStats st;
	assert_int_equal(bookdb_synth(&st, db, &so, err), 0);
	uint64_t n, m;
	uint64_t h = pass_digest(db, &n);
	assert_int_equal(n, 60000);
	bookdb_free(db);

	/* (The pages a process has mapped stay in the cache: each check starts
	 * from a book just opened.) */
	BookDBOptions ro = {.read_only = true, .random = true, .random_above = 1};
	assert_int_equal(bookdb_open(&db, path, &ro, err), 0);
	pass_reads_ahead(db, data);
	assert_true(pass_digest(db, &m) == h);
	assert_int_equal(m, n);
	bookdb_free(db);
	assert_int_equal(bookdb_open(&db, path, &ro, err), 0);
	assert_int_equal(bookdb_reopen(db, err), 0);
	pass_reads_ahead(db, data);
	assert_true(pass_digest(db, &m) == h);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookdb__other_schema_version_is_refused(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookTxn *txn;
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	const void *v;
	size_t vlen;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_kv_get(&v, &vlen, txn, BOOKDB_META, "schema", 6), 0);
	assert_int_equal(vlen, 4);
	assert_int_equal(((const uint8_t *)v)[0], BOOKDB_SCHEMA_VERSION);
	uint8_t other[4] = {99, 0, 0, 0};
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "schema", 6, other, 4), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);

	db = (BookDB *)1;
	assert_int_equal(bookdb_open(&db, path, NULL, err), BOOKDB_EVERSION);
	assert_null(db);
	assert_non_null(strstr(err, "schema version 99"));
	assert_non_null(strstr(err, path));
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, path, &ro, err), BOOKDB_EVERSION);
	/* The command line says it too, and fails. */
	char *out = NULL, *errs = NULL;
	assert_int_equal(ts_runf(&out, &errs, "%s stats %s", ts_joseki(), path), 1);
	assert_non_null(strstr(errs, "joseki: "));
	assert_non_null(strstr(errs, "schema version 99"));
	free(out);
	free(errs);
	/* A missing book opened read-only is an error naming it, not a new book. */
	snprintf(path, sizeof path, "%s/nothing", dir);
	assert_int_equal(bookdb_open(&db, path, &ro, err), BOOKDB_ENOBOOK);
	assert_non_null(strstr(err, path));
	/* So is one opened read-write with must_exist, and nothing is created:
	 * not the directory, not a book in an empty data file. */
	BookDBOptions existing = {.must_exist = true};
	assert_int_equal(bookdb_open(&db, path, &existing, err), BOOKDB_ENOBOOK);
	assert_non_null(strstr(err, "no book there"));
	struct stat st;
	assert_int_equal(stat(path, &st), -1);
	char file[4300];
	assert_int_equal(ts_runf(NULL, NULL, "mkdir %s && : > %s/data.mdb", path, path), 0);
	assert_int_equal(bookdb_open(&db, path, &existing, err), BOOKDB_ECORRUPT);
	snprintf(file, sizeof file, "%s/data.mdb", path);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* A book that is there opens for writing. */
	snprintf(path, sizeof path, "%s/made", dir);
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	bookdb_free(db);
	assert_int_equal(bookdb_open(&db, path, &existing, err), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_kv_put(t, BOOKDB_META, "k", 1, "v", 1), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* The schema stamped in a book's meta (a byte, little-endian u32). */
static unsigned schema_in(const char *path, bool read_only)
{
	char err[BOOKDB_ERRLEN];
	BookDB *db;
	BookTxn *txn;
	BookDBOptions opt = {.read_only = read_only};
	const void *v;
	size_t len;
	assert_int_equal(bookdb_open(&db, path, &opt, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_kv_get(&v, &len, txn, BOOKDB_META, "schema", 6), 0);
	assert_int_equal(len, 4);
	unsigned ver = ((const uint8_t *)v)[0];
	bookdb_txn_abort(txn);
	bookdb_free(db);
	return ver;
}

/* A version-2 book (before minimax values were coded against the analyses)
 * is read as it is and upgraded by a read-write open; one stamped past this
 * build's version is refused with a message saying a newer joseki wrote it. */
static void test_bookdb__version_2_is_upgraded_and_a_newer_one_named(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookTxn *txn;
	static Position pos;
	static BookRecord rec, back;
	pos_set_startpos(&pos);
	bookdb_record_init(&rec, &pos);
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	static const uint8_t V2[4] = {2, 0, 0, 0};
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "schema", 6, V2, 4), 0);
	assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	assert_int_equal(schema_in(path, true), 2); /* read, not stamped */
	char *out = NULL, *errs = NULL;
	assert_int_equal(ts_runf(&out, &errs, "%s query %s startpos", ts_joseki(), path), 0);
	free(out);
	free(errs);
	assert_int_equal(schema_in(path, false), BOOKDB_SCHEMA_VERSION);
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_get(&back, txn, pos_key(&pos)), 0);
	bookdb_txn_abort(txn);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	uint8_t next[4] = {BOOKDB_SCHEMA_VERSION + 1, 0, 0, 0};
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "schema", 6, next, 4), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	assert_int_equal(bookdb_open(&db, path, NULL, err), BOOKDB_EVERSION);
	assert_non_null(strstr(err, "a newer joseki wrote it"));
	ts_rmtree(dir);
	free(dir);
}

static void test_bookdb__map_grows_by_itself(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookWriter *w;
	static Position pos;
	static BookRecord rec, back;
	uint64_t rng = 5;
	BookDBOptions opt = {.map_size = 256 << 10, .no_sync = true};
	assert_int_equal(bookdb_open(&db, path, &opt, err), 0);
	size_t start = bookdb_map_size(db);
	assert_true(start <= (512 << 10));
	assert_int_equal(bookdb_writer_new(&w, db, 3000), 0);
	Key keys[20000];
	for (int i = 0; i < 20000; i++) {
		random_position(&pos, &rng, 10 + i % 50);
		random_record(&rec, &pos, &rng, 8, 0);
		keys[i] = pos_key(&pos);
		assert_int_equal(bookdb_writer_put(w, keys[i], &rec), 0);
	}
	/* A plain transaction grows the map as well (a value of about 4 MiB). */
	BookTxn *txn;
	assert_int_equal(bookdb_writer_flush(w), 0);
	assert_int_equal(bookdb_writer_commits(w), 7);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	size_t big = (size_t)4 << 20;
	char *blob = calloc(1, big);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_WORK, "blob", 4, blob, big), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	free(blob);
	size_t end = bookdb_map_size(db);
	assert_true(end >= start * 16); /* at least four doublings */
	bookdb_writer_free(w);
	bookdb_free(db);

	/* Reopened with the tiny option, the book keeps its size and its records. */
	assert_int_equal(bookdb_open(&db, path, &opt, err), 0);
	assert_true(bookdb_map_size(db) >= end);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	for (int i = 0; i < 20000; i++) assert_int_equal(bookdb_get(&back, txn, keys[i]), 0);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* bookdb_rewrite's function for the test below, by the number of its call:
 * every record gets minimax values (it grows), every fifth loses its last
 * move, every eleventh is left as it is. */
typedef struct {
	int calls;
	BookRecord rec;
} RewriteCtx;

static int rewrite_grow(void *ctx, const uint8_t *raw, size_t len, uint8_t *out)
{
	RewriteCtx *c = ctx;
	int k = c->calls++;
	if (k % 11 == 3) return 0;
	if (bookdb_record_decode(&c->rec, raw, len)) return BOOKDB_ECORRUPT;
	c->rec.flags |= BOOKDB_REC_MINIMAX;
	for (int i = 0; i < c->rec.nmoves; i++) {
		c->rec.moves[i].value = (int16_t)(1000 - 7 * i - k % 13);
		c->rec.moves[i].dist = (uint16_t)(k % 5);
	}
	if (k % 5 == 1 && c->rec.nmoves > 1) c->rec.nmoves--;
	return bookdb_record_encode(out, BOOKDB_RECORD_MAX, &c->rec);
}

static int cmp_key(const void *a, const void *b)
{
	return key_cmp(*(const Key *)a, *(const Key *)b);
}

/* A rewrite function that breaks the rule: it writes to pos in the
 * transaction (ctx) it is called in. */
static int rewrite_writes(void *ctx, const uint8_t *raw, size_t len, uint8_t *out)
{
	Key other = {1, 2};
	memcpy(out, raw, len);
	if (bookdb_put_raw(ctx, other, raw, len)) return BOOKDB_ECORRUPT;
	return (int)len;
}

/* Rewriting in key order walks one cursor; the records, the kept counts and
 * the change log come out as puts would leave them, also where the map grows
 * under the rewrite, a call out of order searches, and a key is missing. */
static void test_bookdb__rewrite_in_key_order_writes_as_puts_do(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookWriter *w;
	BookTxn *t;
	static Position pos;
	static BookRecord back;
	static RewriteCtx ctx, want;
	enum { N = 4000 };
	static Key keys[N];
	static uint8_t out[BOOKDB_RECORD_MAX], expect[BOOKDB_RECORD_MAX];
	uint64_t rng = 11;
	BookDBOptions opt = {.map_size = 256 << 10, .no_sync = true};
	assert_int_equal(bookdb_open(&db, path, &opt, err), 0);
	assert_int_equal(bookdb_writer_new(&w, db, 5000), 0);
	int n = 0;
	for (int i = 0; i < N; i++) {
		random_position(&pos, &rng, 4 + i % 60);
		random_record(&back, &pos, &rng, 8, 0);
		keys[n] = pos_key(&pos);
		int rc = bookdb_writer_put(w, keys[n], &back);
		assert_int_equal(rc, 0);
		n++;
	}
	assert_int_equal(bookdb_writer_flush(w), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_changes_enable(t), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	qsort(keys, (size_t)n, sizeof *keys, cmp_key);
	int m = 0; /* distinct keys */
	for (int i = 0; i < n; i++)
		if (i == 0 || cmp_key(&keys[i], &keys[m - 1])) keys[m++] = keys[i];
	/* What each record should become: the function on a copy of it. */
	static uint8_t *before[N];
	static size_t before_len[N];
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	for (int i = 0; i < m; i++) {
		const uint8_t *raw;
		assert_int_equal(bookdb_get_raw(&raw, &before_len[i], t, keys[i]), 0);
		before[i] = malloc(before_len[i]);
		memcpy(before[i], raw, before_len[i]);
	}
	bookdb_txn_abort(t);
	size_t map_before = bookdb_map_size(db);
	/* In key order, but the 100th after the 105th (a search), and a key the
	 * book does not hold (fn not called). */
	int rewritten = 0;
	Key none = {0x0123456789abcdefULL, 0x1ULL};
	int order[N], no = 0;
	for (int i = 0; i < m; i++) order[no++] = i;
	order[100] = 105, order[105] = 100;
	for (int j = 0; j < no; j++) {
		int i = order[j];
		int rc = bookdb_writer_rewrite(w, keys[i], rewrite_grow, &ctx, out);
		assert_true(rc >= 0);
		rewritten += rc > 0;
		if (j == 50) {
			int calls = ctx.calls;
			assert_int_equal(bookdb_writer_rewrite(w, none, rewrite_grow, &ctx, out),
			                 BOOKDB_ENOTFOUND);
			assert_int_equal(ctx.calls, calls);
		}
	}
	assert_int_equal(bookdb_writer_flush(w), 0);
	assert_true(bookdb_map_size(db) > map_before); /* grown during the rewrite */
	assert_true(rewritten > m / 2);
	/* Every record as the function made it (or as it was). */
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	uint64_t moves = 0;
	for (int j = 0; j < no; j++) {
		int i = order[j];
		const uint8_t *raw;
		size_t len;
		assert_int_equal(bookdb_get_raw(&raw, &len, t, keys[i]), 0);
		int e = rewrite_grow(&want, before[i], before_len[i], expect);
		if (e == 0) {
			assert_int_equal(len, before_len[i]);
			assert_memory_equal(raw, before[i], len);
		} else {
			assert_int_equal(len, (size_t)e);
			assert_memory_equal(raw, expect, len);
		}
		assert_int_equal(bookdb_record_decode(&back, raw, len), 0);
		moves += back.nmoves;
	}
	/* Kept counts as a recount gives them; one change-log entry a rewrite. */
	BookCounts kept, counted;
	uint64_t positions;
	assert_int_equal(bookdb_counts(&kept, t), 0);
	assert_int_equal(bookdb_counts_recount(&counted, &positions, t), 0);
	assert_true(kept.kept);
	assert_int_equal(positions, (uint64_t)m);
	assert_int_equal(kept.moves, moves);
	assert_int_equal(kept.moves, counted.moves);
	assert_int_equal(kept.thought, counted.thought);
	BookChangesInfo ci;
	assert_int_equal(bookdb_changes_info(&ci, t), 0);
	assert_int_equal(ci.entries, (uint64_t)rewritten);
	bookdb_txn_abort(t);
	/* A function that writes to pos itself is refused: the cursor and the
	 * bytes it was handed would be stale. */
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_rewrite(t, keys[0], rewrite_writes, t, out), BOOKDB_EINVAL);
	bookdb_txn_abort(t);
	for (int i = 0; i < m; i++) free(before[i]);
	bookdb_writer_free(w);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookdb__append_refuses_keys_out_of_order(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookWriter *w;
	BookTxn *txn;
	const uint8_t v[3] = {1, 2, 3};
	Key k1 = {5, 1}, k2 = {9, 1}, k0 = {7, 0};
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_writer_new(&w, db, 2), 0);
	assert_int_equal(bookdb_writer_append(w, k1, v, 3), 0);
	assert_int_equal(bookdb_writer_append(w, k0, v, 3), BOOKDB_EINVAL); /* k0 < k1 */
	assert_int_equal(bookdb_writer_append(w, k2, v, 2), 0);             /* commits: batch 2 */
	assert_int_equal(bookdb_writer_commits(w), 1);
	assert_int_equal(bookdb_writer_append(w, k1, v, 3), BOOKDB_EINVAL); /* not past the end */
	assert_int_equal(bookdb_writer_flush(w), 0);
	bookdb_writer_free(w);
	uint64_t n;
	const uint8_t *val;
	size_t len;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_POS), 0);
	assert_int_equal(n, 2);
	assert_int_equal(bookdb_get_raw(&val, &len, txn, k2), 0);
	assert_int_equal(len, 2);
	assert_int_equal(bookdb_get_raw(&val, &len, txn, k0), BOOKDB_ENOTFOUND);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* ---- crash test ---- */

#define CRASH_BATCH 300

/* Batch b of the crash test: deterministic positions from random lines. */
static void crash_batch(Key *keys, BookRecord *recs, uint64_t b)
{
	static Position pos;
	uint64_t rng = 0x5eed0000 + b;
	int i = 0;
	while (i < CRASH_BATCH) {
		pos_set_startpos(&pos);
		int len = 5 + (int)(ts_rand(&rng) % 60);
		Move moves[MOVEGEN_MAX];
		for (int p = 0; p < len && i < CRASH_BATCH; p++) {
			int n = movegen_legal(&pos, moves);
			if (n == 0) break;
			pos_do_move(&pos, moves[ts_rand(&rng) % (uint64_t)n]);
			keys[i] = pos_key(&pos);
			random_record(&recs[i], &pos, &rng, 8, 1);
			i++;
		}
	}
}

/* The writer child: commits batches first, first+1, ... and reports each commit.
 * The book tracks changes, so each commit also commits its log entries. */
static void crash_child(const char *path, uint64_t first, int fd)
{
	static Key keys[CRASH_BATCH];
	static BookRecord recs[CRASH_BATCH];
	BookDB *db;
	BookWriter *w;
	BookTxn *txn;
	char err[BOOKDB_ERRLEN];
	BookDBOptions opt = {.map_size = 1 << 20};
	if (bookdb_open(&db, path, &opt, err) || bookdb_txn_begin(&txn, db, true) ||
	    bookdb_changes_enable(txn) || bookdb_txn_commit(txn) ||
	    bookdb_writer_new(&w, db, CRASH_BATCH))
		_exit(3);
	for (uint64_t b = first;; b++) {
		crash_batch(keys, recs, b);
		for (int i = 0; i < CRASH_BATCH; i++)
			if (bookdb_writer_put(w, keys[i], &recs[i])) _exit(4);
		/* The writer committed on the batch's last put: only now is it reported. */
		if (bookdb_writer_commits(w) != b - first + 1) _exit(5);
		if (write(fd, &b, sizeof b) != sizeof b) _exit(6);
	}
}

/*
 * The change log after a kill: whole batches only, in commit order, numbered
 * 1, 2, ...: the batches committed before (order[0..*norder)), then next,
 * next+1, ... — the nrep reported ones and at most one committed but killed
 * before it was reported. Appends the batches found to order; returns how many
 * were committed but not reported (0 or 1).
 */
static int crash_check_log(const char *path, uint64_t *order, size_t *norder, uint64_t next,
                           uint64_t nrep)
{
	static Key keys[CRASH_BATCH];
	static BookRecord recs[CRASH_BATCH];
	char err[BOOKDB_ERRLEN];
	BookDB *db;
	BookTxn *txn;
	BookChangesIter *it;
	BookDBOptions ro = {.read_only = true};
	uint64_t seq, e = 0;
	Key key;
	int rc = bookdb_open(&db, path, &ro, err);
	if (rc == BOOKDB_ENOBOOK && *norder == 0 && nrep == 0)
		return 0; /* killed before creating it */
	assert_int_equal(rc, 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_changes_iter_open(&it, txn, 0), 0);
	while ((rc = bookdb_changes_iter_next(it, &seq, &key)) == 1) {
		size_t j = (size_t)(e / CRASH_BATCH);
		uint64_t id = j < *norder ? order[j] : next + (j - *norder);
		if (e % CRASH_BATCH == 0) crash_batch(keys, recs, id);
		assert_int_equal(seq, e + 1);
		if (!key_equal(key, keys[e % CRASH_BATCH]))
			fail_msg("log entry %llu is not put %llu of batch %llu",
			         (unsigned long long)seq, (unsigned long long)(e % CRASH_BATCH),
			         (unsigned long long)id);
		e++;
	}
	assert_int_equal(rc, 0);
	bookdb_changes_iter_free(it);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	assert_int_equal(e % CRASH_BATCH, 0); /* no part of an uncommitted batch */
	uint64_t batches = e / CRASH_BATCH;
	assert_true(batches == *norder + nrep || batches == *norder + nrep + 1);
	size_t had = *norder;
	for (uint64_t b = had; b < batches; b++) order[(*norder)++] = next + (b - had);
	return (int)(batches - had - nrep);
}

static void test_bookdb__killed_writer_loses_at_most_its_open_batch(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("killed_writer_loses_at_most_its_open_batch");
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	static Key keys[CRASH_BATCH];
	static BookRecord recs[CRASH_BATCH], back;
	static uint64_t order[20 * 1000]; /* batches in the order they were committed */
	size_t norder = 0;
	uint64_t next = 0, reported_total = 0, unreported = 0;
	for (int round = 0; round < 20; round++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			crash_child(path, next, fds[1]);
		}
		close(fds[1]);
		uint64_t b, last = next, nrep = 0;
		/* Every other round waits for the child's first commit first, so
		 * that kills land among commits however busy the machine is (on a
		 * loaded one, all 20 random moments once came before any commit). */
		if (round % 2) {
			assert_int_equal(read(fds[0], &b, sizeof b), sizeof b);
			assert_int_equal(b, next);
			nrep = 1;
		}
		/* Kill at a random moment: before, during or between commits. */
		struct timespec ts = {0, (long)(ts_rand(&rng) % 60) * 1000000L};
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
		}
		assert_true(WIFSIGNALED(status)); /* the child never stops by itself */
		ssize_t r;
		while ((r = read(fds[0], &b, sizeof b)) == sizeof b) {
			assert_int_equal(b, last + (nrep ? 1 : 0));
			last = b;
			nrep++;
		}
		close(fds[0]);
		reported_total += nrep;
		assert_true(norder + nrep + 1 <= sizeof order / sizeof *order);
		unreported += (uint64_t)crash_check_log(path, order, &norder, next, nrep);

		/* Every reported batch is there, and the book is consistent. */
		BookDB *db;
		BookTxn *txn;
		BookDBOptions ro = {.read_only = true};
		if (next + nrep > 0) { /* a never-committed book need not exist */
			assert_int_equal(bookdb_open(&db, path, &ro, err), 0);
			assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
			for (uint64_t bb = 0; bb < next + nrep; bb++) {
				crash_batch(keys, recs, bb);
				for (int i = 0; i < CRASH_BATCH; i++)
					assert_int_equal(bookdb_get(&back, txn, keys[i]), 0);
			}
			bookdb_txn_abort(txn);
			bookdb_free(db);
			char *out = NULL;
			int rc = ts_runf(&out, NULL, "%s check %s", ts_joseki(), path);
			if (rc != 0) fail_msg("round %d: joseki check failed:\n%s", round, out);
			free(out);
		}
		next += nrep;
	}
	fprintf(stderr,
	        "crash test: %llu batches reported over 20 kills, %llu more committed unreported; "
	        "change log exact\n",
	        (unsigned long long)reported_total, (unsigned long long)unreported);
	assert_true(reported_total > 0);
	ts_rmtree(dir);
	free(dir);
}

/* ---- commands ---- */

static json_t *run_json(const char *fmt, const char *a, const char *b)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, fmt, ts_joseki(), a, b);
	if (rc != 0) fail_msg("%s exited %d: %s", fmt, rc, err ? err : "");
	json_error_t jerr;
	json_t *j = json_loads(out, 0, &jerr);
	if (!j) fail_msg("not JSON: %s", out);
	free(out);
	free(err);
	return j;
}

static void test_bookdb__commands_report_a_synth_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200];
	snprintf(path, sizeof path, "%s/book", dir);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s synth %s --positions 3000 --seed 42 --quiet",
	                         ts_joseki(), path),
	                 0);
	assert_non_null(strstr(out, "synth positions 3000 "));
	free(out);
	free(err);

	json_t *st = run_json("%s stats %s --json%s", path, " --scan");
	assert_int_equal(json_integer_value(json_object_get(st, "positions")), 3000);
	assert_int_equal(json_integer_value(json_object_get(st, "thought")), 3000);
	json_int_t moves = json_integer_value(json_object_get(st, "moves"));
	assert_true(moves > 3000 * 7 && moves <= 3000 * 8);
	assert_int_equal(json_integer_value(json_object_get(st, "games")), 0);
	json_int_t leaves = json_integer_value(json_object_get(st, "leaves"));
	assert_true(leaves > 0 && leaves < 3000);
	assert_true(json_is_null(json_object_get(st, "cyclic")));
	assert_true(json_is_null(json_object_get(st, "root_value")));
	assert_true(json_integer_value(json_object_get(st, "bytes")) > 3000 * 50);
	json_decref(st);

	json_t *q = run_json("%s query %s '%s' --json", path, "startpos");
	static Position pos;
	char hex[KEY_HEX_LEN];
	pos_set_startpos(&pos);
	key_to_hex(pos_key(&pos), hex);
	assert_string_equal(json_string_value(json_object_get(q, "sfen")), SFEN_STARTPOS);
	assert_string_equal(json_string_value(json_object_get(q, "key")), hex);
	assert_true(json_is_true(json_object_get(q, "in_book")));
	json_t *mv = json_object_get(q, "moves");
	/* No minimax yet: the value is the best move's own analysis. */
	assert_int_equal(json_integer_value(json_object_get(q, "value")),
	                 json_integer_value(json_object_get(json_array_get(mv, 0), "eval")));
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(mv, 0), "value_source")), "thought");
	assert_int_equal(json_array_size(mv), 8);
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")),
	                    json_string_value(json_object_get(json_array_get(mv, 0), "move")));
	for (size_t i = 0; i < json_array_size(mv); i++) {
		json_t *m = json_array_get(mv, i);
		Move move;
		const char *usi = json_string_value(json_object_get(m, "move"));
		assert_int_equal(usi_move_parse_legal(&move, &pos, usi, strlen(usi), NULL), 0);
		assert_true(json_integer_value(json_object_get(m, "depth")) >= 10);
		assert_non_null(json_object_get(m, "count"));
		if (i)
			assert_true(
			    json_integer_value(json_object_get(m, "eval")) <=
			    json_integer_value(json_object_get(json_array_get(mv, i - 1), "eval")));
	}
	/* Follow the best move: a synth line continues from the root. */
	char spec[64];
	snprintf(spec, sizeof spec, "startpos moves %s",
	         json_string_value(json_object_get(q, "bestmove")));
	json_decref(q);
	q = run_json("%s query %s '%s' --json", path, spec);
	assert_true(json_is_true(json_object_get(q, "in_book")));
	json_decref(q);

	/* Not in the book: 1. 1g1f 9c9d 1f1e is avoided by no line with this seed? Use a
	 * position no legal game reaches from these lines: a lone-king board. */
	q = run_json("%s query %s '%s' --json", path, "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1");
	assert_true(json_is_false(json_object_get(q, "in_book")));
	assert_int_equal(json_array_size(json_object_get(q, "moves")), 0);
	json_decref(q);

	assert_int_equal(
	    ts_runf(&out, &err, "%s query %s 'startpos moves 7g7g'", ts_joseki(), path), 2);
	assert_non_null(strstr(err, "7g7g"));
	free(out);
	free(err);
	assert_int_equal(ts_runf(&out, &err, "%s check %s", ts_joseki(), path), 0);
	assert_non_null(strstr(out, "check: 3000 records, 0 bad"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Keys of the in-book children of key (at most 8 in a synth book). */
static int book_children(BookTxn *txn, Key key, Key *out)
{
	static BookRecord rec;
	static Position pos;
	int n = 0;
	if (bookdb_get(&rec, txn, key) || bookdb_record_position(&pos, &rec, NULL)) return 0;
	for (int i = 0; i < rec.nmoves && n < 16; i++) {
		const uint8_t *v;
		size_t len;
		Key c = pos_key_after(&pos, rec.moves[i].move);
		if (bookdb_get_raw(&v, &len, txn, c) == 0) out[n++] = c;
	}
	return n;
}

static void test_bookdb__synth_book_has_transpositions_and_cycles(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s --positions 5000 --seed 7 --quiet", ts_joseki(), path),
	    0);
	BookDB *db;
	BookTxn *txn;
	BookIter *it;
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, path, &ro, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key key, *parents = calloc(5000, sizeof *parents),
	         *edges = calloc(5000 * 16, sizeof *edges);
	const uint8_t *val;
	size_t len;
	int np = 0, ne = 0;
	while (bookdb_iter_next(it, &key, &val, &len) == 1) parents[np++] = key;
	bookdb_iter_free(it);
	assert_int_equal(np, 5000);
	int cycles = 0;
	for (int p = 0; p < np; p++) {
		Key a[16], b[16], c[16], d[16];
		int na = book_children(txn, parents[p], a), found = 0;
		for (int i = 0; i < na; i++) edges[ne++] = a[i];
		/* A repetition cycle: back to the position within four plies. */
		for (int i = 0; i < na && !found; i++) {
			int nb = book_children(txn, a[i], b);
			for (int j = 0; j < nb && !found; j++) {
				int nc = book_children(txn, b[j], c);
				for (int x = 0; x < nc && !found; x++) {
					int nd = book_children(txn, c[x], d);
					for (int y = 0; y < nd; y++)
						found |= key_equal(d[y], parents[p]);
				}
			}
		}
		cycles += found;
	}
	/* A transposition: a position that is the child of two different parents. */
	qsort(edges, (size_t)ne, sizeof *edges, cmp_key);
	int transpositions = 0;
	for (int i = 1; i < ne; i++) transpositions += key_equal(edges[i], edges[i - 1]);
	fprintf(stderr, "synth book: %d edges, %d transposition edges, %d positions on cycles\n",
	        ne, transpositions, cycles);
	assert_true(ne > np / 2);
	assert_true(transpositions >= 10);
	assert_true(cycles >= 10);
	free(parents);
	free(edges);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookdb__query_and_stats_show_minimax_values_once_stored(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookTxn *txn;
	static Position pos;
	static BookRecord rec;
	uint64_t rng = 17;
	pos_set_startpos(&pos);
	random_record(&rec, &pos, &rng, 5, 0);
	rec.flags |= BOOKDB_REC_MINIMAX;
	const int values[5] = {10, 55, -30, 55, 0}; /* moves 1 and 3 tie: move number decides */
	for (int i = 0; i < 5; i++) {
		rec.moves[i].value = (int16_t)values[i];
		rec.moves[i].dist = (uint16_t)(i + 1);
		rec.moves[i].eval = (int16_t)(100 - values[i]); /* eval order is the reverse */
	}
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);

	json_t *q = run_json("%s query %s '%s' --json", path, "startpos");
	assert_int_equal(json_integer_value(json_object_get(q, "value")), 55);
	json_t *mv = json_object_get(q, "moves");
	assert_int_equal(json_array_size(mv), 5);
	Move best = rec.moves[1].move < rec.moves[3].move ? rec.moves[1].move : rec.moves[3].move;
	char usi[USI_MOVE_MAX];
	usi_move_write(best, usi);
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), usi);
	const int sorted[5] = {55, 55, 10, 0, -30};
	for (int i = 0; i < 5; i++)
		assert_int_equal(
		    json_integer_value(json_object_get(json_array_get(mv, (size_t)i), "value")),
		    sorted[i]);
	json_decref(q);
	json_t *st = run_json("%s stats %s --json%s", path, " --scan");
	assert_int_equal(json_integer_value(json_object_get(st, "root_value")), 55);
	assert_int_equal(json_integer_value(json_object_get(st, "leaves")), 1);
	json_decref(st);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookdb__check_names_bad_records(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookTxn *txn;
	static Position pos;
	static BookRecord rec;
	uint64_t rng = 9;
	char hex[4][KEY_HEX_LEN];
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	for (int i = 0; i < 50; i++) { /* good records */
		random_position(&pos, &rng, i);
		random_record(&rec, &pos, &rng, 8, 1);
		assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
	}
	/* 1: stored under another position's key. */
	random_position(&pos, &rng, 3);
	random_record(&rec, &pos, &rng, 4, 0);
	Key wrong = {0x1234, 0x5678};
	key_to_hex(wrong, hex[0]);
	assert_int_equal(bookdb_put(txn, wrong, &rec), 0);
	/* 2: an illegal move (a drop with an empty hand). */
	pos_set_startpos(&pos);
	random_record(&rec, &pos, &rng, 4, 0);
	rec.moves[1].move = move_make_drop(GOLD, 40);
	key_to_hex(pos_key(&pos), hex[1]);
	assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
	/* 3: statistics that do not add up. */
	random_position(&pos, &rng, 71);
	random_record(&rec, &pos, &rng, 4, 0);
	rec.moves[0].flags |= BOOKDB_MOVE_STATS;
	rec.moves[0].count = 3;
	rec.moves[0].wins = 2;
	rec.moves[0].losses = 2;
	key_to_hex(pos_key(&pos), hex[2]);
	assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
	/* 4: bytes that do not decode. */
	Key garbage = {0xdead, 0xbeef};
	key_to_hex(garbage, hex[3]);
	assert_int_equal(bookdb_put_raw(txn, garbage, (const uint8_t *)"\x07garbage", 8), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);

	char *out = NULL, *errs = NULL;
	assert_int_equal(ts_runf(&out, &errs, "%s check %s", ts_joseki(), path), 1);
	for (int i = 0; i < 4; i++)
		if (!strstr(out, hex[i])) fail_msg("report does not name %s:\n%s", hex[i], out);
	assert_non_null(strstr(out, "illegal"));
	assert_non_null(strstr(out, "> count 3"));
	assert_non_null(strstr(out, "does not decode"));
	assert_non_null(strstr(out, "4 bad"));
	assert_non_null(strstr(errs, "joseki: "));
	free(out);
	free(errs);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookdb__readers_work_while_a_writer_holds_a_batch(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookWriter *w;
	static Position pos;
	static BookRecord rec;
	uint64_t rng = 13;
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_writer_new(&w, db, 1000000), 0);
	pos_set_startpos(&pos);
	random_record(&rec, &pos, &rng, 8, 0);
	assert_int_equal(bookdb_writer_put(w, pos_key(&pos), &rec), 0);
	assert_int_equal(bookdb_writer_flush(w), 0);
	for (int i = 0; i < 100; i++) { /* an open, uncommitted batch */
		random_position(&pos, &rng, 5 + i);
		random_record(&rec, &pos, &rng, 8, 0);
		assert_int_equal(bookdb_writer_put(w, pos_key(&pos), &rec), 0);
	}
	json_t *st = run_json("%s stats %s --json%s", path, "");
	assert_int_equal(json_integer_value(json_object_get(st, "positions")), 1);
	json_decref(st);
	json_t *q = run_json("%s query %s '%s' --json", path, "startpos");
	assert_true(json_is_true(json_object_get(q, "in_book")));
	json_decref(q);
	assert_int_equal(bookdb_writer_flush(w), 0);
	st = run_json("%s stats %s --json%s", path, "");
	assert_true(json_integer_value(json_object_get(st, "positions")) > 50);
	json_decref(st);
	bookdb_writer_free(w);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* A book path longer than BOOKDB_DIR_MAX is refused (no path is ever cut
 * short to another file's name), for open and for compact. */
static void test_bookdb__an_overlong_path_is_refused(void **state)
{
	(void)state;
	char *dir = malloc(BOOKDB_DIR_MAX + 64), err[BOOKDB_ERRLEN];
	memset(dir, 'x', BOOKDB_DIR_MAX + 1);
	dir[0] = '/';
	dir[BOOKDB_DIR_MAX + 1] = 0;
	BookDB *db = (BookDB *)1;
	assert_int_equal(bookdb_open(&db, dir, NULL, err), BOOKDB_EINVAL);
	assert_null(db);
	assert_non_null(strstr(err, "longer than 4000 bytes"));
	uint64_t before, after;
	assert_int_equal(bookdb_compact(dir, &before, &after, NULL, NULL, err), BOOKDB_EINVAL);
	assert_non_null(strstr(err, "longer than"));
	free(dir);
}

/* check reads the games database (each entry must decode and replay) and says
 * when a merge into the book was interrupted, or a minimax run; none of it was
 * looked at before. */
static void test_bookdb__check_reads_games_and_sees_an_unfinished_merge(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN], *out = NULL, *e = NULL;
	snprintf(path, sizeof path, "%s/book", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet >/dev/null",
	                         ts_joseki(), path),
	                 0);
	assert_int_equal(ts_runf(&out, &e, "%s check %s", ts_joseki(), path), 0);
	unsigned long long rec = 0, bad = 0, games = 0, gbad = 0;
	assert_non_null(strstr(out, "check: "));
	assert_int_equal(sscanf(strstr(out, "check: "),
	                        "check: %llu records, %llu bad, %llu games, %llu bad", &rec, &bad,
	                        &games, &gbad),
	                 4);
	assert_true(games > 0);
	assert_int_equal(gbad, 0);
	assert_null(strstr(out, "interrupted"));
	assert_null(strstr(out, "minimax run"));
	free(out);
	free(e);
	BookDB *db;
	BookTxn *txn;
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_GAMES, "broken-game", 11, "\x09xyz", 4), 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "merge", 5, "in progress", 11), 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "mmfull", 6, "1", 1), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	assert_int_equal(ts_runf(&out, &e, "%s check %s", ts_joseki(), path), 1);
	assert_non_null(strstr(out, "game 'broken-game': does not decode"));
	assert_non_null(strstr(out, "merge into this book was interrupted"));
	assert_non_null(strstr(out, "a minimax run on this book was stopped before its end"));
	free(out);
	free(e);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bookdb__records_round_trip),
	    cmocka_unit_test(test_bookdb__eight_analysed_moves_fit_in_80_bytes),
	    cmocka_unit_test(test_bookdb__packing_rebuilds_random_positions),
	    cmocka_unit_test(test_bookdb__nodes_keep_three_significant_bits),
	    cmocka_unit_test(test_bookdb__put_get_iterate),
	    cmocka_unit_test(test_bookdb__a_pass_over_a_book_read_at_random_reads_ahead),
	    cmocka_unit_test(test_bookdb__other_schema_version_is_refused),
	    cmocka_unit_test(test_bookdb__version_2_is_upgraded_and_a_newer_one_named),
	    cmocka_unit_test(test_bookdb__map_grows_by_itself),
	    cmocka_unit_test(test_bookdb__rewrite_in_key_order_writes_as_puts_do),
	    cmocka_unit_test(test_bookdb__append_refuses_keys_out_of_order),
	    cmocka_unit_test(test_bookdb__killed_writer_loses_at_most_its_open_batch),
	    cmocka_unit_test(test_bookdb__commands_report_a_synth_book),
	    cmocka_unit_test(test_bookdb__synth_book_has_transpositions_and_cycles),
	    cmocka_unit_test(test_bookdb__query_and_stats_show_minimax_values_once_stored),
	    cmocka_unit_test(test_bookdb__check_names_bad_records),
	    cmocka_unit_test(test_bookdb__check_reads_games_and_sees_an_unfinished_merge),
	    cmocka_unit_test(test_bookdb__readers_work_while_a_writer_holds_a_batch),
	    cmocka_unit_test(test_bookdb__an_overlong_path_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

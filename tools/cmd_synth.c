/*
 * joseki synth BOOK --positions N [--seed S] [--batch B] [--quiet]
 *
 * Builds a synthetic analysed book for benchmarks: random legal lines from the
 * start position. Each position stores 8 "analysed" moves chosen by a hash of
 * (key, move), so every visit of a position offers the same moves and lines
 * that reach it by different orders transpose; now and then both sides undo
 * their last moves, which puts repetition cycles into the book graph. Values
 * are plausible (best first, a few dozen centipawns apart, depth 10-29).
 * Ends with one stdout line: "synth positions N time_ms T positions_per_s R".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define SYNTH_MOVES 8       /* analysed moves stored per position */
#define SYNTH_MAX_LINE 200  /* plies per random line at most */
#define SYNTH_BATCH 100000  /* puts per committed transaction */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return mix64(*s);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The first up-to-SYNTH_MOVES legal moves in hash order: the position's stored
 * moves, the same on every visit. Returns how many. */
static int pick_moves(const Position *pos, Key key, Move *out, uint64_t *hash)
{
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(pos, legal);
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint64_t h = mix64(key.lo ^ (key.hi * 31) ^ ((uint64_t)legal[i] * 0x9e3779b97f4a7c15ULL));
		int j = k < SYNTH_MOVES ? k++ : SYNTH_MOVES;
		if (j == SYNTH_MOVES && h >= hash[SYNTH_MOVES - 1]) continue;
		if (j == SYNTH_MOVES) j = SYNTH_MOVES - 1;
		while (j > 0 && hash[j - 1] > h) {
			hash[j] = hash[j - 1];
			out[j] = out[j - 1];
			j--;
		}
		hash[j] = h;
		out[j] = legal[i];
	}
	return k;
}

/* The move that undoes m (a plain board move), or MOVE_NONE. */
static Move reverse_move(Move m)
{
	if (m == MOVE_NONE || move_is_drop(m) || move_is_promote(m)) return MOVE_NONE;
	return move_make(move_to(m), move_from(m), false);
}

static void fill_record(BookRecord *rec, const Position *pos, const Move *moves, int k,
			uint64_t h)
{
	bookdb_record_init(rec, pos);
	rec->flags = BOOKDB_REC_THOUGHT;
	rec->think_depth = (uint8_t)(10 + h % 20);
	int value = (int)((h >> 8) % 601) - 300;
	uint64_t nodes = 100000 + (h >> 20) % 5000000; /* one multi-PV search per position */
	rec->nmoves = (uint16_t)k;
	for (int i = 0; i < k; i++) {
		BookMove *m = &rec->moves[i];
		memset(m, 0, sizeof *m);
		uint64_t r = mix64(h + (uint64_t)i);
		m->move = moves[i];
		m->flags = BOOKDB_MOVE_EVAL;
		m->source = 1;
		m->eval = (int16_t)value;
		m->depth = rec->think_depth;
		m->nodes = nodes;
		value -= 5 + (int)(r >> 40) % 60;
	}
}

int cmd_synth(int argc, char **argv)
{
	const char *book = NULL;
	long long npos = -1;
	unsigned long long seed = 1;
	long long batch = SYNTH_BATCH;
	int quiet = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--positions") && i + 1 < argc) npos = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--quiet")) quiet = 1;
		else if (argv[i][0] != '-' && !book) book = argv[i];
		else {
			joseki_error("synth: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!book || npos < 0 || batch <= 0) {
		joseki_error("usage: joseki synth BOOK --positions N [--seed S] [--batch B] [--quiet]");
		return 2;
	}
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookDBOptions opt = {.settings = "synth"};
	int rc = bookdb_open(&db, book, &opt, err);
	if (rc) {
		joseki_error("%s", err);
		return 1;
	}
	BookWriter *w = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	if (!rec || !pos || (rc = bookdb_writer_new(&w, db, (size_t)batch))) {
		joseki_error("%s: %s", book, rc ? bookdb_strerror(rc) : "out of memory");
		rc = 1;
		goto out;
	}
	uint64_t rng = seed, added = 0;
	int progress = !quiet && isatty(2);
	double t0 = now_ms();
	while ((long long)added < npos) {
		pos_set_startpos(pos);
		int len = 20 + (int)(rng_next(&rng) % (SYNTH_MAX_LINE - 20));
		int undoing = 0; /* the other side undid its move: undo ours to close the cycle */
		for (int ply = 0; ply < len && (long long)added < npos; ply++) {
			Key key = pos_key(pos);
			Move moves[SYNTH_MOVES + 1];
			uint64_t hash[SYNTH_MOVES + 1];
			int k = pick_moves(pos, key, moves, hash);
			if (k == 0) break;
			/* Usually follow a stored move (skewed to the best); sometimes undo. */
			uint64_t r = rng_next(&rng);
			int idx = (int)(r % (uint64_t)(k < 7 ? k : 7));
			if ((r >> 32) % 3 == 0) idx = (int)((r >> 40) % 2 % (uint64_t)k);
			Move next = moves[idx];
			Move rev = MOVE_NONE;
			if ((undoing || (r >> 48) % 12 == 0) && pos_history_len(pos) >= 2) {
				rev = reverse_move(pos->states[pos->nstates - 2].move);
				if (rev != MOVE_NONE && !pos_is_legal(pos, rev)) rev = MOVE_NONE;
			}
			BookTxn *txn;
			const uint8_t *val;
			size_t vlen;
			if ((rc = bookdb_writer_txn(&txn, w))) break;
			rc = bookdb_get_raw(&val, &vlen, txn, key);
			if (rc == BOOKDB_ENOTFOUND) {
				/* New position: store the reversal as the 8th move if used, so the
				 * cycle is an edge of the book graph. */
				if (rev != MOVE_NONE) {
					int j = 0;
					while (j < k && moves[j] != rev) j++;
					if (j == k) {
						if (k == SYNTH_MOVES) k--;
						moves[k++] = rev;
					}
					next = rev;
				}
				fill_record(rec, pos, moves, k, mix64(key.lo ^ seed));
				if ((rc = bookdb_writer_put(w, key, rec))) break;
				added++;
				if (progress && added % 1000000 == 0) {
					double el = (now_ms() - t0) / 1e3;
					fprintf(stderr, "\rsynth: %llu positions, %.0f/s, ETA %.0f s   ",
						(unsigned long long)added, added / el,
						(npos - (double)added) / (added / el));
				}
			} else if (rc) {
				break;
			}
			rc = 0;
			undoing = next == rev && !undoing;
			if (pos_history_len(pos) >= POS_MAX_STATES - 2) break;
			pos_do_move(pos, next);
		}
		if (rc) break;
	}
	if (!rc) rc = bookdb_writer_flush(w);
	if (progress) fputc('\n', stderr);
	if (rc) {
		joseki_error("%s: synth failed after %llu positions: %s", book,
			     (unsigned long long)added, bookdb_strerror(rc));
		rc = 1;
		goto out;
	}
	double ms = now_ms() - t0;
	printf("synth positions %llu time_ms %.0f positions_per_s %.0f\n", (unsigned long long)added,
	       ms, ms > 0 ? added / (ms / 1e3) : 0.0);
	rc = 0;
out:
	bookdb_writer_free(w);
	bookdb_free(db);
	free(rec);
	free(pos);
	return rc;
}

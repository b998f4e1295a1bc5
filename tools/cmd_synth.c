/*
 * joseki synth BOOK --positions N [--seed S] [--batch B] [--quiet]
 *
 * Builds a synthetic analysed book for benchmarks: random legal lines from the
 * start position. Each position stores 8 "analysed" moves chosen by a hash of
 * (key, move), so every visit of a position offers the same moves and lines
 * that reach it by different orders transpose; now and then both sides undo
 * their last moves, which puts repetition cycles into the book graph. Values
 * are plausible (best first, a few dozen centipawns apart, depth 10-29).
 *
 * The positions are generated in memory (deduplicated by key, and against the
 * book when it is not empty), then sorted by key and written in large batches;
 * into an empty book they are appended (LMDB append mode: full pages).
 * --unsorted writes them in generation order through ordinary puts instead,
 * as ingestion does (for the benchmark of random inserts). Ends
 * with one stdout line:
 *   synth positions N time_ms T positions_per_s R insert_ms I inserts_per_s W
 *   insert_cpu_ms C inserts_per_cpu_s WC
 * (T and R for the whole run, I and W for the writing alone, C and WC the same
 * in CPU time of this process, which a busy machine does not distort).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "bookdb/bookdb.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define SYNTH_MOVES 8       /* analysed moves stored per position */
#define SYNTH_MAX_LINE 200  /* plies per random line at most */
#define SYNTH_BATCH 1000000 /* puts per committed transaction */

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

/* The first up-to-SYNTH_MOVES legal moves in hash order: the position's stored
 * moves, the same on every visit. Returns how many. */
static int pick_moves(const Position *pos, Key key, Move *out, uint64_t *hash)
{
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(pos, legal);
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint64_t h =
		    mix64(key.lo ^ (key.hi * 31) ^ ((uint64_t)legal[i] * 0x9e3779b97f4a7c15ULL));
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

static void fill_record(BookRecord *rec, const Position *pos, const Move *moves, int k, uint64_t h)
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
		m->source = BOOKDB_SOURCE_ENGINE;
		m->eval = (int16_t)value;
		m->depth = rec->think_depth;
		m->nodes = nodes;
		value -= 5 + (int)(r >> 40) % 60;
	}
}

/* The generated positions: encoded records in one arena, indexed by a hash set. */
typedef struct {
	Key key;
	uint64_t off;
	uint32_t len;
} SynthEntry;

typedef struct {
	SynthEntry *ents;
	size_t n, cap;
	uint8_t *arena;
	size_t used, acap;
	uint32_t *slots; /* open addressing; 0 empty, else entry index + 1 */
	size_t nslots;
} SynthSet;

static int set_init(SynthSet *s, size_t expect)
{
	memset(s, 0, sizeof *s);
	s->nslots = 1024;
	while (s->nslots < expect * 2) s->nslots *= 2;
	s->slots = calloc(s->nslots, sizeof *s->slots);
	return s->slots ? 0 : -1;
}

static void set_free(SynthSet *s)
{
	free(s->ents);
	free(s->arena);
	free(s->slots);
}

/* The slot of key: where it is, or the empty slot where it would go. */
static size_t set_slot(const SynthSet *s, Key key)
{
	size_t i = (size_t)(key.lo ^ (key.hi >> 7)) & (s->nslots - 1);
	while (s->slots[i] && !key_equal(s->ents[s->slots[i] - 1].key, key))
		i = (i + 1) & (s->nslots - 1);
	return i;
}

static int set_grow(SynthSet *s)
{
	size_t n = s->nslots * 2;
	uint32_t *slots = calloc(n, sizeof *slots);
	if (!slots) return -1;
	free(s->slots);
	s->slots = slots;
	s->nslots = n;
	for (size_t e = 0; e < s->n; e++) s->slots[set_slot(s, s->ents[e].key)] = (uint32_t)(e + 1);
	return 0;
}

static int set_add(SynthSet *s, Key key, const uint8_t *val, size_t len)
{
	if (s->n + 1 >= UINT32_MAX) return -1;
	if ((s->n + 1) * 2 > s->nslots && set_grow(s)) return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1 << 16;
		SynthEntry *e = realloc(s->ents, cap * sizeof *e);
		if (!e) return -1;
		s->ents = e;
		s->cap = cap;
	}
	if (s->used + len > s->acap) {
		size_t cap = s->acap ? s->acap * 2 : 1 << 22;
		while (cap < s->used + len) cap *= 2;
		uint8_t *a = realloc(s->arena, cap);
		if (!a) return -1;
		s->arena = a;
		s->acap = cap;
	}
	memcpy(s->arena + s->used, val, len);
	s->ents[s->n] = (SynthEntry){key, s->used, (uint32_t)len};
	s->used += len;
	s->slots[set_slot(s, key)] = (uint32_t)(s->n + 1);
	s->n++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return key_cmp(((const SynthEntry *)a)->key, ((const SynthEntry *)b)->key);
}

int cmd_synth(int argc, char **argv)
{
	const char *book = NULL;
	long long npos = -1;
	unsigned long long seed = 1;
	long long batch = SYNTH_BATCH;
	int quiet = 0, unsorted = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--positions") && i + 1 < argc)
			npos = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (!strcmp(argv[i], "--unsorted"))
			unsorted = 1;
		else if (argv[i][0] != '-' && !book)
			book = argv[i];
		else {
			joseki_error("synth: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!book || npos < 0 || npos >= UINT32_MAX || batch <= 0) {
		joseki_error("usage: joseki synth BOOK --positions N [--seed S] [--batch B] "
		             "[--unsorted] [--quiet]");
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
	BookTxn *rtxn = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	SynthSet set;
	uint8_t buf[BOOKDB_RECORD_MAX];
	uint64_t existing = 0;
	if (set_init(&set, (size_t)npos) || !rec || !pos) {
		joseki_error("%s: out of memory for %lld positions", book, npos);
		rc = 1;
		goto out;
	}
	if ((rc = bookdb_txn_begin(&rtxn, db, false)) ||
	    (rc = bookdb_count(&existing, rtxn, BOOKDB_POS))) {
		joseki_error("%s: %s", book, bookdb_strerror(rc));
		rc = 1;
		goto out;
	}
	uint64_t rng = seed;
	int progress = !quiet && isatty(2);
	double t0 = clock_ms_f();
	while ((long long)set.n < npos) {
		pos_set_startpos(pos);
		int len = 20 + (int)(rng_next(&rng) % (SYNTH_MAX_LINE - 20));
		int undoing = 0; /* the other side undid its move: undo ours to close the cycle */
		for (int ply = 0; ply < len && (long long)set.n < npos; ply++) {
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
			const uint8_t *val;
			size_t vlen;
			int known = set.slots[set_slot(&set, key)] != 0 ||
			            (existing && bookdb_get_raw(&val, &vlen, rtxn, key) == 0);
			if (!known) {
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
				int n = bookdb_record_encode(buf, sizeof buf, rec);
				if (n < 0 || set_add(&set, key, buf, (size_t)n)) {
					joseki_error("%s: %s", book,
					             n < 0 ? bookdb_strerror(n) : "out of memory");
					rc = 1;
					goto out;
				}
				if (progress && set.n % 1000000 == 0) {
					double el = (clock_ms_f() - t0) / 1e3;
					fprintf(stderr,
					        "\rsynth: %zu positions generated, %.0f/s   ",
					        set.n, set.n / el);
				}
			}
			undoing = next == rev && !undoing;
			if (pos_history_len(pos) >= POS_MAX_STATES - 2) break;
			pos_do_move(pos, next);
		}
	}
	bookdb_txn_abort(rtxn);
	rtxn = NULL;
	if (!unsorted) qsort(set.ents, set.n, sizeof set.ents[0], cmp_entry);
	double t1 = clock_ms_f(), c1 = clock_cpu_ms();
	if ((rc = bookdb_writer_new(&w, db, (size_t)batch))) goto fail;
	for (size_t i = 0; i < set.n; i++) {
		const SynthEntry *e = &set.ents[i];
		rc = existing || unsorted
		         ? bookdb_writer_put_raw(w, e->key, set.arena + e->off, e->len)
		         : bookdb_writer_append(w, e->key, set.arena + e->off, e->len);
		if (rc) goto fail;
		if (progress && (i + 1) % 1000000 == 0)
			fprintf(stderr, "\rsynth: %zu of %zu positions written   ", i + 1, set.n);
	}
	if ((rc = bookdb_writer_flush(w))) goto fail;
	if (progress) fputc('\n', stderr);
	double t2 = clock_ms_f(), c2 = clock_cpu_ms();
	printf("synth positions %zu time_ms %.0f positions_per_s %.0f insert_ms %.0f inserts_per_s "
	       "%.0f "
	       "insert_cpu_ms %.0f inserts_per_cpu_s %.0f\n",
	       set.n, t2 - t0, t2 > t0 ? set.n / ((t2 - t0) / 1e3) : 0.0, t2 - t1,
	       t2 > t1 ? set.n / ((t2 - t1) / 1e3) : 0.0, c2 - c1,
	       c2 > c1 ? set.n / ((c2 - c1) / 1e3) : 0.0);
	rc = 0;
	goto out;
fail:
	if (progress) fputc('\n', stderr);
	joseki_error("%s: synth failed writing %zu positions: %s", book, set.n,
	             bookdb_strerror(rc));
	rc = 1;
out:
	bookdb_txn_abort(rtxn);
	bookdb_writer_free(w);
	bookdb_free(db);
	set_free(&set);
	free(rec);
	free(pos);
	return rc;
}

/* bookdb/synth.c — synthetic analysed books for benchmarks and tests (synth.h). */
#include "bookdb/synth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/record.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "shogi/rng.h"

#define SYNTH_MOVES 8      /* analysed moves stored per position */
#define SYNTH_MAX_LINE 200 /* plies per random line at most */

/* The first up-to-SYNTH_MOVES legal moves in hash order: the position's stored
 * moves, the same on every visit. Returns how many. */
static int pick_moves(const Position *pos, Key key, Move *out, uint64_t *hash)
{
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(pos, legal);
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint64_t h =
		    rng_mix(key.lo ^ (key.hi * 31) ^ ((uint64_t)legal[i] * 0x9e3779b97f4a7c15ULL));
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
		uint64_t r = rng_mix(h + (uint64_t)i);
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
	KeyMap map; /* ents[i].key -> i (the key is an entry's first member) */
} SynthSet;

static int set_init(SynthSet *s, size_t expect)
{
	memset(s, 0, sizeof *s);
	keymap_init(&s->map, sizeof(SynthEntry));
	return keymap_reserve(&s->map, s->ents, expect);
}

static void set_free(SynthSet *s)
{
	free(s->ents);
	free(s->arena);
	keymap_free(&s->map);
}

static bool set_has(const SynthSet *s, Key key)
{
	return keymap_find(&s->map, s->ents, key) != KEYMAP_NONE;
}

static int set_add(SynthSet *s, Key key, const uint8_t *val, size_t len)
{
	if (s->n + 1 >= UINT32_MAX) return -1;
	if (array_grow((void **)&s->ents, &s->cap, s->n + 1, sizeof *s->ents, 1 << 16) ||
	    array_grow((void **)&s->arena, &s->acap, s->used + len, 1, 1 << 22))
		return -1;
	memcpy(s->arena + s->used, val, len);
	s->ents[s->n] = (SynthEntry){key, s->used, (uint32_t)len};
	if (keymap_find_or_insert(&s->map, s->ents, (uint32_t)s->n) < 0) return -1;
	s->used += len;
	s->n++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return key_cmp(((const SynthEntry *)a)->key, ((const SynthEntry *)b)->key);
}

int bookdb_synth(BookSynthStats *st, BookDB *db, const BookSynthOptions *opt, char *err)
{
	memset(st, 0, sizeof *st);
	if (opt->positions >= UINT32_MAX)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
		                  "synth: %llu positions is too many",
		                  (unsigned long long)opt->positions);
	size_t npos = (size_t)opt->positions, batch = opt->batch ? opt->batch : BOOKDB_SYNTH_BATCH;
	uint64_t seed = opt->seed;
	BookWriter *w = NULL;
	BookTxn *rtxn = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	SynthSet set;
	uint8_t buf[BOOKDB_RECORD_MAX];
	uint64_t existing = 0;
	int rc;
	if (set_init(&set, npos) || !rec || !pos) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM,
		                "out of memory for %zu positions", npos);
		goto out;
	}
	if ((rc = bookdb_txn_begin(&rtxn, db, false)) ||
	    (rc = bookdb_count(&existing, rtxn, BOOKDB_POS))) {
		errmsg_set(err, BOOKDB_ERRLEN, rc, "%s", bookdb_strerror(rc));
		goto out;
	}
	uint64_t rng = seed;
	double t0 = clock_ms_f();
	while (set.n < npos) {
		pos_set_startpos(pos);
		int len = 20 + (int)(rng_next(&rng) % (SYNTH_MAX_LINE - 20));
		int undoing = 0; /* the other side undid its move: undo ours to close the cycle */
		for (int ply = 0; ply < len && set.n < npos; ply++) {
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
			int known = set_has(&set, key) ||
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
				fill_record(rec, pos, moves, k, rng_mix(key.lo ^ seed));
				int n = bookdb_record_encode(buf, sizeof buf, rec);
				if (n < 0) {
					rc = errmsg_set(err, BOOKDB_ERRLEN, n, "%s",
					                bookdb_strerror(n));
					goto out;
				}
				if (set_add(&set, key, buf, (size_t)n)) {
					rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM,
					                "out of memory");
					goto out;
				}
				if (opt->progress && set.n % 1000000 == 0)
					opt->progress(opt->progress_ctx, "generated", set.n, npos);
			}
			undoing = next == rev && !undoing;
			if (pos_history_len(pos) >= POS_MAX_STATES - 2) break;
			pos_do_move(pos, next);
		}
	}
	bookdb_txn_abort(rtxn);
	rtxn = NULL;
	if (!opt->unsorted) qsort(set.ents, set.n, sizeof set.ents[0], cmp_entry);
	double t1 = clock_ms_f(), c1 = clock_cpu_ms();
	if ((rc = bookdb_writer_new(&w, db, batch))) goto fail;
	for (size_t i = 0; i < set.n; i++) {
		const SynthEntry *e = &set.ents[i];
		rc = existing || opt->unsorted
		         ? bookdb_writer_put_raw(w, e->key, set.arena + e->off, e->len)
		         : bookdb_writer_append(w, e->key, set.arena + e->off, e->len);
		if (rc) goto fail;
		if (opt->progress && (i + 1) % 1000000 == 0)
			opt->progress(opt->progress_ctx, "written", i + 1, set.n);
	}
	if ((rc = bookdb_writer_flush(w))) goto fail;
	double t2 = clock_ms_f(), c2 = clock_cpu_ms();
	st->positions = set.n;
	st->total_ms = t2 - t0;
	st->insert_ms = t2 - t1;
	st->insert_cpu_ms = c2 - c1;
	rc = 0;
	goto out;
fail:
	errmsg_set(err, BOOKDB_ERRLEN, rc, "synth failed writing %zu positions: %s", set.n,
	           bookdb_strerror(rc));
out:
	bookdb_txn_abort(rtxn);
	bookdb_writer_free(w);
	set_free(&set);
	free(rec);
	free(pos);
	return rc;
}

/* bookdb/synth.c — synthetic analysed books for benchmarks and tests (synth.h). */
#include "bookdb/synth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/record.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/extsort.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/memuse.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "shogi/rng.h"

#define SYNTH_MOVES 8      /* analysed moves stored per position */
#define SYNTH_MAX_LINE 200 /* plies per random line at most */
/* Bytes a position costs the in-memory path at most (entry, key map, record,
 * growth): a round of more positions than budget / this goes through the
 * external sort. */
#define SYNTH_MEM_PER_POS 320
/* Bytes of a write transaction's dirty pages and replay log a put costs: the
 * default batch is cut to budget / this. */
#define SYNTH_TXN_PER_PUT 512

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

/*
 * The random walk: one visit at a time, across rounds. Where a line is and
 * what it does next depend only on the seed and the visits before, never on
 * which positions are already known, so any way of deduplicating the visits
 * gives the same book.
 */
typedef struct {
	Position *pos;
	BookRecord *rec;
	uint64_t rng, seed, visits;
	int len, ply;
	int undoing; /* the other side undid its move: undo ours to close the cycle */
	int in_line;
} Walk;

/* The next visit: its key and its record, encoded into buf (BOOKDB_RECORD_MAX
 * bytes). Returns the record's length, or a negative code. */
static int walk_next(Walk *w, Key *key, uint8_t *buf)
{
	Position *pos = w->pos;
	for (;;) {
		if (!w->in_line) {
			pos_set_startpos(pos);
			w->len = 20 + (int)(rng_next(&w->rng) % (SYNTH_MAX_LINE - 20));
			w->ply = 0;
			w->undoing = 0;
			w->in_line = 1;
		}
		if (w->ply >= w->len) {
			w->in_line = 0;
			continue;
		}
		*key = pos_key(pos);
		Move moves[SYNTH_MOVES + 1];
		uint64_t hash[SYNTH_MOVES + 1];
		int k = pick_moves(pos, *key, moves, hash);
		if (k == 0) {
			w->in_line = 0;
			continue;
		}
		/* Usually follow a stored move (skewed to the best); sometimes undo. */
		uint64_t r = rng_next(&w->rng);
		int idx = (int)(r % (uint64_t)(k < 7 ? k : 7));
		if ((r >> 32) % 3 == 0) idx = (int)((r >> 40) % 2 % (uint64_t)k);
		Move next = moves[idx];
		Move rev = MOVE_NONE;
		if ((w->undoing || (r >> 48) % 12 == 0) && pos_history_len(pos) >= 2) {
			rev = reverse_move(pos->states[pos->nstates - 2].move);
			if (rev != MOVE_NONE && !pos_is_legal(pos, rev)) rev = MOVE_NONE;
		}
		/* The reversal is stored as the 8th move, so that the cycle is an edge
		 * of the book graph when this visit is the position's first. */
		if (rev != MOVE_NONE) {
			int j = 0;
			while (j < k && moves[j] != rev) j++;
			if (j == k) {
				if (k == SYNTH_MOVES) k--;
				moves[k++] = rev;
			}
			next = rev;
		}
		fill_record(w->rec, pos, moves, k, rng_mix(key->lo ^ w->seed));
		int n = bookdb_record_encode(buf, BOOKDB_RECORD_MAX, w->rec);
		w->undoing = next == rev && !w->undoing;
		w->ply++;
		if (pos_history_len(pos) >= POS_MAX_STATES - 2)
			w->in_line = 0;
		else
			pos_do_move(pos, next);
		w->visits++;
		return n;
	}
}

/* The positions of an in-memory round: encoded records in one arena, indexed
 * by a hash set. */
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

/* A run's shared state. */
typedef struct {
	BookDB *db;
	const BookSynthOptions *opt;
	BookSynthStats *st;
	Walk walk;
	uint64_t budget;
	size_t batch;
	uint64_t total; /* positions asked for */
	uint8_t buf[BOOKDB_RECORD_MAX];
	char *err;
} Synth;

static void progress(const Synth *s, const char *phase, uint64_t done, uint64_t total)
{
	if (s->opt->progress && done % 1000000 == 0)
		s->opt->progress(s->opt->progress_ctx, phase, (size_t)done, (size_t)total);
}

/*
 * The last round, in memory: visits until `need` positions the book does not
 * hold are found, each kept with its first visit's record, then written
 * sorted (appended into an empty book) or, unsorted, in the order found.
 */
static int round_in_memory(Synth *s, size_t need, bool empty)
{
	SynthSet set;
	BookWriter *w = NULL;
	BookTxn *rtxn = NULL;
	char *err = s->err;
	int rc;
	if (set_init(&set, need)) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM,
		                "out of memory for %zu positions", need);
		goto out;
	}
	if (!empty && (rc = bookdb_txn_begin(&rtxn, s->db, false))) {
		errmsg_set(err, BOOKDB_ERRLEN, rc, "%s", bookdb_strerror(rc));
		goto out;
	}
	while (set.n < need) {
		Key key;
		int n = walk_next(&s->walk, &key, s->buf);
		if (n < 0) {
			rc = errmsg_set(err, BOOKDB_ERRLEN, n, "%s", bookdb_strerror(n));
			goto out;
		}
		const uint8_t *val;
		size_t vlen;
		if (set_has(&set, key) || (rtxn && bookdb_get_raw(&val, &vlen, rtxn, key) == 0))
			continue;
		if (set_add(&set, key, s->buf, (size_t)n)) {
			rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM, "out of memory");
			goto out;
		}
		progress(s, "generated", s->st->positions + set.n, s->total);
	}
	bookdb_txn_abort(rtxn);
	rtxn = NULL;
	if (!s->opt->unsorted) qsort(set.ents, set.n, sizeof set.ents[0], cmp_entry);
	double t1 = clock_ms_f(), c1 = clock_cpu_ms();
	if ((rc = bookdb_writer_new(&w, s->db, s->batch))) goto fail;
	for (size_t i = 0; i < set.n; i++) {
		const SynthEntry *e = &set.ents[i];
		rc = !empty || s->opt->unsorted
		         ? bookdb_writer_put_raw(w, e->key, set.arena + e->off, e->len)
		         : bookdb_writer_append(w, e->key, set.arena + e->off, e->len);
		if (rc) goto fail;
		progress(s, "written", s->st->positions + i + 1, s->total);
	}
	if ((rc = bookdb_writer_flush(w))) goto fail;
	s->st->insert_ms += clock_ms_f() - t1;
	s->st->insert_cpu_ms += clock_cpu_ms() - c1;
	s->st->positions += set.n;
	rc = 0;
	goto out;
fail:
	errmsg_set(err, BOOKDB_ERRLEN, rc, "synth failed writing %zu positions: %s", set.n,
	           bookdb_strerror(rc));
out:
	bookdb_txn_abort(rtxn);
	bookdb_writer_free(w);
	set_free(&set);
	return rc;
}

/* The external sort's order: the key (a record's first 16 bytes, as a Key). */
static int cmp_visit(const void *a, size_t alen, const void *b, size_t blen, void *ctx)
{
	(void)alen, (void)blen, (void)ctx;
	Key ka, kb;
	memcpy(&ka, a, sizeof ka);
	memcpy(&kb, b, sizeof kb);
	return key_cmp(ka, kb);
}

/*
 * The positions found so far by the sorted rounds, on disk: a file of
 * entries in key order, one a key, each its first visit's number and record
 * (key 16 bytes, visit 8, length 4, the record; native byte order: the file
 * lives only as long as the run). Unlinked at once, so a kill leaves none.
 */
typedef struct {
	Key key;
	uint64_t visit;
	uint32_t len;
} FoundHead;

/* The next entry of a found file: 1, 0 at its end, -1 with errno. */
static int found_read(FILE *f, FoundHead *h, uint8_t *rec)
{
	if (fread(h, sizeof *h, 1, f) != 1) {
		if (ferror(f)) return -1;
		return 0;
	}
	if (h->len > BOOKDB_RECORD_MAX || fread(rec, h->len, 1, f) != 1) {
		if (!ferror(f)) errno = EIO;
		return -1;
	}
	return 1;
}

static int found_write(FILE *f, const FoundHead *h, const void *rec)
{
	if (fwrite(h, sizeof *h, 1, f) != 1 || fwrite(rec, h->len, 1, f) != 1) {
		if (!errno) errno = EIO;
		return -1;
	}
	return 0;
}

/* One bit a visit: set where a position of the found file was first met. */
typedef struct {
	uint64_t *w;
	uint64_t nbits, cap;
} Bits;

static int bits_grow(Bits *b, uint64_t nbits)
{
	uint64_t words = (nbits + 63) / 64;
	if (words > b->cap) {
		uint64_t *n = realloc(b->w, words * sizeof *n);
		if (!n) return -1;
		memset(n + b->cap, 0, (words - b->cap) * sizeof *n);
		b->w = n;
		b->cap = words;
	}
	b->nbits = nbits;
	return 0;
}

/* The number of the visit that found the n-th (1-based) position in visit
 * order: the shortest prefix holding n of them is this plus one visits. */
static uint64_t bits_nth(const Bits *b, uint64_t n)
{
	for (uint64_t i = 0; i < b->cap; i++) {
		uint64_t c = (uint64_t)__builtin_popcountll(b->w[i]);
		if (c < n) {
			n -= c;
			continue;
		}
		uint64_t x = b->w[i];
		for (int j = 0;; j++, x >>= 1)
			if ((x & 1) && --n == 0) return i * 64 + (uint64_t)j;
	}
	return UINT64_MAX;
}

/*
 * A sorted round: `visits` more visits sorted by key through the external
 * sort (stable: a key's first visit first) and merged with the found file
 * (which holds earlier visits, so its entry wins) into a new found file,
 * leaving out what the book holds; each new position's first visit is marked
 * in bits. *found becomes the new file, *nfound its entries.
 */
static int round_sorted(Synth *s, uint64_t visits, BookTxn *rtxn, FILE **found, uint64_t *nfound,
                        Bits *bits)
{
	ExtSort *xs = NULL;
	FILE *out = NULL, *in = *found;
	/* A sorted record: the key, the visit's number, its record. */
	const size_t head = sizeof(Key) + sizeof(uint64_t);
	uint8_t *old = malloc(BOOKDB_RECORD_MAX), *rec = malloc(head + BOOKDB_RECORD_MAX);
	uint64_t n = 0;
	int rc = 0;
	if (!old || !rec || bits_grow(bits, s->walk.visits + visits)) {
		errno = ENOMEM;
		goto sort_fail;
	}
	uint64_t bitbytes = bits->cap * 8, budget = s->budget > bitbytes ? s->budget - bitbytes : 0;
	if (extsort_open(&xs, s->opt->tmpdir, budget, cmp_visit, NULL)) goto sort_fail;
	for (uint64_t i = 0; i < visits; i++) {
		Key key;
		uint64_t v = s->walk.visits;
		int len = walk_next(&s->walk, &key, rec + head);
		if (len < 0) {
			rc = errmsg_set(s->err, BOOKDB_ERRLEN, len, "%s", bookdb_strerror(len));
			goto out;
		}
		memcpy(rec, &key, sizeof key);
		memcpy(rec + sizeof key, &v, sizeof v);
		if (extsort_add(xs, rec, head + (size_t)len)) goto sort_fail;
		progress(s, "generated", i + 1, visits);
	}
	if (extsort_finish(xs) || !(out = extsort_temp_file(s->opt->tmpdir))) goto sort_fail;
	if (in) rewind(in);
	FoundHead oh = {0};
	int ohave = in ? found_read(in, &oh, old) : 0;
	if (ohave < 0) goto sort_fail;
	Key last = {0, 0};
	bool have_last = false;
	for (;;) {
		const void *p;
		size_t len;
		int got = extsort_next(xs, &p, &len);
		if (got < 0) goto sort_fail;
		FoundHead h;
		memset(&h, 0, sizeof h); /* the padding too: it is written */
		if (got) memcpy(&h.key, p, sizeof h.key);
		/* The found entries before this key go over as they are. */
		while (ohave && (!got || key_cmp(oh.key, h.key) < 0)) {
			if (found_write(out, &oh, old)) goto sort_fail;
			n++;
			if ((ohave = found_read(in, &oh, old)) < 0) goto sort_fail;
		}
		if (!got) break;
		if (have_last && key_equal(h.key, last)) continue; /* a later visit */
		last = h.key;
		have_last = true;
		if (ohave && key_equal(oh.key, h.key)) continue; /* an earlier round's */
		const uint8_t *val;
		size_t vlen;
		if (rtxn) {
			int r = bookdb_get_raw(&val, &vlen, rtxn, h.key);
			if (r == 0) continue; /* the book holds it */
			if (r != BOOKDB_ENOTFOUND) {
				rc = errmsg_set(s->err, BOOKDB_ERRLEN, r, "%s", bookdb_strerror(r));
				goto out;
			}
		}
		memcpy(&h.visit, (const uint8_t *)p + sizeof h.key, sizeof h.visit);
		h.len = (uint32_t)(len - head);
		if (found_write(out, &h, (const uint8_t *)p + head)) goto sort_fail;
		bits->w[h.visit / 64] |= 1ULL << (h.visit % 64);
		n++;
	}
	if (fflush(out)) goto sort_fail;
	ExtSortStats xst;
	extsort_stats(xs, &xst);
	s->st->sort_runs += xst.runs;
	s->st->sort_disk_bytes += xst.disk_bytes;
	if (in) fclose(in);
	*found = out;
	out = NULL;
	*nfound = n;
	goto out;
sort_fail:
	rc = errmsg_set(s->err, BOOKDB_ERRLEN,
	                errno == ENOSPC   ? BOOKDB_ENOSPC
	                : errno == ENOMEM ? BOOKDB_ENOMEM
	                                  : BOOKDB_EIO,
	                "synth: sorting in %s: %s",
	                s->opt->tmpdir ? s->opt->tmpdir : "the temporary directory",
	                strerror(errno));
out:
	if (out) fclose(out);
	extsort_free(xs);
	free(old);
	free(rec);
	return rc;
}
/* Writes the found file's positions first met at visit `cutoff` or before:
 * appended into an empty book, put otherwise. */
static int write_found(Synth *s, FILE *found, uint64_t cutoff, bool empty)
{
	BookWriter *w = NULL;
	uint8_t *rec = malloc(BOOKDB_RECORD_MAX);
	uint64_t written = 0;
	double t1 = clock_ms_f(), c1 = clock_cpu_ms();
	int rc;
	if (!rec) {
		rc = errmsg_set(s->err, BOOKDB_ERRLEN, BOOKDB_ENOMEM, "out of memory");
		goto out;
	}
	rewind(found);
	if ((rc = bookdb_writer_new(&w, s->db, s->batch))) goto fail;
	for (;;) {
		FoundHead h;
		int got = found_read(found, &h, rec);
		if (got < 0) {
			rc = errmsg_set(s->err, BOOKDB_ERRLEN, BOOKDB_EIO,
			                "synth: reading back: %s", strerror(errno));
			goto out;
		}
		if (!got) break;
		if (h.visit > cutoff) continue;
		rc = empty ? bookdb_writer_append(w, h.key, rec, h.len)
		           : bookdb_writer_put_raw(w, h.key, rec, h.len);
		if (rc) goto fail;
		written++;
		progress(s, "written", written, s->total);
	}
	if ((rc = bookdb_writer_flush(w))) goto fail;
	s->st->insert_ms += clock_ms_f() - t1;
	s->st->insert_cpu_ms += clock_cpu_ms() - c1;
	s->st->positions += written;
	goto out;
fail:
	errmsg_set(s->err, BOOKDB_ERRLEN, rc, "synth failed writing %llu positions: %s",
	           (unsigned long long)written, bookdb_strerror(rc));
out:
	bookdb_writer_free(w);
	free(rec);
	return rc;
}

/* The sorted rounds, then the write. */
static int run_sorted(Synth *s, bool empty)
{
	uint64_t want = s->total, nfound = 0;
	FILE *found = NULL;
	Bits bits = {0};
	BookTxn *rtxn = NULL;
	int rc = 0;
	if (!empty && (rc = bookdb_txn_begin(&rtxn, s->db, false))) {
		errmsg_set(s->err, BOOKDB_ERRLEN, rc, "%s", bookdb_strerror(rc));
		goto out;
	}
	/* A few repeats more than the positions wanted: one round, as a rule. */
	uint64_t visits = want + want / 8 + 64;
	for (;;) {
		s->st->rounds++;
		if ((rc = round_sorted(s, visits, rtxn, &found, &nfound, &bits))) goto out;
		if (nfound >= want) break;
		uint64_t per = nfound ? s->walk.visits * 1024 / nfound : 2048; /* visits a find */
		visits = (want - nfound) * per / 1024 * 5 / 4 + 64;
	}
	bookdb_txn_abort(rtxn);
	rtxn = NULL;
	rc = write_found(s, found, bits_nth(&bits, want), empty);
out:
	bookdb_txn_abort(rtxn);
	if (found) fclose(found);
	free(bits.w);
	return rc;
}

int bookdb_synth(BookSynthStats *st, BookDB *db, const BookSynthOptions *opt, char *err)
{
	memset(st, 0, sizeof *st);
	if (opt->positions >= UINT32_MAX)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
		                  "synth: %llu positions is too many",
		                  (unsigned long long)opt->positions);
	Synth *s = calloc(1, sizeof *s);
	BookTxn *rtxn = NULL;
	uint64_t existing = 0;
	int rc;
	if (!s || !(s->walk.pos = malloc(sizeof *s->walk.pos)) ||
	    !(s->walk.rec = malloc(sizeof *s->walk.rec))) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM, "out of memory");
		goto out;
	}
	s->db = db;
	s->opt = opt;
	s->st = st;
	s->err = err;
	s->total = opt->positions;
	s->walk.rng = s->walk.seed = opt->seed;
	s->budget = opt->memory ? opt->memory : memuse_default_budget();
	s->batch = opt->batch;
	if (!s->batch) {
		uint64_t fit = s->budget / SYNTH_TXN_PER_PUT;
		s->batch = fit < BOOKDB_SYNTH_BATCH ? (size_t)(fit ? fit : 1) : BOOKDB_SYNTH_BATCH;
	}
	if ((rc = bookdb_txn_begin(&rtxn, db, false)) ||
	    (rc = bookdb_count(&existing, rtxn, BOOKDB_POS))) {
		errmsg_set(err, BOOKDB_ERRLEN, rc, "%s", bookdb_strerror(rc));
		goto out;
	}
	bookdb_txn_abort(rtxn);
	rtxn = NULL;
	double t0 = clock_ms_f();
	if (opt->positions == 0) {
		rc = 0;
	} else if (opt->unsorted || opt->positions <= s->budget / SYNTH_MEM_PER_POS) {
		st->rounds = 1;
		rc = round_in_memory(s, (size_t)opt->positions, existing == 0);
	} else {
		rc = run_sorted(s, existing == 0);
	}
	if (rc) goto out;
	st->visits = s->walk.visits;
	st->total_ms = clock_ms_f() - t0;
out:
	bookdb_txn_abort(rtxn);
	if (s) {
		free(s->walk.pos);
		free(s->walk.rec);
	}
	free(s);
	return rc;
}

/*
 * minimax/export.c — YaneuraOu and Apery book export, within a memory budget.
 *
 * A book may be larger than memory: the export holds nothing per record of
 * the whole book. One pass reads the records in key order through an LMDB
 * cursor (worker threads decode them), and everything after it — the ponder
 * and depth field a move takes from the position it leads to, the order of
 * the text blocks by their SFEN line, the order of Apery's entries — goes
 * through external sorts (shogi/extsort.h) under ExportOptions.memory: in
 * memory while they fit, sorted runs on disk beside OUT when not. The
 * streams are described above pass_record. OUT is written to OUT.tmp and
 * renamed at the end.
 */
#include "minimax/export.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minimax/export_priv.h"
#include "shogi/apery.h"
#include "shogi/be64.h"
#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/db2016.h"
#include "shogi/errmsg.h"
#include "bookdb/check.h"
#include "shogi/movegen.h"
#include "shogi/grow.h"
#include "shogi/extsort.h"
#include "shogi/keymap.h"
#include "shogi/memuse.h"
#include "shogi/zobrist.h"
#include "bookdb/query.h"
#include "minimax/bookmm.h"
#include "minimax/graph.h"
#include "shogi/notation.h"

const char *export_strerror(int code)
{
	switch (code) {
	case EXPORT_OK:
		return "success";
	case EXPORT_EIO:
		return "the output could not be written";
	case EXPORT_ENOMEM:
		return "out of memory";
	case EXPORT_EBOOK:
		return "the book could not be read";
	case EXPORT_EINVAL:
		return "bad option";
	}
	return "unknown export error";
}

/* One entry of an Apery book, with what orders it: its key, then the
 * position it comes from (to tell two positions one key names), then the
 * move's rank (best first). */
typedef struct {
	uint64_t key, pos_hi;
	uint32_t rank;
	uint16_t move, count;
	int32_t score;
} AperyOut;

static int cmp_apery(const void *a, const void *b)
{
	/* Copied: the sorter's items are 4-byte aligned, the struct wants 8. */
	AperyOut x, y;
	memcpy(&x, a, sizeof x);
	memcpy(&y, b, sizeof y);
	if (x.key != y.key) return x.key < y.key ? -1 : 1;
	if (x.pos_hi != y.pos_hi) return x.pos_hi < y.pos_hi ? -1 : 1;
	return (x.rank > y.rank) - (x.rank < y.rank);
}

#define fail errmsg_set

/* The move a minimaxed record's line is played with, as export_pick ranks
 * first (MOVE_NONE if none has a value): the best of its moves with a value
 * (not one marked avoided, unless opt->with_avoided), or the best preferred
 * one within its window of that. */
static Move best_of(const BookRecord *r, const ExportOptions *opt)
{
	int best = -1, pref = -1;
	/* Nearly no record lists a move and its promotion: one scan says so. */
	bool pairs = bookdb_record_has_promotion_pair(r);
	/* Two rounds: the best, then the best preferred within its window. */
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < r->nmoves; k++) {
			const BookMove *m = &r->moves[k];
			if (m->value == BOOKMM_NOVALUE || m->move == MOVE_NONE ||
			    ((m->flags & BOOKDB_MOVE_AVOIDED) && !opt->with_avoided) ||
			    (pairs && bookdb_move_declined(r, m)))
				continue;
			if (round == 1 &&
			    (best < 0 || !(r->flags & BOOKDB_REC_PREFER) ||
			     !(m->flags & BOOKDB_MOVE_PREFERRED) ||
			     !bookdb_prefer_fits(m->value, r->moves[best].value, m->prefer_window)))
				continue;
			int *b = round ? &pref : &best;
			if (*b < 0 || mm_vd_better((MmVd){m->value, m->dist},
			                           (MmVd){r->moves[*b].value, r->moves[*b].dist}))
				*b = k;
		}
	return pref >= 0 ? r->moves[pref].move : best >= 0 ? r->moves[best].move : MOVE_NONE;
}

static bool out_better(const OutMove *a, const OutMove *b, bool minimax)
{
	if (minimax) {
		MmVd x = {(int16_t)a->value, (uint16_t)a->depth},
		     y = {(int16_t)b->value, (uint16_t)b->depth};
		return mm_vd_better(x, y);
	}
	if (a->value != b->value) return a->value > b->value;
	return a->depth > b->depth;
}

/* The search depth of rec's analysis: its think depth, else its deepest
 * analysed move's, else 0. */
static int analysis_depth(const BookRecord *rec)
{
	if ((rec->flags & BOOKDB_REC_THOUGHT) && rec->think_depth) return rec->think_depth;
	int d = 0;
	for (int k = 0; k < rec->nmoves; k++)
		if (bookdb_move_analysed(&rec->moves[k]) && rec->moves[k].depth > d)
			d = rec->moves[k].depth;
	return d;
}

/* The count field of the moves kept (ExportOptions.count). */
static void set_counts(OutMove *out, size_t n, const BookRecord *rec, const ExportOptions *opt)
{
	uint32_t below = 1;
	for (size_t k = n; k-- > 0;) {
		const BookMove *m = &rec->moves[out[k].k];
		uint32_t games = (m->flags & BOOKDB_MOVE_STATS) ? m->count : 0;
		uint32_t c = opt->count == EXPORT_COUNT_ONE ? 1 : games ? games : 1;
		/* VALUE: never fewer than the move ranked below it. */
		if (opt->count == EXPORT_COUNT_VALUE && c < below) c = below;
		out[k].count = c;
		below = c;
	}
}

void export_child_info(ExportChild *c, const BookRecord *child, const ExportOptions *opt)
{
	c->best = (child->flags & BOOKDB_REC_MINIMAX) ? best_of(child, opt) : MOVE_NONE;
	c->depth = analysis_depth(child);
}

void export_child_apply(OutMove *o, const ExportChild *c, unsigned rec_flags,
                        const ExportOptions *opt)
{
	o->ponder = c->best;
	/* Backed up: the depth of the analysis of the position it leads to,
	 * whose value it is (its deepest move's when the record does not say). */
	if (opt->depth_field == EXPORT_DEPTH_SEARCH && !(rec_flags & BOOKDB_REC_GAMES))
		o->field = c->depth;
}

size_t export_pick(OutMove *out, const BookRecord *rec, const Position *pos, BookTxn *txn,
                   BookRecord *child, const ExportOptions *opt, unsigned how)
{
	bool minimax = rec->flags & BOOKDB_REC_MINIMAX;
	bool pairs = bookdb_record_has_promotion_pair(rec);
	size_t n = 0;
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *m = &rec->moves[k];
		if (m->move == MOVE_NONE) continue;
		if ((m->flags & BOOKDB_MOVE_AVOIDED) && !opt->with_avoided) continue;
		/* A pawn, bishop or rook left unpromoted beside its valued promotion. */
		if (pairs && bookdb_move_declined(rec, m)) continue;
		if (opt->min_games &&
		    (!(m->flags & BOOKDB_MOVE_STATS) || m->count < opt->min_games))
			continue;
		OutMove o = {m->move, MOVE_NONE, 0, 0, 0, 1, k};
		bool shallow = (m->flags & BOOKDB_MOVE_EVAL) && m->depth < opt->min_depth;
		if (minimax) {
			if (m->value == BOOKMM_NOVALUE) continue;
			/* A value backed up through a child is not the engine's. */
			if (shallow && m->dist == 0) continue;
			o.value = m->value;
			o.depth = m->dist;
			/* A leaf's own analysis (not a game comment, nor games alone). */
			o.field = opt->depth_field == EXPORT_DEPTH_DISTANCE ? m->dist
			          : m->dist == 0 && !(rec->flags & BOOKDB_REC_GAMES) &&
			                  bookdb_move_analysed(m)
			              ? m->depth
			              : 0;
		} else {
			/* Before minimax: the move's own analysis, never a game comment
			 * (and none in a games-only book). */
			if (!bookdb_move_valued(rec, m) || shallow) continue;
			o.value = m->eval;
			o.depth = o.field = m->depth;
		}
		size_t p = n++;
		while (p > 0 && out_better(&o, &out[p - 1], minimax)) {
			out[p] = out[p - 1];
			p--;
		}
		out[p] = o;
	}
	if (n == 0) return 0;
	/* A preferred move within its window of the best is the one played. */
	for (size_t p = 1; p < n && (rec->flags & BOOKDB_REC_PREFER); p++) {
		const BookMove *m = &rec->moves[out[p].k];
		if (!(m->flags & BOOKDB_MOVE_PREFERRED) ||
		    !bookdb_prefer_fits(out[p].value, out[0].value, m->prefer_window))
			continue;
		OutMove pm = out[p];
		if (how & PICK_KEEP_ABOVE) {
			memmove(&out[1], &out[0], p * sizeof *out);
		} else {
			memmove(&out[1], &out[p + 1], (n - p - 1) * sizeof *out);
			n -= p;
		}
		out[0] = pm;
		break;
	}
	/* A move valued as a preferred first one is written one lower (as a tie
	 * by another route is), so that an engine that plays the highest value
	 * plays the preferred move. */
	if (!(how & PICK_KEEP_ABOVE) && (rec->flags & BOOKDB_REC_PREFER) &&
	    (rec->moves[out[0].k].flags & BOOKDB_MOVE_PREFERRED))
		for (size_t k = 1; k < n; k++)
			if (out[k].value >= out[0].value) out[k].value = out[0].value - 1;
	size_t keep = n;
	if (!(how & PICK_ALL) && opt->moves != EXPORT_MOVES_ALL) {
		int floor = out[0].value - (opt->moves == EXPORT_MOVES_WINDOW ? opt->window : 0);
		keep = 1;
		while (opt->moves == EXPORT_MOVES_WINDOW && keep < n && out[keep].value >= floor)
			keep++;
	}
	if (minimax && txn)
		for (size_t k = 0; k < keep; k++) {
			if (!export_needs_child(rec->flags, &out[k])) continue;
			if (bookdb_get_moves(child, txn, pos_key_after(pos, out[k].move)) != 0)
				continue;
			ExportChild c;
			export_child_info(&c, child, opt);
			export_child_apply(&out[k], &c, rec->flags, opt);
		}
	set_counts(out, keep, rec, opt);
	return keep;
}

int export_root_keys(Key *keys, const ExportOptions *opt, char *err)
{
	Position *pos = malloc(sizeof *pos);
	if (!pos) return fail(err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
	char perr[SHOGI_ERRLEN];
	for (int r = 0; r < opt->nroots; r++) {
		if (position_parse(pos, opt->roots[r], perr) < 0) {
			free(pos);
			return fail(err, EXPORT_ERRLEN, EXPORT_EINVAL, "root %d '%s': %s", r + 1,
			            opt->roots[r], perr);
		}
		keys[r] = pos_key(pos);
	}
	free(pos);
	return 0;
}

/* What YaneuraOu's defaults would leave out of this position's best move
 * (min_ply: the record's; white: White to move). */
static void yo_count(ExportStats *st, int min_ply, bool white, const OutMove *best)
{
	int side = white;
	int limit = side ? EXPORT_YO_WHITE_LIMIT : EXPORT_YO_BLACK_LIMIT;
	if (st->positions == 0) { /* the first: the extremes start here */
		st->depth_lo = best->field;
		st->value_lo[0] = st->value_lo[1] = INT_MAX;
	}
	if (best->field < st->depth_lo) st->depth_lo = best->field;
	if (best->value < st->value_lo[side]) st->value_lo[side] = best->value;
	if (min_ply > st->ply_hi) st->ply_hi = min_ply;
	st->yo_shallow += best->field < EXPORT_YO_DEPTH_LIMIT;
	st->yo_below[side] += best->value < limit;
	st->yo_late += min_ply > EXPORT_YO_BOOK_MOVES;
}

/*
 * The pass over the book, in key order through one cursor, and the sorts
 * that follow it. Every stream between them is an external sort (shogi/
 * extsort.h) of byte records under a share of the budget: in memory while
 * it fits, sorted runs on disk beside OUT when not. Integers that order a
 * record are big-endian at its start, so that its order is memcmp's over
 * that prefix (extsort_cmp_bytes, the prefix length as the context):
 *
 *   child   every record a move's line may take something from: key(16)
 *           best move(2) analysis depth(2)                   by key
 *   req     a move whose value is backed up through the position it leads
 *           to: that position's key(16) the record's ordinal(8) the move's
 *           slot(1)                                           by key
 *   blk     a position to write, its moves not yet finished: ordinal(8)
 *           min_ply(2) flags(1) White(1) moves(2) SFEN line length(2),
 *           the SFEN line (with its newline), the OutMoves   by ordinal
 *   ans     what a request found: ordinal(8) slot(1) best move(2) depth(2)
 *                                                             by ordinal
 *   sfen    a finished text block, its SFEN line first: by its bytes
 *           (extsort_cmp_tail), which is by the SFEN line (the newline
 *           sorts before any character of a line: a prefix first)
 *   apery   an Apery book's entries (AperyOut)     by cmp_apery
 *
 * The ordinal numbers the records in key order. The requests meet the
 * children in one merge (a sort-merge join: no record is looked up), the
 * answers meet the positions in another, and the finished blocks are sorted
 * by their SFEN line into OUT.tmp (written from both ends at once, the back
 * half by a thread of its own). Workers (one a core) read the records the
 * cursor hands them in batches and add what a batch gives under one lock;
 * everything they add is ordered by its content, so the output is the same
 * for any number of workers and any budget.
 */
enum { S_CHILD, S_REQ, S_BLK, S_ANS, S_SFEN, S_APERY, S_N };

#define EXPORT_MAX_THREADS 16
#define BATCH 2048
#define RING 8
#define PROGRESS_EVERY 65536

typedef struct {
	Key key;
	const uint8_t *val;
	size_t len;
	bool in; /* reached from the roots (or no roots given) */
} Item;

typedef struct {
	Item it[BATCH];
	size_t n;
	uint64_t ord; /* the ordinal of it[0] */
} Batch;

typedef struct {
	const ExportOptions *opt;
	bool apery;
	ExtSort *reach; /* with roots: the keys reached, sorted, finished (else NULL) */
	ExtSort *s[S_N];
	pthread_mutex_t sm; /* the sorters and the totals */
	pthread_mutex_t qm; /* the queue of batches */
	pthread_cond_t qput, qtake;
	Batch *ring[RING];
	size_t qhead, qn;
	bool eof;
	atomic_int failed;
	int rc;                  /* the first failure: EXPORT_E* */
	int err_no;              /* EXPORT_EIO, EXPORT_ENOMEM: errno */
	char why[BOOKDB_ERRLEN]; /* EXPORT_EBOOK: the record that is not sound */
	ExportStats st;          /* positions, moves, minimaxed, from_games (apery: entries) */
	atomic_size_t done;
	size_t total;
} Pass;

static int cmp_apery_rec(const void *a, size_t alen, const void *b, size_t blen, void *ctx)
{
	(void)alen;
	(void)blen;
	(void)ctx;
	return cmp_apery(a, b);
}

/* Records a failure of the pass (the first one counts). */
static void pass_fail(Pass *ps, int rc, const char *why)
{
	pthread_mutex_lock(&ps->sm);
	if (!ps->rc) {
		ps->rc = rc;
		ps->err_no = errno;
		if (why) snprintf(ps->why, sizeof ps->why, "%s", why);
	}
	pthread_mutex_unlock(&ps->sm);
	atomic_store(&ps->failed, 1);
}

/* Adds a record to sorter i (the lock held). */
static int put(Pass *ps, int i, const void *rec, size_t len)
{
	if (extsort_add(ps->s[i], rec, len) == 0) return 0;
	int e = errno;
	pthread_mutex_unlock(&ps->sm);
	errno = e;
	pass_fail(ps, e == ENOMEM ? EXPORT_ENOMEM : EXPORT_EIO, NULL);
	pthread_mutex_lock(&ps->sm);
	return -1;
}

/* Adds key k to s as 16 big-endian bytes (memcmp order: key order). */
static int add_key(ExtSort *s, Key k)
{
	uint8_t b[16];
	key_to_bytes(k, b);
	return extsort_add(s, b, sizeof b);
}

static int keys_open(ExtSort **s, const char *dir, uint64_t budget)
{
	return extsort_open(s, dir, budget, extsort_cmp_bytes, (void *)(uintptr_t)16);
}

/* The smaller of two sorted streams' heads (either may be exhausted: its
 * code not 1), copied into k (a head is valid only until its stream's next
 * record is read), advancing that one; 1, 0 at the end of both, < 0. */
static int next_of_two(ExtSort *a, const uint8_t **ak, int *ha, ExtSort *b, const uint8_t **bk,
                       int *hb, uint8_t k[16])
{
	size_t len;
	if (*ha < 0 || *hb < 0) return -1;
	if (*ha != 1 && *hb != 1) return 0;
	bool from_a = *hb != 1 || (*ha == 1 && memcmp(*ak, *bk, 16) < 0);
	if (from_a) {
		memcpy(k, *ak, 16);
		*ha = extsort_next(a, (const void **)ak, &len);
	} else {
		memcpy(k, *bk, 16);
		*hb = extsort_next(b, (const void **)bk, &len);
	}
	return 1;
}

/* Adds what sorter s wrote to disk to *spilled. */
static void count_spill(const ExtSort *s, uint64_t *spilled)
{
	ExtSortStats st;
	extsort_stats(s, &st);
	*spilled += st.disk_bytes;
}

/* The walk from the roots (reach_from_roots): the keys visited, sorted as
 * of the last merge (v) and met since (vn, unsorted), a filter of them all,
 * and the keys a filter thought visited, to be looked up (doubt). */
typedef struct {
	ExtSort *v, *vn, *doubt;
	uint64_t *filter, mask;
	const char *dir;
	uint64_t share, *spilled;
} Walk;

/* Key k, in the book, met by the walk: a key the filter has never seen is
 * new (visited now, into the next level *next); one it may have seen waits
 * in doubt for the next merge. 0, or -1 with errno. */
static int walk_meet(Walk *w, ExtSort *next, Key k)
{
	if (!w->filter || keyfilter3_maybe(w->filter, w->mask, k)) return add_key(w->doubt, k);
	keyfilter3_add(w->filter, w->mask, k);
	return add_key(w->vn, k) < 0 || add_key(next, k) < 0 ? -1 : 0;
}

/*
 * The keys met since the last merge (vn, none in v) and those in doubt
 * (sorted, with repeats) merged into v in one pass: the ones in doubt that
 * were not visited after all into *f (the next level, sorted, once each,
 * finished) and into v too. vn and doubt start empty again. 0, or -1 with
 * errno.
 */
static int walk_merge(Walk *w, ExtSort **f)
{
	ExtSort *nv = NULL, *nf = NULL, *c = w->doubt;
	*f = NULL;
	if (extsort_finish(c) < 0 || extsort_finish(w->vn) < 0 ||
	    keys_open(&nv, w->dir, w->share) < 0 || keys_open(&nf, w->dir, w->share) < 0)
		goto fail;
	const uint8_t *ck = NULL, *vk = NULL, *ak = NULL;
	size_t len;
	uint8_t last[16], wk[16];
	bool any = false;
	/* wk: the next of v and vn, which together are the keys visited. */
	int hc = extsort_next(c, (const void **)&ck, &len),
	    hv = extsort_next(w->v, (const void **)&vk, &len),
	    ha = extsort_next(w->vn, (const void **)&ak, &len),
	    hw = next_of_two(w->v, &vk, &hv, w->vn, &ak, &ha, wk);
	while (hc == 1 || hw == 1) {
		int cmp = hc != 1 ? 1 : hw != 1 ? -1 : memcmp(ck, wk, 16);
		if (cmp > 0) {
			if (extsort_add(nv, wk, 16) < 0) goto fail;
			hw = next_of_two(w->v, &vk, &hv, w->vn, &ak, &ha, wk);
			continue;
		}
		if (cmp < 0 && (!any || memcmp(last, ck, 16))) {
			memcpy(last, ck, 16);
			any = true;
			if (extsort_add(nf, ck, 16) < 0 || extsort_add(nv, ck, 16) < 0) goto fail;
		}
		hc = extsort_next(c, (const void **)&ck, &len);
	}
	if (hc < 0 || hw < 0 || extsort_finish(nv) < 0 || extsort_finish(nf) < 0) goto fail;
	count_spill(w->v, w->spilled);
	count_spill(w->vn, w->spilled);
	count_spill(c, w->spilled);
	extsort_free(w->v);
	extsort_free(w->vn);
	extsort_free(c);
	w->v = nv;
	w->vn = w->doubt = NULL;
	*f = nf;
	return keys_open(&w->vn, w->dir, w->share) < 0 || keys_open(&w->doubt, w->dir, w->share) < 0
	           ? -1
	           : 0;
fail:
	extsort_free(nv);
	extsort_free(nf);
	return -1;
}

/*
 * With roots: the keys of the records a game from them reaches through the
 * moves written (the other side's: every reply written, PICK_ALL), up to
 * opt->max_ply, into *out (sorted, finished for reading; NULL without roots)
 * and their number into *n. Level by level, within budget: a level's records
 * are looked up in key order, then the positions their moves lead to, sorted,
 * and each of those in the book is new unless a filter of the keys visited (a
 * quarter of the budget, 16 bits a key of the book's nrecords at most) says
 * it may have been met.
 * Those wait; when the levels run out they are merged with the keys visited
 * (sorted runs on disk beside OUT when they do not fit), and the ones that
 * were not visited after all start the next levels. So the visited keys are
 * merged a few times in all, not once a level: a walk 200 plies deep
 * merged them 200 times. 0, or a negative EXPORT_E* code with err.
 */
static int reach_from_roots(ExtSort **out, size_t *n, uint64_t *spilled, BookTxn *txn,
                            const ExportOptions *opt, const char *dir, uint64_t budget,
                            uint64_t nrecords, char *err)
{
	*out = NULL;
	*n = 0;
	if (opt->nroots <= 0) return 0;
	/* The filter, when a quarter of the budget gives it 8 bits a key or
	 * more (an absent key passes it with probability 2-5 %): else every
	 * key met waits for a merge, one a level, and the sorters have the
	 * room. */
	Walk w = {.dir = dir, .share = budget / 4, .spilled = spilled};
	unsigned lw = keyfilter3_log2(nrecords ? (size_t)nrecords : 1);
	while (lw > 4 && ((uint64_t)8 << lw) > budget / 4) lw--;
	bool filtered = ((uint64_t)64 << lw) >= 8 * nrecords;
	if (filtered) w.share = budget / 8;
	w.mask = ((uint64_t)1 << lw) - 1;
	ExtSort *c = NULL, *next = NULL, *cand = NULL;
	Key *roots = malloc((size_t)opt->nroots * sizeof *roots);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	OutMove *mv = malloc(BOOKDB_MAX_MOVES * sizeof *mv);
	w.filter = filtered ? calloc((size_t)w.mask + 1, sizeof *w.filter) : NULL;
	int rc = 0;
	const uint8_t *val;
	size_t len;
	if (!roots || !rec || !pos || !mv || (filtered && !w.filter)) {
		errno = ENOMEM;
		goto sys;
	}
	if ((rc = export_root_keys(roots, opt, err)) < 0) goto done;
	if (keys_open(&w.v, dir, w.share) < 0 || extsort_finish(w.v) < 0 ||
	    keys_open(&w.vn, dir, w.share) < 0 || keys_open(&w.doubt, dir, w.share) < 0 ||
	    keys_open(&c, dir, w.share) < 0)
		goto sys;
	for (int r = 0; r < opt->nroots; r++) {
		if (bookdb_get_raw(&val, &len, txn, roots[r]) != 0) {
			rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL,
			          "root %d '%s' is not in the book", r + 1, opt->roots[r]);
			goto done;
		}
		if (walk_meet(&w, c, roots[r]) < 0) goto sys;
	}
	for (;;) {
		/* c: a level's keys, each new (visited once); cand: the positions
		 * their moves lead to, looked up in the book in key order once the
		 * level is read (at random, each would be a read of the disk on a
		 * book larger than memory). */
		if (extsort_finish(c) < 0 || keys_open(&next, dir, w.share) < 0 ||
		    keys_open(&cand, dir, w.share) < 0)
			goto sys;
		const uint8_t *fk;
		int h;
		uint64_t level = 0;
		for (h = extsort_next(c, (const void **)&fk, &len); h == 1;
		     h = extsort_next(c, (const void **)&fk, &len)) {
			level++;
			Key key = key_from_bytes(fk);
			/* (A key of a merge's doubt is not in the filter yet.) */
			if (w.filter) keyfilter3_add(w.filter, w.mask, key);
			if (bookdb_get_raw(&val, &len, txn, key) != 0 ||
			    bookdb_record_decode(rec, val, len) < 0)
				continue;
			if (opt->max_ply > 0 && rec->min_ply >= opt->max_ply) continue;
			if (bookdb_record_position(pos, rec, NULL) < 0) continue;
			unsigned how = export_side_ours(opt, pos->side) ? 0 : PICK_ALL;
			size_t m = export_pick(mv, rec, pos, NULL, NULL, opt, how);
			for (size_t j = 0; j < m; j++)
				if (add_key(cand, pos_key_after(pos, mv[j].move)) < 0) goto sys;
		}
		if (h < 0 || extsort_finish(cand) < 0) goto sys;
		uint8_t last[16];
		bool any = false;
		for (h = extsort_next(cand, (const void **)&fk, &len); h == 1;
		     h = extsort_next(cand, (const void **)&fk, &len)) {
			if (any && !memcmp(last, fk, 16)) continue;
			memcpy(last, fk, 16);
			any = true;
			Key k = key_from_bytes(fk);
			if (bookdb_get_raw(&val, &len, txn, k) == 0 && walk_meet(&w, next, k) < 0)
				goto sys;
		}
		if (h < 0) goto sys;
		count_spill(cand, spilled);
		count_spill(c, spilled);
		extsort_free(cand);
		cand = NULL;
		extsort_free(c);
		c = next;
		next = NULL;
		if (level) continue;
		/* The levels ran out: the keys in doubt that were not visited
		 * start the next ones; none: the walk is over. */
		extsort_free(c);
		c = NULL;
		if (walk_merge(&w, &c) < 0) goto sys;
		/* (c comes finished: finishing it again at the loop's top is a no-op.) */
		ExtSortStats fs;
		extsort_stats(c, &fs);
		if (!fs.records) break;
	}
	ExtSortStats st;
	extsort_stats(w.v, &st);
	*n = (size_t)st.records;
	*out = w.v;
	w.v = NULL;
	goto done;
sys:
	rc = errno == ENOMEM ? fail(err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory")
	                     : fail(err, EXPORT_ERRLEN, EXPORT_EIO,
	                            "the walk from the roots: sorted runs beside the output: %s",
	                            strerror(errno ? errno : EIO));
done:
	extsort_free(w.v);
	extsort_free(w.vn);
	extsort_free(w.doubt);
	extsort_free(c);
	extsort_free(next);
	extsort_free(cand);
	free(w.filter);
	free(roots);
	free(rec);
	free(pos);
	free(mv);
	return rc;
}

/* A worker's scratch space, and the records it has made from a batch,
 * added to the sorters together, under one lock a batch rather than a few a
 * record: each staged as its sorter (1 byte), length (4) and bytes. */
typedef struct {
	BookRecord *rec;
	Position *pos;
	OutMove *mv;
	uint8_t *buf; /* a blk record */
	uint8_t *stage;
	size_t staged, cap;
	ExportStats st; /* positions, moves, minimaxed, from_games of the batch */
	char why[BOOKDB_ERRLEN];
} Scratch;

/* Stages a record for sorter i. 0, or -1 when the pass failed. */
static int stage(Pass *ps, Scratch *w, int i, const void *rec, size_t len)
{
	if (w->staged + 5 + len > w->cap) {
		size_t c = w->cap ? w->cap : 1u << 16;
		while (c < w->staged + 5 + len) c *= 2;
		uint8_t *p = realloc(w->stage, c);
		if (!p) {
			pass_fail(ps, EXPORT_ENOMEM, NULL);
			return -1;
		}
		w->stage = p;
		w->cap = c;
	}
	uint8_t *p = w->stage + w->staged;
	p[0] = (uint8_t)i;
	uint32_t l = (uint32_t)len;
	memcpy(p + 1, &l, 4);
	memcpy(p + 5, rec, len);
	w->staged += 5 + len;
	return 0;
}

/* The records staged, into their sorters, and the batch's counts into the
 * pass's. 0, or -1 when the pass failed. */
static int stage_flush(Pass *ps, Scratch *w)
{
	int rc = 0;
	pthread_mutex_lock(&ps->sm);
	for (size_t at = 0; at < w->staged && !rc;) {
		uint32_t l;
		memcpy(&l, w->stage + at + 1, 4);
		rc = put(ps, w->stage[at], w->stage + at + 5, l);
		at += 5 + l;
	}
	ps->st.positions += w->st.positions;
	ps->st.moves += w->st.moves;
	ps->st.minimaxed += w->st.minimaxed;
	ps->st.from_games += w->st.from_games;
	pthread_mutex_unlock(&ps->sm);
	w->staged = 0;
	memset(&w->st, 0, sizeof w->st);
	return rc;
}

/* One record of the pass (its ordinal ord): what it gives its parents'
 * lines (child), and, when it is written, its block and requests, or its
 * Apery entries. 0, or -1 when the pass failed. */
static int pass_record(Pass *ps, Scratch *w, const Item *it, uint64_t ord)
{
	const ExportOptions *opt = ps->opt;
	BookRecord *rec = w->rec;
	Position *pos = w->pos;
	bool in = it->in;
	if (in) {
		/* A record that is not sound fails the export (as joseki check
		 * would find it): a damaged book must not pass for a smaller one. */
		int nlegal;
		if (bookdb_record_read(rec, pos, NULL, &nlegal, it->key, it->val, it->len, w->why) <
		    0) {
			pass_fail(ps, EXPORT_EBOOK, w->why);
			return -1;
		}
	} else if (ps->apery || ps->reach ||
	           bookdb_record_decode_moves(rec, it->val, it->len) < 0) {
		return 0;
	}
	uint8_t cr[20];
	ExportChild c = {MOVE_NONE, 0};
	/* With roots the requests are few: join_children looks them up. */
	if (!ps->apery && !ps->reach) {
		export_child_info(&c, rec, opt);
		key_to_bytes(it->key, cr);
		be_put(cr + 16, c.best, 2);
		be_put(cr + 18, (uint64_t)c.depth, 2);
	}
	size_t n = 0;
	if (in && !(opt->max_ply > 0 && rec->min_ply > opt->max_ply) &&
	    rec->min_ply >= opt->min_ply && export_side_ours(opt, pos->side))
		n = export_pick(w->mv, rec, pos, NULL, NULL, opt, 0);
	uint8_t *b = w->buf;
	size_t bl = 0;
	if (n && !ps->apery) {
		char line[DB2016_LINE_MAX];
		size_t sl = db2016_format_sfen(line, pos, rec->min_ply);
		be_put(b, ord, 8);
		be_put(b + 8, (uint64_t)rec->min_ply, 2);
		b[10] = rec->flags;
		b[11] = pos->side == WHITE;
		be_put(b + 12, n, 2);
		be_put(b + 14, sl, 2);
		memcpy(b + 16, line, sl);
		memcpy(b + 16 + sl, w->mv, n * sizeof *w->mv);
		bl = 16 + sl + n * sizeof *w->mv;
	}
	int rc = 0;
	if (!ps->apery && (c.best != MOVE_NONE || c.depth))
		rc = stage(ps, w, S_CHILD, cr, sizeof cr);
	if (n && !rc) {
		w->st.positions++;
		w->st.moves += n;
		if (rec->flags & BOOKDB_REC_MINIMAX) w->st.minimaxed++;
		w->st.from_games += (rec->flags & BOOKDB_REC_GAMES) != 0;
	}
	if (n && !rc && ps->apery) {
		uint64_t key = apery_key(pos);
		for (size_t k = 0; k < n && !rc; k++) {
			const OutMove *m = &w->mv[k];
			AperyOut a = {key,
			              pos_key(pos).hi,
			              (uint32_t)k,
			              apery_move_encode(m->move),
			              (uint16_t)(m->count > UINT16_MAX ? UINT16_MAX : m->count),
			              m->value};
			rc = stage(ps, w, S_APERY, &a, sizeof a);
		}
	} else if (n && !rc) {
		rc = stage(ps, w, S_BLK, b, bl);
		for (size_t k = 0; k < n && !rc; k++) {
			if (!export_needs_child(rec->flags, &w->mv[k])) continue;
			uint8_t q[25];
			key_to_bytes(pos_key_after(pos, w->mv[k].move), q);
			be_put(q + 16, ord, 8);
			q[24] = (uint8_t)k;
			rc = stage(ps, w, S_REQ, q, sizeof q);
		}
	}
	return rc;
}

static int scratch_init(Scratch *w)
{
	*w = (Scratch){0};
	w->rec = malloc(sizeof *w->rec);
	w->pos = malloc(sizeof *w->pos);
	w->mv = malloc(BOOKDB_MAX_MOVES * sizeof *w->mv);
	w->buf = malloc(16 + DB2016_LINE_MAX + BOOKDB_MAX_MOVES * sizeof(OutMove));
	return w->rec && w->pos && w->mv && w->buf ? 0 : -1;
}

static void scratch_free(Scratch *w)
{
	free(w->stage);
	free(w->rec);
	free(w->pos);
	free(w->mv);
	free(w->buf);
}

static void pass_batch(Pass *ps, Scratch *w, const Batch *b)
{
	for (size_t i = 0; i < b->n && !atomic_load(&ps->failed); i++)
		if (pass_record(ps, w, &b->it[i], b->ord + i) < 0) return;
	if (stage_flush(ps, w) < 0) return;
	atomic_fetch_add(&ps->done, b->n);
}

/* A worker: batches from the queue until it is empty and ended. */
static void *pass_worker(void *arg)
{
	Pass *ps = arg;
	Scratch w;
	if (scratch_init(&w) < 0) pass_fail(ps, EXPORT_ENOMEM, NULL);
	for (;;) {
		pthread_mutex_lock(&ps->qm);
		while (!ps->qn && !ps->eof) pthread_cond_wait(&ps->qtake, &ps->qm);
		if (!ps->qn) {
			pthread_mutex_unlock(&ps->qm);
			break;
		}
		Batch *b = ps->ring[ps->qhead];
		ps->qhead = (ps->qhead + 1) % RING;
		ps->qn--;
		pthread_cond_signal(&ps->qput);
		pthread_mutex_unlock(&ps->qm);
		if (!atomic_load(&ps->failed)) pass_batch(ps, &w, b);
		free(b);
	}
	scratch_free(&w);
	return NULL;
}

/* The cursor's pass: batches of records handed to nt workers (nt 1: done
 * here). 0, or -1 when the pass failed (ps->rc says how). */
static int pass_run(Pass *ps, BookTxn *txn, int nt)
{
	BookIter *iter = NULL;
	pthread_t tid[EXPORT_MAX_THREADS];
	int started = 0, rc = bookdb_iter_open(&iter, txn);
	Scratch w = {0};
	if (rc < 0) {
		pass_fail(ps, EXPORT_EBOOK, bookdb_strerror(rc));
		return -1;
	}
	for (int t = 0; nt > 1 && t < nt; t++)
		if (pthread_create(&tid[t], NULL, pass_worker, ps) == 0) started++;
	if (nt > 1 && !started) nt = 1; /* no thread: the work is done here */
	if (nt <= 1 && scratch_init(&w) < 0) pass_fail(ps, EXPORT_ENOMEM, NULL);
	uint64_t ord = 0;
	size_t reported = 0;
	/* The keys reached, merged with the cursor's: both in key order. */
	const uint8_t *rk = NULL;
	size_t rl;
	int rh = ps->reach ? extsort_next(ps->reach, (const void **)&rk, &rl) : 0;
	while (!atomic_load(&ps->failed)) {
		Batch *b = malloc(sizeof *b);
		if (!b) {
			pass_fail(ps, EXPORT_ENOMEM, NULL);
			break;
		}
		b->n = 0;
		b->ord = ord;
		while (b->n < BATCH) {
			Item *it = &b->it[b->n];
			rc = bookdb_iter_next(iter, &it->key, &it->val, &it->len);
			if (rc <= 0) break;
			it->in = !ps->reach;
			if (ps->reach) {
				uint8_t kb[16];
				key_to_bytes(it->key, kb);
				while (rh == 1 && memcmp(rk, kb, 16) < 0)
					rh = extsort_next(ps->reach, (const void **)&rk, &rl);
				it->in = rh == 1 && !memcmp(rk, kb, 16);
				if (rh < 0) {
					pass_fail(ps, EXPORT_EIO, NULL);
					break;
				}
			}
			b->n++;
		}
		ord += b->n;
		if (rc < 0) pass_fail(ps, EXPORT_EBOOK, bookdb_strerror(rc));
		if (nt <= 1) {
			if (!atomic_load(&ps->failed)) pass_batch(ps, &w, b);
			free(b);
		} else {
			pthread_mutex_lock(&ps->qm);
			while (ps->qn == RING) pthread_cond_wait(&ps->qput, &ps->qm);
			ps->ring[(ps->qhead + ps->qn) % RING] = b;
			ps->qn++;
			pthread_cond_signal(&ps->qtake);
			pthread_mutex_unlock(&ps->qm);
		}
		size_t d = atomic_load(&ps->done);
		if (ps->opt->progress && d >= reported + PROGRESS_EVERY) {
			ps->opt->progress(ps->opt->progress_ctx, "reading", d, ps->total);
			reported = d;
		}
		if (rc <= 0) break;
	}
	pthread_mutex_lock(&ps->qm);
	ps->eof = true;
	pthread_cond_broadcast(&ps->qtake);
	pthread_mutex_unlock(&ps->qm);
	for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
	/* Batches left when the pass failed. */
	for (; ps->qn; ps->qn--, ps->qhead = (ps->qhead + 1) % RING) free(ps->ring[ps->qhead]);
	/* A record that is not sound: the cursor still walks to the end, as a
	 * pass that read the keys first did, so that a page LMDB cannot follow
	 * further on is said as such (docs/bookdb.md, "A damaged book") rather
	 * than as the record met first. */
	if (ps->rc == EXPORT_EBOOK && rc > 0) {
		Item it;
		while (bookdb_iter_next(iter, &it.key, &it.val, &it.len) > 0) {
		}
	}
	scratch_free(&w);
	bookdb_iter_free(iter);
	ps->st.records = ord;
	return atomic_load(&ps->failed) ? -1 : 0;
}

/* The requests meet the children (both by key): an answer for each request
 * whose position is a record with something to give. With roots (a partial
 * book: few requests for a whole book's list) each requested position is
 * looked up in txn instead, in key order. 0, or -1. */
static int join_children(Pass *ps, BookTxn *txn)
{
	if (extsort_finish(ps->s[S_CHILD]) < 0 || extsort_finish(ps->s[S_REQ]) < 0) return -1;
	const void *c = NULL, *r;
	size_t cl, rl;
	uint8_t looked[20] = {0};
	BookRecord *rec = ps->reach ? malloc(sizeof *rec) : NULL;
	if (ps->reach && !rec) {
		errno = ENOMEM;
		return -1;
	}
	int hc = ps->reach ? 0 : extsort_next(ps->s[S_CHILD], &c, &cl), hr;
	while ((hr = extsort_next(ps->s[S_REQ], &r, &rl)) == 1) {
		if (ps->reach) {
			/* The child's part, once a key: looked[16..20) as a child record. */
			if (hc == 0 || memcmp(looked, r, 16)) {
				ExportChild x = {MOVE_NONE, 0};
				memcpy(looked, r, 16);
				if (bookdb_get_moves(rec, txn, key_from_bytes(r)) == 0)
					export_child_info(&x, rec, ps->opt);
				be_put(looked + 16, x.best, 2);
				be_put(looked + 18, (uint64_t)x.depth, 2);
				hc = 1;
			}
			c = looked;
		} else {
			while (hc == 1 && memcmp(c, r, 16) < 0)
				hc = extsort_next(ps->s[S_CHILD], &c, &cl);
			if (hc < 0) break;
			if (hc == 0 || memcmp(c, r, 16) != 0) continue;
		}
		uint8_t a[13];
		memcpy(a, (const uint8_t *)r + 16, 9);
		memcpy(a + 9, (const uint8_t *)c + 16, 4);
		if (be_get(a + 9, 2) == MOVE_NONE && be_get(a + 11, 2) == 0) continue;
		if (extsort_add(ps->s[S_ANS], a, sizeof a) < 0) {
			hr = -1;
			break;
		}
	}
	free(rec);
	return hc < 0 ? -1 : hr;
}

/* A position's text block: its SFEN line (sl bytes with the newline) and
 * its move lines, into out; returns the length. */
static size_t format_block(char *out, const char *sfen, size_t sl, bool minimax, const OutMove *mv,
                           size_t n)
{
	memcpy(out, sfen, sl);
	size_t len = sl;
	for (size_t k = 0; k < n; k++) {
		int value = mv[k].value;
		/* As peta-shock writes it: same value as the best by another
		 * route is shown one lower, so an engine prefers the best line. */
		if (minimax && k > 0 && value == mv[0].value && mv[k].depth != mv[0].depth) value--;
		len += db2016_format_move_count(out + len, mv[k].move, mv[k].ponder, value,
		                                mv[k].field, (int)mv[k].count);
	}
	return len;
}

/* The positions (by ordinal) meet their answers (by ordinal, slot): each
 * block finished, counted for YaneuraOu's options and sorted by its SFEN
 * line. 0, or -1. */
static int finish_blocks(Pass *ps, ExportStats *st)
{
	if (extsort_finish(ps->s[S_BLK]) < 0 || extsort_finish(ps->s[S_ANS]) < 0) return -1;
	OutMove *mv = malloc(BOOKDB_MAX_MOVES * sizeof *mv);
	uint8_t *text = malloc((size_t)(BOOKDB_MAX_MOVES + 1) * DB2016_LINE_MAX);
	int rc = -1;
	if (!mv || !text) {
		errno = ENOMEM;
		goto done;
	}
	const uint8_t *b, *a = NULL;
	size_t bl, al;
	int hb, ha = extsort_next(ps->s[S_ANS], (const void **)&a, &al);
	ExportStats ys = {0};
	while ((hb = extsort_next(ps->s[S_BLK], (const void **)&b, &bl)) == 1) {
		int min_ply = (int)be_get(b + 8, 2);
		unsigned flags = b[10];
		bool white = b[11];
		size_t n = be_get(b + 12, 2), sl = be_get(b + 14, 2);
		memcpy(mv, b + 16 + sl, n * sizeof *mv);
		for (; ha == 1 && memcmp(a, b, 8) <= 0;
		     ha = extsort_next(ps->s[S_ANS], (const void **)&a, &al)) {
			if (memcmp(a, b, 8) < 0 || a[8] >= n) continue;
			ExportChild c = {(Move)be_get(a + 9, 2), (int)be_get(a + 11, 2)};
			export_child_apply(&mv[a[8]], &c, flags, ps->opt);
		}
		if (ha < 0) goto done;
		yo_count(&ys, min_ply, white, &mv[0]);
		ys.positions++;
		size_t len = format_block((char *)text, (const char *)b + 16, sl,
		                          flags & BOOKDB_REC_MINIMAX, mv, n);
		if (extsort_add(ps->s[S_SFEN], text, len) < 0) goto done;
	}
	if (hb < 0) goto done;
	st->yo_shallow = ys.yo_shallow;
	st->yo_below[0] = ys.yo_below[0];
	st->yo_below[1] = ys.yo_below[1];
	st->yo_late = ys.yo_late;
	st->depth_lo = ys.depth_lo;
	st->value_lo[0] = ys.value_lo[0];
	st->value_lo[1] = ys.value_lo[1];
	st->ply_hi = ys.ply_hi;
	rc = 0;
done:
	free(mv);
	free(text);
	return rc;
}

/* The back half of the sorted blocks, written on a thread of its own from
 * the file's end backwards while the front half is written in order: the
 * blocks' length is known, so the two halves meet where they should. */
typedef struct {
	ExtSort *s;
	int fd;
	uint64_t start; /* where the part written so far starts in the file */
	int err;        /* errno of a failure, or 0 */
} BackHalf;

#define BACK_BUFFER (1u << 20)

/* buf[at..BACK_BUFFER) just before w->start. */
static void back_flush(BackHalf *w, const uint8_t *buf, size_t at)
{
	size_t n = BACK_BUFFER - at;
	if (!n || w->err) return;
	w->start -= n;
	if (bigmem_pwrite_full(w->fd, buf + at, n, w->start) < 0) w->err = errno;
}

static void *write_back(void *arg)
{
	BackHalf *w = arg;
	uint8_t *buf = malloc(BACK_BUFFER);
	if (!buf) {
		w->err = ENOMEM;
		return NULL;
	}
	size_t at = BACK_BUFFER; /* buf[at..) goes just before w->start */
	const void *r;
	size_t len;
	int h;
	while (!w->err && (h = extsort_next_back(w->s, &r, &len)) == 1) {
		if (len > at) {
			back_flush(w, buf, at);
			at = BACK_BUFFER;
		}
		if (len > BACK_BUFFER) {
			w->start -= len;
			if (!w->err && bigmem_pwrite_full(w->fd, r, len, w->start) < 0)
				w->err = errno;
			continue;
		}
		at -= len;
		memcpy(buf + at, r, len);
	}
	if (!w->err && h < 0) w->err = errno ? errno : EIO;
	back_flush(w, buf, at);
	free(buf);
	return NULL;
}

/* The sorted blocks into out after the header, from both ends at once: the
 * front half here, the back half by write_back. false on a write error, with
 * errno. */
static bool write_blocks(FILE *out, Pass *ps, const ExportOptions *opt, size_t total)
{
	char header[DB2016_LINE_MAX];
	size_t hl = db2016_format_header(header, total);
	if (fwrite(header, 1, hl, out) != hl) return false;
	ExtSortStats ss;
	extsort_stats(ps->s[S_SFEN], &ss);
	BackHalf w = {ps->s[S_SFEN], fileno(out), hl + ss.bytes, 0};
	pthread_t t;
	bool threaded = pthread_create(&t, NULL, write_back, &w) == 0;
	const uint8_t *r;
	size_t len;
	int h;
	uint64_t at = hl;
	int e = 0;
	for (size_t k = 0; (h = extsort_next(ps->s[S_SFEN], (const void **)&r, &len)) == 1; k++) {
		if (opt->progress && k % PROGRESS_EVERY == 0)
			opt->progress(opt->progress_ctx, "writing", 2 * k, total);
		if (fwrite(r, 1, len, out) != len) {
			e = errno ? errno : EIO;
			break;
		}
		at += len;
	}
	if (h < 0) e = errno;
	/* (errno kept: the back half's thread, or its work done here, may
	 * change it.) */
	if (threaded)
		pthread_join(t, NULL);
	else
		write_back(&w);
	if (e || w.err) {
		errno = e ? e : w.err;
		return false;
	}
	if (at != w.start) {
		errno = EIO; /* the halves do not meet: never, but never a torn book */
		return false;
	}
	return true;
}

/* The sorted Apery entries into out: 16 bytes each, by key. Of two
 * positions one key names, the first (the smaller joseki key) is kept. */
static bool write_apery(FILE *out, Pass *ps, const ExportOptions *opt, ExportStats *st)
{
	uint64_t last_key = 0, last_pos = 0;
	bool any = false;
	const void *r;
	size_t len;
	int h;
	for (size_t k = 0; (h = extsort_next(ps->s[S_APERY], &r, &len)) == 1; k++) {
		if (opt->progress && k % PROGRESS_EVERY == 0)
			opt->progress(opt->progress_ctx, "writing", k, st->moves);
		AperyOut a;
		memcpy(&a, r, sizeof a);
		if (any && a.key == last_key && a.pos_hi != last_pos) {
			st->collisions++;
			continue;
		}
		any = true;
		last_key = a.key;
		last_pos = a.pos_hi;
		uint8_t buf[APERY_ENTRY_SIZE];
		AperyEntry e = {a.key, a.move, a.count, a.score};
		apery_entry_write(buf, &e);
		if (fwrite(buf, 1, sizeof buf, out) != sizeof buf) return false;
		st->entries++;
	}
	return h == 0;
}

/* The sorters of a pass, each with its share of the budget (the streams
 * alive at once never hold more than the budget between them). */
static int open_sorters(Pass *ps, const char *dir, uint64_t budget)
{
	static const struct {
		int share; /* eighths of the budget */
		ExtSortCmp cmp;
		uintptr_t prefix;
	} S[S_N] = {
	    [S_CHILD] = {1, extsort_cmp_bytes, 16}, [S_REQ] = {1, extsort_cmp_bytes, 25},
	    [S_BLK] = {3, extsort_cmp_bytes, 8},    [S_ANS] = {1, extsort_cmp_bytes, 9},
	    [S_SFEN] = {3, extsort_cmp_tail, 0},    [S_APERY] = {6, cmp_apery_rec, 0},
	};
	for (int i = 0; i < S_N; i++) {
		if ((i == S_APERY) != ps->apery) continue;
		if (extsort_open(&ps->s[i], dir, budget / 8 * (uint64_t)S[i].share, S[i].cmp,
		                 (void *)S[i].prefix) < 0)
			return -1;
	}
	return 0;
}

/* The temporary runs' disk bytes of all sorters so far, into st. */
static void sorters_done(Pass *ps, ExportStats *st, int i)
{
	if (!ps->s[i]) return;
	ExtSortStats x;
	extsort_stats(ps->s[i], &x);
	st->spill_bytes += x.disk_bytes;
	st->runs += x.runs;
	extsort_free(ps->s[i]);
	ps->s[i] = NULL;
}

static int export_run(ExportStats *stats, BookDB *db, const char *out_path,
                      const ExportOptions *opt, bool apery, char *err)
{
	const size_t errlen = EXPORT_ERRLEN;
	ExportStats st;
	memset(&st, 0, sizeof st);
	Pass ps;
	memset(&ps, 0, sizeof ps);
	ps.opt = opt;
	ps.apery = apery;
	pthread_mutex_init(&ps.sm, NULL);
	pthread_mutex_init(&ps.qm, NULL);
	pthread_cond_init(&ps.qput, NULL);
	pthread_cond_init(&ps.qtake, NULL);
	atomic_init(&ps.failed, 0);
	atomic_init(&ps.done, 0);
	size_t plen = strlen(out_path) + 32;
	char *tmp_path = malloc(plen), *dir = malloc(plen);
	FILE *out = NULL;
	BookTxn *txn = NULL;
	ExtSort *reach = NULL;
	int rc = 0;
	if (!tmp_path || !dir) {
		rc = fail(err, errlen, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(tmp_path, plen, "%s.tmp", out_path);
	bigmem_dir_of(dir, plen, out_path); /* the runs go beside OUT */
	uint64_t count = 0;
	if ((rc = bookdb_txn_begin(&txn, db, false)) == 0)
		rc = bookdb_count(&count, txn, BOOKDB_POS);
	if (rc < 0) {
		rc = fail(err, errlen, rc == BOOKDB_ENOMEM ? EXPORT_ENOMEM : EXPORT_EBOOK,
		          "cannot read the book: %s", bookdb_strerror(rc));
		goto done;
	}
	uint64_t budget = opt->memory ? opt->memory : memuse_default_budget();
	double tr = clock_ms_f();
	if ((rc = reach_from_roots(&reach, &st.reached, &st.spill_bytes, txn, opt, dir, budget,
	                           count, err)) < 0)
		goto done;
	st.reach_ms = clock_ms_f() - tr;
	ps.reach = reach;
	ps.total = (size_t)count;
	/* The keys reached are read beside the pass with a quarter of it. */
	if (open_sorters(&ps, dir, reach ? budget / 4 * 3 : budget) < 0) {
		rc = fail(err, errlen, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	if (!apery) extsort_both_ends(ps.s[S_SFEN]); /* written from both ends */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = ncpu < 1 ? 1 : (int)ncpu;
	if (count < 20000) nt = 1;
	if (opt->threads > 0) nt = opt->threads;
	if (nt > EXPORT_MAX_THREADS) nt = EXPORT_MAX_THREADS;
	double t0 = clock_ms_f();
	bool ok = pass_run(&ps, txn, nt) == 0;
	double t1 = clock_ms_f();
	st.read_ms = t1 - t0;
	st.records = ps.st.records;
	st.positions = ps.st.positions;
	st.moves = ps.st.moves;
	st.minimaxed = ps.st.minimaxed;
	st.from_games = ps.st.from_games;
	if (ok && !apery) {
		ok = join_children(&ps, txn) == 0;
		if (!ok) ps.err_no = errno;
		sorters_done(&ps, &st, S_CHILD);
		sorters_done(&ps, &st, S_REQ);
		double t2 = clock_ms_f();
		st.join_ms = t2 - t1;
		if (ok && !(ok = finish_blocks(&ps, &st) == 0)) ps.err_no = errno;
		sorters_done(&ps, &st, S_BLK);
		sorters_done(&ps, &st, S_ANS);
		if (ok && !(ok = extsort_finish(ps.s[S_SFEN]) == 0)) ps.err_no = errno;
		st.blocks_ms = clock_ms_f() - t2;
	} else if (ok && !(ok = extsort_finish(ps.s[S_APERY]) == 0)) {
		ps.err_no = errno;
	}
	if (!ok) {
		int e = ps.err_no;
		rc = ps.rc == EXPORT_EBOOK
		         ? fail(err, errlen, EXPORT_EBOOK,
		                "%s; the book is damaged: joseki check lists what, --repair copies "
		                "what is sound",
		                ps.why)
		     : ps.rc == EXPORT_ENOMEM || e == ENOMEM
		         ? fail(err, errlen, EXPORT_ENOMEM, "out of memory")
		         : fail(err, errlen, EXPORT_EIO,
		                "%s: cannot write the sorted runs beside it: %s", out_path,
		                strerror(e ? e : EIO));
		goto done;
	}
	/* The book is read: its snapshot is let go before the writing. */
	bookdb_txn_abort(txn);
	txn = NULL;
	out = fopen(tmp_path, "wb");
	if (!out) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot write there: %s", out_path,
		          strerror(errno));
		goto done;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	double t3 = clock_ms_f();
	bool bad =
	    apery ? !write_apery(out, &ps, opt, &st) : !write_blocks(out, &ps, opt, st.positions);
	FILE *o = out;
	out = NULL;
	int werr = bad ? errno : 0;
	bool closed = fclose(o) == 0;
	st.write_ms = clock_ms_f() - t3;
	if (!closed || bad) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: write error: %s", out_path,
		          strerror(werr ? werr : errno));
		goto done;
	}
	if (rename(tmp_path, out_path) != 0) {
		rc = fail(err, errlen, EXPORT_EIO, "%s: cannot put the written book in place: %s",
		          out_path, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	for (int i = 0; i < S_N; i++) sorters_done(&ps, &st, i);
	if (out) fclose(out);
	if (rc < 0 && tmp_path) unlink(tmp_path);
	bookdb_txn_abort(txn);
	free(tmp_path);
	free(dir);
	if (reach) {
		ExtSortStats rs;
		extsort_stats(reach, &rs);
		st.spill_bytes += rs.disk_bytes;
		extsort_free(reach);
	}
	pthread_mutex_destroy(&ps.sm);
	pthread_mutex_destroy(&ps.qm);
	pthread_cond_destroy(&ps.qput);
	pthread_cond_destroy(&ps.qtake);
	if (stats) *stats = st;
	return rc;
}

int export_yaneuraou(ExportStats *stats, BookDB *db, const char *out_path, const ExportOptions *opt,
                     char *err)
{
	return export_run(stats, db, out_path, opt, false, err);
}

int export_apery(ExportStats *stats, BookDB *db, const char *out_path, const ExportOptions *opt,
                 char *err)
{
	return export_run(stats, db, out_path, opt, true, err);
}

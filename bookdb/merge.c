/* bookdb/merge.c — one book into another, and the record merge rule (merge.h). */
#include "bookdb/merge.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/game.h"
#include "bookdb/marks.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"

/* ---- the record rule ---- */

static bool analysis_eval(const BookMove *m)
{
	return (m->flags & BOOKDB_MOVE_EVAL) && m->source != BOOKDB_SOURCE_GAME;
}

static uint64_t analysis_nodes(const BookRecord *r)
{
	uint64_t n = 0;
	for (int i = 0; i < r->nmoves; i++)
		if (analysis_eval(&r->moves[i]) && r->moves[i].nodes > n) n = r->moves[i].nodes;
	return n;
}

/* A fixed order on evaluations (for ties that nothing else decides). */
static int eval_cmp(const BookMove *x, const BookMove *y)
{
	if (x->eval != y->eval) return x->eval < y->eval ? -1 : 1;
	if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1;
	if (x->nodes != y->nodes) return x->nodes < y->nodes ? -1 : 1;
	if (x->source != y->source) return x->source < y->source ? -1 : 1;
	return 0;
}

/* The analysis evaluation of move mv in r, or NULL. */
static const BookMove *find_move(const BookRecord *r, Move mv)
{
	for (int i = 0; i < r->nmoves; i++)
		if (r->moves[i].move == mv) return &r->moves[i];
	return NULL;
}

/* A fixed order on whole analyses: by move, then evaluation. */
static int analysis_cmp(const BookRecord *a, const BookRecord *b)
{
	/* The smallest move not yet compared, on both sides; O(n^2) but only on ties. */
	int prev = -1;
	for (;;) {
		int next = 0x10000;
		for (int i = 0; i < a->nmoves; i++)
			if (analysis_eval(&a->moves[i]) && a->moves[i].move > prev &&
			    a->moves[i].move < next)
				next = a->moves[i].move;
		for (int i = 0; i < b->nmoves; i++)
			if (analysis_eval(&b->moves[i]) && b->moves[i].move > prev &&
			    b->moves[i].move < next)
				next = b->moves[i].move;
		if (next == 0x10000) return 0;
		const BookMove *x = find_move(a, (Move)next), *y = find_move(b, (Move)next);
		bool hx = x && analysis_eval(x), hy = y && analysis_eval(y);
		if (hx != hy) return hx ? 1 : -1;
		int c = eval_cmp(x, y);
		if (c) return c;
		prev = next;
	}
}

/* 0 no analysis, 1 a's, 2 b's. */
static int winner(const BookRecord *a, const BookRecord *b, BookPrefer prefer, int tie)
{
	bool ta = a->flags & BOOKDB_REC_THOUGHT, tb = b->flags & BOOKDB_REC_THOUGHT;
	if (!ta || !tb) return ta ? 1 : tb ? 2 : 0;
	if (prefer == BOOKDB_PREFER_FIRST) return 1;
	if (prefer == BOOKDB_PREFER_LAST) return 2;
	if (a->think_depth != b->think_depth) return a->think_depth > b->think_depth ? 1 : 2;
	uint64_t na = analysis_nodes(a), nb = analysis_nodes(b);
	if (na != nb) return na > nb ? 1 : 2;
	if (tie) return tie > 0 ? 1 : 2;
	return analysis_cmp(a, b) >= 0 ? 1 : 2;
}

static void copy_eval(BookMove *to, const BookMove *from)
{
	if (from && (from->flags & BOOKDB_MOVE_EVAL)) {
		to->flags |= BOOKDB_MOVE_EVAL;
		to->eval = from->eval;
		to->depth = from->depth;
		to->nodes = from->nodes;
		to->source = from->source;
	} else {
		to->flags &= (uint8_t)~BOOKDB_MOVE_EVAL;
		to->eval = 0;
		to->depth = 0;
		to->nodes = 0;
		to->source = 0;
	}
}

/* The evaluation a merged move keeps, from a's move x and b's move y (either
 * may be NULL): the winning analysis's, else a game comment's (or, with no
 * analysis on either side, any evaluation), chosen by tie. */
static const BookMove *pick_eval(const BookMove *x, const BookMove *y, int w, int tie)
{
	if (w == 1 && x && analysis_eval(x)) return x;
	if (w == 2 && y && analysis_eval(y)) return y;
	bool ok_x = x && (x->flags & BOOKDB_MOVE_EVAL) && (w == 0 || !analysis_eval(x));
	bool ok_y = y && (y->flags & BOOKDB_MOVE_EVAL) && (w == 0 || !analysis_eval(y));
	if (!ok_x || !ok_y) return ok_x ? x : ok_y ? y : NULL;
	if (tie) return tie > 0 ? x : y;
	return eval_cmp(x, y) >= 0 ? x : y;
}

static uint32_t sat_add(uint32_t x, uint32_t y)
{
	return x > UINT32_MAX - y ? UINT32_MAX : x + y;
}

static bool stats_larger(const BookMove *x, const BookMove *y)
{
	if (x->count != y->count) return x->count > y->count;
	if (x->wins != y->wins) return x->wins > y->wins;
	if (x->draws != y->draws) return x->draws > y->draws;
	return x->losses > y->losses;
}

/* Adds y's statistics into m (or keeps the larger). */
static void merge_stats(BookMove *m, const BookMove *y, bool stats_max)
{
	if (!y || !(y->flags & BOOKDB_MOVE_STATS) || !y->count) return;
	if (!(m->flags & BOOKDB_MOVE_STATS)) {
		m->count = m->wins = m->draws = m->losses = 0;
	}
	if (stats_max) {
		if ((m->flags & BOOKDB_MOVE_STATS) && !stats_larger(y, m)) return;
		m->count = y->count;
		m->wins = y->wins;
		m->draws = y->draws;
		m->losses = y->losses;
	} else {
		m->count = sat_add(m->count, y->count);
		m->wins = sat_add(m->wins, y->wins);
		m->draws = sat_add(m->draws, y->draws);
		m->losses = sat_add(m->losses, y->losses);
	}
	m->flags |= BOOKDB_MOVE_STATS;
}

static bool eval_same(const BookMove *x, const BookMove *y)
{
	if ((x->flags & BOOKDB_MOVE_EVAL) != (y->flags & BOOKDB_MOVE_EVAL)) return false;
	return !(x->flags & BOOKDB_MOVE_EVAL) || eval_cmp(x, y) == 0;
}

static bool stats_same(const BookMove *x, const BookMove *y)
{
	return (x->flags & BOOKDB_MOVE_STATS) == (y->flags & BOOKDB_MOVE_STATS) &&
	       x->count == y->count && x->wins == y->wins && x->draws == y->draws &&
	       x->losses == y->losses;
}

void bookdb_record_merge(BookRecord *out, const BookRecord *a, const BookRecord *b,
                         BookPrefer prefer, int tie, bool stats_max, BookMergeDiff *diff)
{
	memset(diff, 0, sizeof *diff);
	int w = winner(a, b, prefer, tie);
	int etie = prefer == BOOKDB_PREFER_FIRST ? 1 : prefer == BOOKDB_PREFER_LAST ? -1 : tie;
	if (out != a) {
		memcpy(out, a, offsetof(BookRecord, moves));
		memcpy(out->moves, a->moves, a->nmoves * sizeof *a->moves);
	}
	if (b->min_ply && b->min_ply < out->min_ply) {
		out->min_ply = b->min_ply;
		diff->changed = true;
	}
	if (w == 2 && (!(out->flags & BOOKDB_REC_THOUGHT) || out->think_depth != b->think_depth)) {
		out->flags |= BOOKDB_REC_THOUGHT;
		out->think_depth = b->think_depth;
		diff->changed = diff->replaced = true;
	}
	int na = out->nmoves;
	for (int i = 0; i < na; i++) {
		BookMove *m = &out->moves[i];
		const BookMove *y = find_move(b, m->move);
		BookMove old = *m;
		const BookMove *e = pick_eval(&old, y, w, etie);
		copy_eval(m, e);
		merge_stats(m, y, stats_max);
		if (y && (y->flags & BOOKDB_MOVE_AVOIDED) && !(m->flags & BOOKDB_MOVE_AVOIDED)) {
			m->flags |= BOOKDB_MOVE_AVOIDED; /* avoided in either book: avoided */
			diff->changed = true;
		}
		/* Preferred in either book and avoided in neither: preferred, with
		 * a's window where a prefers it too. */
		if (m->flags & BOOKDB_MOVE_AVOIDED) {
			if (m->flags & BOOKDB_MOVE_PREFERRED) {
				m->flags &= (uint8_t)~BOOKDB_MOVE_PREFERRED;
				m->prefer_window = 0;
				diff->changed = true;
			}
		} else if (y && (y->flags & BOOKDB_MOVE_PREFERRED) &&
		           !(m->flags & BOOKDB_MOVE_PREFERRED)) {
			m->flags |= BOOKDB_MOVE_PREFERRED;
			m->prefer_window = y->prefer_window;
			diff->changed = true;
		}
		if (!eval_same(&old, m)) {
			diff->changed = true;
			if (w == 2) diff->replaced = true;
		}
		if (!stats_same(&old, m)) diff->changed = diff->stats = true;
	}
	for (int j = 0; j < b->nmoves && out->nmoves < BOOKDB_MAX_MOVES; j++) {
		const BookMove *y = &b->moves[j];
		if (find_move(a, y->move)) continue;
		BookMove *m = bookdb_record_add_move(out, y->move);
		copy_eval(m, pick_eval(NULL, y, w, etie));
		merge_stats(m, y, stats_max);
		m->flags |= y->flags & (BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED);
		m->prefer_window = y->prefer_window;
		diff->changed = diff->moves_added = true;
		if (m->flags & BOOKDB_MOVE_STATS) diff->stats = true;
		if (w == 2 && analysis_eval(y)) diff->replaced = true;
	}
	if (diff->changed) {
		out->flags &= (uint8_t)~BOOKDB_REC_MINIMAX;
		for (int i = 0; i < out->nmoves; i++) {
			out->moves[i].value = 0;
			out->moves[i].dist = 0;
		}
	}
}

/* ---- the book merge ---- */

#define META_MERGE "merge"

/* One ply of a game both books counted: taken out of the source's statistics
 * (of the destination's, for a game it counted cut short and the source
 * whole). */
typedef struct {
	Key key;
	Move move;
	int8_t result; /* the mover's: 1 win, 0 draw, -1 loss, 2 none */
	bool dst;      /* out of the destination's record */
} Share;

typedef struct {
	Share *v;
	size_t n, cap;
	bool oom;
	bool dst; /* the game replayed now is the destination's */
} Shares;

static void on_ply(void *ctx, Key key, Move move, int result)
{
	Shares *s = ctx;
	if (s->oom) return;
	if (array_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v, 1024)) {
		s->oom = true;
		return;
	}
	s->v[s->n++] = (Share){key, move, (int8_t)result, s->dst};
}

static int cmp_share(const void *pa, const void *pb)
{
	const Share *a = pa, *b = pb;
	int c = key_cmp(a->key, b->key);
	return c ? c : (a->move > b->move) - (a->move < b->move);
}

/* Takes the shares of [s, e) out of one book's record (dst: the
 * destination's) rec's statistics; returns plies it lacked. */
static uint64_t subtract(BookRecord *rec, const Share *s, const Share *e, bool dst)
{
	uint64_t lacked = 0;
	for (; s < e; s++) {
		if (s->dst != dst) continue;
		BookMove *m = NULL;
		for (int i = 0; i < rec->nmoves; i++)
			if (rec->moves[i].move == s->move) m = &rec->moves[i];
		if (!m || !(m->flags & BOOKDB_MOVE_STATS) || !m->count) {
			lacked++;
			continue;
		}
		m->count--;
		uint32_t *f = s->result == 1    ? &m->wins
		              : s->result == 0  ? &m->draws
		              : s->result == -1 ? &m->losses
		                                : NULL;
		if (f && *f)
			(*f)--;
		else if (f)
			lacked++;
		if (!m->count) {
			m->flags &= (uint8_t)~BOOKDB_MOVE_STATS;
			m->wins = m->draws = m->losses = 0;
		}
	}
	return lacked;
}

/* The unix time in a book's meta "created" (0 when absent). */
static long long created_time(BookTxn *t)
{
	const void *v;
	size_t vl;
	if (bookdb_kv_get(&v, &vl, t, BOOKDB_META, "created", 7) != 0) return 0;
	char buf[256];
	size_t n = vl < sizeof buf - 1 ? vl : sizeof buf - 1;
	memcpy(buf, v, n);
	buf[n] = 0;
	const char *p = strstr(buf, "\"created\":");
	return p ? strtoll(p + 10, NULL, 10) : 0;
}

/* The source's identity in the merge mark: its directory and creation entry. */
static int source_ident(char **out, size_t *len, BookDB *src, BookTxn *st)
{
	const char *dir = bookdb_dir(src);
	char *real = realpath(dir, NULL);
	const void *v = "";
	size_t vl = 0;
	if (bookdb_kv_get(&v, &vl, st, BOOKDB_META, "created", 7) != 0) {
		v = "";
		vl = 0;
	}
	const char *d = real ? real : dir;
	size_t dl = strlen(d);
	*len = dl + 1 + vl;
	*out = malloc(*len + 1);
	if (!*out) {
		free(real);
		return BOOKDB_ENOMEM;
	}
	memcpy(*out, d, dl);
	(*out)[dl] = '\n';
	memcpy(*out + dl + 1, v, vl);
	(*out)[*len] = 0;
	free(real);
	return 0;
}

typedef struct {
	BookMergeStats *st;
	BookDB *dst, *src;
	const BookMergeOptions *opt;
	char *err;
	BookTxn *stx, *dtx; /* the source's snapshot; the destination's read transaction */
	BookWriter *w;
	Shares shares;
	bool stats_max;
	int tie;
	char *ident;
	size_t ident_len;
	bool resume;
	Key resume_key;
	BookRecord *a, *b;
} Merge;

/* Finds the games both books counted and the plies they add to the source. */
static int shared_games(Merge *m)
{
	BookIter *it;
	int rc = bookdb_kv_iter_open(&it, m->stx, BOOKDB_GAMES);
	if (rc < 0) return rc;
	Position *pos = malloc(sizeof *pos);
	if (!pos) {
		bookdb_iter_free(it);
		return BOOKDB_ENOMEM;
	}
	const void *k, *v, *dv;
	size_t kl, vl, dvl;
	while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		rc = bookdb_kv_get(&dv, &dvl, m->dtx, BOOKDB_GAMES, k, kl);
		if (rc == BOOKDB_ENOTFOUND) {
			m->st->games_added++;
			continue;
		}
		if (rc < 0) break;
		BookGame g, d;
		bool sound = bookdb_game_decode(&g, v, vl) == 0;
		/* DST counted the game cut short, SRC whole (ingest's rule,
		 * docs/ingest.md, "Identity and re-ingesting"): DST's count is
		 * what is taken out, of DST's records, and SRC's mark replaces
		 * DST's (finish). */
		bool completed =
		    sound && bookdb_game_decode(&d, dv, dvl) == 0 && bookdb_game_completes(&d, &g);
		if (completed) {
			m->st->games_completed++;
			g = d;
		} else {
			m->st->games_duplicate++;
		}
		m->shares.dst = completed;
		/* A game of no plies counted has no share (its value is the short
		 * form, as a legacy one's). */
		if (!sound || (!g.has_plies && g.nplies) ||
		    bookdb_game_replay(&g, pos, on_ply, &m->shares) < 0) {
			/* Without its plies a game's share cannot be told apart. */
			m->st->games_unlocated++;
			continue;
		}
		if (m->shares.oom) {
			rc = BOOKDB_ENOMEM;
			break;
		}
	}
	free(pos);
	bookdb_iter_free(it);
	if (rc < 0)
		return errmsg_set(m->err, BOOKDB_MERGE_ERRLEN, rc, "%s: reading its games: %s",
		                  bookdb_dir(m->src), bookdb_strerror(rc));
	if (m->shares.n) qsort(m->shares.v, m->shares.n, sizeof *m->shares.v, cmp_share);
	m->stats_max = m->st->games_unlocated > 0;
	return 0;
}

/* Reads dst's merge mark: none, ours (resume), or another source's (refused). */
static int read_mark(Merge *m)
{
	const void *v;
	size_t vl;
	int rc = bookdb_kv_get(&v, &vl, m->dtx, BOOKDB_META, META_MERGE, strlen(META_MERGE));
	if (rc == BOOKDB_ENOTFOUND) return 0;
	if (rc < 0) return rc;
	const uint8_t *p = v;
	if (vl < 17) return BOOKDB_ECORRUPT;
	if (vl - 17 != m->ident_len || memcmp(p + 17, m->ident, m->ident_len)) {
		size_t dl = 0;
		while (17 + dl < vl && p[17 + dl] != '\n') dl++;
		return errmsg_set(m->err, BOOKDB_MERGE_ERRLEN, BOOKDB_EBUSY,
		                  "%s: a merge of %.*s into it was interrupted; run that merge "
		                  "again to complete it first",
		                  bookdb_dir(m->dst), (int)dl, (const char *)p + 17);
	}
	m->st->resumed = true;
	if (p[16]) {
		m->resume = true;
		m->resume_key = key_from_bytes(p);
	}
	return 0;
}

/* Puts the mark (source, last key done) into the open write transaction. */
static int write_mark(Merge *m, Key last)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, m->w);
	if (rc < 0) return rc;
	uint8_t *buf = malloc(17 + m->ident_len);
	if (!buf) return BOOKDB_ENOMEM;
	key_to_bytes(last, buf);
	buf[16] = 1;
	memcpy(buf + 17, m->ident, m->ident_len);
	rc = bookdb_kv_put(t, BOOKDB_META, META_MERGE, strlen(META_MERGE), buf, 17 + m->ident_len);
	free(buf);
	return rc;
}

/* A source's entry as dst gets it, into sm and out (BOOKDB_MARK_VALUE_MAX
 * bytes): the mark alone, without what it found in the source's record (the
 * mark it replaced, that it added the move), which dst's record need not
 * share: its undo in dst takes the mark off. Returns the length, or
 * BOOKDB_ECORRUPT (check names it). */
static int mark_as_copied(BookMark *sm, uint8_t *out, const void *k, size_t kl, const void *v,
                          size_t vl)
{
	if (bookdb_mark_decode(sm, k, kl, v, vl) < 0) return BOOKDB_ECORRUPT;
	sm->added = false;
	sm->prior_kind = 0;
	sm->prior = NULL;
	sm->prior_len = 0;
	return (int)bookdb_mark_encode(out, sm);
}

/* Whether src holds a mark entry (bookdb/marks.h) dst has not, as t sees
 * dst: finish copies them. */
static int marks_new(bool *any, BookTxn *stx, BookTxn *t)
{
	*any = false;
	BookIter *it;
	int rc = bookdb_kv_iter_open(&it, stx, BOOKDB_MARKS);
	if (rc < 0) return rc;
	const void *k, *v, *dv;
	size_t kl, vl, dvl;
	BookMark *sm = malloc(sizeof *sm);
	uint8_t *cv = malloc(BOOKDB_MARK_VALUE_MAX);
	if (!sm || !cv) rc = BOOKDB_ENOMEM;
	while (rc >= 0 && !*any && (rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		int cl = mark_as_copied(sm, cv, k, kl, v, vl);
		rc = bookdb_kv_get(&dv, &dvl, t, BOOKDB_MARKS, k, kl);
		if (rc < 0 && rc != BOOKDB_ENOTFOUND) break;
		*any = cl >= 0 &&
		       (rc == BOOKDB_ENOTFOUND || dvl != (size_t)cl || memcmp(dv, cv, (size_t)cl));
		rc = 0;
	}
	bookdb_iter_free(it);
	free(sm);
	free(cv);
	return rc < 0 ? rc : 0;
}

/* The source's mark entries (source, time, note of a mark) where dst's
 * merged record carries that mark and dst has no entry of its kind: a mark
 * dst has stays dst's. */
static int copy_marks(Merge *m, BookTxn *t)
{
	BookIter *it;
	int rc = bookdb_kv_iter_open(&it, m->stx, BOOKDB_MARKS);
	if (rc < 0) return rc;
	const void *k, *v;
	size_t kl, vl;
	BookMark *sm = malloc(sizeof *sm), *dm = malloc(sizeof *dm);
	uint8_t *cv = malloc(BOOKDB_MARK_VALUE_MAX);
	if (!sm || !dm || !cv) rc = BOOKDB_ENOMEM;
	while (rc >= 0 && (rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		rc = 0;
		int cl = mark_as_copied(sm, cv, k, kl, v, vl);
		if (cl < 0) continue; /* check names it */
		int got = bookdb_mark_get(dm, t, sm->key, sm->move);
		if (got < 0 && got != BOOKDB_ECORRUPT) {
			rc = got;
			break;
		}
		if (got == 1 && dm->kind == sm->kind) continue;
		if (bookdb_get_moves(m->a, t, sm->key) < 0) continue;
		uint8_t want =
		    sm->kind == BOOKDB_MARK_AVOID ? BOOKDB_MOVE_AVOIDED : BOOKDB_MOVE_PREFERRED;
		bool flagged = false;
		for (int i = 0; i < m->a->nmoves; i++)
			if (m->a->moves[i].move == sm->move) flagged = m->a->moves[i].flags & want;
		if (flagged) rc = bookdb_kv_put(t, BOOKDB_MARKS, k, kl, cv, (size_t)cl);
	}
	bookdb_iter_free(it);
	free(sm);
	free(dm);
	free(cv);
	return rc < 0 ? rc : 0;
}

/* The source's games new to dst, its marks, and the mark cleared: the last
 * transaction. */
static int finish(Merge *m)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, m->w);
	if (rc < 0) return rc;
	if ((rc = copy_marks(m, t)) < 0) return rc;
	BookIter *it;
	if ((rc = bookdb_kv_iter_open(&it, m->stx, BOOKDB_GAMES)) < 0) return rc;
	const void *k, *v, *dv;
	size_t kl, vl, dvl;
	while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		rc = bookdb_kv_get(&dv, &dvl, t, BOOKDB_GAMES, k, kl);
		BookGame g, d;
		if (rc == 0 &&
		    (bookdb_game_decode(&g, v, vl) < 0 || bookdb_game_decode(&d, dv, dvl) < 0 ||
		     !bookdb_game_completes(&d, &g)))
			continue;
		if ((rc != 0 && rc != BOOKDB_ENOTFOUND) ||
		    (rc = bookdb_kv_put(t, BOOKDB_GAMES, k, kl, v, vl)) < 0)
			break;
	}
	bookdb_iter_free(it);
	if (rc < 0) return rc;
	rc = bookdb_kv_del(t, BOOKDB_META, META_MERGE, strlen(META_MERGE));
	if (rc < 0 && rc != BOOKDB_ENOTFOUND) return rc;
	return 0;
}

static void note_bad(BookMergeStats *st, Key key, bool in_dst)
{
	if (!st->bad_src && !st->bad_dst) {
		st->first_bad = key;
		st->first_bad_in_dst = in_dst;
	}
	if (in_dst)
		st->bad_dst++;
	else
		st->bad_src++;
}

/* One source record into dst. Returns 1 when it wrote, 0 when not, or an error. */
static int merge_one(Merge *m, Key key, const uint8_t *val, size_t len, const Share *s,
                     const Share *e)
{
	BookMergeStats *st = m->st;
	BookTxn *t = m->dtx;
	int rc = m->opt->dry_run ? 0 : bookdb_writer_txn(&t, m->w);
	const uint8_t *dv;
	size_t dl;
	if (rc >= 0) rc = bookdb_get_raw(&dv, &dl, t, key);
	/* The same bytes and no shared game through them: nothing to merge (the
	 * record rule leaves a record merged with itself as it is). */
	if (rc == 0 && s == e && dl == len && !memcmp(dv, val, len)) {
		st->unchanged++;
		return 0;
	}
	if (rc == 0 && bookdb_record_decode(m->a, dv, dl) < 0) {
		/* A damaged destination record is left as it is (joseki check finds it). */
		note_bad(st, key, true);
		return 0;
	}
	if (rc == BOOKDB_ENOTFOUND) {
		/* Decoded even when copied as it is: a damaged source record is not copied. */
		if (bookdb_record_decode(m->b, val, len) < 0) {
			note_bad(st, key, false);
			return 0;
		}
		st->added++;
		if (m->opt->dry_run) return 0;
		if (s == e) return (rc = bookdb_writer_put_raw(m->w, key, val, len)) < 0 ? rc : 1;
		st->stats_clamped += subtract(m->b, s, e, false);
		for (const Share *x = s; x < e; x++) st->stats_clamped += x->dst; /* DST lacks it */
		return (rc = bookdb_writer_put(m->w, key, m->b)) < 0 ? rc : 1;
	}
	if (rc < 0) return rc;
	if (bookdb_record_decode_moves(m->b, val, len) < 0) {
		note_bad(st, key, false);
		return 0;
	}
	st->stats_clamped += subtract(m->b, s, e, false) + subtract(m->a, s, e, true);
	BookMergeDiff d;
	bookdb_record_merge(m->a, m->a, m->b, BOOKDB_PREFER_DEEPER, m->tie, m->stats_max, &d);
	if (!d.changed) {
		st->unchanged++;
		return 0;
	}
	st->changed++;
	st->replaced += d.replaced;
	st->stats_merged += d.stats;
	if (m->opt->dry_run) return 0;
	return (rc = bookdb_writer_put(m->w, key, m->a)) < 0 ? rc : 1;
}

static int run(Merge *m)
{
	BookMergeStats *st = m->st;
	int rc;
	if ((rc = bookdb_txn_begin(&m->stx, m->src, false)) < 0 ||
	    (rc = bookdb_txn_begin(&m->dtx, m->dst, false)) < 0)
		return errmsg_set(m->err, BOOKDB_MERGE_ERRLEN, rc, "%s: %s",
		                  bookdb_dir(m->stx ? m->dst : m->src), bookdb_strerror(rc));
	if ((rc = bookdb_count(&st->positions, m->stx, BOOKDB_POS)) < 0) return rc;
	long long ca = created_time(m->dtx), cb = created_time(m->stx);
	m->tie = ca > cb ? 1 : ca < cb ? -1 : 0;
	if ((rc = source_ident(&m->ident, &m->ident_len, m->src, m->stx)) < 0) return rc;
	if ((rc = read_mark(m)) < 0) return rc;
	if ((rc = shared_games(m)) < 0) return rc;
	bool marks = false;
	if ((rc = marks_new(&marks, m->stx, m->dtx)) < 0) return rc;
	if (!m->opt->dry_run) {
		/* The destination is read through the writer from here on. */
		bookdb_txn_abort(m->dtx);
		m->dtx = NULL;
		/* Committed by this loop only, with the mark in the same transaction. */
		if ((rc = bookdb_writer_new(&m->w, m->dst, SIZE_MAX)) < 0) return rc;
	}
	BookIter *it;
	if ((rc = bookdb_iter_open(&it, m->stx)) < 0) return rc;
	size_t batch = m->opt->batch ? m->opt->batch : 10000;
	size_t in_batch = 0, pending = 0;
	uint64_t done = 0;
	const Share *s = m->shares.v, *end = s ? s + m->shares.n : NULL; /* none: NULL, NULL */
	Key key;
	const uint8_t *val;
	size_t len;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		done++;
		if (m->opt->progress && done % 65536 == 0)
			m->opt->progress(m->opt->progress_ctx, done, st->positions);
		while (s < end && key_cmp(s->key, key) < 0) s++;
		const Share *e = s;
		while (e < end && key_equal(e->key, key)) e++;
		if (m->resume && key_cmp(key, m->resume_key) <= 0) {
			s = e;
			continue;
		}
		rc = merge_one(m, key, val, len, s, e);
		s = e;
		if (rc < 0) break;
		pending += (size_t)rc;
		if (++in_batch >= batch && pending) {
			if ((rc = write_mark(m, key)) < 0 || (rc = bookdb_writer_flush(m->w)) < 0)
				break;
			st->batches++;
			in_batch = pending = 0;
		}
	}
	bookdb_iter_free(it);
	if (rc < 0)
		return errmsg_set(m->err, BOOKDB_MERGE_ERRLEN, rc, "merging %s into %s: %s",
		                  bookdb_dir(m->src), bookdb_dir(m->dst), bookdb_strerror(rc));
	if (m->opt->progress) m->opt->progress(m->opt->progress_ctx, done, st->positions);
	if (m->opt->dry_run) return 0;
	/* The last transaction clears the mark: also after a batch that ended on
	 * the source's last record (st->batches: a mark was written). */
	if (pending || st->batches || st->games_added || st->resumed || marks) {
		if ((rc = finish(m)) < 0 || (rc = bookdb_writer_flush(m->w)) < 0)
			return errmsg_set(m->err, BOOKDB_MERGE_ERRLEN, rc, "merging %s into %s: %s",
			                  bookdb_dir(m->src), bookdb_dir(m->dst),
			                  bookdb_strerror(rc));
		st->batches++;
	}
	return 0;
}

int bookdb_merge(BookMergeStats *st, BookDB *dst, BookDB *src, const BookMergeOptions *opt,
                 char *err)
{
	memset(st, 0, sizeof *st);
	err[0] = 0;
	double t0 = clock_s();
	Merge m = {.st = st, .dst = dst, .src = src, .opt = opt, .err = err};
	m.a = malloc(sizeof *m.a);
	m.b = malloc(sizeof *m.b);
	int rc = m.a && m.b ? run(&m) : BOOKDB_ENOMEM;
	if (rc < 0 && !err[0])
		errmsg_set(err, BOOKDB_MERGE_ERRLEN, rc, "merging %s into %s: %s", bookdb_dir(src),
		           bookdb_dir(dst), bookdb_strerror(rc));
	bookdb_writer_free(m.w);
	bookdb_txn_abort(m.dtx);
	bookdb_txn_abort(m.stx);
	free(m.shares.v);
	free(m.ident);
	free(m.a);
	free(m.b);
	st->seconds = clock_s() - t0;
	return rc;
}

/* ---- several sources, then minimax ---- */

static void add_stats(BookMergeStats *t, const BookMergeStats *s)
{
	t->positions += s->positions;
	t->added += s->added;
	t->replaced += s->replaced;
	t->stats_merged += s->stats_merged;
	t->changed += s->changed;
	t->unchanged += s->unchanged;
	t->games_added += s->games_added;
	t->games_duplicate += s->games_duplicate;
	t->games_completed += s->games_completed;
	t->games_unlocated += s->games_unlocated;
	t->stats_clamped += s->stats_clamped;
	t->batches += s->batches;
	if (!t->bad_src && !t->bad_dst && (s->bad_src || s->bad_dst)) {
		t->first_bad = s->first_bad;
		t->first_bad_in_dst = s->first_bad_in_dst;
	}
	t->bad_src += s->bad_src;
	t->bad_dst += s->bad_dst;
	t->resumed = t->resumed || s->resumed;
	t->seconds += s->seconds;
}

typedef struct {
	const BookMergeBooksOptions *opt;
	const char *src;
} SourceProgress;

static void on_source_progress(void *ctx, uint64_t done, uint64_t total)
{
	const SourceProgress *p = ctx;
	p->opt->progress(p->opt->ctx, p->src, done, total);
}

int bookdb_merge_books(BookMergeStats *total, bool *ran_minimax, const char *dst_dir,
                       const BookDBOptions *dst_opt, const char *const *srcs, size_t n,
                       const BookMergeBooksOptions *opt, char *err)
{
	memset(total, 0, sizeof *total);
	*ran_minimax = false;
	err[0] = 0;
	BookMergeOptions each = opt->each;
	SourceProgress sp = {.opt = opt};
	each.progress = opt->progress ? on_source_progress : NULL;
	each.progress_ctx = &sp;
	BookDB *dst = NULL, **src = calloc(n ? n : 1, sizeof *src);
	if (!src) return errmsg_set(err, BOOKDB_MERGE_ERRLEN, BOOKDB_ENOMEM, "out of memory");
	/* The sources first: a missing one is found before dst is made. */
	int rc = 0;
	for (size_t k = 0; k < n && rc == 0; k++) {
		if (bookdb_same_book(dst_dir, srcs[k])) continue; /* dst itself: opened below */
		BookDBOptions ro = {.read_only = true, .random = true}; /* passes read ahead */
		rc = bookdb_open(&src[k], srcs[k], &ro, err);
	}
	if (rc == 0 && (rc = bookdb_open(&dst, dst_dir, dst_opt, err)) == BOOKDB_ENOBOOK &&
	    each.dry_run) {
		char msg[BOOKDB_MERGE_ERRLEN];
		snprintf(msg, sizeof msg, "%s", err);
		errmsg_set(err, BOOKDB_MERGE_ERRLEN, rc, "%s (a dry run creates no book)", msg);
	}
	for (size_t k = 0; k < n && rc == 0; k++) {
		sp.src = srcs[k];
		BookMergeStats st;
		rc = bookdb_merge(&st, dst, src[k] ? src[k] : dst, &each, err);
		if (opt->source_done) opt->source_done(opt->ctx, srcs[k], &st, rc, err);
		add_stats(total, &st);
	}
	for (size_t k = 0; k < n; k++) bookdb_free(src[k]);
	free(src);
	/* After writes of its own, or values left behind (a merge run again
	 * after its minimax was killed). */
	if (rc == 0 && !each.dry_run && book_minimax_hook_set(&opt->minimax) &&
	    (total->added || total->changed || total->resumed ||
	     book_minimax_hook_pending(&opt->minimax, dst))) {
		char msg[256];
		msg[0] = 0;
		if (book_minimax_hook_run(&opt->minimax, dst, msg, sizeof msg) < 0)
			rc = errmsg_set(err, BOOKDB_MERGE_ERRLEN, BOOKDB_EIO, "minimax: %s: %s",
			                bookdb_dir(dst), msg);
		else
			*ran_minimax = true;
	}
	bookdb_free(dst);
	return rc;
}

/* minimax/bookmm_shared.c — what the whole-book run (bookmm.c) and the
 * incremental one (bookinc.c) share: the leaf policy, a record's moves as graph
 * moves, the write-back of values, the kept state (bookmm_priv.h). */
#include "minimax/bookmm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bookdb/index.h"
#include "minimax/bookmm_priv.h"
#include "bookdb/check.h"
#include "minimax/graph.h"
#include "minimax/mmfile.h"
#include "shogi/errmsg.h"
#include "shogi/movegen.h"

#define F_VALUED 0x01 /* caller bit of the core's flags: the node has a value */
#define fail errmsg_set

/* ---- what both runs share ----------------------------------------------------- */

static int policy_min_depth(const BookmmPolicy *p)
{
	return p->min_depth > 0 ? p->min_depth : p->min_depth < 0 ? 0 : 1;
}

static uint32_t policy_blend_games(const BookmmPolicy *p)
{
	return p->blend_games ? p->blend_games : 10;
}

BookmmPolicy bookmm_policy_norm(const BookmmPolicy *p)
{
	BookmmPolicy n = *p;
	if (n.games_book != BOOKMM_GAMES_NONE) {
		/* Games alone: nothing else of the policy is used. */
		BookmmPolicy g = {.leaves = BOOKMM_LEAVES_THOUGHT,
		                  .min_depth = 1,
		                  .blend_games = 10,
		                  .games_book = n.games_book,
		                  .games_min = n.games_min ? n.games_min : 1};
		return g;
	}
	n.games_min = 0;
	n.min_depth = policy_min_depth(p) ? policy_min_depth(p) : BOOKMM_ANY_DEPTH;
	n.blend_games = policy_blend_games(p);
	if (n.blend < 0) n.blend = 0;
	if (n.blend > 1) n.blend = 1;
	/* As the state keeps it: millionths. */
	n.blend = (double)llround(n.blend * 1e6) / 1e6;
	if (n.leaves == BOOKMM_LEAVES_GAMES) {
		n.min_depth = 1;
		n.min_games = 0;
	}
	return n;
}

bool bookmm_policy_equal(const BookmmPolicy *a, const BookmmPolicy *b)
{
	BookmmPolicy x = bookmm_policy_norm(a), y = bookmm_policy_norm(b);
	return x.leaves == y.leaves && x.min_depth == y.min_depth && x.min_games == y.min_games &&
	       x.blend_games == y.blend_games && x.blend == y.blend &&
	       x.game_evals == y.game_evals && x.games_book == y.games_book &&
	       x.games_min == y.games_min;
}

bool bookmm_record_inner(const BookRecord *rec, const BookmmPolicy *p)
{
	if (p->games_book != BOOKMM_GAMES_NONE) return false;
	if (p->leaves == BOOKMM_LEAVES_GAMES) return true;
	if ((rec->flags & BOOKDB_REC_THOUGHT) && rec->think_depth >= policy_min_depth(p))
		return true;
	if (!p->min_games) return false;
	uint64_t games = 0;
	for (int m = 0; m < rec->nmoves; m++)
		if (rec->moves[m].flags & BOOKDB_MOVE_STATS) games += rec->moves[m].count;
	return games >= p->min_games;
}

bool bookmm_raw_inner(const uint8_t *raw, size_t len, const BookmmPolicy *p, BookRecord *rec)
{
	if (p->games_book != BOOKMM_GAMES_NONE) return false;
	if (p->leaves == BOOKMM_LEAVES_GAMES) return true;
	/* Flags, then min_ply (a varint), then think_depth when THOUGHT. */
	if (len >= 2 && (raw[0] & BOOKDB_REC_THOUGHT)) {
		size_t i = 1;
		while (i < len && (raw[i] & 0x80)) i++;
		if (i + 1 < len && raw[i + 1] >= policy_min_depth(p)) return true;
	}
	if (!p->min_games) return false;
	return bookdb_record_decode_moves(rec, raw, len) == 0 && bookmm_record_inner(rec, p);
}

/* A score rate as centipawns, YaneuraOu's logistic: 600 ln(p / (1 - p)),
 * p bounded to 0.01..0.99, over the move's games with a result: a game
 * without one (cut short, unfinished) is no loss (one such game alone
 * valued its move -2757); a move with none is even, 0. */
static int rate_cp(const BookMove *bm)
{
	uint64_t decided = (uint64_t)bm->wins + bm->draws + bm->losses;
	if (!decided) return 0;
	double rate = (bm->wins + 0.5 * bm->draws) / (double)decided;
	if (rate < 0.01) rate = 0.01;
	if (rate > 0.99) rate = 0.99;
	return (int)lround(600.0 * log(rate / (1 - rate)));
}

static int16_t eval_leaf(const BookMove *bm, const BookmmPolicy *p)
{
	int v = bm->eval;
	/* A mate score is a proof (or a clamped game claim, docs/ingest.md): no blend. */
	if (p->blend > 0 && (bm->flags & BOOKDB_MOVE_STATS) && bm->count >= policy_blend_games(p) &&
	    v > -VALUE_MATE_IN_MAX && v < VALUE_MATE_IN_MAX) {
		double w = p->blend > 1 ? 1 : p->blend;
		v = (int)lround((1 - w) * v + w * rate_cp(bm));
	}
	return bookmm_clamp(v);
}

/* Whether a games-only book values move bm (enough games, not avoided). */
static bool games_ok(const BookMove *bm, const BookmmPolicy *p)
{
	return (bm->flags & BOOKDB_MOVE_STATS) && !(bm->flags & BOOKDB_MOVE_AVOIDED) &&
	       bm->count > 0 && bm->count >= (p->games_min ? p->games_min : 1);
}

int bookmm_leaves(const BookRecord *rec, const BookmmPolicy *p, int16_t *value)
{
	int n = 0;
	if (p->games_book == BOOKMM_GAMES_NONE) {
		for (int m = 0; m < rec->nmoves; m++) {
			const BookMove *bm = &rec->moves[m];
			bool ev = p->game_evals ? (bm->flags & BOOKDB_MOVE_EVAL) != 0
			                        : bookdb_move_analysed(bm);
			value[m] = ev ? eval_leaf(bm, p) : BOOKMM_NOVALUE;
			n += ev;
		}
		return n;
	}
	int best = -1;
	for (int m = 0; m < rec->nmoves; m++) {
		const BookMove *bm = &rec->moves[m];
		bool ok = games_ok(bm, p);
		value[m] = ok && p->games_book == BOOKMM_GAMES_WINRATE ? (int16_t)rate_cp(bm)
		                                                       : BOOKMM_NOVALUE;
		n += ok && p->games_book == BOOKMM_GAMES_WINRATE;
		if (!ok || p->games_book != BOOKMM_GAMES_MOST_PLAYED) continue;
		const BookMove *b = best >= 0 ? &rec->moves[best] : NULL;
		/* The most played; ties by score rate, then the smaller move. */
		if (!b || bm->count > b->count ||
		    (bm->count == b->count &&
		     ((uint64_t)(2 * bm->wins + bm->draws) * b->count >
		          (uint64_t)(2 * b->wins + b->draws) * bm->count ||
		      ((uint64_t)(2 * bm->wins + bm->draws) * b->count ==
		           (uint64_t)(2 * b->wins + b->draws) * bm->count &&
		       bm->move < b->move))))
			best = m;
	}
	if (best >= 0) {
		value[best] = (int16_t)rate_cp(&rec->moves[best]);
		n = 1;
	}
	return n;
}

/*
 * bookmm_record_moves, and when kd is the key directory find searches, its
 * filter words are fetched for every child before the first is looked up.
 * Nearly every child is outside the book and is turned away by its filter
 * word alone, so the record's cost is those words' memory latency: asked for
 * together, they arrive together (whole-book run on a 10 M synth book: 36.9 s
 * looking the children up one by one, 33.0 s so). The children's keys come
 * first in any case, so that the lookups do not wait on move arithmetic.
 */
int bookmm_record_children(BookmmChildren *c, uint8_t *flags, Key key, const uint8_t *raw,
                           size_t len, BookRecord *rec, Position *pos, const BookmmPolicy *policy,
                           bool keys, char *why)
{
	*flags = 0;
	int nl, rc = bookdb_record_read(rec, pos, c->legal, &nl, key, raw, len, why);
	if (rc < 0) return rc;
	if (pos->side == WHITE) *flags |= MMF_WHITE;
	if (pos_in_check(pos)) *flags |= MMF_INCHECK;
	c->inner = bookmm_record_inner(rec, policy);
	if (c->inner) *flags |= MMF_INNER;
	c->shallow = !c->inner && (rec->flags & BOOKDB_REC_THOUGHT) &&
	             policy->games_book == BOOKMM_GAMES_NONE &&
	             policy->leaves == BOOKMM_LEAVES_THOUGHT;
	c->nlegal = nl;
	/* Moves joseki prune marked avoided are not the side to move's to play:
	 * neither edges nor leaves (docs/cycle.md). */
	if (rec->flags & BOOKDB_REC_AVOID) {
		int k = 0;
		for (int m = 0; m < nl; m++) {
			bool avoided = false;
			for (int q = 0; q < rec->nmoves && !avoided; q++)
				avoided = rec->moves[q].move == c->legal[m] &&
				          (rec->moves[q].flags & BOOKDB_MOVE_AVOIDED);
			if (!avoided) c->legal[k++] = c->legal[m];
		}
		/* Every move avoided: no value (not mated). The node stays inner or
		 * not as the policy says: its parents' edges depend on that. */
		nl = k;
	}
	c->nl = nl;
	bookmm_leaves(rec, policy, c->leafv);
	if (keys && c->inner)
		for (int m = 0; m < nl; m++) c->child[m] = pos_key_after(pos, c->legal[m]);
	return 0;
}

int bookmm_record_edges(MmMove *out, const BookmmChildren *c, const BookRecord *rec,
                        const BookmmLookup *lk, const uint32_t *found, const uint8_t *found_inner)
{
	BookmmFound f[MOVEGEN_MAX];
	int k = 0;
	for (int m = 0; c->inner && m < c->nl; m++)
		if (found[m] != MM_NONE)
			f[k++] = (BookmmFound){
			    c->legal[m], found[m],
			    lk->policy->leaves == BOOKMM_LEAVES_GAMES ||
			        (found_inner ? found_inner[m] != 0 : lk->inner(lk->ctx, found[m]))};
	return bookmm_found_edges(out, rec, c->leafv, c->nlegal == 0, lk, f, k,
	                          bookmm_promotion_pair(rec, f, k));
}

/* Whether move m of rec is a pawn, bishop or rook left unpromoted where its
 * promotion leads into the book (f) or has a leaf value not avoided, and m
 * is not preferred by hand: the book plays the promotion
 * (bookdb_move_declined), so m is neither an edge nor a leaf. */
static bool found_declined(Move m, const BookRecord *rec, const int16_t *leafv,
                           const BookmmFound *f, int nf)
{
	Move twin = move_declined_promotion(rec->board, m);
	if (twin == MOVE_NONE) return false;
	for (int q = 0; q < rec->nmoves; q++)
		if (rec->moves[q].move == m && (rec->moves[q].flags & BOOKDB_MOVE_PREFERRED))
			return false;
	for (int k = 0; k < nf; k++)
		if (f[k].move == twin) return true;
	for (int q = 0; q < rec->nmoves; q++)
		if (rec->moves[q].move == twin)
			return leafv[q] != BOOKMM_NOVALUE &&
			       !(rec->moves[q].flags & BOOKDB_MOVE_AVOIDED);
	return false;
}

bool bookmm_promotion_pair(const BookRecord *rec, const BookmmFound *f, int nf)
{
	int n = rec->nmoves + nf;
	for (int i = 0; i < n; i++) {
		Move m = i < rec->nmoves ? rec->moves[i].move : f[i - rec->nmoves].move;
		if (!move_is_promote(m) || move_is_drop(m)) continue;
		Move d = (Move)(m & ~MOVE_PROMOTE);
		for (int j = 0; j < n; j++)
			if ((j < rec->nmoves ? rec->moves[j].move : f[j - rec->nmoves].move) == d)
				return true;
	}
	return false;
}

int bookmm_found_edges(MmMove *out, const BookRecord *rec, const int16_t *leafv, bool mated,
                       const BookmmLookup *lk, const BookmmFound *f, int nf, bool pairs)
{
	int n = 0;
	for (int k = 0; k < nf; k++) {
		if (pairs && found_declined(f[k].move, rec, leafv, f, nf)) continue;
		/* Into a position only games passed through: the move's own
		 * evaluation (this position's analysis; a game's comment only
		 * with game_evals) values it, not whatever that position's line
		 * ends in. */
		if (lk->policy->leaves != BOOKMM_LEAVES_GAMES && !f[k].inner) {
			bool evald = false;
			for (int q = 0; q < rec->nmoves && !evald; q++)
				evald =
				    rec->moves[q].move == f[k].move && leafv[q] != BOOKMM_NOVALUE;
			if (evald) continue;
		}
		out[n++] = (MmMove){f[k].move, 0, f[k].node};
	}
	/* Of the leaves only the best one matters to the analysis (equal leaves
	 * are the same (value, 0) pair): keeping one makes the relaxation sweeps
	 * walk edges, not leaves. The write-back values the others by their evals. */
	int nedges = n;
	MmMove best = {MOVE_NONE, 0, MM_NONE};
	for (int m = 0; m < rec->nmoves; m++) {
		const BookMove *bm = &rec->moves[m];
		if (leafv[m] == BOOKMM_NOVALUE || (bm->flags & BOOKDB_MOVE_AVOIDED) ||
		    bm->move == MOVE_NONE || (pairs && found_declined(bm->move, rec, leafv, f, nf)))
			continue;
		bool edge = false;
		for (int q = 0; q < nedges && !edge; q++) edge = out[q].move == bm->move;
		if (edge) continue;
		int16_t v = leafv[m];
		if (best.move == MOVE_NONE || v > best.value) best = (MmMove){bm->move, v, MM_NONE};
	}
	if (best.move != MOVE_NONE) out[n++] = best;
	/* No legal move: mated (a drop-pawn mate, a stalemate alike). */
	if (mated) out[n++] = (MmMove){MOVE_NONE, -MM_VALUE_MAX, MM_NONE};
	return n;
}

int bookmm_record_moves_kd(MmMove *out, uint8_t *flags, Key key, const uint8_t *raw, size_t len,
                           BookRecord *rec, Position *pos, BookmmChildren *c,
                           const BookmmLookup *lk, const BookKeyDir *kd, char *why)
{
	int rc = bookmm_record_children(c, flags, key, raw, len, rec, pos, lk->policy, true, why);
	if (rc < 0) return rc;
	uint32_t found[MOVEGEN_MAX];
	if (c->inner) {
		size_t at[MOVEGEN_MAX];
		if (kd) {
			bookdb_keydir_find_many(kd, c->child, (size_t)c->nl, at);
			for (int m = 0; m < c->nl; m++)
				found[m] = at[m] == BOOKDB_KEYDIR_NONE ? MM_NONE : (uint32_t)at[m];
		} else if (lk->find_many) {
			lk->find_many(lk->ctx, c->child, (size_t)c->nl, found);
		} else {
			for (int m = 0; m < c->nl; m++) found[m] = lk->find(lk->ctx, c->child[m]);
		}
	}
	return bookmm_record_edges(out, c, rec, lk, found, NULL);
}

int bookmm_record_moves(MmMove *out, uint8_t *flags, Key key, const uint8_t *raw, size_t len,
                        BookRecord *rec, Position *pos, const BookmmLookup *lk, char *why)
{
	BookmmChildren c;
	return bookmm_record_moves_kd(out, flags, key, raw, len, rec, pos, &c, lk, NULL, why);
}

/* Sets rec's minimax fields; returns true when anything changed. */
static bool apply(BookRecord *rec, bool valued, const BookmmEdge *edges, int nedges,
                  const BookmmPolicy *p)
{
	bool changed = false;
	uint8_t flags = valued ? (uint8_t)(rec->flags | BOOKDB_REC_MINIMAX)
	                       : (uint8_t)(rec->flags & ~BOOKDB_REC_MINIMAX);
	/* Every record of a games-only book says so, valued or not: its
	 * analyses are no values there either. */
	flags = p->games_book != BOOKMM_GAMES_NONE ? (uint8_t)(flags | BOOKDB_REC_GAMES)
	                                           : (uint8_t)(flags & ~BOOKDB_REC_GAMES);
	int16_t leafv[BOOKDB_MAX_MOVES];
	bookmm_leaves(rec, p, leafv);
	if (flags != rec->flags) changed = true;
	rec->flags = flags;
	uint16_t n0 = rec->nmoves;
	for (uint16_t m = 0; m < n0; m++) {
		int16_t v = valued ? BOOKMM_NOVALUE : 0;
		uint16_t d = 0;
		bool edge = false;
		for (int k = 0; k < nedges && !edge; k++)
			if (edges[k].move == rec->moves[m].move) {
				v = edges[k].vd.value;
				d = edges[k].vd.depth;
				edge = true;
			}
		/* Not an edge: a leaf valued by its evaluation. An avoided move
		 * shows its own evaluation too (for query --with-avoided); it is no
		 * part of the node's value. */
		if (valued && !edge && leafv[m] != BOOKMM_NOVALUE) v = leafv[m];
		if (rec->moves[m].value != v || rec->moves[m].dist != d) changed = true;
		rec->moves[m].value = v;
		rec->moves[m].dist = d;
	}
	/* Transposition edges the record does not list yet become moves of it. */
	for (int k = 0; k < nedges; k++) {
		if (rec->nmoves >= BOOKDB_MAX_MOVES) break;
		bool listed = false;
		for (uint16_t m = 0; m < n0 && !listed; m++)
			listed = rec->moves[m].move == edges[k].move;
		if (listed) continue;
		BookMove *bm = &rec->moves[rec->nmoves++];
		memset(bm, 0, sizeof *bm);
		bm->move = edges[k].move;
		bm->value = edges[k].vd.value;
		bm->dist = edges[k].vd.depth;
		changed = true;
	}
	return changed;
}

int bookmm_rewrite(uint8_t *out, const uint8_t *raw, size_t len, BookRecord *rec, bool valued,
                   const BookmmEdge *edges, int nedges, bool force, const BookmmPolicy *p)
{
	/* Only the moves change: the packed position is copied as it is. */
	int head = bookdb_record_decode_head(rec, raw, len);
	if (head < 0) return head;
	if (!apply(rec, valued, edges, nedges, p) && !force) return 0;
	return bookdb_record_encode_packed(out, BOOKDB_RECORD_MAX, rec, raw + head,
	                                   len - (size_t)head);
}

/* The node flags the core and the graph file share, bit for bit. */
static const struct {
	MmFlags core;
	uint8_t file;
} SHARED_FLAGS[] = {{F_VALUED, MMF_VALUED},
                    {MM_F_CHECKED, MMF_CHECKED},
                    {MM_F_LOOP, MMF_LOOP},
                    {MM_F_CONST, MMF_CONST},
                    {MM_F_SURVIVOR, MMF_SURVIVOR}};

uint8_t bookmm_file_flags(MmFlags core, uint8_t structure)
{
	uint8_t f = structure & (MMF_INCHECK | MMF_WHITE | MMF_INNER);
	for (size_t i = 0; i < sizeof SHARED_FLAGS / sizeof *SHARED_FLAGS; i++)
		if (core & SHARED_FLAGS[i].core) f |= SHARED_FLAGS[i].file;
	return f;
}

MmFlags bookmm_core_flags(uint8_t file)
{
	MmFlags r = (file & MMF_WHITE) ? MM_F_WHITE : 0;
	for (size_t i = 0; i < sizeof SHARED_FLAGS / sizeof *SHARED_FLAGS; i++)
		if (file & SHARED_FLAGS[i].file) r |= SHARED_FLAGS[i].core;
	return r;
}

/* meta "mmstate": u32 version (4), u32 0, then u64 stamp, journal_len, seq,
 * i32 draw_black, draw_white, u64 positions, valued, settled, moves, edges,
 * then the leaf policy: u32 leaves, u32 min_depth, u32 min_games, u32
 * blend_games, i64 blend × 10^6, u8 game_evals, u8 games_book, u16 0, u32
 * games_min; all little-endian. A state of another version is not read (the
 * next run is a whole-book one): 4 since declined promotions no longer count
 * (bookmm_found_edges), so that a book minimaxed before is analysed anew. */
#define STATE_VERSION 4
#define STATE_LEN 112

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int bookmm_writes_since(uint64_t *n, BookTxn *txn)
{
	*n = 0;
	BookmmState st;
	BookChangesInfo ci;
	int rc = bookmm_state_get(&st, txn);
	if (rc == BOOKDB_ENOTFOUND) return 0;
	if (rc < 0 || (rc = bookdb_changes_info(&ci, txn)) < 0) return rc;
	if (ci.state == BOOKDB_CHANGES_OFF) return 0;
	*n = ci.seq > st.seq ? ci.seq - st.seq : 0;
	return 1;
}

int bookmm_state_get(BookmmState *out, BookTxn *txn)
{
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "mmstate", 7);
	if (rc) return rc;
	const uint8_t *p = v;
	if (len != STATE_LEN || (uint32_t)get64(p) != STATE_VERSION) return BOOKDB_ENOTFOUND;
	out->stamp = get64(p + 8);
	out->journal_len = get64(p + 16);
	out->seq = get64(p + 24);
	uint64_t d = get64(p + 32);
	out->draw[0] = (int32_t)(uint32_t)d;
	out->draw[1] = (int32_t)(uint32_t)(d >> 32);
	out->positions = get64(p + 40);
	out->valued = get64(p + 48);
	out->settled = get64(p + 56);
	out->moves = get64(p + 64);
	out->edges = get64(p + 72);
	uint64_t a = get64(p + 80), b = get64(p + 88);
	out->policy.leaves = (BookmmLeaves)(uint32_t)a;
	out->policy.min_depth = (int)(uint32_t)(a >> 32);
	out->policy.min_games = (uint32_t)b;
	out->policy.blend_games = (uint32_t)(b >> 32);
	out->policy.blend = (double)(int64_t)get64(p + 96) / 1e6;
	uint64_t c = get64(p + 104);
	out->policy.game_evals = (c & 0xff) != 0;
	out->policy.games_book = (BookmmGamesBook)((c >> 8) & 0xff);
	out->policy.games_min = (uint32_t)(c >> 32);
	return 0;
}

int bookmm_state_put(BookTxn *txn, const BookmmState *st)
{
	uint8_t p[STATE_LEN];
	put64(p, STATE_VERSION);
	put64(p + 8, st->stamp);
	put64(p + 16, st->journal_len);
	put64(p + 24, st->seq);
	put64(p + 32, (uint64_t)(uint32_t)st->draw[0] | (uint64_t)(uint32_t)st->draw[1] << 32);
	put64(p + 40, st->positions);
	put64(p + 48, st->valued);
	put64(p + 56, st->settled);
	put64(p + 64, st->moves);
	put64(p + 72, st->edges);
	const BookmmPolicy *q = &st->policy;
	put64(p + 80, (uint64_t)q->leaves | (uint64_t)(uint32_t)q->min_depth << 32);
	put64(p + 88, (uint64_t)q->min_games | (uint64_t)q->blend_games << 32);
	put64(p + 96, (uint64_t)(int64_t)llround(q->blend * 1e6));
	put64(p + 104, (uint64_t)(q->game_evals ? 1 : 0) | (uint64_t)(q->games_book & 0xff) << 8 |
	                   (uint64_t)q->games_min << 32);
	return bookdb_kv_put(txn, BOOKDB_META, "mmstate", 7, p, sizeof p);
}

int bookmm_summary_put(BookTxn *txn, const BookmmStats *st, const BookmmOptions *opt)
{
	char meta[256];
	int ml = snprintf(meta, sizeof meta,
	                  "{\"positions\":%zu,\"valued\":%zu,\"settled\":%zu,\"cyclic\":%zu,"
	                  "\"draw_black\":%d,\"draw_white\":%d,\"time\":%lld}",
	                  st->positions, st->valued, st->settled, st->cyclic, opt->draw_black,
	                  opt->draw_white, (long long)time(NULL));
	return bookdb_kv_put(txn, BOOKDB_META, BOOKDB_META_MINIMAX, strlen(BOOKDB_META_MINIMAX),
	                     meta, (size_t)ml);
}

int bookmm_fullrun_pending(BookTxn *txn, bool *hole)
{
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, BOOKMM_META_FULLRUN,
	                       strlen(BOOKMM_META_FULLRUN));
	*hole = rc == 0 && !(len == 1 && ((const char *)v)[0] == '0');
	return rc == 0 ? 1 : rc == BOOKDB_ENOTFOUND ? 0 : rc;
}

bool bookmm_never_ran(BookTxn *txn)
{
	const void *v;
	size_t len;
	BookCounts c;
	return bookdb_kv_get(&v, &len, txn, BOOKDB_META, BOOKDB_META_MINIMAX,
	                     strlen(BOOKDB_META_MINIMAX)) == BOOKDB_ENOTFOUND &&
	       bookdb_counts(&c, txn) == 0 && c.kept && c.thought;
}

bool bookmm_pending(BookDB *db)
{
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, db, false) < 0) return false;
	uint64_t since = 0;
	bool pending =
	    bookdb_minimax_unfinished(txn) || (bookmm_writes_since(&since, txn) == 1 && since > 0);
	bookdb_txn_abort(txn);
	return pending;
}

void bookmm_report(const BookmmOptions *opt, const char *phase, size_t done, size_t total)
{
	if (opt->progress) opt->progress(opt->progress_ctx, phase, done, total);
}

int bookmm_stop_error(char *err, const char *where)
{
	return fail(err, BOOKMM_ERRLEN, BOOKMM_ESTOPPED, "stopped while %s", where);
}

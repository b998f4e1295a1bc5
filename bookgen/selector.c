/*
 * bookgen/selector.c — the ranged alpha-beta selector over the in-memory book
 * graph (bookgen/selector.h, docs/bookgen.md); the graph itself is
 * selector_graph.c.
 */
#include "bookgen/selector_priv.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/grow.h"
#include "shogi/notation.h"

static int leaf_value(const Selector *s, const SelEdge *e)
{
	int v = e->eval;
	if (e->flags & EF_KIF) v += s->opt.kif_bonus;
	return value_clamp(v);
}

/*
 * Fail-soft negamax with PVS over the graph. Returns the value of node i for
 * its side to move; *noleaf when no move below is selectable (the parent then
 * treats the move as absent). *rmin is the smallest path ply that a repetition
 * below referred to: a bound that depends on the path above i is not stored.
 */
static int search(Selector *s, uint32_t i, int alpha, int beta, int ply, bool pv, int *rmin,
                  bool *noleaf)
{
	*noleaf = false;
	*rmin = INT_MAX;
	SelNode *n = &s->nodes[i];
	if (!pv && n->bound != B_NONE) {
		int v = n->value;
		if (n->bound == B_NOLEAF) {
			s->st.tt_hits++;
			*noleaf = true;
			return 0;
		}
		if (n->bound == B_EXACT || (n->bound == B_LOWER && v >= beta) ||
		    (n->bound == B_UPPER && v <= alpha)) {
			s->st.tt_hits++;
			return v;
		}
	}
	if (!(n->flags & NF_EXPANDED)) {
		int r = sel_g_expand(s, i);
		if (r) {
			if (!s->err) s->err = r;
			*noleaf = true;
			return 0;
		}
		n = &s->nodes[i];
	}
	s->st.visits++;
	n->flags = (uint8_t)((n->flags & ~NF_STALE) | NF_ONPATH);
	n->ply = (uint16_t)ply;
	s->pvlen[ply] = 0;
	int alpha0 = alpha, best = -SEL_INF, bestk = -1, usable = 0, rm = INT_MAX;
	int ne = n->nedges, hint = n->best < ne ? n->best : -1;
	uint32_t off = n->edge_off;
	for (int t = -1; t < ne; t++) {
		int k = t < 0 ? hint : t;
		if (k < 0 || (t >= 0 && t == hint)) continue;
		SelEdge e = s->edges[off + k];
		if (e.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[e.child];
		if (cn->flags & NF_LEASED) continue;
		int v;
		bool child_pv = false;
		if (cn->flags & NF_ONPATH) {
			v = s->opt.draw_value;
			if (cn->ply < rm) rm = cn->ply;
		} else if (cn->flags & NF_THOUGHT) {
			if (ply + 1 >= SEL_MAX_PLY) continue;
			int cr;
			bool cnl;
			if (pv && usable == 0) {
				v = -search(s, (uint32_t)e.child, -beta, -alpha, ply + 1, true, &cr,
				            &cnl);
				child_pv = true;
			} else {
				v = -search(s, (uint32_t)e.child, -alpha - 1, -alpha, ply + 1,
				            false, &cr, &cnl);
				if (!cnl && pv && v > alpha && v < beta) {
					int cr2;
					v = -search(s, (uint32_t)e.child, -beta, -alpha, ply + 1,
					            true, &cr2, &cnl);
					if (cr2 < cr) cr = cr2;
					child_pv = true;
				}
			}
			if (cnl) continue;
			if (cr < rm) rm = cr;
		} else {
			if (!(e.flags & EF_EVAL)) continue;
			v = leaf_value(s, &e);
		}
		usable++;
		if (v > best) {
			best = v;
			bestk = k;
			if (pv) {
				s->pv[ply][0] = off + (uint32_t)k;
				int len = 1;
				if (child_pv) {
					for (int j = 0; j < s->pvlen[ply + 1]; j++)
						s->pv[ply][len++] = s->pv[ply + 1][j];
				}
				s->pvlen[ply] = len;
			}
			if (v > alpha) alpha = v;
			if (v >= beta) break;
		}
	}
	n = &s->nodes[i];
	n->flags &= (uint8_t)~NF_ONPATH;
	*rmin = rm;
	if (!usable) {
		*noleaf = true;
		if (rm >= ply) n->bound = B_NOLEAF;
		return 0;
	}
	n->best = (uint16_t)bestk;
	if (rm >= ply) {
		n->bound = best >= beta ? B_LOWER : best > alpha0 ? B_EXACT : B_UPPER;
		n->value = (int16_t)best;
	}
	return best;
}

int sel_add_result(Selector *s, Key key, const BookRecord *rec)
{
	int len = bookdb_record_encode(s->enc, BOOKDB_RECORD_MAX, rec);
	if (len < 0) return SEL_EINVAL;
	int64_t i = sel_g_find_or_create(s, key);
	if (i < 0) return (int)i;
	SelNode *n = &s->nodes[i];
	n->flags &= (uint8_t)~NF_LEASED;
	if (rec->flags & BOOKDB_REC_THOUGHT) {
		int r = sel_g_add_raw(s, (uint32_t)i, s->enc, (size_t)len);
		if (r) return r;
	}
	return sel_g_invalidate_later(s, (uint32_t)i);
}

int sel_lease(Selector *s, Key key)
{
	int64_t i = sel_g_find_or_create(s, key);
	if (i < 0) return (int)i;
	s->nodes[i].flags |= NF_LEASED;
	return sel_g_invalidate_later(s, (uint32_t)i);
}

int sel_release(Selector *s, Key key)
{
	int64_t i = sel_g_find_node(s, key);
	if (i < 0) return 0;
	s->nodes[i].flags &= (uint8_t)~NF_LEASED;
	return sel_g_invalidate_later(s, (uint32_t)i);
}

bool sel_is_leased(const Selector *s, Key key)
{
	int64_t i = sel_g_find_node(s, key);
	return i >= 0 && (s->nodes[i].flags & NF_LEASED);
}

bool sel_is_thought(const Selector *s, Key key)
{
	int64_t i = sel_g_find_node(s, key);
	return i >= 0 && (s->nodes[i].flags & NF_THOUGHT);
}

static int root_value(int *value, bool *has_leaf, Selector *s, int r)
{
	if (r < 0 || (size_t)r >= s->nroots) return SEL_EINVAL;
	uint32_t root = s->roots[r].node;
	*value = 0;
	*has_leaf = false;
	if (!(s->nodes[root].flags & NF_THOUGHT)) {
		*has_leaf = !(s->nodes[root].flags & NF_LEASED);
		return 0;
	}
	int rm;
	bool nl;
	s->err = 0;
	int v = search(s, root, -SEL_INF, SEL_INF, 0, true, &rm, &nl);
	if (s->err) return s->err;
	*value = v;
	*has_leaf = !nl;
	return 0;
}

/* One selection from root r: 1 (out filled), 0 (nothing selectable), error. */
static int select_root(SelLeaf *out, Selector *s, int r)
{
	uint32_t root = s->roots[r].node;
	if (!(s->nodes[root].flags & NF_THOUGHT)) {
		/* An unthought root is itself the position to think about. */
		if (s->nodes[root].flags & NF_LEASED) return 0;
		out->root = r;
		out->key = s->nodes[root].key;
		out->value = 0;
		out->nmoves = 0;
		return 1;
	}
	for (;;) {
		int rm;
		bool nl;
		s->err = 0;
		int v = search(s, root, -SEL_INF, SEL_INF, 0, true, &rm, &nl);
		if (s->err) return s->err;
		if (nl || s->pvlen[0] == 0) return 0;
		uint32_t node = root, parent = root, last = 0;
		for (int j = 0; j < s->pvlen[0]; j++) {
			last = s->pv[0][j];
			parent = node;
			node = (uint32_t)s->edges[last].child;
			out->moves[j] = s->edges[last].move;
		}
		if (s->nodes[node].flags & NF_THOUGHT) {
			/* The PV ends in a move back into the path: ban it so that the
			 * selection moves on instead of stalling on the cycle. */
			s->edges[last].flags |= EF_BANNED;
			s->st.bans++;
			int e = sel_g_invalidate(s, parent);
			if (e) return e;
			continue;
		}
		out->root = r;
		out->key = s->nodes[node].key;
		out->value = v;
		out->nmoves = s->pvlen[0];
		return 1;
	}
}

static int select_any(SelLeaf *out, Selector *s)
{
	for (size_t t = 0; t < s->nroots; t++) {
		size_t r = (s->next_root + t) % s->nroots;
		int got = select_root(out, s, (int)r);
		if (got < 0) return got;
		if (got) {
			s->next_root = (r + 1) % s->nroots;
			return 1;
		}
	}
	return 0;
}

typedef struct {
	SelLeaf *out;
	size_t max, count;
	int root, root_value, window, book_side;
	Color root_side;
	SelBatchMode mode;
	uint32_t stamp;
	Move path[SEL_MAX_PLY];
} Batch;

static void add_leaf(Selector *s, Batch *b, uint32_t c, int ply, Move m, int value)
{
	if (b->count >= b->max || s->nodes[c].stamp == b->stamp) return;
	s->nodes[c].stamp = b->stamp;
	SelLeaf *l = &b->out[b->count++];
	l->root = b->root;
	l->key = s->nodes[c].key;
	l->value = value;
	memcpy(l->moves, b->path, (size_t)ply * sizeof(Move));
	l->moves[ply] = m;
	l->nmoves = ply + 1;
}

/* Collects the leaves below thought node i whose moves pass each side's bar. */
static int collect(Selector *s, Batch *b, uint32_t i, int ply)
{
	if (s->nodes[i].stamp == b->stamp || b->count >= b->max) return 0;
	Color side = (Color)(b->root_side ^ (ply & 1));
	int bar;
	int rm;
	bool nl;
	if (b->mode == SEL_BATCH_SQRT && (int)side == b->book_side) {
		bar = search(s, i, -SEL_INF, SEL_INF, ply, true, &rm, &nl);
		if (s->err) return s->err;
		if (nl) return 0;
	} else {
		bar = side == b->root_side ? b->root_value - b->window : -b->root_value - b->window;
	}
	bar = value_clamp(bar);
	s->nodes[i].stamp = b->stamp;
	if (!(s->nodes[i].flags & NF_EXPANDED)) {
		int r = sel_g_expand(s, i);
		if (r) return r;
	}
	s->nodes[i].flags |= NF_ONPATH;
	s->nodes[i].ply = (uint16_t)ply;
	int ret = 0;
	int ne = s->nodes[i].nedges;
	for (int k = 0; k < ne && !ret; k++) {
		SelEdge e = s->edges[s->nodes[i].edge_off + (uint32_t)k];
		if (e.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[e.child];
		if (cn->flags & (NF_LEASED | NF_ONPATH)) continue;
		if (cn->flags & NF_THOUGHT) {
			if (ply + 1 >= SEL_MAX_PLY) continue;
			int v =
			    -search(s, (uint32_t)e.child, -bar, -bar + 1, ply + 1, false, &rm, &nl);
			if (s->err)
				ret = s->err;
			else if (!nl && v >= bar) {
				b->path[ply] = e.move;
				ret = collect(s, b, (uint32_t)e.child, ply + 1);
			}
		} else if (e.flags & EF_EVAL) {
			int v = leaf_value(s, &e);
			if (v >= bar)
				add_leaf(s, b, (uint32_t)e.child, ply, e.move,
				         side == b->root_side ? v : -v);
		}
	}
	s->nodes[i].flags &= (uint8_t)~NF_ONPATH;
	return ret;
}

typedef struct {
	const SelLeaf *leaves;
	int value;
} GapCtx;

/* Closest to the root value first; ties in collection order (stored move
 * order: best first). */
static int cmp_gap(const void *a, const void *b, void *ctx)
{
	const GapCtx *g = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int gx = abs(g->leaves[x].value - g->value), gy = abs(g->leaves[y].value - g->value);
	if (gx != gy) return gx < gy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int sort_leaves(SelLeaf *out, size_t n, int value)
{
	if (n < 2) return 0;
	uint32_t *idx = malloc(n * sizeof *idx);
	SelLeaf *tmp = malloc(n * sizeof *tmp);
	if (!idx || !tmp) {
		free(idx);
		free(tmp);
		return SEL_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
	GapCtx g = {out, value};
	qsort_r(idx, n, sizeof *idx, cmp_gap, &g);
	for (size_t i = 0; i < n; i++) tmp[i] = out[idx[i]];
	memcpy(out, tmp, n * sizeof *tmp);
	free(idx);
	free(tmp);
	return 0;
}

static int select_batch(SelLeaf *out, size_t max, Selector *s, int window, SelBatchMode mode,
                        int book_side)
{
	Batch *b = calloc(1, sizeof *b);
	if (!b) return SEL_ENOMEM;
	b->out = out;
	b->max = max;
	b->window = window < 0 ? 0 : window;
	b->mode = mode;
	b->stamp = ++s->stamp;
	int ret = 0;
	for (size_t r = 0; r < s->nroots && b->count < max && !ret; r++) {
		uint32_t root = s->roots[r].node;
		b->root = (int)r;
		b->root_side = s->roots[r].side;
		b->book_side = book_side < 0 ? (int)b->root_side : book_side;
		size_t first = b->count;
		if (!(s->nodes[root].flags & NF_THOUGHT)) {
			if (!(s->nodes[root].flags & NF_LEASED) &&
			    s->nodes[root].stamp != b->stamp) {
				s->nodes[root].stamp = b->stamp;
				SelLeaf *l = &out[b->count++];
				l->root = (int)r;
				l->key = s->nodes[root].key;
				l->value = 0;
				l->nmoves = 0;
			}
			continue;
		}
		int v, rm;
		bool nl;
		s->err = 0;
		v = search(s, root, -SEL_INF, SEL_INF, 0, true, &rm, &nl);
		if (s->err) {
			ret = s->err;
			break;
		}
		if (nl) continue;
		b->root_value = v;
		ret = collect(s, b, root, 0);
		if (!ret) ret = sort_leaves(out + first, b->count - first, v);
	}
	size_t n = b->count;
	free(b);
	return ret < 0 ? ret : (int)n;
}

void sel_get_stats(SelStats *out, const Selector *s)
{
	*out = s->st;
	out->filter_ready =
	    atomic_load_explicit(&((Selector *)s)->bloom_ready, memory_order_acquire);
}

void sel_clear_bounds(Selector *s)
{
	for (size_t i = 0; i < s->nnodes; i++) s->nodes[i].bound = B_NONE;
}

int sel_select(SelLeaf *out, Selector *s)
{
	int r = sel_g_call_begin(s);
	if (!r) r = select_any(out, s);
	sel_g_call_end(s);
	return r;
}

int sel_root_value(int *value, bool *has_leaf, Selector *s, int root)
{
	int r = sel_g_call_begin(s);
	if (!r) r = root_value(value, has_leaf, s, root);
	sel_g_call_end(s);
	return r;
}

int sel_select_batch(SelLeaf *out, size_t max, Selector *s, int window, SelBatchMode mode,
                     int book_side)
{
	int r = sel_g_call_begin(s);
	if (!r) r = select_batch(out, max, s, window, mode, book_side);
	sel_g_call_end(s);
	return r;
}

int sel_leaf_position(Position *pos, const char *root_sfen, const SelLeaf *leaf)
{
	if (sfen_parse(pos, root_sfen, NULL, NULL) < 0) return SEL_EINVAL;
	for (int j = 0; j < leaf->nmoves; j++) {
		if (!pos_is_legal(pos, leaf->moves[j])) return SEL_EINVAL;
		pos_do_move(pos, leaf->moves[j]);
	}
	return 0;
}

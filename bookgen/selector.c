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

/* What a search's value depended on of the path above it: the on-path nodes
 * its repetitions met (draws), the shallowest one's ply (rm; INT_MAX: none);
 * over: more nodes than SEL_DEP_MAX, not all kept (rm still counts them). */
typedef struct {
	int rm;
	int n;
	bool over;
	uint32_t node[SEL_DEP_MAX];
} Dep;

/* Nothing met (the nodes' array left as it is: only n of them count). */
static inline void dep_none(Dep *d)
{
	d->rm = INT_MAX;
	d->n = 0;
	d->over = false;
}

static void dep_add(Dep *d, uint32_t node, int ply)
{
	if (ply < d->rm) d->rm = ply;
	for (int k = 0; k < d->n; k++)
		if (d->node[k] == node) return;
	if (d->n < SEL_DEP_MAX)
		d->node[d->n++] = node;
	else
		d->over = true;
}

/* A child's dependence added to its parent's (the nodes still on the path). */
static void dep_merge(const Selector *s, Dep *d, const Dep *c)
{
	if (c->rm < d->rm) d->rm = c->rm;
	d->over |= c->over;
	for (int k = 0; k < c->n; k++) dep_add(d, c->node[k], s->nodes[c->node[k]].ply);
}

/* Node i's path-dependent bound, if every node it depended on is on the path
 * again (*d: they, at their plies now). */
static const SelPathBound *pb_find(const Selector *s, uint32_t i, Dep *d)
{
	if (!s->pbound) return NULL;
	const SelPathBound *b = &s->pbound[sel_pb_slot(s, i)];
	if (b->node != i + 1) return NULL;
	for (int k = 0; k < b->n; k++)
		if (!(s->nodes[b->dep[k]].flags & NF_ONPATH)) return NULL;
	for (int k = 0; k < b->n; k++) dep_add(d, b->dep[k], s->nodes[b->dep[k]].ply);
	return b;
}

/* Most slots the table grows to: a 32nd of the selector's budget (1M, 40
 * MiB, without one), at least 4,096. */
static size_t pb_max_slots(const Selector *s)
{
	uint64_t want = s->memory ? s->memory / 32 / sizeof(SelPathBound) : (uint64_t)1 << 20;
	size_t n = 4096;
	while ((uint64_t)n * 2 <= want) n *= 2;
	return n;
}

/* Node i's bound at ply, which depended on d's nodes above it. The table
 * grows fourfold, to its most at the last (forgetting what it held), once
 * it has taken as many bounds as it has slots; without memory for it,
 * nothing is kept. */
static void pb_store(Selector *s, uint32_t i, int ply, const Dep *d, int value, uint8_t bound)
{
	size_t slots = s->pbound ? s->pbound_mask + 1 : 0, most = pb_max_slots(s);
	if (!s->pbound || (s->pbound_stored >= slots && slots < most)) {
		size_t want = slots ? slots * 4 : 4096;
		if (want > most) want = most;
		SelPathBound *t = calloc(want, sizeof *t);
		if (!t) return;
		free(s->pbound);
		s->pbound = t;
		s->pbound_mask = want - 1;
		s->pbound_stored = 0;
	}
	SelPathBound b = {i + 1, (int16_t)value, bound, 0, {0}};
	for (int k = 0; k < d->n; k++)
		if (s->nodes[d->node[k]].ply < ply) b.dep[b.n++] = d->node[k];
	s->pbound_stored++;
	s->st.path_bounds++;
	s->pbound[sel_pb_slot(s, i)] = b;
}

void sel_pb_clear(Selector *s)
{
	free(s->pbound);
	s->pbound = NULL;
	s->pbound_mask = s->pbound_stored = 0;
}

uint64_t sel_pb_bytes(const Selector *s)
{
	return s->pbound ? (uint64_t)(s->pbound_mask + 1) * sizeof(SelPathBound) : 0;
}

/* Whether a stored bound answers a search of (alpha, beta); *v its value. */
static bool bound_decides(int *v, uint8_t bound, int value, int alpha, int beta)
{
	*v = value;
	return bound == B_NOLEAF || bound == B_EXACT || (bound == B_LOWER && value >= beta) ||
	       (bound == B_UPPER && value <= alpha);
}

/*
 * Fail-soft negamax with PVS over the graph. Returns the value of node i for
 * its side to move; *noleaf when no move below is selectable (the parent then
 * treats the move as absent). *dep: what of the path above i the value
 * depended on (repetitions below met nodes on it): such a bound is stored
 * apart (pb_store), for whenever those nodes are on the path again.
 */
static int search(Selector *s, uint32_t i, int alpha, int beta, int ply, bool pv, Dep *dep,
                  bool *noleaf)
{
	*noleaf = false;
	dep_none(dep);
	if (sel_g_yield(s, 1)) {
		*noleaf = true;
		return 0;
	}
	SelNode *n = &s->nodes[i];
	int hv;
	if (!pv && n->bound != B_NONE && bound_decides(&hv, n->bound, n->value, alpha, beta)) {
		s->st.tt_hits++;
		*noleaf = n->bound == B_NOLEAF;
		return *noleaf ? 0 : hv;
	}
	const SelPathBound *pb = NULL;
	if (!pv && (pb = pb_find(s, i, dep)) &&
	    bound_decides(&hv, pb->bound, pb->value, alpha, beta)) {
		s->st.tt_hits++;
		s->st.path_hits++;
		*noleaf = pb->bound == B_NOLEAF;
		return *noleaf ? 0 : hv;
	}
	dep_none(dep);
	if (!(n->flags & NF_EXPANDED)) {
		if (sel_g_yield(s, SEL_YIELD_VISITS)) {
			*noleaf = true;
			return 0;
		}
		int r = sel_g_expand(s, i);
		if (r) {
			if (!s->err) s->err = r;
			*noleaf = true;
			return 0;
		}
		n = &s->nodes[i];
	}
	s->st.visits++;
	n->seen = s->epoch;
	n->flags = (uint8_t)((n->flags & ~NF_STALE) | NF_ONPATH);
	n->ply = (uint16_t)ply;
	s->pvlen[ply] = 0;
	int alpha0 = alpha, best = -SEL_INF, bestk = -1, usable = 0, looked = 0;
	int ne = n->u.e.n, hint = n->u.e.best < ne ? n->u.e.best : -1;
	uint32_t off = n->u.e.off;
	for (int t = -1; t < ne; t++) {
		int k = t < 0 ? hint : t;
		if (k < 0 || (t >= 0 && t == hint)) continue;
		SelEdge e = s->edges[off + k];
		if (e.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[e.child];
		if (cn->flags & NF_LEASED) continue;
		/* A PV node looks at every child: their records are read ahead at
		 * once. Another node's first child mostly refutes it alone (a cut):
		 * its siblings are read ahead once it did not (read with the first,
		 * more than half of them were never used: docs/bookgen.md). */
		int r = sel_g_resolve_in(s, i, (uint32_t)e.child, pv || looked++ > 0);
		if (r) {
			if (!s->err) s->err = r;
			continue;
		}
		int v;
		bool child_pv = false;
		if (cn->flags & NF_ONPATH) {
			v = s->opt.draw_value;
			dep_add(dep, (uint32_t)e.child, cn->ply);
		} else if (cn->flags & NF_THOUGHT) {
			if (ply + 1 >= SEL_MAX_PLY) continue;
			Dep cd;
			bool cnl;
			if (pv && usable == 0) {
				v = -search(s, (uint32_t)e.child, -beta, -alpha, ply + 1, true, &cd,
				            &cnl);
				child_pv = true;
			} else {
				v = -search(s, (uint32_t)e.child, -alpha - 1, -alpha, ply + 1,
				            false, &cd, &cnl);
				if (!cnl && pv && v > alpha && v < beta) {
					Dep cd2;
					v = -search(s, (uint32_t)e.child, -beta, -alpha, ply + 1,
					            true, &cd2, &cnl);
					dep_merge(s, &cd, &cd2);
					child_pv = true;
				}
			}
			if (s->stop) break;
			if (cnl) continue;
			dep_merge(s, dep, &cd);
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
	if (s->stop) { /* stopped part-way: nothing of this node is known */
		*noleaf = true;
		dep->rm = 0;
		return 0;
	}
	if (usable) n->u.e.best = (uint16_t)bestk;
	/* Mated: its value is known, though nothing below it is to be thought
	 * (the parent's move into it mates: a root won so has nothing left). */
	bool mated = !usable && sel_node_mated(n);
	uint8_t bound = mated           ? B_EXACT
	                : !usable       ? B_NOLEAF
	                : best >= beta  ? B_LOWER
	                : best > alpha0 ? B_EXACT
	                                : B_UPPER;
	int value = mated ? -VALUE_MATE : usable ? best : 0;
	*noleaf = !usable && !mated;
	if (dep->over) {
		/* Repetitions below met more nodes above than a bound keeps: it
		 * is stored as if it did not depend on them, and so are those
		 * above it (else a book of positions shuffled back and forth,
		 * every one reaching all the others, is searched along every
		 * order of its moves: tests/bookgen/test_selector.c). */
		s->st.path_ignored++;
		dep_none(dep);
	}
	if (dep->rm >= ply) {
		n->bound = bound;
		n->value = (int16_t)value;
	} else {
		pb_store(s, i, ply, dep, value, bound);
	}
	return value;
}

/* A result's change: the lease gone, a thought position's bytes kept; a
 * record no longer thought makes its node a leaf again. */
static int add_result_now(Selector *s, Key key, const uint8_t *enc, size_t len, bool thought)
{
	/* A thought position the graph did not hold as one may be new to the
	 * book (a lazy lookup reads it from there if already written). */
	int64_t i = sel_g_find_node(s, key);
	bool known = i >= 0 && (s->nodes[i].flags & NF_THOUGHT);
	if (i < 0 && (i = sel_g_find_or_create(s, key)) < 0) return (int)i;
	int r = sel_g_filter_gained(s, key);
	if (r) return r;
	SelNode *n = &s->nodes[i];
	n->flags &= (uint8_t)~NF_LEASED;
	if (thought) {
		/* A transposition into it from an expanded node lacks its edge. */
		if (!known && (r = sel_g_new_in_book(s, (uint32_t)i, enc, len))) return r;
		r = sel_g_add_raw(s, (uint32_t)i, enc, len);
		if (!r) r = sel_g_dropped_result(s, (uint32_t)i, enc, len);
		if (r) return r;
	} else if (!(n->flags & NF_UNRESOLVED)) {
		sel_g_unthink(s, (uint32_t)i);
		r = sel_g_dropped_result(s, (uint32_t)i, NULL, 0);
		if (r) return r;
	}
	return sel_g_invalidate_later(s, (uint32_t)i);
}

static int lease_now(Selector *s, Key key, bool on)
{
	int64_t i = on ? sel_g_find_or_create(s, key) : sel_g_find_node(s, key);
	if (i < 0) return on ? (int)i : 0;
	/* No change, nothing to clear (a restarted coordinator leases again
	 * what its snapshot holds leased). */
	if (!(s->nodes[i].flags & NF_LEASED) == !on) return 0;
	if (on)
		s->nodes[i].flags |= NF_LEASED;
	else
		s->nodes[i].flags &= (uint8_t)~NF_LEASED;
	return sel_g_invalidate_later(s, (uint32_t)i);
}

/* Whether a change is kept rather than made now: a call under way (a
 * search suspended) or a hold. */
static inline bool keeping(const Selector *s)
{
	return s->in_call || s->held || s->trim;
}

/* Keeps a change made while a call is suspended (bytes: a thought
 * position's record, len bytes, or NULL). 0 or SEL_ENOMEM. */
static int defer(Selector *s, Key key, int kind, const uint8_t *bytes, size_t len)
{
	if (s->ndefer >= UINT32_MAX - 1 ||
	    array_grow((void **)&s->defer, &s->capdefer, s->ndefer + 1, sizeof *s->defer, 64) ||
	    (bytes && array_grow((void **)&s->defer_bytes, &s->capdefer_bytes,
	                         s->ndefer_bytes + len, 1, 4096)))
		return SEL_ENOMEM;
	uint32_t *last;
	if (keymap_add(&s->defer_map, key, &last) < 0) return SEL_ENOMEM;
	SelDefer *d = &s->defer[s->ndefer];
	*d = (SelDefer){.key = key,
	                .prev = *last == KEYMAP_NONE ? 0 : *last,
	                .off = (uint32_t)s->ndefer_bytes,
	                .len = bytes ? (uint32_t)len : 0,
	                .kind = (uint8_t)kind};
	if (bytes) {
		memcpy(s->defer_bytes + s->ndefer_bytes, bytes, len);
		s->ndefer_bytes += len;
	}
	*last = (uint32_t)++s->ndefer;
	return 0;
}

/* The key's last kept change (any: each one sets the lease), or with
 * results_only its last kept result; NULL when none. */
static const SelDefer *deferred(const Selector *s, Key key, bool results_only)
{
	if (!keeping(s) || !s->ndefer) return NULL;
	const uint32_t *last = keymap_value(&s->defer_map, key);
	for (uint32_t j = last ? *last : 0; j; j = s->defer[j - 1].prev) {
		const SelDefer *d = &s->defer[j - 1];
		if (!results_only || d->kind == DEFER_RESULT) return d;
	}
	return NULL;
}

/* The kept changes applied, in order, once the call is over. */
static int apply_deferred(Selector *s)
{
	s->in_call = false;
	int rc = 0;
	for (size_t j = 0; j < s->ndefer && !rc; j++) {
		const SelDefer *d = &s->defer[j];
		rc = d->kind == DEFER_RESULT
		         ? add_result_now(s, d->key, s->defer_bytes + d->off, d->len, d->len > 0)
		         : lease_now(s, d->key, d->kind == DEFER_LEASE);
	}
	s->ndefer = s->ndefer_bytes = 0;
	keymap_free(&s->defer_map);
	return rc;
}

int sel_add_result_raw(Selector *s, Key key, const uint8_t *val, size_t len)
{
	if (!len || len > BOOKDB_RECORD_MAX) return SEL_EINVAL;
	bool thought = val[0] & BOOKDB_REC_THOUGHT;
	if (keeping(s)) return defer(s, key, DEFER_RESULT, thought ? val : NULL, len);
	return add_result_now(s, key, val, len, thought);
}

int sel_add_result(Selector *s, Key key, const BookRecord *rec)
{
	int len = bookdb_record_encode(s->enc, BOOKDB_RECORD_MAX, rec);
	if (len < 0) return SEL_EINVAL;
	bool thought = rec->flags & BOOKDB_REC_THOUGHT;
	if (keeping(s)) return defer(s, key, DEFER_RESULT, thought ? s->enc : NULL, (size_t)len);
	return add_result_now(s, key, s->enc, (size_t)len, thought);
}

int sel_lease(Selector *s, Key key)
{
	return keeping(s) ? defer(s, key, DEFER_LEASE, NULL, 0) : lease_now(s, key, true);
}

int sel_release(Selector *s, Key key)
{
	return keeping(s) ? defer(s, key, DEFER_RELEASE, NULL, 0) : lease_now(s, key, false);
}

bool sel_is_leased(const Selector *s, Key key)
{
	const SelDefer *d = deferred(s, key, false);
	if (d) return d->kind == DEFER_LEASE;
	int64_t i = sel_g_find_node(s, key);
	return i >= 0 && (s->nodes[i].flags & NF_LEASED);
}

int sel_each_leased(const Selector *s, int (*fn)(void *ctx, Key key), void *ctx)
{
	for (size_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].flags & NF_LEASED) {
			int rc = fn(ctx, s->nodes[i].key);
			if (rc) return rc;
		}
	return 0;
}

bool sel_is_thought(const Selector *s, Key key)
{
	const SelDefer *d = deferred(s, key, true);
	if (d) return d->len > 0; /* the last result kept: thought, or taken out */
	int64_t i = sel_g_find_node(s, key);
	if (i >= 0 && !(s->nodes[i].flags & NF_UNRESOLVED)) return s->nodes[i].flags & NF_THOUGHT;
	return s->lazy && sel_g_book_thought(s, key);
}

void sel_set_yield(Selector *s, SelYieldFn fn, void *ctx)
{
	s->yield = fn;
	s->yield_ctx = ctx;
}

int sel_hold(Selector *s, bool on)
{
	s->held = on;
	return keeping(s) ? 0 : apply_deferred(s);
}

int64_t sel_trim_slice(Selector *s, uint64_t budget, double ms)
{
	bool under_way = s->trim;
	int64_t r = sel_g_trim(s, budget, ms);
	/* Its end: what was kept meanwhile, made now (an error there says
	 * more than the trim's own, which left the graph as it was). */
	if (under_way && !keeping(s)) {
		int e = apply_deferred(s);
		if (e) r = e;
	}
	return r;
}

int64_t sel_trim(Selector *s, uint64_t budget)
{
	return sel_trim_slice(s, budget, -1);
}

void sel_g_trim_end(Selector *s)
{
	if (s->trim) (void)sel_trim_slice(s, 0, -1);
}

bool sel_trimming(const Selector *s)
{
	return s->trim;
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
	Dep dep;
	bool nl;
	s->err = 0;
	int v = search(s, root, -SEL_INF, SEL_INF, 0, true, &dep, &nl);
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
		Dep dep;
		bool nl;
		s->err = 0;
		int v = search(s, root, -SEL_INF, SEL_INF, 0, true, &dep, &nl);
		if (s->err) return s->err;
		if (nl || s->pvlen[0] == 0) return 0;
		uint32_t node = root, parent = root, last = 0;
		for (int j = 0; j < s->pvlen[0]; j++) {
			last = s->pv[0][j];
			parent = node;
			node = (uint32_t)s->edges[last].child;
			out->moves[j] = s->edges[last].move;
		}
		const SelNode *end = &s->nodes[node];
		/* The PV ends in a mate: the root's value is won (or lost) for
		 * good along it, nothing on it to think about. */
		if (sel_node_mated(end)) return 0;
		if (end->flags & NF_THOUGHT) {
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
	size_t want; /* SEL_BATCH_COVER: walk to the depth where this many leaves are found */
	int root, root_value, window, book_side, book_side_opt;
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
	Dep dep;
	bool nl;
	if (b->mode == SEL_BATCH_SQRT && (int)side == b->book_side) {
		bar = search(s, i, -SEL_INF, SEL_INF, ply, true, &dep, &nl);
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
	s->nodes[i].seen = s->epoch;
	int ret = 0;
	int ne = s->nodes[i].u.e.n;
	for (int k = 0; k < ne && !ret; k++) {
		SelEdge e = s->edges[s->nodes[i].u.e.off + (uint32_t)k];
		if (e.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[e.child];
		if (cn->flags & (NF_LEASED | NF_ONPATH)) continue;
		if ((ret = sel_g_resolve_in(s, i, (uint32_t)e.child, true))) break;
		if (cn->flags & NF_THOUGHT) {
			if (ply + 1 >= SEL_MAX_PLY) continue;
			int v = -search(s, (uint32_t)e.child, -bar, -bar + 1, ply + 1, false, &dep,
			                &nl);
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
	bool by_ply;
} GapCtx;

/* Closest to the root value first (shallowest first before that, by_ply);
 * ties in collection order (stored move order: best first). */
static int cmp_gap(const void *a, const void *b, void *ctx)
{
	const GapCtx *g = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (g->by_ply && g->leaves[x].nmoves != g->leaves[y].nmoves)
		return g->leaves[x].nmoves < g->leaves[y].nmoves ? -1 : 1;
	int gx = abs(g->leaves[x].value - g->value), gy = abs(g->leaves[y].value - g->value);
	if (gx != gy) return gx < gy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int sort_leaves(SelLeaf *out, size_t n, int value, bool by_ply)
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
	GapCtx g = {out, value, by_ply};
	qsort_r(idx, n, sizeof *idx, cmp_gap, &g);
	for (size_t i = 0; i < n; i++) tmp[i] = out[idx[i]];
	memcpy(out, tmp, n * sizeof *tmp);
	free(idx);
	free(tmp);
	return 0;
}

/*
 * SEL_BATCH_COVER: a breadth-first walk of the covered tree from the root
 * (the book side's best moves, the other side's within window of its node's
 * best). Each entry is a thought node reached, with its parent entry and the
 * move, so that a leaf's line is read back from the entries and the path's
 * nodes can be marked as on the path while a node is searched (repetitions
 * are judged as in a selection from the root).
 */
typedef struct {
	uint32_t node;
	int32_t parent; /* entry index, -1 for the root */
	Move move;      /* the move from the parent */
	uint16_t ply;
} CoverEnt;

typedef struct {
	CoverEnt *ent;
	size_t n, cap;
	SelLeaf *leaves; /* found so far (more than max, cut after sorting) */
	size_t nleaves, capleaves;
} Cover;

static void cover_mark_path(Selector *s, const Cover *c, int32_t e, bool on)
{
	for (; e >= 0; e = c->ent[e].parent) {
		SelNode *n = &s->nodes[c->ent[e].node];
		if (on) {
			n->flags |= NF_ONPATH;
			n->ply = c->ent[e].ply;
		} else {
			n->flags &= (uint8_t)~NF_ONPATH;
		}
	}
}

static int cover_push(Cover *c, uint32_t node, int32_t parent, Move m, int ply)
{
	if (c->n == c->cap && array_grow((void **)&c->ent, &c->cap, c->n + 1, sizeof *c->ent, 64))
		return SEL_ENOMEM;
	c->ent[c->n++] = (CoverEnt){node, parent, m, (uint16_t)ply};
	return 0;
}

static int cover_leaf(Cover *c, const Batch *b, int32_t parent, Move m, uint32_t key_node,
                      const Selector *s, int value)
{
	if (c->nleaves == c->capleaves &&
	    array_grow((void **)&c->leaves, &c->capleaves, c->nleaves + 1, sizeof *c->leaves, 16))
		return SEL_ENOMEM;
	SelLeaf *l = &c->leaves[c->nleaves++];
	int len = 0;
	for (int32_t e = parent; e > 0; e = c->ent[e].parent) len++;
	l->root = b->root;
	l->key = s->nodes[key_node].key;
	l->value = value;
	l->nmoves = len + 1;
	l->moves[len] = m;
	for (int32_t e = parent, k = len - 1; e > 0; e = c->ent[e].parent, k--)
		l->moves[k] = c->ent[e].move;
	return 0;
}

/* The node of entry e: searched, then its moves that pass the bar of its
 * side: thought children queued, leaf moves kept. */
static int cover_node(Selector *s, Batch *b, Cover *c, int32_t e)
{
	CoverEnt ce = c->ent[e];
	int ply = ce.ply;
	Dep dep;
	bool nl = false;
	if (ply + 1 >= SEL_MAX_PLY) return 0;
	Color side = (Color)(b->root_side ^ (ply & 1));
	cover_mark_path(s, c, c->ent[e].parent, true);
	/* The node's value: its exact bound when one is stored (bounds are
	 * cleared whenever something below changes, and never stored when they
	 * depend on the path above), else a full search. */
	const SelNode *n = &s->nodes[ce.node];
	int v = 0, ret = 0;
	if (n->bound == B_EXACT) {
		v = n->value;
	} else if (n->bound == B_NOLEAF) {
		nl = true;
	} else {
		v = search(s, ce.node, -SEL_INF, SEL_INF, ply, true, &dep, &nl);
		ret = s->err;
	}
	if (ret || nl) goto out;
	int bar = value_clamp((int)side == b->book_side ? v : v - b->window);
	if (!(s->nodes[ce.node].flags & NF_EXPANDED) && (ret = sel_g_expand(s, ce.node))) goto out;
	s->nodes[ce.node].flags |= NF_ONPATH;
	s->nodes[ce.node].ply = (uint16_t)ply;
	s->nodes[ce.node].seen = s->epoch;
	int ne = s->nodes[ce.node].u.e.n;
	for (int k = 0; k < ne && !ret; k++) {
		SelEdge ed = s->edges[s->nodes[ce.node].u.e.off + (uint32_t)k];
		if (ed.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[ed.child];
		if ((cn->flags & (NF_LEASED | NF_ONPATH)) || cn->stamp == b->stamp) continue;
		if ((ret = sel_g_resolve_in(s, ce.node, (uint32_t)ed.child, true))) break;
		if (cn->flags & NF_THOUGHT) {
			int cv = -search(s, (uint32_t)ed.child, -bar, -bar + 1, ply + 1, false,
			                 &dep, &nl);
			if (s->err) {
				ret = s->err;
			} else if (!nl && cv >= bar) {
				s->nodes[ed.child].stamp = b->stamp;
				ret = cover_push(c, (uint32_t)ed.child, e, ed.move, ply + 1);
			}
		} else if (ed.flags & EF_EVAL) {
			int lv = leaf_value(s, &ed);
			if (lv >= bar) {
				s->nodes[ed.child].stamp = b->stamp;
				ret = cover_leaf(c, b, e, ed.move, (uint32_t)ed.child, s,
				                 side == b->root_side ? lv : -lv);
			}
		}
	}
out:
	s->nodes[ce.node].flags &= (uint8_t)~NF_ONPATH;
	cover_mark_path(s, c, c->ent[e].parent, false);
	return ret;
}

static int cover_root(Selector *s, Batch *b, uint32_t root)
{
	Cover c = {0};
	int ret = cover_push(&c, root, -1, MOVE_NONE, 0);
	s->nodes[root].stamp = b->stamp;
	int stop_ply = -1;
	for (size_t h = 0; h < c.n && !ret; h++) {
		if (stop_ply >= 0 && c.ent[h].ply > stop_ply) break;
		ret = cover_node(s, b, &c, (int32_t)h);
		if (stop_ply < 0 && c.nleaves >= b->want) stop_ply = c.ent[h].ply;
	}
	if (!ret) ret = sort_leaves(c.leaves, c.nleaves, b->root_value, true);
	for (size_t k = 0; !ret && k < c.nleaves && b->count < b->max; k++)
		b->out[b->count++] = c.leaves[k];
	free(c.ent);
	free(c.leaves);
	return ret;
}

/* The batch's leaves below root r (appended to b->out). */
static int batch_root(Selector *s, Batch *b, int r)
{
	uint32_t root = s->roots[r].node;
	b->root = r;
	b->root_side = s->roots[r].side;
	b->book_side = b->book_side_opt < 0 ? (int)b->root_side : b->book_side_opt;
	size_t first = b->count;
	if (!(s->nodes[root].flags & NF_THOUGHT)) {
		if (!(s->nodes[root].flags & NF_LEASED) && s->nodes[root].stamp != b->stamp) {
			s->nodes[root].stamp = b->stamp;
			SelLeaf *l = &b->out[b->count++];
			l->root = r;
			l->key = s->nodes[root].key;
			l->value = 0;
			l->nmoves = 0;
		}
		return 0;
	}
	int v;
	bool has;
	int e = root_value(&v, &has, s, r);
	if (e || !has) return e;
	b->root_value = v;
	if (b->mode == SEL_BATCH_COVER) {
		int ret = cover_root(s, b, root);
		if (ret || b->count > first || b->count >= b->max) return ret;
		/* Nothing passed the bars though the root has a leaf: its value
		 * comes from a cycle (a move back into the path, valued as a
		 * draw), which the walk skips as no leaf. Without this the cover
		 * policy found nothing for good (a coordinator answered 204 at
		 * every start while the book had work). The PV selection bans
		 * the cycle's move and gives the leaf, and the walks after it go
		 * past the ban. */
		SelLeaf *l = &b->out[b->count];
		int got = select_root(l, s, r);
		if (got < 0) return got;
		int64_t i = got ? sel_g_find_node(s, l->key) : -1;
		if (i >= 0 && s->nodes[i].stamp != b->stamp) {
			s->nodes[i].stamp = b->stamp;
			b->count++;
		}
		return 0;
	}
	int ret = collect(s, b, root, 0);
	return ret ? ret : sort_leaves(b->out + first, b->count - first, v, false);
}

static int select_batch(SelLeaf *out, size_t max, size_t want, Selector *s, int root, int window,
                        SelBatchMode mode, int book_side)
{
	if (root >= 0 && (size_t)root >= s->nroots) return SEL_EINVAL;
	Batch *b = calloc(1, sizeof *b);
	if (!b) return SEL_ENOMEM;
	b->out = out;
	b->max = max;
	b->want = want < max ? want : max;
	b->window = window < 0 ? 0 : window;
	b->mode = mode;
	b->book_side_opt = book_side;
	b->stamp = ++s->stamp;
	int ret = 0;
	if (root >= 0)
		ret = batch_root(s, b, root);
	else
		for (size_t r = 0; r < s->nroots && b->count < max && !ret; r++)
			ret = batch_root(s, b, (int)r);
	size_t n = b->count;
	free(b);
	return ret < 0 ? ret : (int)n;
}

/* A public call: changes made while it is suspended are kept (in_call) and
 * applied at its end; its code, or the first error applying them. */
static int call_begin(Selector *s)
{
	/* A trim under way ends before the search (its graph must not change
	 * between slices). */
	sel_g_trim_end(s);
	s->in_call = true;
	s->stop = false;
	s->yield_count = 0;
	return sel_g_call_begin(s);
}

static int call_end(Selector *s, int r)
{
	sel_g_call_end(s);
	/* Held: kept on, for sel_hold(s, false). */
	int e = 0;
	if (s->held || s->trim)
		s->in_call = false;
	else
		e = apply_deferred(s);
	/* Stopped: SEL_ESTOPPED whatever the search made of its unwinding (a
	 * stop met in the invalidation walk, before a search reset s->err,
	 * would otherwise look like "no leaf"). The stop is no error of the
	 * selector's: what it finished is kept, what it was computing forgotten,
	 * so it is not kept in s->err (which bars a snapshot). */
	if (s->stop) {
		if (s->err == SEL_ESTOPPED) s->err = 0;
		if (r >= 0) r = SEL_ESTOPPED;
	}
	return r < 0 || !e ? r : e;
}

void sel_get_stats(SelStats *out, const Selector *s)
{
	*out = s->st;
	sel_g_memory(out, s);
	if (s->ahead) {
		BookPrefetchStats ps;
		bookdb_prefetch_stats(&ps, s->ahead);
		out->read_ahead = ps.asked;
	}
}

void sel_clear_bounds(Selector *s)
{
	for (size_t i = 0; i < s->nnodes; i++) s->nodes[i].bound = B_NONE;
	sel_pb_clear(s);
	sel_g_gone_reset(s);
}

int sel_select(SelLeaf *out, Selector *s)
{
	int r = call_begin(s);
	if (!r) r = select_any(out, s);
	return call_end(s, r);
}

int sel_root_value(int *value, bool *has_leaf, Selector *s, int root)
{
	int r = call_begin(s);
	if (!r) r = root_value(value, has_leaf, s, root);
	return call_end(s, r);
}

bool sel_root_thought(const Selector *s, int r)
{
	return r >= 0 && (size_t)r < s->nroots && (s->nodes[s->roots[r].node].flags & NF_THOUGHT);
}

int sel_select_batch(SelLeaf *out, size_t max, Selector *s, int window, SelBatchMode mode,
                     int book_side)
{
	int r = call_begin(s);
	if (!r) r = select_batch(out, max, max, s, -1, window, mode, book_side);
	return call_end(s, r);
}

int sel_select_batch_root(SelLeaf *out, size_t max, Selector *s, int root, int window,
                          SelBatchMode mode, int book_side)
{
	if (root < 0) return SEL_EINVAL;
	int r = call_begin(s);
	if (!r) r = select_batch(out, max, max, s, root, window, mode, book_side);
	return call_end(s, r);
}

int sel_select_cover(SelLeaf *out, size_t max, size_t want, Selector *s, int root, int window,
                     int book_side)
{
	if (root < 0) return SEL_EINVAL;
	int r = call_begin(s);
	if (!r) r = select_batch(out, max, want, s, root, window, SEL_BATCH_COVER, book_side);
	return call_end(s, r);
}

int sel_select_root(SelLeaf *out, Selector *s, int root)
{
	if (root < 0 || (size_t)root >= s->nroots) return SEL_EINVAL;
	int r = call_begin(s);
	if (!r) r = select_root(out, s, root);
	return call_end(s, r);
}

int sel_nroots(const Selector *s)
{
	return (int)s->nroots;
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

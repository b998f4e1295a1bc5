/*
 * bookgen/selector_trim.c — the selector's graph kept within a budget
 * (sel_trim; docs/bookgen.md, "The graph within a budget").
 *
 * The graph is a cache of the book: a thought node's edges can be built
 * again from its record whenever a search needs them. A trim keeps
 *   - the edges of the nodes the most recent calls visited (as many as half
 *     the room holds, less what the nodes with a bound below take), of the
 *     roots and of the nodes with a banned move;
 *   - as nodes: the children of those, the roots, leased nodes, nodes
 *     holding their record's bytes, and the nodes with a bound searched most
 *     lately (as many as a quarter of that half holds, first: a change below
 *     a node without its edges then searches the changed line again, the
 *     rest of what is below answered by those bounds);
 * and drops the rest. A kept node that loses its edges keeps its bound: the
 * value of the book below it, which changes only when something below it
 * changes. Such a change must still reach the bound, and every bound above
 * it: each kept node that an edgeless or dropped node led to gets a parent
 * link to the edgeless kept nodes above it (through dropped ones), which the
 * invalidation walk follows. A change to a node the graph no longer holds
 * (a late result for a lease released meanwhile) may lie below a dropped
 * part too, where no link leads: when the trims' filter of the keys they
 * dropped has it (sel_g_was_dropped), a result there walks up through the
 * dropped positions to the graph's nodes above (sel_g_dropped_result), or
 * when that walk goes too far the next call clears every bound
 * (Selector.orphaned). What escapes: a node dropped here and made again
 * later by another path (a transposition), then changed; nothing links it
 * to the edgeless node it was below (docs/bookgen.md, "Known limits").
 */
#include "bookgen/selector_priv.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/grow.h"

enum { DROP = 0, KEEP = 1, KEEP_EDGES = 2 };

typedef struct {
	uint32_t child, parent;
} Pair;

static inline unsigned age_of(const Selector *s, const SelNode *n)
{
	return (uint16_t)(s->epoch - n->seen);
}

static void keep_at_least(uint8_t *keep, uint32_t i, uint8_t k)
{
	if (keep[i] < k) keep[i] = k;
}

static int add_pair(Pair **p, size_t *n, size_t *cap, uint32_t child, uint32_t parent)
{
	if (array_grow((void **)p, cap, *n + 1, sizeof **p, 64)) return SEL_ENOMEM;
	(*p)[(*n)++] = (Pair){child, parent};
	return 0;
}

/* Whether a change below node n can make a bound stale: its own, or those
 * above it that used its value: when it is expanded, or was until a trim took
 * its edges (SEL_EDGELESS) — with its bound, or without one when its value
 * depended on a repetition above it (no bound stored), and its ancestors'
 * bounds on it. A node that is neither was never searched, or not since a
 * walk cleared its bound and went on above it. */
static inline bool below_matters(const SelNode *n)
{
	return (n->flags & NF_EXPANDED) || n->bound != B_NONE ||
	       (!(n->flags & NF_RAW) && n->u.e.off == SEL_EDGELESS);
}

/*
 * A trim under way (sel_trim_slice): its phases, each a pass over the nodes
 * that reads the graph and writes only the trim's own arrays (and the nodes'
 * stamps), resumable at any node; then the compaction, at once. Between
 * slices the graph must not change: the changes given meanwhile are kept
 * (the selector's keeping(), as under sel_hold) and a search finishes the
 * trim first (sel_g_trim_end).
 */
enum {
	PH_AGE,       /* each age's cost (choose_age) */
	PH_MARK,      /* leased, holding bytes, young enough, with a ban */
	PH_CHILDREN,  /* the roots, then the children of those keeping their edges */
	PH_NUMBER,    /* newidx, and what stays */
	PH_BLOCKS,    /* the edge blocks that stay */
	PH_SHORTCUTS, /* the links past dropped nodes */
	PH_COMPACT,
};

/* run_on's return while the trim goes on. */
#define TRIM_MORE INT64_MAX

struct SelTrimRun {
	int phase;
	size_t at; /* the next node of the phase */
	uint64_t target;
	int max_age, max_bage;
	uint64_t *cost;  /* PH_AGE: bytes a node of each age keeps with its edges */
	uint64_t *bcost; /* ... and a node with a bound keeps as a node (a link with it) */
	uint8_t *keep;
	uint32_t *newidx;
	uint64_t *blocks;
	Pair *pairs;
	size_t npairs, cpairs, nblocks, nb, kept, kept_edges;
};

static void run_free(SelTrimRun *t)
{
	if (!t) return;
	free(t->cost);
	free(t->bcost);
	bigmem_free(t->keep);
	bigmem_free(t->newidx);
	bigmem_free(t->blocks);
	free(t->pairs);
	free(t);
}

/* Nodes a phase takes between looks at the clock. */
enum { TRIM_CHUNK = 1024 };

/* PH_AGE over nodes [a, b): each expanded node's cost by its age (a node
 * with its edges, their links and, at most, a child node each), and each
 * node's with a bound as a node alone (with a parent link). */
static void ph_age(const Selector *s, SelTrimRun *t, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++) {
		const SelNode *n = &s->nodes[i];
		if (n->bound != B_NONE) t->bcost[age_of(s, n)] += sizeof(SelNode) + sizeof(SelLink);
		if (n->flags & NF_EXPANDED)
			t->cost[age_of(s, n)] +=
			    sizeof(SelNode) +
			    (uint64_t)n->u.e.n *
			        (sizeof(SelEdge) + sizeof(SelLink) + sizeof(SelNode));
	}
}

/* The oldest age whose nodes keep their edges: the youngest nodes first, as
 * many as the target holds; -1: none by age. */
static int choose_age(const uint64_t *cost, uint64_t target, uint64_t *sum)
{
	*sum = 0;
	int a = -1;
	while (a < 65535 && *sum + cost[a + 1] <= target) *sum += cost[++a];
	return a;
}

/* PH_MARK over [a, b). */
static void ph_mark(const Selector *s, SelTrimRun *t, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++) {
		const SelNode *n = &s->nodes[i];
		if (n->flags & (NF_LEASED | NF_RAW)) t->keep[i] = KEEP;
		if (n->bound != B_NONE && (int)age_of(s, n) <= t->max_bage) t->keep[i] = KEEP;
		if (!(n->flags & NF_EXPANDED)) continue;
		if ((int)age_of(s, n) <= t->max_age) {
			t->keep[i] = KEEP_EDGES;
			continue;
		}
		/* A ban lives in its edge: dropped, the cycle would be found
		 * again. */
		for (uint32_t k = 0; k < n->u.e.n; k++)
			if (s->edges[n->u.e.off + k].flags & EF_BANNED) {
				t->keep[i] = KEEP_EDGES;
				break;
			}
	}
}

/* PH_CHILDREN over [a, b): the children of the nodes that keep their edges
 * stay (as nodes); a child marked here is never one that keeps its edges,
 * so which nodes those are does not depend on the order. */
static void ph_children(const Selector *s, SelTrimRun *t, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++) {
		if (t->keep[i] != KEEP_EDGES) continue;
		const SelNode *n = &s->nodes[i];
		for (uint32_t k = 0; k < n->u.e.n; k++)
			keep_at_least(t->keep, (uint32_t)s->edges[n->u.e.off + k].child, KEEP);
	}
}

static void ph_number(Selector *s, SelTrimRun *t, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++) {
		if (t->keep[i] == DROP) {
			sel_g_gone_add(s, s->nodes[i].key);
			continue;
		}
		t->newidx[i] = (uint32_t)t->kept++;
		if (t->keep[i] == KEEP_EDGES) {
			t->nblocks++;
			t->kept_edges += s->nodes[i].u.e.n;
		}
	}
}

static void ph_blocks(const Selector *s, SelTrimRun *t, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++)
		if (t->keep[i] == KEEP_EDGES)
			t->blocks[t->nb++] = (uint64_t)s->nodes[i].u.e.off << 32 | i;
}

/*
 * PH_SHORTCUTS over [a, b): the links the trim must add: for each kept node
 * z, the kept nodes that lose their edges (or lost them in an earlier trim)
 * and led to z, directly or through dropped nodes (a walk up the parent
 * links). A parent that keeps its edges gets its links back from them.
 */
static int ph_shortcuts(Selector *s, SelTrimRun *t, size_t a, size_t b)
{
	const uint8_t *keep = t->keep;
	for (size_t z = a; z < b; z++) {
		if (keep[z] == DROP) continue;
		uint32_t stamp = ++s->stamp;
		s->nodes[z].stamp = stamp;
		size_t sp = 0;
		uint32_t cur = (uint32_t)z;
		for (;;) {
			for (uint32_t l = s->nodes[cur].parents; l; l = s->links[l - 1].next) {
				uint32_t q = s->links[l - 1].node;
				SelNode *qn = &s->nodes[q];
				if (qn->stamp == stamp) continue;
				qn->stamp = stamp;
				if (keep[q] == KEEP_EDGES || !below_matters(qn)) continue;
				if (keep[q] == KEEP) {
					if (add_pair(&t->pairs, &t->npairs, &t->cpairs, (uint32_t)z,
					             q))
						return SEL_ENOMEM;
					continue;
				}
				if (array_grow((void **)&s->stack, &s->capstack, sp + 1,
				               sizeof *s->stack, 64))
					return SEL_ENOMEM;
				s->stack[sp++] = q;
			}
			if (!sp) break;
			cur = s->stack[--sp];
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Moves the kept nodes and edge blocks down, renumbered (newidx), and
 * builds the links and the key map again. Allocates nothing that can fail
 * but the links, whose room the caller reserved. */
static void compact(Selector *s, const uint8_t *keep, uint32_t *newidx, uint64_t *blocks,
                    size_t nblocks, const Pair *pairs, size_t npairs)
{
	/* Edge blocks in the order they lie, moved down. */
	qsort(blocks, nblocks, sizeof *blocks, cmp_u64);
	size_t dst = 0;
	for (size_t b = 0; b < nblocks; b++) {
		SelNode *n = &s->nodes[(uint32_t)blocks[b]];
		memmove(s->edges + dst, s->edges + n->u.e.off, (size_t)n->u.e.n * sizeof *s->edges);
		n->u.e.off = (uint32_t)dst;
		dst += n->u.e.n;
	}
	s->nedges = dst;
	for (size_t e = 0; e < dst; e++) s->edges[e].child = (int32_t)newidx[s->edges[e].child];
	size_t nn = 0, thought = 0;
	for (size_t i = 0; i < s->nnodes; i++) {
		if (keep[i] == DROP) continue;
		SelNode m = s->nodes[i];
		if (keep[i] == KEEP && (m.flags & NF_EXPANDED)) {
			/* Edgeless: built again from the book when a search needs
			 * more than its bound. */
			m.flags &= (uint8_t)~NF_EXPANDED;
			m.u.e.off = SEL_EDGELESS;
			m.u.e.n = 0;
			m.u.e.best = NO_BEST;
		}
		m.parents = 0;
		if (m.flags & NF_THOUGHT) thought++;
		s->nodes[nn++] = m;
	}
	s->nnodes = nn;
	s->st.nodes = nn;
	s->st.thought = thought;
	s->nlinks = 0;
	for (size_t p = 0; p < nn; p++) {
		const SelNode *n = &s->nodes[p];
		if (!(n->flags & NF_EXPANDED)) continue;
		for (uint32_t k = 0; k < n->u.e.n; k++)
			(void)sel_g_add_link(s, (uint32_t)s->edges[n->u.e.off + k].child,
			                     (uint32_t)p);
	}
	for (size_t k = 0; k < npairs; k++)
		(void)sel_g_add_link(s, newidx[pairs[k].child], newidx[pairs[k].parent]);
	for (size_t r = 0; r < s->nroots; r++) s->roots[r].node = newidx[s->roots[r].node];
	const void *keys = (const char *)s->nodes + offsetof(SelNode, key);
	/* A map the graph grew past what was made for the book (sel_g_fix_map)
	 * goes back to that size when the kept nodes fit: else it keeps its
	 * size for good, and every later trim leaves the graph less room. */
	size_t fixed_slots = (size_t)(s->map_fixed / sizeof *s->map.slot);
	KeyMap nm;
	keymap_init(&nm, sizeof(SelNode));
	if (s->map.cap > fixed_slots && nn < fixed_slots / 2 &&
	    keymap_reserve(&nm, keys, fixed_slots / 2) == 0 && nm.cap < s->map.cap) {
		keymap_free(&s->map);
		s->map = nm;
	} else {
		keymap_free(&nm);
		keymap_clear(&s->map);
	}
	for (size_t i = 0; i < nn; i++) (void)keymap_find_or_insert(&s->map, keys, (uint32_t)i);
}

/* The path-dependent bounds whose node and nodes depended on stay, renumbered
 * as compact renumbers them (their slots are by node index); the others
 * forgotten. A bound is the book's below its node whatever the graph holds of
 * it, so a trim changes none of them, as it changes no node's own bound. All
 * forgotten when there is no memory for the new table. */
static void pb_renumber(Selector *s, const uint8_t *keep, const uint32_t *newidx)
{
	if (!s->pbound) return;
	size_t slots = s->pbound_mask + 1;
	SelPathBound *old = s->pbound, *t = calloc(slots, sizeof *t);
	if (!t) {
		sel_pb_clear(s);
		return;
	}
	s->pbound = t;
	s->pbound_stored = 0;
	for (size_t k = 0; k < slots; k++) {
		SelPathBound b = old[k];
		bool stays = b.node && keep[b.node - 1] != DROP;
		for (int d = 0; d < b.n && stays; d++) stays = keep[b.dep[d]] != DROP;
		if (!stays) continue;
		b.node = newidx[b.node - 1] + 1;
		for (int d = 0; d < b.n; d++) b.dep[d] = newidx[b.dep[d]];
		SelPathBound *to = &t[sel_pb_slot(s, b.node - 1)];
		s->pbound_stored += to->node == 0;
		*to = b;
		s->st.path_kept++;
	}
	free(old);
}

/* A trim's start: the pending invalidations flushed, its arrays. 1 begun, 0
 * nothing to do, or an error. */
static int run_begin(Selector *s, uint64_t budget)
{
	/* A filter its thread has made is joined here too, between calls (a
	 * restored selector's search does not wait for it). */
	sel_g_filter_join_done(s);
	if (sel_g_used_bytes(s) <= budget) return 0;
	/* The filter of the keys dropped is made at the first trim and does
	 * not shrink: the graph keeps the rest of the room. */
	sel_g_gone_begin(s);
	uint64_t fixed = sel_g_fixed_bytes(s) + s->gone_bytes;
	int r = sel_g_flush(s);
	if (r) return r;
	SelTrimRun *t = calloc(1, sizeof *t);
	size_t n = s->nnodes ? s->nnodes : 1;
	if (!t || !(t->cost = calloc(65536, sizeof *t->cost)) ||
	    !(t->bcost = calloc(65536, sizeof *t->bcost)) || !(t->keep = bigmem_alloc(n)) ||
	    !(t->newidx = bigmem_alloc(n * sizeof *t->newidx))) {
		run_free(t);
		return SEL_ENOMEM;
	}
	memset(t->keep, DROP, n);
	t->target = (budget > fixed ? budget - fixed : 0) / 2;
	s->trim = t;
	return 1;
}

/* The compaction, at once: the nodes dropped, or SEL_ENOMEM (the graph
 * unchanged). */
static int64_t run_compact(Selector *s, SelTrimRun *t)
{
	if (bigmem_grow((void **)&s->links, &s->caplinks, t->kept_edges + t->npairs + 1,
	                sizeof *s->links, 64))
		return SEL_ENOMEM;
	size_t before = s->nnodes;
	pb_renumber(s, t->keep, t->newidx);
	compact(s, t->keep, t->newidx, t->blocks, t->nblocks, t->pairs, t->npairs);
	s->trimmed = true;
	s->st.trims++;
	s->st.trimmed += before - t->kept;
	return (int64_t)(before - t->kept);
}

/* The trim under way, until ms have passed (ms < 0: to its end): the nodes
 * dropped once it ends (0: none), TRIM_MORE while it goes on, or an
 * error (the trim given up, the graph unchanged). */
static int64_t run_on(Selector *s, double ms)
{
	SelTrimRun *t = s->trim;
	double until = ms >= 0 ? clock_ms_f() + ms : 0;
	int64_t ret = TRIM_MORE;
	s->st.trim_slices++;
	while (ret == TRIM_MORE) {
		size_t a = t->at, b = a + TRIM_CHUNK < s->nnodes ? a + TRIM_CHUNK : s->nnodes;
		switch (t->phase) {
		case PH_AGE:
			ph_age(s, t, a, b);
			break;
		case PH_MARK:
			ph_mark(s, t, a, b);
			break;
		case PH_CHILDREN:
			if (a == 0)
				for (size_t r = 0; r < s->nroots; r++) {
					uint32_t i = s->roots[r].node;
					keep_at_least(t->keep, i,
					              (s->nodes[i].flags & NF_EXPANDED) ? KEEP_EDGES
					                                                : KEEP);
				}
			ph_children(s, t, a, b);
			break;
		case PH_NUMBER:
			ph_number(s, t, a, b);
			break;
		case PH_BLOCKS:
			ph_blocks(s, t, a, b);
			break;
		case PH_SHORTCUTS:
			if (ph_shortcuts(s, t, a, b)) ret = SEL_ENOMEM;
			break;
		default:
			ret = run_compact(s, t);
			break;
		}
		if (ret != TRIM_MORE) break;
		t->at = b;
		if (b == s->nnodes) {
			t->at = 0;
			t->phase++;
			if (t->phase == PH_MARK) {
				/* The nodes with a bound first, as nodes: a
				 * quarter of the target at most; the edges
				 * have the rest. */
				uint64_t nodes, edges;
				t->max_bage = choose_age(t->bcost, t->target / 4, &nodes);
				t->max_age = choose_age(t->cost, t->target - nodes, &edges);
				free(t->cost);
				free(t->bcost);
				t->cost = t->bcost = NULL;
			} else if (t->phase == PH_BLOCKS) {
				if (t->kept == s->nnodes) {
					ret = 0; /* everything is in use: nothing to drop */
					break;
				}
				t->blocks =
				    bigmem_alloc((t->nblocks ? t->nblocks : 1) * sizeof *t->blocks);
				if (!t->blocks) ret = SEL_ENOMEM;
			}
		}
		if (ret == TRIM_MORE && ms >= 0 && clock_ms_f() >= until) break;
	}
	if (ret != TRIM_MORE) {
		run_free(t);
		s->trim = NULL;
	}
	return ret;
}

int64_t sel_g_trim(Selector *s, uint64_t budget, double ms)
{
	if (!s->trim) {
		if (!s->lazy || s->in_call || s->held || s->ndefer) return 0;
		int r = run_begin(s, budget);
		if (r <= 0) return r;
	}
	int64_t r = run_on(s, ms);
	return r == TRIM_MORE ? 0 : r;
}

void sel_g_trim_free(Selector *s)
{
	run_free(s->trim);
	s->trim = NULL;
}

/*
 * bookgen/selector_trim.c — the selector's graph kept within a budget
 * (sel_trim; docs/bookgen.md, "The graph within a budget").
 *
 * The graph is a cache of the book: a thought node's edges can be built
 * again from its record whenever a search needs them. A trim keeps
 *   - the edges of the nodes the most recent calls visited (as many as half
 *     the room holds), of the roots and of the nodes with a banned move;
 *   - as nodes: the children of those, the roots, leased nodes and nodes
 *     holding their record's bytes;
 * and drops the rest. A kept node that loses its edges keeps its bound: the
 * value of the book below it, which changes only when something below it
 * changes. Such a change must still reach the bound, and every bound above
 * it: each kept node that an edgeless or dropped node led to gets a parent
 * link to the edgeless kept nodes above it (through dropped ones), which the
 * invalidation walk follows. A change to a node the graph no longer holds
 * (a late result for a lease released meanwhile) may lie below a dropped
 * part too, where no link leads: the next call then clears every bound
 * (Selector.orphaned). What escapes: a node dropped here and made again
 * later by another path (a transposition), then changed; nothing links it
 * to the edgeless node it was below (docs/bookgen.md, "Known limits").
 */
#include "bookgen/selector_priv.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/bigmem.h"
#include "shogi/grow.h"

enum { DROP = 0, KEEP = 1, KEEP_EDGES = 2 };

/* u.e.off of a node a trim took the edges of (until it is built again). */
#define EDGELESS UINT32_MAX

typedef struct {
	uint32_t child, parent;
} Pair;

static inline unsigned age_of(const Selector *s, const SelNode *n)
{
	return (uint16_t)(s->epoch - n->seen);
}

/* The oldest age whose nodes keep their edges: the youngest nodes first, as
 * many as target bytes hold (a node with its edges, their links and, at
 * most, a child node each). -1: none by age. */
static int choose_age(const Selector *s, uint64_t target, int *out)
{
	uint64_t *cost = calloc(65536, sizeof *cost);
	if (!cost) return SEL_ENOMEM;
	for (size_t i = 0; i < s->nnodes; i++) {
		const SelNode *n = &s->nodes[i];
		if (n->flags & NF_EXPANDED)
			cost[age_of(s, n)] +=
			    sizeof(SelNode) +
			    (uint64_t)n->u.e.n *
			        (sizeof(SelEdge) + sizeof(SelLink) + sizeof(SelNode));
	}
	uint64_t sum = 0;
	int a = -1;
	while (a < 65535 && sum + cost[a + 1] <= target) sum += cost[++a];
	free(cost);
	*out = a;
	return 0;
}

static void keep_at_least(uint8_t *keep, uint32_t i, uint8_t k)
{
	if (keep[i] < k) keep[i] = k;
}

/* Which nodes stay (keep[i]: DROP, KEEP, KEEP_EDGES). */
static void mark(const Selector *s, uint8_t *keep, int max_age)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const SelNode *n = &s->nodes[i];
		if (n->flags & (NF_LEASED | NF_RAW)) keep[i] = KEEP;
		if (!(n->flags & NF_EXPANDED)) continue;
		if ((int)age_of(s, n) <= max_age) {
			keep[i] = KEEP_EDGES;
			continue;
		}
		/* A ban lives in its edge: dropped, the cycle would be found
		 * again. */
		for (uint32_t k = 0; k < n->u.e.n; k++)
			if (s->edges[n->u.e.off + k].flags & EF_BANNED) {
				keep[i] = KEEP_EDGES;
				break;
			}
	}
	for (size_t r = 0; r < s->nroots; r++) {
		uint32_t i = s->roots[r].node;
		keep_at_least(keep, i, (s->nodes[i].flags & NF_EXPANDED) ? KEEP_EDGES : KEEP);
	}
	for (size_t i = 0; i < s->nnodes; i++) {
		if (keep[i] != KEEP_EDGES) continue;
		const SelNode *n = &s->nodes[i];
		for (uint32_t k = 0; k < n->u.e.n; k++)
			keep_at_least(keep, (uint32_t)s->edges[n->u.e.off + k].child, KEEP);
	}
}

static int add_pair(Pair **p, size_t *n, size_t *cap, uint32_t child, uint32_t parent)
{
	if (array_grow((void **)p, cap, *n + 1, sizeof **p, 64)) return SEL_ENOMEM;
	(*p)[(*n)++] = (Pair){child, parent};
	return 0;
}

/* Whether a change below node n can make a bound stale: its own, or those
 * above it that used its value: when it is expanded, or was until a trim took
 * its edges (EDGELESS) — with its bound, or without one when its value
 * depended on a repetition above it (no bound stored), and its ancestors'
 * bounds on it. A node that is neither was never searched, or not since a
 * walk cleared its bound and went on above it. */
static inline bool below_matters(const SelNode *n)
{
	return (n->flags & NF_EXPANDED) || n->bound != B_NONE ||
	       (!(n->flags & NF_RAW) && n->u.e.off == EDGELESS);
}

/*
 * The links the trim must add: for each kept node z, the kept nodes that
 * lose their edges (or lost them in an earlier trim) and led to z, directly
 * or through dropped nodes (a walk up the parent links). A parent that keeps
 * its edges gets its links back from them.
 */
static int shortcuts(Selector *s, const uint8_t *keep, Pair **pairs, size_t *npairs, size_t *cap)
{
	for (size_t z = 0; z < s->nnodes; z++) {
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
					if (add_pair(pairs, npairs, cap, (uint32_t)z, q))
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
			m.u.e.off = EDGELESS;
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

int64_t sel_trim(Selector *s, uint64_t budget)
{
	if (!s->lazy || s->in_call || s->ndefer) return 0;
	/* A filter its thread has made is joined here too, between calls (a
	 * restored selector's search does not wait for it). */
	sel_g_filter_join_done(s);
	if (sel_g_used_bytes(s) <= budget) return 0;
	uint64_t fixed = sel_g_fixed_bytes(s);
	int r = sel_g_flush(s);
	if (r) return r;
	uint64_t target = (budget > fixed ? budget - fixed : 0) / 2;
	int max_age;
	if ((r = choose_age(s, target, &max_age))) return r;
	uint8_t *keep = bigmem_alloc(s->nnodes ? s->nnodes : 1);
	uint32_t *newidx = bigmem_alloc((s->nnodes ? s->nnodes : 1) * sizeof *newidx);
	uint64_t *blocks = NULL;
	Pair *pairs = NULL;
	size_t npairs = 0, cpairs = 0, nblocks = 0, kept = 0, kept_edges = 0;
	int64_t ret = 0;
	r = SEL_ENOMEM;
	if (!keep || !newidx) goto out;
	mark(s, keep, max_age);
	for (size_t i = 0; i < s->nnodes; i++) {
		if (keep[i] == DROP) continue;
		newidx[i] = (uint32_t)kept++;
		if (keep[i] == KEEP_EDGES) {
			nblocks++;
			kept_edges += s->nodes[i].u.e.n;
		}
	}
	if (kept == s->nnodes) {
		r = 0; /* everything is in use: nothing to drop */
		goto out;
	}
	if (!(blocks = bigmem_alloc((nblocks ? nblocks : 1) * sizeof *blocks))) goto out;
	for (size_t i = 0, b = 0; i < s->nnodes; i++)
		if (keep[i] == KEEP_EDGES) blocks[b++] = (uint64_t)s->nodes[i].u.e.off << 32 | i;
	if ((r = shortcuts(s, keep, &pairs, &npairs, &cpairs))) goto out;
	r = SEL_ENOMEM;
	if (bigmem_grow((void **)&s->links, &s->caplinks, kept_edges + npairs + 1, sizeof *s->links,
	                64))
		goto out;
	size_t before = s->nnodes;
	pb_renumber(s, keep, newidx);
	compact(s, keep, newidx, blocks, nblocks, pairs, npairs);
	s->trimmed = true;
	s->st.trims++;
	s->st.trimmed += before - kept;
	r = 0;
	ret = (int64_t)(before - kept);
out:
	bigmem_free(keep);
	bigmem_free(newidx);
	bigmem_free(blocks);
	free(pairs);
	return r < 0 ? r : ret;
}

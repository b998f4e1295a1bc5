/*
 * minimax/graph.c — the backward analysis shared by peta-shock and book
 * minimax (see graph.h and docs/minimax.md for the steps).
 */
#include "minimax/graph.h"

#include "shogi/u32sort.h"
#include "shogi/bigmem.h"
#include "shogi/grow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mm_push_move(MmGraph *g, MmMove m)
{
	if (bigmem_grow((void **)&g->moves, &g->moves_cap, g->nmoves + 1, sizeof *g->moves, 1024) <
	    0)
		return -1;
	g->moves[g->nmoves++] = m;
	return 0;
}

void mm_graph_free(MmGraph *g)
{
	bigmem_free(g->flags);
	bigmem_free(g->vd);
	bigmem_free(g->mstart);
	bigmem_free(g->moves);
	mm_graph_free_edges(g);
	g->flags = NULL;
	g->vd = NULL;
	g->mstart = NULL;
	g->moves = NULL;
}

/* The analysis form from the moves form (without leaves: the edges alone,
 * flags untouched): 0 or -1 (out of memory). */
static int make_edges(MmGraph *g, bool leaves)
{
	size_t n = g->n, ne = 0, total = g->mstart[n];
	for (size_t k = 0; k < total; k++) ne += g->moves[k].next != MM_NONE;
	g->estart = bigmem_alloc((n + 1) * sizeof *g->estart);
	g->edge = bigmem_alloc((ne + 1) * sizeof *g->edge);
	g->leaf = leaves ? bigmem_alloc((n + 1) * sizeof *g->leaf) : NULL;
	if (!g->estart || !g->edge || (leaves && !g->leaf)) return -1;
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		g->estart[i] = (uint32_t)w;
		if (leaves) g->flags[i] &= (MmFlags)~MM_F_LEAF;
		for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
			const MmMove *m = &g->moves[k];
			if (m->next != MM_NONE)
				g->edge[w++] = m->next;
			else if (leaves)
				mm_leaf_add(g, (uint32_t)i, m->value);
		}
	}
	g->estart[n] = (uint32_t)w;
	return 0;
}

void mm_graph_free_edges(MmGraph *g)
{
	bigmem_free(g->estart);
	bigmem_free(g->edge);
	bigmem_free(g->leaf);
	g->estart = g->edge = NULL;
	g->leaf = NULL;
}

/* ---- the backward analysis ---------------------------------------------------- */

static inline int side_of(const MmGraph *g, uint32_t i)
{
	return (g->flags[i] & MM_F_WHITE) ? 1 : 0;
}

/* best, or node i's best leaf (depth 0) when that is better. */
static inline MmVd with_leaf(const MmGraph *g, uint32_t i, MmVd best)
{
	if (!(g->flags[i] & MM_F_LEAF)) return best;
	MmVd v = {g->leaf[i], 0};
	return mm_vd_better(v, best) ? v : best;
}

/* The best move's (value, depth) from node i's own side: its best leaf's
 * or an edge's. */
static inline MmVd best_move(const MmGraph *g, uint32_t i)
{
	MmVd best = with_leaf(g, i, (MmVd){-MM_VALUE_INF, MM_DEPTH_MAX});
	for (uint32_t k = g->estart[i]; k < g->estart[i + 1]; k++) {
		MmVd v = g->vd[g->edge[k]];
		if (mm_vd_better(v, best)) best = v;
	}
	return best;
}

/*
 * Node i's best as its parent sees it. A line that repeats forever at the
 * node's own draw value is a repetition: the parent sees its own draw value
 * (with the 0/0 default this is plain negation, as in YaneuraOu).
 */
static inline MmVd for_parent(const MmGraph *g, uint32_t i, MmVd best, bool cap_ply)
{
	unsigned d = best.depth + 1u;
	if (d > MM_DEPTH_MAX) d = MM_DEPTH_MAX;
	/* A line this long only ends in a leaf because it went round a cycle. */
	if (cap_ply && d > MM_MAX_PLY) d = MM_DEPTH_MAX;
	MmVd r = {(int16_t)-best.value, (uint16_t)d};
	if (d == MM_DEPTH_MAX && best.value == g->draw[side_of(g, i)])
		r.value = g->draw[side_of(g, i) ^ 1];
	return r;
}

/* True when some node two plies ahead of i carries the given flag. */
static bool two_ahead(const MmGraph *g, uint32_t i, MmFlags flag)
{
	for (uint32_t k = g->estart[i]; k < g->estart[i + 1]; k++) {
		uint32_t j = g->edge[k];
		for (uint32_t k2 = g->estart[j]; k2 < g->estart[j + 1]; k2++)
			if (g->flags[g->edge[k2]] & flag) return true;
	}
	return false;
}

/*
 * A frozen node keeps the LOOP and SURVIVOR flags it was given: a boundary node
 * of an incremental run carries what the whole-book analysis found for it
 * (those flags depend only on the nodes below it, which did not change).
 */
static void extract_check_loops(MmGraph *g, MmStats *st)
{
	for (uint32_t i = 0; i < g->n; i++)
		if ((g->flags[i] & (MM_F_CHECKED | MM_F_FROZEN)) == MM_F_CHECKED)
			g->flags[i] |= MM_F_LOOP;
	for (int s = 0; s < MM_MAX_PLY; s++) {
		size_t dropped = 0;
		for (uint32_t i = 0; i < g->n; i++) {
			if ((g->flags[i] & (MM_F_LOOP | MM_F_FROZEN)) != MM_F_LOOP) continue;
			if (two_ahead(g, i, MM_F_LOOP)) continue;
			g->flags[i] &= (MmFlags)~MM_F_LOOP;
			dropped++;
		}
		if (dropped == 0) break;
	}
	for (uint32_t i = 0; i < g->n; i++)
		if ((g->flags[i] & (MM_F_LOOP | MM_F_FROZEN)) == MM_F_LOOP) {
			g->flags[i] |= MM_F_SURVIVOR;
			st->check_loop1++;
		}
	/* The node between two survivors is on the loop too. Only survivors are
	 * tested two plies ahead, so the result does not depend on visiting order.
	 * A frozen node's children already carry what its survivorship gave them. */
	for (uint32_t i = 0; i < g->n; i++) {
		if ((g->flags[i] & (MM_F_SURVIVOR | MM_F_FROZEN)) != MM_F_SURVIVOR) continue;
		for (uint32_t k = g->estart[i]; k < g->estart[i + 1]; k++) {
			uint32_t j = g->edge[k];
			for (uint32_t k2 = g->estart[j]; k2 < g->estart[j + 1]; k2++) {
				if (g->flags[g->edge[k2]] & MM_F_SURVIVOR) {
					/* A frozen child that is not on a loop yet would
					 * become one: its caller must analyse it too. */
					if ((g->flags[j] & (MM_F_FROZEN | MM_F_LOOP)) ==
					    MM_F_FROZEN)
						g->flags[j] |= MM_F_STALE;
					else
						g->flags[j] |= MM_F_LOOP;
					break;
				}
			}
		}
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->flags[i] & MM_F_LOOP) st->check_loop2++;
}

/* Path-aware value of a check-loop node: re-entering the path is perpetual check.
 * A frozen node's value is final (no path from it leads back to the others). */
static MmVd dfs_loop(MmGraph *g, uint32_t i)
{
	if ((g->flags[i] & (MM_F_LOOP | MM_F_FROZEN)) != MM_F_LOOP) return g->vd[i];
	if (g->flags[i] & MM_F_PATH) {
		MmVd v = (g->flags[i] & MM_F_CHECKED) ? (MmVd){-MM_VALUE_MAX, MM_DEPTH_PCHECK}
		                                      : (MmVd){MM_VALUE_MAX, MM_DEPTH_PCHECKED};
		return v;
	}
	g->flags[i] |= MM_F_PATH;
	MmVd best = with_leaf(g, i, (MmVd){-MM_VALUE_INF, 0});
	for (uint32_t k = g->estart[i]; k < g->estart[i + 1]; k++) {
		MmVd v = dfs_loop(g, g->edge[k]);
		if (mm_vd_better(v, best)) best = v;
	}
	g->flags[i] &= (MmFlags)~MM_F_PATH;
	return for_parent(g, i, best, false);
}

/* Starting values of a cycle's nodes, as seen by their parents. */
static void init_cycle_node(MmGraph *g, uint32_t i)
{
	/* The parent's draw value: "repeats forever". */
	MmVd v = {g->draw[side_of(g, i) ^ 1], MM_DEPTH_MAX};
	/* On a perpetual-check loop the side in check wins it. */
	if (g->flags[i] & MM_F_LOOP)
		v.value = (int16_t)((g->flags[i] & MM_F_CHECKED) ? -MM_VALUE_MAX : MM_VALUE_MAX);
	g->vd[i] = v;
}

/*
 * Relaxes one component (members in rank order): in-place sweeps over its
 * non-loop nodes, each followed by a path-aware walk from every loop node,
 * until a sweep changes nothing or the cap. Returns the sweeps; *settled
 * says whether the last one changed nothing.
 */
static int relax_component(MmGraph *g, const uint32_t *mem, size_t nm, bool *settled)
{
	for (size_t q = 0; q < nm; q++) init_cycle_node(g, mem[q]);
	int sweeps = 0;
	*settled = false;
	for (int s = 0; s < MM_RELAX_SWEEPS; s++) {
		sweeps++;
		size_t changed = 0;
		for (size_t q = 0; q < nm; q++) {
			uint32_t i = mem[q];
			if (g->flags[i] & MM_F_LOOP) continue;
			MmVd v = for_parent(g, i, best_move(g, i), true);
			if (v.value != g->vd[i].value || v.depth != g->vd[i].depth) changed++;
			g->vd[i] = v;
		}
		for (size_t q = 0; q < nm; q++)
			if (g->flags[mem[q]] & MM_F_LOOP) g->vd[mem[q]] = dfs_loop(g, mem[q]);
		if (changed == 0) {
			*settled = true;
			break;
		}
	}
	return sweeps;
}

/* ---- strongly connected components ------------------------------------------- */

/* A component complete, its nodes in g->rank's order (index order without
 * one): 0, or what ends the search. */
typedef int (*ComponentFn)(void *ctx, uint32_t *mem, size_t nm);

static bool stopped(const MmGraph *g)
{
	return g->stop && atomic_load(g->stop);
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const uint32_t *rank = ctx;
	uint32_t x = rank[*(const uint32_t *)a], y = rank[*(const uint32_t *)b];
	return (x > y) - (x < y);
}

/*
 * Pearce's algorithm ("A space-efficient algorithm for finding strongly
 * connected components", 2016) without recursion: Tarjan's depth-first
 * search, in which one number a node serves for its visit index, its low
 * link and, once its component is complete, the component (counted down
 * from n - 1, above every index still in use, so that an edge into a
 * finished component never lowers a link). Besides rindex it needs two
 * stacks of a word a node and one of a word and a byte: 13 bytes a node at
 * most, touched only as deep as the search goes. The components complete
 * children first (a component's edges lead only to components completed
 * before it, or to itself); each is given to done (when not NULL) as it
 * completes. Returns the count of components, -1, MM_STOPPED when g->stop
 * turned true (checked every 65,536 nodes visited), or what done returned.
 */
static long scc_walk(const MmGraph *g, uint32_t *rindex, ComponentFn done, void *ctx)
{
	size_t n = g->n;
	if (n == 0) return 0;
	uint32_t *stack = bigmem_alloc(n * sizeof *stack), *cs = bigmem_alloc(n * sizeof *cs);
	uint32_t *ck = bigmem_alloc(n * sizeof *ck);
	uint8_t *root = bigmem_alloc(n);
	if (!stack || !cs || !ck || !root) {
		bigmem_free(stack), bigmem_free(cs), bigmem_free(ck), bigmem_free(root);
		return -1;
	}
	memset(rindex, 0, n * sizeof *rindex); /* 0: not visited */
	uint32_t index = 1, c = (uint32_t)(n - 1);
	size_t sp = 0, csp = 0;
	long rc = 0;
	for (uint32_t r = 0; r < n && rc == 0; r++) {
		if (rindex[r]) continue;
		cs[csp] = r;
		ck[csp] = g->estart[r];
		root[csp++] = 1;
		rindex[r] = index++;
		while (csp) {
			uint32_t v = cs[csp - 1];
			if (ck[csp - 1] < g->estart[v + 1]) {
				uint32_t w = g->edge[ck[csp - 1]++];
				if (!rindex[w]) {
					/* A search that waits on the disk (its arrays in
					 * files) still stops within a moment. */
					if ((index & 0xffff) == 0 && stopped(g)) {
						rc = MM_STOPPED;
						break;
					}
					rindex[w] = index++;
					cs[csp] = w;
					ck[csp] = g->estart[w];
					root[csp++] = 1;
				} else if (rindex[w] < rindex[v]) {
					rindex[v] = rindex[w];
					root[csp - 1] = 0;
				}
				continue;
			}
			bool is_root = root[--csp];
			if (is_root) {
				/* v and the nodes above it on the stack: one component. */
				size_t top = sp;
				index--;
				while (sp && rindex[v] <= rindex[stack[sp - 1]]) {
					rindex[stack[--sp]] = c;
					index--;
				}
				rindex[v] = c--;
				if (done) {
					/* The stack has room: v is not on it. */
					stack[top] = v;
					size_t nm = top - sp + 1;
					if (nm > 1 && g->rank)
						qsort_r(stack + sp, nm, sizeof *stack, cmp_rank,
						        (void *)g->rank);
					else if (nm > 1)
						u32_sort(stack + sp, nm);
					if ((rc = done(ctx, stack + sp, nm)) != 0) break;
				}
			} else {
				stack[sp++] = v;
			}
			if (csp && rindex[v] < rindex[cs[csp - 1]]) {
				rindex[cs[csp - 1]] = rindex[v];
				root[csp - 1] = 0;
			}
		}
	}
	bigmem_free(stack), bigmem_free(cs), bigmem_free(ck), bigmem_free(root);
	return rc != 0 ? rc : (long)((uint32_t)(n - 1) - c);
}

/* Strongly connected components, children first (graph.h). */
long mm_scc(const MmGraph *g, uint32_t *comp)
{
	MmGraph t = *g;
	if (!t.edge && make_edges(&t, false) < 0) {
		mm_graph_free_edges(&t);
		return -1;
	}
	long nc = scc_walk(&t, comp, NULL, NULL);
	if (!g->edge) mm_graph_free_edges(&t);
	if (nc < 0) return nc;
	/* Completed first: 0. */
	for (size_t i = 0; i < g->n; i++) comp[i] = (uint32_t)(g->n - 1) - comp[i];
	return nc;
}

/* ---- the analysis, a component at a time -------------------------------------- */

typedef struct {
	MmGraph *g;
	MmStats *st;
	uint16_t *sweep; /* yo_peel: the peel sweep that would settle each node */
	size_t comps;
} Backup;

/*
 * One strongly connected component, its exits final (docs/minimax.md): a
 * node on no cycle is settled from its moves in one step — "const" (exact,
 * no ply cap) when everything below it is const, else with the ply cap of a
 * line that went round a cycle; a cycle is relaxed on its own from its
 * starting values. YaneuraOu's sweeps over the whole book reach the same
 * values; with yo_peel, a node that its 256 in-place peel sweeps (in index
 * order) would not reach is not const.
 */
static int settle_component(void *ctx, uint32_t *m, size_t nm)
{
	Backup *bk = ctx;
	MmGraph *g = bk->g;
	MmStats *st = bk->st;
	if ((++bk->comps & 0xffff) == 0 && stopped(g)) return MM_STOPPED;
	uint32_t i = m[0];
	if (g->flags[i] & MM_F_FROZEN) return 0;
	if (nm == 1 && !(g->flags[i] & MM_F_LOOP)) {
		bool exact = true;
		unsigned sw = 1;
		uint16_t *sweep = bk->sweep;
		for (uint32_t k = g->estart[i]; k < g->estart[i + 1] && exact; k++) {
			uint32_t j = g->edge[k];
			if (!(g->flags[j] & MM_F_CONST))
				exact = false;
			else if (sweep && (unsigned)(sweep[j] + (j > i)) > sw)
				sw = (unsigned)(sweep[j] + (j > i));
		}
		if (exact && sweep) {
			if (sw > MM_MAX_PLY) exact = false;
			sweep[i] = (uint16_t)sw;
		}
		g->vd[i] = for_parent(g, i, best_move(g, i), !exact);
		if (exact) {
			g->flags[i] |= MM_F_CONST;
			st->const_nodes++;
			if (sw > (unsigned)st->peel_sweeps) st->peel_sweeps = (int)sw;
		}
		return 0;
	}
	bool settled;
	int sw = relax_component(g, m, nm, &settled);
	if (sw > st->relax_sweeps) st->relax_sweeps = sw;
	if (!settled) {
		st->unsettled_cycles++;
		st->unsettled_nodes += nm;
	}
	return 0;
}

/*
 * The analysis: the perpetual-check loops first (they depend on nothing
 * else), then each component as the search completes it. Memory: rindex, 4
 * bytes a node, and the search's stacks (as deep as it goes), besides the
 * graph's arrays (the analysis form made from the moves form when the caller
 * gave none).
 */
int mm_backup(MmGraph *g, MmStats *st)
{
	memset(st, 0, sizeof *st);
	size_t n = g->n;
	if (!g->vd) {
		g->vd = bigmem_alloc((n + 1) * sizeof *g->vd);
		if (!g->vd) return -1;
	}
	bool made = !g->edge;
	Backup bk = {g, st, NULL, 0};
	uint32_t *rindex = bigmem_alloc((n + 1) * sizeof *rindex);
	if (g->yo_peel) bk.sweep = bigmem_alloc((n + 1) * sizeof *bk.sweep);
	long rc =
	    !rindex || (g->yo_peel && !bk.sweep) || (made && make_edges(g, true) < 0) ? -1 : 0;
	if (rc == 0 && stopped(g)) rc = MM_STOPPED;
	if (rc == 0) {
		extract_check_loops(g, st);
		st->peel_sweeps = 1;
		rc = scc_walk(g, rindex, settle_component, &bk);
	}
	if (made) {
		/* The caller's flags as it gave them (the moves form is its). */
		mm_graph_free_edges(g);
		for (size_t i = 0; i < n; i++) g->flags[i] &= (MmFlags)~MM_F_LEAF;
	}
	bigmem_free(rindex), bigmem_free(bk.sweep);
	return rc < 0 ? (int)rc : 0;
}

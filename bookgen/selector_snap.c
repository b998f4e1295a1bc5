/*
 * bookgen/selector_snap.c — the selector's graph written to a snapshot and
 * read back (bookgen/snapshot.h).
 *
 * Sections: SELH (counts, layout, options, counters), SELN (the nodes, a held
 * record's pointer written as 0), SELE (edges), SELL (parent links), SELP
 * (nodes whose ancestors' bounds are still to be cleared), SELR (the held
 * records: per NF_RAW node in index order, a u32 length and the bytes), SELB
 * (the key filter). The key map is built again from the nodes (its slots
 * are the book's size, most of them empty). Everything read is checked
 * before it is used: an index out of range, a link list that loops or a key
 * twice is a damaged snapshot, whatever the hashes said.
 */
#include "bookgen/selector_priv.h"
#include "bookgen/snapshot.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/u32sort.h"
#include "shogi/bigmem.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"

#define T_HEAD SNAP_TAG('S', 'E', 'L', 'H')
#define T_NODES SNAP_TAG('S', 'E', 'L', 'N')
#define T_EDGES SNAP_TAG('S', 'E', 'L', 'E')
#define T_LINKS SNAP_TAG('S', 'E', 'L', 'L')
#define T_PEND SNAP_TAG('S', 'E', 'L', 'P')
#define T_RAW SNAP_TAG('S', 'E', 'L', 'R')
#define T_BLOOM SNAP_TAG('S', 'E', 'L', 'B')

typedef struct {
	uint32_t node_size, edge_size, link_size, key_size;
	SelOptions opt;
	uint64_t nnodes, nedges, nlinks, npending;
	uint64_t nraw, raw_bytes; /* NF_RAW nodes; their records' bytes */
	uint64_t bloom_bytes, bloom_blocks, map_cap;
	uint32_t stamp, next_root;
	uint32_t filter_kept, trimmed; /* trimmed: sel_trim dropped nodes (0 before it existed) */
	double filter_ms;
	uint64_t thought, edges_built;
} SelHead;

bool sel_snapshot_ready(const Selector *s)
{
	/* Not while the filter's thread runs (a regrow: sel_snapshot_write
	 * could be called in a forked child, where the thread is not). */
	return s->lazy && !s->in_call && !s->trim && !s->ndefer && !s->err && s->bloom_joined &&
	       s->bloom;
}

void sel_snapshot_wait(Selector *s)
{
	if (s->in_call) return;
	sel_g_trim_end(s);
	sel_g_filter_wait(s);
}

int sel_snapshot_write(Selector *s, SnapWriter *w)
{
	sel_snapshot_wait(s);
	/* A regrow under way: the filter in use (it has every key the new one
	 * will have). */
	if (!s->lazy || s->in_call || s->ndefer || s->err || !s->bloom) return SEL_EINVAL;
	/* Each change pushes its node on the pending list, a node changed
	 * twice twice: written once each, as the restore checks it (no more
	 * entries than nodes; a run stopped seconds into its first search had
	 * 4 for 3 nodes, and its snapshot was refused as damaged). The order
	 * does not matter: their ancestors' bounds are cleared in one walk. */
	if (s->npending > 1) {
		u32_sort(s->pending, s->npending);
		size_t n = 1;
		for (size_t i = 1; i < s->npending; i++)
			if (s->pending[i] != s->pending[n - 1]) s->pending[n++] = s->pending[i];
		s->npending = n;
	}
	SelHead h = {.node_size = sizeof(SelNode),
	             .edge_size = sizeof(SelEdge),
	             .link_size = sizeof(SelLink),
	             .key_size = sizeof(Key),
	             .opt = s->opt,
	             .nnodes = s->nnodes,
	             .nedges = s->nedges,
	             .nlinks = s->nlinks,
	             .npending = s->npending,
	             .bloom_bytes = s->bloom_bytes,
	             .bloom_blocks = s->bloom_blocks,
	             .map_cap = s->map.cap,
	             .stamp = s->stamp,
	             .next_root = (uint32_t)s->next_root,
	             .filter_kept = s->filter_kept,
	             .trimmed = s->trimmed,
	             .filter_ms = s->filter_ms,
	             .thought = s->st.thought,
	             .edges_built = s->st.edges};
	for (size_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].flags & NF_RAW) {
			uint32_t len;
			memcpy(&len, s->nodes[i].u.raw, sizeof len);
			h.nraw++;
			h.raw_bytes += sizeof len + len;
		}
	int rc;
	if ((rc = snap_section(w, T_HEAD)) || (rc = snap_write(w, &h, sizeof h))) return rc;
	/* The nodes in chunks, a held record's pointer as 0, nothing read ahead
	 * (the next process's read-ahead threads have read nothing). */
	if ((rc = snap_section(w, T_NODES))) return rc;
	enum { CHUNK = 4096 };
	SelNode *chunk = malloc(CHUNK * sizeof *chunk);
	if (!chunk) return SEL_ENOMEM;
	for (size_t i = 0; i < s->nnodes && !rc; i += CHUNK) {
		size_t n = s->nnodes - i < CHUNK ? s->nnodes - i : CHUNK;
		memcpy(chunk, s->nodes + i, n * sizeof *chunk);
		for (size_t j = 0; j < n; j++) {
			if (chunk[j].flags & NF_RAW) chunk[j].u.raw = NULL;
			chunk[j].flags &= (uint8_t)~NF_AHEAD;
		}
		rc = snap_write(w, chunk, n * sizeof *chunk);
	}
	free(chunk);
	if (rc || (rc = snap_section(w, T_EDGES)) ||
	    (rc = snap_write(w, s->edges, s->nedges * sizeof *s->edges)) ||
	    (rc = snap_section(w, T_LINKS)) ||
	    (rc = snap_write(w, s->links, s->nlinks * sizeof *s->links)) ||
	    (rc = snap_section(w, T_PEND)) ||
	    (rc = snap_write(w, s->pending, s->npending * sizeof *s->pending)) ||
	    (rc = snap_section(w, T_RAW)))
		return rc;
	for (size_t i = 0; i < s->nnodes && !rc; i++)
		if (s->nodes[i].flags & NF_RAW) {
			uint32_t len;
			memcpy(&len, s->nodes[i].u.raw, sizeof len);
			rc = snap_write(w, s->nodes[i].u.raw, sizeof len + len);
		}
	if (rc || (rc = snap_section(w, T_BLOOM)) || (rc = snap_write(w, s->bloom, s->bloom_bytes)))
		return rc;
	return 0;
}

static int damaged(char *err, const char *what, uint64_t where)
{
	return errmsg_set(err, SNAP_ERRLEN, SEL_ESNAP, "selector snapshot: damaged: %s (at %llu)",
	                  what, (unsigned long long)where);
}

/* Every index of the graph in range, every link list ending (a link points
 * only to an earlier one: add_link), a held record where the flag says. */
static int check_graph(const Selector *s, char *err)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const SelNode *n = &s->nodes[i];
		if (n->flags & NF_ONPATH) return damaged(err, "a node on a search path", i);
		if (n->bound > B_NOLEAF) return damaged(err, "a node's bound", i);
		if (n->parents > s->nlinks) return damaged(err, "a node's parent link", i);
		if ((n->flags & NF_RAW) && (n->flags & NF_EXPANDED))
			return damaged(err, "a node both expanded and holding its record", i);
		if ((n->flags & NF_EXPANDED) &&
		    ((uint64_t)n->u.e.off + n->u.e.n > s->nedges ||
		     (n->u.e.best != NO_BEST && n->u.e.best >= n->u.e.n && !sel_node_mated(n))))
			return damaged(err, "a node's edges", i);
	}
	for (size_t i = 0; i < s->nedges; i++)
		if (s->edges[i].child < 0 || (uint64_t)s->edges[i].child >= s->nnodes)
			return damaged(err, "an edge's child", i);
	for (size_t i = 0; i < s->nlinks; i++)
		if (s->links[i].node >= s->nnodes || s->links[i].next > i)
			return damaged(err, "a parent link", i);
	for (size_t i = 0; i < s->npending; i++)
		if (s->pending[i] >= s->nnodes) return damaged(err, "a pending node", i);
	return 0;
}

/* The held records from blob (len bytes) into the NF_RAW nodes. */
static int take_raw(Selector *s, const uint8_t *blob, uint64_t len, char *err)
{
	uint64_t off = 0;
	for (size_t i = 0; i < s->nnodes; i++) {
		SelNode *n = &s->nodes[i];
		if (!(n->flags & NF_RAW)) continue;
		uint32_t l;
		if (len - off < sizeof l) return damaged(err, "the held records", i);
		memcpy(&l, blob + off, sizeof l);
		if (!l || len - off - sizeof l < l)
			return damaged(err, "a held record's length", i);
		uint8_t *p = malloc(sizeof l + l);
		if (!p) return SEL_ENOMEM;
		memcpy(p, blob + off, sizeof l + l);
		n->u.raw = p;
		s->raw_bytes += l;
		off += sizeof l + l;
	}
	return off == len ? 0 : damaged(err, "held records left over", off);
}

/* A failed restore leaves nothing sel_free cannot free: the held records
 * taken so far freed, the nodes forgotten. */
static int restore_fail(Selector *s, int rc)
{
	for (size_t i = 0; i < s->nnodes; i++)
		if ((s->nodes[i].flags & NF_RAW) && s->nodes[i].u.raw) free(s->nodes[i].u.raw);
	s->nnodes = s->nedges = s->nlinks = s->npending = 0;
	s->raw_bytes = 0;
	keymap_free(&s->map);
	keymap_init(&s->map, sizeof(SelNode));
	return rc;
}

/* Whether section tag holds n items of size elem (checked before anything
 * is allocated for them: a damaged count must not ask for terabytes). */
static int expect(SnapReader *r, uint32_t tag, uint64_t n, size_t elem, char *err)
{
	uint64_t len;
	if (n > SIZE_MAX / elem / 2 || !snap_has(r, tag, &len) || len != n * elem)
		return damaged(err, "a count against its section's length", n);
	return 0;
}

/* n items of size elem, as bytes, checked against the section's length. */
static int read_array(SnapReader *r, uint32_t tag, void **arr, size_t *cap, uint64_t n, size_t elem,
                      char *err)
{
	int rc = expect(r, tag, n, elem, err);
	if (rc) return rc;
	if (bigmem_grow(arr, cap, n ? (size_t)n : 1, elem, 64)) return SEL_ENOMEM;
	return snap_read(r, tag, *arr, n * elem, err);
}

int sel_restore(Selector *s, BookDB *db, SnapReader *r, char *err)
{
	if (s->nnodes || s->nroots || s->lazy || s->bloom) return SEL_EINVAL;
	SelHead h;
	int rc = snap_read(r, T_HEAD, &h, sizeof h, err);
	if (rc) return rc;
	if (h.node_size != sizeof(SelNode) || h.edge_size != sizeof(SelEdge) ||
	    h.link_size != sizeof(SelLink) || h.key_size != sizeof(Key))
		return errmsg_set(err, SNAP_ERRLEN, SEL_ESNAP,
		                  "selector snapshot: of another build (node layout)");
	if (h.opt.kif_bonus != s->opt.kif_bonus || h.opt.draw_value != s->opt.draw_value)
		return errmsg_set(err, SNAP_ERRLEN, SEL_ESNAP,
		                  "selector snapshot: another kif bonus (%d, now %d)",
		                  h.opt.kif_bonus, s->opt.kif_bonus);
	if (h.nnodes >= INT32_MAX || h.nedges >= UINT32_MAX || h.nlinks >= UINT32_MAX ||
	    h.npending > h.nnodes || h.thought > h.nnodes || h.nraw > h.nnodes ||
	    h.map_cap > ((uint64_t)1 << 40) || h.bloom_bytes != (h.bloom_blocks + 1) * 64 ||
	    (h.bloom_blocks & (h.bloom_blocks + 1)) || h.bloom_bytes > ((uint64_t)1 << 40))
		return damaged(err, "the counts", 0);
	if ((rc = expect(r, T_NODES, h.nnodes, sizeof(SelNode), err)) ||
	    (rc = expect(r, T_BLOOM, h.bloom_bytes, 1, err)) ||
	    (rc = expect(r, T_RAW, h.raw_bytes, 1, err)))
		return rc;
	/* The map as sel_attach sizes it: for the book's positions, which the
	 * filter's size follows (16-32 bits a key). */
	if (h.map_cap / 2 > h.bloom_bytes + 2 * h.nnodes + 2048)
		return damaged(err, "the map's size", 0);
	/* The nodes, and the key map as sel_attach sizes it: for the book as it
	 * is now, which may have grown many times over since the map was made
	 * (a map too small grows in one go, mid-search). */
	uint64_t count = 0;
	if ((rc = sel_g_book_count(db, &count)) ||
	    (rc = sel_g_reserve_map(s, count, (size_t)h.map_cap / 2)) ||
	    (rc = sel_g_reserve_nodes(s, h.nnodes ? (size_t)h.nnodes : 1)))
		return rc;
	if ((rc = snap_read(r, T_NODES, s->nodes, h.nnodes * sizeof(SelNode), err))) return rc;
	for (size_t i = 0; i < h.nnodes; i++) {
		if (s->nodes[i].flags & NF_RAW) s->nodes[i].u.raw = NULL;
		s->nodes[i].seen = 0; /* ages count from the restore (sel_trim) */
	}
	s->nnodes = (size_t)h.nnodes;
	uint8_t *blob = NULL;
	if ((rc = read_array(r, T_EDGES, (void **)&s->edges, &s->capedges, h.nedges,
	                     sizeof *s->edges, err)) ||
	    (rc = read_array(r, T_LINKS, (void **)&s->links, &s->caplinks, h.nlinks,
	                     sizeof *s->links, err)) ||
	    (rc = read_array(r, T_PEND, (void **)&s->pending, &s->cappending, h.npending,
	                     sizeof *s->pending, err)))
		return restore_fail(s, rc);
	s->nedges = (size_t)h.nedges;
	s->nlinks = (size_t)h.nlinks;
	s->npending = (size_t)h.npending;
	if ((rc = check_graph(s, err))) return restore_fail(s, rc);
	size_t bcap = 0;
	if ((rc = read_array(r, T_RAW, (void **)&blob, &bcap, h.raw_bytes, 1, err)) ||
	    (rc = take_raw(s, blob, h.raw_bytes, err))) {
		bigmem_free(blob);
		return restore_fail(s, rc);
	}
	bigmem_free(blob);
	/* The key map, from the nodes. */
	for (size_t i = 0; i < s->nnodes; i++) {
		int64_t put = keymap_find_or_insert(
		    &s->map, (const char *)s->nodes + offsetof(SelNode, key), (uint32_t)i);
		if (put < 0) return restore_fail(s, SEL_ENOMEM);
		if (put != (int64_t)i) return restore_fail(s, damaged(err, "a key twice", i));
	}
	/* The key filter (at 10^9 positions 2 GB, most of the snapshot): read
	 * by the filter's thread while the selector is in use (its searches
	 * do not wait for it: LMDB answers their lookups meanwhile); the
	 * book's keys added meanwhile go in at the join. But a book that has
	 * outgrown it (past 8 bits a key, as a regrow) has one made for it
	 * instead, which the first search waits for, as a new selector's. */
	if (count <= h.bloom_bytes) {
		if ((rc = snap_section_take(&s->bloom_src, r, T_BLOOM, h.bloom_bytes, err)))
			return restore_fail(s, rc);
		s->bloom_src_used = true;
		s->bloom_src_blocks = h.bloom_blocks;
		s->bloom_src_kept = h.filter_kept;
		s->bloom_src_ms = h.filter_ms;
		s->bloom_expect = (size_t)h.bloom_bytes;
		s->filter_keys = count;
	} else {
		s->bloom_expect = sel_filter_bytes(count);
		s->regrows = 1; /* made again for the book (SelStats.filter_regrows) */
	}
	sel_g_fix_map(s);
	s->db = db;
	s->lazy = true;
	if (!s->bloom_deferred) sel_start_filter(s);
	s->stamp = h.stamp;
	s->next_root = h.next_root;
	s->st.nodes = s->nnodes;
	s->st.thought = h.thought;
	s->trimmed = h.trimmed != 0;
	/* The keys its trims dropped are not in the snapshot: any may be one,
	 * until every bound is cleared. */
	s->gone_full = s->trimmed;
	s->st.edges = h.edges_built;
	return 0;
}

int sel_catch_up(Selector *s, const BookStamp *from, SelCatchUp *out, char *err)
{
	memset(out, 0, sizeof *out);
	if (!s->lazy || !s->db || s->in_call) return SEL_EINVAL;
	if (from->chg_state != BOOKDB_CHANGES_ON)
		return errmsg_set(err, SNAP_ERRLEN, SEL_ESTALE, "selector snapshot: %s",
		                  "the book was written since, and its change log was not on");
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, s->db, false) < 0) return SEL_EBOOK;
	BookChangesInfo ci;
	BookChangesIter *it = NULL;
	KeyMap seen;
	keymap_init_set(&seen, false);
	Key *keys = NULL;
	size_t nkeys = 0, capkeys = 0;
	RetroMove *cand = NULL;
	uint64_t expect = from->chg_seq + 1, seq;
	Key k;
	const char *why = "the book was written since, and the change log no longer holds every "
	                  "write (a minimax run consumed it, or it overflowed)";
	int rc = bookdb_changes_info(&ci, txn) < 0 || bookdb_changes_iter_open(&it, txn, expect) < 0
	             ? SEL_EBOOK
	             : 0;
	/* Every sequence number since, each with its entry. */
	while (rc == 0 && (rc = bookdb_changes_iter_next(it, &seq, &k)) == 1) {
		rc = seq == expect++ ? 0 : SEL_ESTALE;
		int added = rc ? 0 : keymap_add(&seen, k, NULL);
		if (added < 0 ||
		    (added && array_grow((void **)&keys, &capkeys, nkeys + 1, sizeof *keys, 1024)))
			rc = SEL_ENOMEM;
		else if (added)
			keys[nkeys++] = k;
		out->entries++;
	}
	if (rc < 0 && rc != SEL_ESTALE && rc != SEL_ENOMEM) rc = SEL_EBOOK;
	if (rc == 0 && (ci.seq != expect - 1 || ci.state != BOOKDB_CHANGES_ON)) rc = SEL_ESTALE;
	if (rc == 0 && nkeys > s->nnodes && nkeys > 65536) {
		why = "more positions written since than the graph holds (a search from scratch "
		      "reads less)";
		rc = SEL_ESTALE;
	}
	if (rc == 0 && !(cand = malloc(RETRO_MAX * sizeof *cand))) rc = SEL_ENOMEM;
	out->keys = nkeys;
	s->txn = txn;
	for (size_t i = 0; rc == 0 && i < nkeys; i++) {
		const uint8_t *val;
		size_t len;
		int g = bookdb_get_raw(&val, &len, txn, keys[i]);
		if (g < 0 && g != BOOKDB_ENOTFOUND) {
			rc = SEL_EBOOK;
			break;
		}
		rc = sel_g_book_changed(s, keys[i], g == 0 ? val : NULL, g == 0 ? len : 0, cand,
		                        &out->parents);
		if (rc == 1) out->changed++;
		if (rc == 2) out->added++;
		if (rc > 0) rc = 0;
		if (rc == SEL_ESTALE)
			why = "a thought position of the graph is no longer thought in the book";
	}
	s->txn = NULL;
	free(cand);
	free(keys);
	keymap_free(&seen);
	bookdb_changes_iter_free(it);
	bookdb_txn_abort(txn);
	if (rc == SEL_ESTALE) return errmsg_set(err, SNAP_ERRLEN, rc, "selector snapshot: %s", why);
	if (rc < 0)
		return errmsg_set(err, SNAP_ERRLEN, rc, "selector snapshot: catching up: %s",
		                  sel_strerror(rc));
	return 0;
}

void sel_catch_up_note(char *out, size_t len, const SelCatchUp *cu)
{
	snprintf(out, len,
	         "caught up with the book: %llu positions written since, %llu of them in the "
	         "graph, %llu new to it",
	         (unsigned long long)cu->keys, (unsigned long long)cu->changed,
	         (unsigned long long)cu->added);
}

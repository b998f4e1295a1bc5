/*
 * minimax/bookinc.c — the incremental run of joseki minimax (docs/minimax.md,
 * "Incremental runs").
 *
 * A node's value depends only on the nodes below it. So after some records
 * changed (the book's change log), only the changed nodes and their ancestors
 * can change: this run takes the graph the last run kept (minimax/mmfile.h),
 * brings the changed nodes' moves up to date (new positions get their edges
 * both ways: forward by move generation, backward by retrograde generation),
 * and analyses with the shared core the subgraph of
 *   A   the changed nodes and all their ancestors (every parent of a node in A
 *       is in A),
 *   B   the children of A's nodes in check and A's children on a
 *       perpetual-check loop, outside A, frozen with the flags and values the
 *       book kept (their moves are given too: the perpetual-check extraction
 *       looks two plies ahead of a node in check),
 *   B2  the other children of A and the children of B, outside A and B,
 *       frozen, no moves,
 * with its nodes in key order, as the whole-book run numbers them. Components
 * of A are then relaxed from the same start values in the same order with the
 * same exits, so every value is the one a whole-book run gives. One thing a
 * node outside A can owe to a node in A is its place between two survivors of
 * a perpetual-check loop; when that changes, the node joins A and the subgraph
 * is built again.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "bookdb/prefetch.h"
#include "minimax/bookmm_priv.h"
#include "minimax/mmfile.h"
#include "shogi/movegen.h"
#include "shogi/parfor.h"
#include "shogi/retro.h"

#define F_VALUED 0x01 /* as in bookmm.c: the core's caller bit */

/* The marks go in a set (an entry of about 24 bytes, with the set's room, a
 * position the run marks: about ten a change) rather than a byte a node when
 * the graph has more than this many nodes a change. */
#define MARKS_HASH_RATIO 256

/* Per global node, in Inc.mark or Inc.marks (mk). */
enum {
	R_A = 1,  /* analysed */
	R_B = 2,  /* frozen, with moves */
	R_B2 = 3, /* frozen, no moves */
	R_ROLE = 3,
	M_SEED = 0x04,     /* changed graph input, or joined A (a loop place changed) */
	M_RECORD = 0x08,   /* its record changed (rewrite it) */
	M_REWRITE = 0x10,  /* rewrite its record */
	M_REPARENT = 0x20, /* looked at as a parent of a new position */
	M_NEW = 0x40,      /* added by this run */
	M_LISTED = 0x80,   /* its moves were replaced (its old part of the totals is off) */
};

typedef struct {
	int64_t valued, settled, moves, edges;
} Totals;

typedef struct {
	uint32_t *v;
	size_t n, cap;
} U32s;

typedef struct {
	Key *v;
	size_t n, cap;
} Keys;

typedef struct Work Work;
typedef struct WorkScratch WorkScratch;

typedef struct {
	BookDB *db;
	BookmmOptions opt; /* a copy: a plan outlives its caller's */
	MmView v;
	BookmmState s;
	/* Per global node (the M_* and R_* bits, mk): a byte for every node of
	 * the graph, or, when the graph is large beside the changes
	 * (MARKS_HASH_RATIO), a set with values keyed by the node holding the
	 * nodes this run marks (a batch of changes writes nearly every page of
	 * the bytes: a gigabyte at 10^9 positions for the coordinator's runs). */
	uint8_t *mark;
	size_t mark_cap;
	KeyMap marks;
	bool marks_hash;
	/* global -> local node of the subgraph: a set with values keyed by the
	 * node (node_key), as large as the subgraph; an array as long as mark
	 * was 4 bytes a node of the whole graph, nearly every page of it
	 * written by a subgraph of a few hundred thousand nodes. */
	KeyMap local;
	U32s changed;  /* nodes of changed records */
	U32s seeds;    /* nodes whose graph input changed, then those that joined A */
	U32s a, b, b2; /* the subgraph's parts, globals */
	U32s sub;      /* all of it, in key order */
	U32s queue;
	Totals tot;
	MmGraph g;
	uint8_t *nval; /* per local node of A: valued */
	BookRecord *rec;
	Position *pos;
	uint64_t snap_seq;       /* the last change-log number the snapshot saw */
	char why[BOOKDB_ERRLEN]; /* a record read that is not sound */
	int sweeps;
	size_t unsettled_cycles, unsettled; /* the last analysis's (MmStats) */
	bool resumed;         /* an earlier run wrote part of its records and stopped */
	bool kept;            /* v came from opt.keep */
	BookPrefetch *ahead;  /* see read_ahead */
	bool no_ahead;        /* it could not be started */
	Work *work;           /* WORK_WINDOW records' moves being worked out (work_records) */
	MmMove *work_moves;   /* their moves: BOOKMM_NODE_MOVES each */
	WorkScratch *scratch; /* WORK_THREADS */
} Inc;

/* Records a walk over records hands to the read-ahead threads at a time, and
 * how many threads read them. */
#define AHEAD_KEYS 256
#define AHEAD_THREADS 8

/* Nodes of the walk over parents whose pages are brought in at a time
 * (mmfile_touch). */
#define TOUCH_WINDOW 4096

/* A write transaction of the rewrite ends after INC_BATCH_MS, or
 * INC_BATCH_MAX records (BookmmOptions.batch records when set): a writer
 * running beside minimax waits for LMDB's write lock at most one batch long,
 * not the whole rewrite. Batches of a fixed 1,000 records took twice as long
 * on a book larger than the batch's pages: each commit wrote its pages where
 * the last one had freed them, scattered over the file. */
#define INC_BATCH_MS 250.0
#define INC_BATCH_MAX 16384
/* The clock is read every INC_BATCH_STEP records. */
#define INC_BATCH_STEP 64
/* Meta key present while a run's rewrite spans several transactions. */
#define META_RUNNING BOOKMM_META_RUNNING

static int push(U32s *l, uint32_t x)
{
	if (array_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 1024) < 0) return -1;
	l->v[l->n++] = x;
	return 0;
}

static uint32_t view_find(const void *ctx, Key k)
{
	return mmfile_find(ctx, k);
}

static void view_find_many(const void *ctx, const Key *k, size_t n, uint32_t *out)
{
	mmfile_find_many(ctx, k, n, out);
}

static bool view_inner(const void *ctx, uint32_t node)
{
	return mmfile_flags(ctx, node) & MMF_INNER;
}

/* Node x as a key of the set local: its hi is what the set hashes and keeps. */
static inline Key node_key(uint32_t x)
{
	return (Key){.lo = x, .hi = (uint64_t)x + 1};
}

/* x's local node (x in the subgraph: its role set). */
static inline uint32_t local_of(const Inc *c, uint32_t x)
{
	const uint32_t *l = keymap_value(&c->local, node_key(x));
	assert(l);
	return *l;
}

/* Makes mark cover every node of the view (with the bytes). */
static int cover(Inc *c)
{
	size_t n = mmfile_count(&c->v);
	if (c->marks_hash || n <= c->mark_cap) return 0;
	size_t nc = n + n / 4 + 64;
	/* A byte a node of the whole graph (a gigabyte at 10⁹ nodes) of which a
	 * run touches the few it analyses: the first from calloc, whose pages
	 * stay unmapped until written, not zeroed here. */
	uint8_t *m = c->mark ? realloc(c->mark, nc) : calloc(nc, 1);
	if (!m) return -1;
	c->mark = m;
	if (c->mark_cap) memset(c->mark + c->mark_cap, 0, nc - c->mark_cap);
	c->mark_cap = nc;
	return 0;
}

/* Node x's marks (0: none). */
static inline uint8_t mk(const Inc *c, uint32_t x)
{
	if (!c->marks_hash) return c->mark[x];
	const uint32_t *v = keymap_value(&c->marks, node_key(x));
	return v ? (uint8_t)*v : 0;
}

/* Clears the bits clear in x's marks and sets set. 0, or -1 when memory
 * runs out. */
static int mk_change(Inc *c, uint32_t x, unsigned clear, unsigned set)
{
	if (!c->marks_hash) {
		c->mark[x] = (uint8_t)((c->mark[x] & ~clear) | set);
		return 0;
	}
	uint32_t *v;
	if (keymap_add(&c->marks, node_key(x), &v) < 0) return -1;
	if (*v == KEYMAP_NONE) *v = 0;
	*v = (*v & ~clear) | set;
	return 0;
}

/* Sets bits in x's marks. 0, or -1 when memory runs out. */
static int mk_or(Inc *c, uint32_t x, unsigned bits)
{
	return mk_change(c, x, 0, bits);
}

static bool valued_now(const Inc *c, uint32_t x)
{
	if ((mk(c, x) & R_ROLE) == R_A) return c->nval[local_of(c, x)];
	return mmfile_flags(&c->v, x) & MMF_VALUED;
}

/* Adds node x's part of the totals (its value, its moves), times sign. */
static void contrib(Inc *c, uint32_t x, int sign)
{
	uint8_t f = mmfile_flags(&c->v, x);
	if (!(f & MMF_VALUED)) return;
	c->tot.valued += sign;
	if (f & MMF_CONST) c->tot.settled += sign;
	uint32_t len;
	const MmMove *m = mmfile_moves(&c->v, x, &len);
	for (uint32_t k = 0; m && k < len; k++) {
		if (m[k].next == MM_NONE) {
			c->tot.moves += sign;
		} else if (mmfile_flags(&c->v, m[k].next) & MMF_VALUED) {
			c->tot.moves += sign;
			c->tot.edges += sign;
		}
	}
}

/* Node x's moves as worked out from its record (n of them, and what its
 * position is: work_records); replaces the kept ones when they differ and
 * marks x as a seed. */
static int refresh_apply(Inc *c, uint32_t x, const MmMove *moves, int n, uint8_t structure)
{
	uint32_t old;
	const MmMove *om = mmfile_moves(&c->v, x, &old);
	if (!om) return MMFILE_ESTALE;
	bool added = mk(c, x) & M_NEW;
	if (!added && old == (uint32_t)n && !memcmp(om, moves, (size_t)n * sizeof *om)) return 0;
	if (!added) contrib(c, x, -1);
	/* A child this node no longer leads to may have owed it its place on a
	 * perpetual-check loop (between two survivors): analysed again too. */
	for (uint32_t k = 0; k < old; k++) {
		uint32_t ch = om[k].next;
		if (ch == MM_NONE || (mk(c, ch) & M_SEED) ||
		    (mmfile_flags(&c->v, ch) & (MMF_LOOP | MMF_SURVIVOR)) != MMF_LOOP)
			continue;
		bool kept = false;
		for (int q = 0; q < n && !kept; q++) kept = moves[q].next == ch;
		if (kept) continue;
		if (mk_or(c, ch, M_SEED) < 0 || push(&c->seeds, ch) < 0) return MMFILE_ENOMEM;
	}
	int rc = mmfile_set_moves(&c->v, x, moves, (uint32_t)n);
	/* A new node learns what its position is here (in check, side to move). */
	if (rc == 0 && added) rc = mmfile_set_state(&c->v, x, structure, (MmVd){0, 0});
	if (rc) return rc;
	return mk_or(c, x, M_SEED | M_REWRITE | M_LISTED) < 0 || push(&c->seeds, x) < 0
	           ? MMFILE_ENOMEM
	           : 0;
}

/* ---- bringing the kept graph up to date ----------------------------------------- */

/*
 * Called at every step q of a walk over the n nodes at, in the order it
 * reads or rewrites their records: hands the records a window ahead to
 * threads that read them (bookdb/prefetch.h), so that several are read from
 * disk at once. On a book larger than memory each record read is a read from
 * disk, and the walk's own reads wait one after another.
 */
static void read_ahead(Inc *c, const uint32_t *at, size_t n, size_t q)
{
	if (q % AHEAD_KEYS || n < 2 * AHEAD_KEYS || c->no_ahead) return;
	if (!c->ahead) {
		if (bookdb_prefetch_open(&c->ahead, c->db, AHEAD_THREADS) < 0) {
			c->no_ahead = true; /* a hint only: the walk reads them itself */
			return;
		}
		bookdb_prefetch_name(c->ahead, "mm-ahead");
	}
	Key keys[2 * AHEAD_KEYS];
	size_t m = 0, end = q + 2 * AHEAD_KEYS < n ? q + 2 * AHEAD_KEYS : n;
	for (size_t j = q ? q + AHEAD_KEYS : 0; j < end; j++) keys[m++] = mmfile_key(&c->v, at[j]);
	bookdb_prefetch_keys(c->ahead, keys, m);
}

/* Changes read between two looks at opt.stop: a long log on a book larger
 * than memory reads a page from disk for each (a coordinator's stop waited
 * minutes on 700,000 changes at 10⁸ positions in 2.4 GB). */
#define STOP_EVERY 256

/* The changed records whose moves absorb_changes generates again before it
 * looks up the possible parents of their new positions: a 4096th of the
 * memory budget, at least 64 and at most 65,536. The keys gathered for a
 * chunk take 16 bytes for each the filter lets through (a few a new
 * position: far less than 4 KB a record). */
static size_t absorb_chunk(const Inc *c)
{
	uint64_t m = (c->opt.memory ? c->opt.memory : bigmem_budget()) / 4096;
	return m < 64 ? 64 : m > 65536 ? 65536 : (size_t)m;
}

static int keys_push(Keys *l, Key k)
{
	if (array_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v, 1024) < 0) return -1;
	l->v[l->n++] = k;
	return 0;
}

static int key_order(const void *x, const void *y)
{
	return key_cmp(*(const Key *)x, *(const Key *)y);
}

/* ---- records' moves worked out on threads ------------------------------------- */

/* Records whose moves are worked out at a time, and the threads that do it:
 * on a book or graph larger than memory each record's children are looked
 * up at random in the graph's key pages, and a thread waits for each; on
 * one in memory the work takes both cores. */
#define WORK_WINDOW 1024
#define WORK_THREADS 8
/* Under this many records a window is worked out on the calling thread. */
#define WORK_MIN 64

/* One record's moves to work out (work_records): its node and bytes; then
 * its graph moves (n, or an error: why says what) and what its position is. */
struct Work {
	uint32_t x;
	const uint8_t *raw;
	size_t len;
	bool parents; /* a new position (or inner mark changed): its parents wanted */
	int n;
	uint8_t structure;
	MmMove *moves;
	char why[BOOKDB_ERRLEN];
};

/* A thread's own: a record and position to decode into, candidate parents,
 * and the keys of those the graph's filter let through. */
struct WorkScratch {
	BookRecord rec;
	Position pos;
	RetroMove cand[RETRO_MAX];
	Keys pk;
	bool nomem;
};

static void work_range(void *ctx, size_t lo, size_t hi, int t)
{
	Inc *c = ctx;
	WorkScratch *s = &c->scratch[t];
	/* Only reads the view (its maps, the mapped file): no thread changes it
	 * until the window is applied. */
	BookmmLookup lk = {view_find, view_inner, &c->v, &c->opt.policy, view_find_many};
	for (size_t q = lo; q < hi; q++) {
		Work *w = &c->work[q];
		w->why[0] = 0;
		w->n = bookmm_record_moves(w->moves, &w->structure, mmfile_key(&c->v, w->x), w->raw,
		                           w->len, &s->rec, &s->pos, &lk, w->why);
		if (w->n < 0) continue;
		/* What applying it reads of the graph file: its old moves and
		 * their children's flags, and the reverse edges of the children
		 * it leads to (mmfile_set_moves asks them). */
		mmfile_touch_node(&c->v, w->x, MMFILE_TOUCH_MOVES | MMFILE_TOUCH_CHILD_STATE);
		if (w->x < c->v.n)
			for (int k = 0; k < w->n; k++)
				mmfile_touch_node(&c->v, w->moves[k].next, MMFILE_TOUCH_PARENTS);
		/* (A sound record holds a position: s->pos.) */
		if (!w->parents) continue;
		int nc = retro_parents(&s->pos, s->cand);
		for (int k = 0; k < nc; k++)
			if (mmfile_may_hold(&c->v, s->cand[k].key) &&
			    keys_push(&s->pk, s->cand[k].key) < 0)
				s->nomem = true;
	}
}

/*
 * The moves of c->work[0..n) (n <= WORK_WINDOW) worked out from their records
 * on WORK_THREADS threads, then applied in order (refresh_apply); the keys of
 * the possible parents of those with .parents set that the graph's filter
 * lets through are added to pk. A record that is not sound fails the run
 * (BOOKDB_ECORRUPT, c->why says which and why).
 */
static int work_records(Inc *c, size_t n, Keys *pk)
{
	parfor(n, n < WORK_MIN ? 1 : WORK_THREADS, work_range, c);
	int rc = 0;
	for (int t = 0; t < WORK_THREADS; t++) {
		WorkScratch *s = &c->scratch[t];
		for (size_t k = 0; pk && k < s->pk.n && rc == 0; k++)
			if (keys_push(pk, s->pk.v[k]) < 0) rc = BOOKDB_ENOMEM;
		if (s->nomem) rc = BOOKDB_ENOMEM;
		s->pk.n = 0;
		s->nomem = false;
	}
	for (size_t q = 0; q < n && rc == 0; q++) {
		Work *w = &c->work[q];
		if (w->n < 0) {
			snprintf(c->why, sizeof c->why, "%s", w->why);
			return w->n;
		}
		rc = refresh_apply(c, w->x, w->moves, w->n, w->structure);
	}
	return rc;
}

static int work_alloc(Inc *c)
{
	if (c->work) return 0;
	c->work = calloc(WORK_WINDOW, sizeof *c->work);
	c->work_moves = malloc((size_t)WORK_WINDOW * BOOKMM_NODE_MOVES * sizeof *c->work_moves);
	c->scratch = calloc(WORK_THREADS, sizeof *c->scratch);
	if (!c->work || !c->work_moves || !c->scratch) return BOOKDB_ENOMEM;
	for (size_t q = 0; q < WORK_WINDOW; q++)
		c->work[q].moves = c->work_moves + q * BOOKMM_NODE_MOVES;
	return 0;
}

static void work_free(Inc *c)
{
	if (c->scratch)
		for (int t = 0; t < WORK_THREADS; t++) free(c->scratch[t].pk.v);
	free(c->scratch);
	free(c->work);
	free(c->work_moves);
	c->scratch = NULL;
	c->work = NULL;
	c->work_moves = NULL;
}

/*
 * The book positions among keys pk (possible parents of a chunk's new
 * positions, those the graph's filter did not turn away) get their moves
 * worked out again. The keys are looked up in key order, by threads each
 * taking a run of them (mmfile_find_threads), so that on a book larger than memory
 * the graph file's key and directory pages are read in the file's order,
 * each once, several at a time (one at random for each key, a cold run at
 * 10^8 positions spent a third of its reading there). The records of the
 * positions found are read in that order, ahead by the read-ahead threads,
 * and worked out a window at a time (work_records). par is room for their
 * nodes.
 */
static int reparent(Inc *c, BookTxn *snap, Keys *pk, U32s *par)
{
	if (pk->n) qsort(pk->v, pk->n, sizeof *pk->v, key_order);
	uint32_t *found = malloc((pk->n + 1) * sizeof *found);
	if (!found) return BOOKDB_ENOMEM;
	mmfile_find_threads(&c->v, pk->v, pk->n, found);
	par->n = 0;
	for (size_t i = 0; i < pk->n; i++) {
		if (i && key_equal(pk->v[i], pk->v[i - 1])) continue;
		uint32_t p = found[i];
		if (p == MM_NONE || (mk(c, p) & (M_RECORD | M_REPARENT))) continue;
		if (mk_or(c, p, M_REPARENT) < 0 || push(par, p) < 0) {
			free(found);
			return BOOKDB_ENOMEM;
		}
	}
	free(found);
	int rc = 0;
	size_t m = 0;
	for (size_t j = 0; j < par->n && rc == 0; j++) {
		if ((j & (STOP_EVERY - 1)) == 0 && bookmm_stopped(&c->opt)) return MM_STOPPED;
		read_ahead(c, par->v, par->n, j);
		Work *w = &c->work[m++];
		w->x = par->v[j];
		w->parents = false;
		rc = bookdb_get_raw(&w->raw, &w->len, snap, mmfile_key(&c->v, w->x));
		if (rc == 0 && (m == WORK_WINDOW || j + 1 == par->n)) {
			rc = work_records(c, m, NULL);
			m = 0;
		}
	}
	return rc;
}

/* A changed record as read (in absorb_changes' snapshot, which keeps it). */
typedef struct {
	const uint8_t *raw;
	size_t len;
	bool reinner; /* whether it is an inner node of the policy changed */
} ChangedRecord;

/* The changed records of the log (from seq s.seq + 1), their nodes (new
 * positions are added), then their moves, then the moves of the positions
 * that now lead to a new one. In the log's order: the results of one part of
 * the book come together, and so do the graph's pages their lookups read
 * (in key order, on a book larger than memory, the run read them again and
 * again: twice as long). */
static int absorb_changes(Inc *c, BookTxn *snap, char *why)
{
	BookChangesIter *it = NULL;
	int rc = bookdb_changes_iter_open(&it, snap, c->s.seq + 1);
	if (rc < 0)
		return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK, "reading the change log: %s",
		                  bookdb_strerror(rc));
	uint64_t seq;
	Key k;
	size_t limit = c->v.n / 8 > 10000 ? c->v.n / 8 : 10000;
	for (size_t e = 0; (rc = bookdb_changes_iter_next(it, &seq, &k)) == 1; e++) {
		if ((e & (STOP_EVERY - 1)) == 0 && bookmm_stopped(&c->opt)) {
			bookdb_changes_iter_free(it);
			return bookmm_stop_error(why, "reading the changes");
		}
		uint32_t x = mmfile_find(&c->v, k);
		if (x == MM_NONE) {
			/* That its record is there is seen when it is read. */
			if ((rc = mmfile_add_node(&c->v, k, 0, &x)) < 0 || cover(c) < 0 ||
			    mk_or(c, x, M_NEW) < 0) {
				rc = BOOKDB_ENOMEM;
				break;
			}
		}
		if (mk(c, x) & M_RECORD) continue;
		if (mk_or(c, x, M_RECORD | M_REWRITE) < 0 || push(&c->changed, x) < 0) {
			rc = BOOKDB_ENOMEM;
			break;
		}
		if (c->changed.n > limit) {
			bookdb_changes_iter_free(it);
			return errmsg_set(
			    why, BOOKMM_ERRLEN, BOOKMM_EFULL,
			    "more than %zu positions changed: the whole book is quicker", limit);
		}
	}
	bookdb_changes_iter_free(it);
	if (rc < 0)
		return errmsg_set(why, BOOKMM_ERRLEN,
		                  rc == BOOKDB_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK,
		                  "reading the changes: %s", bookdb_strerror(rc));
	/* Whether each changed record is an inner node of the leaf policy is
	 * settled before any moves are generated: a parent's moves into it
	 * depend on it. A node whose mark changed has its parents' moves
	 * generated again, as a new one has. */
	ChangedRecord *cr = calloc(c->changed.n + 1, sizeof *cr);
	if (!cr) return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
	for (size_t q = 0; q < c->changed.n && rc == 0; q++) {
		if ((q & (STOP_EVERY - 1)) == 0 && bookmm_stopped(&c->opt)) {
			rc = MM_STOPPED;
			break;
		}
		read_ahead(c, c->changed.v, c->changed.n, q);
		uint32_t x = c->changed.v[q];
		const uint8_t *raw;
		size_t len;
		if ((rc = bookdb_get_raw(&raw, &len, snap, mmfile_key(&c->v, x))) < 0) {
			if (rc == BOOKDB_ENOTFOUND) {
				free(cr);
				return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL,
				                  "a position was deleted");
			}
			break;
		}
		cr[q] = (ChangedRecord){raw, len, false};
		uint8_t f = mmfile_flags(&c->v, x);
		bool in = bookmm_raw_inner(raw, len, &c->opt.policy, c->rec);
		if (in == ((f & MMF_INNER) != 0)) continue;
		cr[q].reinner = true;
		rc = mmfile_set_state(&c->v, x, (uint8_t)(f ^ MMF_INNER), mmfile_vd(&c->v, x));
	}
	/* Every new node is in the view now, so each changed record's moves
	 * reach all of them. A new position may also be a transposition: any
	 * book position with a legal move to it gets that edge (its moves are
	 * generated again, so its leaf moves too when the move was one). */
	Keys pk = {0};
	U32s par = {0};
	if (rc == 0) rc = work_alloc(c);
	size_t chunk = absorb_chunk(c);
	for (size_t q0 = 0; q0 < c->changed.n && rc == 0; q0 += chunk) {
		size_t q1 = c->changed.n - q0 > chunk ? q0 + chunk : c->changed.n;
		pk.n = 0;
		for (size_t q = q0; q < q1 && rc == 0; q += WORK_WINDOW) {
			if (bookmm_stopped(&c->opt)) {
				rc = MM_STOPPED;
				break;
			}
			size_t m = q1 - q < WORK_WINDOW ? q1 - q : WORK_WINDOW;
			for (size_t j = 0; j < m; j++) {
				uint32_t x = c->changed.v[q + j];
				Work *w = &c->work[j];
				w->x = x;
				w->raw = cr[q + j].raw;
				w->len = cr[q + j].len;
				w->parents = (mk(c, x) & M_NEW) || cr[q + j].reinner;
			}
			rc = work_records(c, m, &pk);
		}
		if (rc == 0) rc = reparent(c, snap, &pk, &par);
	}
	free(pk.v);
	free(par.v);
	free(cr);
	if (rc == 0) return 0;
	if (rc == MM_STOPPED) return bookmm_stop_error(why, "reading the changes");
	if (rc == MMFILE_ESTALE)
		return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL, "the kept graph is damaged");
	if (rc == BOOKDB_ECORRUPT && c->why[0])
		return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK, "reading the book: %s%s",
		                  c->why, BOOKMM_DAMAGED);
	return errmsg_set(why, BOOKMM_ERRLEN,
	                  rc == MMFILE_ENOMEM || rc == BOOKDB_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK,
	                  "reading the book: %s",
	                  err_module(rc) == ERR_BOOKDB ? bookdb_strerror(rc) : "out of memory");
}

/* ---- the subgraph ------------------------------------------------------------------ */

/* What a walk over parents (mmfile_each_parent) carries. */
typedef struct {
	Inc *c;
	int rc;
	bool found;
} ParentWalk;

static int add_to_a(uint32_t p, void *ctx)
{
	ParentWalk *w = ctx;
	Inc *c = w->c;
	if ((mk(c, p) & R_ROLE) == R_A) return 0;
	if (mk_change(c, p, R_ROLE, R_A) < 0 || push(&c->a, p) < 0 || push(&c->queue, p) < 0)
		return w->rc = -1;
	return 0;
}

static void clear_roles(Inc *c)
{
	for (size_t q = 0; q < c->sub.n; q++)
		(void)mk_change(c, c->sub.v[q], R_ROLE, 0); /* marked: nothing to add */
	c->a.n = c->b.n = c->b2.n = c->sub.n = c->queue.n = 0;
	mm_graph_free(&c->g);
	free(c->nval);
	c->nval = NULL;
}

/* Whose children children_into takes, and where it puts them. */
enum {
	OF_A_INCHECK, /* A's nodes in check: into B */
	OF_A_OTHERS,  /* A's other nodes: on a perpetual-check loop into B, else B2 */
	OF_B,         /* B's nodes: into B2 */
};

/* Puts the children (that have no role yet) of the nodes `of` says into B or B2. */
static int children_into(Inc *c, int of)
{
	const U32s *from = of == OF_B ? &c->b : &c->a;
	for (size_t q = 0; q < from->n; q++) {
		uint32_t len;
		if (of != OF_B &&
		    !(mmfile_flags(&c->v, from->v[q]) & MMF_INCHECK) != (of == OF_A_OTHERS))
			continue;
		const MmMove *m = mmfile_moves(&c->v, from->v[q], &len);
		if (!m) return MMFILE_ESTALE;
		for (uint32_t k = 0; k < len; k++) {
			uint32_t ch = m[k].next;
			if (ch == MM_NONE || (mk(c, ch) & R_ROLE)) continue;
			bool b = of == OF_A_INCHECK ||
			         (of == OF_A_OTHERS && (mmfile_flags(&c->v, ch) & MMF_LOOP));
			if (mk_or(c, ch, b ? R_B : R_B2) < 0 || push(b ? &c->b : &c->b2, ch) < 0)
				return MMFILE_ENOMEM;
		}
	}
	return 0;
}

/* A (the seeds and their ancestors), B, B2 and the root; local numbers in key order. */
static int collect(Inc *c, uint32_t root)
{
	ParentWalk w = {c, 0, false};
	for (size_t q = 0; q < c->seeds.n; q++) add_to_a(c->seeds.v[q], &w);
	/* The walk over parents reads their pages a window of the queue ahead
	 * (mmfile_touch: on a graph larger than memory, at random). */
	for (size_t h = 0, ahead = 0; h < c->queue.n && !w.rc; h++) {
		if (h == ahead) {
			size_t m = c->queue.n - h < TOUCH_WINDOW ? c->queue.n - h : TOUCH_WINDOW;
			mmfile_touch(&c->v, c->queue.v + h, m, MMFILE_TOUCH_PARENTS);
			ahead = h + m;
		}
		int r = mmfile_each_parent(&c->v, c->queue.v[h], add_to_a, &w);
		if (r == MMFILE_ESTALE) return r;
	}
	if (w.rc) return MMFILE_ENOMEM;
	/* The analysis reads a frozen node's moves only two plies below a node
	 * in check (the perpetual-check loops: docs/minimax.md). So B is the
	 * children of A's nodes in check, and those on a perpetual-check loop
	 * (stale_nodes asks whether they still have a survivor above them);
	 * the rest of A's children are frozen without moves, as B2 is: most
	 * of the subgraph, where few positions are in check. */
	/* What children_into and value_a read of A: its flags and moves and
	 * its children's flags. */
	mmfile_touch(&c->v, c->a.v, c->a.n,
	             MMFILE_TOUCH_STATE | MMFILE_TOUCH_MOVES | MMFILE_TOUCH_CHILD_STATE);
	int rc = children_into(c, OF_A_INCHECK);
	if (rc == 0) rc = children_into(c, OF_A_OTHERS);
	if (rc == 0 && root != MM_NONE && !(mk(c, root) & R_ROLE) &&
	    (mk_or(c, root, R_B) < 0 || push(&c->b, root) < 0))
		rc = MMFILE_ENOMEM;
	if (rc == 0) rc = children_into(c, OF_B);
	if (rc) return rc;
	/* build_sub reads B2's flags and values. */
	mmfile_touch(&c->v, c->b2.v, c->b2.n, MMFILE_TOUCH_STATE);
	const U32s *parts[3] = {&c->a, &c->b, &c->b2};
	for (int p = 0; p < 3; p++)
		for (size_t q = 0; q < parts[p]->n; q++)
			if (push(&c->sub, parts[p]->v[q]) < 0) return MMFILE_ENOMEM;
	if (mmfile_key_order(&c->v, c->sub.v, c->sub.n) < 0) return MMFILE_ENOMEM;
	keymap_clear(&c->local);
	if (keymap_reserve(&c->local, NULL, c->sub.n) < 0) return MMFILE_ENOMEM;
	for (size_t q = 0; q < c->sub.n; q++) {
		uint32_t *l;
		if (keymap_add(&c->local, node_key(c->sub.v[q]), &l) < 0) return MMFILE_ENOMEM;
		*l = (uint32_t)q;
	}
	return 0;
}

static int mark_valued(uint32_t p, void *ctx)
{
	ParentWalk *w = ctx;
	Inc *c = w->c;
	if ((mk(c, p) & R_ROLE) != R_A || c->nval[local_of(c, p)]) return 0;
	c->nval[local_of(c, p)] = 1;
	if (push(&c->queue, p) < 0) return w->rc = -1;
	return 0;
}

/* Which nodes of A have a value: a leaf, or an edge to a valued node. */
static int value_a(Inc *c)
{
	c->nval = calloc(c->sub.n + 1, 1);
	if (!c->nval) return MMFILE_ENOMEM;
	c->queue.n = 0;
	for (size_t q = 0; q < c->a.n; q++) {
		uint32_t x = c->a.v[q], len;
		const MmMove *m = mmfile_moves(&c->v, x, &len);
		if (!m) return MMFILE_ESTALE;
		for (uint32_t k = 0; k < len; k++) {
			uint32_t ch = m[k].next;
			if (ch == MM_NONE || ((mk(c, ch) & R_ROLE) != R_A &&
			                      (mmfile_flags(&c->v, ch) & MMF_VALUED))) {
				c->nval[local_of(c, x)] = 1;
				if (push(&c->queue, x) < 0) return MMFILE_ENOMEM;
				break;
			}
		}
	}
	ParentWalk w = {c, 0, false};
	for (size_t h = 0; h < c->queue.n && !w.rc; h++)
		if (mmfile_each_parent(&c->v, c->queue.v[h], mark_valued, &w) == MMFILE_ESTALE)
			return MMFILE_ESTALE;
	return w.rc ? MMFILE_ENOMEM : 0;
}

/* The subgraph as the core takes it. */
static int build_sub(Inc *c)
{
	MmGraph *g = &c->g;
	size_t n = c->sub.n;
	memset(g, 0, sizeof *g);
	g->n = n;
	g->draw[BLACK] = bookmm_clamp(c->opt.draw_black);
	g->draw[WHITE] = bookmm_clamp(c->opt.draw_white);
	g->flags = calloc(n + 1, sizeof *g->flags);
	g->vd = calloc(n + 1, sizeof *g->vd);
	g->mstart = calloc(n + 1, sizeof *g->mstart);
	if (!g->flags || !g->vd || !g->mstart) return MMFILE_ENOMEM;
	for (size_t l = 0; l < n; l++) {
		uint32_t x = c->sub.v[l], len;
		int role = mk(c, x) & R_ROLE;
		uint8_t f = mmfile_flags(&c->v, x);
		g->mstart[l] = (uint32_t)g->nmoves;
		bool valued = role == R_A ? c->nval[l] : (f & MMF_VALUED);
		if (role == R_A && valued) {
			g->flags[l] = F_VALUED;
			if (f & MMF_WHITE) g->flags[l] |= MM_F_WHITE;
			if (f & MMF_INCHECK) g->flags[l] |= MM_F_CHECKED;
		} else if (role == R_A) {
			g->flags[l] = MM_F_CONST | MM_F_FROZEN | ((f & MMF_WHITE) ? MM_F_WHITE : 0);
		} else {
			g->flags[l] = bookmm_core_flags(f) | MM_F_FROZEN;
			g->vd[l] = mmfile_vd(&c->v, x);
		}
		if (!valued || role == R_B2) continue;
		const MmMove *m = mmfile_moves(&c->v, x, &len);
		if (!m) return MMFILE_ESTALE;
		for (uint32_t k = 0; k < len; k++) {
			MmMove mv = m[k];
			if (mv.next != MM_NONE) {
				if (!(mk(c, mv.next) & R_ROLE) || !valued_now(c, mv.next)) continue;
				mv.next = local_of(c, mv.next);
			}
			if (mm_push_move(g, mv) < 0) return MMFILE_ENOMEM;
		}
	}
	g->mstart[n] = (uint32_t)g->nmoves;
	return 0;
}

/* Is frozen node x (on a loop, not a survivor) still between two survivors? */
static int survivor_parent(uint32_t p, void *ctx)
{
	ParentWalk *b = ctx;
	Inc *c = b->c;
	bool surv = (mk(c, p) & R_ROLE) == R_A ? (c->g.flags[local_of(c, p)] & MM_F_SURVIVOR)
	                                       : (mmfile_flags(&c->v, p) & MMF_SURVIVOR);
	if (surv) b->found = true;
	return b->found;
}

/* Frozen nodes whose place on a perpetual-check loop the new A changed. */
static int stale_nodes(Inc *c, size_t *nstale)
{
	*nstale = 0;
	for (size_t l = 0; l < c->sub.n; l++) {
		uint32_t x = c->sub.v[l];
		bool stale = c->g.flags[l] & MM_F_STALE;
		uint8_t f = mmfile_flags(&c->v, x);
		if (!stale && (mk(c, x) & R_ROLE) == R_B && (f & MMF_VALUED) && (f & MMF_LOOP) &&
		    !(f & MMF_SURVIVOR)) {
			ParentWalk b = {c, 0, false};
			if (mmfile_each_parent(&c->v, x, survivor_parent, &b) == MMFILE_ESTALE)
				return MMFILE_ESTALE;
			stale = !b.found;
		}
		if (!stale) continue;
		if (mk_or(c, x, M_SEED) < 0 || push(&c->seeds, x) < 0) return MMFILE_ENOMEM;
		(*nstale)++;
	}
	return 0;
}

/* ---- results ------------------------------------------------------------------------ */

static int mark_rewrite(uint32_t p, void *ctx)
{
	ParentWalk *w = ctx;
	return mk_or(w->c, p, M_REWRITE) < 0 ? (w->rc = -1) : 0;
}

/* Stores A's new flags and values in the view (journalled) and the totals. */
static int store_states(Inc *c)
{
	/* Nodes whose moves were replaced had their old part taken off then. */
	for (size_t q = 0; q < c->a.n; q++)
		if (!(mk(c, c->a.v[q]) & (M_LISTED | M_NEW))) contrib(c, c->a.v[q], -1);
	ParentWalk w = {c, 0, false};
	for (size_t q = 0; q < c->a.n; q++) {
		uint32_t x = c->a.v[q], l = local_of(c, x);
		uint8_t old = mmfile_flags(&c->v, x);
		uint8_t nf = bookmm_file_flags(c->g.flags[l], old);
		MmVd ov = mmfile_vd(&c->v, x), nv = c->g.vd[l];
		if (nf == old && ov.value == nv.value && ov.depth == nv.depth) continue;
		if (((nf ^ old) & MMF_VALUED) && mk_or(c, x, M_REWRITE) < 0) return MMFILE_ENOMEM;
		int rc = mmfile_set_state(&c->v, x, nf, nv);
		if (rc) return rc;
		/* The parents show this node's value in their records. */
		if (mmfile_each_parent(&c->v, x, mark_rewrite, &w) == MMFILE_ESTALE)
			return MMFILE_ESTALE;
	}
	for (size_t q = 0; q < c->a.n; q++) contrib(c, c->a.v[q], +1);
	return 0;
}

/* The (value, dist) of node x's edges to valued nodes, as its record shows them. */
static int node_edges(const Inc *c, uint32_t x, BookmmEdge *out)
{
	uint32_t len;
	const MmMove *m = mmfile_moves(&c->v, x, &len);
	int n = 0;
	for (uint32_t k = 0; m && k < len; k++) {
		uint32_t ch = m[k].next;
		if (ch == MM_NONE) continue;
		uint8_t f = mmfile_flags(&c->v, ch);
		if (!(f & MMF_VALUED)) continue;
		out[n++] = (BookmmEdge){m[k].move, bookmm_stored_vd(mmfile_vd(&c->v, ch),
		                                                    f & MMF_LOOP, f & MMF_CHECKED)};
	}
	return n;
}

static void root_value(BookmmStats *st, const Inc *c, uint32_t r)
{
	if (r == MM_NONE || !(mmfile_flags(&c->v, r) & MMF_VALUED)) return;
	BookmmEdge e[BOOKMM_NODE_MOVES];
	int ne = node_edges(c, r, e);
	MmVd best = {-MM_VALUE_INF, MM_DEPTH_MAX};
	for (int k = 0; k < ne; k++)
		if (mm_vd_better(e[k].vd, best)) best = e[k].vd;
	uint32_t len;
	const MmMove *m = mmfile_moves(&c->v, r, &len);
	for (uint32_t k = 0; m && k < len; k++)
		if (m[k].next == MM_NONE && mm_vd_better((MmVd){m[k].value, 0}, best))
			best = (MmVd){m[k].value, 0};
	st->has_root = true;
	st->root_value = best.value;
}

/* The records to rewrite, in key order: A's marked ones (all of A after a
 * stopped run, see commit), and the changed ones outside the subgraph. */
static int rewrite_list(Inc *c, U32s *rw)
{
	for (size_t q = 0; q < c->sub.n; q++) {
		uint32_t x = c->sub.v[q];
		uint8_t m = mk(c, x);
		bool all = c->resumed && (m & R_ROLE) == R_A;
		if ((all || (m & M_REWRITE)) && push(rw, x) < 0) return BOOKDB_ENOMEM;
	}
	for (size_t q = 0; q < c->changed.n; q++) {
		uint32_t x = c->changed.v[q];
		if (!(mk(c, x) & R_ROLE) && push(rw, x) < 0) return BOOKDB_ENOMEM;
	}
	return mmfile_key_order(&c->v, rw->v, rw->n) < 0 ? BOOKDB_ENOMEM : 0;
}

/* Node x's record raw (len bytes) as this run values it, into buf
 * (BOOKDB_RECORD_MAX bytes; edges: BOOKMM_NODE_MOVES): its length, 0 when it
 * is already so, or a bookdb error. */
static int make_rewrite(Inc *c, uint32_t x, const uint8_t *raw, size_t len, uint8_t *buf,
                        BookmmEdge *edges)
{
	int ne = node_edges(c, x, edges);
	return bookmm_rewrite(buf, raw, len, c->rec, mmfile_flags(&c->v, x) & MMF_VALUED, edges, ne,
	                      false, &c->opt.policy);
}

/* A rewrite of node x's record by bookdb_rewrite: from the bytes prepared
 * (pre: the record as read, then its rewrite; raw_len PRE_NONE: none) while
 * the record is still the one read, else made from its newest bytes. */
typedef struct {
	Inc *c;
	uint32_t x;
	BookmmEdge *edges;
	const uint8_t *pre;
	uint32_t raw_len, new_len;
} Rewrite;
#define PRE_NONE UINT32_MAX

static int rewrite_fn(void *ctx, const uint8_t *raw, size_t len, uint8_t *out)
{
	const Rewrite *r = ctx;
	if (r->raw_len == len && memcmp(raw, r->pre, len) == 0) {
		memcpy(out, r->pre + len, r->new_len);
		return (int)r->new_len;
	}
	int n = make_rewrite(r->c, r->x, raw, len, out, r->edges);
	return n > 0 ? n : 0; /* an unsound record is said by joseki check */
}

/* Node x's record as r (its x, and what it prepared) makes it, written in
 * txn when it differs (buf: BOOKDB_RECORD_MAX bytes). Records rewritten in
 * key order walk one cursor. 0 or a bookdb error. */
static int rewrite_with(Rewrite *r, BookTxn *txn, uint8_t *buf, BookmmStats *st)
{
	int n = bookdb_rewrite(txn, mmfile_key(&r->c->v, r->x), rewrite_fn, r, buf);
	if (n == BOOKDB_ENOTFOUND || n == 0) return 0;
	if (n < 0) return n;
	st->rewritten++;
	return 0;
}

/* Node x's record as this run values it, written in txn when it differs
 * (buf: BOOKDB_RECORD_MAX bytes, edges: BOOKMM_NODE_MOVES). 0 or a bookdb
 * error. */
static int rewrite_one(Inc *c, BookTxn *txn, uint32_t x, uint8_t *buf, BookmmEdge *edges,
                       BookmmStats *st)
{
	Rewrite r = {c, x, edges, NULL, PRE_NONE, 0};
	return rewrite_with(&r, txn, buf, st);
}

/* The last transaction's own part: the log consumed up to the snapshot, the
 * state (journal length jlen) and the summary, the running mark gone. 0 or a
 * bookdb error. */
static int finish(Inc *c, BookTxn *txn, const BookmmStats *st, uint64_t jlen)
{
	int rc;
	if ((rc = bookdb_changes_consume(txn, c->snap_seq)) < 0) return rc;
	c->s.journal_len = jlen;
	c->s.seq = c->snap_seq;
	c->s.positions = st->positions;
	c->s.valued = st->valued;
	c->s.settled = st->settled;
	c->s.moves = st->moves;
	c->s.edges = st->edges;
	if ((rc = bookmm_state_put(txn, &c->s)) < 0 ||
	    (rc = bookmm_summary_put(txn, st, &c->opt)) < 0)
		return rc;
	rc = bookdb_kv_del(txn, BOOKDB_META, META_RUNNING, strlen(META_RUNNING));
	return rc == BOOKDB_ENOTFOUND ? 0 : rc;
}

/* Whether the rewrite's write transaction ends before its record n + 1 (it
 * began at since). */
static bool batch_ends(const Inc *c, size_t n, double since)
{
	if (c->opt.batch) return n == c->opt.batch;
	return n == INC_BATCH_MAX ||
	       (n && n % INC_BATCH_STEP == 0 && clock_ms_f() - since >= INC_BATCH_MS);
}

/*
 * Rewrites the records, consumes the log, journals the graph's changes and
 * records the new state. The records go in transactions of INC_BATCH_MS (or
 * BookmmOptions.batch records, see batch_ends); the log, the journal and the
 * state in the last one. A run stopped between two (kill
 * -9) leaves some records with its values and the state as before, marked by
 * META_RUNNING: the next run, which analyses at least the same nodes again (the
 * log was not consumed, and A is closed upwards), then compares the record of
 * every node of A and every changed one with its values (bookmm_rewrite writes
 * only what differs), so no record keeps a value of the stopped run.
 */
static int commit(Inc *c, BookmmStats *st, const char *dir, char *why)
{
	U32s rw = {0};
	if (rewrite_list(c, &rw) < 0) {
		free(rw.v);
		return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
	}
	uint8_t *buf = malloc(BOOKDB_RECORD_MAX);
	BookmmEdge *edges = malloc(BOOKMM_NODE_MOVES * sizeof *edges);
	BookTxn *txn = NULL;
	int rc = buf && edges ? bookdb_txn_begin(&txn, c->db, true) : BOOKDB_ENOMEM;
	if (rc < 0) goto done;
	bookdb_txn_set_tracking(txn, false);
	if (rw.n > (c->opt.batch ? c->opt.batch : INC_BATCH_STEP) &&
	    (rc = bookdb_kv_put(txn, BOOKDB_META, META_RUNNING, strlen(META_RUNNING), "1", 1)) < 0)
		goto done;
	double t0 = clock_ms_f();
	for (size_t q = 0, n = 0; q < rw.n; q++, n++) {
		if (batch_ends(c, n, t0)) {
			n = 0;
			if ((rc = bookdb_txn_commit(txn)) < 0) {
				txn = NULL;
				goto done;
			}
			txn = NULL;
			if ((rc = bookdb_txn_begin(&txn, c->db, true)) < 0) goto done;
			bookdb_txn_set_tracking(txn, false);
			t0 = clock_ms_f();
		}
		read_ahead(c, rw.v, rw.n, q);
		if ((rc = rewrite_one(c, txn, rw.v[q], buf, edges, st)) < 0) goto done;
	}
	char msg[MMFILE_ERRLEN];
	uint64_t jlen;
	if (mmfile_journal_append(&c->v, dir, c->s.journal_len, &jlen, msg) < 0) {
		bookdb_txn_abort(txn);
		txn = NULL;
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK, "keeping the graph: %s", msg);
		goto out;
	}
	if ((rc = finish(c, txn, st, jlen)) < 0) goto done;
	rc = bookdb_txn_commit(txn);
	txn = NULL;
done:
	bookdb_txn_abort(txn);
	if (rc < 0)
		rc = errmsg_set(why, BOOKMM_ERRLEN,
		                rc == BOOKDB_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK,
		                "writing the book: %s", bookdb_strerror(rc));
out:
	free(buf);
	free(edges);
	free(rw.v);
	return rc;
}

static void inc_free(Inc *c)
{
	bookdb_prefetch_close(c->ahead);
	work_free(c);
	mmfile_close(&c->v);
	mm_graph_free(&c->g);
	free(c->nval);
	free(c->mark);
	keymap_free(&c->marks);
	keymap_free(&c->local);
	free(c->changed.v);
	free(c->seeds.v);
	free(c->a.v);
	free(c->b.v);
	free(c->b2.v);
	free(c->sub.v);
	free(c->queue.v);
	free(c->rec);
	free(c->pos);
}

/* ---- the graph kept in memory between runs (BookmmOptions.keep) ------------------ */

struct BookmmKeep {
	pthread_mutex_t mu;
	bool has;
	MmView v;
	char dir[BOOKDB_PATH_LEN];
	/* The book's state the view is: the graph's stamp, the journal's length
	 * and the last change-log entry reflected (mmstate). */
	uint64_t stamp, jlen, seq;
};

BookmmKeep *bookmm_keep_new(void)
{
	BookmmKeep *k = calloc(1, sizeof *k);
	if (k) pthread_mutex_init(&k->mu, NULL);
	return k;
}

void bookmm_keep_free(BookmmKeep *k)
{
	if (!k) return;
	mmfile_close(&k->v);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

/* Moves k's view into c->v when it is the state c->s of the book in dir
 * (true): the journal still ends with the batch the view appended last, not
 * another run's written over it after this one's commit failed. Else drops
 * it. */
static bool keep_take(BookmmKeep *k, Inc *c, const char *dir)
{
	if (!k) return false;
	pthread_mutex_lock(&k->mu);
	bool ok = k->has && !strcmp(k->dir, dir) && k->stamp == c->s.stamp &&
	          k->jlen == c->s.journal_len && k->seq == c->s.seq &&
	          mmfile_journal_ends_with(&k->v, dir, k->jlen);
	if (ok)
		c->v = k->v;
	else
		mmfile_close(&k->v);
	memset(&k->v, 0, sizeof k->v);
	k->has = false;
	pthread_mutex_unlock(&k->mu);
	return ok;
}

/* Gives c's view to k after a run whose writes are done: the book's state is
 * c->s now. */
static void keep_put(BookmmKeep *k, Inc *c, const char *dir)
{
	if (!k || !c->v.map || strlen(dir) >= sizeof k->dir) return;
	pthread_mutex_lock(&k->mu);
	mmfile_close(&k->v);
	k->v = c->v;
	memset(&c->v, 0, sizeof c->v);
	k->has = true;
	snprintf(k->dir, sizeof k->dir, "%s", dir);
	k->stamp = c->s.stamp;
	k->jlen = c->s.journal_len;
	k->seq = c->s.seq;
	pthread_mutex_unlock(&k->mu);
}

/* The start position's node, or MM_NONE. */
static uint32_t root_node(Inc *c)
{
	pos_set_startpos(c->pos);
	return mmfile_find(&c->v, pos_key(c->pos));
}

/* analyse's answer when it folded the journal: analyse again, on the new file. */
#define INC_FOLDED 1

/*
 * Folds c's view into a new graph file with an empty journal (mmfile_fold)
 * and records its stamp in the book, the rest of the state as it was: the
 * records, the log's consumption and the totals are the same, only the files
 * that hold the graph change. Killed between the rename and the commit, the
 * book names the old stamp, which the new file does not carry: the next run
 * is a whole-book one. 0 or a BOOKMM_E* code with the message in why.
 */
static int fold(Inc *c, BookmmStats *st, const char *dir, char *why)
{
	double t0 = clock_ms_f();
	uint64_t stamp = bookmm_new_stamp();
	char msg[MMFILE_ERRLEN];
	int rc = mmfile_fold(&c->v, dir, stamp, c->opt.stop, msg);
	if (rc < 0 && bookmm_stopped(&c->opt)) return bookmm_stop_error(why, "folding the journal");
	if (rc < 0)
		return errmsg_set(
		    why, BOOKMM_ERRLEN, BOOKMM_EFULL,
		    "the kept graph's journal has grown large and could not be folded "
		    "into a new graph file: %s",
		    msg);
	BookTxn *txn = NULL;
	BookmmState now;
	if ((rc = bookdb_txn_begin(&txn, c->db, true)) == 0 &&
	    (rc = bookmm_state_get(&now, txn)) == 0) {
		/* The lock keeps other runs out: the state is the one folded. */
		if (now.stamp != c->s.stamp || now.journal_len != c->s.journal_len) {
			bookdb_txn_abort(txn);
			return errmsg_set(
			    why, BOOKMM_ERRLEN, BOOKMM_EFULL,
			    "the book's minimax state changed while its graph was folded");
		}
		now.stamp = stamp;
		now.journal_len = MMFILE_JOURNAL_EMPTY;
		bookdb_txn_set_tracking(txn, false);
		if ((rc = bookmm_state_put(txn, &now)) == 0) rc = bookdb_txn_commit(txn);
		txn = NULL;
	}
	bookdb_txn_abort(txn);
	if (rc < 0)
		return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK,
		                  "recording the folded graph in the book: %s",
		                  bookdb_strerror(rc));
	st->folded_bytes = c->s.journal_len;
	st->fold_ms = clock_ms_f() - t0;
	return 0;
}

/* Whether the run folds the journal first: it is longer than fold_at, or
 * the view's changes take more than a quarter of the memory budget
 * (BookmmOptions.fold_at, .memory). */
static bool fold_due(const Inc *c)
{
	uint64_t at =
	    c->opt.fold_at ? c->opt.fold_at : (uint64_t)c->v.map_len / 4 + ((uint64_t)1 << 20);
	uint64_t memory = c->opt.memory ? c->opt.memory : bigmem_budget();
	return c->s.journal_len > at || (memory && c->s.journal_len > MMFILE_JOURNAL_EMPTY &&
	                                 mmfile_overlay_bytes(&c->v) > memory / 4);
}

/* Everything but the writes: the kept graph brought up to date, the subgraph
 * analysed, the new states in the view, the stats. c is the caller's to free
 * (inc_free) whatever the outcome. INC_FOLDED (c freed) when it folded the
 * journal instead, fold_ok set (the caller then analyses again, fold_ok
 * false, on the new graph file). */
static int analyse(Inc *c, BookmmStats *st, BookDB *db, const char *dir, const BookmmOptions *opt,
                   bool fold_ok, char *why)
{
	memset(c, 0, sizeof *c);
	keymap_init_set(&c->local, true);
	keymap_init_set(&c->marks, true);
	c->db = db;
	c->opt = *opt;
	BookTxn *snap = NULL;
	BookChangesInfo ci;
	int rc = bookdb_txn_begin(&snap, db, false);
	if (rc == 0) rc = bookdb_changes_info(&ci, snap);
	if (rc < 0) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK, "cannot read the book: %s",
		                bookdb_strerror(rc));
		goto out;
	}
	rc = bookmm_state_get(&c->s, snap);
	if (rc == BOOKDB_ENOTFOUND) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL, "no earlier minimax run");
		goto out;
	}
	if (rc < 0) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK, "cannot read the book: %s",
		                bookdb_strerror(rc));
		goto out;
	}
	if (c->s.draw[BLACK] != bookmm_clamp(opt->draw_black) ||
	    c->s.draw[WHITE] != bookmm_clamp(opt->draw_white)) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL,
		                "other draw values than the last run's");
		goto out;
	}
	if (!bookmm_policy_equal(&c->s.policy, &opt->policy)) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL,
		                "another leaf policy than the last run's");
		goto out;
	}
	if (ci.state != BOOKDB_CHANGES_ON) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL, "%s",
		                ci.state == BOOKDB_CHANGES_OVERFLOW
		                    ? "the change log overflowed"
		                    : "the book does not log its changes");
		goto out;
	}
	bool hole;
	if ((rc = bookmm_fullrun_pending(snap, &hole)) != 0) {
		rc = rc > 0 ? errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL,
		                         "the last whole-book run was stopped before its end")
		            : errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK,
		                         "cannot read the book: %s", bookdb_strerror(rc));
		goto out;
	}
	char msg[MMFILE_ERRLEN];
	/* A new graph file a killed fold or whole-book run left half written
	 * (the run's lock keeps every other run out). */
	if (fold_ok) mmfile_discard(dir);
	c->kept = keep_take(opt->keep, c, dir);
	rc = c->kept ? 0 : mmfile_open(&c->v, dir, c->s.stamp, c->s.journal_len, msg);
	if (rc < 0) {
		rc = errmsg_set(why, BOOKMM_ERRLEN,
		                rc == MMFILE_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EFULL, "%s", msg);
		goto out;
	}
	/* A long journal costs every run that does not keep the view its replay,
	 * and the kept view its memory: folded into a new graph file now and
	 * then (a read and a write of the file, no analysis). */
	if (fold_ok && fold_due(c)) {
		bookdb_txn_abort(snap);
		snap = NULL;
		rc = fold(c, st, dir, why);
		inc_free(c);
		memset(c, 0, sizeof *c);
		return rc < 0 ? rc : INC_FOLDED;
	}
	c->rec = malloc(sizeof *c->rec);
	c->pos = malloc(sizeof *c->pos);
	/* The marks as bytes, or in a set when the graph is large beside the
	 * changes (a batch of the coordinator's on a big book). */
	c->marks_hash = opt->marks == BOOKMM_MARKS_AUTO
	                    ? mmfile_count(&c->v) / MARKS_HASH_RATIO > ci.seq - c->s.seq
	                    : opt->marks == BOOKMM_MARKS_SET;
	if (!c->rec || !c->pos || cover(c) < 0) {
		rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
		goto out;
	}
	c->snap_seq = ci.seq;
	const void *mv;
	size_t ml;
	c->resumed =
	    bookdb_kv_get(&mv, &ml, snap, BOOKDB_META, META_RUNNING, strlen(META_RUNNING)) == 0;
	c->tot = (Totals){(int64_t)c->s.valued, (int64_t)c->s.settled, (int64_t)c->s.moves,
	                  (int64_t)c->s.edges};
	double t0 = clock_ms_f();
	if ((rc = absorb_changes(c, snap, why)) < 0) goto out;
	double t1 = clock_ms_f();
	st->read_ms = t1 - t0;
	bookdb_txn_abort(snap);
	snap = NULL;
	uint32_t root = root_node(c);
	/* Nothing changed: the book is as the last run left it (nothing to write). */
	for (int round = 0; c->changed.n; round++) {
		MmStats ms;
		size_t nstale = 0;
		rc = bookmm_stopped(&c->opt) ? MM_STOPPED : collect(c, root);
		if (rc == 0) rc = value_a(c);
		if (rc == 0) rc = build_sub(c);
		c->g.stop = c->opt.stop;
		if (rc == 0 && (rc = mm_backup(&c->g, &ms)) < 0)
			rc = rc == MM_STOPPED ? MM_STOPPED : MMFILE_ENOMEM;
		if (rc == 0) rc = stale_nodes(c, &nstale);
		if (rc == 0 && nstale == 0) rc = store_states(c);
		if (rc == MM_STOPPED) {
			rc = bookmm_stop_error(why, "analysing");
			goto out;
		}
		if (rc) {
			rc = rc == MMFILE_ESTALE
			         ? errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL,
			                      "the kept graph is damaged")
			         : errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
			goto out;
		}
		c->sweeps = ms.peel_sweeps + ms.relax_sweeps;
		c->unsettled_cycles = ms.unsettled_cycles;
		c->unsettled = ms.unsettled_nodes;
		if (nstale == 0) break;
		if (round >= 16) {
			rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EFULL,
			                "perpetual-check loops kept growing");
			goto out;
		}
		clear_roles(c);
	}
	st->analysis_ms = clock_ms_f() - t1;
	st->incremental = true;
	st->positions = mmfile_count(&c->v);
	st->valued = (size_t)c->tot.valued;
	st->settled = (size_t)c->tot.settled;
	st->cyclic = st->valued - st->settled;
	st->moves = (size_t)c->tot.moves;
	st->edges = (size_t)c->tot.edges;
	st->sweeps = c->sweeps;
	st->unsettled_cycles = c->unsettled_cycles;
	st->unsettled = c->unsettled;
	st->changed = c->changed.n;
	st->affected = c->a.n;
	st->view_kept = c->kept;
	root_value(st, c, root);
out:
	bookdb_txn_abort(snap);
	return rc;
}

/* analyse, again after a fold. */
static int analyse_folding(Inc *c, BookmmStats *st, BookDB *db, const char *dir,
                           const BookmmOptions *opt, char *why)
{
	int rc = analyse(c, st, db, dir, opt, true, why);
	return rc == INC_FOLDED ? analyse(c, st, db, dir, opt, false, why) : rc;
}

int bookmm_incremental(BookmmStats *st, BookDB *db, const char *dir, const BookmmOptions *opt,
                       char *why)
{
	Inc c;
	int rc = analyse_folding(&c, st, db, dir, opt, why);
	double t0 = clock_ms_f();
	if (rc == 0 && c.changed.n) rc = commit(&c, st, dir, why);
	st->write_ms = clock_ms_f() - t0;
	if (rc == 0) keep_put(opt->keep, &c, dir);
	inc_free(&c);
	return rc;
}

/* ---- a run whose writes the caller makes (bookmm_prepare) ------------------------ */

/* A record of a plan as the run read it and would write it (see prepare_records). */
typedef struct {
	uint64_t off;     /* in BookMinimaxPlan.pre: the record read, then its rewrite */
	uint32_t raw_len; /* PRE_NONE: not prepared */
	uint32_t new_len; /* 0: nothing to write */
} PreRecord;

struct BookMinimaxPlan {
	Inc c;
	BookmmStats st;
	U32s rw;       /* the records to rewrite, key order */
	PreRecord *pr; /* per record of rw, NULL: none prepared */
	uint8_t *pre;
	size_t pre_len;
	size_t next;   /* the first not rewritten yet */
	uint64_t jlen; /* the journal's length with this run's batch */
	bool marked;   /* META_RUNNING written */
	bool done;     /* every write made (the caller's commit to come) */
	int lock_fd;   /* BOOK/minimax.lock, held until freed (-1: none) */
	uint8_t *buf;
	BookmmEdge *edges;
};

void bookmm_plan_keep_lock(BookMinimaxPlan *p, int fd)
{
	p->lock_fd = fd;
}

void bookmm_plan_free(BookMinimaxPlan *p)
{
	if (!p) return;
	/* Before the lock goes: the next run takes the view from the keep. */
	if (p->done) keep_put(p->c.opt.keep, &p->c, bookdb_dir(p->c.db));
	if (p->lock_fd >= 0) close(p->lock_fd);
	inc_free(&p->c);
	free(p->rw.v);
	free(p->pr);
	free(p->pre);
	free(p->buf);
	free(p->edges);
	free(p);
}

/* What the plan's records take at most in prepared bytes (the read and the
 * rewrite); the rest are done at apply time. */
#define PRE_MAX ((size_t)256 << 20)
/* Records read in one read transaction. */
#define PRE_TXN 4096

/*
 * Reads each record of the plan and makes its rewrite now, on the run's own
 * thread, so that the writer's transactions (the coordinator's service)
 * only compare and write: reading a record and the graph file's pages for
 * its edges was most of a rewrite on a book larger than memory, and the
 * service gave its minimax writes 5 ms a tick. A record the writer changes
 * meanwhile is not as read, and is rewritten from its new bytes when applied.
 * Stops early (the rest done at apply time) when stopped or past PRE_MAX.
 */
static void prepare_records(BookMinimaxPlan *p)
{
	Inc *c = &p->c;
	BookTxn *txn = NULL;
	if (!(p->pr = malloc((p->rw.n + 1) * sizeof *p->pr)) ||
	    bookdb_txn_begin(&txn, c->db, false) < 0)
		goto out;
	for (size_t q = 0; q < p->rw.n; q++) p->pr[q].raw_len = PRE_NONE;
	size_t cap = 0;
	for (size_t q = 0; q < p->rw.n; q++) {
		if ((q & (STOP_EVERY - 1)) == 0 && bookmm_stopped(&c->opt)) break;
		/* A read transaction held long keeps the writer from reusing the
		 * pages it frees meanwhile (the book's file grows): a new one now
		 * and then. */
		if (q && q % PRE_TXN == 0) {
			bookdb_txn_abort(txn);
			txn = NULL;
			if (bookdb_txn_begin(&txn, c->db, false) < 0) break;
		}
		read_ahead(c, p->rw.v, p->rw.n, q);
		uint32_t x = p->rw.v[q];
		const uint8_t *raw;
		size_t len;
		if (bookdb_get_raw(&raw, &len, txn, mmfile_key(&c->v, x)) < 0) continue;
		int n = make_rewrite(c, x, raw, len, p->buf, p->edges);
		if (n < 0) continue; /* said when applied */
		size_t need = p->pre_len + len + (size_t)n;
		if (need > PRE_MAX) break;
		if (need > cap) {
			size_t nc = cap ? cap * 2 : (size_t)1 << 20;
			while (nc < need) nc *= 2;
			uint8_t *g = realloc(p->pre, nc);
			if (!g) break;
			p->pre = g;
			cap = nc;
		}
		p->pr[q] = (PreRecord){p->pre_len, (uint32_t)len, (uint32_t)n};
		memcpy(p->pre + p->pre_len, raw, len);
		memcpy(p->pre + p->pre_len + len, p->buf, (size_t)n);
		p->pre_len = need;
	}
out:
	if (txn) bookdb_txn_abort(txn);
}

/* Record q of the plan as rewrite_one writes it, from its prepared rewrite
 * when the record is still the one read. */
static int apply_one(BookMinimaxPlan *p, BookTxn *txn, size_t q)
{
	Rewrite r = {&p->c, p->rw.v[q], p->edges, NULL, PRE_NONE, 0};
	const PreRecord *e = p->pr ? &p->pr[q] : NULL;
	if (e && e->raw_len != PRE_NONE)
		r = (Rewrite){&p->c, p->rw.v[q], p->edges, p->pre + e->off, e->raw_len, e->new_len};
	return rewrite_with(&r, txn, p->buf, &p->st);
}

int bookmm_inc_prepare(BookMinimaxPlan **out, BookmmStats *st, BookDB *db, const char *dir,
                       const BookmmOptions *opt, char *why)
{
	*out = NULL;
	BookMinimaxPlan *p = calloc(1, sizeof *p);
	if (!p) return errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
	p->lock_fd = -1;
	int rc = analyse_folding(&p->c, &p->st, db, dir, opt, why);
	p->jlen = p->c.s.journal_len;
	if (rc == 0 && p->c.changed.n) {
		/* The journal first: a batch past the length the book records is
		 * ignored (and overwritten) if the records never follow. */
		char msg[MMFILE_ERRLEN];
		p->buf = malloc(BOOKDB_RECORD_MAX);
		p->edges = malloc(BOOKMM_NODE_MOVES * sizeof *p->edges);
		if (!p->buf || !p->edges || rewrite_list(&p->c, &p->rw) < 0)
			rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_ENOMEM, "out of memory");
		else if (mmfile_journal_append(&p->c.v, dir, p->c.s.journal_len, &p->jlen, msg) < 0)
			rc = errmsg_set(why, BOOKMM_ERRLEN, BOOKMM_EBOOK, "keeping the graph: %s",
			                msg);
		double t0 = clock_ms_f();
		if (rc == 0) prepare_records(p);
		p->st.write_ms = clock_ms_f() - t0;
	}
	*st = p->st;
	if (rc < 0 || !p->c.changed.n) {
		p->done = rc == 0;
		bookmm_plan_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int bookmm_plan_apply(BookMinimaxPlan *p, BookTxn *txn, size_t max, char *err)
{
	bool track = bookdb_txn_tracking(txn);
	bookdb_txn_set_tracking(txn, false); /* minimax's own rewrites are no change to see again */
	int rc = 0;
	/* Spread over several of the caller's transactions: marked as a stopped
	 * run would be (see commit), so that one killed in between is mended. */
	if (!p->marked && p->rw.n - p->next > max)
		rc = bookdb_kv_put(txn, BOOKDB_META, META_RUNNING, strlen(META_RUNNING), "1", 1);
	p->marked |= rc == 0;
	size_t end = p->rw.n - p->next > max ? p->next + max : p->rw.n;
	while (rc == 0 && p->next < end) rc = apply_one(p, txn, p->next++);
	bool done = rc == 0 && p->next == p->rw.n;
	if (done) rc = finish(&p->c, txn, &p->st, p->jlen);
	p->done = done && rc == 0;
	bookdb_txn_set_tracking(txn, track);
	if (rc < 0)
		return errmsg_set(err, BOOKMM_ERRLEN,
		                  rc == BOOKDB_ENOMEM ? BOOKMM_ENOMEM : BOOKMM_EBOOK,
		                  "minimax: writing the book: %s", bookdb_strerror(rc));
	return done;
}

const BookmmStats *bookmm_plan_stats(const BookMinimaxPlan *p)
{
	return &p->st;
}

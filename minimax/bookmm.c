/*
 * minimax/bookmm.c — joseki minimax: the book graph, the shared back-up core,
 * and the write-back (docs/minimax.md).
 *
 * Three passes over the pos database, each in its own transaction: keys (the
 * key → node map), moves (edges and leaves; needs the map), write-back (needs
 * every value). Nodes are numbered in key order, which is also the order of
 * the write-back, so the writes walk the B-tree sequentially.
 */
#include "minimax/bookmm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "minimax/graph.h"
#include "shogi/movegen.h"

#define F_VALUED 0x01 /* caller bit of the core's flags: the node has a value */
#define BOOKMM_BATCH 10000

const char *bookmm_strerror(int code)
{
	switch (code) {
	case BOOKMM_OK: return "success";
	case BOOKMM_ENOMEM: return "out of memory";
	case BOOKMM_EBOOK: return "book error";
	default: return "unknown error";
	}
}

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int16_t clamp_value(int v)
{
	if (v > MM_VALUE_MAX) return MM_VALUE_MAX;
	if (v < -MM_VALUE_MAX) return -MM_VALUE_MAX;
	return (int16_t)v;
}

/* A record's bytes in the read snapshot (valid while its transaction is open). */
typedef struct {
	const uint8_t *val;
	size_t len;
} RawRec;

typedef struct {
	MmGraph g;
	Key *keys;
	RawRec *raw;
	size_t cap, raw_cap;
	MmKeyMap map;
} BookGraph;

static void bg_free(BookGraph *b)
{
	mm_graph_free(&b->g);
	free(b->keys);
	free(b->raw);
	mm_map_free(&b->map);
}

/* Pass 1: every key, in key order, and where its record lies in the snapshot. */
static int load_keys(BookGraph *b, BookTxn *txn, char *err, size_t errlen)
{
	BookIter *it = NULL;
	int rc = bookdb_iter_open(&it, txn);
	if (rc < 0) return fail(err, errlen, BOOKMM_EBOOK, "cannot read the book: %s", bookdb_strerror(rc));
	Key k;
	const uint8_t *val;
	size_t len;
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		if (b->g.n >= MM_NONE - 1) {
			rc = fail(err, errlen, BOOKMM_ENOMEM, "too many positions");
			goto done;
		}
		if (mm_grow((void **)&b->keys, &b->cap, b->g.n + 1, sizeof *b->keys) < 0) {
			rc = fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
			goto done;
		}
		if (mm_grow((void **)&b->raw, &b->raw_cap, b->g.n + 1, sizeof *b->raw) < 0) {
			rc = fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
			goto done;
		}
		b->keys[b->g.n] = k;
		b->raw[b->g.n] = (RawRec){val, len};
		if (mm_map_put(&b->map, b->keys, (uint32_t)b->g.n) < 0) {
			rc = fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
			goto done;
		}
		b->g.n++;
	}
	if (rc < 0) {
		rc = fail(err, errlen, BOOKMM_EBOOK, "reading the book: %s", bookdb_strerror(rc));
		goto done;
	}
	rc = mm_map_build_filter(&b->map, b->keys, b->g.n) < 0
		     ? fail(err, errlen, BOOKMM_ENOMEM, "out of memory")
		     : 0;
done:
	bookdb_iter_free(it);
	return rc;
}

/* Pass 2 of one range of nodes, in a thread of its own: the moves (into its own
 * array) and the flags of nodes lo..hi-1, from the snapshot's bytes. */
typedef struct {
	const BookGraph *b;
	MmFlags *flags;
	uint32_t *count; /* moves of node i: count[i - lo] */
	uint32_t lo, hi;
	MmMove *moves;
	size_t nmoves, cap;
	int rc;
} LoadPart;

static int part_push(LoadPart *p, MmMove m)
{
	if (mm_grow((void **)&p->moves, &p->cap, p->nmoves + 1, sizeof *p->moves) < 0) return -1;
	p->moves[p->nmoves++] = m;
	return 0;
}

static void *load_part(void *arg)
{
	LoadPart *p = arg;
	const BookGraph *b = p->b;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	p->rc = -1;
	if (!rec || !pos) goto out;
	for (uint32_t i = p->lo; i < p->hi; i++) {
		size_t first = p->nmoves;
		/* A record that does not decode or is not a legal position stays a
		 * node without moves (no value); joseki check reports it. */
		if (bookdb_record_decode(rec, b->raw[i].val, b->raw[i].len) == 0 &&
		    bookdb_record_position(pos, rec, NULL) == 0) {
			if (pos->side == WHITE) p->flags[i] |= MM_F_WHITE;
			if (pos_in_check(pos)) p->flags[i] |= MM_F_CHECKED;
			Move legal[MOVEGEN_MAX];
			int nl = movegen_legal(pos, legal);
			for (int m = 0; m < nl; m++) {
				uint32_t j = mm_map_get(&b->map, b->keys, pos_key_after(pos, legal[m]));
				if (j == MM_NONE) continue;
				if (part_push(p, (MmMove){legal[m], 0, j}) < 0) goto out;
			}
			/* Of the leaves only the best one matters to the analysis
			 * (equal leaves are the same (value, 0) pair): keeping one
			 * makes the relaxation sweeps walk edges, not leaves. The
			 * write-back values the other leaves from their evals. */
			size_t nedges = p->nmoves;
			MmMove best = {MOVE_NONE, 0, MM_NONE};
			for (int m = 0; m < rec->nmoves; m++) {
				const BookMove *bm = &rec->moves[m];
				if (!(bm->flags & BOOKDB_MOVE_EVAL) || bm->move == MOVE_NONE) continue;
				bool dup = false;
				for (size_t q = first; q < nedges && !dup; q++)
					if (p->moves[q].move == bm->move) dup = true;
				if (dup) continue;
				int16_t v = clamp_value(bm->eval);
				if (best.move == MOVE_NONE || v > best.value) {
					best.move = bm->move;
					best.value = v;
				}
			}
			if (best.move != MOVE_NONE) {
				if (part_push(p, best) < 0) goto out;
				p->flags[i] |= F_VALUED;
			}
			if (nl == 0) {
				/* No legal move: mated (a drop-pawn mate, a stalemate alike). */
				if (part_push(p, (MmMove){MOVE_NONE, -MM_VALUE_MAX, MM_NONE}) < 0) goto out;
				p->flags[i] |= F_VALUED;
			}
		}
		p->count[i - p->lo] = (uint32_t)(p->nmoves - first);
	}
	p->rc = 0;
out:
	free(rec);
	free(pos);
	return NULL;
}

#define BOOKMM_MAX_THREADS 16

/* Pass 2: the moves of every node, the ranges in parallel (one per core). */
static int load_moves(BookGraph *b, char *err, size_t errlen)
{
	MmGraph *g = &b->g;
	g->flags = calloc(g->n + 1, sizeof *g->flags);
	g->mstart = malloc((g->n + 1) * sizeof *g->mstart);
	g->vd = malloc((g->n + 1) * sizeof *g->vd);
	if (!g->flags || !g->mstart || !g->vd) return fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = ncpu < 1 ? 1 : ncpu > BOOKMM_MAX_THREADS ? BOOKMM_MAX_THREADS : (int)ncpu;
	if (g->n < 10000) nt = 1;
	LoadPart parts[BOOKMM_MAX_THREADS];
	pthread_t tid[BOOKMM_MAX_THREADS];
	bool started[BOOKMM_MAX_THREADS] = {false};
	memset(parts, 0, sizeof parts);
	int rc = 0;
	for (int t = 0; t < nt; t++) {
		LoadPart *p = &parts[t];
		p->b = b;
		p->flags = g->flags;
		p->lo = (uint32_t)(g->n * (size_t)t / (size_t)nt);
		p->hi = (uint32_t)(g->n * (size_t)(t + 1) / (size_t)nt);
		/* Each part's counts go straight into mstart, shifted by one. */
		p->count = g->mstart + 1 + p->lo;
		p->rc = -1;
		if (t > 0 && pthread_create(&tid[t], NULL, load_part, p) == 0) started[t] = true;
	}
	load_part(&parts[0]);
	for (int t = 1; t < nt; t++) {
		if (started[t]) pthread_join(tid[t], NULL);
		else load_part(&parts[t]);
	}
	size_t total = 0;
	for (int t = 0; t < nt; t++) {
		if (parts[t].rc < 0) rc = -1;
		total += parts[t].nmoves;
	}
	if (rc == 0 && total >= MM_NONE) rc = -1;
	if (rc == 0 && mm_grow((void **)&g->moves, &g->moves_cap, total + 1, sizeof *g->moves) < 0)
		rc = -1;
	if (rc == 0) {
		g->nmoves = 0;
		for (int t = 0; t < nt; t++) {
			memcpy(g->moves + g->nmoves, parts[t].moves, parts[t].nmoves * sizeof *g->moves);
			g->nmoves += parts[t].nmoves;
		}
		g->mstart[0] = 0;
		for (size_t i = 0; i < g->n; i++) g->mstart[i + 1] += g->mstart[i];
	}
	for (int t = 0; t < nt; t++) free(parts[t].moves);
	return rc < 0 ? fail(err, errlen, BOOKMM_ENOMEM, "out of memory") : 0;
}

/*
 * A node has a value when it has a leaf or an edge to a node with a value.
 * Edges to nodes without one are dropped (a position nobody evaluated says
 * nothing), and those nodes are left out of the analysis.
 */
static void prune_unvalued(MmGraph *g)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t i = 0; i < g->n; i++) {
			if (g->flags[i] & F_VALUED) continue;
			for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
				uint32_t j = g->moves[k].next;
				if (j != MM_NONE && (g->flags[j] & F_VALUED)) {
					g->flags[i] |= F_VALUED;
					changed = true;
					break;
				}
			}
		}
	}
	size_t w = 0;
	for (uint32_t i = 0; i < g->n; i++) {
		uint32_t from = g->mstart[i], to = g->mstart[i + 1];
		g->mstart[i] = (uint32_t)w;
		if (!(g->flags[i] & F_VALUED)) {
			/* Settled out of the way: nothing leads here. */
			g->flags[i] |= MM_F_CONST | MM_F_FROZEN;
			g->flags[i] &= (MmFlags)~MM_F_CHECKED;
			g->vd[i] = (MmVd){0, 0};
			continue;
		}
		for (uint32_t k = from; k < to; k++) {
			uint32_t j = g->moves[k].next;
			if (j != MM_NONE && !(g->flags[j] & F_VALUED)) continue;
			g->moves[w++] = g->moves[k];
		}
	}
	g->mstart[g->n] = (uint32_t)w;
	g->nmoves = w;
}

/* The value and dist a graph move gets in the record (as peta-shock writes it). */
static MmVd stored_vd(const MmGraph *g, const MmMove *m)
{
	MmVd v = mm_move_vd(g, m);
	/* A move into a perpetual-check loop where the opponent is in check
	 * must not win a tie against an equal exit. */
	if (m->next != MM_NONE && (g->flags[m->next] & MM_F_LOOP) &&
	    (g->flags[m->next] & MM_F_CHECKED))
		v.depth = MM_DEPTH_PCHECK;
	return v;
}

/* Sets rec's minimax fields from node i; returns true when anything changed. */
static bool apply_node(BookRecord *rec, const MmGraph *g, uint32_t i)
{
	bool changed = false;
	bool valued = g->flags[i] & F_VALUED;
	uint8_t flags = valued ? (uint8_t)(rec->flags | BOOKDB_REC_MINIMAX)
			       : (uint8_t)(rec->flags & ~BOOKDB_REC_MINIMAX);
	if (flags != rec->flags) changed = true;
	rec->flags = flags;
	uint16_t n0 = rec->nmoves;
	for (uint16_t m = 0; m < n0; m++) {
		int16_t v = valued ? BOOKMM_NOVALUE : 0;
		uint16_t d = 0;
		bool edge = false;
		for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++)
			if (g->moves[k].move == rec->moves[m].move && g->moves[k].next != MM_NONE) {
				MmVd x = stored_vd(g, &g->moves[k]);
				v = x.value;
				d = x.depth;
				edge = true;
				break;
			}
		/* Not an edge: a leaf valued by its evaluation. */
		if (valued && !edge && (rec->moves[m].flags & BOOKDB_MOVE_EVAL))
			v = clamp_value(rec->moves[m].eval);
		if (rec->moves[m].value != v || rec->moves[m].dist != d) changed = true;
		rec->moves[m].value = v;
		rec->moves[m].dist = d;
	}
	/* Transposition edges the record does not list yet become moves of it. */
	for (uint32_t k = g->mstart[i]; k < g->mstart[i + 1]; k++) {
		const MmMove *gm = &g->moves[k];
		if (gm->next == MM_NONE || rec->nmoves >= BOOKDB_MAX_MOVES) continue;
		bool listed = false;
		for (uint16_t m = 0; m < n0 && !listed; m++)
			if (rec->moves[m].move == gm->move) listed = true;
		if (listed) continue;
		BookMove *bm = &rec->moves[rec->nmoves++];
		memset(bm, 0, sizeof *bm);
		bm->move = gm->move;
		MmVd x = stored_vd(g, gm);
		bm->value = x.value;
		bm->dist = x.depth;
		changed = true;
	}
	return changed;
}

static int write_back(BookmmStats *st, BookGraph *b, BookDB *db, const BookmmOptions *opt,
		      char *err, size_t errlen)
{
	const MmGraph *g = &b->g;
	BookWriter *w = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	uint8_t *buf = malloc(BOOKDB_RECORD_MAX);
	if (!rec || !buf) {
		free(rec);
		free(buf);
		return fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
	}
	int rc = bookdb_writer_new(&w, db, opt && opt->batch ? opt->batch : BOOKMM_BATCH);
	if (rc < 0) {
		free(rec);
		free(buf);
		return fail(err, errlen, BOOKMM_EBOOK, "cannot write the book: %s", bookdb_strerror(rc));
	}
	bool full = opt && opt->full;
	for (uint32_t i = 0; i < g->n; i++) {
		/* Most records of a second run are unchanged: compare on the
		 * moves alone. */
		BookTxn *rt;
		const uint8_t *raw;
		size_t len;
		if ((rc = bookdb_writer_txn(&rt, w)) < 0) goto bad;
		rc = bookdb_get_raw(&raw, &len, rt, b->keys[i]);
		if (rc == BOOKDB_ENOTFOUND) continue; /* deleted since: nothing to store */
		if (rc < 0) goto bad;
		/* Only the moves change: the packed position is copied as it is. */
		int head = bookdb_record_decode_head(rec, raw, len);
		if (head < 0) continue; /* joseki check reports it */
		if (!apply_node(rec, g, i) && !full) continue;
		int n = bookdb_record_encode_packed(buf, BOOKDB_RECORD_MAX, rec, raw + head, len - (size_t)head);
		if (n < 0) continue; /* a packing too long: not a record (joseki check) */
		if ((rc = bookdb_writer_put_raw(w, b->keys[i], buf, (size_t)n)) < 0) goto bad;
		st->rewritten++;
	}
	/* What the last run was, for whoever looks (joseki stats, a later run). */
	char meta[160];
	int ml = snprintf(meta, sizeof meta,
			  "{\"positions\":%zu,\"valued\":%zu,\"draw_black\":%d,\"draw_white\":%d}",
			  st->positions, st->valued, opt ? opt->draw_black : 0,
			  opt ? opt->draw_white : 0);
	BookTxn *txn;
	if ((rc = bookdb_writer_txn(&txn, w)) < 0) goto bad;
	if ((rc = bookdb_kv_put(txn, BOOKDB_META, "minimax", 7, meta, (size_t)ml)) < 0) goto bad;
	if ((rc = bookdb_writer_flush(w)) < 0) goto bad;
	bookdb_writer_free(w);
	free(rec);
	free(buf);
	return 0;
bad:
	bookdb_writer_free(w);
	free(rec);
	free(buf);
	return fail(err, errlen, BOOKMM_EBOOK, "writing the book: %s", bookdb_strerror(rc));
}

int bookmm_run(BookmmStats *stats, BookDB *db, const BookmmOptions *opt, char *err, size_t errlen)
{
	BookmmStats st;
	memset(&st, 0, sizeof st);
	BookGraph b;
	memset(&b, 0, sizeof b);
	/* Passes 1 and 2 read one snapshot, so that a writer adding positions
	 * meanwhile (joseki think) changes nothing under them. */
	BookTxn *txn = NULL;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc < 0) {
		rc = fail(err, errlen, BOOKMM_EBOOK, "cannot read the book: %s", bookdb_strerror(rc));
		goto done;
	}
	rc = load_keys(&b, txn, err, errlen);
	if (rc == 0) rc = load_moves(&b, err, errlen);
	bookdb_txn_abort(txn);
	if (rc < 0) goto done;
	MmGraph *g = &b.g;
	g->draw[BLACK] = clamp_value(opt ? opt->draw_black : 0);
	g->draw[WHITE] = clamp_value(opt ? opt->draw_white : 0);
	prune_unvalued(g);
	MmStats ms;
	if (mm_backup(g, &ms) < 0) {
		rc = fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
		goto done;
	}
	st.positions = g->n;
	st.moves = g->nmoves;
	for (size_t k = 0; k < g->nmoves; k++)
		if (g->moves[k].next != MM_NONE) st.edges++;
	for (uint32_t i = 0; i < g->n; i++) {
		if (!(g->flags[i] & F_VALUED)) continue;
		st.valued++;
		if (g->flags[i] & MM_F_CONST) st.settled++;
	}
	st.cyclic = st.valued - st.settled;
	st.sweeps = ms.peel_sweeps + ms.relax_sweeps;
	Position *start = malloc(sizeof *start);
	if (!start) {
		rc = fail(err, errlen, BOOKMM_ENOMEM, "out of memory");
		goto done;
	}
	pos_set_startpos(start);
	uint32_t r = mm_map_get(&b.map, b.keys, pos_key(start));
	free(start);
	if (r != MM_NONE && (g->flags[r] & F_VALUED)) {
		MmVd best = {-MM_VALUE_INF, MM_DEPTH_MAX};
		for (uint32_t k = g->mstart[r]; k < g->mstart[r + 1]; k++) {
			MmVd v = stored_vd(g, &g->moves[k]);
			if (mm_vd_better(v, best)) best = v;
		}
		st.has_root = true;
		st.root_value = best.value;
	}
	rc = write_back(&st, &b, db, opt, err, errlen);
done:
	bg_free(&b);
	if (stats) *stats = st;
	return rc;
}

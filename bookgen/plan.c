/*
 * bookgen/plan.c — roots, their shares, and the selection policy
 * (bookgen/plan.h).
 */
#include "bookgen/plan.h"
#include "bookgen/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/notation.h"

/* Leaves kept from one ranged search (the whole of the level it stopped at),
 * at most this many batches' worth: more would go stale while other roots
 * are served. */
#define PLAN_QUEUE_BATCHES 4

/* One (root, book colour) the effort is shared between, with the leaves of
 * its last ranged search not handed out yet (PLAN_COVER), kept compact:
 * per leaf u16 moves, i32 value, the key, then the moves. */
typedef struct {
	int root;
	int book_side; /* BLACK or WHITE (PLAN_COVER); -1 (PLAN_PV) */
	double weight;
	size_t served;
	uint8_t *q;
	size_t qlen, qcap, qhead;
} PlanSlot;

typedef struct {
	char sfen[SFEN_MAX];
} PlanRootSfen;

typedef struct {
	Key key;
	char *sfen;
	int ply; /* its move number */
} PlanPath;

struct Plan {
	PlanOptions opt;
	Selector *sel;
	PlanRootSfen *sfens;
	int nroots;
	PlanSlot *slots;
	int nslots;
	int *order;      /* scratch: slots by deficit */
	SelLeaf *search; /* scratch: one ranged search's leaves */
	size_t qmax;     /* ... at most this many */
	/* The way to the roots, served first (plan_set_paths), then the roots
	 * themselves (those not on the way), before the book's lines: nlines
	 * of the npaths are the way, whose lines think keeps analysed. */
	PlanPath *paths;
	size_t npaths, nlines, next_path;
	bool paths_only;
	int roots_ply; /* the move number the roots lie at (one past the deepest path) */
};

void plan_options_init(PlanOptions *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->mode = PLAN_COVER;
	opt->window = PLAN_WINDOW_DEFAULT;
	opt->book_side = PLAN_SIDE_BOTH;
	opt->batch = 16;
}

void plan_free(Plan *p)
{
	if (!p) return;
	for (int i = 0; p->slots && i < p->nslots; i++) free(p->slots[i].q);
	free(p->sfens);
	free(p->slots);
	free(p->order);
	free(p->search);
	for (size_t i = 0; i < p->npaths; i++) free(p->paths[i].sfen);
	free(p->paths);
	free(p);
}

int plan_set_paths(Plan *p, const char *const *specs, size_t n, bool only, char *err)
{
	/* The roots after the way, unless only the way is thought. */
	size_t extra = n && !only ? (size_t)p->nroots : 0;
	PlanPath *v = n ? calloc(n + extra, sizeof *v) : NULL;
	if (n && !v) return SEL_ENOMEM;
	Position pos;
	size_t total = 0;
	int rc = 0;
	for (size_t i = 0; i < n + extra && rc == 0; i++) {
		char perr[SHOGI_ERRLEN], sfen[SFEN_MAX];
		if (i < n && position_parse(&pos, specs[i], perr) < 0) {
			rc = errmsg_set(err, SHOGI_ERRLEN, SEL_EINVAL,
			                "bad position '%.200s': %.200s", specs[i], perr);
			break;
		}
		/* A root (parsed by plan_new), unless on the way already. */
		if (i >= n && sfen_parse(&pos, p->sfens[i - n].sfen, NULL, NULL) < 0) continue;
		bool seen = false;
		for (size_t k = 0; i >= n && k < total && !seen; k++)
			seen = key_equal(v[k].key, pos_key(&pos));
		if (seen) continue;
		sfen_write(&pos, sfen, sizeof sfen);
		v[total].key = pos_key(&pos);
		v[total].ply = pos.game_ply;
		if (!(v[total++].sfen = strdup(sfen))) rc = SEL_ENOMEM;
	}
	if (rc < 0) {
		for (size_t k = 0; k < total; k++) free(v[k].sfen);
		free(v);
		return rc;
	}
	for (size_t i = 0; i < p->npaths; i++) free(p->paths[i].sfen);
	free(p->paths);
	p->paths = v;
	p->npaths = total;
	p->nlines = n;
	p->next_path = 0;
	p->paths_only = only;
	/* The roots lie one ply below the deepest. */
	p->roots_ply = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].ply + 1 > p->roots_ply) p->roots_ply = v[i].ply + 1;
	return 0;
}

bool plan_path_line(const Plan *p, size_t i, const char **sfen, int *plies)
{
	if (i >= p->nlines) return false;
	*sfen = p->paths[i].sfen;
	*plies = p->roots_ply - p->paths[i].ply;
	if (*plies < 1) *plies = 1;
	return true;
}

size_t plan_paths_left(Plan *p)
{
	size_t n = 0;
	for (size_t i = p->next_path; i < p->npaths; i++)
		n += !sel_is_thought(p->sel, p->paths[i].key);
	return n;
}

/* The first path position neither thought nor leased, as a leaf (root 0, no
 * moves: *pos set here, not from a root): 1, or 0 when none is left. The
 * thought ones at the front are passed for good; a leased one stays (its
 * lease may end without an answer). */
static int next_path(Plan *p, SelLeaf *leaf, Position *pos)
{
	while (p->next_path < p->npaths && sel_is_thought(p->sel, p->paths[p->next_path].key))
		p->next_path++;
	for (size_t i = p->next_path; i < p->npaths; i++) {
		const PlanPath *q = &p->paths[i];
		if (sel_is_leased(p->sel, q->key) || sel_is_thought(p->sel, q->key)) continue;
		if (sfen_parse(pos, q->sfen, NULL, NULL) < 0) continue; /* parsed before */
		memset(leaf, 0, sizeof *leaf);
		leaf->key = q->key;
		return 1;
	}
	return 0;
}

int plan_new(Plan **out, Selector *sel, const PlanOptions *opt, const char *const *specs,
             const double *weights, int n, char *err)
{
	*out = NULL;
	int nroots = n > 0 ? n : 1;
	Plan *p = calloc(1, sizeof *p);
	if (!p) return SEL_ENOMEM;
	p->opt = *opt;
	if (p->opt.window < 0) p->opt.window = 0;
	if (p->opt.batch <= 0) p->opt.batch = 16;
	p->sel = sel;
	int per = p->opt.mode == PLAN_COVER && p->opt.book_side == PLAN_SIDE_BOTH ? 2 : 1;
	p->sfens = calloc((size_t)nroots, sizeof *p->sfens);
	p->slots = calloc((size_t)nroots * (size_t)per, sizeof *p->slots);
	p->order = calloc((size_t)nroots * (size_t)per, sizeof *p->order);
	p->qmax = (size_t)p->opt.batch * PLAN_QUEUE_BATCHES;
	p->search = p->opt.mode == PLAN_COVER ? calloc(p->qmax, sizeof *p->search) : NULL;
	if (!p->sfens || !p->slots || !p->order || (p->opt.mode == PLAN_COVER && !p->search)) {
		plan_free(p);
		return SEL_ENOMEM;
	}
	Position pos;
	for (int r = 0; r < nroots; r++) {
		const char *spec = n > 0 ? specs[r] : "startpos";
		double w = n > 0 && weights ? weights[r] : 1.0;
		char perr[SHOGI_ERRLEN];
		if (!(w > 0)) {
			plan_free(p);
			return errmsg_set(err, SHOGI_ERRLEN, SEL_EINVAL,
			                  "root '%.200s': weight %g is not above 0", spec, w);
		}
		if (position_parse(&pos, spec, perr) < 0) {
			plan_free(p);
			return errmsg_set(err, SHOGI_ERRLEN, SEL_EINVAL,
			                  "bad root '%.200s': %.200s", spec, perr);
		}
		sfen_write(&pos, p->sfens[r].sfen, sizeof p->sfens[r].sfen);
		int rc = sel_add_root(sel, pos_key(&pos), pos.side);
		if (rc < 0) {
			plan_free(p);
			return rc;
		}
		for (int k = 0; k < per; k++) {
			PlanSlot *s = &p->slots[p->nslots++];
			s->root = rc;
			s->weight = w;
			s->book_side = p->opt.mode == PLAN_PV                ? -1
			               : p->opt.book_side == PLAN_SIDE_BLACK ? BLACK
			               : p->opt.book_side == PLAN_SIDE_WHITE ? WHITE
			               : k == 0                              ? BLACK
			                                                     : WHITE;
		}
	}
	p->nroots = nroots;
	*out = p;
	return 0;
}

int plan_nroots(const Plan *p)
{
	return p->nroots;
}

const char *plan_root_sfen(const Plan *p, int r)
{
	return r >= 0 && r < p->nroots ? p->sfens[r].sfen : NULL;
}

size_t plan_served(const Plan *p, int r)
{
	size_t n = 0;
	for (int i = 0; i < p->nslots; i++)
		if (p->slots[i].root == r) n += p->slots[i].served;
	return n;
}

/* Fewest leaves served per unit of weight first, ties by slot index. */
static int cmp_deficit(const void *a, const void *b, void *ctx)
{
	const PlanSlot *slots = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	double kx = (double)slots[x].served / slots[x].weight;
	double ky = (double)slots[y].served / slots[y].weight;
	if (kx != ky) return kx < ky ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void sort_slots(Plan *p)
{
	for (int i = 0; i < p->nslots; i++) p->order[i] = i;
	qsort_r(p->order, (size_t)p->nslots, sizeof *p->order, cmp_deficit, p->slots);
}

/* Hands out leaf (its position set up); 1, or a negative code. */
static int give(Plan *p, int slot, SelLeaf *leaf, Position *pos)
{
	if (sel_leaf_position(pos, p->sfens[leaf->root].sfen, leaf) < 0) return SEL_EINVAL;
	p->slots[slot].served++;
	return 1;
}

/* Keeps leaves in slot s's queue (replacing what was there). 0 or SEL_ENOMEM. */
static int queue_put(PlanSlot *s, const SelLeaf *l, size_t n)
{
	s->qlen = s->qhead = 0;
	size_t need = 0;
	for (size_t i = 0; i < n; i++) need += 6 + sizeof(Key) + 2 * (size_t)l[i].nmoves;
	if (array_grow((void **)&s->q, &s->qcap, need, 1, 256)) return SEL_ENOMEM;
	uint8_t *b = s->q;
	for (size_t i = 0; i < n; i++) {
		uint16_t nm = (uint16_t)l[i].nmoves;
		int32_t v = l[i].value;
		memcpy(b, &nm, 2);
		memcpy(b + 2, &v, 4);
		memcpy(b + 6, &l[i].key, sizeof(Key));
		memcpy(b + 6 + sizeof(Key), l[i].moves, 2 * (size_t)nm);
		b += 6 + sizeof(Key) + 2 * (size_t)nm;
	}
	s->qlen = need;
	return 0;
}

/* The next queued leaf of slot s still worth thinking (not thought, not
 * leased since): 1 with *leaf set, 0 when the queue is spent. */
static int queue_take(Plan *p, PlanSlot *s, SelLeaf *leaf)
{
	while (s->qhead < s->qlen) {
		const uint8_t *b = s->q + s->qhead;
		uint16_t nm;
		int32_t v;
		memcpy(&nm, b, 2);
		memcpy(&v, b + 2, 4);
		memcpy(&leaf->key, b + 6, sizeof(Key));
		memcpy(leaf->moves, b + 6 + sizeof(Key), 2 * (size_t)nm);
		s->qhead += 6 + sizeof(Key) + 2 * (size_t)nm;
		if (sel_is_thought(p->sel, leaf->key) || sel_is_leased(p->sel, leaf->key)) continue;
		leaf->root = s->root;
		leaf->value = v;
		leaf->nmoves = nm;
		return 1;
	}
	return 0;
}

int plan_next(Plan *p, SelLeaf *leaf, Position *pos)
{
	if (p->npaths && next_path(p, leaf, pos)) return 1;
	if (p->paths_only) return 0;
	sort_slots(p);
	for (int i = 0; i < p->nslots; i++) {
		int k = p->order[i];
		PlanSlot *s = &p->slots[k];
		int rc;
		if (p->opt.mode == PLAN_PV) {
			rc = sel_select_root(leaf, p->sel, s->root);
			if (rc < 0) return rc;
			if (rc > 0) return give(p, k, leaf, pos);
			continue;
		}
		if (queue_take(p, s, leaf)) return give(p, k, leaf, pos);
		rc = sel_select_cover(p->search, p->qmax, (size_t)p->opt.batch, p->sel, s->root,
		                      p->opt.window, s->book_side);
		if (rc < 0) return rc;
		if (rc == 0) continue;
		*leaf = p->search[0];
		if ((rc = queue_put(s, p->search + 1, (size_t)rc - 1)) < 0) return rc;
		return give(p, k, leaf, pos);
	}
	return 0;
}

/* ---- the plan's state in a snapshot (bookgen/snapshot.h) ---- */

#define T_PLAN SNAP_TAG('P', 'L', 'A', 'N')

typedef struct {
	uint8_t *b;
	size_t n, cap;
	bool oom;
} Buf;

static void put(Buf *b, const void *p, size_t n)
{
	if (!n) return;
	if (b->oom || array_grow((void **)&b->b, &b->cap, b->n + n, 1, 1024)) {
		b->oom = true;
		return;
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_u64(Buf *b, uint64_t v)
{
	put(b, &v, sizeof v);
}

int plan_snapshot_write(const Plan *p, SnapWriter *w)
{
	Buf b = {0};
	put_u64(&b, (uint64_t)p->opt.mode);
	put_u64(&b, (uint64_t)(int64_t)p->opt.window);
	put_u64(&b, (uint64_t)p->opt.book_side);
	put_u64(&b, (uint64_t)p->opt.batch);
	put_u64(&b, (uint64_t)p->nroots);
	put_u64(&b, (uint64_t)p->nslots);
	for (int r = 0; r < p->nroots; r++) {
		uint64_t len = strlen(p->sfens[r].sfen);
		put_u64(&b, len);
		put(&b, p->sfens[r].sfen, len);
	}
	for (int i = 0; i < p->nslots; i++) {
		const PlanSlot *s = &p->slots[i];
		put_u64(&b, (uint64_t)(int64_t)s->root);
		put_u64(&b, (uint64_t)(int64_t)s->book_side);
		put(&b, &s->weight, sizeof s->weight);
		put_u64(&b, s->served);
		put_u64(&b, s->qlen - s->qhead);
		if (s->qlen > s->qhead) put(&b, s->q + s->qhead, s->qlen - s->qhead);
	}
	int rc = b.oom ? SEL_ENOMEM : snap_section(w, T_PLAN);
	if (!rc) rc = snap_write(w, b.b, b.n);
	free(b.b);
	return rc;
}

typedef struct {
	const uint8_t *p, *end;
	bool bad;
} Rd;

static const uint8_t *take(Rd *r, uint64_t n)
{
	if (r->bad || (uint64_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *q = r->p;
	r->p += n;
	return q;
}

static uint64_t take_u64(Rd *r)
{
	uint64_t v = 0;
	const uint8_t *q = take(r, sizeof v);
	if (q) memcpy(&v, q, sizeof v);
	return v;
}

/* A queue of leaves as queue_put writes them, every leaf whole. */
static bool queue_ok(const uint8_t *q, uint64_t len)
{
	uint64_t off = 0;
	while (off < len) {
		uint16_t nm;
		if (len - off < 6 + sizeof(Key)) return false;
		memcpy(&nm, q + off, 2);
		if (nm > SEL_MAX_PLY || len - off - 6 - sizeof(Key) < 2 * (uint64_t)nm)
			return false;
		off += 6 + sizeof(Key) + 2 * (uint64_t)nm;
	}
	return true;
}

int plan_restore(Plan *p, SnapReader *r, char *err)
{
	uint64_t len;
	if (!snap_has(r, T_PLAN, &len))
		return errmsg_set(err, SNAP_ERRLEN, SEL_ESNAP, "selector snapshot: no plan");
	if (len > ((uint64_t)1 << 32)) return SEL_ESNAP;
	uint8_t *buf = malloc(len ? (size_t)len : 1);
	if (!buf) return SEL_ENOMEM;
	int rc = snap_read(r, T_PLAN, buf, len, err);
	if (rc) {
		free(buf);
		return rc;
	}
	Rd d = {buf, buf + len, false};
	const char *differs = NULL;
	/* Which option differs, with the value the run that wrote it had. */
	static const char *const MODE[] = {"cover", "pv"}, *const SIDE[] = {"both", "black",
	                                                                    "white"};
	uint64_t mode = take_u64(&d), window = take_u64(&d), side = take_u64(&d),
	         batch = take_u64(&d);
	char what[2 * SFEN_MAX + 64];
	if (mode != (uint64_t)p->opt.mode)
		snprintf(what, sizeof what, "--select %s (this one: %s)",
		         mode < 2 ? MODE[mode] : "?", MODE[p->opt.mode]);
	else if (window != (uint64_t)(int64_t)p->opt.window)
		snprintf(what, sizeof what, "--window %lld (this one: %d)",
		         (long long)(int64_t)window, p->opt.window);
	else if (side != (uint64_t)p->opt.book_side)
		snprintf(what, sizeof what, "--book-side %s (this one: %s)",
		         side < 3 ? SIDE[side] : "?", SIDE[p->opt.book_side]);
	else if (batch != (uint64_t)p->opt.batch)
		snprintf(what, sizeof what, "a batch of %llu (this one: %d)",
		         (unsigned long long)batch, p->opt.batch);
	else
		what[0] = 0;
	uint64_t nroots = what[0] ? 0 : take_u64(&d);
	if (what[0]) {
		differs = what;
	} else if (nroots != (uint64_t)p->nroots || take_u64(&d) != (uint64_t)p->nslots) {
		snprintf(what, sizeof what, "%llu root%s (this one: %d)",
		         (unsigned long long)nroots, nroots == 1 ? "" : "s", p->nroots);
		differs = what;
	}
	for (int i = 0; !differs && i < p->nroots; i++) {
		uint64_t n = take_u64(&d);
		const uint8_t *sfen = take(&d, n);
		if (!sfen || n != strlen(p->sfens[i].sfen) || memcmp(sfen, p->sfens[i].sfen, n)) {
			/* Which one: its position then and now. */
			char was[SFEN_MAX] = "?";
			if (sfen && n < sizeof was) errmsg_escape(was, sizeof was, sfen, (size_t)n);
			snprintf(what, sizeof what, "root %d 'sfen %s' (this one: 'sfen %s')",
			         i + 1, was, p->sfens[i].sfen);
			differs = what;
		}
	}
	/* Checked whole before anything is changed. */
	const uint8_t *slots = d.p;
	for (int i = 0; !differs && i < p->nslots; i++) {
		const PlanSlot *s = &p->slots[i];
		double wt = 0;
		uint64_t root = take_u64(&d), side = take_u64(&d);
		const uint8_t *wp = take(&d, sizeof wt);
		if (wp) memcpy(&wt, wp, sizeof wt);
		(void)take_u64(&d);
		uint64_t qn = take_u64(&d);
		const uint8_t *q = take(&d, qn);
		if (root != (uint64_t)(int64_t)s->root || side != (uint64_t)(int64_t)s->book_side ||
		    wt != s->weight)
			differs = "other roots or weights";
		else if (!q || !queue_ok(q, qn))
			d.bad = true;
	}
	if (!differs && (d.bad || d.p != d.end)) {
		free(buf);
		return errmsg_set(err, SNAP_ERRLEN, SEL_ESNAP, "selector snapshot: damaged plan");
	}
	if (differs) {
		free(buf);
		return errmsg_set(err, SNAP_ERRLEN, SEL_ESNAP,
		                  "selector snapshot: of a run with %s", differs);
	}
	d.p = slots;
	for (int i = 0; i < p->nslots && !rc; i++) {
		PlanSlot *s = &p->slots[i];
		(void)take(&d, 3 * sizeof(uint64_t));
		s->served = take_u64(&d);
		uint64_t qn = take_u64(&d);
		const uint8_t *q = take(&d, qn);
		s->qlen = s->qhead = 0;
		if (qn && array_grow((void **)&s->q, &s->qcap, (size_t)qn, 1, 256))
			rc = SEL_ENOMEM;
		else if (qn) {
			memcpy(s->q, q, (size_t)qn);
			s->qlen = (size_t)qn;
		}
	}
	free(buf);
	return rc;
}

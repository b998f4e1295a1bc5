/*
 * cluster/coord_history.c — the coordinator's time series in the work
 * database (cluster/coord_history.h): the points' layout, reading them back
 * tier by tier, storing one with the coarser tiers kept, and taking a point
 * from the coordinator's state once a step (co_history_tick, for coord.c).
 */
#include "cluster/coord_history.h"

#include <stdlib.h>
#include <string.h>

#include "bookdb/query.h"
#include "bookgen/plan.h"
#include "cluster/coord_priv.h"
#include "shogi/position.h"
#include "shogi/be64.h"
#include "shogi/grow.h"
#include "shogi/notation.h"

/* ---- layout ---- */

void coord_hist_key(uint8_t out[COORD_HIST_KEY_LEN], int tier, int64_t t)
{
	out[0] = 'H';
	out[1] = (uint8_t)tier;
	be64_put(out + 2, (uint64_t)t);
}

static uint8_t *put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) *p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static uint64_t get_le(const uint8_t **p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++) v |= (uint64_t)(*p)[i] << (8 * i);
	*p += n;
	return v;
}

size_t coord_hist_encode(uint8_t *out, const CoordHistPoint *p)
{
	uint8_t *q = out;
	size_t rl = p->nroots > 0 ? strnlen(p->root, COORD_HIST_ROOT_MAX) : 0;
	*q++ = rl ? 2 : 1;
	q = put_le(q, p->span_s, 4);
	q = put_le(q, p->results, 8);
	q = put_le(q, p->failed, 8);
	q = put_le(q, p->positions, 8);
	q = put_le(q, p->thought, 8);
	q = put_le(q, p->nps, 8);
	q = put_le(q, (uint32_t)p->root_value, 4);
	q = put_le(q, p->workers, 4);
	q = put_le(q, p->queue, 4);
	q = put_le(q, p->leases, 4);
	q = put_le(q, p->aside, 4);
	size_t n = strnlen(p->pv, COORD_HIST_PV_MAX);
	*q++ = (uint8_t)n;
	memcpy(q, p->pv, n);
	q += n;
	if (rl) {
		*q++ = (uint8_t)(p->nroots > 255 ? 255 : p->nroots);
		*q++ = (uint8_t)rl;
		memcpy(q, p->root, rl);
		q += rl;
	}
	return (size_t)(q - out);
}

/* The bytes of an SFEN: pieces, digits, '/', '+', the side, hands, '-', spaces. */
static bool sfen_byte(uint8_t b)
{
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
	       b == '/' || b == '+' || b == '-' || b == ' ';
}

/* The bytes of a line of USI moves: "7g7f", "P*5e", "8h2b+", spaces. */
static bool pv_byte(uint8_t b)
{
	return (b >= '1' && b <= '9') || (b >= 'a' && b <= 'i') || b == '*' || b == '+' ||
	       b == ' ' || (b >= 'A' && b <= 'Z');
}

int coord_hist_decode(CoordHistPoint *p, const uint8_t *key, size_t klen, const uint8_t *val,
                      size_t vlen)
{
	if (klen < 1 || key[0] != 'H') return 0;
	const size_t fixed = COORD_HIST_V1_FIXED;
	if (klen != COORD_HIST_KEY_LEN || key[1] >= COORD_HIST_TIERS || vlen < fixed ||
	    (val[0] != 1 && val[0] != 2) || val[fixed - 1] > COORD_HIST_PV_MAX)
		return -1;
	size_t pvl = val[fixed - 1], rest = fixed + pvl; /* the root's, version 2 */
	if (val[0] == 1
	        ? vlen != rest
	        : vlen < rest + 2 || val[rest] == 0 || val[rest + 1] == 0 ||
	              val[rest + 1] > COORD_HIST_ROOT_MAX || vlen != rest + 2 + val[rest + 1])
		return -1;
	memset(p, 0, sizeof *p);
	p->tier = key[1];
	uint64_t t = be64_get(key + 2);
	if (t > (uint64_t)INT64_MAX) return -1;
	p->t = (int64_t)t;
	const uint8_t *q = val + 1;
	p->span_s = (uint32_t)get_le(&q, 4);
	p->results = get_le(&q, 8);
	p->failed = get_le(&q, 8);
	p->positions = get_le(&q, 8);
	p->thought = get_le(&q, 8);
	p->nps = get_le(&q, 8);
	p->root_value = (int32_t)(uint32_t)get_le(&q, 4);
	p->workers = (uint32_t)get_le(&q, 4);
	p->queue = (uint32_t)get_le(&q, 4);
	p->leases = (uint32_t)get_le(&q, 4);
	p->aside = (uint32_t)get_le(&q, 4);
	size_t n = *q++;
	for (size_t i = 0; i < n; i++)
		if (!pv_byte(q[i])) return -1;
	memcpy(p->pv, q, n);
	p->pv[n] = 0;
	q += n;
	if (val[0] == 2) {
		p->nroots = *q++;
		size_t rl = *q++;
		for (size_t i = 0; i < rl; i++)
			if (!sfen_byte(q[i])) return -1;
		memcpy(p->root, q, rl);
		p->root[rl] = 0;
	}
	return 1;
}

int64_t coord_hist_span(int tier, int step_s)
{
	static const int64_t FACTOR[COORD_HIST_TIERS] = {1, COORD_HIST_FACTOR1, COORD_HIST_FACTOR2};
	return (int64_t)(step_s > 0 ? step_s : 60) * FACTOR[tier];
}

static const size_t KEEP[COORD_HIST_TIERS] = {COORD_HIST_KEEP0, COORD_HIST_KEEP1, COORD_HIST_KEEP2};

/* ---- reading ---- */

/* Every point of txn's work database, per tier in key (time) order. */
typedef struct {
	CoordHistPoint *p[COORD_HIST_TIERS];
	size_t n[COORD_HIST_TIERS], cap[COORD_HIST_TIERS];
	size_t bad;
} Tiers;

static void tiers_free(Tiers *ts)
{
	for (int k = 0; k < COORD_HIST_TIERS; k++) free(ts->p[k]);
}

static int tiers_add(Tiers *ts, const CoordHistPoint *p)
{
	int k = p->tier;
	if (array_grow((void **)&ts->p[k], &ts->cap[k], ts->n[k] + 1, sizeof *ts->p[k], 64))
		return BOOKDB_ENOMEM;
	ts->p[k][ts->n[k]++] = *p;
	return 0;
}

static int tiers_load(Tiers *ts, BookTxn *txn)
{
	memset(ts, 0, sizeof *ts);
	BookIter *it;
	int rc = bookdb_kv_iter_open(&it, txn, BOOKDB_WORK);
	if (rc < 0) return rc;
	const void *k, *v;
	size_t kl, vl;
	CoordHistPoint p;
	/* "H" sorts before the coordinator's other records ("L", "N", "T"). */
	while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		int d = coord_hist_decode(&p, k, kl, v, vl);
		if (d == 0 && kl && *(const uint8_t *)k > 'H') break;
		if (d < 0) ts->bad++;
		if (d == 1 && (rc = tiers_add(ts, &p)) < 0) break;
	}
	bookdb_iter_free(it);
	if (rc < 0) tiers_free(ts);
	return rc < 0 ? rc : 0;
}

int coord_history_read(CoordHistPoint **out, BookTxn *txn, int64_t since, size_t *bad)
{
	*out = NULL;
	Tiers ts;
	int rc = tiers_load(&ts, txn);
	if (rc < 0) return rc;
	if (bad) *bad = ts.bad;
	size_t total = ts.n[0] + ts.n[1] + ts.n[2], n = 0;
	CoordHistPoint *r = total ? malloc(total * sizeof *r) : NULL;
	if (total && !r) {
		tiers_free(&ts);
		return BOOKDB_ENOMEM;
	}
	/* Coarsest (oldest) first, each tier up to where the finer ones start. */
	int64_t start[COORD_HIST_TIERS];
	for (int k = 0; k < COORD_HIST_TIERS; k++) start[k] = ts.n[k] ? ts.p[k][0].t : INT64_MAX;
	for (int k = COORD_HIST_TIERS - 1; k >= 0; k--) {
		int64_t until = INT64_MAX;
		for (int j = 0; j < k; j++)
			if (start[j] < until) until = start[j];
		for (size_t i = 0; i < ts.n[k]; i++)
			if (ts.p[k][i].t < until && ts.p[k][i].t >= since) r[n++] = ts.p[k][i];
	}
	tiers_free(&ts);
	if (!n) {
		free(r);
		r = NULL;
	}
	*out = r;
	return (int)n;
}

/* ---- writing ---- */

static int put_point(BookTxn *txn, const CoordHistPoint *p)
{
	uint8_t k[COORD_HIST_KEY_LEN], v[COORD_HIST_VAL_MAX];
	coord_hist_key(k, p->tier, p->t);
	return bookdb_kv_put(txn, BOOKDB_WORK, k, sizeof k, v, coord_hist_encode(v, p));
}

/* Folds the later point p into the aggregate *into (p itself when first):
 * counters and seconds summed, the rest from p, workers the most; the
 * aggregate keeps its own tier and time. */
static void fold(CoordHistPoint *into, const CoordHistPoint *p, bool first)
{
	if (first) {
		*into = *p;
		return;
	}
	uint64_t results = into->results + p->results, failed = into->failed + p->failed;
	uint32_t span = into->span_s + p->span_s, workers = into->workers;
	int64_t t = into->t;
	int tier = into->tier;
	*into = *p;
	into->results = results;
	into->failed = failed;
	into->span_s = span;
	if (workers > into->workers) into->workers = workers;
	into->t = t;
	into->tier = tier;
}

static bool has_point(const Tiers *ts, int tier, int64_t t)
{
	size_t lo = 0, hi = ts->n[tier];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ts->p[tier][mid].t < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ts->n[tier] && ts->p[tier][lo].t == t;
}

/* Makes the tier-k points of spans over by now (unix s) from tier k-1. */
static int coarsen(BookTxn *txn, Tiers *ts, int k, int64_t now, int step_s)
{
	int64_t span = coord_hist_span(k, step_s);
	const CoordHistPoint *src = ts->p[k - 1];
	size_t n = ts->n[k - 1];
	for (size_t i = 0; i < n;) {
		int64_t end = (src[i].t + span - 1) / span * span;
		CoordHistPoint agg;
		size_t j = i;
		for (; j < n && src[j].t <= end; j++) fold(&agg, &src[j], j == i);
		if (end <= now && !has_point(ts, k, end)) {
			agg.tier = k;
			agg.t = end;
			int rc = put_point(txn, &agg);
			if (rc < 0) return rc;
			/* Kept in order: ends only grow along src. */
			size_t at = ts->n[k];
			while (at > 0 && ts->p[k][at - 1].t > end) at--;
			if ((rc = tiers_add(ts, &agg)) < 0) return rc;
			memmove(&ts->p[k][at + 1], &ts->p[k][at],
			        (ts->n[k] - 1 - at) * sizeof *ts->p[k]);
			ts->p[k][at] = agg;
		}
		i = j;
	}
	return 0;
}

int coord_history_put(BookTxn *txn, CoordHistPoint *p, int step_s)
{
	uint8_t k[COORD_HIST_KEY_LEN];
	const void *v;
	size_t vl;
	p->tier = 0;
	coord_hist_key(k, 0, p->t);
	CoordHistPoint old;
	if (bookdb_kv_get(&v, &vl, txn, BOOKDB_WORK, k, sizeof k) == 0 &&
	    coord_hist_decode(&old, k, sizeof k, v, vl) == 1) {
		CoordHistPoint later = *p;
		fold(p, &old, true);
		fold(p, &later, false);
	}
	int rc = put_point(txn, p);
	if (rc < 0) return rc;
	Tiers ts;
	if ((rc = tiers_load(&ts, txn)) < 0) return rc;
	for (int t = 1; t < COORD_HIST_TIERS && rc == 0; t++)
		rc = coarsen(txn, &ts, t, p->t, step_s);
	for (int t = 0; t < COORD_HIST_TIERS && rc == 0; t++)
		for (size_t i = 0; i + KEEP[t] < ts.n[t] && rc == 0; i++) {
			coord_hist_key(k, t, ts.p[t][i].t);
			rc = bookdb_kv_del(txn, BOOKDB_WORK, k, sizeof k);
		}
	tiers_free(&ts);
	return rc == BOOKDB_ENOTFOUND ? 0 : rc;
}

/* ---- taking a point (the coordinator's service thread) ---- */

/* The book's view of the (first) root, through the writer's transaction:
 * the value of its best move after the last minimax (its analysis before
 * any; none when no move has a value) and the book's line from it, best move by best move as
 * /v1/line gives it (up to COORD_HIST_PV_MOVES plies, or a repetition). */
static int root_line(Coord *c, BookTxn *t, CoordHistPoint *p)
{
	p->root_value = COORD_HIST_NO_ROOT;
	if (plan_nroots(c->plan) < 1 ||
	    sfen_parse(c->pos, plan_root_sfen(c->plan, 0), NULL, NULL) < 0)
		return 0;
	snprintf(p->root, sizeof p->root, "%s", plan_root_sfen(c->plan, 0));
	p->nroots = plan_nroots(c->plan);
	/* Only a valued move is the book's (a game comment is not a value). */
	Move line[COORD_HIST_PV_MOVES];
	int value = 0, n = bookdb_line(line, COORD_HIST_PV_MOVES, &value, c->rec, t, c->pos);
	if (n < 0) return n;
	if (n > 0) p->root_value = value;
	char *q = p->pv;
	for (int i = 0; i < n; i++) {
		char mv[USI_MOVE_MAX];
		usi_move_write(line[i], mv);
		size_t len = strlen(mv);
		if ((size_t)(q - p->pv) + len + 1 > COORD_HIST_PV_MAX) break;
		if (q != p->pv) *q++ = ' ';
		memcpy(q, mv, len);
		q += len;
	}
	*q = 0;
	return 0;
}

int co_history_tick(Coord *c, int64_t now_ms, char *err)
{
	if (c->opt.history_seconds < 0) return 0;
	int step_s = c->opt.history_seconds > 0 ? (int)c->opt.history_seconds : 60;
	int64_t step = (int64_t)step_s * 1000, bucket = now_ms / step;
	if (!c->hist_bucket) {
		c->hist_bucket = bucket;
		c->hist_since_ms = now_ms;
		c->hist_results = c->results;
		c->hist_failed = c->failed;
		return 0;
	}
	if (bucket == c->hist_bucket) return 0;
	CoordHistPoint p = {.t = bucket * step_s};
	p.span_s = (uint32_t)((now_ms - c->hist_since_ms + 500) / 1000);
	p.results = c->results - c->hist_results;
	p.failed = c->failed - c->hist_failed;
	c->hist_bucket = bucket;
	c->hist_since_ms = now_ms;
	c->hist_results = c->results;
	c->hist_failed = c->failed;
	CoordStatus st;
	if (coord_status(c, &st, now_ms) < 0) {
		coord_status_free(&st);
		return co_broken(c, err, "taking a history point", BOOKDB_ENOMEM);
	}
	p.thought = st.book_thought;
	p.queue = (uint32_t)st.queue;
	p.leases = (uint32_t)st.leases_live;
	p.aside = (uint32_t)st.naside;
	p.workers = (uint32_t)st.nworkers;
	for (size_t i = 0; i < st.nworkers; i++) p.nps += st.workers[i].nps;
	coord_status_free(&st);
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0) rc = bookdb_count(&p.positions, t, BOOKDB_POS);
	if (rc == 0) rc = root_line(c, t, &p);
	if (rc == 0) rc = coord_history_put(t, &p, step_s);
	return rc < 0 ? co_broken(c, err, "writing the history", rc) : 0;
}

/*
 * cluster/coord_spot.c — spot checks of workers (docs/cluster.md, "Spot
 * checks"; the comparison in cluster/coord_spot.h).
 *
 * Any token can write the book's values, so a sample of each token's results
 * (opt.spot_new_rate of its first opt.spot_new_results, opt.spot_rate after)
 * is held back from the book and given, as an ordinary position, to a worker
 * of another token. The two results agree (coord_spot.h): the held one is
 * stored, and the token's results up to it are vouched for (its last good
 * check). They are apart: a third token's worker thinks the position too,
 * and whichever of the first two is apart from both others while they agree
 * is at fault (nobody, when the third sides with both or neither); its
 * result is not stored. A fault is a strike; a gross one (coord_spot.h), a
 * second within SPOT_STRIKE_WINDOW of the token's compared results, or a
 * mate claim the position itself disproves (a mate in 1 or 3 plies that is
 * none, being mated in 2 that is not) puts the token in quarantine: its
 * requests are refused, its leases returned, its results since its last good
 * check taken out of the book (their records' engine analyses removed, so
 * that minimax and the selector no longer use them) and queued to be thought
 * again, its held results given out as plain work, its checks of others
 * given to others. Noise at small budgets can put two honest results apart
 * now and then (docs/cluster.md has the figures); twice within a window, or
 * grossly, it does not.
 *
 * A held result's position stays leased in the selector and out of the book
 * until its check is settled, so nothing in the book tells a check from new
 * work. A check nobody can take (no other token seen for SPOT_WAIT_MS) is
 * given up: the held result is stored unchecked.
 *
 * Kept in the book's work database, written with the results they go with:
 *   "C" + 16-byte key     a check: u8 stage (1, or 2 after a disagreement),
 *                         u8 tries, u64 BE the result's number, u8 len +
 *                         token, u8 len + worker, u8 len + SFEN, the result
 *                         held; stage 2: u8 len + the checker's token, its
 *                         result. A result: u8 lines, each u8 len + USI move,
 *                         u8 mate, u32 BE score, u16 BE depth, u64 BE nodes.
 *   "P" + u8 len + token + u64 BE number
 *                         a result of the token stored since its last good
 *                         check: the 16-byte key
 *   "Q" + token           u8 version (1), u8 quarantined, u64 BE each: results,
 *                         the last good check's number, checks passed,
 *                         quarantined since (unix ms), results taken out,
 *                         results compared, faults, results compared at the
 *                         last fault; then u8 len + why it is in
 *                         quarantine, u8 len + its last fault
 *   "U" + 16-byte key     a position whose analysis was taken out, to think
 *                         again: u8 len + SFEN
 * Which lease holds a check is its lease record's (LPOS_CHECK).
 */
#include "cluster/coord_spot.h"
#include "cluster/coord_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/mate.h"
#include "shogi/be64.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/movegen.h"
#include "shogi/rng.h"

/* A check waits this long for a token that may take it before it is given up. */
#define SPOT_WAIT_MS (10 * 60 * 1000)
/* A second fault within this many compared results of a token's last one
 * puts it in quarantine. */
#define SPOT_STRIKE_WINDOW 100
/* At most this many of a token's results are kept for a quarantine to take
 * out (its "P" records: about 60 bytes each in the book, 24 in memory). */
#define SPOT_PROV_MAX 100000
#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- comparing ---- */

double coord_spot_chance(bool mate, int score)
{
	if (mate) return score > 0 ? 1.0 : 0.0;
	return 1.0 / (1.0 + exp(-score / 600.0));
}

static int line_value(const CoordLine *l)
{
	if (!l->mate) return l->score;
	return l->score > 0 ? VALUE_MATE - l->score : -VALUE_MATE - l->score;
}

static const CoordLine *best_line(const CoordResult *r)
{
	const CoordLine *b = &r->lines[0];
	for (int i = 1; i < r->nlines; i++)
		if (line_value(&r->lines[i]) > line_value(b)) b = &r->lines[i];
	return b;
}

static double chance(const CoordLine *l)
{
	return coord_spot_chance(l->mate, l->score);
}

static void score_text(char *out, size_t n, const CoordLine *l)
{
	if (l->mate)
		snprintf(out, n, "%s %d", l->score > 0 ? "mate in" : "mated in",
		         l->score > 0 ? l->score : -l->score);
	else
		snprintf(out, n, "%+d cp", l->score);
}

static const CoordLine *line_of(const CoordResult *r, const char *move)
{
	for (int i = 0; i < r->nlines; i++)
		if (!strcmp(r->lines[i].move, move)) return &r->lines[i];
	return NULL;
}

/* One way of the best-move rule: a's best move, in b's lines, worse than
 * b's best by more than tol. */
static bool move_refuted(const CoordResult *a, const CoordResult *b, double tol, char *why)
{
	const CoordLine *ba = best_line(a), *bb = best_line(b), *m = line_of(b, ba->move);
	if (!m || chance(bb) - chance(m) <= tol) return false;
	char s1[32], s2[32];
	score_text(s1, sizeof s1, m);
	score_text(s2, sizeof s2, bb);
	if (why)
		snprintf(why, COORD_SPOT_WHYLEN,
		         "best move %s is %s in the other's lines, against %s for %s", ba->move, s1,
		         s2, bb->move);
	return true;
}

/* One way of the mate rule: a mate for a side in x's best, y's best not
 * seeing that side ahead by COORD_SPOT_MATE_CP. */
static bool mate_unseen(const CoordLine *x, const CoordLine *y)
{
	if (!x->mate || y->mate) return false;
	return x->score > 0 ? y->score < COORD_SPOT_MATE_CP : y->score > -COORD_SPOT_MATE_CP;
}

/* The side to move ahead by COORD_SPOT_MATE_CP or a mate (1), behind by as
 * much (-1), or neither (0). */
static int decisive(const CoordLine *l)
{
	int v = line_value(l);
	return v >= COORD_SPOT_MATE_CP ? 1 : v <= -COORD_SPOT_MATE_CP ? -1 : 0;
}

int coord_spot_compare(const CoordResult *a, const CoordResult *b, double tol, char *why)
{
	if (why) why[0] = 0;
	if (a->failed || b->failed || a->nlines < 1 || b->nlines < 1) {
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "a result without a line");
		return COORD_SPOT_APART;
	}
	const CoordLine *ba = best_line(a), *bb = best_line(b);
	char s1[32], s2[32];
	score_text(s1, sizeof s1, ba);
	score_text(s2, sizeof s2, bb);
	int lo = ba->depth < bb->depth ? ba->depth : bb->depth;
	int hi = ba->depth < bb->depth ? bb->depth : ba->depth;
	if (lo > 0 && hi > 2 * lo + 8 && !(ba->mate && bb->mate)) {
		if (why)
			snprintf(why, COORD_SPOT_WHYLEN, "%s at depth %d against %s at depth %d",
			         s1, ba->depth, s2, bb->depth);
		return COORD_SPOT_GROSS;
	}
	if (decisive(ba) * decisive(bb) < 0) {
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s against %s", s1, s2);
		return COORD_SPOT_GROSS;
	}
	double wa = chance(ba), wb = chance(bb);
	if (fabs(wa - wb) > tol) {
		if (why)
			snprintf(
			    why, COORD_SPOT_WHYLEN,
			    "%s against %s: winning chances %.2f and %.2f, more than %.2f apart",
			    s1, s2, wa, wb, tol);
		return COORD_SPOT_APART;
	}
	if (mate_unseen(ba, bb) || mate_unseen(bb, ba)) {
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s against %s: a mate not seen", s1, s2);
		return COORD_SPOT_APART;
	}
	if (move_refuted(a, b, tol, why) || move_refuted(b, a, tol, why)) return COORD_SPOT_APART;
	return COORD_SPOT_AGREE;
}

/* x only saw less than y and z: no mate where both report one for the same
 * side, its own score on that side. */
static bool saw_less(const CoordResult *x, const CoordResult *y, const CoordResult *z)
{
	const CoordLine *bx = best_line(x), *by = best_line(y), *bz = best_line(z);
	if (bx->mate || !by->mate || !bz->mate || (by->score > 0) != (bz->score > 0)) return false;
	return by->score > 0 ? bx->score > 0 : bx->score < 0;
}

int coord_spot_verdict(const CoordResult *a, const CoordResult *b, const CoordResult *c, double tol,
                       bool *gross, char *why)
{
	char wa[COORD_SPOT_WHYLEN], wb[COORD_SPOT_WHYLEN];
	int ac = coord_spot_compare(a, c, tol, wa), bc = coord_spot_compare(b, c, tol, wb);
	*gross = false;
	if (why) why[0] = 0;
	if (ac != COORD_SPOT_AGREE && bc == COORD_SPOT_AGREE && !saw_less(a, b, c)) {
		*gross = ac == COORD_SPOT_GROSS;
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s", wa);
		return 0;
	}
	if (ac == COORD_SPOT_AGREE && bc != COORD_SPOT_AGREE && !saw_less(b, a, c)) {
		*gross = bc == COORD_SPOT_GROSS;
		if (why) snprintf(why, COORD_SPOT_WHYLEN, "%s", wb);
		return 1;
	}
	return -1;
}

/* ---- tokens ---- */

bool co_spot_on(const Coord *c)
{
	return c->opt.spot_rate > 0 || c->opt.spot_new_rate > 0;
}

static SpotToken *token_get(Coord *c, const char *name, bool create)
{
	for (size_t i = 0; i < c->nstok; i++)
		if (!strcmp(c->stok[i].name, name)) return &c->stok[i];
	if (!create || array_grow((void **)&c->stok, &c->capstok, c->nstok + 1, sizeof *c->stok, 8))
		return NULL;
	SpotToken *t = &c->stok[c->nstok++];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	return t;
}

void co_spot_seen(Coord *c, const char *token, int64_t now)
{
	if (!co_spot_on(c) || !token) return;
	SpotToken *t = token_get(c, token, true);
	if (t) t->last_seen_ms = now;
}

/* A token other than a and b (b may be NULL), not in quarantine, asked for
 * work lately: one that may take a check. */
static bool other_token(const Coord *c, const char *a, const char *b, int64_t now)
{
	for (size_t i = 0; i < c->nstok; i++) {
		const SpotToken *t = &c->stok[i];
		if (t->quarantined || !t->last_seen_ms || now - t->last_seen_ms >= SPOT_WAIT_MS)
			continue;
		if (strcmp(t->name, a) && (!b || strcmp(t->name, b))) return true;
	}
	return false;
}

bool coord_quarantined(Coord *c, const char *token, char *err)
{
	SpotToken *t = token ? token_get(c, token, false) : NULL;
	if (!t || !t->quarantined) return false;
	char when[32] = "?";
	time_t s = (time_t)(t->quarantined_ms / 1000);
	struct tm tm;
	if (gmtime_r(&s, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	errmsg_set(err, COORD_ERRLEN, COORD_EQUARANTINE,
	           "token '%s' is in quarantine since %s (%llu of its latest results taken out "
	           "of the book to be thought again): %s; a new token lets the machine work again",
	           t->name, when, (unsigned long long)t->taken_out, t->reason);
	return true;
}

/* ---- records ---- */

#define RESULT_MAX (1 + COORD_MAX_LINES * (1 + USI_MOVE_MAX + 8 + 1 + 4 + 2 + 8))

static size_t put_result(uint8_t *p, const CoordResult *r)
{
	uint8_t *q = p;
	*q++ = (uint8_t)r->nlines;
	for (int i = 0; i < r->nlines; i++) {
		const CoordLine *l = &r->lines[i];
		q += co_put_str(q, l->move);
		*q++ = l->mate;
		uint32_t s = (uint32_t)l->score;
		for (int k = 0; k < 4; k++) *q++ = (uint8_t)(s >> (24 - 8 * k));
		*q++ = (uint8_t)(l->depth >> 8);
		*q++ = (uint8_t)l->depth;
		be64_put(q, l->nodes);
		q += 8;
	}
	return (size_t)(q - p);
}

static int get_result(CoordResult *r, Key key, const uint8_t **p, const uint8_t *end)
{
	memset(r, 0, sizeof *r);
	r->key = key;
	if (*p >= end) return -1;
	r->nlines = *(*p)++;
	if (r->nlines < 1 || r->nlines > COORD_MAX_LINES) return -1;
	for (int i = 0; i < r->nlines; i++) {
		CoordLine *l = &r->lines[i];
		if (co_get_str(l->move, sizeof l->move, p, end) < 0 || end - *p < 15) return -1;
		const uint8_t *q = *p;
		l->mate = q[0] != 0;
		l->score = (int)(int32_t)((uint32_t)q[1] << 24 | (uint32_t)q[2] << 16 |
		                          (uint32_t)q[3] << 8 | q[4]);
		l->depth = q[5] << 8 | q[6];
		l->nodes = be64_get(q + 7);
		*p += 15;
	}
	return 0;
}

static int work_put(Coord *c, const void *k, size_t kl, const void *v, size_t vl, char *err)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0) rc = bookdb_kv_put(t, BOOKDB_WORK, k, kl, v, vl);
	return rc < 0 ? co_broken(c, err, "writing the spot checks", rc) : 0;
}

static int work_del(Coord *c, const void *k, size_t kl, char *err)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0) rc = bookdb_kv_del(t, BOOKDB_WORK, k, kl);
	return rc < 0 && rc != BOOKDB_ENOTFOUND ? co_broken(c, err, "writing the spot checks", rc)
	                                        : 0;
}

static int check_put(Coord *c, const SpotCheck *k, char *err)
{
	size_t need = 2 + 8 + 3 * 256 + SFEN_MAX + 2 * RESULT_MAX + 256;
	if (array_grow((void **)&c->buf, &c->capbuf, need, 1, 4096))
		return co_broken(c, err, "writing a spot check", BOOKDB_ENOMEM);
	uint8_t *p = c->buf;
	*p++ = k->stage;
	*p++ = k->tries;
	be64_put(p, k->seq);
	p += 8;
	p += co_put_str(p, k->token);
	p += co_put_str(p, k->worker);
	p += co_put_str(p, k->sfen);
	p += put_result(p, k->orig);
	if (k->stage == 2) {
		p += co_put_str(p, k->checker);
		p += put_result(p, k->second);
	}
	uint8_t key[17] = {'C'};
	key_to_bytes(k->key, key + 1);
	return work_put(c, key, sizeof key, c->buf, (size_t)(p - c->buf), err);
}

static size_t prov_key(uint8_t *out, const char *token, uint64_t seq)
{
	size_t n = strlen(token);
	out[0] = 'P';
	out[1] = (uint8_t)n;
	memcpy(out + 2, token, n);
	be64_put(out + 2 + n, seq);
	return 2 + n + 8;
}

static int token_put(Coord *c, const SpotToken *t, char *err)
{
	uint8_t v[2 + 8 * 8 + 2 * (1 + COORD_REASON_MAX)], *p = v;
	*p++ = 1;
	*p++ = t->quarantined;
	const uint64_t f[8] = {t->results,   t->good_seq, t->passed,  (uint64_t)t->quarantined_ms,
	                       t->taken_out, t->checks,   t->strikes, t->strike_at};
	for (int i = 0; i < 8; i++, p += 8) be64_put(p, f[i]);
	p += co_put_str(p, t->reason);
	p += co_put_str(p, t->fault);
	uint8_t k[1 + COORD_NAME_MAX] = {'Q'};
	size_t n = strlen(t->name);
	memcpy(k + 1, t->name, n);
	return work_put(c, k, 1 + n, v, (size_t)(p - v), err);
}

static int redo_put(Coord *c, const KeyState *ks, char *err)
{
	uint8_t k[17] = {'U'}, v[1 + SFEN_MAX];
	key_to_bytes(ks->key, k + 1);
	int n = co_put_str(v, ks->sfen);
	return work_put(c, k, sizeof k, v, (size_t)n, err);
}

int co_redo_del(Coord *c, Key key, char *err)
{
	uint8_t k[17] = {'U'};
	key_to_bytes(key, k + 1);
	return work_del(c, k, sizeof k, err);
}

int co_spot_flush(Coord *c, char *err)
{
	for (size_t i = 0; i < c->nstok; i++) {
		if (!c->stok[i].dirty) continue;
		int rc = token_put(c, &c->stok[i], err);
		if (rc < 0) return rc;
		c->stok[i].dirty = false;
	}
	return 0;
}

/* ---- the checks ---- */

static SpotCheck *check_get(Coord *c, Key k)
{
	uint32_t i = keymap_find(&c->check_map, c->checks, k);
	return i == KEYMAP_NONE ? NULL : &c->checks[i];
}

bool co_spot_check_held(Coord *c, Key k)
{
	return c->nchecks && check_get(c, k);
}

/* Forgets check k (its record deleted). */
static int check_drop(Coord *c, SpotCheck *k, char *err)
{
	uint8_t key[17] = {'C'};
	key_to_bytes(k->key, key + 1);
	free(k->orig);
	free(k->second);
	co_dense_del(&c->check_map, c->checks, &c->nchecks, sizeof *c->checks,
	             (size_t)(k - c->checks));
	return work_del(c, key, sizeof key, err);
}

/* A copy of r with its moves in canonical USI (they were checked legal in
 * sfen), or NULL when memory runs out. */
static CoordResult *canon_copy(Coord *c, const char *sfen, const CoordResult *r)
{
	CoordResult *o = malloc(sizeof *o);
	if (!o) return NULL;
	*o = *r;
	if (sfen_parse(c->pos, sfen, NULL, NULL) < 0) return o;
	for (int i = 0; i < o->nlines; i++) {
		Move m;
		if (usi_move_parse_legal(&m, c->pos, o->lines[i].move, strlen(o->lines[i].move),
		                         NULL) == 0)
			usi_move_write(m, o->lines[i].move);
	}
	return o;
}

/* A stored result of token t: numbered, kept as provisional until a good
 * check vouches for it. */
/* The token's provisional results no longer kept: vouched for by a good
 * check and older than its last opt.spot_keep results, or beyond the last
 * SPOT_PROV_MAX (a token never checked: alone, or a cluster of one token). */
static int forget_vouched(Coord *c, SpotToken *t, char *err)
{
	while (t->prov_at < t->nprov &&
	       ((t->prov[t->prov_at].seq <= t->good_seq &&
	         t->results - t->prov[t->prov_at].seq >= c->opt.spot_keep) ||
	        t->nprov - t->prov_at > SPOT_PROV_MAX)) {
		uint8_t k[2 + COORD_NAME_MAX + 8];
		int rc = work_del(c, k, prov_key(k, t->name, t->prov[t->prov_at].seq), err);
		if (rc < 0) return rc;
		t->prov_at++;
	}
	return 0;
}

static int note(Coord *c, SpotToken *t, Key key, char *err)
{
	uint64_t seq = ++t->results;
	t->dirty = true;
	if (t->prov_at > 64 && t->prov_at * 2 > t->nprov) {
		memmove(t->prov, t->prov + t->prov_at, (t->nprov - t->prov_at) * sizeof *t->prov);
		t->nprov -= t->prov_at;
		t->prov_at = 0;
	}
	if (array_grow((void **)&t->prov, &t->capprov, t->nprov + 1, sizeof *t->prov, 64))
		return co_broken(c, err, "spot checks", BOOKDB_ENOMEM);
	t->prov[t->nprov++] = (SpotProv){seq, key};
	uint8_t k[2 + COORD_NAME_MAX + 8], v[16];
	key_to_bytes(key, v);
	int rc = work_put(c, k, prov_key(k, t->name, seq), v, sizeof v, err);
	return rc < 0 ? rc : forget_vouched(c, t, err);
}

/* A good check of the token's result number seq: its results up to it are
 * vouched for (and no longer kept once older than its last spot_keep). */
static int good(Coord *c, const char *token, uint64_t seq, char *err)
{
	SpotToken *t = token_get(c, token, false);
	if (!t) return 0;
	t->passed++;
	t->dirty = true;
	if (seq > t->good_seq) t->good_seq = seq;
	return forget_vouched(c, t, err);
}

int co_spot_result(Coord *c, Lease *l, int i, const CoordResult *r, const CoordWorker *w,
                   int64_t now, char *err)
{
	const char *sfen = l->pos[i].sfen;
	SpotToken *t = NULL;
	if (co_spot_on(c) && !(t = token_get(c, w->token ? w->token : "", true)))
		return co_broken(c, err, "spot checks", BOOKDB_ENOMEM);
	double rate = !t                                     ? 0
	              : t->results < c->opt.spot_new_results ? c->opt.spot_new_rate
	                                                     : c->opt.spot_rate;
	if (rate > 0 && other_token(c, t->name, NULL, now) && rng_unit(&c->spot_rng) < rate) {
		/* Held back: the position stays leased in the selector. */
		SpotCheck *k = co_dense_add(&c->check_map, (void **)&c->checks, &c->capchecks,
		                            &c->nchecks, sizeof *c->checks, r->key);
		if (!k || !(k->orig = canon_copy(c, sfen, r))) {
			if (k)
				co_dense_del(&c->check_map, c->checks, &c->nchecks,
				             sizeof *c->checks, (size_t)(k - c->checks));
			return co_broken(c, err, "spot checks", BOOKDB_ENOMEM);
		}
		k->stage = 1;
		k->seq = ++t->results;
		t->dirty = true;
		k->since_ms = now;
		snprintf(k->token, sizeof k->token, "%s", t->name);
		snprintf(k->worker, sizeof k->worker, "%s", w->name ? w->name : "");
		snprintf(k->sfen, sizeof k->sfen, "%s", sfen);
		int rc = co_key_done(c, r->key, err);
		return rc < 0 ? rc : check_put(c, k, err);
	}
	int rc = co_store(c, sfen, r, now, err);
	if (rc < 0 || !t) return rc;
	return note(c, t, r->key, err);
}

int co_spot_take(Coord *c, Lease *l, int max, const char *token, char *err)
{
	(void)err;
	for (size_t i = 0; i < c->nchecks && l->n < max; i++) {
		SpotCheck *k = &c->checks[i];
		if (k->lease || !strcmp(k->token, token) ||
		    (k->stage == 2 && !strcmp(k->checker, token)))
			continue;
		LPos *lp = &l->pos[l->n++];
		lp->key = k->key;
		lp->state = POS_PENDING;
		lp->check = true;
		memcpy(lp->sfen, k->sfen, sizeof lp->sfen);
		k->lease = l->key.hi;
	}
	return 0;
}

/* Check k settled: it is forgotten and result r (the held one, or another's
 * that replaces it) stored; credit: the token whose provisional result r
 * becomes ("" for the held one, whose check vouched for it or was given up). */
static int settle(Coord *c, SpotCheck *k, const CoordResult *r, const char *credit, int64_t now,
                  char *err)
{
	CoordResult *res = c->spot_tmp;
	*res = *r;
	char sfen[SFEN_MAX];
	memcpy(sfen, k->sfen, sizeof sfen);
	int rc = check_drop(c, k, err);
	if (rc == 0) rc = co_store(c, sfen, res, now, err);
	SpotToken *t = credit[0] ? token_get(c, credit, true) : NULL;
	if (rc == 0 && t) rc = note(c, t, res->key, err);
	return rc;
}

/* Check k given up (no token to take it, or its tries used): its held
 * result stored without a verdict. */
static int give_up(Coord *c, SpotCheck *k, int64_t now, char *err)
{
	if (k->stage == 1)
		c->spot_unchecked++;
	else
		c->spot_undecided++;
	return settle(c, k, k->orig, "", now, err);
}

/* A token at fault (spot_answer's verdict): a strike; a gross one, or a
 * second within SPOT_STRIKE_WINDOW of its compared results, puts it in
 * quarantine. */
static int fault(Coord *c, const char *name, bool gross, const char *reason, int64_t now, char *err)
{
	SpotToken *t = token_get(c, name, true);
	if (!t) return co_broken(c, err, "spot checks", BOOKDB_ENOMEM);
	bool again = t->strike_at && t->checks - t->strike_at <= SPOT_STRIKE_WINDOW;
	t->strikes++;
	t->strike_at = t->checks ? t->checks : 1;
	t->dirty = true;
	snprintf(t->fault, sizeof t->fault, "%s", reason);
	c->spot_strikes++;
	if (!gross && !again) return 0;
	char why[COORD_REASON_MAX + 1];
	snprintf(why, sizeof why, "%s%s", reason,
	         gross ? "" : "; a second time within its last " STR(SPOT_STRIKE_WINDOW) " checks");
	return co_spot_quarantine(c, name, why, now, err);
}

/* One more result of the token compared in a check. */
static void compared(Coord *c, const char *name)
{
	SpotToken *t = token_get(c, name, false);
	if (t) t->checks++, t->dirty = true;
}

int co_spot_answer(Coord *c, Lease *l, int i, const CoordResult *r, const CoordWorker *w,
                   int64_t now, char *err)
{
	(void)i;
	SpotCheck *k = check_get(c, r->key);
	if (!k || k->lease != l->key.hi) return 0;
	k->lease = 0;
	const char *me = w->token ? w->token : "";
	CoordResult *mine = canon_copy(c, k->sfen, r);
	if (!mine) return co_broken(c, err, "spot checks", BOOKDB_ENOMEM);
	double tol = c->opt.spot_tolerance;
	char why[COORD_SPOT_WHYLEN], hex[KEY_HEX_LEN];
	key_to_hex(k->key, hex);
	char orig[COORD_NAME_MAX + 1], checker[COORD_NAME_MAX + 1];
	snprintf(orig, sizeof orig, "%s", k->token);
	snprintf(checker, sizeof checker, "%s", k->checker);
	uint64_t seq = k->seq;
	int rc;
	if (k->stage == 1) {
		if (coord_spot_compare(k->orig, mine, tol, why) == COORD_SPOT_AGREE) {
			c->spot_passed++;
			compared(c, orig);
			rc = settle(c, k, k->orig, "", now, err);
			if (rc == 0) rc = good(c, orig, seq, err);
			free(mine);
			return rc < 0 ? rc : 1;
		}
		/* A third opinion decides. */
		c->spot_disagreed++;
		k->stage = 2;
		k->tries = 0;
		k->since_ms = now;
		snprintf(k->checker, sizeof k->checker, "%s", me);
		k->second = mine;
		rc = check_put(c, k, err);
		return rc < 0 ? rc : 1;
	}
	bool gross;
	int v = coord_spot_verdict(k->orig, k->second, mine, tol, &gross, why);
	bool ac = v != 0 && coord_spot_compare(k->orig, mine, tol, NULL) == COORD_SPOT_AGREE;
	compared(c, orig);
	compared(c, checker);
	char reason[COORD_REASON_MAX + 1];
	if (v == 0) {
		/* The held result is the odd one: the third one's goes in. */
		snprintf(reason, sizeof reason,
		         "its result for %.32s is apart from those of tokens '%.40s' and '%.40s': "
		         "%.120s",
		         hex, checker, me, why);
		rc = settle(c, k, mine, me, now, err);
		if (rc == 0) rc = fault(c, orig, gross, reason, now, err);
	} else {
		if (v == 1)
			snprintf(
			    reason, sizeof reason,
			    "its check of %.32s is apart from the results of tokens '%.40s' and "
			    "'%.40s': %.120s",
			    hex, orig, me, why);
		else
			c->spot_undecided++;
		rc = settle(c, k, k->orig, "", now, err);
		if (rc == 0 && ac) {
			c->spot_passed++;
			rc = good(c, orig, seq, err);
		}
		if (rc == 0 && v == 1) rc = fault(c, checker, gross, reason, now, err);
	}
	free(mine);
	return rc < 0 ? rc : 1;
}

int co_spot_return(Coord *c, uint64_t lease, Key key, bool tried, int64_t now, char *err)
{
	SpotCheck *k = check_get(c, key);
	if (!k || k->lease != lease) return 0;
	k->lease = 0;
	k->since_ms = now;
	if (tried && ++k->tries >= COORD_MAX_TRIES) return give_up(c, k, now, err);
	return tried ? check_put(c, k, err) : 0;
}

int co_spot_tick(Coord *c, int64_t now, char *err)
{
	/* Backwards: a check given up is replaced by the last, already seen. */
	for (size_t i = c->nchecks; i-- > 0;) {
		SpotCheck *k = &c->checks[i];
		if (k->lease) continue;
		if (!k->since_ms) k->since_ms = now; /* restored: the clock starts now */
		if (now - k->since_ms < SPOT_WAIT_MS ||
		    other_token(c, k->token, k->stage == 2 ? k->checker : NULL, now))
			continue;
		int rc = give_up(c, k, now, err);
		if (rc < 0) return rc;
	}
	return 0;
}

/* ---- short mates the coordinator verifies itself ---- */

int co_spot_disproved(Coord *c, const CoordResult *r, char *why)
{
	Position *pos = c->pos;
	for (int i = 0; i < r->nlines; i++) {
		const CoordLine *l = &r->lines[i];
		if (!l->mate || (l->score != 1 && l->score != 3 && l->score != -2)) continue;
		Move m;
		if (usi_move_parse_legal(&m, pos, l->move, strlen(l->move), NULL) < 0) continue;
		pos_do_move(pos, m);
		bool holds = true;
		if (l->score == 1) {
			holds = movegen_count(pos) == 0;
		} else if (l->score == -2) {
			holds = mate_in_1(pos) != MOVE_NONE;
		} else {
			Move reply[MOVEGEN_MAX];
			int n = movegen_legal(pos, reply);
			for (int k = 0; k < n && holds; k++) {
				pos_do_move(pos, reply[k]);
				holds = mate_in_1(pos) != MOVE_NONE;
				pos_undo_move(pos);
			}
		}
		pos_undo_move(pos);
		if (!holds) {
			c->spot_disproved++;
			int n = l->score > 0 ? l->score : -l->score;
			errmsg_set(why, COORD_ERRLEN, 0,
			           "%s, said to %s in %d %s, does not: the position disproves it",
			           l->move, l->score > 0 ? "mate" : "be mated", n,
			           n == 1 ? "ply" : "plies");
			return 1;
		}
	}
	return 0;
}

/* ---- quarantine ---- */

/* A held result of a token in quarantine: the position becomes plain work,
 * leased where its check is, else queued. */
static int check_to_work(Coord *c, SpotCheck *k, char *err)
{
	Key key = k->key;
	uint64_t lease = k->lease;
	char sfen[SFEN_MAX], worker[COORD_NAME_MAX + 1];
	memcpy(sfen, k->sfen, sizeof sfen);
	memcpy(worker, k->worker, sizeof worker);
	int rc = check_drop(c, k, err);
	if (rc < 0) return rc;
	KeyState *ks = co_key_get(c, key);
	if (!ks && !(ks = co_key_new(c, key)))
		return co_broken(c, err, "quarantine", BOOKDB_ENOMEM);
	memcpy(ks->sfen, sfen, sizeof ks->sfen);
	snprintf(ks->last, sizeof ks->last, "%s", worker);
	Lease *l = lease ? co_lease_get(c, lease) : NULL;
	if (l) {
		for (int i = 0; i < l->n; i++)
			if (key_equal(l->pos[i].key, key)) l->pos[i].check = false;
		ks->where = WHERE_LEASED;
		ks->lease = lease;
		return co_lease_put(c, l, err);
	}
	return co_queue_push(c, ks) < 0 ? co_broken(c, err, "quarantine", BOOKDB_ENOMEM) : 0;
}

/* The analysis of position key taken out of the book (its engine
 * evaluations and thought mark; moves left without games or marks
 * dropped) and the position queued to be thought again. 1 when it was
 * thought, 0 when there was nothing to take out. */
static int untrust(Coord *c, Key key, char *err)
{
	BookRecord *rec = c->rec;
	int g = bookdb_writer_get(rec, c->w, key);
	if (g == BOOKDB_ENOTFOUND) return 0;
	if (g < 0) return co_broken(c, err, "reading a record to take out", g);
	if (!(rec->flags & BOOKDB_REC_THOUGHT)) return 0;
	int n = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		BookMove *m = &rec->moves[i];
		if ((m->flags & BOOKDB_MOVE_EVAL) && m->source == BOOKDB_SOURCE_ENGINE) {
			m->flags &= (uint8_t)~BOOKDB_MOVE_EVAL;
			m->eval = 0;
			m->depth = 0;
			m->nodes = 0;
		}
		if (m->flags & (BOOKDB_MOVE_EVAL | BOOKDB_MOVE_STATS | BOOKDB_MOVE_AVOIDED))
			rec->moves[n++] = *m;
	}
	rec->nmoves = (uint16_t)n;
	rec->flags &= (uint8_t)~BOOKDB_REC_THOUGHT;
	rec->think_depth = 0;
	int rc = bookdb_writer_put(c->w, key, rec);
	if (rc < 0) return co_broken(c, err, "taking a result out", rc);
	/* The selector's node is a leaf again, leased while it waits. */
	if (sel_add_result(c->sel, key, rec) < 0 || sel_lease(c->sel, key) < 0 ||
	    co_journal_note(c, key) < 0)
		return co_broken(c, err, "taking a result out", BOOKDB_ENOMEM);
	KeyState *ks = co_key_get(c, key);
	if (!ks) {
		if (!(ks = co_key_new(c, key)))
			return co_broken(c, err, "quarantine", BOOKDB_ENOMEM);
		if (bookdb_record_position(c->pos, rec, NULL) < 0)
			return co_broken(c, err, "a record taken out", BOOKDB_ECORRUPT);
		sfen_write(c->pos, ks->sfen, sizeof ks->sfen);
		if (co_queue_push(c, ks) < 0) return co_broken(c, err, "quarantine", BOOKDB_ENOMEM);
	}
	ks->redo = true;
	rc = redo_put(c, ks, err);
	return rc < 0 ? rc : 1;
}

int co_spot_quarantine(Coord *c, const char *token, const char *reason, int64_t now, char *err)
{
	const char *name = token ? token : "";
	SpotToken *t = token_get(c, name, true);
	if (!t) return co_broken(c, err, "quarantine", BOOKDB_ENOMEM);
	if (t->quarantined) return 0;
	t->quarantined = true;
	t->quarantined_ms = now;
	t->dirty = true;
	snprintf(t->reason, sizeof t->reason, "%s", reason);
	c->spot_quarantines++;
	int rc = 0;
	/* Its leases come back at once; its held results become plain work;
	 * its checks of others wait for others. */
	for (size_t i = 0; i < c->nleases && rc == 0; i++)
		if (!strcmp(c->leases[i].token, name))
			rc = co_lease_return(c, &c->leases[i], now, err);
	for (size_t i = c->nchecks; rc == 0 && i-- > 0;) {
		SpotCheck *k = &c->checks[i];
		if (!strcmp(k->token, name)) {
			rc = check_to_work(c, k, err);
		} else if (k->stage == 2 && !strcmp(k->checker, name)) {
			k->stage = 1;
			k->checker[0] = 0;
			free(k->second);
			k->second = NULL;
			rc = check_put(c, k, err);
		}
	}
	/* Its results since its last good check, and its last spot_keep ones,
	 * leave the book. */
	uint64_t taken = 0;
	for (size_t i = t->prov_at; i < t->nprov && rc == 0; i++) {
		uint8_t k[2 + COORD_NAME_MAX + 8];
		rc = untrust(c, t->prov[i].key, err);
		if (rc > 0) taken++;
		if (rc >= 0) rc = work_del(c, k, prov_key(k, name, t->prov[i].seq), err);
	}
	t = token_get(c, name, false); /* the array did not move, but be plain */
	t->nprov = t->prov_at = 0;
	t->taken_out = taken;
	c->spot_taken_out += taken;
	return rc < 0 ? rc : 0;
}

/* ---- restoring, status ---- */

/* A "C" record read back: the check, its position leased in the selector. */
static int restore_check(Coord *c, Key key, const uint8_t *p, const uint8_t *end)
{
	if (check_get(c, key)) return COORD_EBOOK;
	SpotCheck *s = co_dense_add(&c->check_map, (void **)&c->checks, &c->capchecks, &c->nchecks,
	                            sizeof *c->checks, key);
	if (!s) return COORD_ENOMEM;
	int rc = COORD_ENOMEM;
	if (!(s->orig = malloc(sizeof *s->orig))) goto fail;
	rc = COORD_EBOOK;
	if (end - p < 10) goto fail;
	s->stage = p[0];
	s->tries = p[1];
	s->seq = be64_get(p + 2);
	p += 10;
	if ((s->stage != 1 && s->stage != 2) ||
	    co_get_str(s->token, sizeof s->token, &p, end) < 0 ||
	    co_get_str(s->worker, sizeof s->worker, &p, end) < 0 ||
	    co_get_str(s->sfen, sizeof s->sfen, &p, end) < 0 ||
	    get_result(s->orig, key, &p, end) < 0)
		goto fail;
	if (s->stage == 2) {
		rc = COORD_ENOMEM;
		if (!(s->second = malloc(sizeof *s->second))) goto fail;
		rc = COORD_EBOOK;
		if (co_get_str(s->checker, sizeof s->checker, &p, end) < 0 ||
		    get_result(s->second, key, &p, end) < 0)
			goto fail;
	}
	if (p != end) goto fail;
	rc = COORD_ENOMEM;
	if (!token_get(c, s->token, true) || sel_lease(c->sel, key) < 0) goto fail;
	return 1;
fail:
	free(s->orig);
	free(s->second);
	co_dense_del(&c->check_map, c->checks, &c->nchecks, sizeof *c->checks,
	             (size_t)(s - c->checks));
	return rc;
}

int co_spot_restore(Coord *c, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	const uint8_t *p = v, *end = v + vl;
	if (kl == 17 && k[0] == 'C') return restore_check(c, key_from_bytes(k + 1), p, end);
	if (kl >= 10 && k[0] == 'P') {
		size_t n = k[1];
		if (kl != 2 + n + 8 || n > COORD_NAME_MAX || vl != 16) return COORD_EBOOK;
		char name[COORD_NAME_MAX + 1];
		memcpy(name, k + 2, n);
		name[n] = 0;
		SpotToken *t = token_get(c, name, true);
		if (!t ||
		    array_grow((void **)&t->prov, &t->capprov, t->nprov + 1, sizeof *t->prov, 64))
			return COORD_ENOMEM;
		t->prov[t->nprov++] = (SpotProv){be64_get(k + 2 + n), key_from_bytes(v)};
		return 1;
	}
	if (kl >= 1 && kl <= 1 + COORD_NAME_MAX && k[0] == 'Q') {
		char name[COORD_NAME_MAX + 1];
		memcpy(name, k + 1, kl - 1);
		name[kl - 1] = 0;
		SpotToken *t = token_get(c, name, true);
		if (!t) return COORD_ENOMEM;
		if (vl < 2 + 8 * 8 || p[0] != 1) return COORD_EBOOK;
		t->quarantined = p[1] != 0;
		p += 2;
		uint64_t *f[8] = {&t->results,   &t->good_seq, &t->passed,  NULL,
		                  &t->taken_out, &t->checks,   &t->strikes, &t->strike_at};
		for (int i = 0; i < 8; i++, p += 8)
			if (f[i]) *f[i] = be64_get(p);
		t->quarantined_ms = (int64_t)be64_get(p - 5 * 8);
		if (co_get_str(t->reason, sizeof t->reason, &p, end) < 0 ||
		    co_get_str(t->fault, sizeof t->fault, &p, end) < 0 || p != end)
			return COORD_EBOOK;
		return 1;
	}
	if (kl == 17 && k[0] == 'U') {
		Key key = key_from_bytes(k + 1);
		char sfen[SFEN_MAX];
		if (co_get_str(sfen, sizeof sfen, &p, end) < 0 || p != end) return COORD_EBOOK;
		if (sel_is_thought(c->sel, key)) return 1; /* cannot happen: deleted when stored */
		KeyState *ks = co_key_get(c, key);
		if (!ks) {
			if (!(ks = co_key_new(c, key)) || sel_lease(c->sel, key) < 0 ||
			    co_queue_push(c, ks) < 0)
				return COORD_ENOMEM;
			memcpy(ks->sfen, sfen, sizeof ks->sfen);
		}
		ks->redo = true;
		return 1;
	}
	return 0;
}

void co_spot_restored(Coord *c)
{
	for (size_t i = 0; i < c->nchecks; i++) c->checks[i].since_ms = 0;
}

int co_spot_status(Coord *c, CoordStatus *out)
{
	out->spot = co_spot_on(c);
	out->spot_rate = c->opt.spot_rate;
	out->spot_new_rate = c->opt.spot_new_rate;
	out->spot_new_results = c->opt.spot_new_results;
	out->spot_tolerance = c->opt.spot_tolerance;
	for (size_t i = 0; i < c->nchecks; i++) {
		const SpotCheck *k = &c->checks[i];
		if (k->lease)
			out->spot_leased++;
		else if (k->stage == 2)
			out->spot_deciding++;
		else
			out->spot_waiting++;
	}
	out->spot_passed = c->spot_passed;
	out->spot_disagreed = c->spot_disagreed;
	out->spot_undecided = c->spot_undecided;
	out->spot_unchecked = c->spot_unchecked;
	out->spot_disproved = c->spot_disproved;
	out->spot_strikes = c->spot_strikes;
	out->spot_quarantines = c->spot_quarantines;
	out->spot_taken_out = c->spot_taken_out;
	if (!c->nstok) return 0;
	if (!(out->tokens = calloc(c->nstok, sizeof *out->tokens))) return COORD_ENOMEM;
	for (size_t i = 0; i < c->nstok; i++) {
		const SpotToken *t = &c->stok[i];
		CoordTokenTrust *o = &out->tokens[out->ntokens++];
		snprintf(o->token, sizeof o->token, "%s", t->name);
		o->results = t->results;
		o->passed = t->passed;
		o->strikes = t->strikes;
		o->compared = t->checks;
		for (size_t j = t->prov_at; j < t->nprov; j++)
			o->unverified += t->prov[j].seq > t->good_seq;
		o->kept = t->nprov - t->prov_at;
		for (size_t j = 0; j < c->nchecks; j++)
			o->held += !strcmp(c->checks[j].token, t->name);
		o->quarantined = t->quarantined;
		o->quarantined_ms = t->quarantined_ms;
		o->taken_out = t->taken_out;
		snprintf(o->reason, sizeof o->reason, "%s", t->reason);
		snprintf(o->fault, sizeof o->fault, "%s", t->fault);
	}
	return 0;
}

void co_spot_free(Coord *c)
{
	for (size_t i = 0; i < c->nchecks; i++) {
		free(c->checks[i].orig);
		free(c->checks[i].second);
	}
	free(c->checks);
	for (size_t i = 0; i < c->nstok; i++) free(c->stok[i].prov);
	free(c->stok);
}

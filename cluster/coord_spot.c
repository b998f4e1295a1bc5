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
 * check, and at least its last opt.spot_keep, taken out of the book (their
 * records' engine analyses removed, so that minimax and the selector no
 * longer use them) and queued to be thought again, its held results given
 * out as plain work, its checks of others given to others. Noise at small
 * budgets puts two honest results apart now and then (docs/notes/cluster.md
 * has the figures); twice within a window, or grossly, it was never seen to.
 *
 * A held result's position stays leased in the selector and out of the book
 * until its check is settled, so nothing in the book tells a check from new
 * work. A check nobody can take (no other token seen for SPOT_WAIT_MS) is
 * given up: the held result is stored unchecked.
 *
 * The records that keep them in the book: coord_spot_store.c; the
 * comparison and the mate claims: coord_spot_rules.c (coord_spot.h).
 */
#include "cluster/coord_spot.h"
#include "cluster/coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"
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

/* ---- tokens ---- */

bool co_spot_on(const Coord *c)
{
	return c->opt.spot_rate > 0 || c->opt.spot_new_rate > 0;
}

SpotToken *co_spot_token(Coord *c, const char *name, bool create)
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
	SpotToken *t = co_spot_token(c, token, true);
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
	SpotToken *t = token ? co_spot_token(c, token, false) : NULL;
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

/* ---- the checks ---- */

SpotCheck *co_spot_check(Coord *c, Key k)
{
	uint32_t i = keymap_find(&c->check_map, c->checks, k);
	return i == KEYMAP_NONE ? NULL : &c->checks[i];
}

bool co_spot_check_held(Coord *c, Key k)
{
	return c->nchecks && co_spot_check(c, k);
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
	return co_work_del(c, key, sizeof key, err);
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
/* co_prov_each: the first number met. */
static int first_seq(void *ctx, uint64_t seq, Key key)
{
	(void)key;
	*(uint64_t *)ctx = seq;
	return 1;
}

/* The token's provisional results no longer kept: vouched for by a good
 * check and older than its last opt.spot_keep results, or beyond the last
 * SPOT_PROV_MAX (a token never checked: alone, or a cluster of one token). */
static int forget_vouched(Coord *c, SpotToken *t, char *err)
{
	while (t->kept && ((t->first <= t->good_seq && t->results - t->first >= c->opt.spot_keep) ||
	                   t->kept > SPOT_PROV_MAX)) {
		uint8_t k[2 + COORD_NAME_MAX + 8];
		int rc = co_work_del(c, k, co_prov_key(k, t->name, t->first), err);
		if (rc < 0) return rc;
		if (t->first > t->good_seq && t->unverified) t->unverified--;
		t->dirty = true;
		uint64_t next = 0;
		if (--t->kept &&
		    (rc = co_prov_each(c, t->name, t->first + 1, first_seq, &next, err)) < 0)
			return rc;
		t->first = t->kept ? next : 0;
	}
	return 0;
}

static int note(Coord *c, SpotToken *t, Key key, char *err)
{
	uint64_t seq = ++t->results;
	t->dirty = true;
	if (!t->kept++) t->first = seq;
	t->unverified++; /* after its last good check, which is of an earlier result */
	uint8_t k[2 + COORD_NAME_MAX + 8], v[16];
	key_to_bytes(key, v);
	int rc = co_work_put(c, k, co_prov_key(k, t->name, seq), v, sizeof v, err);
	return rc < 0 ? rc : forget_vouched(c, t, err);
}

/* co_prov_each: the records numbered up to upto. */
typedef struct {
	uint64_t upto, n;
} VouchCount;

static int count_upto(void *ctx, uint64_t seq, Key key)
{
	(void)key;
	VouchCount *v = ctx;
	if (seq > v->upto) return 1;
	v->n++;
	return 0;
}

/* A good check of the token's result number seq: its results up to it are
 * vouched for (and no longer kept once older than its last spot_keep). */
static int good(Coord *c, const char *token, uint64_t seq, char *err)
{
	SpotToken *t = co_spot_token(c, token, false);
	if (!t) return 0;
	t->passed++;
	t->dirty = true;
	if (seq > t->good_seq) {
		/* Its kept results up to seq are vouched for now. */
		if (t->kept) {
			VouchCount v = {seq, 0};
			uint64_t from = t->good_seq + 1 > t->first ? t->good_seq + 1 : t->first;
			int rc = co_prov_each(c, t->name, from, count_upto, &v, err);
			if (rc < 0) return rc;
			t->unverified -= v.n < t->unverified ? v.n : t->unverified;
		}
		t->good_seq = seq;
	}
	return forget_vouched(c, t, err);
}

int co_spot_result(Coord *c, Lease *l, int i, const CoordResult *r, const CoordWorker *w,
                   int64_t now, char *err)
{
	const char *sfen = l->pos[i].sfen;
	SpotToken *t = NULL;
	if (co_spot_on(c) && !(t = co_spot_token(c, w->token ? w->token : "", true)))
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
		return rc < 0 ? rc : co_check_put(c, k, err);
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
		if (k->lease || (token && (!strcmp(k->token, token) ||
		                           (k->stage == 2 && !strcmp(k->checker, token)))))
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
	SpotToken *t = credit[0] ? co_spot_token(c, credit, true) : NULL;
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
	SpotToken *t = co_spot_token(c, name, true);
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
	SpotToken *t = co_spot_token(c, name, false);
	if (t) t->checks++, t->dirty = true;
}

int co_spot_answer(Coord *c, Lease *l, int i, const CoordResult *r, const CoordWorker *w,
                   int64_t now, char *err)
{
	(void)i;
	SpotCheck *k = co_spot_check(c, r->key);
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
		rc = co_check_put(c, k, err);
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
	SpotCheck *k = co_spot_check(c, key);
	if (!k || k->lease != lease) return 0;
	k->lease = 0;
	k->since_ms = now;
	if (tried && ++k->tries >= COORD_MAX_TRIES) return give_up(c, k, now, err);
	return tried ? co_check_put(c, k, err) : 0;
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
	int rc = coord_spot_disproves(c->pos, r, why);
	if (rc) c->spot_disproved++;
	return rc;
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
			if (key_equal(l->pos[i].key, key)) {
				l->pos[i].check = false;
				l->pos[i].owed = true;
			}
		ks->where = WHERE_LEASED;
		ks->lease = lease;
		return co_lease_put(c, l, err);
	}
	return co_queue_push(c, ks) < 0 ? co_broken(c, err, "quarantine", BOOKDB_ENOMEM) : 0;
}

/* co_prov_each: every record, into a list (1 when memory runs out). */
typedef struct {
	uint64_t seq;
	Key key;
} ProvRec;

typedef struct {
	ProvRec *r;
	size_t n, cap;
} ProvList;

static int prov_collect(void *ctx, uint64_t seq, Key key)
{
	ProvList *l = ctx;
	if (array_grow((void **)&l->r, &l->cap, l->n + 1, sizeof *l->r, 1024)) return 1;
	l->r[l->n++] = (ProvRec){seq, key};
	return 0;
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
	rc = co_redo_put(c, ks, err);
	return rc < 0 ? rc : 1;
}

int co_spot_quarantine(Coord *c, const char *token, const char *reason, int64_t now, char *err)
{
	const char *name = token ? token : "";
	SpotToken *t = co_spot_token(c, name, true);
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
		if (c->leases[i].bind == LEASE_BOUND && !strcmp(c->leases[i].token, name))
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
			rc = co_check_put(c, k, err);
		}
	}
	/* Its results since its last good check, and its last spot_keep ones,
	 * leave the book. */
	uint64_t taken = 0;
	/* Its kept results, read from the book first (the walk must not meet
	 * its own deletions), then taken out. */
	ProvList pl = {0};
	if (rc == 0 && t->kept) rc = co_prov_each(c, name, t->first, prov_collect, &pl, err);
	if (rc > 0) rc = co_broken(c, err, "spot checks", BOOKDB_ENOMEM);
	for (size_t i = 0; i < pl.n && rc == 0; i++) {
		uint8_t k[2 + COORD_NAME_MAX + 8];
		rc = untrust(c, pl.r[i].key, err);
		if (rc > 0) taken++;
		if (rc >= 0) rc = co_work_del(c, k, co_prov_key(k, name, pl.r[i].seq), err);
	}
	free(pl.r);
	t = co_spot_token(c, name, false); /* the array did not move, but be plain */
	t->kept = t->unverified = t->first = 0;
	t->taken_out = taken;
	c->spot_taken_out += taken;
	return rc < 0 ? rc : 0;
}

/* ---- status ---- */

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
		o->unverified = t->unverified;
		o->kept = t->kept;
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
	free(c->stok);
}

/*
 * cluster/coord_spot_store.c — the spot checks in the book's work database
 * (cluster/coord_spot.c), written with the results they go with and read
 * back at start:
 *
 *   "C" + 16-byte key     a check: u8 stage (1, or 2 after a disagreement),
 *                         u8 tries, u64 BE the result's number, u8 len +
 *                         token, u8 len + worker, u8 len + SFEN, the result
 *                         held; stage 2: u8 len + the checker's token, its
 *                         result. A result: u8 lines, each u8 len + USI move,
 *                         u8 mate, u32 BE score, u16 BE depth, u64 BE nodes.
 *   "P" + u8 len + token + u64 BE number
 *                         a result of the token kept for a quarantine to
 *                         take out (since its last good check, and its last
 *                         opt.spot_keep): the 16-byte key
 *   "K" + token           u64 BE each: its "Q" record's results and results
 *                         taken out then, and the count of its "P"
 *                         records, of those after its last good check, the
 *                         number of the oldest (0: none); written with "Q"
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
#include "cluster/coord_priv.h"

#include <stdlib.h>
#include <string.h>

#include "shogi/be64.h"
#include "shogi/grow.h"

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

int co_work_put(Coord *c, const void *k, size_t kl, const void *v, size_t vl, char *err)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0) rc = bookdb_kv_put(t, BOOKDB_WORK, k, kl, v, vl);
	return rc < 0 ? co_broken(c, err, "writing the spot checks", rc) : 0;
}

/* The numbers of token's "P" records from seq on, in t, each with its
 * position, to fn until it returns non-zero (returned): 0 at the end, or a
 * negative BOOKDB_* code. */
static int prov_walk(BookTxn *t, const char *token, uint64_t seq,
                     int (*fn)(void *ctx, uint64_t seq, Key key), void *ctx)
{
	BookIter *it;
	uint8_t from[2 + COORD_NAME_MAX + 8];
	size_t fl = co_prov_key(from, token, seq);
	int rc = bookdb_kv_iter_open_at(&it, t, BOOKDB_WORK, from, fl);
	if (rc < 0) return rc;
	const void *kv, *vv;
	size_t kl, vl;
	int r = 0;
	while (r == 0 && (rc = bookdb_kv_iter_next(it, &kv, &kl, &vv, &vl)) == 1 && kl == fl &&
	       !memcmp(kv, from, fl - 8) && vl == 16)
		r = fn(ctx, be64_get((const uint8_t *)kv + fl - 8), key_from_bytes(vv));
	bookdb_iter_free(it);
	return rc < 0 ? rc : r;
}

/* prov_walk: a token's records counted. */
static int count_kept(void *ctx, uint64_t seq, Key key)
{
	(void)key;
	SpotToken *s = ctx;
	if (!s->kept++) s->first = seq;
	s->unverified += seq > s->good_seq;
	return 0;
}

int co_spot_count_kept(Coord *c, BookTxn *t)
{
	for (size_t i = 0; i < c->nstok; i++) {
		SpotToken *s = &c->stok[i];
		/* Its "K" record as of its results: else written by a build that
		 * keeps none, or before it (counted again, written at the next
		 * commit). */
		if (s->kept_known && s->kept_at == s->results && s->kept_taken == s->taken_out)
			continue;
		s->kept = s->unverified = s->first = 0;
		if (prov_walk(t, s->name, 0, count_kept, s) < 0) return COORD_EBOOK;
		s->kept_known = true;
		s->kept_at = s->results;
		s->kept_taken = s->taken_out;
		s->dirty = true; /* its "K" record written at the next commit */
	}
	return 0;
}

int co_prov_each(Coord *c, const char *token, uint64_t seq,
                 int (*fn)(void *ctx, uint64_t seq, Key key), void *ctx, char *err)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0) rc = prov_walk(t, token, seq, fn, ctx);
	return rc < 0 ? co_broken(c, err, "reading the spot checks", rc) : rc;
}

int co_work_del(Coord *c, const void *k, size_t kl, char *err)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0) rc = bookdb_kv_del(t, BOOKDB_WORK, k, kl);
	return rc < 0 && rc != BOOKDB_ENOTFOUND ? co_broken(c, err, "writing the spot checks", rc)
	                                        : 0;
}

int co_check_put(Coord *c, const SpotCheck *k, char *err)
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
	return co_work_put(c, key, sizeof key, c->buf, (size_t)(p - c->buf), err);
}

size_t co_prov_key(uint8_t *out, const char *token, uint64_t seq)
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
	int rc = co_work_put(c, k, 1 + n, v, (size_t)(p - v), err);
	/* "K": its "P" records' counts, as of its results then (a build that
	 * keeps no "K" ignores it, and one that finds it behind the "Q"
	 * record's results counts the "P" records again). */
	uint8_t kv[5 * 8];
	const uint64_t g[5] = {t->results, t->taken_out, t->kept, t->unverified, t->first};
	for (int i = 0; i < 5; i++) be64_put(kv + 8 * i, g[i]);
	k[0] = 'K';
	return rc < 0 ? rc : co_work_put(c, k, 1 + n, kv, sizeof kv, err);
}

int co_redo_put(Coord *c, const KeyState *ks, char *err)
{
	uint8_t k[17] = {'U'}, v[1 + SFEN_MAX];
	key_to_bytes(ks->key, k + 1);
	int n = co_put_str(v, ks->sfen);
	return co_work_put(c, k, sizeof k, v, (size_t)n, err);
}

int co_redo_del(Coord *c, Key key, char *err)
{
	uint8_t k[17] = {'U'};
	key_to_bytes(key, k + 1);
	return co_work_del(c, k, sizeof k, err);
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

/* A "C" record read back: the check, its position leased in the selector. */
static int restore_check(Coord *c, Key key, const uint8_t *p, const uint8_t *end)
{
	if (co_spot_check(c, key)) return COORD_EBOOK;
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
	if (!co_spot_token(c, s->token, true) || sel_lease(c->sel, key) < 0) goto fail;
	return 1;
fail:
	free(s->orig);
	free(s->second);
	co_dense_del(&c->check_map, c->checks, &c->nchecks, sizeof *c->checks,
	             (size_t)(s - c->checks));
	return rc;
}

/* The token a "Q" or "K" record's key names (the letter, then the name:
 * 1..COORD_NAME_MAX bytes), made when new; NULL when out of memory. */
static SpotToken *token_of_key(Coord *c, const uint8_t *k, size_t kl)
{
	char name[COORD_NAME_MAX + 1];
	memcpy(name, k + 1, kl - 1);
	name[kl - 1] = 0;
	return co_spot_token(c, name, true);
}

int co_spot_restore(Coord *c, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	const uint8_t *p = v, *end = v + vl;
	if (kl == 17 && k[0] == 'C') return restore_check(c, key_from_bytes(k + 1), p, end);
	/* "P": not read at the start (the "K" record counts them;
	 * co_spot_count_kept when it is missing or behind). */
	if (kl >= 10 && k[0] == 'P') return 1;
	if (kl >= 1 && kl <= 1 + COORD_NAME_MAX && k[0] == 'Q') {
		SpotToken *t = token_of_key(c, k, kl);
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
	if (kl >= 1 && kl <= 1 + COORD_NAME_MAX && k[0] == 'K') {
		SpotToken *t = token_of_key(c, k, kl);
		if (!t) return COORD_ENOMEM;
		if (vl != 5 * 8) return COORD_EBOOK;
		t->kept_at = be64_get(p);
		t->kept_taken = be64_get(p + 8);
		t->kept = be64_get(p + 16);
		t->unverified = be64_get(p + 24);
		t->first = be64_get(p + 32);
		t->kept_known = true;
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

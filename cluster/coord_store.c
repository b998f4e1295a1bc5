/*
 * cluster/coord_store.c — the coordinator's state in the book's `work`
 * database (layouts in coord.h): leases, the lease counter and each
 * position's failed tries written through the results' BookWriter, and read
 * back at start (restore), with the roots joseki extend queued.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/coord_priv.h"
#include "bookdb/query.h"
#include "bookgen/roots.h"
#include "shogi/errmsg.h"
#include "shogi/be64.h"
#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/position.h"

/* ---- writing (layouts in coord.h) ---- */

int co_broken(Coord *c, char *err, const char *what, int rc)
{
	c->broken = true;
	return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s: %s", what,
	                  rc < 0 ? bookdb_strerror(rc) : "failed");
}

static int work_txn(Coord *c, BookTxn **t, char *err)
{
	int rc = bookdb_writer_txn(t, c->w);
	return rc < 0 ? co_broken(c, err, "writing the work state", rc) : 0;
}

int co_put_str(uint8_t *p, const char *s)
{
	size_t n = strlen(s);
	if (n > 255) n = 255;
	p[0] = (uint8_t)n;
	memcpy(p + 1, s, n);
	return (int)n + 1;
}

int co_lease_put(Coord *c, const Lease *l, char *err)
{
	size_t need = 8 + 2 * (COORD_NAME_MAX + 1) + 2 + (size_t)l->n * (1 + 16 + 1 + SFEN_MAX);
	if (array_grow((void **)&c->buf, &c->capbuf, need, 1, 4096))
		return co_broken(c, err, "writing a lease", BOOKDB_ENOMEM);
	uint8_t *p = c->buf;
	uint64_t e = (uint64_t)l->expires_ms;
	for (int i = 0; i < 8; i++) *p++ = (uint8_t)(e >> (8 * i));
	p += co_put_str(p, l->token);
	p += co_put_str(p, l->worker);
	/* Made ahead and not yet bound (or bound in this transaction: then the
	 * record is written again bound). */
	int count = l->n | (l->bind != LEASE_BOUND ? LEASE_REC_AHEAD : 0);
	*p++ = (uint8_t)(count & 0xff);
	*p++ = (uint8_t)(count >> 8);
	for (int i = 0; i < l->n; i++) {
		*p++ = (uint8_t)(l->pos[i].state | (l->pos[i].check ? LPOS_CHECK : 0));
		key_to_bytes(l->pos[i].key, p);
		p += 16;
		p += co_put_str(p, l->pos[i].sfen);
	}
	uint8_t k[9] = {'L'};
	be64_put(k + 1, l->key.hi);
	BookTxn *t;
	int rc = work_txn(c, &t, err);
	if (rc < 0) return rc;
	if ((rc = bookdb_kv_put(t, BOOKDB_WORK, k, 9, c->buf, (size_t)(p - c->buf))) < 0)
		return co_broken(c, err, "writing a lease", rc);
	return 0;
}

int co_lease_del_rec(Coord *c, uint64_t id, char *err)
{
	uint8_t k[9] = {'L'};
	be64_put(k + 1, id);
	BookTxn *t;
	int rc = work_txn(c, &t, err);
	if (rc < 0) return rc;
	if ((rc = bookdb_kv_del(t, BOOKDB_WORK, k, 9)) < 0 && rc != BOOKDB_ENOTFOUND)
		return co_broken(c, err, "deleting a lease", rc);
	return 0;
}

int co_next_id_put(Coord *c, char *err)
{
	uint8_t v[8];
	be64_put(v, c->next_id);
	BookTxn *t;
	int rc = work_txn(c, &t, err);
	if (rc < 0) return rc;
	if ((rc = bookdb_kv_put(t, BOOKDB_WORK, "N", 1, v, 8)) < 0)
		return co_broken(c, err, "writing the lease counter", rc);
	return 0;
}

/* The tries record of ks (deleted when it has no tries). */
int co_keyrec_put(Coord *c, const KeyState *ks, char *err)
{
	uint8_t k[17] = {'T'}, v[4 + COORD_NAME_MAX + SFEN_MAX];
	key_to_bytes(ks->key, k + 1);
	BookTxn *t;
	int rc = work_txn(c, &t, err);
	if (rc < 0) return rc;
	if (!ks->tries) {
		rc = bookdb_kv_del(t, BOOKDB_WORK, k, 17);
		if (rc < 0 && rc != BOOKDB_ENOTFOUND) return co_broken(c, err, "writing tries", rc);
		return 0;
	}
	uint8_t *p = v;
	*p++ = ks->tries;
	*p++ = ks->where == WHERE_ASIDE;
	p += co_put_str(p, ks->last);
	p += co_put_str(p, ks->sfen);
	if ((rc = bookdb_kv_put(t, BOOKDB_WORK, k, 17, v, (size_t)(p - v))) < 0)
		return co_broken(c, err, "writing tries", rc);
	return 0;
}

int co_get_str(char *out, size_t cap, const uint8_t **p, const uint8_t *end)
{
	if (*p >= end) return -1;
	size_t n = **p;
	if ((size_t)(end - *p) < n + 1 || n >= cap) return -1;
	memcpy(out, *p + 1, n);
	out[n] = 0;
	*p += n + 1;
	return 0;
}

static int restore_lease(Coord *c, uint64_t id, const uint8_t *p, const uint8_t *end)
{
	Lease lease = {.key = {0, id}}, *l = &lease; /* kept at the end */
	if (end - p < 8) goto bad;
	uint64_t e = 0;
	for (int i = 0; i < 8; i++) e |= (uint64_t)p[i] << (8 * i);
	l->expires_ms = (int64_t)e;
	p += 8;
	if (co_get_str(l->token, sizeof l->token, &p, end) < 0 ||
	    co_get_str(l->worker, sizeof l->worker, &p, end) < 0 || end - p < 2)
		goto bad;
	l->n = p[0] | p[1] << 8;
	p += 2;
	/* Made ahead and written unbound: perhaps handed out before a crash. */
	if (l->n & LEASE_REC_AHEAD) l->bind = LEASE_UNKNOWN;
	l->n &= ~LEASE_REC_AHEAD;
	if (l->n < 1 || l->n > COORD_MAX_BATCH) goto bad;
	if (!(l->pos = calloc((size_t)l->n, sizeof *l->pos))) return COORD_ENOMEM;
	for (int i = 0; i < l->n; i++) {
		LPos *lp = &l->pos[i];
		if (end - p < 17) goto bad;
		lp->check = *p & LPOS_CHECK;
		lp->state = *p++ & (uint8_t)~LPOS_CHECK;
		lp->key = key_from_bytes(p);
		p += 16;
		if (co_get_str(lp->sfen, sizeof lp->sfen, &p, end) < 0) goto bad;
		if (lp->state == POS_PENDING && lp->check) {
			/* The check (restored before the leases) is in this lease. */
			uint32_t k = keymap_find(&c->check_map, c->checks, lp->key);
			if (k != KEYMAP_NONE && !c->checks[k].lease) {
				c->checks[k].lease = id;
				l->pending++;
			} else {
				lp->state = POS_DONE; /* cannot happen: written together */
			}
		} else if (lp->state == POS_PENDING) {
			if (sel_is_thought(c->sel, lp->key)) {
				lp->state = POS_DONE; /* cannot happen: written together */
				continue;
			}
			KeyState *ks = co_key_get(c, lp->key);
			if (!ks) {
				/* Out of memory is not a damaged book: said as what it is. */
				if (!(ks = co_key_new(c, lp->key)) ||
				    sel_lease(c->sel, ks->key) < 0) {
					free(l->pos);
					return COORD_ENOMEM;
				}
				memcpy(ks->sfen, lp->sfen, sizeof ks->sfen);
			}
			ks->where = WHERE_LEASED;
			ks->lease = id;
			l->pending++;
		}
	}
	if (!co_lease_keep(c, l)) {
		free(l->pos);
		return COORD_ENOMEM;
	}
	return 0;
bad:
	free(l->pos);
	return COORD_EBOOK;
}

/* Tries records: set-aside keys, and queued ones (their lease gone). */
static int restore_key(Coord *c, Key k, const uint8_t *p, const uint8_t *end)
{
	if (end - p < 2 || sel_is_thought(c->sel, k)) return 0;
	KeyState *ks = co_key_get(c, k), tmp = {0};
	const uint8_t *q = p + 2;
	if (co_get_str(tmp.last, sizeof tmp.last, &q, end) < 0 ||
	    co_get_str(tmp.sfen, sizeof tmp.sfen, &q, end) < 0)
		return COORD_EBOOK;
	bool fresh = !ks;
	if (fresh) {
		if (!(ks = co_key_new(c, k))) return COORD_ENOMEM;
		memcpy(ks->sfen, tmp.sfen, sizeof ks->sfen);
		if (sel_lease(c->sel, k) < 0) return COORD_ENOMEM;
	}
	ks->tries = p[0];
	memcpy(ks->last, tmp.last, sizeof ks->last);
	if (p[1]) {
		if (ks->where == WHERE_QUEUED) c->queued--;
		ks->where = WHERE_ASIDE;
	} else if (fresh && co_queue_push(c, ks) < 0) {
		return COORD_ENOMEM;
	}
	return 0;
}

int co_restore(Coord *c, char *err)
{
	BookTxn *t;
	BookIter *it;
	int rc = bookdb_txn_begin(&t, c->db, false);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s",
		                  bookdb_strerror(rc));
	if ((rc = bookdb_kv_iter_open(&it, t, BOOKDB_WORK)) < 0) {
		bookdb_txn_abort(t);
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s",
		                  bookdb_strerror(rc));
	}
	const void *kv, *vv;
	size_t kl, vl;
	c->next_id = 1;
	/* Keys sort "C" < "L" < "N" < "P" < "Q" < "T" < "U": checks before the
	 * leases that hold them, leases before the tries that find them. */
	while (rc >= 0 && (rc = bookdb_kv_iter_next(it, &kv, &kl, &vv, &vl)) == 1) {
		const uint8_t *k = kv, *v = vv;
		/* The spot checks' "P" records (up to 100,000 a token) are passed
		 * over: the "K" records count them. On a book larger than memory
		 * each of their pages was a read from the disk, most of a start. */
		if (kl >= 1 && k[0] == 'P') {
			bookdb_iter_free(it);
			if ((rc = bookdb_kv_iter_open_at(&it, t, BOOKDB_WORK, "Q", 1)) < 0) {
				it = NULL;
				break;
			}
			continue;
		}
		rc = co_spot_restore(c, k, kl, v, vl);
		if (rc != 0) {
			if (rc > 0) rc = 0;
			continue;
		}
		if (kl == 9 && k[0] == 'L') {
			rc = restore_lease(c, be64_get(k + 1), v, v + vl);
		} else if (kl == 1 && k[0] == 'N' && vl == 8) {
			c->next_id = be64_get(v);
		} else if (kl == 17 && k[0] == 'T') {
			rc = restore_key(c, key_from_bytes(k + 1), v, v + vl);
		}
	}
	bookdb_iter_free(it);
	if (rc >= 0) rc = co_spot_count_kept(c, t);
	bookdb_txn_abort(t);
	if (rc == COORD_ENOMEM)
		return errmsg_set(err, COORD_ERRLEN, rc, "coordinator: %s",
		                  "out of memory restoring the work state");
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK,
		                  "coordinator: the work state in the book does not decode: %s",
		                  "damaged lease, tries or spot check");
	return 0;
}

/* Queues the position in c->pos (held leased in the selector while it
 * waits): 1, 0 when it is thought or known already (or, with
 * skip_leased, leased in the selector: about to be handed out), or
 * COORD_ENOMEM. */
static int queue_position(Coord *c, bool skip_leased)
{
	Key k = pos_key(c->pos);
	if (co_key_get(c, k) || sel_is_thought(c->sel, k) ||
	    (skip_leased && sel_is_leased(c->sel, k)))
		return 0;
	KeyState *ks = co_key_new(c, k);
	if (!ks) return COORD_ENOMEM;
	sfen_write(c->pos, ks->sfen, sizeof ks->sfen);
	if (co_queue_push(c, ks) < 0 || sel_lease(c->sel, k) < 0) return COORD_ENOMEM;
	return 1;
}

/* Lines walked a call at least, before its time budget is looked at (a few
 * roots' way is done at once). */
#define LINES_AT_ONCE 16

int co_queue_lines(Coord *c, double budget_ms, char *err)
{
	const char *sfen;
	int plies;
	if (c->lines_next == 0 &&
	    (!plan_path_line(c->plan, 0, &sfen, &plies) || plan_paths_left(c->plan))) {
		c->lines_due = false;
		return 0;
	}
	if (!c->line_rec && !(c->line_rec = malloc(sizeof *c->line_rec)))
		return errmsg_set(err, COORD_ERRLEN, COORD_ENOMEM, "coordinator: %s",
		                  "out of memory");
	double t0 = clock_ms_f();
	BookTxn *txn;
	int rc = bookdb_writer_txn(&txn, c->w);
	size_t i = c->lines_next;
	for (size_t done = 0; rc >= 0 && plan_path_line(c->plan, i, &sfen, &plies); i++, done++) {
		/* A book read from the disk: the rest at the next tick. */
		if (done >= LINES_AT_ONCE && clock_ms_f() - t0 >= budget_ms) break;
		if (position_parse(c->pos, sfen, NULL) < 0) continue; /* parsed before */
		rc = bookdb_line_leaf(c->line_rec, txn, plies, c->pos);
		if (rc == 1 && (rc = queue_position(c, true)) == 1) c->lines_queued++;
	}
	bool more = rc >= 0 && plan_path_line(c->plan, i, &sfen, &plies);
	c->lines_next = more ? i : 0;
	c->lines_due = more;
	if (rc == COORD_ENOMEM)
		return errmsg_set(err, COORD_ERRLEN, rc, "coordinator: %s", "out of memory");
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK,
		                  "coordinator: the book's lines: %s", bookdb_strerror(rc));
	return 0;
}

/* The roots queued in the book (joseki extend) go to the front of the queue,
 * in queue order, so they are handed out before anything the selector picks;
 * those already thought, leased or known are skipped. The selector holds them
 * as leased while they wait, so it never hands them out a second time. */
int co_queue_extended(Coord *c, char *err)
{
	RootList q = {0};
	char rerr[ROOTS_ERRLEN];
	int rc = roots_queue_read(&q, c->db, rerr);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN,
		                  rc == ROOTS_ENOMEM ? COORD_ENOMEM : COORD_EBOOK,
		                  "coordinator: queued roots: %s", rerr);
	rc = 0;
	for (size_t i = 0; i < q.n && rc == 0; i++) {
		if (position_parse(c->pos, q.specs[i], NULL) < 0)
			continue; /* checked when queued */
		if (queue_position(c, false) < 0) rc = COORD_ENOMEM;
	}
	roots_free(&q);
	return rc < 0 ? errmsg_set(err, COORD_ERRLEN, rc, "coordinator: %s", "out of memory") : 0;
}

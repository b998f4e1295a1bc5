/*
 * cluster/coord_ckpt.c — checkpoints of the selector, and the journal that
 * brings one up to date after a crash (docs/cluster.md, "Restarting").
 *
 * A clean stop writes the selector's snapshot for the book exactly as
 * committed; a crash (kill -9, OOM, a power cut) writes none. So every
 * opt.checkpoint_seconds the service thread, right after a commit (the
 * selector then holds exactly what the book does) and with no search
 * suspended, forks: the child writes the snapshot from its copy-on-write
 * view of the memory and exits, while the parent goes on at once. From the
 * next commit on, every commit also writes, in the same transaction, the
 * keys of the results it stored and a header counting the commits since
 * the checkpoint:
 *
 *   "S"                           u64 BE checkpoint's txnid, u64 BE commits since
 *   "S" + u64 BE txnid + u64 BE n the keys (16 bytes each) stored by the n-th
 *                                 commit since that checkpoint that stored any
 *
 * A start that finds a snapshot older than the book reads it back when the
 * book is its file and every commit since was this journal's: the book's
 * last txnid is the checkpoint's plus the header's count (each commit writes
 * the header, so each counts once; a commit by any other writer breaks the
 * equality and the snapshot is refused). The results are then given to the
 * restored selector (sel_add_result, as at their submission), the leases
 * restored from the work state, and whatever the selector held leased that
 * the work state does not (the stock selected ahead at the checkpoint,
 * positions answered since) released. Entries of other checkpoints are
 * deleted, a thousand a commit, by the commits that follow.
 */
#include "cluster/coord_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shogi/be64.h"
#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"

#define SJ_KEY_LEN 17
#define SJ_CLEAR_MAX 1000

int co_journal_note(Coord *c, Key k)
{
	if (!c->sj_gen) return 0;
	if (array_grow((void **)&c->sj_keys, &c->sj_cap, c->sj_n + 1, sizeof *c->sj_keys, 64))
		return co_broken(c, NULL, "the selector's journal", BOOKDB_ENOMEM);
	c->sj_keys[c->sj_n++] = k;
	return 0;
}

/* Up to SJ_CLEAR_MAX journal entries of other checkpoints deleted in t;
 * sj_stale cleared when none is left. */
static int clear_stale(Coord *c, BookTxn *t)
{
	uint8_t(*drop)[SJ_KEY_LEN] = malloc(SJ_CLEAR_MAX * sizeof *drop);
	if (!drop) return BOOKDB_ENOMEM;
	BookIter *it;
	int rc = bookdb_kv_iter_open_at(&it, t, BOOKDB_WORK, "S", 1);
	size_t n = 0;
	bool more = false;
	const void *kv, *vv;
	size_t kl, vl;
	while (rc >= 0 && (rc = bookdb_kv_iter_next(it, &kv, &kl, &vv, &vl)) == 1) {
		rc = 0;
		const uint8_t *k = kv;
		if (kl < 1 || k[0] != 'S') break;
		if (kl != SJ_KEY_LEN) continue;
		if (c->sj_gen && be64_get(k + 1) == c->sj_gen) break; /* the current ones: last */
		if (n == SJ_CLEAR_MAX) {
			more = true;
			break;
		}
		memcpy(drop[n++], k, SJ_KEY_LEN);
	}
	bookdb_iter_free(it);
	for (size_t i = 0; rc >= 0 && i < n; i++)
		rc = bookdb_kv_del(t, BOOKDB_WORK, drop[i], SJ_KEY_LEN);
	free(drop);
	if (rc >= 0 && !more) c->sj_stale = false;
	return rc < 0 ? rc : 0;
}

int co_journal_write(Coord *c, char *err)
{
	/* Nothing to commit: no commit, nothing to count. */
	if (!bookdb_writer_open(c->w)) return 0;
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, c->w);
	if (rc == 0 && c->sj_stale) rc = clear_stale(c, t);
	if (rc == 0 && c->sj_gen && c->sj_n) {
		uint8_t k[SJ_KEY_LEN] = {'S'};
		be64_put(k + 1, c->sj_gen);
		be64_put(k + 9, ++c->sj_entry);
		uint8_t *v = malloc(c->sj_n * 16);
		if (!v) return co_broken(c, err, "the selector's journal", BOOKDB_ENOMEM);
		for (size_t i = 0; i < c->sj_n; i++) key_to_bytes(c->sj_keys[i], v + 16 * i);
		rc = bookdb_kv_put(t, BOOKDB_WORK, k, sizeof k, v, c->sj_n * 16);
		free(v);
	}
	c->sj_n = 0;
	if (rc == 0 && c->sj_gen) {
		uint8_t h[16];
		be64_put(h, c->sj_gen);
		be64_put(h + 8, ++c->sj_commits);
		rc = bookdb_kv_put(t, BOOKDB_WORK, "S", 1, h, sizeof h);
	}
	return rc < 0 ? co_broken(c, err, "writing the selector's journal", rc) : 0;
}

/* ---- checkpoints ---- */

void co_checkpoint_reap(Coord *c, bool wait)
{
	if (c->ckpt_pid <= 0) return;
	int st = 0;
	pid_t r;
	do r = waitpid(c->ckpt_pid, &st, wait ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0) return; /* still writing */
	if (r == c->ckpt_pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		c->ckpts++;
		c->ckpt_ms = clock_ms_f() - c->ckpt_t0;
		c->ckpt_txnid = c->sj_gen; /* the txnid it was taken at */
	} else {
		c->ckpt_failed++;
	}
	c->ckpt_pid = 0;
	/* The selector's changes held since the fork, made now (timed: the
	 * status's checkpoint_held_s). */
	double t0 = clock_ms_f();
	int rc = sel_hold(c->sel, false);
	c->ckpt_held_ms = clock_ms_f() - t0;
	if (rc < 0)
		(void)co_broken(c, NULL, "the selector's changes held for a checkpoint",
		                rc == SEL_ENOMEM ? BOOKDB_ENOMEM : BOOKDB_EIO);
}

bool co_checkpoint_running(Coord *c)
{
	co_checkpoint_reap(c, false);
	return c->ckpt_pid > 0;
}

int coord_checkpoint(Coord *c, int64_t now_ms, char *err)
{
	if (!c->snap_path || c->broken || c->opt.preload) return 0;
	/* The child writes the memory as it was at the fork (copy-on-write):
	 * an array in a shared file mapping (shogi/bigmem.h) would go on
	 * changing under it. serve keeps every array in memory; a process that
	 * did not gets no checkpoint rather than a torn one. */
	BigmemStats bs;
	bigmem_stats(&bs);
	if (bs.file_bytes) {
		c->ckpt_failed++;
		return 0;
	}
	co_checkpoint_reap(c, false);
	if (c->ckpt_pid > 0) return 0; /* one at a time */
	int rc = co_select_take_in(c, err);
	if (rc < 0) return rc;
	/* A search suspended, a trim under way, or the key filter still being
	 * built: later. */
	if (co_select_paused(c) || !sel_snapshot_ready(c->sel)) return 0;
	if ((rc = coord_commit(c, err)) < 0) return rc;
	BookStamp st;
	if ((rc = bookdb_stamp(&st, c->db)) < 0) return co_broken(c, err, "the book's stamp", rc);
	/* Nothing committed since the last checkpoint written (an idle
	 * coordinator): that one is this one; the next is due in as long. */
	if (c->ckpt_txnid && st.txnid == c->ckpt_txnid) {
		c->ckpt_last_ms = now_ms;
		c->ckpt_unchanged++;
		return 0;
	}
	fflush(NULL);
	double f0 = clock_ms_f();
	pid_t pid = fork();
	if (pid == 0) {
		/* The child: its own copy of the memory, no other thread, no LMDB
		 * call; below the service on the CPU (as the minimax thread); the
		 * snapshot written, then out without any exit handler. */
		(void)setpriority(PRIO_PROCESS, 0, 19);
		/* Nor does it keep the listening socket (a coordinator restarted
		 * while a child still writes would find its port taken) or any
		 * other descriptor but the standard ones. */
		(void)close_range(3, ~0U, 0);
		/* Written behind (bookgen/snapshot.h): the service's commits are
		 * not held up by a flood of its dirty pages, nor its book pushed
		 * out of the page cache by the snapshot's. */
		_exit(co_snapshot_write(c, &st, SNAP_WRITE_BEHIND, NULL) == 0 ? 0 : 1);
	}
	c->ckpt_last_ms = now_ms;
	c->ckpt_fork_ms = clock_ms_f() - f0;
	if (pid < 0) {
		c->ckpt_failed++;
		return 0;
	}
	c->ckpt_pid = pid;
	c->ckpt_t0 = clock_ms_f();
	/* While the child lives, the selector's changes are held (sel_hold):
	 * each graph page the service writes meanwhile would be copied, each
	 * copy a page taken from a page cache full of the book. */
	(void)sel_hold(c->sel, true);
	/* The journal of this checkpoint begins with the next commit. */
	c->sj_gen = st.txnid;
	c->sj_commits = c->sj_entry = 0;
	c->sj_n = 0;
	c->sj_stale = true;
	return 1;
}

int coord_checkpoint_wait(Coord *c)
{
	uint64_t failed = c->ckpt_failed;
	co_checkpoint_reap(c, true);
	return c->ckpt_failed == failed ? 0 : COORD_EBOOK;
}

/* ---- a start from a checkpoint ---- */

int co_journal_check(Coord *c, const BookStamp *snap, const BookStamp *book, char *err)
{
	if (snap->dev != book->dev || snap->ino != book->ino)
		return errmsg_set(err, COORD_ERRLEN, SEL_ESTALE, "selector snapshot %s: %s",
		                  c->snap_path, SNAP_OTHER_FILE);
	BookTxn *t;
	const void *v;
	size_t vl;
	int rc = bookdb_txn_begin(&t, c->db, false);
	if (rc < 0) return SEL_EBOOK;
	rc = bookdb_kv_get(&v, &vl, t, BOOKDB_WORK, "S", 1);
	uint64_t gen = 0, commits = 0;
	if (rc == 0 && vl == 16) {
		gen = be64_get(v);
		commits = be64_get((const uint8_t *)v + 8);
	}
	bookdb_txn_abort(t);
	if (gen != snap->txnid || snap->txnid + commits != book->txnid)
		return errmsg_set(err, COORD_ERRLEN, SEL_ESTALE, "selector snapshot %s: %s",
		                  c->snap_path,
		                  gen != snap->txnid ? "the book was written since"
		                                     : "the book was written since, not by the "
		                                       "coordinator alone");
	c->snap_commits = commits;
	return 0;
}

int co_journal_replay(Coord *c, uint64_t gen, char *err)
{
	BookTxn *t;
	BookIter *it = NULL;
	int rc = bookdb_txn_begin(&t, c->db, false);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, SEL_EBOOK, "coordinator: %s",
		                  bookdb_strerror(rc));
	uint8_t from[9] = {'S'};
	be64_put(from + 1, gen);
	rc = bookdb_kv_iter_open_at(&it, t, BOOKDB_WORK, from, sizeof from);
	const void *kv, *vv;
	size_t kl, vl;
	while (rc >= 0 && (rc = bookdb_kv_iter_next(it, &kv, &kl, &vv, &vl)) == 1) {
		rc = 0;
		const uint8_t *k = kv, *v = vv;
		if (kl != SJ_KEY_LEN || k[0] != 'S' || be64_get(k + 1) != gen) break;
		if (vl % 16) {
			rc = SEL_ESNAP;
			break;
		}
		for (size_t i = 0; rc == 0 && i < vl / 16; i++) {
			Key key = key_from_bytes(v + 16 * i);
			const uint8_t *val;
			size_t len;
			int g = bookdb_get_raw(&val, &len, t, key);
			if (g == 0 && len && (val[0] & BOOKDB_REC_THOUGHT)) {
				rc = sel_add_result_raw(c->sel, key, val, len);
				c->snap_replayed++;
			} else if (g < 0 && g != BOOKDB_ENOTFOUND) {
				rc = SEL_EBOOK;
			}
		}
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, rc, "selector journal: %s",
		                  err_module(rc) == ERR_BOOKDB ? bookdb_strerror(rc)
		                                               : sel_strerror(rc));
	return 0;
}

/* Leased in the selector, unknown to the work state: collected, then released. */
typedef struct {
	Coord *c;
	Key *keys;
	size_t n, cap;
	bool oom;
} Strays;

static int note_stray(void *ctx, Key k)
{
	Strays *s = ctx;
	if (co_key_get(s->c, k) || co_spot_check_held(s->c, k)) return 0;
	if (array_grow((void **)&s->keys, &s->cap, s->n + 1, sizeof *s->keys, 64)) {
		s->oom = true;
		return 1;
	}
	s->keys[s->n++] = k;
	return 0;
}

int co_release_strays(Coord *c, size_t *released)
{
	Strays s = {.c = c};
	*released = 0;
	(void)sel_each_leased(c->sel, note_stray, &s);
	int rc = s.oom ? COORD_ENOMEM : 0;
	for (size_t i = 0; rc == 0 && i < s.n; i++)
		if (sel_release(c->sel, s.keys[i]) < 0) rc = COORD_ENOMEM;
	*released = s.n;
	free(s.keys);
	return rc;
}

/*
 * cluster/coord.c — the cluster coordinator's work logic (cluster/coord.h).
 *
 * In memory: the leases kept (id -> Lease), the positions in flight (key ->
 * KeyState: queued, leased or set aside, with their failed tries), the queue
 * of returned positions, the workers seen. Leases and KeyStates are dense
 * arrays, each indexed by a key map (shogi/keymap.h); one leaving the array
 * is replaced by the array's last. Every change is written to the
 * `work` database through the same BookWriter as the results, and committed
 * by coord_commit, so the book and the work state never disagree on disk.
 * A book error leaves the Coord broken (every later call answers COORD_EBOOK,
 * nothing more is committed): the process restarts from the last commit.
 * The work database's records are written and read back in coord_store.c;
 * the types both files use are in coord_priv.h.
 */
#include "cluster/coord_priv.h"
#include "bookgen/reanalyse.h"
#include "cluster/coord_spot.h"

#include <assert.h>
#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/prefetch.h"
#include "bookgen/roots.h"
#include "bookgen/selection.h"
#include "bookgen/selector.h"
#include "bookgen/think.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "shogi/rng.h"

const char *coord_strerror(int code)
{
	switch (code) {
	case COORD_OK:
		return "success";
	case COORD_ENOMEM:
		return "out of memory";
	case COORD_EINVAL:
		return "invalid request";
	case COORD_ENOLEASE:
		return "no such lease";
	case COORD_EBOOK:
		return "book error";
	case COORD_EOPTION:
		return "invalid option";
	case COORD_EMINIMAX:
		return "the periodic minimax failed";
	case COORD_EQUARANTINE:
		return "the token is in quarantine";
	}
	return "unknown coordinator error";
}

const CoordOptions *coord_options(const Coord *c)
{
	return &c->opt;
}

/* ---- the dense arrays ---- */

/*
 * Appends an element of size bytes, zeroed but for its key k (an element
 * starts with its Key), to the dense array *arr of *n indexed by m, which
 * must not hold k. The new element, or NULL when memory runs out (nothing
 * changed). It moves when the array grows: pointers into it last until the
 * next add.
 */
void *co_dense_add(KeyMap *m, void **arr, size_t *cap, size_t *n, size_t size, Key k)
{
	if (array_grow(arr, cap, *n + 1, size, 16)) return NULL;
	char *e = (char *)*arr + *n * size;
	memset(e, 0, size);
	memcpy(e, &k, sizeof k);
	int64_t at = keymap_find_or_insert(m, *arr, (uint32_t)*n);
	if (at < 0) return NULL;
	assert((size_t)at == *n);
	(*n)++;
	return e;
}

/* Removes element i of the dense array arr of *n indexed by m: the last
 * element takes its place (a pointer to the last now points past the end). */
void co_dense_del(KeyMap *m, void *arr, size_t *n, size_t size, size_t i)
{
	char *a = arr;
	Key k;
	memcpy(&k, a + i * size, sizeof k);
	int rc = keymap_del(m, arr, k, NULL);
	assert(rc == 1);
	if (i != --*n) {
		memcpy(a + i * size, a + *n * size, size);
		rc = keymap_put(m, arr, (uint32_t)i); /* cannot grow: one was just removed */
		assert(rc == 0);
	}
	(void)rc;
}

/* ---- in-memory state ---- */

KeyState *co_key_get(Coord *c, Key k)
{
	uint32_t i = keymap_find(&c->key_map, c->keys, k);
	return i == KEYMAP_NONE ? NULL : &c->keys[i];
}

/* A new KeyState for k (not held), or NULL when memory runs out. KeyState
 * pointers last until the next co_key_new or key_forget. */
KeyState *co_key_new(Coord *c, Key k)
{
	return co_dense_add(&c->key_map, (void **)&c->keys, &c->capkeys, &c->nkeys, sizeof *c->keys,
	                    k);
}

static void key_forget(Coord *c, KeyState *ks)
{
	if (ks->where == WHERE_QUEUED) c->queued--;
	co_dense_del(&c->key_map, c->keys, &c->nkeys, sizeof *c->keys, (size_t)(ks - c->keys));
}

int co_queue_push(Coord *c, KeyState *ks)
{
	if (array_grow((void **)&c->queue, &c->capqueue, c->nqueue + 1, sizeof *c->queue, 64))
		return COORD_ENOMEM;
	c->queue[c->nqueue++] = ks->key;
	ks->where = WHERE_QUEUED;
	c->queued++;
	return 0;
}

Lease *co_lease_get(Coord *c, uint64_t id)
{
	uint32_t i = keymap_find(&c->lease_map, c->leases, (Key){0, id});
	return i == KEYMAP_NONE ? NULL : &c->leases[i];
}

/* Keeps the lease l, built outside the array (its id not held): the kept
 * copy, or NULL when memory runs out (l is then still the caller's). */
Lease *co_lease_keep(Coord *c, const Lease *l)
{
	Lease *e = co_dense_add(&c->lease_map, (void **)&c->leases, &c->capleases, &c->nleases,
	                        sizeof *c->leases, l->key);
	if (e) *e = *l;
	return e;
}

/* Forgets the lease l: the last lease moves into its place. */
static void lease_drop(Coord *c, Lease *l)
{
	free(l->pos);
	co_dense_del(&c->lease_map, c->leases, &c->nleases, sizeof *c->leases,
	             (size_t)(l - c->leases));
}

static void note_worker(Coord *c, const CoordWorker *w, int64_t now)
{
	if (!w->name) return;
	const char *token = w->token ? w->token : "", *inst = w->instance ? w->instance : "";
	CoordWorkerSeen *s = NULL;
	/* One entry per worker process: a name given to two workers (or under
	 * two tokens) stays two entries. A request that says no instance (an
	 * abort's body of a name alone) is the named worker's, whichever. */
	for (size_t i = 0; i < c->nseen && !s; i++)
		if (!strcmp(c->seen[i].name, w->name) && !strcmp(c->seen[i].token, token) &&
		    !strcmp(c->seen[i].instance, inst))
			s = &c->seen[i];
	for (size_t i = 0; i < c->nseen && !s && !inst[0]; i++)
		if (!strcmp(c->seen[i].name, w->name) && !strcmp(c->seen[i].token, token))
			s = &c->seen[i];
	if (!s) {
		/* Forget workers gone for an hour before growing. */
		size_t j = 0;
		for (size_t i = 0; i < c->nseen; i++)
			if (now - c->seen[i].last_seen_ms < COORD_GONE_MS)
				c->seen[j++] = c->seen[i];
		c->nseen = j;
		if (array_grow((void **)&c->seen, &c->capseen, c->nseen + 1, sizeof *c->seen, 16))
			return;
		s = &c->seen[c->nseen++];
		memset(s, 0, sizeof *s);
		snprintf(s->name, sizeof s->name, "%s", w->name);
		snprintf(s->token, sizeof s->token, "%s", token);
		snprintf(s->instance, sizeof s->instance, "%s", inst);
	}
	/* A request without them (an abort's body) keeps what the worker last said. */
	if (w->engine && w->engine[0]) snprintf(s->engine, sizeof s->engine, "%s", w->engine);
	if (w->nps > 0) s->nps = w->nps;
	s->last_seen_ms = now;
}

void coord_heartbeat(Coord *c, const CoordWorker *w, bool leaving, int64_t now_ms)
{
	note_worker(c, w, now_ms);
	if (!leaving || !w->name) return;
	const char *token = w->token ? w->token : "", *inst = w->instance ? w->instance : "";
	for (size_t i = 0; i < c->nseen; i++)
		if (!strcmp(c->seen[i].name, w->name) && !strcmp(c->seen[i].token, token) &&
		    !strcmp(c->seen[i].instance, inst))
			c->seen[i].left = true;
}

/* Counts by second in a ring of slots (stamp: the second each slot counts):
 * n more in now_ms's second; the sum of the seconds [from, to). */
static void seconds_add(int64_t *stamp, uint32_t *count, int slots, int64_t now_ms, uint32_t n)
{
	int64_t sec = now_ms / 1000;
	int i = (int)(sec % slots);
	if (stamp[i] != sec) {
		stamp[i] = sec;
		count[i] = 0;
	}
	count[i] += n;
}

static uint64_t seconds_sum(const int64_t *stamp, const uint32_t *count, int slots, int64_t from,
                            int64_t to)
{
	uint64_t sum = 0;
	for (int i = 0; i < slots; i++)
		if (stamp[i] >= from && stamp[i] < to) sum += count[i];
	return sum;
}

static void count_results(Coord *c, int64_t now, uint32_t n)
{
	if (!c->sec_first) c->sec_first = now / 1000;
	seconds_add(c->sec_stamp, c->sec_count, RATE_SECS + 1, now, n);
}

/* One failed try of ks by worker: back to the queue, or set aside at the last. */
static int fail_try(Coord *c, KeyState *ks, const char *worker, char *err)
{
	c->failed++;
	if (ks->tries < 255) ks->tries++;
	snprintf(ks->last, sizeof ks->last, "%s", worker);
	if (ks->tries >= COORD_MAX_TRIES) {
		ks->where = WHERE_ASIDE; /* stays leased in the selector: never selected again */
	} else if (co_queue_push(c, ks) < 0) {
		return co_broken(c, err, "queueing", BOOKDB_ENOMEM);
	}
	return co_keyrec_put(c, ks, err);
}

/* ---- open, restore, free ---- */

/* The selector and the plan: from the snapshot snap (restored as it was),
 * or (snap NULL) new over the book. 0 or a negative code with err. */
static int new_selection(Coord *c, const CoordOptions *opt, SnapReader *snap, char *err)
{
	SelectionSpec spec = {.sel = {.kif_bonus = opt->kif_bonus, .draw_value = 0},
	                      .keys = &opt->minimax,
	                      .preload = opt->preload,
	                      .plan = &opt->plan,
	                      .roots = opt->roots,
	                      .root_weights = opt->root_weights,
	                      .nroots = opt->nroots,
	                      .paths = opt->paths,
	                      .npaths = opt->npaths,
	                      .memory = opt->select_memory,
	                      /* After the work state is read (coord_open): on a book
	                       * larger than memory the filter's pass over minimax's
	                       * keys would have the disk, and that reading wait. */
	                      .defer_filter = true};
	char serr[SNAP_ERRLEN];
	int rc = selection_open(&c->sel, &c->plan, c->db, &spec, snap, serr);
	if (rc == SEL_ENOMEM) return COORD_ENOMEM;
	if (rc == SEL_EINVAL)
		return errmsg_set(err, COORD_ERRLEN, COORD_EOPTION, "coordinator: %s", serr);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, snap ? "%s" : "coordinator: %s",
		                  serr);
	return 0;
}

/* The reason of a "selector snapshot[ PATH]: reason" message. */
static const char *snap_reason(const char *msg)
{
	const char *colon = strncmp(msg, "selector snapshot", 17) ? NULL : strstr(msg, ": ");
	return colon ? colon + 2 : msg;
}

/* Why neither the journal (a) nor the change log (b) could bring a snapshot
 * up to date, into err, saying once the clause both begin with ("the book
 * was written since, not by the coordinator alone, and its change log was
 * not on"). */
static void snap_reasons(char *err, const char *a, const char *b)
{
	a = snap_reason(a);
	b = snap_reason(b);
	size_t n = 0;
	while (a[n] && a[n] == b[n]) n++;
	while (n > 0 && a[n] && a[n] != ',') n--; /* back to the end of a clause */
	if (n > 0)
		snprintf(err, COORD_ERRLEN, "%.250s%.250s", a, b + n);
	else
		snprintf(err, COORD_ERRLEN, "%.250s; %.250s", a, b);
}

/* The selection from the snapshot, when it is of the book as it is: else
 * (none, stale, damaged, of another run) the reason in snap_note and
 * nothing made. The file is removed either way: once this run writes, it
 * would be stale. */
static void restore_selection(Coord *c, const CoordOptions *opt)
{
	double t0 = clock_ms_f();
	BookStamp st;
	SnapReader *snap = NULL;
	char err[COORD_ERRLEN] = "";
	int rc = bookdb_stamp(&st, c->db);
	if (rc < 0) {
		snprintf(c->snap_note, sizeof c->snap_note, "the book's stamp: %s",
		         bookdb_strerror(rc));
		return;
	}
	rc = snap_open_any(&snap, c->snap_path, err);
	uint64_t gen = 0;      /* a checkpoint's: its journal replayed */
	bool catch_up = false; /* else the book's change log */
	SelCatchUp cu = {0};
	/* Of the file the book was written anew from (a compact, a whole-book
	 * minimax), as this one reads it. */
	BookStamp from = {0};
	bool carried = rc == 0 && snap_stamp_in(&from, snap, c->db);
	if (rc == 0 && memcmp(&from, &st, sizeof st) != 0) {
		rc = co_journal_check(c, &from, &st, err);
		gen = from.txnid;
		if (rc == SEL_ESTALE && from.dev == st.dev && from.ino == st.ino) {
			rc = 0;
			gen = 0;
			catch_up = true;
		}
	}
	if (rc == 0) {
		char jerr[COORD_ERRLEN];
		snprintf(jerr, sizeof jerr, "%s", err);
		rc = new_selection(c, opt, snap, err);
		double r0 = clock_ms_f();
		if (rc == 0 && gen) rc = co_journal_replay(c, gen, err);
		if (rc == 0 && catch_up) {
			char cerr[SNAP_ERRLEN];
			rc = sel_catch_up(c->sel, &from, &cu, cerr);
			/* Why neither the journal nor the change log would do. */
			if (rc < 0) snap_reasons(err, jerr, cerr);
		}
		c->snap_replay_ms = clock_ms_f() - r0;
		if (rc < 0) {
			sel_free(c->sel);
			plan_free(c->plan);
			c->sel = NULL;
			c->plan = NULL;
		}
	}
	if (rc != SEL_ENOSNAP) {
		(void)unlink(c->snap_path); /* best effort: a stale one is refused */
		(void)selection_hold(c->db, false);
	}
	c->snap_restored = rc == 0;
	c->snap_ms = clock_ms_f() - t0;
	if (rc < 0 && rc != SEL_ENOSNAP)
		snprintf(c->snap_note, sizeof c->snap_note, "%.*s", (int)sizeof c->snap_note - 1,
		         err);
	if (rc == 0 && gen)
		snprintf(c->snap_note, sizeof c->snap_note,
		         "from a checkpoint %llu commits before the last: %llu results given again "
		         "in %.2f s",
		         (unsigned long long)c->snap_commits, (unsigned long long)c->snap_replayed,
		         c->snap_replay_ms / 1000);
	if (rc == 0 && catch_up) {
		char what[SNAP_ERRLEN];
		sel_catch_up_note(what, sizeof what, &cu);
		snprintf(c->snap_note, sizeof c->snap_note, "%.150s, in %.2f s%s%s", what,
		         c->snap_replay_ms / 1000, carried ? "; " : "",
		         carried ? SNAP_CARRIED : "");
	} else if (rc == 0 && carried) {
		snprintf(c->snap_note, sizeof c->snap_note, "%s", SNAP_CARRIED);
	}
	snap_close(snap);
}

bool coord_snapshot_restored(const Coord *c, const char **note, double *ms)
{
	if (note) *note = c->snap_note;
	if (ms) *ms = c->snap_ms;
	return c->snap_restored;
}
int coord_open(Coord **out, BookDB *db, const CoordOptions *opt, char *err)
{
	*out = NULL;
	if (err) err[0] = 0;
	if (opt->multipv < 1 || opt->multipv > SEARCH_MULTIPV_MAX || opt->budget.amount < 1)
		return errmsg_set(err, COORD_ERRLEN, COORD_EOPTION, "coordinator: %s",
		                  "need a budget of at least 1 and MultiPV 1..32");
	Coord *c = calloc(1, sizeof *c);
	if (!c) return COORD_ENOMEM;
	keymap_init(&c->lease_map, sizeof *c->leases);
	keymap_init(&c->key_map, sizeof *c->keys);
	keymap_init(&c->check_map, sizeof *c->checks);
	c->db = db;
	c->opt = *opt;
	c->started_ms = clock_unix_ms();
	rng_instance(c->instance, c);
	if (c->opt.lease_seconds <= 0) c->opt.lease_seconds = 600;
	if (c->opt.spot_rate < 0 || c->opt.spot_rate > 1 || c->opt.spot_new_rate < 0 ||
	    c->opt.spot_new_rate > 1 || c->opt.spot_tolerance < 0 || c->opt.spot_tolerance > 1) {
		free(c);
		return errmsg_set(err, COORD_ERRLEN, COORD_EOPTION, "coordinator: %s",
		                  "spot check rates and tolerance must be within 0..1");
	}
	if (c->opt.spot_tolerance == 0) c->opt.spot_tolerance = COORD_SPOT_TOLERANCE;
	c->spot_rng = c->opt.spot_seed ? c->opt.spot_seed : (uint64_t)clock_ns();
	c->rec = malloc(sizeof *c->rec);
	c->pos = malloc(sizeof *c->pos);
	c->res = malloc(sizeof *c->res);
	c->leaf = malloc(sizeof *c->leaf);
	c->spot_tmp = malloc(sizeof *c->spot_tmp);
	c->opt.snapshot = NULL;
	int rc = COORD_ENOMEM;
	if (!c->rec || !c->pos || !c->res || !c->leaf || !c->spot_tmp) goto fail;
	if (opt->again && (!(c->again_rec = malloc(sizeof *c->again_rec)) ||
	                   !(c->again_new = malloc(sizeof *c->again_new))))
		goto fail;
	if (opt->snapshot && !opt->preload) {
		if (!(c->snap_path = strdup(opt->snapshot))) goto fail;
		restore_selection(c, opt);
	}
	if (!c->snap_restored && (rc = new_selection(c, opt, NULL, err)) < 0) goto fail;
	c->opt.roots = NULL; /* the plan keeps its own copies */
	c->opt.root_weights = NULL;
	c->opt.nroots = 0;
	c->opt.paths = NULL;
	c->opt.npaths = 0;
	if ((rc = co_restore(c, err)) < 0 || (rc = co_queue_extended(c, err)) < 0) goto fail;
	/* Writes a coordinator stopped (or killed) before backing them up are
	 * backed up by the first run, due as if they were its own. */
	if (book_minimax_hook_pending(&c->opt.minimax, db)) c->since_minimax = 1;
	sel_start_filter(c->sel);
	co_spot_restored(c);
	/* Restored: what the selector holds leased beyond the work state (a
	 * checkpoint's stock, positions answered since it) is free again. */
	size_t strays = 0;
	if (c->snap_restored && (rc = co_release_strays(c, &strays)) < 0) goto fail;
	c->sj_stale = true; /* journal entries of earlier checkpoints: deleted as commits come */
	/* Commits only when told (coord_commit): results and work state together. */
	if (bookdb_writer_new(&c->w, db, SIZE_MAX) < 0) {
		rc = errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s",
		                "cannot start the book writer");
		goto fail;
	}
	if (c->opt.select_slice_ms == 0) c->opt.select_slice_ms = COORD_SLICE_MS;
	if ((rc = co_select_start(c)) < 0) goto fail;
	c->open_ms = clock_ms_f();
	c->full_since_ms = c->behind_from_ms = -1;
	c->lines_due = true;
	*out = c;
	return 0;
fail:
	c->broken = true;
	coord_free(c);
	return rc < 0 && err_module(rc) == ERR_COORD ? rc : COORD_ENOMEM;
}

static int minimax_collect(Coord *c, bool wait, char *err);
static int ahead_expire(Coord *c, int64_t now_ms, bool all, char *err);

/* The selector's state to the snapshot, stamped with the book as committed. */
int co_snapshot_write(Coord *c, const BookStamp *st, unsigned flags, char *err)
{
	char serr[SNAP_ERRLEN];
	int rc = selection_save(c->snap_path, st, c->sel, c->plan, flags, serr);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: snapshot: %s",
		                  serr);
	return 0;
}

/* The selector's state to the snapshot, stamped with the book as committed. */
static int save_snapshot(Coord *c, char *err)
{
	BookStamp st;
	/* Held first: the stamp then says where the writes to catch up with begin. */
	int rc = selection_hold(c->db, true);
	if (rc == 0) rc = bookdb_stamp(&st, c->db);
	if (rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: snapshot: %s",
		                  bookdb_strerror(rc));
	if ((rc = co_snapshot_write(c, &st, 0, err)) < 0) (void)selection_hold(c->db, false);
	return rc;
}

int coord_close(Coord *c, double *save_ms, char *err)
{
	if (save_ms) *save_ms = 0;
	if (!c) return 0;
	co_select_stop(c);           /* its stock of leaves released in the selector */
	co_checkpoint_reap(c, true); /* a checkpoint being written: its file replaced below */
	/* Leases made ahead and handed to nobody: their positions are free again. */
	int rc = c->broken ? COORD_EBOOK : ahead_expire(c, 0, true, err);
	if (rc == 0) rc = coord_commit(c, err);
	/* A minimax run under way is told to stop (a whole-book one took
	 * minutes on a large book, and a supervisor may kill the process
	 * meanwhile); its analysis writes nothing to the book, so the stamp
	 * stays good. A whole-book run may have written some records before it
	 * heard: the snapshot is then stale, refused at the next start. */
	atomic_store(&c->mm_stop, true);
	double t0 = clock_ms_f();
	if (rc == 0 && c->snap_path && c->sel && c->plan) rc = save_snapshot(c, err);
	if (save_ms) *save_ms = clock_ms_f() - t0;
	(void)minimax_collect(c, true, NULL); /* its plan is dropped, as in coord_free */
	coord_free(c);
	return rc;
}

void coord_free(Coord *c)
{
	if (!c) return;
	co_select_stop(c); /* first: nothing below runs beside the selection */
	co_checkpoint_reap(c, true);
	atomic_store(&c->mm_stop, true);
	minimax_collect(c, true, NULL);
	/* A plan not written yet is dropped: the next run mends what a part
	 * written left (the book marks it as a stopped run). */
	if (c->mm_plan) c->opt.minimax.plan_free(c->mm_plan);
	/* Nobody is left to tell: a caller that must know calls coord_commit first. */
	if (!c->broken && c->w) (void)bookdb_writer_flush(c->w);
	bookdb_writer_free(c->w);
	co_pwalk_stop(c->pwalk); /* before the selector: it reads its key filter */
	c->pwalk = NULL;
	sel_free(c->sel);
	for (size_t i = 0; i < c->nleases; i++) free(c->leases[i].pos);
	free(c->leases);
	free(c->ahead);
	free(c->keys);
	keymap_free(&c->lease_map);
	keymap_free(&c->key_map);
	co_spot_free(c);
	keymap_free(&c->check_map);
	free(c->spot_tmp);
	free(c->queue);
	free(c->buf);
	free(c->seen);
	free(c->rec);
	free(c->line_rec);
	free(c->again_rec);
	free(c->again_new);
	free(c->pos);
	free(c->res);
	free(c->leaf);
	free(c->pw_leaf);
	plan_free(c->plan);
	free(c->snap_path);
	free(c->sj_keys);
	free(c);
}

/* ---- acquire ---- */

/* Whether key needs no more analysis: thought (the selector knows), or in
 * a re-analysis, thought again for the campaign (its mark, read through the
 * writer: results stored this round count). */
static bool co_done(Coord *c, Key key)
{
	if (!c->opt.again) return sel_is_thought(c->sel, key);
	uint8_t kb[THINK_AGAIN_KEY_LEN];
	think_again_key(kb, key);
	BookTxn *t;
	const void *v;
	size_t vl;
	if (bookdb_writer_txn(&t, c->w) < 0 ||
	    bookdb_kv_get(&v, &vl, t, BOOKDB_WORK, kb, sizeof kb))
		return false;
	uint64_t id = 0;
	for (size_t i = vl >= 8 ? 8 : 0; i-- > 0;) id = id << 8 | ((const uint8_t *)v)[i];
	return vl == 8 && id == c->opt.campaign;
}

/* A position with no legal move (mated: in shogi a side without a move
 * loses) needs no engine: the coordinator stores it as thought with no
 * moves, which minimax values as lost and the selector never selects again.
 * c->pos holds the position. 1 when it was such a position (stored), 0 when
 * it has a move, or COORD_EBOOK. */
static int value_mated(Coord *c, Key key, char *err)
{
	if (movegen_count(c->pos) > 0) return 0;
	c->res->nlines = 0;
	char terr[THINK_ERRLEN];
	if (think_store(c->w, c->sel, c->rec, key, c->pos, c->res, &c->opt.budget, terr) < 0) {
		c->broken = true;
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s", terr);
	}
	if (co_journal_note(c, key) < 0) return COORD_EBOOK;
	c->mated++;
	c->since_minimax++;
	return 1;
}

/* How long a worker counts as there to take what another failed. */
#define OTHER_WORKER_MS (60 * 1000)

/* Whether a worker not named worker asked for work or sent results in the
 * last OTHER_WORKER_MS and has not left: one to take a position worker's try
 * failed. Without one the position goes back to worker (a lone worker
 * restarted after a kill waited for its own positions for ever; its tries
 * still set aside a position that fails every time). */
static bool other_worker(const Coord *c, const char *worker, int64_t now)
{
	for (size_t i = 0; i < c->nseen; i++)
		if (!c->seen[i].left && now - c->seen[i].last_seen_ms < OTHER_WORKER_MS &&
		    strcmp(c->seen[i].name, worker))
			return true;
	return false;
}

/* Takes queued positions into l (up to max), but not those whose try by
 * worker failed last while another worker can take them; a mated one
 * (queued before the coordinator valued those itself, or by joseki extend)
 * is valued here and forgotten. 0 or COORD_EBOOK. */
static int take_queued(Coord *c, Lease *l, int max, const char *worker, int64_t now, char *err)
{
	size_t j = 0, i = 0;
	int rc = 0;
	bool others = other_worker(c, worker, now);
	for (; i < c->nqueue && rc == 0; i++) {
		KeyState *ks = co_key_get(c, c->queue[i]);
		if (!ks || ks->where != WHERE_QUEUED) continue; /* stale entry */
		if (l->n >= max || (others && !strcmp(ks->last, worker))) {
			c->queue[j++] = c->queue[i];
			continue;
		}
		if (sfen_parse(c->pos, ks->sfen, NULL, NULL) == 0 &&
		    (rc = value_mated(c, ks->key, err)) != 0) {
			if (rc < 0) break;
			KeyState gone = {.key = ks->key};
			bool had_tries = ks->tries > 0, redo = ks->redo;
			key_forget(c, ks);
			rc = had_tries ? co_keyrec_put(c, &gone, err) : 0;
			if (rc == 0 && redo) rc = co_redo_del(c, gone.key, err);
			continue;
		}
		LPos *lp = &l->pos[l->n++];
		lp->key = ks->key;
		lp->state = POS_PENDING;
		memcpy(lp->sfen, ks->sfen, sizeof lp->sfen);
		ks->where = WHERE_LEASED;
		ks->lease = l->key.hi;
		c->queued--;
	}
	/* On an error the entries not looked at stay queued. */
	for (; i < c->nqueue; i++) c->queue[j++] = c->queue[i];
	c->nqueue = j;
	return rc < 0 ? rc : 0;
}

/* Leases the position k (in c->pos) into l: its KeyState (the selection
 * leased it in the selector). A mated position is valued here instead
 * (value_mated) and not leased. */
static int lease_key(Coord *c, Lease *l, Key k, char *err)
{
	int rc = value_mated(c, k, err);
	if (rc) return rc < 0 ? rc : 0;
	KeyState *ks = co_key_new(c, k);
	if (!ks) return co_broken(c, err, "selection", BOOKDB_ENOMEM);
	ks->where = WHERE_LEASED;
	ks->lease = l->key.hi;
	sfen_write(c->pos, ks->sfen, sizeof ks->sfen);
	LPos *lp = &l->pos[l->n++];
	lp->key = ks->key;
	lp->state = POS_PENDING;
	memcpy(lp->sfen, ks->sfen, sizeof lp->sfen);
	return 0;
}

/* A selection's error: the coordinator is broken. */
static int select_failed(Coord *c, int rc, char *err)
{
	if (rc == SEL_EINVAL)
		return co_broken(c, err, "selection (a leaf its root does not reach)", -1);
	return co_broken(c, err, "selection", BOOKDB_EIO);
}

/* The leaves the selection holds (sr_n) into l, up to max. */
static int take_found(Coord *c, Lease *l, int max, char *err)
{
	int i = 0, rc = 0;
	for (; i < c->sr_n && l->n < max && rc == 0; i++) {
		*c->leaf = c->sr_leaf[i];
		if (sfen_parse(c->pos, c->sr_sfen[i], NULL, NULL) < 0) {
			rc = co_broken(c, err, "selection (a leaf's SFEN)", -1);
			break;
		}
		rc = lease_key(c, l, c->leaf->key, err);
	}
	memmove(c->sr_leaf, c->sr_leaf + i, (size_t)(c->sr_n - i) * sizeof *c->sr_leaf);
	memmove(c->sr_sfen, c->sr_sfen + i, (size_t)(c->sr_n - i) * sizeof *c->sr_sfen);
	c->sr_n -= i;
	return rc;
}

/* Provisional leaves (bookgen/provisional.h): a key not to hand out
 * (leased, thought since the walk read it, or the coordinator's already). */
static bool prov_taken(Coord *c, Key k)
{
	return sel_is_leased(c->sel, k) || sel_is_thought(c->sel, k) || co_key_get(c, k) != NULL;
}

/* The selector's key filter handed to the walk, and the filters a regrow
 * replaced freed once nothing reads them (with no walk, at once): a filter
 * of the book, 2 bytes a position, kept beside the one in use. */
static void hand_filter(Coord *c)
{
	SelKeyFilter kf;
	if (!c->pwalk || (sel_key_filter(c->sel, &kf) && co_pwalk_set_filter(c->pwalk, &kf)))
		sel_free_retired(c->sel);
}

/* Provisional leaves into l (up to max): while the selector's first search
 * is suspended and has gone on past opt.provisional_after_ms, and after it
 * (the caller: l short for want of time) until the selection keeps up
 * (keep_up). Leaves from the book's own values, walked ahead on a thread
 * (coord_pwalk.c) and taken as they are ready, each leased in the selector
 * (a suspended search selects around them when it returns). An acquire
 * that has nothing else waits up to a slice for the first ones (the walk
 * just begun, or behind). */
static int take_provisional(Coord *c, Lease *l, int max, char *err)
{
	hand_filter(c);
	if (c->opt.provisional_after_ms <= 0 || c->prov_over || c->opt.again) return 0;
	if (!c->sr_answered &&
	    (!c->select_busy || clock_ms_f() - c->open_ms < c->opt.provisional_after_ms))
		return 0;
	if (!c->pw_leaf && !(c->pw_leaf = calloc(COORD_MAX_BATCH, sizeof *c->pw_leaf)))
		return co_broken(c, err, "provisional leaves", BOOKDB_ENOMEM);
	/* A walk just begun gets the selector's key filter at once (later ones
	 * at the top): it reads no record of a child the filter turns away
	 * (most of them, each a read from the disk on a book larger than
	 * memory). */
	if (!c->pwalk) {
		if (co_pwalk_start(&c->pwalk, c->db, c->plan) < 0)
			return co_broken(c, err, "provisional leaves", BOOKDB_ENOMEM);
		hand_filter(c);
	}
	double wait = l->n > 0                     ? 0
	              : c->opt.select_slice_ms > 0 ? c->opt.select_slice_ms
	                                           : COORD_SLICE_MS;
	int n;
	bool dry = co_pwalk_ready(c->pwalk) == 0;
	double t0 = dry ? clock_ms_f() : 0;
	while (l->n < max && (n = co_pwalk_take(c->pwalk, c->pw_leaf, max - l->n, wait)) != 0) {
		if (n < 0) return co_broken(c, err, "provisional leaves", BOOKDB_EIO);
		wait = 0;
		for (int i = 0; i < n; i++) {
			Key k = c->pw_leaf[i].key;
			if (prov_taken(c, k) ||
			    sfen_parse(c->pos, c->pw_leaf[i].sfen, NULL, NULL) < 0)
				continue;
			int rc = sel_lease(c->sel, k);
			if (rc < 0) return select_failed(c, rc, err);
			int before = l->n;
			if ((rc = lease_key(c, l, k, err)) < 0) return rc;
			c->provisional += (uint64_t)(l->n - before);
		}
	}
	if (dry) {
		c->pw_dry++;
		c->pw_dry_ms += clock_ms_f() - t0;
	}
	return 0;
}

/* After the first search: whether the selection keeps up, an acquire of
 * asked positions that it answered with got, short for want of time
 * (behind) or not. Provisional leaves are over once it has answered every
 * acquire in full for opt.provisional_after_ms, or at once when the first
 * search needed none; they are back when, over a span as long, more than
 * an eighth of the positions asked were missing for want of time (a
 * restart whose book is not yet in memory, a search that meets a part of
 * the book nobody read lately). */
static void keep_up(Coord *c, int asked, int got, bool behind, int64_t now_ms)
{
	if (!c->sr_answered) return;
	bool full = got >= asked;
	if (c->prov_over) {
		if (c->opt.provisional_after_ms <= 0 || c->opt.again) return;
		if (c->behind_from_ms < 0) {
			c->behind_from_ms = now_ms;
			c->win_asked = c->win_short = 0;
		}
		c->win_asked += (uint64_t)asked;
		if (behind && !full) c->win_short += (uint64_t)(asked - got);
		if ((double)(now_ms - c->behind_from_ms) < c->opt.provisional_after_ms) return;
		bool back = c->win_short * 8 > c->win_asked;
		c->behind_from_ms = -1;
		if (back) {
			c->prov_over = false;
			c->prov_back++;
			c->full_since_ms = -1;
			/* A walk that ended (every line walked) is begun anew. */
			if (co_pwalk_pause(c->pwalk, false) < 0) {
				c->pw_spared += co_pwalk_spared(c->pwalk);
				co_pwalk_stop(c->pwalk);
				c->pwalk = NULL;
			}
		}
		return;
	}
	if (c->provisional == 0 && c->prov_back == 0) {
		c->prov_over = true;
	} else if (!full) {
		c->full_since_ms = -1;
	} else if (c->full_since_ms < 0) {
		c->full_since_ms = now_ms;
	} else if ((double)(now_ms - c->full_since_ms) >= c->opt.provisional_after_ms) {
		c->prov_over = true;
	}
	if (c->prov_over) co_pwalk_pause(c->pwalk, true);
}

/* Provisional leaves are being handed out (the walk begun and not over),
 * and the selection, on its thread, has more to find: a search suspended,
 * or its last slice stopped by time with leaves still coming. */
static bool behind_with_walk(const Coord *c)
{
	return c->sr_started && c->pwalk && !c->prov_over && c->opt.provisional_after_ms > 0 &&
	       !c->opt.again && (co_select_paused(c) || c->sr_rc == 1);
}

/* New leaves from the selector into l (up to max), for a slice of time (the
 * round's, when the service began one); with provisional leaves for what
 * is missing while the selection is behind (take_provisional). While the
 * walk's leaves make up for a selection that is behind, an acquire gives it
 * no slice of its own: it takes the stock selected beside the service and
 * the walk's leaves, and the selection goes on between rounds and during
 * the commits (a slice here held the round, and every request waiting for
 * it, 20 ms longer). */
static int take_selected(Coord *c, Lease *l, int max, int64_t now_ms, char *err)
{
	c->select_busy = false;
	int rc = take_found(c, l, max, err);
	if (rc >= 0 && l->n >= max) keep_up(c, max, l->n, false, now_ms);
	if (rc < 0 || l->n >= max) return rc;
	if (behind_with_walk(c)) {
		c->select_busy = co_select_paused(c);
		c->sr_demand = max - l->n;
		keep_up(c, max, l->n, true, now_ms);
		return take_provisional(c, l, max, err);
	}
	/* A checkpoint's child writing: the walk's leaves, no search
	 * (co_checkpoint_running). The selector's changes are held meanwhile
	 * (sel_hold): a search would find the leaves it found before, leased
	 * since, again and again. The leases made ahead answer the acquires of
	 * those seconds; one that gets none is told to come back in a second. */
	if (co_select_frozen(c)) {
		c->select_busy = true;
		return take_provisional(c, l, max, err);
	}
	double ms = c->opt.select_slice_ms;
	if (ms >= 0 && c->round_until > 0) {
		double left = c->round_until - clock_ms_f();
		if (left < ms) ms = left > 0.05 ? left : 0.05;
	}
	c->sr_begun = true;
	rc = co_select_step(c, ms, max - l->n);
	if (rc < 0) return select_failed(c, rc, err);
	if (rc == CO_SELECT_BUSY) {
		c->select_busy = true;
		c->sr_busy++;
	}
	if (rc != 0) c->sr_dry = false; /* leaves again: the stock sought between requests */
	if ((rc = take_found(c, l, max, err)) < 0) return rc;
	/* Short of positions for want of time: the selection goes on between
	 * requests for what was missing. */
	bool short_of_time = l->n < max && (c->select_busy || c->sr_rc == 1);
	c->sr_demand = short_of_time ? max - l->n : 0;
	keep_up(c, max, l->n, short_of_time, now_ms);
	if (short_of_time && (rc = take_provisional(c, l, max, err)) < 0) return rc;
	return 0;
}

/* The leaves the selection keeps in stock between requests: what the last
 * acquire lacked, or opt.select_ahead (0: the most asked in one of the last
 * rounds and what the reserve of leases made ahead lacks), whichever is
 * more. */
static int select_target(const Coord *c)
{
	int ahead = c->opt.select_ahead < 0   ? 0
	            : c->opt.select_ahead > 0 ? c->opt.select_ahead
	                                      : c->sr_ahead;
	/* (The round's acquires take the first, the reserve the rest.) */
	if (c->opt.select_ahead == 0 && c->ahead_lack > 0)
		ahead = ahead + c->ahead_lack < COORD_MAX_BATCH ? ahead + c->ahead_lack
		                                                : COORD_MAX_BATCH;
	return c->sr_demand > ahead ? c->sr_demand : ahead;
}

/* The selection has work to go on with between requests (the thread is
 * held): a search suspended, the first search not begun, or a stock short
 * of select_target that was not found dry this round. */
static bool select_pending(const Coord *c)
{
	return !c->broken && c->sr_started &&
	       (co_select_paused(c) || !c->sr_begun || (c->sr_n < select_target(c) && !c->sr_dry));
}

/* The selection beside the service (coord_select_ahead) stopped, and its
 * result taken in: the service's own calls (and a checkpoint's) use the
 * selector after this. 0 or COORD_EBOOK. */
int co_select_take_in(Coord *c, char *err)
{
	int rc = co_select_hold(c);
	if (rc == 0) c->sr_dry = true; /* no leaf now: not tried again this round */
	return rc < 0 ? select_failed(c, rc, err) : 0;
}

void coord_select_ahead(Coord *c)
{
	if (c->broken || !c->sr_started || c->sr_bg || co_select_frozen(c)) return;
	int target = select_target(c);
	bool more = c->sr_n < target && !c->sr_dry;
	if (!more && c->sr_begun && !co_select_paused(c)) return;
	c->sr_begun = true;
	co_select_begin(c, more ? target : c->sr_n + 1);
}

void coord_round_begin(Coord *c)
{
	c->round_until = clock_ms_f() + c->opt.select_slice_ms;
	/* The stock the selection keeps ahead: the most positions asked in one
	 * of the last rounds that asked. */
	if (c->round_asked > 0) {
		c->round_ring[c->round_at++ % AHEAD_ROUNDS] = c->round_asked;
		c->round_asked = 0;
		c->sr_ahead = 0;
		for (int i = 0; i < AHEAD_ROUNDS; i++)
			if (c->round_ring[i] > c->sr_ahead) c->sr_ahead = c->round_ring[i];
		if (c->sr_ahead > COORD_MAX_BATCH) c->sr_ahead = COORD_MAX_BATCH;
	}
	c->sr_dry = false;
}

bool coord_select_busy(const Coord *c)
{
	return c->select_busy;
}

int coord_select_idle(Coord *c, double ms, char *err)
{
	if (c->broken) return COORD_EBOOK;
	int rc = co_select_take_in(c, err);
	if (rc < 0 || !select_pending(c) || co_select_frozen(c)) return rc;
	c->sr_begun = true;
	if (c->opt.select_slice_ms > 0 && c->opt.select_slice_ms < ms) ms = c->opt.select_slice_ms;
	double t0 = clock_ms_f();
	/* The suspended search to its end (one leaf more), or the stock. */
	int target = select_target(c);
	rc = co_select_step(c, ms, c->sr_n < target ? target : c->sr_n + 1);
	c->select_ms += clock_ms_f() - t0;
	if (rc == 0) { /* nothing more to select now */
		c->sr_demand = 0;
		c->sr_dry = true;
	}
	return rc < 0 ? select_failed(c, rc, err) : 0;
}

/* The lease l as an acquire's answer. */
static void lease_out(CoordLease *out, const Lease *l)
{
	out->id = l->key.hi;
	out->expires_ms = l->expires_ms;
	out->n = l->n;
	for (int i = 0; i < l->n; i++) {
		out->pos[i].key = l->pos[i].key;
		memcpy(out->pos[i].sfen, l->pos[i].sfen, sizeof out->pos[i].sfen);
	}
}

/* Checks go first but not where a worker could tell them: l shuffled when it
 * holds any. */
static void shuffle_checks(Coord *c, Lease *l)
{
	bool checks = false;
	for (int i = 0; i < l->n; i++) checks |= l->pos[i].check;
	for (int i = l->n - 1; checks && i > 0; i--) {
		int j = (int)(rng_next(&c->spot_rng) % (uint64_t)(i + 1));
		LPos t = l->pos[i];
		l->pos[i] = l->pos[j];
		l->pos[j] = t;
	}
}

/* An acquire's worker and size noted: the worker seen, the stock the
 * selection keeps, the sizes leases are made ahead of and whether they are. */
static void acquire_noted(Coord *c, const CoordWorker *w, int max, int64_t now_ms)
{
	note_worker(c, w, now_ms);
	co_spot_seen(c, w->token, now_ms);
	c->round_asked += max;
	/* Leases are made ahead for the acquires of a round while they come often. */
	c->ahead_on = c->last_acquire_ms && now_ms - c->last_acquire_ms <= COORD_AHEAD_GAP_MS;
	c->last_acquire_ms = now_ms;
	if (c->nasked < COORD_AHEAD_MAX) c->asked[c->nasked++] = max;
	c->ahead_size = max;
	seconds_add(c->acq_stamp, c->acq_count, AHEAD_RATE_SECS + 1, now_ms, 1);
}

/* The leases made ahead to keep waiting: the acquires of COORD_AHEAD_COVER_MS
 * at their rate over the last AHEAD_RATE_SECS whole seconds (none before
 * there were whole seconds), at most COORD_AHEAD_MAX. */
static size_t ahead_reserve(const Coord *c, int64_t now_ms)
{
	int64_t sec = now_ms / 1000;
	uint64_t n = seconds_sum(c->acq_stamp, c->acq_count, AHEAD_RATE_SECS + 1,
	                         sec - AHEAD_RATE_SECS, sec);
	uint64_t want = (n * COORD_AHEAD_COVER_MS + AHEAD_RATE_SECS * 1000 - 1) /
	                ((uint64_t)AHEAD_RATE_SECS * 1000);
	return want < COORD_AHEAD_MAX ? (size_t)want : COORD_AHEAD_MAX;
}

int coord_acquire(Coord *c, CoordLease *out, const CoordWorker *w, int max, int64_t now_ms,
                  char *err)
{
	if (c->broken) return COORD_EBOOK;
	out->n = 0;
	if (max < 1 || max > COORD_MAX_BATCH)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL, "max must be 1..%d, not %d",
		                  COORD_MAX_BATCH, max);
	if (coord_quarantined(c, w->token, err)) return COORD_EQUARANTINE;
	int rc = co_select_take_in(c, err);
	if (rc < 0) return rc;
	acquire_noted(c, w, max, now_ms);
	Lease lease = {.key = {0, c->next_id}}, *l = &lease; /* kept once it has positions */
	if (!(l->pos = calloc((size_t)max, sizeof *l->pos))) return COORD_ENOMEM;
	l->expires_ms = now_ms + (int64_t)(c->opt.lease_seconds * 1000);
	snprintf(l->token, sizeof l->token, "%s", w->token ? w->token : "");
	snprintf(l->worker, sizeof l->worker, "%s", w->name ? w->name : "");
	double t0 = clock_ms_f();
	/* Spot checks first: each holds a result back from the book. */
	rc = co_spot_take(c, l, max, l->token, err);
	if (rc == 0) rc = take_queued(c, l, max, l->worker, now_ms, err);
	if (rc == 0) rc = take_selected(c, l, max, now_ms, err);
	c->select_ms += clock_ms_f() - t0;
	if (rc < 0 || l->n == 0) {
		free(l->pos);
		return rc;
	}
	shuffle_checks(c, l);
	l->pending = l->n;
	if (!(l = co_lease_keep(c, &lease))) {
		free(lease.pos);
		return co_broken(c, err, "leasing", BOOKDB_ENOMEM);
	}
	c->next_id++;
	if ((rc = co_lease_put(c, l, err)) < 0 || (rc = co_next_id_put(c, err)) < 0) return rc;
	lease_out(out, l);
	return l->n;
}

/* Makes a lease ahead of max positions: up to COORD_AHEAD_CHECKS spot checks
 * waiting (whatever their tokens: the lease then goes to no token they
 * exclude, coord_ahead_export), then selected positions (returned ones go to
 * the acquires, which know the worker): from the leaves the selection found
 * beside the service, and while it is behind, the walk's provisional leaves
 * (as an acquire takes them: take_selected); no slice of selection of its
 * own (the round's commit would wait for it). 1 when one was made, 0 when
 * there are not max leaves ready now, or COORD_EBOOK. */
static int make_ahead_one(Coord *c, int max, int64_t now_ms, char *err)
{
	bool behind = c->sr_n < max && behind_with_walk(c);
	if (c->sr_n < max && (!behind || c->sr_n + co_pwalk_ready(c->pwalk) < max)) return 0;
	Lease lease = {.key = {0, c->next_id}, .bind = LEASE_AHEAD, .made_ms = now_ms}, *l = &lease;
	/* The record says so until it is bound: a crash before then leaves it
	 * expiring no sooner than a lease bound to the last moment it may be. */
	l->expires_ms = now_ms + (int64_t)(c->opt.lease_seconds * 1000) + COORD_AHEAD_KEEP_MS;
	if (!(l->pos = calloc((size_t)max, sizeof *l->pos)))
		return co_broken(c, err, "leasing", BOOKDB_ENOMEM);
	int rc = co_spot_take(c, l, max < COORD_AHEAD_CHECKS ? max : COORD_AHEAD_CHECKS, NULL, err);
	if (rc == 0) rc = take_found(c, l, max, err);
	if (rc == 0 && behind) {
		c->sr_demand = max - l->n;
		keep_up(c, max, l->n, true, now_ms);
		rc = take_provisional(c, l, max, err);
	} else if (rc == 0) {
		keep_up(c, max, l->n, false, now_ms);
	}
	if (rc < 0 || l->n == 0) {
		free(l->pos);
		return rc;
	}
	shuffle_checks(c, l);
	l->pending = l->n;
	if (array_grow((void **)&c->ahead, &c->capahead, c->nahead + 1, sizeof *c->ahead, 16) ||
	    !(l = co_lease_keep(c, &lease))) {
		free(lease.pos);
		return co_broken(c, err, "leasing", BOOKDB_ENOMEM);
	}
	c->next_id++;
	c->ahead[c->nahead++] = l->key.hi;
	if ((rc = co_lease_put(c, l, err)) < 0 || (rc = co_next_id_put(c, err)) < 0) return rc;
	return 1;
}

int coord_make_ahead(Coord *c, int64_t now_ms, char *err)
{
	int nasked = c->nasked;
	c->nasked = 0;
	if (c->broken) return COORD_EBOOK;
	if (!c->ahead_on) c->ahead_lack = 0;
	if (!c->ahead_on || !nasked) return 0;
	int rc = co_select_take_in(c, err);
	double t0 = clock_ms_f();
	/* (Sizes the leaves ready do not fill are passed over.) */
	for (int i = 0; rc == 0 && i < nasked && c->nahead < COORD_AHEAD_MAX; i++)
		if ((rc = make_ahead_one(c, c->asked[i], now_ms, err)) > 0) rc = 0;
	/* Then the reserve, as far as the leaves ready go. */
	size_t reserve = ahead_reserve(c, now_ms);
	while (rc == 0 && c->nahead < reserve &&
	       (rc = make_ahead_one(c, c->ahead_size, now_ms, err)) > 0)
		rc = 0;
	/* What it lacks, the selection looks for beside the service. */
	uint64_t lack = c->nahead < reserve ? (reserve - c->nahead) * (uint64_t)c->ahead_size : 0;
	c->ahead_lack = lack < COORD_MAX_BATCH ? (int)lack : COORD_MAX_BATCH;
	c->select_ms += clock_ms_f() - t0;
	return rc < 0 ? rc : 0;
}

/* The ahead lease at i of c->ahead released: its positions back to the
 * selection (those owed a thought queued), its record deleted. 0 or
 * COORD_EBOOK. */
static int ahead_release(Coord *c, size_t i, int64_t now_ms, char *err)
{
	uint64_t id = c->ahead[i];
	memmove(c->ahead + i, c->ahead + i + 1, (c->nahead - i - 1) * sizeof *c->ahead);
	c->nahead--;
	if (i < c->ahead_ready) c->ahead_ready--;
	if (i < c->ahead_out) c->ahead_out--;
	Lease *l = co_lease_get(c, id);
	if (!l) return 0;
	for (int k = 0; k < l->n; k++) {
		if (l->pos[k].state != POS_PENDING) continue;
		/* A check back to those waiting, without a try (unless a quarantine
		 * made it plain work meanwhile, leased here: then queued, below). */
		int rc =
		    l->pos[k].check ? co_spot_return(c, id, l->pos[k].key, false, now_ms, err) : 0;
		if (rc < 0) return rc;
		KeyState *ks = co_key_get(c, l->pos[k].key);
		if (!ks || ks->where != WHERE_LEASED || ks->lease != id) continue;
		if (l->pos[k].owed) {
			if (co_queue_push(c, ks) < 0)
				return co_broken(c, err, "queueing", BOOKDB_ENOMEM);
			continue;
		}
		key_forget(c, ks);
		if (sel_release(c->sel, l->pos[k].key) < 0)
			return co_broken(c, err, "releasing", BOOKDB_ENOMEM);
	}
	c->ahead_released++;
	int rc = co_lease_del_rec(c, id, err);
	lease_drop(c, l);
	return rc;
}

/* Leases made ahead not handed over and not taken within COORD_AHEAD_KEEP_MS
 * (all: every one, handed over or not) released. 0 or COORD_EBOOK. */
static int ahead_expire(Coord *c, int64_t now_ms, bool all, char *err)
{
	int rc = 0;
	for (size_t i = all ? 0 : c->ahead_out; rc == 0 && i < c->nahead;) {
		const Lease *l = co_lease_get(c, c->ahead[i]);
		if (all || !l || l->made_ms + COORD_AHEAD_KEEP_MS <= now_ms)
			rc = ahead_release(c, i, now_ms, err);
		else
			i++;
	}
	return rc;
}

/* The index of id among the leases made ahead and handed over, or -1. */
static ssize_t ahead_find(const Coord *c, uint64_t id)
{
	for (size_t i = 0; i < c->ahead_out; i++)
		if (c->ahead[i] == id) return (ssize_t)i;
	return -1;
}

/* Whether token may not have lease l: a spot check in it is of its result,
 * or its check of it is the one disputed. */
static bool lease_excludes(Coord *c, const Lease *l, const char *token)
{
	for (int i = 0; i < l->n; i++) {
		const SpotCheck *k = l->pos[i].check ? co_spot_check(c, l->pos[i].key) : NULL;
		if (k &&
		    (!strcmp(k->token, token) || (k->stage == 2 && !strcmp(k->checker, token))))
			return true;
	}
	return false;
}

int coord_ahead_export(Coord *c, CoordAhead *out, int max)
{
	int n = 0;
	for (; n < max && c->ahead_out < c->ahead_ready; n++) {
		const Lease *l = co_lease_get(c, c->ahead[c->ahead_out++]);
		lease_out(&out[n].lease, l);
		out[n].lease.expires_ms = 0; /* set when it is handed out */
		out[n].nexclude = 0;
		for (int i = 0; i < l->n; i++) {
			const SpotCheck *k =
			    l->pos[i].check ? co_spot_check(c, l->pos[i].key) : NULL;
			for (int t = 0; k && t < (k->stage == 2 ? 2 : 1); t++)
				if (out[n].nexclude < COORD_AHEAD_CHECKS * 2)
					snprintf(out[n].exclude[out[n].nexclude++],
					         COORD_NAME_MAX + 1, "%s",
					         t ? k->checker : k->token);
		}
	}
	return n;
}

bool coord_ahead_excludes(const CoordAhead *a, const char *token)
{
	for (int i = 0; i < a->nexclude; i++)
		if (!strcmp(a->exclude[i], token ? token : "")) return true;
	return false;
}

bool coord_ahead_ok(const Coord *c)
{
	if (c->broken || c->queued) return false;
	for (size_t i = 0; i < c->nstok; i++)
		if (c->stok[i].quarantined) return false;
	return true;
}

int coord_bind(Coord *c, uint64_t id, const CoordWorker *w, int max, int64_t expires_ms,
               int64_t now_ms, char *err)
{
	if (c->broken) return COORD_EBOOK;
	ssize_t i = ahead_find(c, id);
	if (i < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
		                  "lease %016llx is no lease made ahead and handed over",
		                  (unsigned long long)id);
	/* A token put in quarantine since: its lease goes back (its results
	 * would be refused). */
	if (coord_quarantined(c, w->token, err)) {
		int rc = ahead_release(c, (size_t)i, now_ms, err);
		return rc < 0 ? rc : COORD_EQUARANTINE;
	}
	acquire_noted(c, w, max, now_ms);
	memmove(c->ahead + i, c->ahead + i + 1, (c->nahead - (size_t)i - 1) * sizeof *c->ahead);
	c->nahead--;
	c->ahead_ready--;
	c->ahead_out--;
	Lease *l = co_lease_get(c, id);
	l->bind = LEASE_BOUND;
	snprintf(l->token, sizeof l->token, "%s", w->token ? w->token : "");
	snprintf(l->worker, sizeof l->worker, "%s", w->name ? w->name : "");
	l->expires_ms = expires_ms;
	c->ahead_handed++;
	return co_lease_put(c, l, err);
}

int coord_ahead_release(Coord *c, uint64_t id, int64_t now_ms, char *err)
{
	if (c->broken) return COORD_EBOOK;
	ssize_t i = ahead_find(c, id);
	return i < 0 ? 0 : ahead_release(c, (size_t)i, now_ms, err);
}

/* ---- submit ---- */

static int find_pos(const Lease *l, Key k)
{
	for (int i = 0; i < l->n; i++)
		if (key_equal(l->pos[i].key, k)) return i;
	return -1;
}

/* The lease id for w, or COORD_ENOLEASE (never issued, forgotten, another
 * token's). A lease read back unbound after a crash (LEASE_UNKNOWN) is
 * returned unbound to a token that may have it (its spot checks are not of
 * that token's results): the request claims it once its body is accepted
 * (claim), so that a refused one leaves it to the next. */
static int lookup(Coord *c, Lease **out, uint64_t id, const CoordWorker *w, char *err)
{
	*out = NULL;
	if (id == 0 || id >= c->next_id)
		return errmsg_set(err, COORD_ERRLEN, COORD_ENOLEASE,
		                  "lease %016llx was never issued", (unsigned long long)id);
	Lease *l = co_lease_get(c, id);
	const char *token = w->token ? w->token : "";
	bool mine =
	    !l || (l->bind == LEASE_UNKNOWN ? !lease_excludes(c, l, token)
	                                    : l->bind == LEASE_BOUND && !strcmp(l->token, token));
	if (!mine)
		return errmsg_set(err, COORD_ERRLEN, COORD_ENOLEASE,
		                  "lease %016llx is not this token's", (unsigned long long)id);
	*out = l; /* NULL: a finished lease whose positions are all analysed */
	return 0;
}

/* A lease made ahead and perhaps handed out before a crash, claimed: the
 * first token whose request about it is accepted is the one it was handed
 * to. 0 or COORD_EBOOK. */
static int claim(Coord *c, Lease *l, const CoordWorker *w, char *err)
{
	if (!l || l->bind != LEASE_UNKNOWN) return 0;
	l->bind = LEASE_BOUND;
	snprintf(l->token, sizeof l->token, "%s", w->token ? w->token : "");
	snprintf(l->worker, sizeof l->worker, "%s", w->name ? w->name : "");
	return co_lease_put(c, l, err);
}

/* Checks one line against the position in c->pos; fills the search line. */
static int check_line(Coord *c, SearchLine *sl, const CoordLine *cl, const char *hex, int i,
                      char *err)
{
	char perr[SHOGI_ERRLEN], q[24];
	memset(sl, 0, sizeof *sl);
	if (usi_move_parse_legal(&sl->move, c->pos, cl->move, strlen(cl->move), perr) < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
		                  "result %s, move %d: '%s' is not a legal move here: %s", hex,
		                  i + 1, errmsg_escape(q, sizeof q, cl->move, strlen(cl->move)),
		                  perr);
	if (cl->mate ? (cl->score == 0 || cl->score > 1000 || cl->score < -1000)
	             : (cl->score > VALUE_MATE || cl->score < -VALUE_MATE))
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
		                  "result %s, move %d: score %s %d out of range", hex, i + 1,
		                  cl->mate ? "mate" : "cp", cl->score);
	if (cl->depth < 0 || cl->depth > 1000)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
		                  "result %s, move %d: depth %d out of range 0..1000", hex, i + 1,
		                  cl->depth);
	sl->value = cl->mate ? (cl->score > 0 ? VALUE_MATE - cl->score : -VALUE_MATE - cl->score)
	                     : cl->score;
	sl->mate = cl->mate;
	sl->mate_plies = cl->mate ? cl->score : 0;
	sl->depth = cl->depth;
	sl->nodes = cl->nodes;
	sl->multipv = i + 1;
	sl->pv_len = 1;
	sl->pv[0] = sl->move;
	usi_move_write(sl->move, sl->usi);
	return 0;
}

/* What to do with one result (RES_*). A result for a position analysed
 * meanwhile (or held back for a spot check, or already answered from this
 * lease) is ignored, but its moves are still checked (against the lease's
 * SFEN, or the book's record when the lease is finished): an illegal move is
 * refused whatever the position's state. A spot check's answer counts only
 * while its lease position is pending. */
enum { RES_IGNORE, RES_STORE, RES_FAILED, RES_CHECK, RES_CHECK_FAILED, RES_DISPROVED };
static int classify(Coord *c, const Lease *l, const CoordResult *r, char *err)
{
	char hex[KEY_HEX_LEN];
	key_to_hex(r->key, hex);
	int i = l ? find_pos(l, r->key) : -1;
	if (l && i < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL, "key %s is not in lease %016llx",
		                  hex, (unsigned long long)l->key.hi);
	bool check = l && l->pos[i].check;
	bool done = check ? l->pos[i].state != POS_PENDING
	                  : co_done(c, r->key) || co_spot_check_held(c, r->key) ||
	                        (l && l->pos[i].state == POS_DONE);
	if (!l && !done)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
		                  "key %s is not in this (finished) lease", hex);
	if (r->failed)
		return done || l->pos[i].state != POS_PENDING ? RES_IGNORE
		       : check                                ? RES_CHECK_FAILED
		                                              : RES_FAILED;
	if (r->nlines < 1 || r->nlines > COORD_MAX_LINES)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
		                  "result %s: 1..%d moves wanted, not %d", hex, COORD_MAX_LINES,
		                  r->nlines);
	char perr[SHOGI_ERRLEN];
	if (l) {
		if (sfen_parse(c->pos, l->pos[i].sfen, NULL, perr) < 0)
			return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
			                  "result %s: stored SFEN: %s", hex, perr);
	} else {
		int g = bookdb_writer_get(c->rec, c->w, r->key);
		if (g == BOOKDB_ENOTFOUND)
			return RES_IGNORE; /* not in the book: nothing to check */
		if (g < 0) return co_broken(c, err, "reading an analysed position", g);
		if (bookdb_record_position(c->pos, c->rec, perr) < 0)
			return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
			                  "result %s: the book's record: %s", hex, perr);
	}
	for (int m = 0; m < r->nlines; m++) {
		SearchLine sl;
		int rc = check_line(c, &sl, &r->lines[m], hex, m, err);
		if (rc < 0) return rc;
		for (int k = 0; k < m; k++)
			if (!strcmp(r->lines[k].move, r->lines[m].move))
				return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
				                  "result %s: move %s given twice", hex,
				                  r->lines[m].move);
	}
	if (done) return RES_IGNORE;
	/* A mate claim the position disproves is no noise: the token lies. */
	if (co_spot_on(c)) {
		char why[COORD_ERRLEN];
		if (co_spot_disproved(c, r, why)) {
			errmsg_set(err, COORD_ERRLEN, 0, "its result for %s: %s", hex, why);
			return RES_DISPROVED;
		}
	}
	return check ? RES_CHECK : RES_STORE;
}

int co_key_done(Coord *c, Key k, char *err)
{
	KeyState *ks = co_key_get(c, k);
	if (!ks) return 0;
	bool had_tries = ks->tries > 0, redo = ks->redo;
	key_forget(c, ks);
	int rc = 0;
	if (had_tries) {
		KeyState gone = {.key = k};
		rc = co_keyrec_put(c, &gone, err);
	}
	if (rc == 0 && redo) rc = co_redo_del(c, k, err);
	return rc;
}

int co_store(Coord *c, const char *sfen, const CoordResult *r, int64_t now, char *err)
{
	char perr[SHOGI_ERRLEN]; /* it parsed when it was checked */
	if (sfen_parse(c->pos, sfen, NULL, perr) < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL, "stored position: %s", perr);
	c->res->nlines = r->nlines < SEARCH_MULTIPV_MAX ? r->nlines : SEARCH_MULTIPV_MAX;
	for (int m = 0; m < c->res->nlines; m++)
		check_line(c, &c->res->lines[m], &r->lines[m], "", m, NULL);
	char terr[THINK_ERRLEN];
	bool replaced = false;
	if ((c->opt.again
	         ? think_store_again(c->w, c->sel, c->rec, c->again_new, r->key, c->pos, c->res,
	                             &c->opt.budget, c->opt.campaign, &replaced, terr)
	         : think_store(c->w, c->sel, c->rec, r->key, c->pos, c->res, &c->opt.budget,
	                       terr)) < 0) {
		c->broken = true;
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s", terr);
	}
	if (co_journal_note(c, r->key) < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s",
		                  "out of memory");
	int rc = co_key_done(c, r->key, err);
	if (rc < 0) return rc;
	c->results++;
	c->again_replaced += replaced;
	c->since_minimax++;
	count_results(c, now, 1);
	return 0;
}

/* What a request about lease id begins with: the Coord whole, the token
 * not in quarantine, the selection beside the service taken in, the lease
 * looked up for *w (*l NULL: finished), *w noted. One that names no worker
 * (an abort's empty body) is taken as the lease's worker's (*w then points at
 * named) and adds no worker of its own to the status. 0 or a negative code. */
static int lease_request(Coord *c, Lease **l, uint64_t id, const CoordWorker **w,
                         CoordWorker *named, int64_t now, char *err)
{
	*l = NULL;
	if (c->broken) return COORD_EBOOK;
	if (coord_quarantined(c, (*w)->token, err)) return COORD_EQUARANTINE;
	int rc = co_select_take_in(c, err);
	if (rc == 0) rc = lookup(c, l, id, *w, err);
	if (rc < 0) return rc;
	if ((*w)->name) {
		note_worker(c, *w, now);
	} else {
		*named = **w;
		named->name = *l ? (*l)->worker : NULL;
		*w = named;
	}
	return 0;
}

int coord_submit(Coord *c, uint64_t id, const CoordWorker *w, const CoordResult *res, size_t n,
                 int64_t now_ms, char *err)
{
	Lease *l;
	CoordWorker named;
	int rc = lease_request(c, &l, id, &w, &named, now_ms, err);
	if (rc < 0) return rc;
	if (n > COORD_MAX_BATCH)
		return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL, "at most %d results, not %zu",
		                  COORD_MAX_BATCH, n);
	/* Each result's store reads its record's page: on a book larger than
	 * memory, reads from disk, all asked for now rather than one by one. */
	Key keys[COORD_MAX_BATCH];
	for (size_t i = 0; i < n; i++) keys[i] = res[i].key;
	sel_read_ahead(c->sel, keys, n);
	uint8_t what[COORD_MAX_BATCH];
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < i; k++)
			if (key_equal(res[k].key, res[i].key)) {
				char hex[KEY_HEX_LEN];
				key_to_hex(res[i].key, hex);
				return errmsg_set(err, COORD_ERRLEN, COORD_EINVAL,
				                  "key %s given twice", hex);
			}
		if ((rc = classify(c, l, &res[i], err)) < 0) return rc;
		if (rc == RES_DISPROVED) {
			/* Nothing of the body is written; the token is refused from now on. */
			char why[COORD_ERRLEN];
			snprintf(why, sizeof why, "%s", err);
			if ((rc = co_spot_quarantine(c, w->token, why, now_ms, err)) < 0) return rc;
			(void)coord_quarantined(c, w->token, err);
			return COORD_EQUARANTINE;
		}
		what[i] = (uint8_t)rc;
	}
	if ((rc = claim(c, l, w, err)) < 0) return rc;
	int stored = 0;
	bool changed = false;
	double t0 = clock_ms_f();
	for (size_t i = 0; i < n; i++) {
		if (what[i] == RES_IGNORE) continue;
		int p = find_pos(l, res[i].key);
		LPos *lp = &l->pos[p];
		if (lp->state == POS_PENDING) l->pending--;
		changed = true;
		/* A check of this lease may have become plain work meanwhile: a
		 * verdict earlier in this body put its token in quarantine. */
		int kind = what[i];
		if (!lp->check && kind == RES_CHECK) kind = RES_STORE;
		if (!lp->check && kind == RES_CHECK_FAILED) kind = RES_FAILED;
		if (kind == RES_FAILED || kind == RES_CHECK_FAILED) {
			lp->state = POS_RETURNED;
			KeyState *ks = co_key_get(c, res[i].key);
			if (kind == RES_CHECK_FAILED)
				rc = co_spot_return(c, l->key.hi, res[i].key, true, now_ms, err);
			else if (ks)
				rc = fail_try(c, ks, l->worker, err);
			if (rc < 0) return rc;
			continue;
		}
		lp->state = POS_DONE;
		rc = kind == RES_CHECK ? co_spot_answer(c, l, p, &res[i], w, now_ms, err) : 0;
		if (rc == 0) rc = co_spot_result(c, l, p, &res[i], w, now_ms, err);
		if (rc < 0) return rc;
		stored++;
	}
	c->store_ms += clock_ms_f() - t0;
	/* Positions analysed elsewhere meanwhile count as done here (also when
	 * every result was ignored for that reason: the lease is then finished,
	 * not left live until it expires). A finished lease (l NULL) took nothing. */
	if (!l) return 0;
	bool any_returned = false;
	for (int i = 0; i < l->n; i++) {
		if (l->pos[i].state != POS_DONE && co_done(c, l->pos[i].key)) {
			if (l->pos[i].state == POS_PENDING) l->pending--;
			l->pos[i].state = POS_DONE;
			changed = true;
		}
		any_returned |= l->pos[i].state == POS_RETURNED;
	}
	if (!changed) return 0;
	if (!l->pending && !any_returned) {
		rc = co_lease_del_rec(c, l->key.hi, err);
		lease_drop(c, l);
		return rc < 0 ? rc : stored;
	}
	return (rc = co_lease_put(c, l, err)) < 0 ? rc : stored;
}

void coord_submit_warm(Coord *c, const CoordResult *res, size_t n)
{
	Key keys[COORD_MAX_BATCH];
	if (n > COORD_MAX_BATCH) n = COORD_MAX_BATCH;
	for (size_t i = 0; i < n; i++) keys[i] = res[i].key;
	bookdb_prefetch_now(c->db, keys, n);
}

/* ---- abort, expiry, commit ---- */

int co_lease_return(Coord *c, Lease *l, int64_t now, char *err)
{
	if (!l->pending) return 0;
	for (int i = 0; i < l->n; i++) {
		if (l->pos[i].state != POS_PENDING) continue;
		l->pos[i].state = POS_RETURNED;
		if (l->pos[i].check) {
			int rc = co_spot_return(c, l->key.hi, l->pos[i].key, false, now, err);
			if (rc < 0) return rc;
			continue;
		}
		KeyState *ks = co_key_get(c, l->pos[i].key);
		if (ks && ks->where == WHERE_LEASED && ks->lease == l->key.hi &&
		    co_queue_push(c, ks) < 0)
			return co_broken(c, err, "queueing", BOOKDB_ENOMEM);
	}
	l->pending = 0;
	return co_lease_put(c, l, err);
}

int coord_abort(Coord *c, uint64_t id, const CoordWorker *w, int64_t now_ms, char *err)
{
	Lease *l;
	CoordWorker named;
	int rc = lease_request(c, &l, id, &w, &named, now_ms, err);
	if (rc < 0 || !l) return rc;
	if ((rc = claim(c, l, w, err)) < 0) return rc;
	return co_lease_return(c, l, now_ms, err);
}

/* A lease past its time: its pending positions back to the queue with a
 * failed try each, its checks to those waiting with one; one read back
 * unbound after a crash, never claimed, perhaps never reached a worker:
 * without a try. */
static int expire(Coord *c, Lease *l, int64_t now, char *err)
{
	bool tried = l->bind != LEASE_UNKNOWN;
	for (int i = 0; i < l->n; i++) {
		LPos *lp = &l->pos[i];
		if (lp->state != POS_PENDING) continue;
		if (lp->check) {
			lp->state = POS_RETURNED;
			int rc = co_spot_return(c, l->key.hi, lp->key, tried, now, err);
			if (rc < 0) return rc;
			continue;
		}
		KeyState *ks = co_key_get(c, lp->key);
		if (!ks || co_done(c, lp->key)) {
			lp->state = POS_DONE;
			continue;
		}
		lp->state = POS_RETURNED;
		if (ks->where == WHERE_LEASED && ks->lease == l->key.hi) {
			if (!tried && co_queue_push(c, ks) < 0)
				return co_broken(c, err, "queueing", BOOKDB_ENOMEM);
			int rc = tried ? fail_try(c, ks, l->worker, err) : 0;
			if (rc < 0) return rc;
		}
	}
	l->pending = 0;
	l->expired = true;
	return co_lease_put(c, l, err);
}

int coord_commit(Coord *c, char *err)
{
	if (c->broken) return COORD_EBOOK;
	double t0 = clock_ms_f();
	int rc = co_spot_flush(c, err);
	if (rc == 0) rc = co_journal_write(c, err);
	if (rc < 0) return rc;
	rc = bookdb_writer_flush(c->w);
	c->commit_ms += clock_ms_f() - t0;
	if (rc < 0) return co_broken(c, err, "commit", rc);
	c->ahead_ready = c->nahead; /* on disk: an acquire may take them */
	return 0;
}

static bool mm_split(const Coord *c)
{
	const BookMinimaxHook *h = &c->opt.minimax;
	return h->prepare && h->apply && h->plan_free;
}

static void *minimax_main(void *arg)
{
	Coord *c = arg;
	pthread_setname_np(pthread_self(), "work-minimax");
	/* Below the service on the CPU: on a machine as busy as the coordinator's
	 * cores, the requests come first and the minimax takes what is left. It
	 * holds no lock the service waits for: with prepare it writes nothing
	 * to the book (a whole-book run excepted). */
	errno = 0;
	int prio = getpriority(PRIO_PROCESS, (id_t)gettid());
	if (errno == 0) setpriority(PRIO_PROCESS, (id_t)gettid(), prio + 10 > 19 ? 19 : prio + 10);
	const BookMinimaxHook *h = &c->opt.minimax;
	c->mm_rc = mm_split(c) ? h->prepare(h->ctx, c->db, &c->mm_stop, &c->mm_out, c->mm_err,
	                                    sizeof c->mm_err)
	                       : book_minimax_hook_run(h, c->db, c->mm_err, sizeof c->mm_err);
	atomic_store(&c->mm_done, true);
	return NULL;
}

/* A run is over (its records written, or it failed). */
static void minimax_over(Coord *c)
{
	c->minimax_last_ms = clock_ms_f() - c->mm_t0;
	c->minimax_ms += c->minimax_last_ms;
	c->lines_due = true; /* the book's best moves may have changed */
}

/* Collects a finished minimax run (wait: also one still running); its plan,
 * if any, is then applied by minimax_apply. 0, or COORD_EMINIMAX with its
 * message. */
static int minimax_collect(Coord *c, bool wait, char *err)
{
	if (!c->mm_running || (!wait && !atomic_load(&c->mm_done))) return 0;
	pthread_join(c->mm_thread, NULL);
	c->mm_running = false;
	c->mm_plan = c->mm_out;
	c->mm_out = NULL;
	if (!c->mm_plan) minimax_over(c);
	if (c->mm_rc < 0)
		return errmsg_set(err, COORD_ERRLEN, COORD_EMINIMAX, "coordinator: minimax: %s",
		                  c->mm_err);
	return 0;
}

/* Records of the plan per apply call; the time between calls is checked. */
#define APPLY_CHUNK 64

/*
 * Writes records of the collected plan in the service's open transaction
 * (committed with its next commit) for about budget_ms (< 0: all of them).
 * 0, or COORD_EBOOK (the Coord broken: the transaction may hold half a
 * write).
 */
static int minimax_apply(Coord *c, double budget_ms, char *err)
{
	if (!c->mm_plan) return 0;
	const BookMinimaxHook *h = &c->opt.minimax;
	double t0 = clock_ms_f();
	BookTxn *txn;
	int rc = bookdb_writer_txn(&txn, c->w);
	if (rc < 0) return co_broken(c, err, "minimax writes", rc);
	char merr[256] = "";
	do rc = h->apply(c->mm_plan, txn, APPLY_CHUNK, merr, sizeof merr);
	while (rc == 0 && (budget_ms < 0 || clock_ms_f() - t0 < budget_ms));
	c->apply_ms += clock_ms_f() - t0;
	if (rc != 0) {
		h->plan_free(c->mm_plan);
		c->mm_plan = NULL;
		minimax_over(c);
	}
	if (rc < 0) {
		c->broken = true;
		return errmsg_set(err, COORD_ERRLEN, COORD_EBOOK, "coordinator: %s", merr);
	}
	return 0;
}

int coord_minimax_wait(Coord *c, char *err)
{
	if (!c->broken && co_select_take_in(c, err) < 0) return COORD_EBOOK;
	int rc = minimax_collect(c, true, err), arc = minimax_apply(c, -1, err);
	if (arc < 0) return arc;
	return rc < 0 ? rc : coord_commit(c, err);
}

/* A slice of the selector's trim to its budget: one begun (when the graph
 * is past it) or the one under way (sel_trim_slice), COORD_TRIM_SLICE_MS of
 * it. (Out of memory for its work arrays: the graph stays as it is, and the
 * next tick tries again.) The trims' time: the slices of those that dropped
 * nodes (the others only compare the graph with its budget). */
static void trim_slice(Coord *c)
{
	double t0 = clock_ms_f();
	double ms = c->opt.trim_slice_ms ? c->opt.trim_slice_ms : COORD_TRIM_SLICE_MS;
	int64_t r = sel_trim_slice(c->sel, c->opt.select_memory, ms);
	c->trim_run_ms += clock_ms_f() - t0;
	if (sel_trimming(c->sel)) return;
	if (r > 0) c->trim_ms += c->trim_run_ms;
	c->trim_run_ms = 0;
	/* (SEL_ENOMEM: the trim's arrays, or, rarely, a change kept meanwhile
	 * that could not be made: a position selected again, as after a
	 * restart from an older checkpoint. Anything else: the book.) */
	if (r < 0 && r != SEL_ENOMEM)
		(void)co_broken(c, NULL, "the selector's changes kept while it was trimmed",
		                BOOKDB_EIO);
}

void coord_trim_on(Coord *c)
{
	if (c->broken || !sel_trimming(c->sel)) return;
	trim_slice(c);
}

bool co_select_frozen(Coord *c)
{
	return co_checkpoint_running(c) || sel_trimming(c->sel);
}

int coord_tick(Coord *c, int64_t now_ms, char *err)
{
	if (c->broken) return COORD_EBOOK;
	int rc = co_select_take_in(c, err);
	if (rc == 0) rc = ahead_expire(c, now_ms, false, err);
	if (rc < 0) return rc;
	for (size_t i = 0; i < c->nleases; i++) {
		Lease *l = &c->leases[i];
		if (l->bind == LEASE_AHEAD) continue; /* released above, when old */
		if (l->pending && l->expires_ms <= now_ms) {
			if ((rc = expire(c, l, now_ms, err)) < 0) return rc;
		} else if (!l->pending && l->expires_ms + COORD_FORGET_MS <= now_ms) {
			if ((rc = co_lease_del_rec(c, l->key.hi, err)) < 0) return rc;
			lease_drop(c, l);
			i--; /* the last lease moved into i */
		}
	}
	/* Spot checks that cannot be given to anyone are given up. */
	if ((rc = co_spot_tick(c, now_ms, err)) < 0) return rc;
	/* The history point and a share of a minimax run's records go in with
	 * the round's commit. */
	if ((rc = co_history_tick(c, now_ms, err)) < 0) return rc;
	if ((rc = minimax_apply(c, COORD_APPLY_MS, err)) < 0) return rc;
	/* The book's lines after a minimax run's last records (and at the first
	 * tick: the last run before the start): their next positions queued. */
	if (c->lines_due && !c->mm_plan && book_minimax_hook_set(&c->opt.minimax) &&
	    (rc = co_queue_lines(c, COORD_APPLY_MS, err)) < 0)
		return rc;
	if ((rc = coord_commit(c, err)) < 0) return rc;
	/* Everything given to the selector is committed: its graph may be
	 * trimmed to its budget (nodes built again read the book); not while a
	 * checkpoint's child writes (co_checkpoint_running). */
	if (c->opt.select_memory && !co_checkpoint_running(c)) trim_slice(c);
	/* A checkpoint of the selector every checkpoint_seconds (from the first
	 * tick), right after this commit. */
	co_checkpoint_reap(c, false);
	if (!c->ckpt_last_ms) c->ckpt_last_ms = now_ms;
	if (c->opt.checkpoint_seconds > 0 &&
	    now_ms - c->ckpt_last_ms >= c->opt.checkpoint_seconds * 1000 &&
	    (rc = coord_checkpoint(c, now_ms, err)) < 0)
		return rc;
	/* The seconds between minimax runs count from the first tick: a fresh
	 * coordinator does not start with one. Its first run backs up what is
	 * behind (writes the last coordinator left: coord_open); a book that
	 * needs a whole-book run gets it from `joseki minimax`. */
	if (!c->last_minimax_ms) c->last_minimax_ms = now_ms;
	int mrc = minimax_collect(c, false, err);
	bool due = book_minimax_hook_set(&c->opt.minimax) && c->since_minimax && !c->mm_running &&
	           !c->mm_plan &&
	           ((c->opt.minimax_every && c->since_minimax >= c->opt.minimax_every) ||
	            (c->opt.minimax_seconds > 0 &&
	             now_ms - c->last_minimax_ms >= c->opt.minimax_seconds * 1000));
	if (due) {
		c->since_minimax = 0;
		c->last_minimax_ms = now_ms;
		c->minimax_runs++;
		/* Beside the service, not in it: a run with a backlog took seconds, and
		 * every request waited for it. */
		c->mm_t0 = clock_ms_f();
		c->mm_err[0] = 0;
		atomic_store(&c->mm_done, false);
		c->mm_running = pthread_create(&c->mm_thread, NULL, minimax_main, c) == 0;
		if (!c->mm_running) minimax_main(c), c->mm_running = true;
	}
	return mrc;
}

/* ---- status ---- */

int coord_status(Coord *c, CoordStatus *out, int64_t now_ms)
{
	memset(out, 0, sizeof *out);
	memcpy(out->instance, c->instance, sizeof out->instance);
	out->started_ms = c->started_ms;
	char err[COORD_ERRLEN];
	if (!c->broken)
		(void)co_select_take_in(c, err); /* a failure breaks c: the next request says it */
	out->queue = c->queued;
	out->acquired_ahead = c->ahead_handed;
	out->ahead_released = c->ahead_released;
	out->results = c->results;
	out->failed = c->failed;
	out->mated = c->mated;
	out->again = c->opt.again != NULL;
	out->again_replaced = c->again_replaced;
	out->again_left = c->opt.nagain > c->again_next ? c->opt.nagain - c->again_next : 0;
	out->minimax_runs = c->minimax_runs;
	out->lines_queued = c->lines_queued;
	out->select_ms = c->select_ms;
	out->select_slices = c->sr_slices;
	out->select_ahead_ms = c->sr_ahead_ms;
	out->select_ahead_leaves = c->sr_ahead_leaves;
	out->selected = (uint64_t)c->sr_n;
	out->provisional = c->provisional;
	out->select_answered = c->sr_answered;
	out->provisional_over = c->prov_over;
	out->provisional_back = c->prov_back;
	out->provisional_ready = co_pwalk_ready(c->pwalk);
	out->provisional_spared = c->pw_spared + co_pwalk_spared(c->pwalk);
	out->provisional_dry = c->pw_dry;
	out->provisional_dry_ms = c->pw_dry_ms;
	out->select_short = c->sr_busy;
	out->store_ms = c->store_ms;
	out->commit_ms = c->commit_ms;
	out->minimax_ms = c->minimax_ms;
	out->last_minimax_ms = c->minimax_last_ms;
	out->minimax_running = c->mm_running || c->mm_plan;
	out->minimax_apply_ms = c->apply_ms;
	out->snapshot_restored = c->snap_restored;
	/* None: said so too (an empty note reads as "no reason"). */
	out->snapshot_note = c->snap_note[0] || c->snap_restored ? c->snap_note
	                     : c->snap_path ? "no snapshot: the first search starts from scratch"
	                                    : "no snapshot kept (--no-snapshot, --preload or "
	                                      "--reanalyse): the first search starts from scratch";
	out->checkpoints = c->ckpts; /* a child's end is taken in by each tick */
	out->checkpoints_failed = c->ckpt_failed;
	out->checkpoints_unchanged = c->ckpt_unchanged;
	out->checkpoint_ms = c->ckpt_ms;
	out->checkpoint_fork_ms = c->ckpt_fork_ms;
	out->checkpoint_held_ms = c->ckpt_held_ms;
	out->book_thought = selection_book_thought(c->db, c->sel, 0);
	SelStats ss;
	sel_get_stats(&ss, c->sel);
	out->select_nodes = ss.nodes;
	out->select_bytes = ss.used_bytes;
	out->select_fixed = ss.fixed_bytes;
	out->select_budget = c->opt.select_memory;
	out->select_record_bytes = ss.record_bytes;
	out->select_trims = ss.trims;
	out->select_trimmed = ss.trimmed;
	out->trim_slices = ss.trim_slices;
	out->trimming = sel_trimming(c->sel);
	out->trim_clears = ss.trim_clears;
	out->trim_walks = ss.walk_ups;
	out->select_expansions = ss.expansions;
	out->select_visits = ss.visits;
	out->select_fetches = ss.fetches;
	out->select_fetch_misses = ss.fetch_misses;
	out->select_tt_hits = ss.tt_hits;
	out->select_path_hits = ss.path_hits;
	out->select_reexpansions = ss.reexpansions;
	out->select_remade = ss.remade;
	out->select_invalidated = ss.invalidated;
	out->filter_keys = ss.filter_keys;
	out->filter_regrows = ss.filter_regrows;
	out->trim_ms = c->trim_ms;
	for (size_t i = 0; i < c->nleases; i++) {
		const Lease *l = &c->leases[i];
		if (l->bind == LEASE_AHEAD)
			out->leases_ahead++;
		else if (l->pending && l->expires_ms > now_ms && l->bind == LEASE_UNKNOWN)
			out->leases_unclaimed++;
		else if (l->pending && l->expires_ms > now_ms)
			out->leases_live++;
		else if (l->pending || l->expired)
			out->leases_expired++;
		else
			out->leases_returned++;
	}
	/* Over the last 60 whole seconds (the current one, under way, left out:
	 * counted with them, a coordinator storing 2,000 a second showed
	 * 1,969), or over the whole seconds since the first result when fewer;
	 * in the first result's own second, its count. */
	int64_t sec = now_ms / 1000, span = RATE_SECS;
	if (c->sec_first && sec - c->sec_first < span) span = sec - c->sec_first;
	int64_t from = span > 0 ? sec - span : sec;
	uint64_t sum =
	    seconds_sum(c->sec_stamp, c->sec_count, RATE_SECS + 1, from, span > 0 ? sec : sec + 1);
	out->results_per_s = (double)sum / (double)(span > 0 ? span : 1);
	size_t na = 0, capa = 0;
	for (size_t i = 0; i < c->nkeys; i++) {
		const KeyState *ks = &c->keys[i];
		if (ks->where != WHERE_ASIDE) continue;
		if (array_grow((void **)&out->aside, &capa, na + 1, sizeof *out->aside, 8))
			return COORD_ENOMEM;
		out->aside[na].key = ks->key;
		memcpy(out->aside[na].sfen, ks->sfen, SFEN_MAX);
		out->aside[na++].tries = ks->tries;
	}
	out->naside = na;
	if (co_spot_status(c, out) < 0) return COORD_ENOMEM;
	if (c->nseen && (!(out->workers = calloc(c->nseen, sizeof *out->workers)) ||
	                 !(out->gone = calloc(c->nseen, sizeof *out->gone))))
		return COORD_ENOMEM;
	for (size_t i = 0; i < c->nseen; i++) {
		int64_t age = now_ms - c->seen[i].last_seen_ms;
		if (age < COORD_LIVE_MS && !c->seen[i].left)
			out->workers[out->nworkers++] = c->seen[i];
		else if (age < COORD_GONE_MS)
			out->gone[out->ngone++] = c->seen[i];
	}
	return 0;
}

void coord_status_free(CoordStatus *st)
{
	free(st->aside);
	free(st->workers);
	free(st->tokens);
	free(st->gone);
	st->aside = NULL;
	st->workers = NULL;
	st->tokens = NULL;
	st->gone = NULL;
}

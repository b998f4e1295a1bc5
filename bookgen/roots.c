/* bookgen/roots.c — positions to think first (see roots.h). */
#include "bookgen/roots.h"
#include "bookdb/check.h"
#include "shogi/movegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "shogi/errmsg.h"
#include "bookdb/game.h"
#include "bookdb/record.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/notation.h"
#include "shogi/position.h"

const char *roots_strerror(int code)
{
	switch (code) {
	case ROOTS_OK:
		return "success";
	case ROOTS_ENOMEM:
		return "out of memory";
	case ROOTS_EINPUT:
		return "unreadable positions or games";
	case ROOTS_EBOOK:
		return "the book could not be read";
	}
	return "unknown roots error";
}

void roots_free(RootList *r)
{
	for (size_t i = 0; i < r->n; i++) free(r->specs[i]);
	free(r->specs);
	free(r->weights);
	memset(r, 0, sizeof *r);
}

/* Appends spec itself (ownership moves to the list) with its weight. */
static int take(RootList *r, char *spec, double weight)
{
	if (!spec || array_grow((void **)&r->specs, &r->cap, r->n + 1, sizeof *r->specs, 256) ||
	    array_grow((void **)&r->weights, &r->wcap, r->n + 1, sizeof *r->weights, 256)) {
		free(spec);
		return ROOTS_ENOMEM;
	}
	r->specs[r->n] = spec;
	r->weights[r->n++] = weight;
	return 0;
}

int roots_add(RootList *r, const char *spec)
{
	return take(r, strdup(spec), 1.0);
}

int roots_add_weighted(RootList *r, const char *spec, double weight)
{
	return take(r, strdup(spec), weight);
}

int roots_add_position(RootList *r, const Position *pos)
{
	char sfen[SFEN_MAX];
	sfen_write(pos, sfen, sizeof sfen);
	return roots_add(r, sfen);
}

/* Calls line_fn on each line of path that is not blank or a # comment, with
 * trailing comment and blanks cut (position_line_len); stops at the first
 * failure. */
static int each_line(const char *path, const char *what, char *err,
                     int (*line_fn)(void *ctx, char *line, size_t len, int lineno, char *err),
                     void *ctx)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return errmsg_set(err, ROOTS_ERRLEN, ROOTS_EINPUT, "cannot open %s '%.400s': %s",
		                  what, path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, ret = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		char *p = line;
		while (*p == ' ' || *p == '\t') p++;
		p[position_line_len(p, strlen(p))] = 0;
		if (!*p) continue;
		if ((ret = line_fn(ctx, p, strlen(p), lineno, err)) < 0) break;
	}
	/* getline's -1 is the end or a read error: only the end is done. */
	if (ret == 0 && ferror(f))
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EINPUT,
		                 "%s '%.400s': read error after line %d", what, path, lineno);
	free(line);
	fclose(f);
	return ret;
}

typedef struct {
	RootList *r;
	const char *path;
	Position *pos;
} LineCtx;

static int spec_line(void *ctx, char *line, size_t len, int lineno, char *err)
{
	LineCtx *c = ctx;
	char perr[SHOGI_ERRLEN];
	(void)len;
	if (position_parse(c->pos, line, perr) < 0)
		return errmsg_set(err, ROOTS_ERRLEN, ROOTS_EINPUT,
		                  "%.300s line %d: bad position: %.150s", c->path, lineno, perr);
	return roots_add(c->r, line) < 0
	           ? errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory")
	           : 0;
}

int roots_from_lines(RootList *r, const char *path, char *err)
{
	Position *pos = malloc(sizeof *pos);
	if (!pos) return errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
	LineCtx c = {r, path, pos};
	int ret = each_line(path, "positions file", err, spec_line, &c);
	free(pos);
	return ret;
}

typedef struct {
	char *spec;
	uint32_t count;
} ExtPos;

static int cmp_ext(const void *a, const void *b)
{
	const ExtPos *x = a, *y = b;
	return x->count != y->count ? (x->count > y->count ? -1 : 1) : strcmp(x->spec, y->spec);
}

/* Positions counted by key (roots_from_games: those at the chosen ply; its
 * paths: those before it). */
typedef struct {
	Key key; /* first: the key map's stride starts here */
	char *spec;
	uint32_t count;
	int ply; /* plies from the game's first position */
} GamePos;

typedef struct {
	GamePos *v;
	size_t n, cap;
	KeyMap map;
	bool oom;
} PosTally;

/* One more game through key (ply plies in): a new entry gets its SFEN from
 * sfen, else from pos. Sets t->oom when memory runs out. */
static void tally(PosTally *t, Key key, int ply, const Position *pos, const char *sfen)
{
	if (t->oom) return;
	if (array_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v, 256)) {
		t->oom = true;
		return;
	}
	t->v[t->n] = (GamePos){.key = key, .ply = ply};
	int64_t at = keymap_find_or_insert(&t->map, t->v, (uint32_t)t->n);
	if (at < 0) {
		t->oom = true;
	} else if ((size_t)at < t->n) {
		t->v[at].count++;
	} else {
		char buf[SFEN_MAX];
		if (!sfen) sfen_write(pos, buf, sizeof buf);
		if (!(t->v[t->n].spec = strdup(sfen ? sfen : buf)))
			t->oom = true; /* the entry stays, without a spec: never listed */
		t->v[t->n++].count = 1;
	}
}

static void tally_free(PosTally *t)
{
	for (size_t i = 0; i < t->n; i++) free(t->v[i].spec);
	free(t->v);
	keymap_free(&t->map);
}

typedef struct {
	Position *pos; /* the replay's position, before each ply's move */
	int ply, seen; /* plies before the one asked for; plies replayed */
	PosTally t;
} GameRoots;

static void on_game_ply(void *ctx, Key key, Move move, int result)
{
	(void)move;
	(void)result;
	GameRoots *g = ctx;
	if (g->seen++ == g->ply) tally(&g->t, key, g->ply, g->pos, NULL);
}

static int cmp_game_pos(const void *a, const void *b)
{
	const GamePos *x = a, *y = b;
	if (x->count != y->count) return x->count > y->count ? -1 : 1;
	return strcmp(x->spec ? x->spec : "", y->spec ? y->spec : "");
}

/* roots_from_games' paths: the positions games pass through on their way to
 * the chosen roots. */
typedef struct {
	Position *pos;
	int ply, seen;
	KeyMap *roots; /* the chosen roots (a set) */
	Key *keys;     /* this game's positions before the root's ply */
	char (*sfens)[SFEN_MAX];
	PosTally t;
} GamePaths;

static void on_path_ply(void *ctx, Key key, Move move, int result)
{
	(void)move;
	(void)result;
	GamePaths *g = ctx;
	int at = g->seen++;
	if (at > g->ply || g->t.oom) return;
	if (at < g->ply) {
		g->keys[at] = key;
		sfen_write(g->pos, g->sfens[at], SFEN_MAX);
		return;
	}
	if (!keymap_has(g->roots, key)) return;
	for (int k = 0; k < g->ply; k++) tally(&g->t, g->keys[k], k, NULL, g->sfens[k]);
}

/* Shallowest first, then by the games through them, then by SFEN. */
static int cmp_path_pos(const void *a, const void *b)
{
	const GamePos *x = a, *y = b;
	if (x->ply != y->ply) return x->ply < y->ply ? -1 : 1;
	if (x->count != y->count) return x->count > y->count ? -1 : 1;
	return strcmp(x->spec ? x->spec : "", y->spec ? y->spec : "");
}

/* The second pass of roots_from_games: every game that reaches one of the
 * roots (keys in roots) at ply adds the positions before it to paths. */
static int game_paths(RootList *paths, BookTxn *txn, KeyMap *roots, int ply, Position *pos,
                      char *err)
{
	GamePaths g = {.pos = pos, .ply = ply, .roots = roots};
	keymap_init(&g.t.map, sizeof(GamePos));
	BookIter *it = NULL;
	int ret = ROOTS_ENOMEM, rc;
	if (ply > 0 && (!(g.keys = malloc((size_t)ply * sizeof *g.keys)) ||
	                !(g.sfens = malloc((size_t)ply * sizeof *g.sfens))))
		goto out;
	if ((rc = bookdb_kv_iter_open(&it, txn, BOOKDB_GAMES)) < 0) {
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book's games: %s",
		                 bookdb_strerror(rc));
		goto out;
	}
	const void *k, *v;
	size_t kl, vl;
	while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		BookGame bg;
		if (bookdb_game_decode(&bg, v, vl) < 0 || !bg.has_plies ||
		    bg.nplies <= (uint32_t)ply)
			continue;
		g.seen = 0;
		(void)bookdb_game_replay(&bg, pos, on_path_ply, &g); /* counted in pass 1 */
		if (g.t.oom) goto out;
	}
	if (rc < 0) {
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book's games: %s",
		                 bookdb_strerror(rc));
		goto out;
	}
	qsort(g.t.v, g.t.n, sizeof *g.t.v, cmp_path_pos);
	for (size_t i = 0; i < g.t.n; i++)
		if (g.t.v[i].spec &&
		    roots_add_weighted(paths, g.t.v[i].spec, (double)g.t.v[i].count) < 0)
			goto out;
	ret = 0;
out:
	if (ret == ROOTS_ENOMEM) errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
	tally_free(&g.t);
	free(g.keys);
	free(g.sfens);
	bookdb_iter_free(it);
	return ret;
}

int roots_paths_of_specs(RootList *paths, const RootList *roots, char *err)
{
	Position *pos = malloc(sizeof *pos);
	KeyMap seen;
	keymap_init_set(&seen, false);
	int ret = ROOTS_ENOMEM;
	if (!pos) goto out;
	for (size_t i = 0; i < paths->n; i++) {
		if (position_parse(pos, paths->specs[i], NULL) < 0) continue;
		if (keymap_add(&seen, pos_key(pos), NULL) < 0) goto out;
	}
	/* Each root's line, from its first position: the shallowest first over
	 * all roots (ply by ply), as the games' paths are. */
	for (int depth = 0;; depth++) {
		bool any = false;
		for (size_t r = 0; r < roots->n; r++) {
			char perr[SHOGI_ERRLEN];
			if (position_parse(pos, roots->specs[r], perr) < 0) {
				ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EINPUT,
				                 "root %zu: bad position: %.300s", r + 1, perr);
				goto out;
			}
			int n = pos_history_len(pos);
			if (depth >= n) continue;
			any = true;
			for (int k = n; k > depth; k--) pos_undo_move(pos);
			int added = keymap_add(&seen, pos_key(pos), NULL);
			if (added < 0) goto out;
			if (added && roots_add_position(paths, pos) < 0) goto out;
		}
		if (!any) break;
	}
	ret = 0;
out:
	if (ret == ROOTS_ENOMEM) errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
	keymap_free(&seen);
	free(pos);
	return ret;
}

int roots_from_games(RootList *r, BookDB *db, size_t n, int ply, size_t *short_games,
                     size_t *legacy_games, RootList *paths, char *err)
{
	GameRoots g = {.ply = ply < 0 ? 0 : ply};
	keymap_init(&g.t.map, sizeof(GamePos));
	size_t nshort = 0, nlegacy = 0;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	int ret = ROOTS_ENOMEM, rc;
	if (!(g.pos = malloc(sizeof *g.pos))) goto out;
	if ((rc = bookdb_txn_begin(&txn, db, false)) < 0 ||
	    (rc = bookdb_kv_iter_open(&it, txn, BOOKDB_GAMES)) < 0) {
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book's games: %s",
		                 bookdb_strerror(rc));
		goto out;
	}
	const void *k, *v;
	size_t kl, vl;
	while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		BookGame bg;
		if (bookdb_game_decode(&bg, v, vl) < 0 || !bg.has_plies) {
			nlegacy++;
			continue;
		}
		if (bg.nplies <= (uint32_t)g.ply) {
			nshort++;
			continue;
		}
		g.seen = 0;
		if (bookdb_game_replay(&bg, g.pos, on_game_ply, &g) < 0 && g.seen <= g.ply)
			nlegacy++; /* not replayable up to the ply (check reports it) */
		if (g.t.oom) goto out;
	}
	if (rc < 0) {
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book's games: %s",
		                 bookdb_strerror(rc));
		goto out;
	}
	qsort(g.t.v, g.t.n, sizeof *g.t.v, cmp_game_pos);
	KeyMap chosen;
	keymap_init_set(&chosen, false);
	for (size_t i = 0; i < g.t.n && i < n; i++) {
		const GamePos *gp = &g.t.v[i];
		if (!gp->spec) continue;
		if (roots_add_weighted(r, gp->spec, (double)gp->count) < 0 ||
		    keymap_add(&chosen, gp->key, NULL) < 0) {
			keymap_free(&chosen);
			goto out;
		}
	}
	ret = paths ? game_paths(paths, txn, &chosen, g.ply, g.pos, err) : 0;
	keymap_free(&chosen);
	if (ret < 0) goto done;
out:
	if (ret == ROOTS_ENOMEM) errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
done:
	if (short_games) *short_games = nshort;
	if (legacy_games) *legacy_games = nlegacy;
	tally_free(&g.t);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	free(g.pos);
	return ret;
}

int roots_from_extension(RootList *r, BookDB *db, char *err)
{
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	ExtPos *ext = NULL;
	size_t next = 0, cap = 0;
	int ret = ROOTS_ENOMEM, rc;
	if (!rec || !pos) goto out;
	if ((rc = bookdb_txn_begin(&txn, db, false)) < 0 || (rc = bookdb_iter_open(&it, txn)) < 0) {
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book: %s",
		                 bookdb_strerror(rc));
		goto out;
	}
	Key key;
	const uint8_t *val;
	size_t len;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (!len || !(val[0] & BOOKDB_REC_THOUGHT)) continue;
		/* A record that is not sound fails the run (docs/bookdb.md). */
		Move legal[MOVEGEN_MAX];
		int nl;
		char why[BOOKDB_ERRLEN];
		if (bookdb_record_read(rec, pos, legal, &nl, key, val, len, why) < 0) {
			ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK,
			                 "%s; the book is damaged: joseki check lists what", why);
			goto out;
		}
		for (int i = 0; i < rec->nmoves; i++) {
			const BookMove *m = &rec->moves[i];
			if (!(m->flags & BOOKDB_MOVE_STATS) || !m->count ||
			    !pos_is_legal(pos, m->move))
				continue;
			const uint8_t *cv;
			size_t cl;
			if (bookdb_get_raw(&cv, &cl, txn, pos_key_after(pos, m->move)) == 0 && cl &&
			    (cv[0] & BOOKDB_REC_THOUGHT))
				continue;
			if (array_grow((void **)&ext, &cap, next + 1, sizeof *ext, 256)) goto out;
			char sfen[SFEN_MAX];
			pos_do_move(pos, m->move);
			sfen_write(pos, sfen, sizeof sfen);
			pos_undo_move(pos);
			if (!(ext[next].spec = strdup(sfen))) goto out;
			ext[next++].count = m->count;
		}
	}
	if (rc < 0) {
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book: %s",
		                 bookdb_strerror(rc));
		goto out;
	}
	qsort(ext, next, sizeof *ext, cmp_ext);
	for (size_t i = 0; i < next; i++) {
		if (take(r, ext[i].spec, 1.0) < 0) {
			for (size_t j = i + 1; j < next; j++) free(ext[j].spec);
			next = 0;
			goto out;
		}
		ext[i].spec = NULL; /* the list owns it */
	}
	ret = 0;
out:
	if (ret == ROOTS_ENOMEM) errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
	for (size_t i = 0; i < next; i++) free(ext[i].spec);
	free(ext);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	free(rec);
	free(pos);
	return ret;
}

/* ---- the queue kept in the book ---- */

#define QKEY_LEN (sizeof ROOTS_QUEUE_PREFIX - 1 + 16)

static void queue_key(uint8_t out[QKEY_LEN], Key k)
{
	memcpy(out, ROOTS_QUEUE_PREFIX, sizeof ROOTS_QUEUE_PREFIX - 1);
	bookdb_key_bytes(k, out + sizeof ROOTS_QUEUE_PREFIX - 1);
}

static bool is_queue_key(const void *key, size_t klen)
{
	return klen == QKEY_LEN && !memcmp(key, ROOTS_QUEUE_PREFIX, sizeof ROOTS_QUEUE_PREFIX - 1);
}

/* Whether key starts with the queue's prefix (keys come in order: once one
 * does not, the queue is over). */
static bool in_queue_range(const void *key, size_t klen)
{
	size_t n = sizeof ROOTS_QUEUE_PREFIX - 1;
	return klen >= n && !memcmp(key, ROOTS_QUEUE_PREFIX, n);
}

/* Whether the book holds the position of queue key qk as thought. */
static bool queued_thought(BookTxn *txn, const uint8_t *qk)
{
	const uint8_t *v;
	size_t len;
	Key k = key_from_bytes(qk + sizeof ROOTS_QUEUE_PREFIX - 1);
	return bookdb_get_raw(&v, &len, txn, k) == 0 && len && (v[0] & BOOKDB_REC_THOUGHT);
}

int roots_queue_add(BookTxn *txn, const Position *pos, bool *added)
{
	uint8_t qk[QKEY_LEN];
	queue_key(qk, pos_key(pos));
	if (added) *added = false;
	const void *v;
	size_t vlen;
	int rc = bookdb_kv_get(&v, &vlen, txn, BOOKDB_WORK, qk, sizeof qk);
	if (rc == 0) return 0;
	if (rc != BOOKDB_ENOTFOUND) return rc;
	uint64_t seq = 0;
	if (bookdb_kv_get(&v, &vlen, txn, BOOKDB_META, "roots_seq", 9) == 0 && vlen == 8)
		for (int i = 0; i < 8; i++) seq |= (uint64_t)((const uint8_t *)v)[i] << (8 * i);
	seq++;
	uint8_t val[8 + SFEN_MAX], sb[8];
	for (int i = 0; i < 8; i++) {
		val[i] = (uint8_t)(seq >> (56 - 8 * i));
		sb[i] = (uint8_t)(seq >> (8 * i));
	}
	size_t sl = sfen_write(pos, (char *)val + 8, SFEN_MAX);
	if ((rc = bookdb_kv_put(txn, BOOKDB_META, "roots_seq", 9, sb, 8)) < 0 ||
	    (rc = bookdb_kv_put(txn, BOOKDB_WORK, qk, sizeof qk, val, 8 + sl)) < 0)
		return rc;
	if (added) *added = true;
	return 0;
}

typedef struct {
	uint64_t seq;
	char *spec;
} QEntry;

static int cmp_qentry(const void *a, const void *b)
{
	const QEntry *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int roots_queue_load(RootList *r, BookTxn *txn, char *err)
{
	BookIter *it = NULL;
	QEntry *q = NULL;
	size_t n = 0, cap = 0;
	/* From the queue's first key on: the work database holds others too (the
	 * coordinator's, re-analysis marks), many of them. */
	int rc = bookdb_kv_iter_open_at(&it, txn, BOOKDB_WORK, ROOTS_QUEUE_PREFIX,
	                                sizeof ROOTS_QUEUE_PREFIX - 1),
	    ret = 0;
	const void *key, *val;
	size_t klen, vlen;
	while (rc == 0 && (rc = bookdb_kv_iter_next(it, &key, &klen, &val, &vlen)) == 1) {
		rc = 0;
		if (!in_queue_range(key, klen)) break;
		if (!is_queue_key(key, klen) || vlen <= 8 || vlen > 8 + SFEN_MAX ||
		    queued_thought(txn, key))
			continue;
		if (array_grow((void **)&q, &cap, n + 1, sizeof *q, 64) ||
		    !(q[n].spec = strndup((const char *)val + 8, vlen - 8))) {
			ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
			break;
		}
		q[n].seq = 0;
		for (int i = 0; i < 8; i++) q[n].seq = q[n].seq << 8 | ((const uint8_t *)val)[i];
		n++;
	}
	bookdb_iter_free(it);
	if (!ret && rc < 0)
		ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the root queue: %s",
		                 bookdb_strerror(rc));
	if (!ret && n) qsort(q, n, sizeof *q, cmp_qentry); /* q is NULL when the queue is empty */
	for (size_t i = 0; i < n; i++) {
		if (!ret && take(r, q[i].spec, 1.0) < 0)
			ret = errmsg_set(err, ROOTS_ERRLEN, ROOTS_ENOMEM, "out of memory");
		else if (ret)
			free(q[i].spec);
	}
	free(q);
	return ret;
}

int roots_queue_read(RootList *r, BookDB *db, char *err)
{
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc < 0)
		return errmsg_set(err, ROOTS_ERRLEN, ROOTS_EBOOK, "cannot read the book: %s",
		                  bookdb_strerror(rc));
	rc = roots_queue_load(r, txn, err);
	bookdb_txn_abort(txn);
	if (rc < 0) roots_free(r);
	return rc;
}

int roots_queue_drop_thought(BookTxn *txn, size_t *left)
{
	BookIter *it = NULL;
	uint8_t(*drop)[QKEY_LEN] = NULL;
	size_t n = 0, cap = 0, stay = 0;
	int rc = bookdb_kv_iter_open_at(&it, txn, BOOKDB_WORK, ROOTS_QUEUE_PREFIX,
	                                sizeof ROOTS_QUEUE_PREFIX - 1);
	const void *key, *val;
	size_t klen, vlen;
	while (rc == 0 && (rc = bookdb_kv_iter_next(it, &key, &klen, &val, &vlen)) == 1) {
		rc = 0;
		if (!in_queue_range(key, klen)) break;
		if (!is_queue_key(key, klen)) continue;
		if (!queued_thought(txn, key)) {
			stay++;
			continue;
		}
		if (array_grow((void **)&drop, &cap, n + 1, sizeof *drop, 64)) {
			rc = BOOKDB_ENOMEM;
			break;
		}
		memcpy(drop[n++], key, QKEY_LEN);
	}
	bookdb_iter_free(it);
	/* Deleted after the walk: the cursor is not disturbed by its own writes. */
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = bookdb_kv_del(txn, BOOKDB_WORK, drop[i], QKEY_LEN);
	free(drop);
	if (left) *left = stay;
	return rc < 0 ? rc : 0;
}

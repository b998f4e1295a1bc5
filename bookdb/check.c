/* bookdb/check.c — the store's invariants and the repair (see check.h). */
#include "bookdb/check.h"
#include "bookdb/bookdb_priv.h"
#include "bookdb/damage.h"
#include "bookdb/marks.h"
#include "bookdb/game.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shogi/bigmem.h"
#include "shogi/errmsg.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/parfor.h"

static void report(BookCheckFn fn, void *ctx, Key key, int *n, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void report(BookCheckFn fn, void *ctx, Key key, int *n, const char *fmt, ...)
{
	(*n)++;
	if (!fn) return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fn(ctx, key, msg);
}

int bookdb_check_record(Key key, const uint8_t *val, size_t len, BookRecord *rec, Position *pos,
                        bool *moves_only, BookCheckFn fn, void *ctx)
{
	char err[SHOGI_ERRLEN];
	int n = 0;
	*moves_only = false;
	int rc = bookdb_record_decode(rec, val, len);
	if (rc) {
		report(fn, ctx, key, &n, "does not decode (%zu bytes): %s", len,
		       bookdb_strerror(rc));
		return n;
	}
	if (bookdb_record_position(pos, rec, err) < 0) {
		report(fn, ctx, key, &n, "impossible position: %s", err);
		return n;
	}
	Key pk = pos_key(pos);
	if (!key_equal(pk, key)) {
		char phex[KEY_HEX_LEN];
		key_to_hex(pk, phex);
		report(fn, ctx, key, &n, "key differs from its position's key %s", phex);
		return n;
	}
	*moves_only = true;
	int kept = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		char usi[USI_MOVE_MAX];
		usi_move_write(m->move, usi);
		int before = n;
		if (!pos_is_legal(pos, m->move))
			report(fn, ctx, key, &n, "move %d (%s, 0x%04x) is illegal", i, usi,
			       m->move);
		for (int j = 0; j < kept && n == before; j++)
			if (rec->moves[j].move == m->move)
				report(fn, ctx, key, &n, "move %s stored twice", usi);
		if ((uint64_t)m->wins + m->draws + m->losses > m->count)
			report(fn, ctx, key, &n,
			       "move %s: wins %u + draws %u + losses %u > count %u", usi, m->wins,
			       m->draws, m->losses, m->count);
		if (n == before) rec->moves[kept++] = *m;
	}
	rec->nmoves = (uint16_t)kept;
	return n;
}

int bookdb_record_sound(const BookRecord *rec, Key key, const Position *pos, const Move *legal,
                        int nlegal, char *why)
{
	/* The names (hex key, USI move) are written only for a record that is
	 * not sound: minimax reads every record of the book through here. */
	char hex[KEY_HEX_LEN], usi[USI_MOVE_MAX];
	Key pk = pos_key(pos);
	if (!key_equal(pk, key)) {
		char phex[KEY_HEX_LEN];
		key_to_hex(key, hex);
		key_to_hex(pk, phex);
		return errmsg_set(why, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                  "record %s: key differs from its position's key %s", hex, phex);
	}
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		bool legal_move = legal ? movegen_listed(legal, nlegal, m->move)
		                        : movegen_is_legal(pos, m->move),
		     twice = false;
		for (int j = 0; j < i && !twice; j++) twice = rec->moves[j].move == m->move;
		bool counts = (uint64_t)m->wins + m->draws + m->losses <= m->count;
		if (legal_move && !twice && counts) continue;
		key_to_hex(key, hex);
		usi_move_write(m->move, usi);
		if (!legal_move)
			return errmsg_set(why, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
			                  "record %s: move %d (%s, 0x%04x) is illegal", hex, i, usi,
			                  m->move);
		if (twice)
			return errmsg_set(why, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
			                  "record %s: move %s stored twice", hex, usi);
		return errmsg_set(why, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                  "record %s: move %s: wins %u + draws %u + losses %u > "
		                  "count %u",
		                  hex, usi, m->wins, m->draws, m->losses, m->count);
	}
	return 0;
}

int bookdb_record_read(BookRecord *rec, Position *pos, Move *legal, int *nlegal, Key key,
                       const uint8_t *val, size_t len, char *why)
{
	char hex[KEY_HEX_LEN], err[SHOGI_ERRLEN];
	*nlegal = 0;
	int rc = bookdb_record_decode(rec, val, len);
	if (rc < 0) {
		key_to_hex(key, hex);
		return errmsg_set(why, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                  "record %s: does not decode (%zu bytes): %s", hex, len,
		                  bookdb_strerror(rc));
	}
	if (bookdb_record_position(pos, rec, err) < 0) {
		key_to_hex(key, hex);
		return errmsg_set(why, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                  "record %s: impossible position: %s", hex, err);
	}
	if (legal) *nlegal = movegen_legal(pos, legal);
	return bookdb_record_sound(rec, key, pos, legal, *nlegal, why);
}

static void no_ply(void *ctx, Key key, Move move, int result)
{
	(void)ctx, (void)key, (void)move, (void)result;
}

/* What is wrong with a game mark's bytes, or NULL when they are sound. */
static const char *game_bad(const void *v, size_t vl, Position *pos)
{
	BookGame g;
	if (bookdb_game_decode(&g, v, vl) < 0) return "does not decode as a game mark";
	if (g.has_plies && bookdb_game_replay(&g, pos, no_ply, NULL) < 0)
		return "its plies do not replay legally";
	return NULL;
}

/* Reads every entry of the games database: each must decode as a game mark
 * (bookdb/game.h) and, when it keeps its plies, replay legally from its first
 * position; each problem is reported under the key {0, 0} with the game's id.
 * With w, copies every entry into w's book in the same pass: a bad one as a
 * mark without plies (it would fail the repaired book's check again). A tree
 * that cannot be read on is a stop (st->stopped: what was read is all that
 * can be), which fails a repair; a write that fails is returned. */
static int check_games(BookCheckStats *st, BookTxn *txn, Position *pos, BookWriter *w,
                       BookCheckFn fn, void *ctx)
{
	BookIter *it;
	int rc = bookdb_kv_iter_open(&it, txn, BOOKDB_GAMES);
	if (rc < 0) goto stop;
	const void *k, *v;
	size_t kl, vl;
	while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		st->game_entries++;
		const char *bad = game_bad(v, vl, pos);
		if (bad) {
			st->bad_games++;
			if (fn) {
				/* A game's id is a record's bytes (its $EVENT): shown as text. */
				char msg[200], id[100];
				snprintf(msg, sizeof msg, "game '%s': %s",
				         errmsg_escape(id, sizeof id, k, kl), bad);
				fn(ctx, (Key){0, 0}, msg);
			}
		}
		if (!w) continue;
		/* A bad one keeps its id, so that the game is not counted twice
		 * when ingested again, without its plies: a mark of the legacy
		 * form (its winner when it decoded). */
		uint8_t legacy[BOOKDB_GAME_LEGACY_LEN];
		if (bad) {
			BookGame g;
			uint8_t winner = bookdb_game_decode(&g, v, vl) == 0 ? g.winner : 0;
			int n =
			    bookdb_game_encode(legacy, sizeof legacy, winner, NULL, 0, 0, NULL, 0);
			if (n < 0) {
				bookdb_iter_free(it);
				return n;
			}
			v = legacy;
			vl = (size_t)n;
		}
		BookTxn *wt;
		int wrc;
		if ((wrc = bookdb_writer_txn(&wt, w)) < 0 ||
		    (wrc = bookdb_kv_put(wt, BOOKDB_GAMES, k, kl, v, vl)) < 0) {
			bookdb_iter_free(it);
			return wrc;
		}
		st->games++;
	}
	bookdb_iter_free(it);
	if (rc >= 0) return 0;
stop:
	st->stopped = true;
	st->stop_code = rc;
	return w ? rc : 0;
}

/* Reads every entry of the marks database: it must decode and its record
 * carry the mark; with w, copies the sound ones into w's book. */
static int check_marks(BookCheckStats *st, BookTxn *txn, BookRecord *rec, BookWriter *w,
                       BookCheckFn fn, void *ctx)
{
	BookIter *it;
	int rc = bookdb_kv_iter_open(&it, txn, BOOKDB_MARKS);
	if (rc < 0) return rc;
	BookMark *mk = malloc(sizeof *mk);
	if (!mk) rc = BOOKDB_ENOMEM;
	const void *k, *v;
	size_t kl, vl;
	while (rc >= 0 && (rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
		rc = 0;
		st->mark_entries++;
		const char *bad = NULL;
		if (bookdb_mark_decode(mk, k, kl, v, vl) < 0) {
			bad = "a mark that does not decode";
			mk->key = kl >= 16 ? key_from_bytes(k) : (Key){0, 0};
		} else {
			uint8_t want = mk->kind == BOOKDB_MARK_AVOID ? BOOKDB_MOVE_AVOIDED
			                                             : BOOKDB_MOVE_PREFERRED;
			bool flagged = false;
			if (bookdb_get_moves(rec, txn, mk->key) == 0)
				for (int i = 0; i < rec->nmoves; i++)
					if (rec->moves[i].move == mk->move)
						flagged = rec->moves[i].flags & want;
			if (!flagged) bad = "a mark whose move does not carry it";
		}
		if (bad) {
			st->bad_marks++;
			if (fn) fn(ctx, mk->key, bad);
			continue;
		}
		BookTxn *wt;
		if (w && ((rc = bookdb_writer_txn(&wt, w)) < 0 ||
		          (rc = bookdb_kv_put(wt, BOOKDB_MARKS, k, kl, v, vl)) < 0))
			break;
	}
	bookdb_iter_free(it);
	free(mk);
	return rc < 0 ? rc : 0;
}

/* ---- the check of the records on every core (without a repair) ---- */

#define CHECK_BATCH 16384 /* records read, then checked side by side */

typedef struct {
	Key key;
	const uint8_t *val; /* in the read transaction's map, valid while it lives */
	size_t len;
} CheckItem;

typedef struct {
	Key key;
	char *msg;
} CheckProblem;

/* One range's scratch and findings. */
typedef struct {
	BookRecord *rec;
	Position *pos;
	CheckProblem *found;
	size_t nfound, cap; /* in the order of the range's records */
	uint64_t problems, bad;
	bool oom;
} CheckPart;

typedef struct {
	const CheckItem *items;
	CheckPart part[PARFOR_MAX];
} CheckBatch;

/* A problem kept for the caller's fn, which hears them in key order. */
static void keep_problem(void *ctx, Key key, const char *problem)
{
	CheckPart *pt = ctx;
	if (pt->nfound == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 16;
		CheckProblem *f = realloc(pt->found, cap * sizeof *f);
		if (!f) {
			pt->oom = true;
			return;
		}
		pt->found = f;
		pt->cap = cap;
	}
	char *msg = strdup(problem);
	if (!msg) {
		pt->oom = true;
		return;
	}
	pt->found[pt->nfound++] = (CheckProblem){key, msg};
}

static void check_range(void *ctx, size_t lo, size_t hi, int t)
{
	CheckBatch *b = ctx;
	CheckPart *pt = &b->part[t];
	for (size_t i = lo; i < hi; i++) {
		const CheckItem *it = &b->items[i];
		bool moves_only;
		int p = bookdb_check_record(it->key, it->val, it->len, pt->rec, pt->pos,
		                            &moves_only, keep_problem, pt);
		pt->problems += (uint64_t)p;
		pt->bad += p > 0;
	}
}

/* Every record of it checked, CHECK_BATCH at a time on every core; the
 * problems told to fn in key order. The iterator's last code (0 at the end,
 * or the error it stopped on), or BOOKDB_ENOMEM. */
static int check_records_parallel(BookCheckStats *st, BookIter *it, BookCheckFn fn, void *ctx,
                                  BookProgressFn progress, void *progress_ctx, uint64_t total)
{
	int nt = parfor_threads(CHECK_BATCH, PARFOR_MIN_ITEMS);
	CheckItem *items = malloc(CHECK_BATCH * sizeof *items);
	CheckBatch *b = calloc(1, sizeof *b);
	int rc = items && b ? 1 : BOOKDB_ENOMEM;
	for (int t = 0; t < nt && rc == 1; t++) {
		b->part[t].rec = malloc(sizeof *b->part[t].rec);
		b->part[t].pos = malloc(sizeof *b->part[t].pos);
		if (!b->part[t].rec || !b->part[t].pos) rc = BOOKDB_ENOMEM;
	}
	while (rc == 1) {
		size_t n = 0;
		while (n < CHECK_BATCH && (rc = bookdb_iter_next(it, &items[n].key, &items[n].val,
		                                                 &items[n].len)) == 1)
			n++;
		/* What was read before an error is checked too. */
		b->items = items;
		parfor(n, n < PARFOR_MIN_ITEMS ? 1 : nt, check_range, b);
		for (int t = 0; t < nt; t++) {
			CheckPart *pt = &b->part[t];
			for (size_t k = 0; k < pt->nfound; k++) {
				if (fn) fn(ctx, pt->found[k].key, pt->found[k].msg);
				free(pt->found[k].msg);
			}
			pt->nfound = 0;
			st->problems += pt->problems;
			st->bad += pt->bad;
			pt->problems = pt->bad = 0;
			if (pt->oom) rc = BOOKDB_ENOMEM;
		}
		st->records += n;
		if (progress && n) progress(progress_ctx, st->records, total);
	}
	if (b)
		for (int t = 0; t < nt; t++) {
			free(b->part[t].rec);
			free(b->part[t].pos);
			free(b->part[t].found);
		}
	free(b);
	free(items);
	return rc;
}

int bookdb_check(BookCheckStats *st, BookDB *db, const char *repair_dir, BookCheckFn fn, void *ctx,
                 BookProgressFn progress, void *progress_ctx, char *err)
{
	memset(st, 0, sizeof *st);
	err[0] = 0;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	BookDB *out = NULL;
	BookWriter *w = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	/* The repair is written as NEW.partial and renamed to NEW at the end:
	 * a run that failed, or that LMDB ended on a bad page (damage.h), leaves
	 * no NEW behind, and what a killed one left is removed by the next. */
	char partial[BOOKDB_PATH_LEN] = "";
	int rc = BOOKDB_ENOMEM;
	if (!rec || !pos) goto done;
	if (repair_dir) {
		struct stat sb;
		if (strlen(repair_dir) > BOOKDB_DIR_MAX - 16) {
			rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
			                "%.100s...: the path is too long", repair_dir);
			goto done;
		}
		if (stat(repair_dir, &sb) == 0) {
			rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
			                "%.200s: exists already (the repair writes a new book)",
			                repair_dir);
			goto done;
		}
		/* A directory that cannot take it, named as the user gave it (not
		 * NEW.partial): found before the pass. */
		int e = bigmem_output_blocked(repair_dir);
		if (e) {
			rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EIO, "%.200s: cannot create: %s",
			                repair_dir, strerror(e));
			goto done;
		}
		snprintf(partial, sizeof partial, "%s.partial", repair_dir);
		bookdb_remove_new(partial);
		if ((rc = bookdb_open(&out, partial, NULL, err)) < 0) goto done;
		bdb_damage_output(out, partial);
		if ((rc = bookdb_writer_new(&w, out, 10000)) < 0) goto done;
	}
	if ((rc = bookdb_txn_begin(&txn, db, false)) < 0 || (rc = bookdb_iter_open(&it, txn)) < 0)
		goto done;
	bookdb_iter_untallied(it); /* what it misses is counted below (unread) */
	uint64_t total = 0;
	if (bookdb_count(&total, txn, BOOKDB_POS) < 0) total = 0;
	st->expected = total;
	Key key;
	const uint8_t *val;
	size_t len;
	/* Without a repair, on every core; a repair copies in key order. */
	if (!w && (rc = check_records_parallel(st, it, fn, ctx, progress, progress_ctx, total)) ==
	              BOOKDB_ENOMEM)
		goto done;
	while (w && (rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (!(++st->records & 16383) && progress)
			progress(progress_ctx, st->records, total);
		bool moves_only;
		int p = bookdb_check_record(key, val, len, rec, pos, &moves_only, fn, ctx);
		st->problems += (uint64_t)p;
		st->bad += p > 0;
		if (p > 0 && !moves_only) {
			st->dropped++;
			continue;
		}
		if (p == 0)
			rc = bookdb_writer_put_raw(w, key, val, len);
		else
			rc = bookdb_writer_put(w, key, rec);
		if (rc < 0) goto done;
		if (p == 0)
			st->copied++;
		else
			st->repaired++;
	}
	if (rc < 0) {
		/* A damaged tree: what was read so far is all that can be. */
		st->stopped = true;
		st->stop_code = rc;
		rc = 0;
	}
	/* Records the database counts and the pass did not meet. */
	st->unread = st->expected > st->records ? st->expected - st->records : 0;
	if ((rc = check_games(st, txn, pos, w, fn, ctx)) < 0) goto done;
	/* joseki merge keeps its progress under meta "merge" until it is done. */
	const void *mv;
	size_t ml;
	st->merge_unfinished = bookdb_kv_get(&mv, &ml, txn, BOOKDB_META, "merge", 5) == 0;
	st->minimax_unfinished = bookdb_minimax_unfinished(txn);
	if ((rc = check_marks(st, txn, rec, w, fn, ctx)) < 0) goto done;
	if (w) rc = bookdb_writer_flush(w);
done:
	/* Every message names what it is about (the new book's own say it). */
	if (rc < 0 && !err[0] && repair_dir)
		errmsg_set(err, BOOKDB_ERRLEN, rc, "%.200s, repaired into %.200s: %s",
		           bookdb_dir(db), repair_dir, bookdb_strerror(rc));
	else if (rc < 0 && !err[0])
		errmsg_set(err, BOOKDB_ERRLEN, rc, "%.200s: %s", bookdb_dir(db),
		           bookdb_strerror(rc));
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	bookdb_writer_free(w);
	bookdb_free(out);
	if (partial[0]) {
		bdb_damage_output(NULL, NULL);
		/* The one step that makes NEW, once the new book is closed. */
		if (rc == 0 && rename(partial, repair_dir) < 0)
			rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EIO, "%.200s: %s", repair_dir,
			                strerror(errno));
		if (rc < 0) bookdb_remove_new(partial);
	}
	free(rec);
	free(pos);
	return rc < 0 ? rc : 0;
}

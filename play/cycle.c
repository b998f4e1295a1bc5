/* play/cycle.c — Shiba's extension/deletion cycle (see cycle.h). */
#include "play/cycle.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bookdb/marks.h"
#include "bookdb/query.h"
#include "bookgen/roots.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"

const char *cycle_strerror(int code)
{
	switch (code) {
	case CYCLE_OK:
		return "success";
	case CYCLE_EINVAL:
		return "bad option or game";
	case CYCLE_EBOOK:
		return "the book could not be read or written";
	case CYCLE_ENOMEM:
		return "out of memory";
	case CYCLE_ESTEP:
		return "a step of the cycle failed";
	}
	return "unknown cycle error";
}

/*
 * The game's moves into moves (POS_MAX_STATES), pos left after its opening
 * (its start_ply first moves, played as given: the rules look at the moves
 * after them), *first the index of the next move.
 */
static int game_setup(Position *pos, Move *moves, int *n, int *first, const CycleGame *g,
                      size_t index, char *err)
{
	char perr[SHOGI_ERRLEN];
	if (!g->spec || (g->book_color != BLACK && g->book_color != WHITE) || g->result < -1 ||
	    g->result > 1 || g->opponent < 0 || g->opponent >= CYCLE_OPPONENTS_MAX ||
	    g->start_ply < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL, "game %zu: bad game", index + 1);
	if (position_parse(pos, g->spec, perr) < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL, "game %zu: %s", index + 1, perr);
	*n = pos_history_len(pos);
	for (int i = 0; i < *n; i++) moves[i] = pos->states[i + 1].move;
	*first = g->start_ply < *n ? g->start_ply : *n;
	for (int i = *n; i > *first; i--) pos_undo_move(pos);
	return 0;
}

static int book_fail(char *err, const char *what, int rc)
{
	return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", what, bookdb_strerror(rc));
}

/* What the rules walk the games with, in the caller's transaction. */
typedef struct {
	Position *pos;
	BookRecord *rec;
	Move *moves; /* POS_MAX_STATES */
	BookTxn *txn;
} Walk;

static int walk_begin(Walk *w, BookTxn *txn, char *err)
{
	memset(w, 0, sizeof *w);
	w->txn = txn;
	w->pos = malloc(sizeof *w->pos);
	w->rec = malloc(sizeof *w->rec);
	w->moves = malloc(POS_MAX_STATES * sizeof *w->moves);
	if (!w->pos || !w->rec || !w->moves)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	return 0;
}

static int walk_end(Walk *w, int ret)
{
	free(w->moves);
	free(w->rec);
	free(w->pos);
	return ret;
}

/* Runs fn in a write transaction of db's own, committed when fn returns 0. */
static int in_write_txn(BookDB *db, int (*fn)(void *ctx, BookTxn *txn, char *err), void *ctx,
                        char *err)
{
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, true);
	if (rc < 0) return book_fail(err, "cannot write the book", rc);
	int ret = fn(ctx, txn, err);
	if (ret == 0) {
		rc = bookdb_txn_commit(txn);
		return rc < 0 ? book_fail(err, "cannot write the book", rc) : 0;
	}
	bookdb_txn_abort(txn);
	return ret;
}

/* The book's move at pos now into *m (MOVE_NONE: none), its record sorted
 * in rec (bookdb_query's order). 0 or a BOOKDB_* code. */
static int book_choice(BookTxn *txn, BookRecord *rec, const Position *pos, Move *m)
{
	int rc = bookdb_query(rec, txn, pos);
	*m = rc == 1 ? bookdb_best_move(rec, pos) : MOVE_NONE;
	return rc < 0 ? rc : 0;
}

/* Whether the book could play m at pos: in rec, not avoided, valued, not a
 * declined promotion (8h2b beside a valued 8h2b+: bookdb_move_declined),
 * legal. */
static bool playable(const BookRecord *rec, const BookMove *bm, const Position *pos)
{
	return !(bm->flags & BOOKDB_MOVE_AVOIDED) && bookdb_move_valued(rec, bm) &&
	       !bookdb_move_declined(rec, bm) && pos_is_legal(pos, bm->move);
}

/* ---- deletion ---- */

/* A book move of the book side in a game, with the game's opponent and result. */
typedef struct {
	Key key;
	Move move;
	uint8_t opponent;
	int8_t result;
	uint32_t game;
} Seen;

static int cmp_seen(const void *a, const void *b)
{
	const Seen *x = a, *y = b;
	int c = key_cmp(x->key, y->key);
	if (c) return c;
	if (x->move != y->move) return x->move < y->move ? -1 : 1;
	if (x->opponent != y->opponent) return x->opponent < y->opponent ? -1 : 1;
	return x->game < y->game ? -1 : x->game > y->game;
}

static bool same_group(const Seen *a, const Seen *b)
{
	return key_equal(a->key, b->key) && a->move == b->move && a->opponent == b->opponent;
}

/* The book side's moves of the games that the book's records list (the
 * opening's moves left out), sorted by position, move, opponent and game. */
typedef struct {
	Seen *v;
	size_t n, cap;
} SeenList;

static int collect_seen(SeenList *sl, Walk *w, const CycleGame *games, size_t n, char *err)
{
	Position *pos = w->pos;
	int ret = 0, rc;
	for (size_t g = 0; g < n && ret == 0; g++) {
		int nm, first;
		if ((ret = game_setup(pos, w->moves, &nm, &first, &games[g], g, err)) < 0) break;
		for (int i = first; i < nm && ret == 0; i++) {
			if ((int)pos->side == games[g].book_color &&
			    (rc = bookdb_get_moves(w->rec, w->txn, pos_key(pos))) !=
			        BOOKDB_ENOTFOUND) {
				if (rc < 0) ret = book_fail(err, "cannot read the book", rc);
				for (int k = 0; ret == 0 && k < w->rec->nmoves; k++) {
					if (w->rec->moves[k].move != w->moves[i]) continue;
					if (array_grow((void **)&sl->v, &sl->cap, sl->n + 1,
					               sizeof *sl->v, 256))
						ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM,
						                 "out of memory");
					else
						sl->v[sl->n++] =
						    (Seen){pos_key(pos), w->moves[i],
						           (uint8_t)games[g].opponent,
						           (int8_t)games[g].result, (uint32_t)g};
					break;
				}
			}
			pos_do_move(pos, w->moves[i]);
		}
	}
	if (ret == 0) qsort(sl->v, sl->n, sizeof *sl->v, cmp_seen);
	return ret;
}

/* The note a prune mark carries. */
typedef char MarkNote[96];

/* Whether the group of moves from v[i] (one position, move and opponent)
 * loses badly against its opponent; *end gets the group's end, note what
 * the mark would say. */
static bool loses_badly(const Seen *v, size_t n, size_t i, const CyclePruneOptions *opt,
                        size_t *end, MarkNote note)
{
	size_t j = i;
	double points = 0;
	uint32_t played = 0;
	for (; j < n && same_group(&v[j], &v[i]); j++) {
		if (j > i && v[j].game == v[j - 1].game) continue; /* once a game */
		played++;
		points += v[j].result > 0 ? 1.0 : v[j].result == 0 ? 0.5 : 0.0;
	}
	*end = j;
	snprintf(note, sizeof(MarkNote), "scored %.2f in %u game%s against opponent %d",
	         points / played, played, played == 1 ? "" : "s", v[i].opponent + 1);
	uint32_t min_games = opt->min_games ? opt->min_games : 1;
	return played >= min_games && points / played <= opt->max_winrate + 1e-12;
}

/* The first of sl's entries for (key, move, opponent), or sl->n. */
static size_t seen_find(const SeenList *sl, Key key, Move move, int opponent)
{
	Seen probe = {key, move, (uint8_t)opponent, 0, 0};
	size_t lo = 0, hi = sl->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_seen(&sl->v[mid], &probe) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sl->n && same_group(&sl->v[lo], &probe) ? lo : sl->n;
}

/* Moves marked avoided among the records of txn. */
static int count_avoided(size_t *out, BookTxn *txn, BookRecord *rec)
{
	BookIter *it = NULL;
	int rc = bookdb_iter_open(&it, txn);
	Key k;
	const uint8_t *v;
	size_t len, n = 0;
	while (rc == 0 && (rc = bookdb_iter_next(it, &k, &v, &len)) == 1) {
		rc = 0;
		if (!len || !(v[0] & BOOKDB_REC_AVOID)) continue;
		if (bookdb_record_decode_moves(rec, v, len) < 0) continue; /* check reports it */
		for (int i = 0; i < rec->nmoves; i++)
			n += (rec->moves[i].flags & BOOKDB_MOVE_AVOIDED) != 0;
	}
	bookdb_iter_free(it);
	*out = n;
	return rc;
}

int cycle_avoided_txn(size_t *avoided, BookTxn *txn, char *err)
{
	BookRecord *rec = malloc(sizeof *rec);
	if (!rec) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	int rc = count_avoided(avoided, txn, rec);
	free(rec);
	return rc < 0 ? book_fail(err, "cannot read the book", rc) : 0;
}

/* Marks move m of key's record avoided, as prune's mark with note (see
 * bookdb/marks.h); a move already avoided, or carrying a hand mark (a
 * player's choice stands), is left as it is. *changed counts the marks made. */
static int set_mark(BookTxn *txn, Key key, Move m, BookRecord *rec, size_t *changed,
                    const char *note)
{
	BookMark *mk = calloc(1, sizeof *mk);
	if (!mk) return BOOKDB_ENOMEM;
	int rc = bookdb_mark_get(mk, txn, key, m);
	if (rc == 1 && mk->source == BOOKDB_MARK_HAND)
		rc = 0;
	else if (rc >= 0 || rc == BOOKDB_ECORRUPT) {
		rc = bookdb_get_moves(rec, txn, key);
		bool avoided = false;
		for (int i = 0; rc == 0 && i < rec->nmoves; i++)
			if (rec->moves[i].move == m)
				avoided = rec->moves[i].flags & BOOKDB_MOVE_AVOIDED;
		if (rc == 0 && !avoided) {
			memset(mk, 0, sizeof *mk);
			mk->kind = BOOKDB_MARK_AVOID;
			mk->source = BOOKDB_MARK_PRUNE;
			mk->known = true;
			mk->time = (int64_t)time(NULL);
			snprintf(mk->note, sizeof mk->note, "%s", note);
			bool ch = false;
			rc = bookdb_mark_set(txn, rec, key, NULL, m, mk, &ch, NULL);
			*changed += ch;
		}
	}
	free(mk);
	return rc;
}

int cycle_prune_txn(CyclePruneStats *st, BookTxn *txn, const CycleGame *games, size_t n,
                    const CyclePruneOptions *opt, char *err)
{
	memset(st, 0, sizeof *st);
	Walk w;
	SeenList sl = {0};
	int ret = walk_begin(&w, txn, err), rc;
	if (ret == 0) ret = collect_seen(&sl, &w, games, n, err);
	if (ret == 0) st->games = n;
	for (size_t i = 0, end; i < sl.n && ret == 0; i = end) {
		/* Hefeweizen's rule: losing badly against one opponent is enough. */
		if (i == 0 || !key_equal(sl.v[i].key, sl.v[i - 1].key) ||
		    sl.v[i].move != sl.v[i - 1].move)
			st->moves++;
		MarkNote note;
		if (!loses_badly(sl.v, sl.n, i, opt, &end, note)) continue;
		size_t before = st->marked;
		if ((rc = set_mark(txn, sl.v[i].key, sl.v[i].move, w.rec, &st->marked, note)) < 0)
			ret = book_fail(err, "cannot mark a move", rc);
		st->opp_marked[sl.v[i].opponent] += st->marked - before;
	}
	if (ret == 0 && (rc = count_avoided(&st->avoided, txn, w.rec)) < 0)
		ret = book_fail(err, "cannot read the book", rc);
	free(sl.v);
	return walk_end(&w, ret);
}

typedef struct {
	CyclePruneStats *st;
	const CycleGame *games;
	size_t n;
	const CyclePruneOptions *opt;
} PruneCall;

static int prune_call(void *ctx, BookTxn *txn, char *err)
{
	PruneCall *c = ctx;
	return cycle_prune_txn(c->st, txn, c->games, c->n, c->opt, err);
}

int cycle_prune(CyclePruneStats *st, BookDB *db, const CycleGame *games, size_t n,
                const CyclePruneOptions *opt, char *err)
{
	memset(st, 0, sizeof *st);
	PruneCall c = {st, games, n, opt};
	return in_write_txn(db, prune_call, &c, err);
}

int cycle_prune_undo(size_t *cleared, BookDB *db, char *err)
{
	/* Prune's marks only: a player's hand marks stay. */
	char msg[BOOKDB_MARK_ERRLEN];
	int rc = bookdb_marks_clear_source(cleared, db, BOOKDB_MARK_PRUNE, msg);
	if (rc < 0) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s", msg);
	return 0;
}

/* ---- extension ---- */

static bool is_thought(BookTxn *txn, Key k)
{
	const uint8_t *v;
	size_t len;
	return bookdb_get_raw(&v, &len, txn, k) == 0 && len && (v[0] & BOOKDB_REC_THOUGHT);
}

void cycle_keys_free(CycleKeys *k)
{
	free(k->keys);
	free(k->owners);
	memset(k, 0, sizeof *k);
}

static int keys_add(CycleKeys *k, Key key, int owner)
{
	size_t cap = k->cap;
	if (array_grow((void **)&k->keys, &cap, k->n + 1, sizeof *k->keys, 64)) return -1;
	if (array_grow((void **)&k->owners, &k->cap, k->n + 1, sizeof *k->owners, 64)) return -1;
	k->keys[k->n] = key;
	k->owners[k->n++] = (uint8_t)owner;
	return 0;
}

/* Game g (set up by game_setup: pos after its opening, at move first) played
 * up to its first position of the book side without a book move: the index
 * of the next move there in *at, or nm + 1 when the book lasted the game. */
static int find_exit(Walk *w, const CycleGame *g, int nm, int first, int *at)
{
	Position *pos = w->pos;
	for (*at = first; *at <= nm; (*at)++) {
		if ((int)pos->side == g->book_color) {
			Move m;
			int rc = book_choice(w->txn, w->rec, pos, &m);
			if (rc < 0) return rc;
			if (m == MOVE_NONE) return 0;
		}
		if (*at < nm) pos_do_move(pos, w->moves[*at]);
	}
	return 0;
}

int cycle_extend_txn(CycleExtendStats *st, BookTxn *txn, const CycleGame *games, size_t n,
                     int plies, CycleKeys *queued, char *err)
{
	memset(st, 0, sizeof *st);
	if (plies < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL, "--plies must not be negative");
	Walk w;
	Move legal[MOVEGEN_MAX];
	int *exit_at = calloc(n ? n : 1, sizeof *exit_at);
	int ret = walk_begin(&w, txn, err), rc;
	if (!exit_at && ret == 0)
		ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	Position *pos = w.pos;
	/* Where each game ran out of book. */
	for (size_t g = 0; g < n && ret == 0; g++) {
		int nm, first;
		if ((ret = game_setup(pos, w.moves, &nm, &first, &games[g], g, err)) < 0) break;
		st->games++;
		if ((rc = find_exit(&w, &games[g], nm, first, &exit_at[g])) < 0)
			ret = book_fail(err, "cannot read the book", rc);
		else if (exit_at[g] <= nm)
			st->ran_out++;
	}
	/* Then each game's first position from there, then each one's second... */
	for (int k = 0; k <= plies && ret == 0; k++) {
		for (size_t g = 0; g < n && ret == 0; g++) {
			int nm, first;
			if ((ret = game_setup(pos, w.moves, &nm, &first, &games[g], g, err)) < 0)
				break;
			int at = exit_at[g] + k;
			if (exit_at[g] > nm || at > nm) continue;
			for (int i = first; i < at; i++) pos_do_move(pos, w.moves[i]);
			bool added = false;
			/* A game's last position may be mate: nothing to think there. */
			if (!is_thought(txn, pos_key(pos)) && movegen_legal(pos, legal) > 0 &&
			    (rc = roots_queue_add(txn, pos, &added)) < 0)
				ret = book_fail(err, "cannot queue a root", rc);
			if (added && queued &&
			    keys_add(queued, pos_key(pos), games[g].opponent) < 0)
				ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
			st->queued += added;
			st->opp_queued[games[g].opponent] += added;
		}
	}
	if (ret == 0 && (rc = roots_queue_drop_thought(txn, &st->pending)) < 0)
		ret = book_fail(err, "cannot update the root queue", rc);
	free(exit_at);
	return walk_end(&w, ret);
}

typedef struct {
	CycleExtendStats *st;
	const CycleGame *games;
	size_t n;
	int plies;
} ExtendCall;

static int extend_call(void *ctx, BookTxn *txn, char *err)
{
	ExtendCall *c = ctx;
	return cycle_extend_txn(c->st, txn, c->games, c->n, c->plies, NULL, err);
}

int cycle_extend(CycleExtendStats *st, BookDB *db, const CycleGame *games, size_t n, int plies,
                 char *err)
{
	memset(st, 0, sizeof *st);
	ExtendCall c = {st, games, n, plies};
	return in_write_txn(db, extend_call, &c, err);
}

/* ---- backtracking, and keeping what won ---- */

/* A book move of the book side on a game's line, as the book plays it now. */
typedef struct {
	Key key;
	Move move;
	bool alternative; /* the position keeps another move the book could play */
} Decision;

/* walk_begin, and room for a game's decisions in *dec (freed by the caller,
 * also on failure). */
static int walk_begin_decisions(Walk *w, Decision **dec, BookTxn *txn, char *err)
{
	*dec = malloc(POS_MAX_STATES * sizeof **dec);
	int ret = walk_begin(w, txn, err);
	if (!*dec && ret == 0) ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	return ret;
}

/* Whether rec holds m with a value (avoided or not). */
static bool in_record(const BookRecord *rec, Move m)
{
	for (int k = 0; k < rec->nmoves; k++)
		if (rec->moves[k].move == m) return bookdb_move_valued(rec, &rec->moves[k]);
	return false;
}

/*
 * Game g replayed over the book as it is now, from after its opening, with
 * the book's choices at the book side's positions, up to the first where the
 * book has no move (the engine's from there: the game's own again) or the
 * game's end: *differs set when the book chooses another move than the game
 * somewhere (the walk stops there, pos at that position, w->rec its sorted
 * record, *at its move index); else dec[0..*nd) are the book moves it plays.
 * With strict, a position where the book has no move but holds the game's
 * move with a value (the book played it, and no longer can) differs too.
 */
static int replay_book(Walk *w, const CycleGame *g, int nm, int first, bool strict, Decision *dec,
                       int *nd, bool *differs, int *at)
{
	Position *pos = w->pos;
	*nd = 0;
	*differs = false;
	for (*at = first; *at < nm; (*at)++) {
		if ((int)pos->side == g->book_color) {
			Move m;
			int rc = book_choice(w->txn, w->rec, pos, &m);
			if (rc < 0) return rc;
			if (m == MOVE_NONE) {
				*differs = strict && in_record(w->rec, w->moves[*at]);
				return 0;
			}
			if (m != w->moves[*at]) {
				*differs = true;
				return 0;
			}
			bool alt = false;
			for (int k = 0; k < w->rec->nmoves && !alt; k++)
				alt = w->rec->moves[k].move != m &&
				      playable(w->rec, &w->rec->moves[k], pos);
			dec[(*nd)++] = (Decision){pos_key(pos), m, alt};
		}
		pos_do_move(pos, w->moves[*at]);
	}
	return 0;
}

int cycle_backtrack_txn(CycleBacktrackStats *st, BookTxn *txn, const CycleGame *games, size_t n,
                        const CyclePruneOptions *opt, char *err)
{
	memset(st, 0, sizeof *st);
	Walk w;
	SeenList sl = {0};
	Decision *dec;
	int ret = walk_begin_decisions(&w, &dec, txn, err), rc;
	if (ret == 0) ret = collect_seen(&sl, &w, games, n, err);
	for (size_t g = 0; g < n && ret == 0; g++) {
		const CycleGame *gm = &games[g];
		if (gm->result >= 0) continue;
		int nm, first, nd, at;
		bool differs;
		if ((ret = game_setup(w.pos, w.moves, &nm, &first, gm, g, err)) < 0) break;
		st->lost++;
		if ((rc = replay_book(&w, gm, nm, first, false, dec, &nd, &differs, &at)) < 0) {
			ret = book_fail(err, "cannot read the book", rc);
			break;
		}
		if (differs) {
			st->changed++;
			continue;
		}
		/* The last decision that can change, deepest first. */
		bool marked = false;
		for (int d = nd - 1; d >= 0 && !marked && ret == 0; d--) {
			size_t i = seen_find(&sl, dec[d].key, dec[d].move, gm->opponent), end;
			MarkNote note;
			if (!dec[d].alternative || i == sl.n ||
			    !loses_badly(sl.v, sl.n, i, opt, &end, note))
				continue;
			size_t c = 0;
			if ((rc = set_mark(txn, dec[d].key, dec[d].move, w.rec, &c, note)) < 0)
				ret = book_fail(err, "cannot mark a move", rc);
			marked = c > 0;
		}
		if (marked) {
			st->marked++;
			st->opp_marked[gm->opponent]++;
		} else if (ret == 0) {
			st->stuck++;
			st->opp_stuck[gm->opponent]++;
		}
	}
	free(sl.v);
	free(dec);
	return walk_end(&w, ret);
}

int cycle_keep_won_txn(CycleKeepStats *st, BookTxn *txn, const CycleGame *games, size_t n,
                       char *err)
{
	memset(st, 0, sizeof *st);
	Walk w;
	Decision *dec;
	int ret = walk_begin_decisions(&w, &dec, txn, err), rc;
	for (size_t g = 0; g < n && ret == 0; g++) {
		const CycleGame *gm = &games[g];
		if (gm->result <= 0) continue;
		int nm, first, nd, at;
		if ((ret = game_setup(w.pos, w.moves, &nm, &first, gm, g, err)) < 0) break;
		st->won++;
		bool kept = true, lost = false;
		for (;;) {
			bool differs;
			if ((rc = replay_book(&w, gm, nm, first, true, dec, &nd, &differs, &at)) <
			    0) {
				ret = book_fail(err, "cannot read the book", rc);
				break;
			}
			if (!differs) break;
			/* Every move the book now ranks above the game's is marked; when
			 * the book does not hold the game's move, the game's engine chose
			 * it there: every move is, and the engine chooses it again. */
			kept = false;
			Move played = w.moves[at];
			Key key = pos_key(w.pos);
			int k = 0;
			while (k < w.rec->nmoves && w.rec->moves[k].move != played) k++;
			if (k < w.rec->nmoves && !playable(w.rec, &w.rec->moves[k], w.pos)) {
				lost = true;
				break;
			}
			Move above[BOOKDB_MAX_MOVES];
			int na = 0;
			for (int i = 0; i < w.rec->nmoves && i < k; i++)
				if (playable(w.rec, &w.rec->moves[i], w.pos))
					above[na++] = w.rec->moves[i].move;
			size_t before = st->marked;
			MarkNote note;
			/* Which game: its opponent, opening and the book's colour (each
			 * opponent's files are numbered on their own). */
			if (games[g].opening > 0)
				snprintf(
				    note, sizeof note,
				    "above a won game's move (against opponent %d, opening %d, "
				    "the book %s)",
				    games[g].opponent + 1, games[g].opening,
				    games[g].book_color == BLACK ? "Black" : "White");
			else
				snprintf(note, sizeof note, "above a won game's move (game %zu)",
				         g + 1);
			for (int i = 0; i < na && ret == 0; i++)
				if ((rc = set_mark(txn, key, above[i], w.rec, &st->marked, note)) <
				    0)
					ret = book_fail(err, "cannot mark a move", rc);
			if (ret == 0 && st->marked == before) { /* nothing to mark: cannot be */
				lost = true;
				break;
			}
			/* Replayed again: the book may differ further on as well. */
			if (ret == 0 &&
			    (ret = game_setup(w.pos, w.moves, &nm, &first, gm, g, err)) < 0)
				break;
		}
		if (lost) {
			st->lost++;
			st->opp_lost[gm->opponent]++;
		} else if (kept && ret == 0) {
			st->kept++;
		}
	}
	free(dec);
	return walk_end(&w, ret);
}

/* Whether games a and b were played from the same opening, with the book
 * side in the same colour, against the same opponent. */
static bool same_slot(const CycleGame *a, const CycleGame *b)
{
	return a->opponent == b->opponent && a->opening == b->opening &&
	       a->book_color == b->book_color;
}

int cycle_replays_txn(size_t *count, bool *replay, BookTxn *txn, const CycleGame *games, size_t n,
                      char *err)
{
	*count = 0;
	for (size_t g = 0; g < n; g++) replay[g] = false;
	Walk w;
	Decision *dec;
	int ret = walk_begin_decisions(&w, &dec, txn, err), rc;
	for (size_t g = 0; g < n && ret == 0; g++) {
		const CycleGame *gm = &games[g];
		if (gm->result >= 0 || gm->opening < 0) continue;
		bool last = true; /* of its opening, colour and opponent */
		for (size_t h = g + 1; h < n && last; h++) last = !same_slot(gm, &games[h]);
		if (!last) continue;
		int nm, first, nd, at;
		bool differs;
		if ((ret = game_setup(w.pos, w.moves, &nm, &first, gm, g, err)) < 0) break;
		if ((rc = replay_book(&w, gm, nm, first, false, dec, &nd, &differs, &at)) < 0)
			ret = book_fail(err, "cannot read the book", rc);
		else if (differs)
			replay[g] = true, (*count)++;
	}
	free(dec);
	return walk_end(&w, ret);
}

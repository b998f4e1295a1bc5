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

/* The game's moves into moves (POS_MAX_STATES), pos left at its start. */
static int game_setup(Position *pos, Move *moves, int *n, const CycleGame *g, size_t index,
                      char *err)
{
	char perr[SHOGI_ERRLEN];
	if (!g->spec || (g->book_color != BLACK && g->book_color != WHITE) || g->result < -1 ||
	    g->result > 1)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL, "game %zu: bad game", index + 1);
	if (position_parse(pos, g->spec, perr) < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL, "game %zu: %s", index + 1, perr);
	*n = pos_history_len(pos);
	for (int i = 0; i < *n; i++) moves[i] = pos->states[i + 1].move;
	for (int i = 0; i < *n; i++) pos_undo_move(pos);
	return 0;
}

static int book_fail(char *err, const char *what, int rc)
{
	return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", what, bookdb_strerror(rc));
}

/* What prune and extend walk the games with, and their transaction. */
typedef struct {
	Position *pos;
	BookRecord *rec;
	Move *moves; /* POS_MAX_STATES */
	BookTxn *txn;
} Walk;

static int walk_begin(Walk *w, BookDB *db, bool write, char *err)
{
	memset(w, 0, sizeof *w);
	w->pos = malloc(sizeof *w->pos);
	w->rec = malloc(sizeof *w->rec);
	w->moves = malloc(POS_MAX_STATES * sizeof *w->moves);
	if (!w->pos || !w->rec || !w->moves)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	int rc = bookdb_txn_begin(&w->txn, db, write);
	return rc < 0 ? book_fail(err, write ? "cannot write the book" : "cannot read the book", rc)
	              : 0;
}

/* Commits the walk's transaction (when ret is 0) and frees the rest. */
static int walk_end(Walk *w, int ret, char *err)
{
	if (ret == 0 && w->txn) {
		int rc = bookdb_txn_commit(w->txn);
		w->txn = NULL;
		if (rc < 0) ret = book_fail(err, "cannot write the book", rc);
	}
	bookdb_txn_abort(w->txn);
	free(w->moves);
	free(w->rec);
	free(w->pos);
	return ret;
}

/* ---- deletion ---- */

typedef struct {
	Key key;
	Move move;
	uint32_t game;
	int8_t result;
} Seen;

static int cmp_seen(const void *a, const void *b)
{
	const Seen *x = a, *y = b;
	int c = key_cmp(x->key, y->key);
	if (c) return c;
	if (x->move != y->move) return x->move < y->move ? -1 : 1;
	return x->game < y->game ? -1 : x->game > y->game;
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

/* Marks move m of key's record avoided, as prune's mark with a note of the
 * score (bookdb/marks.h); a move already avoided, or carrying a hand mark
 * (a player's choice stands), is left as it is. *changed counts the marks
 * made. */
static int set_mark(BookTxn *txn, Key key, Move m, BookRecord *rec, size_t *changed, double score,
                    uint32_t games)
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
			snprintf(mk->note, sizeof mk->note, "scored %.2f in %u games", score,
			         games);
			bool ch = false;
			rc = bookdb_mark_set(txn, rec, key, NULL, m, mk, &ch, NULL);
			*changed += ch;
		}
	}
	free(mk);
	return rc;
}

int cycle_prune(CyclePruneStats *st, BookDB *db, const CycleGame *games, size_t n,
                const CyclePruneOptions *opt, char *err)
{
	memset(st, 0, sizeof *st);
	Walk w;
	Seen *seen = NULL;
	size_t ns = 0, cap = 0;
	int ret = walk_begin(&w, db, false, err), rc;
	Position *pos = w.pos;
	for (size_t g = 0; g < n && ret == 0; g++) {
		int nm;
		if ((ret = game_setup(pos, w.moves, &nm, &games[g], g, err)) < 0) break;
		st->games++;
		for (int i = 0; i < nm && ret == 0; i++) {
			if ((int)pos->side == games[g].book_color &&
			    (rc = bookdb_get_moves(w.rec, w.txn, pos_key(pos))) !=
			        BOOKDB_ENOTFOUND) {
				if (rc < 0) ret = book_fail(err, "cannot read the book", rc);
				for (int k = 0; ret == 0 && k < w.rec->nmoves; k++) {
					if (w.rec->moves[k].move != w.moves[i]) continue;
					if (array_grow((void **)&seen, &cap, ns + 1, sizeof *seen,
					               256))
						ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM,
						                 "out of memory");
					else
						seen[ns++] =
						    (Seen){pos_key(pos), w.moves[i], (uint32_t)g,
						           (int8_t)games[g].result};
					break;
				}
			}
			pos_do_move(pos, w.moves[i]);
		}
	}
	/* Then the marks, in a write transaction of their own. */
	bookdb_txn_abort(w.txn);
	w.txn = NULL;
	if (ret == 0 && (rc = bookdb_txn_begin(&w.txn, db, true)) < 0)
		ret = book_fail(err, "cannot write the book", rc);
	qsort(seen, ns, sizeof *seen, cmp_seen);
	uint32_t min_games = opt->min_games ? opt->min_games : 1;
	for (size_t i = 0; i < ns && ret == 0;) {
		size_t j = i;
		double points = 0;
		uint32_t played = 0;
		for (; j < ns && !key_cmp(seen[j].key, seen[i].key) && seen[j].move == seen[i].move;
		     j++) {
			if (j > i && seen[j].game == seen[j - 1].game) continue; /* once a game */
			played++;
			points += seen[j].result > 0 ? 1.0 : seen[j].result == 0 ? 0.5 : 0.0;
		}
		st->moves++;
		if (played >= min_games && points / played <= opt->max_winrate + 1e-12 &&
		    (rc = set_mark(w.txn, seen[i].key, seen[i].move, w.rec, &st->marked,
		                   points / played, played)) < 0)
			ret = book_fail(err, "cannot mark a move", rc);
		i = j;
	}
	if (ret == 0 && (rc = count_avoided(&st->avoided, w.txn, w.rec)) < 0)
		ret = book_fail(err, "cannot read the book", rc);
	free(seen);
	return walk_end(&w, ret, err);
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

int cycle_extend(CycleExtendStats *st, BookDB *db, const CycleGame *games, size_t n, int plies,
                 char *err)
{
	memset(st, 0, sizeof *st);
	if (plies < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL, "--plies must not be negative");
	Walk w;
	Move legal[MOVEGEN_MAX];
	int ret = walk_begin(&w, db, true, err), rc;
	Position *pos = w.pos;
	for (size_t g = 0; g < n && ret == 0; g++) {
		int nm, i;
		if ((ret = game_setup(pos, w.moves, &nm, &games[g], g, err)) < 0) break;
		st->games++;
		/* The first position of the book side without a book move. */
		for (i = 0; i <= nm; i++) {
			if ((int)pos->side == games[g].book_color) {
				if ((rc = bookdb_query(w.rec, w.txn, pos)) < 0) {
					ret = book_fail(err, "cannot read the book", rc);
					break;
				}
				if (bookdb_best_move(w.rec, pos) == MOVE_NONE) break;
			}
			if (i < nm) pos_do_move(pos, w.moves[i]);
		}
		if (ret || i > nm) continue;
		st->ran_out++;
		for (int j = i; j <= nm && j <= i + plies && ret == 0; j++) {
			bool added = false;
			/* A game's last position may be mate: nothing to think there. */
			if (!is_thought(w.txn, pos_key(pos)) && movegen_legal(pos, legal) > 0 &&
			    (rc = roots_queue_add(w.txn, pos, &added)) < 0)
				ret = book_fail(err, "cannot queue a root", rc);
			st->queued += added;
			if (j < nm) pos_do_move(pos, w.moves[j]);
		}
	}
	if (ret == 0 && (rc = roots_queue_drop_thought(w.txn, &st->pending)) < 0)
		ret = book_fail(err, "cannot update the root queue", rc);
	return walk_end(&w, ret, err);
}

/* ---- the whole cycle ---- */

/*
 * meta "cycle": "G S Q T M" in ASCII: generations finished, the last step
 * finished of generation G + 1 (0 none, then STEP_*), and that generation's
 * figures so far (queued, thought, marked).
 * meta "cycle_games": that generation's games: "W D L\n", then one
 * "<book colour b|w> <result 1|0|-1> <spec>\n" a game.
 */
enum { STEP_NONE, STEP_MATCH, STEP_PRUNE, STEP_EXTEND, STEP_THINK };

typedef struct {
	int gen, step;
	unsigned long long queued, thought, marked;
} CycleState;

static int state_get(CycleState *s, BookTxn *txn)
{
	memset(s, 0, sizeof *s);
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "cycle", 5);
	if (rc == BOOKDB_ENOTFOUND) return 0;
	if (rc < 0) return rc;
	char buf[128];
	if (len >= sizeof buf) return BOOKDB_ECORRUPT;
	memcpy(buf, v, len);
	buf[len] = 0;
	if (sscanf(buf, "%d %d %llu %llu %llu", &s->gen, &s->step, &s->queued, &s->thought,
	           &s->marked) != 5 ||
	    s->gen < 0 || s->step < STEP_NONE || s->step > STEP_THINK)
		return BOOKDB_ECORRUPT;
	return 0;
}

static int state_put(BookTxn *txn, const CycleState *s)
{
	char buf[128];
	int n = snprintf(buf, sizeof buf, "%d %d %llu %llu %llu", s->gen, s->step, s->queued,
	                 s->thought, s->marked);
	return bookdb_kv_put(txn, BOOKDB_META, "cycle", 5, buf, (size_t)n);
}

int cycle_generations_done(int *done, BookDB *db)
{
	BookTxn *txn;
	CycleState s;
	*done = 0;
	if (bookdb_txn_begin(&txn, db, false) < 0) return CYCLE_EBOOK;
	int rc = state_get(&s, txn);
	bookdb_txn_abort(txn);
	if (rc < 0) return CYCLE_EBOOK;
	*done = s.gen;
	return 0;
}

void cycle_games_free(CycleGameSet *gs)
{
	free(gs->text);
	free(gs->games);
	memset(gs, 0, sizeof *gs);
}

/* A decimal number lo..hi at *p, followed by `end`; advances *p past both. */
static bool parse_num(char **p, long lo, long hi, char end, long *out)
{
	char *e;
	if (**p != '-' && (**p < '0' || **p > '9')) return false;
	errno = 0;
	long v = strtol(*p, &e, 10);
	if (errno || e == *p || v < lo || v > hi || *e != end) return false;
	*out = v;
	*p = e + 1;
	return true;
}

int cycle_games_parse(CycleGameSet *gs, const void *bytes, size_t len)
{
	memset(gs, 0, sizeof *gs);
	size_t cap = 0;
	if (memchr(bytes, 0, len)) return BOOKDB_ECORRUPT;
	if (!(gs->text = malloc(len + 1))) return BOOKDB_ENOMEM;
	memcpy(gs->text, bytes, len);
	gs->text[len] = 0;
	char *p = gs->text;
	long w, d, l, r;
	if (!parse_num(&p, 0, INT32_MAX, ' ', &w) || !parse_num(&p, 0, INT32_MAX, ' ', &d) ||
	    !parse_num(&p, 0, INT32_MAX, '\n', &l))
		return BOOKDB_ECORRUPT;
	gs->wins = (int)w;
	gs->draws = (int)d;
	gs->losses = (int)l;
	while (*p) {
		char *nl = strchr(p, '\n');
		if (!nl) return BOOKDB_ECORRUPT; /* every line ends with a newline */
		*nl = 0;
		char c = *p;
		if ((c != 'b' && c != 'w') || p[1] != ' ') return BOOKDB_ECORRUPT;
		p += 2;
		if (!parse_num(&p, -1, 1, ' ', &r) || !*p) return BOOKDB_ECORRUPT;
		if (array_grow((void **)&gs->games, &cap, gs->n + 1, sizeof *gs->games, 64))
			return BOOKDB_ENOMEM;
		gs->games[gs->n++] = (CycleGame){p, c == 'b' ? BLACK : WHITE, (int)r};
		p = nl + 1;
	}
	return 0;
}

static int games_load(CycleGameSet *gs, BookTxn *txn)
{
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "cycle_games", 11);
	return rc < 0 ? rc : cycle_games_parse(gs, v, len);
}

/* Stores the match's games (from A's side) as meta "cycle_games". */
static int games_put(BookTxn *txn, const MatchResult *mr)
{
	size_t cap = 64, n;
	for (int i = 0; i < mr->ngames; i++)
		if (mr->games[i].played && mr->games[i].usi) cap += strlen(mr->games[i].usi) + 16;
	char *buf = malloc(cap);
	if (!buf) return BOOKDB_ENOMEM;
	n = (size_t)snprintf(buf, cap, "%d %d %d\n", mr->wins, mr->draws, mr->losses);
	for (int i = 0; i < mr->ngames; i++) {
		const MatchGame *g = &mr->games[i];
		if (!g->played || !g->usi) continue;
		n += (size_t)snprintf(buf + n, cap - n, "%c %d %s\n",
		                      g->a_color == BLACK ? 'b' : 'w', g->result, g->usi);
	}
	int rc = bookdb_kv_put(txn, BOOKDB_META, "cycle_games", 11, buf, n);
	free(buf);
	return rc;
}

/* Opens the book, runs fn, writes the state s (when s) in its own
 * transaction, closes. */
typedef int (*StepFn)(void *ctx, BookDB *db, char *err);

static int with_book(const char *book, StepFn fn, void *ctx, const CycleState *s, char *err)
{
	BookDB *db = NULL;
	char berr[BOOKDB_ERRLEN];
	if (bookdb_open(&db, book, NULL, berr) < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s", berr);
	int ret = fn ? fn(ctx, db, err) : 0;
	if (ret == 0 && s) {
		BookTxn *txn;
		int rc = bookdb_txn_begin(&txn, db, true);
		if (rc == 0 && (rc = state_put(txn, s)) < 0) bookdb_txn_abort(txn);
		if (rc == 0) rc = bookdb_txn_commit(txn);
		if (rc < 0) ret = book_fail(err, "cannot save the cycle's state", rc);
	}
	bookdb_free(db);
	return ret;
}

typedef struct {
	const CycleOptions *opt;
	CycleState st;
	CycleGameSet games;
	MatchResult *mr;
	CyclePruneStats prune;
	CycleExtendStats extend;
	ThinkStats think;
	bool stopped;
} Run;

static int step_read_state(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc == 0) {
		rc = state_get(&r->st, txn);
		bookdb_txn_abort(txn);
	}
	return rc < 0 ? book_fail(err, "cannot read the cycle's state", rc) : 0;
}

static int step_save_games(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, true);
	if (rc == 0 && (rc = games_put(txn, r->mr)) < 0) bookdb_txn_abort(txn);
	if (rc == 0) rc = bookdb_txn_commit(txn);
	return rc < 0 ? book_fail(err, "cannot save the games", rc) : 0;
}

static int step_load_games(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	BookTxn *txn;
	cycle_games_free(&r->games);
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc == 0) {
		rc = games_load(&r->games, txn);
		bookdb_txn_abort(txn);
	}
	return rc < 0 ? book_fail(err, "cannot read the generation's games", rc) : 0;
}

static int step_prune(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	int rc = cycle_prune(&r->prune, db, r->games.games, r->games.n, &r->opt->prune, err);
	r->st.marked = r->prune.marked;
	return rc;
}

static int step_extend(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	int rc = cycle_extend(&r->extend, db, r->games.games, r->games.n, r->opt->plies, err);
	r->st.queued = r->extend.queued;
	return rc;
}

static int step_think(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	char terr[THINK_ERRLEN];
	int rc;
	if (r->opt->probe.opponents) {
		/* The way to the roots first, then the lines the match's opponent
		 * plays from them, walked. */
		const ThinkOptions *t = &r->opt->think;
		uint64_t before = 0;
		if (t->npaths) {
			if ((rc = think_paths(&r->think, db, t, terr)) < 0)
				return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "think: %s",
				                  terr);
			before = r->think.thought;
			if (t->stop && *t->stop) {
				r->st.thought = before;
				r->stopped = true;
				return 1;
			}
		}
		ProbeOptions po = r->opt->probe;
		po.engines = t->engines;
		po.nworkers = t->nengines;
		po.budget = t->budget;
		po.multipv = t->multipv;
		po.roots = t->roots;
		po.root_weights = t->root_weights;
		po.nroots = t->nroots;
		po.max_positions = t->max_positions;
		po.max_seconds = t->max_seconds;
		po.stop = t->stop;
		po.minimax = r->opt->minimax;
		ProbeStats ps;
		if (po.max_positions)
			po.max_positions =
			    po.max_positions > before ? po.max_positions - before : 1;
		rc = probe_run(&ps, db, &po, terr);
		r->think.thought = before + ps.thought;
	} else {
		rc = think_run(&r->think, db, &r->opt->think, terr);
	}
	if (rc < 0) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "think: %s", terr);
	r->st.thought = r->think.thought;
	if (r->opt->stop && *r->opt->stop) {
		r->stopped = true;
		return 1; /* not finished: the state is not advanced */
	}
	return 0;
}

static int step_minimax(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	char merr[CYCLE_ERRLEN - 16];
	if (!book_minimax_hook_set(&r->opt->minimax)) return 0;
	merr[0] = 0;
	if (book_minimax_hook_run(&r->opt->minimax, db, merr, sizeof merr))
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "minimax: %s", merr);
	return 0;
}

static int step_count_avoided(void *ctx, BookDB *db, char *err)
{
	Run *r = ctx;
	BookTxn *txn;
	BookRecord *rec = malloc(sizeof *rec);
	if (!rec) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc == 0) {
		rc = count_avoided(&r->prune.avoided, txn, rec);
		bookdb_txn_abort(txn);
	}
	free(rec);
	return rc < 0 ? book_fail(err, "cannot read the book", rc) : 0;
}

static void announce(const CycleOptions *opt, int gen, const char *step)
{
	if (opt->on_step) opt->on_step(opt->ctx, gen, step);
}

/* Runs one step unless the state says it is done; advances the state. */
#define STEP(num, name, fn)                                                                        \
	do {                                                                                       \
		if (r.st.step < (num)) {                                                           \
			if (opt->stop && *opt->stop) goto stopped;                                 \
			announce(opt, gen, name);                                                  \
			CycleState next = r.st;                                                    \
			next.step = (num);                                                         \
			ret = with_book(opt->book, fn, &r, NULL, err);                             \
			if (ret > 0) goto stopped;                                                 \
			if (ret < 0) goto out;                                                     \
			next.queued = r.st.queued;                                                 \
			next.thought = r.st.thought;                                               \
			next.marked = r.st.marked;                                                 \
			if ((ret = with_book(opt->book, NULL, NULL, &next, err)) < 0) goto out;    \
			r.st = next;                                                               \
		}                                                                                  \
	} while (0)

int cycle_run(int *done, bool *stopped, const CycleOptions *opt, char *err)
{
	Run r = {.opt = opt};
	int ret = 0;
	*done = 0;
	*stopped = false;
	if (!opt->book || opt->generations < 1 || opt->plies < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL,
		                  "cycle: a book, --generations >= 1 and --plies >= 0 are needed");
	char dir[BOOKDB_PATH_LEN], gdir[BOOKDB_PATH_LEN + 32];
	if (strlen(opt->book) > BOOKDB_DIR_MAX)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL,
		                  "cycle: the book path is too long");
	snprintf(dir, sizeof dir, "%s/cycle", opt->book);
	/* Creates the book if needed, then reads where the last run stopped. */
	if ((ret = with_book(opt->book, step_read_state, &r, NULL, err)) < 0) return ret;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", dir, strerror(errno));
	while (r.st.gen < opt->generations) {
		int gen = r.st.gen + 1;
		bool resumed = r.st.step > STEP_NONE;
		memset(&r.prune, 0, sizeof r.prune);
		memset(&r.extend, 0, sizeof r.extend);
		memset(&r.think, 0, sizeof r.think);
		if (r.st.step < STEP_MATCH) {
			if (opt->stop && *opt->stop) goto stopped;
			announce(opt, gen, "match");
			MatchOptions mo = opt->match;
			MatchResult mr;
			char merr[MATCH_ERRLEN];
			snprintf(gdir, sizeof gdir, "%s/gen-%04d", dir, gen);
			mo.side[0].book = opt->book;
			/* Another shuffle of the openings each generation. */
			mo.seed = opt->match.seed + (uint64_t)(gen - 1);
			mo.out_dir = gdir;
			mo.cancel = opt->stop;
			int rc = match_run(&mr, &mo, merr);
			if (rc < 0) {
				ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "match: %s", merr);
				goto out;
			}
			if (opt->stop && *opt->stop) {
				match_result_free(&mr);
				goto stopped;
			}
			r.mr = &mr;
			CycleState next = {gen - 1, STEP_MATCH, 0, 0, 0};
			ret = with_book(opt->book, step_save_games, &r, &next, err);
			r.mr = NULL;
			match_result_free(&mr);
			if (ret < 0) goto out;
			r.st = next;
		}
		if ((ret = with_book(opt->book, step_load_games, &r, NULL, err)) < 0) goto out;
		STEP(STEP_PRUNE, "prune", step_prune);
		STEP(STEP_EXTEND, "extend", step_extend);
		STEP(STEP_THINK, "think", step_think);
		if (opt->stop && *opt->stop) goto stopped;
		announce(opt, gen, "minimax");
		CycleState next = {gen, STEP_NONE, 0, 0, 0};
		if ((ret = with_book(opt->book, step_minimax, &r, NULL, err)) < 0 ||
		    (ret = with_book(opt->book, step_count_avoided, &r, &next, err)) < 0)
			goto out;
		CycleGenStats gs = {
		    .generation = gen,
		    .games = r.games.wins + r.games.draws + r.games.losses,
		    .wins = r.games.wins,
		    .draws = r.games.draws,
		    .losses = r.games.losses,
		    .queued = (size_t)r.st.queued,
		    .thought = r.st.thought,
		    .marked = (size_t)r.st.marked,
		    .avoided = r.prune.avoided,
		    .resumed = resumed,
		};
		gs.score = gs.games ? (gs.wins + 0.5 * gs.draws) / gs.games : 0;
		r.st = next;
		if (opt->on_generation) opt->on_generation(opt->ctx, &gs);
	}
	goto out;
stopped:
	*stopped = true;
	ret = 0;
out:
	*done = r.st.gen;
	cycle_games_free(&r.games);
	return ret;
}

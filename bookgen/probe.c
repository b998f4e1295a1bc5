/*
 * bookgen/probe.c — walks of the lines an opponent plays (bookgen/probe.h).
 *
 * Workers take lines (root, book colour) in turn, by weight; everything that
 * touches the book (the store, its commit, the minimax hook, the reads of a
 * walk) happens under one lock, the searches outside it.
 */
#include "bookgen/probe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/query.h"
#include "bookgen/think.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/rng.h"

/* opp_jitter: a line is done after this many walks in a row met nothing new. */
#define JITTER_DONE_WALKS 8

typedef struct {
	int root;
	Color book; /* the colour the book plays on this line */
	double weight;
	uint64_t served;  /* positions its walks thought */
	int reach;        /* book plies a match from the root gets now (line_reach) */
	uint64_t reach_v; /* the Probe's version reach was computed at, plus 1 */
	int empty;        /* walks in a row that met nothing new */
	bool busy, done;
} Line;

typedef struct Probe Probe;

typedef struct {
	Probe *p;
	int index;
	pthread_t thread;
	bool started;
	bool analysing; /* key: the position this worker is analysing (p->mu) */
	Key key;
	Position *pos, *scratch;
	SearchResult *res;
	BookRecord *rec;
	Move path[POS_MAX_STATES]; /* the walk's moves from its root */
	uint64_t draw;             /* opp_jitter: the walk's draw of node counts */
	/* The opponent engine's state: since its last new game it has searched
	 * the opponent's positions of eng_path[0..eng_plies) of line eng_line,
	 * each in order (eng_line -1: none yet). */
	int eng_line, eng_plies;
	Move eng_path[POS_MAX_STATES];
	SearchMeter meter[2]; /* p->mu: the analysing engine's time, the opponent's */
} Worker;

struct Probe {
	const ProbeOptions *opt;
	BookDB *db;
	pthread_mutex_t mu; /* lines, stats, ret */
	pthread_cond_t cv;
	pthread_mutex_t book_mu; /* the writer, the minimax hook, the book's reads */
	BookWriter *w;
	Line *lines;
	int nlines;
	Worker *workers;
	ProbeStats *st;
	KeyMap replies;   /* p->mu: the opponent's replies met so far, by walk_key */
	int burst;        /* new positions a walk thinks before it yields */
	uint64_t version; /* p->mu: counts the stores and new replies (Line.reach_v) */
	char *err;
	int ret;
	double start;
	bool stopping;
};

/* Both engines' time so far, ms (p->mu held). */
static double engine_ms(const Probe *p)
{
	double ms = 0;
	for (int i = 0; p->workers && i < p->opt->nworkers; i++)
		ms += p->workers[i].meter[0].used_ms + p->workers[i].meter[1].used_ms;
	return ms;
}

/* Notes the time of a search of engine e (0 the analysing one, 1 the
 * opponent) that took wall_ms. */
static void meter_note(Probe *p, Worker *w, int e, double wall_ms)
{
	SearchEngine *eng = e ? p->opt->opponents[w->index] : p->opt->engines[w->index];
	pthread_mutex_lock(&p->mu);
	search_meter_note(&w->meter[e], eng, wall_ms);
	pthread_mutex_unlock(&p->mu);
}

static bool should_stop(Probe *p)
{
	const ProbeOptions *o = p->opt;
	if (p->stopping || p->ret < 0 || (o->stop && *o->stop)) return true;
	if (o->max_engine_seconds > 0 && engine_ms(p) >= o->max_engine_seconds * 1e3) return true;
	if (o->max_seconds > 0 && clock_ms_f() - p->start >= o->max_seconds * 1e3) return true;
	return o->max_positions && p->st->thought >= o->max_positions;
}

/* Sets the run's error (the first one wins); called with p->mu held. */
static void fail(Probe *p, int code, const char *what, const char *detail)
{
	if (p->ret < 0) return;
	p->ret = errmsg_set(p->err, THINK_ERRLEN, code, "probe: %s: %.300s", what, detail);
	pthread_cond_broadcast(&p->cv);
}

/* A walk's limits: plies from its root, and the game's length. */
static void walk_limits(const ProbeOptions *o, int *max_plies, int *max_moves)
{
	*max_plies = o->max_plies > 0 ? o->max_plies : 32;
	if (*max_plies > POS_MAX_STATES - 1) *max_plies = POS_MAX_STATES - 1;
	*max_moves = o->max_moves > 0 ? o->max_moves : 320;
}

static const char *line_root(const Probe *p, const Line *l)
{
	return p->opt->roots && p->opt->nroots > 0 ? p->opt->roots[l->root] : "startpos";
}

static int line_reach(Probe *p, Worker *w, int li);

/*
 * The line to walk next (p->mu held): among the lines no worker walks and not
 * done, the one whose book carries a match the fewest plies per unit of
 * weight (line_reach), then the one with the fewest positions thought per
 * unit of weight. A line more than twice the mean of thought positions per
 * weight (and a burst) above the others is passed over while another is
 * free, so that one line whose choices keep turning does not take the whole
 * budget. -1 when none (all done, or all busy: *all_done says).
 */
static int pick_line(Probe *p, Worker *w, bool *all_done, int *err)
{
	*all_done = true;
	*err = 0;
	double mean = 0;
	int n = 0;
	for (int i = 0; i < p->nlines; i++)
		if (!p->lines[i].done) {
			mean += (double)p->lines[i].served / p->lines[i].weight;
			n++;
		}
	mean = n ? mean / n : 0;
	int best = -1;
	bool best_over = false;
	for (int i = 0; i < p->nlines; i++) {
		Line *l = &p->lines[i];
		if (l->done) continue;
		*all_done = false;
		if (l->busy) continue;
		if (l->reach_v != p->version + 1) {
			int r = line_reach(p, w, i);
			if (r < 0) {
				*err = r;
				return -1;
			}
			l->reach = r;
			l->reach_v = p->version + 1;
		}
		double served = (double)l->served / l->weight;
		bool over = served > 2 * mean + p->burst;
		if (best >= 0) {
			const Line *b = &p->lines[best];
			double br = b->reach / b->weight, r = l->reach / l->weight;
			if (over != best_over
			        ? over
			        : r > br || (r == br && served >= (double)b->served / b->weight))
				continue;
		}
		best = i;
		best_over = over;
	}
	return best;
}

/* pos's record into w->rec (book_mu held): 1, 0 when the book has none, or
 * a BOOKDB_* code. */
static int read_record(Probe *p, Worker *w, const Position *pos)
{
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, p->db, false);
	if (rc < 0) return rc;
	rc = bookdb_get(w->rec, txn, pos_key(pos));
	bookdb_txn_abort(txn);
	return rc == BOOKDB_ENOTFOUND ? 0 : rc < 0 ? rc : 1;
}

/* Whether pos is thought in the book with at least lines analysed moves (or
 * all its legal moves, when fewer; book_mu held, w->rec scratch). 1, 0, or a
 * BOOKDB_* code. */
static int is_thought(Probe *p, Worker *w, const Position *pos, int lines)
{
	int rc = read_record(p, w, pos);
	if (rc <= 0) return rc;
	if (!(w->rec->flags & BOOKDB_REC_THOUGHT)) return 0;
	int evals = 0;
	for (int i = 0; i < w->rec->nmoves; i++)
		if (bookdb_move_analysed(&w->rec->moves[i])) evals++;
	int legal = movegen_count(pos);
	return evals >= (lines < legal ? lines : legal);
}

/* Whether pos's record holds m with an analysis (book_mu held, w->rec
 * scratch): 1, 0, or a BOOKDB_* code. */
static int has_reply(Probe *p, Worker *w, const Position *pos, Move m)
{
	int rc = read_record(p, w, pos);
	for (int i = 0; rc == 1 && i < w->rec->nmoves; i++)
		if (w->rec->moves[i].move == m && bookdb_move_analysed(&w->rec->moves[i])) return 1;
	return rc < 0 ? rc : 0;
}

/* The book's move at pos (its best in query order; book_mu held, w->rec
 * scratch): 1 with *m, 0 when it has none, or a BOOKDB_* code. */
static int book_choice(Probe *p, Worker *w, const Position *pos, Move *m)
{
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, p->db, false);
	if (rc < 0) return rc;
	rc = bookdb_query(w->rec, txn, pos);
	bookdb_txn_abort(txn);
	if (rc < 0) return rc;
	*m = rc == 1 ? bookdb_best_move(w->rec, pos) : MOVE_NONE;
	return *m != MOVE_NONE;
}

/* Stores w->res, an analysis of the walk's position with budget, and backs
 * the values up; 0, or < 0 after fail(). */
static int store(Probe *p, Worker *w, const SearchBudget *budget)
{
	const ProbeOptions *o = p->opt;
	char err[THINK_ERRLEN], merr[THINK_ERRLEN];
	pthread_mutex_lock(&p->book_mu);
	int rc = think_store(p->w, NULL, w->rec, pos_key(w->pos), w->pos, w->res, budget, err);
	if (rc == 0 && bookdb_writer_flush(p->w) < 0)
		rc = errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "%s", "commit failed");
	if (rc == 0 && book_minimax_hook_run(&o->minimax, p->db, merr, sizeof merr) < 0)
		rc = errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "minimax: %s", merr);
	pthread_mutex_unlock(&p->book_mu);
	pthread_mutex_lock(&p->mu);
	if (rc < 0)
		fail(p, THINK_EBOOK, "storing an analysis", err);
	else
		p->st->thought++;
	p->version++;
	pthread_mutex_unlock(&p->mu);
	return rc < 0 ? rc : 0;
}

/* Analyses the walk's position (a book side's: MultiPV K) and stores it; 0,
 * 1 when the analysis failed (counted; the walk ends there and the line is
 * tried again later), or < 0 after fail(). */
static int think_here(Probe *p, Worker *w)
{
	const ProbeOptions *o = p->opt;
	double t0 = clock_ms_f();
	int rc = search_analyse(o->engines[w->index], w->res, w->pos, &o->budget, o->multipv);
	meter_note(p, w, 0, clock_ms_f() - t0);
	if (rc < 0 || w->res->nlines == 0) {
		pthread_mutex_lock(&p->mu);
		p->st->failed++;
		pthread_mutex_unlock(&p->mu);
		return 1;
	}
	return store(p, w, &o->budget);
}

/* A walk's key: a hash of its line and its first n moves (keymap sets key on
 * hi alone). */
static Key walk_key(int line, const Move *path, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL * (uint64_t)(line + 1);
	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)path[i] + 0x9e3779b97f4a7c15ULL;
		h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
	}
	return (Key){.hi = h};
}

/* The reply kept for walk k (p->mu held): 1 with *m, or 0. */
static int replies_get(const KeyMap *r, Key k, Move *m)
{
	const uint32_t *v = keymap_value(r, k);
	if (!v || *v == KEYMAP_NONE) return 0;
	*m = (Move)*v;
	return 1;
}

/* The opponent's budget at the walk's ply: opp_budget, its nodes moved by
 * the jitter drawn for this walk. */
static SearchBudget opp_budget_at(const Probe *p, const Worker *w, int ply)
{
	const ProbeOptions *o = p->opt;
	return search_budget_jittered(o->opp_budget, o->opp_jitter,
	                              o->seed ^ w->draw ^ ((uint64_t)ply << 40));
}

/* One search of the opponent at pos, ply plies into the walk (w->res); 1
 * with *m, 0 when it has no move (resigns, declares, fails). Its reply is
 * kept for hash h. */
static int opponent_search(Probe *p, Worker *w, const Position *pos, int ply, Key h, Move *m)
{
	const ProbeOptions *o = p->opt;
	SearchBudget b = opp_budget_at(p, w, ply);
	double t0 = clock_ms_f();
	int rc = search_analyse(o->opponents[w->index], w->res, pos, &b, 1);
	meter_note(p, w, 1, clock_ms_f() - t0);
	int got = rc >= 0 && !w->res->resign && !w->res->win && pos_is_legal(pos, w->res->bestmove);
	*m = got ? w->res->bestmove : MOVE_NONE;
	pthread_mutex_lock(&p->mu);
	p->st->opp_moves++;
	if (rc < 0) p->st->failed++;
	Move was = MOVE_NONE;
	bool known = replies_get(&p->replies, h, &was);
	if (known && was != *m) p->st->opp_differ++;
	uint32_t *v;
	if (rc >= 0 && keymap_add(&p->replies, h, &v) >= 0) {
		*v = *m; /* out of memory only forgets it */
		if (!known || was != *m) p->version++;
	}
	pthread_mutex_unlock(&p->mu);
	return got;
}

/*
 * The opponent's move at the walk's position (plies from line li's root),
 * asked as match asks: 1 with *m, 0 when it has none. An engine's answer
 * depends on what it searched before in the game (its hash table), so its
 * reply here is that of a game along this walk: the reply a walk with the same
 * moves got before is used as it is when known (cached, and need_search
 * false); else the engine is brought to the walk's state, searching the
 * opponent's earlier positions of the walk it has not searched in this game
 * (from a new game when its last walk went another way), and then this one
 * (*searched: w->res holds its analysis).
 */
static int opponent_move(Probe *p, Worker *w, int li, int plies, bool need_search, Move *m,
                         bool *searched)
{
	const ProbeOptions *o = p->opt;
	const Line *l = &p->lines[li];
	Key h = walk_key(li, w->path, plies);
	*searched = false;
	if (!need_search) {
		pthread_mutex_lock(&p->mu);
		int known = replies_get(&p->replies, h, m);
		if (known) p->st->opp_cached++;
		pthread_mutex_unlock(&p->mu);
		if (known) return *m != MOVE_NONE;
	}
	bool same = w->eng_line == li && w->eng_plies <= plies &&
	            !memcmp(w->eng_path, w->path, (size_t)w->eng_plies * sizeof *w->path);
	if (!same) {
		search_new_game(o->opponents[w->index]);
		w->eng_line = li;
		w->eng_plies = 0;
	}
	const char *root = line_root(p, l);
	if (w->eng_plies < plies) {
		if (position_parse(w->scratch, root, NULL) < 0) return 0;
		for (int k = 0; k < plies; k++) {
			if (k >= w->eng_plies && w->scratch->side != l->book) {
				/* Only the engine's state is wanted: the walk goes on with
				 * its own move, and a failure is counted (st->failed). */
				Move r;
				(void)opponent_search(p, w, w->scratch, k, walk_key(li, w->path, k),
				                      &r);
				pthread_mutex_lock(&p->mu);
				p->st->opp_replayed++;
				pthread_mutex_unlock(&p->mu);
			}
			pos_do_move(w->scratch, w->path[k]);
		}
	}
	memcpy(w->eng_path, w->path, (size_t)plies * sizeof *w->path);
	int got = opponent_search(p, w, w->pos, plies, h, m);
	w->eng_path[plies] = *m;
	w->eng_plies = plies + 1;
	if (!got) w->eng_line = -1; /* no move: the next search starts a new game */
	*searched = true;
	return got;
}

/* Whether the game on the walk's position is over by the rules. */
static bool game_over(const Position *pos, int max_moves)
{
	return pos_repetition(pos) != REP_NONE || movegen_count(pos) == 0 ||
	       pos_history_len(pos) >= max_moves;
}

/*
 * Whether the walk's position is analysed enough: 1 (it is), 0 (it is not,
 * and this worker now analyses it: w->analysing set), 2 (it is not, and
 * may_think is false), or a BOOKDB_* code. A book side's position needs its
 * MultiPV lines (a record holding only an opponent's move does not do); any
 * thought record does for the opponent's. A position another worker is
 * analysing is waited for, so that no position is analysed twice.
 */
static int claim(Probe *p, Worker *w, bool may_think, bool ours)
{
	Key k = pos_key(w->pos);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		bool busy = false;
		for (int i = 0; i < p->opt->nworkers; i++)
			if (i != w->index && p->workers[i].analysing &&
			    key_equal(p->workers[i].key, k))
				busy = true;
		if (!busy) break;
		pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_lock(&p->book_mu);
	int t = is_thought(p, w, w->pos, ours ? p->opt->multipv : 1);
	pthread_mutex_unlock(&p->book_mu);
	if (t == 0 && !may_think) t = 2;
	if (t == 0) {
		w->analysing = true;
		w->key = k;
	}
	pthread_mutex_unlock(&p->mu);
	return t;
}

/* Whether the book still chooses the book side's moves of the walk's first n
 * plies (book_mu held): a result stored since may have changed a choice above,
 * and the walk must then start again to follow the new one. */
static int choices_hold(Probe *p, Worker *w, const Line *l, const char *root, int n)
{
	if (position_parse(w->scratch, root, NULL) < 0) return 0;
	int ok = 1;
	for (int k = 0; k < n && ok == 1; k++) {
		if (w->scratch->side == l->book) {
			Move m;
			int got = book_choice(p, w, w->scratch, &m);
			if (got < 0)
				ok = got;
			else if (!got || m != w->path[k])
				ok = 0;
		}
		if (ok == 1) pos_do_move(w->scratch, w->path[k]);
	}
	return ok;
}

/*
 * The book plies a match from line li's root gets with the book as it is now
 * (p->mu held; w->scratch and w->rec scratch): the book side plays the book's
 * choices, the opponent the replies its walks met on the same moves, up to the
 * first position where the book has no move or the reply is not known yet (a
 * match would ask the engine there, and the walks have not), or the walk's
 * limits. A BOOKDB_* code on error.
 */
static int line_reach(Probe *p, Worker *w, int li)
{
	const Line *l = &p->lines[li];
	int max_plies, max_moves;
	walk_limits(p->opt, &max_plies, &max_moves);
	Position *pos = w->scratch;
	if (position_parse(pos, line_root(p, l), NULL) < 0) return 0;
	Move path[POS_MAX_STATES];
	int n = 0, reach = 0;
	pthread_mutex_lock(&p->book_mu);
	while (n < max_plies && !game_over(pos, max_moves)) {
		Move m;
		if (pos->side == l->book) {
			int got = book_choice(p, w, pos, &m);
			if (got < 0) reach = got;
			if (got <= 0) break;
			reach++;
		} else if (!replies_get(&p->replies, walk_key(li, path, n), &m) || m == MOVE_NONE) {
			break;
		}
		pos_do_move(pos, m);
		path[n++] = m;
	}
	pthread_mutex_unlock(&p->book_mu);
	return reach;
}

/* Line li's reach as a match against the opponent gets it (after the run,
 * its workers stopped; w's position, path and engine): line_reach's, asking
 * the opponent where no walk met its reply (a result stored after a line's
 * last walk can turn its book choice into a position no walk reached), as a
 * match asks it (opponent_move). A varying opponent's replies are a sample:
 * its reach is line_reach's. */
static int line_reach_played(Probe *p, Worker *w, int li)
{
	if (p->opt->opp_jitter > 0) return line_reach(p, w, li);
	const Line *l = &p->lines[li];
	int max_plies, max_moves;
	walk_limits(p->opt, &max_plies, &max_moves);
	if (position_parse(w->pos, line_root(p, l), NULL) < 0) return 0;
	int plies = 0, reach = 0;
	while (plies < max_plies && !game_over(w->pos, max_moves)) {
		Move m;
		int got;
		if (w->pos->side == l->book) {
			pthread_mutex_lock(&p->book_mu);
			got = book_choice(p, w, w->pos, &m);
			pthread_mutex_unlock(&p->book_mu);
			if (got < 0) return got;
			reach += got;
		} else {
			pthread_mutex_lock(&p->mu);
			bool known = replies_get(&p->replies, walk_key(li, w->path, plies), &m);
			pthread_mutex_unlock(&p->mu);
			bool searched;
			got = known ? m != MOVE_NONE
			            : opponent_move(p, w, li, plies, true, &m, &searched);
		}
		if (got <= 0) break;
		pos_do_move(w->pos, m);
		w->path[plies++] = m;
	}
	return reach;
}

/* One walk of line l that thinks at most burst new positions: returns the
 * positions it thought, or < 0 on an error. */
static int walk(Probe *p, Worker *w, int li, int burst)
{
	const Line *l = &p->lines[li];
	const ProbeOptions *o = p->opt;
	int max_plies, max_moves;
	walk_limits(o, &max_plies, &max_moves);
	const char *root = line_root(p, l);
	int fresh = 0, plies = 0, book_plies = 0;
	bool jitter = o->opp_jitter > 0; /* with a nodes budget: probe_run checked */
restart:
	if (position_parse(w->pos, root, NULL) < 0) return 0; /* checked before the run */
	plies = 0;
	if (jitter) {
		/* A new game, with node counts of its own. */
		w->eng_line = -1;
		w->draw = rng_hash(w->draw);
	}
	while (plies < max_plies && !game_over(w->pos, max_moves)) {
		pthread_mutex_lock(&p->mu);
		bool stop = should_stop(p);
		pthread_mutex_unlock(&p->mu);
		if (stop) break;
		bool ours = w->pos->side == l->book;
		int t = claim(p, w, fresh < burst, ours);
		if (t < 0) return t;
		if (t == 2) break; /* to analyse, and this walk has analysed enough */
		Move m = MOVE_NONE;
		int got = 1, rc = 0;
		bool added = false; /* a reply added to a thought position */
		if (ours && t == 0) rc = think_here(p, w);
		if (!ours) {
			/* The opponent's answer is its move, and (new) the position's
			 * analysis: its one line is the move it plays here, so the values
			 * backed up through it follow the opponent's real reply rather
			 * than the worst of several guessed ones. A varying opponent is
			 * asked every time, and a reply new to the position added. */
			bool searched;
			got = opponent_move(p, w, li, plies, t == 0 || jitter, &m, &searched);
			if (got && t == 0 && searched) rc = store(p, w, &o->opp_budget);
			if (got && t == 1 && searched && jitter) {
				pthread_mutex_lock(&p->book_mu);
				int has = has_reply(p, w, w->pos, m);
				pthread_mutex_unlock(&p->book_mu);
				if (has < 0) return has;
				if (!has) {
					if ((rc = store(p, w, &o->opp_budget)) < 0) return rc;
					added = true;
					pthread_mutex_lock(&p->mu);
					p->st->opp_added++;
					pthread_mutex_unlock(&p->mu);
				}
			}
		}
		if (t == 0) {
			pthread_mutex_lock(&p->mu);
			w->analysing = false;
			pthread_cond_broadcast(&p->cv);
			pthread_mutex_unlock(&p->mu);
		}
		if (t == 0 || added) {
			if (rc < 0) return rc;
			if (rc > 0) break;
			if (got) fresh++;
			pthread_mutex_lock(&p->book_mu);
			int hold = choices_hold(p, w, l, root, plies);
			pthread_mutex_unlock(&p->book_mu);
			if (hold < 0) return hold;
			if (!hold) {
				pthread_mutex_lock(&p->mu);
				p->st->restarts++;
				pthread_mutex_unlock(&p->mu);
				book_plies = 0;
				goto restart;
			}
		}
		if (ours) {
			pthread_mutex_lock(&p->book_mu);
			got = book_choice(p, w, w->pos, &m);
			pthread_mutex_unlock(&p->book_mu);
			if (got < 0) return got;
			book_plies += got;
		}
		if (!got) break;
		pos_do_move(w->pos, m);
		w->path[plies++] = m;
	}
	pthread_mutex_lock(&p->mu);
	p->st->book_plies += (uint64_t)book_plies;
	if (plies > p->st->deepest) p->st->deepest = plies;
	pthread_mutex_unlock(&p->mu);
	return fresh;
}

/* The positions a budget of `budget` is expected to leave when `used` of it
 * gave `thought` positions, if fewer than `left`. */
static double positions_left(uint64_t thought, double budget, double used, double left)
{
	if (used <= 0) return left;
	double n = used < budget ? (double)thought * (budget - used) / used : 0;
	return n < left ? n : left;
}

/*
 * The burst of a walk of line l (p->mu held). Each new walk of a line first
 * brings the opponent engine back to that line's game (its earlier positions
 * searched again), so a line is best walked deep in few walks. With a time
 * budget (--time, --engine-seconds), once every line not done has been walked,
 * a walk may think the line's share (by weight, among the lines not done) of
 * the positions the budget is expected to leave at the rate so far; never
 * fewer than the burst asked.
 * Not against a varying opponent (opp_jitter).
 */
static int walk_burst(const Probe *p, const Line *l)
{
	const ProbeOptions *o = p->opt;
	uint64_t thought = p->st->thought;
	/* Against a varying opponent a deep walk follows one sampled game, which
	 * the next games leave early: walks of a burst spread over the games the
	 * opponent plays, each where the known tree ends on its sample. */
	if ((o->max_engine_seconds <= 0 && o->max_seconds <= 0) || !thought || o->opp_jitter > 0)
		return p->burst;
	double wsum = 0;
	for (int k = 0; k < p->nlines; k++) {
		if (p->lines[k].done) continue;
		if (!p->lines[k].served) return p->burst; /* the first round goes on */
		wsum += p->lines[k].weight;
	}
	double left = 1e9;
	if (o->max_engine_seconds > 0)
		left = positions_left(thought, o->max_engine_seconds * 1e3, engine_ms(p), left);
	if (o->max_seconds > 0)
		left = positions_left(thought, o->max_seconds * 1e3, clock_ms_f() - p->start, left);
	if (o->max_positions)
		left = positions_left(thought, (double)o->max_positions, (double)thought, left);
	double share = wsum > 0 ? left * l->weight / wsum : 0;
	return share > p->burst ? (int)(share < 1e6 ? share : 1e6) : p->burst;
}

static void *worker_main(void *arg)
{
	Worker *w = arg;
	Probe *p = w->p;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (should_stop(p)) break;
		bool all_done;
		int err;
		int i = pick_line(p, w, &all_done, &err);
		if (err < 0) {
			fail(p, THINK_EBOOK, "reading the book", bookdb_strerror(err));
			break;
		}
		if (all_done) break;
		if (i < 0) {
			struct timespec ts = clock_realtime_in(100);
			pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			continue;
		}
		Line *l = &p->lines[i];
		l->busy = true;
		p->st->walks++;
		w->draw = p->st->walks;
		int burst = walk_burst(p, l);
		pthread_mutex_unlock(&p->mu);
		int fresh = walk(p, w, i, burst);
		pthread_mutex_lock(&p->mu);
		l->busy = false;
		if (fresh < 0) {
			if (p->ret == 0)
				fail(p, THINK_EBOOK, "reading the book", bookdb_strerror(fresh));
			break;
		}
		l->served += (uint64_t)fresh;
		l->empty = fresh == 0 ? l->empty + 1 : 0;
		int quiet = p->opt->opp_jitter > 0 ? JITTER_DONE_WALKS : 1;
		if (fresh == 0 && l->empty >= quiet && !should_stop(p)) {
			l->done = true;
			p->st->done++;
		} else if (fresh > 0) {
			/* What this walk stored may have changed the choices of lines
			 * already done (a position they share, values backed up through
			 * it): each is walked once more. */
			for (int k = 0; k < p->nlines; k++)
				if (p->lines[k].done) {
					p->lines[k].done = false;
					p->st->done--;
				}
		}
		pthread_cond_broadcast(&p->cv);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* The lines: each root for the colour(s) asked. 0 or a THINK_E* code. */
static int make_lines(Probe *p)
{
	const ProbeOptions *o = p->opt;
	int nroots = o->roots && o->nroots > 0 ? o->nroots : 1;
	p->lines = calloc((size_t)nroots * 2, sizeof *p->lines);
	if (!p->lines) return THINK_ENOMEM;
	Position *pos = malloc(sizeof *pos);
	if (!pos) return THINK_ENOMEM;
	int ret = 0;
	for (int r = 0; r < nroots && !ret; r++) {
		const char *spec = o->roots && o->nroots > 0 ? o->roots[r] : "startpos";
		double wt = o->roots && o->nroots > 0 && o->root_weights ? o->root_weights[r] : 1.0;
		char perr[SHOGI_ERRLEN];
		if (position_parse(pos, spec, perr) < 0 || !(wt > 0)) {
			ret = errmsg_set(p->err, THINK_ERRLEN, THINK_EINVAL,
			                 "probe: bad root '%.200s': %.200s", spec,
			                 wt > 0 ? perr : "weight not above 0");
			break;
		}
		PlanSide side =
		    o->root_sides && o->roots && o->nroots > 0 ? o->root_sides[r] : o->book_side;
		int per = side == PLAN_SIDE_BOTH ? 2 : 1;
		for (int k = 0; k < per; k++) {
			Line *l = &p->lines[p->nlines++];
			l->root = r;
			l->weight = wt;
			l->book = side == PLAN_SIDE_WHITE                           ? WHITE
			          : side == PLAN_SIDE_BLACK || (per == 2 && k == 0) ? BLACK
			                                                            : WHITE;
		}
	}
	free(pos);
	return ret;
}

/* The lines' mean reach by weight, each as last read (p->mu held, or the
 * workers ended). */
static double mean_reach(const Probe *p)
{
	double sum = 0, wsum = 0;
	for (int i = 0; i < p->nlines; i++) {
		sum += p->lines[i].reach * p->lines[i].weight;
		wsum += p->lines[i].weight;
	}
	return wsum > 0 ? sum / wsum : 0;
}

/* The progress report: positions, lines done, the deepest walk, the reach
 * (each line's as pick_line last read it; at "done", read after the walks). */
static void progress(Probe *p, const char *phase)
{
	pthread_mutex_lock(&p->mu);
	ProbeProgress pr = {.thought = p->st->thought,
	                    .walks = p->st->walks,
	                    .done = p->st->done,
	                    .lines = p->nlines,
	                    .deepest = p->st->deepest,
	                    .seconds = (clock_ms_f() - p->start) / 1e3};
	pr.reach = mean_reach(p);
	pthread_mutex_unlock(&p->mu);
	p->opt->progress(p->opt->progress_ctx, phase, &pr);
}

int probe_run(ProbeStats *out, BookDB *db, const ProbeOptions *opt, char *err)
{
	memset(out, 0, sizeof *out);
	if (err) err[0] = 0;
	if (!opt->engines || !opt->opponents || opt->nworkers < 1 || opt->multipv < 1 ||
	    opt->multipv > SEARCH_MULTIPV_MAX || !book_minimax_hook_set(&opt->minimax))
		return errmsg_set(err, THINK_ERRLEN, THINK_EINVAL, "probe: %s",
		                  "need engines, opponents, MultiPV 1..32 and a minimax hook");
	if (opt->opp_jitter < 0 || opt->opp_jitter > 50 ||
	    (opt->opp_jitter && opt->opp_budget.kind != SEARCH_BUDGET_NODES))
		return errmsg_set(err, THINK_ERRLEN, THINK_EINVAL, "probe: %s",
		                  "the opponent's node jitter must be 0..50 percent, with a nodes "
		                  "budget");
	Probe p = {.opt = opt, .db = db, .st = out, .err = err, .start = clock_ms_f()};
	pthread_mutex_init(&p.mu, NULL);
	pthread_mutex_init(&p.book_mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	keymap_init_set(&p.replies, true);
	int ret = make_lines(&p);
	out->lines = (uint64_t)p.nlines;
	/* A position budget too small for a burst a line would starve the lines
	 * served last (and a run of the cycle would starve the same ones again):
	 * the burst shrinks so that every line is walked at least once. */
	p.burst = opt->burst > 0 ? opt->burst : 8;
	if (opt->max_positions && p.nlines > 0 &&
	    (uint64_t)p.burst * (uint64_t)p.nlines > opt->max_positions)
		p.burst = opt->max_positions / (uint64_t)p.nlines > 0
		              ? (int)(opt->max_positions / (uint64_t)p.nlines)
		              : 1;
	p.workers = calloc((size_t)opt->nworkers, sizeof *p.workers);
	if (!ret && (!p.workers || bookdb_writer_new(&p.w, db, SIZE_MAX) < 0))
		ret = errmsg_set(err, THINK_ERRLEN, THINK_ENOMEM, "probe: %s", "out of memory");
	for (int i = 0; !ret && i < opt->nworkers; i++) {
		Worker *w = &p.workers[i];
		w->p = &p;
		w->index = i;
		w->eng_line = -1;
		pthread_mutex_lock(&p.mu); /* running workers sum the meters */
		search_meter_start(&w->meter[0], opt->engines[i]);
		search_meter_start(&w->meter[1], opt->opponents[i]);
		pthread_mutex_unlock(&p.mu);
		w->pos = malloc(sizeof *w->pos);
		w->scratch = malloc(sizeof *w->scratch);
		w->res = malloc(sizeof *w->res);
		w->rec = malloc(sizeof *w->rec);
		if (!w->pos || !w->scratch || !w->res || !w->rec ||
		    pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			pthread_mutex_lock(&p.mu);
			fail(&p, THINK_ENOMEM, "starting the workers", "out of memory");
			pthread_mutex_unlock(&p.mu);
			break;
		}
		w->started = true;
	}
	/* Wait for the workers, a status line about once a second (or as
	 * opt->status_report_ms says). */
	double last = clock_ms_f(), every = opt->status_report_ms ? opt->status_report_ms : 1000;
	for (int i = 0; p.workers && i < opt->nworkers; i++) {
		Worker *w = &p.workers[i];
		if (!w->started) continue;
		while (opt->progress && pthread_tryjoin_np(w->thread, NULL) != 0) {
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
			if (clock_ms_f() - last >= every) {
				progress(&p, "status");
				last = clock_ms_f();
			}
		}
		if (!opt->progress) pthread_join(w->thread, NULL);
	}
	/* Every line's reach played again after the last walk (a later result
	 * may have turned a line's choices after its own last walk). */
	if (!ret && !p.ret && p.workers && p.workers[0].scratch && p.workers[0].rec &&
	    p.workers[0].pos) {
		for (int i = 0; i < p.nlines && !ret; i++) {
			int r = line_reach_played(&p, &p.workers[0], i);
			if (r < 0)
				ret = errmsg_set(err, THINK_ERRLEN, THINK_EBOOK,
				                 "probe: reading the book: %s", bookdb_strerror(r));
			else
				p.lines[i].reach = r;
		}
		out->reach = mean_reach(&p);
	}
	if (opt->progress) progress(&p, "done");
	if (!ret) ret = p.ret;
	out->engine_seconds = engine_ms(&p) / 1e3;
	if (p.w && bookdb_writer_flush(p.w) < 0 && !ret)
		ret =
		    errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "probe: %s", "final commit failed");
	bookdb_writer_free(p.w);
	for (int i = 0; p.workers && i < opt->nworkers; i++) {
		free(p.workers[i].pos);
		free(p.workers[i].scratch);
		free(p.workers[i].res);
		free(p.workers[i].rec);
	}
	free(p.workers);
	free(p.lines);
	keymap_free(&p.replies);
	pthread_mutex_destroy(&p.mu);
	pthread_mutex_destroy(&p.book_mu);
	pthread_cond_destroy(&p.cv);
	out->seconds = (clock_ms_f() - p.start) / 1e3;
	return ret;
}

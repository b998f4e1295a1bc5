/* play/match.c — games between two engine set-ups (see match.h, docs/match.md). */
#include "play/match.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shogi/rng.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "search/builtin.h"
#include "shogi/csa_write.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

const char *match_strerror(int code)
{
	switch (code) {
	case MATCH_OK:
		return "success";
	case MATCH_EINVAL:
		return "bad option or opening";
	case MATCH_ENGINE:
		return "an engine could not be started";
	case MATCH_EBOOK:
		return "a book could not be opened or read";
	case MATCH_EIO:
		return "the output could not be written";
	case MATCH_ENOMEM:
		return "out of memory";
	}
	return "unknown match error";
}

GameEnd match_end_replayed(GameEnd end)
{
	if (end == GAME_END_TIMEOUT) return GAME_END_TIME_UP;
	if (end == GAME_END_CRASH) return GAME_END_RESIGN;
	return end;
}

/* The % word the record ends with; replay judges it as match_end_replayed says. */
static const char *end_csa_word(GameEnd end)
{
	switch (end) {
	case GAME_END_RESIGN:
	case GAME_END_CRASH: /* floodgate records a disconnection as a resignation */
		return "TORYO";
	case GAME_END_MATE:
		return "TSUMI";
	case GAME_END_REPETITION:
	case GAME_END_PERPETUAL_CHECK:
		return "SENNICHITE";
	case GAME_END_DECLARATION:
		return "KACHI";
	case GAME_END_MAX_MOVES:
		return "CHUDAN"; /* replay stops at 'Max_Moves before reading it */
	case GAME_END_ILLEGAL_MOVE:
		return "ILLEGAL_MOVE";
	case GAME_END_TIMEOUT:
	case GAME_END_TIME_UP:
		return "TIME_UP";
	default:
		return NULL;
	}
}

/* ---- the match ----------------------------------------------------------- */

typedef struct Match Match;

/* What one thread plays with: its own engines and buffers. */
typedef struct {
	Match *m;
	int id;
	SearchEngine *eng[2]; /* A, B */
	UsiEngine *usi[2];    /* the same engines when they are USI engines, else NULL */
	Position *pos;
	SearchResult *res;
	BookRecord *rec;
	CsaMoveInfo *info;        /* per ply of the record */
	Move (*pv)[MATCH_PV_MAX]; /* per ply: the PV the info points at */
	pthread_t thread;
	char err[MATCH_ERRLEN]; /* why play_game failed */
} Worker;

struct Match {
	const MatchOptions *opt;
	int max_moves;
	bool clocked;        /* the sides play on clocks */
	bool timed;          /* moves take wall time: T lines in the records */
	BookDB *book[2];     /* per side; may be the same handle */
	int *order;          /* pair -> opening index */
	atomic_int next;     /* next game to hand out (of opt->only, when given) */
	int ngames;          /* games to play: opt->games, or opt->nonly */
	atomic_int finished; /* workers that have returned */
	/* The engines' cancel flag: raised when the caller's is (copied by
	 * match_run while the workers play) or when the SPRT has its verdict. */
	volatile sig_atomic_t halt;
	pthread_mutex_t lock; /* below */
	pthread_cond_t ended; /* a worker returned */
	MatchResult *res;
	bool *counted; /* per game: tallied (a pair counts when both games are) */
	bool decided;  /* the SPRT crossed a bound: later results are not counted */
	int done;
	double start, last_progress;
	int rc; /* first worker failure (MATCH_EIO) */
	char err[MATCH_ERRLEN];
};

static bool cancelled(const Match *m)
{
	return m->halt || (m->opt->cancel && *m->opt->cancel);
}

/* The side's book move: the first legal move of bookdb_query's order, or MOVE_NONE. */
static int book_move(Move *out, Worker *w, BookDB *db)
{
	*out = MOVE_NONE;
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc < 0) return rc;
	rc = bookdb_query(w->rec, txn, w->pos);
	bookdb_txn_abort(txn);
	if (rc < 0) return rc;
	if (rc == 1) *out = bookdb_best_move(w->rec, w->pos);
	return 0;
}

/*
 * The rules' verdict on the position reached, in replay's order: repetition,
 * then no legal move, then the move limit. GAME_END_NONE when play goes on.
 */
static GameEnd judge(const Position *pos, int max_moves, int *winner)
{
	switch (pos_repetition(pos)) {
	case REP_DRAW:
		*winner = -1;
		return GAME_END_REPETITION;
	case REP_BLACK_LOSES:
		*winner = WHITE;
		return GAME_END_PERPETUAL_CHECK;
	case REP_WHITE_LOSES:
		*winner = BLACK;
		return GAME_END_PERPETUAL_CHECK;
	default:
		break;
	}
	if (movegen_count(pos) == 0) {
		*winner = color_flip(pos->side);
		return GAME_END_MATE;
	}
	if (pos_history_len(pos) >= max_moves) {
		*winner = -1;
		return GAME_END_MAX_MOVES;
	}
	return GAME_END_NONE;
}

/* Which failure the driver recovered from, by its counters before and after. */
static GameEnd recovered_failure(const UsiEngineStats *a, const UsiEngineStats *b)
{
	if (b->timeouts > a->timeouts) return GAME_END_TIMEOUT;
	if (b->illegal > a->illegal) return GAME_END_ILLEGAL_MOVE;
	return GAME_END_CRASH;
}

/* Game index's budget at ply: the match's nodes, moved by the jitter. */
static SearchBudget jittered(const MatchOptions *opt, int index, int ply)
{
	uint64_t x =
	    opt->seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(index + 1)) ^ ((uint64_t)ply << 40);
	return search_budget_jittered(opt->budget, opt->nodes_jitter, x);
}

/* The budget of side s's engine move in game index at ply: the match's
 * (jittered), or the clocks as they stand. */
static SearchBudget move_budget(const Match *m, const MatchGame *g, int s, const int64_t left[2],
                                int index, int ply)
{
	const MatchOptions *opt = m->opt;
	if (!m->clocked) return jittered(opt, index, ply);
	SearchBudget b = {.kind = SEARCH_BUDGET_CLOCK};
	for (int c = 0; c < COLOR_NB; c++) {
		int cs = (Color)c == g->a_color ? 0 : 1;
		b.clock.time[c] = left[cs];
		b.clock.inc[c] = opt->clock[cs].inc_ms;
	}
	b.clock.byoyomi = opt->clock[s].byoyomi_ms;
	return b;
}

/*
 * Asks the engine of the side to move (s: 0 = A, 1 = B) for its move; with
 * clocks, charges its time to left[s] (the main time left) or finds it late.
 * Returns GAME_END_NONE with *move set, or how the game ended; -1 when the
 * match was cancelled; -2 when the engine refuses the match's searches (w->err
 * says it).
 */
static int engine_move(Worker *w, int s, Move *move, CsaMoveInfo *mi, Move *pv, MatchGame *g,
                       int index, int *winner, int64_t left[2])
{
	Match *m = w->m;
	const MatchOptions *opt = m->opt;
	Position *pos = w->pos;
	Color us = pos->side;
	const char *who = s ? "B" : "A";
	UsiEngineStats before = {0}, after = {0};
	if (w->usi[s]) usi_engine_stats(&before, w->usi[s]);
	SearchBudget budget = move_budget(m, g, s, left, index, pos_history_len(pos));
	int rc = search_analyse(w->eng[s], w->res, pos, &budget, 1);
	if (rc == SEARCH_ECANCELED || cancelled(m)) return -1;
	/* The engine refuses the match's searches (gpsusi against --nodes): no
	 * game can be played, and none is lost for it; the match stops. */
	if (rc == SEARCH_EINVAL) {
		errmsg_set(w->err, MATCH_ERRLEN, MATCH_ENGINE,
		           "engine %s refuses the match's searches: %s", who,
		           search_last_error(w->eng[s]));
		return -2;
	}
	g->engine_moves++;
	*winner = color_flip(us);
	const SearchResult *r = w->res;
	if (m->clocked) {
		const TimeControl *tc = &opt->clock[s];
		int64_t allowed = left[s] + tc->inc_ms + tc->byoyomi_ms;
		if (rc == SEARCH_ETIMEOUT) {
			/* The driver waited the clock and its slack: the flag has fallen. */
			g->time_ms[s] += allowed;
			snprintf(g->detail, sizeof g->detail,
			         "%s: time up: no answer within %lld ms: %s", who,
			         (long long)allowed, search_last_error(w->eng[s]));
			return GAME_END_TIME_UP;
		}
		if (rc == 0) {
			g->time_ms[s] += r->time_ms;
			if (r->time_ms > allowed + opt->time_margin_ms) {
				snprintf(
				    g->detail, sizeof g->detail,
				    "%s: time up: %d ms used, %lld ms on the clock (margin %d ms)",
				    who, r->time_ms, (long long)allowed, opt->time_margin_ms);
				return GAME_END_TIME_UP;
			}
			int64_t rest = left[s] + tc->inc_ms - r->time_ms;
			left[s] = rest > 0 ? rest : 0; /* the byoyomi is never banked */
		}
	} else if (rc == 0) {
		g->time_ms[s] += r->time_ms;
	}
	if (rc < 0) {
		snprintf(g->detail, sizeof g->detail, "%s: %s", who, search_last_error(w->eng[s]));
		if (rc == SEARCH_ETIMEOUT) return GAME_END_TIMEOUT;
		if (rc == SEARCH_EILLEGAL) return GAME_END_ILLEGAL_MOVE;
		return GAME_END_CRASH;
	}
	if (r->attempts > 1 && w->usi[s]) {
		usi_engine_stats(&after, w->usi[s]);
		GameEnd e = recovered_failure(&before, &after);
		snprintf(g->detail, sizeof g->detail, "%s: %s (the driver's retry answered %s)",
		         who, game_end_name(e), r->bestmove_usi);
		return e;
	}
	if (r->resign) return GAME_END_RESIGN;
	if (r->win) {
		if (pos_declaration_ok(pos))
			*winner = us;
		else
			snprintf(g->detail, sizeof g->detail, "%s: declaration not valid", who);
		return GAME_END_DECLARATION;
	}
	if (!pos_is_legal(pos, r->bestmove)) {
		snprintf(g->detail, sizeof g->detail, "%s: illegal move %s", who, r->bestmove_usi);
		return GAME_END_ILLEGAL_MOVE;
	}
	*move = r->bestmove;
	mi->time_ms = m->timed ? r->time_ms : -1;
	if (r->nlines > 0 && r->lines[0].move == r->bestmove) {
		const SearchLine *l = &r->lines[0];
		/* The first search after the book: where the book left this side. */
		if (g->exit_ply[s] == pos_history_len(pos) + 1 && !g->has_exit_eval[s]) {
			int v = l->value;
			g->exit_eval[s] = v > MATCH_EXIT_EVAL_MAX    ? MATCH_EXIT_EVAL_MAX
			                  : v < -MATCH_EXIT_EVAL_MAX ? -MATCH_EXIT_EVAL_MAX
			                                             : v;
			g->has_exit_eval[s] = true;
		}
		mi->has_eval = true;
		mi->eval = us == BLACK ? l->value : -l->value;
		int n = l->pv_len - 1;
		if (n > MATCH_PV_MAX) n = MATCH_PV_MAX;
		if (n < 0) n = 0;
		memcpy(pv, l->pv + 1, (size_t)n * sizeof(Move));
		mi->pv = pv;
		mi->pv_len = n;
	}
	return GAME_END_NONE;
}

static int write_record(Worker *w, int index, const MatchGame *g)
{
	const MatchOptions *opt = w->m->opt;
	MatchResult *res = w->m->res;
	char path[PATH_MAX], event[96], names[2][96], about[256], err[SHOGI_ERRLEN];
	snprintf(path, sizeof path, "%s/game-%04d.csa", opt->out_dir, index + 1);
	for (int c = 0; c < COLOR_NB; c++) {
		int s = (Color)c == g->a_color ? 0 : 1;
		snprintf(names[c], sizeof names[c], "%s:%s%s", s ? "B" : "A", res->name[s],
		         opt->side[s].book ? "+book" : "");
	}
	snprintf(event, sizeof event, "joseki-match+%llu+game-%04d", (unsigned long long)opt->seed,
	         index + 1);
	const char *winner = g->winner == BLACK ? "black" : g->winner == WHITE ? "white" : "draw";
	char from[32] = "the start position";
	if (g->opening >= 0) snprintf(from, sizeof from, "opening %d", g->opening + 1);
	snprintf(about, sizeof about, "joseki match: game %d of %d from %s, %s, winner %s",
	         index + 1, opt->games, from, game_end_name(g->end), winner);
	const char *comments[2] = {about, g->detail};
	char stamp[32] = "";
	if (w->m->timed) {
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(stamp, sizeof stamp, "%Y/%m/%d %H:%M:%S", &tm);
	}
	const TimeControl *tc[COLOR_NB] = {NULL, NULL};
	if (w->m->clocked)
		for (int c = 0; c < COLOR_NB; c++)
			tc[c] = &opt->clock[(Color)c == g->a_color ? 0 : 1];
	CsaGame cg = {
	    .name = {names[BLACK], names[WHITE]},
	    .event = event,
	    .start_time = stamp[0] ? stamp : NULL,
	    .time = {tc[BLACK], tc[WHITE]},
	    .max_moves = w->m->max_moves,
	    .info = w->info,
	    .end = end_csa_word(g->end),
	    .comments = comments,
	    .ncomments = g->detail[0] ? 2 : 1,
	};
	FILE *f = fopen(path, "w");
	if (!f)
		return errmsg_set(w->err, MATCH_ERRLEN, MATCH_EIO, "%.400s: %s", path,
		                  strerror(errno));
	int rc = csa_game_write(f, w->pos, &cg, err);
	bool bad = ferror(f);
	if (fclose(f) != 0) bad = true;
	if (rc < 0) return errmsg_set(w->err, MATCH_ERRLEN, MATCH_EIO, "%.300s: %s", path, err);
	if (bad)
		return errmsg_set(w->err, MATCH_ERRLEN, MATCH_EIO, "%.400s: %s", path,
		                  strerror(errno));
	return 0;
}

/* Plays game index into g. Returns 0, 1 when cancelled, or MATCH_EIO. */
static int play_game(Worker *w, int index, MatchGame *g)
{
	Match *m = w->m;
	const MatchOptions *opt = m->opt;
	Position *pos = w->pos;
	memset(g, 0, sizeof *g);
	g->a_color = index % 2 == 0 ? BLACK : WHITE;
	g->winner = -1;
	if (opt->nopenings > 0) {
		g->opening = m->order[(index / 2) % opt->nopenings];
		if (position_parse(pos, opt->openings[g->opening], w->err) < 0) return MATCH_EINVAL;
	} else {
		g->opening = -1;
		pos_set_startpos(pos);
	}
	for (int i = 0; i < pos_history_len(pos); i++) w->info[i] = (CsaMoveInfo){.time_ms = -1};
	for (int s = 0; s < 2; s++) search_new_game(w->eng[s]);
	bool in_book[2] = {m->book[0] != NULL, m->book[1] != NULL};
	int64_t left[2] = {opt->clock[0].main_ms, opt->clock[1].main_ms};
	for (int s = 0; s < 2; s++) g->exit_clock_ms[s][0] = g->exit_clock_ms[s][1] = -1;
	GameEnd end;
	int winner = -1;
	while ((end = judge(pos, m->max_moves, &winner)) == GAME_END_NONE) {
		if (cancelled(m)) return 1;
		int s = pos->side == g->a_color ? 0 : 1;
		int ply = pos_history_len(pos);
		CsaMoveInfo *mi = &w->info[ply];
		*mi = (CsaMoveInfo){.time_ms = -1};
		Move mv = MOVE_NONE;
		if (in_book[s]) {
			int rc = book_move(&mv, w, m->book[s]);
			if (rc < 0) {
				snprintf(g->detail, sizeof g->detail, "%s: book: %s", s ? "B" : "A",
				         bookdb_strerror(rc));
				mv = MOVE_NONE;
			}
			if (mv == MOVE_NONE) {
				in_book[s] = false;
			} else {
				mi->book = true;
				mi->time_ms = m->timed ? 0 : -1; /* a book move costs no time */
				g->book_plies[s]++;
			}
		}
		if (mv == MOVE_NONE) {
			if (!g->exit_ply[s]) {
				g->exit_ply[s] = ply + 1;
				memcpy(g->exit_clock_ms[s], left, sizeof left);
			}
			int e = engine_move(w, s, &mv, mi, w->pv[ply], g, index, &winner, left);
			if (e == -2) return MATCH_ENGINE; /* (said in w->err) */
			if (e < 0) return 1;
			if (e != GAME_END_NONE) {
				end = (GameEnd)e;
				break;
			}
		}
		pos_do_move(pos, mv);
	}
	g->played = true;
	if (m->clocked) memcpy(g->clock_ms, left, sizeof left);
	g->end = end;
	g->winner = winner;
	g->result = winner < 0 ? 0 : winner == (int)g->a_color ? 1 : -1;
	g->plies = pos_history_len(pos);
	if (!(g->usi = position_spec_write(pos)))
		return errmsg_set(w->err, MATCH_ERRLEN, MATCH_ENOMEM, "out of memory");
	if (opt->out_dir) return write_record(w, index, g);
	return 0;
}

/* Calls opt->progress (phase "game": at most once a second and for the last
 * game; "done": always). Under m->lock. */
static void progress(Match *m, const char *phase)
{
	const MatchOptions *opt = m->opt;
	double now = clock_s();
	if (!opt->progress ||
	    (!strcmp(phase, "game") && now - m->last_progress < 1.0 && m->done < m->ngames))
		return;
	m->last_progress = now;
	MatchProgress p = {m->done,           m->ngames,  now - m->start,
	                   opt->sprt != NULL, m->decided, m->res};
	opt->progress(opt->progress_ctx, phase, &p);
}

/* The SPRT after a pair: its verdict, if a bound is crossed, stops the match. */
static void sprt_step(Match *m)
{
	MatchResult *r = m->res;
	const MatchSprt *t = m->opt->sprt;
	r->llr = match_sprt_llr(r->pairs.penta, t->elo0, t->elo1);
	if (r->llr >= r->llr_upper)
		r->verdict = MATCH_SPRT_H1;
	else if (r->llr <= r->llr_lower)
		r->verdict = MATCH_SPRT_H0;
	else
		return;
	m->decided = true;
	m->halt = 1; /* the games in flight are abandoned */
	atomic_store(&m->next, m->ngames);
}

/* Counts game index (under the lock); a pair counts when its second game does. */
static void tally(Match *m, int index, const MatchGame *g)
{
	MatchResult *r = m->res;
	m->done++;
	if (!g->played) return;
	r->played++;
	if (g->result > 0) r->wins++;
	if (g->result == 0) r->draws++;
	if (g->result < 0) r->losses++;
	r->score = (r->wins + 0.5 * r->draws) / r->played;
	r->engine_moves += (uint64_t)g->engine_moves;
	r->book_moves += (uint64_t)(g->book_plies[0] + g->book_plies[1]);
	m->counted[index] = true;
	int other = index ^ 1;
	if (other < m->opt->games && m->counted[other]) {
		int first = index & ~1;
		match_pairs_add(&r->pairs, r->games[first].result, r->games[first + 1].result);
		if (m->opt->sprt) sprt_step(m);
	}
}

/* A game that ended after the SPRT's verdict: not counted, its record removed. */
static void discard(Match *m, int index, MatchGame *g)
{
	g->played = false;
	free(g->usi);
	g->usi = NULL;
	if (m->opt->out_dir) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/game-%04d.csa", m->opt->out_dir, index + 1);
		unlink(path);
	}
}

static void *worker_main(void *arg)
{
	Worker *w = arg;
	Match *m = w->m;
	for (;;) {
		int k = atomic_fetch_add(&m->next, 1);
		if (k >= m->ngames || cancelled(m)) break;
		int i = m->opt->only ? m->opt->only[k] : k;
		MatchGame *g = &m->res->games[i];
		int rc = play_game(w, i, g);
		if (rc == 1) g->played = false;
		pthread_mutex_lock(&m->lock);
		if (rc < 0 && m->rc == 0) {
			m->rc = rc;
			memcpy(m->err, w->err, sizeof m->err);
		}
		if (rc == 0 && m->decided) {
			discard(m, i, g);
		} else if (rc == 0) {
			tally(m, i, g);
			progress(m, "game");
		}
		pthread_mutex_unlock(&m->lock);
		if (rc < 0) {
			atomic_store(&m->next, m->ngames); /* stop handing out games */
			break;
		}
	}
	pthread_mutex_lock(&m->lock);
	atomic_fetch_add(&m->finished, 1);
	pthread_cond_signal(&m->ended);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* The configuration side's USI engine is opened with: usi's (NULL: the
 * defaults), side's path and options. */
static UsiEngineConfig side_config(const MatchSide *side, const UsiEngineConfig *usi)
{
	UsiEngineConfig cfg;
	if (usi)
		cfg = *usi;
	else
		usi_engine_config_init(&cfg);
	cfg.path = side->engine;
	cfg.options = side->options;
	cfg.noptions = side->noptions;
	return cfg;
}

static int open_engine(Worker *w, int s, char *err)
{
	const MatchOptions *opt = w->m->opt;
	const MatchSide *side = &opt->side[s];
	if (!strcmp(side->engine, "builtin")) {
		size_t mb = 0; /* the engine's default */
		char serr[SEARCH_ERRLEN];
		if (builtin_engine_options(&mb, side->options, side->noptions, serr) < 0)
			return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "%s", serr);
		if (builtin_engine_new(&w->eng[s], mb, &w->m->halt) < 0)
			return errmsg_set(err, MATCH_ERRLEN, MATCH_ENOMEM,
			                  "builtin engine: out of memory");
		return 0;
	}
	UsiEngineConfig cfg = side_config(side, opt->usi);
	char log[PATH_MAX], serr[SEARCH_ERRLEN];
	cfg.restart_each_game = side->restart;
	cfg.cancel = &w->m->halt;
	if (opt->out_dir) {
		snprintf(log, sizeof log, "%s/engine-%c-%d.log", opt->out_dir, s ? 'b' : 'a',
		         w->id + 1);
		cfg.log_path = log;
	}
	int rc = usi_engine_open(&w->usi[s], &cfg, serr);
	if (rc < 0)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_ENGINE, "engine %c (%s): %s",
		                  s ? 'B' : 'A', side->engine, serr);
	w->eng[s] = usi_engine_search(w->usi[s]);
	return 0;
}

static void worker_free(Worker *w)
{
	for (int s = 0; s < 2; s++) search_free(w->eng[s]);
	free(w->pos);
	free(w->res);
	free(w->rec);
	free(w->info);
	free(w->pv);
}

static int worker_init(Worker *w, Match *m, int id, char *err)
{
	memset(w, 0, sizeof *w);
	w->m = m;
	w->id = id;
	w->pos = malloc(sizeof *w->pos);
	w->res = malloc(sizeof *w->res);
	w->rec = malloc(sizeof *w->rec);
	w->info = calloc(POS_MAX_STATES, sizeof *w->info);
	w->pv = calloc(POS_MAX_STATES, sizeof *w->pv);
	if (!w->pos || !w->res || !w->rec || !w->info || !w->pv)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_ENOMEM, "out of memory");
	for (int s = 0; s < 2; s++) {
		int rc = open_engine(w, s, err);
		if (rc < 0) return rc;
	}
	return 0;
}

static int check_options(const MatchOptions *opt, int max_moves, char *err)
{
	if (opt->games < 1)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "--games must be at least 1");
	if (opt->only) {
		bool ok = opt->nonly >= 1;
		for (int k = 0; k < opt->nonly && ok; k++)
			ok = opt->only[k] >= 0 && opt->only[k] < opt->games &&
			     (k == 0 || opt->only[k] > opt->only[k - 1]);
		if (!ok)
			return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
			                  "the games to play must be ascending indices below %d",
			                  opt->games);
	}
	if (opt->concurrency < 1 || opt->concurrency > MATCH_CONCURRENCY_MAX)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "--concurrency must be 1..%d",
		                  MATCH_CONCURRENCY_MAX);
	if (max_moves < 1 || max_moves > MATCH_MAX_MOVES_MAX)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "--max-moves must be 1..%d",
		                  MATCH_MAX_MOVES_MAX);
	if (opt->budget.kind == SEARCH_BUDGET_CLOCK) {
		for (int s = 0; s < 2; s++) {
			const TimeControl *t = &opt->clock[s];
			if (t->main_ms < 0 || t->byoyomi_ms < 0 || t->inc_ms < 0 ||
			    t->main_ms > MATCH_TIME_MAX_MS || t->byoyomi_ms > MATCH_TIME_MAX_MS ||
			    t->inc_ms > MATCH_TIME_MAX_MS ||
			    t->main_ms + t->byoyomi_ms + t->inc_ms < 1)
				return errmsg_set(
				    err, MATCH_ERRLEN, MATCH_EINVAL,
				    "clock %c: the main time, byoyomi and increment must "
				    "be 0..100 hours and give some time",
				    s ? 'B' : 'A');
		}
		if (opt->time_margin_ms < 0)
			return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
			                  "the time margin must not be negative");
	} else if ((opt->budget.kind != SEARCH_BUDGET_NODES &&
	            opt->budget.kind != SEARCH_BUDGET_MOVETIME) ||
	           opt->budget.amount < 1) {
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "the budget must be nodes or movetime (at least 1), or clocks");
	}
	if (opt->nodes_jitter < 0 || opt->nodes_jitter > 50 ||
	    (opt->nodes_jitter && opt->budget.kind != SEARCH_BUDGET_NODES))
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "the node jitter must be 0..50 percent, with a nodes budget");
	const MatchSprt *t = opt->sprt;
	if (t && !(t->elo0 < t->elo1 && fabs(t->elo0) <= 1000 && fabs(t->elo1) <= 1000 &&
	           t->alpha > 0 && t->beta > 0 && t->alpha + t->beta < 1))
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "SPRT: wants elo0 < elo1 (within ±1000), alpha and beta in (0, "
		                  "1) with their sum below 1");
	for (int s = 0; s < 2; s++) {
		if (!opt->side[s].engine || !opt->side[s].engine[0])
			return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "engine %c: none given",
			                  s ? 'B' : 'A');
	}
	Position *pos = malloc(sizeof *pos);
	if (!pos) return errmsg_set(err, MATCH_ERRLEN, MATCH_ENOMEM, "out of memory");
	int rc = 0;
	for (int i = 0; i < opt->nopenings && rc == 0; i++) {
		char perr[SHOGI_ERRLEN];
		if (position_parse(pos, opt->openings[i], perr) < 0) {
			rc = errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "opening %d: %s", i + 1,
			                perr);
		} else if (pos_history_len(pos) >= max_moves) {
			rc = errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
			                "opening %d has %d moves, not fewer than the move limit %d",
			                i + 1, pos_history_len(pos), max_moves);
		}
	}
	free(pos);
	return rc;
}

/* Opens the sides' books read-only; a book both sides use is opened once. */
static int open_books(Match *m, char *err)
{
	const MatchOptions *opt = m->opt;
	char real[2][PATH_MAX];
	for (int s = 0; s < 2; s++) {
		const char *dir = opt->side[s].book;
		if (!dir) continue;
		if (!realpath(dir, real[s])) snprintf(real[s], sizeof real[s], "%s", dir);
		if (s == 1 && m->book[0] && !strcmp(real[0], real[1])) {
			m->book[1] = m->book[0];
			continue;
		}
		char berr[BOOKDB_ERRLEN];
		BookDBOptions bo = {.read_only = true, .random = true};
		if (bookdb_open(&m->book[s], dir, &bo, berr) < 0)
			return errmsg_set(err, MATCH_ERRLEN, MATCH_EBOOK, "book %c: %s",
			                  s ? 'B' : 'A', berr);
	}
	return 0;
}

/* A permutation of 0..n-1 shuffled by the seed (splitmix64, Fisher-Yates). */
static int *shuffled(int n, uint64_t seed)
{
	int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
	if (!order) return NULL;
	for (int i = 0; i < n; i++) order[i] = i;
	uint64_t x = seed;
	for (int i = n - 1; i > 0; i--) {
		uint64_t z = rng_next(&x);
		int j = (int)(z % (uint64_t)(i + 1));
		int t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	return order;
}

int match_game_index(const MatchOptions *opt, int opening, Color a)
{
	if (opt->nopenings <= 0) {
		if (opening != -1) return -1;
		int i = a == BLACK ? 0 : 1;
		return i < opt->games ? i : -1;
	}
	int *order = shuffled(opt->nopenings, opt->seed);
	int found = -1;
	for (int p = 0; order && 2 * p < opt->games && found < 0; p++)
		if (order[p % opt->nopenings] == opening) found = 2 * p + (a == BLACK ? 0 : 1);
	free(order);
	return found < opt->games ? found : -1;
}

void match_result_free(MatchResult *r)
{
	if (!r) return;
	for (int i = 0; i < r->ngames && r->games; i++) free(r->games[i].usi);
	free(r->games);
	memset(r, 0, sizeof *r);
}

int match_side_try(const MatchSide *side, const UsiEngineConfig *usi, const SearchBudget *budget,
                   char *err)
{
	char serr[SEARCH_ERRLEN];
	if (!strcmp(side->engine, "builtin")) {
		size_t mb = 0;
		if (builtin_engine_options(&mb, side->options, side->noptions, serr) < 0)
			return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "%s", serr);
		return 0;
	}
	UsiEngineConfig cfg = side_config(side, usi);
	cfg.log_path = NULL;
	UsiEngine *e = NULL;
	if (usi_engine_open(&e, &cfg, serr) < 0)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_ENGINE, "%s: %s", side->engine, serr);
	int rc = budget && usi_engine_check_budget(e, budget) < 0
	             ? errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "%s", usi_engine_last_error(e))
	             : 0;
	usi_engine_free(e);
	return rc;
}

int match_run(MatchResult *out, const MatchOptions *opt, char *err)
{
	memset(out, 0, sizeof *out);
	err[0] = '\0';
	shogi_init();
	int max_moves = opt->max_moves > 0 ? opt->max_moves : MATCH_MAX_MOVES_DEFAULT;
	int rc = check_options(opt, max_moves, err);
	if (rc < 0) return rc;
	if (opt->out_dir && mkdir(opt->out_dir, 0777) < 0 && errno != EEXIST)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EIO, "%s: %s", opt->out_dir,
		                  strerror(errno));
	Match m = {.opt = opt,
	           .max_moves = max_moves,
	           .res = out,
	           .ngames = opt->only ? opt->nonly : opt->games};
	m.clocked = opt->budget.kind == SEARCH_BUDGET_CLOCK;
	m.timed = m.clocked || opt->budget.kind == SEARCH_BUDGET_MOVETIME;
	if (opt->sprt) {
		out->sprt = true;
		match_sprt_bounds(opt->sprt, &out->llr_lower, &out->llr_upper);
	}
	int nworkers = opt->concurrency < m.ngames ? opt->concurrency : m.ngames;
	Worker *workers = calloc((size_t)nworkers, sizeof *workers);
	out->games = calloc((size_t)opt->games, sizeof *out->games);
	m.counted = calloc((size_t)opt->games, sizeof *m.counted);
	m.order = shuffled(opt->nopenings, opt->seed);
	if (!workers || !out->games || !m.counted || !m.order) {
		rc = errmsg_set(err, MATCH_ERRLEN, MATCH_ENOMEM, "out of memory");
		goto done;
	}
	out->ngames = opt->games;
	if ((rc = open_books(&m, err)) < 0) goto done;
	int started = 0;
	for (; started < nworkers; started++)
		if ((rc = worker_init(&workers[started], &m, started, err)) < 0) {
			started++;
			goto done_workers;
		}
	for (int s = 0; s < 2; s++)
		snprintf(out->name[s], sizeof out->name[s], "%s", search_name(workers[0].eng[s]));
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.ended, NULL);
	m.start = m.last_progress = clock_s();
	int running = 0;
	for (; running < nworkers; running++)
		if (pthread_create(&workers[running].thread, NULL, worker_main, &workers[running]))
			break;
	if (running == 0) {
		/* No thread at all: play here (a Ctrl-C then stops the games between
		 * moves, not the search under way). */
		worker_main(&workers[0]);
	}
	/* Hand the caller's cancel flag on to the engines while they play (it is
	 * looked at every 20 ms; the last worker's end wakes this at once). */
	pthread_mutex_lock(&m.lock);
	while (atomic_load(&m.finished) < running) {
		if (opt->cancel && *opt->cancel) m.halt = 1;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 20 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&m.ended, &m.lock, &until);
	}
	progress(&m, "done");
	pthread_mutex_unlock(&m.lock);
	for (int i = 0; i < running; i++) pthread_join(workers[i].thread, NULL);
	pthread_cond_destroy(&m.ended);
	pthread_mutex_destroy(&m.lock);
	out->seconds = clock_s() - m.start;
	if (m.rc < 0) rc = errmsg_set(err, MATCH_ERRLEN, m.rc, "%s", m.err);
	if (out->played > 0)
		for (int s = 0; s < 2; s++) {
			int sum = 0;
			for (int i = 0; i < out->ngames; i++)
				if (out->games[i].played) sum += out->games[i].book_plies[s];
			out->book_plies[s] = (double)sum / out->played;
		}
	match_elo(out->wins, out->draws, out->losses, &out->elo, &out->elo_low, &out->elo_high);
	match_pairs_finish(&out->pairs);
	for (int s = 0; s < 2; s++) {
		match_exit_stats(&out->exit[s], out, s);
		match_exit_eval_stats(&out->exit_eval[s], out, s);
	}
	out->exit_gain = out->exit_eval[0].mean - out->exit_eval[1].mean;
	out->exit_gain_se = sqrt(out->exit_eval[0].se * out->exit_eval[0].se +
	                         out->exit_eval[1].se * out->exit_eval[1].se);
done_workers:
	for (int i = 0; i < started; i++) worker_free(&workers[i]);
done:
	bookdb_free(m.book[0]);
	if (m.book[1] != m.book[0]) bookdb_free(m.book[1]);
	free(m.order);
	free(m.counted);
	free(workers);
	if (rc < 0) match_result_free(out);
	return rc;
}

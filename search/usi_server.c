/*
 * search/usi_server.c — the built-in engine as a USI engine (usi_server.h).
 */
#include "search/usi_server.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"

void usi_go_limits(EngineLimits *out, const UsiGo *g, Color us, int multipv)
{
	EngineLimits lim = {.multipv = multipv};
	if (g->depth > 0)
		lim.depth = g->depth >= ENGINE_MAX_PLY ? ENGINE_MAX_PLY - 1 : (int)g->depth;
	if (g->nodes > 0) lim.nodes = (uint64_t)g->nodes;
	if (g->movetime > 0) {
		/* The margin is at most a tenth of a short movetime: 50 ms keeps 45. */
		int64_t margin =
		    g->movetime / 10 < USI_TIME_MARGIN_MS ? g->movetime / 10 : USI_TIME_MARGIN_MS;
		lim.hard_ms = lim.soft_ms = g->movetime - margin > 10 ? g->movetime - margin : 10;
	} else if (g->timed && !g->infinite) {
		int64_t left = g->time[us] > 0 ? g->time[us] : 0;
		int64_t inc = g->inc[us] > 0 ? g->inc[us] : 0;
		int64_t byo = g->byoyomi > 0 ? g->byoyomi : 0;
		/* What this move may take at most: the clock and the byoyomi that
		 * follows it (an increment is only added after the move). */
		int64_t avail = left + byo - USI_TIME_MARGIN_MS;
		/* The share aimed at: the clock spread over the moves to come, most of
		 * the increment, all of the byoyomi (unspent byoyomi is lost). */
		int64_t target = left / USI_MOVES_TO_GO + inc * 3 / 4 + byo;
		int64_t most = left / 4 + inc + byo;
		if (most > avail) most = avail;
		if (most < 10) most = 10;
		if (target > most) target = most;
		lim.hard_ms = most;
		/* An iteration takes about as long as all before it: one started
		 * after half the target would end well past it. */
		lim.soft_ms = target / 2 > 1 ? target / 2 : 1;
	}
	*out = lim;
}

typedef struct {
	Engine *engine;
	Position pos;
	Position search_pos; /* the search thread's copy */
	size_t hash_mb;
	int multipv;
	EngineLimits lim;
	pthread_t thread;
	bool running; /* a search thread exists and has not been joined */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold;           /* infinite/ponder: keep the bestmove until released */
	bool infinite;       /* go infinite: only stop releases it */
	bool released;       /* stop or ponderhit arrived */
	Move ponder_book;    /* go ponder in a position the book answers: its move, given
	                        at ponderhit or stop (no search runs); MOVE_NONE: none */
	bool bad_pos;        /* the last position command could not be read: go answers
	                        resign, not for the position before it */
	pthread_mutex_t out; /* serialises the output */
	Position tmp;        /* position parsing, reading thread only */
	const UsiServerConfig *cfg;
} Usi;

static void say(Usi *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(Usi *u, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&u->out);
	va_start(ap, fmt);
	vfprintf(u->cfg->out, fmt, ap);
	va_end(ap);
	fputc('\n', u->cfg->out);
	fflush(u->cfg->out);
	pthread_mutex_unlock(&u->out);
}

static void info_lines(void *ctx, const EngineResult *r)
{
	Usi *u = ctx;
	uint64_t nps = r->time_ms > 0 ? r->nodes * 1000 / (uint64_t)r->time_ms : r->nodes * 1000;
	for (int k = 0; k < r->nlines; k++) {
		const EngineLine *l = &r->lines[k];
		char score[32];
		if (l->value >= VALUE_MATE_IN_MAX)
			snprintf(score, sizeof score, "mate %d", VALUE_MATE - l->value);
		else if (l->value <= -VALUE_MATE_IN_MAX)
			snprintf(score, sizeof score, "mate -%d", VALUE_MATE + l->value);
		else
			snprintf(score, sizeof score, "cp %d", l->value);
		char pv[ENGINE_PV_MAX * USI_MOVE_MAX + 1];
		size_t len = 0;
		for (int i = 0; i < l->pv_len; i++) {
			if (i) pv[len++] = ' ';
			len += usi_move_write(l->pv[i], pv + len);
		}
		pv[len] = '\0';
		say(u,
		    "info depth %d seldepth %d multipv %d score %s nodes %" PRIu64 " nps %" PRIu64
		    " time %" PRId64 " pv %s",
		    l->depth, l->seldepth, k + 1, score, r->nodes, nps, r->time_ms, pv);
	}
}

static void *search_main(void *arg)
{
	Usi *u = arg;
	EngineResult r;
	int rc = engine_search(u->engine, &r, &u->search_pos, &u->lim, info_lines, u);
	if (rc < 0) { /* limits the engine refuses: said, and no move */
		say(u, "info string %s", engine_strerror(rc));
		r.nlines = 0;
	}
	pthread_mutex_lock(&u->lock);
	while (u->hold && !u->released) pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
	if (r.nlines == 0) {
		say(u, "bestmove resign");
	} else {
		char mv[USI_MOVE_MAX], ponder[USI_MOVE_MAX];
		usi_move_write(r.bestmove, mv);
		if (r.lines[0].pv_len > 1) {
			usi_move_write(r.lines[0].pv[1], ponder);
			say(u, "bestmove %s ponder %s", mv, ponder);
		} else {
			say(u, "bestmove %s", mv);
		}
	}
	return NULL;
}

/* The book move a pondering go held, given now (ponderhit, stop). */
static bool give_ponder_book(Usi *u)
{
	if (u->ponder_book == MOVE_NONE) return false;
	char mv[USI_MOVE_MAX];
	usi_move_write(u->ponder_book, mv);
	u->ponder_book = MOVE_NONE;
	say(u, "info string book move %s", mv);
	say(u, "bestmove %s", mv);
	return true;
}

/* Stops a running search (its bestmove is printed) and joins its thread. */
static void stop_search(Usi *u)
{
	if (give_ponder_book(u)) return;
	if (!u->running) return;
	pthread_mutex_lock(&u->lock);
	u->released = true;
	pthread_cond_signal(&u->cond);
	pthread_mutex_unlock(&u->lock);
	engine_stop(u->engine);
	pthread_join(u->thread, NULL);
	u->running = false;
	engine_clear_stop(u->engine);
}

/* End of input: a bounded search may finish (so `echo ... | joseki usi`
 * works); an infinite or pondering one is stopped. */
static void finish_search(Usi *u)
{
	if (!u->running) return;
	if (u->hold) {
		stop_search(u);
		return;
	}
	pthread_join(u->thread, NULL);
	u->running = false;
	engine_clear_stop(u->engine);
}

static void ponderhit(Usi *u)
{
	if (give_ponder_book(u)) return;
	if (!u->running) return;
	engine_ponderhit(u->engine);
	pthread_mutex_lock(&u->lock);
	/* A pondering search becomes a normal one: its bestmove may go out. */
	if (u->hold && !u->infinite) u->released = true;
	pthread_cond_signal(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static bool next_num(char **save, int64_t *out)
{
	char *t = strtok_r(NULL, " \t", save);
	if (!t) return false;
	char *end;
	long long v = strtoll(t, &end, 10);
	if (*end) return false;
	*out = v;
	return true;
}

/* The caller's book move for the current position, if legal; else MOVE_NONE. */
static Move book_move(Usi *u)
{
	if (!u->cfg->book_move) return MOVE_NONE;
	Move m = u->cfg->book_move(u->cfg->book_ctx, &u->pos);
	return m != MOVE_NONE && pos_is_legal(&u->pos, m) ? m : MOVE_NONE;
}

static void go(Usi *u, char *args)
{
	stop_search(u);
	UsiGo g = {0};
	bool ponder = false;
	char *save, *tok = strtok_r(args, " \t", &save);
	for (; tok; tok = strtok_r(NULL, " \t", &save)) {
		int64_t v = 0;
		if (!strcmp(tok, "infinite")) {
			g.infinite = true;
		} else if (!strcmp(tok, "ponder")) {
			ponder = true;
		} else if (!strcmp(tok, "btime") && next_num(&save, &v)) {
			g.time[BLACK] = v, g.timed = true;
		} else if (!strcmp(tok, "wtime") && next_num(&save, &v)) {
			g.time[WHITE] = v, g.timed = true;
		} else if (!strcmp(tok, "binc") && next_num(&save, &v)) {
			g.inc[BLACK] = v, g.timed = true;
		} else if (!strcmp(tok, "winc") && next_num(&save, &v)) {
			g.inc[WHITE] = v, g.timed = true;
		} else if (!strcmp(tok, "byoyomi") && next_num(&save, &v)) {
			g.byoyomi = v, g.timed = true;
		} else if (!strcmp(tok, "movetime") && next_num(&save, &v)) {
			g.movetime = v;
		} else if (!strcmp(tok, "nodes") && next_num(&save, &v)) {
			g.nodes = v;
		} else if (!strcmp(tok, "depth") && next_num(&save, &v)) {
			g.depth = v;
		} else if (!strcmp(tok, "mate")) {
			/* No mate search here: said as USI has it, at once. */
			say(u, "checkmate notimplemented");
			return;
		} else {
			say(u, "info string ignored go argument '%s'", tok);
		}
	}
	if (u->bad_pos) {
		/* Not a move for the position before it: one the GUI did not mean
		 * could be illegal in the game. */
		say(u,
		    "info string no position to search (the last position command was not read)");
		say(u, "bestmove resign");
		return;
	}
	if (pos_declaration_ok(&u->pos)) {
		say(u, "bestmove win");
		return;
	}
	Move bm = g.infinite ? MOVE_NONE : book_move(u);
	if (bm != MOVE_NONE && ponder) {
		/* The book answers the position pondered on: its move is given
		 * at ponderhit (or stop), not a search's. */
		u->ponder_book = bm;
		return;
	}
	if (bm != MOVE_NONE) {
		char mv[USI_MOVE_MAX];
		usi_move_write(bm, mv);
		say(u, "info string book move %s", mv);
		say(u, "bestmove %s", mv);
		return;
	}
	EngineLimits lim;
	usi_go_limits(&lim, &g, u->pos.side, u->multipv);
	u->lim = lim;
	memcpy(&u->search_pos, &u->pos, sizeof u->pos);
	u->hold = g.infinite || ponder;
	u->infinite = g.infinite;
	u->released = false;
	if (ponder) engine_set_pondering(u->engine);
	if (pthread_create(&u->thread, NULL, search_main, u) != 0) {
		say(u, "info string cannot start the search thread");
		say(u, "bestmove resign");
		return;
	}
	u->running = true;
}

/* A spin option's value into *v; what was not taken as given is said. A
 * number outside min..max is taken to the nearest end (clamp), or refused
 * (a hash of 64 GB for a typo would be allocated); not a number (or none) is
 * refused. Refused, the option keeps its value now (said) and false is
 * returned. */
static bool spin(Usi *u, const char *name, const char *value, long min, long max, bool clamp,
                 long now, long *v)
{
	char *end = NULL;
	errno = 0;
	long x = value ? strtol(value, &end, 10) : 0;
	while (end && (*end == ' ' || *end == '\t')) end++;
	if (!value || end == value || *end || errno == ERANGE) {
		say(u, "info string %s wants a number %ld..%ld, not '%.40s'; %ld kept", name, min,
		    max, value ? value : "", now);
		return false;
	}
	if (x >= min && x <= max) {
		*v = x;
		return true;
	}
	if (!clamp) {
		say(u, "info string %s must be %ld..%ld; %ld kept", name, min, max, now);
		return false;
	}
	*v = x < min ? min : max;
	say(u, "info string %s must be %ld..%ld; %ld taken", name, min, max, *v);
	return true;
}

static void setoption(Usi *u, char *args)
{
	/* "name N value V": names have no spaces for our options. */
	char *name = strstr(args, "name ");
	char *value = strstr(args, " value ");
	if (!name) return;
	name += 5;
	if (value) {
		*value = '\0';
		value += 7;
	}
	while (*name == ' ') name++;
	char *end = name + strlen(name);
	while (end > name && end[-1] == ' ') *--end = '\0';
	long v = 0;
	if (!strcmp(name, "USI_Hash") || !strcmp(name, "Hash")) {
		if (!spin(u, "USI_Hash", value, 1, USI_HASH_MAX_MB, false, (long)u->hash_mb, &v)) {
		} else if (engine_set_hash(u->engine, (size_t)v) < 0) {
			say(u, "info string cannot allocate %ld MB of hash; keeping %zu", v,
			    u->hash_mb);
		} else {
			u->hash_mb = (size_t)v;
		}
	} else if (!strcmp(name, "MultiPV")) {
		if (spin(u, "MultiPV", value, 1, ENGINE_MULTIPV_MAX, true, u->multipv, &v))
			u->multipv = (int)v;
	} else if (!strcmp(name, "Threads")) {
		if (!value || strtol(value, NULL, 10) != 1)
			say(u, "info string only Threads 1 is supported");
	} else if (strcmp(name, "USI_Ponder") != 0) {
		say(u, "info string unknown option '%s'", name);
	}
}

static int usi_loop(Usi *u)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool quit = false;
	while ((n = getline(&line, &cap, u->cfg->in)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
		char *cmd = line;
		while (*cmd == ' ' || *cmd == '\t') cmd++;
		char *args = cmd + strcspn(cmd, " \t");
		if (*args) *args++ = '\0';
		if (!strcmp(cmd, "usi")) {
			say(u, "id name joseki");
			say(u, "id author the joseki authors");
			say(u, "option name USI_Hash type spin default %d min 1 max %d",
			    ENGINE_HASH_DEFAULT_MB, USI_HASH_MAX_MB);
			say(u, "option name MultiPV type spin default 1 min 1 max %d",
			    ENGINE_MULTIPV_MAX);
			say(u, "option name Threads type spin default 1 min 1 max 1");
			say(u, "option name USI_Ponder type check default false");
			say(u, "usiok");
		} else if (!strcmp(cmd, "isready")) {
			say(u, "readyok");
		} else if (!strcmp(cmd, "setoption")) {
			stop_search(u);
			setoption(u, args);
		} else if (!strcmp(cmd, "usinewgame")) {
			stop_search(u);
			engine_clear(u->engine);
		} else if (!strcmp(cmd, "position")) {
			stop_search(u);
			char err[SHOGI_ERRLEN];
			/* (A problem's position, one king alone, is searched: an engine
			 * is asked those too. A board with no legal move resigns.) */
			u->bad_pos = position_parse(&u->tmp, args, err) < 0;
			if (u->bad_pos)
				say(u, "info string bad position: %s", err);
			else
				memcpy(&u->pos, &u->tmp, sizeof u->tmp);
		} else if (!strcmp(cmd, "go")) {
			go(u, args);
		} else if (!strcmp(cmd, "stop")) {
			stop_search(u);
		} else if (!strcmp(cmd, "ponderhit")) {
			ponderhit(u);
		} else if (!strcmp(cmd, "gameover")) {
			stop_search(u);
		} else if (!strcmp(cmd, "quit")) {
			quit = true;
			break;
		} else if (!strcmp(cmd, "bench")) {
			stop_search(u);
			int depth = *args ? atoi(args) : ENGINE_BENCH_DEPTH;
			if (depth < 1 || depth >= ENGINE_MAX_PLY) depth = ENGINE_BENCH_DEPTH;
			pthread_mutex_lock(&u->out);
			int brc = engine_bench(u->cfg->out, u->cfg->log, depth);
			pthread_mutex_unlock(&u->out);
			if (brc < 0) say(u, "info string bench: %s", engine_strerror(brc));
		} else if (*cmd) {
			say(u, "info string unknown command '%s'", cmd);
		}
	}
	if (quit)
		stop_search(u);
	else
		finish_search(u);
	free(line);
	return 0;
}

int usi_server_run(const UsiServerConfig *cfg)
{
	Usi *u = calloc(1, sizeof *u);
	if (!u) return ENGINE_ENOMEM;
	u->cfg = cfg;
	u->hash_mb = ENGINE_HASH_DEFAULT_MB;
	u->multipv = 1;
	if (engine_new(&u->engine, u->hash_mb) < 0) {
		free(u);
		return ENGINE_ENOMEM;
	}
	if (cfg->now_ns) engine_set_clock(u->engine, cfg->now_ns, cfg->now_ctx);
	pos_set_startpos(&u->pos);
	pthread_mutex_init(&u->lock, NULL);
	pthread_mutex_init(&u->out, NULL);
	pthread_cond_init(&u->cond, NULL);
	int rc = usi_loop(u);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->out);
	pthread_mutex_destroy(&u->lock);
	engine_free(u->engine);
	free(u);
	return rc;
}

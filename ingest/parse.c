/* ingest/parse.c — the parsers: units to games (ingest_priv.h). */
#include "ingest/ingest_priv.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/notation.h"

/* ---- parsers ----------------------------------------------------------- */

static void result_error(Result *r, const char *input, int line, char *message)
{
	char *in = ing_strdup(input);
	if (!in || !message ||
	    array_grow((void **)&r->errors, &r->ecap, r->nerrors + 1, sizeof *r->errors, 8)) {
		ing_out_of_memory();
		free(in);
		free(message);
		return;
	}
	r->errors[r->nerrors].input = in;
	r->errors[r->nerrors].line = line;
	r->errors[r->nerrors].message = message;
	r->nerrors++;
}

static Game *result_game(Result *r)
{
	if (array_grow((void **)&r->games, &r->cap, r->ngames + 1, sizeof *r->games, 8)) {
		ing_out_of_memory();
		return NULL;
	}
	Game *g = &r->games[r->ngames++];
	memset(g, 0, sizeof *g);
	return g;
}

/* "2026/06/01 13:00:01" (or a floodgate id's trailing timestamp) → "20260601". */
static bool game_date(const KifuRecord *rec, char out[9])
{
	const char *s = rec->start_time;
	if (s && strlen(s) >= 10 && s[4] == '/' && s[7] == '/') {
		memcpy(out, s, 4);
		memcpy(out + 4, s + 5, 2);
		memcpy(out + 6, s + 8, 2);
		out[8] = 0;
		return true;
	}
	const char *e = rec->event;
	if (e) {
		const char *plus = strrchr(e, '+');
		if (plus && strlen(plus + 1) >= 8) {
			for (int i = 1; i <= 8; i++)
				if (plus[i] < '0' || plus[i] > '9') return false;
			memcpy(out, plus + 1, 8);
			out[8] = 0;
			return true;
		}
	}
	return false;
}

/* The floodgate game name: the second '+' field of the id ("floodgate-300-10F"). */
static bool game_tc(const KifuRecord *rec, char *out, size_t len)
{
	const char *e = rec->event;
	if (!e) return false;
	const char *a = strchr(e, '+');
	if (!a) return false;
	const char *b = strchr(a + 1, '+');
	size_t n = b ? (size_t)(b - a - 1) : strlen(a + 1);
	if (n >= len) n = len - 1;
	memcpy(out, a + 1, n);
	out[n] = 0;
	return true;
}

static bool keep_game(const KifuRecord *rec, const IngestOptions *opt)
{
	if (opt->has_min_rating)
		for (int c = 0; c < COLOR_NB; c++)
			if (!rec->has_rate[c] || rec->rate[c] < opt->min_rating) return false;
	if (opt->since[0] || opt->until[0]) {
		char d[9];
		if (!game_date(rec, d)) return false;
		if (opt->since[0] && strcmp(d, opt->since) < 0) return false;
		if (opt->until[0] && strcmp(d, opt->until) > 0) return false;
	}
	if (opt->event_glob && (!rec->event || fnmatch(opt->event_glob, rec->event, 0) != 0))
		return false;
	if (opt->tc_glob) {
		char tc[128];
		if (!game_tc(rec, tc, sizeof tc) || fnmatch(opt->tc_glob, tc, 0) != 0) return false;
	}
	return true;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static char *game_id(const KifuRecord *rec, const Position *start)
{
	if (rec->event && !strncmp(rec->event, "wdoor+", 6)) return ing_printf("id:%s", rec->event);
	/* No server id: the start position and the moves identify the game. */
	Key k = pos_key(start);
	uint64_t h1 = fnv1a(0xcbf29ce484222325ULL ^ k.lo, &k.hi, sizeof k.hi);
	uint64_t h2 = fnv1a(0x84222325cbf29ce4ULL ^ k.hi, &k.lo, sizeof k.lo);
	for (size_t i = 0; i < rec->nmoves; i++) {
		h1 = fnv1a(h1, rec->moves[i].token, 7);
		h2 = fnv1a(h2 ^ i, rec->moves[i].token, 7);
	}
	return ing_printf("h:%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/*
 * The mover's evaluation from a Black-relative score. |score| >= 30000, or
 * exactly 9999 when the game has no ordinary score at or beyond 9999, is a
 * mate at an unknown distance: ±VALUE_MATE_IN_MAX.
 */
static int16_t mover_eval(int32_t score, Color mover, bool cap9999_is_mate)
{
	int32_t a = score < 0 ? -score : score;
	int32_t v;
	if (a >= 30000 || (cap9999_is_mate && a == 9999))
		v = score < 0 ? -VALUE_MATE_IN_MAX : VALUE_MATE_IN_MAX;
	else if (a >= VALUE_MATE_IN_MAX)
		v = score < 0 ? -(VALUE_MATE_IN_MAX - 1) : VALUE_MATE_IN_MAX - 1;
	else
		v = score;
	return (int16_t)(mover == BLACK ? v : -v);
}

typedef struct {
	Game *game;
	const KifuRecord *rec;
	int max_ply;
	bool cap9999_is_mate;
	size_t cap;
	int unstorable; /* 1-based index of the first move whose position cannot be packed */
	char why[SHOGI_ERRLEN]; /* why it cannot ("" when the rules core does not say) */
} PlyCollect;

static int collect_ply(void *ctx, const Position *before, Move m, size_t index)
{
	PlyCollect *c = ctx;
	if (before->game_ply > c->max_ply) return 0;
	Game *g = c->game;
	if (array_grow((void **)&g->plies, &c->cap, g->nplies + 1, sizeof *g->plies, 16)) {
		ing_out_of_memory();
		return -1;
	}
	Ply *p = &g->plies[g->nplies++];
	memset(p, 0, sizeof *p);
	p->key = pos_key(before);
	p->move = m;
	p->ply = (uint16_t)(before->game_ply > 65535 ? 65535 : before->game_ply);
	p->mover = (uint8_t)before->side;
	if (c->rec && index < c->rec->nmoves) {
		const KifuMove *cm = &c->rec->moves[index];
		if (cm->has_eval && !cm->book) {
			p->has_eval = true;
			p->eval = mover_eval(cm->eval, before->side, c->cap9999_is_mate);
		}
	}
	/* The writer unpacks it again: a packing that does not read back
	 * rejects this game alone. */
	int n = bookdb_pack_checked(p->packed, before->board, before->hand, before->side);
	p->packed_len = n > 0 ? (uint8_t)n : 0;
	if (n <= 0 && !c->unstorable) {
		c->unstorable = (int)index + 1;
		/* The reason query and import give for such a position. */
		if (pos_check_game(before, c->why) == 0) c->why[0] = '\0';
	}
	return 0;
}

/*
 * A comment's mate score is one engine's claim at one moment. It stands only
 * where the replay shows the game ended in mate on the board, within
 * opt->mate_plies plies of the comment, won by the side the score favours;
 * any other is bounded by ±opt->mate_clamp (docs/ingest.md).
 */
static void clamp_mates(Game *g, const ReplayResult *res, const IngestOptions *opt)
{
	for (size_t k = 0; k < g->nplies; k++) {
		Ply *p = &g->plies[k];
		if (!p->has_eval || (p->eval < VALUE_MATE_IN_MAX && p->eval > -VALUE_MATE_IN_MAX))
			continue;
		Color winner = p->eval > 0 ? (Color)p->mover : (Color)!p->mover;
		bool mated =
		    res->end == GAME_END_MATE &&
		    res->winner == (winner == BLACK ? GAME_WINNER_BLACK : GAME_WINNER_WHITE) &&
		    (long)res->plies - (long)(k + 1) <= opt->mate_plies;
		if (!mated && p->eval > opt->mate_clamp) p->eval = (int16_t)opt->mate_clamp;
		if (!mated && p->eval < -opt->mate_clamp) p->eval = (int16_t)-opt->mate_clamp;
	}
}

static void parse_record(Result *r, const char *input, KifuRecord *rec, const IngestOptions *opt,
                         Position *pos)
{
	Game *g = result_game(r);
	char err[SHOGI_ERRLEN];
	if (!g) return; /* out of memory: the run ends with INGEST_ENOMEM */
	if (kifu_record_position(pos, rec, err) < 0) {
		g->status = GAME_REJECT;
		result_error(r, input, rec->first_line,
		             ing_printf("impossible start position (%s)", err));
		return;
	}
	g->id = game_id(rec, pos);
	g->variations = rec->variations;
	if (!keep_game(rec, opt)) {
		g->status = GAME_SKIP;
		return;
	}
	bool cap9999 = true;
	for (size_t i = 0; i < rec->nmoves; i++) {
		int32_t e = rec->moves[i].eval, a = e < 0 ? -e : e;
		if (rec->moves[i].has_eval && a > 9999 && a < 30000) cap9999 = false;
	}
	PlyCollect c = {g, rec, opt->max_ply, cap9999, 0, 0, ""};
	ReplayResult res;
	int rc = replay_kifu(&res, pos, rec, collect_ply, &c);
	if (rc != 0) {
		g->status = GAME_REJECT;
		result_error(r, input, res.error_line ? res.error_line : rec->first_line,
		             ing_printf("%s", res.error[0] ? res.error : "cannot replay the game"));
		return;
	}
	/* Checked here, before any of it reaches the book: a game the store
	 * cannot hold is rejected alone, and the rest of the input goes on. */
	if (c.unstorable) {
		g->status = GAME_REJECT;
		size_t mi = (size_t)c.unstorable - 1;
		int line = mi < rec->nmoves ? rec->moves[mi].line : rec->first_line;
		result_error(
		    r, input, line,
		    ing_printf("the position before move %d cannot be stored in the book%s%s; game "
		               "skipped",
		               c.unstorable, c.why[0] ? ": " : "", c.why));
		return;
	}
	g->winner = res.winner;
	/* Only a floodgate game can be completed later (by its id): a record
	 * under a hash of its moves (a USI line, a KIF without an event) is the
	 * game it is. */
	g->unended = res.end == GAME_END_NONE && res.winner == GAME_WINNER_NONE && g->id &&
	             !strncmp(g->id, "id:", 3);
	clamp_mates(g, &res, opt);
	if ((res.end == GAME_END_ILLEGAL_MOVE || rec->cut) && res.error[0]) {
		result_error(r, input, res.error_line, ing_printf("%s", res.error));
		if (res.plies == 0) {
			g->status = GAME_REJECT;
			return;
		}
	}
	if (rec->second_game_line)
		result_error(r, input, rec->second_game_line,
		             ing_printf("a second game in one file: not read (a KIF or KI2 file "
		                        "holds one game)"));
	g->status = GAME_INGEST;
}

static void parse_unit(Result *r, const Unit *u, const IngestOptions *opt, Position *pos)
{
	if (u->error) {
		result_error(r, u->name, u->line, ing_strdup(u->error));
		return;
	}
	KifuReader *rd;
	if (kifu_reader_open_mem_as(&rd, u->buf, u->len, u->name, u->format) < 0) {
		ing_out_of_memory();
		return;
	}
	kifu_reader_first_line(rd, u->line);
	for (;;) {
		KifuRecord *rec = NULL;
		int rc = kifu_reader_next(rd, &rec);
		if (rc == 0) break;
		if (rc == KIFU_EPARSE) {
			Game *g = result_game(r);
			if (!g) break;
			g->status = GAME_REJECT;
			result_error(r, u->name, kifu_reader_error_line(rd),
			             ing_printf("%s (record skipped)", kifu_reader_error_what(rd)));
			continue;
		}
		if (rc < 0) {
			if (rc == KIFU_ENOMEM) ing_out_of_memory();
			result_error(r, u->name, 0, ing_printf("%s", kifu_strerror(rc)));
			break;
		}
		parse_record(r, u->name, rec, opt, pos);
		kifu_record_free(rec);
	}
	kifu_reader_free(rd);
}

void *ing_parser_main(void *arg)
{
	Pipe *p = arg;
	Position *pos = malloc(sizeof *pos);
	if (!pos) {
		/* Without a position this parser cannot work: stop the pipeline. */
		ing_out_of_memory();
		pthread_mutex_lock(&p->mu);
		p->abort = true;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->abort && p->taken == p->produced && !p->feed_done)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->abort || (p->taken == p->produced && p->feed_done)) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		size_t seq = p->taken++;
		pthread_mutex_unlock(&p->mu);
		Unit *u = &p->units[seq % p->window];
		Result *r = &p->results[seq % p->window];
		parse_unit(r, u, p->opt, pos);
		free(u->buf);
		u->buf = NULL;
		pthread_mutex_lock(&p->mu);
		r->done = true;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	free(pos);
	return NULL;
}

/*
 * ingest/replay.c — replaying games under the rules. See replay.h.
 */
#include "ingest/replay.h"

#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/kifu_priv.h"
#include "ingest/walk.h"

#include "shogi/errmsg.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

static GameWinner winner_of(Color c)
{
	return game_winner_of(c);
}

static void set_end(ReplayResult *res, GameEnd end, GameWinner w)
{
	res->end = end;
	res->winner = w;
}

/* True (and the result set) when the side to move has no legal move. */
static bool judge_mate(ReplayResult *res, const Position *pos)
{
	if (movegen_count(pos) != 0) return false;
	set_end(res, GAME_END_MATE, winner_of(color_flip(pos->side)));
	return true;
}

/*
 * What the rules say after a move; true when the game is over. Mate is not
 * looked for here: a legal next move proves there is none, so callers ask
 * judge_mate() only after the last move or before an illegal one, which
 * saves a move generation per ply.
 */
static bool judge_after_move(ReplayResult *res, const Position *pos, int max_moves)
{
	switch (pos_repetition(pos)) {
	case REP_DRAW:
		set_end(res, GAME_END_REPETITION, GAME_WINNER_DRAW);
		return true;
	case REP_BLACK_LOSES:
		set_end(res, GAME_END_PERPETUAL_CHECK, GAME_WINNER_WHITE);
		return true;
	case REP_WHITE_LOSES:
		set_end(res, GAME_END_PERPETUAL_CHECK, GAME_WINNER_BLACK);
		return true;
	default:
		break;
	}
	if (max_moves > 0 && res->plies >= max_moves) {
		if (!judge_mate(res, pos)) set_end(res, GAME_END_MAX_MOVES, GAME_WINNER_DRAW);
		return true;
	}
	return false;
}

static void judge_declaration(ReplayResult *res, const Position *pos)
{
	bool ok = pos_declaration_ok(pos);
	set_end(res, GAME_END_DECLARATION, winner_of(ok ? pos->side : color_flip(pos->side)));
}

/*
 * floodgate's "summary:<type>:<black> <win|lose|draw>:<white> <...>", used
 * only when the record has no % line, for what the moves cannot show.
 */
static void judge_summary(ReplayResult *res, const Position *pos, const char *summary)
{
	const char *c1 = strchr(summary, ':');
	if (!c1) return;
	size_t tlen = (size_t)(c1 - summary);
	const char *c2 = strchr(c1 + 1, ':');
	const char *stop = c2 ? c2 : c1 + 1 + strlen(c1 + 1);
	const char *w = stop;
	while (w > c1 + 1 && w[-1] != ' ') w--;
	GameWinner winner = GAME_WINNER_NONE;
	size_t wlen = (size_t)(stop - w);
	if (wlen == 3 && !memcmp(w, "win", 3)) winner = GAME_WINNER_BLACK;
	if (wlen == 4 && !memcmp(w, "lose", 4)) winner = GAME_WINNER_WHITE;
	if (wlen == 4 && !memcmp(w, "draw", 4)) winner = GAME_WINNER_DRAW;
#define IS(s) (tlen == strlen(s) && !memcmp(summary, s, tlen))
	if (IS("toryo"))
		set_end(res, GAME_END_RESIGN, winner_of(color_flip(pos->side)));
	else if (IS("time up"))
		set_end(res, GAME_END_TIME_UP, winner_of(color_flip(pos->side)));
	else if (IS("kachi"))
		judge_declaration(res, pos);
	else if (IS("max_moves"))
		set_end(res, GAME_END_MAX_MOVES, GAME_WINNER_DRAW);
	else if (IS("illegal move") || IS("uchifuzume") || IS("oute_kaihimore") || IS("outori") ||
	         IS("illegal kachi"))
		set_end(res, GAME_END_ILLEGAL_MOVE, winner);
#undef IS
}

static void judge_end(ReplayResult *res, const Position *pos, const KifuRecord *rec)
{
	if (rec->end == GAME_CLAIM_NONE) {
		if (rec->summary) judge_summary(res, pos, rec->summary);
		return;
	}
	game_claim_judge(rec->end, pos, &res->end, &res->winner);
}

/* The record's move i in pos: its resolved move, or its CSA token parsed. */
static int record_move(Move *m, const Position *pos, const KifuMove *cm, char *err)
{
	if (cm->move != MOVE_NONE) {
		if (pos_is_legal(pos, cm->move)) {
			*m = cm->move;
			return 0;
		}
		return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL, "not legal in the position");
	}
	return csa_move_parse(m, pos, cm->token, 7, err);
}

int replay_kifu(ReplayResult *res, Position *pos, const KifuRecord *rec, replay_move_fn fn,
                void *ctx)
{
	memset(res, 0, sizeof *res);
	char err[SHOGI_ERRLEN];
	if (kifu_record_position(pos, rec, err) != 0) {
		res->error_line = rec->first_line;
		return errmsg_set(res->error, sizeof res->error, KIFU_EILLEGAL,
		                  "impossible start position (%s)", err);
	}
	int max_moves = kifu_record_max_moves(rec);
	for (size_t i = 0; i < rec->nmoves; i++) {
		const KifuMove *cm = &rec->moves[i];
		Move m;
		Color mover = cm->token[0] == '+' ? BLACK : WHITE;
		if (mover != pos->side) {
			if (judge_mate(res, pos)) return 0;
			res->error_line = cm->line;
			errmsg_set(res->error, sizeof res->error, 0,
			           "illegal move %s (it is %s's turn)", cm->token,
			           pos->side == BLACK ? "Black" : "White");
			set_end(res, GAME_END_ILLEGAL_MOVE, winner_of(color_flip(pos->side)));
			return 0;
		}
		if (record_move(&m, pos, cm, err) != 0) {
			if (judge_mate(res, pos)) return 0;
			res->error_line = cm->line;
			errmsg_set(res->error, sizeof res->error, 0, "illegal move %s (%s)",
			           cm->token, err);
			set_end(res, GAME_END_ILLEGAL_MOVE, winner_of(color_flip(pos->side)));
			return 0;
		}
		if (pos_history_len(pos) >= POS_MAX_STATES - 1) {
			res->error_line = cm->line;
			return errmsg_set(res->error, sizeof res->error, KIFU_EILLEGAL,
			                  "game longer than %d plies", POS_MAX_STATES - 1);
		}
		if (fn) {
			int rc = fn(ctx, pos, m, i);
			if (rc) return rc;
		}
		pos_do_move(pos, m);
		res->plies++;
		if (judge_after_move(res, pos, max_moves)) return 0;
	}
	if (rec->too_long) {
		/* Not a result: the game is rejected, as one found too long here. */
		res->error_line = rec->illegal_line;
		return errmsg_set(res->error, sizeof res->error, KIFU_EILLEGAL, "%s", rec->illegal);
	}
	if (judge_mate(res, pos)) return 0;
	if (rec->illegal) {
		/* The reader stopped at a move it could not make (or read). */
		res->error_line = rec->illegal_line;
		errmsg_set(res->error, sizeof res->error, 0, "%s", rec->illegal);
		if (rec->cut) return 0; /* damaged: no result (GAME_END_NONE) */
		set_end(res, GAME_END_ILLEGAL_MOVE, winner_of(color_flip(pos->side)));
		return 0;
	}
	judge_end(res, pos, rec);
	return 0;
}

int replay_usi(ReplayResult *res, Position *pos, const char *text, size_t len, int line,
               replay_move_fn fn, void *ctx)
{
	memset(res, 0, sizeof *res);
	KifuRecord *rec;
	char err[SHOGI_ERRLEN];
	int rc = usi_line_record(&rec, pos, text, len, line, err);
	if (rc == SHOGI_EPARSE) {
		res->error_line = line;
		return errmsg_set(res->error, sizeof res->error, SHOGI_EPARSE, "bad position (%s)",
		                  err);
	}
	if (rc) return rc;
	rc = replay_kifu(res, pos, rec, fn, ctx);
	kifu_record_free(rec);
	return rc;
}

typedef struct {
	replay_game_fn fn;
	void *ctx;
	Position *pos;
	char *err;
} GameWalk;

/* One game file (or part) of the walk: its games, replayed. */
static int walk_file(void *ctx, WalkFile *f)
{
	GameWalk *w = ctx;
	int ret = 0;
	KifuReader *rd = NULL;
	const char *name = f->name;
	if (!f->buf || !name) {
		int code = f->errnum == ENOMEM || !name ? KIFU_ENOMEM : KIFU_EIO;
		const char *why = f->error ? f->error : "out of memory";
		if (f->line > 0)
			ret = errmsg_set(w->err, REPLAY_ERRLEN, code, "%.300s:%d: %.180s", name,
			                 f->line, why);
		else
			ret = errmsg_set(w->err, REPLAY_ERRLEN, code, "%.300s: %.180s",
			                 name ? name : "?", why);
		goto out;
	}
	if (kifu_reader_open_mem_as(&rd, f->buf, f->len, name, f->format) < 0) {
		ret = errmsg_set(w->err, REPLAY_ERRLEN, KIFU_ENOMEM, "%.300s: out of memory", name);
		goto out;
	}
	kifu_reader_first_line(rd, f->line);
	KifuRecord *rec;
	int rc;
	while ((rc = kifu_reader_next(rd, &rec)) != 0) {
		if (rc < 0) {
			ret = errmsg_set(w->err, REPLAY_ERRLEN, rc, "%.480s",
			                 rc == KIFU_EPARSE ? kifu_reader_error(rd)
			                                   : kifu_strerror(rc));
			break;
		}
		ReplayResult res;
		rc = replay_kifu(&res, w->pos, rec, NULL, NULL);
		ret = w->fn(w->ctx, name, rec, rc, &res, w->pos, w->err);
		kifu_record_free(rec);
		if (ret) break;
	}
out:
	kifu_reader_free(rd);
	free(f->name);
	free(f->buf);
	free(f->error);
	return ret;
}

int replay_file_games(const char *path, replay_game_fn fn, void *ctx, WalkStats *st, char *err)
{
	Position *pos = malloc(sizeof *pos);
	if (!pos) return errmsg_set(err, REPLAY_ERRLEN, KIFU_ENOMEM, "out of memory");
	GameWalk w = {fn, ctx, pos, err};
	WalkOptions wo = {.file = walk_file, .ctx = &w};
	int ret = walk_inputs(&path, 1, &wo, st);
	free(pos);
	return ret;
}

typedef struct {
	replay_pos_fn fn;
	void *ctx;
	int max_ply;
} PosWalk;

/* The positions of one game: after 0, 1, ... of its moves, below max_ply
 * (with an error, only those before a legal move: the walk stops there). */
static int walk_positions(void *ctx, const char *input, const KifuRecord *rec, int rc,
                          const ReplayResult *res, Position *pos, char *err)
{
	PosWalk *w = ctx;
	int line = res->error_line ? res->error_line : rec->first_line;
	if (rc) /* pos holds nothing that can be trusted */
		return errmsg_set(err, REPLAY_ERRLEN, KIFU_EPARSE, "%.300s:%d: %.180s", input, line,
		                  res->error);
	bool bad = res->error[0] != 0;
	int n = pos_history_len(pos), last = bad ? n - 1 : n, ret = 0;
	Move moves[POS_MAX_STATES];
	for (int i = 1; i <= n; i++) moves[i - 1] = pos->states[i].move;
	for (int i = 0; i < n; i++) pos_undo_move(pos);
	for (int i = 0; i <= n; i++) {
		if (!ret && i <= last && i < w->max_ply) ret = w->fn(w->ctx, pos);
		if (i < n) pos_do_move(pos, moves[i]);
	}
	if (ret) return ret;
	if (bad)
		return errmsg_set(err, REPLAY_ERRLEN, KIFU_EPARSE, "%.300s:%d: %.180s", input, line,
		                  res->error);
	return 0;
}

int replay_file_positions(const char *path, int max_ply, replay_pos_fn fn, void *ctx, char *err)
{
	PosWalk w = {fn, ctx, max_ply};
	return replay_file_games(path, walk_positions, &w, NULL, err);
}

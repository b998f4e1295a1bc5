/*
 * ingest/replay.c — replaying games under the rules. See replay.h.
 */
#include "ingest/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/errmsg.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

/* walk_move's "this game is far enough" (not an error; no other code uses it). */
#define REPLAY_FAR_ENOUGH 0x7ffffff0

static const char *const END_NAMES[] = {
    [REPLAY_END_NONE] = "none",
    [REPLAY_END_RESIGN] = "resign",
    [REPLAY_END_REPETITION] = "repetition",
    [REPLAY_END_PERPETUAL_CHECK] = "perpetual_check",
    [REPLAY_END_DECLARATION] = "declaration",
    [REPLAY_END_MATE] = "mate",
    [REPLAY_END_ILLEGAL_MOVE] = "illegal_move",
    [REPLAY_END_TIME_UP] = "time_up",
    [REPLAY_END_MAX_MOVES] = "max_moves",
    [REPLAY_END_INTERRUPTED] = "interrupted",
};

const char *replay_end_name(ReplayEnd end)
{
	if ((unsigned)end > REPLAY_END_INTERRUPTED) return "none";
	return END_NAMES[end];
}

const char *replay_winner_name(ReplayWinner w)
{
	switch (w) {
	case REPLAY_WINNER_BLACK:
		return "black";
	case REPLAY_WINNER_WHITE:
		return "white";
	case REPLAY_WINNER_DRAW:
		return "draw";
	default:
		return "none";
	}
}

static ReplayWinner winner_of(Color c)
{
	return c == BLACK ? REPLAY_WINNER_BLACK : REPLAY_WINNER_WHITE;
}

static void set_end(ReplayResult *res, ReplayEnd end, ReplayWinner w)
{
	res->end = end;
	res->winner = w;
}

/* True (and the result set) when the side to move has no legal move. */
static bool judge_mate(ReplayResult *res, const Position *pos)
{
	if (movegen_count(pos) != 0) return false;
	set_end(res, REPLAY_END_MATE, winner_of(color_flip(pos->side)));
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
		set_end(res, REPLAY_END_REPETITION, REPLAY_WINNER_DRAW);
		return true;
	case REP_BLACK_LOSES:
		set_end(res, REPLAY_END_PERPETUAL_CHECK, REPLAY_WINNER_WHITE);
		return true;
	case REP_WHITE_LOSES:
		set_end(res, REPLAY_END_PERPETUAL_CHECK, REPLAY_WINNER_BLACK);
		return true;
	default:
		break;
	}
	if (max_moves > 0 && res->plies >= max_moves) {
		if (!judge_mate(res, pos)) set_end(res, REPLAY_END_MAX_MOVES, REPLAY_WINNER_DRAW);
		return true;
	}
	return false;
}

static void judge_declaration(ReplayResult *res, const Position *pos)
{
	bool ok = pos_declaration_ok(pos);
	set_end(res, REPLAY_END_DECLARATION, winner_of(ok ? pos->side : color_flip(pos->side)));
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
	ReplayWinner winner = REPLAY_WINNER_NONE;
	size_t wlen = (size_t)(stop - w);
	if (wlen == 3 && !memcmp(w, "win", 3)) winner = REPLAY_WINNER_BLACK;
	if (wlen == 4 && !memcmp(w, "lose", 4)) winner = REPLAY_WINNER_WHITE;
	if (wlen == 4 && !memcmp(w, "draw", 4)) winner = REPLAY_WINNER_DRAW;
#define IS(s) (tlen == strlen(s) && !memcmp(summary, s, tlen))
	if (IS("toryo"))
		set_end(res, REPLAY_END_RESIGN, winner_of(color_flip(pos->side)));
	else if (IS("time up"))
		set_end(res, REPLAY_END_TIME_UP, winner_of(color_flip(pos->side)));
	else if (IS("kachi"))
		judge_declaration(res, pos);
	else if (IS("max_moves"))
		set_end(res, REPLAY_END_MAX_MOVES, REPLAY_WINNER_DRAW);
	else if (IS("illegal move") || IS("uchifuzume") || IS("oute_kaihimore") || IS("outori") ||
	         IS("illegal kachi"))
		set_end(res, REPLAY_END_ILLEGAL_MOVE, winner);
#undef IS
}

static void judge_end(ReplayResult *res, const Position *pos, const CsaRecord *rec)
{
	Color stm = pos->side;
	switch (rec->end) {
	case CSA_END_TORYO:
	case CSA_END_TSUMI: /* the mated side says so; with legal moves left it is a resignation */
		set_end(res, REPLAY_END_RESIGN, winner_of(color_flip(stm)));
		break;
	case CSA_END_TIME_UP:
		set_end(res, REPLAY_END_TIME_UP, winner_of(color_flip(stm)));
		break;
	case CSA_END_KACHI:
		judge_declaration(res, pos);
		break;
	case CSA_END_JISHOGI:
	case CSA_END_HIKIWAKE:
		/* An impasse: a win for the side to move if its declaration is valid. */
		if (pos_declaration_ok(pos))
			judge_declaration(res, pos);
		else
			set_end(res, REPLAY_END_NONE, REPLAY_WINNER_DRAW);
		break;
	case CSA_END_CHUDAN:
		set_end(res, REPLAY_END_INTERRUPTED, REPLAY_WINNER_NONE);
		break;
	case CSA_END_ILLEGAL_MOVE:
		set_end(res, REPLAY_END_ILLEGAL_MOVE, winner_of(color_flip(stm)));
		break;
	case CSA_END_BLACK_ILLEGAL_ACTION:
		set_end(res, REPLAY_END_ILLEGAL_MOVE, REPLAY_WINNER_WHITE);
		break;
	case CSA_END_WHITE_ILLEGAL_ACTION:
		set_end(res, REPLAY_END_ILLEGAL_MOVE, REPLAY_WINNER_BLACK);
		break;
	case CSA_END_NONE:
		if (rec->summary) judge_summary(res, pos, rec->summary);
		break;
	default:
		break; /* %SENNICHITE not confirmed by the moves, %MATTA, %ERROR, ...: none */
	}
}

int replay_csa(ReplayResult *res, Position *pos, const CsaRecord *rec, replay_move_fn fn, void *ctx)
{
	memset(res, 0, sizeof *res);
	char err[SHOGI_ERRLEN];
	if (csa_record_position(pos, rec, err) != 0) {
		res->error_line = rec->first_line;
		snprintf(res->error, sizeof res->error, "impossible start position (%s)", err);
		return CSA_EILLEGAL;
	}
	int max_moves = csa_record_max_moves(rec);
	for (size_t i = 0; i < rec->nmoves; i++) {
		const CsaMove *cm = &rec->moves[i];
		Move m;
		Color mover = cm->token[0] == '+' ? BLACK : WHITE;
		if (mover != pos->side) {
			if (judge_mate(res, pos)) return 0;
			res->error_line = cm->line;
			snprintf(res->error, sizeof res->error, "illegal move %s (it is %s's turn)",
			         cm->token, pos->side == BLACK ? "Black" : "White");
			set_end(res, REPLAY_END_ILLEGAL_MOVE, winner_of(color_flip(pos->side)));
			return 0;
		}
		if (csa_move_parse(&m, pos, cm->token, 7, err) != 0) {
			if (judge_mate(res, pos)) return 0;
			res->error_line = cm->line;
			snprintf(res->error, sizeof res->error, "illegal move %s (%s)", cm->token,
			         err);
			set_end(res, REPLAY_END_ILLEGAL_MOVE, winner_of(color_flip(pos->side)));
			return 0;
		}
		if (pos_history_len(pos) >= POS_MAX_STATES - 1) {
			res->error_line = cm->line;
			snprintf(res->error, sizeof res->error, "game longer than %d plies",
			         POS_MAX_STATES - 1);
			return CSA_EILLEGAL;
		}
		if (fn) {
			int rc = fn(ctx, pos, m, i);
			if (rc) return rc;
		}
		pos_do_move(pos, m);
		res->plies++;
		if (judge_after_move(res, pos, max_moves)) return 0;
	}
	if (!judge_mate(res, pos)) judge_end(res, pos, rec);
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool word_is(const char *s, size_t n, const char *w)
{
	return n == strlen(w) && !memcmp(s, w, n);
}

int replay_usi(ReplayResult *res, Position *pos, const char *text, size_t len, int line,
               replay_move_fn fn, void *ctx)
{
	memset(res, 0, sizeof *res);
	char err[SHOGI_ERRLEN];
	size_t i = 0;
	while (i < len && is_space(text[i])) i++;
	size_t j = i;
	while (j < len && !is_space(text[j])) j++;
	const char *first = text + i;
	size_t flen = j - i;
	size_t moves_at; /* offset of the first move */
	if (word_is(first, flen, "startpos") || word_is(first, flen, "sfen") ||
	    word_is(first, flen, "position")) {
		/* The position part runs up to the word "moves". */
		size_t k = i, mstart = len, mend = len;
		while (k < len) {
			while (k < len && is_space(text[k])) k++;
			size_t e = k;
			while (e < len && !is_space(text[e])) e++;
			if (e > k && word_is(text + k, e - k, "moves")) {
				mstart = k;
				mend = e;
				break;
			}
			k = e;
		}
		char *spec = malloc(mstart - i + 1);
		if (!spec) return SHOGI_EPARSE;
		memcpy(spec, text + i, mstart - i);
		spec[mstart - i] = 0;
		int rc = position_parse(pos, spec, err);
		free(spec);
		if (rc != 0) {
			res->error_line = line;
			snprintf(res->error, sizeof res->error, "bad position (%s)", err);
			return SHOGI_EPARSE;
		}
		moves_at = mend;
	} else {
		pos_set_startpos(pos);
		moves_at = i;
	}
	size_t k = moves_at, index = 0;
	for (;;) {
		while (k < len && is_space(text[k])) k++;
		if (k >= len) break;
		size_t e = k;
		while (e < len && !is_space(text[e])) e++;
		Move m;
		if (usi_move_parse_legal(&m, pos, text + k, e - k, err) != 0) {
			if (judge_mate(res, pos)) return 0;
			res->error_line = line;
			snprintf(res->error, sizeof res->error, "illegal move %.*s (%s)",
			         (int)(e - k < 16 ? e - k : 16), text + k, err);
			set_end(res, REPLAY_END_ILLEGAL_MOVE, winner_of(color_flip(pos->side)));
			return 0;
		}
		if (pos_history_len(pos) >= POS_MAX_STATES - 1) {
			res->error_line = line;
			snprintf(res->error, sizeof res->error, "game longer than %d plies",
			         POS_MAX_STATES - 1);
			return SHOGI_ETOOLONG;
		}
		if (fn) {
			int rc = fn(ctx, pos, m, index);
			if (rc) return rc;
		}
		pos_do_move(pos, m);
		res->plies++;
		index++;
		k = e;
		if (judge_after_move(res, pos, 0)) return 0;
	}
	judge_mate(res, pos);
	return 0;
}

typedef struct {
	replay_pos_fn fn;
	void *ctx;
	int max_ply;
} PosWalk;

static int walk_move(void *ctx, const Position *before, Move m, size_t index)
{
	PosWalk *w = ctx;
	(void)m;
	if ((int)index >= w->max_ply) return REPLAY_FAR_ENOUGH; /* stop this game */
	return w->fn(w->ctx, before);
}

/* After a game: its last position when the game stopped short of max_ply. */
static int walk_end(PosWalk *w, int rc, const ReplayResult *res, const Position *pos)
{
	if (rc == REPLAY_FAR_ENOUGH) return 0;
	if (rc) return rc;
	return res->plies < w->max_ply ? w->fn(w->ctx, pos) : 0;
}

static int walk_csa(const char *path, PosWalk *w, Position *pos, char *err)
{
	CsaReader *rd = NULL;
	CsaRecord *rec = NULL;
	ReplayResult res;
	if (csa_reader_open_file(&rd, path) < 0)
		return errmsg_set(err, REPLAY_ERRLEN, CSA_EIO, "cannot read kifu '%.400s'", path);
	int rc, ret = 0;
	while ((rc = csa_reader_next(rd, &rec)) != 0) {
		if (rc < 0) {
			ret =
			    errmsg_set(err, REPLAY_ERRLEN, rc, "kifu %.480s", csa_reader_error(rd));
			break;
		}
		rc = replay_csa(&res, pos, rec, walk_move, w);
		csa_record_free(rec);
		if (rc == CSA_EILLEGAL) {
			ret = errmsg_set(err, REPLAY_ERRLEN, CSA_EPARSE, "kifu '%.200s': %.280s",
			                 path, res.error);
			break;
		}
		if ((ret = walk_end(w, rc, &res, pos))) break;
	}
	csa_reader_free(rd);
	return ret;
}

static int walk_usi(const char *path, PosWalk *w, Position *pos, char *err)
{
	FILE *f = fopen(path, "r");
	if (!f) return errmsg_set(err, REPLAY_ERRLEN, CSA_EIO, "cannot open kifu '%.400s'", path);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, ret = 0;
	ReplayResult res;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
		if (!n || line[0] == '#') continue;
		int rc = replay_usi(&res, pos, line, (size_t)n, lineno, walk_move, w);
		if (rc == SHOGI_EPARSE || res.error[0]) {
			ret = errmsg_set(err, REPLAY_ERRLEN, CSA_EPARSE,
			                 "kifu %.300s line %d: %.150s", path, lineno,
			                 res.error[0] ? res.error : "unreadable");
			break;
		}
		if ((ret = walk_end(w, rc, &res, pos))) break;
	}
	free(line);
	fclose(f);
	return ret;
}

int replay_file_positions(const char *path, int max_ply, replay_pos_fn fn, void *ctx, char *err)
{
	Position *pos = malloc(sizeof *pos);
	if (!pos) return errmsg_set(err, REPLAY_ERRLEN, CSA_ENOMEM, "out of memory");
	PosWalk w = {fn, ctx, max_ply};
	size_t len = strlen(path);
	int ret = len > 4 && !strcmp(path + len - 4, ".csa") ? walk_csa(path, &w, pos, err)
	                                                     : walk_usi(path, &w, pos, err);
	free(pos);
	return ret;
}

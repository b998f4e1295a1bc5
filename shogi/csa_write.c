/* shogi/csa_write.c — a game as a CSA record. */
#include "shogi/csa_write.h"
#include "shogi/errmsg.h"

#include <string.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/rng.h"

/* Hand pieces in the order CSA records list them: HI KA KI GI KE KY FU. */
static const PieceType HAND_ORDER[7] = {ROOK, BISHOP, GOLD, SILVER, KNIGHT, LANCE, PAWN};

/* Writes s with line breaks turned into blanks (a header or comment stays one line). */
static void put_line_text(FILE *f, const char *s)
{
	for (; *s; s++) fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static void put_header(FILE *f, const char *prefix, const char *s)
{
	if (!s) return;
	fputs(prefix, f);
	put_line_text(f, s);
	fputc('\n', f);
}

/* Milliseconds as CSA V3.0 seconds: "10", "0.5", "1.25". */
static void put_seconds(FILE *f, int64_t ms)
{
	fprintf(f, "%lld", (long long)(ms / 1000));
	int frac = (int)(ms % 1000);
	if (!frac) return;
	int digits = 3;
	for (; frac % 10 == 0; frac /= 10) digits--;
	fprintf(f, ".%0*d", digits, frac);
}

static void put_time_control(FILE *f, const TimeControl *t)
{
	put_seconds(f, t->main_ms);
	fputc('+', f);
	put_seconds(f, t->byoyomi_ms);
	fputc('+', f);
	put_seconds(f, t->inc_ms);
	fputc('\n', f);
}

static void put_time(FILE *f, const TimeControl *const tc[COLOR_NB])
{
	const TimeControl *b = tc[BLACK], *w = tc[WHITE];
	if (!b && !w) return;
	bool same = b && w && b->main_ms == w->main_ms && b->byoyomi_ms == w->byoyomi_ms &&
	            b->inc_ms == w->inc_ms;
	if (same && b->inc_ms == 0 && b->main_ms % 60000 == 0 && b->byoyomi_ms % 1000 == 0) {
		long long min = b->main_ms / 60000;
		fprintf(f, "$TIME_LIMIT:%02lld:%02lld+%02lld\n", min / 60, min % 60,
		        (long long)(b->byoyomi_ms / 1000));
	}
	if (same) {
		fputs("$TIME:", f);
		put_time_control(f, b);
		if (b->inc_ms > 0) {
			fputs("'Increment:", f);
			put_seconds(f, b->inc_ms);
			fputc('\n', f);
		}
		return;
	}
	for (int c = 0; c < COLOR_NB; c++) {
		if (!tc[c]) continue;
		fputs(c == BLACK ? "$TIME+:" : "$TIME-:", f);
		put_time_control(f, tc[c]);
	}
}

static void put_position(FILE *f, const Position *pos)
{
	for (int rank = 0; rank < RANK_NB; rank++) {
		fprintf(f, "P%d", rank + 1);
		for (int file = FILE_NB - 1; file >= 0; file--) {
			Piece p = pos->board[sq_make(file, rank)];
			if (p == PIECE_NONE)
				fputs(" * ", f);
			else
				fprintf(f, "%c%s", piece_color(p) == BLACK ? '+' : '-',
				        CSA_PIECE_NAMES[piece_type(p)]);
		}
		fputc('\n', f);
	}
	for (int c = 0; c < COLOR_NB; c++) {
		if (pos->hand[c] == 0) continue;
		fprintf(f, "P%c", c == BLACK ? '+' : '-');
		for (int i = 0; i < 7; i++)
			for (int k = hand_count(pos->hand[c], HAND_ORDER[i]); k > 0; k--)
				fprintf(f, "00%s", CSA_PIECE_NAMES[HAND_ORDER[i]]);
		fputc('\n', f);
	}
	fputs(pos->side == BLACK ? "+\n" : "-\n", f);
}

/* "'** <eval> <pv>": the PV played on pos (after the move), then unwound. */
static void put_eval(FILE *f, Position *pos, const CsaMoveInfo *mi)
{
	if (mi->book) {
		fputs("'** 0\n", f);
		return;
	}
	if (!mi->has_eval) return;
	fprintf(f, "'** %d", mi->eval);
	int made = 0;
	for (int i = 0; i < mi->pv_len && mi->pv; i++) {
		Move m = mi->pv[i];
		if (pos_history_len(pos) >= POS_MAX_STATES - 1 || !pos_is_legal(pos, m)) break;
		char tok[CSA_MOVE_MAX];
		csa_move_write(pos, m, tok);
		fprintf(f, " %s", tok);
		pos_do_move(pos, m);
		made++;
	}
	while (made-- > 0) pos_undo_move(pos);
	fputc('\n', f);
}

static bool csa_word_ok(const char *w)
{
	if (!*w) return false;
	for (; *w; w++)
		if (!((*w >= 'A' && *w <= 'Z') || *w == '+' || *w == '-' || *w == '_'))
			return false;
	return true;
}

int csa_game_write(FILE *f, Position *game, const CsaGame *g, char *err)
{
	int n = pos_history_len(game);
	Move moves[POS_MAX_STATES];
	for (int i = 1; i <= n; i++) {
		Move m = moves[i - 1] = game->states[i].move;
		if (m == MOVE_NONE || m == MOVE_NULL) {
			return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
			                  "CSA record: move %d is a null move", i);
		}
	}
	if (g->end && !csa_word_ok(g->end)) {
		return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
		                  "CSA record: '%.40s' is not a CSA ending", g->end);
	}
	for (int i = 0; i < n; i++) pos_undo_move(game);

	fputs("V2.2\n", f);
	put_header(f, "N+", g->name[BLACK]);
	put_header(f, "N-", g->name[WHITE]);
	put_header(f, "$EVENT:", g->event);
	put_header(f, "$START_TIME:", g->start_time);
	put_time(f, g->time);
	if (g->max_moves > 0) fprintf(f, "'Max_Moves:%d\n", g->max_moves);
	put_position(f, game);
	for (int i = 1; i <= n; i++) {
		Move m = moves[i - 1];
		char tok[CSA_MOVE_MAX];
		csa_move_write(game, m, tok);
		fprintf(f, "%s\n", tok);
		pos_do_move(game, m);
		if (!g->info) continue;
		const CsaMoveInfo *mi = &g->info[i - 1];
		if (mi->time_ms >= 0) fprintf(f, "T%d\n", mi->time_ms / 1000);
		put_eval(f, game, mi);
	}
	if (g->end) fprintf(f, "%%%s\n", g->end);
	for (int i = 0; i < g->ncomments; i++) {
		fputc('\'', f);
		put_line_text(f, g->comments[i]);
		fputc('\n', f);
	}
	return 0;
}

void csa_random_game_write(FILE *f, uint64_t *rng, uint64_t seed, long id, int max_plies,
                           Position *pos)
{
	pos_set_startpos(pos);
	fprintf(f, "V2\nN+gen_black_%ld\nN-gen_white_%ld\n'Max_Moves:256\n", id % 97, id % 89);
	char s[32] = "";
	if (seed != 1) snprintf(s, sizeof s, "_s%llu", (unsigned long long)seed);
	fprintf(f, "$EVENT:wdoor+floodgate-300-10F+gen_black%s+gen_white+2026%02ld%02ld%06ld\n", s,
	        1 + id % 12, 1 + id % 28, id % 1000000);
	fprintf(f, "$START_TIME:2026/%02ld/%02ld 12:00:00\nPI\n+\n", 1 + id % 12, 1 + id % 28);
	fprintf(f, "'black_rate:gen_black+x:%ld\n'white_rate:gen_white+y:%ld.0\n",
	        2500 + (long)(rng_next(rng) % 1500), 2500 + (long)(rng_next(rng) % 1500));
	/* Opening variety with some shared lines: the first moves come from a
	 * small choice, later ones from all legal moves. */
	int plies = 60 + (int)(rng_next(rng) % (unsigned)(max_plies - 59));
	int eval = 0;
	Move moves[MOVEGEN_MAX];
	int played = 0;
	for (; played < plies; played++) {
		int n = movegen_legal(pos, moves);
		if (n == 0) break;
		int k = played < 8 ? (int)(rng_next(rng) % (unsigned)(n < 3 ? n : 3))
		                   : (int)(rng_next(rng) % (unsigned)n);
		char csa[CSA_MOVE_MAX];
		csa_move_write(pos, moves[k], csa);
		pos_do_move(pos, moves[k]);
		eval += (int)(rng_next(rng) % 61) - 30;
		fprintf(f, "%s\nT%d\n'** %d", csa, (int)(rng_next(rng) % 20), eval);
		/* a short PV in CSA notation */
		int m2 = movegen_legal(pos, moves);
		if (m2 > 0) {
			csa_move_write(pos, moves[rng_next(rng) % (unsigned)m2], csa);
			fprintf(f, " %s", csa);
		}
		fputc('\n', f);
		if (pos_repetition(pos) != REP_NONE) {
			played++;
			break;
		}
	}
	fprintf(f, "%%TORYO\n'summary:toryo:gen_black %s:gen_white %s\n",
	        played % 2 ? "win" : "lose", played % 2 ? "lose" : "win");
}

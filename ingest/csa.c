/*
 * ingest/csa.c — the CSA game-record reader (kifu_priv.h; the format and
 * what is accepted: docs/csa.md).
 *
 * The input is split into lines (LF, CR LF or CR), each line into
 * statements at commas (a comment swallows the rest of its line, commas
 * included). Every statement is dispatched on its first byte. Nothing here
 * interprets names or comments as text: they are copied as bytes.
 */
#include "ingest/kifu_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CSA piece names by PieceType; kept here so the reader needs no position code. */
static const char PIECE_NAMES[PT_NB][3] = {"",   "FU", "KY", "KE", "GI", "KA", "HI", "KI",
                                           "OU", "TO", "NY", "NK", "NG", "UM", "RY"};

static PieceType piece_parse2(const unsigned char *s)
{
	for (int pt = PAWN; pt < PT_NB; pt++)
		if (s[0] == (unsigned char)PIECE_NAMES[pt][0] &&
		    s[1] == (unsigned char)PIECE_NAMES[pt][1])
			return (PieceType)pt;
	return PT_NONE;
}

/* Number of each unpromoted piece type in a full set (both sides). */
static const int FULL_SET[HAND_PT_NB + 1] = {0, 18, 4, 4, 4, 2, 2, 4, 2};

/* ---- the record being built ------------------------------------------ */

typedef struct {
	KifuReader *r;
	KifuRecord *rec;
	int line;
	bool any;                /* a statement (not a comment) was seen */
	bool has_side;           /* the side-to-move line was seen */
	bool pi;                 /* PI was used */
	bool board_rows;         /* P1..P9 were used */
	bool al_done;            /* 00AL was used: nothing may be placed after it */
	int box[HAND_PT_NB + 1]; /* pieces still in the box, by unpromoted type */
	size_t cap_moves;
	size_t cap_text;
	bool last_is_end; /* the last statement was the % ending (for its T) */
} Builder;

static int set_str(char **dst, const unsigned char *s, size_t n)
{
	return kifu_set_str(dst, s, n);
}

static int text_add(Builder *b, const unsigned char *s, size_t n, uint32_t *off)
{
	KifuRecord *rec = b->rec;
	if (rec->text_len + n + 1 > b->cap_text) {
		size_t cap = b->cap_text ? b->cap_text : 1024;
		while (cap < rec->text_len + n + 1) cap *= 2;
		char *t = realloc(rec->text, cap);
		if (!t) return KIFU_ENOMEM;
		rec->text = t;
		b->cap_text = cap;
	}
	*off = (uint32_t)rec->text_len;
	memcpy(rec->text + rec->text_len, s, n);
	rec->text_len += n;
	rec->text[rec->text_len++] = 0;
	return 0;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Parses an optionally signed decimal integer at s[0..n); returns false if none.
 * *used receives the bytes consumed; the value is clamped to int32. */
static bool parse_int(const unsigned char *s, size_t n, int32_t *v, size_t *used)
{
	size_t i = 0;
	bool neg = false;
	if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
	if (i >= n || !is_digit(s[i])) return false;
	int64_t x = 0;
	while (i < n && is_digit(s[i])) {
		if (x < 10000000000LL) x = x * 10 + (s[i] - '0');
		i++;
	}
	if (neg) x = -x;
	if (x > INT32_MAX) x = INT32_MAX;
	if (x < INT32_MIN) x = INT32_MIN;
	*v = (int32_t)x;
	*used = i;
	return true;
}

static bool starts(const unsigned char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

/* Floodgate's informative comments; anything else is skipped. */
static int on_comment(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	s++, n--; /* the apostrophe */
	if (starts(s, n, "**")) {
		/* An evaluation belongs to the move it follows, once. */
		if (!rec->nmoves || b->last_is_end || rec->end) return 0;
		KifuMove *m = &rec->moves[rec->nmoves - 1];
		if (m->has_eval) return 0;
		size_t i = 2;
		while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
		int32_t v;
		size_t used;
		if (!parse_int(s + i, n - i, &v, &used)) return 0;
		i += used;
		if (i < n && s[i] != ' ' && s[i] != '\t') return 0; /* "12abc" is no score */
		while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
		size_t e = n;
		while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
		m->has_eval = true;
		m->eval = v;
		m->pv_len = (uint32_t)(e - i);
		if (m->pv_len) {
			int rc = text_add(b, s + i, e - i, &m->pv_off);
			if (rc) return rc;
		}
		m->book = v == 0 && m->pv_len == 0;
		return 0;
	}
	if (starts(s, n, "black_rate:") || starts(s, n, "white_rate:")) {
		Color c = s[0] == 'b' ? BLACK : WHITE;
		size_t k = n;
		while (k > 0 && s[k - 1] != ':') k--;
		char num[40];
		size_t len = n - k < sizeof num - 1 ? n - k : sizeof num - 1;
		memcpy(num, s + k, len);
		num[len] = 0;
		char *end;
		double v = strtod(num, &end);
		if (end != num && (*end == 0 || *end == ' ')) {
			rec->has_rate[c] = true;
			rec->rate[c] = v;
		}
		return 0;
	}
	if (starts(s, n, "summary:")) return set_str(&rec->summary, s + 8, n - 8);
	if (starts(s, n, "Max_Moves:")) {
		int32_t v;
		size_t used;
		if (parse_int(s + 10, n - 10, &v, &used) && v > 0) rec->max_moves = v;
		return 0;
	}
	return 0;
}

/*
 * Takes a piece out of the box. Extra board pieces are tolerated (problem
 * positions and rules tests use them; pos_set judges what can occur), but a
 * hand never holds more of a kind than the full set: the packed Hand could
 * not represent it.
 */
static int take_from_box(Builder *b, PieceType pt, bool to_hand, const unsigned char *tok,
                         size_t toklen)
{
	PieceType base = pt_unpromote(pt);
	if (b->box[base] > 0) {
		b->box[base]--;
		return 0;
	}
	if (to_hand && hand_count(b->rec->hand[0], base) + hand_count(b->rec->hand[1], base) >=
	                   FULL_SET[base]) {
		char q[40];
		errmsg_escape(q, sizeof q, tok, toklen);
		return kifu_fail(b->r, b->line, "too many %s pieces in hand at '%s'",
		                 PIECE_NAMES[base], q);
	}
	return 0;
}

static int place(Builder *b, Color c, Square sq, PieceType pt, const unsigned char *tok,
                 size_t toklen)
{
	KifuRecord *rec = b->rec;
	char q[40];
	if (b->al_done) return kifu_fail(b->r, b->line, "piece placed after 00AL");
	if (rec->board[sq] != PIECE_NONE) {
		errmsg_escape(q, sizeof q, tok, toklen);
		return kifu_fail(b->r, b->line, "square of '%s' is already occupied", q);
	}
	int rc = take_from_box(b, pt, false, tok, toklen);
	if (rc) return rc;
	rec->board[sq] = piece_make(c, pt);
	return 0;
}

/* "PI[<sq><piece>]*": the even-game position, minus the handicap pieces. */
static int on_pi(Builder *b, const unsigned char *s, size_t n)
{
	static const char *const START[9] = {"-KY-KE-GI-KI-OU-KI-GI-KE-KY",
	                                     " * -HI *  *  *  *  * -KA * ",
	                                     "-FU-FU-FU-FU-FU-FU-FU-FU-FU",
	                                     "",
	                                     "",
	                                     "",
	                                     "+FU+FU+FU+FU+FU+FU+FU+FU+FU",
	                                     " * +KA *  *  *  *  * +HI * ",
	                                     "+KY+KE+GI+KI+OU+KI+GI+KE+KY"};
	KifuRecord *rec = b->rec;
	if (b->pi || b->board_rows)
		return kifu_fail(b->r, b->line, "PI after another start position");
	b->pi = true;
	rec->has_position = true;
	for (int rank = 0; rank < 9; rank++) {
		const unsigned char *row = (const unsigned char *)START[rank];
		for (int i = 0; i < 9 && row[0]; i++) {
			const unsigned char *cell = row + 3 * i;
			if (cell[0] != '+' && cell[0] != '-') continue;
			int rc = place(b, cell[0] == '+' ? BLACK : WHITE, sq_make(8 - i, rank),
			               piece_parse2(cell + 1), cell, 3);
			if (rc) return rc;
		}
	}
	if ((n - 2) % 4) {
		char q[40];
		errmsg_escape(q, sizeof q, s, n);
		return kifu_fail(b->r, b->line, "malformed handicap line '%s'", q);
	}
	for (size_t i = 2; i < n; i += 4) {
		const unsigned char *t = s + i;
		PieceType pt = piece_parse2(t + 2);
		char q[40];
		errmsg_escape(q, sizeof q, t, 4);
		if (!is_digit(t[0]) || !is_digit(t[1]) || t[0] == '0' || t[1] == '0' ||
		    pt == PT_NONE)
			return kifu_fail(b->r, b->line, "malformed handicap '%s'", q);
		Square sq = sq_make(t[0] - '1', t[1] - '1');
		if (rec->board[sq] == PIECE_NONE || piece_type(rec->board[sq]) != pt)
			return kifu_fail(b->r, b->line,
			                 "handicap '%s' names no piece of the start position", q);
		rec->board[sq] = PIECE_NONE;
		b->box[pt_unpromote(pt)]++;
	}
	return 0;
}

/* "P<rank>" + nine cells of three bytes; a cell not starting with + or - is empty. */
static int on_row(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	if (b->pi) return kifu_fail(b->r, b->line, "board line after PI");
	b->board_rows = true;
	rec->has_position = true;
	int rank = s[1] - '1';
	for (int i = 0; i < 9; i++) {
		size_t o = 2 + 3 * (size_t)i;
		if (o >= n || (s[o] != '+' && s[o] != '-')) continue;
		if (o + 3 > n)
			return kifu_fail(b->r, b->line, "truncated square on board line P%c", s[1]);
		PieceType pt = piece_parse2(s + o + 1);
		if (pt == PT_NONE) {
			char q[40];
			errmsg_escape(q, sizeof q, s + o, 3);
			return kifu_fail(b->r, b->line, "unknown piece '%s' on board line P%c", q,
			                 s[1]);
		}
		int rc = place(b, s[o] == '+' ? BLACK : WHITE, sq_make(8 - i, rank), pt, s + o, 3);
		if (rc) return rc;
	}
	if (n > 2 + 27) {
		for (size_t o = 29; o < n; o++)
			if (s[o] != ' ' && s[o] != '\t')
				return kifu_fail(b->r, b->line,
				                 "board line P%c is longer than nine squares",
				                 s[1]);
	}
	return 0;
}

/* "P+<sq><piece>..." / "P-...": single pieces; square 00 is the hand, 00AL the rest. */
static int on_pieces(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	Color c = s[1] == '+' ? BLACK : WHITE;
	rec->has_position = true;
	if ((n - 2) % 4) {
		char q[40];
		errmsg_escape(q, sizeof q, s, n);
		return kifu_fail(b->r, b->line, "malformed piece line '%s'", q);
	}
	for (size_t i = 2; i < n; i += 4) {
		const unsigned char *t = s + i;
		char q[40];
		errmsg_escape(q, sizeof q, t, 4);
		if (!is_digit(t[0]) || !is_digit(t[1]))
			return kifu_fail(b->r, b->line, "malformed square in '%s'", q);
		bool hand = t[0] == '0' && t[1] == '0';
		if (hand && t[2] == 'A' && t[3] == 'L') {
			if (b->al_done) return kifu_fail(b->r, b->line, "00AL given twice");
			for (int pt = PAWN; pt <= GOLD; pt++)
				for (; b->box[pt] > 0; b->box[pt]--)
					rec->hand[c] = hand_add(rec->hand[c], (PieceType)pt);
			b->al_done = true;
			continue;
		}
		PieceType pt = piece_parse2(t + 2);
		if (pt == PT_NONE) return kifu_fail(b->r, b->line, "unknown piece in '%s'", q);
		if (hand) {
			if (pt > GOLD) return kifu_fail(b->r, b->line, "'%s' cannot be in hand", q);
			if (b->al_done) return kifu_fail(b->r, b->line, "piece placed after 00AL");
			int rc = take_from_box(b, pt, true, t, 4);
			if (rc) return rc;
			rec->hand[c] = hand_add(rec->hand[c], pt);
			continue;
		}
		if (t[0] == '0' || t[1] == '0')
			return kifu_fail(b->r, b->line, "malformed square in '%s'", q);
		int rc = place(b, c, sq_make(t[0] - '1', t[1] - '1'), pt, t, 4);
		if (rc) return rc;
	}
	return 0;
}

/* on_move's: the record ends before this line (KifuRecord.cut). */
#define CSA_CUT 1

static int on_move(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	char q[40];
	errmsg_escape(q, sizeof q, s, n);
	if (rec->end)
		return kifu_fail(b->r, b->line, "move '%s' after the end of the game (%%%s)", q,
		                 rec->special);
	bool ok = n == 7 && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) && is_digit(s[4]) &&
	          s[3] != '0' && s[4] != '0' && ((s[1] == '0') == (s[2] == '0')) &&
	          piece_parse2(s + 5) != PT_NONE;
	if (!ok && rec->nmoves) {
		/* A record damaged or cut short there (a download broken off in a
		 * line): the moves before it are kept, as a KIF's before an
		 * illegal move, and the game has no result. */
		if (kifu_set_cut(rec, b->line, "malformed move '%s'", q)) return KIFU_ENOMEM;
		return CSA_CUT;
	}
	if (!ok) return kifu_fail(b->r, b->line, "malformed move '%s'", q);
	if (!b->has_side) {
		/* No side-to-move line: the first move tells. */
		rec->side = s[0] == '+' ? BLACK : WHITE;
		b->has_side = true;
	}
	/* Past what a game can be replayed to, a move is read, not kept (the
	 * replay says the game is too long at the first one kept past it). */
	if (rec->nmoves >= KIFU_MOVES_MAX) return 0;
	KifuMove *m = kifu_add_move(rec, &b->cap_moves);
	if (!m) return KIFU_ENOMEM;
	memcpy(m->token, s, 7);
	m->line = b->line;
	return 0;
}

/* "T<seconds>[.<fraction>]" */
static int on_time(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	size_t i = 1;
	int64_t ms = 0;
	if (i >= n || !is_digit(s[i])) goto bad;
	for (; i < n && is_digit(s[i]); i++)
		if (ms < 1000000000) ms = ms * 10 + (s[i] - '0');
	ms *= 1000;
	if (i < n && s[i] == '.') {
		int scale = 100;
		for (i++; i < n && is_digit(s[i]); i++, scale /= 10) ms += (s[i] - '0') * scale;
	}
	if (i != n) goto bad;
	if (ms > INT32_MAX) ms = INT32_MAX;
	if (b->last_is_end)
		rec->end_time_ms = (int)ms;
	else if (rec->nmoves && !rec->end)
		rec->moves[rec->nmoves - 1].time_ms = (int)ms;
	return 0;
bad : {
	char q[40];
	errmsg_escape(q, sizeof q, s, n);
	return kifu_fail(b->r, b->line, "malformed time '%s'", q);
}
}

static int on_special(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	if (rec->end) return 0; /* some producers repeat the ending; the first one counts */
	size_t k = n - 1 < sizeof rec->special - 1 ? n - 1 : sizeof rec->special - 1;
	GameClaim e = game_claim_parse((const char *)s + 1, n - 1);
	if (e == GAME_CLAIM_OTHER) {
		for (size_t i = 1; i < n; i++)
			if (s[i] <= 0x20 || s[i] >= 0x7f) {
				char q[40];
				errmsg_escape(q, sizeof q, s, n);
				return kifu_fail(b->r, b->line, "malformed special move '%s'", q);
			}
	}
	memcpy(rec->special, s + 1, k);
	rec->special[k] = 0;
	rec->end = e;
	rec->end_line = b->line;
	rec->end_time_ms = -1;
	b->last_is_end = true;
	return 0;
}

static int on_statement(Builder *b, const unsigned char *s, size_t n)
{
	KifuRecord *rec = b->rec;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
	if (!n) return 0;
	char q[40];
	errmsg_escape(q, sizeof q, s, n);
	bool was_end = b->last_is_end;
	b->last_is_end = false;
	if (!b->any) rec->first_line = b->line;
	b->any = true;
	switch (s[0]) {
	case 'V':
		if (rec->has_position || rec->nmoves)
			return kifu_fail(b->r, b->line,
			                 "version line '%s' inside a record (missing '/')", q);
		return set_str(&rec->version, s, n);
	case 'N':
		if (n < 2 || (s[1] != '+' && s[1] != '-')) break;
		{
			size_t o = 2 + (n > 2 && s[2] == ':');
			return set_str(&rec->name[s[1] == '+' ? BLACK : WHITE], s + o, n - o);
		}
	case '$':
		if (starts(s, n, "$EVENT:")) return set_str(&rec->event, s + 7, n - 7);
		if (starts(s, n, "$START_TIME:")) return set_str(&rec->start_time, s + 12, n - 12);
		if (starts(s, n, "$TIME_LIMIT:")) return set_str(&rec->time_limit, s + 12, n - 12);
		if (starts(s, n, "$TIME:")) return set_str(&rec->time_limit, s + 6, n - 6);
		if (starts(s, n, "$MAX_MOVES:")) { /* V3.0 */
			int32_t v;
			size_t used;
			if (parse_int(s + 11, n - 11, &v, &used) && v > 0) rec->max_moves = v;
			return 0;
		}
		for (size_t i = 1; i < n; i++)
			if (s[i] == ':') return 0; /* other game information is not needed */
		break;
	case 'P':
		if (n < 2) break;
		if (b->has_side || rec->nmoves)
			return kifu_fail(b->r, b->line, "position line '%s' after the side to move",
			                 q);
		if (s[1] == 'I') return on_pi(b, s, n);
		if (s[1] >= '1' && s[1] <= '9') return on_row(b, s, n);
		if (s[1] == '+' || s[1] == '-') return on_pieces(b, s, n);
		break;
	case '+':
	case '-':
		if (n == 1) {
			if (b->has_side || rec->nmoves)
				return kifu_fail(b->r, b->line, "second side-to-move line '%s'", q);
			rec->side = s[0] == '+' ? BLACK : WHITE;
			b->has_side = true;
			return 0;
		}
		return on_move(b, s, n);
	case 'T':
		b->last_is_end = was_end;
		return on_time(b, s, n);
	case '%':
		return on_special(b, s, n);
	case '#':
		return 0; /* server messages copied into some records ("#RESIGN") */
	default:
		break;
	}
	return kifu_fail(b->r, b->line, "unknown statement '%s'", q);
}

static int on_line(Builder *b, const unsigned char *s, size_t n)
{
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
	size_t i = 0;
	while (i < n) {
		if (s[i] == '\'') return on_comment(b, s + i, n - i);
		size_t j = i;
		while (j < n && s[j] != ',') j++;
		int rc = on_statement(b, s + i, j - i);
		if (rc) return rc;
		i = j + 1;
	}
	return 0;
}

/* Skips to just after the next "/" line (or the end), after a bad record. */
static void skip_record(KifuReader *r)
{
	const unsigned char *s;
	size_t n;
	while (kifu_next_line(r, &s, &n)) {
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
		if (n == 1 && s[0] == '/') return;
	}
}

int csa_next(KifuReader *r, KifuRecord **out)
{
	for (;;) {
		if (r->off >= r->len) return 0;
		Builder b = {.r = r};
		b.rec = kifu_record_new(KIFU_CSA);
		if (!b.rec) return KIFU_ENOMEM;
		memcpy(b.box, FULL_SET, sizeof b.box);
		const unsigned char *s;
		size_t n;
		bool sep = false;
		int rc = 0;
		while (kifu_next_line(r, &s, &n)) {
			b.line = r->line;
			size_t t = n;
			while (t && (s[t - 1] == ' ' || s[t - 1] == '\t')) t--;
			if (t == 1 && s[0] == '/') {
				sep = true;
				break;
			}
			rc = on_line(&b, s, n);
			if (rc) break;
		}
		if (rc == CSA_CUT) {
			skip_record(r); /* the rest of the record is not read */
			rc = 0;
		}
		if (rc) {
			kifu_record_free(b.rec);
			if (rc == KIFU_EPARSE && !sep) skip_record(r);
			return rc;
		}
		if (!b.any) {
			/* Only comments (or nothing) before the separator: not a record. */
			kifu_record_free(b.rec);
			continue;
		}
		if (!b.rec->has_position) {
			/* No position given at all: records written that way mean the
			 * even game (the spec's "empty board" would make every move illegal). */
			Builder tmp = b;
			tmp.line = b.rec->first_line;
			rc = on_pi(&tmp, (const unsigned char *)"PI", 2);
			if (rc) {
				kifu_record_free(b.rec);
				return rc;
			}
		}
		*out = b.rec;
		return 1;
	}
}

/* shogi/notation.c — SFEN, USI and CSA notation, and USI position specs. */
#include "shogi/notation.h"
#include "shogi/errmsg.h"
#include "shogi/spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/movegen.h"

const char *const CSA_PIECE_NAMES[PT_NB] = {NULL, "FU", "KY", "KE", "GI", "KA", "HI", "KI",
                                            "OU", "TO", "NY", "NK", "NG", "UM", "RY"};
/* SFEN letters by piece type (Black's; White's are lower case). */
static const char SFEN_LETTERS[PT_NB] = {0,   'P', 'L', 'N', 'S', 'B', 'R', 'G',
                                         'K', 'P', 'L', 'N', 'S', 'B', 'R'};
/* Canonical hand order: R B G S N L P. */
static const PieceType HAND_ORDER[7] = {ROOK, BISHOP, GOLD, SILVER, KNIGHT, LANCE, PAWN};

static void errf(char *err, const char *fmt, const char *tok, size_t toklen)
{
	if (!err) return;
	char t[48];
	errmsg_set(err, SHOGI_ERRLEN, 0, fmt, errmsg_escape(t, sizeof t, tok, toklen));
}

/* A board's ranks counted wrong: which rank (1..9 from the top, a..i) and
 * how. squares < 0: more than 9. */
static void rank_err(char *err, const char *s, size_t bl, int rank, int squares)
{
	if (!err) return;
	char t[48];
	errmsg_escape(t, sizeof t, s, bl);
	if (rank > 8)
		errmsg_set(err, SHOGI_ERRLEN, 0, "bad SFEN board '%s': more than 9 ranks", t);
	else if (squares < 0)
		errmsg_set(
		    err, SHOGI_ERRLEN, 0,
		    "bad SFEN board '%s': rank %d (%c, from the top) has more than 9 squares", t,
		    rank + 1, 'a' + rank);
	else
		errmsg_set(err, SHOGI_ERRLEN, 0,
		           "bad SFEN board '%s': rank %d (%c, from the top) has %d square%s, not 9",
		           t, rank + 1, 'a' + rank, squares, squares == 1 ? "" : "s");
}

static PieceType letter_type(char ch)
{
	/* ASCII by hand: toupper goes through the locale, per board square. */
	switch (ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch) {
	case 'P':
		return PAWN;
	case 'L':
		return LANCE;
	case 'N':
		return KNIGHT;
	case 'S':
		return SILVER;
	case 'B':
		return BISHOP;
	case 'R':
		return ROOK;
	case 'G':
		return GOLD;
	case 'K':
		return KING;
	default:
		return PT_NONE;
	}
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
	return s;
}

static size_t tok_len(const char *s)
{
	size_t n = 0;
	while (s[n] && s[n] != ' ' && s[n] != '\t' && s[n] != '\r' && s[n] != '\n') n++;
	return n;
}

int sfen_parse(Position *out, const char *sfen, const char **rest, char *err)
{
	const char *s = skip_ws(sfen);
	if (!strncmp(s, "sfen ", 5)) s = skip_ws(s + 5);
	size_t bl = tok_len(s);
	if (bl == 0) {
		errf(err, "empty SFEN%s", "", 0);
		return SHOGI_EPARSE;
	}
	Piece board[SQ_NB] = {0};
	int rank = 0, file = 8; /* SFEN goes rank a..i, file 9..1 */
	bool promoted = false;
	for (size_t i = 0; i < bl; i++) {
		char ch = s[i];
		if (ch == '/') {
			if (promoted) {
				errf(err, "bad SFEN board '%s': '+' before '/' (a piece after it)",
				     s, bl);
				return SHOGI_EPARSE;
			}
			if (file != -1 || rank >= 8) {
				rank_err(err, s, bl, rank >= 8 ? 9 : rank, 8 - file);
				return SHOGI_EPARSE;
			}
			rank++;
			file = 8;
		} else if (ch >= '1' && ch <= '9') {
			if (promoted) {
				errf(err,
				     "bad SFEN board '%s': '+' before a digit (a piece after it)",
				     s, bl);
				return SHOGI_EPARSE;
			}
			if (file - (ch - '0') < -1) {
				rank_err(err, s, bl, rank, -1);
				return SHOGI_EPARSE;
			}
			file -= ch - '0';
		} else if (ch == '+') {
			if (promoted) {
				errf(err, "bad SFEN board '%s': '++'", s, bl);
				return SHOGI_EPARSE;
			}
			promoted = true;
		} else {
			PieceType pt = letter_type(ch);
			if (pt == PT_NONE) {
				char t[2] = {ch, 0};
				errf(err, "bad SFEN board: unknown piece letter '%s'", t, 1);
				return SHOGI_EPARSE;
			}
			if (file < 0) {
				rank_err(err, s, bl, rank, -1);
				return SHOGI_EPARSE;
			}
			if (promoted) {
				if (!pt_can_promote(pt)) {
					char t[3] = {'+', ch, 0};
					errf(err, "bad SFEN board: '%s' cannot be promoted", t, 2);
					return SHOGI_EPARSE;
				}
				pt = (PieceType)(pt + PROMOTE);
				promoted = false;
			}
			Color c = ch >= 'A' && ch <= 'Z' ? BLACK : WHITE;
			board[sq_make(file, rank)] = piece_make(c, pt);
			file--;
		}
	}
	if (promoted) {
		errf(err, "bad SFEN board '%s': '+' at its end (a piece after it)", s, bl);
		return SHOGI_EPARSE;
	}
	if (file != -1) {
		rank_err(err, s, bl, rank, 8 - file);
		return SHOGI_EPARSE;
	}
	if (rank != 8) {
		char t[48];
		if (err)
			errmsg_set(err, SHOGI_ERRLEN, 0, "bad SFEN board '%s': %d ranks, not 9",
			           errmsg_escape(t, sizeof t, s, bl), rank + 1);
		return SHOGI_EPARSE;
	}
	s = skip_ws(s + bl);
	size_t sl = tok_len(s);
	Color side;
	if (sl == 1 && (s[0] == 'b' || s[0] == 'w')) {
		side = s[0] == 'b' ? BLACK : WHITE;
	} else {
		errf(err, "bad SFEN side to move '%s' (expected b or w)", s, sl);
		return SHOGI_EPARSE;
	}
	s = skip_ws(s + sl);
	size_t hl = tok_len(s);
	Hand hand[2] = {0, 0};
	if (hl == 0) {
		errf(err, "SFEN has no hand field%s", "", 0);
		return SHOGI_EPARSE;
	}
	if (!(hl == 1 && s[0] == '-')) {
		int count = 0;
		bool have_count = false;
		for (size_t i = 0; i < hl; i++) {
			char ch = s[i];
			if (ch >= '0' && ch <= '9') {
				count = count * 10 + (ch - '0');
				have_count = true;
				if (count > HAND_MAX[PAWN]) { /* no type can have more */
					errf(err, "bad SFEN hand '%s': count too large", s, hl);
					return SHOGI_EPARSE;
				}
				continue;
			}
			PieceType pt = letter_type(ch);
			if (pt == PT_NONE || pt == KING || (have_count && count == 0)) {
				errf(err, "bad SFEN hand '%s'", s, hl);
				return SHOGI_EPARSE;
			}
			int n = have_count ? count : 1;
			Color c = isupper((unsigned char)ch) ? BLACK : WHITE;
			int maxn = HAND_MAX[pt];
			if (hand_count(hand[c], pt) + n > maxn) {
				errf(err, "bad SFEN hand '%s': too many pieces", s, hl);
				return SHOGI_EPARSE;
			}
			for (int k = 0; k < n; k++) hand[c] = hand_add(hand[c], pt);
			count = 0;
			have_count = false;
		}
		if (have_count) {
			errf(err, "bad SFEN hand '%s': count without a piece", s, hl);
			return SHOGI_EPARSE;
		}
	}
	s = skip_ws(s + hl);
	int ply = 1;
	size_t pl = tok_len(s);
	if (pl > 0 && isdigit((unsigned char)s[0])) {
		long v = 0;
		for (size_t i = 0; i < pl; i++) {
			if (!isdigit((unsigned char)s[i]) || v > 100000000) {
				errf(err, "bad SFEN move number '%s'", s, pl);
				return SHOGI_EPARSE;
			}
			v = v * 10 + (s[i] - '0');
		}
		ply = v > 0 ? (int)v : 1;
		s = skip_ws(s + pl);
	}
	if (rest) {
		*rest = s;
	} else if (*s) {
		errf(err, "unexpected text after SFEN: '%s'", s, tok_len(s));
		return SHOGI_EPARSE;
	}
	char why[SHOGI_ERRLEN];
	int rc = pos_set(out, board, hand, side, ply, why);
	if (rc < 0) {
		return errmsg_set(err, SHOGI_ERRLEN, rc, "impossible SFEN position: %.120s", why);
	}
	return SHOGI_OK;
}

/* v (>= 0) in decimal at p; returns the digits written. */
static size_t put_uint(char *p, unsigned v)
{
	char d[12];
	size_t k = 0;
	do d[k++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (size_t i = 0; i < k; i++) p[i] = d[k - 1 - i];
	return k;
}

/* A piece letter of the side c: SFEN_LETTERS' upper case for black, lower
 * for white (ASCII letters: the case bit). */
static inline char side_letter(PieceType pt, Color c)
{
	char ch = SFEN_LETTERS[pt];
	return c == BLACK ? ch : (char)(ch | 0x20);
}

size_t sfen_write_ply(const Position *pos, int ply, char *out, size_t len)
{
	char buf[SFEN_MAX];
	size_t n = 0;
	/* A rank's occupied squares as bits first (file 9 first, as written),
	 * then the pieces alone: a branch on every square mispredicts often,
	 * and whole-book exports write every position's line. */
	for (int rank = 0; rank < 9; rank++) {
		Piece row[9];
		unsigned occ = 0;
		for (int i = 0; i < 9; i++) {
			row[i] = pos->board[sq_make(8 - i, rank)];
			occ |= (unsigned)(row[i] != 0) << i;
		}
		int at = 0; /* the next square of the rank to write */
		for (; occ; occ &= occ - 1) {
			int i = __builtin_ctz(occ);
			if (i > at) buf[n++] = (char)('0' + i - at);
			PieceType pt = piece_type(row[i]);
			buf[n] = '+';
			n += pt > KING;
			buf[n++] = side_letter(pt, piece_color(row[i]));
			at = i + 1;
		}
		if (at < 9) buf[n++] = (char)('0' + 9 - at);
		buf[n++] = '/';
	}
	n--; /* the last rank has no '/' */
	buf[n++] = ' ';
	buf[n++] = pos->side == BLACK ? 'b' : 'w';
	buf[n++] = ' ';
	size_t hstart = n;
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < 7; i++) {
			PieceType pt = HAND_ORDER[i];
			int k = hand_count(pos->hand[c], pt);
			if (!k) continue;
			if (k > 1) n += put_uint(buf + n, (unsigned)k);
			buf[n++] = side_letter(pt, (Color)c);
		}
	if (n == hstart) buf[n++] = '-';
	buf[n++] = ' ';
	if (ply < 0) {
		buf[n++] = '-';
		n += put_uint(buf + n, 0u - (unsigned)ply);
	} else {
		n += put_uint(buf + n, (unsigned)ply);
	}
	buf[n] = 0;
	if (len) {
		size_t k = n < len ? n : len - 1; /* as snprintf: cut, ended */
		memcpy(out, buf, k);
		out[k] = 0;
	}
	return n;
}

size_t sfen_write(const Position *pos, char *out, size_t len)
{
	return sfen_write_ply(pos, pos->game_ply, out, len);
}

static int parse_square(const char *s, Square *sq)
{
	if (s[0] < '1' || s[0] > '9' || s[1] < 'a' || s[1] > 'i') return -1;
	*sq = sq_make(s[0] - '1', s[1] - 'a');
	return 0;
}

int usi_move_parse(Move *out, const char *s, size_t len, char *err)
{
	Square from, to;
	if (len == 4 && s[1] == '*') {
		PieceType pt = isupper((unsigned char)s[0]) ? letter_type(s[0]) : PT_NONE;
		if (pt == PT_NONE || pt == KING || parse_square(s + 2, &to) < 0) goto bad;
		*out = move_make_drop(pt, to);
		return SHOGI_OK;
	}
	if (len == 4 || (len == 5 && s[4] == '+')) {
		if (parse_square(s, &from) < 0 || parse_square(s + 2, &to) < 0 || from == to)
			goto bad;
		*out = move_make(from, to, len == 5);
		return SHOGI_OK;
	}
bad:
	errf(err, "malformed USI move '%s'", s, len);
	return SHOGI_EPARSE;
}

size_t usi_move_write(Move m, char out[USI_MOVE_MAX])
{
	/* By hand rather than snprintf: book writers call this for every move. */
	Square to = move_to(m), from = move_from(m);
	bool drop = m != MOVE_NONE && move_is_drop(m);
	if (m == MOVE_NONE || to >= SQ_NB || (!drop && from >= SQ_NB)) {
		memcpy(out, "none", 5);
		return 4;
	}
	char *p = out;
	if (drop) {
		PieceType pt = move_drop_type(m);
		*p++ = pt < PT_NB && SFEN_LETTERS[pt] ? SFEN_LETTERS[pt] : '?';
		*p++ = '*';
	} else {
		*p++ = (char)('1' + sq_file(from));
		*p++ = (char)('a' + sq_rank(from));
	}
	*p++ = (char)('1' + sq_file(to));
	*p++ = (char)('a' + sq_rank(to));
	if (!drop && move_is_promote(m)) *p++ = '+';
	*p = '\0';
	return (size_t)(p - out);
}

int usi_move_parse_legal(Move *out, const Position *pos, const char *s, size_t len, char *err)
{
	Move m;
	int rc = usi_move_parse(&m, s, len, err);
	if (rc < 0) return rc;
	char why[SHOGI_ERRLEN], t[48];
	if (movegen_why_illegal(pos, m, why) < 0)
		return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
		                  "'%s' is not legal in this position: %s",
		                  errmsg_escape(t, sizeof t, s, len), why);
	*out = m;
	return SHOGI_OK;
}

PieceType csa_piece_parse(const char *s)
{
	for (int pt = PAWN; pt < PT_NB; pt++)
		if (s[0] == CSA_PIECE_NAMES[pt][0] && s[1] == CSA_PIECE_NAMES[pt][1])
			return (PieceType)pt;
	return PT_NONE;
}

int csa_move_parse(Move *out, const Position *pos, const char *s, size_t len, char *err)
{
	const char *t = s;
	size_t n = len;
	if (n == 7) {
		if (t[0] != '+' && t[0] != '-') goto bad;
		if ((t[0] == '+') != (pos->side == BLACK)) {
			errf(err, "CSA move '%s' is for the side not to move", s, len);
			return SHOGI_EILLEGAL;
		}
		t++;
		n--;
	}
	if (n != 6) goto bad;
	for (int i = 0; i < 4; i++)
		if (t[i] < '0' || t[i] > '9') goto bad;
	PieceType pt = csa_piece_parse(t + 4);
	if (pt == PT_NONE) goto bad;
	int tf = t[2] - '0', tr = t[3] - '0';
	if (tf < 1 || tr < 1) goto bad;
	Square to = sq_make(tf - 1, tr - 1);
	Move m;
	/* The caller names the move: the messages say why it fails. */
	if (t[0] == '0' && t[1] == '0') {
		if (pt > GOLD)
			return errmsg_set(
			    err, SHOGI_ERRLEN, SHOGI_EILLEGAL, "%s (%s) cannot be dropped",
			    pt == KING ? "a king" : "a promoted piece", CSA_PIECE_NAMES[pt]);
		m = move_make_drop(pt, to);
	} else {
		int ff = t[0] - '0', fr = t[1] - '0';
		if (ff < 1 || fr < 1) goto bad;
		Square from = sq_make(ff - 1, fr - 1);
		Piece p = pos->board[from];
		if (!p || piece_color(p) != pos->side)
			return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL, "no %s piece on %d%d",
			                  pos->side == BLACK ? "Black" : "White", ff, fr);
		PieceType cur = piece_type(p);
		if (cur == pt)
			m = move_make(from, to, false);
		else if (pt_can_promote(cur) && pt == cur + PROMOTE)
			m = move_make(from, to, true);
		else
			return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
			                  "the piece on %d%d is %s, which cannot become %s", ff, fr,
			                  CSA_PIECE_NAMES[cur], CSA_PIECE_NAMES[pt]);
	}
	if (!pos_is_legal(pos, m))
		return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL, "%s",
		                  "not legal in this position");
	*out = m;
	return SHOGI_OK;
bad:
	errf(err, "malformed CSA move '%s'", s, len);
	return SHOGI_EPARSE;
}

size_t csa_move_write(const Position *pos, Move m, char out[CSA_MOVE_MAX])
{
	char sign = pos->side == BLACK ? '+' : '-';
	Square to = move_to(m);
	if (move_is_drop(m))
		return (size_t)snprintf(out, CSA_MOVE_MAX, "%c00%d%d%s", sign, sq_file(to) + 1,
		                        sq_rank(to) + 1, CSA_PIECE_NAMES[move_drop_type(m)]);
	Square from = move_from(m);
	PieceType pt = piece_type(pos->board[from]);
	if (move_is_promote(m)) pt = (PieceType)(pt + PROMOTE);
	if (pt == PT_NONE || pt >= PT_NB) return (size_t)snprintf(out, CSA_MOVE_MAX, "?");
	return (size_t)snprintf(out, CSA_MOVE_MAX, "%c%d%d%d%d%s", sign, sq_file(from) + 1,
	                        sq_rank(from) + 1, sq_file(to) + 1, sq_rank(to) + 1,
	                        CSA_PIECE_NAMES[pt]);
}

/* True when s starts with the word w (followed by a blank or the end). */
static bool word_at(const char *s, const char *w)
{
	size_t n = strlen(w);
	return !strncmp(s, w, n) && (s[n] == 0 || isspace((unsigned char)s[n]));
}

size_t position_line_len(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
			n = i;
			break;
		}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	return n;
}

int position_parse(Position *out, const char *spec, char *err)
{
	const char *s = skip_ws(spec);
	if (word_at(s, "position")) s = skip_ws(s + 8);
	const char *rest;
	Move first;
	if (word_at(s, "startpos")) {
		pos_set_startpos(out);
		rest = skip_ws(s + 8);
	} else if (word_at(s, "moves") ||
	           (*s && usi_move_parse(&first, s, tok_len(s), NULL) == SHOGI_OK)) {
		/* A bare move list ("7g7f 3c3d", or "moves 7g7f ..."): from the
		 * start position, as a USI game line (no SFEN board is a move). */
		pos_set_startpos(out);
		s = word_at(s, "moves") ? skip_ws(s + 5) : s;
		goto moves;
	} else {
		int rc = sfen_parse(out, s, &rest, err);
		if (rc < 0) return rc;
	}
	if (!*rest) return SHOGI_OK;
	if (!word_at(rest, "moves")) {
		errf(err, "unexpected '%s' after the position (expected 'moves')", rest,
		     tok_len(rest));
		return SHOGI_EPARSE;
	}
	s = skip_ws(rest + 5);
moves:;
	int index = 0;
	while (*s) {
		size_t l = tok_len(s);
		index++;
		Move m;
		char why[SHOGI_ERRLEN];
		int rc = usi_move_parse(&m, s, l, why);
		if (rc == 0 && !pos_is_legal(out, m)) {
			rc = SHOGI_EILLEGAL;
			if (movegen_why_illegal(out, m, why) == 0) snprintf(why, sizeof why, "?");
		}
		if (rc < 0) {
			char tok[24];
			if (rc == SHOGI_EPARSE)
				return errmsg_set(err, SHOGI_ERRLEN, rc,
				                  "malformed move %d '%s' in position spec", index,
				                  errmsg_escape(tok, sizeof tok, s, l));
			return errmsg_set(err, SHOGI_ERRLEN, rc,
			                  "illegal move %d '%s' in position spec (%.200s)", index,
			                  errmsg_escape(tok, sizeof tok, s, l), why);
		}
		if (pos_history_len(out) >= POS_MAX_STATES - 1) {
			return errmsg_set(err, SHOGI_ERRLEN, SHOGI_ETOOLONG,
			                  "too many moves (at most %d)", POS_MAX_STATES - 1);
		}
		pos_do_move(out, m);
		s = skip_ws(s + l);
	}
	return SHOGI_OK;
}

char *position_spec_write(Position *pos)
{
	size_t cap = POSITION_SPEC_MAX(pos_history_len(pos));
	char *s = malloc(cap);
	if (s) position_spec_of_game(s, cap, pos);
	return s;
}

/*
 * shogi/japanese.c — moves in Japanese notation (see japanese.h and
 * docs/shogi.md, "Japanese notation").
 */
#include "shogi/japanese.h"
#include "shogi/errmsg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shogi/movegen.h"

static const char *const NAMES[PT_NB] = {"",   "歩", "香",   "桂",   "銀",   "角", "飛", "金",
                                         "玉", "と", "成香", "成桂", "成銀", "馬", "龍"};
static const char *const FILE_DIGITS[9] = {"１", "２", "３", "４", "５", "６", "７", "８", "９"};
static const char *const RANK_KANJI[9] = {"一", "二", "三", "四", "五", "六", "七", "八", "九"};

/* One-character names a board diagram or a move may use, and their types. */
static const struct {
	const char *s;
	PieceType pt;
} PIECES[] = {
    {"成香", PRO_LANCE}, {"成桂", PRO_KNIGHT}, {"成銀", PRO_SILVER}, {"歩", PAWN},
    {"香", LANCE},       {"桂", KNIGHT},       {"銀", SILVER},       {"金", GOLD},
    {"角", BISHOP},      {"飛", ROOK},         {"玉", KING},         {"王", KING},
    {"と", PRO_PAWN},    {"杏", PRO_LANCE},    {"圭", PRO_KNIGHT},   {"全", PRO_SILVER},
    {"馬", HORSE},       {"龍", DRAGON},       {"竜", DRAGON},
};

const char *ja_piece_name(PieceType pt)
{
	return (unsigned)pt < PT_NB ? NAMES[pt] : "";
}

static bool starts(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	return n >= k && !memcmp(s, w, k);
}

PieceType ja_piece_parse(const char *s, size_t n, size_t *used)
{
	for (size_t i = 0; i < sizeof PIECES / sizeof PIECES[0]; i++)
		if (starts(s, n, PIECES[i].s)) {
			*used = strlen(PIECES[i].s);
			return PIECES[i].pt;
		}
	return PT_NONE;
}

bool ja_space(const char *s, size_t n, size_t *used)
{
	if (n >= 1 && (s[0] == ' ' || s[0] == '\t')) {
		*used = 1;
		return true;
	}
	if (starts(s, n, "　")) {
		*used = 3;
		return true;
	}
	return false;
}

/* An ASCII or full-width digit 0..9 at s: its value, or -1. */
static int arabic_digit(const char *s, size_t n, size_t *used)
{
	if (n >= 1 && s[0] >= '0' && s[0] <= '9') {
		*used = 1;
		return s[0] - '0';
	}
	if (n >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBC &&
	    (unsigned char)s[2] >= 0x90 && (unsigned char)s[2] <= 0x99) {
		*used = 3;
		return (unsigned char)s[2] - 0x90;
	}
	return -1;
}

/* A kanji digit 一..九 at s: its value, or -1. */
static int kanji_digit(const char *s, size_t n, size_t *used)
{
	for (int d = 0; d < 9; d++)
		if (starts(s, n, RANK_KANJI[d])) {
			*used = 3;
			return d + 1;
		}
	return -1;
}

/* A digit 1..9 in any of the three ways (a square's file or rank): its
 * value, or 0. */
static int digit_at(const char *s, size_t n, size_t *used)
{
	int d = arabic_digit(s, n, used);
	if (d < 0) d = kanji_digit(s, n, used);
	return d > 0 ? d : 0;
}

int ja_number_parse(const char *s, size_t n, size_t *used)
{
	size_t u, i = 0;
	int d = arabic_digit(s, n, &u);
	if (d >= 0) {
		int v = 0;
		while (d >= 0 && v < 1000) {
			v = v * 10 + d;
			i += u;
			d = arabic_digit(s + i, n - i, &u);
		}
		*used = i;
		return v;
	}
	int v = 0;
	if (starts(s, n, "十")) {
		v = 10;
		i = 3;
	}
	d = kanji_digit(s + i, n - i, &u);
	if (d > 0) {
		v += d;
		i += u;
	}
	if (!i) return -1;
	*used = i;
	return v;
}

/* ---- the candidates of a move ------------------------------------------- */

enum { MOT_UP = 1, MOT_BACK, MOT_SIDE };
enum { POS_NONE = 0, POS_RIGHT, POS_LEFT, POS_STRAIGHT };

static const char *const MOTION_KANJI[] = {"", "上", "引", "寄"};
static const char *const POSITION_KANJI[] = {"", "右", "左", "直"};

/* The mover's left-right coordinate: smaller is further to the mover's right
 * (Black's right is file 1, White's file 9). */
static int hpos(Color c, Square sq)
{
	return c == BLACK ? sq_file(sq) : 8 - sq_file(sq);
}

static int motion(Color c, Square from, Square to)
{
	int rf = rank_rel(c, sq_rank(from)), rt = rank_rel(c, sq_rank(to));
	return rt < rf ? MOT_UP : rt > rf ? MOT_BACK : MOT_SIDE;
}

/* The board pieces of the mover's named type pt that can move to `to`
 * (distinct squares), from the legal moves. */
static int candidates(const Position *pos, const Move *legal, int nlegal, PieceType pt, Square to,
                      Square out[SQ_NB])
{
	int n = 0;
	for (int i = 0; i < nlegal; i++) {
		Move m = legal[i];
		if (move_is_drop(m) || move_to(m) != to) continue;
		Square f = move_from(m);
		if (piece_type(pos->board[f]) != pt) continue;
		bool seen = false;
		for (int k = 0; k < n; k++) seen |= out[k] == f;
		if (!seen) out[n++] = f;
	}
	return n;
}

/* Where the piece on `from` stands among the candidates, as 右/左/直. */
static int position_of(Color c, PieceType pt, Square from, Square to, const Square *cand, int n)
{
	int h = hpos(c, from);
	if (pt == DRAGON || pt == HORSE) {
		/* Right or left of the other one(s), never 直. */
		bool right = true, left = true;
		for (int k = 0; k < n; k++) {
			if (cand[k] == from) continue;
			right &= h < hpos(c, cand[k]);
			left &= h > hpos(c, cand[k]);
		}
		return right ? POS_RIGHT : left ? POS_LEFT : POS_NONE;
	}
	int ht = hpos(c, to);
	if (h == ht)
		return sq_file(from) == sq_file(to) &&
		               rank_rel(c, sq_rank(to)) == rank_rel(c, sq_rank(from)) - 1
		           ? POS_STRAIGHT
		           : POS_NONE;
	return h < ht ? POS_RIGHT : POS_LEFT;
}

/* True when the candidate on `from` is one the modifiers describe (0: none given). */
static bool fits(Color c, PieceType pt, Square from, Square to, const Square *cand, int n,
                 int want_pos, int want_mot)
{
	if (want_mot && motion(c, from, to) != want_mot) return false;
	if (want_pos == POS_STRAIGHT)
		return sq_file(from) == sq_file(to) && motion(c, from, to) == MOT_UP;
	if (want_pos == POS_RIGHT || want_pos == POS_LEFT)
		return position_of(c, pt, from, to, cand, n) == want_pos;
	return true;
}

/* ---- writing ------------------------------------------------------------- */

typedef struct {
	char *p;
	size_t n, cap;
} Out;

static void put(Out *o, const char *s)
{
	size_t k = strlen(s);
	if (o->n + k + 1 > o->cap) k = o->cap - o->n - 1;
	memcpy(o->p + o->n, s, k);
	o->n += k;
	o->p[o->n] = 0;
}

size_t ja_move_write(const Position *pos, Move m, Square prev_to, bool mark, const Move *legal,
                     int nlegal, char out[JA_MOVE_MAX])
{
	Move gen[MOVEGEN_MAX];
	if (!legal) {
		nlegal = movegen_legal(pos, gen);
		legal = gen;
	}
	out[0] = 0;
	bool legal_move = false;
	for (int i = 0; i < nlegal && !legal_move; i++) legal_move = legal[i] == m;
	if (!legal_move) return 0; /* a book's damaged record, say: nothing to name */
	Color c = pos->side;
	Square to = move_to(m);
	char rest[JA_MOVE_MAX];
	Out r = {rest, 0, sizeof rest};
	rest[0] = 0;
	Square cand[SQ_NB], origin = SQ_NONE;
	if (move_is_drop(m)) {
		PieceType pt = move_drop_type(m);
		put(&r, NAMES[pt]);
		if (candidates(pos, legal, nlegal, pt, to, cand) > 0) put(&r, "打");
	} else {
		Square from = move_from(m);
		PieceType pt = piece_type(pos->board[from]);
		put(&r, NAMES[pt]);
		int n = candidates(pos, legal, nlegal, pt, to, cand);
		if (n > 1) {
			int mot = motion(c, from, to), p = position_of(c, pt, from, to, cand, n);
			int same_mot = 0, same_pos = 0;
			for (int k = 0; k < n; k++) {
				same_mot += motion(c, cand[k], to) == mot;
				same_pos += position_of(c, pt, cand[k], to, cand, n) == p;
			}
			int wp = POS_NONE, wm = 0;
			if (same_mot == 1) {
				wm = mot;
			} else if (p != POS_NONE && same_pos == 1) {
				wp = p;
			} else {
				/* Neither alone tells: both (右上), or the motion alone
				 * when the position says nothing (same file). */
				wp = p;
				if (p != POS_STRAIGHT) wm = mot;
			}
			put(&r, POSITION_KANJI[wp]);
			put(&r, MOTION_KANJI[wm]);
			/* Positions no game reaches (three dragons) may leave even
			 * both words ambiguous: the origin then says it, as KIF does. */
			int fit = 0;
			for (int k = 0; k < n; k++)
				fit += fits(c, pt, cand[k], to, cand, n, wp, wm);
			if (fit != 1) origin = from;
		}
		if (move_is_promote(m))
			put(&r, "成");
		else if (pt_can_promote(pt) && (sq_in_zone(c, from) || sq_in_zone(c, to)))
			put(&r, "不成");
	}
	Out o = {out, 0, JA_MOVE_MAX};
	out[0] = 0;
	if (mark) put(&o, c == BLACK ? "▲" : "△");
	if (to == prev_to) {
		put(&o, "同");
		/* "同　歩" but "同歩成", "同成銀" (one character after 同 gets a space) */
		if (r.n == 3) put(&o, "　");
	} else {
		put(&o, FILE_DIGITS[sq_file(to)]);
		put(&o, RANK_KANJI[sq_rank(to)]);
	}
	put(&o, rest);
	if (origin != SQ_NONE) {
		char at[8];
		snprintf(at, sizeof at, "(%d%d)", sq_file(origin) + 1, sq_rank(origin) + 1);
		put(&o, at);
	}
	return o.n;
}

size_t ja_kif_move_write(const Position *pos, Move m, Square prev_to, char out[JA_MOVE_MAX])
{
	out[0] = 0;
	if (!pos_is_legal(pos, m)) return 0;
	Out o = {out, 0, JA_MOVE_MAX};
	Square to = move_to(m);
	if (to == prev_to) {
		put(&o, "同　");
	} else {
		put(&o, FILE_DIGITS[sq_file(to)]);
		put(&o, RANK_KANJI[sq_rank(to)]);
	}
	if (move_is_drop(m)) {
		put(&o, NAMES[move_drop_type(m)]);
		put(&o, "打");
		return o.n;
	}
	Square from = move_from(m);
	PieceType pt = piece_type(pos->board[from]);
	put(&o, NAMES[pt]);
	/* KIF writes 成 alone: the origin tells the rest (ShogiHome's reader
	 * takes no 不成 there). */
	if (move_is_promote(m)) put(&o, "成");
	char at[8];
	snprintf(at, sizeof at, "(%d%d)", sq_file(from) + 1, sq_rank(from) + 1);
	put(&o, at);
	return o.n;
}

size_t ja_board_write(const Position *pos, char *out, size_t cap)
{
	Out o = {out, 0, cap};
	if (cap < 1024) return 0;
	out[0] = 0;
	static const PieceType HAND_ORDER[] = {ROOK, BISHOP, GOLD, SILVER, KNIGHT, LANCE, PAWN};
	for (int side = WHITE;; side = BLACK) {
		put(&o, side == WHITE ? "後手の持駒：" : "先手の持駒：");
		bool any = false;
		for (size_t i = 0; i < sizeof HAND_ORDER / sizeof HAND_ORDER[0]; i++) {
			int n = hand_count(pos->hand[side], (PieceType)HAND_ORDER[i]);
			if (!n) continue;
			put(&o, NAMES[HAND_ORDER[i]]);
			if (n > 1) {
				static const char *const TENS[] = {"", "十"};
				if (n >= 10) put(&o, TENS[1]);
				if (n % 10) put(&o, RANK_KANJI[n % 10 - 1]);
			}
			put(&o, "　");
			any = true;
		}
		if (!any) put(&o, "なし");
		put(&o, "\n");
		if (side == BLACK) break;
		put(&o, "  ９ ８ ７ ６ ５ ４ ３ ２ １\n+---------------------------+\n");
		for (int rank = 0; rank < 9; rank++) {
			put(&o, "|");
			for (int file = 8; file >= 0; file--) {
				Piece p = pos->board[sq_make(file, rank)];
				if (p == PIECE_NONE) {
					put(&o, " ・");
					continue;
				}
				put(&o, piece_color(p) == WHITE ? "v" : " ");
				PieceType pt = piece_type(p);
				/* One character a square: 杏 圭 全 for the promoted minors. */
				static const char *const ONE[PT_NB] = {
				    "",   "歩", "香", "桂", "銀", "角", "飛", "金",
				    "玉", "と", "杏", "圭", "全", "馬", "龍"};
				put(&o, ONE[pt]);
			}
			put(&o, "|");
			put(&o, RANK_KANJI[rank]);
			put(&o, "\n");
		}
		put(&o, "+---------------------------+\n");
	}
	put(&o, pos->side == BLACK ? "先手番\n" : "後手番\n");
	return o.n;
}

/* ---- parsing ------------------------------------------------------------- */

static int errf(char *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int errf(char *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	errmsg_vset(err, SHOGI_ERRLEN, code, fmt, ap);
	va_end(ap);
	return code;
}

static void sq_usi(Square sq, char out[3])
{
	out[0] = (char)('1' + sq_file(sq));
	out[1] = (char)('a' + sq_rank(sq));
	out[2] = 0;
}

static size_t skip_spaces(const char *s, size_t n, size_t i)
{
	size_t u;
	while (i < n && ja_space(s + i, n - i, &u)) i += u;
	return i;
}

int ja_move_parse(Move *out, const Position *pos, Square prev_to, const char *s, size_t len,
                  char *err)
{
	Color c = pos->side;
	const char *side = c == BLACK ? "Black" : "White";
	size_t i = skip_spaces(s, len, 0), u;
	/* the mover's mark */
	static const struct {
		const char *s;
		Color c;
	} MARKS[] = {{"▲", BLACK}, {"☗", BLACK}, {"△", WHITE}, {"☖", WHITE}, {"▽", WHITE}};
	for (size_t k = 0; k < sizeof MARKS / sizeof MARKS[0]; k++)
		if (starts(s + i, len - i, MARKS[k].s)) {
			if (MARKS[k].c != c)
				return errf(err, SHOGI_EILLEGAL, "it is %s's turn", side);
			i += strlen(MARKS[k].s);
			break;
		}
	/* the square, or 同 */
	Square to = SQ_NONE;
	size_t u2;
	int f = digit_at(s + i, len - i, &u);
	if (f > 0) {
		int r = digit_at(s + i + u, len - i - u, &u2);
		if (r <= 0) return errf(err, SHOGI_EPARSE, "no square in the move");
		to = sq_make(f - 1, r - 1);
		i += u + u2;
		if (starts(s + i, len - i, "同")) i += 3; /* "７六同歩" */
	} else if (starts(s + i, len - i, "同")) {
		if (prev_to == SQ_NONE)
			return errf(err, SHOGI_EILLEGAL, "同 without a previous move");
		to = prev_to;
		i = skip_spaces(s, len, i + 3);
	} else {
		return errf(err, SHOGI_EPARSE, "no square in the move");
	}
	char at[3];
	sq_usi(to, at);
	PieceType pt = ja_piece_parse(s + i, len - i, &u);
	if (pt == PT_NONE) return errf(err, SHOGI_EPARSE, "no piece in the move");
	i += u;
	/* 右 左 直 上 引 寄 (行 and 入 are older ways to write 上) */
	int want_pos = POS_NONE, want_mot = 0;
	for (;;) {
		if (starts(s + i, len - i, "右"))
			want_pos = POS_RIGHT;
		else if (starts(s + i, len - i, "左"))
			want_pos = POS_LEFT;
		else if (starts(s + i, len - i, "直"))
			want_pos = POS_STRAIGHT;
		else if (starts(s + i, len - i, "上") || starts(s + i, len - i, "行") ||
		         starts(s + i, len - i, "入"))
			want_mot = MOT_UP;
		else if (starts(s + i, len - i, "引"))
			want_mot = MOT_BACK;
		else if (starts(s + i, len - i, "寄"))
			want_mot = MOT_SIDE;
		else
			break;
		i += 3;
	}
	bool promote = false, nopromote = false, drop = false;
	if (starts(s + i, len - i, "不成"))
		nopromote = true, i += 6;
	else if (starts(s + i, len - i, "生"))
		nopromote = true, i += 3;
	else if (starts(s + i, len - i, "成"))
		promote = true, i += 3;
	if (starts(s + i, len - i, "打")) drop = true, i += 3;
	i = skip_spaces(s, len, i);
	Square from = SQ_NONE;
	if (i < len && s[i] == '(') {
		/* KIF: the origin, "(77)" */
		if (len - i < 4 || s[i + 1] < '1' || s[i + 1] > '9' || s[i + 2] < '1' ||
		    s[i + 2] > '9' || s[i + 3] != ')')
			return errf(err, SHOGI_EPARSE, "malformed origin square");
		from = sq_make(s[i + 1] - '1', s[i + 2] - '1');
		i += 4;
	}
	i = skip_spaces(s, len, i);
	if (i < len) return errf(err, SHOGI_EPARSE, "unexpected text after the move");
	if (drop && (promote || from != SQ_NONE))
		return errf(err, SHOGI_EPARSE, "打 with a promotion or an origin");

	Move gen[MOVEGEN_MAX];
	int nlegal = movegen_legal(pos, gen);
	if (from != SQ_NONE) {
		Piece p = pos->board[from];
		PieceType have = piece_type(p);
		if (!p || piece_color(p) != c || have != pt)
			return errf(err, SHOGI_EILLEGAL, "%s has no %s on %c%c", side,
			            PIECE_ENGLISH[pt], '1' + sq_file(from), 'a' + sq_rank(from));
		Move m = move_make(from, to, promote);
		if (!pos_is_legal(pos, m))
			return errf(err, SHOGI_EILLEGAL, "%s's %s cannot move from %c%c to %s%s",
			            side, PIECE_ENGLISH[pt], '1' + sq_file(from),
			            'a' + sq_rank(from), at, promote ? " and promote" : "");
		*out = m;
		return 0;
	}
	Square cand[SQ_NB];
	int n = drop ? 0 : candidates(pos, gen, nlegal, pt, to, cand);
	bool in_hand = pt <= GOLD && hand_has(pos->hand[c], pt);
	if (drop || (n == 0 && in_hand && !want_pos && !want_mot && !promote && !nopromote)) {
		Move m = move_make_drop(pt, to);
		if (pt > GOLD || !pos_is_legal(pos, m))
			return errf(err, SHOGI_EILLEGAL, "%s cannot drop a %s on %s", side,
			            PIECE_ENGLISH[pt], at);
		*out = m;
		return 0;
	}
	/* Keep the candidates the modifiers describe. */
	Square keep[SQ_NB];
	int nk = 0;
	for (int k = 0; k < n; k++)
		if (fits(c, pt, cand[k], to, cand, n, want_pos, want_mot)) keep[nk++] = cand[k];
	if (nk == 0 && (want_pos == POS_RIGHT || want_pos == POS_LEFT)) {
		/* Some writers mean the rightmost (leftmost) of those that fit. */
		int best = -1;
		for (int k = 0; k < n; k++) {
			if (want_mot && motion(c, cand[k], to) != want_mot) continue;
			int h = hpos(c, cand[k]);
			if (best < 0 || (want_pos == POS_RIGHT ? h < best : h > best)) best = h;
		}
		for (int k = 0; k < n && best >= 0; k++)
			if ((!want_mot || motion(c, cand[k], to) == want_mot) &&
			    hpos(c, cand[k]) == best)
				keep[nk++] = cand[k];
	}
	if (nk == 0)
		return errf(err, SHOGI_EILLEGAL, "%s has no %s that can move to %s%s", side,
		            PIECE_ENGLISH[pt], at, (want_pos || want_mot) ? " as written" : "");
	if (nk > 1) {
		char list[64] = "";
		size_t o = 0;
		for (int k = 0; k < nk && o + 4 < sizeof list; k++)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s%c%c", k ? " " : "",
			                      '1' + sq_file(keep[k]), 'a' + sq_rank(keep[k]));
		return errf(err, SHOGI_EILLEGAL,
		            "ambiguous: %d of %s's %ss can move to %s (from %s)", nk, side,
		            PIECE_ENGLISH[pt], at, list);
	}
	Move m = move_make(keep[0], to, promote);
	if (!pos_is_legal(pos, m)) {
		if (promote)
			return errf(err, SHOGI_EILLEGAL, "%s's %s cannot promote moving to %s",
			            side, PIECE_ENGLISH[pt], at);
		/* no 成 written where promotion is forced: the record means it */
		Move mp = move_make(keep[0], to, true);
		if (nopromote || !pos_is_legal(pos, mp))
			return errf(err, SHOGI_EILLEGAL, "%s's %s must promote moving to %s", side,
			            PIECE_ENGLISH[pt], at);
		m = mp;
	}
	*out = m;
	return 0;
}

/*
 * ingest/kif.c — KIF and KI2 records (柿木形式), the text formats of Kifu for
 * Windows, ShogiGUI, ShogiHome, 81Dojo, lishogi, shogi-extend ... (kifu_priv.h;
 * what is read and what is skipped: docs/ingest.md, "KIF and KI2").
 *
 * The text is UTF-8 here (kifu.c decoded Shift_JIS or EUC-JP). A file holds one game:
 * header lines "key：value" (開始日時, 先手, 後手, 手合割 ...), an optional
 * board diagram with the hands and the side to move, then the moves: KIF
 * numbers them one a line ("   1 ７六歩(77)   ( 0:02/00:00:02)"), KI2 writes
 * them as a player does ("▲７六歩    △３四歩"), several a line. Moves are
 * resolved in the position as they are read (shogi/japanese.h). The first
 * "変化：" line ends the main line: the branches after it are counted, not read
 * — unless the reader wants the tree (kifu_reader_want_tree): then every
 * branch is read, and the comments, into KifuRecord.tree. A branch
 * "変化：N手" is the alternative to move N of the last line read that has a
 * move N: the lines read after that line and starting after move N are done
 * (the order Kifu for Windows, ShogiGUI and ShogiHome write them in: a line,
 * then its branches from the last move back to the first).
 */
#include "ingest/kifu_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/grow.h"
#include "shogi/japanese.h"
#include "shogi/notation.h"

static bool starts(const unsigned char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	return n >= k && !memcmp(s, w, k);
}

/* Trims ASCII blanks and ideographic spaces at both ends. */
static void trim(const unsigned char **s, size_t *n)
{
	size_t u;
	while (*n && ja_space((const char *)*s, *n, &u)) *s += u, *n -= u;
	for (;;) {
		if (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
			(*n)--;
		else if (*n >= 3 && !memcmp(*s + *n - 3, "　", 3))
			*n -= 3;
		else
			break;
	}
}

/* ---- the ending a record claims ------------------------------------------ */

static const struct {
	const char *word;
	GameClaim claim;
} SPECIALS[] = {
    {"投了", GAME_CLAIM_TORYO},
    {"中断", GAME_CLAIM_CHUDAN},
    {"千日手", GAME_CLAIM_SENNICHITE},
    {"詰み", GAME_CLAIM_TSUMI},
    {"詰", GAME_CLAIM_TSUMI},
    {"持将棋", GAME_CLAIM_JISHOGI},
    {"切れ負け", GAME_CLAIM_TIME_UP},
    {"時間切れ", GAME_CLAIM_TIME_UP},
    {"入玉勝ち", GAME_CLAIM_KACHI},
    {"宣言勝ち", GAME_CLAIM_KACHI},
    {"不詰", GAME_CLAIM_FUZUMI},
    {"封じ手", GAME_CLAIM_CHUDAN},
    {"反則負け", GAME_CLAIM_ILLEGAL_MOVE},
};

/* Sets the claim; the word kept is CSA's, else the record's own (cut at a
 * character boundary). */
static void set_claim(KifuRecord *rec, GameClaim c, const unsigned char *word, size_t n, int line)
{
	rec->end = c;
	rec->end_line = line;
	const char *w = game_claim_word(c);
	if (*w) {
		snprintf(rec->special, sizeof rec->special, "%s", w);
		return;
	}
	size_t k = 0;
	while (k < n) {
		size_t u = ja_char_len(word[k]);
		if (k + u > n || k + u >= sizeof rec->special) break;
		k += u;
	}
	memcpy(rec->special, word, k);
	rec->special[k] = 0;
}

/* Which colour a "先手"/"下手" (Black) or "後手"/"上手" (White) at s names; -1 if none. */
static int colour_word(const unsigned char *s, size_t n)
{
	if (starts(s, n, "先手") || starts(s, n, "下手")) return BLACK;
	if (starts(s, n, "後手") || starts(s, n, "上手")) return WHITE;
	return -1;
}

/* True when s starts with a mover's mark (▲ △ ☗ ☖ ▽), all three bytes long. */
static bool is_mark(const unsigned char *s, size_t n)
{
	return starts(s, n, "▲") || starts(s, n, "△") || starts(s, n, "☗") || starts(s, n, "☖") ||
	       starts(s, n, "▽");
}

static bool contains(const unsigned char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(s + i, w, k)) return true;
	return false;
}

/* A KIF move line's special word ("投了", "反則勝ち"...) in a position with
 * side stm to move: the claim, or GAME_CLAIM_NONE when the text is a move. */
static GameClaim special_move(const unsigned char *s, size_t n, Color stm)
{
	if (n == strlen("反則勝ち") && starts(s, n, "反則勝ち"))
		/* the side to move wins: the other one played an illegal move */
		return stm == BLACK ? GAME_CLAIM_WHITE_ILLEGAL_ACTION
		                    : GAME_CLAIM_BLACK_ILLEGAL_ACTION;
	for (size_t i = 0; i < sizeof SPECIALS / sizeof SPECIALS[0]; i++)
		if (n == strlen(SPECIALS[i].word) && starts(s, n, SPECIALS[i].word))
			return SPECIALS[i].claim;
	if (starts(s, n, "不戦") || starts(s, n, "勝ち") || starts(s, n, "負け"))
		return GAME_CLAIM_OTHER;
	return GAME_CLAIM_NONE;
}

/* "まで62手で後手の勝ち", "まで61手詰", "まで3手で千日手": the claim of a
 * summary line (s after まで). */
static GameClaim summary_claim(const unsigned char *s, size_t n)
{
	size_t i = 0, u;
	while (i < n && ja_number_parse((const char *)s + i, n - i, &u) >= 0) i += u;
	if (starts(s + i, n - i, "手")) i += 3;
	if (starts(s + i, n - i, "で")) i += 3;
	s += i;
	n -= i;
	if (contains(s, n, "反則勝ち"))
		return colour_word(s, n) == BLACK ? GAME_CLAIM_WHITE_ILLEGAL_ACTION
		                                  : GAME_CLAIM_BLACK_ILLEGAL_ACTION;
	if (contains(s, n, "反則負け"))
		return colour_word(s, n) == BLACK ? GAME_CLAIM_BLACK_ILLEGAL_ACTION
		                                  : GAME_CLAIM_WHITE_ILLEGAL_ACTION;
	if (contains(s, n, "不詰")) return GAME_CLAIM_FUZUMI;
	if (starts(s, n, "詰")) return GAME_CLAIM_TSUMI;
	if (contains(s, n, "中断") || contains(s, n, "封じ手")) return GAME_CLAIM_CHUDAN;
	if (contains(s, n, "千日手")) return GAME_CLAIM_SENNICHITE;
	if (contains(s, n, "持将棋")) return GAME_CLAIM_JISHOGI;
	if (contains(s, n, "時間切れ") || contains(s, n, "切れ負け")) return GAME_CLAIM_TIME_UP;
	if (contains(s, n, "入玉")) return GAME_CLAIM_KACHI;
	if (contains(s, n, "勝ち")) return GAME_CLAIM_TORYO;
	return GAME_CLAIM_OTHER;
}

/* ---- the record being read -------------------------------------------- */

typedef struct {
	KifuReader *r;
	KifuRecord *rec;
	Position *pos;
	int line;
	/* the start position, as the header gives it */
	const char *handicap; /* its SFEN, NULL for none given */
	bool board_given;     /* a board diagram was read */
	int board_rows;
	int side;        /* -1: not given */
	bool started;    /* the start position is set up: moves may follow */
	bool stopped;    /* the main line is over (an ending, an illegal move, 変化) */
	bool impossible; /* the start position cannot occur: no move is read */
	Square prev_to;
	size_t cap_moves;
	/* The tree (r->want_tree): the node the next move follows, and the
	 * lines read so far that a variation may branch from (a stack: each a
	 * run of nodes from its first move's number on). */
	bool tree;
	bool in_main;     /* the main line (its moves are also the record's moves) */
	bool var_stopped; /* the variation being read has ended */
	uint32_t cur;
	struct KifLine {
		int start;
		size_t first, len;
	} * lines;
	size_t nlines, lines_cap, tree_cap, text_cap;
} Kif;

/* ---- the tree ------------------------------------------------------------ */

/* Appends node (m after k->cur) to the tree and to the current line. */
static int tree_add(Kif *k, Move m, int number)
{
	KifuRecord *rec = k->rec;
	if (!k->nlines || k->lines[k->nlines - 1].len == 0) {
		/* The main line's first move: its number starts the line. */
		if (!k->nlines) {
			if (array_grow((void **)&k->lines, &k->lines_cap, 1, sizeof *k->lines, 16))
				return KIFU_ENOMEM;
			k->lines[0] = (struct KifLine){number > 0 ? number : 1, 0, 0};
			k->nlines = 1;
		}
	}
	if (array_grow((void **)&rec->tree, &k->tree_cap, rec->ntree + 1, sizeof *rec->tree, 64))
		return KIFU_ENOMEM;
	rec->tree[rec->ntree] = (KifuNode){m, k->cur, 0, 0, k->line};
	k->cur = (uint32_t)rec->ntree++;
	k->lines[k->nlines - 1].len++;
	return 0;
}

/* A '*' line: the comment of the move before it (the start position's
 * before the first move). */
static int tree_comment(Kif *k, const unsigned char *s, size_t n)
{
	KifuRecord *rec = k->rec;
	uint32_t *off, *len;
	if (k->cur == KIFU_TREE_ROOT && k->in_main) {
		off = &rec->start_comment_off;
		len = &rec->start_comment_len;
	} else if (k->cur != KIFU_TREE_ROOT && !k->var_stopped) {
		off = &rec->tree[k->cur].comment_off;
		len = &rec->tree[k->cur].comment_len;
	} else {
		return 0; /* before a variation's first move: no move to hold it */
	}
	size_t more = n + (*len ? 1 : 0);
	if (array_grow((void **)&rec->tree_text, &k->text_cap, rec->tree_text_len + more + 1, 1,
	               256))
		return KIFU_ENOMEM;
	if (!*len) *off = (uint32_t)rec->tree_text_len;
	if (*len) rec->tree_text[rec->tree_text_len++] = '\n';
	memcpy(rec->tree_text + rec->tree_text_len, s, n);
	rec->tree_text_len += n;
	rec->tree_text[rec->tree_text_len] = 0;
	*len += (uint32_t)more;
	return 0;
}

/* "変化：N手": the alternative to move N of the last line read that has one.
 * Sets the position to the one before it. */
static int tree_variation(Kif *k, const unsigned char *s, size_t n)
{
	KifuRecord *rec = k->rec;
	k->in_main = false;
	k->var_stopped = true;
	size_t i = strlen("変化"), u;
	if (starts(s + i, n - i, "："))
		i += 3;
	else if (i < n && s[i] == ':')
		i++;
	while (i < n && ja_space((const char *)s + i, n - i, &u)) i += u;
	int num = ja_number_parse((const char *)s + i, n - i, &u);
	while (k->nlines && k->lines[k->nlines - 1].start > num) k->nlines--;
	const struct KifLine *l = k->nlines ? &k->lines[k->nlines - 1] : NULL;
	if (num < 1 || !l || (size_t)(num - l->start) >= l->len)
		return rec->illegal
		           ? 0
		           : kifu_set_illegal(rec, k->line,
		                              "variation %d names no move of a line before it",
		                              num);
	uint32_t parent = rec->tree[l->first + (size_t)(num - l->start)].parent;
	/* The position before it: the start, then the moves down to parent. */
	size_t depth = 0;
	for (uint32_t p = parent; p != KIFU_TREE_ROOT; p = rec->tree[p].parent) depth++;
	Move *path = malloc((depth + 1) * sizeof *path);
	if (!path) return KIFU_ENOMEM;
	size_t d = depth;
	for (uint32_t p = parent; p != KIFU_TREE_ROOT; p = rec->tree[p].parent)
		path[--d] = rec->tree[p].move;
	char err[SHOGI_ERRLEN];
	int rc = kifu_record_position(k->pos, rec, err);
	for (size_t j = 0; rc == 0 && j < depth; j++) pos_do_move(k->pos, path[j]);
	k->prev_to = depth ? move_to(path[depth - 1]) : SQ_NONE;
	free(path);
	if (rc != 0) return 0;
	if (array_grow((void **)&k->lines, &k->lines_cap, k->nlines + 1, sizeof *k->lines, 16))
		return KIFU_ENOMEM;
	k->lines[k->nlines++] = (struct KifLine){num, rec->ntree, 0};
	k->cur = parent;
	k->var_stopped = false;
	return 0;
}

/* "飛二 角 金四 銀 桂四 香四 歩十七", "なし": pieces into rec->hand[c]. */
static int read_hand(Kif *k, Color c, const unsigned char *s, size_t n)
{
	trim(&s, &n);
	if (!n || starts(s, n, "なし")) return 0;
	size_t i = 0, u;
	while (i < n) {
		if (ja_space((const char *)s + i, n - i, &u)) {
			i += u;
			continue;
		}
		PieceType pt = ja_piece_parse((const char *)s + i, n - i, &u);
		if (pt == PT_NONE || pt > GOLD) {
			char q[40];
			errmsg_escape(q, sizeof q, s + i, n - i);
			return kifu_fail(k->r, k->line, "unknown piece in hand at '%s'", q);
		}
		i += u;
		int count = ja_number_parse((const char *)s + i, n - i, &u);
		if (count < 0)
			count = 1;
		else
			i += u;
		for (int j = 0; j < count; j++) {
			if (hand_count(k->rec->hand[c], pt) >= HAND_MAX[pt])
				return kifu_fail(k->r, k->line, "too many pieces in hand");
			k->rec->hand[c] = hand_add(k->rec->hand[c], pt);
		}
	}
	return 0;
}

/* "| ・ ・ ・ ・ ・ ・ ・v玉v香|一": one rank of the board diagram. */
static int read_board_row(Kif *k, const unsigned char *s, size_t n)
{
	if (k->board_rows >= 9) return kifu_fail(k->r, k->line, "more than nine board lines");
	int rank = k->board_rows++;
	if (!k->board_given) memset(k->rec->board, 0, sizeof k->rec->board);
	k->board_given = true;
	size_t i = 1, u;
	for (int col = 0; col < 9; col++) {
		if (i >= n) return kifu_fail(k->r, k->line, "short board line");
		Color c = BLACK;
		if (s[i] == 'v' || s[i] == 'V')
			c = WHITE, i++;
		else if (s[i] == ' ' || s[i] == '^' || s[i] == '+')
			i++;
		if (starts(s + i, n - i, "・")) {
			i += 3;
			continue;
		}
		PieceType pt = ja_piece_parse((const char *)s + i, n - i, &u);
		if (pt == PT_NONE) {
			char q[40];
			errmsg_escape(q, sizeof q, s + i, n - i);
			return kifu_fail(k->r, k->line, "unknown piece on the board at '%s'", q);
		}
		k->rec->board[sq_make(8 - col, rank)] = piece_make(c, pt);
		i += u;
	}
	return 0;
}

/* Sets up the start position, before the first move. */
static int start(Kif *k)
{
	if (k->started) return 0;
	k->started = true;
	KifuRecord *rec = k->rec;
	char err[SHOGI_ERRLEN];
	if (k->board_given) {
		if (k->board_rows != 9)
			return kifu_fail(k->r, k->line, "board diagram without nine lines");
		rec->has_position = true;
		rec->side = k->side >= 0                                        ? (Color)k->side
		            : k->handicap && strcmp(k->handicap, SFEN_STARTPOS) ? WHITE
		                                                                : BLACK;
	} else {
		/* no diagram: the handicap's position (hands given without one are left out) */
		if (sfen_parse(k->pos, k->handicap ? k->handicap : SFEN_STARTPOS, NULL, err) != 0)
			return kifu_fail(k->r, k->line, "%s", err);
		kifu_set_start(rec, k->pos);
		if (k->side >= 0) rec->side = (Color)k->side;
	}
	if (kifu_record_position(k->pos, rec, err) != 0)
		k->impossible = true; /* the replay says why */
	return 0;
}

/* One written move (number: its number in a KIF, 0 in a KI2): resolved and
 * played, or the line's moves stop here. */
static int play(Kif *k, const unsigned char *s, size_t n, int time_ms, int number)
{
	Move m;
	char err[SHOGI_ERRLEN];
	if (k->impossible || (k->in_main ? k->stopped : k->var_stopped)) return 0;
	int rc = ja_move_parse(&m, k->pos, k->prev_to, (const char *)s, n, err);
	if (rc != 0) {
		if (k->in_main)
			k->stopped = true;
		else
			k->var_stopped = true;
		if (!k->in_main && k->rec->illegal) return 0;
		char q[40];
		errmsg_escape(q, sizeof q, s, n);
		/* A main-line move that does not read as a move at all is a
		 * damaged record (bad bytes, a line cut), not a move its player
		 * lost by: the moves before it are kept and the game has no
		 * result, as a CSA record damaged in a move line. */
		int sr = k->in_main && rc == SHOGI_EPARSE
		             ? kifu_set_cut(k->rec, k->line, "malformed move %s (%s)", q, err)
		             : kifu_set_illegal(k->rec, k->line, "illegal move %s (%s)", q, err);
		return sr ? KIFU_ENOMEM : 0;
	}
	k->prev_to = move_to(m);
	if (!k->in_main) {
		if (pos_history_len(k->pos) >= POS_MAX_STATES - 1) {
			k->var_stopped = true;
			return 0;
		}
		pos_do_move(k->pos, m);
		return tree_add(k, m, number);
	}
	rc = kifu_play(k->rec, &k->cap_moves, k->pos, m, k->line, time_ms);
	if (rc == 1) k->stopped = true;
	if (rc == 0 && k->tree) rc = tree_add(k, m, number);
	return rc < 0 ? rc : 0;
}

/* "( 0:02/00:00:02)", "(00:31 / 00:00:31)": the move's time in ms, or -1. */
static int move_time(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] != '(') i++;
	if (i >= n) return -1;
	i++;
	while (i < n && s[i] == ' ') i++;
	long mm = 0, ss = 0;
	if (i >= n || s[i] < '0' || s[i] > '9') return -1;
	while (i < n && s[i] >= '0' && s[i] <= '9') mm = mm * 10 + (s[i++] - '0');
	if (i >= n || s[i] != ':') return -1;
	i++;
	while (i < n && s[i] >= '0' && s[i] <= '9') ss = ss * 10 + (s[i++] - '0');
	long ms = (mm * 60 + ss) * 1000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* "   1 ７六歩(77)   ( 0:02/00:00:02)+": a KIF move line (s after the number). */
static int kif_move(Kif *k, const unsigned char *s, size_t n, int number)
{
	int rc = start(k);
	if (rc) return rc;
	if (k->in_main ? k->stopped : k->var_stopped) return 0;
	trim(&s, &n);
	if (n && s[n - 1] == '+') n--; /* the mark of a line with variations */
	trim(&s, &n);
	/* The time is the last parenthesis holding ':'; the move ends before it. */
	int time_ms = -1;
	size_t end = n;
	for (size_t i = n; i-- > 0;)
		if (s[i] == '(') {
			if (memchr(s + i, ':', n - i)) {
				time_ms = move_time(s + i, n - i);
				end = i;
			}
			break;
		}
	const unsigned char *mv = s;
	size_t mn = end;
	trim(&mv, &mn);
	GameClaim c = special_move(mv, mn, k->pos->side);
	if (c != GAME_CLAIM_NONE && !k->in_main) {
		k->var_stopped = true; /* a variation's ending is no claim of the game's */
		return 0;
	}
	if (c != GAME_CLAIM_NONE) {
		set_claim(k->rec, c, mv, mn, k->line);
		k->rec->end_time_ms = time_ms;
		k->stopped = true;
		return 0;
	}
	return play(k, mv, mn, time_ms, number);
}

/* "▲７六歩    △３四歩    ▲２二角成": KI2 moves, several a line. */
static int ki2_moves(Kif *k, const unsigned char *s, size_t n)
{
	int rc = start(k);
	if (rc) return rc;
	size_t i = 0;
	while (i < n && !(k->in_main ? k->stopped : k->var_stopped)) {
		size_t j = i + 3;
		while (j < n && !is_mark(s + j, n - j)) j += ja_char_len(s[j]);
		const unsigned char *mv = s + i;
		size_t mn = (j < n ? j : n) - i;
		trim(&mv, &mn);
		if ((rc = play(k, mv, mn, -1, 0))) return rc;
		i = j;
	}
	return 0;
}

/* A header line "key：value" (value after the colon). */
static int header(Kif *k, const unsigned char *key, size_t kn, const unsigned char *v, size_t vn)
{
	KifuRecord *rec = k->rec;
	trim(&v, &vn);
#define KEY(w) (kn == strlen(w) && !memcmp(key, w, kn))
	/* A game's first headers after this game's moves: a second game in
	 * the file (cat a.kif b.kif). Nothing of it is read: its header would
	 * rename this game's players, its moves (KI2's are not numbered) go on
	 * from this game's last. */
	if ((k->started || rec->nmoves) && (KEY("開始日時") || KEY("手合割") || KEY("先手") ||
	                                    KEY("後手") || KEY("下手") || KEY("上手"))) {
		rec->second_game_line = k->line;
		return 0;
	}
	if (KEY("先手") || KEY("下手")) return kifu_set_str(&rec->name[BLACK], v, vn);
	if (KEY("後手") || KEY("上手")) return kifu_set_str(&rec->name[WHITE], v, vn);
	if (KEY("開始日時")) return kifu_set_str(&rec->start_time, v, vn);
	if (KEY("持ち時間")) return kifu_set_str(&rec->time_limit, v, vn);
	if (KEY("先手の持駒") || KEY("下手の持駒")) return read_hand(k, BLACK, v, vn);
	if (KEY("後手の持駒") || KEY("上手の持駒")) return read_hand(k, WHITE, v, vn);
	if (KEY("手合割")) {
		if (starts(v, vn, "その他")) return 0;
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)(vn < 63 ? vn : 63), (const char *)v);
		if ((k->handicap = kifu_handicap_sfen(name))) return 0;
		char q[40];
		errmsg_escape(q, sizeof q, v, vn);
		return kifu_fail(k->r, k->line, "unknown handicap '%s'", q);
	}
#undef KEY
	return 0; /* 棋戦, 場所, 終了日時 ...: not needed */
}

static int on_line(Kif *k, const unsigned char *s, size_t n)
{
	KifuRecord *rec = k->rec;
	if (rec->second_game_line) return 0; /* a second game: not read */
	trim(&s, &n);
	if (!n) return 0;
	if (!rec->first_line) rec->first_line = k->line;
	if (s[0] == '*' && k->tree) return tree_comment(k, s + 1, n - 1);
	if (s[0] == '#' || s[0] == '*' || s[0] == '&') return 0; /* comments, annotations */
	if (starts(s, n, "変化")) {
		/* The main line is over: its branches are counted, and read only
		 * for the tree. */
		k->stopped = true;
		rec->variations++;
		return k->tree ? tree_variation(k, s, n) : 0;
	}
	if (rec->variations && !k->tree) return 0;
	if (starts(s, n, "まで")) {
		if (rec->variations) return 0;
		if (rec->end == GAME_CLAIM_NONE && (k->started || rec->nmoves)) {
			GameClaim c = summary_claim(s + 6, n - 6);
			set_claim(rec, c, s, n, k->line);
		}
		return 0;
	}
	if (s[0] == '|') return read_board_row(k, s, n);
	if (s[0] == '+' && starts(s, n, "+---")) return 0;
	if (starts(s, n, "９ ８ ７") || starts(s, n, "手数")) return 0; /* diagram edge, 手数---- */
	if (is_mark(s, n)) return ki2_moves(k, s, n);
	if (s[0] >= '0' && s[0] <= '9') {
		size_t i = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9') i++;
		if (i < n && (s[i] == ' ' || s[i] == '\t' || starts(s + i, n - i, "　")))
			return kif_move(k, s + i, n - i, i <= 6 ? atoi((const char *)s) : 0);
	}
	if (n >= 9 && (starts(s, n, "先手番") || starts(s, n, "下手番"))) {
		k->side = BLACK;
		return 0;
	}
	if (n >= 9 && (starts(s, n, "後手番") || starts(s, n, "上手番"))) {
		k->side = WHITE;
		return 0;
	}
	/* "key：value" */
	for (size_t i = 0; i < n; i += ja_char_len(s[i])) {
		if (starts(s + i, n - i, "：")) return header(k, s, i, s + i + 3, n - i - 3);
		if (s[i] == ':') return header(k, s, i, s + i + 1, n - i - 1);
	}
	return 0; /* a line no KIF writer defines: left alone */
}

int kif_next(KifuReader *r, KifuRecord **out)
{
	if (r->done) return 0;
	r->done = true;
	Kif k = {.r = r,
	         .side = -1,
	         .prev_to = SQ_NONE,
	         .tree = r->want_tree,
	         .in_main = true,
	         .cur = KIFU_TREE_ROOT};
	k.pos = kifu_reader_pos(r);
	k.rec = kifu_record_new(r->format);
	if (!k.pos || !k.rec) {
		kifu_record_free(k.rec);
		return KIFU_ENOMEM;
	}
	k.rec->start_comment_off = 0;
	const unsigned char *s;
	size_t n;
	int rc = 0;
	bool any = false;
	while (kifu_next_line(r, &s, &n)) {
		k.line = r->line;
		any = true;
		if ((rc = on_line(&k, s, n))) break;
	}
	if (!rc && any) rc = start(&k);
	free(k.lines);
	if (rc || !any || !k.rec->first_line) {
		kifu_record_free(k.rec);
		return rc ? rc : 0;
	}
	*out = k.rec;
	return 1;
}

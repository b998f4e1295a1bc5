/*
 * ingest/jkf.c — JKF, the JSON Kifu Format of kifu-for-js and shogi-extend
 * (kifu_priv.h). One game a file:
 *   {"header": {"先手": "...", "後手": "...", "開始日時": "..."},
 *    "initial": {"preset": "HIRATE" | "KY" | ... | "OTHER",
 *                "data": {"board": [[{"color": 0, "kind": "FU"} | {}] x9] x9,
 *                         "color": 0, "hands": [{"FU": 1, ...}, {...}]}},
 *    "moves": [{"comments": [...]},
 *              {"move": {"color": 0, "from": {"x": 7, "y": 7}, "to": {"x": 7, "y": 6},
 *                        "piece": "FU", "promote": false, "same": true ...},
 *               "time": {"now": {"m": 0, "s": 2}}, "forks": [[...], ...]},
 *              {"special": "TORYO"}]}
 * board[x-1][y-1] is the square of file x, rank y; a drop has no "from". The
 * main line is read; each fork is a branch left unread. JSON gives no lines,
 * so a move's line is found by scanning the text for the main line's
 * elements.
 */
#include "ingest/kifu_priv.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/notation.h"

/*
 * The line where each element of the top-level "moves" array starts
 * (lines[i] for moves[i], at most max of them); the count found.
 */
static size_t move_lines(const char *s, size_t n, int *lines, size_t max)
{
	int depth = 0, line = 1, arr = -1;
	size_t count = 0;
	const char *key = NULL; /* the last string seen at depth 1 */
	size_t keylen = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\n') line++;
		if (c == '"') {
			size_t j = i + 1;
			while (j < n && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
			if (depth == 1 && arr < 0) {
				key = s + i + 1;
				keylen = j - i - 1;
			}
			i = j;
			continue;
		}
		if (c == '{' || c == '[') {
			if (arr >= 0 && depth == arr && count < max) lines[count++] = line;
			if (c == '[' && arr < 0 && depth == 1 && key && keylen == 5 &&
			    !memcmp(key, "moves", 5))
				arr = depth + 1;
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
			if (arr >= 0 && depth < arr) break;
		}
	}
	return count;
}

static const char *jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int header(KifuRecord *rec, json_t *h)
{
	static const struct {
		const char *key;
		int field; /* 0 black, 1 white, 2 start time, 3 time limit */
	} KEYS[] = {{"先手", 0}, {"下手", 0},     {"後手", 1},
	            {"上手", 1}, {"開始日時", 2}, {"持ち時間", 3}};
	for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++) {
		const char *v = jstr(h, KEYS[i].key);
		if (!v) continue;
		char **dst = KEYS[i].field == 0   ? &rec->name[BLACK]
		             : KEYS[i].field == 1 ? &rec->name[WHITE]
		             : KEYS[i].field == 2 ? &rec->start_time
		                                  : &rec->time_limit;
		if (kifu_set_str(dst, v, strlen(v))) return KIFU_ENOMEM;
	}
	return 0;
}

/* "initial": the start position into pos. */
static int initial(KifuReader *r, KifuRecord *rec, Position *pos, json_t *init)
{
	char err[SHOGI_ERRLEN];
	const char *preset = init ? jstr(init, "preset") : NULL;
	if (!init || (preset && strcmp(preset, "OTHER"))) {
		const char *sfen = kifu_handicap_sfen(preset ? preset : "HIRATE");
		if (!sfen) return kifu_fail(r, 1, "unknown preset '%.40s'", preset);
		sfen_parse(pos, sfen, NULL, NULL);
		kifu_set_start(rec, pos);
		return 0;
	}
	json_t *data = json_object_get(init, "data");
	json_t *board = json_object_get(data, "board");
	if (!json_is_array(board) || json_array_size(board) != 9)
		return kifu_fail(r, 1, "initial position without a 9x9 board");
	rec->has_position = true;
	for (int x = 0; x < 9; x++) {
		json_t *col = json_array_get(board, (size_t)x);
		if (!json_is_array(col) || json_array_size(col) != 9)
			return kifu_fail(r, 1, "initial position without a 9x9 board");
		for (int y = 0; y < 9; y++) {
			json_t *cell = json_array_get(col, (size_t)y);
			const char *kind = jstr(cell, "kind");
			if (!kind) continue;
			PieceType pt = strlen(kind) == 2 ? csa_piece_parse(kind) : PT_NONE;
			json_t *color = json_object_get(cell, "color");
			if (pt == PT_NONE || !json_is_integer(color))
				return kifu_fail(r, 1, "bad piece on the board at %d%d", x + 1,
				                 y + 1);
			rec->board[sq_make(x, y)] =
			    piece_make(json_integer_value(color) ? WHITE : BLACK, pt);
		}
	}
	json_t *color = json_object_get(data, "color");
	rec->side = json_is_integer(color) && json_integer_value(color) ? WHITE : BLACK;
	json_t *hands = json_object_get(data, "hands");
	for (int c = 0; c < 2 && json_is_array(hands); c++) {
		json_t *h = json_array_get(hands, (size_t)c);
		const char *k;
		json_t *v;
		json_object_foreach(h, k, v)
		{
			PieceType pt = strlen(k) == 2 ? csa_piece_parse(k) : PT_NONE;
			json_int_t count = json_is_integer(v) ? json_integer_value(v) : -1;
			if (pt == PT_NONE || pt > GOLD || count < 0 || count > HAND_MAX[pt])
				return kifu_fail(r, 1, "bad hand piece '%.8s'", k);
			for (json_int_t i = 0; i < count; i++)
				rec->hand[c] = hand_add(rec->hand[c], pt);
		}
	}
	if (kifu_record_position(pos, rec, err) != 0) return 1; /* the replay says why */
	return 0;
}

static int square(json_t *o, Square *sq)
{
	json_t *x = json_object_get(o, "x"), *y = json_object_get(o, "y");
	if (!json_is_integer(x) || !json_is_integer(y)) return -1;
	json_int_t fx = json_integer_value(x), ry = json_integer_value(y);
	if (fx < 1 || fx > 9 || ry < 1 || ry > 9) return -1;
	*sq = sq_make((int)fx - 1, (int)ry - 1);
	return 0;
}

/* A "move" object in pos: the move, or an error saying what is wrong. */
static int jkf_move(Move *out, const Position *pos, Square prev_to, json_t *mv, char *text,
                    char *err)
{
	const char *piece = jstr(mv, "piece");
	PieceType pt = piece && strlen(piece) == 2 ? csa_piece_parse(piece) : PT_NONE;
	json_t *from = json_object_get(mv, "from"), *to = json_object_get(mv, "to");
	json_t *color = json_object_get(mv, "color");
	bool promote = json_is_true(json_object_get(mv, "promote"));
	Square f = SQ_NONE, t = SQ_NONE;
	if (to && !json_is_null(to) && square(to, &t) < 0) t = SQ_NONE;
	if ((!to || json_is_null(to)) && json_is_true(json_object_get(mv, "same"))) t = prev_to;
	bool drop = !from || json_is_null(from);
	if (!drop && square(from, &f) < 0) f = SQ_NONE;
	snprintf(text, 16, "%c%c%c%c%c%s",
	         json_is_integer(color) && json_integer_value(color) ? '-' : '+',
	         drop || f == SQ_NONE ? '0' : '1' + sq_file(f),
	         drop || f == SQ_NONE ? '0' : '1' + sq_rank(f),
	         t == SQ_NONE ? '?' : '1' + sq_file(t), t == SQ_NONE ? '?' : '1' + sq_rank(t),
	         pt == PT_NONE
	             ? "??"
	             : CSA_PIECE_NAMES[promote && pt_can_promote(pt) ? pt + PROMOTE : pt]);
	if (pt == PT_NONE || t == SQ_NONE || (!drop && f == SQ_NONE)) {
		snprintf(err, SHOGI_ERRLEN, "malformed move");
		return SHOGI_EPARSE;
	}
	if (json_is_integer(color) && (json_integer_value(color) ? WHITE : BLACK) != pos->side) {
		snprintf(err, SHOGI_ERRLEN, "it is %s's turn",
		         pos->side == BLACK ? "Black" : "White");
		return SHOGI_EILLEGAL;
	}
	Move m;
	if (drop) {
		m = move_make_drop(pt, t);
	} else {
		Piece p = pos->board[f];
		if (!p || piece_color(p) != pos->side || piece_type(p) != pt) {
			snprintf(err, SHOGI_ERRLEN, "no such piece on %c%c", '1' + sq_file(f),
			         'a' + sq_rank(f));
			return SHOGI_EILLEGAL;
		}
		m = move_make(f, t, promote);
	}
	if (pt > GOLD && drop) {
		snprintf(err, SHOGI_ERRLEN, "a %s cannot be dropped", piece);
		return SHOGI_EILLEGAL;
	}
	if (!pos_is_legal(pos, m)) {
		snprintf(err, SHOGI_ERRLEN, "not legal in the position");
		return SHOGI_EILLEGAL;
	}
	*out = m;
	return 0;
}

static int read_moves(KifuRecord *rec, Position *pos, json_t *moves, const int *lines,
                      size_t nlines)
{
	size_t cap = 0;
	Square prev_to = SQ_NONE;
	for (size_t i = 0; i < json_array_size(moves); i++) {
		json_t *e = json_array_get(moves, i);
		int line = i < nlines ? lines[i] : 0;
		json_t *forks = json_object_get(e, "forks");
		if (json_is_array(forks)) rec->variations += (int)json_array_size(forks);
		json_t *time = json_object_get(json_object_get(e, "time"), "now");
		int time_ms = -1;
		if (time) {
			json_int_t h = json_integer_value(json_object_get(time, "h")),
			           m = json_integer_value(json_object_get(time, "m")),
			           s = json_integer_value(json_object_get(time, "s"));
			json_int_t ms = ((h * 60 + m) * 60 + s) * 1000;
			time_ms = ms >= 0 && ms < 0x7fffffff ? (int)ms : -1;
		}
		const char *special = jstr(e, "special");
		if (special) {
			rec->end = game_claim_parse(special, strlen(special));
			snprintf(rec->special, sizeof rec->special, "%s", special);
			rec->end_line = line;
			rec->end_time_ms = time_ms;
			break;
		}
		json_t *mv = json_object_get(e, "move");
		if (!json_is_object(mv)) continue; /* the start's comments */
		Move m;
		char text[16], err[SHOGI_ERRLEN];
		if (jkf_move(&m, pos, prev_to, mv, text, err) != 0)
			return kifu_set_illegal(rec, line, "illegal move %s (%s)", text, err);
		prev_to = move_to(m);
		int rc = kifu_play(rec, &cap, pos, m, line, time_ms);
		if (rc) return rc < 0 ? rc : 0;
	}
	return 0;
}

int jkf_next(KifuReader *r, KifuRecord **out)
{
	if (r->done) return 0;
	r->done = true;
	Position *pos = kifu_reader_pos(r);
	if (!pos) return KIFU_ENOMEM;
	const char *text = (const char *)r->buf + r->off;
	size_t len = r->len - r->off;
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root) return kifu_fail(r, je.line > 0 ? je.line : 1, "malformed JSON (%s)", je.text);
	KifuRecord *rec = kifu_record_new(KIFU_JKF);
	int rc = 0;
	if (!rec) {
		json_decref(root);
		return KIFU_ENOMEM;
	}
	rec->first_line = 1;
	json_t *moves = json_object_get(root, "moves");
	if (!json_is_object(root) || (moves && !json_is_array(moves))) {
		rc = kifu_fail(r, 1, "not a JKF object (no \"moves\" array)");
		goto out;
	}
	if ((rc = header(rec, json_object_get(root, "header")))) goto out;
	rc = initial(r, rec, pos, json_object_get(root, "initial"));
	if (rc == 1) { /* an impossible start position: the replay says why */
		rc = 0;
		goto done;
	}
	if (rc) goto out;
	size_t nm = json_array_size(moves);
	int *lines = calloc(nm + 1, sizeof *lines);
	if (!lines) {
		rc = KIFU_ENOMEM;
		goto out;
	}
	size_t nl = move_lines(text, len, lines, nm);
	rc = read_moves(rec, pos, moves, lines, nl);
	free(lines);
	if (rc) goto out;
done:
	json_decref(root);
	*out = rec;
	return 1;
out:
	json_decref(root);
	kifu_record_free(rec);
	return rc;
}

/*
 * minimax/export_kif.c — the book's tree as a KIF or KI2 record (export.h:
 * export_kif; docs/minimax.md, "The book as a KIF tree").
 *
 * The tree is built in memory first, depth first from the root: at each
 * position the moves export_pick gives (the side a partial book is not for:
 * all its replies), best first, each with its comment. Then it is written as
 * the shogi GUIs write a record with variations (Kifu for Windows, ShogiGUI,
 * ShogiHome): a line (each node's first child), then the variations of its
 * moves from the last move back to the first, each "変化：N手" followed by its
 * own line and variations, so that a reader that branches a variation off
 * the last line read with a move N (ingest/kif.c, and the GUIs) rebuilds the
 * same tree with the same order.
 */
#include "minimax/export_priv.h"

#include <iconv.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/marks.h"
#include "bookdb/query.h"
#include "minimax/bookmm.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/japanese.h"
#include "shogi/notation.h"

#define fail errmsg_set

typedef struct {
	Move move;
	uint32_t first, next;   /* first child, next sibling (UINT32_MAX: none) */
	uint32_t text, textlen; /* its comment lines (each ending "\n", without '*') */
} Node;

#define NONE UINT32_MAX

typedef struct {
	const ExportOptions *opt;
	BookTxn *txn;
	Node *nodes;
	size_t n, cap;
	char *text;
	size_t tlen, tcap;
	Key path[EXPORT_KIF_MAX_PLIES + 2];
	int plies;
	int deepest;      /* the longest line's plies */
	BookRecord *recs; /* one a depth (the recursion's records) */
	BookRecord *child;
	OutMove *mv; /* one array a depth */
	ExportStats *st;
	char *err;
	int rc;
} Kif;

static int add_text(Kif *k, const char *s, size_t n)
{
	if (array_grow((void **)&k->text, &k->tcap, k->tlen + n + 1, 1, 4096))
		return k->rc = fail(k->err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
	memcpy(k->text + k->tlen, s, n);
	k->tlen += n;
	k->text[k->tlen] = 0;
	return 0;
}

static int add_textf(Kif *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_textf(Kif *k, const char *fmt, ...)
{
	char buf[1400];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0) return 0;
	return add_text(k, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The comment of move o of rec (pos before it): the evaluation as the GUIs
 * read it (#評価値, Black's view), then what the book knows of the move. */
static int move_comment(Kif *k, const BookRecord *rec, const Position *pos, const OutMove *o,
                        const BookMark *marks, int nmarks)
{
	const BookMove *m = &rec->moves[o->k];
	int black = pos->side == BLACK ? o->value : -o->value;
	if (add_textf(k, "#評価値=%+d\n", black) < 0) return k->rc;
	char src[48] = "";
	const char *vs = bookdb_value_source(rec, m);
	if ((rec->flags & BOOKDB_REC_MINIMAX) && m->dist > 0)
		snprintf(src, sizeof src, "%s/%u", vs ? vs : "minimax", m->dist);
	else
		snprintf(src, sizeof src, "%s", vs ? vs : "-");
	if (add_textf(k, "joseki: value %+d %s, depth %d", o->value, src, o->field) < 0)
		return k->rc;
	if ((m->flags & BOOKDB_MOVE_STATS) && m->count &&
	    add_textf(k, ", games %u (+%u =%u -%u)", m->count, m->wins, m->draws, m->losses) < 0)
		return k->rc;
	if (add_text(k, "\n", 1) < 0) return k->rc;
	for (int i = 0; i < nmarks; i++) {
		const BookMark *mk = &marks[i];
		if (mk->move != m->move) continue;
		if (mk->kind == BOOKDB_MARK_PREFER
		        ? add_textf(k, "joseki: preferred within %u (%s", mk->window,
		                    bookdb_mark_source_name(mk->source)) < 0
		        : add_textf(k, "joseki: avoided (%s", bookdb_mark_source_name(mk->source)) <
		              0)
			return k->rc;
		/* A note is one line of text: its line ends become spaces. */
		if (mk->known && mk->note[0]) {
			char note[BOOKDB_NOTE_MAX + 1];
			snprintf(note, sizeof note, "%s", mk->note);
			for (char *p = note; *p; p++)
				if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
			if (add_textf(k, ": %s", note) < 0) return k->rc;
		}
		if (add_text(k, ")\n", 2) < 0) return k->rc;
	}
	return 0;
}

static uint32_t new_node(Kif *k, Move m)
{
	if (k->n >= EXPORT_KIF_MAX_MOVES) {
		k->rc = fail(k->err, EXPORT_ERRLEN, EXPORT_EINVAL,
		             "the tree passes %d moves: give fewer --plies, a narrower --window, "
		             "--moves best or --side",
		             EXPORT_KIF_MAX_MOVES);
		return NONE;
	}
	if (array_grow((void **)&k->nodes, &k->cap, k->n + 1, sizeof *k->nodes, 1024)) {
		k->rc = fail(k->err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
		return NONE;
	}
	k->nodes[k->n] = (Node){m, NONE, NONE, 0, 0};
	return (uint32_t)k->n++;
}

/* The children of node at (pos, the position after it; depth plies from
 * the root), depth first. */
static void build(Kif *k, uint32_t node, Position *pos, int depth)
{
	if (k->rc < 0 || depth >= k->plies) return;
	BookRecord *rec = &k->recs[depth];
	if (bookdb_get(rec, k->txn, pos_key(pos)) != 0) return;
	if (k->opt->max_ply > 0 && rec->min_ply > k->opt->max_ply) return;
	OutMove *mv = &k->mv[(size_t)depth * BOOKDB_MAX_MOVES];
	unsigned how = PICK_KEEP_ABOVE | (export_side_ours(k->opt, pos->side) ? 0 : PICK_ALL);
	size_t n = export_pick(mv, rec, pos, k->txn, k->child, k->opt, how);
	if (!n) return;
	k->st->positions++;
	if (rec->flags & BOOKDB_REC_MINIMAX) k->st->minimaxed++;
	BookMark *marks = NULL;
	int nmarks = 0;
	if (rec->flags & (BOOKDB_REC_AVOID | BOOKDB_REC_PREFER)) {
		nmarks = bookdb_marks_load(&marks, k->txn, pos_key(pos), rec);
		if (nmarks < 0) nmarks = 0; /* the flags alone: shown without their notes */
	}
	uint32_t prev = NONE;
	k->path[depth] = pos_key(pos);
	for (size_t i = 0; i < n && k->rc == 0; i++) {
		uint32_t c = new_node(k, mv[i].move);
		if (c == NONE) break;
		k->nodes[c].text = (uint32_t)k->tlen;
		if (move_comment(k, rec, pos, &mv[i], marks, nmarks) < 0) break;
		k->nodes[c].textlen = (uint32_t)(k->tlen - k->nodes[c].text);
		if (prev == NONE)
			k->nodes[node].first = c;
		else
			k->nodes[prev].next = c;
		prev = c;
		k->st->moves++;
		if (depth + 1 > k->deepest) k->deepest = depth + 1;
		pos_do_move(pos, mv[i].move);
		/* A position of the line again: the line repeats, and ends. */
		bool rep = false;
		Key key = pos_key(pos);
		for (int d = 0; d <= depth && !rep; d++) rep = key_equal(k->path[d], key);
		if (!rep) build(k, c, pos, depth + 1);
		pos_undo_move(pos);
		/* build() set up the child's record into recs[depth + 1]; ours
		 * is still recs[depth], mv ours. */
	}
	free(marks);
}

/* ---- writing ------------------------------------------------------------- */

typedef struct {
	FILE *f;
	bool ki2;
	Position *pos;
	const Kif *k;
	bool bad;
} Out;

static void put_comment(Out *o, const Node *nd)
{
	const char *s = o->k->text + nd->text, *end = s + nd->textlen;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		if (fprintf(o->f, "*%.*s\n", (int)n, s) < 0) o->bad = true;
		s += n + (nl ? 1 : 0);
	}
}

/* One move line (pos before the move; prev_to the last move's square). */
static void put_move(Out *o, const Node *nd, int number, Square prev_to)
{
	char text[JA_MOVE_MAX];
	if (o->ki2) {
		ja_move_write(o->pos, nd->move, prev_to, true, NULL, 0, text);
		if (fprintf(o->f, "%s\n", text) < 0) o->bad = true;
	} else {
		ja_kif_move_write(o->pos, nd->move, prev_to, text);
		if (fprintf(o->f, "%4d %s   ( 0:00/00:00:00)\n", number, text) < 0) o->bad = true;
	}
	put_comment(o, nd);
}

/* The line from node c (the move numbered number, pos before it), then the
 * variations of its moves from the last back to the first; variation: c is
 * itself a variation (its later siblings are its caller's). */
static void put_line(Out *o, uint32_t c, int number, bool variation)
{
	const Node *nodes = o->k->nodes;
	size_t len = 0;
	uint32_t line[EXPORT_KIF_MAX_PLIES + 2];
	for (uint32_t x = c; x != NONE; x = nodes[x].first) {
		Square prev = pos_history_len(o->pos) ? move_to(pos_st(o->pos)->move) : SQ_NONE;
		put_move(o, &nodes[x], number + (int)len, prev);
		line[len++] = x;
		pos_do_move(o->pos, nodes[x].move);
	}
	for (size_t i = len; i-- > 0;) {
		pos_undo_move(o->pos);
		if (i == 0 && variation) break;
		for (uint32_t s = nodes[line[i]].next; s != NONE; s = nodes[s].next) {
			if (fprintf(o->f, "\n変化：%d手\n", number + (int)i) < 0) o->bad = true;
			put_line(o, s, number + (int)i, true);
		}
	}
}

static const char *moves_name(const ExportOptions *opt, char *buf, size_t n)
{
	if (opt->moves == EXPORT_MOVES_BEST) return "the best";
	if (opt->moves == EXPORT_MOVES_ALL) return "every valued move";
	snprintf(buf, n, "the moves within %d of the best", opt->window);
	return buf;
}

/* The options that cut the tree, as given ("--plies 6, --max-ply 2"). */
static const char *cuts(const Kif *k, char *buf, size_t n)
{
	const ExportOptions *opt = k->opt;
	int len = snprintf(buf, n, "--plies %d", k->plies);
	if (opt->max_ply > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", --max-ply %d", opt->max_ply);
	if (opt->min_depth > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", --min-depth %d", opt->min_depth);
	if (opt->min_games > 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", --min-games %u", opt->min_games);
	return buf;
}

/* Converts the UTF-8 file at from into Shift_JIS (CP932) at to. */
static int to_sjis(const char *from, const char *to, char *err)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	iconv_t cd = iconv_open("CP932", "UTF-8");
	int rc = 0;
	if (!in || !out || cd == (iconv_t)-1) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EIO, "%s: cannot convert to Shift_JIS", to);
		goto done;
	}
	char line[8192], conv[16384];
	while (fgets(line, sizeof line, in)) {
		char *ip = line, *op = conv;
		size_t il = strlen(line), ol = sizeof conv;
		if (iconv(cd, &ip, &il, &op, &ol) == (size_t)-1) {
			/* A character Shift_JIS lacks (a note's, say): '?' instead. */
			while (il > 0) {
				if (iconv(cd, &ip, &il, &op, &ol) != (size_t)-1) break;
				size_t u = ja_char_len((unsigned char)*ip);
				ip += u <= il ? u : il;
				il -= u <= il ? u : il;
				if (ol) *op++ = '?', ol--;
			}
		}
		if (fwrite(conv, 1, sizeof conv - ol, out) != sizeof conv - ol) {
			rc = fail(err, EXPORT_ERRLEN, EXPORT_EIO, "%s: write error", to);
			break;
		}
	}
done:
	if (cd != (iconv_t)-1) iconv_close(cd);
	if (in) fclose(in);
	if (out && fclose(out) != 0 && !rc)
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EIO, "%s: write error", to);
	return rc;
}

int export_kif(ExportStats *stats, BookDB *db, const char *out_path, const ExportOptions *opt,
               char *err)
{
	ExportStats st;
	memset(&st, 0, sizeof st);
	Kif k = {.opt = opt, .st = &st, .err = err};
	k.plies = opt->plies > 0 ? opt->plies : EXPORT_KIF_PLIES;
	if (k.plies > EXPORT_KIF_MAX_PLIES) k.plies = EXPORT_KIF_MAX_PLIES;
	size_t plen = strlen(out_path) + 16;
	char *tmp = malloc(plen), *tmp8 = malloc(plen);
	Position *pos = malloc(sizeof *pos);
	Key root;
	FILE *f = NULL;
	int rc = 0;
	k.recs = malloc((size_t)(k.plies + 1) * sizeof *k.recs);
	k.child = malloc(sizeof *k.child);
	k.mv = malloc((size_t)(k.plies + 1) * BOOKDB_MAX_MOVES * sizeof *k.mv);
	if (!tmp || !tmp8 || !pos || !k.recs || !k.child || !k.mv) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(tmp, plen, "%s.tmp", out_path);
	snprintf(tmp8, plen, "%s.utf8", out_path);
	if (opt->nroots > 1) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL, "a KIF record has one root, not %d",
		          opt->nroots);
		goto done;
	}
	if (opt->min_ply > 0) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL,
		          "a KIF record starts at its root: no --min-ply (give the root)");
		goto done;
	}
	const char *spec = opt->nroots ? opt->roots[0] : "startpos";
	char perr[SHOGI_ERRLEN];
	if (position_parse(pos, spec, perr) < 0) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL, "root '%s': %s", spec, perr);
		goto done;
	}
	root = pos_key(pos);
	uint64_t nrec = 0;
	if ((rc = bookdb_txn_begin(&k.txn, db, false)) == 0)
		rc = bookdb_count(&nrec, k.txn, BOOKDB_POS);
	if (rc < 0) {
		rc = fail(err, EXPORT_ERRLEN, rc == BOOKDB_ENOMEM ? EXPORT_ENOMEM : EXPORT_EBOOK,
		          "cannot read the book: %s", bookdb_strerror(rc));
		goto done;
	}
	st.records = (size_t)nrec;
	const uint8_t *rv;
	size_t rl;
	if (bookdb_get_raw(&rv, &rl, k.txn, root) != 0) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL, "root '%s' is not in the book", spec);
		goto done;
	}
	/* The root is node 0, a move of none; the record starts from its
	 * position alone (no moves before it to write). */
	Position *start = malloc(sizeof *start);
	if (!start) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_ENOMEM, "out of memory");
		goto done;
	}
	if (position_parse(start, spec, NULL) < 0) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EINVAL, "root '%s': cannot be set up", spec);
		free(start);
		goto done;
	}
	if (new_node(&k, MOVE_NONE) != NONE) build(&k, 0, start, 0);
	if (k.rc < 0) {
		rc = k.rc;
		free(start);
		goto done;
	}
	/* Written in UTF-8, then converted for a Shift_JIS file. */
	const char *w = opt->sjis ? tmp8 : tmp;
	if (!(f = fopen(w, "wb"))) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EIO, "%s: cannot create", w);
		free(start);
		goto done;
	}
	char mv[64], cut[128];
	pos_set_startpos(pos);
	bool startpos = key_equal(root, pos_key(pos));
	if (!opt->sjis)
		fputs(opt->ki2 ? "#KI2 version=2.0 encoding=UTF-8\n"
		               : "#KIF version=2.0 encoding=UTF-8\n",
		      f);
	fprintf(f, "# joseki book export%s%s\n", opt->book_name ? ": " : "",
	        opt->book_name ? opt->book_name : "");
	if (startpos) {
		fputs("手合割：平手\n", f);
	} else {
		char board[2048];
		ja_board_write(start, board, sizeof board);
		fputs(board, f);
	}
	fputs("先手：\n後手：\n", f);
	if (!opt->ki2) fputs("手数----指手---------消費時間--\n", f);
	/* The tree's real depth, then what cut it. */
	fprintf(f, "*joseki: the book from %s, %d pl%s deep (%s), %s%s%s\n", spec, k.deepest,
	        k.deepest == 1 ? "y" : "ies", cuts(&k, cut, sizeof cut),
	        moves_name(opt, mv, sizeof mv),
	        opt->side == EXPORT_SIDE_BOTH    ? " for both sides"
	        : opt->side == EXPORT_SIDE_BLACK ? " for Black (White: every reply)"
	                                         : " for White (Black: every reply)",
	        "");
	Out o = {f, opt->ki2, start, &k, false};
	if (k.nodes[0].first != NONE) {
		/* Numbered from 1 after the root, as after a KIF's board diagram. */
		put_line(&o, k.nodes[0].first, 1, false);
	}
	free(start);
	bool bad = o.bad || ferror(f);
	if (fclose(f) != 0 || bad) {
		f = NULL;
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EIO, "%s: write error", w);
		goto done;
	}
	f = NULL;
	if (opt->sjis && (rc = to_sjis(tmp8, tmp, err)) < 0) goto done;
	if (rename(tmp, out_path) != 0) {
		rc = fail(err, EXPORT_ERRLEN, EXPORT_EIO, "%s: cannot rename to %s", tmp, out_path);
		goto done;
	}
	rc = 0;
done:
	if (f) fclose(f);
	if (tmp8) unlink(tmp8);
	if (rc < 0 && tmp) unlink(tmp);
	bookdb_txn_abort(k.txn);
	free(k.nodes);
	free(k.text);
	free(k.recs);
	free(k.child);
	free(k.mv);
	free(pos);
	free(tmp);
	free(tmp8);
	st.tree_plies = k.deepest;
	if (stats) *stats = st;
	return rc;
}

/*
 * joseki query BOOK POS [--json] [--with-avoided] — the book's answer for one
 * position (docs/bookdb.md "query"): moves sorted best first, by minimax value
 * when minimax has run, else by the move's own analysis; moves without a value
 * ("–", and why) after those with one, by games played; moves joseki prune
 * marked avoided last and never the best move, unless --with-avoided; a move
 * joseki prefer marked first where its value is within its window of the
 * best. Marks are shown with their source, time and note. A game
 * comment is shown in its own column ("game"), never as a value.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "shogi/errmsg.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

/* printf's width for s so that it takes w columns: an en dash is three
 * bytes and one column. */
static int pad_width(const char *s, int w)
{
	return strcmp(s, "–") ? w : w + 2;
}

/* "  avoided (hand, 2026-11-29 01:02 UTC: note)", "  preferred within 50
 * (prune)": a marked move's mark, or nothing. */
static void print_mark(const BookMove *m, const BookMark *marks, int nmarks)
{
	const BookMark *mk = NULL;
	for (int i = 0; i < nmarks && !mk; i++)
		if (marks[i].move == m->move) mk = &marks[i];
	if (!mk) return;
	if (mk->kind == BOOKDB_MARK_AVOID)
		printf("  avoided");
	else
		printf("  preferred within %u", mk->window);
	printf(" (%s", bookdb_mark_source_name(mk->source));
	if (mk->known) {
		char when[BOOKDB_MARK_WHEN_MAX];
		printf(", %s", bookdb_mark_when(mk->time, when));
		if (mk->note[0]) printf(": %s", mk->note);
	}
	printf(")");
}

int cmd_query(int argc, char **argv)
{
	const char *book = NULL;
	CliArgs words = {0};
	bool json = false, with_avoided = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_REST("POS", &words, 1,
	             "the position: startpos or an SFEN, either with moves ..., or a bare move "
	             "list from the start (7g7f 3c3d); one argument, quoted, or its words"),
	    CLI_FLAG("--json", &json, "the answer as JSON"),
	    CLI_FLAG("--with-avoided", &with_avoided,
	             "rank the moves marked avoided (joseki avoid, prune) as the others"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"query", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	/* Its words as one spec: `query BOOK startpos moves 7g7f` as quoted. */
	size_t len = 1;
	for (size_t i = 0; i < words.n; i++) len += strlen(words.v[i]) + 1;
	char *spec = malloc(len);
	if (!spec) {
		joseki_error("out of memory");
		return 1;
	}
	spec[0] = 0;
	for (size_t i = 0; i < words.n; i++) {
		if (i) strcat(spec, " ");
		strcat(spec, words.v[i]);
	}
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	BookMark *marks = NULL;
	int ret = 1;
	char perr[SHOGI_ERRLEN], err[BOOKDB_ERRLEN];
	if (!pos || !rec) {
		joseki_error("out of memory");
		goto done;
	}
	if (bookdb_query_position(pos, spec, perr) < 0) {
		char shown[512];
		joseki_error("query: bad position '%s': %s",
		             errmsg_escape(shown, sizeof shown, spec, strlen(spec)), perr);
		ret = 2;
		goto done;
	}
	BookDBOptions opt = {.read_only = true, .random = true};
	int rc = bookdb_open(&db, book, &opt, err);
	if (rc) {
		joseki_error("query: %s", err);
		goto done;
	}
	if ((rc = bookdb_txn_begin(&txn, db, false))) {
		joseki_error("query: %s: %s", book, bookdb_strerror(rc));
		goto done;
	}
	rc = bookdb_query_ex(rec, txn, pos, with_avoided);
	if (rc < 0) {
		char hex[KEY_HEX_LEN];
		key_to_hex(pos_key(pos), hex);
		joseki_error("query: %s: record %s: %s", book, hex, bookdb_strerror(rc));
		goto done;
	}
	int in_book = rc == 1, minimax = (rec->flags & BOOKDB_REC_MINIMAX) != 0;
	int nmarks = in_book ? bookdb_marks_load(&marks, txn, pos_key(pos), rec) : 0;
	if (nmarks < 0) {
		joseki_error("query: %s: the marks: %s", book, bookdb_strerror(nmarks));
		goto done;
	}
	if (json) {
		size_t len;
		char *text =
		    bookdb_query_json_ex(rec, in_book, pos, &len, with_avoided, marks, nmarks);
		if (!text) {
			joseki_error("out of memory");
			goto done;
		}
		fwrite(text, 1, len, stdout);
		free(text);
	} else {
		char hex[KEY_HEX_LEN], sfen[SFEN_MAX];
		key_to_hex(pos_key(pos), hex);
		sfen_write(pos, sfen, sizeof sfen);
		printf("sfen %s\nkey %s\n", sfen, hex);
		if (!in_book) {
			printf("not in book\n");
		} else {
			printf("ply %d%s\n", rec->min_ply,
			       (rec->flags & BOOKDB_REC_THOUGHT) ? "" : " (not thought)");
			printf("%-6s %6s %-12s %6s %5s %6s %8s %8s %6s %8s\n", "move", "value",
			       "from", "eval", "depth", "game", "count", "wins", "draws", "losses");
			for (int i = 0; i < rec->nmoves; i++) {
				const BookMove *m = &rec->moves[i];
				/* "–" (an en dash) where there is nothing: width by hand. */
				char usi[USI_MOVE_MAX], v[16], e[16] = "–", d[16] = "–",
				                               g[16] = "–", from[40];
				usi_move_write(m->move, usi);
				const char *src = bookdb_value_source(rec, m);
				if (src) {
					snprintf(v, sizeof v, "%d", bookdb_move_value(rec, m));
					if (minimax && m->dist > 0)
						snprintf(from, sizeof from, "%s/%u", src, m->dist);
					else
						snprintf(from, sizeof from, "%s", src);
				} else {
					snprintf(v, sizeof v, "–");
					snprintf(from, sizeof from, "–");
				}
				if (bookdb_move_analysed(m)) {
					snprintf(e, sizeof e, "%d", m->eval);
					snprintf(d, sizeof d, "%d", m->depth);
				} else if (bookdb_move_commented(m)) {
					snprintf(g, sizeof g, "%d", m->eval);
				}
				printf("%-6s %*s %-*s %*s %*s %*s %8u %8u %6u %8u%s%s", usi,
				       pad_width(v, 6), v, pad_width(from, 12), from,
				       pad_width(e, 6), e, pad_width(d, 5), d, pad_width(g, 6), g,
				       m->count, m->wins, m->draws, m->losses,
				       src ? "" : "  unvalued: ",
				       src ? "" : bookdb_unvalued_reason(rec, m));
				if (bookdb_move_declined(rec, m)) {
					/* Its value is its own, and does not count. */
					char twin[USI_MOVE_MAX];
					usi_move_write(move_declined_promotion(rec->board, m->move),
					               twin);
					printf("  declined: not played while %s has a value", twin);
				}
				int mate = bookdb_move_mate(rec, m);
				if (mate)
					printf("  %s in %d", mate > 0 ? "mate" : "mated",
					       abs(mate));
				print_mark(m, marks, nmarks);
				printf("\n");
			}
		}
		Move legal[MOVEGEN_MAX];
		if (movegen_legal(pos, legal) == 0)
			printf("no legal move: the side to move is mated\n");
	}
	ret = 0;
done:
	free(spec);
	free(marks);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	return ret;
}

/*
 * joseki avoid BOOK POS MOVE [--note TEXT] [--undo] [--no-minimax] [--json] [--quiet]
 * joseki prefer BOOK POS MOVE [--window CP] [--note TEXT] [--undo] [--no-minimax] [--json]
 *   [--quiet]
 * joseki marks BOOK [--json]
 *
 * Hand marks on book moves (bookdb/marks.h, docs/bookdb.md "Marks"): the
 * book side never plays an avoided move; it plays a preferred one where the
 * move is valued at most CP below the best (default 50). The mark is kept in
 * the book with its note and time, shown by query, the HTTP API and the
 * explorer; --undo takes exactly that mark off, restoring what it found (the
 * mark it replaced, or no move where it added one). MOVE is a USI move (7g7f) or
 * written as a player writes it (７六歩, ▲７六歩(77)). The record is written
 * through the store (logged for the incremental minimax), then minimax backs
 * the values up unless --no-minimax. `joseki marks` lists the book's marks,
 * prune's too.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/marks.h"
#include "minimax/bookmm.h"
#include "shogi/japanese.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/cli_minimax.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

/* Whether s is valid UTF-8 without control characters other than tab. */
static bool note_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		if (*p < 0x20 && *p != '\t') return false;
		size_t n = *p < 0x80             ? 1
		           : (*p & 0xE0) == 0xC0 ? 2
		           : (*p & 0xF0) == 0xE0 ? 3
		           : (*p & 0xF8) == 0xF0 ? 4
		                                 : 0;
		if (!n || (n == 2 && *p < 0xC2)) return false;
		for (size_t i = 1; i < n; i++)
			if ((p[i] & 0xC0) != 0x80) return false;
		p += n;
	}
	return true;
}

static int mark_cmd(int argc, char **argv, BookMarkKind kind)
{
	const char *book = NULL, *spec = NULL, *move_text = NULL, *note = "";
	bool undo = false, no_minimax = false, json = false, quiet = false;
	uint64_t window = BOOKDB_PREFER_WINDOW;
	const CliOpt common[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_ARG("POS", &spec, "the position: startpos, an SFEN, or either with moves ..."),
	    CLI_ARG("MOVE", &move_text, "the move: USI (7g7f) or as a player writes it (７六歩)"),
	    CLI_STR("--note", &note, "TEXT", "why, kept with the mark (UTF-8; default: none)"),
	    CLI_FLAG("--undo", &undo, "take this mark off instead"),
	    CLI_FLAG("--no-minimax", &no_minimax, "no minimax after the mark"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliOpt prefer_opts[] = {
	    CLI_GROUP(common),
	    CLI_NUM("--window", &window, 0, 65535, "CP",
	            "played where its value is at most CP below the best (default 50)"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {kind == BOOKDB_MARK_AVOID ? "avoid" : "prefer",
	                    kind == BOOKDB_MARK_AVOID ? common : prefer_opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (strlen(note) > BOOKDB_NOTE_MAX)
		return cli_usage_error(&cmd, "--note is longer than %d bytes", BOOKDB_NOTE_MAX);
	if (!note_ok(note))
		return cli_usage_error(&cmd,
		                       "--note is not UTF-8 text (or holds control characters)");
	shogi_init();
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookMark *mark = calloc(1, sizeof *mark);
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	int ret = 1, rc;
	char perr[SHOGI_ERRLEN], err[BOOKDB_MARK_ERRLEN], berr[BOOKDB_ERRLEN];
	if (!pos || !rec || !mark) {
		joseki_error("out of memory");
		goto done;
	}
	if (position_parse(pos, spec, perr) < 0) {
		joseki_error("%s: bad position '%s': %s", cmd.name, spec, perr);
		ret = 2;
		goto done;
	}
	/* A USI move (7g7f) says why it is not legal; anything else is read as a
	 * player writes it. */
	Move m;
	size_t mlen = strlen(move_text);
	if (usi_move_parse(&m, move_text, mlen, NULL) == SHOGI_OK
	        ? movegen_why_illegal(pos, m, perr) < 0
	        : ja_move_parse(&m, pos,
	                        pos_history_len(pos) ? move_to(pos_st(pos)->move) : SQ_NONE,
	                        move_text, mlen, perr) < 0) {
		joseki_error("%s: '%s' is not a legal move in %s (%s)", cmd.name, move_text, spec,
		             perr);
		ret = 2;
		goto done;
	}
	BookDBOptions existing = {.must_exist = true};
	if (bookdb_open(&db, book, &existing, berr) < 0) {
		db = NULL;
		joseki_error("%s: %s", cmd.name, berr);
		goto done;
	}
	bool changed = true;
	if ((rc = bookdb_txn_begin(&txn, db, true)) < 0) {
		joseki_error("%s: %s: %s", cmd.name, book, bookdb_strerror(rc));
		goto done;
	}
	if (undo) {
		rc = bookdb_mark_clear(txn, rec, pos_key(pos), m, kind, err);
	} else {
		mark->kind = (uint8_t)kind;
		mark->source = BOOKDB_MARK_HAND;
		mark->known = true;
		mark->time = (int64_t)time(NULL);
		mark->window = (uint16_t)window;
		snprintf(mark->note, sizeof mark->note, "%s", note);
		rc = bookdb_mark_set(txn, rec, pos_key(pos), pos, m, mark, &changed, err);
	}
	if (rc < 0) {
		joseki_error("%s: %s: %s in %s: %s", cmd.name, book, move_text, spec, err);
		goto done;
	}
	rc = bookdb_txn_commit(txn);
	txn = NULL;
	if (rc < 0) {
		joseki_error("%s: %s: %s", cmd.name, book, bookdb_strerror(rc));
		goto done;
	}
	BookmmStats mm;
	bool ran = false, busy = false;
	char mmerr[BOOKMM_ERRLEN];
	if (changed && !no_minimax) {
		/* A whole-book run on a big book takes a while: its progress on a
		 * terminal. */
		if (cli_minimax_after(&mm, &busy, db, cmd.name, !quiet && !json && isatty(2),
		                      mmerr) < 0) {
			joseki_error("%s: the mark is made; minimax: %s: %s", cmd.name, book,
			             mmerr);
			goto done;
		}
		ran = !busy;
	}
	char usi[USI_MOVE_MAX];
	usi_move_write(m, usi);
	const char *what = undo ? "cleared" : changed ? "marked" : "unchanged";
	if (json) {
		json_t *o =
		    json_pack("{s:s,s:s,s:s,s:s,s:b}", "kind", bookdb_mark_kind_name(kind), "move",
		              usi, "position", spec, "result", what, "minimax", ran);
		if (o && kind == BOOKDB_MARK_PREFER && !undo)
			json_object_set_new(o, "window", json_integer((json_int_t)window));
		if (joseki_print_json(o, 0) < 0) goto done;
	} else {
		printf("%s %s %s: %s", cmd.name, usi, spec, what);
		if (busy) printf("; minimax left to the run under way on the book (and the next)");
		if (ran) printf("; minimax %s", mm.incremental ? "incremental" : "whole book");
		printf("\n");
	}
	ret = 0;
done:
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(mark);
	free(rec);
	free(pos);
	return ret;
}

int cmd_avoid(int argc, char **argv)
{
	return mark_cmd(argc, argv, BOOKDB_MARK_AVOID);
}

int cmd_prefer(int argc, char **argv)
{
	return mark_cmd(argc, argv, BOOKDB_MARK_PREFER);
}

/* What `joseki marks` lists: the JSON array, or NULL for text lines. */
typedef struct {
	json_t *arr;
	size_t n;
} MarksOut;

static int list_marks(void *ctx, const BookRecord *rec, const BookMark *marks, int n)
{
	MarksOut *o = ctx;
	Position *pos = malloc(sizeof *pos);
	if (!pos) return BOOKDB_ENOMEM;
	char sfen[SFEN_MAX] = "", usi[USI_MOVE_MAX], when[BOOKDB_MARK_WHEN_MAX];
	if (bookdb_record_position(pos, rec, NULL) == 0) sfen_write(pos, sfen, sizeof sfen);
	free(pos);
	for (int i = 0; i < n; i++) {
		const BookMark *mk = &marks[i];
		usi_move_write(mk->move, usi);
		const char *kind = bookdb_mark_kind_name(mk->kind),
		           *source = bookdb_mark_source_name(mk->source);
		o->n++;
		if (!o->arr) {
			printf("%s\t%s\t%s", sfen, usi, kind);
			if (mk->kind == BOOKDB_MARK_PREFER) printf(" %u", mk->window);
			printf("\t%s\t%s\t%s\n", source,
			       mk->known ? bookdb_mark_when(mk->time, when) : "–",
			       mk->known ? mk->note : "");
			continue;
		}
		json_t *m = json_pack("{s:s,s:s,s:s,s:s}", "sfen", sfen, "move", usi, "kind", kind,
		                      "source", source);
		if (!m) return BOOKDB_ENOMEM;
		if (mk->kind == BOOKDB_MARK_PREFER)
			json_object_set_new(m, "window", json_integer(mk->window));
		json_object_set_new(m, "time",
		                    mk->known ? json_integer((json_int_t)mk->time) : json_null());
		json_object_set_new(m, "note", mk->known ? json_string(mk->note) : json_null());
		if (json_array_append_new(o->arr, m) < 0) return BOOKDB_ENOMEM;
	}
	return 0;
}

int cmd_marks(int argc, char **argv)
{
	const char *book = NULL;
	bool json = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_FLAG("--json", &json, "one JSON array, an object a mark, instead of the lines"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"marks", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	shogi_init();
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	MarksOut out = {json ? json_array() : NULL, 0};
	char err[BOOKDB_ERRLEN];
	int ret = 1, rc;
	BookDBOptions ro = {.read_only = true};
	if (json && !out.arr) {
		joseki_error("out of memory");
		goto done;
	}
	if (bookdb_open(&db, book, &ro, err) < 0) {
		db = NULL;
		joseki_error("marks: %s", err);
		goto done;
	}
	if ((rc = bookdb_txn_begin(&txn, db, false)) < 0 ||
	    (rc = bookdb_marks_each(txn, list_marks, &out)) < 0) {
		joseki_error("marks: %s: %s", book, bookdb_strerror(rc));
		goto done;
	}
	if (json) {
		json_t *arr = out.arr;
		out.arr = NULL;
		if (joseki_print_json(arr, 0) < 0) goto done;
	}
	ret = 0;
done:
	json_decref(out.arr);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	return ret;
}

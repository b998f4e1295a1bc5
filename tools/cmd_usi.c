/*
 * joseki usi [--book BOOK]: the built-in engine as a USI engine on stdin and
 * stdout (search/usi_server.h); with --book it plays the book's best legal
 * move (bookdb/query.h's order) where the book knows the position. The book
 * is followed: once BOOK/data.mdb is another file (joseki compact, or a
 * whole-book minimax that rebuilt the book), the next book move is looked up
 * in the new one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "search/usi_server.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

typedef struct {
	BookDB *db;
	BookRecord *rec;
} Book;

static Move book_move(void *ctx, const Position *pos)
{
	Book *b = ctx;
	if (!bookdb_file_current(b->db)) {
		char err[BOOKDB_ERRLEN];
		if (bookdb_reopen(b->db, err) < 0)
			fprintf(stderr,
			        "usi: the book's file was replaced, and opening the new one "
			        "failed: %s\n",
			        err);
	}
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, b->db, false) < 0) return MOVE_NONE;
	int rc = bookdb_query(b->rec, txn, pos);
	bookdb_txn_abort(txn);
	return rc == 1 ? bookdb_best_move(b->rec, pos) : MOVE_NONE;
}

int cmd_usi(int argc, char **argv)
{
	const char *book = NULL;
	const CliOpt opts[] = {
	    CLI_STR("--book", &book, "BOOK",
	            "play the book's best move where it has one (default: no book)"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"usi", opts, "docs/search.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	UsiServerConfig cfg = {.in = stdin, .out = stdout, .log = stderr};
	Book b = {0};
	int ret = 1;
	if (book) {
		char err[BOOKDB_ERRLEN];
		BookDBOptions opt = {.read_only = true, .random = true};
		if (bookdb_open(&b.db, book, &opt, err) < 0) {
			joseki_error("usi: %s", err);
			goto done;
		}
		if (!(b.rec = malloc(sizeof *b.rec))) {
			joseki_error("usi: out of memory");
			goto done;
		}
		cfg.book_move = book_move;
		cfg.book_ctx = &b;
	}
	if (usi_server_run(&cfg) < 0) {
		joseki_error("usi: out of memory");
		goto done;
	}
	ret = 0;
done:
	free(b.rec);
	bookdb_free(b.db);
	return ret;
}

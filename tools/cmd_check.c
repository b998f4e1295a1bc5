/*
 * joseki check BOOK [--repair NEWBOOK] [--quiet] — verifies the store's
 * invariants (bookdb/check.h). Prints one line per problem naming the
 * record's key, then a summary line; exit 1 if anything failed. Progress on
 * a terminal (not with --quiet). --repair also copies every sound
 * record (and every record whose faults are in its moves only, without them)
 * and the ingested games' ids into the new book NEWBOOK.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bookdb/check.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

#define CHECK_MAX_REPORTS 1000 /* lines printed; the count is always exact */

typedef struct {
	const char *book;
	uint64_t shown;
	JosekiProgress progress;
} Out;

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	joseki_progress_every(&((Out *)ctx)->progress, "check: ", done, total);
}

static void on_problem(void *ctx, Key key, const char *problem)
{
	Out *o = ctx;
	if (o->shown++ >= CHECK_MAX_REPORTS) return;
	joseki_progress_off(&o->progress);
	if (!key.hi && !key.lo) { /* not a record's: the games database */
		printf("%s: %s\n", o->book, problem);
		return;
	}
	char hex[KEY_HEX_LEN];
	key_to_hex(key, hex);
	printf("%s: record %s: %s\n", o->book, hex, problem);
}

int cmd_check(int argc, char **argv)
{
	const char *book = NULL, *repair = NULL;
	bool quiet = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_STR("--repair", &repair, "NEWBOOK",
	            "copy what is sound into the new book NEWBOOK (default: only check)"),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"check", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookDBOptions opt = {.read_only = true, .random = true}; /* passes read ahead: bookdb.h */
	if (bookdb_open(&db, book, &opt, err)) {
		joseki_error("check: %s", err);
		return 1;
	}
	Out o = {book, 0, {0}};
	BookCheckStats st;
	int rc = bookdb_check(&st, db, repair, on_problem, &o,
	                      !quiet && isatty(2) ? on_progress : NULL, &o, err);
	bookdb_free(db);
	joseki_progress_off(&o.progress);
	if (rc < 0) {
		joseki_error("check: %s", err); /* it names the book */
		return 1;
	}
	if (st.stopped)
		printf("%s: after %llu records: %s\n", book, (unsigned long long)st.records,
		       bookdb_strerror(st.stop_code));
	if (st.unread)
		printf(
		    "%s: %llu of the %llu records the database counts could not be read (its pages "
		    "below the records are damaged; a backup holds them)%s\n",
		    book, (unsigned long long)st.unread, (unsigned long long)st.expected,
		    repair ? ": the repaired book lacks them" : "");
	if (o.shown > CHECK_MAX_REPORTS)
		printf("%s: ... %llu more problems not shown\n", book,
		       (unsigned long long)(o.shown - CHECK_MAX_REPORTS));
	if (st.merge_unfinished)
		printf("%s: a joseki merge into this book was interrupted: run it again to finish "
		       "(the book holds part of the sources)\n",
		       book);
	if (st.minimax_unfinished)
		printf("%s: a minimax run on this book was stopped before its end: some values are "
		       "an older run's until the next run (joseki minimax, or a coordinator's)\n",
		       book);
	printf("check: %llu records, ", (unsigned long long)st.records);
	if (st.unread) printf("%llu unreadable, ", (unsigned long long)st.unread);
	printf("%llu bad, %llu games, %llu bad", (unsigned long long)st.bad,
	       (unsigned long long)st.game_entries, (unsigned long long)st.bad_games);
	if (st.mark_entries)
		printf(", %llu marks, %llu bad", (unsigned long long)st.mark_entries,
		       (unsigned long long)st.bad_marks);
	char peak[JOSEKI_PEAK_LEN];
	printf("; peak memory %s\n", joseki_peak_memory(peak, sizeof peak));
	/* What is bad, by kind: "1 bad record, 2 bad games". */
	char what[200] = "";
	if (st.unread)
		snprintf(what, sizeof what, "%llu record%s could not be read",
		         (unsigned long long)st.unread, st.unread == 1 ? "" : "s");
	else if (st.stopped)
		snprintf(what, sizeof what, "the records past %llu could not be read",
		         (unsigned long long)st.records);
	const unsigned long long n[3] = {st.bad, st.bad_games, st.bad_marks};
	static const char *const KIND[3] = {"record", "game", "mark"};
	for (int i = 0; i < 3; i++)
		if (n[i])
			snprintf(what + strlen(what), sizeof what - strlen(what), "%s%llu bad %s%s",
			         what[0] ? ", " : "", n[i], KIND[i], n[i] == 1 ? "" : "s");
	st.bad += st.bad_games + st.bad_marks + st.unread + st.stopped;
	if (repair)
		printf("repair: %s: %llu records copied, %llu without their faulty moves, %llu "
		       "dropped, "
		       "%llu game ids\n",
		       repair, (unsigned long long)st.copied, (unsigned long long)st.repaired,
		       (unsigned long long)st.dropped, (unsigned long long)st.games);
	if (st.bad) {
		joseki_error("check: %s: %s%s", book, what,
		             repair ? " (the sound ones are in the repaired book)" : "");
		return 1;
	}
	return 0;
}

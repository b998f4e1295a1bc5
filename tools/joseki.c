/* joseki — shogi opening-book builder and server: the command dispatcher. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shogi/position.h"
#include "tools/commands.h"

static const struct {
	const char *name;
	joseki_cmd_fn fn;
	const char *summary;
} COMMANDS[] = {
    {"perft", cmd_perft, "count leaves of the legal-move tree"},
    {"replay", cmd_replay, "replay game records (CSA, KIF, KI2, JKF, USI lines) under the rules"},
    {"ingest", cmd_ingest, "add game records (CSA, KIF, KI2, JKF, USI lines) to the book"},
    {"fetch", cmd_fetch, "download floodgate days and ingest them"},
    {"import", cmd_import, "merge YaneuraOu DB2016 books and Apery binary books"},
    {"query", cmd_query, "the book's answer for one position"},
    {"stats", cmd_stats, "sizes and counts"},
    {"check", cmd_check, "verify the store's invariants (and copy what is sound into a new book)"},
    {"compact", cmd_compact, "rewrite the book without its free pages"},
    {"backup", cmd_backup, "a checked copy of the live book into a new directory"},
    {"serve", cmd_serve,
     "the book over HTTP/JSON, its explorer at /, and with --work the cluster coordinator"},
    {"token", cmd_token, "make a worker token for serve --work (printed once)"},
    {"synth", cmd_synth, "build a synthetic analysed book"},
    {"select", cmd_select, "leaves the selector would send next"},
    {"think", cmd_think, "grow the book"},
    {"minimax", cmd_minimax, "back values up over the book (incremental unless --full)"},
    {"export", cmd_export, "write a YaneuraOu or Apery book, or the tree as a KIF or KI2 record"},
    {"peta-shock", cmd_peta_shock, "YaneuraOu makebook peta_shock"},
    {"usi", cmd_usi, "the built-in engine as a USI engine on stdin/stdout"},
    {"bench", cmd_bench, "fixed-depth search of the bench positions"},
    {"gen-games", cmd_gen_games, "write random floodgate-style games (bench corpus)"},
    {"match", cmd_match, "play games between two set-ups"},
    {"merge", cmd_merge, "merge joseki books into DST"},
    {"extend", cmd_extend, "queue where the book ran out in games as think's first roots"},
    {"prune", cmd_prune, "mark book moves that lose as avoided"},
    {"avoid", cmd_avoid, "mark a book move the book never plays (a hand mark, with a note)"},
    {"prefer", cmd_prefer, "mark a book move the book plays where it is near the best"},
    {"marks", cmd_marks, "list the book's avoided and preferred moves"},
    {"cycle", cmd_cycle, "Shiba's extension/deletion cycle"},
    {"worker", cmd_worker, "think for a coordinator"},
};

void joseki_catch_stop(void (*handler)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void joseki_error(const char *fmt, ...)
{
	va_list ap;
	fputs("joseki: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int joseki_print_json(json_t *o, size_t flags)
{
	char *text = o ? json_dumps(o, JSON_COMPACT | flags) : NULL;
	json_decref(o);
	if (!text) {
		joseki_error("out of memory");
		return -1;
	}
	puts(text);
	free(text);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: joseki COMMAND [ARGS...]   (joseki COMMAND --help: its arguments)\n\n"
	           "commands:\n");
	for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
		fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	shogi_init();
	/* Not listed: the coordinator benchmark's load generator (tools/bench_cluster.sh). */
	if (!strcmp(argv[1], "bench-work")) return cmd_bench_work(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
		if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].fn(argc - 1, argv + 1);
	joseki_error("unknown command '%s' (try 'joseki help')", argv[1]);
	return 2;
}

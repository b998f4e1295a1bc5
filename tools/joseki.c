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
    {"perft", cmd_perft, "DEPTH [--sfen POS] [--divide]   count leaves of the legal-move tree"},
    {"replay", cmd_replay,
     "INPUT... [--json]   replay game records (CSA, KIF, KI2, JKF, USI lines) under the rules"},
    {"ingest", cmd_ingest,
     "BOOK INPUT... [filters] [--json]   add game records (CSA, KIF, KI2, JKF, USI lines) to the "
     "book"},
    {"fetch", cmd_fetch,
     "BOOK --from DATE [--to DATE] [--base-url URL] [--cache DIR] [filters] [--json]   download "
     "floodgate days and ingest them"},
    {"import", cmd_import,
     "BOOK FILE.db|FILE.bin... [--prefer deeper|first|last] [--json]   merge YaneuraOu DB2016 "
     "books and Apery binary books"},
    {"query", cmd_query, "BOOK POS [--json] [--with-avoided]   the book's answer for one position"},
    {"stats", cmd_stats, "BOOK [--json]   sizes and counts"},
    {"check", cmd_check,
     "BOOK [--repair NEWBOOK]   verify the store's invariants (and copy what is sound into a new "
     "book)"},
    {"compact", cmd_compact, "BOOK [--json]   rewrite the book without its free pages"},
    {"backup", cmd_backup,
     "BOOK DIR [--compact] [--json]   a checked copy of the live book into the new DIR"},
    {"serve", cmd_serve,
     "BOOK [--listen ADDR:PORT] [--threads N] [--max-connections N] [--no-cors] [--quiet] "
     "[--work [--tokens FILE] [--lease-seconds S] [--minimax-every N|--minimax-seconds S] "
     "[--nodes N|--movetime MS|--depth D] [--multipv K]]   the book over HTTP/JSON, its explorer "
     "at /, and with --work the cluster coordinator"},
    {"token", cmd_token, "add FILE NAME   make a worker token for serve --work (printed once)"},
    {"synth", cmd_synth, "BOOK --positions N [--seed S]   build a synthetic analysed book"},
    {"select", cmd_select,
     "BOOK [--count N] [--json] [--roots FILE] [--window CP] [--kif-bonus CP]   leaves the "
     "selector would send next"},
    {"think", cmd_think,
     "BOOK [--new] [--engine builtin|PATH] [--engines N] [--nodes N|--movetime MS|--depth D] "
     "[--multipv K] "
     "[--positions N] [--time S]   grow the book"},
    {"minimax", cmd_minimax,
     "BOOK [--full] [--draw-black CP] [--draw-white CP] [--leaves thought|games] [--min-depth D] "
     "[--min-games N] [--blend W] [--blend-games N] [--json] [--quiet]   back values up over the "
     "book (incremental unless --full)"},
    {"export", cmd_export,
     "BOOK OUT [--format yaneuraou|apery] [--moves best|window|all] [--window CP] [--min-depth D] "
     "[--max-ply N] [--with-avoided] [--json] [--quiet]   write a YaneuraOu or Apery book"},
    {"peta-shock", cmd_peta_shock, "IN.db OUT.db [--shrink]   YaneuraOu makebook peta_shock"},
    {"usi", cmd_usi, "[--book BOOK]   the built-in engine as a USI engine on stdin/stdout"},
    {"bench", cmd_bench, "[--depth D] [--list]   fixed-depth search of the bench positions"},
    {"gen-games", cmd_gen_games,
     "DIR --games N [--seed S]   write random floodgate-style games (bench corpus)"},
    {"match", cmd_match,
     "--engine-a builtin|PATH --engine-b builtin|PATH [--book-a BOOK|none] [--book-b BOOK|none] "
     "[--games N] [--nodes N|--movetime MS] [--openings FILE] [--concurrency N] [--max-moves N] "
     "[--seed S] [--out DIR] [--json]   play games between two set-ups"},
    {"merge", cmd_merge,
     "DST SRC... [--dry-run] [--no-minimax] [--json]   merge joseki books into DST"},
    {"extend", cmd_extend,
     "BOOK GAMES... [--plies N] [--book-side black|white] [--book-player STR]   queue where the "
     "book ran out in games as think's first roots"},
    {"prune", cmd_prune,
     "BOOK GAMES... [--max-winrate R] [--min-games N] | BOOK --undo   mark book moves that lose "
     "as avoided"},
    {"cycle", cmd_cycle,
     "BOOK --generations G --games N [match and think options, --engine builtin|PATH]   Shiba's "
     "extension/deletion "
     "cycle"},
    {"worker", cmd_worker,
     "--server URL --token-file F [--engine builtin|PATH] [--engines N] [--option N=V]... "
     "[--name NAME] [--max-backoff S] [--positions N] [--journal FILE] [--quiet]   think for a "
     "coordinator"},
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
	fprintf(f, "usage: joseki COMMAND [ARGS...]\n\ncommands:\n");
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

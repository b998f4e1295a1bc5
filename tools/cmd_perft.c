/* joseki perft DEPTH [--sfen POS] [--divide] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

int cmd_perft(int argc, char **argv)
{
	int depth = 0;
	bool divide = false;
	const char *spec = "startpos";
	const CliOpt opts[] = {
	    CLI_ARG_NUM("DEPTH", &depth, 0, 20, "plies (0 to 20)"),
	    CLI_STR(
	        "--sfen", &spec, "POS",
	        "from this position (default: the start position; an SFEN, or startpos/sfen ... "
	        "moves ...)"),
	    CLI_FLAG("--divide", &divide, "the count under each legal move"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"perft", opts, "docs/shogi.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	static Position pos;
	char err[SHOGI_ERRLEN];
	if (position_parse(&pos, spec, err) < 0) {
		joseki_error("perft: bad position: %s", err);
		return 2;
	}
	double t0 = clock_ms_f();
	uint64_t total = 0;
	if (divide && depth > 0) {
		Move moves[MOVEGEN_MAX];
		int n = movegen_legal(&pos, moves);
		for (int i = 0; i < n; i++) {
			pos_do_move(&pos, moves[i]);
			uint64_t c = perft(&pos, depth - 1);
			pos_undo_move(&pos);
			char us[USI_MOVE_MAX];
			usi_move_write(moves[i], us);
			printf("%s %llu\n", us, (unsigned long long)c);
			total += c;
		}
	} else {
		total = perft(&pos, depth);
	}
	printf("perft %d nodes %llu time_ms %.0f\n", depth, (unsigned long long)total,
	       clock_ms_f() - t0);
	return 0;
}

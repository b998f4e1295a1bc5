/* joseki perft DEPTH [--sfen POS] [--divide] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "tools/commands.h"

int cmd_perft(int argc, char **argv)
{
	int depth = -1;
	bool divide = false;
	const char *spec = "startpos";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--divide")) {
			divide = true;
		} else if (!strcmp(argv[i], "--sfen") && i + 1 < argc) {
			spec = argv[++i];
		} else if (depth < 0 && argv[i][0] >= '0' && argv[i][0] <= '9') {
			char *end;
			long d = strtol(argv[i], &end, 10);
			if (*end || d < 0 || d > 20) {
				joseki_error("perft: bad depth '%s'", argv[i]);
				return 2;
			}
			depth = (int)d;
		} else {
			joseki_error("perft: unexpected argument '%s'\n"
			             "usage: joseki perft DEPTH [--sfen POS] [--divide]",
			             argv[i]);
			return 2;
		}
	}
	if (depth < 0) {
		joseki_error(
		    "perft: missing DEPTH\nusage: joseki perft DEPTH [--sfen POS] [--divide]");
		return 2;
	}
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

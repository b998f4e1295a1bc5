/*
 * tests/shogi/test_csa_write.c — the random game writer (csa_random_game_write,
 * `joseki gen-games`): records that the CSA reader takes and the rules replay
 * move by move, each with an evaluation comment per move, the same state
 * giving the same text, another state other games, and the opening moves drawn
 * from a small choice (games share their first plies).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/csa_write.h"
#include "shogi/position.h"

/* n games from the state seed, "/"-separated, as gen-games writes a file. */
static char *games(uint64_t seed, int n, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	assert_non_null(f);
	Position *pos = malloc(sizeof *pos);
	uint64_t rng = seed;
	for (int i = 0; i < n; i++) {
		if (i) fputs("/\n", f);
		csa_random_game_write(f, &rng, seed, i, 120, pos);
	}
	fclose(f);
	free(pos);
	return text;
}

static void test_csa_write__random_games_are_legal_and_reproducible(void **state)
{
	(void)state;
	size_t len, len2, len3;
	char *a = games(11, 30, &len), *b = games(11, 30, &len2), *c = games(12, 30, &len3);
	assert_int_equal(len, len2);
	assert_memory_equal(a, b, len); /* the same state, the same text */
	assert_false(len == len3 && !memcmp(a, c, len));
	/* Each seed's games their own ids (ingest took a second corpus for
	 * duplicates); seed 1's as they always were. */
	assert_non_null(strstr(a,
	                       "$EVENT:wdoor+floodgate-300-10F+gen_black_s11+gen_white+2026010100"
	                       "0000\n"));
	assert_non_null(strstr(c, "+gen_black_s12+gen_white+20260101000000\n"));
	size_t len1;
	char *one = games(1, 1, &len1);
	assert_non_null(strstr(one, "$EVENT:wdoor+floodgate-300-10F+gen_black+gen_white+"));
	free(one);

	KifuReader *r;
	assert_int_equal(kifu_reader_open_mem_as(&r, a, len, "gen.csa", KIFU_CSA), 0);
	Position *pos = malloc(sizeof *pos);
	int n = 0, rc;
	KifuRecord *rec;
	char first[30][8];
	while ((rc = kifu_reader_next(r, &rec)) == 1) {
		ReplayResult res;
		assert_int_equal(replay_kifu(&res, pos, rec, NULL, NULL), 0);
		if (res.error[0]) fail_msg("game %d: %s", n, res.error);
		assert_int_equal(res.plies, (int)rec->nmoves); /* every move legal */
		assert_true(rec->nmoves >= 1 && rec->nmoves <= 120);
		for (size_t i = 0; i < rec->nmoves; i++) assert_true(rec->moves[i].has_eval);
		snprintf(first[n], sizeof first[n], "%s", rec->moves[0].token);
		kifu_record_free(rec);
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, 30);
	/* The first move is one of at most three: 30 games share it. */
	int distinct = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++) seen |= !strcmp(first[i], first[j]);
		distinct += !seen;
	}
	assert_true(distinct >= 1 && distinct <= 3);
	kifu_reader_free(r);
	free(pos);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csa_write__random_games_are_legal_and_reproducible),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

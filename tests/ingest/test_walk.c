/*
 * tests/ingest/test_walk.c — the one walker of inputs (ingest/walk.h), and
 * the commands that stand on it: a directory of symbolic links to CSA files
 * is read whole by ingest and replay alike (ingest read none of them once,
 * silently); links to a directory already walked, broken links, FIFOs, dot
 * files and files not named as game files are left out and counted;
 * directories are read in byte order, archives entry by entry, with game
 * files of every format.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ingest/walk.h"
#include "tests/support/support.h"

typedef struct {
	char names[64][512];
	int n, errors;
} Seen;

static int on_file(void *ctx, char *name, char *buf, size_t len, char *error, int errnum)
{
	Seen *s = ctx;
	(void)len, (void)errnum;
	if (error) s->errors++;
	if (s->n < 64) snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
	s->n++;
	free(name);
	free(buf);
	free(error);
	return 0;
}

/* dir/links: links to the 15 floodgate files, to a KIF file, to the directory
 * itself (a loop), to nothing; a FIFO named as a game; a dot file; a README. */
static char *make_tree(const char *dir)
{
	char *links = NULL;
	assert_true(asprintf(&links, "%s/links", dir) > 0);
	assert_int_equal(mkdir(links, 0755), 0);
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(
	    ts_runf(NULL, NULL,
	            "cd '%s' && for f in '%s'/tests/data/floodgate/*.csa; do ln -s \"$f\" .; "
	            "done && ln -s '%s/tests/data/kifu-formats/kif/8mai.kif' b.kif && "
	            "ln -s '%s' loop && ln -s /nonexistent/x.csa broken.csa && "
	            "mkfifo pipe.csa && echo hi > README && echo x > .hidden.csa",
	            links, cwd, cwd, links),
	    0);
	return links;
}

static void test_walk__links_followed_and_what_is_left_out_counted(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *links = make_tree(dir);
	Seen *s = calloc(1, sizeof *s);
	WalkStats st = {0};
	WalkOptions wo = {.file = on_file, .ctx = s};
	const char *in[] = {links};
	assert_int_equal(walk_inputs(in, 1, &wo, &st), 0);
	assert_int_equal(s->n, 16);
	assert_int_equal(s->errors, 0);
	for (int i = 1; i < s->n; i++) assert_true(strcmp(s->names[i - 1], s->names[i]) < 0);
	assert_non_null(strstr(s->names[0], "/b.kif"));
	assert_int_equal(st.files, 17); /* the 16 and the README */
	assert_int_equal(st.not_games, 1);
	assert_int_equal(st.loops, 1);
	assert_int_equal(st.broken, 1);
	assert_int_equal(st.special, 1);
	assert_int_equal(st.hidden, 1);
	assert_int_equal(walk_skipped(&st), 5);
	char text[256];
	walk_skipped_text(&st, text, sizeof text);
	assert_string_equal(text, "1 file not named as a game file, 1 special file, 1 link to a "
	                          "directory already walked, 1 broken link, 1 hidden file");
	/* A name given is read whatever it is; a missing one is an error. */
	memset(s, 0, sizeof *s);
	char missing[600], readme[600];
	snprintf(missing, sizeof missing, "%s/missing.csa", dir);
	snprintf(readme, sizeof readme, "%s/README", links);
	const char *named[] = {readme, missing};
	assert_int_equal(walk_inputs(named, 2, &wo, NULL), 0);
	assert_int_equal(s->n, 2);
	assert_int_equal(s->errors, 1);
	free(s);
	ts_rmtree(dir);
	free(dir);
	free(links);
}

static void test_walk__ingest_and_replay_read_the_same_links(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *links = make_tree(dir);
	json_t *o = ts_run_json(0, "%s ingest %s/book %s --json", ts_joseki(), dir, links);
	assert_int_equal(ts_jint(o, "games_read"), 16);
	assert_int_equal(ts_jint(o, "games_ingested"), 16);
	json_t *sk = json_object_get(o, "files_skipped");
	assert_int_equal(ts_jint(sk, "links_to_walked_directories"), 1);
	assert_int_equal(ts_jint(sk, "broken_links"), 1);
	assert_int_equal(ts_jint(sk, "special"), 1);
	json_decref(o);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s ingest %s/book2 %s", ts_joseki(), dir, links), 0);
	assert_non_null(strstr(out, "16 ingested"));
	assert_non_null(strstr(err, "ingest: left out: 1 file not named as a game file"));
	free(out);
	free(err);
	o = ts_run_json(0, "%s replay %s --json", ts_joseki(), links);
	assert_int_equal(json_array_size(json_object_get(o, "games")), 16);
	json_decref(o);
	ts_rmtree(dir);
	free(dir);
	free(links);
}

static void test_walk__archives_hold_games_of_every_format(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL,
	                         "tar -czf %s/games.tar.gz -C tests/data/kifu-formats kif/8mai.kif "
	                         "ki2/denou3-1.ki2 jkf/ryuou201409020101.jkf LICENSE.txt",
	                         dir),
	                 0);
	json_t *o =
	    ts_run_json(0, "%s ingest %s/book %s/games.tar.gz --json", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(o, "games_read"), 3);
	assert_int_equal(ts_jint(o, "games_ingested"), 3);
	assert_int_equal(ts_jint(o, "errors_total"), 0);
	assert_int_equal(ts_jint(json_object_get(o, "files_skipped"), "not_game_files"), 1);
	json_decref(o);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_walk__links_followed_and_what_is_left_out_counted),
	    cmocka_unit_test(test_walk__ingest_and_replay_read_the_same_links),
	    cmocka_unit_test(test_walk__archives_hold_games_of_every_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/ingest/test_walk.c — the one walker of inputs (ingest/walk.h), and
 * the commands that stand on it: a directory of symbolic links to CSA files
 * is read whole by ingest and replay alike (ingest read none of them once,
 * silently); links to a directory already walked, broken links, FIFOs, dot
 * files and files not named as game files are left out and counted;
 * directories are read in byte order, archives entry by entry, with game
 * files of every format; a large input goes on in parts cut between records,
 * its lines counted as in the whole.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
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

static int on_file(void *ctx, WalkFile *f)
{
	Seen *s = ctx;
	if (f->error) s->errors++;
	if (s->n < 64) snprintf(s->names[s->n], sizeof s->names[0], "%s", f->name);
	s->n++;
	free(f->name);
	free(f->buf);
	free(f->error);
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
	char text[2048], want[2048];
	walk_skipped_text(&st, text, sizeof text);
	snprintf(want, sizeof want,
	         "1 file not named as a game file (%s/README), 1 special file (%s/pipe.csa), 1 "
	         "link to a directory already walked (%s/loop), 1 broken link (%s/broken.csa), 1 "
	         "hidden file (%s/.hidden.csa)",
	         links, links, links, links, links);
	assert_string_equal(text, want);
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

/* The line ends of s[0..n) as the readers count them (LF, CR LF, CR). */
static int line_ends(const char *s, size_t n)
{
	int k = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n'))) k++;
	return k;
}

/* The parts of one input: their bytes in order and where each starts. */
typedef struct {
	char *text;
	size_t len;
	int n, line[256];
	size_t off[256];
	KifuFormat format;
	int errors;
} Parts;

static int on_part(void *ctx, WalkFile *f)
{
	Parts *p = ctx;
	if (f->error) {
		p->errors++;
	} else if (p->n < 256) {
		p->text = realloc(p->text, p->len + f->len + 1);
		memcpy(p->text + p->len, f->buf, f->len);
		p->off[p->n] = p->len;
		p->line[p->n++] = f->line;
		p->len += f->len;
		p->format = f->format;
	}
	free(f->name);
	free(f->buf);
	free(f->error);
	return 0;
}

/*
 * A large CSA input (the floodgate games over and over, some copies with CR
 * LF or CR line ends, 2.2 MB) goes on in parts of at least WALK_PART_BYTES
 * (the last excepted), each cut just after a "/" line, which together are the
 * input, each numbered from its first line in the input; fed through the
 * cutter in reads of random sizes it is cut the same way. An illegal move in
 * its last record is reported at its line in the input, by ingest and replay.
 */
static void test_walk__a_large_input_goes_in_parts_cut_between_records(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600];
	snprintf(path, sizeof path, "%s/big.csa", dir);
	size_t len = 0, cap = 4 << 20;
	char *text = malloc(cap);
	for (int copy = 0; len < (size_t)9 * WALK_PART_BYTES; copy++) {
		char *games = NULL;
		assert_int_equal(
		    ts_runf(&games, NULL,
		            "for f in tests/data/floodgate/*.csa; do cat $f; echo /; done"),
		    0);
		for (char *c = games; *c; c++) {
			if (*c == '\n' && copy % 3 == 1) text[len++] = '\r';
			if (*c == '\n' && copy % 3 == 2)
				text[len++] = '\r';
			else
				text[len++] = *c;
			assert_true(len + 2 < cap);
		}
		free(games);
	}
	/* The last record: an illegal move, its line known. */
	const char *bad = "V2.2\nPI\n+\n+7776FU\n-3334FU\n+7775FU\n%TORYO\n";
	int bad_line = line_ends(text, len) + 6;
	memcpy(text + len, bad, strlen(bad));
	len += strlen(bad);
	assert_int_equal(ts_write_file(path, text, len), 0);
	Parts p = {0};
	WalkOptions wo = {.file = on_part, .ctx = &p};
	const char *in[] = {path};
	assert_int_equal(walk_inputs(in, 1, &wo, NULL), 0);
	assert_int_equal(p.errors, 0);
	assert_int_equal(p.format, KIFU_CSA);
	assert_true(p.n >= 9);
	assert_int_equal(p.len, len);
	assert_memory_equal(p.text, text, len);
	for (int i = 0; i < p.n; i++) {
		assert_int_equal(p.line[i], 1 + line_ends(text, p.off[i]));
		size_t end = i + 1 < p.n ? p.off[i + 1] : len;
		if (i + 1 < p.n) {
			assert_true(end - p.off[i] >= WALK_PART_BYTES);
			/* just after a "/" line */
			size_t e = end;
			while (e > 0 && (text[e - 1] == '\n' || text[e - 1] == '\r')) e--;
			assert_true(e > 0 && text[e - 1] == '/');
			assert_true(e == 1 || text[e - 2] == '\n' || text[e - 2] == '\r');
		}
	}
	/* In reads of random sizes, through the cutter alone: the same parts. */
	uint64_t seed = ts_seed("walk_cut");
	WalkCut c;
	walk_cut_init(&c, path);
	size_t have = 0, at = 0;
	int k = 0;
	char *buf = malloc(len + 1);
	for (;;) {
		size_t n;
		int r = walk_cut_next(&c, buf, have, at == len, &n);
		if (r == WALK_CUT_END) break;
		assert_int_not_equal(r, WALK_CUT_ERROR);
		if (r == WALK_CUT_PART) {
			assert_true(k < p.n);
			assert_int_equal(c.part_line, p.line[k]);
			assert_int_equal(n, (k + 1 < p.n ? p.off[k + 1] : len) - p.off[k]);
			memmove(buf, buf + n, have - n);
			have -= n;
			k++;
			continue;
		}
		size_t step = 1 + ts_rand(&seed) % 70000;
		if (step > len - at) step = len - at;
		memcpy(buf + have, text + at, step);
		have += step;
		at += step;
	}
	assert_int_equal(k, p.n);
	free(buf);
	/* The illegal move, at its line in the whole input. */
	json_t *o = ts_run_json(0, "%s ingest %s/book %s --json --quiet", ts_joseki(), dir, path);
	json_t *e = json_array_get(json_object_get(o, "errors"), 0);
	assert_int_equal(ts_jint(o, "errors_total"), 1);
	assert_int_equal(ts_jint(e, "line"), bad_line);
	assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "+7775FU"));
	json_decref(o);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s replay %s", ts_joseki(), path), 0);
	char want[64];
	snprintf(want, sizeof want, "error: line %d:", bad_line);
	assert_non_null(strstr(out, want));
	free(out);
	free(p.text);
	free(text);
	ts_rmtree(dir);
	free(dir);
}

/* True when this process cannot list dir's entries (opendir or readdir fails). */
static bool unlistable(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) return true;
	bool failed = false;
	for (;;) {
		errno = 0;
		if (!readdir(d)) {
			failed = errno != 0;
			break;
		}
	}
	closedir(d);
	return failed;
}

/*
 * A directory named that cannot be listed is an error naming it (ingest exits
 * 1), not a special file left out: /proc/1/map_files, which opens but refuses
 * its entries (EPERM from getdents without CAP_SYS_ADMIN, root too) and is on
 * a kernel file system (whose directories are left out, a named one too, when
 * they can be listed); else, not as root, a directory of mode 000.
 */
static void test_walk__a_directory_named_that_cannot_be_listed_is_an_error(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), closed[600];
	snprintf(closed, sizeof closed, "%s/closed", dir);
	assert_int_equal(mkdir(closed, 0), 0);
	const char *target = unlistable("/proc/1/map_files") ? "/proc/1/map_files"
	                     : unlistable(closed)            ? closed
	                                                     : NULL;
	if (!target) {
		print_message("skipped: no directory here refuses to be listed (/proc/1/map_files "
		              "is listed with CAP_SYS_ADMIN, and root lists a directory of mode "
		              "000)\n");
		chmod(closed, 0700);
		ts_rmtree(dir);
		free(dir);
		skip();
	}
	print_message("unlistable: %s\n", target);
	Seen *s = calloc(1, sizeof *s);
	WalkStats st = {0};
	WalkOptions wo = {.file = on_file, .ctx = s};
	const char *in[] = {target};
	assert_int_equal(walk_inputs(in, 1, &wo, &st), 0);
	assert_int_equal(s->errors, 1);
	assert_string_equal(s->names[0], target);
	assert_int_equal(walk_skipped(&st), 0);
	free(s);
	char *out = NULL, *err = NULL, want[700];
	int rc = ts_runf(&out, &err, "%s ingest %s/b %s", ts_joseki(), dir, target);
	snprintf(want, sizeof want, "%s: cannot ", target);
	if (rc != 1 || !strstr(err, want) || strstr(err, "left out"))
		fail_msg("exit %d:\n%s", rc, err);
	assert_non_null(strstr(err, "joseki: ingest: 1 input could not be read (said above)"));
	free(out);
	free(err);
	chmod(closed, 0700);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_walk__links_followed_and_what_is_left_out_counted),
	    cmocka_unit_test(test_walk__ingest_and_replay_read_the_same_links),
	    cmocka_unit_test(test_walk__archives_hold_games_of_every_format),
	    cmocka_unit_test(test_walk__a_large_input_goes_in_parts_cut_between_records),
	    cmocka_unit_test(test_walk__a_directory_named_that_cannot_be_listed_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

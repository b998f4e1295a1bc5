/*
 * tests/tools/test_cli.c — the commands' one option table (tools/cli_opt.h),
 * through the real joseki binary: every command answers --help with its
 * usage and a line per option; bad usage reads the same for every command
 * and every kind of option ("joseki: CMD: --opt wants ..., not 'X'", then
 * the usage, exit 2); values that start with '-' and positionals after
 * options are taken as the table says.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/stat.h>

#include "tests/support/support.h"

/* The commands `joseki help` lists, in its order (NULL-terminated, malloc'd). */
static char **commands(void)
{
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s help", ts_joseki()), 0);
	char **names = calloc(64, sizeof *names);
	int n = 0;
	for (char *line = strstr(out, "\n  "); line && n < 63; line = strstr(line, "\n  ")) {
		line += 3;
		size_t w = strcspn(line, " \n");
		names[n++] = strndup(line, w);
	}
	free(out);
	assert_true(n >= 20);
	return names;
}

static void test_cli__every_command_has_help_naming_its_options(void **state)
{
	(void)state;
	char **names = commands();
	for (int i = 0; names[i]; i++) {
		char *out = NULL, *err = NULL, head[64];
		int rc = ts_runf(&out, &err, "%s %s --help", ts_joseki(), names[i]);
		if (rc != 0) fail_msg("%s --help: exit %d, %s", names[i], rc, err);
		snprintf(head, sizeof head, "usage: joseki %s ", names[i]);
		if (strncmp(out, head, strlen(head)))
			fail_msg("%s --help starts '%.60s'", names[i], out);
		/* Every option in the usage has its own help line. */
		char *body = strstr(out, "\n\n");
		assert_non_null(body);
		for (char *p = out; p < body; p++) {
			if (!(p[0] == '-' && p[1] == '-' &&
			      (p == out || p[-1] == '[' || p[-1] == ' ' || p[-1] == '|')))
				continue;
			char opt[64], line[80];
			size_t w = strcspn(p, " ]|\n");
			snprintf(opt, sizeof opt, "%.*s", (int)w, p);
			snprintf(line, sizeof line, "\n  %s", opt);
			if (!strstr(body, line))
				fail_msg("%s --help: no line for %s", names[i], opt);
			p += w;
		}
		/* "joseki help COMMAND" says the same. */
		char *same = NULL;
		assert_int_equal(ts_runf(&same, NULL, "%s help %s", ts_joseki(), names[i]), 0);
		assert_string_equal(same, out);
		free(same);
		free(out);
		free(err);
		free(names[i]);
	}
	free(names);
}

/* `joseki help` says what each command writes: export's line names every
 * format it writes. */
static void test_cli__help_names_every_format_export_writes(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s help", ts_joseki()), 0);
	const char *line = strstr(out, "\n  export ");
	assert_non_null(line);
	char text[200];
	snprintf(text, sizeof text, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
	static const char *const FORMATS[] = {"YaneuraOu", "Apery", "KIF", "KI2"};
	for (size_t i = 0; i < 4; i++)
		if (!strstr(text, FORMATS[i]))
			fail_msg("help's export line lacks %s: '%s'", FORMATS[i], text);
	free(out);
}

/* The summary lines minimax and export wrap at 120 columns never leave a
 * number at a line's end with its unit or noun on the next ("peak memory
 * 59.7" / "  MiB"): a grep for "59.7 MiB" finds it, piped or not. Export's
 * line names OUT: OUT's name, a letter longer each time, moves the breaks
 * over every word of it. */
static void test_cli__a_wrapped_summary_keeps_numbers_with_their_units(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *out = NULL;
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/b --positions 3000 --quiet", ts_joseki(), dir), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/b --quiet", ts_joseki(), dir), 0);
	size_t checked = 0;
	char name[64] = "";
	for (size_t len = 0; len < 60; len++) {
		name[len] = 'x';
		name[len + 1] = 0;
		char cmd[1200];
		snprintf(cmd, sizeof cmd, "%s export %s/b %s/%s.db --memory 1M 2>&1", ts_joseki(),
		         dir, dir, name);
		assert_int_equal(ts_run(cmd, &out, NULL), 0);
		for (char *p = strchr(out, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
			if (strncmp(p + 1, "  ", 2) || !isalpha((unsigned char)p[3])) continue;
			checked++;
			if (p > out && isdigit((unsigned char)p[-1]))
				fail_msg("a number parted from its word at a wrap:\n%s", out);
		}
		free(out);
	}
	/* The lines were long enough to wrap. */
	assert_true(checked >= 60);
	ts_rmtree(dir);
	free(dir);
}

static void test_cli__bad_usage_reads_the_same_for_every_command(void **state)
{
	(void)state;
	static const struct {
		const char *args, *says;
	} CASES[] = {
	    /* a count: not a number, out of its range, missing */
	    {"think B --nodes x", "think: --nodes wants a positive number, not 'x'"},
	    {"select B --count 0", "select: --count wants a number from 1 to 100000000, not '0'"},
	    {"bench --depth -1", "bench: --depth wants a number from 1 to 127, not '-1'"},
	    {"export B O --window 7x", "export: --window wants a number from 0 to 64000, not '7x'"},
	    {"think B --nodes", "think: --nodes wants a positive number\n"},
	    {"match --engine-a builtin --engine-b builtin --seed", "match: --seed wants a whole "
	                                                           "number\n"},
	    /* signed, real, one of names, a text, a parser of its own */
	    {"select B --kif-bonus -40000",
	     "select: --kif-bonus wants a number from -32000 to 32000, not '-40000'"},
	    {"minimax B --blend 1.5", "minimax: --blend wants a number from 0 to 1, not '1.5'"},
	    /* decimal only (strtod alone reads these) */
	    {"minimax B --blend 0x1", "minimax: --blend wants a number from 0 to 1, not '0x1'"},
	    {"minimax B --blend ' 1'", "minimax: --blend wants a number from 0 to 1, not ' 1'"},
	    {"serve B --work --provisional-after inf",
	     "serve: --provisional-after wants a number from 0 to 86400, not 'inf'"},
	    {"think B --select best", "think: --select wants cover or pv, not 'best'"},
	    {"think B --book-side red", "think: --book-side wants black, white or both, not 'red'"},
	    {"extend B g.csa --book-player ''", "extend: --book-player wants STR, not ''"},
	    {"serve B --listen nowhere",
	     "serve: --listen wants ADDR:PORT (an IPv4 address, no host "
	     "name), e.g. 127.0.0.1:8080, not 'nowhere'"},
	    {"serve B --listen 127.0.0.1:99999",
	     "serve: --listen 127.0.0.1:99999: port 99999 is not 0..65535"},
	    {"worker --server x --token-file f --usi-option novalue",
	     "worker: --usi-option wants NAME=VALUE, not 'novalue'"},
	    {"ingest B x --since yesterday", "ingest: --since wants a date YYYY-MM-DD, not "
	                                     "'yesterday'"},
	    /* no such day: it skipped every game */
	    {"ingest B x --until 2026-02-30", "ingest: --until wants a date YYYY-MM-DD, not "
	                                      "'2026-02-30'"},
	    {"ingest B x --since 20261301", "ingest: --since wants a date YYYY-MM-DD, not "
	                                    "'20261301'"},
	    {"export B O --memory 99999T", "export: --memory 99999T: more than the memory this "
	                                   "process may have ("},
	    {"export B O --memory 1023K", "export: --memory 1023K: under 1M, the least a pass is "
	                                  "given"},
	    {"export B O --memory 1e3M", "export: --memory wants a size such as 256M or 8G, at "
	                                 "least 1M, not '1e3M'"},
	    /* options and positionals */
	    {"stats B --bogus", "stats: unknown option '--bogus'"},
	    {"compact B C", "compact: unexpected argument 'C'"},
	    {"query B", "query: no POS given"},
	    {"replay", "replay: no INPUT given"},
	    {"perft x", "perft: DEPTH wants a number from 0 to 20, not 'x'"},
	    {"synth S", "synth: --positions is needed"},
	    {"think B --roots r.txt --roots-from-games 3",
	     "think: give only one of --roots, --roots-from-games"},
	    {"think B --nodes 5 --depth 3", "think: give only one of --nodes, --movetime, --depth "
	                                    "(--nodes and --depth were both given)"},
	    {"think B --roots-ply 3", "think: --roots-ply needs --roots-from-games"},
	    {"think B --probe-plies 3", "think: --probe-plies needs --opponent"},
	    {"serve B --lease-seconds 5", "serve: --lease-seconds needs --work"},
	    {"match --engine-a builtin --engine-b builtin --byoyomi 1 --byoyomi 2 --byoyomi 3",
	     "match: --byoyomi at most 2 times"},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
		char *out = NULL, *err = NULL, want[256], usage[64];
		int rc = ts_runf(&out, &err, "%s %s", ts_joseki(), CASES[i].args);
		snprintf(want, sizeof want, "joseki: %s", CASES[i].says);
		size_t cmdlen = strcspn(CASES[i].args, " ");
		snprintf(usage, sizeof usage, "\nusage: joseki %.*s ", (int)cmdlen, CASES[i].args);
		if (rc != 2 || strncmp(err, want, strlen(want)) || !strstr(err, usage))
			fail_msg("'%s': exit %d, said '%s', not '%s' and the usage", CASES[i].args,
			         rc, err, want);
		assert_string_equal(out, "");
		free(out);
		free(err);
	}
}

static void test_cli__values_and_positionals_go_where_the_table_says(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	/* Positionals around the options; a value that starts with '-'. */
	assert_int_equal(
	    ts_runf(&out, &err, "%s synth --quiet %s/b --positions 200 --seed 3", ts_joseki(), dir),
	    0);
	free(out), free(err);
	assert_int_equal(ts_runf(&out, &err, "%s select --count 3 %s/b --kif-bonus -50 --json",
	                         ts_joseki(), dir),
	                 0);
	assert_non_null(strstr(out, "{\"leaves\":"));
	free(out), free(err);
	assert_int_equal(ts_runf(&out, &err, "%s perft --divide 1", ts_joseki()), 0);
	assert_non_null(strstr(out, "perft 1 nodes 30 "));
	free(out), free(err);
	/* The later of two values wins; --help wins over a bad value after it. */
	assert_int_equal(ts_runf(&out, &err, "%s perft 1 --sfen bad --sfen startpos", ts_joseki()),
	                 0);
	assert_non_null(strstr(out, "perft 1 nodes 30 "));
	free(out), free(err);
	assert_int_equal(ts_runf(&out, &err, "%s bench --help --depth 0", ts_joseki()), 0);
	assert_non_null(strstr(out, "usage: joseki bench [--depth D] [--list]\n"));
	free(out), free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Says whether s holds needle; fails naming what was said otherwise. */
static void said(const char *what, const char *s, const char *needle)
{
	if (!s || !strstr(s, needle)) fail_msg("%s: '%s' not said in:\n%s", what, needle, s);
}

/*
 * What a command says of the user's inputs: a missing input is a failure
 * (exit 1) while a malformed record in a readable file is reported and
 * skipped (exit 0); what the walk left out is named; a record's error names
 * its file and line once; query takes a bare move list as ingest does; an
 * export that cannot write names the user's file, not its temporaries.
 */
static void test_cli__exit_codes_and_messages_name_the_users_inputs(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL, path[600];
	/* A missing input among good ones: the good ones are ingested, exit 1. */
	int rc = ts_runf(&out, &err, "%s ingest %s/b tests/data/floodgate %s/no-such.csa",
	                 ts_joseki(), dir, dir);
	if (rc != 1) fail_msg("ingest of a missing input: exit %d (%s)", rc, err);
	said("ingest", out, "15 ingested");
	said("ingest", err, "no-such.csa: cannot read: No such file or directory");
	said("ingest", err, "1 input could not be read");
	free(out), free(err);
	/* Into a new book, nothing read: no empty book left behind (a mistyped
	 * name made one), for ingest and import; a book that was there stays. */
	static const char *const NOTHING[] = {"ingest %s/nb %s/no-such.csa",
	                                      "import %s/nb %s/no-such.db",
	                                      "ingest %s/b %s/no-such.csa"};
	for (int k = 0; k < 3; k++) {
		char cmd[800];
		snprintf(cmd, sizeof cmd, NOTHING[k], dir, dir);
		rc = ts_runf(&out, &err, "%s %s", ts_joseki(), cmd);
		assert_int_equal(rc, 1);
		said(cmd, err,
		     k == 0   ? "nothing read, no book made at "
		     : k == 1 ? "nothing imported; no book made"
		              : "what could be read is in ");
		free(out), free(err);
		struct stat sb;
		snprintf(path, sizeof path, "%s/%s/data.mdb", dir, k < 2 ? "nb" : "b");
		if ((stat(path, &sb) == 0) != (k == 2))
			fail_msg("%s: the book %s", cmd, k < 2 ? "left" : "gone");
		snprintf(path, sizeof path, "%s/nb", dir);
		if (k < 2 && stat(path, &sb) == 0) fail_msg("%s: its directory left", cmd);
	}
	/* A malformed record and an illegal move in readable files: exit 0, each
	 * said once with its file and line; a file left out of a directory named. */
	snprintf(path, sizeof path, "%s/games", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/games/bad.csa", dir);
	assert_int_equal(ts_write_file(path, "PI\n+\n+7776XX\n", 13), 0);
	snprintf(path, sizeof path, "%s/games/illegal.csa", dir);
	assert_int_equal(ts_write_file(path, "PI\n+\n+9999FU\n", 13), 0);
	snprintf(path, sizeof path, "%s/games/notes.txt", dir);
	assert_int_equal(ts_write_file(path, "hello\n", 6), 0);
	rc = ts_runf(&out, &err, "%s ingest %s/b %s/games", ts_joseki(), dir, dir);
	if (rc != 0) fail_msg("ingest of malformed records: exit %d (%s)", rc, err);
	said("ingest", err, "games/bad.csa:3: malformed move '+7776XX' (record skipped)\n");
	said("ingest", err, "games/illegal.csa:3: illegal move +9999FU (the piece on 99 is KY");
	if (strstr(strstr(err, "bad.csa:3: ") + 1, "bad.csa:3: "))
		fail_msg("a place said twice:\n%s", err);
	said("ingest", err, "left out: 1 file not named as a game file (");
	said("ingest", err, "games/notes.txt)");
	free(out), free(err);
	/* query: a bare move list is the start position and those moves. */
	char *bare = NULL, *full = NULL;
	assert_int_equal(ts_runf(&bare, &err, "%s query %s/b '7g7f 3c3d' --json", ts_joseki(), dir),
	                 0);
	free(err);
	assert_int_equal(ts_runf(&full, &err, "%s query %s/b 'startpos moves 7g7f 3c3d' --json",
	                         ts_joseki(), dir),
	                 0);
	free(err);
	assert_string_equal(bare, full);
	said("query", bare, "\"sfen\":\"lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/");
	free(bare), free(full);
	rc = ts_runf(&out, &err, "%s query %s/b '7g7f 3c3e'", ts_joseki(), dir);
	assert_int_equal(rc, 2);
	said("query", err, "illegal move 2 '3c3e'");
	free(out), free(err);
	/* A command that reads or writes a book names itself, and a file given
	 * for the book is said to be one (to a writer, it was its lock file's
	 * "Not a directory"). */
	static const char *const READERS[] = {
	    "stats %s/games/notes.txt", "check %s/games/notes.txt",
	    "query %s/games/notes.txt startpos", "ingest %s/games/notes.txt tests/data/floodgate",
	    "think %s/games/notes.txt --positions 1"};
	for (size_t i = 0; i < sizeof READERS / sizeof *READERS; i++) {
		char cmd[800], want[200];
		snprintf(cmd, sizeof cmd, READERS[i], dir);
		rc = ts_runf(&out, &err, "%s %s", ts_joseki(), cmd);
		assert_int_equal(rc, 1);
		snprintf(want, sizeof want, "joseki: %.*s: ", (int)strcspn(READERS[i], " "),
		         READERS[i]);
		said(READERS[i], err, want);
		said(READERS[i], err,
		     "notes.txt: no book there (a file: a book is a directory, as joseki ingest "
		     "makes it)");
		free(out), free(err);
	}
	/* A coordinator whose leases are shorter than two searches says so (its
	 * workers' leases expired under them, every position a failed try); it
	 * stops here for want of a tokens file. */
	rc = ts_runf(&out, &err, "%s serve %s/b --work --lease-seconds 20 --movetime 15000",
	             ts_joseki(), dir);
	assert_int_equal(rc, 1);
	said("serve", err,
	     "serve: --lease-seconds 20 is less than two searches of --movetime 15000: a worker "
	     "holds two batches, so its leases would expire under it, every position a failed "
	     "try; give --lease-seconds 35 or more");
	free(out), free(err);
	/* A book that is not there: cycle, which runs think, extend and prune,
	 * refuses it as they do (it made a new book and cycled into it). */
	rc = ts_runf(&out, &err, "%s cycle %s/no-book --generations 1 --games 2", ts_joseki(), dir);
	assert_int_equal(rc, 1);
	said("cycle", err, "joseki: cycle: ");
	said("cycle", err,
	     "/no-book: no book there (joseki ingest, import or think --new makes one)");
	free(out), free(err);
	snprintf(path, sizeof path, "%s/no-book", dir);
	struct stat nb;
	if (stat(path, &nb) == 0) fail_msg("cycle made %s", path);
	/* A copy into a directory that is not there: the user's path named, not
	 * the NEW.partial the copy is first written as. */
	static const char *const COPIES[] = {"backup %s/b %s/no-dir/bk",
	                                     "check %s/b --repair %s/no-dir/rep"};
	for (size_t i = 0; i < 2; i++) {
		char cmd[800];
		snprintf(cmd, sizeof cmd, COPIES[i], dir, dir);
		rc = ts_runf(&out, &err, "%s %s", ts_joseki(), cmd);
		assert_int_equal(rc, 1);
		said(COPIES[i], err,
		     i ? "/no-dir/rep: cannot create: No such file or directory"
		       : "/no-dir/bk: cannot create: No such file or directory");
		if (strstr(err, ".partial")) fail_msg("%s named its partial copy: %s", cmd, err);
		free(out), free(err);
	}
	/* export into a directory that cannot be written: the user's file named. */
	rc = ts_runf(&out, &err, "%s export %s/b %s/no-dir/x.db", ts_joseki(), dir, dir);
	assert_int_equal(rc, 1);
	said("export", err, "no-dir/x.db: cannot write there: No such file or directory");
	if (strstr(err, "spill") || strstr(err, ".tmp"))
		fail_msg("export named its temporary: %s", err);
	free(out), free(err);
	/* The same with a budget that puts sorted runs beside OUT, and OUT a
	 * directory: refused before the book is read (at 10^9 positions the
	 * export takes half an hour), and nothing left beside it. */
	rc =
	    ts_runf(&out, &err, "%s export %s/b %s/no-dir/x.db --memory 1M", ts_joseki(), dir, dir);
	assert_int_equal(rc, 1);
	said("export", err, "no-dir/x.db: cannot write there: No such file or directory");
	free(out), free(err);
	char sub[700];
	snprintf(sub, sizeof sub, "%s/outdir", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	for (int k = 0; k < 2; k++) {
		rc = ts_runf(&out, &err, "%s %s %s/b %s %s", ts_joseki(),
		             k ? "peta-shock" : "export", dir, sub, k ? "" : "--memory 1M");
		assert_int_equal(rc, 1);
		said(k ? "peta-shock" : "export", err,
		     "outdir: cannot write: Is a directory (the output is a file)");
		free(out), free(err);
	}
	assert_int_equal(ts_files_in(sub), 0);
	/* OUT one of a book's own files (a new user's slip: export wrote its text
	 * over the book's data.mdb, exit 0, and the book was lost): refused, the
	 * book whole. */
	static const char *const OWN[] = {"data.mdb", "lock.mdb", "minimax.graph"};
	for (int k = 0; k < 4; k++) {
		rc = ts_runf(&out, &err, "%s %s %s/b %s/b/%s", ts_joseki(),
		             k == 3 ? "peta-shock" : "export", dir, dir, OWN[k % 3]);
		assert_int_equal(rc, 1);
		said(k == 3 ? "peta-shock" : "export", err,
		     "/b: the output would replace it; write it elsewhere");
		free(out), free(err);
	}
	rc = ts_runf(&out, &err, "%s check %s/b", ts_joseki(), dir);
	if (rc != 0) fail_msg("the book hurt: check exit %d: %s%s", rc, out, err);
	free(out), free(err);
	ts_rmtree(dir);
	free(dir);
}

/*
 * What the operator types (a token name, a book's or a tokens file's path,
 * a position) is said escaped (errmsg_escape's \xNN), never raw: an escape
 * sequence in it would retitle or clear the terminal.
 */
static void test_cli__typed_text_is_said_escaped(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s ingest %s/book tests/data/floodgate", ts_joseki(), dir);
	if (rc != 0) fail_msg("ingest: exit %d (%s)", rc, err);
	free(out), free(err);
	/* %1$s the directory, %2$s the bytes ESC ] 0 ; pwned BEL (a title) ESC
	 * [ 2 J, made by the shell; what each says of them, escaped. */
	static const struct {
		int rc;
		const char *args, *said;
	} CASES[] = {
	    /* A token's name. */
	    {1, "token add %1$s/tokens %2$s",
	     "token name '\\x1B]0;pwned\\x07\\x1B[2J': 1..64 letters"},
	    /* The tokens file's path, in what token add says it added to. */
	    {0, "token add %1$s/t%2$s w1",
	     "/t\\x1B]0;pwned\\x07\\x1B[2J; the token is shown only now"},
	    /* A book's path that is no book. */
	    {1, "query %1$s/b%2$s startpos", "/b\\x1B]0;pwned\\x07\\x1B[2J: no book there"},
	    /* serve --work's missing tokens file (named twice in its advice). */
	    {1, "serve %1$s/book --work --listen 127.0.0.1:0 --tokens %1$s/t2%2$s",
	     "/t2\\x1B]0;pwned\\x07\\x1B[2J: No such file or directory"},
	    /* The position as given, not only the move found bad in it. */
	    {2, "query %1$s/book 'startpos moves '%2$s",
	     "bad position 'startpos moves \\x1B]0;pwned\\x07\\x1B[2J': malformed"},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		char args[700];
		snprintf(args, sizeof args, CASES[i].args, dir,
		         "\"$(printf '\\033]0;pwned\\007\\033[2J')\"");
		rc = ts_runf(&out, &err, "%s %s", ts_joseki(), args);
		if (rc != CASES[i].rc) fail_msg("%s: exit %d (%s)", args, rc, err);
		if (strchr(err, 0x1b) || strchr(err, 0x07))
			fail_msg("%s: a control byte said raw:\n%s", args, err);
		said(args, err, CASES[i].said);
		free(out), free(err);
	}
	ts_rmtree(dir);
	free(dir);
}

/*
 * check --repair NEW where NEW exists: one message naming NEW once, relative
 * or absolute, exit 1, and nothing written into it.
 */
static void test_cli__check_repair_into_an_existing_path_names_it_once(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL, want[700];
	int rc = ts_runf(&out, &err, "%s ingest %s/b tests/data/floodgate", ts_joseki(), dir);
	if (rc != 0) fail_msg("ingest: exit %d (%s)", rc, err);
	free(out), free(err);
	rc = ts_runf(&out, &err, "mkdir %s/existsdir", dir);
	assert_int_equal(rc, 0);
	free(out), free(err);
	/* Absolute. */
	rc = ts_runf(&out, &err, "%s check %s/b --repair %s/existsdir", ts_joseki(), dir, dir);
	assert_int_equal(rc, 1);
	snprintf(want, sizeof want,
	         "joseki: check: %s/existsdir: exists already (the repair writes a new book)\n",
	         dir);
	assert_string_equal(err, want);
	free(out), free(err);
	/* Relative (run from dir). */
	rc = ts_runf(&out, &err, "cd %s && %s check b --repair existsdir", dir, ts_joseki());
	assert_int_equal(rc, 1);
	assert_string_equal(
	    err, "joseki: check: existsdir: exists already (the repair writes a new book)\n");
	free(out), free(err);
	/* A new book that cannot be made: its path once too. */
	rc = ts_runf(&out, &err, "%s check %s/b --repair %s/no-dir/new", ts_joseki(), dir, dir);
	assert_int_equal(rc, 1);
	snprintf(want, sizeof want, "%s/no-dir/new", dir);
	said("check", err, want);
	if (strstr(strstr(err, want) + 1, want)) fail_msg("the path said twice: %s", err);
	free(out), free(err);
	rc = ts_runf(&out, NULL, "ls -A %s/existsdir", dir);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "");
	free(out);
	ts_rmtree(dir);
	free(dir);
}

/* The options of one --help: each "--name" at the start of an option's line,
 * with the text of its help (wrapped lines joined); old spellings listed apart.
 * A NULL-terminated malloc'd array of "--name\thelp" strings. */
typedef struct {
	char *name, *help;
	bool required; /* shown without brackets in the usage */
} HelpOpt;

static int help_options(const char *out, HelpOpt *opts, int max, char **olds, int *nolds)
{
	int n = 0;
	*nolds = 0;
	const char *body = strstr(out, "\n\n");
	assert_non_null(body);
	for (const char *p = strstr(body, "\n  -"); p && n < max; p = strstr(p + 1, "\n  -")) {
		p += 3;
		size_t w = strcspn(p, " \n");
		HelpOpt *o = &opts[n++];
		o->name = strndup(p, w);
		/* Its text: to the next line that starts an option or a positional. */
		const char *end = p, *q = p;
		for (;;) {
			const char *nl = strchr(q, '\n');
			if (!nl || nl[1] == '\n' || !nl[1] ||
			    (nl[1] == ' ' && nl[2] == ' ' && nl[3] != ' ')) {
				end = nl ? nl : q + strlen(q);
				break;
			}
			q = nl + 1;
		}
		o->help = strndup(p + w, (size_t)(end - p - (ptrdiff_t)w));
		char usage_form[80];
		snprintf(usage_form, sizeof usage_form, " %s", o->name);
		const char *u = strstr(out, usage_form);
		o->required = u && u < body && (strchr(" ", u[strlen(usage_form)]) || 1) &&
		              !(u > out && (u[-1] == '[' || u[-1] == '|'));
		/* An old spelling: "(--option is its old spelling". */
		const char *old = strstr(o->help, " is its old spelling");
		if (old) {
			const char *b = old;
			while (b > o->help && b[-1] != '(') b--;
			olds[(*nolds)++] = strndup(b, (size_t)(old - b));
		}
	}
	return n;
}

/* The options named in the `joseki CMD ...` lines (and their continuation
 * lines) of the code blocks of the markdown file at path, added to names
 * (NULL-terminated, at most max). cmd NULL: every command's lines, each
 * option checked by check(cmd, opt) instead. */
static int doc_options(const char *path, const char *cmd, char **names, int n, int max)
{
	char *text = ts_read_file(path, NULL);
	if (!text) fail_msg("%s: cannot read", path);
	bool code = false, in_cmd = false;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (!strncmp(line, "```", 3)) {
			code = !code;
			in_cmd = false;
		} else if (code) {
			const char *l = line;
			if (!strncmp(l, "$ ", 2)) l += 2;
			if (!strncmp(l, "./", 2)) l += 2;
			char head[80];
			snprintf(head, sizeof head, "joseki %s", cmd);
			bool starts = !strncmp(l, head, strlen(head)) &&
			              (l[strlen(head)] == ' ' || l[strlen(head)] == '\n' ||
			               l[strlen(head)] == 0);
			if (starts)
				in_cmd = true;
			else if (line[0] != ' ')
				in_cmd = false;
			if (in_cmd) {
				for (const char *q = line; q < line + len; q++) {
					if (!(q[0] == '-' && q[1] == '-' && q[2] >= 'a' &&
					      q[2] <= 'z' && (q == line || strchr(" [|(", q[-1]))))
						continue;
					size_t w =
					    strspn(q, "abcdefghijklmnopqrstuvwxyz0123456789-");
					bool have = false;
					for (int i = 0; i < n && !have; i++)
						have = strlen(names[i]) == w &&
						       !strncmp(names[i], q, w);
					if (!have && n < max) names[n++] = strndup(q, w);
					q += w;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return n;
}

/* The options README.md's table of commands gives cmd (each code span of a
 * row's first cell that starts "cmd ": "| `query BOOK POS [--json]`, `stats
 * BOOK` |"), added to names as doc_options does. */
static int readme_options(const char *cmd, char **names, int n, int max)
{
	char *text = ts_read_file("README.md", NULL), head[80];
	assert_non_null(text);
	snprintf(head, sizeof head, "`%s ", cmd);
	for (char *row = strstr(text, "\n| `"); row; row = strstr(row + 1, "\n| `")) {
		char *cell_end = strstr(row + 3, " |");
		if (!cell_end) break;
		for (char *span = strstr(row + 3, head); span && span < cell_end;
		     span = strstr(span + 1, head)) {
			if (span[-1] != ' ' && span[-1] != '|') continue; /* a span's start */
			char *end = strchr(span + 1, '`');
			if (!end || end > cell_end) break;
			for (char *q = span + strlen(head); q < end; q++) {
				if (!(q[0] == '-' && q[1] == '-' && q[2] >= 'a' && q[2] <= 'z' &&
				      strchr(" [|(", q[-1])))
					continue;
				size_t w = strspn(q, "abcdefghijklmnopqrstuvwxyz0123456789-");
				bool have = false;
				for (int i = 0; i < n && !have; i++)
					have = strlen(names[i]) == w && !strncmp(names[i], q, w);
				if (!have && n < max) names[n++] = strndup(q, w);
				q += w;
			}
		}
	}
	free(text);
	return n;
}

/*
 * Every command's --help and its docs page agree: the page(s) --help names
 * hold a synopsis (`joseki CMD ...` in a code block) naming every option
 * --help lists, and every option a `joseki CMD` line of those pages names is
 * one --help lists (an old spelling included, which the page must mention
 * too), as is every option README's table of commands gives it. Every option
 * with a value says its default, unless it is required.
 */
static void test_cli__help_and_docs_name_the_same_options(void **state)
{
	(void)state;
	char **names = commands();
	int problems = 0;
	for (int c = 0; names[c]; c++) {
		char *out = NULL;
		assert_int_equal(ts_runf(&out, NULL, "%s %s --help", ts_joseki(), names[c]), 0);
		HelpOpt opts[128];
		char *olds[16];
		int nolds, n = help_options(out, opts, 128, olds, &nolds);
		const char *full = strstr(out, "The command in full: ");
		if (!full) fail_msg("%s --help names no docs page", names[c]);
		char pages[256];
		snprintf(pages, sizeof pages, "%.*s", (int)(strstr(full, " (") - full - 21),
		         full + 21);
		char *doc[128];
		int nd = 0;
		/* "docs/server.md, docs/cluster.md (joseki's source tree)" */
		for (const char *p = full + 21; !strncmp(p, "docs/", 5);) {
			size_t w = strcspn(p, ", (\n");
			char page[128];
			snprintf(page, sizeof page, "%.*s", (int)w, p);
			nd = doc_options(page, names[c], doc, nd, 128);
			p += w;
			while (*p == ',' || *p == ' ') p++;
		}
		for (int i = 0; i < n; i++) {
			bool found = false;
			for (int k = 0; k < nd && !found; k++)
				found = !strcmp(doc[k], opts[i].name);
			if (!found) {
				printf("%s: %s is in --help, not in a synopsis of %s\n", names[c],
				       opts[i].name, pages);
				problems++;
			}
			bool valued = strchr(opts[i].help, ' ') && opts[i].help[0] == ' ' &&
			              opts[i].help[1] != ' ';
			if (valued && !opts[i].required && !strstr(opts[i].help, "default")) {
				printf("%s: %s does not say its default:%s\n", names[c],
				       opts[i].name, opts[i].help);
				problems++;
			}
		}
		/* README's table says no option the command does not take either. */
		int nr = readme_options(names[c], doc, nd, 128);
		for (int k = 0; k < nr; k++) {
			bool found = false;
			for (int i = 0; i < n && !found; i++) found = !strcmp(doc[k], opts[i].name);
			for (int i = 0; i < nolds && !found; i++) found = !strcmp(doc[k], olds[i]);
			if (!found) {
				printf("%s: %s is in %s, not in --help\n", names[c], doc[k],
				       k < nd ? pages : "README.md");
				problems++;
			}
		}
		for (int i = 0; i < nolds; i++) {
			/* On one of the command's pages ("a.md, b.md"). */
			char quoted[80], list[256];
			snprintf(quoted, sizeof quoted, "`%s", olds[i]);
			snprintf(list, sizeof list, "%s", pages);
			bool said = false;
			for (char *save = NULL, *one = strtok_r(list, ", ", &save); one && !said;
			     one = strtok_r(NULL, ", ", &save)) {
				char *page = ts_read_file(one, NULL);
				said = page && strstr(page, quoted);
				free(page);
			}
			if (!said) {
				printf("%s: the old spelling %s is not in %s\n", names[c], olds[i],
				       pages);
				problems++;
			}
			free(olds[i]);
		}
		for (int i = 0; i < n; i++) free(opts[i].name), free(opts[i].help);
		for (int k = 0; k < nr; k++) free(doc[k]);
		free(out);
		free(names[c]);
	}
	free(names);
	assert_int_equal(problems, 0);
}

/* The old spellings still work (worker --option as --usi-option, serve
 * --header-seconds as --request-seconds), each saying once on stderr that
 * it is one; the new spelling says nothing. */
static void test_cli__old_spellings_still_work(void **state)
{
	(void)state;
	char *out = NULL, *err = NULL, *dir = ts_mkdtemp(), empty[600];
	/* An empty token file of its own (not /dev/null: a machine whose
	 * /dev/null had become a regular file with text in it made the worker
	 * run on against a dead server until the test's time was up). */
	snprintf(empty, sizeof empty, "%s/empty-token", dir);
	assert_int_equal(ts_write_file(empty, "", 0), 0);
	/* Parsed as --usi-option is: a value without '=' is refused in its words. */
	int rc = ts_runf(&out, &err,
	                 "%s worker --server http://127.0.0.1:9 --token-file %s "
	                 "--option Threads",
	                 ts_joseki(), empty);
	assert_int_equal(rc, 2);
	said("worker --option", err, "--usi-option wants NAME=VALUE, not 'Threads'");
	free(out), free(err);
	rc = ts_runf(&out, &err,
	             "%s worker --server http://127.0.0.1:9 --token-file %s "
	             "--option Threads=1 --usi-option USI_Hash=16 --option Hash=8 --engine builtin "
	             "--positions 1 --max-backoff 1",
	             ts_joseki(), empty);
	/* Past the parser: the empty token file is what stops it. */
	said("worker --option", err, "token");
	if (strstr(err, "unknown option")) fail_msg("--option refused: %s", err);
	const char *old = "joseki: worker: --option is an old spelling of --usi-option\n";
	if (ts_occurrences(err, old) != 1 || strncmp(err, old, strlen(old)))
		fail_msg("not said once, first: %s", err);
	free(out), free(err);
	rc = ts_runf(&out, &err,
	             "%s worker --server http://127.0.0.1:9 --token-file %s "
	             "--usi-option Threads=1 --engine builtin",
	             ts_joseki(), empty);
	if (strstr(err, "old spelling")) fail_msg("the new spelling said: %s", err);
	free(out), free(err);
	rc = ts_runf(&out, &err, "%s serve %s/none --header-seconds 5", ts_joseki(), dir);
	assert_int_equal(rc, 1); /* no book there */
	said("serve --header-seconds", err,
	     "joseki: serve: --header-seconds is an old spelling of --request-seconds\n");
	free(out), free(err);
	ts_rmtree(dir);
	free(dir);
}

/* serve's --lazy-load (the default, said explicitly) is in --help and may not
 * be given with --preload, its opposite. Options --help does not show cannot
 * be checked against the docs: the parser asserts that every option has a
 * help line, so that every command's --help (the first test) would abort. */
static void test_cli__serve_lazy_load_is_in_help_and_excludes_preload(void **state)
{
	(void)state;
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s serve --help", ts_joseki()), 0);
	said("serve --help", out, "[--preload|--lazy-load]");
	said("serve --help", out, "\n  --lazy-load ");
	free(out), free(err);
	int rc = ts_runf(&out, &err, "%s serve B --work --preload --lazy-load", ts_joseki());
	assert_int_equal(rc, 2);
	said("serve --preload --lazy-load", err,
	     "joseki: serve: give only one of --preload, --lazy-load");
	free(out), free(err);
}

int main(void)
{
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cli__every_command_has_help_naming_its_options),
	    cmocka_unit_test(test_cli__help_names_every_format_export_writes),
	    cmocka_unit_test(test_cli__a_wrapped_summary_keeps_numbers_with_their_units),
	    cmocka_unit_test(test_cli__bad_usage_reads_the_same_for_every_command),
	    cmocka_unit_test(test_cli__values_and_positionals_go_where_the_table_says),
	    cmocka_unit_test(test_cli__exit_codes_and_messages_name_the_users_inputs),
	    cmocka_unit_test(test_cli__typed_text_is_said_escaped),
	    cmocka_unit_test(test_cli__check_repair_into_an_existing_path_names_it_once),
	    cmocka_unit_test(test_cli__help_and_docs_name_the_same_options),
	    cmocka_unit_test(test_cli__old_spellings_still_work),
	    cmocka_unit_test(test_cli__serve_lazy_load_is_in_help_and_excludes_preload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/bookdb/test_damaged.c — damaged books through the real commands: a
 * data file cut short (as a copy that stopped early), flipped bytes, another
 * schema version, a missing lock file, a read-only file system. Every command refuses with a
 * message (no signal, no hang); check names the bad records; check --repair copies the sound ones
 * into a new book that passes check.
 */
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
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>

#include "bookdb/bookdb.h"
#include "bookdb/damage.h"
#include "bookdb/game.h"
#include "bookdb/record.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

/* A small real book: the floodgate fixtures, thought about a little. */
static char *make_book(void)
{
	char *dir = ts_mkdtemp();
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s ingest %s/b tests/data/floodgate --quiet", ts_joseki(), dir) !=
	    0)
		fail_msg("ingest: %s", err);
	free(err);
	if (ts_runf(NULL, &err, "%s think %s/b --depth 1 --positions 200 --quiet", ts_joseki(),
	            dir) != 0)
		fail_msg("think: %s", err);
	free(err);
	return dir;
}

/* Every command over the book: each must end by itself (timeout 60 s), with
 * the status expect_ok ? 0 : 1, never by a signal, and a message on failure. */
static void every_command(const char *dir, bool expect_ok, const char *must_say)
{
	static const char *const CMDS[] = {
	    "check %s/b",
	    "stats %s/b --scan",
	    "query %s/b startpos",
	    "minimax %s/b --quiet",
	    "export %s/b %s/out.db --quiet",
	    "ingest %s/b tests/data/floodgate --quiet",
	    "think %s/b --depth 1 --positions 1 --quiet",
	    "select %s/b",
	};
	for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) {
		char cmd[1024], line[2048];
		snprintf(cmd, sizeof cmd, CMDS[i], dir, dir);
		snprintf(line, sizeof line, "timeout 60 %s %s", ts_joseki(), cmd);
		char *out = NULL, *err = NULL;
		int rc = ts_run(line, &out, &err);
		if (rc >= 124)
			fail_msg("%s: ended with status %d (signal or timeout)\n%s", cmd, rc, err);
		if (expect_ok && rc != 0) fail_msg("%s: status %d\n%s", cmd, rc, err);
		if (!expect_ok) {
			if (rc != 1) fail_msg("%s: status %d, 1 expected\n%s", cmd, rc, err);
			if (must_say && !strstr(err, must_say))
				fail_msg("%s: the message does not say '%s':\n%s", cmd, must_say,
				         err);
		}
		free(out);
		free(err);
	}
}

/* A data file cut short at any length: every command refuses, naming the
 * file (it was a SIGBUS in check and silence in stats). */
static void test_damaged__a_truncated_data_file_is_refused_by_every_command(void **state)
{
	(void)state;
	static const long SIZES[] = {100000, 12288, 8192, 5000, 4096, 100, 0};
	char *dir = make_book();
	char path[512], copy[600];
	snprintf(path, sizeof path, "%s/b/data.mdb", dir);
	snprintf(copy, sizeof copy, "%s/data.mdb.orig", dir);
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s", path, copy), 0);
	for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++) {
		assert_int_equal(ts_runf(NULL, NULL, "cp %s %s && truncate -s %ld %s", copy, path,
		                         SIZES[i], path),
		                 0);
		char *err = NULL;
		int rc = ts_runf(NULL, &err, "%s check %s/b", ts_joseki(), dir);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(err, "data.mdb") ? err : strstr(err, "/b"));
		free(err);
		/* Readers refuse. (Writers may take an empty file for a new book:
		 * LMDB's own rule; a non-empty one they refuse too.) */
		err = NULL;
		rc = ts_runf(NULL, &err, "%s stats %s/b --scan", ts_joseki(), dir);
		assert_int_equal(rc, 1);
		free(err);
		if (SIZES[i] >= 8192) every_command(dir, false, "shorter than the book");
	}
	/* The whole file back: the book is as it was. */
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s", copy, path), 0);
	every_command(dir, true, NULL);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Flipped bits past the meta pages, several seeds: no command is killed by a
 * signal or hangs; check names bad records (key and reason) whenever a
 * record was hit; --repair copies the sound records and the game ids into a
 * new book that passes check and takes the same games again as duplicates.
 */
static void test_damaged__flipped_bytes_are_found_and_repaired(void **state)
{
	(void)state;
	char *dir = make_book();
	char path[512], copy[600];
	snprintf(path, sizeof path, "%s/b/data.mdb", dir);
	snprintf(copy, sizeof copy, "%s/data.mdb.orig", dir);
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s", path, copy), 0);
	char *data = NULL;
	size_t len;
	data = ts_read_file(copy, &len);
	assert_non_null(data);
	assert_true(len > 65536);
	int found = 0;
	for (uint64_t seed = 1; seed <= 6; seed++) {
		uint64_t r = seed * 0x9e3779b97f4a7c15ULL;
		char *bad = malloc(len);
		memcpy(bad, data, len);
		for (int k = 0; k < 24; k++) {
			size_t at = 8192 + (size_t)(ts_rand(&r) % (len - 8192));
			bad[at] ^= (char)(1u << (ts_rand(&r) % 8));
		}
		assert_int_equal(ts_write_file(path, bad, len), 0);
		free(bad);
		/* No signal, no hang, whatever the commands make of it. */
		/* (stats without --scan: with it, stats writes what it counted,
		 * and a write to a book damaged where its scan does not look
		 * — a game, LMDB's free list — may damage it further.) */
		static const char *const READERS[] = {"check %s/b", "stats %s/b",
		                                      "query %s/b startpos",
		                                      "export %s/b %s/out.db --quiet"};
		for (size_t i = 0; i < sizeof READERS / sizeof READERS[0]; i++) {
			char cmd[1024], line[2048];
			snprintf(cmd, sizeof cmd, READERS[i], dir, dir);
			snprintf(line, sizeof line, "timeout 60 %s %s", ts_joseki(), cmd);
			int rc = ts_run(line, NULL, NULL);
			if (rc >= 124)
				fail_msg("seed %llu: %s ended with %d", (unsigned long long)seed,
				         cmd, rc);
		}
		char *out = NULL, *err = NULL;
		ts_runf(NULL, NULL, "rm -rf %s/rep", dir);
		int rc =
		    ts_runf(&out, &err, "%s check %s/b --repair %s/rep", ts_joseki(), dir, dir);
		if (rc == 1 && strstr(out, ": record ")) {
			found++;
			/* A line per problem: the record's key (32 hex digits) and why. */
			const char *p = strstr(out, ": record ");
			assert_true(strlen(p) > 9 + 32);
		}
		assert_true(rc == 0 || rc == 1);
		assert_non_null(strstr(out, "repair: "));
		free(out);
		free(err);
		out = err = NULL;
		rc = ts_runf(&out, &err, "%s check %s/rep", ts_joseki(), dir);
		if (rc != 0)
			fail_msg("seed %llu: the repaired book fails check:\n%s%s",
			         (unsigned long long)seed, out, err);
		free(out);
		free(err);
		json_t *j = ts_run_json(0, "%s ingest %s/rep tests/data/floodgate --json --quiet",
		                        ts_joseki(), dir);
		assert_int_equal(ts_jint(j, "games_ingested"), 0);
		assert_true(ts_jint(j, "duplicates") > 0);
		json_decref(j);
	}
	assert_true(found > 0);
	free(data);
	/* --repair into an existing directory is refused (it writes a new book). */
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s check %s/b --repair %s/rep", ts_joseki(), dir, dir), 1);
	assert_non_null(strstr(err, "exists already"));
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* A game entry whose plies do not replay legally: check names it, by kind;
 * --repair keeps the game's id without its plies, so that the repaired book
 * passes check and the game is not ingested twice. (The bad entry was copied
 * as it was: the repaired book failed check again.) */
static void test_damaged__a_bad_game_is_repaired_into_an_id_without_plies(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), book), 0);
	BookDB *db;
	BookTxn *txn;
	assert_int_equal(bookdb_open(&db, book, NULL, NULL), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	/* The first game's entry: its plies from the start position made
	 * 7g7f twice, Black's second move not legal (it is White's turn). */
	BookIter *it;
	assert_int_equal(bookdb_kv_iter_open(&it, txn, BOOKDB_GAMES), 0);
	const void *k, *v;
	size_t kl, vl;
	assert_int_equal(bookdb_kv_iter_next(it, &k, &kl, &v, &vl), 1);
	char id[256];
	assert_true(kl < sizeof id);
	memcpy(id, k, kl);
	bookdb_iter_free(it);
	Position *pos = malloc(sizeof *pos);
	pos_set_startpos(pos);
	uint8_t packed[BOOKDB_PACKED_MAX], val[BOOKDB_GAME_LEN(2)];
	int pn = bookdb_pack_position(packed, pos->board, pos->hand, pos->side);
	assert_true(pn > 0);
	Move m[2];
	assert_int_equal(usi_move_parse(&m[0], "7g7f", 4, NULL), 0);
	m[1] = m[0];
	int n = bookdb_game_encode(val, sizeof val, BOOKDB_GAME_BLACK, packed, (size_t)pn, 1, m, 2);
	assert_true(n > 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_GAMES, id, kl, val, (size_t)n), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	free(pos);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s check %s --repair %s/rep", ts_joseki(), book, dir),
	                 1);
	assert_non_null(strstr(out, "its plies do not replay legally"));
	assert_non_null(strstr(err, ": 1 bad game (the sound ones are in the repaired book)"));
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/rep", ts_joseki(), dir), 0);
	json_t *j = ts_run_json(0, "%s ingest %s/rep tests/data/floodgate --json --quiet",
	                        ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 0);
	assert_int_equal(ts_jint(j, "duplicates"), 15);
	json_decref(j);
	ts_rmtree(dir);
	free(dir);
}

/* A book of another schema version is refused by every command, which says
 * so; a missing lock file is made again (LMDB's lock file is not data). */
static void test_damaged__another_schema_version_and_a_missing_lock_file(void **state)
{
	(void)state;
	char *dir = make_book();
	char path[512];
	snprintf(path, sizeof path, "%s/b/lock.mdb", dir);
	assert_int_equal(unlink(path), 0);
	every_command(dir, true, NULL);

	snprintf(path, sizeof path, "%s/b", dir);
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	static const uint8_t V99[4] = {99, 0, 0, 0};
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "schema", 6, V99, 4), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	every_command(dir, false, "schema version 99");
	ts_rmtree(dir);
	free(dir);
}

/* Runs `joseki` with fmt (two %s: dir) and checks its status; returns its
 * stderr. */
static char *run_expecting(const char *fmt, const char *dir, int status)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, fmt, dir, dir);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "timeout 60 %s %s", ts_joseki(), cmd);
	if (rc != status) fail_msg("%s: status %d, %d expected\n%s", cmd, rc, status, err);
	free(out);
	return err;
}

/* A book on a read-only file system (a read-only bind mount of the book's
 * directory, in a mount namespace of the test's own: ts_private_mounts, as
 * root or as a plain user): the reading commands work as on any book; every
 * writing command refuses, naming the book and saying it cannot be written.
 * Where no mount is possible the test says why and is reported as skipped (CI
 * fails on that skip). */
static void test_damaged__a_read_only_book(void **state)
{
	(void)state;
	char *dir = make_book();
	char ro[512], *err = NULL;
	snprintf(ro, sizeof ro, "%s/ro", dir);
	assert_int_equal(mkdir(ro, 0755), 0);
	char why[300];
	if (ts_private_mounts(why, sizeof why) != 0) {
		print_message("skipped: cannot mount: %s\n", why);
		ts_rmtree(dir);
		free(dir);
		skip();
	}
	if (ts_runf(NULL, &err, "mount --bind %s/b %s && mount -o remount,ro,bind %s", dir, ro,
	            ro) != 0) {
		print_message("skipped: cannot make a read-only bind mount here (%s)\n", err);
		free(err);
		ts_runf(NULL, NULL, "umount %s 2>/dev/null", ro);
		ts_rmtree(dir);
		free(dir);
		skip();
	}
	free(err);
	static const char *const READERS[] = {
	    "check %s/ro",
	    "stats %s/ro --scan --json",
	    "query %s/ro startpos --json",
	    "export %s/ro %s/out.db --quiet",
	    "select %s/ro",
	};
	static const char *const WRITERS[] = {
	    "ingest %s/ro tests/data/floodgate --quiet",
	    "think %s/ro --depth 1 --positions 1 --quiet",
	    "minimax %s/ro --quiet",
	    "compact %s/ro",
	    "import %s/ro %s/out.db",
	};
	for (size_t i = 0; i < sizeof READERS / sizeof READERS[0]; i++)
		free(run_expecting(READERS[i], dir, 0));
	for (size_t i = 0; i < sizeof WRITERS / sizeof WRITERS[0]; i++) {
		err = run_expecting(WRITERS[i], dir, 1);
		if (!strstr(err, ro) || !strstr(err, "cannot be written") ||
		    !strstr(err, "Read-only file system"))
			fail_msg("%s: the message does not name the book and say why:\n%s",
			         WRITERS[i], err);
		free(err);
	}
	assert_int_equal(ts_runf(NULL, NULL, "umount %s", ro), 0);
	/* Nothing was changed: the book still passes check where it is. */
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/b", ts_joseki(), dir), 0);
	ts_rmtree(dir);
	free(dir);
}

/* A book whose files this user may not write (a book another user owns):
 * LMDB's readers write its lock file, so every reading command failed with
 * "Permission denied" while the writers' refusal said reading commands still
 * worked. Read now without the lock file (bookdb_unlocked); the writers
 * refuse as before; the book is unchanged. As root (whom permissions do not
 * stop) the commands run as nobody (setpriv); as another user, on the book
 * made read-only for its owner. */
static void test_damaged__a_book_this_user_may_not_write(void **state)
{
	(void)state;
	char *dir = make_book();
	const char *as =
	    geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
	assert_int_equal(ts_runf(NULL, NULL,
	                         "chmod 755 %s && mkdir -m 777 %s/out && chmod 555 %s/b && chmod "
	                         "444 %s/b/*",
	                         dir, dir, dir, dir),
	                 0);
	/* The binary where nobody may run it (the clone's may be in a directory
	 * only its owner enters). */
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s/out/joseki", ts_joseki(), dir), 0);
	char *before = NULL;
	assert_int_equal(ts_runf(&before, NULL, "md5sum %s/b/data.mdb", dir), 0);
	static const char *const READERS[] = {
	    "check %s/b",
	    "stats %s/b --scan --json",
	    "query %s/b startpos --json",
	    "export %s/b %s/out/out.db --quiet",
	    "select %s/b",
	};
	static const char *const WRITERS[] = {
	    "ingest %s/b tests/data/floodgate --quiet",
	    "minimax %s/b --quiet",
	};
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < (w ? 2 : sizeof READERS / sizeof READERS[0]); i++) {
			char cmd[1024], *out = NULL, *err = NULL;
			snprintf(cmd, sizeof cmd, w ? WRITERS[i] : READERS[i], dir, dir);
			int rc = ts_runf(&out, &err, "timeout 60 %s%s/out/joseki %s", as, dir, cmd);
			if (rc != w) fail_msg("%s: status %d, %d expected\n%s", cmd, rc, w, err);
			if (w && (!strstr(err, "cannot be written (Permission denied)") ||
			          !strstr(err, "reading commands")))
				fail_msg("%s: not said: %s", cmd, err);
			free(out), free(err);
		}
	char *after = NULL;
	assert_int_equal(ts_runf(&after, NULL, "md5sum %s/b/data.mdb", dir), 0);
	assert_string_equal(before, after);
	free(before), free(after);
	assert_int_equal(ts_runf(NULL, NULL, "chmod -R u+w %s", dir), 0);
	ts_rmtree(dir);
	free(dir);
}

/* A server a failed assertion left running, for the teardown to end. */
static pid_t g_serve;

static int end_serve(void **state)
{
	(void)state;
	if (g_serve > 0) {
		kill(g_serve, SIGKILL);
		waitpid(g_serve, NULL, 0);
	}
	g_serve = 0;
	return 0;
}

/* GET http://127.0.0.1:port/path: the status, *body (free it) the answer. */
static long http_get(int port, const char *path, char **body)
{
	CURL *c = curl_easy_init();
	char url[600];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	TsBuf b = {NULL, 0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(c) != CURLE_OK) fail_msg("GET %s failed", path);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	*body = b.data ? b.data : strdup("");
	return status;
}

/* `serve BOOK` with its stderr in the file log; the port it says. */
static int serve_logged(pid_t *pid, const char *book, const char *log)
{
	char cmd[1600];
	snprintf(cmd, sizeof cmd, "exec %s serve %s --quiet --listen 127.0.0.1:0 2>%s", ts_joseki(),
	         book, log);
	char *argv[] = {"sh", "-c", cmd, NULL};
	*pid = ts_spawn(argv, NULL, NULL, false);
	if (!ts_wait_file(log, 0, "listening on http://127.0.0.1:", 60000))
		fail_msg("serve %s did not start", book);
	char *said = ts_read_file(log, NULL);
	int port = atoi(strstr(said, "http://127.0.0.1:") + 17);
	free(said);
	return port;
}

/*
 * A served book found damaged: the server says so once on stderr (its scan of
 * every record at start, or a request that met the damage), /healthz answers
 * 200 {"status": "degraded", ..., "corrupt": K, "error": ...} and /v1/stats
 * has corrupt set, until it stops (SIGTERM, exit 0). (It answered on with
 * corrupt null and /healthz ok.)
 */
static void expect_served_damaged(const char *book, const char *log, const char *says,
                                  long long corrupt_at_least)
{
	int port = serve_logged(&g_serve, book, log);
	if (!ts_wait_file(log, 0, "the book is damaged", 60000))
		fail_msg("serve %s never said the book is damaged", book);
	char *said = ts_read_file(log, NULL);
	if (!strstr(said, says)) fail_msg("serve said:\n%s\n(not '%s')", said, says);
	free(said);
	char *body;
	assert_int_equal(http_get(port, "/healthz", &body), 200);
	json_t *h = json_loads(body, 0, NULL);
	if (!h || strcmp(json_string_value(json_object_get(h, "status")), "degraded") ||
	    ts_jint(h, "corrupt") < corrupt_at_least ||
	    !json_is_string(json_object_get(h, "error")))
		fail_msg("/healthz: %s", body);
	json_decref(h);
	free(body);
	assert_int_equal(http_get(port, "/v1/stats", &body), 200);
	json_t *st = json_loads(body, 0, NULL);
	if (!st || !json_is_integer(json_object_get(st, "corrupt")) ||
	    ts_jint(st, "corrupt") < corrupt_at_least)
		fail_msg("/v1/stats: %s", body);
	json_decref(st);
	free(body);
	kill(g_serve, SIGTERM);
	int wst = 0;
	waitpid(g_serve, &wst, 0);
	g_serve = 0;
	assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	/* Said once. */
	said = ts_read_file(log, NULL);
	const char *first = strstr(said, "the book is damaged");
	assert_null(strstr(first + 1, "the book is damaged"));
	free(said);
}

/* Runs `joseki` with fmt (two %s: dir) and expects status 1 and says in its
 * stderr. */
static void expect_fails(const char *fmt, const char *dir, const char *says)
{
	char *err = run_expecting(fmt, dir, 1);
	if (!strstr(err, says)) fail_msg("%s: does not say '%s':\n%s", fmt, says, err);
	free(err);
}

/* The record at k (Black to move, a move stored) with its first move made
 * White's pawn's 3c3d: not legal there. */
static void put_illegal_move(BookTxn *txn, Key k)
{
	static BookRecord rec;
	assert_int_equal(bookdb_get(&rec, txn, k), 0);
	assert_true(rec.side == BLACK && rec.nmoves >= 1);
	assert_int_equal(usi_move_parse(&rec.moves[0].move, "3c3d", 4, NULL), 0);
	assert_int_equal(bookdb_put(txn, k, &rec), 0);
}

/*
 * Records that are not sound (as joseki check has it) fail every reader of
 * them, naming the record: one that does not decode, one holding another
 * position, one with a move that is not legal there. minimax (the incremental
 * run, which reads the changed records, and --full) went on as if those
 * positions had no moves and exited 0; export left them out; stats counted
 * only the first kind and exited 0; serve answered /healthz ok.
 */
static void test_damaged__records_that_are_not_sound_fail_every_reader(void **state)
{
	(void)state;
	char *dir = make_book(), book[600], log[700];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(log, sizeof log, "%s/serve.log", dir);
	free(run_expecting("minimax %s/b --quiet", dir, 0));
	/* Three records damaged, through the store (so that the change log
	 * names them for the incremental run). */
	BookDB *db;
	char err[BOOKDB_ERRLEN], sfen2[SFEN_MAX];
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key keys[3], k;
	int nk = 0;
	const uint8_t *v;
	size_t vl;
	uint8_t other[BOOKDB_RECORD_MAX];
	size_t other_len = 0;
	static BookRecord rec;
	static Position pos;
	while (nk < 3 && bookdb_iter_next(it, &k, &v, &vl) == 1) {
		if (bookdb_record_decode(&rec, v, vl) < 0 || rec.nmoves < 1) continue;
		if (nk == 2 && rec.side != BLACK) continue;
		if (nk == 0) {
			memcpy(other, v, vl);
			other_len = vl;
		}
		keys[nk++] = k;
	}
	bookdb_iter_free(it);
	assert_int_equal(nk, 3);
	static const uint8_t GARBAGE[] = {0xff, 0xfe, 0x00, 0x17, 0x99, 0x42, 0xff, 0xff, 0x01};
	assert_int_equal(bookdb_put_raw(txn, keys[0], GARBAGE, sizeof GARBAGE), 0);
	assert_int_equal(bookdb_get(&rec, txn, keys[1]), 0);
	assert_int_equal(bookdb_record_position(&pos, &rec, NULL), 0);
	sfen_write(&pos, sfen2, sizeof sfen2);
	assert_int_equal(bookdb_put_raw(txn, keys[1], other, other_len), 0);
	put_illegal_move(txn, keys[2]);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	expect_fails("minimax %s/b --quiet", dir, "the book is damaged");
	expect_fails("minimax %s/b --full --quiet", dir, "the book is damaged");
	expect_fails("export %s/b %s/out.db --quiet", dir, "the book is damaged");
	expect_fails("stats %s/b --scan", dir, "3 records are not sound");
	expect_fails("check %s/b", dir, "3 bad records");
	char q[SFEN_MAX + 40];
	snprintf(q, sizeof q, "query %%s/b \"sfen %s\"", sfen2);
	expect_fails(q, dir, "corrupt record");
	expect_served_damaged(book, log, "found 3 that are not sound", 3);
	ts_rmtree(dir);
	free(dir);
}

/*
 * One record whose first move is not legal there (Black to move, White's
 * pawn's move stored), nothing else damaged: export, which tests each stored
 * move alone instead of listing the legal ones, fails on it and names it,
 * as check does.
 */
static void test_damaged__an_illegal_stored_move_fails_export(void **state)
{
	(void)state;
	char *dir = make_book(), book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	free(run_expecting("minimax %s/b --quiet", dir, 0));
	free(run_expecting("export %s/b %s/out.db --quiet", dir, 0));
	BookDB *db;
	char err[BOOKDB_ERRLEN], hex[KEY_HEX_LEN];
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key k;
	const uint8_t *v;
	size_t vl;
	static BookRecord rec;
	bool found = false;
	while (!found && bookdb_iter_next(it, &k, &v, &vl) == 1)
		found =
		    bookdb_record_decode(&rec, v, vl) == 0 && rec.nmoves >= 1 && rec.side == BLACK;
	bookdb_iter_free(it);
	assert_true(found);
	put_illegal_move(txn, k);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	key_to_hex(k, hex);
	char says[KEY_HEX_LEN + 64];
	snprintf(says, sizeof says, "record %s: move 0 (3c3d", hex);
	expect_fails("export %s/b %s/out2.db --quiet", dir, says);
	expect_fails("export %s/b %s/out2.db --quiet", dir, "is illegal");
	expect_fails("check %s/b", dir, "1 bad record");
	ts_rmtree(dir);
	free(dir);
}

/*
 * The database damaged past a record (a compacted book whose branch pages
 * point past its end: LMDB's "page not found" at any descent): serve's scan
 * stops there and says so; /v1/stats has corrupt set and the counts it could
 * not make null; /healthz degraded (before: corrupt null, /healthz ok). The
 * whole-book minimax, export and stats fail.
 */
static void test_damaged__a_damaged_database_is_noticed_by_serve(void **state)
{
	(void)state;
	char *dir = make_book(), path[600], log[700], book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(path, sizeof path, "%s/b/data.mdb", dir);
	snprintf(log, sizeof log, "%s/serve.log", dir);
	free(run_expecting("compact %s/b", dir, 0));
	/* Every branch page (LMDB's layout: the page number at 0, the flags at
	 * 10, lower at 12, the node offsets from 16; a branch node's child page
	 * number in its first 6 bytes) made to point past the end. */
	size_t len;
	uint8_t *d = (uint8_t *)ts_read_file(path, &len);
	const size_t PS = 4096;
	int branches = 0;
	for (size_t i = 2; (i + 1) * PS <= len; i++) {
		uint8_t *pg = d + i * PS;
		uint64_t pgno;
		uint16_t flags, lower;
		memcpy(&pgno, pg, 8);
		memcpy(&flags, pg + 10, 2);
		memcpy(&lower, pg + 12, 2);
		if (pgno != i || !(flags & 1) || lower < 16 || lower > PS) continue;
		branches++;
		for (size_t k = 16; k + 2 <= lower; k += 2) {
			uint16_t off;
			memcpy(&off, pg + k, 2);
			if (off + 6u <= PS) memset(pg + off, 0x7f, 6);
		}
	}
	assert_true(branches > 0);
	assert_int_equal(ts_write_file(path, (const char *)d, len), 0);
	free(d);
	expect_fails("stats %s/b --scan", dir, "corrupt record or database");
	expect_fails("minimax %s/b --full --quiet", dir, "corrupt record or database");
	expect_served_damaged(book, log, "stopped after", 1);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Damage below the records, as a tester made it: 30 single-bit flips over the
 * pages past the first 4 of a 30,000-position synth book (whole: 5 pages of
 * random bytes instead), seed after seed until a copy makes LMDB stop on a bad
 * page the way asked (says: by a fault, or by its assertion). It used to end stats, check, check
 * --repair and export by SIGSEGV (status 139) with no word, or by LMDB's assertion `IS_LEAF(mp)`
 * (134); serve died the same way. Now each says on one line that BOOK's database file is damaged
 * below its records, naming the book and the command, and exits 3 (BOOKDB_EXIT_DAMAGED), and check
 * --repair leaves no NEW (nor NEW.partial), so it can be run again. Returns the seed found.
 */
static uint64_t damage_until_lmdb_stops(const char *dir, bool whole, const char *says)
{
	char path[600], orig[600];
	snprintf(orig, sizeof orig, "%s/orig", dir);
	snprintf(path, sizeof path, "%s/b/data.mdb", dir);
	if (ts_runf(NULL, NULL, "%s synth %s --positions 30000 --quiet", ts_joseki(), orig) != 0)
		fail_msg("synth failed");
	size_t len;
	char *data = ts_read_file(strcat(orig, "/data.mdb"), &len);
	assert_non_null(data);
	const size_t PS = 4096, npages = len / PS;
	assert_true(npages > 100);
	char bookdir[600];
	snprintf(bookdir, sizeof bookdir, "%s/b", dir);
	assert_int_equal(mkdir(bookdir, 0755), 0);
	for (uint64_t seed = 1; seed <= 120; seed++) {
		uint64_t r = seed * 0x9e3779b97f4a7c15ULL + (whole ? 7 : 0);
		char *bad = malloc(len);
		memcpy(bad, data, len);
		if (whole)
			for (int k = 0; k < 5; k++) {
				size_t p = 4 + ts_rand(&r) % (npages - 4);
				for (size_t i = 0; i < PS; i++) bad[p * PS + i] = (char)ts_rand(&r);
			}
		else
			for (int k = 0; k < 30; k++) {
				size_t p = 4 + ts_rand(&r) % (npages - 4),
				       o = 16 + ts_rand(&r) % (PS - 16);
				bad[p * PS + o] ^= (char)(1u << (ts_rand(&r) % 8));
			}
		assert_int_equal(ts_write_file(path, bad, len), 0);
		free(bad);
		char *err = NULL;
		/* A reader of every record that writes nothing (stats --scan
		 * keeps its counts when it finds no damage). */
		int rc = ts_runf(NULL, &err, "timeout 60 %s check %s/b", ts_joseki(), dir);
		if (rc >= 124)
			fail_msg("seed %llu: check ended with status %d (a signal?):\n%s",
			         (unsigned long long)seed, rc, err);
		bool found = rc == BOOKDB_EXIT_DAMAGED;
		if (found && !strstr(err, "damaged below its records"))
			fail_msg("seed %llu: check does not say the book is damaged:\n%s",
			         (unsigned long long)seed, err);
		/* LMDB stopped, but not the way asked (which page a seed hits
		 * depends on the book's layout): the next seed. */
		found = found && strstr(err, says);
		free(err);
		if (found) {
			free(data);
			return seed;
		}
	}
	fail_msg("no seed of 120 made LMDB stop on a bad page saying '%s'", says);
	return 0;
}

/* Runs `joseki` with fmt (two %s: dir) over the damaged book dir/b: status 3,
 * one line on stderr naming the book, the command and the damage. */
static void expect_damaged(const char *fmt, const char *dir, const char *cmd)
{
	char *err = run_expecting(fmt, dir, BOOKDB_EXIT_DAMAGED);
	char want[800];
	snprintf(want, sizeof want,
	         "joseki: %s: %s/b: the book's database file is damaged below its records "
	         "(LMDB stopped at a bad page: ",
	         cmd, dir);
	const char *at = strstr(err, want);
	if (!at || !strstr(at, "restore ") || !strstr(at, "from a backup") ||
	    strchr(at, '\n') != err + strlen(err) - 1)
		fail_msg("%s: the message is not the one line expected:\n%s", fmt, err);
	free(err);
}

static void expect_missing(const char *dir, const char *name)
{
	char p[700];
	struct stat sb;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (stat(p, &sb) == 0) fail_msg("%s was left behind", p);
}

static void every_reader_says_damaged(const char *dir)
{
	expect_damaged("stats %s/b --scan", dir, "stats");
	expect_damaged("stats %s/b --scan --json", dir, "stats");
	expect_damaged("check %s/b", dir, "check");
	expect_damaged("export %s/b %s/out.db --quiet", dir, "export");
	expect_missing(dir, "out.db");
	expect_missing(dir, "out.db.tmp");
	/* The repair stops too, leaves nothing, and may be run again. */
	for (int i = 0; i < 2; i++) {
		expect_damaged("check %s/b --repair %s/rep", dir, "check");
		expect_missing(dir, "rep");
		expect_missing(dir, "rep.partial");
	}
	/* A query's descent may miss the bad page; it never ends by a signal,
	 * and a failure names the book. */
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "timeout 60 %s query %s/b startpos", ts_joseki(), dir);
	if (rc >= 124 || (rc != 0 && !strstr(err, dir))) fail_msg("query: status %d\n%s", rc, err);
	free(out);
	free(err);
	/* serve scans every record at start: it stops there, saying so. */
	expect_damaged("serve %s/b --quiet --listen 127.0.0.1:0", dir, "serve");
}

static void test_damaged__a_page_lmdb_cannot_follow_is_said_not_crashed_on(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	uint64_t seed = damage_until_lmdb_stops(dir, false, "SIGSEGV");
	print_message("flipped bits, seed %llu: LMDB stopped on a bad page\n",
	              (unsigned long long)seed);
	every_reader_says_damaged(dir);
	ts_rmtree(dir);
	free(dir);
}

static void test_damaged__an_lmdb_assertion_on_a_bad_page_is_said_not_crashed_on(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	uint64_t seed = damage_until_lmdb_stops(dir, true, "Assertion");
	print_message("random pages, seed %llu: LMDB's assertion\n", (unsigned long long)seed);
	every_reader_says_damaged(dir);
	ts_rmtree(dir);
	free(dir);
}

/* A fault that is not the book's keeps its default action: kill -SEGV of a
 * server on a sound book ends it by the signal, without the damage line. */
static void test_damaged__a_fault_not_in_lmdb_is_not_taken_for_damage(void **state)
{
	(void)state;
	char *dir = make_book(), book[600], log[700];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(log, sizeof log, "%s/serve.log", dir);
	serve_logged(&g_serve, book, log);
	kill(g_serve, SIGSEGV);
	int wst = 0;
	waitpid(g_serve, &wst, 0);
	g_serve = 0;
	assert_true(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGSEGV);
	char *said = ts_read_file(log, NULL);
	assert_null(strstr(said, "damaged below its records"));
	free(said);
	ts_rmtree(dir);
	free(dir);
}

/* The problem lines of check's stdout ("BOOK: record HEX: ..."), in order
 * (malloc'd; their count in *n). */
static char **record_lines(const char *out, size_t *n)
{
	char **v = NULL;
	*n = 0;
	for (const char *p = strstr(out, ": record "); p; p = strstr(p + 1, ": record ")) {
		const char *e = strchr(p, '\n');
		v = realloc(v, (*n + 1) * sizeof *v);
		assert_non_null(v);
		v[(*n)++] = strndup(p, e ? (size_t)(e - p) : strlen(p));
	}
	return v;
}

/* check reads the records in batches and checks each batch on every core:
 * damage spread over the batches and over each batch's ranges is found
 * whole, told in key order, and told as the serial pass of a repair tells it. */
static void test_damaged__check_on_every_core_tells_problems_in_key_order(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 40000 --seed 8 --quiet",
	                         ts_joseki(), book),
	                 0);
	static const size_t AT[] = {0, 5, 8191, 8192, 16383, 16384, 24600, 32768, 39999};
	enum { NAT = sizeof AT / sizeof *AT };
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key keys[NAT], k;
	const uint8_t *v;
	size_t vl, i = 0, nk = 0;
	while (nk < NAT && bookdb_iter_next(it, &k, &v, &vl) == 1)
		if (i++ == AT[nk]) keys[nk++] = k;
	bookdb_iter_free(it);
	assert_int_equal(nk, NAT);
	static const uint8_t GARBAGE[] = {0xff, 0xfe, 0x00, 0x17, 0x99, 0x42, 0xff, 0xff, 0x01};
	for (size_t j = 0; j < NAT; j++)
		assert_int_equal(bookdb_put_raw(txn, keys[j], GARBAGE, sizeof GARBAGE), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	char *out = NULL, *rout = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s check %s", ts_joseki(), book), 1);
	assert_int_equal(ts_runf(&rout, NULL, "%s check %s --repair %s/r", ts_joseki(), book, dir),
	                 1);
	if (!strstr(out, "check: 40000 records, 9 bad")) fail_msg("%s", out);
	size_t n, rn;
	char **l = record_lines(out, &n), **rl = record_lines(rout, &rn);
	assert_int_equal(n, NAT);
	assert_int_equal(rn, NAT);
	for (size_t j = 0; j < n; j++) {
		char hex[KEY_HEX_LEN];
		key_to_hex(keys[j], hex);
		if (!strstr(l[j], hex)) fail_msg("line %zu is not record %s's: %s", j, hex, l[j]);
		assert_string_equal(l[j], rl[j]);
		free(l[j]);
		free(rl[j]);
	}
	free(l);
	free(rl);
	free(out);
	free(rout);
	ts_rmtree(dir);
	free(dir);
}

/* A leaf page whose header counts fewer nodes than it holds hides records
 * without any error from LMDB: every reader simply does not meet them. check
 * compares what it read with the database's own count, says how many could
 * not be read, and fails; so does the repair, whose book lacks them. */
static void test_damaged__records_a_damaged_page_hides_are_counted_unreadable(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], data[700];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(data, sizeof data, "%s/data.mdb", book);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 20000 --seed 3 --quiet",
	                         ts_joseki(), book),
	                 0);
	/* The middle one of the file's leaf pages (LMDB's header: flags at 10,
	 * P_LEAF 0x02; lower at 12, 16 + 2 a node): three nodes fewer. */
	size_t len;
	uint8_t *f = (uint8_t *)ts_read_file(data, &len);
	assert_non_null(f);
	long leaves[8192];
	size_t nl = 0;
	for (size_t pg = 2; (pg + 1) * 4096 <= len && nl < 8192; pg++) {
		const uint8_t *h = f + pg * 4096;
		uint16_t flags = (uint16_t)(h[10] | h[11] << 8),
		         lower = (uint16_t)(h[12] | h[13] << 8);
		if (flags == 0x02 && lower >= 16 + 2 * 8) leaves[nl++] = (long)pg;
	}
	assert_true(nl > 10);
	long at = leaves[nl / 2] * 4096 + 12;
	uint16_t lower = (uint16_t)(f[at] | f[at + 1] << 8);
	free(f);
	lower = (uint16_t)(lower - 6);
	FILE *w = fopen(data, "r+b");
	assert_non_null(w);
	assert_int_equal(fseek(w, at, SEEK_SET), 0);
	assert_int_equal(fputc(lower & 0xff, w), lower & 0xff);
	assert_int_equal(fputc(lower >> 8, w), lower >> 8);
	assert_int_equal(fclose(w), 0);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s check %s", ts_joseki(), book), 1);
	if (!strstr(out, "3 of the 20000 records the database counts could not be read") ||
	    !strstr(out, "check: 19997 records, 3 unreadable, 0 bad") ||
	    !strstr(err, "3 records could not be read"))
		fail_msg("%s%s", out, err);
	free(out);
	free(err);
	assert_int_equal(ts_runf(&out, &err, "%s check %s --repair %s/r", ts_joseki(), book, dir),
	                 1);
	if (!strstr(out, "the repaired book lacks them") || !strstr(out, "19997 records copied"))
		fail_msg("%s%s", out, err);
	free(out);
	free(err);
	/* Every other pass over the whole book refuses it, rather than count,
	 * export or write it anew without them as if it were whole: minimax
	 * --full and compact rebuilt it without them (check found nothing
	 * afterwards), stats --scan counted 19997 positions and kept them,
	 * serve's scan found nothing wrong. */
	expect_fails("stats %s/b --scan", dir, "corrupt record or database");
	expect_fails("minimax %s/b --full --quiet", dir, "corrupt record or database");
	expect_fails("compact %s/b", dir, "a damaged page hides them");
	expect_fails("backup %s/b %s/bk --compact", dir, "a damaged page hides them");
	expect_fails("export %s/b %s/out.db --quiet", dir, "the book is damaged");
	char out_db[700], bk[700], log[700];
	snprintf(out_db, sizeof out_db, "%s/out.db", dir);
	snprintf(bk, sizeof bk, "%s/bk", dir);
	snprintf(log, sizeof log, "%s/serve.log", dir);
	assert_int_equal(access(out_db, F_OK), -1);
	assert_int_equal(access(bk, F_OK), -1);
	expect_served_damaged(book, log, "corrupt record or database", 1);
	/* The book is as it was: check counts the same three. */
	assert_int_equal(ts_runf(&out, &err, "%s check %s", ts_joseki(), book), 1);
	if (!strstr(out, "check: 19997 records, 3 unreadable, 0 bad")) fail_msg("%s%s", out, err);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_damaged__a_truncated_data_file_is_refused_by_every_command),
	    cmocka_unit_test(test_damaged__flipped_bytes_are_found_and_repaired),
	    cmocka_unit_test(test_damaged__a_bad_game_is_repaired_into_an_id_without_plies),
	    cmocka_unit_test(test_damaged__another_schema_version_and_a_missing_lock_file),
	    cmocka_unit_test(test_damaged__a_read_only_book),
	    cmocka_unit_test(test_damaged__a_book_this_user_may_not_write),
	    cmocka_unit_test(test_damaged__an_illegal_stored_move_fails_export),
	    cmocka_unit_test(test_damaged__check_on_every_core_tells_problems_in_key_order),
	    cmocka_unit_test_teardown(
	        test_damaged__records_a_damaged_page_hides_are_counted_unreadable, end_serve),
	    cmocka_unit_test_teardown(test_damaged__records_that_are_not_sound_fail_every_reader,
	                              end_serve),
	    cmocka_unit_test_teardown(test_damaged__a_damaged_database_is_noticed_by_serve,
	                              end_serve),
	    cmocka_unit_test(test_damaged__a_page_lmdb_cannot_follow_is_said_not_crashed_on),
	    cmocka_unit_test(test_damaged__an_lmdb_assertion_on_a_bad_page_is_said_not_crashed_on),
	    cmocka_unit_test_teardown(test_damaged__a_fault_not_in_lmdb_is_not_taken_for_damage,
	                              end_serve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

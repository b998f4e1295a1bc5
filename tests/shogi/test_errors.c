/*
 * tests/shogi/test_errors.c — the error codes of every module (shogi/errors.h):
 * each code lies in its own module's range, no two modules' codes meet, each
 * module's strerror knows each of its codes (no "unknown"), and err_module
 * names the module of each code and of nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "cluster/coord.h"
#include "play/cycle.h"
#include "play/match.h"
#include "bookgen/roots.h"
#include "bookgen/selector.h"
#include "bookgen/think.h"
#include "cluster/worker.h"
#include "ingest/kifu.h"
#include "ingest/fetch.h"
#include "ingest/ingest.h"
#include "minimax/bookmm.h"
#include "minimax/export.h"
#include "minimax/mmfile.h"
#include "minimax/petashock.h"
#include "search/engine.h"
#include "search/search.h"
#include "server/server.h"
#include "server/tokens.h"
#include "shogi/db2016.h"
#include "shogi/errors.h"
#include "shogi/position.h"

typedef struct {
	const char *name;
	int base;
	const char *(*strerror)(int);
	int codes[16];
} Module;

static const char *search_msg(int code)
{
	return search_strerror(code);
}

static const Module MODULES[] = {
    {"shogi",
     ERR_SHOGI,
     shogi_strerror,
     {SHOGI_EPARSE, SHOGI_EILLEGAL, SHOGI_ETOOLONG, SHOGI_ENOMEM}},
    {"db2016", ERR_DB2016, db2016_strerror, {DB2016_EIO, DB2016_ENOMEM}},
    {"bookdb",
     ERR_BOOKDB,
     bookdb_strerror,
     {BOOKDB_ENOTFOUND, BOOKDB_ECORRUPT, BOOKDB_EVERSION, BOOKDB_ENOBOOK, BOOKDB_EREADONLY,
      BOOKDB_EBUSY, BOOKDB_EIO, BOOKDB_ENOMEM, BOOKDB_ELMDB, BOOKDB_EINVAL, BOOKDB_ENOSPC,
      BOOKDB_ESTOPPED}},
    {"kifu", ERR_KIFU, kifu_strerror, {KIFU_EPARSE, KIFU_ENOMEM, KIFU_EIO, KIFU_EILLEGAL}},
    {"ingest",
     ERR_INGEST,
     ingest_strerror,
     {INGEST_EIO, INGEST_ENOMEM, INGEST_EBOOK, INGEST_EINVAL}},
    {"fetch",
     ERR_FETCH,
     fetch_strerror,
     {FETCH_EINVAL, FETCH_ENOMEM, FETCH_ECACHE, FETCH_ECURL, FETCH_EBUSY}},
    {"search",
     ERR_SEARCH,
     search_msg,
     {SEARCH_EINVAL, SEARCH_ENOMEM, SEARCH_ESPAWN, SEARCH_EHANDSHAKE, SEARCH_ETIMEOUT,
      SEARCH_ECRASH, SEARCH_EPROTOCOL, SEARCH_EILLEGAL, SEARCH_EIO, SEARCH_ECANCELED}},
    {"engine", ERR_ENGINE, engine_strerror, {ENGINE_ENOMEM, ENGINE_EINVAL}},
    {"sel",
     ERR_SEL,
     sel_strerror,
     {SEL_ENOMEM, SEL_EINVAL, SEL_ECORRUPT, SEL_EBOOK, SEL_EFULL, SEL_ESTOPPED, SEL_ENOSNAP,
      SEL_ESTALE, SEL_ESNAP, SEL_EIO}},
    {"think", ERR_THINK, think_strerror, {THINK_EINVAL, THINK_ENOMEM, THINK_EBOOK, THINK_EENGINE}},
    {"roots", ERR_ROOTS, roots_strerror, {ROOTS_ENOMEM, ROOTS_EINPUT, ROOTS_EBOOK}},
    {"match",
     ERR_MATCH,
     match_strerror,
     {MATCH_EINVAL, MATCH_ENGINE, MATCH_EBOOK, MATCH_EIO, MATCH_ENOMEM}},
    {"cycle", ERR_CYCLE, cycle_strerror, {CYCLE_EINVAL, CYCLE_EBOOK, CYCLE_ENOMEM, CYCLE_ESTEP}},
    {"bookmm", ERR_BOOKMM, bookmm_strerror, {BOOKMM_ENOMEM, BOOKMM_EBOOK}},
    {"mmfile", ERR_MMFILE, mmfile_strerror, {MMFILE_ENOMEM, MMFILE_EIO, MMFILE_ESTALE}},
    {"export", ERR_EXPORT, export_strerror, {EXPORT_EIO, EXPORT_ENOMEM, EXPORT_EBOOK}},
    {"petashock",
     ERR_PETASHOCK,
     petashock_strerror,
     {PETASHOCK_EIO, PETASHOCK_ENOMEM, PETASHOCK_ECHANGED}},
    {"server",
     ERR_SERVER,
     server_strerror,
     {SERVER_EINVAL, SERVER_ELISTEN, SERVER_ENOMEM, SERVER_EMHD}},
    {"coord",
     ERR_COORD,
     coord_strerror,
     {COORD_ENOMEM, COORD_EINVAL, COORD_ENOLEASE, COORD_EBOOK, COORD_EOPTION}},
    {"tokens",
     ERR_TOKENS,
     server_tokens_strerror,
     {TOKENS_EIO, TOKENS_EPARSE, TOKENS_EINVAL, TOKENS_EEXIST, TOKENS_EFILE, TOKENS_EPERM}},
    {"worker",
     ERR_WORKER,
     worker_strerror,
     {WORKER_EINVAL, WORKER_ENOMEM, WORKER_EAUTH, WORKER_EREFUSED, WORKER_EHTTP}},
};
#define NMODULES (sizeof MODULES / sizeof MODULES[0])

static void test_errors__each_code_in_its_own_range_with_a_message(void **state)
{
	(void)state;
	int seen[NMODULES * 16], nseen = 0;
	for (size_t m = 0; m < NMODULES; m++) {
		const Module *md = &MODULES[m];
		for (int i = 0; i < 16 && md->codes[i]; i++) {
			int c = md->codes[i];
			if (err_module(c) != md->base)
				fail_msg("%s code %d is outside its range (%d)", md->name, c,
				         md->base);
			const char *msg = md->strerror(c);
			if (!msg || !*msg || strstr(msg, "unknown"))
				fail_msg("%s_strerror(%d) = '%s'", md->name, c,
				         msg ? msg : "(null)");
			for (int k = 0; k < nseen; k++)
				if (seen[k] == c)
					fail_msg("code %d is used twice (%s)", c, md->name);
			seen[nseen++] = c;
		}
		/* A code of another module is unknown to this one's strerror. */
		const Module *other = &MODULES[(m + 1) % NMODULES];
		if (!strstr(md->strerror(other->codes[0]), "unknown"))
			fail_msg("%s_strerror knows %s's code %d", md->name, other->name,
			         other->codes[0]);
	}
	assert_true(nseen > 60);
}

static void test_errors__err_module_outside_every_range(void **state)
{
	(void)state;
	assert_int_equal(err_module(0), 0);
	assert_int_equal(err_module(5), 0);
	assert_int_equal(err_module(-1), 0);
	assert_int_equal(err_module(-99), 0);
	assert_int_equal(err_module(ERR_SHOGI), ERR_SHOGI);
	assert_int_equal(err_module(ERR_SHOGI - ERR_RANGE + 1), ERR_SHOGI);
	assert_int_equal(err_module(ERR_TOKENS - ERR_RANGE), 0);
	assert_int_equal(err_module(-100000), 0);
	/* The ranges themselves do not meet. */
	for (size_t a = 0; a < NMODULES; a++)
		for (size_t b = 0; b < NMODULES; b++)
			if (a != b && abs(MODULES[a].base - MODULES[b].base) < ERR_RANGE)
				fail_msg("ranges of %s and %s meet", MODULES[a].name,
				         MODULES[b].name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_errors__each_code_in_its_own_range_with_a_message),
	    cmocka_unit_test(test_errors__err_module_outside_every_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

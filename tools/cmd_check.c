/*
 * joseki check BOOK — verifies the store's invariants: every record decodes; its
 * key is the key of the position it holds; every stored move is legal there and
 * stored once; game statistics add up (wins + draws + losses <= count). Prints
 * one line per problem naming the record's key, then a summary line; exit 1 if
 * anything failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define CHECK_MAX_REPORTS 1000 /* lines printed; the count is always exact */

/* Returns the number of problems found in one record (reported on stdout). */
static int check_record(const char *book, Key key, const uint8_t *val, size_t len,
			BookRecord *rec, Position *pos, uint64_t nbad)
{
	char hex[KEY_HEX_LEN], err[SHOGI_ERRLEN], msg[512];
	int problems = 0;
	key_to_hex(key, hex);
#define REPORT(...)                                                                      \
	do {                                                                             \
		snprintf(msg, sizeof msg, __VA_ARGS__);                                  \
		if (nbad + (uint64_t)problems < CHECK_MAX_REPORTS)                       \
			printf("%s: record %s: %s\n", book, hex, msg);                   \
		problems++;                                                              \
	} while (0)
	int rc = bookdb_record_decode(rec, val, len);
	if (rc) {
		REPORT("does not decode (%zu bytes): %s", len, bookdb_strerror(rc));
		return problems;
	}
	if (bookdb_record_position(pos, rec, err) < 0) {
		REPORT("impossible position: %s", err);
		return problems;
	}
	Key pk = pos_key(pos);
	if (!key_equal(pk, key)) {
		char phex[KEY_HEX_LEN];
		key_to_hex(pk, phex);
		REPORT("key differs from its position's key %s", phex);
	}
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		char usi[USI_MOVE_MAX];
		usi_move_write(m->move, usi);
		if (!pos_is_legal(pos, m->move)) REPORT("move %d (%s, 0x%04x) is illegal", i, usi, m->move);
		for (int j = 0; j < i; j++)
			if (rec->moves[j].move == m->move) REPORT("move %s stored twice", usi);
		if ((uint64_t)m->wins + m->draws + m->losses > m->count)
			REPORT("move %s: wins %u + draws %u + losses %u > count %u", usi, m->wins,
			       m->draws, m->losses, m->count);
	}
#undef REPORT
	return problems;
}

int cmd_check(int argc, char **argv)
{
	const char *book = NULL;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-' && !book) book = argv[i];
		else {
			joseki_error("check: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!book) {
		joseki_error("usage: joseki check BOOK");
		return 2;
	}
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	int ret = 1;
	BookDBOptions opt = {.read_only = true};
	int rc = bookdb_open(&db, book, &opt, err);
	if (rc) {
		joseki_error("%s", err);
		goto done;
	}
	if (!rec || !pos || (rc = bookdb_txn_begin(&txn, db, false)) || (rc = bookdb_iter_open(&it, txn))) {
		joseki_error("%s: %s", book, rc ? bookdb_strerror(rc) : "out of memory");
		goto done;
	}
	uint64_t n = 0, bad = 0, problems = 0;
	Key key;
	const uint8_t *val;
	size_t len;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		n++;
		int p = check_record(book, key, val, len, rec, pos, problems);
		problems += (uint64_t)p;
		bad += p > 0;
	}
	if (rc < 0) {
		printf("%s: after %llu records: %s\n", book, (unsigned long long)n, bookdb_strerror(rc));
		bad++;
	}
	if (problems > CHECK_MAX_REPORTS)
		printf("%s: ... %llu more problems not shown\n", book,
		       (unsigned long long)(problems - CHECK_MAX_REPORTS));
	printf("check: %llu records, %llu bad\n", (unsigned long long)n, (unsigned long long)bad);
	if (bad) {
		joseki_error("%s: %llu bad records", book, (unsigned long long)bad);
		goto done;
	}
	ret = 0;
done:
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	return ret;
}

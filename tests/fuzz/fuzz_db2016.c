/*
 * tests/fuzz/fuzz_db2016.c — libFuzzer target for the DB2016 reader and
 * joseki peta-shock.
 *
 * The input is a book file. The reader must never fail on it (only I/O can
 * fail), every record it returns must hold a position and moves legal in it,
 * and each problem must come as one "book.db:<line>: ..." warning. Then the
 * whole peta-shock run must succeed on the same bytes and write a book whose
 * header, "# NOE:" line and record count agree with what the reader returned,
 * and the same bytes cut into 2 or 3 parts read side by side must give the
 * same book.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shogi/db2016.h"
#include "minimax/petashock.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_warning(void *ctx, const char *msg)
{
	(void)ctx;
	if (strncmp(msg, "book.db:", 8) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static char in_path[64], out_path[64];
	if (!ready) {
		shogi_init();
		snprintf(in_path, sizeof in_path, "/tmp/fuzz_db2016_%ld.in", (long)getpid());
		snprintf(out_path, sizeof out_path, "/tmp/fuzz_db2016_%ld.out", (long)getpid());
		ready = 1;
	}
	if (size > 1 << 16) return 0;

	FILE *f = fmemopen((void *)data, size ? size : 1, "r");
	if (!f) return 0;
	if (size == 0) {
		fclose(f);
		return 0;
	}
	Db2016Reader *r = NULL;
	if (db2016_open_file(&r, f, "book.db", 0, check_warning, NULL) != 0) abort();
	Db2016Record rec;
	int rc;
	size_t records = 0;
	while ((rc = db2016_next(r, &rec)) == 1) {
		if (!rec.pos || !rec.sfen || strlen(rec.sfen) != rec.sfen_len) abort();
		for (size_t k = 0; k < rec.nmoves; k++)
			if (rec.moves[k].move != MOVE_NONE &&
			    !pos_is_legal(rec.pos, rec.moves[k].move))
				abort();
		records++;
	}
	if (rc != 0) abort();
	db2016_close(r);
	fclose(f);

	FILE *w = fopen(in_path, "wb");
	if (!w) return 0;
	fwrite(data, 1, size, w);
	fclose(w);
	PetashockStats st;
	char err[PETASHOCK_ERRLEN];
	PetashockOptions opt = {size & 1, NULL, NULL, NULL, NULL, 1};
	/* Every other input with a book's rules (no marks: the declined
	 * promotions), so that they are fuzzed too. */
	opt.book_rules = (size & 2) != 0;
	if (petashock_run(&st, in_path, out_path, &opt, err) != 0) abort();
	if (st.nodes != records) abort();
	FILE *o = fopen(out_path, "rb");
	if (!o) abort();
	/* The file cut into 2 or 3 parts read side by side: the same book. */
	char *one = NULL;
	size_t one_len = 0;
	FILE *mem = open_memstream(&one, &one_len);
	if (!mem) abort();
	for (int ch; (ch = fgetc(o)) != EOF;) fputc(ch, mem);
	fclose(mem);
	rewind(o);
	opt.threads = 2 + (int)(size % 2);
	if (petashock_run(&st, in_path, out_path, &opt, err) != 0) abort();
	FILE *o2 = fopen(out_path, "rb");
	if (!o2) abort();
	for (size_t i = 0; i < one_len; i++)
		if (fgetc(o2) != (unsigned char)one[i]) abort();
	if (fgetc(o2) != EOF) abort();
	fclose(o2);
	free(one);
	char *line = NULL;
	size_t cap = 0, sfens = 0, lineno = 0;
	while (getline(&line, &cap, o) > 0) {
		lineno++;
		if (lineno == 1 && strcmp(line, DB2016_HEADER "\n") != 0) abort();
		if (lineno == 2) {
			char want[64];
			snprintf(want, sizeof want, "# NOE:%zu\n", records);
			if (strcmp(line, want) != 0) abort();
		}
		if (!strncmp(line, "sfen ", 5)) sfens++;
	}
	free(line);
	fclose(o);
	if (sfens != records) abort();
	unlink(in_path);
	unlink(out_path);
	return 0;
}

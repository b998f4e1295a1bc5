/* ingest/import.c — YaneuraOu DB2016 books into the store. */
#include "ingest/import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bookdb/merge.h"
#include "shogi/clock.h"
#include "shogi/db2016.h"

typedef struct {
	IngestStats *st;
	const char *path;
} WarnCtx;

/* Warnings come as "<file>:<line>: <message>"; kept as (input, line, message). */
static void on_warn(void *ctx, const char *msg)
{
	WarnCtx *w = ctx;
	IngestStats *st = w->st;
	st->errors_total++;
	if (st->nerrors >= INGEST_MAX_ERRORS) return;
	IngestError *e = &st->errors[st->nerrors++];
	size_t pl = strlen(w->path);
	int line = 0;
	const char *rest = msg;
	if (!strncmp(msg, w->path, pl) && msg[pl] == ':') {
		char *end;
		long l = strtol(msg + pl + 1, &end, 10);
		if (end != msg + pl + 1 && *end == ':') {
			line = (int)l;
			rest = end + 1;
			while (*rest == ' ') rest++;
		}
	}
	e->input = strdup(w->path);
	e->line = line;
	e->message = strdup(rest);
	if (!e->input || !e->message) { /* out of memory: the warning is counted, not kept */
		free(e->input);
		free(e->message);
		st->nerrors--;
	}
}

int import_db2016(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer, bool progress)
{
	memset(st, 0, sizeof *st);
	double t0 = clock_s();
	WarnCtx wc = {st, path};
	Db2016Reader *r;
	int rc = db2016_open(&r, path, 0, on_warn, &wc);
	if (rc < 0) {
		on_warn(&wc, db2016_strerror(rc));
		return INGEST_EIO;
	}
	BookWriter *w;
	rc = bookdb_writer_new(&w, db, 20000);
	if (rc < 0) {
		db2016_close(r);
		return INGEST_EBOOK;
	}
	BookRecord *rec = malloc(sizeof *rec), *in = malloc(sizeof *in);
	if (!rec || !in) {
		free(rec);
		free(in);
		bookdb_writer_free(w);
		db2016_close(r);
		return INGEST_ENOMEM;
	}
	int result = INGEST_OK;
	Db2016Record dr;
	uint64_t n = 0;
	while ((rc = db2016_next(r, &dr)) == 1) {
		Key key = pos_key(dr.pos);
		/* The file's record as a thought position of its own... */
		bookdb_record_init(in, dr.pos);
		int max_depth = 0;
		for (size_t i = 0; i < dr.nmoves; i++) {
			const Db2016Move *m = &dr.moves[i];
			if (m->move == MOVE_NONE || in->nmoves >= BOOKDB_MAX_MOVES) continue;
			BookMove *bm = NULL;
			for (int k = 0; k < in->nmoves; k++)
				if (in->moves[k].move == m->move) bm = &in->moves[k];
			if (bm) continue; /* a move listed twice: the first line stands */
			bm = &in->moves[in->nmoves++];
			memset(bm, 0, sizeof *bm);
			bm->move = m->move;
			bm->flags = BOOKDB_MOVE_EVAL;
			bm->eval = (int16_t)value_clamp(m->value);
			bm->depth = (uint8_t)(m->depth < 0 ? 0 : m->depth > 255 ? 255 : m->depth);
			bm->source = INGEST_SOURCE_IMPORT;
			if (bm->depth > max_depth) max_depth = bm->depth;
		}
		if (in->nmoves) {
			in->flags = BOOKDB_REC_THOUGHT;
			in->think_depth = (uint8_t)max_depth;
		}
		/* ...merged into the book's by the rule of joseki merge. */
		rc = bookdb_writer_get(rec, w, key);
		bool changed = false;
		if (rc == BOOKDB_ENOTFOUND) {
			memcpy(rec, in, offsetof(BookRecord, moves));
			memcpy(rec->moves, in->moves, in->nmoves * sizeof *in->moves);
			st->positions_added++;
			st->moves_added += in->nmoves;
			st->evals_added += in->nmoves;
			changed = true;
		} else if (rc < 0) {
			result = INGEST_EBOOK;
			break;
		} else {
			int had = rec->nmoves;
			BookMergeDiff d;
			/* The file coming in is the newer analysis on a tie. */
			bookdb_record_merge(rec, rec, in, prefer, -1, false, &d);
			changed = d.changed;
			st->moves_added += (uint64_t)(rec->nmoves - had);
			if (d.replaced) st->evals_added += in->nmoves;
		}
		if (changed && (rc = bookdb_writer_put(w, key, rec)) < 0) {
			result = INGEST_EBOOK;
			break;
		}
		if (progress && ++n % 65536 == 0)
			fprintf(stderr, "\r  import: %llu positions ", (unsigned long long)n);
	}
	if (rc < 0 && result == INGEST_OK) {
		on_warn(&wc, db2016_strerror(rc));
		result = INGEST_EIO;
	}
	if (result == INGEST_OK && bookdb_writer_flush(w) < 0) result = INGEST_EBOOK;
	if (progress) fprintf(stderr, "\r%*s\r", 40, "");
	bookdb_writer_free(w);
	db2016_close(r);
	free(rec);
	free(in);
	st->seconds = clock_s() - t0;
	return result;
}

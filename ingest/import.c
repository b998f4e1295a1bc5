/* ingest/import.c — YaneuraOu DB2016 books into the store. */
#include "ingest/import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int import_db2016(IngestStats *st, BookDB *db, const char *path, bool progress)
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
	BookRecord *rec = malloc(sizeof *rec);
	if (!rec) {
		bookdb_writer_free(w);
		db2016_close(r);
		return INGEST_ENOMEM;
	}
	int result = INGEST_OK;
	Db2016Record dr;
	uint64_t n = 0;
	while ((rc = db2016_next(r, &dr)) == 1) {
		Key key = pos_key(dr.pos);
		rc = bookdb_writer_get(rec, w, key);
		bool changed = false;
		if (rc == BOOKDB_ENOTFOUND) {
			bookdb_record_init(rec, dr.pos);
			st->positions_added++;
			changed = true;
		} else if (rc < 0) {
			result = INGEST_EBOOK;
			break;
		} else if (dr.pos->game_ply < rec->min_ply) {
			rec->min_ply = (uint16_t)dr.pos->game_ply;
			changed = true;
		}
		int max_depth = 0;
		for (size_t i = 0; i < dr.nmoves; i++) {
			const Db2016Move *m = &dr.moves[i];
			if (m->move == MOVE_NONE) continue;
			BookMove *bm = NULL;
			for (int k = 0; k < rec->nmoves; k++)
				if (rec->moves[k].move == m->move) bm = &rec->moves[k];
			if (!bm) {
				if (rec->nmoves >= BOOKDB_MAX_MOVES) continue;
				bm = &rec->moves[rec->nmoves++];
				memset(bm, 0, sizeof *bm);
				bm->move = m->move;
				st->moves_added++;
			}
			int16_t v = (int16_t)value_clamp(m->value);
			uint8_t d = (uint8_t)(m->depth < 0 ? 0 : m->depth > 255 ? 255 : m->depth);
			if (d > max_depth) max_depth = d;
			if (!(bm->flags & BOOKDB_MOVE_EVAL) || bm->eval != v || bm->depth != d ||
			    bm->source != INGEST_SOURCE_IMPORT) {
				bm->flags |= BOOKDB_MOVE_EVAL;
				bm->eval = v;
				bm->depth = d;
				bm->nodes = 0;
				bm->source = INGEST_SOURCE_IMPORT;
				st->evals_added++;
				changed = true;
			}
		}
		if (dr.nmoves &&
		    (!(rec->flags & BOOKDB_REC_THOUGHT) || rec->think_depth < max_depth)) {
			rec->flags |= BOOKDB_REC_THOUGHT;
			rec->think_depth = (uint8_t)max_depth;
			changed = true;
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
	st->seconds = clock_s() - t0;
	return result;
}

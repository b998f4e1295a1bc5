/* ingest/feed.c — the feeder: inputs to units (ingest_priv.h), walked by
 * ingest/walk.h. */
#include "ingest/ingest_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/walk.h"
#include "shogi/clock.h"

/* Hands one input file or part (or its error) to the parsers, once the
 * window has room for it; 1 when the run stops. */
static int feed_unit(void *ctx, WalkFile *f)
{
	Pipe *p = ctx;
	if (f->errnum == ENOMEM || !f->name || (!f->buf && !f->error)) ing_out_of_memory();
	pthread_mutex_lock(&p->mu);
	while (!p->abort && (p->produced - p->consumed >= p->window ||
	                     (p->produced > p->consumed && p->inflight + f->len > p->inflight_max)))
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->abort || !f->name) {
		bool stop = p->abort;
		pthread_mutex_unlock(&p->mu);
		free(f->name);
		free(f->buf);
		free(f->error);
		return stop;
	}
	Unit *u = &p->units[p->produced % p->window];
	u->name = f->name;
	u->buf = f->buf;
	u->len = f->len;
	u->line = f->line;
	u->format = f->format;
	u->error = f->error;
	p->inflight += f->len;
	Result *r = &p->results[p->produced % p->window];
	memset(r, 0, sizeof *r);
	p->produced++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void ing_progress(Pipe *p, const char *phase, IngestProgress *pr, bool force)
{
	if (!p->opt->progress) return;
	/* The clock is read under the lock: read before it, a thread's time
	 * could be older than the last report another thread has just made. */
	pthread_mutex_lock(&p->mu);
	double t = clock_s();
	double every = p->opt->progress_interval_s > 0 ? p->opt->progress_interval_s : 0.25;
	bool due = force || t - p->last_progress > every;
	if (due) p->last_progress = t;
	pthread_mutex_unlock(&p->mu);
	if (!due) return;
	pr->seconds = t - p->t0;
	pthread_mutex_lock(&p->progress_mu);
	p->opt->progress(p->opt->progress_ctx, phase, pr);
	pthread_mutex_unlock(&p->progress_mu);
}

static int feed_dir(void *ctx, const char *path, const WalkStats *st)
{
	Pipe *p = ctx;
	p->files_seen = st->files;
	ing_progress(p, "walk", &(IngestProgress){.files = st->files, .dir = path}, false);
	return p->abort;
}

void *ing_feeder_main(void *arg)
{
	Pipe *p = arg;
	WalkOptions wo = {.file = feed_unit, .dir = feed_dir, .ctx = p};
	/* The walk stops early only on p->abort, whose setter has said why. */
	(void)walk_inputs(p->inputs, p->ninputs, &wo, &p->walk);
	pthread_mutex_lock(&p->mu);
	p->files_seen = p->walk.files;
	p->feed_done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* shogi/parfor.c — see parfor.h. */
#include "shogi/parfor.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

typedef struct {
	ParforFn fn;
	void *ctx;
	size_t lo, hi;
	int t;
} Range;

static void *range_main(void *arg)
{
	Range *r = arg;
	r->fn(r->ctx, r->lo, r->hi, r->t);
	return NULL;
}

int parfor_threads(size_t n, size_t min_n)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < min_n || ncpu < 2) return 1;
	return ncpu > PARFOR_MAX ? PARFOR_MAX : (int)ncpu;
}

void parfor(size_t n, int nt, ParforFn fn, void *ctx)
{
	if (nt < 1) nt = 1;
	if (nt > PARFOR_MAX) nt = PARFOR_MAX;
	Range r[PARFOR_MAX];
	pthread_t tid[PARFOR_MAX];
	bool started[PARFOR_MAX] = {false};
	for (int t = 0; t < nt; t++) {
		r[t] = (Range){fn, ctx, n * (size_t)t / (size_t)nt,
		               n * (size_t)(t + 1) / (size_t)nt, t};
		if (t > 0 && pthread_create(&tid[t], NULL, range_main, &r[t]) == 0)
			started[t] = true;
	}
	range_main(&r[0]);
	for (int t = 1; t < nt; t++) {
		if (started[t])
			pthread_join(tid[t], NULL);
		else
			range_main(&r[t]);
	}
}

/* shogi/extsort.c — an external merge sort (extsort.h). */
#include "shogi/extsort.h"

#include "shogi/bigmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A record held in memory: where it is in the arena (offsets grow with the
 * order of adding, which makes the sort stable) and its length. */
typedef struct {
	uint64_t off;
	uint32_t len;
} Item;

/* A sorted run on disk: its stream (the file is already unlinked). */
typedef struct {
	FILE *f;
	char *buf; /* the stream's buffer while it is read */
} Run;

/* A run being merged: its current record. */
typedef struct {
	Run run;
	uint8_t *rec;
	size_t len, cap;
	int done;
} Reader;

struct ExtSort {
	char *dir;
	uint64_t budget;
	ExtSortCmp cmp;
	void *ctx;
	uint8_t *arena;
	size_t used, cap;
	Item *items;
	size_t n, icap;
	Run *runs;
	size_t nruns, rcap;
	int finished;
	size_t next_mem; /* all in memory: the next item to give */
	int pending;     /* merging: the record given last is the heap's least */
	Reader *rd;      /* the last merge's readers */
	size_t nrd;
	size_t *heap; /* reader indices, least first */
	size_t nheap;
	ExtSortStats st;
};

int extsort_open(ExtSort **out, const char *dir, uint64_t budget, ExtSortCmp cmp, void *ctx)
{
	*out = NULL;
	ExtSort *s = calloc(1, sizeof *s);
	if (!s || !(s->dir = strdup(bigmem_temp_dir(dir)))) {
		free(s);
		errno = ENOMEM;
		return -1;
	}
	s->budget = budget < EXTSORT_MIN_BUDGET ? EXTSORT_MIN_BUDGET : budget;
	s->cmp = cmp;
	s->ctx = ctx;
	*out = s;
	return 0;
}

/* qsort_r's comparison: the caller's, then the order of adding. */
static int item_cmp(const void *a, const void *b, void *arg)
{
	const ExtSort *s = arg;
	const Item *x = a, *y = b;
	int c = s->cmp(s->arena + x->off, x->len, s->arena + y->off, y->len, s->ctx);
	if (c) return c;
	return x->off < y->off ? -1 : x->off > y->off;
}

FILE *extsort_temp_file(const char *dir)
{
	int fd = bigmem_temp_fd(dir);
	if (fd < 0) return NULL;
	FILE *f = fdopen(fd, "w+b");
	if (!f) close(fd);
	return f;
}

/* A new run file, unlinked at once. */
static FILE *new_run_file(const ExtSort *s)
{
	return extsort_temp_file(s->dir);
}

static int put_record(FILE *f, const void *rec, uint32_t len)
{
	if (fwrite(&len, sizeof len, 1, f) != 1 || (len && fwrite(rec, len, 1, f) != 1)) {
		if (!errno) errno = EIO;
		return -1;
	}
	return 0;
}

static int add_run(ExtSort *s, FILE *f)
{
	if (s->nruns == s->rcap) {
		size_t c = s->rcap ? 2 * s->rcap : 16;
		Run *r = realloc(s->runs, c * sizeof *r);
		if (!r) {
			errno = ENOMEM;
			return -1;
		}
		s->runs = r;
		s->rcap = c;
	}
	s->runs[s->nruns++] = (Run){f, NULL};
	s->st.runs++;
	return 0;
}

/* Sorts the records held and writes them out as a run. */
static int spill(ExtSort *s)
{
	qsort_r(s->items, s->n, sizeof *s->items, item_cmp, s);
	FILE *f = new_run_file(s);
	if (!f) return -1;
	char *buf = malloc(1 << 20);
	if (buf) setvbuf(f, buf, _IOFBF, 1 << 20);
	int rc = 0;
	for (size_t i = 0; i < s->n && !rc; i++) {
		rc = put_record(f, s->arena + s->items[i].off, s->items[i].len);
		s->st.disk_bytes += 4 + s->items[i].len;
	}
	if (!rc && fflush(f)) rc = -1;
	int e = errno;
	setvbuf(f, NULL, _IONBF, 0);
	free(buf);
	if (rc || add_run(s, f)) {
		fclose(f);
		errno = e ? e : EIO;
		return -1;
	}
	s->n = 0;
	s->used = 0;
	return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t unit)
{
	if (need <= *cap) return 0;
	size_t c = *cap ? *cap : 4096 / unit + 1;
	while (c < need) c *= 2;
	void *q = realloc(*p, c * unit);
	if (!q) {
		errno = ENOMEM;
		return -1;
	}
	*p = q;
	*cap = c;
	return 0;
}

int extsort_add(ExtSort *s, const void *rec, size_t len)
{
	if (s->finished || len > EXTSORT_MAX_RECORD) {
		errno = EINVAL;
		return -1;
	}
	uint64_t after = (uint64_t)s->used + len + (uint64_t)(s->n + 1) * sizeof(Item);
	/* The arrays double as they fill: count what they may reach. */
	if (s->n && after + after / 2 > s->budget && spill(s)) return -1;
	if (grow((void **)&s->arena, &s->cap, s->used + len, 1) ||
	    grow((void **)&s->items, &s->icap, s->n + 1, sizeof(Item)))
		return -1;
	memcpy(s->arena + s->used, rec, len);
	s->items[s->n++] = (Item){s->used, (uint32_t)len};
	s->used += len;
	s->st.records++;
	s->st.bytes += len;
	return 0;
}

/* Reads r's next record; r->done at the end. 0, or -1 on an error. */
static int reader_next(Reader *r)
{
	uint32_t len;
	if (fread(&len, sizeof len, 1, r->run.f) != 1) {
		if (ferror(r->run.f)) {
			errno = EIO;
			return -1;
		}
		r->done = 1;
		return 0;
	}
	if (len > EXTSORT_MAX_RECORD) {
		errno = EIO;
		return -1;
	}
	if (grow((void **)&r->rec, &r->cap, len ? len : 1, 1)) return -1;
	if (len && fread(r->rec, len, 1, r->run.f) != 1) {
		errno = EIO;
		return -1;
	}
	r->len = len;
	return 0;
}

/* Reader a before reader b: their records, then the earlier run. */
static int rd_less(const ExtSort *s, const Reader *rd, size_t a, size_t b)
{
	int c = s->cmp(rd[a].rec, rd[a].len, rd[b].rec, rd[b].len, s->ctx);
	return c < 0 || (c == 0 && a < b);
}

static void sift_down(ExtSort *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < s->nheap && rd_less(s, s->rd, s->heap[l], s->heap[m])) m = l;
		if (l + 1 < s->nheap && rd_less(s, s->rd, s->heap[l + 1], s->heap[m])) m = l + 1;
		if (m == i) return;
		size_t t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

static void free_readers(ExtSort *s)
{
	for (size_t i = 0; i < s->nrd; i++) {
		if (s->rd[i].run.f) fclose(s->rd[i].run.f);
		free(s->rd[i].run.buf);
		free(s->rd[i].rec);
	}
	free(s->rd);
	free(s->heap);
	s->rd = NULL;
	s->heap = NULL;
	s->nrd = s->nheap = 0;
}

/* Opens runs[0..k) (taken from the list) for a merge with bufsz-byte
 * buffers, each at its first record, into s->rd and the heap. */
static int start_merge(ExtSort *s, Run *runs, size_t k, size_t bufsz)
{
	s->rd = calloc(k, sizeof *s->rd);
	s->heap = malloc(k * sizeof *s->heap);
	if (!s->rd || !s->heap) {
		for (size_t i = 0; i < k; i++) fclose(runs[i].f);
		free(s->rd);
		free(s->heap);
		s->rd = NULL;
		s->heap = NULL;
		errno = ENOMEM;
		return -1;
	}
	s->nrd = k;
	for (size_t i = 0; i < k; i++) s->rd[i].run = runs[i];
	for (size_t i = 0; i < k; i++) {
		Reader *r = &s->rd[i];
		if (fseek(r->run.f, 0, SEEK_SET)) return -1;
		if ((r->run.buf = malloc(bufsz))) setvbuf(r->run.f, r->run.buf, _IOFBF, bufsz);
		if (reader_next(r)) return -1;
		if (!r->done) s->heap[s->nheap++] = i;
	}
	for (size_t i = s->nheap / 2; i-- > 0;) sift_down(s, i);
	return 0;
}

/* The least record of the merge: 1 with it, 0 at the end, -1 on an error. */
static int merge_next(ExtSort *s, const void **rec, size_t *len)
{
	if (!s->nheap) return 0;
	Reader *r = &s->rd[s->heap[0]];
	*rec = r->rec;
	*len = r->len;
	return 1;
}

/* Advances the reader whose record merge_next gave. */
static int merge_advance(ExtSort *s)
{
	Reader *r = &s->rd[s->heap[0]];
	if (reader_next(r)) return -1;
	if (r->done) s->heap[0] = s->heap[--s->nheap];
	if (s->nheap) sift_down(s, 0);
	return 0;
}

int extsort_finish(ExtSort *s)
{
	if (s->finished) return 0;
	s->finished = 1;
	if (!s->nruns) {
		qsort_r(s->items, s->n, sizeof *s->items, item_cmp, s);
		return 0;
	}
	if (s->n && spill(s)) return -1;
	free(s->arena);
	free(s->items);
	s->arena = NULL;
	s->items = NULL;
	s->cap = s->icap = 0;
	/* Each run merged at once gets a read buffer of at least 256 KiB. */
	size_t fanin = (size_t)(s->budget / (256u << 10));
	if (fanin < 2) fanin = 2;
	if (fanin > 256) fanin = 256;
	while (s->nruns > fanin) {
		/* One level: groups of fanin runs, in order, each into a new run. */
		size_t nnew = 0;
		for (size_t g = 0; g < s->nruns; g += fanin) {
			size_t k = s->nruns - g < fanin ? s->nruns - g : fanin;
			if (k == 1) {
				s->runs[nnew++] = s->runs[g];
				continue;
			}
			FILE *f = new_run_file(s);
			if (!f) return -1;
			char *wbuf = malloc(1 << 20);
			if (wbuf) setvbuf(f, wbuf, _IOFBF, 1 << 20);
			int rc = start_merge(s, s->runs + g, k, (size_t)(s->budget / (k + 1)));
			const void *rec;
			size_t len;
			while (!rc && merge_next(s, &rec, &len) == 1) {
				rc = put_record(f, rec, (uint32_t)len);
				s->st.disk_bytes += 4 + len;
				if (!rc) rc = merge_advance(s);
			}
			if (!rc && fflush(f)) rc = -1;
			int e = errno;
			setvbuf(f, NULL, _IONBF, 0);
			free(wbuf);
			free_readers(s);
			if (rc) {
				fclose(f);
				for (size_t i = g + k; i < s->nruns; i++) fclose(s->runs[i].f);
				s->nruns = nnew;
				errno = e ? e : EIO;
				return -1;
			}
			s->runs[nnew++] = (Run){f, NULL};
			s->st.runs++;
		}
		s->nruns = nnew;
		s->st.merge_passes++;
	}
	size_t k = s->nruns;
	s->nruns = 0; /* the readers own them now */
	return start_merge(s, s->runs, k, (size_t)(s->budget / (k + 1)));
}

int extsort_next(ExtSort *s, const void **rec, size_t *len)
{
	if (!s->finished) {
		errno = EINVAL;
		return -1;
	}
	if (!s->rd) {
		if (s->next_mem >= s->n) return 0;
		const Item *it = &s->items[s->next_mem++];
		*rec = s->arena + it->off;
		*len = it->len;
		return 1;
	}
	/* The record given last time is replaced now, not before. */
	if (s->pending) {
		s->pending = 0;
		if (merge_advance(s)) return -1;
	}
	int got = merge_next(s, rec, len);
	s->pending = got == 1;
	return got;
}

void extsort_stats(const ExtSort *s, ExtSortStats *st)
{
	*st = s->st;
}

void extsort_free(ExtSort *s)
{
	if (!s) return;
	free_readers(s);
	for (size_t i = 0; i < s->nruns; i++) fclose(s->runs[i].f);
	free(s->runs);
	free(s->arena);
	free(s->items);
	free(s->dir);
	free(s);
}

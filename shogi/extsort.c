/* shogi/extsort.c — an external merge sort (extsort.h). */
#include "shogi/extsort.h"

#include "shogi/bigmem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A record held in memory: where it is in the arena (offsets grow with the
 * order of adding, which makes the sort stable) and its length, in one word
 * (ol: the offset above ITEM_LEN_BITS bits of length); and with
 * extsort_cmp_bytes, its first 8 bytes as a big-endian number (pre), so that
 * most comparisons need not read the arena. */
typedef struct {
	uint64_t pre;
	uint64_t ol;
} Item;

#define ITEM_LEN_BITS 25 /* EXTSORT_MAX_RECORD fits */
#define ITEM_MAX_OFF (UINT64_C(1) << (64 - ITEM_LEN_BITS))
_Static_assert(EXTSORT_MAX_RECORD < (1u << ITEM_LEN_BITS), "record length in an item");

static inline uint64_t item_off(const Item *it)
{
	return it->ol >> ITEM_LEN_BITS;
}

static inline uint32_t item_len(const Item *it)
{
	return (uint32_t)(it->ol & ((UINT64_C(1) << ITEM_LEN_BITS) - 1));
}

int extsort_cmp_bytes(const void *a, size_t alen, const void *b, size_t blen, void *ctx)
{
	(void)alen;
	(void)blen;
	return memcmp(a, b, (size_t)(uintptr_t)ctx);
}

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

/* Records held in memory: their bytes (arena, used of cap) and items (n of
 * icap). */
typedef struct {
	uint8_t *arena;
	size_t used, cap;
	Item *items;
	size_t n, icap;
} Buffer;

struct ExtSort {
	char *dir;
	uint64_t budget;
	ExtSortCmp cmp;
	void *ctx;
	Buffer b; /* the records being added */
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
	/* A run being sorted and written by a thread of its own while records
	 * are added into the other buffer (at most one at a time). */
	int spilling;
	pthread_t thr;
	Buffer sp; /* its records (kept for the next buffer after) */
	FILE *sp_file;
	int sp_errno;
	uint64_t sp_disk;
};

/* What the sort of a buffer compares with (bytes: extsort_cmp_bytes' n). */
typedef struct {
	ExtSortCmp cmp;
	void *ctx;
	const uint8_t *arena;
	size_t bytes;
} SortCtx;

static size_t cmp_bytes_of(const ExtSort *s);

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

/* extsort_cmp_bytes' n for s (0: another comparison). */
static size_t cmp_bytes_of(const ExtSort *s)
{
	return s->cmp == extsort_cmp_bytes ? (size_t)(uintptr_t)s->ctx : 0;
}

/* qsort_r's comparison: the caller's, then the order of adding. */
static int item_cmp(const void *a, const void *b, void *arg)
{
	const SortCtx *k = arg;
	const Item *x = a, *y = b;
	const uint8_t *ra = k->arena + item_off(x), *rb = k->arena + item_off(y);
	int c;
	if (k->bytes) {
		if (x->pre != y->pre) return x->pre < y->pre ? -1 : 1;
		c = k->bytes > 8 ? memcmp(ra + 8, rb + 8, k->bytes - 8) : 0;
	} else {
		c = k->cmp(ra, item_len(x), rb, item_len(y), k->ctx);
	}
	if (c) return c;
	return x->ol < y->ol ? -1 : x->ol > y->ol;
}

/* A sort of n items (records in k.arena) in place: qsort_r's, run on this
 * thread or another. */
typedef struct {
	SortCtx k;
	Item *items;
	size_t n;
} SortJob;

static void *sort_job(void *arg)
{
	SortJob *j = arg;
	qsort_r(j->items, j->n, sizeof *j->items, item_cmp, &j->k);
	return NULL;
}

static SortJob sort_of(const ExtSort *s, const Buffer *b, size_t from, size_t n)
{
	return (SortJob){{s->cmp, s->ctx, b->arena, cmp_bytes_of(s)}, b->items + from, n};
}

/* The records held, sorted in place with two threads when there are many
 * (the halves sorted side by side, then merged); one when a thread or the
 * merge's array cannot be had. The order is the same either way. */
static void sort_held(ExtSort *s)
{
	size_t n = s->b.n, h = n / 2;
	/* The merge's array, where the budget has room for it. */
	bool room = (uint64_t)s->b.cap + (s->b.icap + n) * sizeof(Item) <= s->budget;
	Item *out = n >= 65536 && room ? malloc(n * sizeof *out) : NULL;
	pthread_t t;
	SortJob a = sort_of(s, &s->b, 0, h), z = sort_of(s, &s->b, h, n - h);
	if (!out || pthread_create(&t, NULL, sort_job, &a) != 0) {
		free(out);
		SortJob all = sort_of(s, &s->b, 0, n);
		sort_job(&all);
		return;
	}
	sort_job(&z);
	pthread_join(t, NULL);
	size_t i = 0, j = h, o = 0;
	while (i < h && j < n)
		out[o++] = item_cmp(&s->b.items[j], &s->b.items[i], &a.k) < 0 ? s->b.items[j++]
		                                                              : s->b.items[i++];
	while (i < h) out[o++] = s->b.items[i++];
	while (j < n) out[o++] = s->b.items[j++];
	free(s->b.items);
	s->b.items = out;
	s->b.icap = n;
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

/* Sorts the records of buffer b and writes them into a new run file: the
 * file, or NULL with errno. */
static FILE *write_run(const ExtSort *s, const Buffer *b, uint64_t *disk)
{
	SortJob job = sort_of(s, b, 0, b->n);
	sort_job(&job);
	FILE *f = new_run_file(s);
	if (!f) return NULL;
	char *buf = malloc(1 << 20);
	if (buf) setvbuf(f, buf, _IOFBF, 1 << 20);
	int rc = 0;
	for (size_t i = 0; i < b->n && !rc; i++) {
		const Item *it = &b->items[i];
		rc = put_record(f, b->arena + item_off(it), item_len(it));
		*disk += 4 + item_len(it);
	}
	if (!rc && fflush(f)) rc = -1;
	int e = errno;
	setvbuf(f, NULL, _IONBF, 0);
	free(buf);
	if (rc) {
		fclose(f);
		errno = e ? e : EIO;
		return NULL;
	}
	return f;
}

static void buffer_free(Buffer *b)
{
	free(b->arena);
	free(b->items);
	*b = (Buffer){0};
}

static void *spill_main(void *arg)
{
	ExtSort *s = arg;
	s->sp_file = write_run(s, &s->sp, &s->sp_disk);
	s->sp_errno = s->sp_file ? 0 : errno;
	return NULL;
}

/* Lists the run spill_main wrote. 0, or -1 with errno. */
static int spill_collect(ExtSort *s)
{
	s->st.disk_bytes += s->sp_disk;
	s->sp_disk = 0;
	FILE *f = s->sp_file;
	s->sp_file = NULL;
	if (!f) {
		errno = s->sp_errno ? s->sp_errno : EIO;
		return -1;
	}
	if (add_run(s, f)) {
		fclose(f);
		return -1;
	}
	return 0;
}

/* Waits for the run being written, and lists it. 0, or -1 with errno. */
static int spill_wait(ExtSort *s)
{
	if (!s->spilling) return 0;
	pthread_join(s->thr, NULL);
	s->spilling = 0;
	return spill_collect(s);
}

/* The records held written out as a run: the first run and the last here,
 * the ones between by a thread while the next buffer fills (each buffer then
 * holds two fifths of the budget, extsort_add, so that the two stay within
 * it). */
static int spill(ExtSort *s, int last)
{
	if (spill_wait(s)) return -1;
	if (s->nruns && !last) {
		Buffer free_one = s->sp;
		s->sp = s->b;
		s->b = free_one;
		s->b.n = 0;
		s->b.used = 0;
		if (pthread_create(&s->thr, NULL, spill_main, s) == 0) {
			s->spilling = 1;
			return 0;
		}
		spill_main(s); /* no thread: the run is written here */
		return spill_collect(s);
	}
	FILE *f = write_run(s, &s->b, &s->st.disk_bytes);
	if (!f || add_run(s, f)) {
		int e = errno;
		if (f) fclose(f);
		errno = e ? e : EIO;
		return -1;
	}
	s->b.n = 0;
	s->b.used = 0;
	if (!last) {
		/* The first buffer was sized for the whole budget: the next
		 * ones grow again to two fifths of it. */
		buffer_free(&s->b);
	}
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
	uint64_t after = (uint64_t)s->b.used + len + (uint64_t)(s->b.n + 1) * sizeof(Item);
	/* The arrays double as they fill: count what they may reach. Once a
	 * run is written, two buffers share the budget. */
	uint64_t room = s->nruns || s->spilling ? s->budget / 5 * 2 : s->budget;
	if (s->b.n && (after + after / 2 > room || s->b.used + len >= ITEM_MAX_OFF) && spill(s, 0))
		return -1;
	if (grow((void **)&s->b.arena, &s->b.cap, s->b.used + len, 1) ||
	    grow((void **)&s->b.items, &s->b.icap, s->b.n + 1, sizeof(Item)))
		return -1;
	memcpy(s->b.arena + s->b.used, rec, len);
	uint64_t pre = 0;
	size_t nb = cmp_bytes_of(s);
	if (nb) {
		size_t k = nb < 8 ? nb : 8;
		if (k > len) k = len;
		for (size_t i = 0; i < 8; i++)
			pre = pre << 8 | (i < k ? ((const uint8_t *)rec)[i] : 0);
	}
	s->b.items[s->b.n++] = (Item){pre, (uint64_t)s->b.used << ITEM_LEN_BITS | len};
	s->b.used += len;
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

/* The read buffer of each of k runs merged at once. */
static size_t merge_buffer(const ExtSort *s, size_t k)
{
	return (size_t)(s->budget / 2 / (k + 1));
}

int extsort_finish(ExtSort *s)
{
	if (s->finished) return 0;
	s->finished = 1;
	if (spill_wait(s)) return -1;
	if (!s->nruns) {
		sort_held(s);
		return 0;
	}
	if (s->b.n && spill(s, 1)) return -1;
	buffer_free(&s->b);
	buffer_free(&s->sp);
	/* Each run merged at once gets a read buffer of at least 256 KiB, and
	 * the buffers together half the budget: the rest is the caller's, who
	 * reads the merge into structures of its own (and the merge's output
	 * stream, in a level before the last). */
	size_t fanin = (size_t)(s->budget / (512u << 10));
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
			int rc = start_merge(s, s->runs + g, k, merge_buffer(s, k));
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
	return start_merge(s, s->runs, k, merge_buffer(s, k));
}

int extsort_next(ExtSort *s, const void **rec, size_t *len)
{
	if (!s->finished) {
		errno = EINVAL;
		return -1;
	}
	if (!s->rd) {
		if (s->next_mem >= s->b.n) return 0;
		const Item *it = &s->b.items[s->next_mem++];
		*rec = s->b.arena + item_off(it);
		*len = item_len(it);
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
	if (s->spilling) {
		pthread_join(s->thr, NULL);
		if (s->sp_file) fclose(s->sp_file);
	}
	buffer_free(&s->sp);
	free_readers(s);
	for (size_t i = 0; i < s->nruns; i++) fclose(s->runs[i].f);
	free(s->runs);
	buffer_free(&s->b);
	free(s->dir);
	free(s);
}

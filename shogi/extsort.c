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

int extsort_cmp_tail(const void *a, size_t alen, const void *b, size_t blen, void *ctx)
{
	size_t start = (size_t)(uintptr_t)ctx;
	size_t la = alen > start ? alen - start : 0, lb = blen > start ? blen - start : 0;
	int c = memcmp((const uint8_t *)a + start, (const uint8_t *)b + start, la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

/* The least read buffer of a run being merged: the runs are read 64 KiB at
 * a time at least (the kernel's read-ahead keeps each stream going), so that
 * a budget of 80 MiB merges some 300 runs at once. */
#define MERGE_MIN_BUFFER (64u << 10)

/* Merging runs with buffers smaller than this, each reader asks the kernel
 * for its next buffer's bytes as it takes a buffer (the file then read with
 * no read-ahead of the kernel's own): many runs at once, each read ahead by
 * the kernel's window (up to 8 MiB a stream here), would throw each other's
 * pages out of a page cache the size of the budget before they are read.
 * Read ahead so, the bytes in flight are the buffers' own, as the budget
 * says; and a run read from the back is read ahead at all. */
#define MERGE_OWN_AHEAD (8u << 20)

/* A sorted run on disk: its stream (the file is already unlinked), written
 * through stdio and read back with pread. */
typedef struct {
	FILE *f;
} Run;

/* A run being merged: its current record, which points into the read buffer
 * (or, for one that does not fit there, into own). A reader from the front
 * takes the bytes at..end of its buffer from the front, one from the back
 * (the run's last record first) from the end. */
typedef struct {
	Run run; /* the file, which a reader from the front owns */
	int fd;
	bool back;
	bool ahead;   /* reads its next buffer ahead itself (MERGE_OWN_AHEAD) */
	size_t trail; /* bytes after each record: its length again (two-ended) */
	const uint8_t *rec;
	size_t len;
	uint64_t pre; /* rec's first digit (rec_pre) */
	uint8_t *buf; /* the read buffer: bytes at..end not yet taken */
	size_t bufsz, at, end;
	uint64_t off; /* the file offset of buf[end] (from the back: of buf[at]) */
	uint8_t *own; /* a record longer than the buffer */
	size_t cap;
	int done;
} Reader;

/* A merge of runs: its readers and its tree of losers (replay). From the
 * back it gives the records in the reverse order. */
typedef struct {
	Reader *rd;
	size_t nrd;
	size_t *tree;
	bool back;
	int pending;   /* the record given last is the tree's winner */
	uint64_t left; /* records this end may still give */
} Merge;

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
	bool ends;       /* read from both ends (extsort_both_ends) */
	size_t next_mem; /* all in memory: the next item to give */
	size_t mem_back; /* ... and, from both ends, the items the back has left */
	size_t mem_front;
	Merge m;  /* the last merge (from the front; rd NULL: none, all in memory) */
	Merge mb; /* from the back, with both ends */
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

/* How a sorter orders its records, as the sort of a buffer sees it: by the
 * caller's comparison (KEY_CMP), or as byte strings (KEY_BYTES: the first
 * `bytes` bytes; KEY_TAIL: from byte `start` to the end, a prefix first),
 * whose digits of 8 bytes the sort reads itself. */
enum { KEY_CMP, KEY_BYTES, KEY_TAIL };

typedef struct {
	ExtSortCmp cmp;
	void *ctx;
	const uint8_t *arena;
	int kind;
	size_t bytes; /* KEY_BYTES: the key's length */
	size_t start; /* KEY_TAIL: where the key starts in the record */
} SortCtx;

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

static SortCtx sort_ctx(const ExtSort *s, const uint8_t *arena)
{
	SortCtx k = {s->cmp, s->ctx, arena, KEY_CMP, 0, 0};
	if (s->cmp == extsort_cmp_bytes) {
		k.kind = KEY_BYTES;
		k.bytes = (size_t)(uintptr_t)s->ctx;
	} else if (s->cmp == extsort_cmp_tail) {
		k.kind = KEY_TAIL;
		k.start = (size_t)(uintptr_t)s->ctx;
	}
	return k;
}

/* The length of the key of a record of len bytes (KEY_BYTES, KEY_TAIL),
 * within the record. */
static inline size_t rec_key_len(const SortCtx *k, size_t len)
{
	if (k->kind == KEY_BYTES) return k->bytes < len ? k->bytes : len;
	return len > k->start ? len - k->start : 0;
}

static inline size_t key_len(const SortCtx *k, const Item *it)
{
	return rec_key_len(k, item_len(it));
}

static inline const uint8_t *key_of(const SortCtx *k, const Item *it)
{
	return k->arena + item_off(it) + k->start;
}

/* The key's bytes d..d+7 as a big-endian number, zeros past its end. */
static inline uint64_t digit_at(const uint8_t *p, size_t len, size_t d)
{
	if (d + 8 <= len) {
		uint64_t x;
		memcpy(&x, p + d, 8);
		return __builtin_bswap64(x);
	}
	uint64_t v = 0;
	for (size_t i = 0; i < 8; i++) v = v << 8 | (d + i < len ? p[d + i] : 0);
	return v;
}

/* Two keys whose bytes before d are the same (zeros past an end counting as
 * bytes): by their bytes from d, a prefix first. */
static int cmp_from(const SortCtx *k, const Item *x, const Item *y, size_t d)
{
	size_t lx = key_len(k, x), ly = key_len(k, y), m = lx < ly ? lx : ly;
	int c = d < m ? memcmp(key_of(k, x) + d, key_of(k, y) + d, m - d) : 0;
	if (c || k->kind == KEY_BYTES) return c;
	return (lx > ly) - (lx < ly);
}

/* Items in order: the caller's order (KEY_BYTES, KEY_TAIL: pre holds the
 * key's digit at d, the bytes before it the same in both), then the order of
 * adding. */
static int item_cmp_at(const SortCtx *k, const Item *x, const Item *y, size_t d)
{
	int c;
	if (k->kind != KEY_CMP) {
		if (x->pre != y->pre) return x->pre < y->pre ? -1 : 1;
		c = cmp_from(k, x, y, d + 8);
	} else {
		c = k->cmp(k->arena + item_off(x), item_len(x), k->arena + item_off(y), item_len(y),
		           k->ctx);
	}
	if (c) return c;
	return x->ol < y->ol ? -1 : x->ol > y->ol;
}

/* qsort_r's comparison: item_cmp_at at the depth given. */
typedef struct {
	const SortCtx *k;
	size_t d;
} AtDepth;

static int item_cmp(const void *a, const void *b, void *arg)
{
	const AtDepth *at = arg;
	return item_cmp_at(at->k, a, b, at->d);
}

static void sort_compare(const SortCtx *k, Item *a, size_t n, size_t d)
{
	AtDepth at = {k, d};
	qsort_r(a, n, sizeof *a, item_cmp, &at);
}

/*
 * The byte-string sort: a three-way quicksort on the keys' digits of 8 bytes
 * (Bentley and Sedgewick's multikey quicksort, a digit a word), so that keys
 * sharing long prefixes (SFEN lines all start alike) are not compared from
 * their first byte again and again: the items whose digit at d is the
 * pivot's are sorted on their digit at d + 8, read once each. Ties end in
 * the order of adding, so the order is item_cmp's, as a stable sort's. On
 * return every item's pre is its digit at d again.
 */
#define MK_SMALL 16
#define MK_DEEPEST 4096 /* key bytes compared by digits; deeper, by memcmp */

static inline void item_swap(Item *a, Item *b)
{
	Item t = *a;
	*a = *b;
	*b = t;
}

static void mk_sort(const SortCtx *k, Item *a, size_t n, size_t d);

static void insertion_sort(const SortCtx *k, Item *a, size_t n, size_t d)
{
	for (size_t i = 1; i < n; i++) {
		Item t = a[i];
		size_t j = i;
		while (j > 0 && item_cmp_at(k, &t, &a[j - 1], d) < 0) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = t;
	}
}

static inline uint64_t median3(uint64_t x, uint64_t y, uint64_t z)
{
	return x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
}

static uint64_t pivot_of(const Item *a, size_t n)
{
	if (n < 512) return median3(a[0].pre, a[n / 2].pre, a[n - 1].pre);
	size_t e = n / 8;
	return median3(median3(a[0].pre, a[e].pre, a[2 * e].pre),
	               median3(a[3 * e].pre, a[4 * e].pre, a[5 * e].pre),
	               median3(a[6 * e].pre, a[7 * e].pre, a[n - 1].pre));
}

/* Items whose digit at d is p: sorted on the bytes after it, pre p again
 * after. */
static void sort_equal(const SortCtx *k, Item *a, size_t n, size_t d, uint64_t p)
{
	size_t next = d + 8;
	bool deeper = false;
	for (size_t i = 0; i < n && !deeper; i++) deeper = key_len(k, &a[i]) > next;
	if (!deeper || next > MK_DEEPEST) {
		/* Nothing more to read by digits (or too far): compared whole. */
		sort_compare(k, a, n, d);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (i + 16 < n) __builtin_prefetch(key_of(k, &a[i + 16]) + next);
		a[i].pre = digit_at(key_of(k, &a[i]), key_len(k, &a[i]), next);
	}
	mk_sort(k, a, n, next);
	for (size_t i = 0; i < n; i++) a[i].pre = p;
}

static void mk_sort(const SortCtx *k, Item *a, size_t n, size_t d)
{
	/* Past twice the levels a fair pivot needs: compared instead. */
	int levels = 8;
	for (size_t m = n; m > 1; m >>= 1) levels += 2;
	while (n > MK_SMALL) {
		if (levels-- <= 0) {
			sort_compare(k, a, n, d);
			return;
		}
		uint64_t p = pivot_of(a, n);
		size_t lt = 0, i = 0, gt = n;
		while (i < gt) {
			if (a[i].pre < p)
				item_swap(&a[lt++], &a[i++]);
			else if (a[i].pre > p)
				item_swap(&a[i], &a[--gt]);
			else
				i++;
		}
		if (gt - lt > 1) sort_equal(k, a + lt, gt - lt, d, p);
		/* The smaller side on the stack, the larger in this loop. */
		if (lt < n - gt) {
			mk_sort(k, a, lt, d);
			a += gt;
			n -= gt;
		} else {
			mk_sort(k, a + gt, n - gt, d);
			n = lt;
		}
	}
	insertion_sort(k, a, n, d);
}

/* A sort of n items (records in k.arena) in place, on this thread or
 * another. */
typedef struct {
	SortCtx k;
	Item *items;
	size_t n;
} SortJob;

static void *sort_job(void *arg)
{
	SortJob *j = arg;
	if (j->k.kind == KEY_CMP)
		sort_compare(&j->k, j->items, j->n, 0);
	else
		mk_sort(&j->k, j->items, j->n, 0);
	return NULL;
}

static SortJob sort_of(const ExtSort *s, const Buffer *b, size_t from, size_t n)
{
	return (SortJob){sort_ctx(s, b->arena), b->items ? b->items + from : NULL, n};
}

/* Two sorted halves of n items (the first h of them, the rest) merged into
 * out: the first half of out from the front, on this thread or another, the
 * rest from the back. The order is total (ties: the order of adding), so the
 * two ends meet exactly. */
typedef struct {
	const SortCtx *k;
	const Item *x, *y; /* the halves */
	size_t nx, ny;
	Item *out;
	size_t front; /* items taken from the front; the rest from the back */
} MergeJob;

static void *merge_front(void *arg)
{
	MergeJob *m = arg;
	size_t i = 0, j = 0;
	for (size_t o = 0; o < m->front; o++)
		m->out[o] =
		    j >= m->ny || (i < m->nx && item_cmp_at(m->k, &m->y[j], &m->x[i], 0) >= 0)
		        ? m->x[i++]
		        : m->y[j++];
	return NULL;
}

static void merge_back(MergeJob *m)
{
	size_t i = m->nx, j = m->ny;
	for (size_t o = m->nx + m->ny; o-- > m->front;)
		m->out[o] =
		    i == 0 || (j > 0 && item_cmp_at(m->k, &m->y[j - 1], &m->x[i - 1], 0) > 0)
		        ? m->y[--j]
		        : m->x[--i];
}

/* The records held, sorted in place with two threads when there are many
 * (the halves sorted side by side, then merged from both ends); one when a
 * thread or the merge's array cannot be had. The order is the same either
 * way. */
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
	MergeJob m = {&a.k, s->b.items, s->b.items + h, h, n - h, out, n / 2};
	if (pthread_create(&t, NULL, merge_front, &m) == 0) {
		merge_back(&m);
		pthread_join(t, NULL);
	} else {
		m.front = n;
		merge_front(&m);
	}
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

/* A record into a run: its length, its bytes and, in a sorter read from both
 * ends, its length again (a reader from the back meets that first); *disk
 * counts the bytes. */
static int put_record(FILE *f, const void *rec, uint32_t len, bool ends, uint64_t *disk)
{
	if (fwrite(&len, sizeof len, 1, f) != 1 || (len && fwrite(rec, len, 1, f) != 1) ||
	    (ends && fwrite(&len, sizeof len, 1, f) != 1)) {
		if (!errno) errno = EIO;
		return -1;
	}
	*disk += sizeof len * (1 + ends) + len;
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
	s->runs[s->nruns++] = (Run){f};
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
		rc = put_record(f, b->arena + item_off(it), item_len(it), s->ends, disk);
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

/* A record's first digit under the byte-string comparisons (0 under
 * another). */
static uint64_t rec_pre(const ExtSort *s, const void *rec, size_t len)
{
	SortCtx k = sort_ctx(s, NULL);
	if (k.kind == KEY_CMP) return 0;
	return digit_at((const uint8_t *)rec + k.start, rec_key_len(&k, len), 0);
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
	s->b.items[s->b.n++] =
	    (Item){rec_pre(s, rec, len), (uint64_t)s->b.used << ITEM_LEN_BITS | len};
	s->b.used += len;
	s->st.records++;
	s->st.bytes += len;
	return 0;
}

/* At least need bytes in the buffer from r->at, the ones there moved to its
 * front first; fewer only at the end of the file. -1 with errno. */
static int fill(Reader *r, size_t need)
{
	if (r->end - r->at >= need) return 0;
	memmove(r->buf, r->buf + r->at, r->end - r->at);
	r->end -= r->at;
	r->at = 0;
	ssize_t k = bigmem_pread_full(r->fd, r->buf + r->end, r->bufsz - r->end, r->off);
	if (k < 0) return -1;
	r->end += (size_t)k;
	r->off += (uint64_t)k;
	if (k && r->ahead)
		(void)posix_fadvise(r->fd, (off_t)r->off, (off_t)r->bufsz, POSIX_FADV_WILLNEED);
	return 0;
}

/* From the back: at least need bytes in the buffer before r->end, the ones
 * there moved to its end first; fewer only at the start of the file. */
static int fill_back(Reader *r, size_t need)
{
	size_t have = r->end - r->at;
	if (have >= need) return 0;
	memmove(r->buf + r->bufsz - have, r->buf + r->at, have);
	r->end = r->bufsz;
	r->at = r->bufsz - have;
	size_t want = r->at < r->off ? r->at : (size_t)r->off;
	ssize_t k = bigmem_pread_full(r->fd, r->buf + r->at - want, want, r->off - want);
	if (k < 0) return -1;
	if ((size_t)k != want) {
		errno = EIO; /* the run is shorter than it was */
		return -1;
	}
	r->at -= want;
	r->off -= want;
	/* The kernel reads ahead of a file read forwards, not backwards. */
	uint64_t next = r->off < r->bufsz ? r->off : r->bufsz;
	if (next && r->ahead)
		(void)posix_fadvise(r->fd, (off_t)(r->off - next), (off_t)next,
		                    POSIX_FADV_WILLNEED);
	return 0;
}

static int cut_record(void)
{
	errno = EIO;
	return -1;
}

/* From the back: r's record before the one it gave last (its run's last
 * first); r->done at the run's start. 0, or -1 on an error. */
static int reader_prev(Reader *r)
{
	uint32_t len, head;
	if (fill_back(r, sizeof len)) return -1;
	if (r->end == r->at) {
		r->done = 1;
		return 0;
	}
	if (r->end - r->at < sizeof len) return cut_record();
	memcpy(&len, r->buf + r->end - sizeof len, sizeof len);
	r->end -= sizeof len;
	if (len > EXTSORT_MAX_RECORD) return cut_record();
	r->len = len;
	size_t whole = sizeof head + len;
	if (whole <= r->bufsz) {
		if (fill_back(r, whole)) return -1;
		if (r->end - r->at < whole) return cut_record();
		r->end -= len;
		r->rec = r->buf + r->end;
		r->end -= sizeof head;
		memcpy(&head, r->buf + r->end, sizeof head);
		return head == len ? 0 : cut_record();
	}
	/* Longer than the buffer: its end, held there, then the rest straight
	 * from the file before it. */
	if (grow((void **)&r->own, &r->cap, whole, 1)) return -1;
	size_t have = r->end - r->at, rest = whole - have;
	memcpy(r->own + rest, r->buf + r->at, have);
	r->at = r->end = r->bufsz;
	if (r->off < rest) return cut_record();
	ssize_t k = bigmem_pread_full(r->fd, r->own, rest, r->off - rest);
	if (k < 0) return -1;
	if ((size_t)k != rest) return cut_record();
	r->off -= rest;
	memcpy(&head, r->own, sizeof head);
	r->rec = r->own + sizeof head;
	return head == len ? 0 : cut_record();
}

/* Reads r's next record (from the back: the one before); r->done at the
 * end. 0, or -1 on an error. */
static int reader_next(Reader *r)
{
	if (r->back) return reader_prev(r);
	uint32_t len;
	if (fill(r, sizeof len)) return -1;
	if (r->end == r->at) {
		r->done = 1;
		return 0;
	}
	if (r->end - r->at < sizeof len) return cut_record();
	memcpy(&len, r->buf + r->at, sizeof len);
	r->at += sizeof len;
	if (len > EXTSORT_MAX_RECORD) return cut_record();
	r->len = len;
	size_t whole = len + r->trail;
	if (whole <= r->bufsz) {
		if (fill(r, whole)) return -1;
		if (r->end - r->at < whole) return cut_record();
		r->rec = r->buf + r->at;
		r->at += whole;
		return 0;
	}
	/* Longer than the buffer: what it holds, then the rest straight from
	 * the file. */
	if (grow((void **)&r->own, &r->cap, whole, 1)) return -1;
	size_t have = r->end - r->at, rest = whole - have;
	memcpy(r->own, r->buf + r->at, have);
	r->at = r->end = 0;
	ssize_t k = bigmem_pread_full(r->fd, r->own + have, rest, r->off);
	if (k < 0) return -1;
	r->off += (uint64_t)k;
	if ((size_t)k != rest) return cut_record();
	r->rec = r->own;
	return 0;
}

/* Reader a before reader b in m: their records (an ended reader after every
 * other), then the earlier run; from the back, the other way round. */
static bool rd_less(const ExtSort *s, const Merge *m, size_t a, size_t b)
{
	const Reader *x = &m->rd[a], *y = &m->rd[b];
	if (x->done || y->done) return !x->done && y->done;
	if (x->pre != y->pre) return (x->pre < y->pre) != m->back;
	int c = s->cmp(x->rec, x->len, y->rec, y->len, s->ctx);
	if (m->back) c = -c;
	return c < 0 || (c == 0 && (a < b) != m->back);
}

/*
 * The merge is a tree of losers (Knuth's tournament): m->tree[n] for the
 * inner nodes 1..k-1 (the children of n are 2n and 2n + 1; leaf k + i is
 * reader i) holds the reader that lost there, m->tree[0] the winner. The
 * winner's next record plays its way up from its leaf: one comparison a
 * level, where a heap takes two.
 */
static void replay(const ExtSort *s, Merge *m, size_t w)
{
	for (size_t n = (w + m->nrd) / 2; n >= 1; n /= 2)
		if (rd_less(s, m, m->tree[n], w)) {
			size_t t = m->tree[n];
			m->tree[n] = w;
			w = t;
		}
	m->tree[0] = w;
}

static void free_merge(Merge *m)
{
	for (size_t i = 0; i < m->nrd; i++) {
		if (m->rd[i].run.f) fclose(m->rd[i].run.f);
		free(m->rd[i].buf);
		free(m->rd[i].own);
	}
	free(m->rd);
	free(m->tree);
	*m = (Merge){0};
}

/* The next record of reader i of m and its first digit. 0, or -1. */
static int rd_next(const ExtSort *s, Merge *m, size_t i)
{
	Reader *r = &m->rd[i];
	if (reader_next(r)) return -1;
	r->pre = r->done ? 0 : rec_pre(s, r->rec, r->len);
	return 0;
}

/* Opens runs[0..k) for a merge into m with bufsz-byte buffers, each at its
 * first record (back: at its last), and plays the first tournament. From
 * the front the readers take the runs from the list (they own them). */
static int start_merge(const ExtSort *s, Merge *m, Run *runs, size_t k, size_t bufsz, bool back)
{
	*m = (Merge){
	    .rd = calloc(k, sizeof *m->rd), .tree = malloc(2 * k * sizeof *m->tree), .back = back};
	if (!m->rd || !m->tree) {
		for (size_t i = 0; i < k && !back; i++) fclose(runs[i].f);
		free(m->rd);
		free(m->tree);
		*m = (Merge){0};
		errno = ENOMEM;
		return -1;
	}
	m->nrd = k;
	for (size_t i = 0; i < k; i++) {
		m->rd[i] = (Reader){.run = back ? (Run){NULL} : runs[i],
		                    .fd = fileno(runs[i].f),
		                    .back = back,
		                    .trail = s->ends ? sizeof(uint32_t) : 0};
		if (bufsz < MERGE_OWN_AHEAD) {
			(void)posix_fadvise(m->rd[i].fd, 0, 0, POSIX_FADV_RANDOM);
			m->rd[i].ahead = true;
		}
		if (back) {
			/* Read from the end: the buffer empty, before it the file. */
			off_t end = lseek(m->rd[i].fd, 0, SEEK_END);
			if (end < 0) return -1;
			m->rd[i].off = (uint64_t)end;
			m->rd[i].at = m->rd[i].end = bufsz;
		}
	}
	for (size_t i = 0; i < k; i++) {
		Reader *r = &m->rd[i];
		r->bufsz = bufsz;
		if (!(r->buf = malloc(r->bufsz))) {
			errno = ENOMEM;
			return -1;
		}
		if (rd_next(s, m, i)) return -1;
	}
	/* The first tournament, from the leaves up: the winner at inner node n
	 * is kept at tree[k + n] while it is played. */
	for (size_t n = k - 1; n >= 1; n--) {
		size_t c = 2 * n, a = c < k ? m->tree[k + c] : c - k,
		       b = c + 1 < k ? m->tree[k + c + 1] : c + 1 - k;
		bool bw = rd_less(s, m, b, a);
		m->tree[n] = bw ? a : b;
		m->tree[k + n] = bw ? b : a;
	}
	m->tree[0] = k > 1 ? m->tree[k + 1] : 0;
	return 0;
}

/* The least record of m (from the back: the greatest): 1 with it, 0 at the
 * end, -1 on an error. */
static int merge_next(const Merge *m, const void **rec, size_t *len)
{
	if (!m->nrd || m->rd[m->tree[0]].done) return 0;
	const Reader *r = &m->rd[m->tree[0]];
	*rec = r->rec;
	*len = r->len;
	return 1;
}

/* Advances the reader whose record merge_next gave. */
static int merge_advance(const ExtSort *s, Merge *m)
{
	size_t w = m->tree[0];
	if (rd_next(s, m, w)) return -1;
	replay(s, m, w);
	return 0;
}

/* The next record m gives the caller, within its share: the record given
 * last time is replaced now, not before. 1, 0 at the end, -1. */
static int merge_give(const ExtSort *s, Merge *m, const void **rec, size_t *len)
{
	if (m->pending) {
		m->pending = 0;
		if (merge_advance(s, m)) return -1;
	}
	if (!m->left) return 0;
	int got = merge_next(m, rec, len);
	m->pending = got == 1;
	m->left -= got == 1;
	return got;
}

/* The read buffer of each of k runs merged at once by `ways` merges (two:
 * from both ends). */
static size_t merge_buffer(const ExtSort *s, size_t k, size_t ways)
{
	size_t b = (size_t)(s->budget / 2 / (k + 1)) / ways;
	return b < MERGE_MIN_BUFFER / ways ? MERGE_MIN_BUFFER / ways : b;
}

int extsort_finish(ExtSort *s)
{
	if (s->finished) return 0;
	s->finished = 1;
	if (spill_wait(s)) return -1;
	/* From both ends the front gives the first half (rounded up). */
	uint64_t front = s->ends ? s->st.records - s->st.records / 2 : s->st.records;
	if (!s->nruns) {
		sort_held(s);
		s->mem_front = (size_t)front;
		s->mem_back = s->b.n;
		return 0;
	}
	if (s->b.n && spill(s, 1)) return -1;
	buffer_free(&s->b);
	buffer_free(&s->sp);
	/* Each run merged at once gets a read buffer of at least
	 * MERGE_MIN_BUFFER, and the buffers together half the budget: the rest
	 * is the caller's, who reads the merge into structures of its own (and
	 * the merge's output stream, in a level before the last). */
	size_t fanin = (size_t)(s->budget / (2 * MERGE_MIN_BUFFER));
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
			Merge m;
			int rc = start_merge(s, &m, s->runs + g, k, merge_buffer(s, k, 1), false);
			const void *rec;
			size_t len;
			while (!rc && merge_next(&m, &rec, &len) == 1) {
				rc = put_record(f, rec, (uint32_t)len, s->ends, &s->st.disk_bytes);
				if (!rc) rc = merge_advance(s, &m);
			}
			if (!rc && fflush(f)) rc = -1;
			int e = errno;
			setvbuf(f, NULL, _IONBF, 0);
			free(wbuf);
			free_merge(&m);
			if (rc) {
				fclose(f);
				for (size_t i = g + k; i < s->nruns; i++) fclose(s->runs[i].f);
				s->nruns = nnew;
				errno = e ? e : EIO;
				return -1;
			}
			s->runs[nnew++] = (Run){f};
			s->st.runs++;
		}
		s->nruns = nnew;
		s->st.merge_passes++;
	}
	size_t k = s->nruns, ways = s->ends ? 2 : 1;
	s->nruns = 0; /* the readers own them now */
	if (start_merge(s, &s->m, s->runs, k, merge_buffer(s, k, ways), false)) return -1;
	s->m.left = front;
	if (s->ends && start_merge(s, &s->mb, s->runs, k, merge_buffer(s, k, ways), true))
		return -1;
	s->mb.left = s->st.records - front;
	return 0;
}

/* Records ahead of the one given whose bytes are fetched meanwhile. */
#define NEXT_AHEAD 8

/* Item i of the records held in memory, into *rec and *len, with the one
 * `ahead` items on (negative: before) fetched meanwhile: the records are
 * where they were added, in another order, and their misses overlap. */
static void mem_give(const ExtSort *s, size_t i, ptrdiff_t ahead, const void **rec, size_t *len)
{
	size_t a = i + (size_t)ahead;
	if (a < s->b.n) {
		const Item *it = &s->b.items[a];
		const uint8_t *r = s->b.arena + item_off(it);
		__builtin_prefetch(r);
		if (item_len(it) > 64) __builtin_prefetch(r + 64);
	}
	const Item *it = &s->b.items[i];
	*rec = s->b.arena + item_off(it);
	*len = item_len(it);
}

int extsort_next(ExtSort *s, const void **rec, size_t *len)
{
	if (!s->finished) {
		errno = EINVAL;
		return -1;
	}
	if (s->m.rd) return merge_give(s, &s->m, rec, len);
	if (s->next_mem >= s->mem_front) return 0;
	mem_give(s, s->next_mem++, NEXT_AHEAD, rec, len);
	return 1;
}

int extsort_next_back(ExtSort *s, const void **rec, size_t *len)
{
	if (!s->finished || !s->ends) {
		errno = EINVAL;
		return -1;
	}
	if (s->m.rd) return merge_give(s, &s->mb, rec, len);
	if (s->mem_back <= s->mem_front) return 0;
	mem_give(s, --s->mem_back, -NEXT_AHEAD, rec, len);
	return 1;
}

void extsort_both_ends(ExtSort *s)
{
	if (!s->st.records && !s->finished) s->ends = true;
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
	free_merge(&s->mb); /* its readers read the front's files */
	free_merge(&s->m);
	for (size_t i = 0; i < s->nruns; i++) fclose(s->runs[i].f);
	free(s->runs);
	buffer_free(&s->b);
	free(s->dir);
	free(s);
}

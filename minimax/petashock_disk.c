/*
 * minimax/petashock_disk.c — peta-shock's pass 2 on disk: every node's edges
 * found without the key map in memory, for a book whose keys do not fit the
 * budget. A hash join in buckets (a "Grace" join, as database engines join
 * tables larger than memory):
 *
 *   1. keys: the nodes' keys go, in node order, to B bucket files by the top
 *      bits of the key, so that one bucket's keys fit its share of the
 *      budget; a sharp filter of all of them (keyfilter3, shogi/keymap.h) is
 *      made in memory;
 *   2. candidates: the parts read the input side by side; each legal move's
 *      child key that passes the filter goes, with its node and its place in
 *      YaneuraOu's legal-move order (yo_legal_order, made only for a node with
 *      two candidates or more: its edges' order in the output), to its key's
 *      bucket file;
 *   3. join: a bucket at a time, a key map of its keys (inserted in node
 *      order, so a later record still wins), each of its candidates looked up;
 *      the hits are the edges (node, place, move, child), sorted by node and
 *      place (shogi/extsort.h) into one file;
 *   4. edges: the parts go through their nodes and give each its edges from
 *      that file, already in order, and its leaves (ps_put_moves, as in
 *      memory), without reading the input again.
 *
 * The moves are the same, in the same order, as pass 2 in memory. Its files
 * are unlinked temporary files beside the output: a process killed at any
 * moment leaves none behind.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimax/petashock_priv.h"
#include "shogi/be64.h"
#include "shogi/bigmem.h"
#include "shogi/extsort.h"
#include "shogi/keymap.h"
#include "minimax/yo_order.h"
#include "shogi/movegen.h"

/* A bucket file's record: a node's own key (at == REC_KEY), or a candidate
 * child key of node `node` by its move, the at'th in YaneuraOu's legal-move
 * order (0 when the node has no other candidate). */
typedef struct {
	Key key;
	uint32_t node;
	uint16_t at;
	uint16_t move;
} BucketRec;

#define REC_KEY 0xffff
#define AT_LEFT_OUT 0x8000  /* in at: an edge the book's rules leave out (counted, not made) */
#define EDGE_LEN 12         /* an edge: node (BE32), at (BE16), move, child */
#define PART_BUF 170        /* records a part holds for a bucket before writing (4 KiB) */
#define MAX_BUCKETS 512     /* each a file descriptor */
#define BUCKET_KEY_BYTES 52 /* a bucket's memory for a key at most: key, node, 2-4 slots */
#define READ_CHUNK (EDGE_LEN * sizeof(BucketRec) * 4096) /* whole records of both kinds */

struct PsDisk {
	unsigned nb;
	char dir[4096];
	int *fd;       /* bucket files */
	uint64_t *end; /* bytes in each */
	size_t *nkeys; /* node keys in each (its first records) */
	pthread_mutex_t lock;
	uint64_t *filter, filter_mask;
	int edges_fd;
	uint64_t part_first[PS_MAX_PARTS + 1]; /* the first edge of each part's nodes */
};

struct PsPartDisk {
	BucketRec *buf; /* PART_BUF a bucket */
	uint32_t *fill;
	/* step 4: the part's edges */
	unsigned char *ebuf;
	uint64_t epos, eend; /* bytes of the edges file still to read */
	size_t elen, eat;    /* bytes in ebuf, bytes of it taken */
};

static unsigned bucket_of(Key k, unsigned nb)
{
	return (unsigned)(((k.hi >> 32) * nb) >> 32);
}

unsigned ps_disk_buckets(size_t n, uint64_t budget)
{
	if (!budget || !n) return 0;
	size_t slots = 16;
	while (slots / 2 < n) slots *= 2;
	uint64_t map = (uint64_t)n * sizeof(Key) + slots * sizeof(uint64_t) +
	               keyfilter_words(keyfilter_log2(n)) * sizeof(uint64_t);
	if (map <= budget / 2) return 0;
	/* A bucket's share: an eighth of the budget (the filter, the sorter
	 * and the graph's arrays have the rest), with a tenth to spare for
	 * buckets fuller than the mean. */
	uint64_t share = budget / 8, want = (uint64_t)n * BUCKET_KEY_BYTES * 11 / 10 / share + 1;
	return want > MAX_BUCKETS ? MAX_BUCKETS : (unsigned)want;
}

static int disk_error(PsRun *p, const char *what)
{
	return ps_fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot %s a temporary file: %s",
	               p->disk->dir, what, strerror(errno));
}

/* The part's failure on a temporary file (what: "read", "write"), from errno. */
static int part_disk_error(PsPart *pt, const char *what)
{
	return ps_part_fail(pt, PETASHOCK_EIO, "%s: cannot %s a temporary file: %s",
	                    pt->run->disk->dir, what, strerror(errno));
}

/* Writes the part's records held for bucket b. 0 or -1 with errno. */
static int flush_bucket(PsDisk *d, PsPartDisk *pd, unsigned b)
{
	size_t len = pd->fill[b] * sizeof(BucketRec);
	if (!len) return 0;
	pthread_mutex_lock(&d->lock);
	uint64_t off = d->end[b];
	d->end[b] += len;
	pthread_mutex_unlock(&d->lock);
	pd->fill[b] = 0;
	return bigmem_pwrite_full(d->fd[b], pd->buf + (size_t)b * PART_BUF, len, off);
}

static int put_rec(PsDisk *d, PsPartDisk *pd, const BucketRec *r)
{
	unsigned b = bucket_of(r->key, d->nb);
	pd->buf[(size_t)b * PART_BUF + pd->fill[b]++] = *r;
	return pd->fill[b] == PART_BUF ? flush_bucket(d, pd, b) : 0;
}

static int flush_all(PsDisk *d, PsPartDisk *pd)
{
	for (unsigned b = 0; b < d->nb; b++)
		if (flush_bucket(d, pd, b) < 0) return -1;
	return 0;
}

static void part_disk_free(PsPartDisk *pd)
{
	if (!pd) return;
	free(pd->buf);
	free(pd->fill);
	free(pd->ebuf);
	free(pd);
}

void ps_disk_free(PsRun *p)
{
	for (int k = 0; k < PS_MAX_PARTS; k++) {
		part_disk_free(p->part[k].disk);
		p->part[k].disk = NULL;
	}
	PsDisk *d = p->disk;
	if (!d) return;
	for (unsigned b = 0; d->fd && b < d->nb; b++)
		if (d->fd[b] >= 0) close(d->fd[b]);
	if (d->edges_fd >= 0) close(d->edges_fd);
	free(d->fd);
	free(d->end);
	free(d->nkeys);
	free(d->filter);
	pthread_mutex_destroy(&d->lock);
	free(d);
	p->disk = NULL;
}

/* Buckets whose files can all be open at once: the soft limit on open files
 * raised as far as the hard one allows, else fewer (fuller) buckets. */
static unsigned fit_open_files(unsigned nb)
{
	enum { SPARE = 64 }; /* the input's readers, the sorter's runs, arrays in files */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return nb;
	rlim_t want = (rlim_t)nb + SPARE;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rlim_t was = rl.rlim_cur;
		rl.rlim_cur =
		    rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = was;
		if (rl.rlim_cur < want)
			nb = rl.rlim_cur > SPARE ? (unsigned)(rl.rlim_cur - SPARE) : 1;
	}
	return nb;
}

/* The run's disk state: bucket files, each part's buffers. */
static int disk_open(PsRun *p)
{
	PsDisk *d = calloc(1, sizeof *d);
	if (!d) return ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	p->disk = d;
	d->edges_fd = -1;
	pthread_mutex_init(&d->lock, NULL);
	bigmem_dir_of(d->dir, sizeof d->dir, p->out_path);
	d->nb = p->buckets = fit_open_files(p->buckets);
	p->st.buckets = d->nb;
	d->fd = malloc(d->nb * sizeof *d->fd);
	d->end = calloc(d->nb, sizeof *d->end);
	d->nkeys = calloc(d->nb, sizeof *d->nkeys);
	if (!d->fd || !d->end || !d->nkeys)
		return ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	for (unsigned b = 0; b < d->nb; b++) d->fd[b] = -1;
	for (unsigned b = 0; b < d->nb; b++)
		if ((d->fd[b] = bigmem_temp_fd(d->dir)) < 0) return disk_error(p, "create");
	for (int k = 0; k < p->nparts; k++) {
		PsPartDisk *pd = calloc(1, sizeof *pd);
		p->part[k].disk = pd;
		if (!pd || !(pd->buf = malloc((size_t)d->nb * PART_BUF * sizeof *pd->buf)) ||
		    !(pd->fill = calloc(d->nb, sizeof *pd->fill)))
			return ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	}
	return 0;
}

/* Step 1: the keys to their buckets and the filter; the key array goes. */
static int spread_keys(PsRun *p)
{
	PsDisk *d = p->disk;
	Graph *g = &p->g;
	size_t n = g->m.n;
	/* 16 to 32 bits a key, fewer (down to a quarter) to keep within a
	 * quarter of the budget. */
	unsigned w = keyfilter3_log2(n), least = w > 6 ? w - 2 : 4;
	uint64_t budget = bigmem_budget();
	while (w > least && budget && ((uint64_t)8 << w) > budget / 4) w--;
	d->filter_mask = ((uint64_t)1 << w) - 1;
	if (!(d->filter = calloc((size_t)1 << w, sizeof *d->filter)))
		return ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	PsPartDisk *pd = p->part[0].disk;
	for (size_t i = 0; i < n; i++) {
		BucketRec r = {g->keys[i], (uint32_t)i, REC_KEY, 0};
		keyfilter3_add(d->filter, d->filter_mask, r.key);
		d->nkeys[bucket_of(r.key, d->nb)]++;
		if (put_rec(d, pd, &r) < 0) return disk_error(p, "write");
	}
	if (flush_all(d, pd) < 0) return disk_error(p, "write");
	bigmem_free(g->keys);
	g->keys = NULL;
	return 0;
}

/* Step 2, a node: its candidate edges to their buckets. */
static int cands_of(PsPart *pt, uint32_t i, const Db2016Record *rec, void *ctx)
{
	(void)ctx;
	PsDisk *d = pt->run->disk;
	const Position *bpos;
	if (ps_black_position(pt, rec, &bpos) < 0) return -1;
	Move legal[MOVEGEN_MAX], order[YO_LIST_MAX];
	Key child[MOVEGEN_MAX];
	int n = movegen_legal(bpos, legal), pass[MOVEGEN_MAX], np = 0;
	for (int k = 0; k < n; k++) {
		child[k] = pos_key_after(bpos, legal[k]);
		keyfilter3_prefetch(d->filter, d->filter_mask, child[k]);
	}
	for (int k = 0; k < n; k++)
		if (keyfilter3_maybe(d->filter, d->filter_mask, child[k])) pass[np++] = k;
	/* Two edges or more go out in YaneuraOu's legal-move order (the place
	 * ps_yo_place gives, as petashock_graph.c's order_edges puts them). */
	int no = np >= 2 ? yo_legal_order(order, bpos, legal, n, pt->eb.seen) : 0;
	for (int j = 0; j < np; j++) {
		int k = pass[j], at = no ? ps_yo_place(order, no, legal[k]) : 0;
		/* Joined as any other, so that only an edge is counted. */
		if (ps_left_out(&pt->run->g, pt->run->opt, i, pt->tmp, bpos, legal, n, legal[k]))
			at |= AT_LEFT_OUT;
		BucketRec r = {child[k], i, (uint16_t)at, (uint16_t)legal[k]};
		if (put_rec(d, pt->disk, &r) < 0) return part_disk_error(pt, "write");
	}
	return 0;
}

static void *part_cands(void *arg)
{
	PsPart *pt = arg;
	ps_part_each(pt, "edges", cands_of, NULL);
	if (pt->rc == 0 && flush_all(pt->run->disk, pt->disk) < 0) part_disk_error(pt, "write");
	return NULL;
}

/* Step 3: each bucket's candidates against its keys; the hits to es. */
static int join_buckets(PsRun *p, ExtSort *es)
{
	PsDisk *d = p->disk;
	size_t most = 0, joined = 0;
	for (unsigned b = 0; b < d->nb; b++)
		if (d->nkeys[b] > most) most = d->nkeys[b];
	Key *keys = malloc((most ? most : 1) * sizeof *keys);
	uint32_t *node = malloc((most ? most : 1) * sizeof *node);
	BucketRec *buf = malloc(READ_CHUNK);
	KeyMap map;
	keymap_init(&map, sizeof *keys);
	map.heap = true;
	int rc = 0;
	if (!keys || !node || !buf || keymap_reserve(&map, keys, most) < 0)
		rc = ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	for (unsigned b = 0; b < d->nb && !rc; b++) {
		ps_report(p, "joining", joined);
		keymap_clear(&map);
		uint64_t off = 0, end = d->end[b];
		size_t nk = 0;
		while (off < end && !rc) {
			size_t want = end - off < READ_CHUNK ? (size_t)(end - off) : READ_CHUNK;
			ssize_t got = bigmem_pread_full(d->fd[b], buf, want, off);
			if (got < 0 || (size_t)got != want || want % sizeof *buf) {
				rc = disk_error(p, "read");
				break;
			}
			off += want;
			for (size_t j = 0; j < want / sizeof *buf; j++) {
				const BucketRec *r = &buf[j];
				if (nk < d->nkeys[b]) { /* the bucket's keys come first */
					keys[nk] = r->key;
					node[nk] = r->node;
					if (keymap_put(&map, keys, (uint32_t)nk++) < 0) {
						rc = ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM,
						             "out of memory");
						break;
					}
					continue;
				}
				uint32_t at = keymap_find(&map, keys, r->key);
				if (at == KEYMAP_NONE) continue;
				unsigned char e[EDGE_LEN];
				be_put(e, r->node, 4);
				be_put(e + 4, r->at, 2);
				memcpy(e + 6, &r->move, 2);
				memcpy(e + 8, &node[at], 4);
				if (extsort_add(es, e, sizeof e) < 0) {
					rc = disk_error(p, "write");
					break;
				}
			}
		}
		joined += d->nkeys[b];
		p->st.disk_bytes += end;
		close(d->fd[b]); /* its disk space back at once */
		d->fd[b] = -1;
	}
	keymap_free(&map);
	free(keys);
	free(node);
	free(buf);
	return rc;
}

/* The sorted edges into one file, each part's first found on the way. */
static int write_edges(PsRun *p, ExtSort *es)
{
	PsDisk *d = p->disk;
	if ((d->edges_fd = bigmem_temp_fd(d->dir)) < 0) return disk_error(p, "create");
	unsigned char *buf = malloc(READ_CHUNK);
	if (!buf) return ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	uint64_t count = 0, off = 0;
	size_t len = 0;
	int kp = 0, rc = 0;
	const void *rec;
	size_t rlen;
	int got;
	while ((got = extsort_next(es, &rec, &rlen)) == 1) {
		uint32_t parent = (uint32_t)be_get(rec, 4);
		while (kp < p->nparts && parent >= p->part[kp].node0) d->part_first[kp++] = count;
		if (len + EDGE_LEN > READ_CHUNK) {
			if (bigmem_pwrite_full(d->edges_fd, buf, len, off) < 0) break;
			off += len;
			len = 0;
		}
		memcpy(buf + len, rec, EDGE_LEN);
		len += EDGE_LEN;
		count++;
	}
	while (kp <= p->nparts) d->part_first[kp++] = count;
	if (got < 0)
		rc = disk_error(p, "read");
	else if (got == 1 || bigmem_pwrite_full(d->edges_fd, buf, len, off) < 0)
		rc = disk_error(p, "write");
	p->st.disk_bytes += count * EDGE_LEN;
	free(buf);
	return rc;
}

int ps_disk_join(PsRun *p)
{
	int rc = disk_open(p);
	if (!rc) rc = spread_keys(p);
	if (rc) return rc;
	ps_run_parts(p, part_cands);
	free(p->disk->filter);
	p->disk->filter = NULL;
	if ((rc = ps_parts_failed(p)) < 0) return rc;
	for (int k = 0; k < p->nparts; k++) {
		PsPartDisk *pd = p->part[k].disk;
		free(pd->buf);
		free(pd->fill);
		pd->buf = NULL, pd->fill = NULL;
	}
	ExtSort *es = NULL;
	uint64_t share = bigmem_budget() / 8;
	if (extsort_open(&es, p->disk->dir, share, extsort_cmp_bytes, (void *)(uintptr_t)6) < 0)
		return ps_fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	rc = join_buckets(p, es);
	if (!rc && extsort_finish(es) < 0) rc = disk_error(p, "write");
	if (!rc) rc = write_edges(p, es);
	ExtSortStats ss;
	extsort_stats(es, &ss);
	p->st.disk_bytes += ss.disk_bytes;
	extsort_free(es);
	return rc;
}

/* The part's next edge (pass 4): 1 with *e pointing at it (not yet taken),
 * 0 when the part has no more, -1 on a read error. */
static int peek_edge(PsDisk *d, PsPartDisk *pd, const unsigned char **e)
{
	if (pd->eat == pd->elen) {
		if (pd->epos >= pd->eend) return 0;
		uint64_t want = pd->eend - pd->epos;
		if (want > READ_CHUNK) want = READ_CHUNK;
		if (bigmem_pread_full(d->edges_fd, pd->ebuf, (size_t)want, pd->epos) !=
		    (ssize_t)want)
			return -1;
		pd->epos += want;
		pd->elen = (size_t)want;
		pd->eat = 0;
	}
	*e = pd->ebuf + pd->eat;
	return 1;
}

/* Step 4, a node: its edges from the file, then its moves. */
static int edges_of(PsPart *pt, uint32_t i)
{
	PsRun *p = pt->run;
	PsPartDisk *pd = pt->disk;
	EdgeCand cand[MOVEGEN_MAX];
	int ne = 0, got;
	const unsigned char *e;
	while ((got = peek_edge(p->disk, pd, &e)) == 1 && be_get(e, 4) == i) {
		if (ne == MOVEGEN_MAX) break;
		EdgeCand c = {0, MOVE_NONE, 0};
		uint16_t mv;
		memcpy(&mv, e + 6, 2);
		memcpy(&c.next, e + 8, 4);
		c.move = (Move)mv;
		pd->eat += EDGE_LEN;
		if (be_get(e + 4, 2) & AT_LEFT_OUT)
			pt->eb.left_out++;
		else
			cand[ne++] = c;
	}
	if (got < 0) return part_disk_error(pt, "read");
	int rc = ps_put_moves(&p->g, i, NULL, NULL, 0, cand, ne, &pt->eb);
	return rc < 0 ? ps_part_fail(pt, rc, "out of memory") : 0;
}

void *ps_disk_part_edges(void *arg)
{
	PsPart *pt = arg;
	PsDisk *d = pt->run->disk;
	PsPartDisk *pd = pt->disk;
	if (!(pd->ebuf = malloc(READ_CHUNK))) {
		ps_part_fail(pt, PETASHOCK_ENOMEM, "out of memory");
		return NULL;
	}
	pd->epos = d->part_first[pt->k] * EDGE_LEN;
	pd->eend = d->part_first[pt->k + 1] * EDGE_LEN;
	pd->elen = pd->eat = 0;
	for (size_t i = pt->node0; i < pt->node0 + pt->n; i++) {
		if (pt->k == 0 && i % PS_PROGRESS_EVERY == 0)
			ps_report(pt->run, "edges", i * (size_t)pt->run->nparts);
		if (edges_of(pt, (uint32_t)i) < 0) return NULL;
	}
	const unsigned char *e;
	if (peek_edge(d, pd, &e) != 0) /* an edge of no node of the part */
		ps_part_fail(pt, PETASHOCK_EIO, "%s: a temporary file is not as written", d->dir);
	return NULL;
}

/*
 * minimax/mmfile.c — the graph file and its journal (mmfile.h; byte layouts in
 * docs/minimax.md, "The graph file").
 *
 * The graph file is little-endian and 8-byte aligned section by section, so
 * that it can be used in place once mapped: a header of MMFILE_HEADER bytes,
 * then keys, key directory, filter, flags, (value, depth), move starts, moves,
 * parent starts, parents. Per-node ranges are checked as they are read, so a
 * damaged file makes a run fall back to the whole book, never misread.
 */
#include "minimax/mmfile.h"

#include "bookdb/bookdb.h"

#include "shogi/bigmem.h"
#include "shogi/parfor.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/memuse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *mmfile_strerror(int code)
{
	switch (code) {
	case MMFILE_OK:
		return "success";
	case MMFILE_ENOMEM:
		return "out of memory";
	case MMFILE_EIO:
		return "cannot read or write the minimax files";
	case MMFILE_ESTALE:
		return "the kept minimax graph is missing, of another run or damaged";
	}
	return "unknown minimax-file error";
}

#define GRAPH_MAGIC "JOSEKIMG"
#define JOURNAL_MAGIC "JOSEKIMJ"
/* The graph file's version: 2 since its key filter sets three bits a key in
 * one word (shogi/keymap.h; version 1 set one). A file of another version is
 * stale: the next run is a whole-book one. The journal's format has not
 * changed: it stays version 1. */
#define MMFILE_VERSION 2
#define JOURNAL_VERSION 1
#define MMFILE_HEADER 256
#define JOURNAL_HEADER MMFILE_JOURNAL_EMPTY

enum {
	SEC_KEYS,
	SEC_DIR,
	SEC_BLOOM,
	SEC_FLAGS,
	SEC_VD,
	SEC_MSTART,
	SEC_MOVES,
	SEC_PSTART,
	SEC_PARENTS,
	SEC_END,
	SEC_NB
};

/* Journal entry tags. */
enum { J_NODE = 1, J_MOVES = 2, J_STATE = 3 };

/* The header as stored (offsets in bytes from the start of the file). */
typedef struct {
	char magic[8];
	uint32_t version, header_size;
	uint64_t stamp;
	uint64_t n, nmoves, nparents;
	uint32_t dir_bits, bloom_log2;
	int32_t draw[2];
	uint64_t off[SEC_NB];
} GraphHeader;

_Static_assert(sizeof(GraphHeader) <= MMFILE_HEADER, "graph header too large");
_Static_assert(sizeof(MmVd) == 4 && sizeof(MmMove) == 8 && sizeof(Key) == 16, "graph file layout");

#define fail errmsg_set

/* CRC-32C (Castagnoli). With SSE 4.2 (x86's crc32 instruction computes this
 * very CRC) 8 bytes a step; else a table made per call: one call per journal
 * batch, and no mutable state is shared between threads. */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
#ifdef __SSE4_2__
	uint64_t c64 = 0xffffffffu;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
	}
	uint32_t c32 = (uint32_t)c64;
	while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
#else
	uint32_t table[256];
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[i] = c;
	}
	uint32_t c = 0xffffffffu;
	while (n--) c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
#endif
}

static size_t align8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

/* ---- writing ------------------------------------------------------------------ */

/* len bytes at p into fd, 64 MiB a call; -1 (errno ECANCELED) as soon as
 * *stop turns true (stop may be NULL). */
static int write_all_or_stop(int fd, const void *p, size_t len, const atomic_bool *stop)
{
	const uint8_t *b = p;
	while (len) {
		if (stop && atomic_load(stop)) {
			errno = ECANCELED;
			return -1;
		}
		ssize_t w = write(fd, b, len > ((size_t)1 << 26) ? (size_t)1 << 26 : len);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) return -1;
		b += w;
		len -= (size_t)w;
	}
	return 0;
}

static int write_all(int fd, const void *p, size_t len)
{
	return write_all_or_stop(fd, p, len, NULL);
}

static int write_section(int fd, uint64_t *pos, const void *p, size_t len, const atomic_bool *stop)
{
	static const uint8_t zero[8];
	if (len && write_all_or_stop(fd, p, len, stop) < 0) return -1;
	size_t pad = align8(*pos + len) - (*pos + len);
	if (pad && write_all(fd, zero, pad) < 0) return -1;
	*pos += len + pad;
	return 0;
}

static int write_journal_header(const char *path, uint64_t stamp)
{
	uint8_t h[JOURNAL_HEADER] = {0};
	memcpy(h, JOURNAL_MAGIC, 8);
	uint32_t ver = JOURNAL_VERSION;
	memcpy(h + 8, &ver, 4);
	memcpy(h + 16, &stamp, 8);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0664);
	if (fd < 0) return -1;
	int rc = write_all(fd, h, sizeof h) < 0 || fsync(fd) < 0 ? -1 : 0;
	if (close(fd) < 0) rc = -1;
	return rc;
}

/* mmfile_parents's passes, in ranges of the children (shogi/parfor.h): each
 * range reads every move and counts or places only its children's parents,
 * so that every parent list is in the parents' order, whatever the threads. */
typedef struct {
	size_t n;
	const uint32_t *mstart;
	const MmMove *moves;
	uint32_t *pstart, *parents; /* parents NULL: the counting pass */
} ParentsCtx;

static void parents_range(void *arg, size_t lo, size_t hi, int t)
{
	(void)t;
	ParentsCtx *x = arg;
	uint32_t *pstart = x->pstart;
	if (!x->parents) {
		for (size_t k = 0; k < x->mstart[x->n]; k++) {
			uint32_t c = x->moves[k].next;
			if (c != MM_NONE && c >= lo && c < hi) pstart[c + 2]++;
		}
		return;
	}
	for (uint32_t p = 0; p < x->n; p++)
		for (uint32_t k = x->mstart[p]; k < x->mstart[p + 1]; k++) {
			uint32_t c = x->moves[k].next;
			if (c != MM_NONE && c >= lo && c < hi) x->parents[pstart[c + 1]++] = p;
		}
}

int mmfile_parents(uint32_t **pstart_out, uint32_t **parents_out, size_t n, const uint32_t *mstart,
                   const MmMove *moves)
{
	ParentsCtx x = {n, mstart, moves, bigmem_alloc((n + 2) * sizeof *x.pstart), NULL};
	if (!x.pstart) return MMFILE_ENOMEM;
	int nt = parfor_threads(n, PARFOR_MIN_ITEMS);
	parfor(n, nt, parents_range, &x);
	for (size_t i = 0; i < n; i++) x.pstart[i + 2] += x.pstart[i + 1];
	x.parents = bigmem_alloc((x.pstart[n + 1] + 1) * sizeof *x.parents);
	if (!x.parents) {
		bigmem_free(x.pstart);
		return MMFILE_ENOMEM;
	}
	parfor(n, nt, parents_range, &x);
	*pstart_out = x.pstart;
	*parents_out = x.parents;
	return 0;
}

/* The sizes of a graph file's sections (h's n, nmoves, nparents, dir_bits
 * and bloom_log2 set). */
static void graph_sizes(const GraphHeader *h, size_t sizes[SEC_END])
{
	size_t n = h->n;
	sizes[SEC_KEYS] = n * sizeof(Key);
	sizes[SEC_DIR] = bookdb_keydir_dir_len(h->dir_bits & 31) * 4;
	sizes[SEC_BLOOM] = keyfilter_words(h->bloom_log2 & 63) * 8;
	sizes[SEC_FLAGS] = n;
	sizes[SEC_VD] = n * sizeof(MmVd);
	sizes[SEC_MSTART] = (n + 1) * 4;
	sizes[SEC_MOVES] = h->nmoves * sizeof(MmMove);
	sizes[SEC_PSTART] = (n + 1) * 4;
	sizes[SEC_PARENTS] = h->nparents * 4;
}

/* The header of a graph file of n nodes, nmoves moves and npar reverse
 * edges, its sections laid out in order; sizes gets theirs. */
static void graph_layout(GraphHeader *h, size_t sizes[SEC_END], uint64_t stamp, const int draw[2],
                         size_t n, size_t nmoves, size_t npar)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, GRAPH_MAGIC, 8);
	h->version = MMFILE_VERSION;
	h->header_size = MMFILE_HEADER;
	h->stamp = stamp;
	h->n = n;
	h->nmoves = nmoves;
	h->nparents = npar;
	h->dir_bits = bookdb_keydir_dir_bits(n);
	h->bloom_log2 = keyfilter_log2(n);
	h->draw[0] = draw[0];
	h->draw[1] = draw[1];
	graph_sizes(h, sizes);
	uint64_t off = MMFILE_HEADER;
	for (int s = 0; s < SEC_END; s++) {
		h->off[s] = off;
		off += align8(sizes[s]);
	}
	h->off[SEC_END] = off;
}

/* dir's graph file and its temporary name. */
static void graph_paths(char path[BOOKDB_PATH_LEN], char tmp[BOOKDB_PATH_LEN + 8], const char *dir)
{
	snprintf(path, BOOKDB_PATH_LEN, "%s/%s", dir, MMFILE_GRAPH);
	snprintf(tmp, BOOKDB_PATH_LEN + 8, "%s.tmp", path);
}

int mmfile_tmp_parents(const char *dir, size_t n, size_t nmoves, const uint32_t *pstart,
                       const uint32_t *parents, const atomic_bool *stop, char *err)
{
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN + 8];
	graph_paths(path, tmp, dir);
	GraphHeader h;
	size_t sizes[SEC_END];
	static const int nodraw[2];
	graph_layout(&h, sizes, 0, nodraw, n, nmoves, pstart[n]);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0664);
	uint64_t pos = h.off[SEC_PSTART];
	int rc = fd < 0 || lseek(fd, (off_t)pos, SEEK_SET) < 0 ||
	                 write_section(fd, &pos, pstart, sizes[SEC_PSTART], stop) < 0 ||
	                 write_section(fd, &pos, parents, sizes[SEC_PARENTS], stop) < 0
	             ? MMFILE_EIO
	             : 0;
	if (rc) fail(err, MMFILE_ERRLEN, rc, "%s: %s", tmp, strerror(errno));
	if (fd >= 0 && close(fd) < 0 && !rc)
		rc = fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", tmp, strerror(errno));
	if (rc) unlink(tmp);
	return rc;
}

int mmfile_write_tmp(const char *dir, uint64_t stamp, const int draw[2], size_t n, const Key *keys,
                     const uint8_t *flags, const MmVd *vd, const uint32_t *mstart,
                     const MmMove *moves, const uint32_t *pstart, const uint32_t *parents,
                     size_t npar, const atomic_bool *stop, char *err)
{
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN + 8];
	graph_paths(path, tmp, dir);
	GraphHeader h;
	size_t sizes[SEC_END];
	graph_layout(&h, sizes, stamp, draw, n, mstart[n], pstart ? pstart[n] : npar);
	size_t ndir = sizes[SEC_DIR] / 4, nbloom = sizes[SEC_BLOOM] / 8;
	uint32_t *dirv = bigmem_alloc(ndir * sizeof *dirv);
	uint64_t *bloom = bigmem_alloc(nbloom * sizeof *bloom);
	int rc = MMFILE_ENOMEM, fd = -1;
	if (!dirv || !bloom) goto out;
	BookKeyDir kd;
	bookdb_keydir_fill(&kd, keys, n, dirv, h.dir_bits, bloom, h.bloom_log2);
	uint8_t hb[MMFILE_HEADER] = {0};
	memcpy(hb, &h, sizeof h);
	rc = MMFILE_EIO;
	/* The reverse edges written ahead: the file kept, they stay. */
	fd = open(tmp, pstart ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY, 0664);
	if (fd < 0) goto out;
	uint64_t pos = 0;
	const void *data[SEC_END] = {keys, dirv, bloom, flags, vd, mstart, moves, pstart, parents};
	if (write_section(fd, &pos, hb, sizeof hb, stop) < 0) goto out;
	for (int s = 0; s < (pstart ? SEC_END : SEC_PSTART); s++)
		if (write_section(fd, &pos, data[s], sizes[s], stop) < 0) goto out;
	if (fsync(fd) < 0) goto out;
	if (close(fd) < 0) {
		fd = -1;
		goto out;
	}
	fd = -1;
	rc = 0;
out:
	if (rc == MMFILE_EIO)
		fail(err, MMFILE_ERRLEN, rc, "%s: %s", tmp, strerror(errno));
	else if (rc)
		fail(err, MMFILE_ERRLEN, rc, "out of memory");
	if (fd >= 0) close(fd);
	if (rc) unlink(tmp);
	bigmem_free(dirv);
	bigmem_free(bloom);
	return rc;
}

int mmfile_commit(const char *dir, uint64_t stamp, char *err)
{
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN + 8], jpath[BOOKDB_PATH_LEN];
	graph_paths(path, tmp, dir);
	snprintf(jpath, sizeof jpath, "%s/%s", dir, MMFILE_JOURNAL);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", path, strerror(e));
	}
	if (write_journal_header(jpath, stamp) < 0)
		return fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", jpath, strerror(errno));
	return 0;
}

void mmfile_discard(const char *dir)
{
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN + 8];
	graph_paths(path, tmp, dir);
	unlink(tmp);
}

int mmfile_write(const char *dir, uint64_t stamp, const int draw[2], size_t n, const Key *keys,
                 const uint8_t *flags, const MmVd *vd, const uint32_t *mstart, const MmMove *moves,
                 const uint32_t *pstart, const uint32_t *parents, char *err)
{
	int rc = mmfile_write_tmp(dir, stamp, draw, n, keys, flags, vd, mstart, moves, pstart,
	                          parents, 0, NULL, err);
	return rc ? rc : mmfile_commit(dir, stamp, err);
}

/* ---- small hash tables of the overlay ---------------------------------------- */

/* The key of node in the overlay's node maps (sets with values): hi = node
 * + 1 differs for every node, so the set tells them apart exactly. */
static inline Key node_key(uint32_t node)
{
	return (Key){0, (uint64_t)node + 1};
}

/* The value slot of node, added (with value MM_NONE, which is KEYMAP_NONE)
 * if absent; NULL when out of memory. */
static uint32_t *nodemap_put(KeyMap *m, uint32_t node)
{
	uint32_t *v = NULL;
	return keymap_add(m, node_key(node), &v) < 0 ? NULL : v;
}

/* Sets bit i of *bits (n bits, allocated at the first); -1 when out of memory. */
static int bit_set(uint64_t **bits, size_t n, uint32_t i)
{
	if (!*bits && !(*bits = calloc(n / 64 + 1, sizeof **bits))) return -1;
	(*bits)[i >> 6] |= (uint64_t)1 << (i & 63);
	return 0;
}

/* Node's replaced move list, or NULL. */
static MmOvList *list_find(const MmView *v, uint32_t node)
{
	if (node < v->n && !mmfile_bit(v->list_bits, node)) return NULL;
	const uint32_t *li = keymap_value(&v->list_of, node_key(node));
	return li ? &v->lists[*li] : NULL;
}

/* Node's first parent link in ov_par, or MM_NONE. */
static uint32_t first_link(const MmView *v, uint32_t node)
{
	if (node < v->n && !mmfile_bit(v->link_bits, node)) return MM_NONE;
	const uint32_t *h = keymap_value(&v->first_parent, node_key(node));
	return h ? *h : MM_NONE;
}

/* Links parent -> child in the overlay unless it is there already. */
/* Whether the graph file lists parent among child's parents (ascending). */
static bool file_parent(const MmView *v, uint32_t child, uint32_t parent)
{
	uint32_t lo = v->pstart[child], hi = v->pstart[child + 1];
	if (lo > hi || hi > v->nparents) return false;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v->parents[mid] == parent) return true;
		if (v->parents[mid] < parent)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int add_parent_link(MmView *v, uint32_t child, uint32_t parent)
{
	for (uint32_t l = first_link(v, child); l != MM_NONE; l = v->ov_par[l].next)
		if (v->ov_par[l].parent == parent) return 0;
	if (array_grow((void **)&v->ov_par, &v->ov_par_cap, v->ov_npar + 1, sizeof *v->ov_par,
	               1024) < 0 ||
	    (child < v->n && bit_set(&v->link_bits, v->n, child) < 0))
		return -1;
	uint32_t *head = nodemap_put(&v->first_parent, child);
	if (!head) return -1;
	v->ov_par[v->ov_npar] = (MmOvParent){parent, *head};
	*head = (uint32_t)v->ov_npar++;
	return 0;
}

static int pend(MmView *v, const void *p, size_t len)
{
	if (array_grow((void **)&v->pending, &v->pending_cap, v->pending_len + len, 1, 1024) < 0)
		return -1;
	memcpy(v->pending + v->pending_len, p, len);
	v->pending_len += len;
	return 0;
}

/* ---- changes (live and replayed) ------------------------------------------------ */

static int do_add_node(MmView *v, Key k, uint32_t *idx)
{
	size_t j = v->nnew;
	if (v->n + j + 1 >= MM_NONE) return MMFILE_ENOMEM;
	if (j + 1 > v->new_cap) {
		size_t nc = v->new_cap ? v->new_cap * 2 : 64;
		Key *nk = realloc(v->new_keys, nc * sizeof *nk);
		if (!nk) return MMFILE_ENOMEM;
		v->new_keys = nk;
		uint8_t *nf = realloc(v->new_flags, nc * sizeof *nf);
		if (!nf) return MMFILE_ENOMEM;
		v->new_flags = nf;
		MmVd *nv = realloc(v->new_vd, nc * sizeof *nv);
		if (!nv) return MMFILE_ENOMEM;
		v->new_vd = nv;
		v->new_cap = nc;
	}
	v->new_keys[j] = k;
	if (keymap_find_or_insert(&v->new_map, v->new_keys, (uint32_t)j) < 0) return MMFILE_ENOMEM;
	v->new_flags[j] = 0;
	v->new_vd[j] = (MmVd){0, 0};
	v->nnew++;
	*idx = (uint32_t)(v->n + j);
	return 0;
}

static int do_set_moves(MmView *v, uint32_t i, const MmMove *moves, uint32_t len)
{
	size_t count = mmfile_count(v);
	if (i >= count) return MMFILE_ESTALE; /* as set_state: never journal a bad node */
	for (uint32_t k = 0; k < len; k++)
		if (moves[k].next != MM_NONE && moves[k].next >= count) return MMFILE_ESTALE;
	if (array_grow((void **)&v->ov_moves, &v->ov_moves_cap, v->ov_nmoves + len + 1,
	               sizeof *v->ov_moves, 1024) < 0 ||
	    array_grow((void **)&v->lists, &v->lists_cap, v->nlists + 1, sizeof *v->lists, 1024) <
	        0)
		return MMFILE_ENOMEM;
	memcpy(v->ov_moves + v->ov_nmoves, moves, len * sizeof *moves);
	uint32_t *li = nodemap_put(&v->list_of, i);
	if (!li || (i < v->n && bit_set(&v->list_bits, v->n, i) < 0)) return MMFILE_ENOMEM;
	if (*li == MM_NONE) *li = (uint32_t)v->nlists++;
	MmOvList *l = &v->lists[*li];
	l->off = (uint32_t)v->ov_nmoves;
	l->len = len;
	l->node = i;
	v->ov_nmoves += len;
	/* An edge between graph-file nodes is usually in its reverse edges
	 * already; not when the leaf policy made a leaf of it then (the child
	 * was no inner node) and an edge now. */
	for (uint32_t k = 0; k < len; k++) {
		uint32_t c = moves[k].next;
		if (c == MM_NONE || (c < v->n && i < v->n && file_parent(v, c, i))) continue;
		if (add_parent_link(v, c, i) < 0) return MMFILE_ENOMEM;
	}
	return 0;
}

const MmOvState *mmfile_ov_state(const MmView *v, uint32_t i)
{
	return &v->ov_state[*keymap_value(&v->state_of, node_key(i))];
}

static int do_set_state(MmView *v, uint32_t i, uint8_t flags, MmVd vd)
{
	if (i >= mmfile_count(v)) return MMFILE_ESTALE;
	if (i < v->n) {
		if (array_grow((void **)&v->ov_state, &v->ov_state_cap, v->ov_nstate + 1,
		               sizeof *v->ov_state, 1024) < 0)
			return MMFILE_ENOMEM;
		uint32_t *si = nodemap_put(&v->state_of, i);
		if (!si) return MMFILE_ENOMEM;
		if (*si == MM_NONE) *si = (uint32_t)v->ov_nstate++;
		v->ov_state[*si] = (MmOvState){vd, flags};
		if (bit_set(&v->ov_bits, v->n, i) < 0) return MMFILE_ENOMEM;
	} else {
		v->new_flags[i - v->n] = flags;
		v->new_vd[i - v->n] = vd;
	}
	return 0;
}

int mmfile_add_node(MmView *v, Key k, uint8_t flags, uint32_t *idx)
{
	uint8_t e[17];
	e[0] = J_NODE;
	memcpy(e + 1, &k, 16);
	int rc = do_add_node(v, k, idx);
	if (rc == 0) v->new_flags[*idx - v->n] = flags;
	if (rc == 0 && pend(v, e, sizeof e) < 0) rc = MMFILE_ENOMEM;
	if (rc == 0 && flags) rc = mmfile_set_state(v, *idx, flags, (MmVd){0, 0});
	return rc;
}

int mmfile_set_moves(MmView *v, uint32_t i, const MmMove *moves, uint32_t len)
{
	int rc = do_set_moves(v, i, moves, len);
	if (rc) return rc;
	uint8_t e[9];
	e[0] = J_MOVES;
	memcpy(e + 1, &i, 4);
	memcpy(e + 5, &len, 4);
	if (pend(v, e, sizeof e) < 0 || pend(v, moves, len * sizeof *moves) < 0)
		return MMFILE_ENOMEM;
	return 0;
}

int mmfile_set_state(MmView *v, uint32_t i, uint8_t flags, MmVd vd)
{
	int rc = do_set_state(v, i, flags, vd);
	if (rc) return rc;
	uint8_t e[10];
	e[0] = J_STATE;
	memcpy(e + 1, &i, 4);
	e[5] = flags;
	memcpy(e + 6, &vd, 4);
	return pend(v, e, sizeof e) < 0 ? MMFILE_ENOMEM : 0;
}

size_t mmfile_overlay_bytes(const MmView *v)
{
	size_t bits = (v->ov_bits != NULL) + (v->list_bits != NULL) + (v->link_bits != NULL);
	return v->new_cap * (sizeof *v->new_keys + sizeof *v->new_flags + sizeof *v->new_vd) +
	       v->ov_state_cap * sizeof *v->ov_state + v->ov_moves_cap * sizeof *v->ov_moves +
	       v->lists_cap * sizeof *v->lists + v->ov_par_cap * sizeof *v->ov_par +
	       v->pending_cap + keymap_bytes(&v->new_map) + keymap_bytes(&v->state_of) +
	       keymap_bytes(&v->list_of) + keymap_bytes(&v->first_parent) +
	       bits * (v->n / 64 + 1) * sizeof(uint64_t);
}

/* ---- reading -------------------------------------------------------------------- */

/* k's node among those added since the graph file was written, or MM_NONE. */
static uint32_t find_added(const MmView *v, Key k)
{
	uint32_t j = keymap_find(&v->new_map, v->new_keys, k);
	return j == KEYMAP_NONE ? MM_NONE : (uint32_t)(v->n + j);
}

uint32_t mmfile_find(const MmView *v, Key k)
{
	size_t i = v->n ? bookdb_keydir_find(&v->kd, k) : BOOKDB_KEYDIR_NONE;
	return i != BOOKDB_KEYDIR_NONE ? (uint32_t)i : find_added(v, k);
}

/* ---- pages read ahead (mmfile_touch) ----------------------------------------- */

typedef struct {
	const MmView *v;
	const uint32_t *nodes;
	unsigned what;
} Touch;

/* One byte of each page of [p, p + bytes). */
static void touch_bytes(const void *p, size_t bytes)
{
	const volatile uint8_t *b = p;
	size_t page = 4096 - ((uintptr_t)p & 4095);
	for (size_t o = 0; o < bytes; o += page, page = 4096) (void)b[o];
}

void mmfile_touch_node(const MmView *v, uint32_t i, unsigned what)
{
	if (i >= v->n) return; /* added since the file: in memory */
	if (what & MMFILE_TOUCH_STATE) {
		touch_bytes(&v->flags[i], 1);
		touch_bytes(&v->vd[i], sizeof *v->vd);
	}
	if (what & MMFILE_TOUCH_PARENTS) {
		uint32_t a = v->pstart[i], b = v->pstart[i + 1];
		if (a < b && b <= v->nparents)
			touch_bytes(&v->parents[a], (b - a) * sizeof *v->parents);
	}
	if (what & (MMFILE_TOUCH_MOVES | MMFILE_TOUCH_CHILD_STATE)) {
		uint32_t a = v->mstart[i], b = v->mstart[i + 1];
		if (a >= b || b > v->nmoves) return;
		touch_bytes(&v->moves[a], (b - a) * sizeof *v->moves);
		if (!(what & MMFILE_TOUCH_CHILD_STATE)) return;
		for (uint32_t k = a; k < b; k++)
			if (v->moves[k].next < v->n) touch_bytes(&v->flags[v->moves[k].next], 1);
	}
}

static void touch_range(void *ctx, size_t lo, size_t hi, int t)
{
	(void)t;
	const Touch *x = ctx;
	for (size_t q = lo; q < hi; q++) mmfile_touch_node(x->v, x->nodes[q], x->what);
}

void mmfile_touch(const MmView *v, const uint32_t *nodes, size_t n, unsigned what)
{
	if (n < MMFILE_TOUCH_MIN || !v->n) return;
	Touch x = {v, nodes, what};
	parfor(n, MMFILE_TOUCH_THREADS, touch_range, &x);
}

/* ---- nodes in key order (mmfile_key_order) ----------------------------------------- */

static int cmp_u32(const void *a, const void *b); /* below */

/* A node added since the graph file was written, placed among the file's:
 * before file node i exactly when i >= rank. */
typedef struct {
	size_t rank;
	Key key;
	uint32_t x;
} Placed;

static int cmp_placed(const void *x, const void *y)
{
	const Placed *a = x, *b = y;
	if (a->rank != b->rank) return (a->rank > b->rank) - (a->rank < b->rank);
	return key_cmp(a->key, b->key);
}

typedef struct {
	const MmView *v;
	Placed *p;
} RankRun;

static void rank_range(void *ctx, size_t lo, size_t hi, int t)
{
	(void)t;
	RankRun *r = ctx;
	for (size_t i = lo; i < hi; i++)
		r->p[i].rank = r->v->n ? bookdb_keydir_rank(&r->v->kd, r->p[i].key) : 0;
}

int mmfile_key_order(const MmView *v, uint32_t *nodes, size_t n)
{
	size_t nf = 0; /* the file's nodes first */
	for (size_t q = 0; q < n; q++)
		if (nodes[q] < v->n) {
			uint32_t t = nodes[nf];
			nodes[nf++] = nodes[q];
			nodes[q] = t;
		}
	qsort(nodes, nf, sizeof *nodes, cmp_u32);
	size_t na = n - nf;
	if (na == 0) return 0;
	Placed *p = malloc(na * sizeof *p);
	uint32_t *f = malloc((nf + 1) * sizeof *f);
	if (!p || !f) {
		free(p);
		free(f);
		return MMFILE_ENOMEM;
	}
	for (size_t j = 0; j < na; j++)
		p[j] = (Placed){0, mmfile_key(v, nodes[nf + j]), nodes[nf + j]};
	RankRun r = {v, p};
	parfor(na, na < MMFILE_THREADS_FROM ? 1 : MMFILE_TOUCH_THREADS, rank_range, &r);
	qsort(p, na, sizeof *p, cmp_placed);
	memcpy(f, nodes, nf * sizeof *f);
	for (size_t i = 0, j = 0, q = 0; q < n; q++)
		nodes[q] = j < na && (i == nf || f[i] >= p[j].rank) ? p[j++].x : f[i++];
	free(p);
	free(f);
	return 0;
}

typedef struct {
	const MmView *v;
	const Key *keys;
	uint32_t *out;
} FindRun;

static void find_range(void *ctx, size_t lo, size_t hi, int t)
{
	(void)t;
	FindRun *r = ctx;
	for (size_t i = lo; i < hi; i++) r->out[i] = mmfile_find(r->v, r->keys[i]);
}

void mmfile_find_threads(const MmView *v, const Key *k, size_t n, uint32_t *out)
{
	FindRun r = {v, k, out};
	parfor(n, n < MMFILE_THREADS_FROM ? 1 : MMFILE_TOUCH_THREADS, find_range, &r);
}

bool mmfile_may_hold(const MmView *v, Key k)
{
	return (v->n && keyfilter_maybe(v->kd.filter, v->kd.filter_mask, k)) ||
	       find_added(v, k) != MM_NONE;
}

void mmfile_find_many(const MmView *v, const Key *k, size_t n, uint32_t *out)
{
	enum { STEP = 64 };
	size_t at[STEP];
	for (size_t s = 0; s < n; s += STEP) {
		size_t m = n - s < STEP ? n - s : STEP;
		if (v->n)
			bookdb_keydir_find_many(&v->kd, k + s, m, at);
		else
			for (size_t i = 0; i < m; i++) at[i] = BOOKDB_KEYDIR_NONE;
		for (size_t i = 0; i < m; i++)
			out[s + i] =
			    at[i] != BOOKDB_KEYDIR_NONE ? (uint32_t)at[i] : find_added(v, k[s + i]);
	}
}

const MmMove *mmfile_moves(const MmView *v, uint32_t i, uint32_t *len)
{
	*len = 0;
	const MmOvList *l = list_find(v, i);
	if (l) {
		*len = l->len;
		return v->ov_moves + l->off;
	}
	static const MmMove none[1];
	if (i >= v->n) return none; /* a new node without moves yet */
	uint32_t a = v->mstart[i], b = v->mstart[i + 1];
	if (a > b || b > v->nmoves) return NULL;
	size_t count = mmfile_count(v);
	for (uint32_t k = a; k < b; k++)
		if (v->moves[k].next != MM_NONE && v->moves[k].next >= count) return NULL;
	*len = b - a;
	return v->moves + a;
}

/* Whether node p has an edge to i now: a parent link outlives the edge when
 * p's moves lose it (a move marked avoided, docs/bookgen.md). */
static bool has_edge(const MmView *v, uint32_t p, uint32_t i)
{
	uint32_t len;
	const MmMove *m = mmfile_moves(v, p, &len);
	for (uint32_t k = 0; m && k < len; k++)
		if (m[k].next == i) return true;
	return false;
}

int mmfile_each_parent(const MmView *v, uint32_t i, int (*fn)(uint32_t parent, void *ctx),
                       void *ctx)
{
	if (i < v->n) {
		uint32_t a = v->pstart[i], b = v->pstart[i + 1];
		if (a > b || b > v->nparents) return MMFILE_ESTALE;
		for (uint32_t k = a; k < b; k++) {
			uint32_t p = v->parents[k];
			if (p >= v->n) return MMFILE_ESTALE;
			/* The file's reverse edges are its moves': only a parent whose
			 * moves were replaced since may have lost the edge. */
			if (list_find(v, p) && !has_edge(v, p, i)) continue;
			int r = fn(p, ctx);
			if (r) return r;
		}
	}
	for (uint32_t l = first_link(v, i); l != MM_NONE; l = v->ov_par[l].next) {
		if (!has_edge(v, v->ov_par[l].parent, i)) continue;
		int r = fn(v->ov_par[l].parent, ctx);
		if (r) return r;
	}
	return 0;
}

/* The bytes of the entry with this tag whose body starts at p (left bytes
 * there), or 0 when it is malformed (an unknown tag, a short body). */
static size_t entry_len(uint8_t tag, const uint8_t *p, size_t left)
{
	uint32_t n;
	switch (tag) {
	case J_NODE:
		return left >= 16 ? 16 : 0;
	case J_MOVES:
		if (left < 8) return 0;
		memcpy(&n, p + 4, 4);
		return n <= (left - 8) / sizeof(MmMove) ? 8 + n * sizeof(MmMove) : 0;
	case J_STATE:
		return left >= 9 ? 9 : 0;
	}
	return 0;
}

/* The entry of a batch (p, len bytes) at *o: its tag and body, *o moved past
 * it. 1, 0 at the batch's end, or -1 for a malformed entry. */
static int next_entry(const uint8_t *p, size_t len, size_t *o, uint8_t *tag, const uint8_t **body)
{
	if (*o >= len) return 0;
	*tag = p[(*o)++];
	size_t el = entry_len(*tag, p + *o, len - *o);
	if (!el) return -1;
	*body = p + *o;
	*o += el;
	return 1;
}

/*
 * The graph-file children of the batch's moves entries, whose reverse edges
 * replaying them reads (do_set_moves), brought in first by threads
 * (mmfile_touch): on a graph larger than memory a replay otherwise waits on
 * one random read after another. A hint only: a malformed batch is left for
 * the replay to refuse.
 */
static void replay_ahead(const MmView *v, const uint8_t *p, size_t len)
{
	uint32_t *kids = NULL;
	size_t nk = 0, cap = 0, o = 0;
	uint8_t tag;
	const uint8_t *b;
	while (next_entry(p, len, &o, &tag, &b) > 0) {
		uint32_t i, n;
		memcpy(&i, b, 4);
		if (tag != J_MOVES || i >= v->n) continue;
		memcpy(&n, b + 4, 4);
		for (uint32_t k = 0; k < n; k++) {
			MmMove m;
			memcpy(&m, b + 8 + k * sizeof m, sizeof m);
			if (m.next >= v->n) continue;
			if (array_grow((void **)&kids, &cap, nk + 1, sizeof *kids, 1024) < 0) {
				free(kids);
				return;
			}
			kids[nk++] = m.next;
		}
	}
	mmfile_touch(v, kids, nk, MMFILE_TOUCH_PARENTS);
	free(kids);
}

/* Replays one batch's entries; MMFILE_ESTALE on anything malformed. */
static int replay(void *ctx, const uint8_t *p, size_t len)
{
	MmView *v = ctx;
	replay_ahead(v, p, len);
	size_t o = 0;
	uint8_t tag;
	const uint8_t *b;
	int more;
	while ((more = next_entry(p, len, &o, &tag, &b)) > 0) {
		uint32_t i, n;
		int rc;
		switch (tag) {
		case J_NODE: {
			Key k;
			memcpy(&k, b, 16);
			if (mmfile_find(v, k) != MM_NONE) return MMFILE_ESTALE;
			if ((rc = do_add_node(v, k, &i))) return rc;
			break;
		}
		case J_MOVES: {
			memcpy(&i, b, 4);
			memcpy(&n, b + 4, 4);
			if (i >= mmfile_count(v)) return MMFILE_ESTALE;
			MmMove *m = malloc((n + 1) * sizeof *m);
			if (!m) return MMFILE_ENOMEM;
			memcpy(m, b + 8, n * sizeof *m);
			rc = do_set_moves(v, i, m, n);
			free(m);
			if (rc) return rc;
			break;
		}
		case J_STATE: {
			MmVd vd;
			memcpy(&i, b, 4);
			memcpy(&vd, b + 5, 4);
			if ((rc = do_set_state(v, i, b[4], vd))) return rc;
			break;
		}
		}
	}
	return more < 0 ? MMFILE_ESTALE : 0;
}

/*
 * Reads dir's journal up to journal_len (its header checked against stamp)
 * and calls batch(ctx, payload, len) for each batch in order, each checked
 * by its CRC. 0, MMFILE_ENOMEM, or MMFILE_ESTALE (message in err) for a
 * journal that is missing, short, of another graph or damaged, or the first
 * error batch returns.
 */
static int read_journal(const char *dir, uint64_t stamp, uint64_t journal_len,
                        int (*batch)(void *ctx, const uint8_t *p, size_t len), void *ctx, char *err)
{
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/%s", dir, MMFILE_JOURNAL);
	int fd = open(path, O_RDONLY);
	if (fd < 0) return fail(err, MMFILE_ERRLEN, MMFILE_ESTALE, "%s: %s", path, strerror(errno));
	struct stat st;
	uint8_t *buf = NULL;
	int rc = MMFILE_ESTALE;
	if (fstat(fd, &st) < 0 || journal_len < JOURNAL_HEADER ||
	    (uint64_t)st.st_size < journal_len) {
		fail(err, MMFILE_ERRLEN, rc, "%s: shorter than the book says", path);
		goto out;
	}
	buf = malloc(journal_len);
	if (!buf) {
		rc = fail(err, MMFILE_ERRLEN, MMFILE_ENOMEM, "out of memory");
		goto out;
	}
	size_t got = 0;
	while (got < journal_len) {
		ssize_t r = pread(fd, buf + got, journal_len - got, (off_t)got);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) {
			fail(err, MMFILE_ERRLEN, rc, "%s: cannot read", path);
			goto out;
		}
		got += (size_t)r;
	}
	uint64_t s;
	memcpy(&s, buf + 16, 8);
	if (memcmp(buf, JOURNAL_MAGIC, 8) || s != stamp) {
		fail(err, MMFILE_ERRLEN, rc, "%s: belongs to another graph", path);
		goto out;
	}
	size_t o = JOURNAL_HEADER;
	while (o < journal_len) {
		uint32_t len, crc;
		if (journal_len - o < 8) break;
		memcpy(&len, buf + o, 4);
		memcpy(&crc, buf + o + 4, 4);
		if (len > journal_len - o - 8 || crc32c(buf + o + 8, len) != crc) break;
		int r = batch(ctx, buf + o + 8, len);
		if (r) {
			rc = r;
			break;
		}
		o += 8 + len;
	}
	if (o != journal_len) {
		if (rc != MMFILE_ENOMEM)
			fail(err, MMFILE_ERRLEN, rc, "%s: damaged at byte %zu", path, o);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

/*
 * Maps dir's graph file read-only and checks its header against stamp; *h
 * gets the header. 0, or MMFILE_ESTALE (message in err; nothing mapped).
 */
static int map_graph(void **map, size_t *map_len, GraphHeader *h, const char *dir, uint64_t stamp,
                     char *err)
{
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/%s", dir, MMFILE_GRAPH);
	int fd = open(path, O_RDONLY);
	if (fd < 0 && errno == ENOENT) /* a backup's copy, one deleted, or none written yet */
		return fail(err, MMFILE_ERRLEN, MMFILE_ESTALE,
		            "no kept graph beside the book (%s: not there)", path);
	if (fd < 0) return fail(err, MMFILE_ERRLEN, MMFILE_ESTALE, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < MMFILE_HEADER) {
		close(fd);
		return fail(err, MMFILE_ERRLEN, MMFILE_ESTALE, "%s: too short", path);
	}
	size_t len = (size_t)st.st_size;
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return fail(err, MMFILE_ERRLEN, MMFILE_ESTALE, "%s: cannot map: %s", path,
		            strerror(errno));
	memcpy(h, m, sizeof *h);
	int rc = 0;
	if (memcmp(h->magic, GRAPH_MAGIC, 8) || h->version != MMFILE_VERSION ||
	    h->header_size != MMFILE_HEADER) {
		rc = fail(err, MMFILE_ERRLEN, MMFILE_ESTALE, "%s: not a graph file of this version",
		          path);
	} else if (h->stamp != stamp) {
		rc = fail(err, MMFILE_ERRLEN, MMFILE_ESTALE,
		          "%s: not the graph the book's last minimax run kept (another run's, or a "
		          "fold killed before the book recorded it)",
		          path);
	} else {
		size_t n = h->n;
		size_t sizes[SEC_END];
		graph_sizes(h, sizes);
		bool ok = n < MM_NONE && h->nmoves < MM_NONE && h->nparents < MM_NONE &&
		          h->dir_bits >= 1 && h->dir_bits <= 30 && h->bloom_log2 >= 6 &&
		          h->bloom_log2 <= 40 && h->off[SEC_END] == len;
		for (int s = 0; ok && s < SEC_END; s++)
			ok = h->off[s] % 8 == 0 && h->off[s] >= MMFILE_HEADER &&
			     h->off[s] + sizes[s] <= h->off[s + 1];
		if (!ok) rc = fail(err, MMFILE_ERRLEN, MMFILE_ESTALE, "%s: damaged header", path);
	}
	if (rc) {
		munmap(m, len);
		return rc;
	}
	*map = m;
	*map_len = len;
	return 0;
}

int mmfile_open(MmView *v, const char *dir, uint64_t stamp, uint64_t journal_len, char *err)
{
	memset(v, 0, sizeof *v);
	keymap_init(&v->new_map, sizeof *v->new_keys);
	keymap_init_set(&v->list_of, true);
	keymap_init_set(&v->first_parent, true);
	keymap_init_set(&v->state_of, true);
	GraphHeader h;
	int rc = map_graph(&v->map, &v->map_len, &h, dir, stamp, err);
	if (rc) return rc;
	/* A view is read where the changes lead (a node's moves, its parents, a
	 * key's place), at random. A graph too large to stay in the page cache
	 * is read without the kernel's read-ahead, which would read a window a
	 * lookup and evict the pages the next lookups need (10 M positions in
	 * 240 MB: 10,000 changes past 5 minutes, 28 s without); a smaller one
	 * with it, the windows then the pages of later lookups (cold, in plenty
	 * of memory: 3.3 s, 9 s without). */
	if (memuse_too_large_to_cache(v->map_len)) (void)madvise(v->map, v->map_len, MADV_RANDOM);
	uint8_t *base = v->map;
	v->stamp = stamp;
	v->draw[0] = h.draw[0];
	v->draw[1] = h.draw[1];
	v->n = h.n;
	v->keys = (const Key *)(base + h.off[SEC_KEYS]);
	v->kd = (BookKeyDir){v->keys,
	                     v->n,
	                     (const uint32_t *)(base + h.off[SEC_DIR]),
	                     h.dir_bits,
	                     (const uint64_t *)(base + h.off[SEC_BLOOM]),
	                     ((uint64_t)1 << h.bloom_log2) - 1};
	v->flags = base + h.off[SEC_FLAGS];
	v->vd = (const MmVd *)(base + h.off[SEC_VD]);
	v->mstart = (const uint32_t *)(base + h.off[SEC_MSTART]);
	v->moves = (const MmMove *)(base + h.off[SEC_MOVES]);
	v->nmoves = h.nmoves;
	v->pstart = (const uint32_t *)(base + h.off[SEC_PSTART]);
	v->parents = (const uint32_t *)(base + h.off[SEC_PARENTS]);
	v->nparents = h.nparents;
	if ((rc = read_journal(dir, stamp, journal_len, replay, v, err))) {
		mmfile_close(v);
		return rc;
	}
	return 0;
}

typedef struct {
	void (*add)(void *ctx, const Key *keys, size_t n);
	void *ctx;
} KeysOut;

/* A batch's added nodes' keys, to the caller of mmfile_keys. */
static int batch_keys(void *ctx, const uint8_t *p, size_t len)
{
	const KeysOut *ko = ctx;
	size_t o = 0;
	uint8_t tag;
	const uint8_t *b;
	int more;
	while ((more = next_entry(p, len, &o, &tag, &b)) > 0) {
		if (tag != J_NODE) continue;
		Key k;
		memcpy(&k, b, 16);
		ko->add(ko->ctx, &k, 1);
	}
	return more < 0 ? MMFILE_ESTALE : 0;
}

int mmfile_keys(const char *dir, uint64_t stamp, uint64_t journal_len,
                void (*add)(void *ctx, const Key *keys, size_t n), void *ctx, char *err)
{
	void *map;
	size_t map_len;
	GraphHeader h;
	int rc = map_graph(&map, &map_len, &h, dir, stamp, err);
	if (rc) return rc;
	/* Read in order: the pages once each, and the kernel's read-ahead. */
	madvise(map, map_len, MADV_SEQUENTIAL);
	const Key *keys = (const Key *)((const uint8_t *)map + h.off[SEC_KEYS]);
	for (size_t i = 0; i < h.n; i += 4096) add(ctx, keys + i, h.n - i < 4096 ? h.n - i : 4096);
	munmap(map, map_len);
	KeysOut ko = {add, ctx};
	return read_journal(dir, stamp, journal_len, batch_keys, &ko, err);
}

void mmfile_close(MmView *v)
{
	if (v->map) munmap(v->map, v->map_len);
	free(v->new_keys);
	free(v->new_flags);
	free(v->new_vd);
	keymap_free(&v->new_map);
	free(v->ov_bits);
	free(v->list_bits);
	free(v->link_bits);
	free(v->ov_state);
	keymap_free(&v->state_of);
	free(v->ov_moves);
	free(v->lists);
	keymap_free(&v->list_of);
	free(v->ov_par);
	keymap_free(&v->first_parent);
	free(v->pending);
	memset(v, 0, sizeof *v);
}

int mmfile_journal_append(MmView *v, const char *dir, uint64_t journal_len, uint64_t *new_len,
                          char *err)
{
	*new_len = journal_len;
	if (!v->pending_len) return 0;
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/%s", dir, MMFILE_JOURNAL);
	int fd = open(path, O_WRONLY);
	if (fd < 0) return fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", path, strerror(errno));
	uint32_t hdr[2] = {(uint32_t)v->pending_len, crc32c(v->pending, v->pending_len)};
	int rc = 0;
	if (v->pending_len > UINT32_MAX ||
	    pwrite(fd, hdr, sizeof hdr, (off_t)journal_len) != (ssize_t)sizeof hdr ||
	    pwrite(fd, v->pending, v->pending_len, (off_t)(journal_len + 8)) !=
	        (ssize_t)v->pending_len ||
	    ftruncate(fd, (off_t)(journal_len + 8 + v->pending_len)) < 0 || fsync(fd) < 0)
		rc = fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", path, strerror(errno));
	if (close(fd) < 0 && !rc)
		rc = fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", path, strerror(errno));
	if (!rc) {
		*new_len = journal_len + 8 + v->pending_len;
		v->pending_len = 0;
		memcpy(v->appended, hdr, sizeof hdr);
	}
	return rc;
}

bool mmfile_journal_ends_with(const MmView *v, const char *dir, uint64_t journal_len)
{
	if (!v->appended[0]) return true;
	if (journal_len < (uint64_t)JOURNAL_HEADER + 8 + v->appended[0]) return false;
	uint64_t at = journal_len - 8 - v->appended[0];
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/%s", dir, MMFILE_JOURNAL);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return false;
	uint32_t hdr[2];
	ssize_t r = pread(fd, hdr, sizeof hdr, (off_t)at);
	close(fd);
	return r == (ssize_t)sizeof hdr && !memcmp(hdr, v->appended, sizeof hdr);
}

/* ---- folding the journal into a new graph file ------------------------------------ */

/* File nodes a block of the numbering's shift table. */
#define FOLD_BLOCK 256

/* The new numbering: key order over the file's nodes and the added ones. */
typedef struct {
	const MmView *v;
	size_t m;      /* nodes added since the file */
	uint32_t *ord; /* the added nodes (j of n + j), in key order */
	uint32_t *ins; /* ins[k]: the file nodes before ord[k]'s key (ascending in k) */
	uint32_t *num; /* num[j]: node n + j's new number */
	uint32_t *blk; /* blk[b]: the added keys before file node b * FOLD_BLOCK */
	uint32_t *buf; /* a node's parents */
	size_t buf_n, buf_cap;
	bool bad; /* a parent past the graph's end */
} Fold;

static int cmp_added(const void *a, const void *b, void *ctx)
{
	const MmView *v = ctx;
	return key_cmp(v->new_keys[*(const uint32_t *)a], v->new_keys[*(const uint32_t *)b]);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Node x's new number (MM_NONE stays). */
static uint32_t fold_num(const Fold *f, uint32_t x)
{
	if (x == MM_NONE) return MM_NONE;
	if (x >= f->v->n) return f->num[x - f->v->n];
	size_t k = f->blk[x / FOLD_BLOCK];
	while (k < f->m && f->ins[k] <= x) k++;
	return x + (uint32_t)k;
}

static int fold_numbering(Fold *f)
{
	const MmView *v = f->v;
	size_t m = f->m, nb = v->n / FOLD_BLOCK + 2;
	f->ord = malloc((m + 1) * sizeof *f->ord);
	f->ins = malloc((m + 1) * sizeof *f->ins);
	f->num = malloc((m + 1) * sizeof *f->num);
	f->blk = malloc(nb * sizeof *f->blk);
	if (!f->ord || !f->ins || !f->num || !f->blk) return MMFILE_ENOMEM;
	for (size_t j = 0; j < m; j++) f->ord[j] = (uint32_t)j;
	qsort_r(f->ord, m, sizeof *f->ord, cmp_added, (void *)v);
	for (size_t k = 0; k < m; k++) {
		Key key = v->new_keys[f->ord[k]];
		f->ins[k] = v->n ? (uint32_t)bookdb_keydir_rank(&v->kd, key) : 0;
		if (v->n && f->ins[k] < v->n && key_equal(v->keys[f->ins[k]], key))
			return MMFILE_ESTALE; /* added twice */
		f->num[f->ord[k]] = f->ins[k] + (uint32_t)k;
	}
	for (size_t b = 0, k = 0; b < nb; b++) {
		while (k < m && f->ins[k] < b * FOLD_BLOCK) k++;
		f->blk[b] = (uint32_t)k;
	}
	return 0;
}

static int fold_parent(uint32_t parent, void *ctx)
{
	Fold *f = ctx;
	if (parent >= mmfile_count(f->v)) {
		f->bad = true;
		return 1;
	}
	if (array_grow((void **)&f->buf, &f->buf_cap, f->buf_n + 1, sizeof *f->buf, 64) < 0)
		return -1;
	f->buf[f->buf_n++] = fold_num(f, parent);
	return 0;
}

/* The moves and the reverse edges the view holds now (the file's, less the
 * replaced lists', plus theirs). */
static void fold_totals(const MmView *v, size_t *nmoves, size_t *npar)
{
	size_t nm = v->nmoves, np = v->nparents;
	for (size_t q = 0; q < v->nlists; q++) {
		const MmOvList *l = &v->lists[q];
		for (uint32_t k = 0; k < l->len; k++) np += v->ov_moves[l->off + k].next != MM_NONE;
		nm += l->len;
		if (l->node >= v->n) continue;
		uint32_t a = v->mstart[l->node], b = v->mstart[l->node + 1];
		for (uint32_t k = a; k < b && k < v->nmoves; k++) np -= v->moves[k].next != MM_NONE;
		nm -= b - a;
	}
	*nmoves = nm;
	*npar = np;
}

/* A section of the new file written in order through a buffer (pwrite at
 * its offset): the sections are written side by side, each in order. */
typedef struct {
	int fd;
	uint64_t off; /* where buf goes */
	size_t len;
	bool failed;
	uint8_t buf[1 << 18];
} Stream;

static void stream_flush(Stream *w)
{
	size_t done = 0;
	while (!w->failed && done < w->len) {
		ssize_t r = pwrite(w->fd, w->buf + done, w->len - done, (off_t)(w->off + done));
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) w->failed = true;
		done += r > 0 ? (size_t)r : 0;
	}
	w->off += w->len;
	w->len = 0;
}

static inline void stream_put(Stream *w, const void *p, size_t n)
{
	if (w->len + n > sizeof w->buf) stream_flush(w);
	if (n) memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static inline void stream_u32(Stream *w, uint32_t x)
{
	stream_put(w, &x, 4);
}

static void put_dir(void *ctx, const uint32_t *entries, size_t m)
{
	stream_put(ctx, entries, m * sizeof *entries);
}

/* The sections fold_nodes writes: all but the filter. */
enum { FS_KEYS, FS_DIR, FS_FLAGS, FS_VD, FS_MSTART, FS_MOVES, FS_PSTART, FS_PARENTS, FS_NB };

/* Writes every node of the view, in the new numbering, through w (FS_NB
 * streams at their sections' offsets) and dw (the directory, into w's), and
 * sets its key's bit in bloom. */
static int fold_nodes(Fold *f, Stream *w, BookKeyDirWriter *dw, uint64_t *bloom,
                      const GraphHeader *h, const atomic_bool *stop)
{
	const MmView *v = f->v;
	size_t count = mmfile_count(v), nm = 0, np = 0, i = 0, k = 0;
	uint64_t mask = ((uint64_t)1 << h->bloom_log2) - 1;
	for (size_t t = 0; t < h->n; t++) {
		if ((t & 0xffff) == 0 && stop && atomic_load(stop)) return MMFILE_EIO;
		uint32_t x = k < f->m && (i == v->n || f->ins[k] <= i)
		                 ? (uint32_t)(v->n + f->ord[k++])
		                 : (uint32_t)i++;
		Key key = mmfile_key(v, x);
		stream_put(&w[FS_KEYS], &key, sizeof key);
		bookdb_keydir_write_key(dw, key, (uint32_t)t);
		keyfilter_add(bloom, mask, key);
		uint8_t fl = mmfile_flags(v, x);
		MmVd vd = mmfile_vd(v, x);
		stream_put(&w[FS_FLAGS], &fl, 1);
		stream_put(&w[FS_VD], &vd, sizeof vd);
		uint32_t len;
		const MmMove *mv = mmfile_moves(v, x, &len);
		if (!mv || len > h->nmoves - nm) return MMFILE_ESTALE;
		stream_u32(&w[FS_MSTART], (uint32_t)nm);
		for (uint32_t e = 0; e < len; e++) {
			MmMove m = mv[e];
			if (m.next != MM_NONE && m.next >= count) return MMFILE_ESTALE;
			m.next = fold_num(f, m.next);
			stream_put(&w[FS_MOVES], &m, sizeof m);
		}
		nm += len;
		f->buf_n = 0;
		int rc = mmfile_each_parent(v, x, fold_parent, f);
		if (rc < 0 || f->bad)
			return f->bad || rc == MMFILE_ESTALE ? MMFILE_ESTALE : MMFILE_ENOMEM;
		if (f->buf_n > h->nparents - np) return MMFILE_ESTALE;
		if (f->buf_n > 1) qsort(f->buf, f->buf_n, sizeof *f->buf, cmp_u32);
		stream_u32(&w[FS_PSTART], (uint32_t)np);
		stream_put(&w[FS_PARENTS], f->buf, f->buf_n * sizeof *f->buf);
		np += f->buf_n;
	}
	bookdb_keydir_write_end(dw, (uint32_t)h->n);
	stream_u32(&w[FS_MSTART], (uint32_t)nm);
	stream_u32(&w[FS_PSTART], (uint32_t)np);
	/* Every count as the totals said, or the view does not add up. */
	return nm == h->nmoves && np == h->nparents ? 0 : MMFILE_ESTALE;
}

int mmfile_fold(const MmView *v, const char *dir, uint64_t stamp, const atomic_bool *stop,
                char *err)
{
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN + 8];
	graph_paths(path, tmp, dir);
	Fold f = {.v = v, .m = v->nnew};
	GraphHeader h;
	size_t sizes[SEC_END], nmoves, npar;
	fold_totals(v, &nmoves, &npar);
	int rc = MMFILE_ENOMEM, fd = -1;
	Stream *w = NULL;
	BookKeyDirWriter *dw = NULL;
	uint8_t *bmap = MAP_FAILED;
	size_t blen = 0;
	if (mmfile_count(v) >= MM_NONE || nmoves >= MM_NONE || npar >= MM_NONE) goto out;
	if ((rc = fold_numbering(&f)) < 0) goto out;
	rc = MMFILE_ENOMEM;
	if (!(w = malloc(FS_NB * sizeof *w)) || !(dw = malloc(sizeof *dw))) goto out;
	graph_layout(&h, sizes, stamp, v->draw, mmfile_count(v), nmoves, npar);
	bookdb_keydir_write_init(dw, h.dir_bits, put_dir, &w[FS_DIR]);
	rc = MMFILE_EIO;
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0664);
	if (fd < 0 || ftruncate(fd, (off_t)h.off[SEC_END]) < 0) goto out;
	/* The filter, set at random, through a shared map of its section whose
	 * blocks are taken first (a full disk is then an error, not a fault). */
	uint64_t bpage = h.off[SEC_BLOOM] & ~(uint64_t)4095;
	blen = (size_t)(h.off[SEC_BLOOM] - bpage) + sizes[SEC_BLOOM];
	if ((errno = posix_fallocate(fd, (off_t)bpage, (off_t)blen)) != 0) goto out;
	bmap = mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)bpage);
	if (bmap == MAP_FAILED) goto out;
	static const int sec[FS_NB] = {SEC_KEYS,   SEC_DIR,   SEC_FLAGS,  SEC_VD,
	                               SEC_MSTART, SEC_MOVES, SEC_PSTART, SEC_PARENTS};
	for (int q = 0; q < FS_NB; q++) w[q] = (Stream){.fd = fd, .off = h.off[sec[q]]};
	/* The old file is read once, in order, and dropped after the fold. */
	(void)madvise(v->map, v->map_len, MADV_SEQUENTIAL);
	uint8_t hb[MMFILE_HEADER] = {0};
	memcpy(hb, &h, sizeof h);
	if (pwrite(fd, hb, sizeof hb, 0) != (ssize_t)sizeof hb) goto out;
	if ((rc = fold_nodes(&f, w, dw, (uint64_t *)(bmap + (h.off[SEC_BLOOM] - bpage)), &h,
	                     stop)) < 0)
		goto out;
	rc = MMFILE_EIO;
	bool failed = false;
	for (int q = 0; q < FS_NB; q++) {
		stream_flush(&w[q]);
		failed |= w[q].failed;
	}
	if (failed || msync(bmap, blen, MS_SYNC) < 0 || fsync(fd) < 0) goto out;
	rc = 0;
out:
	if (rc == MMFILE_EIO)
		fail(err, MMFILE_ERRLEN, rc, "%s: %s", tmp,
		     stop && atomic_load(stop) ? "stopped" : strerror(errno));
	else if (rc == MMFILE_ESTALE)
		fail(err, MMFILE_ERRLEN, rc, "the kept graph and its journal do not add up");
	else if (rc)
		fail(err, MMFILE_ERRLEN, rc, "out of memory");
	if (bmap != MAP_FAILED) munmap(bmap, blen);
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = fail(err, MMFILE_ERRLEN, MMFILE_EIO, "%s: %s", tmp, strerror(errno));
	if (rc) unlink(tmp);
	free(w);
	free(dw);
	free(f.ord);
	free(f.ins);
	free(f.num);
	free(f.blk);
	free(f.buf);
	return rc == 0 ? mmfile_commit(dir, stamp, err) : rc;
}

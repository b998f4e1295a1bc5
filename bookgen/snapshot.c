/*
 * bookgen/snapshot.c — the snapshot file (bookgen/snapshot.h): header,
 * sections, table, hashes.
 */
#include "bookgen/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"

#define SNAP_MAGIC "JSKSNAP1"
#define SNAP_VERSION 2u
#define SNAP_MAX_SECTIONS 64
#define SNAP_PATH_MAX 4096

typedef struct {
	char magic[8];
	uint32_t version, nsections;
	uint64_t table_off;
	BookStamp stamp;
	uint64_t hash; /* of the bytes above */
} SnapHeader;

typedef struct {
	uint32_t tag, pad;
	uint64_t off, len, hash;
} SnapEntry;

/* ---- the hash: four lanes of 8 bytes, so that the multiplies of one lane
 * overlap the others' (several GB/s: a snapshot of a gigabyte is checked
 * in a fraction of a second). Streaming, for sections written in pieces. */

#define H_MUL1 0x9E3779B97F4A7C15ULL
#define H_MUL2 0xC2B2AE3D27D4EB4FULL

typedef struct {
	uint64_t lane[4];
	uint8_t pend[32];
	size_t npend;
	uint64_t total;
} Hash;

static inline uint64_t rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static inline uint64_t round1(uint64_t h, uint64_t w)
{
	return rotl(h ^ (w * H_MUL1), 29) * H_MUL2;
}

static void hash_init(Hash *h)
{
	for (int i = 0; i < 4; i++) h->lane[i] = H_MUL2 * (uint64_t)(i + 1);
	h->npend = 0;
	h->total = 0;
}

static void hash_blocks(Hash *h, const uint8_t *p, size_t nblocks)
{
	uint64_t a = h->lane[0], b = h->lane[1], c = h->lane[2], d = h->lane[3];
	for (size_t i = 0; i < nblocks; i++, p += 32) {
		uint64_t w[4];
		memcpy(w, p, 32);
		a = round1(a, w[0]);
		b = round1(b, w[1]);
		c = round1(c, w[2]);
		d = round1(d, w[3]);
	}
	h->lane[0] = a;
	h->lane[1] = b;
	h->lane[2] = c;
	h->lane[3] = d;
}

static void hash_update(Hash *h, const void *data, size_t n)
{
	const uint8_t *p = data;
	if (!n) return;
	h->total += n;
	if (h->npend) {
		size_t k = 32 - h->npend < n ? 32 - h->npend : n;
		memcpy(h->pend + h->npend, p, k);
		h->npend += k;
		p += k;
		n -= k;
		if (h->npend < 32) return;
		hash_blocks(h, h->pend, 1);
		h->npend = 0;
	}
	hash_blocks(h, p, n / 32);
	p += n / 32 * 32;
	n %= 32;
	memcpy(h->pend, p, n);
	h->npend = n;
}

static uint64_t hash_final(Hash *h)
{
	memset(h->pend + h->npend, 0, 32 - h->npend);
	hash_blocks(h, h->pend, 1);
	uint64_t x = h->total * H_MUL1;
	for (int i = 0; i < 4; i++) x = round1(x, h->lane[i]);
	x ^= x >> 33;
	x *= H_MUL2;
	return x ^ (x >> 29);
}

uint64_t snap_hash(const void *p, size_t n)
{
	Hash h;
	hash_init(&h);
	hash_update(&h, p, n);
	return hash_final(&h);
}

/* ---- writing ---- */

struct SnapWriter {
	FILE *f;
	char path[SNAP_PATH_MAX], tmp[SNAP_PATH_MAX + 8];
	SnapHeader head;
	SnapEntry ent[SNAP_MAX_SECTIONS];
	int n;        /* sections begun */
	bool open;    /* the last one is being written */
	bool failed;  /* a write failed */
	uint64_t pos; /* bytes written */
	bool behind;  /* SNAP_WRITE_BEHIND */
	Hash h;
	char *buf; /* the stream's buffer (none when written behind) */
};

static int werr(SnapWriter *w, char *err, const char *what)
{
	return errmsg_set(err, SNAP_ERRLEN, SEL_EIO, "selector snapshot %s: %s: %s", w->tmp, what,
	                  strerror(errno ? errno : EIO));
}

/*
 * SNAP_WRITE_BEHIND: a stdio stream (fopencookie) over the file, so the
 * writer's code is the same. Its bytes gather in an aligned buffer and go to
 * the disk a whole chunk at a time: with O_DIRECT, never through the page
 * cache; where the file system refuses O_DIRECT, through it, each chunk sent
 * on its way and the one before waited for and dropped. The last, partial
 * chunk, and the header rewritten at the end, are written without O_DIRECT
 * (which wants whole blocks).
 */
typedef struct {
	int fd;
	bool direct;
	char *buf;
	size_t n;              /* bytes in buf */
	off_t off;             /* where buf goes */
	off_t issued, dropped; /* without O_DIRECT: sent to the disk; on it and dropped */
} BehindOut;

static int pwrite_all(int fd, const char *p, size_t n, off_t off)
{
	while (n) {
		ssize_t k = pwrite(fd, p, n, off);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return -1;
		p += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

/* Through the page cache from here on. */
static int direct_off(BehindOut *d)
{
	int fl = fcntl(d->fd, F_GETFL);
	if (fl < 0 || fcntl(d->fd, F_SETFL, fl & ~O_DIRECT) < 0) return -1;
	d->direct = false;
	d->issued = d->dropped = d->off;
	return 0;
}

/* buf to the disk at off. Through the page cache: the bytes since the last
 * chunk sent are sent (without waiting), the chunk sent before them waited
 * for and dropped (advice only: a call that fails changes nothing written). */
static int behind_flush(BehindOut *d)
{
	if (!d->n) return 0;
	int rc = pwrite_all(d->fd, d->buf, d->n, d->off);
	/* A file system that took O_DIRECT at the open but wants other
	 * alignments: through the page cache from here on. */
	if (rc < 0 && errno == EINVAL && d->direct && direct_off(d) == 0)
		rc = pwrite_all(d->fd, d->buf, d->n, d->off);
	if (rc < 0) return -1;
	d->off += (off_t)d->n;
	d->n = 0;
	if (d->direct) return 0;
	(void)sync_file_range(d->fd, d->issued, d->off - d->issued, SYNC_FILE_RANGE_WRITE);
	if (d->issued > d->dropped) {
		(void)sync_file_range(d->fd, d->dropped, d->issued - d->dropped,
		                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		                          SYNC_FILE_RANGE_WAIT_AFTER);
		(void)posix_fadvise(d->fd, d->dropped, d->issued - d->dropped, POSIX_FADV_DONTNEED);
		d->dropped = d->issued;
	}
	d->issued = d->off;
	return 0;
}

/* What is left in buf, written without O_DIRECT from now on. */
static int behind_tail(BehindOut *d)
{
	if (d->direct && d->n && direct_off(d) < 0) return -1;
	return behind_flush(d);
}

static ssize_t behind_write(void *c, const char *p, size_t len)
{
	BehindOut *d = c;
	for (size_t at = 0; at < len;) {
		size_t k = len - at;
		if (k > SNAP_BEHIND_CHUNK - d->n) k = SNAP_BEHIND_CHUNK - d->n;
		memcpy(d->buf + d->n, p + at, k);
		d->n += k;
		at += k;
		if (d->n == SNAP_BEHIND_CHUNK && behind_flush(d) < 0) return -1;
	}
	return (ssize_t)len;
}

/* SEEK_SET alone (snap_commit's, to the header): what was written through
 * the page cache leaves it first, the last chunk with it. */
static int behind_seek(void *c, off64_t *pos, int whence)
{
	BehindOut *d = c;
	if (whence != SEEK_SET || behind_tail(d) < 0) return -1;
	if (d->off > d->dropped) {
		(void)sync_file_range(d->fd, d->dropped, d->off - d->dropped,
		                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		                          SYNC_FILE_RANGE_WAIT_AFTER);
		(void)posix_fadvise(d->fd, d->dropped, d->off - d->dropped, POSIX_FADV_DONTNEED);
	}
	d->off = (off_t)*pos;
	d->issued = d->dropped = d->off;
	return 0;
}

static int behind_close(void *c)
{
	BehindOut *d = c;
	int rc = behind_tail(d);
	if (close(d->fd) != 0) rc = -1;
	free(d->buf);
	free(d);
	return rc;
}

/* The stream of a write-behind snapshot at path; NULL with errno set. */
static FILE *behind_open(const char *path)
{
	BehindOut *d = calloc(1, sizeof *d);
	if (!d) return NULL;
	if (posix_memalign((void **)&d->buf, 4096, SNAP_BEHIND_CHUNK) != 0) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->direct = true;
	d->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
	if (d->fd < 0 && errno == EINVAL) { /* tmpfs, some network file systems */
		d->direct = false;
		d->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (d->fd < 0) {
		int e = errno;
		free(d->buf);
		free(d);
		errno = e;
		return NULL;
	}
	FILE *f =
	    fopencookie(d, "wb",
	                (cookie_io_functions_t){
	                    .write = behind_write, .seek = behind_seek, .close = behind_close});
	if (!f) (void)behind_close(d);
	return f;
}

int snap_create(SnapWriter **out, const char *path, const BookStamp *stamp, unsigned flags,
                char *err)
{
	*out = NULL;
	if (strlen(path) >= SNAP_PATH_MAX)
		return errmsg_set(err, SNAP_ERRLEN, SEL_EINVAL, "selector snapshot: path too long");
	SnapWriter *w = calloc(1, sizeof *w);
	if (!w) return SEL_ENOMEM;
	snprintf(w->path, sizeof w->path, "%s", path);
	snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
	memcpy(w->head.magic, SNAP_MAGIC, 8);
	w->head.version = SNAP_VERSION;
	w->head.stamp = *stamp;
	w->behind = flags & SNAP_WRITE_BEHIND;
	/* Written behind, the bytes gather in the stream's own aligned buffer:
	 * no stdio buffer in front of it to copy them through. */
	w->buf = w->behind ? NULL : malloc(1 << 20);
	bool nomem = !w->behind && !w->buf;
	w->f = nomem ? NULL : w->behind ? behind_open(w->tmp) : fopen(w->tmp, "wb");
	if (!w->f) {
		int rc = nomem || errno == ENOMEM ? SEL_ENOMEM : werr(w, err, "cannot create it");
		free(w->buf);
		free(w);
		return rc;
	}
	if (w->behind)
		setvbuf(w->f, NULL, _IONBF, 0);
	else
		setvbuf(w->f, w->buf, _IOFBF, 1 << 20);
	/* The header's place, written last. */
	SnapHeader zero = {0};
	if (fwrite(&zero, sizeof zero, 1, w->f) != 1) w->failed = true;
	w->pos = sizeof zero;
	*out = w;
	return 0;
}

static void section_end(SnapWriter *w)
{
	if (!w->open) return;
	SnapEntry *e = &w->ent[w->n - 1];
	e->len = w->pos - e->off;
	e->hash = hash_final(&w->h);
	w->open = false;
}

int snap_section(SnapWriter *w, uint32_t tag)
{
	section_end(w);
	if (w->n >= SNAP_MAX_SECTIONS) return SEL_EINVAL;
	w->ent[w->n++] = (SnapEntry){.tag = tag, .off = w->pos};
	hash_init(&w->h);
	w->open = true;
	return 0;
}

int snap_write(SnapWriter *w, const void *p, size_t n)
{
	if (!w->open) return SEL_EINVAL;
	if (!n) return 0;
	hash_update(&w->h, p, n);
	if (fwrite(p, 1, n, w->f) != n) {
		w->failed = true;
		return SEL_EIO;
	}
	w->pos += n;
	return 0;
}

void snap_abort(SnapWriter *w)
{
	if (!w) return;
	if (w->f) fclose(w->f);
	unlink(w->tmp);
	free(w->buf);
	free(w);
}

int snap_commit(SnapWriter *w, char *err)
{
	section_end(w);
	w->head.nsections = (uint32_t)w->n;
	w->head.table_off = w->pos;
	w->head.hash = snap_hash(&w->head, offsetof(SnapHeader, hash));
	uint64_t th = snap_hash(w->ent, (size_t)w->n * sizeof *w->ent);
	errno = 0;
	int rc = 0;
	if (w->failed || fwrite(w->ent, sizeof *w->ent, (size_t)w->n, w->f) != (size_t)w->n ||
	    fwrite(&th, sizeof th, 1, w->f) != 1 || fseek(w->f, 0, SEEK_SET) != 0 ||
	    fwrite(&w->head, sizeof w->head, 1, w->f) != 1 || fflush(w->f) != 0)
		rc = werr(w, err, "cannot write it");
	/* No fsync: a file torn by a crash fails its hashes, and the next run
	 * then starts from scratch, as it would without one. */
	if (fclose(w->f) != 0 && !rc) rc = werr(w, err, "cannot write it");
	w->f = NULL;
	if (!rc && rename(w->tmp, w->path) != 0) rc = werr(w, err, "cannot rename it into place");
	if (rc) unlink(w->tmp);
	free(w->buf);
	free(w);
	return rc;
}

/* ---- reading ---- */

struct SnapReader {
	int fd;
	char path[SNAP_PATH_MAX];
	SnapHeader head;
	SnapEntry ent[SNAP_MAX_SECTIONS];
};

static int rfail(const char *path, char *err, int code, const char *what)
{
	return errmsg_set(err, SNAP_ERRLEN, code, "selector snapshot %s: %s", path, what);
}

/* Reads n bytes at off, all of them. */
static bool read_at(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t k = pread(fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)off);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return false;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return true;
}

int snap_open(SnapReader **out, const char *path, const BookStamp *stamp, char *err)
{
	int rc = snap_open_any(out, path, err);
	if (rc || !memcmp(&(*out)->head.stamp, stamp, sizeof *stamp)) return rc;
	const BookStamp *f = &(*out)->head.stamp;
	rc = rfail(path, err, SEL_ESTALE,
	           f->dev == stamp->dev && f->ino == stamp->ino ? "the book was written since"
	                                                        : SNAP_OTHER_FILE);
	snap_close(*out);
	*out = NULL;
	return rc;
}

bool snap_stamp_in(BookStamp *out, const SnapReader *r, BookDB *db)
{
	*out = r->head.stamp;
	return bookdb_stamp_carry(out, db) == 1;
}

int snap_open_any(SnapReader **out, const char *path, char *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? rfail(path, err, SEL_ENOSNAP, "none")
		                       : rfail(path, err, SEL_EIO, strerror(errno));
	SnapReader *r = calloc(1, sizeof *r);
	if (!r) {
		close(fd);
		return SEL_ENOMEM;
	}
	r->fd = fd;
	snprintf(r->path, sizeof r->path, "%s", path);
	struct stat st;
	int rc = 0;
	uint64_t th = 0;
	if (fstat(fd, &st) != 0 || !read_at(fd, &r->head, sizeof r->head, 0))
		rc = rfail(path, err, SEL_ESNAP, "shorter than its header");
	else if (memcmp(r->head.magic, SNAP_MAGIC, 8) != 0)
		rc = rfail(path, err, SEL_ESNAP, "not a selector snapshot (bad magic)");
	/* The version first: another version's header may be laid out
	 * otherwise (version 1's stamp had no change log position). */
	else if (r->head.version != SNAP_VERSION)
		rc = rfail(path, err, SEL_ESNAP, "of another version");
	else if (r->head.hash != snap_hash(&r->head, offsetof(SnapHeader, hash)))
		rc = rfail(path, err, SEL_ESNAP, "damaged header (hash)");
	else if (r->head.nsections > SNAP_MAX_SECTIONS ||
	         r->head.table_off > (uint64_t)st.st_size ||
	         (uint64_t)st.st_size - r->head.table_off !=
	             r->head.nsections * sizeof(SnapEntry) + sizeof th)
		rc = rfail(path, err, SEL_ESNAP, "damaged (its table is not at the end)");
	else if (!read_at(fd, r->ent, r->head.nsections * sizeof(SnapEntry), r->head.table_off) ||
	         !read_at(fd, &th, sizeof th,
	                  r->head.table_off + r->head.nsections * sizeof(SnapEntry)) ||
	         th != snap_hash(r->ent, r->head.nsections * sizeof(SnapEntry)))
		rc = rfail(path, err, SEL_ESNAP, "damaged table (hash)");
	for (uint32_t i = 0; !rc && i < r->head.nsections; i++)
		if (r->ent[i].off < sizeof(SnapHeader) || r->ent[i].off > r->head.table_off ||
		    r->ent[i].len > r->head.table_off - r->ent[i].off)
			rc = rfail(path, err, SEL_ESNAP,
			           "damaged table (a section out of the file)");
	if (rc) {
		snap_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

static const SnapEntry *find(const SnapReader *r, uint32_t tag)
{
	for (uint32_t i = 0; i < r->head.nsections; i++)
		if (r->ent[i].tag == tag) return &r->ent[i];
	return NULL;
}

bool snap_has(const SnapReader *r, uint32_t tag, uint64_t *len)
{
	const SnapEntry *e = find(r, tag);
	if (e && len) *len = e->len;
	return e != NULL;
}

/* A section's tag as its four letters, in t. */
static const char *tag_name(char t[5], uint32_t tag)
{
	t[0] = (char)(tag & 0xff);
	t[1] = (char)(tag >> 8 & 0xff);
	t[2] = (char)(tag >> 16 & 0xff);
	t[3] = (char)(tag >> 24);
	t[4] = 0;
	return t;
}

/* Section tag of len bytes: its entry, or SEL_ESNAP with err. */
static int entry(const SnapEntry **out, SnapReader *r, uint32_t tag, uint64_t len, char *err)
{
	const SnapEntry *e = *out = find(r, tag);
	if (e && e->len == len) return 0;
	char what[96], t[5];
	snprintf(what, sizeof what, "section %s %s", tag_name(t, tag),
	         e ? "of another length" : "missing");
	return rfail(r->path, err, SEL_ESNAP, what);
}

int snap_section_read(const SnapSection *sec, void *buf)
{
	if (!read_at(sec->fd, buf, (size_t)sec->len, sec->off)) return SEL_EIO;
	return snap_hash(buf, (size_t)sec->len) == sec->hash ? 0 : SEL_ESNAP;
}

int snap_read(SnapReader *r, uint32_t tag, void *buf, uint64_t len, char *err)
{
	const SnapEntry *e;
	int rc = entry(&e, r, tag, len, err);
	if (rc) return rc;
	SnapSection sec = {.fd = r->fd, .off = e->off, .len = len, .hash = e->hash};
	errno = 0;
	if ((rc = snap_section_read(&sec, buf)) == 0) return 0;
	char what[96], t[5];
	if (rc == SEL_EIO)
		snprintf(what, sizeof what, "section %s: %s", tag_name(t, tag),
		         strerror(errno ? errno : EIO));
	else
		snprintf(what, sizeof what, "section %s damaged (hash)", tag_name(t, tag));
	return rfail(r->path, err, rc, what);
}

int snap_section_take(SnapSection *out, SnapReader *r, uint32_t tag, uint64_t len, char *err)
{
	const SnapEntry *e;
	int rc = entry(&e, r, tag, len, err);
	if (rc) return rc;
	int fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) return rfail(r->path, err, SEL_EIO, strerror(errno));
	*out = (SnapSection){.fd = fd, .off = e->off, .len = len, .hash = e->hash};
	return 0;
}

void snap_section_close(SnapSection *sec)
{
	if (sec->fd >= 0) close(sec->fd);
	sec->fd = -1;
}

void snap_close(SnapReader *r)
{
	if (!r) return;
	close(r->fd);
	free(r);
}

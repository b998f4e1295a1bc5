/*
 * minimax/petashock.c — YaneuraOu's "makebook peta_shock" over a compact graph.
 *
 * Every step reproduces the observable behaviour of the reference command
 * (YaneuraOu 9.80, docs/peta-shock.md), because its output is what users
 * compare against byte for byte:
 *   1. read: one node per record, stored as if Black were to move (a White
 *      record is colour-flipped, its moves too); the key map holds the
 *      White-to-move form of each record, later records overriding earlier
 *      ones with the same key; values clamped to ±32000, depths dropped;
 *   2. edges: every legal move whose child key is in the map, in (an
 *      approximation of) YaneuraOu's generation order, then the listed moves
 *      that are not edges, as leaves, in file order;
 *   3. peel: up to 256 in-place sweeps settle nodes whose moves are all leaves
 *      or settled nodes ("const" nodes);
 *   4. check loops: in-check nodes with no in-check node two plies ahead are
 *      discarded until none is (up to 256 sweeps); the survivors and the nodes
 *      between two of them are the check-loop nodes;
 *   5. start values: other unsettled nodes (0, 9999); check-loop nodes
 *      (∓32000, 9999) as seen by their parent;
 *   6. relax: up to 356 in-place sweeps over the unsettled non-loop nodes,
 *      each followed by a path-aware depth-first walk from every loop node,
 *      stopping after the first sweep that changes nothing;
 *   7. write in input order, moves sorted best first.
 * A node's vd is always the value and depth *as seen by its parent*.
 * Steps 1, 2 and 7 each run over parts of the file side by side (see the
 * driver below); their results are joined in file order.
 *
 * This file: the parallel driver (parts, threads, joins, warnings, temporary
 * files, petashock_run). The graph passes themselves (a record as a node, a
 * node's edges, a node written out) are minimax/petashock_graph.c; step 2
 * past the memory budget, a join on disk, is minimax/petashock_disk.c; what
 * they share is minimax/petashock_priv.h.
 */
#include "minimax/petashock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minimax/graph.h"
#include "minimax/petashock_priv.h"
#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/notation.h"

const char *petashock_strerror(int code)
{
	switch (code) {
	case PETASHOCK_OK:
		return "success";
	case PETASHOCK_EIO:
		return "I/O error";
	case PETASHOCK_ENOMEM:
		return "out of memory";
	case PETASHOCK_ECHANGED:
		return "input changed while reading";
	default:
		return "unknown error";
	}
}

#define fail errmsg_set

static void report(const PetashockOptions *opt, const char *phase, size_t done)
{
	if (opt && opt->progress) opt->progress(opt->progress_ctx, phase, done);
}

void ps_report(const PsRun *p, const char *phase, size_t done)
{
	report(p->opt, phase, done);
}

/* ---- driver ------------------------------------------------------------------------- */

/*
 * The input is cut into parts (db2016_split: byte ranges starting at "sfen"
 * lines), one per thread; each pass runs the parts side by side and joins
 * their results in file order, so the output does not depend on the number
 * of parts. Part 0 runs in the calling thread and alone reports progress and
 * passes warnings on as they come; the others keep theirs and hand them on
 * in order after the join.
 */
static void warnbuf_add(void *ctx, const char *msg)
{
	WarnBuf *w = ctx;
	char *copy = w->n < PS_WARN_KEEP ? strdup(msg) : NULL;
	if (!copy || array_grow((void **)&w->msg, &w->cap, w->n + 1, sizeof *w->msg, 64)) {
		free(copy);
		w->dropped++;
		return;
	}
	w->msg[w->n++] = copy;
}

void ps_run_parts(PsRun *p, void *(*fn)(void *))
{
	pthread_t tid[PS_MAX_PARTS];
	bool started[PS_MAX_PARTS] = {false};
	for (int k = 1; k < p->nparts; k++)
		started[k] = pthread_create(&tid[k], NULL, fn, &p->part[k]) == 0;
	fn(&p->part[0]);
	for (int k = 1; k < p->nparts; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else
			fn(&p->part[k]);
	}
}

int ps_parts_failed(PsRun *p)
{
	for (int k = 0; k < p->nparts; k++)
		if (p->part[k].rc < 0)
			return fail(p->err, p->errlen, p->part[k].rc, "%s", p->part[k].err);
	return 0;
}

/* Opens a reader on the part's bytes. */
static int part_open(PsPart *pt, Db2016Reader **r, unsigned flags, Db2016WarnFn warn, void *ctx)
{
	PsRun *p = pt->run;
	int rc = db2016_open(r, p->in_path, flags, warn, ctx);
	if (rc < 0)
		return ps_part_fail(pt, PETASHOCK_EIO, "%s: cannot open: %s", p->in_path,
		                    rc == DB2016_EIO ? strerror(errno) : db2016_strerror(rc));
	if (p->nparts > 1 &&
	    db2016_set_range(*r, pt->start, pt->k + 1 < p->nparts ? pt->end : UINT64_MAX,
	                     pt->first_line, pt->first_ordinal) < 0)
		return ps_part_fail(pt, PETASHOCK_EIO, "%s: cannot seek", p->in_path);
	return 0;
}

/* Pass 1 of one part: its records as nodes (key, side, leaves). */
static void *part_read_nodes(void *arg)
{
	PsPart *pt = arg;
	const PetashockOptions *opt = pt->run->opt;
	Db2016WarnFn warn = opt ? opt->warn : NULL;
	void *ctx = opt ? opt->warn_ctx : NULL;
	if (pt->k > 0 && warn) {
		warn = warnbuf_add;
		ctx = &pt->wb;
	}
	Db2016Reader *r = NULL;
	if (part_open(pt, &r, 0, warn, ctx) < 0) goto done;
	Db2016Record rec;
	int rc;
	while ((rc = db2016_next(r, &rec)) == 1) {
		if (pt->nb.n >= PS_NONE - 1) {
			ps_part_fail(pt, PETASHOCK_ENOMEM, "%s: too many positions",
			             pt->run->in_path);
			goto done;
		}
		for (size_t o = pt->nb.n + pt->nskip; o < rec.ordinal - pt->first_ordinal; o++) {
			if (array_grow((void **)&pt->skip, &pt->skip_cap, pt->nskip + 1,
			               sizeof *pt->skip, 1024)) {
				ps_part_fail(pt, PETASHOCK_ENOMEM, "out of memory");
				goto done;
			}
			pt->skip[pt->nskip++] = o;
		}
		if (pt->k == 0 && pt->nb.n % PS_PROGRESS_EVERY == 0)
			report(opt, "reading", pt->nb.n * (size_t)pt->run->nparts);
		if ((rc = ps_add_node(&pt->nb, &rec)) < 0) {
			ps_part_fail(pt, rc, "%s:%ld: %s", pt->run->in_path, rec.line,
			             petashock_strerror(rc));
			goto done;
		}
	}
	if (rc < 0) {
		ps_part_fail(pt, PETASHOCK_EIO, "%s: read error after line %ld", pt->run->in_path,
		             db2016_lines(r));
		goto done;
	}
	pt->n = pt->nb.n;
	pt->sfen_lines = db2016_sfen_lines(r);
	pt->warnings = db2016_warnings(r);
done:
	db2016_close(r);
	return NULL;
}

/* Appends n elements of size sz from src to *dst (holding have); 0 or -1. */
static int append(void **dst, size_t have, const void *src, size_t n, size_t sz)
{
	if (!n) return 0;
	void *d = bigmem_realloc(*dst, (have + n) * sz);
	if (!d) return -1;
	memcpy((char *)d + have * sz, src, n * sz);
	*dst = d;
	return 0;
}

/* Joins the parts' nodes in file order. */
static int join_nodes(PsRun *p)
{
	Graph *g = &p->g;
	NodeBuf *b0 = &p->part[0].nb;
	size_t n = 0, nleaves = 0, ordinal = 0;
	for (int k = 0; k < p->nparts; k++) {
		PsPart *pt = &p->part[k];
		pt->node0 = n;
		pt->first_ordinal = ordinal;
		n += pt->n;
		ordinal += pt->sfen_lines;
		p->st.warnings += pt->warnings;
	}
	if (n >= PS_NONE - 1)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "%s: too many positions",
		            p->in_path);
	/* Part 0's arrays become the graph's; the others are appended. */
	g->m.flags = b0->flags;
	g->lstart = b0->lstart;
	g->keys = b0->keys;
	g->leaves = b0->leaves;
	nleaves = b0->nleaves;
	b0->flags = NULL, b0->lstart = NULL, b0->keys = NULL, b0->leaves = NULL;
	if (!g->lstart && !(g->lstart = bigmem_alloc(sizeof *g->lstart)))
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	for (int k = 1; k < p->nparts; k++) {
		NodeBuf *b = &p->part[k].nb;
		size_t at = p->part[k].node0;
		if (!b->n) continue;
		for (size_t i = 0; i <= b->n; i++) b->lstart[i] += (uint32_t)nleaves;
		if (append((void **)&g->m.flags, at, b->flags, b->n, sizeof *b->flags) ||
		    append((void **)&g->keys, at, b->keys, b->n, sizeof *b->keys) ||
		    append((void **)&g->lstart, at + 1, b->lstart + 1, b->n, sizeof *b->lstart) ||
		    append((void **)&g->leaves, nleaves, b->leaves, b->nleaves, sizeof *b->leaves))
			return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
		nleaves += b->nleaves;
		ps_nodebuf_free(b);
	}
	/* lstart has n + 1 entries: lstart[node0] of a part is the previous
	 * part's end, the same as its own first offset. */
	g->m.n = n;
	for (int k = 0; k < p->nparts; k++) {
		PsPart *pt = &p->part[k];
		pt->skip0 = p->nskip;
		for (size_t j = 0; j < pt->nskip; j++) pt->skip[j] += pt->first_ordinal;
		if (append((void **)&p->skip, p->nskip, pt->skip, pt->nskip, sizeof *p->skip))
			return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
		p->nskip += pt->nskip;
		free(pt->skip);
		pt->skip = NULL;
	}
	p->st.nodes = n;
	p->st.in_check = 0;
	for (size_t i = 0; i < n; i++)
		if (g->m.flags[i] & F_CHECKED) p->st.in_check++;
	/* The key map when it fits the budget; else pass 2 joins on disk. */
	const PetashockOptions *opt = p->opt;
	p->buckets =
	    opt && opt->disk_buckets ? opt->disk_buckets : ps_disk_buckets(n, bigmem_budget());
	p->st.buckets = p->buckets;
	if (p->buckets) return 0;
	/* Later records override earlier ones with the same key: insert in order. */
	if (ps_put_all(&g->map, g->keys, n) < 0)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	if (keymap_filter_build(&g->map, g->keys) < 0)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	return 0;
}

/* Hands on the warnings the parts after the first kept. */
static void replay_warnings(PsRun *p)
{
	const PetashockOptions *opt = p->opt;
	for (int k = 1; k < p->nparts; k++) {
		WarnBuf *w = &p->part[k].wb;
		for (size_t j = 0; j < w->n; j++) {
			if (opt && opt->warn) opt->warn(opt->warn_ctx, w->msg[j]);
			free(w->msg[j]);
		}
		if (w->dropped && opt && opt->warn) {
			char msg[600];
			snprintf(msg, sizeof msg, "%s: further input problems not recorded",
			         p->in_path);
			for (size_t j = 0; j < w->dropped; j++) opt->warn(opt->warn_ctx, msg);
		}
		free(w->msg);
		memset(w, 0, sizeof *w);
	}
}

/* Cuts the input into parts. */
static int plan_parts(PsRun *p)
{
	struct stat sb;
	int want = p->opt ? p->opt->threads : 0;
	int fd = open(p->in_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		int e = errno;
		if (fd >= 0) close(fd);
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot open: %s", p->in_path,
		            strerror(e));
	}
	close(fd);
	if (S_ISDIR(sb.st_mode))
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot open: %s", p->in_path,
		            strerror(EISDIR));
	if (want <= 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		want = cpus < 1 ? 1 : (int)(cpus > PS_MAX_PARTS ? PS_MAX_PARTS : cpus);
		uint64_t by_size = (uint64_t)sb.st_size / PS_PART_MIN_BYTES;
		if ((uint64_t)want > by_size) want = by_size ? (int)by_size : 1;
	}
	if (want > PS_MAX_PARTS) want = PS_MAX_PARTS;
	if (!S_ISREG(sb.st_mode)) want = 1; /* must be seekable */
	uint64_t off[PS_MAX_PARTS + 1];
	long lines[PS_MAX_PARTS + 1];
	if (want > 1 && db2016_split(p->in_path, want, off, lines) < 0)
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: read error", p->in_path);
	p->nparts = want;
	for (int k = 0; k < want; k++) {
		PsPart *pt = &p->part[k];
		pt->run = p;
		pt->k = k;
		pt->start = want > 1 ? off[k] : 0;
		pt->end = want > 1 ? off[k + 1] : 0;
		pt->first_line = want > 1 ? lines[k] : 1;
		pt->tmp = malloc(sizeof *pt->tmp);
		pt->tmp2 = malloc(sizeof *pt->tmp2);
		if (!pt->tmp || !pt->tmp2)
			return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	}
	return 0;
}

/* Pass 1: every record as a node (its key, side, leaves); the key map. */
static int read_nodes(PsRun *p)
{
	int rc = plan_parts(p);
	if (rc < 0) return rc;
	ps_run_parts(p, part_read_nodes);
	replay_warnings(p);
	if ((rc = ps_parts_failed(p)) < 0) return rc;
	return join_nodes(p);
}

/* The next record of a later pass that pass 1 kept as a node: 1 with *rec,
 * or 0 at the end, or a negative db2016 code. */
static int next_kept(const PsRun *p, Db2016Reader *r, Db2016Record *rec, size_t *sp)
{
	int rc;
	while ((rc = db2016_next(r, rec)) == 1) {
		if (*sp < p->nskip && p->skip[*sp] == rec->ordinal) {
			(*sp)++;
			continue;
		}
		return 1;
	}
	return rc;
}

static int part_changed(PsPart *pt)
{
	return ps_part_fail(pt, PETASHOCK_ECHANGED, "%s: input changed between passes",
	                    pt->run->in_path);
}

void ps_part_each(PsPart *pt, const char *phase,
                  int (*fn)(PsPart *pt, uint32_t i, const Db2016Record *rec, void *ctx), void *ctx)
{
	PsRun *p = pt->run;
	Db2016Reader *r = NULL;
	if (part_open(pt, &r, DB2016_NO_POSITION, NULL, NULL) < 0) goto done;
	size_t sp = pt->skip0, end = pt->node0 + pt->n;
	uint32_t i = (uint32_t)pt->node0;
	Db2016Record rec;
	int rc = 0;
	while (i < end && (rc = next_kept(p, r, &rec, &sp)) == 1) {
		if (pt->k == 0 && i % PS_PROGRESS_EVERY == 0)
			report(p->opt, phase, i * (size_t)p->nparts);
		if (fn(pt, i, &rec, ctx) < 0) goto done;
		i++;
	}
	if (rc < 0 || i != end) part_changed(pt);
done:
	db2016_close(r);
}

int ps_black_position(PsPart *pt, const Db2016Record *rec, const Position **bpos)
{
	if (sfen_parse(pt->tmp, rec->sfen, NULL, NULL) < 0 ||
	    (pt->tmp->side == WHITE && ps_flip_position(pt->tmp2, pt->tmp) < 0))
		return ps_part_fail(pt, PETASHOCK_ECHANGED, "%s:%ld: input changed between passes",
		                    pt->run->in_path, rec->line);
	*bpos = pt->tmp->side == WHITE ? pt->tmp2 : pt->tmp;
	return 0;
}

/* Node i's moves (edges to other nodes, or leaves). */
static int edges_of(PsPart *pt, uint32_t i, const Db2016Record *rec, void *ctx)
{
	(void)ctx;
	const Position *bpos = NULL;
	if (ps_black_position(pt, rec, &bpos) < 0) return -1;
	int rc = ps_add_edges(&pt->run->g, pt->run->opt, i, pt->tmp, bpos, &pt->eb);
	return rc < 0 ? ps_part_fail(pt, rc, "out of memory") : 0;
}

/* Pass 2 of one part. */
static void *part_edges(void *arg)
{
	ps_part_each(arg, "edges", edges_of, NULL);
	return NULL;
}

/* Pass 2: each node's moves (edges to other nodes, or listed leaves). */
static int read_edges(PsRun *p)
{
	Graph *g = &p->g;
	g->m.vd = bigmem_alloc((g->m.n + 1) * sizeof *g->m.vd);
	g->m.mstart = bigmem_alloc((g->m.n + 1) * sizeof *g->m.mstart);
	if (!g->m.vd || !g->m.mstart)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	g->m.mstart[0] = 0;
	/* Most moves are the listed leaves plus about one edge per node: reserve
	 * that much at once rather than doubling through it. */
	for (int k = 0; k < p->nparts; k++) {
		PsPart *pt = &p->part[k];
		size_t want = g->lstart[pt->node0 + pt->n] - g->lstart[pt->node0] + pt->n + 1;
		if (bigmem_grow((void **)&pt->eb.moves, &pt->eb.cap, want, sizeof *pt->eb.moves,
		                1024))
			return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	}
	int rc = p->buckets ? ps_disk_join(p) : 0;
	if (rc < 0) return rc;
	ps_run_parts(p, p->buckets ? ps_disk_part_edges : part_edges);
	ps_disk_free(p);
	if ((rc = ps_parts_failed(p)) < 0) return rc;
	/* Part 0's moves become the graph's; the others are appended, their
	 * offsets made global. */
	g->m.moves = p->part[0].eb.moves;
	g->m.moves_cap = p->part[0].eb.cap;
	g->m.nmoves = p->part[0].eb.n;
	p->part[0].eb.moves = NULL;
	for (int k = 0; k < p->nparts; k++) {
		PsPart *pt = &p->part[k];
		p->st.converged_moves += pt->eb.converged;
		p->st.left_out += pt->eb.left_out;
		if (k == 0) continue;
		for (size_t i = pt->node0; i < pt->node0 + pt->n; i++)
			g->m.mstart[i + 1] += (uint32_t)g->m.nmoves;
		if (bigmem_grow((void **)&g->m.moves, &g->m.moves_cap, g->m.nmoves + pt->eb.n,
		                sizeof *g->m.moves, 1024))
			return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
		memcpy(g->m.moves + g->m.nmoves, pt->eb.moves, pt->eb.n * sizeof *g->m.moves);
		g->m.nmoves += pt->eb.n;
		bigmem_free(pt->eb.moves);
		pt->eb.moves = NULL;
	}
	bigmem_free(g->leaves);
	g->leaves = NULL;
	bigmem_free(g->lstart);
	g->lstart = NULL;
	bigmem_free(g->keys);
	g->keys = NULL;
	keymap_free(&g->map);
	p->st.moves = g->m.nmoves;
	for (size_t k = 0; k < g->m.nmoves; k++)
		if (g->m.moves[k].next != PS_NONE) p->st.edges++;
	return 0;
}

/* The back-up over the graph (YaneuraOu's peel order). */
static int analyse(PsRun *p)
{
	p->g.m.yo_peel = true;
	report(p->opt, "peel", 0);
	MmStats ms;
	if (mm_backup(&p->g.m, &ms) < 0)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	p->st.peel_sweeps = ms.peel_sweeps;
	p->st.relax_sweeps = ms.relax_sweeps;
	p->st.const_nodes = ms.const_nodes;
	p->st.check_loop1 = ms.check_loop1;
	p->st.check_loop2 = ms.check_loop2;
	return 0;
}

/* Node i with its backed-up values, to the part's output. */
static int write_of(PsPart *pt, uint32_t i, const Db2016Record *rec, void *ctx)
{
	const PsRun *p = pt->run;
	if (ps_write_node(pt->out, &p->g, i, rec->sfen, rec->sfen_len, p->opt && p->opt->shrink,
	                  ctx) < 0)
		return ps_part_fail(pt, PETASHOCK_EIO, "%s: write error: %s", pt->run->out_path,
		                    strerror(errno));
	return 0;
}

/* Pass 3 of one part: its records with the backed-up values, to pt->out. */
static void *part_write(void *arg)
{
	PsPart *pt = arg;
	const Graph *g = &pt->run->g;
	size_t maxm = 1;
	for (size_t i = pt->node0; i < pt->node0 + pt->n; i++)
		if (g->m.mstart[i + 1] - g->m.mstart[i] > maxm)
			maxm = g->m.mstart[i + 1] - g->m.mstart[i];
	OutMove *obuf = malloc(maxm * sizeof *obuf);
	if (!obuf) {
		ps_part_fail(pt, PETASHOCK_ENOMEM, "out of memory");
		return NULL;
	}
	ps_part_each(pt, "writing", write_of, obuf);
	if (pt->rc == 0 && fflush(pt->out) != 0)
		ps_part_fail(pt, PETASHOCK_EIO, "%s: write error: %s", pt->run->out_path,
		             strerror(errno));
	free(obuf);
	return NULL;
}

/* Appends the whole of file `from` (open for reading at its start) to `to`. */
static int append_file(int to, int from)
{
	for (;;) {
		ssize_t n = copy_file_range(from, NULL, to, NULL, 1 << 30, 0);
		if (n == 0) return 0;
		if (n > 0) continue;
		if (errno == EINTR) continue;
		break; /* not supported here: copy by hand */
	}
	char *buf = malloc(1 << 20);
	if (!buf) return -1;
	int rc = 0;
	for (;;) {
		ssize_t n = read(from, buf, 1 << 20);
		if (n == 0) break;
		if (n < 0) {
			if (errno == EINTR) continue;
			rc = -1;
			break;
		}
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(to, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR) continue;
			if (k <= 0) {
				rc = -1;
				break;
			}
			w += k;
		}
		if (rc < 0) break;
	}
	free(buf);
	return rc;
}

/* What would stop the output being written at the end, found before the
 * work: OUT a directory, or its directory not one this process can write in. */
static int check_output(PsRun *p)
{
	int e = bigmem_output_blocked(p->out_path);
	if (e == EISDIR)
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot write: %s", p->out_path,
		            strerror(EISDIR));
	if (e)
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot create: %s", p->out_path,
		            strerror(e));
	/* OUT the input itself: the rename at the end would replace the book
	 * read, and the input is then lost if the output is not what was meant. */
	struct stat si, so;
	if (stat(p->in_path, &si) == 0 && stat(p->out_path, &so) == 0 && si.st_dev == so.st_dev &&
	    si.st_ino == so.st_ino)
		return fail(p->err, p->errlen, PETASHOCK_EIO,
		            "%s: is the input: give the output another name", p->out_path);
	return 0;
}

/* Part 0's output file, which becomes OUT: made without a name in dir
 * (O_TMPFILE) and linked as path only when whole, so that a run killed at any
 * moment leaves nothing; where that cannot be done, named path from the
 * start (*named). A descriptor, or -1. */
static int output_fd(const char *dir, const char *path, bool *named)
{
#ifdef O_TMPFILE
	if (access("/proc/self/fd", X_OK) == 0) {
		int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
		if (fd >= 0) {
			*named = false;
			return fd;
		}
	}
#endif
	*named = true;
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
}

/* Gives the unnamed file fd the name path: 0, or -1 with errno (EEXIST when
 * path is taken). */
static int name_fd(int fd, const char *path)
{
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

/* Pass 3: the book with the backed-up values, to OUT.tmp<pid> (unnamed until
 * whole where the file system allows) renamed over out_path when whole; each
 * part after the first writes an unnamed temporary file, appended in order. */
static int write_book(PsRun *p)
{
	int rc = 0;
	char dir[4096];
	bigmem_dir_of(dir, sizeof dir, p->out_path);
	/* OUT.tmp<pid>: part 0's file's name before it becomes OUT, when it
	 * has one. */
	size_t plen = strlen(p->out_path) + 48;
	char *tmp = malloc(plen);
	if (!tmp) return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	snprintf(tmp, plen, "%s.tmp%ld", p->out_path, (long)getpid());
	bool named = true;
	for (int k = 0; k < p->nparts && !rc; k++) {
		PsPart *pt = &p->part[k];
		int fd = k ? bigmem_temp_fd(dir) : output_fd(dir, tmp, &named);
		if (fd < 0 || !(pt->out = fdopen(fd, k ? "w+b" : "wb"))) {
			rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot create: %s",
			          k ? dir : p->out_path, strerror(errno));
			if (fd >= 0) close(fd);
			if (k == 0 && named && fd >= 0) remove(tmp);
			break;
		}
		setvbuf(pt->out, NULL, _IOFBF, 1 << 20);
	}
	char header[DB2016_LINE_MAX];
	size_t hl = db2016_format_header(header, p->g.m.n);
	if (!rc && fwrite(header, 1, hl, p->part[0].out) != hl)
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error: %s", p->out_path,
		          strerror(errno));
	if (!rc) {
		ps_run_parts(p, part_write);
		rc = ps_parts_failed(p);
	}
	FILE *out = p->part[0].out;
	for (int k = 1; k < p->nparts && !rc; k++) {
		PsPart *pt = &p->part[k];
		if (fflush(out) != 0 || fseeko(pt->out, 0, SEEK_SET) != 0 ||
		    append_file(fileno(out), fileno(pt->out)) < 0)
			rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error: %s",
			          p->out_path, strerror(errno));
	}
	for (int k = p->nparts - 1; k >= 1; k--)
		if (p->part[k].out) fclose(p->part[k].out), p->part[k].out = NULL;
	PsPart *p0 = &p->part[0];
	if (!out) {
		free(tmp);
		return rc;
	}
	bool has_name = named;
	if (!rc && fflush(out) != 0)
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error: %s", p->out_path,
		          strerror(errno));
	/* The unnamed file takes OUT's name at once when OUT is not there; else
	 * OUT.tmp<pid>'s, renamed over OUT (a kill between the two leaves that
	 * whole file). */
	bool done = false;
	if (!rc && !named) {
		if (name_fd(fileno(out), p->out_path) == 0) {
			done = true;
		} else if (errno == EEXIST) {
			unlink(tmp); /* a killed run's, with this pid */
			if (name_fd(fileno(out), tmp) == 0) has_name = true;
		}
		if (!done && !has_name)
			rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot create: %s",
			          p->out_path, strerror(errno));
	}
	int closed = fclose(out);
	p0->out = NULL;
	if (!rc && closed != 0)
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error: %s", p->out_path,
		          strerror(errno));
	if (done && rc) remove(p->out_path);
	if (!rc && !done && rename(tmp, p->out_path) != 0)
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot rename to %s: %s", tmp,
		          p->out_path, strerror(errno));
	if (rc && has_name) remove(tmp);
	free(tmp);
	return rc;
}

int petashock_run(PetashockStats *stats, const char *in_path, const char *out_path,
                  const PetashockOptions *opt, char *err)
{
	const size_t errlen = PETASHOCK_ERRLEN;
	PsRun *p = calloc(1, sizeof *p);
	if (!p) return fail(err, errlen, PETASHOCK_ENOMEM, "out of memory");
	p->in_path = in_path;
	p->out_path = out_path;
	p->opt = opt;
	p->err = err;
	p->errlen = errlen;
	double t = clock_ms_f(), t2;
	int rc = check_output(p);
	if (!rc) rc = read_nodes(p);
	p->st.read_ms = (t2 = clock_ms_f()) - t;
	if (!rc) rc = read_edges(p);
	p->st.edges_ms = (t = clock_ms_f()) - t2;
	if (!rc) rc = analyse(p);
	p->st.analyse_ms = (t2 = clock_ms_f()) - t;
	if (!rc) rc = write_book(p);
	p->st.write_ms = clock_ms_f() - t2;
	for (int k = 0; k < PS_MAX_PARTS; k++) {
		PsPart *pt = &p->part[k];
		ps_nodebuf_free(&pt->nb);
		free(pt->skip);
		for (size_t j = 0; j < pt->wb.n; j++) free(pt->wb.msg[j]);
		free(pt->wb.msg);
		bigmem_free(pt->eb.moves);
		free(pt->tmp);
		free(pt->tmp2);
	}
	ps_disk_free(p);
	ps_graph_free(&p->g);
	bigmem_free(p->skip);
	if (stats) *stats = p->st;
	free(p);
	return rc;
}

/*
 * tests/fuzz/fuzz_selector_snap.c — libFuzzer target for the selector's
 * snapshot (bookgen/snapshot.h, selector_snap.c, plan.c): a coordinator
 * restarted over its book reads the file back, so damaged bytes must be
 * refused (SEL_ESNAP), never a crash, a loop or a read out of bounds.
 *
 * Once: a small synthetic book, a selector grown over it (selections and
 * results), and its snapshot's sections. Each input rewrites one section
 * and the file is written again with correct hashes, so that the sections'
 * own checks are what is tested (a damaged file's hashes are the tests'
 * business): byte 0 picks the section, byte 1 whether the rest replaces it
 * or overwrites it at the offset in bytes 2-3. What restores is then used:
 * up to 8 leaves selected, each leased, and the snapshot written again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/synth.h"
#include "bookgen/plan.h"
#include "bookgen/snapshot.h"
#include "shogi/position.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint32_t TAGS[] = {SNAP_TAG('S', 'E', 'L', 'H'), SNAP_TAG('S', 'E', 'L', 'N'),
                                SNAP_TAG('S', 'E', 'L', 'E'), SNAP_TAG('S', 'E', 'L', 'L'),
                                SNAP_TAG('S', 'E', 'L', 'P'), SNAP_TAG('S', 'E', 'L', 'R'),
                                SNAP_TAG('S', 'E', 'L', 'B'), SNAP_TAG('P', 'L', 'A', 'N')};
#define NTAGS (sizeof TAGS / sizeof TAGS[0])

static char dir[64], path[128];
static BookDB *db;
static uint8_t *sec[NTAGS];
static uint64_t seclen[NTAGS];
static PlanOptions popt;

/* A selector and plan over db: restored from r, or new (r NULL). */
static int open_sel(Selector **sel, Plan **plan, SnapReader *r)
{
	*sel = NULL;
	*plan = NULL;
	if (sel_new(sel, NULL) < 0) return -1;
	int rc = r ? sel_restore(*sel, db, r, NULL) : sel_attach(*sel, db, NULL);
	if (!rc) rc = plan_new(plan, *sel, &popt, NULL, NULL, 0, NULL);
	if (!rc && r) rc = plan_restore(*plan, r, NULL);
	return rc;
}

static void close_sel(Selector *sel, Plan *plan)
{
	plan_free(plan);
	sel_free(sel);
}

/* Up to n leaves, each leased (a damaged graph may give leaves of no use,
 * never a crash). */
static void select_some(Selector *sel, Plan *plan, int n)
{
	SelLeaf *leaf = malloc(sizeof *leaf);
	Position *pos = malloc(sizeof *pos);
	if (!leaf || !pos) abort();
	for (int i = 0; i < n; i++) {
		if (plan_next(plan, leaf, pos) != 1) break;
		if (sel_lease(sel, leaf->key) < 0) break;
	}
	free(leaf);
	free(pos);
}

static int write_snap(Selector *sel, Plan *plan)
{
	BookStamp st;
	SnapWriter *w;
	if (bookdb_stamp(&st, db) < 0 || snap_create(&w, path, &st, 0, NULL) < 0) return -1;
	if (sel_snapshot_write(sel, w) < 0 || plan_snapshot_write(plan, w) < 0) {
		snap_abort(w);
		return -1;
	}
	return snap_commit(w, NULL);
}

static void setup(void)
{
	shogi_init();
	snprintf(dir, sizeof dir, "/tmp/fuzz_selector_snap_%ld", (long)getpid());
	fuzz_tmp_at_exit(dir, 1);
	snprintf(path, sizeof path, "%s/%s", dir, SNAP_FILE);
	plan_options_init(&popt);
	popt.mode = PLAN_PV;
	BookSynthOptions so = {.positions = 400, .seed = 3};
	BookSynthStats st;
	if (bookdb_open(&db, dir, NULL, NULL) < 0 || bookdb_synth(&st, db, &so, NULL) < 0) abort();
	Selector *sel;
	Plan *plan;
	if (open_sel(&sel, &plan, NULL) < 0) abort();
	select_some(sel, plan, 20);
	if (write_snap(sel, plan) < 0) abort();
	close_sel(sel, plan);
	BookStamp bs;
	SnapReader *r;
	if (bookdb_stamp(&bs, db) < 0 || snap_open(&r, path, &bs, NULL) < 0) abort();
	for (size_t i = 0; i < NTAGS; i++) {
		if (!snap_has(r, TAGS[i], &seclen[i])) abort();
		sec[i] = malloc(seclen[i] + 1);
		if (!sec[i] || snap_read(r, TAGS[i], sec[i], seclen[i], NULL) < 0) abort();
	}
	snap_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!db) setup();
	if (size < 4) return 0;
	size_t t = data[0] % NTAGS;
	bool replace = data[1] & 1;
	size_t off = (size_t)data[2] | (size_t)data[3] << 8;
	const uint8_t *rest = data + 4;
	size_t nrest = size - 4;
	/* The file again, section t changed, every hash right. */
	BookStamp st;
	SnapWriter *w;
	if (bookdb_stamp(&st, db) < 0 || snap_create(&w, path, &st, 0, NULL) < 0) abort();
	for (size_t i = 0; i < NTAGS; i++) {
		if (snap_section(w, TAGS[i]) < 0) abort();
		if (i != t) {
			if (snap_write(w, sec[i], seclen[i]) < 0) abort();
		} else if (replace) {
			if (snap_write(w, rest, nrest) < 0) abort();
		} else {
			uint8_t *b = malloc(seclen[i] + 1);
			if (!b) abort();
			memcpy(b, sec[i], seclen[i]);
			for (size_t k = 0; k < nrest && seclen[i]; k++)
				b[(off + k) % seclen[i]] = rest[k];
			if (snap_write(w, b, seclen[i]) < 0) abort();
			free(b);
		}
	}
	if (snap_commit(w, NULL) < 0) abort();
	SnapReader *r;
	if (snap_open(&r, path, &st, NULL) < 0) abort();
	Selector *sel;
	Plan *plan;
	int rc = open_sel(&sel, &plan, r);
	snap_close(r);
	if (rc == 0) {
		select_some(sel, plan, 8);
		(void)write_snap(sel, plan);
	}
	close_sel(sel, plan);
	return 0;
}

/*
 * tests/fuzz/fuzz_kif_tree.c — libFuzzer target for the KIF and KI2 readers'
 * trees (ingest/kif.c with kifu_reader_want_tree): the first byte picks the
 * format, the rest is the record. Beyond kifu_input.h's invariants for the
 * main line: every node follows an earlier node or the start, its comment
 * lies inside the tree's text, the main line's moves are the first nodes,
 * each after the one before, and every node's move is legal in the position
 * its line reaches from the start.
 */
#include "tests/fuzz/kifu_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Position tpos; /* large: not on the stack */

/* Sets tpos to the position before node i (its parents' moves from the
 * start); false when a move on the way is not legal. */
static bool before_node(const KifuRecord *rec, size_t i)
{
	static Move path[1 << 16];
	size_t d = 0;
	for (uint32_t p = rec->tree[i].parent; p != KIFU_TREE_ROOT; p = rec->tree[p].parent) {
		if (p >= i || d >= sizeof path / sizeof *path) abort();
		path[d++] = rec->tree[p].move;
	}
	if (kifu_record_position(&tpos, rec, NULL) != 0) return false;
	while (d-- > 0) {
		if (!pos_is_legal(&tpos, path[d]) || pos_history_len(&tpos) >= POS_MAX_STATES - 1)
			return false;
		pos_do_move(&tpos, path[d]);
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	if (size < 1 || size > 65536) return 0;
	KifuFormat format = data[0] & 1 ? KIFU_KI2 : KIFU_KIF;
	unsigned char *copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy) return 0;
	memcpy(copy, data + 1, size - 1);
	KifuReader *r;
	if (kifu_reader_open_mem_as(&r, copy, size - 1, "fuzz", format) != 0) {
		free(copy);
		return 0;
	}
	kifu_reader_want_tree(r, true);
	KifuRecord *rec;
	int rc = kifu_reader_next(r, &rec);
	if (rc == KIFU_EPARSE && strncmp(kifu_reader_error(r), "fuzz:", 5) != 0) abort();
	if (rc == 1) {
		if (rec->start_comment_off + (size_t)rec->start_comment_len > rec->tree_text_len &&
		    rec->start_comment_len)
			abort();
		if (rec->ntree < rec->nmoves) abort();
		for (size_t i = 0; i < rec->ntree; i++) {
			const KifuNode *nd = &rec->tree[i];
			if (nd->parent != KIFU_TREE_ROOT && nd->parent >= i) abort();
			if (nd->comment_len &&
			    (size_t)nd->comment_off + nd->comment_len > rec->tree_text_len)
				abort();
			if (i < rec->nmoves &&
			    (nd->move != rec->moves[i].move ||
			     nd->parent != (i ? (uint32_t)(i - 1) : KIFU_TREE_ROOT)))
				abort();
			if (before_node(rec, i) && !pos_is_legal(&tpos, nd->move)) abort();
		}
		kifu_record_free(rec);
	}
	kifu_reader_free(r);
	free(copy);
	return 0;
}

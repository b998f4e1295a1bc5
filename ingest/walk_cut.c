/*
 * ingest/walk_cut.c — one input cut into parts under the bounds of walk.h
 * (docs/ingest.md, "Limits"): a NUL byte, a line longer than WALK_LINE_MAX
 * (JKF's excepted), a record longer than WALK_RECORD_MAX end the input; a CSA
 * or USI input is cut just after a record ("/" line, USI line) once
 * WALK_PART_BYTES are whole, so that the walker never holds more than one
 * record and a part of the input, whatever its size.
 *
 * Lines end as the readers' do (kifu_next_line): LF, CR LF or a CR alone, so
 * that a part's first line (WalkCut.part_line) is the line the readers count.
 */
#include "ingest/walk.h"

#include <stdio.h>
#include <string.h>

#include "shogi/errmsg.h"

void walk_cut_init(WalkCut *c, const char *name)
{
	memset(c, 0, sizeof *c);
	c->name = name;
	c->format = -1;
	c->first = 1;
}

static bool multi_record(const WalkCut *c)
{
	return c->format == KIFU_CSA || c->format == KIFU_USI;
}

/* The input stops at the line under way, for why. */
static void fail(WalkCut *c, const char *why)
{
	c->failed = true;
	c->err_line = c->first + c->lines;
	errmsg_set(c->err, sizeof c->err, 0, "%s (the rest of this input is not read)", why);
}

/* A line ended at end (the byte after its end): after a USI line or a CSA "/"
 * line, the input may be cut there. */
static void end_line(WalkCut *c, size_t end)
{
	c->lines++;
	if (c->format == KIFU_USI || (c->format == KIFU_CSA && c->sep == 1)) {
		c->cut = end;
		c->cut_lines = c->lines;
	}
	c->line_len = 0;
	c->sep = 0;
}

/* True once the buffer holds a part: the scan stops at the first cut past
 * WALK_PART_BYTES, so that the parts do not depend on how the input was read. */
static bool part_ready(const WalkCut *c)
{
	return multi_record(c) && c->cut >= WALK_PART_BYTES;
}

/* A line ended at end; true when the scan stops there (a part is ready). */
static bool ended(WalkCut *c, size_t end)
{
	end_line(c, end);
	if (!part_ready(c)) return false;
	c->scanned = end;
	return true;
}

static void scan(WalkCut *c, const unsigned char *b, size_t len, bool eof)
{
	bool jkf = c->format == KIFU_JKF;
	for (size_t i = c->scanned; i < len; i++) {
		unsigned char ch = b[i];
		if (c->cr) {
			c->cr = false;
			if (ch == '\n') {
				if (ended(c, i + 1)) return;
				continue;
			}
			if (ended(c, i)) return;
		}
		if (ch == '\n') {
			if (ended(c, i + 1)) return;
			continue;
		}
		if (ch == '\r') {
			c->cr = true;
			continue;
		}
		c->scanned = i;
		if (ch == 0) {
			/* UTF-16 text (a byte-order mark, or an ASCII letter then NUL
			 * at the input's start): said so, with how to convert it. */
			bool utf16 =
			    c->lines == 0 && c->first <= 1 && i >= 1 &&
			    ((b[0] == 0xff && b[1] == 0xfe) || (b[0] == 0xfe && b[1] == 0xff) ||
			     (i == 1 && b[0] >= 0x20 && b[0] < 0x7f));
			return fail(c, utf16 ? "a NUL byte: UTF-16 text, not UTF-8 or Shift_JIS "
			                       "(iconv -f UTF-16 -t UTF-8 converts it)"
			                     : "a NUL byte: binary data, not game records");
		}
		if (++c->line_len > WALK_LINE_MAX && !jkf)
			return fail(c, "a line longer than 1 MiB: not game records");
		if (c->line_len == 1)
			c->sep = ch == '/' ? 1 : 2;
		else if (c->sep == 1 && ch != ' ' && ch != '\t')
			c->sep = 2;
		/* (A one-game format's record is the whole input: cut stays 0.) */
		if (i + 1 - c->cut > WALK_RECORD_MAX) {
			char why[120];
			if (multi_record(c))
				errmsg_set(
				    why, sizeof why, 0,
				    "a record longer than 16 MiB (from line %llu): not a game "
				    "record",
				    (unsigned long long)(c->first + c->cut_lines));
			else
				errmsg_set(
				    why, sizeof why, 0,
				    "longer than 16 MiB: not a game record (a %s file holds one "
				    "game)",
				    c->format == KIFU_JKF   ? "JKF"
				    : c->format == KIFU_KI2 ? "KI2"
				                            : "KIF");
			return fail(c, why);
		}
	}
	c->scanned = len;
	if (eof && c->cr) {
		c->cr = false;
		end_line(c, len);
	}
}

/* buf[0..n) is the next part: the state moves past it. */
static int emit(WalkCut *c, size_t n, uint64_t lines, size_t *part)
{
	*part = n;
	c->part_line = c->first > (uint64_t)INT32_MAX ? INT32_MAX : (int)c->first;
	c->first += lines;
	c->lines -= lines;
	c->scanned -= n;
	c->cut = 0;
	c->cut_lines = 0;
	return WALK_CUT_PART;
}

/* Whether the input starts as a YaneuraOu book does (its header, after a
 * byte order mark): its "sfen" and move lines read as USI games would make
 * positions and game counts no game had. */
static bool yaneuraou_book(const char *buf, size_t len)
{
	static const char H[] = "#YANEURAOU-DB";
	size_t off = len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
	return len - off >= sizeof H - 1 && memcmp(buf + off, H, sizeof H - 1) == 0;
}

int walk_cut_next(WalkCut *c, const char *buf, size_t len, bool eof, size_t *part)
{
	*part = 0;
	if (c->failed) {
		/* The whole records before the failure go first. */
		if (c->cut) return emit(c, c->cut, c->cut_lines, part);
		return WALK_CUT_ERROR;
	}
	if (c->format < 0) {
		/* The format, from as much of the start as a part holds. */
		if (len < WALK_PART_BYTES && !eof) return WALK_CUT_MORE;
		c->format = (int)kifu_sniff(buf, len, c->name);
		if (yaneuraou_book(buf, len)) {
			fail(c,
			     "a YaneuraOu book (its #YANEURAOU-DB2016 header), not game records: "
			     "joseki import BOOK FILE reads it");
			return walk_cut_next(c, buf, len, eof, part);
		}
	}
	scan(c, (const unsigned char *)buf, len, eof);
	if (c->failed) return walk_cut_next(c, buf, len, eof, part);
	if (part_ready(c)) return emit(c, c->cut, c->cut_lines, part);
	if (eof) {
		if (!len) return WALK_CUT_END;
		/* The rest, whole: its line ends are all counted (a last line
		 * without one is the next part's first, and there is none). */
		return emit(c, len, c->lines, part);
	}
	return WALK_CUT_MORE;
}

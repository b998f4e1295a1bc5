/*
 * ingest/kifu.h — the one reader of game records (棋譜, kifu), whatever their
 * format: CSA (V1..V3.0 and floodgate's dialect, docs/csa.md), KIF and KI2
 * (Shift_JIS, EUC-JP or UTF-8), JKF (JSON Kifu Format) and USI game lines
 * ("startpos moves ...", "sfen ... moves ...", optionally "<id>\t" first).
 * The format is sniffed from the content (the name only breaks ties); see
 * docs/ingest.md, "Formats".
 *
 * Every format becomes the same KifuRecord: the game information, the start
 * position as a board, hands and side, the moves (as CSA tokens, with their
 * line, time and engine evaluation), and the ending the record claims
 * (shogi/gameend.h). ingest/replay.h replays a record under the rules.
 *
 * CSA is read as bytes, never as text (names and comments are copied through
 * unchanged) and its moves are checked by the replay. The other formats are
 * read as text (KIF and KI2 decoded to UTF-8: a BOM or valid UTF-8 is UTF-8,
 * valid EUC-JP is EUC-JP, anything else Shift_JIS/CP932, whatever a header
 * says) and their moves are
 * resolved while reading (KI2's 同 and 右/左/上... need the position): a move
 * that names no legal move ends the record's moves there, and the record
 * says so (KifuRecord.illegal), so that the replay reports it like an illegal
 * CSA move. KIF, KI2 and JKF branches (変化, forks) are not read: the main
 * line is, and the record counts what it left out — unless the reader is
 * asked for the tree (kifu_reader_want_tree): KIF and KI2 records then also
 * hold every move of every variation and every comment (KifuRecord.tree).
 *
 * A record that cannot be read is reported (kifu_reader_error names the input
 * and its line) and skipped: the next call goes on with the following record.
 */
#ifndef INGEST_KIFU_H
#define INGEST_KIFU_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shogi/gameend.h"
#include "shogi/position.h"

/* Error codes (negative). */
enum {
	KIFU_OK = 0,
	KIFU_EPARSE = ERR_KIFU - 0,  /* a malformed record; kifu_reader_error says where */
	KIFU_ENOMEM = ERR_KIFU - 1,  /* out of memory */
	KIFU_EIO = ERR_KIFU - 2,     /* the input file could not be read */
	KIFU_EILLEGAL = ERR_KIFU - 3 /* the start position is impossible (pos_set refused it) */
};
const char *kifu_strerror(int code);

/* Length of the reader's error messages (NUL included). */
#define KIFU_ERRLEN 256

typedef enum {
	KIFU_CSA = 0,
	KIFU_KIF,
	KIFU_KI2,
	KIFU_JKF,
	KIFU_USI, /* one game a line */
} KifuFormat;

/* "csa", "kif", "ki2", "jkf", "usi". */
const char *kifu_format_name(KifuFormat f);

/* One move of a record. */
typedef struct {
	char token[8];   /* "+7776FU": always 7 characters and a NUL */
	int line;        /* 1-based line of the input it was read from (JKF: 0) */
	int time_ms;     /* the time it took; -1 if none */
	bool has_eval;   /* CSA: a "'** <score> ..." comment follows the move */
	bool book;       /* "'** 0" with no PV: a book move, not an evaluation */
	int32_t eval;    /* raw score, from Black's point of view (clamped to int32) */
	uint32_t pv_off; /* the PV text after the score: KifuRecord.text + pv_off */
	uint32_t pv_len; /* its length (0 when there is none) */
	Move move; /* the move, as the reader resolved it (all formats but CSA); else MOVE_NONE */
} KifuMove;

/*
 * One move of a record's tree (KifuRecord.tree): the move, the node it
 * follows (KIFU_TREE_ROOT: the start position), and its comment (the '*'
 * lines after it, without the '*', joined by '\n'; in KifuRecord.tree_text).
 * A node's children are the moves after it in the order the record gives
 * them: its main continuation first, then its variations (変化) as they come.
 */
#define KIFU_TREE_ROOT UINT32_MAX
typedef struct {
	Move move;
	uint32_t parent;
	uint32_t comment_off, comment_len;
	int line; /* its line in the input */
} KifuNode;

/*
 * One game record. All strings are NUL-terminated (NULL when the record does
 * not have them): bytes exactly as in the input for CSA, UTF-8 for the other
 * formats. Owned by the caller, freed with kifu_record_free().
 */
typedef struct {
	KifuFormat format;
	int first_line;          /* line of the record's first statement */
	char *version;           /* CSA's "V2.2" ... */
	char *name[COLOR_NB];    /* CSA N+ / N-; KIF 先手/下手, 後手/上手; JKF's header */
	char *event;             /* CSA $EVENT:, or a USI line's "<id>" */
	char *start_time;        /* CSA $START_TIME:, KIF 開始日時 */
	char *time_limit;        /* CSA $TIME_LIMIT: or V3.0's $TIME:, KIF 持ち時間 */
	char *summary;           /* floodgate's "'summary:..." without the "'summary:" */
	bool has_rate[COLOR_NB]; /* floodgate's 'black_rate: / 'white_rate: present */
	double rate[COLOR_NB];   /* the number after the line's last ':' */
	int max_moves;           /* "'Max_Moves:N" or V3.0's "$MAX_MOVES:N"; 0 when absent */

	/* Start position: a board, hands and the side to move. */
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	bool has_position; /* the record gave one (else the even game) */
	int start_ply;     /* the move number of the start position (0 or 1: the first move) */

	KifuMove *moves;
	size_t nmoves;

	GameClaim end;    /* the ending the record claims; GAME_CLAIM_NONE if none */
	char special[24]; /* its word as CSA spells it ("TORYO"); KIF's own word when it has none */
	int end_line;     /* its line (0 if none) */
	int end_time_ms;  /* the time that goes with it; -1 if none */

	int variations; /* branches of the record left unread (KIF/KI2 変化, JKF forks) */
	char *illegal; /* a move the reader could not make: "illegal move ▲５八金右 (why)"; the
	                  moves stop before it (NULL: none) */
	int illegal_line;
	bool too_long; /* illegal says the game is longer than the rules core holds: the
	                  replay rejects the record rather than end it there */
	bool cut;      /* illegal says a move line could not be read (a CSA record damaged or cut
	                  short in a line): the moves before it are the game, which has no result */
	int second_game_line; /* KIF, KI2: where a second game's header began after this
	                         game's moves (nothing from it on was read); 0: none */

	char *text; /* storage for the PVs (see KifuMove.pv_off) */
	size_t text_len;

	/* The tree (KIF and KI2 read with kifu_reader_want_tree; else empty):
	 * every move of the main line and of the variations, in the order read
	 * (a parent before its children). start_comment: the comment before the
	 * first move (the start position's). A variation that names no move of a
	 * line before it, or whose move is illegal, ends there; the record's
	 * illegal says so when nothing else did. */
	KifuNode *tree;
	size_t ntree;
	char *tree_text;
	size_t tree_text_len;
	uint32_t start_comment_off, start_comment_len;
} KifuRecord;

void kifu_record_free(KifuRecord *rec);

/* The PV text of move i (pointer into rec->text; not NUL-terminated), length in *len. */
const char *kifu_move_pv(const KifuRecord *rec, size_t i, size_t *len);

/*
 * Sets pos to the record's start position (move number start_ply, else 1). Returns 0, or
 * KIFU_EILLEGAL with a message in err (SHOGI_ERRLEN bytes, may be NULL) when
 * the position cannot occur.
 */
JOSEKI_MUST_USE int kifu_record_position(Position *pos, const KifuRecord *rec, char *err);

/*
 * The move limit that applies to the record: its 'Max_Moves comment, else
 * 256 for a floodgate CSA record ($EVENT starting "wdoor+floodgate"), else 0
 * (none).
 */
JOSEKI_MUST_USE int kifu_record_max_moves(const KifuRecord *rec);

/*
 * The format buf holds, from its content: JSON is JKF; Japanese headers, a
 * board diagram or moves like "７六歩(77)" are KIF, "▲７六歩" KI2; CSA
 * statements are CSA; "startpos", "sfen ", "position ", "<id>\t" or a
 * bare SFEN first are USI lines. The name's extension (.csa .kif .kifu .ki2
 * .ki2u .jkf .json .usi .sfen) decides only what the content leaves open;
 * anything else is read as CSA (whose reader then says what is wrong).
 */
KifuFormat kifu_sniff(const void *buf, size_t len, const char *name);

typedef struct KifuReader KifuReader;

/*
 * Opens a reader over buf[0..len), its format sniffed. The bytes are not
 * copied: buf must stay valid and unchanged until kifu_reader_free(). name is
 * the input's name used in error messages (copied). Returns 0 or KIFU_ENOMEM.
 */
JOSEKI_MUST_USE int kifu_reader_open_mem(KifuReader **out, const void *buf, size_t len,
                                         const char *name);
/* The same, in the given format (tests, fuzzing). */
JOSEKI_MUST_USE int kifu_reader_open_mem_as(KifuReader **out, const void *buf, size_t len,
                                            const char *name, KifuFormat format);

/* Numbers the reader's lines from line (a part of a larger input that starts
 * there, walk.h; 1 by default). Call before the first kifu_reader_next. */
void kifu_reader_first_line(KifuReader *r, int line);

/* The most moves a record keeps: one past what the rules core replays
 * (POS_MAX_STATES - 1 plies), so that the replay says where the game is too
 * long; the reader skips the moves after them. */
#define KIFU_MOVES_MAX POS_MAX_STATES

/*
 * Reads the whole stream f into a malloc'd buffer (*out, the caller's to
 * free; *len bytes). Returns 0, KIFU_EIO (errno tells why) or KIFU_ENOMEM.
 */
JOSEKI_MUST_USE int kifu_read_all(void **out, size_t *len, FILE *f);

/* Reads a whole file and opens a reader over it (the reader owns the bytes).
 * Returns 0, KIFU_EIO (errno tells why) or KIFU_ENOMEM. */
JOSEKI_MUST_USE int kifu_reader_open_file(KifuReader **out, const char *path);

/*
 * Reads the next record into *out (the caller's, free with kifu_record_free).
 * Returns 1 with a record (as every iterator of the tree), 0 when the input
 * has no more records, KIFU_EPARSE when the record is malformed (*out is
 * NULL, kifu_reader_error() says "input:line: what"; the next call continues
 * after that record), or KIFU_ENOMEM.
 */
JOSEKI_MUST_USE int kifu_reader_next(KifuReader *r, KifuRecord **out);

/* Asks the reader (KIF, KI2) to read every variation and comment into the
 * records' tree (KifuRecord.tree); the main line is read as without it. */
void kifu_reader_want_tree(KifuReader *r, bool on);

/* The message of the last error ("" if none), valid until the next call. */
const char *kifu_reader_error(const KifuReader *r);
/* The same without its "input:line: " (for a caller that lists the input and
 * the line apart, as ingest's errors do). */
const char *kifu_reader_error_what(const KifuReader *r);
/* The line of the last error (0 if none). */
JOSEKI_MUST_USE int kifu_reader_error_line(const KifuReader *r);
/* The input's name as given at open. */
const char *kifu_reader_name(const KifuReader *r);
/* The format the reader reads. */
KifuFormat kifu_reader_format(const KifuReader *r);

void kifu_reader_free(KifuReader *r);

#endif

/*
 * shogi/japanese.h — moves as a player writes them: ▲７六歩, △同　歩,
 * ▲５八金右, ▲５五角打, ▲２二角成, ▲２三銀不成 (the notation of KI2 records,
 * newspapers and the book explorer), and the move text of KIF records
 * (７六歩(77), 同　歩(14), ５六歩打).
 *
 * Text is UTF-8. The writer follows the Japan Shogi Association's rules
 * (docs/shogi.md, "Japanese notation"): 同 for a move to the square the
 * previous move went to ("同　" with an ideographic space when one character
 * follows, as Kifu for Windows writes KI2); 打 only where a piece of the same
 * name on the board could also move to the square; 成 or 不成 where the move
 * could promote; and, where two or more pieces of the same name can move to
 * the square, first the motion (上 up, 引 back, 寄 sideways), and if that is
 * not enough the position (右/左 from the mover's side, 直 for a gold, silver
 * or promoted minor piece moving straight up; a dragon or horse is right or
 * left of the other one, never 直), then both ("右上") where one is not enough.
 * The parser reads what the writer writes and what other programs write (王
 * for 玉, 竜 for 龍, 全/圭/杏 for 成銀/成桂/成香, 生 for 不成, a missing
 * 不成, ASCII digits, a KIF origin "(77)"), and resolves it to the one legal
 * move it names, or says why there is none or more than one.
 */
#ifndef SHOGI_JAPANESE_H
#define SHOGI_JAPANESE_H

#include <stdbool.h>
#include <stddef.h>

#include "shogi/position.h"
#include "shogi/errors.h"

/* Bytes that always hold a written move, NUL included. */
#define JA_MOVE_MAX 48

/*
 * Writes the legal move m of pos as a player writes it, into out (JA_MOVE_MAX
 * bytes), with the mover's mark (▲ Black, △ White) first when mark is true.
 * prev_to is the square the previous move went to (SQ_NONE when there is
 * none): a move there is written 同. Returns the length; 0 (and "") when m
 * is not a legal move of pos. legal/nlegal are pos's legal moves when the
 * caller has them (NULL: generated here).
 */
size_t ja_move_write(const Position *pos, Move m, Square prev_to, bool mark, const Move *legal,
                     int nlegal, char out[JA_MOVE_MAX]);

/*
 * Writes the legal move m of pos as a KIF record's move text into out
 * (JA_MOVE_MAX bytes): the square (同　 for prev_to), the piece, 成 for a
 * promotion (a move that does not promote is written without 不成, as the
 * GUIs write KIF: the origin tells it), 打 for every drop, and the origin:
 * ７六歩(77), 同　歩(14), ５五角打, ２二角成(88), ２三銀(34). Returns the length;
 * 0 (and "") when m is not legal in pos.
 */
size_t ja_kif_move_write(const Position *pos, Move m, Square prev_to, char out[JA_MOVE_MAX]);

/* The board diagram of a KIF or KI2 record (後手の持駒, the nine ranks,
 * 先手の持駒, 手番), each line ending with "\n", into out (cap bytes; 1024
 * always hold it). Returns the length (0 when cap is too small). */
size_t ja_board_write(const Position *pos, char *out, size_t cap);

/*
 * Parses a written move in pos (s, len bytes of UTF-8; an optional leading
 * mark must be the side to move's) and returns the legal move it names in
 * *out. prev_to is the previous move's square, for 同. Returns 0,
 * SHOGI_EPARSE for text that is not a move, or SHOGI_EILLEGAL when no legal
 * move or more than one fits (err, SHOGI_ERRLEN bytes, may be NULL, says
 * which, with the square in USI: "no gold of Black's can move to 5h").
 */
JOSEKI_MUST_USE int ja_move_parse(Move *out, const Position *pos, Square prev_to, const char *s,
                                  size_t len, char *err);

/* The name of a piece type as a move writes it ("歩", "成銀", "龍"). */
const char *ja_piece_name(PieceType pt);

/*
 * Reads a piece name at s (n bytes): one character as a board diagram
 * writes it (歩 香 桂 銀 金 角 飛 玉 王 と 杏 圭 全 馬 龍 竜), or 成香 成桂
 * 成銀. Returns the type and sets *used, or PT_NONE.
 */
PieceType ja_piece_parse(const char *s, size_t n, size_t *used);

/*
 * Reads a count written in kanji (一 .. 十八; 十 alone is ten) or ASCII or
 * full-width digits at s. Returns the number and sets *used, or -1.
 */
JOSEKI_MUST_USE int ja_number_parse(const char *s, size_t n, size_t *used);

/* Bytes of the UTF-8 character starting with byte c (1 for a byte that
 * starts none). */
static inline size_t ja_char_len(unsigned char c)
{
	return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* True (and *used set) when s starts with an ASCII blank or U+3000 (the
 * ideographic space). */
bool ja_space(const char *s, size_t n, size_t *used);

#endif

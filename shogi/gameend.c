/* shogi/gameend.c — how a game ended (see gameend.h). */
#include "shogi/gameend.h"

#include <string.h>

static const char *const END_NAMES[] = {
    [GAME_END_NONE] = "none",
    [GAME_END_RESIGN] = "resign",
    [GAME_END_REPETITION] = "repetition",
    [GAME_END_PERPETUAL_CHECK] = "perpetual_check",
    [GAME_END_DECLARATION] = "declaration",
    [GAME_END_MATE] = "mate",
    [GAME_END_ILLEGAL_MOVE] = "illegal_move",
    [GAME_END_TIME_UP] = "time_up",
    [GAME_END_MAX_MOVES] = "max_moves",
    [GAME_END_INTERRUPTED] = "interrupted",
};

const char *game_end_name(GameEnd end)
{
	if ((unsigned)end > GAME_END_INTERRUPTED) return "none";
	return END_NAMES[end];
}

const char *game_winner_name(GameWinner w)
{
	switch (w) {
	case GAME_WINNER_BLACK:
		return "black";
	case GAME_WINNER_WHITE:
		return "white";
	case GAME_WINNER_DRAW:
		return "draw";
	default:
		return "none";
	}
}

static const char *const CLAIM_WORDS[] = {
    [GAME_CLAIM_NONE] = "",
    [GAME_CLAIM_TORYO] = "TORYO",
    [GAME_CLAIM_CHUDAN] = "CHUDAN",
    [GAME_CLAIM_SENNICHITE] = "SENNICHITE",
    [GAME_CLAIM_TIME_UP] = "TIME_UP",
    [GAME_CLAIM_ILLEGAL_MOVE] = "ILLEGAL_MOVE",
    [GAME_CLAIM_BLACK_ILLEGAL_ACTION] = "+ILLEGAL_ACTION",
    [GAME_CLAIM_WHITE_ILLEGAL_ACTION] = "-ILLEGAL_ACTION",
    [GAME_CLAIM_JISHOGI] = "JISHOGI",
    [GAME_CLAIM_KACHI] = "KACHI",
    [GAME_CLAIM_HIKIWAKE] = "HIKIWAKE",
    [GAME_CLAIM_MATTA] = "MATTA",
    [GAME_CLAIM_TSUMI] = "TSUMI",
    [GAME_CLAIM_FUZUMI] = "FUZUMI",
    [GAME_CLAIM_ERROR] = "ERROR",
    [GAME_CLAIM_OTHER] = "",
};

const char *game_claim_word(GameClaim c)
{
	if ((unsigned)c > GAME_CLAIM_OTHER) return "";
	return CLAIM_WORDS[c];
}

GameClaim game_claim_parse(const char *word, size_t n)
{
	for (int c = GAME_CLAIM_TORYO; c < GAME_CLAIM_OTHER; c++)
		if (strlen(CLAIM_WORDS[c]) == n && !memcmp(CLAIM_WORDS[c], word, n))
			return (GameClaim)c;
	return GAME_CLAIM_OTHER;
}

static void set(GameEnd *end, GameWinner *winner, GameEnd e, GameWinner w)
{
	*end = e;
	*winner = w;
}

void game_claim_judge(GameClaim c, const Position *pos, GameEnd *end, GameWinner *winner)
{
	Color stm = pos->side;
	GameWinner other = game_winner_of(color_flip(stm));
	switch (c) {
	case GAME_CLAIM_TORYO:
	case GAME_CLAIM_TSUMI: /* the mated side says so; with legal moves left it is a resignation
	                        */
		set(end, winner, GAME_END_RESIGN, other);
		break;
	case GAME_CLAIM_TIME_UP:
		set(end, winner, GAME_END_TIME_UP, other);
		break;
	case GAME_CLAIM_KACHI:
		set(end, winner, GAME_END_DECLARATION,
		    pos_declaration_ok(pos) ? game_winner_of(stm) : other);
		break;
	case GAME_CLAIM_JISHOGI:
	case GAME_CLAIM_HIKIWAKE:
		/* An impasse: a win for the side to move if its declaration is valid. */
		if (pos_declaration_ok(pos))
			set(end, winner, GAME_END_DECLARATION, game_winner_of(stm));
		else
			set(end, winner, GAME_END_NONE, GAME_WINNER_DRAW);
		break;
	case GAME_CLAIM_CHUDAN:
		set(end, winner, GAME_END_INTERRUPTED, GAME_WINNER_NONE);
		break;
	case GAME_CLAIM_ILLEGAL_MOVE:
		set(end, winner, GAME_END_ILLEGAL_MOVE, other);
		break;
	case GAME_CLAIM_BLACK_ILLEGAL_ACTION:
		set(end, winner, GAME_END_ILLEGAL_MOVE, GAME_WINNER_WHITE);
		break;
	case GAME_CLAIM_WHITE_ILLEGAL_ACTION:
		set(end, winner, GAME_END_ILLEGAL_MOVE, GAME_WINNER_BLACK);
		break;
	default:
		break; /* a SENNICHITE not confirmed by the moves, MATTA, ERROR, ...: none */
	}
}

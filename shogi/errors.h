/*
 * shogi/errors.h — the error-code ranges of every module, disjoint, in one
 * place (docs/STYLE.md, "Errors"). A module's codes are its base minus 0, 1,
 * 2, ... (at most ERR_RANGE of them); its own *_strerror() gives the message,
 * and err_module() tells which module a code belongs to, so a caller holding a
 * code from one of several modules never has to guess.
 */
#ifndef SHOGI_ERRORS_H
#define SHOGI_ERRORS_H

#define ERR_RANGE 20

#define ERR_SHOGI (-100)
#define ERR_DB2016 (-120)
#define ERR_BOOKDB (-200)
#define ERR_KIFU (-300)
#define ERR_INGEST (-320)
#define ERR_FETCH (-340)
#define ERR_SEARCH (-400)
#define ERR_ENGINE (-420)
#define ERR_SEL (-500)
#define ERR_THINK (-520)
#define ERR_ROOTS (-540)
#define ERR_MATCH (-560)
#define ERR_CYCLE (-580)
#define ERR_BOOKMM (-600)
#define ERR_MMFILE (-620)
#define ERR_EXPORT (-640)
#define ERR_PETASHOCK (-660)
#define ERR_COORD (-680)
#define ERR_SERVER (-700)
#define ERR_TOKENS (-720)
#define ERR_WORKER (-760)

/* The base of the module code belongs to (one of the ERR_* above), or 0 when
 * code is not negative or in no module's range. */
static inline int err_module(int code)
{
	static const int BASES[] = {
	    ERR_SHOGI,  ERR_DB2016, ERR_BOOKDB,    ERR_KIFU,   ERR_INGEST, ERR_FETCH,  ERR_SEARCH,
	    ERR_ENGINE, ERR_SEL,    ERR_THINK,     ERR_ROOTS,  ERR_MATCH,  ERR_CYCLE,  ERR_BOOKMM,
	    ERR_MMFILE, ERR_EXPORT, ERR_PETASHOCK, ERR_SERVER, ERR_COORD,  ERR_TOKENS, ERR_WORKER};
	for (unsigned i = 0; i < sizeof BASES / sizeof BASES[0]; i++)
		if (code <= BASES[i] && code > BASES[i] - ERR_RANGE) return BASES[i];
	return 0;
}

#endif

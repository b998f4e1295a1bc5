/*
 * search/builtin.h — the built-in engine (search/engine.h) behind the common
 * SearchEngine interface (search/search.h), for in-process analysis.
 *
 * Each analyse call clears the hash first, so with a depth or node budget the
 * answer (and node count) for a position is reproducible. A clock budget is
 * spent as `joseki usi` spends the same `go` (usi_go_limits in
 * search/usi_server.h). MultiPV lines come
 * best first with distinct first moves; PVs are legal sequences. A mated
 * position answers resign (no lines); a position where the side to move may
 * declare (entering king) answers win.
 */
#ifndef SEARCH_BUILTIN_H
#define SEARCH_BUILTIN_H

#include <signal.h>
#include <stddef.h>

#include "search/search.h"
#include "search/usi_engine.h"
#include "shogi/errors.h"

/*
 * Creates a built-in engine with hash_mb megabytes of hash (0: the engine's
 * default). cancel, if not NULL, is a flag polled during the search: when it
 * becomes non-zero the current analyse call ends with SEARCH_ECANCELED.
 * Returns 0 or SEARCH_ENOMEM; free with search_free().
 */
JOSEKI_MUST_USE int builtin_engine_new(SearchEngine **out, size_t hash_mb,
                                       const volatile sig_atomic_t *cancel);

/*
 * The built-in engine's settings from the USI options a command was given
 * for it (--usi-option, match's --option-a): USI_Hash or Hash, 1..65536 MB of
 * hash, into *hash_mb (left as it was when none is given), and Threads=1 (it
 * searches with one thread), the options `joseki usi` lists. Returns 0, or
 * SEARCH_EINVAL with "builtin engine: option NAME=VALUE not taken (...)" in
 * err (SEARCH_ERRLEN bytes) for any other option or value; *hash_mb is then
 * untouched.
 */
JOSEKI_MUST_USE int builtin_engine_options(size_t *hash_mb, const UsiOption *opts, int n,
                                           char *err);

#endif

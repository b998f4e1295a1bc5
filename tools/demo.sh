#!/bin/sh
# make demo: the main job on the embedded defaults, explained step by step.
# Everything it writes goes under demo-book/ (removed and rebuilt each run).
set -eu
J=${JOSEKI:-./joseki}
OUT=demo-book
rm -rf "$OUT"
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

step "1. The rules core: perft 5 from the start position (19,861,490 leaves expected)"
$J perft 5

step "2. Replaying the 15 sample floodgate games under the rules (how each really ended)"
$J replay tests/data/floodgate/*.csa | tee "$OUT/replay.txt"

step "3. Ingesting them into a book (LMDB store in $OUT/book): positions, moves, results, the engines' comments"
$J ingest "$OUT/book" tests/data/floodgate tests/data/csa-dialects --quiet

step "4. Ingesting again: every game is recognised, nothing changes"
$J ingest "$OUT/book" tests/data/floodgate tests/data/csa-dialects --quiet

step "5. What the book knows about the start position: games and their comments ('** in CSA: other programs' opinions, in the game column, not values: no move has a value yet)"
$J query "$OUT/book" startpos

THINK=${DEMO_THINK_SECONDS:-60}
HALF=$((THINK / 2))
printf 'startpos\nstartpos moves 7g7f\nstartpos moves 2g2f\nstartpos moves 7g7f 3c3d\nstartpos moves 2g2f 8c8d\n' >"$OUT/openings.txt"
step "6. Thinking for ${HALF} s with the built-in engine (2 engines) from 5 openings: the selector covers each colour's best moves and the opponent's near-best replies"
$J think "$OUT/book" --engine builtin --engines 2 --roots "$OUT/openings.txt" --time "$HALF" --quiet

step "6b. ${HALF} s more walking the lines the built-in engine really plays from those openings at 20000 nodes (think --opponent): the book answers every reply it meets"
$J think "$OUT/book" --engine builtin --engines 2 --roots "$OUT/openings.txt" --opponent builtin \
	--nodes 20000 --time "$HALF" --quiet

step "7. Minimax: backing the values up over the whole book graph (transpositions and repetitions handled)"
$J minimax "$OUT/book"

THINK2=${DEMO_THINK_MORE_SECONDS:-10}
step "7b. Thinking ${THINK2} s more, then minimax again: incremental, only the new results and what lies above them"
$J think "$OUT/book" --engine builtin --engines 2 --roots "$OUT/openings.txt" --opponent builtin \
	--nodes 20000 --time "$THINK2" --quiet
$J minimax "$OUT/book"

step "8. Exporting a YaneuraOu book (sorted for BookOnTheFly) to $OUT/book.db"
$J export "$OUT/book" "$OUT/book.db" --format yaneuraou
head -n 4 "$OUT/book.db"

step "9. The book's answer for the start position"
$J query "$OUT/book" startpos

step "10. Book statistics and an integrity check"
$J stats "$OUT/book"
$J check "$OUT/book"

step "11. What the book is worth: a short match, the built-in engine with the book (A) against the same engine without it (B), 5 openings x both colours, 20000 nodes a move (the engines play the same game from the same opening, so these 10 games are all there are); records in $OUT/match"
$J match --engine-a builtin --engine-b builtin --book-a "$OUT/book" --book-b none \
	--openings "$OUT/openings.txt" --games 10 --nodes 20000 --concurrency 2 --out "$OUT/match"

cat <<'EOF'

How to read it: 10 games cannot show what a book is worth in points. The score's
95% interval spans hundreds of Elo (the "elo [low, high]" above), so +241 or -241
would both be noise. The exit evaluation says more with the same games: where A's
book ended, A's own engine judged its position ("exit eval A"), where B's engine
began ("B"); "gain" is the difference with its 95% interval. An interval above 0
means the book left its engine better off than an engine starting on its own,
by that engine's judgement; one that holds 0, that these games do not tell. What a book adds in games takes hundreds of them: make bench-book.
EOF

printf '\nDone. The book is %s/book (LMDB), the YaneuraOu book %s/book.db.\nTry: ./joseki query %s/book "startpos moves 2g2f"\n' "$OUT" "$OUT" "$OUT"

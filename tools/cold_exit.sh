#!/bin/sh
# tools/cold_exit.sh: does a book cost its engine by leaving it cold? (docs/notes/match.md,
# "The engine's state at the book's exit").
#
# A side that plays from its book starts its engine only where the book ends:
# the engine has searched nothing of the game yet (an empty hash table, empty
# history tables), while the side without a book has searched every position
# of its own so far. This measures what that costs, with a book that plays
# exactly the engine's own moves:
#
#   1. COLD_OPENINGS (100) openings of tests/data/positions/openings-v1.sfen
#      from its COLD_FIRST-th (1),
#      each played twice (colours swapped) by fairy-stockfish against itself at
#      COLD_NODES (20000) nodes, a new process a game, no books: the baseline
#      (both games of an opening are the same moves);
#   2. the mirror book: each baseline game from its opening's end to COLD_PLIES
#      (16) plies after it, as USI game lines, ingested, minimax --games-book
#      most-played (the games' own moves: a book from games alone);
#   3. the same match with the mirror book on side A: the game is the baseline
#      game until A's book ends (COLD_PLIES / 2 book moves), then A's engine
#      searches for the first time in the game; B's searches are the
#      baseline's.
#
# Prints the mirror match's line (score, Elo from the pairs), how many of A's
# first engine moves were the baseline's, and the results game by game against
# the baseline's: with nothing lost to the cold start the mirror match scores
# 0.5 (the baseline does by construction) whatever the moves are.
# Work files go to COLD_DIR (a temporary directory, removed unless given).
# About 25 minutes on 2 cores at the defaults.
set -eu
J=${JOSEKI:-./joseki}
FS=${FAIRY_STOCKFISH:-/usr/games/fairy-stockfish}
NODES=${COLD_NODES:-20000}
NOPEN=${COLD_OPENINGS:-100}
FIRST=${COLD_FIRST:-1}
PLIES=${COLD_PLIES:-16}
CONC=${COLD_CONCURRENCY:-2}

. "$(dirname "$0")/bench-lib.sh"
need_fairy cold_exit "$FS"
work_dir "${COLD_DIR:-}"
grep -v '^#' tests/data/positions/openings-v1.sfen | grep . | tail -n "+$FIRST" | head -n "$NOPEN" >"$W/openings.txt"
games=$((2 * $(wc -l <"$W/openings.txt")))

match() { # $1 book, $2 name
	$J match --engine-a "$FS" --engine-b "$FS" --book-a "$1" --book-b none \
		--openings "$W/openings.txt" --games "$games" --nodes "$NODES" \
		--concurrency "$CONC" --restart-engines --json --quiet --out "$W/$2" >"$W/$2.json"
}
match none base
# The lines start where their openings end, so that no opening's own moves
# (one opening may be the start of another) come into the book.
$J replay "$W/openings.txt" --json >"$W/openings.json"
python3 - "$W/base.json" "$W/openings.txt" "$W/openings.json" "$PLIES" "$W/mirror.usi" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ops = [l.strip() for l in open(sys.argv[2])]
ends = [g["final_sfen"] for g in json.load(open(sys.argv[3]))["games"]]
k = int(sys.argv[4])
lines = {}
for r in d["results"]:
    op = ops[r["opening"] - 1]
    n = len(op.split(" moves ")[1].split()) if " moves " in op else 0
    mv = r["moves"].split(" moves ")[1].split()
    lines[r["opening"]] = "sfen " + ends[r["opening"] - 1] + " moves " + " ".join(mv[n : n + k])
with open(sys.argv[5], "w") as f:
    for o in sorted(lines):
        f.write(lines[o] + "\n")
EOF
rm -rf "$W/mirror"
$J ingest "$W/mirror" "$W/mirror.usi" --quiet >/dev/null
$J minimax "$W/mirror" --games-book most-played --quiet >/dev/null
match "$W/mirror" cold
python3 - "$W/base.json" "$W/cold.json" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
base = {(r["opening"], r["a_color"]): r for r in b["results"]}
same_move = exits = 0
pairs = {}
for r in m["results"]:
    br = base[(r["opening"], r["a_color"])]
    x = r["moves"].split(" moves ")[1].split()
    y = br["moves"].split(" moves ")[1].split()
    i = 0
    while i < min(len(x), len(y)) and x[i] == y[i]:
        i += 1
    e = r["exit_plies"][0]
    if e is not None:
        exits += 1
        same_move += i >= e  # the moves agree up to and with A's first engine move
    key = "%s->%s" % (br["result"], r["result"])
    pairs[key] = pairs.get(key, 0) + 1
pr = m["pairs"]
f = lambda v: "inf" if v is None else "%+.0f" % v
print("cold_exit games %d book_plies %.2f score %.3f (+%d =%d -%d) pentanomial %s elo %s [%s, %s] "
      "first_engine_move_as_baseline %d/%d results_baseline_to_cold %s" % (
          len(m["results"]), m["book_plies"]["a"], m["score"], m["wins"], m["draws"], m["losses"],
          "/".join(str(v) for v in pr["pentanomial"]), f(pr["elo"]), f(pr["elo_low"]),
          f(pr["elo_high"]), same_move, exits,
          " ".join("%s %d" % kv for kv in sorted(pairs.items()))))
EOF

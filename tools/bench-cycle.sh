#!/bin/sh
# make bench-cycle: what a book is worth against the opponents it is made for
# (measured: docs/notes/cycle.md). Shiba's cycle with the built-in engine as
# the book side and Debian's fairy-stockfish as the virtual opponent:
#
#   1. an opening suite: the first CYCLE_OPENINGS (50) real openings of
#      tests/data/positions/openings-v1.sfen (floodgate games, 12-24 plies);
#   2. the book: the bundled floodgate games (tests/data/floodgate) ingested;
#   3. the cycle, one generation at a time until the book side scores
#      CYCLE_GOAL (0.90) or CYCLE_GENERATIONS (8) are done: a match of every
#      opening with both colours (2 x CYCLE_OPENINGS games) of the built-in
#      engine with the book against fairy-stockfish, both at CYCLE_NODES
#      (20000) nodes a move, a new fairy-stockfish process every game (so
#      that the same line gets the same reply); prune (--delete last: each
#      lost game the book would play again changes at its last decision);
#      think: the lost games' lines walked against the opponent (--probe),
#      the book side's positions analysed by the built-in engine at
#      CYCLE_THINK_NODES (100000) nodes, MultiPV CYCLE_MULTIPV (2), for
#      CYCLE_ENGINE_SECONDS (225) engine-seconds a generation on
#      CYCLE_ENGINES (2) engines (the engines' own CPU time: a busy machine
#      takes longer, the engines think as much); minimax; then up to
#      CYCLE_RETRIES (3) rounds of playing again the lost games the book now
#      plays differently (cycle --retries: no thinking, each round tries the
#      next alternative of each lost line), each followed by backtracking;
#   4. the finished book against an opponent it never met: fairy-stockfish
#      with each search's nodes drawn within CYCLE_JITTER (5) percent
#      (match --nodes-jitter: other games than the ones the book was made
#      against), CYCLE_UNMET_GAMES (2 x CYCLE_OPENINGS) games, the built-in
#      engine with the book, then the same engine without it, the same seed
#      (the same node draws);
#   5. on clocks, where a book move costs no time: the built-in engine with the
#      finished book against the same engine without it, CYCLE_CLOCK_GAMES (2 x
#      CYCLE_OPENINGS; 0 leaves it out) games at CYCLE_TC (10+0.1: 10 s and
#      0.1 s a move, Fischer): the score, and at the book side's exit the main
#      time each side had left (the book side has all of its own).
#
# Prints the cycle's table (a row a generation: score, book plies, exit ply,
# positions thought, engine-seconds, moves avoided), the engine-minutes of
# thinking in all, one line per match against the unmet opponent (score, Elo
# with its 95% interval from the pairs, book plies) and the book's score over
# none game by game, and the clocked match's line. Work files go to CYCLE_DIR
# (a temporary directory, removed unless given). CYCLE_RESUME=1 with CYCLE_DIR
# carries on with the book already there (a run that was stopped: the cycle
# resumes mid-generation after kill -9, the generations done are not redone).
#
# BENCH_CYCLE_SMOKE=1: the smoke form CI runs (tests/play/test_bench_cycle.c):
# 2 openings, one generation, 2,000 nodes, a few seconds of thinking, so that
# the script cannot rot; its figures mean nothing.
set -eu
J=${JOSEKI:-./joseki}
FS=${FAIRY_STOCKFISH:-/usr/games/fairy-stockfish}
if [ "${BENCH_CYCLE_SMOKE:-0}" = 1 ]; then
	NOPEN=2 GENS=1 NODES=2000 TNODES=2000 SECS=2 UNMET=4 CLOCK=2 TC=1+0.05 RETRIES=1
else
	NOPEN=${CYCLE_OPENINGS:-50}
	GENS=${CYCLE_GENERATIONS:-8}
	NODES=${CYCLE_NODES:-20000}
	TNODES=${CYCLE_THINK_NODES:-100000}
	SECS=${CYCLE_ENGINE_SECONDS:-225}
	UNMET=${CYCLE_UNMET_GAMES:-$((2 * NOPEN))}
	CLOCK=${CYCLE_CLOCK_GAMES:-$((2 * NOPEN))}
	TC=${CYCLE_TC:-10+0.1}
	RETRIES=${CYCLE_RETRIES:-3}
fi
GOAL=${CYCLE_GOAL:-0.90}
MULTIPV=${CYCLE_MULTIPV:-2}
ENGINES=${CYCLE_ENGINES:-2}
CONC=${CYCLE_CONCURRENCY:-2}
PLIES=${CYCLE_PROBE_PLIES:-200}
JITTER=${CYCLE_JITTER:-5}

. "$(dirname "$0")/bench-lib.sh"
need_fairy bench-cycle "$FS"
work_dir "${CYCLE_DIR:-}"

suite "$NOPEN"
echo "bench-cycle: $n openings, the built-in engine with the book against fairy-stockfish at $NODES nodes; thinking $TNODES nodes, MultiPV $MULTIPV, $SECS engine-seconds a generation (load $(cut -d' ' -f1 /proc/loadavg))" >&2

if [ "${CYCLE_RESUME:-0}" = 1 ] && [ -d "$W/book" ]; then
	echo "bench-cycle: carrying on with $W/book" >&2
else
	rm -rf "$W/book"
	$J ingest "$W/book" tests/data/floodgate --quiet >/dev/null
fi
start=$(date +%s)
g=0
while [ "$g" -lt "$GENS" ]; do
	g=$((g + 1))
	$J cycle "$W/book" --generations "$g" --games $((2 * n)) --openings "$W/openings.txt" \
		--opponent "$FS" --nodes "$NODES" --restart-engines --concurrency "$CONC" \
		--engines "$ENGINES" --probe --probe-plies "$PLIES" --think-nodes "$TNODES" \
		--multipv "$MULTIPV" --engine-seconds "$SECS" --retries "$RETRIES" --roots-only --json \
		--quiet >"$W/cycle.json"
	score=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["table"][-1]["score"])' "$W/cycle.json")
	echo "bench-cycle: generation $g score $score ($(($(date +%s) - start)) s)" >&2
	if python3 -c 'import sys; sys.exit(float(sys.argv[1]) < float(sys.argv[2]))' "$score" "$GOAL"; then
		break
	fi
done
python3 - "$W/cycle.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("cycle table (the book side against fairy-stockfish)")
print("  gen  games  score    +W  =D  -L  book_plies  exit_ply  thought  engine_s  avoided  repeats  won_lost  retried  retry_wins")
total = 0.0
games = 0
for r in d["table"]:
    total += r["engine_seconds"]
    games += r["games"] + r.get("retried", 0)
    ex = r["exit_ply"]
    print("  %3d  %5d  %.3f  %4d %3d %3d  %10.1f  %8s  %7d  %8.1f  %7d  %7d  %8d  %7d  %10d" % (
        r["generation"], r["games"], r["score"], r["wins"], r["draws"], r["losses"],
        r["book_plies"], ex["median"] if ex["games"] else "-", r["thought"],
        r["engine_seconds"], r["avoided"], r["repeats"], r["won_lost"],
        r.get("retried", 0), r.get("retry_wins", 0)))
print("thinking: %.1f engine-minutes in %d generations; %d games played (matches and retries)" % (
    total / 60, len(d["table"]), games))
EOF

# The book against an opponent it never met, then the same engine without it.
play() {
	$J match --engine-a builtin --engine-b "$FS" --book-a "$1" --book-b none \
		--openings "$W/openings.txt" --games "$UNMET" --nodes "$NODES" --nodes-jitter "$JITTER" \
		--seed 1000 --concurrency "$CONC" --restart-engines --json --quiet --out "$W/match-$2" \
		>"$W/match-$2.json"
	python3 - "$W/match-$2.json" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
res = d["results"]
bp = [r["book_plies"][0] for r in res]
pr = d["pairs"]
f = lambda x: "inf" if x is None else "%+.0f" % x
print("unmet %s games %d book_plies %.1f score %.3f (+%d =%d -%d) pairs %d elo %s [%s, %s] "
      "los %s" % (sys.argv[2], len(res), sum(bp) / len(bp), d["score"], d["wins"], d["draws"],
                  d["losses"], pr["count"], f(pr["elo"]), f(pr["elo_low"]), f(pr["elo_high"]),
                  "n/a" if pr["los"] is None else "%.3f" % pr["los"]))
EOF
}
echo "against fairy-stockfish with its nodes drawn within $JITTER% (the opponent the book never met):"
play "$W/book" book
play none no-book
# Game by game (the same opening, colour and node draws): the book's points
# less the engine's alone, as a score of the book over none.
python3 - "$W/match-book.json" "$W/match-no-book.json" <<'EOF'
import json, math, sys
a, b = (json.load(open(f))["results"] for f in sys.argv[1:3])
pts = {"win": 1.0, "draw": 0.5, "loss": 0.0}
d = [(1 + pts[x["result"]] - pts[y["result"]]) / 2 for x, y in zip(a, b)
     if x["result"] in pts and y["result"] in pts]
n = len(d)
m = sum(d) / n
se = math.sqrt(sum((x - m) ** 2 for x in d) / n / n)
elo = lambda s: "inf" if s <= 0 or s >= 1 else "%+.0f" % (-400 * math.log10(1 / s - 1) + 0.0)
lo, hi = m - 1.96 * se, m + 1.96 * se
print("unmet book over no-book games %d score %.3f [%.3f, %.3f] elo %s [%s, %s] "
      "better %d same %d worse %d" % (n, m, lo, hi, elo(m), elo(lo), elo(hi),
                                      sum(x > 0.5 for x in d), sum(x == 0.5 for x in d),
                                      sum(x < 0.5 for x in d)))
EOF
if [ "$CLOCK" -gt 0 ]; then
	$J match --engine-a builtin --engine-b builtin --book-a "$W/book" --book-b none \
		--openings "$W/openings.txt" --games "$CLOCK" --tc "$TC" --concurrency "$CONC" \
		--json --quiet --out "$W/match-clock" >"$W/match-clock.json"
	python3 - "$W/match-clock.json" "$TC" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
res = d["results"]
pr = d["pairs"]
at = [r["exit_clock_ms"][0] for r in res if r["exit_clock_ms"][0]]
med = lambda v: sorted(v)[len(v) // 2] if v else 0
f = lambda x: "inf" if x is None else "%+.0f" % x
late = sum(r["end"] == "time_up" for r in res)
print("clock %s book over no-book games %d book_plies %.1f score %.3f (+%d =%d -%d) elo %s "
      "[%s, %s] at the book's exit (median ply %s): its clock %.1f s, the other's %.1f s "
      "(saved %.1f s) time_up %d" % (
          sys.argv[2], len(res), d["book_plies"]["a"], d["score"], d["wins"], d["draws"],
          d["losses"], f(pr["elo"]), f(pr["elo_low"]), f(pr["elo_high"]),
          d["exit_plies"]["a"].get("median"), med([a for a, b in at]) / 1e3,
          med([b for a, b in at]) / 1e3, med([a - b for a, b in at]) / 1e3, late))
EOF
fi
echo "bench-cycle: $(($(date +%s) - start)) s in all" >&2
echo "(goals: the score rises generation by generation to >= $GOAL within 8 generations and <= 30 engine-minutes of thinking; against the unmet opponent the book no worse than none: its score over none, game by game, >= 0.50; on clocks the book side ahead, its clock at the exit quoted)"

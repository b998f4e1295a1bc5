#!/bin/sh
# make bench-book: what a grown book is worth in games (docs/match.md, "What a
# book is worth"). With Debian's fairy-stockfish as every engine, at
# BOOK_NODES (20000) nodes a move, one thread:
#
#   1. an opening suite: the first BOOK_OPENINGS (50) real openings of
#      tests/data/positions/openings-v1.sfen (floodgate games, 12-24 plies);
#   2. the games-only book: the bundled floodgate games ingested, minimax
#      --games-book most-played (Bonanza's narrow book: each position's most
#      played move; a book from games alone is a choice, docs/minimax.md);
#   3. the grown book: the same, then grown for BOOK_SECONDS (300) s on
#      BOOK_ENGINES (2) engines, 10 engine-minutes counted in the engines' own
#      CPU time (think --engine-seconds: a busy machine takes longer, the
#      engines think as much), by walking the lines fairy-stockfish plays
#      from the openings (think --opponent), minimax; the book side's
#      positions are analysed at BOOK_THINK_NODES (50000) nodes, MultiPV
#      BOOK_MULTIPV (1), the opponent's moves asked at BOOK_NODES as in the
#      match, their nodes drawn within BOOK_GROW_JITTER (0) percent (think
#      --opponent-nodes-jitter: each walk a game of its own, the replies a
#      varying opponent plays gathered);
#   4. matches from the suite, each opening with both colours, fairy-stockfish
#      with a book against fairy-stockfish without: grown, then games-only;
#      BOOK_PAIRS (default: one pair an opening) game pairs each;
#   5. where the grown book leaves its engine: tools/book_exits.py analyses
#      each game's position at side A's exit ply and the position after as
#      many plies in the games-only match's game of the same opening and
#      colour, at BOOK_EXIT_NODES (500000) nodes (0 leaves it out): the
#      mean and median gain in centipawns, with its standard error (a far
#      narrower measure than a score over 100 games), and the scores where
#      the book's exit was better or worse;
#   6. the grown book again over BOOK_JITTER_GAMES (400) games with each
#      search's nodes drawn within BOOK_JITTER (5) percent of BOOK_NODES
#      (match --nodes-jitter): other games than the one a deterministic
#      engine plays per opening and colour, and an opponent whose replies the
#      walks did not all meet. BOOK_JITTER_GAMES=0 leaves it out;
#   7. book against book at equal compute (BOOK_SELFPLAY=0 leaves it out):
#      the book a user would make with the same engine-minutes instead,
#      fairy-stockfish's self-play from the suite at BOOK_NODES, each
#      search's nodes drawn within BOOK_JITTER percent (other games than the
#      one an opening and colour give), a new process a game, in batches
#      until the engines' CPU time reaches the grown book's (BOOK_SECONDS x
#      BOOK_ENGINES), ingested and minimaxed with the games-only policy
#      (minimax --games-book most-played); then the grown book (A) against
#      it (B), both with fairy-stockfish at BOOK_NODES, BOOK_PAIRS pairs:
#      score, each side's book plies, each side's exit evaluation and the
#      gain A - B (match's exit evaluations, docs/match.md).
#
# Prints per book: book plies a game, exit plies, score, Elo with its 95%
# interval from the pairs, LOS, one line each; the exits line; the goals.
# At a node budget and one thread fairy-stockfish plays the same game from
# the same opening every time it starts as a new process (its play depends on
# what the process searched before, usinewgame or not: the walks and the
# matches give it a new process every game, --opponent-restart and
# --restart-engines), so a pair an opening is every distinct game there is;
# more pairs repeat them (the lines say how many were distinct).
# Work files go to BOOK_DIR (a temporary directory, removed unless given).
set -eu
J=${JOSEKI:-./joseki}
FS=${FAIRY_STOCKFISH:-/usr/games/fairy-stockfish}
NODES=${BOOK_NODES:-20000}
NOPEN=${BOOK_OPENINGS:-50}
SECS=${BOOK_SECONDS:-300}
ENGINES=${BOOK_ENGINES:-2}
MULTIPV=${BOOK_MULTIPV:-1}
TNODES=${BOOK_THINK_NODES:-50000}
PAIRS=${BOOK_PAIRS:-$NOPEN}
JGAMES=${BOOK_JITTER_GAMES:-400}
JITTER=${BOOK_JITTER:-5}
CONC=${BOOK_CONCURRENCY:-2}
EXITN=${BOOK_EXIT_NODES:-500000}
GJITTER=${BOOK_GROW_JITTER:-0}
SELFPLAY=${BOOK_SELFPLAY:-1}

. "$(dirname "$0")/bench-lib.sh"
need_fairy bench-book "$FS"
work_dir "${BOOK_DIR:-}"

suite "$NOPEN"
echo "bench-book: $n openings, fairy-stockfish at $NODES nodes, book grown for $((SECS * ENGINES)) engine-seconds ($TNODES nodes, MultiPV $MULTIPV; load $(cut -d' ' -f1 /proc/loadavg))" >&2

rm -rf "$W/games" "$W/grown"
$J ingest "$W/games" tests/data/floodgate --quiet >/dev/null
$J minimax "$W/games" --games-book most-played --quiet >/dev/null
$J ingest "$W/grown" tests/data/floodgate --quiet >/dev/null
$J think "$W/grown" --engine "$FS" --opponent "$FS" --opponent-restart --engines "$ENGINES" --nodes "$TNODES" \
	--opponent-nodes "$NODES" --opponent-nodes-jitter "$GJITTER" --multipv "$MULTIPV" \
	--roots "$W/openings.txt" --roots-only \
	--engine-seconds $((SECS * ENGINES)) --quiet >"$W/think.txt"
$J minimax "$W/grown" --full --quiet >/dev/null
echo "bench-book: $(cat "$W/think.txt")" >&2

# One match: A = fairy-stockfish with BOOK ($1), B = with BOOK $5 (default
# none); $2 names it, $3 the games, $4 the node jitter (percent).
play() {
	$J match --engine-a "$FS" --engine-b "$FS" --book-a "$W/$1" --book-b "${5:-none}" \
		--openings "$W/openings.txt" --games "$3" --nodes "$NODES" --nodes-jitter "$4" \
		--concurrency "$CONC" --restart-engines --json --quiet --out "$W/match-$2" >"$W/match-$2.json"
	python3 - "$W/match-$2.json" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
res = d["results"]
distinct = len({r["moves"] for r in res})
bp = [r["book_plies"][0] for r in res]
ex = d["exit_plies"]["a"]
pr = d["pairs"]
f = lambda x: "inf" if x is None else "%+.0f" % x
print("book %s games %d distinct %d book_plies %.1f exit_ply_median %s exit_ply_q1 %s exit_ply_q3 %s "
      "score %.3f (+%d =%d -%d) pairs %d pentanomial %s elo %s [%s, %s] los %s" % (
    sys.argv[2], len(res), distinct, sum(bp) / len(bp), ex.get("median"), ex.get("q1"),
    ex.get("q3"), d["score"], d["wins"], d["draws"], d["losses"], pr["count"],
    "/".join(str(x) for x in pr["pentanomial"]), f(pr["elo"]), f(pr["elo_low"]),
    f(pr["elo_high"]), "n/a" if pr["los"] is None else "%.3f" % pr["los"]))
ee = d["exit_evals"]
if d["book_plies"]["b"] > 0 and ee["gain"]:
    print("  against a book: book_plies B %.1f exit eval A %+.0f B %+.0f gain %+.0f se %.0f cp" % (
        d["book_plies"]["b"], ee["a"]["mean"], ee["b"]["mean"], ee["gain"]["mean"],
        ee["gain"]["se"]))
EOF
}
play grown grown $((2 * PAIRS)) 0
play games games-most-played $((2 * PAIRS)) 0
if [ "$EXITN" -gt 0 ]; then
	FAIRY_STOCKFISH=$FS python3 tools/book_exits.py "$W/match-grown.json" "$W/match-games-most-played.json" \
		"$EXITN" grown
fi
if [ "$JGAMES" -gt 0 ]; then
	play grown "grown-jitter$JITTER" "$JGAMES" "$JITTER"
fi
if [ "$SELFPLAY" = 1 ]; then
	# Self-play games until the engines have had the grown book's CPU time.
	rm -rf "$W/selfplay" "$W/selfplay-book"
	mkdir -p "$W/selfplay"
	python3 - "$J" "$FS" "$W" "$NODES" "$JITTER" "$((SECS * ENGINES))" "$CONC" <<'EOF'
import resource, subprocess, sys
j, fs, w, nodes, jitter, budget, conc = sys.argv[1:8]
budget, used, batch, games = float(budget), 0.0, 0, 0
while used < budget:
    # A batch of about what is left, at the rate so far (10 games first).
    n = 10 if not games else max(2, min(50, int((budget - used) / (used / games)) + 1))
    batch += 1
    subprocess.run([j, "match", "--engine-a", fs, "--engine-b", fs, "--openings",
                    w + "/openings.txt", "--games", str(n), "--nodes", nodes, "--nodes-jitter",
                    jitter, "--seed", str(batch), "--concurrency", conc, "--restart-engines",
                    "--quiet", "--out", "%s/selfplay/batch-%03d" % (w, batch)],
                   check=True, stdout=subprocess.DEVNULL)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    used, games = ru.ru_utime + ru.ru_stime, games + n
print("bench-book: selfplay games %d engine_s %.1f (the grown book's %.0f)" % (games, used, budget),
      file=sys.stderr)
EOF
	$J ingest "$W/selfplay-book" tests/data/floodgate "$W/selfplay" --quiet >/dev/null
	$J minimax "$W/selfplay-book" --games-book most-played --quiet >/dev/null
	play grown grown-vs-selfplay $((2 * PAIRS)) 0 "$W/selfplay-book"
fi
echo "(goals: the grown book >= 8 book plies a game, score >= 0.55 with the Elo interval's low end above 0 over >= 400 games, better than the games-only book, and ahead of the self-play book of the same engine-minutes in score and exit gain)"

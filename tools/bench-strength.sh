#!/bin/sh
# make bench-strength: the built-in engine (joseki usi) against fairy-stockfish at
# equal time a move, one thread each, from the real openings of
# tests/data/positions/openings-v1.sfen with colours swapped (joseki match plays
# each opening twice). First 50 ms a move in batches of STRENGTH_BATCH games
# until the SPRT decides (Elo STRENGTH_ELO0 against STRENGTH_ELO1, alpha = beta =
# 0.05) or STRENGTH_GAMES games are played; then STRENGTH_CONFIRM games at 200
# ms. Prints, for each, the games, the score, the Elo with its 95% interval, the
# LOS and the LLR. Long (about half an hour on two free cores); not part of make
# test. Exit 0 when the games were played, 1 when fairy-stockfish is missing or
# a match fails.
#
#   FAIRY_STOCKFISH  the engine (default /usr/games/fairy-stockfish)
#   STRENGTH_GAMES 400, STRENGTH_BATCH 40, STRENGTH_CONFIRM 100,
#   STRENGTH_CONCURRENCY 2 (games at once), STRENGTH_ELO0 -10, STRENGTH_ELO1 10,
#   STRENGTH_OUT (kept records and JSON; default a temporary directory)
set -eu
J=${JOSEKI:-./joseki}
FSF=${FAIRY_STOCKFISH:-/usr/games/fairy-stockfish}
GAMES=${STRENGTH_GAMES:-400}
BATCH=${STRENGTH_BATCH:-40}
CONFIRM=${STRENGTH_CONFIRM:-100}
CONC=${STRENGTH_CONCURRENCY:-2}
ELO0=${STRENGTH_ELO0:--10}
ELO1=${STRENGTH_ELO1:-10}
OPENINGS=tests/data/positions/openings-v1.sfen

. "$(dirname "$0")/bench-lib.sh"
need_fairy bench-strength "$FSF"
[ -x "$J" ] || { echo "bench-strength: $J not found (run make)" >&2; exit 1; }
[ -f "$OPENINGS" ] || { echo "bench-strength: $OPENINGS not found (run from the repository)" >&2; exit 1; }

work_dir "${STRENGTH_OUT:-}"
OUT=$W
# The built-in engine behind the USI driver, as fairy-stockfish is: both keep
# their hash over a game and pay the same pipe overhead.
printf '#!/bin/sh\nexec "%s" usi\n' "$(cd "$(dirname "$J")" && pwd)/$(basename "$J")" >"$OUT/joseki-usi"
chmod +x "$OUT/joseki-usi"

# stats FILE...: W/D/L summed over match JSON files, score, Elo +- 95%, LOS, LLR.
stats() {
	python3 - "$ELO0" "$ELO1" "$@" <<'EOF'
import json, math, sys
e0, e1 = float(sys.argv[1]), float(sys.argv[2])
w = d = l = 0
for f in sys.argv[3:]:
    j = json.load(open(f))
    w, d, l = w + j["wins"], d + j["draws"], l + j["losses"]
n = w + d + l
s = (w + d / 2) / n
var = (w * (1 - s) ** 2 + d * (0.5 - s) ** 2 + l * s ** 2) / n
se = math.sqrt(var / n)
def elo(x):
    if x <= 0: return "-inf"
    if x >= 1: return "+inf"
    return "%+.0f" % (-400 * math.log10(1 / x - 1) + 0.0)
def p(e): return 1 / (1 + 10 ** (-e / 400))
llr = n * (p(e1) - p(e0)) * (2 * s - p(e0) - p(e1)) / (2 * var) if var > 0 else 0.0
los = 0.5 * (1 + math.erf((w - l) / math.sqrt(2 * (w + l)))) if w + l else 0.5
lo, hi = math.log(0.05 / 0.95), math.log(0.95 / 0.05)
verdict = "H1 (Elo >= %g) accepted" % e1 if llr >= hi else "H0 (Elo <= %g) accepted" % e0 if llr <= lo else "undecided"
print("%d games +%d =%d -%d score %.3f elo %s [%s, %s] (95%%) LOS %.3f LLR %.2f [%.2f, %.2f] %s"
      % (n, w, d, l, s, elo(s), elo(s - 1.96 * se), elo(s + 1.96 * se), los, llr, lo, hi, verdict))
EOF
}

llr_decided() {
	stats "$@" | grep -q "accepted"
}

# play MS GAMES SEED: one match of GAMES games at MS ms a move into $OUT/MS-SEED.json.
play() {
	$J match --engine-a "$OUT/joseki-usi" --engine-b "$FSF" --option-b Threads=1 \
		--option-b Hash=16 --openings "$OPENINGS" --games "$2" --movetime "$1" \
		--concurrency "$CONC" --seed "$3" --json --quiet --out "$OUT/games-$1-$3" \
		>"$OUT/$1-$3.json" || { echo "bench-strength: joseki match failed" >&2; exit 1; }
}

echo "bench-strength: joseki usi against $("$FSF" </dev/null 2>/dev/null | head -n 1 | cut -c1-60)"
echo "bench-strength: load at start: $(uptime | sed 's/.*load average: //')"
played=0
seed=1
files=""
while [ "$played" -lt "$GAMES" ]; do
	play 50 "$BATCH" "$seed"
	files="$files $OUT/50-$seed.json"
	played=$((played + BATCH))
	seed=$((seed + 1))
	# shellcheck disable=SC2086
	echo "bench-strength: 50 ms: $(stats $files)" >&2
	# shellcheck disable=SC2086
	llr_decided $files && break
done
# shellcheck disable=SC2086
echo "strength 50ms: $(stats $files)"
play 200 "$CONFIRM" 1000
echo "strength 200ms: $(stats "$OUT/200-1000.json")"
echo "bench-strength: load at end: $(uptime | sed 's/.*load average: //')"

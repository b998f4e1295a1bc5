#!/bin/sh
# joseki match's overhead per move beyond the engines' own time: two scripted
# engines that answer at once (tests/search/fakes/script_engine.py) replay a
# long game the built-in engine played; wall time of the match / moves, with
# the CSA records written. The fake's own answer time is included, so this is
# an upper bound. Target: under 1 ms. Median of BENCH_RUNS (3) runs.
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
RUNS=${BENCH_RUNS:-3}
GAMES=${BENCH_MATCH_GAMES:-20}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

jnum() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# A long legal game (the built-in engine against itself, few nodes).
$J match --engine-a builtin --engine-b builtin --games 1 --nodes 3000 --max-moves 400 --json \
	| python3 -c "import json,sys; print(json.load(sys.stdin)['results'][0]['moves'][15:])" >"$TMP/game"
[ -s "$TMP/game" ] || { echo "bench_match: no game played" >&2; exit 1; }
printf '#!/bin/sh\nexec python3 -S %s/tests/search/fakes/script_engine.py --moves "%s"\n' \
	"$(pwd)" "$(cat "$TMP/game")" >"$TMP/engine"
chmod +x "$TMP/engine"

figures=""
for _ in $(seq "$RUNS"); do
	rm -rf "$TMP/out"
	json=$($J match --engine-a "$TMP/engine" --engine-b "$TMP/engine" --games "$GAMES" \
		--max-moves 400 --out "$TMP/out" --json --quiet)
	s=$(echo "$json" | jnum seconds)
	n=$(echo "$json" | jnum engine_moves)
	figures="$figures $(echo "$s $n" | awk '{printf "%.1f", $1 * 1e6 / $2}')"
	moves=$n
done
us=$(echo "$figures" | tr ' ' '\n' | grep . | median)
echo "match_overhead_us_per_move $us  (instant scripted engines, $GAMES games, $moves moves, CSA written, median of $RUNS)"

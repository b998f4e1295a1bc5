#!/bin/sh
# Ingest speed: generated floodgate-style games (with '** evaluations) into a
# fresh book. BENCH_INGEST_GAMES (default 20000) games; median of BENCH_RUNS.
set -eu
J=${JOSEKI:-./joseki}
RUNS=${BENCH_RUNS:-3}
N=${BENCH_INGEST_GAMES:-20000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$J gen-games "$tmp/games" --games "$N" --seed 1 >/dev/null
rates=""
for r in $(seq "$RUNS"); do
	out=$($J ingest "$tmp/book$r" "$tmp/games" --json --quiet)
	ms=$(echo "$out" | sed 's/.*"time_ms":\([0-9]*\).*/\1/')
	pos=$(echo "$out" | sed 's/.*"positions_added":\([0-9]*\).*/\1/')
	rates="$rates $ms"
	rm -rf "$tmp/book$r"
done
ms=$(echo "$rates" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
[ "$ms" -gt 0 ] || ms=1
echo "ingest games $N positions $pos time_ms $ms games_per_s $((N * 1000 / ms)) positions_per_s $((pos * 1000 / ms))  (median of $RUNS)"

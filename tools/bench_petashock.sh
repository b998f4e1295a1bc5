#!/bin/sh
# tools/bench_petashock.sh — times `joseki peta-shock` on a synthetic DB2016 book
# (random legal lines from the start position, three candidate moves per position,
# transpositions and the odd repetition included). Run by `make bench`.
#
# Prints "peta-shock positions N time_ms T peak_rss_kb R input_bytes B", the median
# of BENCH_RUNS (default 3) runs, to compare with YaneuraOu's published figures:
# 3 million positions in about 4 minutes at about 7x the book file in memory.
# PETASHOCK_BENCH_POSITIONS overrides the size (default 3000000).
set -eu
J=${JOSEKI:-./joseki}
N=${PETASHOCK_BENCH_POSITIONS:-3000000}
RUNS=${BENCH_RUNS:-3}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT INT TERM
"$J" peta-shock --gen-bench "$N" "$DIR/in.db" --seed 1 >/dev/null
times="" rss=""
for _ in $(seq "$RUNS"); do
	line=$("$J" peta-shock "$DIR/in.db" "$DIR/out.db" --quiet | tail -n 1)
	times="$times $(echo "$line" | awk '{print $5}')"
	rss="$rss $(echo "$line" | awk '{print $7}')"
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "peta-shock positions $N time_ms $(echo "$times" | median) peak_rss_kb $(echo "$rss" | median) input_bytes $(wc -c <"$DIR/in.db")  (median of $RUNS)"

#!/bin/sh
# tools/bench_petashock.sh — times `joseki peta-shock` on a synthetic DB2016 book
# (random legal lines from the start position, three candidate moves per position,
# transpositions and the odd repetition included). Run by `make bench`.
#
# Prints "peta-shock positions N time_ms T peak_rss_kb R" (the command's own last
# line) and the input size, to compare with YaneuraOu's published figures: 3 million
# positions in about 4 minutes at about 7x the book file in memory.
# PETASHOCK_BENCH_POSITIONS overrides the size (default 300000).
set -eu
J=${JOSEKI:-./joseki}
N=${PETASHOCK_BENCH_POSITIONS:-300000}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT INT TERM
"$J" peta-shock --gen-bench "$N" "$DIR/in.db" --seed 1 >/dev/null
line=$("$J" peta-shock "$DIR/in.db" "$DIR/out.db" --quiet | tail -n 1)
bytes=$(wc -c <"$DIR/in.db")
echo "$line input_bytes $bytes"

#!/bin/sh
# make bench: the figures performance work quotes. Each figure is the median of
# BENCH_RUNS (default 3) runs. Long-running; never part of `make test`.
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
RUNS=${BENCH_RUNS:-3}


# perft: rows of tests/data/perft.tsv over 10^8 nodes (the smaller ones run in
# make test), then one figure line each.
grep -v '^#' tests/data/perft.tsv | while IFS="$(printf '\t')" read -r name sfen depth nodes; do
	[ "$nodes" -gt 100000000 ] || continue
	times=""
	for _ in $(seq "$RUNS"); do
		line=$($J perft "$depth" --sfen "$sfen" | tail -n 1)
		got=$(echo "$line" | awk '{print $4}')
		if [ "$got" != "$nodes" ]; then
			echo "bench: perft $name depth $depth: expected $nodes, got $got" >&2
			exit 1
		fi
		times="$times $(echo "$line" | awk '{print $6}')"
	done
	t=$(echo "$times" | tr ' ' '\n' | grep . | median)
	echo "perft $depth nodes $nodes time_ms $t  ($name, median of $RUNS)"
done

for extra in tools/bench_*.sh; do
	[ -x "$extra" ] || continue
	JOSEKI=$J "$extra"
done

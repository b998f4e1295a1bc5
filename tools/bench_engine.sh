#!/bin/sh
# make bench: the built-in engine's figure. Runs `joseki bench` BENCH_RUNS
# (default 3) times, checks the node count is the same each time (it is
# deterministic), and prints the run with the median time.
set -eu
J=${JOSEKI:-./joseki}
RUNS=${BENCH_RUNS:-3}
lines=""
for _ in $(seq "$RUNS"); do
	line=$($J bench 2>/dev/null | tail -n 1)
	lines="$lines$line
"
done
nodes=$(printf '%s' "$lines" | awk '{print $3}' | sort -u)
if [ "$(printf '%s\n' "$nodes" | wc -l)" -ne 1 ]; then
	echo "bench: built-in engine node counts differ between runs:" >&2
	printf '%s' "$lines" >&2
	exit 1
fi
printf '%s' "$lines" | sort -n -k5 | awk -v r="$RUNS" '{a[NR]=$0} END {print a[int((NR+1)/2)] "  (built-in engine, median of " r ")"}'

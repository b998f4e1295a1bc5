#!/bin/sh
# tools/bench_merge.sh — joseki merge's figures (docs/notes/bookdb.md, "Merge"), run by
# `make bench`.
#
# Two synthetic books of MERGE_BENCH_POSITIONS positions each (default 1000000;
# different seeds, so they share only the positions near the start) are merged:
# SRC into a fresh copy of DST, --no-minimax (the merge alone), BENCH_RUNS times
# (default 3), the median printed as source positions per second; then the
# same with --dry-run (reading and deciding, no writes) and a book into a copy
# of itself (every record looked at, nothing written). One line each:
#   merge positions N added A replaced R time_ms T positions_per_s P
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
N=${MERGE_BENCH_POSITIONS:-1000000}
RUNS=${BENCH_RUNS:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/joseki-bench-merge-XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM


$J synth "$dir/src" --positions "$N" --seed 1 >/dev/null
$J synth "$dir/dst" --positions "$N" --seed 2 >/dev/null

run() { # run LABEL DST-COPY-OF ARGS...: median of RUNS merges of src into a copy
	label=$1
	from=$2
	shift 2
	times=""
	for _ in $(seq "$RUNS"); do
		rm -rf "$dir/work"
		cp -r "$dir/$from" "$dir/work"
		sync
		out=$($J merge "$dir/work" "$dir/src" --no-minimax --json --quiet "$@")
		times="$times $(jfield time_ms "$out")"
	done
	t=$(echo "$times" | tr ' ' '\n' | grep . | median)
	pos=$(jfield positions "$out")
	echo "merge$label positions $pos added $(jfield added "$out") replaced $(jfield replaced "$out") time_ms $t positions_per_s $(awk -v n="$pos" -v t="$t" 'BEGIN {printf "%.0f", n * 1000 / (t > 0 ? t : 1)}')  (median of $RUNS)"
}

run "" dst
run "_dry_run" dst --dry-run
run "_into_its_copy" src

# A small book into a large one minimax has run on: the merge, then the
# incremental minimax over what it wrote (the usual case: a site's new work
# merged into the main book). MERGE_BENCH_SMALL positions (default 10000).
S=${MERGE_BENCH_SMALL:-10000}
$J minimax "$dir/dst" --full --quiet >/dev/null
$J synth "$dir/small" --positions "$S" --seed 3 >/dev/null
times=""
for _ in $(seq "$RUNS"); do
	rm -rf "$dir/work"
	cp -r "$dir/dst" "$dir/work"
	sync
	out=$($J merge "$dir/work" "$dir/small" --json --quiet)
	times="$times $(jfield time_ms "$out")"
done
t=$(echo "$times" | tr ' ' '\n' | grep . | median)
inc=$(echo "$out" | sed -n 's/.*"incremental": *\([a-z]*\).*/\1/p')
echo "merge_then_minimax positions $(jfield positions "$out") into $N added $(jfield added "$out") incremental $inc affected $(jfield affected "$out") time_ms $t  (median of $RUNS)"

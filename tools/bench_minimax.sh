#!/bin/sh
# tools/bench_minimax.sh — minimax and export on a synthetic book (the figures
# of docs/notes/minimax.md), run by `make bench`. MINIMAX_BENCH_POSITIONS positions (default
# 10000000; about 5 minutes and 4 GB of disk), BENCH_RUNS runs each (default 3):
#   minimax --full           the whole book (median time, peak RSS)
#   minimax --full --memory  the same with the children looked up in sorted runs
#                            (8 bytes a position of budget: the key index past
#                            half of it, as at 10^9 with 8G), and the phases of
#                            the last run
#   think 1000 + minimax     1,000 new results from the built-in engine
#                            (depth 2, MultiPV 8), then an incremental run
#                            (median of the runs' times; each run thinks anew)
#   export                   the YaneuraOu book (median time, file size)
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
N=${MINIMAX_BENCH_POSITIONS:-10000000}
RUNS=${BENCH_RUNS:-3}
RESULTS=${MINIMAX_BENCH_RESULTS:-1000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/joseki-bench-minimax-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

jnum() { echo "$2" | sed -n "s/.*\"$1\":\([-0-9]*\).*/\1/p"; }

$J synth "$tmp/book" --positions "$N" --seed 1 --quiet >/dev/null

times="" rss=""
for _ in $(seq "$RUNS"); do
	out=$($J minimax "$tmp/book" --full --json)
	times="$times $(jnum time_ms "$out")"
	rss="$rss $(jnum peak_rss_bytes "$out")"
done
full=$out
graph=$(wc -c <"$tmp/book/minimax.graph")
echo "minimax full positions $(jnum positions "$full") time_ms $(echo "$times" | tr ' ' '\n' | grep . | median) peak_rss_bytes $(echo "$rss" | tr ' ' '\n' | grep . | median) cyclic $(jnum cyclic "$full") sweeps $(jnum sweeps "$full") graph_bytes $graph  (median of $RUNS)"

times="" mem=$((N * 8 / 1048576 + 1))M
for _ in $(seq "$RUNS"); do
	out=$($J minimax "$tmp/book" --full --memory "$mem" --json)
	times="$times $(jnum time_ms "$out")"
done
phases=$(echo "$out" | sed -n 's/.*"phases_ms":{\([^}]*\)}.*/\1/p' | tr -d '"' | tr ',:' '  ')
echo "minimax full-sorted positions $(jnum positions "$out") memory $mem time_ms $(echo "$times" | tr ' ' '\n' | grep . | median) sorted_bytes $(jnum sorted_bytes "$out") phases_ms $phases  (median of $RUNS; phases of the last)"

times="" affected="" rewritten=""
for _ in $(seq "$RUNS"); do
	$J think "$tmp/book" --engine builtin --depth 2 --multipv 8 --positions "$RESULTS" --quiet >/dev/null
	out=$($J minimax "$tmp/book" --json)
	case "$out" in
	*'"incremental":true'*) ;;
	*) echo "bench: minimax after think was not incremental: $out" >&2; exit 1 ;;
	esac
	times="$times $(jnum time_ms "$out")"
	affected="$affected $(jnum affected "$out")"
	rewritten="$rewritten $(jnum rewritten "$out")"
done
echo "minimax incremental positions $(jnum positions "$out") changed $(jnum changed "$out") affected $(echo "$affected" | tr ' ' '\n' | grep . | median) rewritten $(echo "$rewritten" | tr ' ' '\n' | grep . | median) time_ms $(echo "$times" | tr ' ' '\n' | grep . | median)  (after think of $RESULTS results, median of $RUNS)"

times=""
for _ in $(seq "$RUNS"); do
	out=$($J export "$tmp/book" "$tmp/book.db" --json)
	times="$times $(jnum time_ms "$out")"
done
echo "export positions $(jnum positions "$out") time_ms $(echo "$times" | tr ' ' '\n' | grep . | median) bytes $(wc -c <"$tmp/book.db")  (median of $RUNS)"

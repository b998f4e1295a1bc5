#!/bin/sh
# tools/bench_bookdb.sh — the book store's figures (docs/notes/bookdb.md), run by `make bench`.
#
# Builds a synthetic book (8 analysed moves a position) of BOOKDB_BENCH_POSITIONS
# positions (default 1000000; set 10000000 for the 10-million-position figures)
# twice: bulk-loaded (sorted, LMDB append mode: what `synth` and a rebuild do)
# and by random-order puts through the batched writer (what ingestion does).
# Prints bytes per position on disk, inserts per second, and point lookups per
# second on the warm bulk-loaded book (moves-only lookups, as query and the
# selector do, and full-record lookups), through LMDB and through a snapshot
# index (bookdb/index.h: its build time and size, then the same lookups).
# Rates are wall clock and, in brackets, per CPU second of the process (a busy
# machine distorts the first).
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
N=${BOOKDB_BENCH_POSITIONS:-1000000}
LOOKUPS=${BOOKDB_BENCH_LOOKUPS:-2000000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/joseki-bench-bookdb-XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM

field() { # field NAME LINE: the value after NAME in a "name value ..." line
	echo "$2" | awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}'
}

for mode in sorted unsorted; do
	book="$dir/$mode"
	flag=""
	[ "$mode" = unsorted ] && flag="--unsorted"
	line=$($J synth "$book" --positions "$N" --seed 1 --quiet $flag)
	stats=$($J stats "$book" --json)
	bytes=$(jfield bytes "$stats")
	pos=$(jfield positions "$stats")
	bpp=$(awk -v b="$bytes" -v p="$pos" 'BEGIN {printf "%.1f", b / p}')
	echo "bookdb $mode insert: positions $pos inserts_per_s $(field inserts_per_s "$line") ($(field inserts_per_cpu_s "$line")/cpu-s) bytes $bytes bytes_per_position $bpp (synth total $(field time_ms "$line") ms)"
	if [ "$mode" = sorted ]; then
		# BENCH_RUNS (default 3) runs; each figure is the median of its runs.
		all=""
		for _ in $(seq "${BENCH_RUNS:-3}"); do
			all="$all
$($J stats "$book" --bench-lookups "$LOOKUPS")"
		done
		med() { # med LINE-PREFIX FIELD: the median of FIELD over the runs' lines
			echo "$all" | grep "^$1 " | while read -r line; do field "$2" "$line"; done |
				sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
		}
		echo "bookdb lookups: positions $pos lookups $LOOKUPS lookups_per_s $(med lookups lookups_per_s) ($(med lookups lookups_per_cpu_s)/cpu-s) full_record_lookups_per_s $(med lookups_full lookups_per_s) ($(med lookups_full lookups_per_cpu_s)/cpu-s)  (median of ${BENCH_RUNS:-3})"
		b=$(echo "$all" | grep '^index_build ' | tail -n 1)
		echo "bookdb index: positions $pos build_ms $(med index_build time_ms) (cpu $(med index_build cpu_ms) ms) bytes $(field bytes "$b") lookups_per_s $(med index_lookups lookups_per_s) ($(med index_lookups lookups_per_cpu_s)/cpu-s) full_record_lookups_per_s $(med index_lookups_full lookups_per_s) ($(med index_lookups_full lookups_per_cpu_s)/cpu-s)  (median of ${BENCH_RUNS:-3})"
	fi
	rm -rf "$book"
done

# tools/bench-lib.sh — helpers the benchmark scripts share (sourced, not run;
# its name keeps it out of bench.sh's tools/bench_*.sh loop).

# median: the median of the numbers on stdin (one a line or blank-separated).
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# jfield NAME JSON: a number field of a flat JSON object.
jfield() {
	echo "$2" | sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"
}

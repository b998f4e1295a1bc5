# tools/bench-lib.sh — helpers the benchmark scripts share (sourced, not run;
# its name keeps it out of bench.sh's tools/bench_*.sh loop).

# median: the median of the numbers on stdin (one a line or blank-separated).
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# jfield NAME JSON: a number field of a flat JSON object.
jfield() {
	echo "$2" | sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"
}

# need_fairy NAME PATH: exits 1 with NAME's message unless PATH (fairy-stockfish)
# is there to run.
need_fairy() {
	if [ ! -x "$2" ]; then
		echo "$1: fairy-stockfish is not installed ($2 not found): run tools/install-deps.sh" \
			"(Debian package fairy-stockfish), or set FAIRY_STOCKFISH" >&2
		exit 1
	fi
}

# work_dir DIR: sets W to DIR (made if need be), or with DIR empty to a new
# temporary directory removed when the script exits.
work_dir() {
	if [ -n "$1" ]; then
		W=$1
		mkdir -p "$W"
	else
		W=$(mktemp -d)
		trap 'rm -rf "$W"' EXIT
	fi
}

# suite N: the first N real openings of tests/data/positions/openings-v1.sfen
# (floodgate games, 12-24 plies) into $W/openings.txt; n gets how many.
suite() {
	grep -v '^#' tests/data/positions/openings-v1.sfen | grep . | head -n "$1" >"$W/openings.txt"
	n=$(wc -l <"$W/openings.txt")
}

#!/bin/sh
# tools/bench_petashock.sh — times `joseki peta-shock`. Run by `make bench`.
#
# Without YANEURAOU: the joseki figure alone, on a synthetic DB2016 book
# (`joseki peta-shock --gen-bench`: random legal lines from the start position,
# three candidate moves per position). Prints "peta-shock positions N time_ms T
# peak_rss_kb R input_bytes B", the median of BENCH_RUNS (default 3) runs;
# PETASHOCK_BENCH_POSITIONS sets the size (default 3000000).
#
# With YANEURAOU=/path/to/YaneuraOu (a build with the makebook commands, e.g.
# its YANEURAOU_ENGINE_MATERIAL edition): the two side by side on a synth book
# exported with all moves (`joseki synth` + `joseki export --moves all`,
# PETASHOCK_YO_POSITIONS positions, default 2000000), runs alternating
# (joseki, YaneuraOu, joseki, ...), each the whole process timed on the wall
# clock; checks that the outputs are the same (YaneuraOu writes CRLF, so line
# endings aside) and prints the medians and their ratio:
#   peta-shock-vs-yaneuraou positions N input_bytes B joseki_ms J yaneuraou_ms Y
#   ratio X joseki_rss_kb RJ yaneuraou_rss_kb RY same_output yes  (median of 3)
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
RUNS=${BENCH_RUNS:-3}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT INT TERM
now_ms() { date +%s%3N; }

if [ -z "${YANEURAOU:-}" ]; then
	N=${PETASHOCK_BENCH_POSITIONS:-3000000}
	"$J" peta-shock --gen-bench "$N" "$DIR/in.db" --seed 1 >/dev/null
	times="" rss=""
	for _ in $(seq "$RUNS"); do
		line=$("$J" peta-shock "$DIR/in.db" "$DIR/out.db" --quiet | tail -n 1)
		times="$times $(echo "$line" | awk '{print $5}')"
		rss="$rss $(echo "$line" | awk '{print $7}')"
	done
	echo "peta-shock positions $N time_ms $(echo "$times" | median) peak_rss_kb $(echo "$rss" | median) input_bytes $(wc -c <"$DIR/in.db")  (median of $RUNS)"
	exit 0
fi

N=${PETASHOCK_YO_POSITIONS:-2000000}
YO=$(cd "$(dirname "$YANEURAOU")" && pwd)/$(basename "$YANEURAOU")
"$J" synth "$DIR/book" --positions "$N" --seed 1 --quiet >/dev/null
"$J" export "$DIR/book" "$DIR/in.db" --moves all --quiet >/dev/null
rm -rf "$DIR/book"
# BookFile no_book and a 1 MB hash: YaneuraOu loads nothing it does not need.
cat >"$DIR/yo.cmd" <<EOF
setoption name BookDir value $DIR
setoption name BookFile value no_book
setoption name FlippedBook value true
setoption name USI_Hash value 1
makebook peta_shock in.db out_yo.db
quit
EOF
# Peak RSS of a child in kB, when GNU time is there.
TIME=$(command -v /usr/bin/time || true)
jt="" yt="" jr="" yr=""
for _ in $(seq "$RUNS"); do
	t0=$(now_ms)
	if [ -n "$TIME" ]; then
		"$TIME" -f %M -o "$DIR/rss" "$J" peta-shock "$DIR/in.db" "$DIR/out_j.db" --quiet >/dev/null
		jr="$jr $(tail -n 1 "$DIR/rss")"
	else
		"$J" peta-shock "$DIR/in.db" "$DIR/out_j.db" --quiet >/dev/null
	fi
	t1=$(now_ms)
	jt="$jt $((t1 - t0))"
	rm -f "$DIR/out_yo.db"
	t0=$(now_ms)
	if [ -n "$TIME" ]; then
		(cd "$DIR" && "$TIME" -f %M -o "$DIR/rss" "$YO" <"$DIR/yo.cmd" >"$DIR/yo.log" 2>&1)
		yr="$yr $(tail -n 1 "$DIR/rss")"
	else
		(cd "$DIR" && "$YO" <"$DIR/yo.cmd" >"$DIR/yo.log" 2>&1)
	fi
	t1=$(now_ms)
	yt="$yt $((t1 - t0))"
	if [ ! -s "$DIR/out_yo.db" ]; then
		echo "bench: YaneuraOu wrote no book; its log:" >&2
		tail -n 20 "$DIR/yo.log" >&2
		exit 1
	fi
	if ! tr -d '\r' <"$DIR/out_yo.db" | cmp -s - "$DIR/out_j.db"; then
		echo "bench: joseki peta-shock and YaneuraOu makebook peta_shock outputs differ" >&2
		exit 1
	fi
done
jm=$(echo "$jt" | median)
ym=$(echo "$yt" | median)
echo "peta-shock-vs-yaneuraou positions $N input_bytes $(wc -c <"$DIR/in.db") joseki_ms $jm yaneuraou_ms $ym ratio $(awk -v j="$jm" -v y="$ym" 'BEGIN {printf "%.2f", y / j}') joseki_rss_kb $(echo "$jr" | median) yaneuraou_rss_kb $(echo "$yr" | median) same_output yes  (median of $RUNS, alternating; runs joseki $jt, yaneuraou $yt)"

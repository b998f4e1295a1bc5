#!/bin/sh
# tools/same_outputs.sh OLD NEW [DIR] — do two joseki binaries give the same
# books and outputs? For a change meant to keep behaviour (a refactoring):
# build the old commit beside the new one and run this on both binaries.
#
# Each binary builds a book from tests/data/floodgate (ingest, then think
# --depth 1 --positions 300 with the built-in engine, which is deterministic).
# Then each binary, on a copy of each of the two books (four runs), runs
# minimax (incremental, then --full), export (YaneuraOu best moves and all
# moves, Apery), query (text and --json) at five positions, the selector's
# next leaves (select: cover, pv, from the games' positions), stats --json,
# check, and peta-shock on the all-moves export. Every output of the four runs
# is compared with OLD's on OLD's book: files byte for byte, printed lines
# with times, rates, memory figures, file sizes and paths blanked out. One line per
# difference (then `diff` shows it: DIR keeps everything); exit 1 if any.
set -eu
[ $# -ge 2 ] || {
	echo "usage: tools/same_outputs.sh OLD_JOSEKI NEW_JOSEKI [DIR]" >&2
	exit 2
}
A=$1
B=$2
D=${3:-$(mktemp -d "${TMPDIR:-/tmp}/joseki-same-XXXXXX")}
DATA=$(cd "$(dirname "$0")/../tests/data/floodgate" && pwd)
rm -rf "$D"
mkdir -p "$D"
POS="startpos
startpos moves 7g7f
startpos moves 2g2f 8c8d
startpos moves 7g7f 3c3d 2g2f
startpos moves 7g7f 8c8d 2g2f 8d8e"

# Times, rates, memory and the run's own paths vary from run to run; so do
# the number of think's commits (it commits every so many seconds) and with
# them the book file's size and free pages (stats' bytes and pages), with
# either binary: the records are compared instead.
norm() {
	sed -E -e "s#$D/[A-Z]-on-[A-Z]/#DIR/#g; s#$D/book[A-Z]#BOOK#g" \
		-e 's/"(time_ms|peak_rss_bytes|[a-z_]*_ms)":[0-9.]+/"\1":T/g' \
		-e 's/"(bytes[a-z_]*|pages_used|pages_free)":[0-9.]+/"\1":T/g; s/commits [0-9]+/commits T/' \
		-e 's/(time_s|per_s|engine_s|busy_pct|time_ms|peak_rss_kb|peak_anon_mb|files_mb|[a-z]+_ms) [0-9.]+/\1 T/g' \
		-e 's/[0-9.]+ (s|ms)([ ,)]|$)/T \1\2/g; s/\([0-9.]+ games\/s\)/(T games\/s)/' "$1"
}

for x in A B; do
	eval j=\$$x
	"$j" ingest "$D/book$x" "$DATA" --quiet >"$D/ingest$x.txt"
	"$j" think "$D/book$x" --engine builtin --depth 1 --positions 300 --quiet >"$D/think$x.txt"
done
for bk in A B; do
	for x in A B; do
		eval j=\$$x
		o="$D/$x-on-$bk"
		mkdir -p "$o"
		cp -r "$D/book$bk" "$o/book"
		"$j" minimax "$o/book" --json >"$o/minimax.json"
		"$j" minimax "$o/book" --full --json >"$o/minimax-full.json"
		"$j" export "$o/book" "$o/yane.db" --quiet >"$o/export.txt"
		"$j" export "$o/book" "$o/all.db" --moves all --quiet >"$o/export-all.txt"
		"$j" export "$o/book" "$o/apery.bin" --format apery --quiet >"$o/export-apery.txt"
		i=0
		echo "$POS" | while read -r p; do
			i=$((i + 1))
			"$j" query "$o/book" "$p" --json >"$o/query$i.json"
			"$j" query "$o/book" "$p" >"$o/query$i.txt"
		done
		"$j" select "$o/book" --count 50 --json >"$o/select.json"
		"$j" select "$o/book" --count 20 --select pv --json >"$o/select-pv.json"
		"$j" select "$o/book" --count 20 --roots-from-games 5 --json >"$o/select-roots.json"
		"$j" stats "$o/book" --json >"$o/stats.json"
		"$j" check "$o/book" >"$o/check.txt"
		"$j" peta-shock "$o/all.db" "$o/peta.db" --quiet >"$o/peta.txt"
	done
done

bad=0
same() { # what, file a, file b
	case $2 in
	*.txt | *.json) norm "$2" >"$2.norm"; norm "$3" >"$3.norm"; a=$2.norm b=$3.norm ;;
	*) a=$2 b=$3 ;;
	esac
	if ! cmp -s "$a" "$b"; then
		echo "differs: $1: diff $a $b"
		bad=1
	fi
}
same "ingest's summary" "$D/ingestA.txt" "$D/ingestB.txt"
same "think's summary" "$D/thinkA.txt" "$D/thinkB.txt"
for run in A-on-B B-on-A B-on-B; do
	for f in "$D/A-on-A"/*; do
		n=${f##*/}
		case $n in book | *.norm) continue ;; esac
		same "$run $n" "$f" "$D/$run/$n"
	done
done
[ $bad = 0 ] && echo "same outputs: 2 books, 4 runs, $(ls "$D/A-on-A" | grep -vc 'book\|norm') outputs each ($D)"
exit $bad

#!/bin/bash
# tools/soak.sh — `make soak`: random SIGKILLs over every command that writes a
# book, each followed by `check` and a resumed run; at the end the book must
# equal one built by the same steps without kills.
#
#   SOAK_KILLS   kills in all (default 100), spread evenly over the steps
#   SOAK_SEED    seed of the kill times (default: the clock)
#   SOAK_GAMES   generated games to ingest (default 3000)
#   SOAK_DIR     working directory (default: a new one under $TMPDIR, removed
#                at the end unless the soak fails)
#
# The steps, in this order, on both books:
#   ingest     generated games and the floodgate fixtures
#   import     a YaneuraOu book made from other generated games
#   think      the built-in engine (1 engine, fixed nodes) until SOAK_THINK
#              (default 200) more positions are thought than after the import
#   minimax    --full
#   think      until 2 × SOAK_THINK more
#   merge      the side book (other games, thought, minimax run) into it
#   minimax    incremental
#   compact
# A killed step is checked (`joseki check` must pass: the book opens and every
# record reads) and run again until it ends by itself. `think` thinks the
# positions along other generated games (--from-kifu, in their order, skipping
# what is thought) and is resumed with the positions still missing, so both
# books think the same positions; with one engine and a hash cleared per
# position the answers are the same. (Left to the selector instead, a resumed
# run may choose other leaves than an uninterrupted one: the selector's
# transposition edges depend on the order its graph was built in.)
# Compared at the end: `export --moves all` byte for byte, `stats --json` (the
# counts kept through the kills) and `stats --scan --json` (counted; both
# without the page counts, which depend on history, and the scan's time and
# memory), and `query startpos --json`.
set -u
J=${JOSEKI:-$(pwd)/joseki}
KILLS=${SOAK_KILLS:-100}
SEED=${SOAK_SEED:-$(date +%s)}
GAMES=${SOAK_GAMES:-3000}
FLOODGATE=${SOAK_FLOODGATE:-tests/data/floodgate}
if [ -n "${SOAK_DIR:-}" ]; then
	tmp=$SOAK_DIR
	mkdir -p "$tmp"
else
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/joseki-soak-XXXXXX")
fi
RANDOM=$SEED
THINK=(--engine builtin --engines 1 --nodes 20000 --multipv 3 --quiet
	--from-kifu "$tmp/games3/games-000000.csa")
STEPS=(ingest import think1 minimax_full think2 merge minimax_inc compact)
THINK_STEP=${SOAK_THINK:-200}

die() {
	echo "soak: $*" >&2
	echo "soak: seed $SEED; the books are kept in $tmp" >&2
	exit 1
}

thought() {
	"$J" stats "$1" --json | sed -n 's/.*"thought":\([0-9]*\).*/\1/p'
}

# The command line of a step on book $1 (think: the positions still missing).
step_cmd() {
	local book=$1 step=$2
	case $step in
	ingest) echo "$J" ingest "$book" "$tmp/games" "$FLOODGATE" --quiet ;;
	import) echo "$J" import "$book" "$tmp/import.db" ;;
	think1 | think2)
		local want have
		want=$((BASE + ${step#think} * THINK_STEP))
		have=$(thought "$book") || return 1
		[ "$have" -ge "$want" ] && return 0
		echo "$J" think "$book" "${THINK[@]}" --positions $((want - have))
		;;
	merge) echo "$J" merge "$book" "$tmp/side" --quiet ;;
	minimax_full) echo "$J" minimax "$book" --full --quiet ;;
	minimax_inc) echo "$J" minimax "$book" --quiet ;;
	compact) echo "$J" compact "$book" ;;
	esac
}

# Runs a step to its end without kills; prints the commands' wall time in ms.
run_step() {
	local book=$1 step=$2 cmd t0 ms=0
	while :; do
		cmd=$(step_cmd "$book" "$step") || die "$step: stats failed on $book"
		[ -z "$cmd" ] && break
		t0=$(date +%s%N)
		$cmd >/dev/null 2>"$tmp/err" || die "$step failed on $book: $(cat "$tmp/err")"
		ms=$((ms + ($(date +%s%N) - t0) / 1000000))
		case $step in think*) ;; *) break ;; esac
	done
	echo $ms
}

summary() {
	local book=$1 name=$2
	"$J" export "$book" "$tmp/$name.db" --moves all --quiet >/dev/null ||
		die "export of $book failed"
	# The kept counts first (read, as a killed writer left them), then the
	# scan's (counted): both must equal the reference's.
	"$J" stats "$book" --json | sed -E 's/"(bytes[a-z_]*|page[a-z_]*|leaves[a-z_]*|corrupt)":[0-9.a-z]*,?//g' >"$tmp/$name.stats"
	"$J" stats "$book" --scan --json |
		sed -E 's/"(bytes[a-z_]*|page[a-z_]*|leaves_at|peak_anon_bytes)":[0-9.a-z]*,?//g' >>"$tmp/$name.stats"
	"$J" query "$book" startpos --json >"$tmp/$name.query" || die "query on $book failed"
}

echo "soak: seed $SEED, $KILLS kills, $GAMES games, in $tmp"
"$J" gen-games "$tmp/games" --games "$GAMES" --seed 1 >/dev/null || die "gen-games failed"
"$J" gen-games "$tmp/games2" --games 300 --seed 2 >/dev/null || die "gen-games failed"
"$J" gen-games "$tmp/games3" --games 40 --seed 3 >/dev/null || die "gen-games failed"
"$J" ingest "$tmp/side" "$tmp/games2" --quiet >/dev/null || die "side ingest failed"
"$J" think "$tmp/side" --engine builtin --nodes 20000 --multipv 3 --quiet --positions 100 \
	>/dev/null || die "side think failed"
"$J" minimax "$tmp/side" --full --quiet >/dev/null || die "side minimax failed"
"$J" export "$tmp/side" "$tmp/import.db" --moves all --quiet >/dev/null || die "side export failed"

# The reference, and each step's time (the range the kill times are drawn from).
declare -A dur
BASE=0
for s in "${STEPS[@]}"; do
	dur[$s]=$(run_step "$tmp/ref" "$s")
	[ "$s" = import ] && BASE=$(thought "$tmp/ref")
	echo "soak: reference $s ${dur[$s]} ms"
done
summary "$tmp/ref" ref

# Rounds: each builds a new book through every step with up to SOAK_PER_STEP
# (default 4) kills a step, and is compared with the reference; rounds go on
# until SOAK_KILLS kills were made.
per=${SOAK_PER_STEP:-4}
total=0 checks=0 resumed=0 rounds=0
declare -A killed
for s in "${STEPS[@]}"; do killed[$s]=0; done
while [ "$total" -lt "$KILLS" ]; do
	rounds=$((rounds + 1))
	book=$tmp/book$rounds
	for s in "${STEPS[@]}"; do
		n=0
		while :; do
			cmd=$(step_cmd "$book" "$s") || die "$s: stats failed after a kill"
			if [ -z "$cmd" ]; then break; fi
			if [ "$n" -ge "$per" ] || [ "$total" -ge "$KILLS" ]; then
				$cmd >/dev/null 2>"$tmp/err" || die "$s (resumed) failed: $(cat "$tmp/err")"
				resumed=$((resumed + 1))
				case $s in think*) continue ;; *) break ;; esac
			fi
			# A kill time in [5 ms, the step's time without kills].
			d=${dur[$s]}
			[ "$d" -lt 20 ] && d=20
			ms=$((5 + (RANDOM * 32768 + RANDOM) % d))
			t0=$(date +%s%N)
			$cmd >/dev/null 2>"$tmp/err" &
			pid=$!
			sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
			if kill -9 "$pid" 2>/dev/null; then
				wait "$pid" 2>/dev/null
				n=$((n + 1))
				killed[$s]=$((killed[$s] + 1))
				total=$((total + 1))
				"$J" check "$book" >"$tmp/check" 2>&1 ||
					die "check failed after kill $total ($s at $ms ms): $(cat "$tmp/check")"
				checks=$((checks + 1))
				if [ -t 2 ]; then printf '\rsoak: round %d, %d kills, %s' "$rounds" "$total" "$s      " >&2; fi
			else
				wait "$pid" || die "$s failed: $(cat "$tmp/err")"
				resumed=$((resumed + 1))
				# It ended before the kill: draw later kill times from the
				# time it took (the reference's may be longer than a run's).
				el=$((($(date +%s%N) - t0) / 1000000))
				[ "$el" -lt "${dur[$s]}" ] && dur[$s]=$el
				case $s in think*) ;; *) break ;; esac
			fi
		done
	done
	[ -t 2 ] && echo >&2
	summary "$book" book
	cmp -s "$tmp/ref.db" "$tmp/book.db" || die "round $rounds: export differs: diff $tmp/ref.db $tmp/book.db"
	cmp -s "$tmp/ref.stats" "$tmp/book.stats" ||
		die "round $rounds: stats differ: $(cat "$tmp/ref.stats") vs $(cat "$tmp/book.stats")"
	cmp -s "$tmp/ref.query" "$tmp/book.query" || die "round $rounds: query startpos differs"
	echo "soak: round $rounds equal to the reference after $total kills"
	[ -z "${SOAK_DIR:-}" ] && rm -rf "$book"
done

line=""
for s in "${STEPS[@]}"; do line="$line $s ${killed[$s]}"; done
echo "soak: kills by step:$line"
echo "soak kills $total rounds $rounds checks_passed $checks runs_to_end $resumed positions $(thought "$tmp/ref") export_bytes $(wc -c <"$tmp/ref.db") equal 1 seed $SEED"
[ -z "${SOAK_DIR:-}" ] && rm -rf "$tmp"
exit 0

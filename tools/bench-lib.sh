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

# iec_bytes SIZE: the bytes of a size as joseki's --memory takes it (2400M, 8G, 1.5G, 3g,
# 3GB, 3GiB: powers of 1024), nothing when it is not one.
iec_bytes() {
	echo "$1" | tr a-z A-Z | sed 's/I\{0,1\}B$//' | numfmt --from=iec 2>/dev/null || true
}

# hold_memory NAME BYTES FILE: the machine made to look as if it had BYTES of memory (a
# benchmark's stand-in for a smaller machine): the last hold given back (unless it held the
# same), then all of its memory above BYTES held locked by $MEMHOLD
# (tools/memhold/memhold.c; default build/memhold beside this script's tools/), less what
# is locked already (another program's counts as held); its process in HELD, its words in
# FILE, what it holds said on stderr; 1 with the reason there when it cannot be. Less than
# 1024M is not left (the machine's own services need room): 1024M instead, said. Locking
# takes about a second a GB. The hold ends with the script (or at hold_release). Needs
# root; the machine otherwise idle (what other processes hold is not counted: more than
# 1024M of it, read before the hold, is said). hold_lost says whether the hold ended.
HELD=
HELD_FOR=
MEMHOLD=${MEMHOLD:-$(dirname "$0")/../build/memhold}
hold_memory() {
	want=$2
	if [ "$want" -lt 1073741824 ]; then
		echo "$1: $((want / 1048576))M would leave the machine too little to run on: 1024M left instead" >&2
		want=1073741824
	fi
	[ -n "$HELD" ] && [ "$HELD_FOR" = "$want" ] && kill -0 "$HELD" 2>/dev/null && return 0
	hold_release
	# h: the bytes to hold; busy: the MiB other processes hold (not the page cache, not
	# what is locked), read before the hold: it squeezes the memory left, so the run then
	# stands for a smaller machine than asked.
	read -r h busy <<MEMINFO
$(awk -v want="$want" '/^(MemTotal|MemAvailable|Unevictable|Hugetlb):/ {
		kb[$1] = $2
	} END {
		printf "%.0f %.0f\n", (kb["MemTotal:"] - kb["Unevictable:"] - kb["Hugetlb:"]) * 1024 - want,
			(kb["MemTotal:"] - kb["MemAvailable:"] - kb["Unevictable:"]) / 1024
	}' /proc/meminfo)
MEMINFO
	if [ "$h" -le 0 ]; then
		echo "$1: $((want / 1048576))M is not less than what this machine has unlocked" \
			"($(((h + want) / 1048576))M): nothing held, the whole machine used" >&2
		return 0
	fi
	if [ ! -x "$MEMHOLD" ]; then
		echo "$1: no memory hold program at $MEMHOLD (make build/memhold)" >&2
		return 1
	fi
	: >"$3"
	"$MEMHOLD" "$h" $$ >"$3" 2>&1 &
	HELD=$!
	HELD_FOR=$want
	until grep -q '^held' "$3"; do
		if ! kill -0 "$HELD" 2>/dev/null; then
			echo "$1: cannot hold the machine's memory: $(cat "$3")" >&2
			HELD=
			return 1
		fi
		sleep 0.2
	done
	echo "$1: $(cat "$3") of the machine's memory, $((want / 1048576))M left" >&2
	if [ "$busy" -gt 1024 ]; then
		echo "$1: other processes hold about ${busy}M (the kernel's own a few hundred): the" \
			"machine is not idle, so this stands for less memory than $((want / 1048576))M" >&2
	fi
}

# iec_kib KIB [up]: a size in KiB said in MiB below 10 GiB, else in GiB (e.g. 512 MiB,
# 75 GiB), rounded down, or up when the second argument is "up".
iec_kib() {
	u=1024
	[ "$1" -lt 10485760 ] || u=1048576
	r=0
	[ "${2:-}" = up ] && r=$((u - 1))
	if [ "$u" = 1024 ]; then echo "$((($1 + r) / u)) MiB"; else echo "$((($1 + r) / u)) GiB"; fi
}

# hold_lost: true when a hold was made and its process has ended (the kernel's OOM killer
# ends it when something else needs the memory): what ran since did not run held.
hold_lost() {
	[ -n "$HELD" ] && ! kill -0 "$HELD" 2>/dev/null
}

# hold_release: the memory hold_memory held given back (nothing when none).
hold_release() {
	if [ -n "$HELD" ]; then
		kill "$HELD" 2>/dev/null || true
		wait "$HELD" 2>/dev/null || true
		HELD=
		HELD_FOR=
	fi
}

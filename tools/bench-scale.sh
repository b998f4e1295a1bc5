#!/bin/sh
# tools/bench-scale.sh — `make bench-scale`: every whole-book command on a synthetic book of
# SCALE_POSITIONS positions (default 100000000), then again how its time and memory grow from
# SCALE_SMALL (default 10000000) to that: the measure of issue 43, "a billion positions on one
# machine" (docs/notes/bookdb.md, "Scale"). Not part of `make test`.
#
# The commands, in this order, each on the book the one before left (sizes: a book of N):
#   synth, minimax --full, minimax (incremental: after N/1000 + 100 positions more, added by an
#   untimed synth), export (yaneuraou, apery, and a partial one: --max-ply 40 --min-depth 15),
#   peta-shock on the exported YaneuraOu book, merge (the book into a new one: a whole-book
#   merge, then its minimax), check, backup, compact, stats, stats --scan, query startpos, select --count 10
#   (the first leaves; it keeps its snapshot in the book, left there), serve (listening, then the first /v1/query answered) and serve --work
#   (the coordinator: listening, then the first acquire answered, through `joseki bench-work`
#   with one client). Each prints one line
#     bench-scale: CMD positions N wall_s W cpu_s C peak_anon_mb M disk_bytes D positions_per_s R
#   W wall seconds (the services: from the start to the first answer; their line adds listen_s
#   and first_query_s or first_acquire_s), C user+system CPU seconds of the command and its
#   children, M the peak of the anonymous resident memory (resident less file-backed and
#   shared: a mapped book's pages are not counted) summed over the command's joseki
#   processes, sampled from /proc every 0.1 s from outside, so commands that do not print it
#   are measured too (a peak shorter than that may be missed: n/a when the run ended before
#   the sampler's first look, not 0); D the bytes of what the
#   command wrote (the book for synth, minimax, compact; the output file or directory for
#   export, peta-shock, merge, backup), or of the book it read; R = N / W. A command that
#   fails or runs past SCALE_TIMEOUT seconds (default 3600) prints
#     bench-scale: CMD positions N failed (reason)
#   and the bench goes on. Then a line a command measured at both sizes:
#     bench-scale: CMD growth time_exponent E cpu_exponent G memory_exponent F
#   E = ln(W_N / W_small) / ln(N / small), G and F the same of C and M (1: linear; 0: flat;
#   n/a where a figure was 0, a run too short for the sampler). On a shared machine the
#   wall times follow its load: G is the one to trust.
#
# SCALE_DIR: the work directory (default a new one under /var/tmp, removed at the end; one
# given is kept, its books removed as each size ends). The bench refuses to start when its
# file system has less free than 600 bytes a position of N (measured at 10 M: the book about
# 100 bytes a position after synth, 260 with minimax's graph file; the merged copy 175; an
# export's output and its spill files 210; each side output is removed once measured). SCALE_MEMORY (e.g. 1G) is passed as --memory to every
# command whose --help lists it. SCALE_RAM (e.g. 2400M) runs the bench inside a memory
# control group of that size (Linux cgroup v1 or v2; root only): the commands' own memory and
# the page cache they fill together stay within it, as on a machine with that RAM. So a book
# ten times smaller than this machine's share stands for one ten times larger: 10^8
# positions with SCALE_RAM=2400M (and SCALE_MEMORY=800M) are 10^9 on 24 GB with
# --memory 8G, the size whose disk this machine lacks. A command the kernel kills for going
# over it fails ("killed"). SCALE_HOLD=1 (root) makes the machine that size another way:
# no group, but the rest of its memory held locked for the while (MEMHOLD, the program of
# tools/memhold/memhold.c that `make bench-scale` builds), so the page cache is what is left
# and the kernel reclaims it as on a machine with that RAM; joseki's commands count locked
# memory out of theirs (their defaults follow). The machine must be otherwise idle, since
# everything on it is squeezed. SCALE_SMOKE=1: a tiny form, 100,000 and 20,000 positions
# unless given, that tests/tools/test_bench_scale.c runs so that this script cannot rot.
#
# SCALE_ONLY (e.g. "minimax-full select serve-work"; the names: COMMANDS below): only these
# commands (synth always, the book being made by it; peta-shock's input exported untimed
# when export-yaneuraou is not asked for), and the free disk asked for is what they need
# (below, need_of: 110 bytes a position for synth and the commands that only read the book,
# 340 with minimax, 600 with a copy or an export): the size a disk holds a book of for
# minimax but not for the copies and exports, or for the readers but not for minimax. Blank: every command. Where
# SCALE_RATIO=1, the smaller size runs within SCALE_RAM and SCALE_MEMORY scaled down by
# SCALE_SMALL / SCALE_POSITIONS, so both sizes stand for the same machine and the growth
# lines say how time grows at a fixed ratio of book to memory (10^8 in 2400M and 2*10^8 in
# 4800M are both 10^9 on 24 GB). SCALE_COLD=1 (root): the whole machine's page cache
# dropped before each command, as after a restart (refused without root). SCALE_KEEP=1 (with
# SCALE_DIR): the book of SCALE_POSITIONS left in SCALE_DIR/book-N at the end, for
# measurements of one's own.
set -u
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
# The name the kernel gives its processes (/proc/PID/comm: the file's name, 15
# bytes at most), whatever JOSEKI is called (a copy, joseki-bench).
JCOMM=$(basename "$J" | cut -c1-15)
if [ "${SCALE_SMOKE:-0}" = 1 ]; then
	N=${SCALE_POSITIONS:-100000}
	SMALL=${SCALE_SMALL:-20000}
else
	N=${SCALE_POSITIONS:-100000000}
	SMALL=${SCALE_SMALL:-10000000}
fi
TIMEOUT=${SCALE_TIMEOUT:-3600}
KEEP=${SCALE_KEEP:-0}
if [ "$KEEP" != 0 ] && [ "$KEEP" != 1 ]; then
	echo "bench-scale: SCALE_KEEP '$KEEP' is not 0 or 1" >&2
	exit 2
elif [ "$KEEP" = 1 ] && [ -z "${SCALE_DIR:-}" ]; then
	echo "bench-scale: SCALE_KEEP=1 keeps the book in SCALE_DIR: set SCALE_DIR too" >&2
	exit 2
fi
MEM=${SCALE_MEMORY:-}
RAM=${SCALE_RAM:-}
HOLD=${SCALE_HOLD:-0}
case $HOLD in 0 | 1) ;; *)
	echo "bench-scale: SCALE_HOLD '$HOLD' is not 0 or 1" >&2
	exit 2
	;;
esac
if [ "$HOLD" = 1 ] && [ -z "$RAM" ]; then
	echo "bench-scale: SCALE_HOLD=1 holds what is above SCALE_RAM: give SCALE_RAM too" >&2
	exit 2
fi
ONLY=$(echo ${SCALE_ONLY:-}) # blank: every command
RATIO=${SCALE_RATIO:-0}
case $RATIO in 0 | 1) ;; *)
	echo "bench-scale: SCALE_RATIO '$RATIO' is not 0 or 1" >&2
	exit 2
	;;
esac
COMMANDS="synth minimax-full minimax-incremental export-yaneuraou peta-shock export-apery"
COMMANDS="$COMMANDS export-partial merge check backup compact stats stats-scan query select"
COMMANDS="$COMMANDS serve serve-work"
for c in $ONLY; do
	case " $COMMANDS " in *" $c "*) ;; *)
		echo "bench-scale: SCALE_ONLY: no command '$c' (the commands: $COMMANDS)" >&2
		exit 2
		;;
	esac
done
# wanted CMD: whether CMD is measured (all of them without SCALE_ONLY).
wanted() {
	[ -z "$ONLY" ] || [ "$1" = synth ] && return 0
	case " $ONLY " in *" $1 "*) return 0 ;; esac
	return 1
}
# need_of CMD: bytes of free disk a position CMD needs, with what the commands before it
# leave (measured at 10 M: the book about 100 bytes a position after synth, 110 written anew
# by minimax beside the old one, 55 its graph file, 60 its arrays in files at the ratio; the
# merged copy 175; an export's output and its spill files 210; each side output is removed
# once measured).
need_of() {
	case $1 in
	minimax-*) echo 340 ;;
	export-* | peta-shock | merge | backup | compact) echo 600 ;;
	*) echo 110 ;;
	esac
}
# need_what BYTES: what need_of's figure is for.
need_what() {
	case $1 in
	110) echo "the book (synth and the commands that only read it)" ;;
	340) echo "the book, its copy written anew by minimax, its graph file and arrays in files" ;;
	*) echo "the book and its minimax graph, a copy of it for merge, backup and compact, one export at a time" ;;
	esac
}
PER_POS=0 # bytes of free disk a position of N the bench needs: the most of its commands'
for c in $COMMANDS; do
	if wanted "$c"; then
		k=$(need_of "$c")
		[ "$k" -gt "$PER_POS" ] && PER_POS=$k
	fi
done

if [ "$SMALL" -ge "$N" ]; then
	echo "bench-scale: SCALE_SMALL ($SMALL) must be below SCALE_POSITIONS ($N)" >&2
	exit 2
fi
if [ -n "${SCALE_DIR:-}" ]; then
	W=$SCALE_DIR
	mkdir -p "$W" || exit 1
else
	W=$(mktemp -d /var/tmp/joseki-scale.XXXXXX) || exit 1
fi
pids=
CG=    # the memory control group the bench runs in (SCALE_RAM), made by ram_group
CGTOP= # the hierarchy's top group, where the bench goes back before removing CG
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	hold_release
	if [ -n "$CG" ]; then
		echo $$ >"$CGTOP/cgroup.procs" 2>/dev/null
		# (A process of the bench's that is still ending keeps the group a moment.)
		for i in 1 2 3 4 5 6 7 8 9 10; do
			rmdir "$CG" 2>/dev/null && break
			sleep 0.2
		done
	fi
	if [ -z "${SCALE_DIR:-}" ]; then rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

avail=$(df -Pk "$W" | awk 'NR == 2 {print $4}')
need=$((N * PER_POS / 1024))
if [ "$avail" -lt "$need" ]; then
	echo "bench-scale: $W has $(iec_kib "$avail") free; $N positions need about" \
		"$(iec_kib "$need" up) ($PER_POS bytes a position: $(need_what "$PER_POS")):" \
		"set SCALE_DIR to a disk with room, SCALE_POSITIONS lower or SCALE_ONLY to the commands it holds" >&2
	exit 1
fi
# ram_group BYTES: the bench (this shell, and so every command it starts) into a new memory
# control group of BYTES; 1 with the reason on stderr when it cannot be made.
ram_group() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		CGTOP=/sys/fs/cgroup
		grep -qw memory "$CGTOP/cgroup.controllers" || {
			echo "no memory controller in $CGTOP" >&2
			return 1
		}
		grep -qw memory "$CGTOP/cgroup.subtree_control" ||
			echo +memory >"$CGTOP/cgroup.subtree_control" || return 1
		limit=memory.max
	elif [ -d /sys/fs/cgroup/memory ]; then
		CGTOP=/sys/fs/cgroup/memory
		limit=memory.limit_in_bytes
	else
		echo "no memory control groups under /sys/fs/cgroup" >&2
		return 1
	fi
	mkdir "$CGTOP/joseki-scale.$$" || return 1
	CG=$CGTOP/joseki-scale.$$
	echo "$1" >"$CG/$limit" || return 1
	# No swap for the group either, where the kernel counts it apart (v2).
	[ ! -f "$CG/memory.swap.max" ] || echo 0 >"$CG/memory.swap.max" 2>/dev/null
	echo $$ >"$CG/cgroup.procs"
}
if [ -n "$RAM" ]; then
	ram_bytes=$(iec_bytes "$RAM")
	if [ -z "$ram_bytes" ] || [ "$ram_bytes" -lt 16777216 ]; then
		echo "bench-scale: SCALE_RAM '$RAM' is not a size of 16M or more (e.g. 2400M, 8G)" >&2
		exit 2
	fi
	if [ "$HOLD" = 1 ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "bench-scale: SCALE_HOLD=1: locking memory needs root" >&2
			exit 1
		fi
		if [ ! -x "$MEMHOLD" ]; then
			echo "bench-scale: SCALE_HOLD=1: no memory hold program at $MEMHOLD (make build/memhold)" >&2
			exit 1
		fi
	elif ! ram_group "$ram_bytes" 2>"$W/cg.err"; then
		echo "bench-scale: SCALE_RAM=$RAM: cannot make a memory control group" \
			"($(tail -n 1 "$W/cg.err"); it needs root and Linux control groups)" >&2
		exit 1
	fi
fi
if [ "${limit:-}" = memory.limit_in_bytes ]; then
	echo "bench-scale: SCALE_RAM on cgroup v1: a v1 group reclaims its page cache in the" \
		"commands' own page faults; on the host of docs/notes/bookdb.md (runs 19 and 20)" \
		"minimax --full at 10^8 in 2400M took four times as long as on a v2 host, and" \
		"longer still with that host held to 2400M (SCALE_HOLD=1): compare its times" \
		"only with runs on the same host and way" >&2
fi
COLD=${SCALE_COLD:-0}
if [ "$COLD" = 1 ] && ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
	echo "bench-scale: SCALE_COLD=1: cannot drop the page cache (it needs root)" >&2
	exit 1
fi
echo "bench-scale: positions $N and $SMALL in $W (timeout ${TIMEOUT} s a command${MEM:+, --memory $MEM}${RAM:+, within $RAM of memory and page cache: ${CG:-the rest held}}$([ "$COLD" = 1 ] && echo ', the whole machine'"'"'s page cache dropped before each command'))" >&2
# Online discard makes the commands wait as they free files (docs/bookdb.md): said for the
# work directory and $TMPDIR, once a file system.
seen=
for d in "$W" "${TMPDIR:-/tmp}"; do
	mnt=$(findmnt -no TARGET -T "$d" 2>/dev/null) || continue
	case " $seen " in *" $mnt "*) continue ;; esac
	seen="$seen $mnt"
	if findmnt -no OPTIONS -T "$d" | tr ',' '\n' | grep -qx discard; then
		echo "bench-scale: $d is on a file system mounted with online discard ($mnt):" \
			"the commands wait for the device as they free their sorted runs and" \
			"replaced books, about 10 % of the time in docs/notes/bookdb.md (run 15);" \
			"remount it with nodiscard or use another disk (docs/bookdb.md, \"Online discard\")" >&2
	fi
done

# memopt CMD: --memory SCALE_MEMORY when CMD takes it.
memopt() {
	if [ -n "$MEMN" ] && $J "$1" --help 2>&1 | grep -q -- '--memory'; then
		echo "--memory $MEMN"
	fi
}

# anon PID...: the anonymous resident kB summed over PIDs and their joseki descendants.
anon_tree() {
	total=0
	todo=$*
	while [ -n "$todo" ]; do
		set -- $todo
		p=$1
		shift
		todo=$*
		kids=$(cat /proc/"$p"/task/*/children 2>/dev/null)
		todo="$todo $kids"
		todo=$(echo $todo)
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$JCOMM" ] || continue
		a=$(awk -v ps="$(getconf PAGESIZE)" '{print ($2 - $3) * ps / 1024}' /proc/"$p"/statm 2>/dev/null)
		total=$((total + ${a:-0}))
	done
	echo "$total"
}

# sample PID: the peak of anon_tree PID every 0.1 s while PID lives, into $W/peak_kb.
sample() {
	peak=0
	while kill -0 "$1" 2>/dev/null; do
		a=$(anon_tree "$1")
		[ "$a" -gt "$peak" ] && peak=$a && echo "$peak" >"$W/peak_kb"
		sleep 0.1
	done
}

# result CMD N WALL CPU PEAK_KB DISK [EXTRA]: the line, and the figures for the growth.
result() {
	awk -v c="$1" -v n="$2" -v w="$3" -v cpu="$4" -v kb="$5" -v d="$6" -v x="${7:-}" 'BEGIN {
		peak = kb > 0 ? sprintf("%.0f", kb / 1024) : "n/a"
		printf "bench-scale: %s positions %d wall_s %.2f cpu_s %.2f peak_anon_mb %s disk_bytes %.0f positions_per_s %.0f%s\n",
		    c, n, w, cpu, peak, d, (w > 0 ? n / w : 0), (x != "" ? " " x : "")
	}'
	echo "$1 $2 $3 $5 $4" >>"$W/results"
}

failed() {
	echo "bench-scale: $1 positions $2 failed ($3)"
}

bytes() { du -sb "$@" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

# cold: the page cache dropped (SCALE_COLD=1), so the command reads its book from the disk.
cold() {
	[ "$COLD" = 1 ] || return 0
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# held_through CMD N: when the memory hold ended while CMD ran (the kernel's OOM killer),
# CMD failed for it (said) and the hold is made again for the commands after it; else 1.
held_through() {
	hold_lost || return 1
	failed "$1" "$2" "the memory hold ended meanwhile (killed by the kernel?): not held to $RAMN"
	again=$HELD_FOR
	HELD=
	HELD_FOR=
	hold_memory bench-scale "$again" "$W/hold.out" || true
	return 0
}

# measure CMD N OUT ARGS...: runs ARGS (a joseki command) within the timeout, measured;
# OUT is what its disk_bytes counts.
measure() {
	c=$1 n=$2 out=$3
	shift 3
	cold
	echo 0 >"$W/peak_kb"
	t0=$(date +%s.%N)
	/usr/bin/time -f "%U %S" -o "$W/time" timeout "$TIMEOUT" "$@" >"$W/out" 2>"$W/err" &
	tp=$!
	sample "$tp"
	wait "$tp"
	rc=$?
	t1=$(date +%s.%N)
	if held_through "$c" "$n"; then
		return 1
	elif [ "$rc" = 124 ]; then
		failed "$c" "$n" "timeout after $TIMEOUT s"
		return 1
	elif [ "$rc" = 137 ] && [ -n "$CG" ]; then
		failed "$c" "$n" "killed: over its memory group ($RAMN) in memory of its own"
		return 1
	elif [ "$rc" = 137 ] && [ -n "$HELD" ]; then
		failed "$c" "$n" "killed: out of memory, the machine held to $RAMN"
		return 1
	elif [ "$rc" != 0 ]; then
		failed "$c" "$n" "exit $rc: $(grep -v '^Command exited' "$W/err" | tail -n 1)"
		return 1
	fi
	wall=$(echo "$t0 $t1" | awk '{print $2 - $1}')
	cpu=$(tail -n 1 "$W/time" | awk '{print $1 + $2}')
	result "$c" "$n" "$wall" "$cpu" "$(cat "$W/peak_kb")" "$(bytes "$out")"
}

# port_of FILE: the port of the first http://127.0.0.1:PORT/ in FILE.
port_of() { sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$1" | head -n 1; }

# service CMD N BOOK FIRST ARGS...: starts a service (ARGS), waits for it to listen (listen_s),
# then for FIRST's answer (a shell command run with $port set; prints the seconds it took
# itself, or nothing to be timed from outside); CPU and peak while it ran; then stops it.
service() {
	c=$1 n=$2 book=$3 first=$4
	shift 4
	cold
	echo 0 >"$W/peak_kb"
	t0=$(date +%s.%N)
	"$@" >"$W/out" 2>"$W/err" &
	sp=$!
	pids="$pids $sp"
	sample "$sp" &
	smp=$!
	port=
	while [ -z "$port" ]; do
		if ! kill -0 "$sp" 2>/dev/null; then
			kill "$smp" 2>/dev/null
			failed "$c" "$n" "it did not start: $(tail -n 1 "$W/err")"
			return 1
		fi
		if [ "$(echo "$t0 $(date +%s.%N)" | awk '{print int($2 - $1)}')" -ge "$TIMEOUT" ]; then
			kill "$sp" "$smp" 2>/dev/null
			wait "$sp" 2>/dev/null
			failed "$c" "$n" "not listening after $TIMEOUT s"
			return 1
		fi
		port=$(port_of "$W/err")
		[ -n "$port" ] || sleep 0.05
	done
	t1=$(date +%s.%N)
	own=$(port=$port timeout "$TIMEOUT" sh -c "$first" 2>"$W/first.err")
	frc=$?
	t2=$(date +%s.%N)
	hz=$(getconf CLK_TCK)
	cpu=$(awk -v hz="$hz" '{print ($14 + $15 + $16 + $17) / hz}' /proc/"$sp"/stat)
	kill -TERM "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	wait "$smp" 2>/dev/null
	if [ "$frc" != 0 ]; then
		failed "$c" "$n" "first answer: exit $frc: $(tail -n 1 "$W/first.err")"
		return 1
	fi
	listen=$(echo "$t0 $t1" | awk '{print $2 - $1}')
	if [ -n "$own" ]; then
		wall=$(echo "$listen $own" | awk '{print $1 + $2}')
	else
		wall=$(echo "$t0 $t2" | awk '{print $2 - $1}')
	fi
	held_through "$c" "$n" && return 1
	what=first_query_s
	[ "$c" = serve-work ] && what=first_acquire_s
	result "$c" "$n" "$wall" "$cpu" "$(cat "$W/peak_kb")" "$(bytes "$book")" \
		"$(echo "$listen $wall" | awk -v w="$what" '{printf "listen_s %.2f %s %.2f", $1, w, $2}')"
}

# budget N: the group's limit and the --memory for the size N (SCALE_RATIO: scaled by N /
# SCALE_POSITIONS), said on stderr.
budget() {
	MEMN=$MEM
	if [ "$RATIO" = 1 ] && [ -n "$MEM" ]; then
		mb=$(($(iec_bytes "$MEM") / 1048576 * $1 / N))
		[ "$mb" -ge 1 ] || mb=1
		MEMN=${mb}M
	fi
	RAMN=
	if [ -n "$CG" ]; then
		mb=$((ram_bytes / 1048576))
		[ "$RATIO" = 1 ] && mb=$((mb * $1 / N))
		# (At least 16M, as SCALE_RAM: the bench's own shell is in the group.)
		[ "$mb" -ge 16 ] || mb=16
		RAMN=${mb}M
		echo "$(numfmt --from=iec "$RAMN")" >"$CG/$limit" || return 1
	elif [ "$HOLD" = 1 ]; then
		mb=$((ram_bytes / 1048576))
		[ "$RATIO" = 1 ] && mb=$((mb * $1 / N))
		RAMN=${mb}M
		hold_memory bench-scale "$((mb * 1048576))" "$W/hold.out" || return 1
		[ -z "$HELD_FOR" ] || RAMN=$((HELD_FOR / 1048576))M
	fi
	echo "bench-scale: $1 positions${MEMN:+, --memory $MEMN}${RAMN:+, within $RAMN}" >&2
}

# suite N: every command (SCALE_ONLY: those asked for) on a new book of N positions.
suite() {
	n=$1
	B=$W/book-$n
	rm -rf "$B"
	budget "$n" || {
		failed synth "$n" "cannot hold the memory to SCALE_RAM (its group's limit or its hold)"
		return
	}
	if ! measure synth "$n" "$B" $J synth "$B" --positions "$n" --quiet $(memopt synth); then
		# No book: each command of this size said so.
		for c in $COMMANDS; do
			[ "$c" != synth ] && wanted "$c" && failed "$c" "$n" "no book: synth failed"
		done
		return
	fi
	wanted minimax-full && measure minimax-full "$n" "$B" $J minimax "$B" --full --quiet $(memopt minimax)
	if ! wanted minimax-incremental; then
		:
	elif $J synth "$B" --positions $((n / 1000 + 100)) --seed 2 --quiet >/dev/null 2>"$W/err"; then
		measure minimax-incremental "$n" "$B" $J minimax "$B" --quiet $(memopt minimax)
	else
		failed minimax-incremental "$n" "adding positions: $(tail -n 1 "$W/err")"
	fi
	ex=$(memopt export)
	if wanted export-yaneuraou; then
		measure export-yaneuraou "$n" "$W/yo.db" $J export "$B" "$W/yo.db" --quiet $ex
	elif wanted peta-shock; then
		$J export "$B" "$W/yo.db" --quiet $ex >/dev/null 2>"$W/err"
	fi
	if ! wanted peta-shock; then
		:
	elif [ -f "$W/yo.db" ]; then
		measure peta-shock "$n" "$W/ps.db" $J peta-shock "$W/yo.db" "$W/ps.db" --quiet \
			$(memopt peta-shock)
	else
		failed peta-shock "$n" "no exported book"
	fi
	rm -f "$W/yo.db" "$W/ps.db"
	if wanted export-apery; then
		measure export-apery "$n" "$W/ap.bin" $J export "$B" "$W/ap.bin" --format apery --quiet $ex
		rm -f "$W/ap.bin"
	fi
	if wanted export-partial; then
		measure export-partial "$n" "$W/part.db" $J export "$B" "$W/part.db" --max-ply 40 \
			--min-depth 15 --quiet $ex
		rm -f "$W/part.db"
	fi
	rm -rf "$W/merged"
	wanted merge && measure merge "$n" "$W/merged" $J merge "$W/merged" "$B" --quiet $(memopt merge)
	rm -rf "$W/merged"
	wanted check && measure check "$n" "$B" $J check "$B" $(memopt check)
	rm -rf "$W/backup"
	wanted backup && measure backup "$n" "$W/backup" $J backup "$B" "$W/backup" $(memopt backup)
	rm -rf "$W/backup"
	wanted compact && measure compact "$n" "$B" $J compact "$B" $(memopt compact)
	wanted stats && measure stats "$n" "$B" $J stats "$B"
	wanted stats-scan && measure stats-scan "$n" "$B" $J stats "$B" --scan $(memopt stats)
	wanted query && measure query "$n" "$B" $J query "$B" startpos
	wanted select && measure select "$n" "$B" $J select "$B" --count 10 $(memopt select)
	wanted serve && service serve "$n" "$B" \
		'curl -sf "http://127.0.0.1:$port/v1/query?position=startpos" >/dev/null' \
		$J serve "$B" --listen 127.0.0.1:0 --quiet
	rm -f "$W/tokens"
	if ! wanted serve-work; then
		:
	elif $J token add "$W/tokens" bench >"$W/token" 2>"$W/err"; then
		# bench-work's first acquire (--rate: waited for alone, up to 10 minutes, while the
		# coordinator's first search runs) is timed from its own start: added to listen_s.
		service serve-work "$n" "$B" \
			"$J bench-work --server http://127.0.0.1:\$port --token-file $W/token --clients 1 --rate 1 --seconds 1 --max 1 | sed -n 's/.*first_acquire_ms \\([0-9.-]*\\).*/\\1/p' | awk '\$1 > 0 {print \$1 / 1000; ok = 1} END {exit !ok}'" \
			$J serve "$B" --work --tokens "$W/tokens" --listen 127.0.0.1:0 --quiet --nodes 1000 \
			--no-snapshot
	else
		failed serve-work "$n" "token: $(tail -n 1 "$W/err")"
	fi
	[ "$KEEP" = 1 ] && [ "$n" = "$N" ] || rm -rf "$B"
}

: >"$W/results"
suite "$SMALL"
suite "$N"
# The growth from SMALL to N, for each command measured at both.
awk -v s="$SMALL" -v n="$N" '
	$2 == s {ws[$1] = $3; ms[$1] = $4; cs[$1] = $5}
	$2 == n {order[++k] = $1; wn[$1] = $3; mn[$1] = $4; cn[$1] = $5}
	END {
		for (i = 1; i <= k; i++) {
			c = order[i]
			if (!(c in ws)) continue
			te = ws[c] > 0 && wn[c] > 0 ? sprintf("%.2f", log(wn[c] / ws[c]) / log(n / s)) : "n/a"
			ce = cs[c] > 0 && cn[c] > 0 ? sprintf("%.2f", log(cn[c] / cs[c]) / log(n / s)) : "n/a"
			me = ms[c] > 0 && mn[c] > 0 ? sprintf("%.2f", log(mn[c] / ms[c]) / log(n / s)) : "n/a"
			printf "bench-scale: %s growth time_exponent %s cpu_exponent %s memory_exponent %s\n", c, te, ce, me
		}
	}' "$W/results"

#!/bin/sh
# tools/bench_cluster.sh — the cluster coordinator's throughput, memory and start:
# `joseki serve --work` on a synthetic book of BENCH_CLUSTER_POSITIONS
# (default 15000000) positions, driven for BENCH_CLUSTER_SECONDS (default 60)
# by `joseki bench-work`: BENCH_CLUSTER_CLIENTS (16) instant fake workers that
# acquire BENCH_CLUSTER_MAX (32) positions and submit a legal move for each at
# once. Selection, group commits and the periodic incremental minimax (every
# BENCH_CLUSTER_MINIMAX_S, default 10 s; `off` for none, the result line's
# minimax_every_s then `off`) all run meanwhile;
# BENCH_CLUSTER_SELECT is serve's --select: pv (the default here, one leaf at a
# time: the lease machinery's own cost) or cover (serve's default policy, whose
# ranged searches visit more of the book per leaf). Reports results/s, acquire
# latency (p50/p99/max), the longest submit, the minimax runs and the
# coordinator's resident memory (anonymous and the book's mapped pages apart),
# and what its selection did a result over the run (`selector expansions_per_result
# ... fetches_per_result ...`: /v1/work/status before and after; fetches are records
# read from the book, which a book larger than memory pays for in page faults).
# Targets: >= 2000 results/s, acquire p99 <= 50 ms, no request waiting more than
# 250 ms for the minimax (acquire and submit max after a 15 s warm-up: the
# first selections of a fresh coordinator fault its book in; the p50 and p99
# of the acquires after it are shown too, *_warm_ms), the coordinator's
# own memory (anonymous; the book's mapped pages are shown apart) <= 4 GB,
# listening and the first acquire answered (start_s, first_acquire_s: from the
# start of `serve`) <= 3 s. A run after a clean stop (SIGTERM) of the last one
# on the same, unchanged book starts from the selector's snapshot
# (snapshot_restore_s; snapshot_save_s: its writing at the stop; stop_s: from
# SIGTERM to the exit, a minimax run under way waited for); add
# BENCH_CLUSTER_SERVE_OPTS=--no-snapshot for a start from scratch. BENCH_CLUSTER_RATE (default 0: as fast as it
# goes, each client's next acquire sent when its last submit is answered, so
# the latency is that of a saturated coordinator: clients / rate) paces the
# acquires to that many results/s in all (open loop; latency counted from when
# each acquire was due; the first acquire, a fresh coordinator's first
# selection, alone before the schedule): the latency target is at 2000
# results/s. BENCH_CLUSTER_SERVE_OPTS adds serve options (e.g. --preload);
# JOSEKI_SERVE runs another build's coordinator under the same load generator.
# BENCH_CLUSTER_LOG=FILE keeps the coordinator's stderr there (with --verbose
# in BENCH_CLUSTER_SERVE_OPTS: a line for each of its minimax runs).
# BENCH_CLUSTER_WARM_S=W: the *_warm_ms figures take the acquires due after W s
# (bench-work --warm-seconds; default 15): e.g. the steady state of a long run
# from scratch, past the minute or two its first search and page cache take.
# BENCH_CLUSTER_TIMELINE=FILE: the acquires' latencies by 10 s of the run
# there (bench-work --timeline), to see when the slow ones came;
# BENCH_CLUSTER_TIMELINE_S=T: by T s instead (--timeline-seconds).
#
# BENCH_CLUSTER_COLD=1 (root) drops the machine's page cache before the coordinator
# starts, so that it reads its book and snapshot from the disk, as after a reboot.
#
# BENCH_CLUSTER_RAM (e.g. 2400M; root) runs the coordinator on a machine made to look as
# if it had that memory: the rest held locked for the run (tools/bench-lib.sh,
# hold_memory; `make build/memhold` first), so the page cache is what is left. 10^8
# positions in 2400M stand for 10^9 on 24 GB.
#
# The book is built once and kept (building 15M positions takes minutes):
# BENCH_CLUSTER_BOOK (default /tmp/joseki-bench-cluster-$N); each run adds its
# results to it. The first run also gives it a full minimax, so the
# coordinator's periodic runs are incremental ones, as in production.
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
# The coordinator's binary (default the same), to compare two builds under one load generator.
JS=${JOSEKI_SERVE:-$J}
N=${BENCH_CLUSTER_POSITIONS:-15000000}
SECS=${BENCH_CLUSTER_SECONDS:-60}
CLIENTS=${BENCH_CLUSTER_CLIENTS:-16}
MAX=${BENCH_CLUSTER_MAX:-32}
BOOK=${BENCH_CLUSTER_BOOK:-/tmp/joseki-bench-cluster-$N}
MMS=${BENCH_CLUSTER_MINIMAX_S:-10}
case "$MMS" in
off) mm_opt="--minimax-seconds 4000000000" ;;
0)
	echo "bench_cluster: BENCH_CLUSTER_MINIMAX_S=0 would leave serve its default, a run every 60 s; say 'off' for none" >&2
	exit 2
	;;
*) mm_opt="--minimax-seconds $MMS" ;;
esac
SELECT=${BENCH_CLUSTER_SELECT:-pv}
RATE=${BENCH_CLUSTER_RATE:-0}
# How the coordinator is stopped at the end: TERM (a clean stop, which writes the
# selector's snapshot) or KILL (a crash: the next run starts from the last
# checkpoint, if BENCH_CLUSTER_SERVE_OPTS asks for them often enough, e.g.
# --checkpoint-seconds 20).
SIG=${BENCH_CLUSTER_SIGNAL:-TERM}
if ! command -v "$J" >/dev/null; then
	echo "bench_cluster: no joseki at $J: run it from the source tree after make, or set JOSEKI" >&2
	exit 1
fi
ram_bytes=
if [ -n "${BENCH_CLUSTER_RAM:-}" ]; then
	ram_bytes=$(iec_bytes "$BENCH_CLUSTER_RAM")
	if [ -z "$ram_bytes" ]; then
		echo "bench_cluster: BENCH_CLUSTER_RAM '$BENCH_CLUSTER_RAM' is not a size (e.g. 2400M, 8G)" >&2
		exit 2
	fi
fi
wopt="--select $SELECT"
tmp=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; fi
	[ -z "${BENCH_CLUSTER_LOG:-}" ] || cp "$tmp/serve.err" "$BENCH_CLUSTER_LOG" 2>/dev/null || true
	hold_release
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ ! -f "$BOOK/.bench-ready" ]; then
	rm -rf "$BOOK"
	echo "bench_cluster: building a $N-position synthetic book in $BOOK (once)" >&2
	$J synth "$BOOK" --positions "$N" --seed 1 --quiet >/dev/null
	$J minimax "$BOOK" --quiet >/dev/null
	touch "$BOOK/.bench-ready"
fi
$J token add "$tmp/tokens" bench >"$tmp/token" 2>/dev/null
[ -z "$ram_bytes" ] || hold_memory bench_cluster "$ram_bytes" "$tmp/hold.out"
if [ "${BENCH_CLUSTER_COLD:-0}" = 1 ] && ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
	echo "bench_cluster: BENCH_CLUSTER_COLD=1: cannot drop the page cache (it needs root)" >&2
	exit 1
fi

$JS serve "$BOOK" --work --tokens "$tmp/tokens" --listen 127.0.0.1:0 --quiet --verbose --nodes 1000 \
	$mm_opt $wopt ${BENCH_CLUSTER_SERVE_OPTS:-} >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
t0=$(date +%s.%N)
port=
while [ -z "$port" ]; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "bench_cluster: the coordinator did not start:" >&2
		cat "$tmp/serve.err" >&2
		exit 1
	fi
	port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$tmp/serve.err")
	[ -n "$port" ] || sleep 0.05
done
load_s=$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.2f", $2 - $1}')
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
if ! out=$($J bench-work --server "http://127.0.0.1:$port" --token-file "$tmp/token" \
	--clients "$CLIENTS" --seconds "$SECS" --max "$MAX" --rate "$RATE" \
	${BENCH_CLUSTER_WARM_S:+--warm-seconds "$BENCH_CLUSTER_WARM_S"} \
	${BENCH_CLUSTER_TIMELINE:+--timeline "$BENCH_CLUSTER_TIMELINE"} \
	${BENCH_CLUSTER_TIMELINE_S:+--timeline-seconds "$BENCH_CLUSTER_TIMELINE_S"}); then
	echo "bench_cluster: the load generator failed; the coordinator's last words:" >&2
	tail -n 5 "$tmp/serve.err" >&2
	exit 1
fi
if hold_lost; then
	echo "bench_cluster: the memory hold ended during the run (killed by the kernel when" \
		"something else needed the memory?): the run was not held to $BENCH_CLUSTER_RAM" >&2
	exit 1
fi
# Its first line the service, its second the selection's work a result (a coordinator
# whose status has none: "selector none").
line=$(echo "$out" | sed -n 1p)
selwork=$(echo "$out" | sed -n 's/^selector //p')
hz=$(getconf CLK_TCK)
coord_cpu_s=$(awk -v c0="$cpu0" -v hz="$hz" '{printf "%.1f", ($14 + $15 - c0) / hz}' "/proc/$pid/stat")
rss_mb=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
hwm_mb=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
anon_mb=$(awk '/RssAnon/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
file_mb=$(awk '/RssFile/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
ts=$(date +%s.%N)
kill -"$SIG" "$pid"
wait "$pid" || true
stop_s=$(echo "$ts $(date +%s.%N)" | awk '{printf "%.2f", $2 - $1}')
pid=
echo "$out"
echo "coordinator: $(cat "$tmp/serve.out")"
# The selector's snapshot: restored at the start (its seconds), saved at the stop.
restored=$(sed -n 's/.*selector restored from [^ ]* in \([0-9.]*\) s.*/\1/p' "$tmp/serve.err")
saved=$(sed -n 's/.*selector saved to .* in \([0-9.]*\) s.*/\1/p' "$tmp/serve.err")
grep -E "not used|snapshot|restored from" "$tmp/serve.err" >&2 || true
runs=$(sed -n 's/.*minimax runs \([0-9]*\).*/\1/p' "$tmp/serve.out" | tail -n 1)
# The last run's analysis that ended (0: none ended within the run).
mm_last=$(sed -n 's/.*minimax runs [0-9]* (last \([0-9]*\) ms).*/\1/p' "$tmp/serve.out" | tail -n 1)
# The machine the run stood for: the memory a hold left it, or all of it (no hold, or
# BENCH_CLUSTER_RAM not below the machine: said on stderr).
machine=all
[ -z "$HELD_FOR" ] || machine="$((HELD_FOR / 1048576))M"
echo "$line" | awk -v machine="$machine" -v runs="${runs:-?}" -v mmlast="${mm_last:-0}" -v n="$N" -v rss="$rss_mb" -v hwm="$hwm_mb" -v anon="$anon_mb" -v file="$file_mb" -v load="$load_s" -v w="$SELECT" -v mms="$MMS" -v cpu="$coord_cpu_s" -v rate="$RATE" -v restored="${restored:-no}" -v saved="${saved:-no}" -v stop="$stop_s" -v selwork="$selwork" -v cold="${BENCH_CLUSTER_COLD:-0}" '{
	for (i = 1; i < NF; i++) v[$i] = $(i + 1)
	printf "cluster positions %s rate %s results_per_s %s acquire_p50_ms %s acquire_p99_ms %s acquire_max_ms %s acquire_p50_warm_ms %s acquire_p99_warm_ms %s warm_after_s %s submit_max_ms %s acquire_max_warm_ms %s submit_max_warm_ms %s coordinator_cpu_s %s rss_mb %s (anon %s, book pages %s) peak_rss_mb %s start_s %s first_acquire_s %.2f select %s minimax_every_s %s minimax_runs %s minimax_last_ms %s snapshot_restore_s %s snapshot_save_s %s stop_s %s machine_memory %s cold %s selector %s  (targets: >= 2000 results/s, p99 <= 50 ms, max <= 250 ms, anon <= 4 GB, first acquire <= 3 s)\n",
	    n, rate ? rate : "max", v["results_per_s"], v["acquire_p50_ms"], v["acquire_p99_ms"], v["acquire_max_ms"], v["acquire_p50_warm_ms"], v["acquire_p99_warm_ms"], v["warm_after_s"], v["submit_max_ms"], v["acquire_max_warm_ms"], v["submit_max_warm_ms"], cpu, rss, anon, file, hwm, load, load + v["first_acquire_ms"] / 1000, w, mms, runs, mmlast, restored, saved, stop, machine, cold, selwork
}'

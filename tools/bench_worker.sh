#!/bin/sh
# joseki worker's overhead per position beyond the engine's own time: a fake
# coordinator on loopback (tests/cluster/fakes/fake_coordinator.py) serves
# 2,000 positions with a one-node budget to one built-in engine. Two figures:
#  - wall: (wall time - time inside the engine's analyse calls) / positions:
#    every round trip the engine waits for counts, the fake's own answer time
#    included (an upper bound); on a loaded machine, preemptions between two
#    searches count too;
#  - cpu: (the worker process's CPU time during the run - the engine thread's
#    CPU time inside analyse) / positions: what the worker itself spends
#    (HTTP, JSON, threads), unaffected by other load.
# And the wall figure with a real budget (nodes 5000, 1000 positions), where
# the prefetched batch hides the round trips. Target: under 1 ms. Median of
# BENCH_RUNS (3) runs; the load average is printed beside.
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
RUNS=${BENCH_RUNS:-3}
N=${BENCH_WORKER_POSITIONS:-2000}
TMP=$(mktemp -d)
FAKE_PID=""
trap '[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null; rm -rf "$TMP"' EXIT


# N positions (distinct keys; the coordinator's keys are not checked here).
python3 - "$TMP/positions" "$N" <<'PY'
import sys
sfens = ["lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
         "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2",
         "lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3"]
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write("%032x %s\n" % (i, sfens[i % 3]))
PY
echo secret-token >"$TMP/token"

# run LIMITS COUNT: prints "wall_us cpu_us" of one worker run.
run() {
	rm -f "$TMP/port" "$TMP/record" "$TMP/state"
	python3 tests/cluster/fakes/fake_coordinator.py --positions "$TMP/positions" \
		--record "$TMP/record" --port-file "$TMP/port" --limits "$1" &
	FAKE_PID=$!
	i=0
	while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	line=$("$J" worker --server "http://127.0.0.1:$(cat "$TMP/port")" \
		--token-file "$TMP/token" --positions "$2" --quiet)
	kill "$FAKE_PID"
	wait "$FAKE_PID" 2>/dev/null || true
	FAKE_PID=""
	echo "$line" | grep -q "positions $2 failed 0" || { echo "bench_worker: $line" >&2; exit 1; }
	echo "$line" | awk -v n="$2" '{
		for (i = 1; i < NF; i++) {
			if ($i == "seconds") s = $(i + 1)
			if ($i == "engine_s") e = $(i + 1)
			if ($i == "engine_cpu_s") ec = $(i + 1)
			if ($i == "cpu_s") c = $(i + 1)
		}
		printf "%.1f %.1f\n", (s - e) * 1e6 / n, (c - ec) * 1e6 / n }'
}

wall="" cpu="" real=""
for _ in $(seq "$RUNS"); do
	r=$(run '{"nodes": 1}' "$N")
	wall="$wall $(echo "$r" | cut -d' ' -f1)"
	cpu="$cpu $(echo "$r" | cut -d' ' -f2)"
	real="$real $(run '{"nodes": 5000}' 1000 | cut -d' ' -f1)"
done
w=$(echo "$wall" | tr ' ' '\n' | grep . | median)
c=$(echo "$cpu" | tr ' ' '\n' | grep . | median)
r=$(echo "$real" | tr ' ' '\n' | grep . | median)
load=$(cut -d' ' -f1 /proc/loadavg)
echo "worker_overhead_us_per_position $w  (wall; 1 built-in engine, nodes 1, $N positions from a fake coordinator on loopback, its answer time included; median of $RUNS; load average $load)"
echo "worker_overhead_cpu_us_per_position $c  (the worker's own CPU time per position, the engine's search excluded; same runs)"
echo "worker_overhead_us_per_position_nodes5000 $r  (wall; nodes 5000, 1000 positions: round trips hidden by the prefetched batch)"

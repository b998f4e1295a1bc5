#!/bin/sh
# tools/bench_abuse.sh — /healthz under connection floods (docs/notes/server.md,
# "Limits"): `joseki serve` and `joseki serve --work` (with a worker thinking,
# at nice 10, one engine) on a synthetic book of BENCH_ABUSE_POSITIONS (100000)
# positions; tools/flood.py holds 2,000 idle and 1,100 trickling connections
# (one header byte a second) from one address, then from eight addresses of
# 127.0.0.0/8, then 1,280 slow bodies (a whole head, Content-Length: 16000, then
# one body byte a second) from twenty, for BENCH_ABUSE_SECONDS (20), each flood
# connection opened again a second after the server ends it, while probing
# /healthz from 127.0.0.1 every 50 ms on a new connection; 3 runs each, the
# medians. Targets: every probe answered, p99 < 100 ms; no flood connection held
# longer than the request deadline (10 s); with --work, no lease of the worker
# expires or fails (failed_tries stays 0).
set -eu
J=${JOSEKI:-./joseki}
N=${BENCH_ABUSE_POSITIONS:-100000}
SECS=${BENCH_ABUSE_SECONDS:-20}
RUNS=${BENCH_ABUSE_RUNS:-3}
here=$(dirname "$0")
tmp=$(mktemp -d)
pid= wpid=
cleanup() {
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
$J synth "$tmp/book" --positions "$N" --seed 1 --quiet >/dev/null
$J token add "$tmp/book/tokens" bench >"$tmp/token" 2>/dev/null

start() { # mode: serve | work
	if [ "$1" = work ]; then
		$J serve "$tmp/book" --work --listen 127.0.0.1:0 --quiet --movetime 50 \
			--lease-seconds 10 --minimax-seconds 3600 2>"$tmp/serve.err" &
	else
		$J serve "$tmp/book" --listen 127.0.0.1:0 --quiet 2>"$tmp/serve.err" &
	fi
	pid=$!
	port=
	while [ -z "$port" ]; do
		kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.err" >&2; exit 1; }
		port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$tmp/serve.err")
		[ -n "$port" ] || sleep 0.2
	done
	if [ "$1" = work ]; then
		nice -n 10 $J worker --server "http://127.0.0.1:$port" --token-file "$tmp/token" \
			--engines 1 --quiet >/dev/null 2>&1 &
		wpid=$!
		sleep 2
	fi
}
stop() {
	[ -n "$wpid" ] && kill "$wpid" && wait "$wpid" 2>/dev/null || true
	wpid=
	kill "$pid" && wait "$pid" 2>/dev/null || true
	pid=
}
failed_tries() {
	curl -s -H "Authorization: Bearer $(cat "$tmp/token")" "http://127.0.0.1:$port/v1/work/status" |
		sed -n 's/.*"failed_tries":\([0-9]*\).*/\1/p'
}
med() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for mode in ${BENCH_ABUSE_MODES:-serve work}; do
	start "$mode"
	for flood in "1 --idle 2000 --trickle 1100" "8 --idle 2000 --trickle 1100" \
		"20 --idle 0 --trickle 0 --slow-body 1280"; do
		addrs=${flood%% *}
		: >"$tmp/runs"
		for r in $(seq "$RUNS"); do
			# shellcheck disable=SC2086 # the flood's options, split on purpose
			python3 "$here/flood.py" --port "$port" --addrs $flood --seconds "$SECS" >>"$tmp/runs"
		done
		f=""
		[ "$mode" = work ] && f=" failed_tries $(failed_tries)"
		field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$tmp/runs"; }
		p99=$(field p99_ms | med)
		mx=$(field max_ms | med)
		held=$(field held_max_s | sort -n | tail -1)
		fails=$(field failures | tr '\n' ' ')
		okp=$(awk '{for (i = 1; i < NF; i++) { if ($i == "ok") o += $(i + 1); if ($i == "probes") p += $(i + 1) }} END {print o "/" p}' "$tmp/runs")
		kind="idle 2000 trickle 1100"
		[ "$addrs" = 20 ] && kind="slow_body 1280"
		echo "abuse $mode addrs $addrs healthz_p99_ms $p99 healthz_max_ms $mx answered $okp held_max_s $held$f failures ${fails:-none}  (median of $RUNS, $kind, ${SECS}s; load $(cut -d' ' -f1 /proc/loadavg))"
	done
	stop
done

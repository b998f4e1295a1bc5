#!/bin/sh
# tools/bench_serve.sh — joseki serve under load, against nginx serving a static
# file of the same size, in one run on this machine (make bench).
#
# A BENCH_SERVE_POSITIONS-position synth book (default 10,000,000), 1,000 random
# in-book positions (from its export), wrk --latency on loopback for
# BENCH_SERVE_SECONDS (default 10) with 1 thread and 16 connections pinned to
# core 1, the server (1 worker thread) and nginx (1 worker) pinned to core 0;
# both warmed up for 2 s, then BENCH_RUNS (default 3) runs of each, alternating;
# medians.
# Prints:
#   serve_query rps R p99_us P ...
#   nginx_static rps R p99_us P ...
#   serve_vs_nginx ratio X   serve_rss_anon_bytes B (RSS beyond the mapped book)
set -eu
. "$(dirname "$0")/bench-lib.sh"
J=${JOSEKI:-./joseki}
N=${BENCH_SERVE_POSITIONS:-10000000}
SECS=${BENCH_SERVE_SECONDS:-10}
RUNS=${BENCH_RUNS:-3}
for t in wrk nginx taskset curl; do
	command -v "$t" >/dev/null || { echo "bench_serve: $t is missing (tools/install-deps.sh)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/joseki-bench-serve-XXXXXX")
spid="" npid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

$J synth "$tmp/book" --positions "$N" --seed 1 --quiet >/dev/null
$J export "$tmp/book" "$tmp/book.db" --moves best --quiet >/dev/null
# 1,000 random in-book positions as request paths.
grep '^sfen ' "$tmp/book.db" | shuf -n 1000 --random-source=/dev/zero |
	sed 's/ [0-9]*$//; s/^sfen //; s/ /%20/g; s/+/%2B/g; s|^|/v1/query?sfen=|' >"$tmp/paths"
cat >"$tmp/paths.lua" <<LUA
local paths = {}
for line in io.lines("$tmp/paths") do paths[#paths + 1] = line end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
LUA

port=$((20000 + $$ % 20000))
taskset -c 0 $J serve "$tmp/book" --listen 127.0.0.1:$port --threads 1 --quiet 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
size=$(curl -s "http://127.0.0.1:$port$(head -n 1 "$tmp/paths")" | wc -c)

# p99 from wrk's latency distribution, in microseconds.
p99() { awk '$1 == "99%" { v = $2; u = v; gsub(/[0-9.]/, "", u); sub(/[a-z]+$/, "", v);
	m = (u == "us") ? 1 : (u == "ms") ? 1000 : 1000000; printf "%.0f", v * m }'; }
rps() { awk '/^Requests\/sec/ { printf "%.0f", $2 }'; }

# nginx, one worker on core 0, a static file of the same size.
mkdir -p "$tmp/www" "$tmp/nginx"
head -c "$size" /dev/zero | tr '\0' 'x' >"$tmp/www/answer.json"
nport=$((port + 1))
cat >"$tmp/nginx/nginx.conf" <<NGX
daemon off;
worker_processes 1;
error_log $tmp/nginx/error.log;
pid $tmp/nginx/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/nginx; proxy_temp_path $tmp/nginx; fastcgi_temp_path $tmp/nginx;
  uwsgi_temp_path $tmp/nginx; scgi_temp_path $tmp/nginx;
  server { listen 127.0.0.1:$nport; root $tmp/www; location / { try_files /answer.json =404; } }
}
NGX
taskset -c 0 nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
npid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$nport/x" >/dev/null 2>&1 && break; sleep 0.1; done
# A warm-up of each (the book's pages mapped, nginx's file cached), not
# measured; then RUNS runs of each, alternating, and the medians.
taskset -c 1 wrk -t1 -c16 -d2s -s "$tmp/paths.lua" "http://127.0.0.1:$port" >/dev/null
taskset -c 1 wrk -t1 -c16 -d2s "http://127.0.0.1:$nport/v1/query" >/dev/null
s_all="" s_lat="" n_all="" n_lat="" errs=0
for i in $(seq "$RUNS"); do
	taskset -c 1 wrk -t1 -c16 -d"${SECS}s" --latency -s "$tmp/paths.lua" "http://127.0.0.1:$port" >"$tmp/wrk-serve.txt"
	errs=$((errs + $(grep -c 'Non-2xx' "$tmp/wrk-serve.txt" || true)))
	s_all="$s_all $(rps <"$tmp/wrk-serve.txt")"
	s_lat="$s_lat $(p99 <"$tmp/wrk-serve.txt")"
	taskset -c 1 wrk -t1 -c16 -d"${SECS}s" --latency "http://127.0.0.1:$nport/v1/query" >"$tmp/wrk-nginx.txt"
	n_all="$n_all $(rps <"$tmp/wrk-nginx.txt")"
	n_lat="$n_lat $(p99 <"$tmp/wrk-nginx.txt")"
done
rss=$(awk '/^RssAnon/ { print $2 * 1024 }' /proc/$spid/status)
med() { echo "$1" | tr ' ' '\n' | grep . | median; }
s_rps=$(med "$s_all") s_p99=$(med "$s_lat") n_rps=$(med "$n_all") n_p99=$(med "$n_lat")
echo "serve_query rps $s_rps p99_us $s_p99  (book $N positions, answer ~$size bytes, 1 server thread on core 0, wrk 1 thread 16 connections on core 1, ${SECS}s, median of $RUNS after a warm-up; runs:$s_all; non-2xx lines $errs)"
echo "nginx_static rps $n_rps p99_us $n_p99  (the same size, 1 worker on core 0, the same load, median of $RUNS; runs:$n_all)"
echo "serve_vs_nginx ratio $(awk -v a="$s_rps" -v b="$n_rps" 'BEGIN { printf "%.2f", b ? a / b : 0 }')  serve_rss_anon_bytes $rss"

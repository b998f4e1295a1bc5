#!/bin/sh
# Selector speed: a synthetic book of BENCH_SELECT_POSITIONS (default 1000000;
# the targets below are for 15000000) positions, then `joseki select --bench`:
# load time, first selection, sustained selections per second (each leaf leased
# before the next, BENCH_SELECT_LEAVES of them), peak RSS, for the classic PV
# selection and for think's default policy (cover). One run: the book build
# dominates the time. Targets at 15M (PV): >= 1000 leaves/s, <= 8 GB, first
# selection <= 10 s after opening (load_ms + first_ms).
set -eu
J=${JOSEKI:-./joseki}
N=${BENCH_SELECT_POSITIONS:-1000000}
LEAVES=${BENCH_SELECT_LEAVES:-20000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$J synth "$tmp/book" --positions "$N" --seed 1 --quiet >/dev/null
for mode in pv cover; do
	printf 'select_mode %s ' "$mode"
	$J select "$tmp/book" --bench --count "$LEAVES" --select "$mode"
done

#!/bin/sh
# The USI driver's overhead per analysed position: the driver test binary
# measures 2,000 analyses against an engine that answers at once (its
# --instant-fake mode) and prints the figure; target: under 1 ms.
set -eu
make -s build/tests/search/test_usi_engine >/dev/null
line=$(build/tests/search/test_usi_engine 2>&1 | grep 'usi driver overhead' | tail -n 1)
[ -n "$line" ] || { echo "bench_usi: no overhead figure printed" >&2; exit 1; }
echo "$line" | sed 's/.*usi driver overhead: /usi driver overhead_us /; s/ us per position.*/  (instant fake engine, 2000 positions)/'

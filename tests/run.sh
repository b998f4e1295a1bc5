#!/bin/sh
# Runs every cmocka test binary given, from the repository root, and ends with
# one line "tests: N passed, N failed". Exit 0 only if every binary passed.
# JOSEKI names the joseki binary the integration tests run. Each binary gets
# TEST_TIMEOUT seconds (default 600); one that runs over is killed and counted
# as a failure ("timed out").
set -u
limit=${TEST_TIMEOUT:-600}
passed=0
failed=0
bad=""
log_dir="${BUILD:-build}/test-logs"
mkdir -p "$log_dir"
for t in "$@"; do
	name=$(echo "$t" | sed 's|.*/tests/||')
	log="$log_dir/$(echo "$name" | tr '/' '_').log"
	start=$(date +%s)
	timeout -k 10 "$limit" "$t" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "timed out after ${limit}s" >>"$log"
	fi
	secs=$(( $(date +%s) - start ))
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	p=${p:-0}
	f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1 # crashed or failed outside a test case
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$rc" -eq 0 ]; then
		printf '  ok    %-40s %4s tests %4ss\n' "$name" "$p" "$secs"
	else
		printf '  FAIL  %-40s (exit %s; log %s)\n' "$name" "$rc" "$log"
		grep -E '^\[  (FAILED|ERROR) \]|Failure|error:|ERROR|^timed out' "$log" | head -n 20 | sed 's/^/        /'
		bad="$bad $name"
	fi
done
echo "tests: $passed passed, $failed failed"
[ -z "$bad" ]

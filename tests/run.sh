#!/bin/sh
# Runs every cmocka test binary given, from the repository root, and ends with
# one line "tests: N passed, N failed, N skipped". Exit 0 only if every binary
# passed. A test that cannot run here (no AddressSanitizer-free build, no
# browser, no way to mount) calls cmocka's skip() after saying why: its binary
# still passes, but the skip is counted, named under the binary's line and in
# the summary. TEST_NO_SKIP lists binaries (as printed, e.g.
# "bookdb/test_diskfull") for which a skip is a failure (CI sets it).
# JOSEKI names the joseki binary the integration tests run. Each binary gets
# TEST_TIMEOUT seconds (default 600); one that runs over is killed and counted
# as a failure ("timed out").
set -u
limit=${TEST_TIMEOUT:-600}
no_skip=${TEST_NO_SKIP:-}
passed=0
failed=0
skipped=0
bad=""
skipped_in=""
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
	# cmocka prints "[  SKIPPED ] name" as each one ends, then a count and the
	# list again: the distinct names are the skips.
	s_names=$(sed -n 's/^\[  SKIPPED \] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u)
	s=$(printf '%s' "$s_names" | grep -c .)
	p=${p:-0}
	f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1 # crashed or failed outside a test case
	fi
	skip_fatal=0
	if [ "$s" -gt 0 ]; then
		for n in $no_skip; do
			[ "$n" = "$name" ] && skip_fatal=1
		done
	fi
	note=""
	if [ "$skip_fatal" -eq 1 ]; then
		[ "$rc" -eq 0 ] && rc=1
		f=$((f + s)) # a skip that must not happen counts as a failure
	elif [ "$s" -gt 0 ]; then
		skipped=$((skipped + s))
		skipped_in="$skipped_in $name"
		note=", $s skipped"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$rc" -eq 0 ]; then
		printf '  ok    %-40s %4s tests %4ss%s\n' "$name" "$p" "$secs" "$note"
	else
		printf '  FAIL  %-40s (exit %s; log %s)\n' "$name" "$rc" "$log"
		grep -E '^\[  (FAILED|ERROR) \]|Failure|error:|ERROR|^timed out' "$log" | head -n 20 | sed 's/^/        /'
		[ "$skip_fatal" -eq 1 ] && echo "        skipped, and TEST_NO_SKIP says it must run here:"
		bad="$bad $name"
	fi
	# Each skip with the reason the test printed (print_message("skipped: ...")
	# between its RUN and SKIPPED lines).
	for sn in $s_names; do
		why=$(awk -v n="$sn" '$0 == "[ RUN      ] " n { on = 1; next }
			on && /^skipped: / { print substr($0, 10, 200); exit }
			$0 == "[  SKIPPED ] " n { exit }' "$log")
		# (a reason written to stderr lands elsewhere in the log)
		[ -n "$why" ] || why=$(sed -n 's/^skipped: //p' "$log" | head -n 1 | cut -c 1-200)
		printf '        skipped %s%s\n' "$sn" "${why:+: $why}"
	done
done
echo "tests: $passed passed, $failed failed, $skipped skipped${skipped_in:+ (in$skipped_in)}"
[ -z "$bad" ]

#!/bin/sh
# tools/fuzz.sh SECONDS BIN... — runs each libFuzzer binary for SECONDS seconds.
#
# Each target starts from the corpus kept in the repository,
# tests/fuzz/corpus/<name>/ (real inputs: read, never written), and keeps what it
# finds under build-fuzz/corpus/<name> (seeded on first use from tests/data where
# a seed makes sense); crash artifacts go to build-fuzz/artifacts/<name>/. Ends with one line
# "fuzz: N targets, N clean, N with findings" and exits non-zero if any target
# found something (or could not run).
set -u

if [ "$#" -lt 2 ]; then
	echo "usage: tools/fuzz.sh SECONDS BIN..." >&2
	exit 2
fi
secs=$1
shift
case "$secs" in
'' | *[!0-9]*)
	echo "fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2
	exit 2
	;;
esac

root=build-fuzz
data=tests/data

# Writes one seed file per line of stdin into directory $1.
seed_lines() {
	n=0
	while IFS= read -r line; do
		n=$((n + 1))
		printf '%s' "$line" >"$1/seed-$n"
	done
}

# Seeds an empty corpus so that the fuzzer starts from real inputs.
seed_corpus() {
	name=$1
	dir=$2
	case "$name" in
	fuzz_sfen)
		grep -v '^#' "$data/positions/sampled-v1.sfen" 2>/dev/null | cut -f1 | seed_lines "$dir"
		;;
	fuzz_position)
		grep -v '^#' "$data/positions/bench-v1.sfen" 2>/dev/null | grep . | seed_lines "$dir"
		;;
	fuzz_usi_move)
		# first byte picks the position: '0' start position, '1' middlegame
		printf '%s\n' 07g7f 08h2b+ 0P*5e 1P*5e 1B*5e+ 11a1b 13i4h+ | seed_lines "$dir"
		;;
	fuzz_csa_move)
		printf '%s\n' 0+7776FU 0+8822UM 17776FU 1-0055FU 1-1122OU 1+0055KA | seed_lines "$dir"
		;;
	esac
}

total=0
clean=0
found=0
for bin in "$@"; do
	name=$(basename "$bin")
	total=$((total + 1))
	corpus="$root/corpus/$name"
	artifacts="$root/artifacts/$name"
	log="$root/logs/$name.log"
	mkdir -p "$corpus" "$artifacts" "$root/logs"
	if [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
		seed_corpus "$name" "$corpus"
	fi
	if [ ! -x "$bin" ]; then
		echo "  FAIL  $name: $bin is not an executable"
		found=$((found + 1))
		continue
	fi
	kept="tests/fuzz/corpus/$name"
	[ -d "$kept" ] || kept=""
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$artifacts/" \
		"$corpus" $kept >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		clean=$((clean + 1))
		printf '  ok    %-24s %ss, %s runs\n' "$name" "$secs" "${runs:-?}"
	else
		found=$((found + 1))
		printf '  FAIL  %-24s exit %s; log %s; artifacts in %s\n' "$name" "$rc" "$log" "$artifacts"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -n 5 | sed 's/^/        /'
	fi
done
echo "fuzz: $total targets, $clean clean, $found with findings"
[ "$found" -eq 0 ]

#!/bin/sh
# Installs the Debian packages joseki needs to build and test, skipping what is
# present. Uses sudo when not root. `--check` only reports (exit 1 if missing).
set -eu

PKGS="build-essential clang libclang-rt-14-dev liblmdb-dev libcurl4-openssl-dev libjansson-dev libcmocka-dev libmicrohttpd-dev libarchive-dev python3 p7zip-full zip xz-utils chromium fonts-ipafont-gothic wrk nginx-light clang-format fairy-stockfish gpsshogi"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

# The explorer's browser test drives Debian's chromium with playwright-core,
# the Kubernetes manifests are checked with kubernetes-models and TypeScript,
# and the KIF export is read by tsshogi, a second KIF reader (npm, pinned in
# tests/server/, tests/deploy/ and tests/minimax/package-lock.json).
npm_deps() {
	for d in tests/server tests/deploy tests/minimax; do
		case "$d" in
		tests/server) m=playwright-core ;;
		tests/deploy) m=kubernetes-models ;;
		*) m=tsshogi ;;
		esac
		[ -d "$d/node_modules/$m" ] && continue
		if [ "${1:-}" = "--check" ]; then
			echo "missing: $d/node_modules (npm ci in $d)" >&2
			return 1
		fi
		(cd "$d" && npm ci --no-audit --no-fund --silent) || {
			echo "tools/install-deps.sh: npm ci in $d failed" >&2
			return 1
		}
	done
}

if [ -z "$missing" ]; then
	npm_deps "${1:-}"
	exit $?
fi
if [ "${1:-}" = "--check" ]; then
	echo "missing packages:$missing" >&2
	exit 1
fi

echo "tools/install-deps.sh: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
npm_deps

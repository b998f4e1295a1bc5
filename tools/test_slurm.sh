#!/bin/sh
# tools/test_slurm.sh — `make test-slurm`: deploy/slurm/joseki-worker.sbatch
# under a real Slurm. Sets up a one-node Slurm cluster on this machine (root
# needed): munged with a fresh key, slurmctld and slurmd (select/cons_tres,
# proctrack/linuxproc, task/none) from a slurm.conf generated in a temporary
# directory, on free loopback ports; a coordinator (`joseki serve --work`) on
# 127.0.0.1 over a book of the floodgate fixtures; submits the script as a
# job array of 3 tasks, each a worker running fairy-stockfish (the built-in
# engine when JOSEKI_ENGINE=builtin); once every task is thinking, scancels
# the array and checks that
#   - every task ended with exit code 0 (the batch script's, after SIGTERM),
#     its worker's summary line saying nothing rejected or unsent, no restart;
#   - the coordinator holds no live lease, its result count is the sum of the
#     workers' accepted positions, no failed try; it stops with exit 0 and
#     the book passes `joseki check` with exactly those thought positions.
# Everything it started is stopped and the directory removed at the end.
# Installs Debian's slurmctld, slurmd, slurm-client and munge when missing
# (services are not started by the packages where policy-rc.d forbids it).
# Not part of `make test` (it needs root and daemons). Ends with one line
# "test-slurm: ok ..." (exit 0) or "test-slurm: FAIL ..." (exit 1).
set -eu

JOSEKI=${JOSEKI:-$(pwd)/joseki}
ENGINE=${JOSEKI_ENGINE:-/usr/games/fairy-stockfish}
TASKS=3
say() { echo "test-slurm: $*" >&2; }
fail() {
	say "FAIL $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (it runs slurmctld, slurmd and munged)"
[ -x "$JOSEKI" ] || fail "$JOSEKI is not built (make)"
missing=""
for p in slurmctld slurmd slurm-client munge; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2 ||
		fail "apt-get install$missing failed"
fi
if [ "$ENGINE" != builtin ] && [ ! -x "$ENGINE" ]; then
	fail "$ENGINE is not installed: tools/install-deps.sh installs it (or JOSEKI_ENGINE=builtin)"
fi

T=$(mktemp -d /tmp/joseki-slurm.XXXXXX)
chmod 755 "$T"
PIDS=""
cleanup() {
	rc=$?
	if [ -n "${JID:-}" ]; then scancel "$JID" 2>/dev/null || true; fi
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.3; done
		kill -9 "$p" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ] && [ -z "${KEEP:-}" ]; then
		for f in "$T"/log/slurmctld.log "$T"/log/slurmd.log "$T"/serve.err "$T"/job-*.log; do
			[ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
		done
	fi
	if [ -n "${KEEP:-}" ]; then say "kept $T"; else rm -rf "$T"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Three free loopback ports (slurmctld, slurmd, the coordinator).
set -- $(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
CTLD_PORT=$1 SLURMD_PORT=$2 COORD_PORT=$3
NODE=$(hostname -s)

# munge: a fresh key and a daemon of our own on a socket of our own.
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log"
chmod 755 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge/munge.key"
munged -F --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
	--pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" \
	--seed-file="$T/munge/munged.seed" >"$T/munge/munged.out" 2>&1 &
PIDS="$!"
for _ in $(seq 50); do [ -S "$T/munge/munge.sock" ] && break; sleep 0.1; done
munge -S "$T/munge/munge.sock" -n | unmunge -S "$T/munge/munge.sock" >/dev/null ||
	fail "munged does not answer on $T/munge/munge.sock"

# slurm.conf: one node (4 CPUs declared on this machine's cores:
# config_overrides), no accounting.
cat >"$T/slurm.conf" <<EOF
ClusterName=joseki-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=30
MinJobAge=600
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=60 State=UP
EOF
export SLURM_CONF="$T/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
PIDS="$! $PIDS"
slurmd -D -f "$SLURM_CONF" -N "$NODE" >"$T/log/slurmd.out" 2>&1 &
PIDS="$! $PIDS"
for _ in $(seq 100); do
	sinfo -h -o %T 2>/dev/null | grep -q '^idle' && break
	sleep 0.2
done
sinfo -h -o %T | grep -q '^idle' || fail "the node did not come up idle: $(sinfo 2>&1)"
say "slurm $(sinfo -V | cut -d' ' -f2): node $NODE idle (slurmctld :$CTLD_PORT, slurmd :$SLURMD_PORT)"

# The coordinator, a worker token, the array.
"$JOSEKI" ingest "$T/book" tests/data/floodgate --quiet >/dev/null
"$JOSEKI" token add "$T/book/tokens" slurm >"$T/token" 2>/dev/null
chmod 600 "$T/token"
LIMIT="--nodes 20000 --multipv 2"
[ "$ENGINE" = builtin ] && LIMIT="--movetime 100"
# shellcheck disable=SC2086
"$JOSEKI" serve "$T/book" --work --listen "127.0.0.1:$COORD_PORT" --quiet $LIMIT \
	--lease-seconds 300 --history-seconds 5 >"$T/serve.out" 2>"$T/serve.err" &
COORD=$!
PIDS="$COORD $PIDS"
URL="http://127.0.0.1:$COORD_PORT"
for _ in $(seq 100); do grep -q "listening" "$T/serve.err" 2>/dev/null && break; sleep 0.1; done
status() { curl -sf -H "Authorization: Bearer $(cat "$T/token")" "$URL/v1/work/status"; }
status >/dev/null || fail "the coordinator does not answer at $URL"

OPTS=""
[ "$ENGINE" != builtin ] && OPTS="--usi-option Threads=1 --usi-option Hash=16"
JID=$(sbatch --parsable --array=1-$TASKS --cpus-per-task=1 --mem-per-cpu=200M --time=10 \
	--output="$T/job-%A_%a.log" \
	--export="ALL,JOSEKI_SERVER=$URL,JOSEKI_BIN=$JOSEKI,JOSEKI_TOKEN_FILE=$T/token,JOSEKI_ENGINE=$ENGINE,JOSEKI_OPTIONS=$OPTS" \
	deploy/slurm/joseki-worker.sbatch) || fail "sbatch refused the script"
say "submitted array job $JID ($TASKS tasks, engine $ENGINE) against $URL"

# Until every task runs and each worker has thought (its nodes/s known).
ok=0
for _ in $(seq 120); do
	running=$(squeue -h -j "$JID" -t R | wc -l)
	busy=$(status | python3 -c 'import json,sys; print(sum(1 for w in json.load(sys.stdin)["workers"] if w["nps"] > 0))' 2>/dev/null || echo 0)
	if [ "$running" -eq "$TASKS" ] && [ "$busy" -ge "$TASKS" ]; then
		ok=1
		break
	fi
	sleep 0.5
done
[ "$ok" = 1 ] || fail "not every task got going: $running running, $busy workers thinking"
sleep 2
say "every task thinking: $(status | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["results"], "results,", j["leases"]["live"], "leases live")')"

scancel "$JID"
for _ in $(seq 120); do [ "$(squeue -h -j "$JID" | wc -l)" -eq 0 ] && break; sleep 0.5; done
[ "$(squeue -h -j "$JID" | wc -l)" -eq 0 ] || fail "tasks still there 60 s after scancel: $(squeue -j "$JID")"

# Every task: exit code 0, a clean summary line, no restart.
sum=0
bad=""
for task in $(seq "$TASKS"); do
	info=$(scontrol show job "${JID}_$task" 2>&1)
	state=$(echo "$info" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1)
	code=$(echo "$info" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' | head -n 1)
	log="$T/job-${JID}_$task.log"
	line=$(grep '^worker positions ' "$log" || true)
	say "task $task: $state, exit code $code: ${line:-no summary line}"
	[ "$code" = "0:0" ] || bad="$bad task $task exit code $code;"
	case "$line" in
	*" rejected 0 unsent 0 "*) ;;
	*) bad="$bad task $task summary '$line';" ;;
	esac
	grep -q 'starting it again\|gave up' "$log" && bad="$bad task $task restarted its worker;"
	n=$(echo "$line" | sed -n 's/^worker positions \([0-9]*\) .*/\1/p')
	sum=$((sum + ${n:-0}))
done
[ -z "$bad" ] || fail "$bad"

# The coordinator: no live lease, every accepted result counted, no failed try.
read -r live results failed <<EOF
$(status | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["leases"]["live"], j["results"], j["failed_tries"])')
EOF
[ "$live" -eq 0 ] || fail "$live leases still live after every task stopped"
[ "$results" -eq "$sum" ] || fail "the coordinator stored $results results, the workers were told $sum"
[ "$failed" -eq 0 ] || fail "$failed failed tries"
kill -TERM "$COORD"
wait "$COORD" || fail "the coordinator did not exit 0 on SIGTERM"
PIDS=$(echo "$PIDS" | sed "s/\b$COORD\b//")
"$JOSEKI" check "$T/book" >/dev/null || fail "joseki check failed on the book"
thought=$("$JOSEKI" stats "$T/book" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["thought"])')
[ "$thought" -eq "$sum" ] || fail "the book holds $thought thought positions, $sum results were accepted"
echo "test-slurm: ok: $TASKS array tasks scancelled, each exit 0 with nothing unsent; $sum results stored, 0 leases live, check passed (slurm $(sinfo -V | cut -d' ' -f2), engine $(basename "$ENGINE"))"

#!/usr/bin/python3 -S
"""The real built-in engine behind a line proxy that adds a search's noise or
forges results, for tests/cluster/test_spot.c.

    JOSEKI_BIN=./joseki [NODES_JITTER=PCT] [NEWGAME=1] [FORGE_RATE=R]
        [FORGE_SCORE=mate_1] [FORGE_DEPTH=1000] [NOISE_SEED=N] [FORGE_LOG=FILE]
        noisy_engine.py

Runs `$JOSEKI_BIN usi` and passes every line through, except:
- `go nodes N` becomes `go nodes M`, M drawn uniformly within PCT percent of N
  (two honest runs of one engine at one budget differ like this: another
  hash, another machine's speed under a time budget);
- with NEWGAME=1, `usinewgame` before each `position` (the engine forgets its
  hash: each search is what a fresh engine gives, as the built-in engine's
  in `joseki worker --engine builtin`);
- with probability R a search is forged: when the engine's `bestmove` comes,
  an `info depth D seldepth D multipv 1 score SCORE nodes 1 pv MOVE` line for
  its best move MOVE is sent just before it, so the worker reports that
  score and depth for the line it would have sent anyway (a legal move,
  a lie about its value; `_` in SCORE stands for a space). Each forged `position` line is appended to
  FORGE_LOG.
The draws come from NOISE_SEED (default: the process id).
"""
import os
import random
import subprocess
import sys
import threading


def main():
    jitter = float(os.environ.get("NODES_JITTER", "0"))
    rate = float(os.environ.get("FORGE_RATE", "0"))
    score = os.environ.get("FORGE_SCORE", "mate_1").replace("_", " ")
    newgame = os.environ.get("NEWGAME") == "1"
    depth = os.environ.get("FORGE_DEPTH", "1000")
    log = os.environ.get("FORGE_LOG")
    rng = random.Random(int(os.environ.get("NOISE_SEED", str(os.getpid()))))
    child = subprocess.Popen([os.environ.get("JOSEKI_BIN", "joseki"), "usi"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             universal_newlines=True, bufsize=1)
    lock = threading.Lock()
    state = {"forge": False}

    def from_engine():
        for raw in child.stdout:
            with lock:
                forge = state["forge"]
            if raw.startswith("bestmove") and forge:
                move = raw.split()[1]
                if move not in ("resign", "win"):
                    sys.stdout.write("info depth %s seldepth %s multipv 1 score %s "
                                     "nodes 1 pv %s\n" % (depth, depth, score, move))
            sys.stdout.write(raw)
            sys.stdout.flush()

    threading.Thread(target=from_engine, daemon=True).start()
    position = ""
    for raw in sys.stdin:
        line = raw.strip()
        if line.startswith("position"):
            position = line
            if newgame:
                child.stdin.write("usinewgame\n")
        if line.startswith("go"):
            words = line.split()
            if jitter > 0 and "nodes" in words:
                i = words.index("nodes") + 1
                n = int(words[i])
                words[i] = str(max(1, int(n * (1 + rng.uniform(-jitter, jitter) / 100))))
                raw = " ".join(words) + "\n"
            forge = rate > 0 and rng.random() < rate
            with lock:
                state["forge"] = forge
            if forge and log:
                with open(log, "a") as f:
                    f.write(position + "\n")
        child.stdin.write(raw)
        child.stdin.flush()
        if line == "quit":
            break
    # The worker gone (its end of the pipe closed): the engine goes too.
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()

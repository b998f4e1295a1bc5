#!/usr/bin/python3 -S
"""The real built-in engine behind a line proxy that crashes or hangs on chosen
positions, for tests/bookgen/test_worker.c.

    JOSEKI_BIN=./joseki [CRASH_SFENS=FILE] [HANG_SFENS=FILE] [GO_LOG=FILE] crash_engine.py

Runs `$JOSEKI_BIN usi` and passes every line through, except on `go` for a
position whose SFEN is a line of the CRASH_SFENS file: it exits at once with
status 3 (an engine that crashes on a position); and for one in HANG_SFENS: it
thinks until told `stop`, then answers `bestmove resign`. With GO_LOG, the
`position` line of every `go` is appended to that file as the search starts
(so that a test can wait until the engine thinks).
"""
import os
import subprocess
import sys
import threading


def main():
    def sfens(var):
        if not os.environ.get(var):
            return []
        with open(os.environ[var]) as f:
            return [line.strip() for line in f if line.strip()]

    bad = sfens("CRASH_SFENS")
    slow = sfens("HANG_SFENS")
    go_log = os.environ.get("GO_LOG")
    last_position = ""
    child = subprocess.Popen([os.environ.get("JOSEKI_BIN", "joseki"), "usi"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             universal_newlines=True, bufsize=1)

    def from_engine():
        for raw in child.stdout:
            sys.stdout.write(raw)
            sys.stdout.flush()

    threading.Thread(target=from_engine, daemon=True).start()
    crash = hang = hanging = False
    for raw in sys.stdin:
        line = raw.strip()
        if line.startswith("position"):
            last_position = line
            crash = any(("sfen " + b) in line for b in bad)
            hang = any(("sfen " + b) in line for b in slow)
        if line.startswith("go") and go_log and not crash:
            with open(go_log, "a") as log:
                log.write(last_position + "\n")
        if line.startswith("go") and crash:
            child.kill()
            os._exit(3)
        if line.startswith("go") and hang:
            hanging = True
            continue
        if line == "stop" and hanging:
            hanging = False
            sys.stdout.write("bestmove resign\n")
            sys.stdout.flush()
            continue
        child.stdin.write(raw)
        child.stdin.flush()
        if line == "quit":
            break
    child.wait()


if __name__ == "__main__":
    main()

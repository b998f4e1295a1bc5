#!/usr/bin/python3 -S
"""The real built-in engine behind a line proxy that crashes on chosen positions,
for tests/bookgen/test_worker.c.

    JOSEKI_BIN=./joseki CRASH_SFENS=FILE crash_engine.py

Runs `$JOSEKI_BIN usi` and passes every line through, except that on `go`
for a position whose SFEN is one of the lines of the CRASH_SFENS file it
exits at once with status 3 (as an engine that crashes on a position).
"""
import os
import subprocess
import sys
import threading


def main():
    with open(os.environ["CRASH_SFENS"]) as f:
        bad = [line.strip() for line in f if line.strip()]
    child = subprocess.Popen([os.environ.get("JOSEKI_BIN", "joseki"), "usi"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             universal_newlines=True, bufsize=1)

    def from_engine():
        for raw in child.stdout:
            sys.stdout.write(raw)
            sys.stdout.flush()

    threading.Thread(target=from_engine, daemon=True).start()
    crash = False
    for raw in sys.stdin:
        line = raw.strip()
        if line.startswith("position"):
            crash = any(("sfen " + b) in line for b in bad)
        if line.startswith("go") and crash:
            child.kill()
            os._exit(3)
        child.stdin.write(raw)
        child.stdin.flush()
        if line == "quit":
            break
    child.wait()


if __name__ == "__main__":
    main()

#!/usr/bin/python3 -S
"""A real engine that misbehaves on purpose, for tests of `think` under load.

    JOSEKI_BIN=./joseki MIXED_SCRIPT=crash,ok,hang MIXED_STATE=FILE mixed_engine.py

Each start of the program takes the next mode of MIXED_SCRIPT, cycling (the count
of starts is kept in MIXED_STATE under a lock, since a pool starts its engines
at once). Every mode but `hang` runs `$JOSEKI_BIN usi` behind a line proxy, so
the answers are a real search's:

  ok       the real engine, untouched
  crash    the real engine for two searches, then exits in the middle of the
           third (after one info line)
  hang     answers the handshake, then never answers go and ignores stop
  garbage  the real engine with unreadable lines (and a few non-USI words)
           mixed into every answer
  flood    the real engine, with 5,000 extra info lines before every bestmove
"""
import os
import subprocess
import sys
import threading

from fake_engine import count_start  # the same start counter as the fake engine


def out(s):
    sys.stdout.write(s + "\n")
    sys.stdout.flush()


def hang():
    for raw in sys.stdin:
        line = raw.strip()
        if line == "usi":
            out("id name MixedEngine hang")
            out("usiok")
        elif line == "isready":
            out("readyok")
        elif line == "quit":
            return


def proxy(mode, joseki):
    child = subprocess.Popen([joseki, "usi"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, universal_newlines=True,
                             bufsize=1)
    searches = [0]
    lock = threading.Lock()

    def from_engine():
        for raw in child.stdout:
            line = raw.rstrip("\n")
            with lock:
                if line.startswith("bestmove"):
                    if mode == "garbage":
                        out("info depth x score cp 1 pv 7g7f")
                        out("info depth 3 score cp pv")
                        out("hello from a confused engine")
                    elif mode == "flood":
                        for i in range(5000):
                            out("info depth 1 seldepth 1 nodes %d string flood" % i)
                out(line)
        os._exit(0)

    threading.Thread(target=from_engine, daemon=True).start()
    for raw in sys.stdin:
        line = raw.strip()
        if line.startswith("go"):
            searches[0] += 1
            if mode == "crash" and searches[0] == 3:
                out("info depth 1 score cp 1 pv")
                sys.stderr.write("mixed: crashing on purpose\n")
                os._exit(3)
        child.stdin.write(line + "\n")
        child.stdin.flush()
        if line == "quit":
            break
    child.wait()


def main():
    modes = os.environ.get("MIXED_SCRIPT", "ok").split(",")
    state = os.environ.get("MIXED_STATE")
    n = count_start(state) if state else 0
    mode = modes[n % len(modes)]
    sys.stderr.write("mixed: start %d in mode %s\n" % (n, mode))
    if mode == "hang":
        hang()
    else:
        proxy(mode, os.environ.get("JOSEKI_BIN", "./joseki"))


if __name__ == "__main__":
    main()

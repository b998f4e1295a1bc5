#!/usr/bin/python3 -S
"""A scripted fake USI engine for tests/bookgen/test_match.c and the match
overhead bench (tools/bench_match.sh).

    script_engine.py --moves "W1 W2 ..." [--crash-at N] [--state FILE]
                     [--crash-starts K] [--name NAME] [--think MS] [--go-log FILE]

It answers `go` at once. For a position with N moves after its set-up
position ("position startpos|sfen ... moves m1 ... mN") it plays the script's
word N+1: a USI move (sent as it is, legal or not), "win" (a declaration),
"resign", or "hang" (no answer, stop ignored); past the end of the script it
resigns. So one script can hold a
whole game and both sides play their half of it. A word may end in "@MS":
the engine thinks (sleeps) MS milliseconds before that answer; --think MS is
the time of every other answer (default 0).

--go-log FILE: every go command is appended to FILE as "N go ..." (N the
moves of the position it was for), so a test can read the clocks it was told.

--crash-at N: instead of answering the position with N moves, exit with
status 3, on the first K starts of the program (--crash-starts, default 1;
the starts are counted in the --state file; without it every start crashes).
"""
import sys
import time

from fake_engine import count_start, out


def args():
    a = {"moves": "", "crash-at": None, "state": None, "crash-starts": "1",
         "name": "ScriptEngine", "think": "0", "go-log": None}
    i = 1
    while i + 1 < len(sys.argv):
        a[sys.argv[i].lstrip("-")] = sys.argv[i + 1]
        i += 2
    return a


def main():
    a = args()
    script = a["moves"].split()
    crash_at = int(a["crash-at"]) if a["crash-at"] is not None else None
    crashing = count_start(a["state"]) < int(a["crash-starts"]) if a["state"] else True
    nmoves = 0
    think = int(a["think"])
    go_log = open(a["go-log"], "a") if a["go-log"] else None
    while True:
        raw = sys.stdin.readline()
        if not raw:
            break
        words = raw.split()
        if not words:
            continue
        cmd = words[0]
        if cmd == "usi":
            out("id name " + a["name"])
            out("id author joseki tests")
            out("usiok")
        elif cmd == "isready":
            out("readyok")
        elif cmd == "position":
            nmoves = len(words) - words.index("moves") - 1 if "moves" in words else 0
        elif cmd == "go":
            if go_log:
                go_log.write("%d %s\n" % (nmoves, " ".join(words)))
                go_log.flush()
            if crash_at is not None and nmoves == crash_at and crashing:
                sys.exit(3)
            word = script[nmoves] if nmoves < len(script) else "resign"
            ms = think
            if "@" in word:
                word, ms = word.split("@")[0], int(word.split("@")[1])
            if word == "hang":
                continue
            if ms > 0:
                time.sleep(ms / 1000.0)
            if word not in ("win", "resign"):
                out("info depth 1 seldepth 1 score cp %d nodes 1 pv %s" % (nmoves, word))
            out("bestmove " + word)
        elif cmd == "quit":
            break


main()

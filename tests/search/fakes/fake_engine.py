#!/usr/bin/python3 -S
"""A fake USI engine for tests/search/test_usi_engine.c.

    fake_engine.py [--script MODE,MODE,...] [--state FILE] [--transcript FILE]

Each start of the program takes the next MODE of the script (the count of
starts so far is kept in the --state file; the last mode repeats), so a test
can say "crash on the first engine, behave on the second". Modes:

  ok           answers like a real engine: several depths, bound lines, an
               info string, MultiPV lines, a legal bestmove
  crash_go     prints one info line on go, then exits with status 3
  crash_usi    exits as soon as it reads "usi"
  hang_go      never answers go, and ignores stop
  hang_stop    never answers go by itself, answers stop with a bestmove
  stall_usi    never sends usiok
  stall_ready  sends usiok, never readyok
  malformed    the ok answer with malformed info lines mixed in
  garbage      only malformed info lines, then a legal bestmove
  illegal      an illegal (well-formed) bestmove
  badmove      an unreadable bestmove
  quit_idle    exits right after the handshake (before any position)
  overlong     a 100 kB line and chatter that is not USI, then the ok answer
  badpv        the ok answer, except that MultiPV 2 starts with an illegal move
               and the PV of MultiPV 1 turns illegal after two moves
  bare         lists no option after usi; answers as ok otherwise
  timeonly     calls itself "gpsshogi (fake)" and, as gpsshogi's gpsusi does,
               aborts on a go with anything but the time controls (btime
               wtime byoyomi binc winc infinite); answers as ok otherwise

Known positions (anything else gets "bestmove resign"): the start position,
the start position after 7g7f, and a mate-in-1 position.
"""
import fcntl
import sys

MATE_SFEN = "4k4/9/4G4/9/9/9/9/9/4K4 b G 1"
# position key -> list of (move, score words, pv)
KNOWN = {
    "startpos": [("7g7f", "cp 50", "7g7f 3c3d 2g2f"),
                 ("2g2f", "cp 40", "2g2f 8c8d"),
                 ("6g6f", "cp 10", "6g6f 3c3d"),
                 ("5g5f", "cp -5", "5g5f"),
                 ("1g1f", "cp -20", "1g1f 3c3d")],
    "startpos moves 7g7f": [("3c3d", "cp -40", "3c3d 2g2f"),
                            ("8c8d", "cp -50", "8c8d 2g2f"),
                            ("4a3b", "cp -60", "4a3b")],
    "sfen " + MATE_SFEN: [("G*5b", "mate 1", "G*5b"),
                          ("G*4b", "cp 800", "G*4b 5a6a")],
}


# The options listed after usi (the driver refuses to set any other).
OPTIONS = ["MultiPV type spin default 1 min 1 max 500",
           "USI_Hash type spin default 16 min 1 max 1024",
           "Threads type spin default 1 min 1 max 8",
           "EvalDir type string default eval",
           "Debug Log File type string default <empty>"]


def out(s):
    sys.stdout.write(s + "\n")
    sys.stdout.flush()


def err(s):
    sys.stderr.write("fake: " + s + "\n")
    sys.stderr.flush()


def args():
    a = {"script": "ok", "state": None, "transcript": None}
    i = 1
    while i + 1 < len(sys.argv):
        a[sys.argv[i].lstrip("-")] = sys.argv[i + 1]
        i += 2
    return a


def count_start(path):
    """Starts of the program before this one, counted in the file path
    (several engines of a pool start at once: counted under a lock)."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = int(f.read().strip() or "0")
        f.seek(0)
        f.truncate()
        f.write(str(n + 1))
        f.flush()
    return n


def pick_mode(a):
    modes = a["script"].split(",")
    n = count_start(a["state"]) if a["state"] else 0
    return modes[min(n, len(modes) - 1)]


def answer(mode, key, multipv):
    lines = KNOWN.get(key)
    if lines is None:
        out("info string unknown position")
        out("bestmove resign")
        return
    k = min(multipv, len(lines))
    if mode == "garbage":
        out("info depth x score cp 1 pv " + lines[0][0])
        out("info depth 3 score cp pv " + lines[0][0])
        out("info depth 3 score cp 10 pv")
        out("bestmove " + lines[0][0])
        return
    out("info string thinking about " + key + " pv 1a1b")
    if mode == "overlong":
        out("info string " + "x" * 100000)
        out("hello from the engine")
        out("")
    for depth in (1, 2, 3):
        for i in range(k):
            mv, score, pv = lines[i]
            if depth == 1:
                # a fail-high line first: not final
                out("info depth 1 multipv %d score cp 3000 lowerbound nodes 5 pv %s" % (i + 1, mv))
            if mode == "malformed" and depth == 2:
                out("info depth 2 multipv %d score mate pv %s" % (i + 1, mv))
                out("info depth two multipv %d score cp 5 pv %s" % (i + 1, mv))
            s = score if depth == 3 else "cp %d" % (depth * 100 + i)
            if mode == "badpv" and depth == 3 and i == 0:
                pv = mv + " 3c3d 3c3d 2g2f"
            if mode == "badpv" and depth == 3 and i == 1:
                pv = "5e5d " + pv
            out("info depth %d seldepth %d multipv %d score %s nodes %d nps 1000 time 1 "
                "hashfull 1 pv %s" % (depth, depth + 2, i + 1, s, depth * 1000 + i, pv))
    # after the last complete line: an upperbound line that must be ignored
    out("info depth 4 multipv 1 score cp -3000 upperbound nodes 9999 pv " + lines[k - 1][0])
    if mode == "illegal":
        out("bestmove 5e5d")
    elif mode == "badmove":
        out("bestmove xyzzy")
    else:
        out("bestmove %s ponder 3c3d" % lines[0][0])


def main():
    a = args()
    mode = pick_mode(a)
    tr = open(a["transcript"], "a") if a["transcript"] else None
    err("started in mode " + mode)
    key = None
    multipv = 1
    pending_go = False
    while True:
        raw = sys.stdin.readline()
        if not raw:
            break
        line = raw.strip()
        if tr:
            tr.write(line + "\n")
            tr.flush()
        if line == "usi":
            if mode == "crash_usi":
                sys.exit(2)
            out("id name " + ("gpsshogi (fake)" if mode == "timeonly" else "FakeEngine " + mode))
            out("id author joseki tests")
            if mode != "bare":
                for o in OPTIONS:
                    out("option name " + o)
            if mode != "stall_usi":
                out("usiok")
        elif line == "isready":
            if mode not in ("stall_usi", "stall_ready"):
                out("readyok")
        elif line == "usinewgame":
            if mode == "quit_idle":
                err("quitting while idle")
                sys.exit(0)
        elif line.startswith("setoption name MultiPV value "):
            multipv = int(line.split()[-1])
        elif line.startswith("position "):
            key = line[len("position "):]
        elif line.startswith("go"):
            if mode == "crash_go":
                out("info depth 1 score cp 1 pv 7g7f")
                err("crashing on purpose")
                sys.exit(3)
            if mode == "timeonly":
                words = line.split()[1:]
                timed = ("btime", "wtime", "byoyomi", "binc", "winc")
                bad = [w for i, w in enumerate(words)
                       if w not in timed + ("infinite",) and
                       not (i > 0 and words[i - 1] in timed and w.isdigit())]
                if bad:
                    err("unknown option in go " + bad[0])
                    sys.exit(134)
            if mode in ("hang_go", "hang_stop"):
                pending_go = True
                continue
            answer(mode, key, multipv)
        elif line == "stop":
            if mode == "hang_stop" and pending_go:
                pending_go = False
                answer("ok", key, multipv)
        elif line == "quit":
            break


if __name__ == "__main__":
    main()

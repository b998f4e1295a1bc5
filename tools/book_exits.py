#!/usr/bin/env python3
"""What a book gains by where it leaves its engine (docs/match.md, "What a book
is worth").

usage: tools/book_exits.py [-v] BOOK_MATCH.json BASE_MATCH.json NODES [NAME]

BOOK_MATCH.json is `joseki match --json` of an engine with the book on side A;
BASE_MATCH.json the same engines from the same openings and colours with side
A's book replaced (no book, or a baseline book). For each game in which A left
its book, the position where it did (A to move: A's exit ply) and the position
after as many plies in the base game of the same opening and colour are both
analysed by fairy-stockfish at NODES nodes (a new process for each position,
two at a time, so that the figures repeat; driven by tools/tune/gen_games.py's
Engine: the last exact score counts, a mate as +-CLAMP; the variable
FAIRY_STOCKFISH names another program). One line sums it up: the mean
difference of the two scores from A's view (each clamped to +-1000 cp) with its
standard error, the median, in how many games the book's position was better
or worse, and A's score in each of those groups in both matches (whether the
analyses predict the games). -v adds a line per game.
"""
import json
import os
import queue
import statistics
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tune"))
from gen_games import Engine  # noqa: E402  (the USI driver the tuning scripts use)

FS = os.environ.get("FAIRY_STOCKFISH", "/usr/games/fairy-stockfish")
CLAMP = 1000


def usage():
    sys.exit("usage: tools/book_exits.py [-v] BOOK_MATCH.json BASE_MATCH.json NODES [NAME]")


def split_position(s):
    """'startpos moves a b' or 'sfen ... moves a b' -> (base, [moves])."""
    base, _, moves = s.partition(" moves ")
    return base.strip(), moves.split()


def score_of(result):
    return {"win": 1.0, "draw": 0.5}.get(result, 0.0)


def analyse(start, moves, nodes):
    """The score of start + moves (cp, side to move's view) or None, from a
    new engine process: fairy-stockfish's search depends on what the same
    process searched before, usinewgame or not (docs/search.md), so a process
    kept across positions gives other figures from run to run."""
    eng = Engine(FS, [])
    _, pvs = eng.go(moves, nodes, 1, start)
    eng.send("quit")
    eng.p.wait()
    return pvs[1][0] if 1 in pvs else None


def main():
    args = sys.argv[1:]
    verbose = bool(args) and args[0] == "-v"
    if verbose:
        args = args[1:]
    if len(args) not in (3, 4):
        usage()
    book = json.load(open(args[0]))["results"]
    base = {(r["opening"], r["a_color"]): r for r in json.load(open(args[1]))["results"]}
    nodes = int(args[2])
    name = args[3] if len(args) == 4 else "book"
    jobs = queue.Queue()
    for r in book:
        exit_ply = r["exit_plies"][0]
        b = base.get((r["opening"], r["a_color"]))
        if exit_ply is None or r["book_plies"][0] == 0 or b is None:
            continue
        start, mg = split_position(r["moves"])
        bstart, mb = split_position(b["moves"])
        # The exit ply is the move number from the record's start (the
        # opening's moves included): the position before it.
        k = exit_ply - 1
        if start != bstart or len(mg) < k or len(mb) < k:
            continue
        jobs.put((r["game"], r["result"], b["result"], start, mg[:k], mb[:k]))
    out, lock = [], threading.Lock()

    def worker():
        while True:
            try:
                game, rg, rb, start, mg, mb = jobs.get_nowait()
            except queue.Empty:
                break
            a, b = analyse(start, mg, nodes), analyse(start, mb, nodes)
            with lock:
                out.append((game, rg, rb, a, b))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.sort()
    clamp = lambda v: max(-CLAMP, min(CLAMP, v))
    rows = [(clamp(a) - clamp(b), rg, rb) for _, rg, rb, a, b in out
            if a is not None and b is not None]
    if verbose:
        for game, rg, rb, a, b in out:
            print("game %d %s %s base %s score %s base %s" % (game, name, rg, rb, a, b))
    if not rows:
        print("exits %s positions 0 (no game left the book)" % name)
        return
    diffs = [d for d, _, _ in rows]
    n = len(diffs)
    se = statistics.stdev(diffs) / n ** 0.5 if n > 1 else 0.0
    better = [x for x in rows if x[0] > 0]
    worse = [x for x in rows if x[0] < 0]

    def scores(group):
        if not group:
            return "n/a (base n/a)"
        return "%.3f (base %.3f)" % (statistics.mean(score_of(g) for _, g, _ in group),
                                     statistics.mean(score_of(g) for _, _, g in group))

    print("exits %s positions %d nodes %d mean_diff_cp %+.1f se %.1f median_diff_cp %+.1f "
          "better %d worse %d same %d score_where_better %s score_where_worse %s" %
          (name, n, nodes, statistics.mean(diffs), se, statistics.median(diffs), len(better),
           len(worse), n - len(better) - len(worse), scores(better), scores(worse)))


if __name__ == "__main__":
    main()

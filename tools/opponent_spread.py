#!/usr/bin/env python3
"""How many replies a book must cover against a varying opponent (docs/notes/match.md,
"How wide a book must be against a varying opponent").

usage: tools/opponent_spread.py [-n OPENINGS] [-d DRAWS] [-j PCT] [--nodes N]
                                [--book-nodes N] [--steps S] [FILE]

For each of the first OPENINGS (25) positions of FILE (default
tests/data/positions/openings-v1.sfen; one "startpos moves ..." or "sfen ..."
line a position), DRAWS (16) games of S (4) opponent moves are played as
`joseki match --nodes N --nodes-jitter PCT --restart-engines` plays them: a new
fairy-stockfish process a game (the opponent), each of its searches at N
(20,000) nodes drawn within +-PCT (5) percent, and after each of its moves the
book side's reply, the same for every game (fairy-stockfish at --book-nodes,
50,000, a new process each time: the book's one move). Printed, per opponent
move: among the games that agree on every earlier reply, the share of the most
played reply, the distinct replies, and the share of the k most played (k = 1..5:
what a book covering k replies a position keeps in book); then the same second
move searched by a new process at the jittered nodes (no earlier search in it),
which says whether the spread is the node count's or the state the earlier
searches left (hash table, history). Two searches run at a time. FAIRY_STOCKFISH
names another program.
"""
import argparse
import collections
import os
import queue
import random
import statistics
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tune"))
from gen_games import Engine  # noqa: E402  (the USI driver the tuning scripts use)

FS = os.environ.get("FAIRY_STOCKFISH", "/usr/games/fairy-stockfish")


def split_position(line, where):
    t = line.split()
    if t[0] == "startpos":
        start, rest = "startpos", t[1:]
    elif t[0] == "sfen" and len(t) >= 5:
        start, rest = " ".join(t[:5]), t[5:]
    else:
        sys.exit(f"opponent_spread: {where}: not a position ('startpos ...' or 'sfen ...')")
    if rest and rest[0] != "moves":
        sys.exit(f"opponent_spread: {where}: 'moves' expected after the position")
    return start, rest[1:]


def search(start, moves, nodes, eng=None):
    """The best move of a search (a new process unless eng is given)."""
    own = eng is None
    if own:
        eng = Engine(FS, [])
    best, _ = eng.go(moves, nodes, 1, start=start)
    if own:
        eng.send("quit")
        eng.p.wait()
    return best


def run_pool(jobs, fn, threads=2):
    q = queue.Queue()
    for j in jobs:
        q.put(j)
    out, lock, errors = [], threading.Lock(), []

    def work():
        while not errors:
            try:
                j = q.get_nowait()
            except queue.Empty:
                return
            try:
                r = fn(j)
            except Exception as e:  # an engine that died: stop, say so
                errors.append(e)
                return
            with lock:
                out.append((j, r))

    th = [threading.Thread(target=work) for _ in range(threads)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    if errors:
        sys.exit(f"opponent_spread: {errors[0]}")
    return out


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("file", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "positions",
        "openings-v1.sfen"))
    ap.add_argument("-n", type=int, default=25, dest="count")
    ap.add_argument("-d", type=int, default=16, dest="draws")
    ap.add_argument("-j", type=float, default=5.0, dest="jitter")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--book-nodes", type=int, default=50000)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.count < 1 or a.draws < 2 or not 0 <= a.jitter <= 50 or a.steps < 2:
        sys.exit("opponent_spread: need -n >= 1, -d >= 2, -j 0..50, --steps >= 2")
    try:
        lines = [(i + 1, s.strip()) for i, s in enumerate(open(a.file))]
    except OSError as e:
        sys.exit(f"opponent_spread: {a.file}: {e.strerror}")
    ops = [(n, s) for n, s in lines if s and not s.startswith("#")][:a.count]
    if not ops:
        sys.exit(f"opponent_spread: {a.file}: no position")
    ops = [split_position(s, f"{a.file}:{n}") for n, s in ops]
    rng = random.Random(a.seed)

    def draw():
        return round(a.nodes * (1 + rng.uniform(-1, 1) * a.jitter / 100))

    book, book_lock = {}, threading.Lock()

    def book_move(start, moves):
        k = (start, tuple(moves))
        with book_lock:
            if k in book:
                return book[k]
        b = search(start, moves, a.book_nodes)
        with book_lock:
            book[k] = b
        return b

    def game(job):
        i, nodes = job
        start, moves = ops[i]
        moves = list(moves)
        opp = Engine(FS, [])
        opp.send("usinewgame")
        seq = []
        for s in range(a.steps):
            m = search(start, moves, nodes[s], opp)
            seq.append(m)
            moves.append(m)
            if s + 1 < a.steps:
                moves.append(book_move(start, moves))
        opp.send("quit")
        opp.p.wait()
        return tuple(seq)

    jobs = [(i, tuple(draw() for _ in range(a.steps))) for i in range(len(ops))
            for _ in range(a.draws)]
    res = collections.defaultdict(list)
    for (i, _), seq in run_pool(jobs, game):
        res[i].append(seq)
    print(f"opponent_spread positions {len(ops)} draws {a.draws} nodes {a.nodes} "
          f"jitter {a.jitter:g}% book_nodes {a.book_nodes}")
    for s in range(a.steps):
        top, nd, mass = [], [], collections.defaultdict(list)
        for i in res:
            groups = collections.defaultdict(list)
            for seq in res[i]:
                groups[seq[:s]].append(seq[s])
            for v in groups.values():
                if len(v) < 4:  # too few games to say
                    continue
                c = [n for _, n in collections.Counter(v).most_common()]
                top.append(c[0] / len(v))
                nd.append(len(c))
                for k in range(1, 6):
                    mass[k].append(sum(c[:k]) / len(v))
        if not top:
            continue
        print(f"  move {s + 1} groups {len(top)} top1 {statistics.mean(top):.3f} distinct "
              f"{statistics.mean(nd):.2f} mass " +
              " ".join(f"k{k} {statistics.mean(mass[k]):.3f}" for k in range(1, 6)))
    # The control: the second move's position (after the most played first
    # reply and the book's move), searched by a new process each time.
    ctl = []
    for i in res:
        m1 = collections.Counter(seq[0] for seq in res[i]).most_common(1)[0][0]
        start, moves = ops[i]
        moves = list(moves) + [m1]
        moves.append(book_move(start, moves))
        ctl += [((i, start, tuple(moves)), draw()) for _ in range(a.draws)]
    out = collections.defaultdict(list)
    for ((i, start, moves), nodes), b in run_pool(
            ctl, lambda j: search(j[0][1], list(j[0][2]), j[1])):
        out[i].append(b)
    top = [collections.Counter(v).most_common(1)[0][1] / len(v) for v in out.values()]
    nd = [len(set(v)) for v in out.values()]
    print(f"  move 2 from a new process: top1 {statistics.mean(top):.3f} distinct "
          f"{statistics.mean(nd):.2f}")


if __name__ == "__main__":
    main()

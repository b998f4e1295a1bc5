#!/usr/bin/env python3
"""What a book gains by where it leaves its engine (docs/match.md, run 9).

For each game of a match whose side A had a book (`joseki match --json`), the
position where A's book ended (A to move: its exit ply) and the position after
as many plies in the game of the same opening and colour from a match without
books are both analysed by fairy-stockfish at NODES nodes; the line per game
gives both scores from A's view, the last line the mean (scores clamped to
+-1000) and median difference, and in how many games the book's was better.
Usage: tools/book_exits.py BOOK_MATCH.json NO_BOOK_MATCH.json NODES
(FAIRY_STOCKFISH names the engine; two engine processes.)"""
import json, os, subprocess, sys, threading, queue, statistics
FS = os.environ.get("FAIRY_STOCKFISH", "/usr/games/fairy-stockfish")
if len(sys.argv) != 4:
    sys.exit("usage: tools/book_exits.py BOOK_MATCH.json NO_BOOK_MATCH.json NODES")
grown = json.load(open(sys.argv[1]))["results"]
none = {(r["opening"], r["a_color"]): r for r in json.load(open(sys.argv[2]))["results"]}
nodes = int(sys.argv[3])
jobs = []
for r in grown:
    e = r["exit_plies"][0]
    if e is None or r["book_plies"][0] == 0:
        continue
    b = none.get((r["opening"], r["a_color"]))
    if not b:
        continue
    mg = r["moves"].split()[2:]
    mb = b["moves"].split()[2:]
    k = e - 1
    if len(mg) < k or len(mb) < k:
        continue
    jobs.append((r["game"], r["result"], b["result"], mg[:k], mb[:k]))

def ev(p, moves):
    p.stdin.write("usinewgame\nposition startpos moves %s\ngo nodes %d\n" % (" ".join(moves), nodes))
    p.stdin.flush()
    score = None
    for line in p.stdout:
        t = line.split()
        if "score" in t:
            i = t.index("score")
            if t[i + 1] == "cp":
                score = int(t[i + 2])
            elif t[i + 1] == "mate":
                m = int(t[i + 2])
                score = 3000 if m > 0 else -3000
        if t and t[0] == "bestmove":
            return score

out = []
lock = threading.Lock()
q = queue.Queue()
for j in jobs:
    q.put(j)

def worker():
    p = subprocess.Popen([FS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    p.stdin.write("usi\n"); p.stdin.flush()
    for line in p.stdout:
        if line.strip() == "usiok":
            break
    p.stdin.write("isready\n"); p.stdin.flush()
    for line in p.stdout:
        if line.strip() == "readyok":
            break
    while True:
        try:
            g, rg, rb, mg, mb = q.get_nowait()
        except queue.Empty:
            break
        a = ev(p, mg)
        b = ev(p, mb)
        with lock:
            out.append((g, rg, rb, a, b))
    p.stdin.write("quit\n"); p.stdin.flush()
    p.wait()

ts = [threading.Thread(target=worker) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
out.sort()
d = [a - b for g, rg, rb, a, b in out if a is not None and b is not None]
cl = lambda v: max(-1000, min(1000, v))
dc = [cl(a) - cl(b) for g, rg, rb, a, b in out if a is not None and b is not None]
for o in out:
    print("game %d grown %s none %s eval_book %s eval_alone %s" % o)
n = len(d)
m = statistics.mean(dc)
sd = statistics.stdev(dc) if n > 1 else 0
better = sum(1 for x in d if x > 0)
worse = sum(1 for x in d if x < 0)
print("exit_eval positions %d nodes %d mean_diff_cp %.1f (clamped to +-1000) se %.1f median_diff_cp %.1f book_better %d worse %d same %d"
      % (n, nodes, m, sd / n ** 0.5 if n else 0, statistics.median(d), better, worse, n - better - worse))

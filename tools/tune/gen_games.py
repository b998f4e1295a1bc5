#!/usr/bin/env python3
"""Self-play games of a USI engine (fairy-stockfish by default) for tuning the
built-in evaluation (tools/tune/README.md).

Each game starts from a real opening (one `startpos moves ...` line of the
openings file, chosen by the seed), plays `--random-plies` plies choosing at
random among the MultiPV lines within `--random-margin` cp of the best, then
plays the engine's best move at `--nodes` nodes a move. A game ends on a mate
score held for 4 plies, a score beyond 3000 cp held for 6 plies, resign, or
`--max-plies` (a draw).

Output, one game a line (tab-separated):
    result  opening_plies  moves  scores
result is Black's (1, 0.5, 0); moves are the USI moves from the start position,
opening included; scores are the engine's value of each position after the
opening, before its move, in cp from the side to move (mates as +-30000).
"""
import argparse
import random
import subprocess
import sys


class Engine:
    def __init__(self, path, options):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.send("usi")
        self.wait("usiok")
        for k, v in options:
            self.send(f"setoption name {k} value {v}")
        self.send("isready")
        self.wait("readyok")

    def send(self, s):
        self.p.stdin.write(s + "\n")
        self.p.stdin.flush()

    def wait(self, word):
        lines = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("engine ended")
            line = line.strip()
            lines.append(line)
            if line.split(" ", 1)[0] == word:
                return lines

    def go(self, moves, nodes, multipv, start="startpos"):
        """Searches start + moves: the best move and {multipv: (score, move)}
        from the last exact scores (bounds skipped; mates as +-30000)."""
        self.send(f"setoption name MultiPV value {multipv}")
        self.send(f"position {start} moves " + " ".join(moves) if moves else f"position {start}")
        self.send(f"go nodes {nodes}")
        lines = self.wait("bestmove")
        best = lines[-1].split()[1]
        pvs = {}
        for line in lines:
            t = line.split()
            if not t or t[0] != "info" or "pv" not in t or "score" not in t:
                continue
            if "lowerbound" in t or "upperbound" in t:
                continue
            k = int(t[t.index("multipv") + 1]) if "multipv" in t else 1
            i = t.index("score")
            if t[i + 1] == "cp":
                v = int(t[i + 2])
            else:
                m = int(t[i + 2])
                v = 30000 if m > 0 else -30000
            pvs[k] = (v, t[t.index("pv") + 1])
        return best, pvs


def play(eng, opening, args, rng):
    moves = list(opening)
    nopen = len(moves)
    scores = []
    result = None
    streak = 0
    for ply in range(args.max_plies - nopen):
        rand = ply < args.random_plies
        best, pvs = eng.go(moves, args.nodes, args.multipv if rand else 1)
        stm_black = len(moves) % 2 == 0
        if best in ("resign", "(none)", "none"):
            result = 0.0 if stm_black else 1.0
            break
        if best == "win":
            result = 1.0 if stm_black else 0.0
            break
        v = pvs.get(1, (0, best))[0]
        if rand and len(pvs) > 1:
            cands = [mv for (s, mv) in pvs.values() if s >= v - args.random_margin]
            best = rng.choice(cands)
        scores.append(v)
        moves.append(best)
        if abs(v) >= 30000:
            streak = streak + 1 if abs(v) >= 30000 else 0
        big = all(abs(s) >= 3000 for s in scores[-6:]) and len(scores) >= 6
        if (abs(v) >= 30000 and streak >= 4) or big:
            win_stm = v > 0
            result = 1.0 if win_stm == stm_black else 0.0
            break
    if result is None:
        result = 0.5
    return result, nopen, moves, scores


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="/usr/games/fairy-stockfish")
    ap.add_argument("--openings", required=True)
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=4000)
    ap.add_argument("--multipv", type=int, default=4)
    ap.add_argument("--random-plies", type=int, default=12)
    ap.add_argument("--random-margin", type=int, default=60)
    ap.add_argument("--max-plies", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    openings = []
    for line in open(args.openings):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        t = line.split()
        if t[0] != "startpos":
            continue
        openings.append(t[2:] if len(t) > 2 else [])
    eng = Engine(args.engine, [("Threads", "1"), ("USI_Hash", "16")])
    with open(args.out, "a") as out:
        for g in range(args.games):
            op = rng.choice(openings)
            eng.send("usinewgame")
            res, nopen, moves, scores = play(eng, op, args, rng)
            out.write(f"{res}\t{nopen}\t{' '.join(moves)}\t{' '.join(map(str, scores))}\n")
            out.flush()
            print(f"game {g + 1}/{args.games}: {len(moves)} plies result {res}",
                  file=sys.stderr)


if __name__ == "__main__":
    main()

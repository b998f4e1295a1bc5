#!/usr/bin/python3 -S
"""The reference values of tests/play/test_match.c's SPRT table, computed apart
from play/match_stats.c: run `python3 tests/play/sprt_reference.py` and copy
its lines into the table (docs/match.md gives the formulas).

For pentanomial pair counts n_k (LL, LD, DD+WL, WD, WW: a pair's points for
A as a share of 2, a_k = 0, 1/4, 1/2, 3/4, 1) and logistic Elo bounds elo0,
elo1 with expected scores s_i = 1 / (1 + 10^(-elo_i / 400)):

  - an empty class counts as 1e-3 (fishtest's regularisation), N = sum n_k,
    p_k = n_k / N;
  - under H_i the likeliest distribution with mean s_i is
    q_k = p_k / (1 + x (a_k - s_i)), x the root of
    sum p_k (a_k - s_i) / (1 + x (a_k - s_i)) = 0;
  - LLR = N * sum p_k ln(q1_k / q0_k).

The C code finds x by bisection; this script by Newton's method from x = 0
(kept inside the bracket where every 1 + x (a_k - s) > 0), and checks that
the q it finds has mean s and sums to 1. It also prints the normal
approximation N (s1 - s0) (2 s - s0 - s1) / (2 var) for comparison.
"""
import math

A = [0.0, 0.25, 0.5, 0.75, 1.0]


def expected(elo):
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def mle(p, s):
    # Newton's method kept inside the bracket where the root lies (g falls
    # from +inf to -inf between lo and hi): a step that leaves it becomes
    # the bracket's midpoint.
    lo, hi = -1.0 / (1.0 - s), 1.0 / s
    x = 0.0
    for _ in range(1000):
        g = sum(pk * (a - s) / (1 + x * (a - s)) for pk, a in zip(p, A))
        if g == 0:
            break
        if g > 0:
            lo = x
        else:
            hi = x
        dg = -sum(pk * (a - s) ** 2 / (1 + x * (a - s)) ** 2 for pk, a in zip(p, A))
        nx = x - g / dg
        if not lo < nx < hi:
            nx = (lo + hi) / 2
        if nx == x or hi - lo <= 1e-16 * max(1.0, abs(x)):
            break
        x = nx
    q = [pk / (1 + x * (a - s)) for pk, a in zip(p, A)]
    assert abs(sum(q) - 1) < 1e-9, sum(q)
    assert abs(sum(qk * a for qk, a in zip(q, A)) - s) < 1e-9
    return q


def llr(counts, elo0, elo1):
    if sum(counts) == 0:
        return 0.0, 0.0
    c = [n if n > 0 else 1e-3 for n in counts]
    n = sum(c)
    p = [ck / n for ck in c]
    s0, s1 = expected(elo0), expected(elo1)
    q0, q1 = mle(p, s0), mle(p, s1)
    exact = n * sum(pk * math.log(b / a) for pk, a, b in zip(p, q0, q1))
    s = sum(pk * a for pk, a in zip(p, A))
    var = sum(pk * (a - s) ** 2 for pk, a in zip(p, A))
    approx = n * (s1 - s0) * (2 * s - s0 - s1) / (2 * var)
    return exact, approx


CASES = [
    ([10, 20, 40, 25, 15], 0, 5),
    ([10, 20, 40, 25, 15], -5, 5),
    ([30, 60, 100, 55, 25], 0, 10),
    ([3, 41, 160, 60, 9], 0, 5),
    ([0, 5, 20, 8, 0], 0, 10),
    ([0, 0, 0, 0, 6], 0, 10),
    ([4, 0, 0, 0, 0], 0, 10),
    ([12, 30, 70, 31, 12], -3, 1),
    ([0, 0, 0, 0, 7], 0, 200),
    ([0, 0, 0, 0, 8], 0, 200),
    ([4, 0, 0, 0, 0], 0, 200),
    ([5, 0, 0, 0, 0], 0, 200),
    ([20, 10, 5, 0, 0], 0, 10),
]

if __name__ == "__main__":
    for counts, e0, e1 in CASES:
        exact, approx = llr(counts, e0, e1)
        print("{{%s}, %g, %g, %.9f}, /* normal approximation %.6f */"
              % (", ".join(str(n) for n in counts), e0, e1, exact, approx))
    for alpha, beta in ((0.05, 0.05), (0.05, 0.1)):
        print("bounds alpha %g beta %g: %.12f %.12f"
              % (alpha, beta, math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)))

"""Two-arm statistics for served rates: an exact one-sided rank test and a ratio of medians.

Why this module: seed 000 warns that "three observations do not establish statistical
significance" — a min–max range of a few repetitions is a range, not an interval, and two
overlapping ranges are no speedup. Whoever compares two arms (`specgate compare`, the
acceptance line's served-rate check, fleet comparisons) needs the same test and the same
words, so they live here and nowhere else. Pure functions of numbers; no engine, no I/O.

The test is the Mann-Whitney U test, one-sided, exact under the permutation null:

    U = Σ_i Σ_j [x_i > y_j] + ½ [x_i = y_j]          (x: the arm claimed larger, y: the other)
    p = P(U ≥ u_obs) over all C(n+m, n) equally likely ways to split the pooled values

Ties are handled exactly: the null distribution is enumerated over the pooled values as they
are (mid-ranks), i.e. the conditional permutation distribution given the ties. Without ties
this is the classical exact distribution (scipy.stats.mannwhitneyu(method="exact")); with
ties scipy's "exact" ignores them, ours does not. Smallest cases by hand: 3 vs 3 with every
x above every y → p = 1/C(6,3) = 1/20 = 0.05 (so three repetitions can never be significant
at α = 0.05 with "p < α"); 5 vs 5 → 1/252 ≈ 0.00397.

The exact count is a dynamic programme over the *smaller* arm (P(U_x ≥ u) = P(U_y ≤ n·m − u), so
either arm may be counted): subsets of s = min(n, m) of the N = n + m pooled items by their doubled
rank sum, each sum bounded by the s largest ranks. Its work is about N · Σ_{k≤s} 2N·k = N²·s·(s+1)
steps (`exact_work`); above `EXACT_MAX_WORK` the normal approximation with tie correction and a
continuity correction is used instead, and the result says `method="normal"` (3 against 300 cells:
exact in milliseconds; 40 against 40: normal). The choice depends only on n and m, never on the values.

Where speculation stops paying over increasing load (concurrency, or request rate) — two rules, here
side by side because they answer different questions:

- `crossover` (measured, `specgate compare` and the acceptance line's probes): the sides are the points'
  verdicts (rank tests, inconclusive points skipped), so the two speedups of the first pays → does-not-pay
  pair need not bracket the threshold; then the midpoint of the two loads is all that can be said;
- `fall_through` (predicted, `specgate tune` and its `--emit` bands): the side is the point speedup
  itself (≥ threshold or below), so the first fall always brackets it.

Both interpolate linearly between the two loads, x1 + (s1 − t) / (s1 − s2) · (x2 − x1); each keeps its own
order of the floating-point operations, so each caller's answers stay bit for bit what they were.
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

# Steps of the exact DP (`exact_work`) above which the normal approximation is used. Measured here
# (pure Python): 30 × 30 (3.3 M steps) about 0.1 s, 3 × 300 (1.1 M) under 0.05 s; probe campaigns (5–10
# per arm) are far smaller, so a run of the gate never spends more than a fraction of a second per test.
EXACT_MAX_WORK = 4_000_000
# A bootstrap interval means something only with enough repetitions per arm; below this the
# honest statement is the observed range of ratios.
BOOTSTRAP_MIN_N = 10
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260101


class StatsError(ValueError):
    """Input that no statistic can be computed from (empty, non-finite, non-positive rates)."""


class Alternative(StrEnum):
    """Which arm the one-sided test claims is larger."""

    GREATER = "greater"  # x > y
    LESS = "less"  # x < y


class IntervalKind(StrEnum):
    """What speedup_low/speedup_high are."""

    OBSERVED_RANGE = "observed_range"  # min and max of all pairwise ratios x_i / y_j: a range, not an interval
    BOOTSTRAP = "bootstrap"  # percentile bootstrap of the ratio of medians (n ≥ BOOTSTRAP_MIN_N per arm)


@dataclass(frozen=True)
class RankTest:
    """One one-sided Mann-Whitney U test of x against y."""

    u: float  # U of x (pairs where x wins, ties count ½)
    p_value: float  # P(U ≥ u) under H0 for "greater", P(U ≤ u) for "less"
    alternative: Alternative
    n_x: int
    n_y: int
    method: str  # "exact" (permutation distribution, ties as they are) or "normal"


@dataclass(frozen=True)
class Speedup:
    """Ratio of medians of x over y, with the range or interval it is reported with."""

    speedup: float  # median(x) / median(y)
    low: float
    high: float
    interval_kind: IntervalKind
    median_x: float
    median_y: float
    n_x: int
    n_y: int


def _check(values: Sequence[float], name: str, *, positive: bool = False) -> list[float]:
    """Fail closed: a statistic of nothing, of NaN or of a non-positive rate is not computed."""
    out = [float(v) for v in values]
    if not out:
        raise StatsError(f"{name}: no observations")
    for v in out:
        if not math.isfinite(v):
            raise StatsError(f"{name}: non-finite observation {v!r}")
        if positive and v <= 0:
            raise StatsError(f"{name}: observation {v!r} is not a positive rate")
    return out


def median(values: Sequence[float]) -> float:
    """The sample median (mean of the two middle values for an even count)."""
    xs = sorted(_check(values, "median"))
    k = len(xs)
    mid = k // 2
    return xs[mid] if k % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def u_statistic(x: Sequence[float], y: Sequence[float]) -> float:
    """U of x: Σ over pairs of [x_i > y_j] + ½ [x_i = y_j]."""
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)


def _doubled_midranks(pooled: Sequence[float]) -> list[int]:
    """Twice the mid-rank of every pooled value (integers, so the DP can index by them)."""
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        # positions i..j (0-based) share mid-rank ((i+1)+(j+1))/2; doubled: i+j+2
        for k in range(i, j + 1):
            ranks[order[k]] = i + j + 2
        i = j + 1
    return ranks


def exact_work(n: int, m: int) -> int:
    """Steps the exact DP needs for arms of n and m values (an upper bound: N² · s · (s + 1), s = min(n, m))."""
    big_n, small = n + m, min(n, m)
    return big_n * big_n * small * (small + 1)


def _exact_upper_tail(x: Sequence[float], y: Sequence[float]) -> float:
    """P(U_x ≥ u_obs) under the permutation null, by counting subsets of the smaller arm by their rank sum.

    With doubled mid-ranks r, the rank sum of x is R = Σ r/2 and U = R − n(n+1)/2, so
    P(U_x ≥ u) = P(2R_x ≥ 2R_obs); when y is the smaller arm, the same event is 2R_y ≤ 2R_y,obs
    (R_x + R_y is fixed). ways[k][s] counts the k-subsets of the pooled items whose doubled rank sum
    is s (s at most the sum of the k largest ranks); each of the C(N, n) splits is equally likely under H0.
    """
    n, m = len(x), len(y)
    pooled = list(x) + list(y)
    ranks = _doubled_midranks(pooled)
    upper = n <= m  # count x's subsets (upper tail) or y's (lower tail)
    size = n if upper else m
    observed = sum(ranks[:n]) if upper else sum(ranks[n:])
    top = sorted(ranks, reverse=True)
    caps = [sum(top[:k]) for k in range(size + 1)]
    ways: list[list[int]] = [[0] * (caps[k] + 1) for k in range(size + 1)]
    ways[0][0] = 1
    for r in ranks:
        for k in range(size, 0, -1):
            prev, cur = ways[k - 1], ways[k]
            hi = min(caps[k], caps[k - 1] + r)
            if hi >= r:  # cur[s] += prev[s - r] for s = r .. hi, one slice at a time
                cur[r:hi + 1] = map(operator.add, cur[r:hi + 1], prev[:hi + 1 - r])
    last = ways[size]
    count = sum(last[observed:]) if upper else sum(last[:observed + 1])
    return count / math.comb(n + m, n)


def _normal_upper_tail(x: Sequence[float], y: Sequence[float], u: float) -> float:
    """Normal approximation with tie correction and a ½ continuity correction.

    mean = n·m/2; var = n·m/12 · ((N+1) − Σ(t³ − t) / (N(N−1))) over tie groups of size t.
    """
    n, m = len(x), len(y)
    big_n = n + m
    pooled = sorted(list(x) + list(y))
    ties = 0
    i = 0
    while i < big_n:
        j = i
        while j + 1 < big_n and pooled[j + 1] == pooled[i]:
            j += 1
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    var = n * m / 12.0 * ((big_n + 1) - ties / (big_n * (big_n - 1)))
    if var <= 0:
        return 1.0
    z = (u - n * m / 2.0 - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_u(x: Sequence[float], y: Sequence[float],
                   alternative: Alternative = Alternative.GREATER) -> RankTest:
    """One-sided Mann-Whitney U test: is x stochastically larger ("greater") or smaller ("less") than y?"""
    xs = _check(x, "x")
    ys = _check(y, "y")
    u = u_statistic(xs, ys)
    exact = exact_work(len(xs), len(ys)) <= EXACT_MAX_WORK
    if alternative is Alternative.GREATER:
        p = _exact_upper_tail(xs, ys) if exact else _normal_upper_tail(xs, ys, u)
    else:
        # P(U_x ≤ u) = P(U_y ≥ n·m − u): the upper tail of the other arm.
        p = _exact_upper_tail(ys, xs) if exact else _normal_upper_tail(ys, xs, len(xs) * len(ys) - u)
    return RankTest(u=u, p_value=min(1.0, p), alternative=alternative, n_x=len(xs), n_y=len(ys),
                    method="exact" if exact else "normal")


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of already sorted values (q in [0, 1])."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def speedup(x: Sequence[float], y: Sequence[float], *, confidence: float = 0.95,
            seed: int = BOOTSTRAP_SEED) -> Speedup:
    """Ratio of medians median(x)/median(y) with its observed range, or a bootstrap interval when n ≥ 10.

    observed_range: low = min(x)/max(y), high = max(x)/min(y) — the extremes of all pairwise
    ratios; it says what was seen, not where the true ratio lies. The bootstrap (percentile,
    BOOTSTRAP_RESAMPLES resamples of each arm with a fixed seed, so the answer is reproducible)
    is used only when both arms have ≥ BOOTSTRAP_MIN_N observations.
    """
    xs = _check(x, "x", positive=True)
    ys = _check(y, "y", positive=True)
    mx, my = median(xs), median(ys)
    point = mx / my
    if len(xs) >= BOOTSTRAP_MIN_N and len(ys) >= BOOTSTRAP_MIN_N:
        rng = random.Random(seed)
        ratios = sorted(median(rng.choices(xs, k=len(xs))) / median(rng.choices(ys, k=len(ys)))
                        for _ in range(BOOTSTRAP_RESAMPLES))
        tail = (1.0 - confidence) / 2.0
        return Speedup(point, _percentile(ratios, tail), _percentile(ratios, 1.0 - tail),
                       IntervalKind.BOOTSTRAP, mx, my, len(xs), len(ys))
    return Speedup(point, min(xs) / max(ys), max(xs) / min(ys), IntervalKind.OBSERVED_RANGE,
                   mx, my, len(xs), len(ys))


def crossover(points: Sequence[tuple[float, float | None, bool | None]],
              threshold: float = 1.0) -> tuple[float, tuple[float, float]] | None:
    """Where a measured series stops paying: between the first load that pays and the next decisive one that
    does not, and those two loads; None when there is no such pair.

    `points`: (load, point speedup or None, pays: True, does not pay: False, undecided: None — skipped, counted
    as neither), one axis only. Interpolated where the speedup crosses `threshold`; the midpoint of the two
    loads when either speedup is unknown or the two do not bracket it (the sides are verdicts, not speedups).
    """
    decisive = sorted((p for p in points if p[2] is not None), key=lambda p: p[0])
    for (x1, s1, pays1), (x2, s2, pays2) in zip(decisive, decisive[1:], strict=False):
        if pays1 is not True or pays2 is not False:
            continue
        if s1 is None or s2 is None or s1 <= s2 or not (s2 <= threshold <= s1):
            at = (x1 + x2) / 2.0
        else:
            at = x1 + (s1 - threshold) / (s1 - s2) * (x2 - x1)
        return at, (x1, x2)
    return None


def fall_through(pairs: Sequence[tuple[float, float]], threshold: float = 1.0) -> float | None:
    """Where a predicted speedup first falls through `threshold` over increasing load: interpolated linearly
    between the last load at or above it and the next one below (None when it never falls through)."""
    pts = sorted(pairs)
    for (b0, s0), (b1, s1) in zip(pts, pts[1:], strict=False):
        if s0 >= threshold > s1:
            return b0 + (s0 - threshold) * (b1 - b0) / (s0 - s1)
    return None

"""gate.stats: the exact one-sided Mann-Whitney U test and the ratio-of-medians speedup.

Oracles: hand-computed small cases (3 vs 3 with every x above every y: 1/C(6,3) = 1/20),
and an independent brute force that enumerates every split of the pooled values with
itertools.combinations and counts U directly from pairs (no ranks), ties included.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from gate import stats
from gate.stats import Alternative, IntervalKind, StatsError, mann_whitney_u, speedup


def brute_force_p(x: list[float], y: list[float]) -> Fraction:
    """P(U_x >= u_obs) by enumerating all C(n+m, n) splits; U from pairs, ties count 1/2."""
    pooled = x + y
    n = len(x)

    def u_of(a: list[float], b: list[float]) -> Fraction:
        return sum((Fraction(1) if p > q else Fraction(1, 2) if p == q else Fraction(0)) for p in a for q in b)

    observed = u_of(x, y)
    hits = total = 0
    for idx in itertools.combinations(range(len(pooled)), n):
        chosen = set(idx)
        a = [pooled[i] for i in idx]
        b = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        total += 1
        hits += u_of(a, b) >= observed
    return Fraction(hits, total)


def test_three_vs_three_all_higher_is_one_in_twenty() -> None:
    r = mann_whitney_u([4.0, 5.0, 6.0], [1.0, 2.0, 3.0])
    assert r.u == 9.0
    assert r.p_value == pytest.approx(1 / 20, abs=1e-15)  # 0.05: not < alpha 0.05, so never significant
    assert r.method == "exact"


def test_five_vs_five_all_higher_is_one_in_252() -> None:
    r = mann_whitney_u([6, 7, 8, 9, 10], [1, 2, 3, 4, 5])
    assert r.p_value == pytest.approx(1 / 252, abs=1e-15)
    # the other direction: every split has U >= 0
    assert mann_whitney_u([6, 7, 8, 9, 10], [1, 2, 3, 4, 5], Alternative.LESS).p_value == 1.0


def test_less_is_greater_of_the_swapped_arms() -> None:
    x, y = [1.0, 2.5, 3.0], [2.0, 4.0, 5.0, 6.0]
    assert (mann_whitney_u(x, y, Alternative.LESS).p_value
            == pytest.approx(mann_whitney_u(y, x, Alternative.GREATER).p_value, abs=1e-15))


def test_one_swap_in_three_vs_three() -> None:
    # x = {3,5,6}, y = {1,2,4}: U = 8; splits with U >= 8 are {4,5,6} (U 9) and {3,5,6} (U 8): 2/20
    assert mann_whitney_u([3, 5, 6], [1, 2, 4]).p_value == pytest.approx(0.1, abs=1e-15)


def test_ties_exact_against_hand_count() -> None:
    # x = {2,2}, y = {1,2}: U = 1.5 + 1.5... pairs: (2>1)=1, (2=2)=.5, twice -> U = 3.
    # pooled {1,2,2,2}: splits of 2 from 4 = 6; those without the 1 have U = 3 (3 of them): p = 3/6
    r = mann_whitney_u([2.0, 2.0], [1.0, 2.0])
    assert r.u == 3.0
    assert r.p_value == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize("seed", range(12))
def test_matches_brute_force_with_and_without_ties(seed: int) -> None:
    rng = random.Random(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    pool = [1.0, 1.5, 2.0, 2.0, 3.0] if seed % 2 else None  # odd seeds: heavy ties
    draw = (lambda: rng.choice(pool)) if pool else (lambda: rng.uniform(10, 20))
    x = [draw() for _ in range(n)]
    y = [draw() for _ in range(m)]
    assert mann_whitney_u(x, y).p_value == pytest.approx(float(brute_force_p(x, y)), abs=1e-12)


def test_large_samples_use_the_normal_approximation_and_say_so() -> None:
    x = [float(i) for i in range(40)]
    y = [float(i) + 0.5 for i in range(40)]
    r = mann_whitney_u(x, y)
    assert r.method == "normal"
    assert 0.4 < r.p_value < 0.8  # shifted by half a step out of 40: nowhere near significant
    # just above the threshold of the exact method the two agree closely
    xs = [float(i) * 1.03 for i in range(30)]
    ys = [float(i) for i in range(30)]
    exact = mann_whitney_u(xs, ys).p_value
    assert mann_whitney_u(xs, ys).method == "exact"
    assert stats._normal_upper_tail(xs, ys, stats.u_statistic(xs, ys)) == pytest.approx(exact, abs=0.02)


@pytest.mark.parametrize("bad", [[], [float("nan")], [1.0, float("inf")]])
def test_fails_closed_on_missing_or_non_finite(bad: list[float]) -> None:
    with pytest.raises(StatsError):
        mann_whitney_u(bad, [1.0])
    with pytest.raises(StatsError):
        speedup([1.0], bad)


def test_speedup_is_a_ratio_of_medians_with_observed_range() -> None:
    # baseline 20, 21, 22 tok/s; speculative 30, 33, 36: medians 33/21; range 30/22 .. 36/20
    s = speedup([30.0, 33.0, 36.0], [20.0, 21.0, 22.0])
    assert s.speedup == pytest.approx(33 / 21)
    assert (s.low, s.high) == (pytest.approx(30 / 22), pytest.approx(36 / 20))
    assert s.interval_kind is IntervalKind.OBSERVED_RANGE
    assert (s.median_x, s.median_y) == (33.0, 21.0)


def test_speedup_even_count_median() -> None:
    assert speedup([2.0, 4.0], [1.0, 1.0, 1.0, 3.0]).speedup == pytest.approx(3.0 / 1.0)


def test_speedup_refuses_non_positive_rates() -> None:
    with pytest.raises(StatsError):
        speedup([1.0, 0.0], [1.0])


def test_bootstrap_only_from_ten_per_arm_and_reproducible() -> None:
    rng = random.Random(7)
    x9 = [30 + rng.random() for _ in range(9)]
    y10 = [20 + rng.random() for _ in range(10)]
    assert speedup(x9, y10).interval_kind is IntervalKind.OBSERVED_RANGE
    x10 = x9 + [30.5]
    a, b = speedup(x10, y10), speedup(x10, y10)
    assert a.interval_kind is IntervalKind.BOOTSTRAP
    assert (a.low, a.high) == (b.low, b.high)  # fixed seed
    # the bootstrap interval lies inside the observed range and brackets the point
    assert min(x10) / max(y10) <= a.low <= a.speedup <= a.high <= max(x10) / min(y10)
    assert math.isfinite(a.low)


# ---------------------------------------------------------------------------------------------
# Issue 21 item 8: the exact test chosen by its cost (smaller arm first, a bound on the work)


def classical_upper_tail(n: int, m: int, u: int) -> Fraction:
    """P(U ≥ u) without ties by Mann and Whitney's recurrence f(n, m, u) = f(n−1, m, u−m) + f(n, m−1, u)
    (the distribution scipy.stats.mannwhitneyu(method="exact") uses): an oracle independent of ranks."""
    f: dict[tuple[int, int], list[int]] = {}

    def dist(a: int, b: int) -> list[int]:
        if (a, b) in f:
            return f[(a, b)]
        if a == 0 or b == 0:
            out = [1]
        else:
            left, right = dist(a - 1, b), dist(a, b - 1)
            out = [0] * (a * b + 1)
            for i, c in enumerate(left):
                out[i + b] += c
            for i, c in enumerate(right):
                out[i] += c
        f[(a, b)] = out
        return out

    counts = dist(n, m)
    return Fraction(sum(counts[u:]), math.comb(n + m, n))


@pytest.mark.parametrize(("n", "m"), [(3, 300), (300, 3), (4, 120), (120, 4), (2, 500)])
def test_unbalanced_arms_are_exact_and_fast(n: int, m: int) -> None:
    """3 against 300 cells ran for hours (the DP counted subsets of the larger arm); now the smaller arm
    is counted, the p-values are exact (the classical recurrence agrees) and both directions answer in
    well under a second."""
    import time

    rng = random.Random(n * 1000 + m)
    x = [rng.uniform(10, 20) for _ in range(n)]
    y = [rng.uniform(10, 20) + (1.0 if n < m else -1.0) for _ in range(m)]
    t0 = time.perf_counter()
    greater = mann_whitney_u(x, y, Alternative.GREATER)
    less = mann_whitney_u(x, y, Alternative.LESS)
    assert time.perf_counter() - t0 < 1.0
    assert greater.method == less.method == "exact"
    u = round(greater.u)
    assert greater.p_value == pytest.approx(float(classical_upper_tail(n, m, u)), rel=1e-12, abs=1e-15)
    assert less.p_value == pytest.approx(float(classical_upper_tail(m, n, n * m - u)), rel=1e-12, abs=1e-15)


def test_the_method_is_chosen_by_the_work_and_named() -> None:
    """Above EXACT_MAX_WORK steps the normal approximation (tie-corrected) answers at once and says so;
    the choice depends on the sizes alone."""
    import time

    assert stats.exact_work(3, 300) <= stats.EXACT_MAX_WORK < stats.exact_work(40, 40)
    assert stats.exact_work(30, 30) <= stats.EXACT_MAX_WORK  # compare's largest usual campaigns stay exact
    rng = random.Random(3)
    x = [float(rng.randint(1, 5)) for _ in range(30)]  # heavy ties
    y = [float(rng.randint(1, 5)) for _ in range(3000)]
    t0 = time.perf_counter()
    r = mann_whitney_u(x, y)
    assert time.perf_counter() - t0 < 1.0
    assert r.method == "normal" and 0.0 <= r.p_value <= 1.0


def test_exact_with_ties_matches_brute_force_when_the_baseline_is_the_smaller_arm() -> None:
    """The lower-tail path (y counted) against the enumeration, ties included."""
    x = [2.0, 2.0, 3.0, 5.0, 5.0, 6.0]
    y = [1.0, 2.0, 5.0]
    assert mann_whitney_u(x, y).p_value == pytest.approx(float(brute_force_p(x, y)), abs=1e-12)
    assert mann_whitney_u(x, y, Alternative.LESS).p_value == pytest.approx(float(brute_force_p(y, x)), abs=1e-12)


def test_crossover_judges_by_verdicts_skipping_the_undecided_with_a_midpoint_fallback() -> None:
    """The measured rule: the sides are verdicts, so the speedups need not bracket the threshold."""
    assert stats.crossover([(1, 1.5, True), (2, 1.1, None), (4, 0.5, False)]) == (1 + 0.5 / 1.0 * 3, (1, 4))
    assert stats.crossover([(1, 1.5, True), (4, 1.2, False)]) == (2.5, (1, 4))  # does not pay, yet above 1
    assert stats.crossover([(4, 0.5, False), (1, 1.5, True)]) == (2.5, (1, 4))  # sorted by load first
    assert stats.crossover([(1, 1.5, True), (4, 1.2, True)]) is None
    at, between = stats.crossover([(1, 1.5, True), (4, 1.0, False)], threshold=1.2) or (None, None)
    assert at == pytest.approx(1 + 0.3 / 0.5 * 3) and between == (1, 4)


def test_fall_through_is_the_first_fall_of_the_point_speedup() -> None:
    """The predicted rule: the side is the point speedup itself, every point counts."""
    assert stats.fall_through([(8, 0.8), (1, 1.5), (4, 1.2)]) == 4 + 0.2 * 4 / 0.4
    assert stats.fall_through([(1, 0.9), (4, 1.2), (8, 0.8)]) == 4 + 0.2 * 4 / 0.4
    assert stats.fall_through([(1, 1.5), (4, 1.2)]) is None

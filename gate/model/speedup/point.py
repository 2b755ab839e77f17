"""Floor 0: one probe point's numbers — speedup, rank tests, measured break-even L* — and its verdict.

Per point (mix, concurrency or request rate), with x = the speculative arm's served rates (one per
repetition) and y = the baseline's:

    speedup = median(x) / median(y)                                   (gate.stats.speedup)
    speedup_low/high = min(x)/max(y) .. max(x)/min(y)                 interval_kind "observed_range"
                       (a percentile bootstrap instead when both arms have ≥ 10 repetitions)
    p_faster = P(U ≥ u | H0), p_slower = P(U ≤ u | H0)                one-sided exact Mann-Whitney U
    verdict  = gate.model.speedup.pays.decide(p_faster, p_slower, speedup, α, min_speedup)
    p_value  = the one-sided p in the direction of the point estimate (p_faster when speedup ≥ 1)

Measured break-even (seed 004, L* = cycle / step, exporter.formulas.break_even_length) where the
speculative arm's acceptance is known, from decode time only:

    step = TPOT_baseline, cycle = L × TPOT_speculative  →  L* = L × TPOT_spec / TPOT_base

(medians over repetitions of the cells' TPOT p50), so speculation pays in decode iff L > L*.

Plain numbers in (`Repetition`): which cells are evidence at all (failed requests, restarts, client-bound
cells, a missing arm) is the comparison's rule (gate.checks.acceptance.comparison.judge_point).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from exporter import formulas
from gate.model.speedup.pays import Verdict, decide
from gate.stats import Alternative, StatsError, mann_whitney_u, speedup

TEST_NAME = "one-sided exact Mann-Whitney U on served tokens/s per repetition"


@dataclass(frozen=True)
class Repetition:
    """One repetition's numbers the point's verdict uses (a probe cell's): its served rate, its TPOT p50, and on
    the speculative arm its acceptance length."""

    served_tokens_per_second: float
    tpot_seconds: float | None
    acceptance_length: float | None = None


@dataclass(frozen=True)
class PointResult:
    """One (mix, concurrency): the numbers and the sentence that explain its verdict."""

    mix: str
    concurrency: int
    verdict: Verdict
    reason: str
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    interval_kind: str | None = None
    p_value: float | None = None
    p_faster: float | None = None
    p_slower: float | None = None
    test_method: str | None = None
    n_baseline: int = 0
    n_speculative: int = 0
    baseline_tokens_per_second: float | None = None
    speculative_tokens_per_second: float | None = None
    baseline_tpot_seconds: float | None = None
    speculative_tpot_seconds: float | None = None
    acceptance_length: float | None = None
    break_even_acceptance_length: float | None = None
    request_rate: float | None = None  # open loop: arrivals per second (concurrency is then the cells' request cap)
    pair_apart_seconds: float | None = None  # probe ab: the largest gap between paired cells of this point

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["verdict"] = self.verdict.value
        return d


def _median_or_none(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def judge_rates(mix: str, concurrency: int, name: str, base: Sequence[Repetition], spec: Sequence[Repetition],
                alpha: float, min_speedup: float | None, *, request_rate: float | None = None,
                pair_apart_seconds: float | None = None) -> PointResult:
    """The verdict of one point from both arms' repetitions (the formulas are in the module docstring); `name`
    opens its reason ("chat at concurrency 4")."""
    x = [r.served_tokens_per_second for r in spec]
    y = [r.served_tokens_per_second for r in base]
    try:
        s = speedup(x, y)
        faster = mann_whitney_u(x, y, Alternative.GREATER)
        slower = mann_whitney_u(x, y, Alternative.LESS)
    except StatsError as e:
        return PointResult(mix, concurrency, Verdict.INCONCLUSIVE, f"{name}: {e}",
                           n_baseline=len(base), n_speculative=len(spec), request_rate=request_rate, pair_apart_seconds=pair_apart_seconds)
    tpot_b = _median_or_none([r.tpot_seconds for r in base])
    tpot_s = _median_or_none([r.tpot_seconds for r in spec])
    length = _median_or_none([r.acceptance_length for r in spec])
    # measured break-even: step = TPOT_baseline, cycle = L × TPOT_speculative (module docstring)
    l_star = formulas.break_even_length(length * tpot_s, tpot_b) if length is not None and tpot_s and tpot_b else None
    speeds = (f"speculative {s.median_x:.4g} tok/s vs baseline {s.median_y:.4g} tok/s (medians of "
              f"{s.n_x} and {s.n_y}), speedup {s.speedup:.3g}x ({s.interval_kind.value} "
              f"{s.low:.3g}-{s.high:.3g})")
    verdict = decide(faster.p_value, slower.p_value, s.speedup, alpha, min_speedup)
    if verdict is Verdict.PAYS:
        p = faster.p_value
        why = f"pays: {speeds}; faster at p = {p:.3g} < {alpha:g}"
    elif faster.p_value < alpha:
        p = faster.p_value
        why = (f"does not pay: {speeds}; significantly faster (p = {p:.3g}) but below min_speedup "
               f"{min_speedup:g}")
    elif verdict is Verdict.DOES_NOT_PAY:
        p = slower.p_value
        why = f"does not pay: {speeds}; slower at p = {p:.3g} < {alpha:g}"
    else:
        p = faster.p_value if s.speedup >= 1 else slower.p_value
        why = (f"inconclusive: {speeds}; the rank test cannot tell the arms apart (p = {p:.3g}, "
               f"not < {alpha:g}); this is no speedup and no slowdown")
    return PointResult(
        mix, concurrency, verdict, f"{name} {why}", speedup=s.speedup, speedup_low=s.low, speedup_high=s.high,
        interval_kind=s.interval_kind.value, p_value=p, p_faster=faster.p_value, p_slower=slower.p_value,
        test_method=faster.method, n_baseline=len(base), n_speculative=len(spec),
        baseline_tokens_per_second=s.median_y, speculative_tokens_per_second=s.median_x,
        baseline_tpot_seconds=tpot_b, speculative_tpot_seconds=tpot_s, acceptance_length=length,
        break_even_acceptance_length=l_star, request_rate=request_rate, pair_apart_seconds=pair_apart_seconds)

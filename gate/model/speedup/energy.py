"""Floor 0: energy beside speed — tokens per joule, joules per accepted token, and whether reported figures agree.

Why its own module: seed 004 reports tokens per joule as decode tokens per second divided by board watts
("2.97 vs 1.96 tok/J at 2K … 36.3 vs 36.0 W"), and issue 38 asks for the same figure per probe arm from
measured joules. Both are one division; what needs care is the units and the rounding:

    tokens_per_joule          = tokens / joules                  = (tokens/s) / W
    joules_per_accepted_token = joules / tokens                  (every output token is an accepted one:
                                                                  rejected draft tokens are never emitted)

The idle baseline (watts before the run) is shown beside the joules, never subtracted from them.

A reported tok/J is consistent with its own rate and watts when |rate / W − tok/J| is within what the
three numbers' printed rounding allows (half a unit of each one's last printed digit, propagated); a
plan whose figures disagree beyond that is refused (gate.plan.model), not silently recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gate.model.speedup.pays import Verdict, decide
from gate.stats import Alternative, StatsError, mann_whitney_u, speedup


def tokens_per_joule(tokens: float, joules: float) -> float | None:
    """Tokens per joule; None when the energy is not positive (no reading, or a counter that did not move)."""
    if not (math.isfinite(tokens) and math.isfinite(joules)) or joules <= 0 or tokens < 0:
        return None
    return tokens / joules


def rate_per_watt(tokens_per_second: float, watts: float) -> float | None:
    """Seed 004's tok/J: decode tokens per second over mean power in watts (J/s), the same unit as tokens / J."""
    return tokens_per_joule(tokens_per_second, watts)


def half_unit(value: float) -> float:
    """Half a unit in the last printed digit of a reported number (36.3 → 0.05, 2.97 → 0.005, 343699 → 0.5)."""
    exp = Decimal(repr(float(value))).normalize().as_tuple().exponent
    places = -exp if isinstance(exp, int) and exp < 0 else 0
    return 0.5 * 10.0 ** -places


def disagreement(tokens_per_second: float, watts: float, reported_tokens_per_joule: float) -> str | None:
    """Why a reported tok/J cannot come from its own rate and watts (beyond their rounding), or None."""
    got = rate_per_watt(tokens_per_second, watts)
    if got is None:
        return f"watts {watts:g} give no tokens per joule"
    allowance = (half_unit(reported_tokens_per_joule)
                 + got * (half_unit(watts) / watts + half_unit(tokens_per_second) / max(tokens_per_second, 1e-12)))
    if abs(got - reported_tokens_per_joule) > allowance:
        return (f"reported {reported_tokens_per_joule:g} tok/J, but {tokens_per_second:g} tok/s ÷ {watts:g} W = "
                f"{got:.3g} tok/J (rounding allows ±{allowance:.2g})")
    return None


@dataclass(frozen=True)
class EnergyResult:
    """Tokens per joule of both arms at one point: the ratio of medians with its band, the same one-sided rank
    test as speed (gate.model.speedup.point), and the verdict rule (gate.model.speedup.pays.decide) against
    `min_ratio` (slo.min_tokens_per_joule_ratio)."""

    verdict: Verdict
    reason: str
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    interval_kind: str | None = None
    p_value: float | None = None
    test_method: str | None = None
    baseline_tokens_per_joule: float | None = None
    speculative_tokens_per_joule: float | None = None
    baseline_joules_per_token: float | None = None
    speculative_joules_per_token: float | None = None
    n_baseline: int = 0
    n_speculative: int = 0

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["verdict"] = self.verdict.value
        return d


def judge_energy(base: Sequence[float], spec: Sequence[float], alpha: float,
                 min_ratio: float | None = None) -> EnergyResult:
    """Tokens per joule per repetition of each arm → the verdict, as `judge_rates` judges served tokens/s:
    "pays" here means significantly more tokens per joule (and at least `min_ratio` times the baseline's)."""
    try:
        s = speedup(list(spec), list(base))
        more = mann_whitney_u(list(spec), list(base), Alternative.GREATER)
        less = mann_whitney_u(list(spec), list(base), Alternative.LESS)
    except StatsError as e:
        return EnergyResult(Verdict.INCONCLUSIVE, f"tokens per joule not compared: {e}",
                            n_baseline=len(base), n_speculative=len(spec))
    verdict = decide(more.p_value, less.p_value, s.speedup, alpha, min_ratio)
    p = more.p_value if s.speedup >= 1 else less.p_value
    nums = (f"{s.median_x:.3g} vs {s.median_y:.3g} tok/J (medians of {s.n_x} and {s.n_y}), ratio {s.speedup:.3g} "
            f"({s.interval_kind.value} {s.low:.3g}-{s.high:.3g})")
    if verdict is Verdict.PAYS:
        why = f"more tokens per joule with speculation: {nums}; p = {p:.3g} < {alpha:g}"
    elif verdict is Verdict.DOES_NOT_PAY:
        below = more.p_value < alpha
        why = (f"not enough tokens per joule: {nums}; significantly more (p = {p:.3g}) but below "
               f"min_tokens_per_joule_ratio {min_ratio:g}" if below
               else f"fewer tokens per joule with speculation: {nums}; p = {p:.3g} < {alpha:g}")
    else:
        why = f"inconclusive: {nums}; the rank test cannot tell the arms apart (p = {p:.3g}, not < {alpha:g})"
    return EnergyResult(verdict, why, ratio=s.speedup, ratio_low=s.low, ratio_high=s.high,
                        interval_kind=s.interval_kind.value, p_value=p, test_method=more.method,
                        baseline_tokens_per_joule=s.median_y, speculative_tokens_per_joule=s.median_x,
                        baseline_joules_per_token=1 / s.median_y if s.median_y > 0 else None,
                        speculative_joules_per_token=1 / s.median_x if s.median_x > 0 else None,
                        n_baseline=len(base), n_speculative=len(spec))

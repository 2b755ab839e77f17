"""Sub-check 4: two-arm served-rate comparisons of the acceptance line (seed 000): ranges, a rank test, honest words.

Why its own module: seed 000 reads three cells per arm and warns that "three observations do
not establish statistical significance"; its whiskers are "observed minimum and maximum …
not standard deviations or confidence intervals". So a comparison here reports the observed
min–max *as such*, an exact one-sided Mann-Whitney p (gate.stats, the one implementation),
and calls a difference significant only when p < α (`slo.alpha`, default 0.05). With 3 vs 3
the smallest exact one-sided p is 1/C(6,3) = 0.05, so three against three never is: the words
are then "higher in all cells, not significant at n = 3", never "speedup". When the
measurement's denominator includes first-token waiting (seed 000: "Served rate includes
first-token waiting; it is not per-user decode speed"), the comparison says so.

A comparison decides nothing by itself; it changes the line only when the plan sets a minimum
speedup (then only a significant comparison whose ratio of medians reaches it passes: the verdict is
`verdicts.by_rank_test` on the side the medians point to, the line's one "does it pay" rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.checks.acceptance import verdicts
from gate.checks.acceptance.finding import Finding
from gate.checks.base import CheckContext
from gate.model.plausibility import DEFAULT_ALPHA
from gate.stats import Alternative, StatsError, mann_whitney_u, median
from gate.status import Status

# Words in a denominator or source that say the rate's clock started before the first token.
_TTFT_WORDS = re.compile(r"ttft|first[- ]token|time to first", re.IGNORECASE)


@dataclass(frozen=True)
class ArmSummary:
    """One arm's samples: median and the observed minimum and maximum (a range, not an interval)."""

    samples: tuple[float, ...]
    median: float
    observed_min: float
    observed_max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> ArmSummary:
        xs = tuple(float(v) for v in samples)
        return cls(xs, median(xs), min(xs), max(xs))

    def to_json(self) -> dict[str, Any]:
        return {"samples": list(self.samples), "median": self.median, "observed_min": self.observed_min,
                "observed_max": self.observed_max, "n": len(self.samples)}


@dataclass(frozen=True)
class ServedRateComparison:
    """Baseline vs speculative served rate for one request mix, with what may and may not be said."""

    mix: str
    unit: str
    source: str
    baseline: ArmSummary
    speculative: ArmSummary
    ratio_of_medians: float | None  # median(speculative) / median(baseline)
    higher_in_all_cells: bool  # every speculative sample above every baseline sample
    lower_in_all_cells: bool
    ranges_overlap: bool
    p_higher: float  # one-sided exact Mann-Whitney p for "speculative > baseline"
    p_lower: float  # … for "speculative < baseline"
    test_method: str  # "exact" or "normal" (gate.stats)
    alpha: float
    significant: bool  # p of the side the medians point to < alpha
    call: str  # the words the report uses
    caveat: str | None  # first-token waiting, when the denominator says so
    status: Status | None  # set only when the plan sets a minimum speedup

    def to_json(self) -> dict[str, Any]:
        return {"mix": self.mix, "unit": self.unit, "source": self.source,
                "baseline": self.baseline.to_json(), "speculative": self.speculative.to_json(),
                "ratio_of_medians": self.ratio_of_medians, "higher_in_all_cells": self.higher_in_all_cells,
                "lower_in_all_cells": self.lower_in_all_cells, "ranges_overlap": self.ranges_overlap,
                "p_higher": self.p_higher, "p_lower": self.p_lower, "test": f"one-sided Mann-Whitney U ({self.test_method})",
                "alpha": self.alpha, "significant": self.significant, "call": self.call, "caveat": self.caveat,
                "status": self.status.value if self.status else None}

    def sentence(self) -> str:
        """One clause for the line's reason: medians, observed ranges labelled as such, the call."""
        b, s = self.baseline, self.speculative
        txt = (f"{self.mix} served rate median {b.median:g} (observed {b.observed_min:g}–{b.observed_max:g}, "
               f"n = {len(b.samples)}) without vs {s.median:g} (observed {s.observed_min:g}–{s.observed_max:g}, "
               f"n = {len(s.samples)}) with speculation {self.unit}: {self.call}")
        return txt + (f" ({self.caveat})" if self.caveat else "")


def _n_text(n_b: int, n_s: int) -> str:
    return f"n = {n_b}" if n_b == n_s else f"n = {n_b} vs {n_s}"


def includes_first_token_wait(*texts: str | None) -> bool:
    """Whether a denominator or source text says the served rate's clock includes TTFT."""
    return any(t is not None and _TTFT_WORDS.search(t) is not None for t in texts)


def compare(mix: str, baseline: Sequence[float], speculative: Sequence[float], *, unit: str, source: str,
            alpha: float = DEFAULT_ALPHA, min_speedup: float | None = None,
            denominator: str | None = None) -> ServedRateComparison:
    """Compare two arms' served-rate samples. Raises StatsError on non-finite or non-positive samples."""
    b, s = ArmSummary.of(baseline), ArmSummary.of(speculative)
    if min(b.observed_min, s.observed_min) <= 0:
        raise StatsError(f"{mix}: served-rate samples must be positive")
    higher = mann_whitney_u(s.samples, b.samples, Alternative.GREATER)
    lower = mann_whitney_u(s.samples, b.samples, Alternative.LESS)
    ratio = s.median / b.median
    all_higher = s.observed_min > b.observed_max
    all_lower = s.observed_max < b.observed_min
    overlap = not (all_higher or all_lower)
    # The one-sided test in the direction the medians point (no direction: neither side is claimed).
    side = "higher" if s.median > b.median else "lower" if s.median < b.median else "equal"
    p = higher.p_value if side == "higher" else lower.p_value if side == "lower" else 1.0
    significant = side != "equal" and p < alpha
    n = _n_text(len(b.samples), len(s.samples))
    p_txt = f"one-sided exact Mann-Whitney p = {p:.3g}" if higher.method == "exact" else \
        f"one-sided Mann-Whitney p ≈ {p:.3g} (normal approximation)"
    if all_higher or all_lower:
        where = f"{'higher' if all_higher else 'lower'} in all cells"
    else:
        where = "observed ranges overlap" + ("" if side == "equal" else f", median {side}")
    if significant:
        call = f"{where}, significant at α = {alpha:g} ({p_txt}; ratio of medians {ratio:.3f})"
        if side == "higher":
            call = "speedup: " + call
        else:
            call = "slowdown: " + call
    else:
        call = f"{where}, not significant at {n} ({p_txt}, α = {alpha:g})"
    caveat = None
    if includes_first_token_wait(denominator, source):
        caveat = ("served rate includes first-token waiting" + (f" (denominator: {denominator})" if denominator else "")
                  + "; it is not per-user decode speed")
    status = None
    if min_speedup is not None:
        # Only the side the medians point to is claimed (the call's words say the same).
        verdict = verdicts.by_rank_test(higher.p_value if side == "higher" else 1.0,
                                        lower.p_value if side == "lower" else 1.0, ratio, alpha, min_speedup)
        status = verdicts.status(verdict)
    return ServedRateComparison(mix=mix, unit=unit, source=source, baseline=b, speculative=s,
                                ratio_of_medians=ratio, higher_in_all_cells=all_higher, lower_in_all_cells=all_lower,
                                ranges_overlap=overlap, p_higher=higher.p_value, p_lower=lower.p_value,
                                test_method=higher.method, alpha=alpha, significant=significant, call=call,
                                caveat=caveat, status=status)


def sub(ctx: CheckContext) -> Finding:
    """The plan's reported served-rate samples (evidence.reported.served_rate), one comparison per mix."""
    plan = ctx.plan
    slo = plan.slo
    run = plan.evidence.reported.run
    denominator = run.measurement_denominator if run else None
    comps: list[ServedRateComparison] = []
    statuses: list[Status] = []
    parts: list[str] = []
    for c in plan.evidence.reported.served_rate:
        try:
            comps.append(compare(c.mix, c.baseline, c.speculative, unit=c.unit, source=c.source,
                                 alpha=slo.alpha, min_speedup=slo.min_speedup, denominator=denominator))
        except StatsError as e:
            statuses.append(Status.INCONCLUSIVE)
            parts.append(f"{c.mix} served rate not compared: {e}")
    for cmp in comps:
        parts.append("reported " + cmp.sentence())
        if cmp.status is not None:
            statuses.append(cmp.status)
    if comps and slo.min_speedup is None:
        parts.append("served-rate comparisons are reported only (no min_speedup set)")
    return Finding.of(statuses, parts, {"served_rate": [c.to_json() for c in comps]})

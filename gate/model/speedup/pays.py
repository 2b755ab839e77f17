"""Floor 0: does speculation pay? The verdict of a one-sided rank comparison of two arms.

Why on the floor: the acceptance line's probes, cohorts and served rates (gate.checks.acceptance.verdicts)
and `specgate compare` judge by this one rule, and a reader of the floor finds it without opening a tool.
With p_faster = P(U ≥ u | H0) and p_slower = P(U ≤ u | H0) (one-sided Mann-Whitney U, gate.stats) and
the point speedup:

    verdict  = pays          if p_faster < α and (min_speedup unset or speedup ≥ min_speedup)
               does_not_pay  if p_slower < α, or p_faster < α but speedup < min_speedup
               inconclusive  otherwise (the ranks cannot tell the arms apart)

Each direction is its own one-sided test at α: the chance of calling a no-difference point
"pays" is ≤ α, and of calling it "does_not_pay" ≤ α.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Verdict", "decide"]


class Verdict(StrEnum):
    PAYS = "pays"
    DOES_NOT_PAY = "does_not_pay"
    INCONCLUSIVE = "inconclusive"


def decide(p_faster: float, p_slower: float, point_speedup: float, alpha: float,
           min_speedup: float | None) -> Verdict:
    """The verdict rule of the module docstring (gate.checks.acceptance.cohorts judges canary against stable by
    it too, and `specgate compare` every probe point): pays when faster at p < α and at least min_speedup; does not pay when slower at
    p < α, or faster but below min_speedup; inconclusive otherwise."""
    if p_faster < alpha:
        return Verdict.PAYS if min_speedup is None or point_speedup >= min_speedup else Verdict.DOES_NOT_PAY
    if p_slower < alpha:
        return Verdict.DOES_NOT_PAY
    return Verdict.INCONCLUSIVE

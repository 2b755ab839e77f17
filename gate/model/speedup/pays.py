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

Plain must be plain (issue 37 item 6): where the deployment's declared schedule runs k = 0 at a point, the
speculative arm there is plain decoding, judged against no speculation as plain, not as speculation (no
speedup is owed, so min_speedup does not apply; only a slowdown is a finding):

    plain    = plain_taxed         if p_slower < α
               plain_free          otherwise
               inconclusive        if the test could never reach α: 1 / C(n + m, n) ≥ α (the smallest
                                   one-sided exact p of n against m repetitions; 3 vs 3 gives 0.05)

Why the floor on the sample size: "the rank test does not show it slower" proves nothing when it could not
have shown it; then the k = 0 band is not shown free.
"""

from __future__ import annotations

import math
from enum import StrEnum

__all__ = ["Plain", "Verdict", "decide", "decide_plain", "smallest_p"]


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


class Plain(StrEnum):
    """The verdict at a point the schedule runs at k = 0: plain decoding against no speculation."""

    FREE = "plain_free"
    TAXED = "plain_taxed"
    INCONCLUSIVE = "inconclusive"


def smallest_p(n_x: int, n_y: int) -> float:
    """The smallest one-sided exact Mann-Whitney p of n_x against n_y repetitions (every x beyond every y):
    1 / C(n_x + n_y, n_x); 1 when either arm is empty."""
    if n_x < 1 or n_y < 1:
        return 1.0
    return 1.0 / math.comb(n_x + n_y, n_x)


def decide_plain(p_slower: float, alpha: float, n_x: int, n_y: int) -> Plain:
    """The plain rule of the module docstring: taxed when the k = 0 arm is slower at p < α, free otherwise,
    inconclusive when n_x against n_y repetitions could never reach α."""
    if smallest_p(n_x, n_y) >= alpha:
        return Plain.INCONCLUSIVE
    return Plain.TAXED if p_slower < alpha else Plain.FREE

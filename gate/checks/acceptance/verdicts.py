"""Does speculation pay? The one place the acceptance line turns a comparison into a verdict.

Why one place (design.md "The acceptance line's sub-checks"): the line has four kinds of "does it pay" evidence — measured L
against break-even L* (seed 004), two-arm served-rate samples (seed 000), probe records per mix
and concurrency, the canary cohort against the stable one — and each must mean the same by
pays / does not pay / inconclusive:

- a rank comparison (`by_rank_test`): pays when faster at p < α and at least `min_speedup` (on the
  point estimate); does not pay when slower at p < α, or faster but below `min_speedup`;
  inconclusive otherwise — the floor's rule (`gate.model.speedup.pays.decide`, which
  `answer_for_mix` applies per probe point), used here for cohorts and served rates too;
- a break-even comparison (`by_break_even`): pays iff L > L*; inconclusive when either is unknown.

`status` maps a verdict onto the line: pays → pass, does not pay → fail, inconclusive → inconclusive.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gate.model.speedup.pays import Verdict, decide
from gate.status import Status

STATUS: Mapping[Verdict, Status] = MappingProxyType({
    Verdict.PAYS: Status.PASS, Verdict.DOES_NOT_PAY: Status.FAIL, Verdict.INCONCLUSIVE: Status.INCONCLUSIVE})


def by_rank_test(p_faster: float, p_slower: float, speedup: float, alpha: float,
                 min_speedup: float | None) -> Verdict:
    """The verdict of a one-sided rank comparison (p of "faster", p of "slower", the point speedup)."""
    return decide(p_faster, p_slower, speedup, alpha, min_speedup)


def by_break_even(length: float | None, break_even_length: float | None) -> Verdict:
    """Seed 004: speculation pays iff L > L* = t_cycle / t_target_step; unknown either side is inconclusive."""
    if length is None or break_even_length is None:
        return Verdict.INCONCLUSIVE
    return Verdict.PAYS if length > break_even_length else Verdict.DOES_NOT_PAY


def status(verdict: Verdict) -> Status:
    return STATUS[verdict]

"""Sub-check 1, the target: is an acceptance-length target set, and above break-even L*?

Seed 002 asks for a target set before rollout; seed 004's arithmetic says a window at L ≤ L* does
not pay, so a target that does not exceed a known L* is a **fail** (a window meeting it would not
pay), no target is a **fail**, and unknown L* skips the comparison (pass, saying why). The target's
source (`slo.target_source`) is shown, or the reason says none was given.
"""

from __future__ import annotations

from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import line_evidence
from gate.checks.base import CheckContext
from gate.status import Status

NO_TARGET = "no acceptance-length target set (seed 002: set an acceptance-length target before rollout)"


def sub(ctx: CheckContext) -> Finding:
    slo = ctx.plan.slo
    target = slo.target_acceptance_length
    points = line_evidence(ctx).points
    values = {"break_even": [p.to_json() for p in points]}
    stars = [(p.point, p.break_even_length, p.kind) for p in points if p.break_even_length is not None]
    source_txt = (f"target source: {slo.target_source}" if slo.target_source else
                  "no source given for the target (slo.target_source: your traffic, a benchmark, or a guess)")
    if target is None:
        return Finding(Status.FAIL, NO_TARGET, values)
    if not stars:
        why = ("L* unknown (no step costs declared or measured)" if not points else
               f"L* unknown at {', '.join(p.point for p in points)} (the measured rates need an acceptance "
               "length: costs[].acceptance_length or measured windows)")
        return Finding(Status.PASS, f"target L {target:g} set ({source_txt}); {why}, so the break-even sub-check "
                                    "is skipped", values)
    worst = max(stars, key=lambda x: x[1])
    star_txt = ", ".join(f"{s:.3f} ({n}, from {kind} step costs)" for n, s, kind in stars)
    if target > worst[1]:
        return Finding(Status.PASS, f"target L {target:g} ({source_txt}) > L* {star_txt}", values)
    return Finding(Status.FAIL, f"target L {target:g} ({source_txt}) does not exceed L* {worst[1]:.3f} at {worst[0]} "
                                f"(from {worst[2]} step costs): a window meeting the target would not pay", values)

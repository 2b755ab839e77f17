"""Sub-check 7, depth (issue 12): the plan's k against tune's best k per operating point.

A pure function of the per-position counters the evidence layer read (`MetricsEvidence.positions`,
gate.evidence.positions) and the plan's costs, through the one tune orchestrator (gate.tune.advice →
`gate.tune.run`), so `specgate check` and `specgate tune --plan` name the same best k. It warns only
when another depth's whole predicted speedup band lies above the plan's k's band, and only where
this line found usable acceptance evidence (evidence it rejected gives no advice).
"""

from __future__ import annotations

from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import line_evidence
from gate.checks.base import CheckContext
from gate.status import Status
from gate.tune.advice import depth_advice


def sub(ctx: CheckContext) -> Finding:
    if not line_evidence(ctx).measured_l:
        return Finding()
    advice = depth_advice(ctx.plan, ctx.metrics.positions)
    if advice is None:
        return Finding()
    return Finding(Status.WARN if advice.warnings else None, advice.sentence(), {"depth": advice.to_json()})

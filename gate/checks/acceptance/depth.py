"""Sub-check 7, depth (issue 12): the plan's k against tune's best k per operating point.

It reads the depth advice the context computes once (`CheckContext.depth_advice`: the per-position
counters the evidence layer read, `MetricsEvidence.positions`, and the plan's costs, through the one
tune orchestrator on floor 0, gate.model.speedup.advice → `gate.model.speedup.tune.run`), so
`specgate check` and `specgate tune --plan` name the same best k. It warns only when another depth's
whole predicted speedup band lies above the plan's k's band, and only where this line found usable
acceptance evidence (evidence it rejected gives no advice).

When the depth varies (issue 22): a plan's depth schedule is shown with the largest k the bounds
use, and a schedule the engine drops (vLLM under data parallelism) warns, with the fixed k the gate
then uses; per-position rates from a run whose depth varied are called lower bounds, never exact
(gate.model.speedup.advice).
"""

from __future__ import annotations

from typing import Any

from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import line_evidence
from gate.checks.base import CheckContext
from gate.status import Status


def _schedule(ctx: CheckContext) -> Finding:
    """The plan's declared depth schedule: what the engine runs of it, the k the bounds use, the engine's warnings."""
    reading = ctx.plan.depth_reading
    if not reading.declared:
        return Finding()
    if reading.schedule is None:
        return Finding(Status.WARN if reading.warnings else None, "; ".join(reading.warnings),
                       {"depth_schedule": {"runs": None, "k": ctx.plan.depth, "warnings": list(reading.warnings)}})
    sched = reading.schedule
    bands = ", ".join(f"batch {b.start}" + ("+" if b.end is None else f"-{b.end}") + " k = "
                      + (f"{b.k_min}..{b.k_max}" if b.k_min < b.k_max else f"{b.k_max}") for b in sched.bands)
    return Finding(None, f"depth schedule ({sched.source}): {bands}; bounds use its largest k = {sched.max_k}",
                   {"depth_schedule": {"runs": sched.source, "k": ctx.plan.depth, "max_k": sched.max_k,
                                       "bands": [{"start": b.start, "end": b.end, "k_min": b.k_min, "k_max": b.k_max}
                                                 for b in sched.bands], "warnings": list(reading.warnings)}})


def _advice(ctx: CheckContext) -> Finding:
    if not line_evidence(ctx).measured_l:
        return Finding()
    advice = ctx.depth_advice
    if advice is None:
        return Finding()
    return Finding(Status.WARN if advice.warnings else None, advice.sentence(), {"depth": advice.to_json()})


def sub(ctx: CheckContext) -> Finding:
    """The schedule's finding, then the depth advice's (the worse status; both sentences)."""
    found = (_schedule(ctx), _advice(ctx))
    values: dict[str, Any] = {}
    for f in found:
        values.update(f.values)
    return Finding.of([f.status for f in found if f.status is not None], [f.sentence for f in found], values)

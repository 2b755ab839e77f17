"""The acceptance line's view of its evidence, shared by its sub-checks: eligible windows grouped per
stream and point, the pooled L per point, and break-even L* per operating point.

Why read from the context by every sub-check that needs it (`line_evidence(ctx)`, and not passed
between them): each sub-check stays `sub(ctx) -> Finding`, testable on its own, and the context
computes it once (`CheckContext.acceptance_evidence`), however many sub-checks ask. Windows that are
reset, of unknown restart status, or thinner than `slo.min_drafts` are never evidence (counted in
`excluded`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from exporter import formulas
from gate.checks.base import CheckContext
from gate.evidence.base import AcceptanceWindow
from gate.evidence.positions import point_name
from gate.plan.model import Plan

# Evidence windows of one stream at one operating point: (point, stream, source).
GroupKey = tuple[str | None, str, str]


@dataclass(frozen=True)
class BreakEvenPoint:
    """L* at one operating point (seed 004): L* = t_cycle / t_target_step.

    `declared`: both step costs given in the plan. `measured`: t_cycle = L / speculative rate and
    t_target_step = 1 / baseline rate (per-sequence decode rates), with L from the plan or the
    measured windows (`acceptance_length_used`); unknown parts stay None.
    """

    point: str
    context_tokens: int | None
    source: str | None
    kind: Literal["declared", "measured"]
    verify_cycle_ms: float | None
    target_step_ms: float | None
    break_even_length: float | None
    acceptance_length_used: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"point": self.point, "context_tokens": self.context_tokens, "source": self.source,
                               "kind": self.kind}
        if self.kind == "measured":
            out["acceptance_length_used"] = self.acceptance_length_used
        out.update(verify_cycle_ms=self.verify_cycle_ms, target_step_ms=self.target_step_ms,
                   break_even_length=self.break_even_length)
        return out


def break_even(plan: Plan, measured_l: dict[str | None, float]) -> list[BreakEvenPoint]:
    """L* per operating point, from declared step costs or measured per-sequence decode rates."""
    out = []
    for i, c in enumerate(plan.costs):
        name = point_name(c, i)
        if c.verify_cycle_ms is not None and c.target_step_ms is not None:
            out.append(BreakEvenPoint(
                name, c.context_tokens, c.source, "declared", c.verify_cycle_ms, c.target_step_ms,
                formulas.break_even_length(c.verify_cycle_ms / 1000, c.target_step_ms / 1000)))
            continue
        length = c.acceptance_length or measured_l.get(c.point) or (
            measured_l.get(None) if len(plan.costs) == 1 else None)
        cycle = (formulas.verify_cycle_seconds(length, c.speculative_tokens_per_second)
                 if length is not None and c.speculative_tokens_per_second else None)
        step = formulas.verify_cycle_seconds(1.0, c.baseline_tokens_per_second or 0.0)
        out.append(BreakEvenPoint(
            name, c.context_tokens, c.source, "measured",
            verify_cycle_ms=None if cycle is None else cycle * 1000,
            target_step_ms=None if step is None else step * 1000,
            break_even_length=(formulas.break_even_length(cycle, step)
                               if cycle is not None and step is not None else None),
            acceptance_length_used=length))
    return out


@dataclass(frozen=True)
class LineEvidence:
    """The eligible windows per (point, stream, source), what was excluded, the pooled L per point, and L*."""

    groups: dict[GroupKey, list[AcceptanceWindow]]
    excluded: dict[str, int]
    measured_l: dict[str | None, float]
    points: list[BreakEvenPoint]


def line_evidence(ctx: CheckContext) -> LineEvidence:
    """The line's evidence for `ctx` (`gather`), computed once per context."""
    return ctx.acceptance_evidence


def gather(ctx: CheckContext) -> LineEvidence:
    """The windows of `ctx.metrics` as evidence; L per point pooled over them (exporter.formulas.pooled_length),
    the fleet's pooled L for the plan's traffic when no window is unnamed; L* from the plan's costs."""
    min_drafts = ctx.plan.slo.min_drafts
    groups: dict[GroupKey, list[AcceptanceWindow]] = defaultdict(list)
    excluded = {"reset": 0, "restart_unknown": 0, "below_min_drafts": 0}
    for w in ctx.metrics.windows:
        if w.reset is None:  # never "no restart" when nobody could tell
            excluded["restart_unknown"] += 1
            continue
        if w.reset:
            excluded["reset"] += 1
            continue
        if w.drafts is None or w.drafts < min_drafts or w.acceptance_length is None:
            excluded["below_min_drafts"] += 1
            continue
        groups[(w.point, w.stream, w.source)].append(w)
    by_point: dict[str | None, list[AcceptanceWindow]] = defaultdict(list)
    for (point, _, _), ws in groups.items():
        by_point[point].extend(ws)
    measured_l: dict[str | None, float] = {}
    for point, ws in by_point.items():
        pooled = formulas.pooled_length((w.acceptance_length, w.drafts or 0) for w in ws)
        if pooled is not None:
            measured_l[point] = pooled
    fleet = ctx.metrics.fleet
    fleet_l = fleet.pooled_length() if fleet is not None else None
    if fleet_l is not None and None not in measured_l:
        measured_l[None] = fleet_l
    return LineEvidence(dict(groups), excluded, measured_l, break_even(ctx.plan, measured_l))

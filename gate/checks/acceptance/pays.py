"""Sub-check 3, does it pay by break-even: measured L against L* per operating point (seed 004).

The measured L is the per-window evidence at that point (observed), else the L the plan's
measured rates were taken with (costs[].acceptance_length). L ≤ L* at any point is a **fail** with
both numbers (`verdicts.by_break_even`); with measured rates L* = L · r_baseline / r_speculative,
so L ≤ L* is the speculative arm being no faster per sequence. Reported besides, never judged:
how much L erodes from the first to the last point, and how much of the verify-cycle growth
between them is the draft's (per drafter forward pass, `gate.model.depth.draft_forward_passes`).

A window is judged against the point it belongs to or not at all: windows that carry no operating point
(live sources, a fleet) stand for the plan's one point, but where the plan has several they may mix the
points' traffic, and a mixed L set against each point's L* proves nothing at any one of them (a long-context
point can lose while the pooled L clears every L*). Such a point without its own evidence is then
**inconclusive**, naming the windows (`unassigned`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.checks.acceptance import verdicts
from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import BreakEvenPoint, line_evidence
from gate.checks.base import CheckContext
from gate.evidence.positions import point_name
from gate.model.depth import draft_forward_passes
from gate.model.speedup.pays import Verdict
from gate.plan.model import Plan
from gate.status import Status


@dataclass(frozen=True)
class MeasuredPoint:
    """Measured L against L* at one operating point; `pays` None when either is unknown.

    `length_source`: "windows" (per-window evidence, observed) or "costs" (the L the plan's measured
    rates were taken with, costs[].acceptance_length).
    """

    point: str | None
    acceptance_length: float | None
    break_even_length: float | None
    pays: bool | None
    length_source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"point": self.point, "acceptance_length": self.acceptance_length,
                "break_even_length": self.break_even_length, "pays": self.pays,
                "length_source": self.length_source}


def sub(ctx: CheckContext) -> Finding:
    ev = line_evidence(ctx)
    measured, statuses, parts = _pays(ctx.plan, ev.points, ev.measured_l,
                                      {k[0]: ws[0].basis for k, ws in ev.groups.items() if ws and ws[0].reported})
    mixed = unassigned(ev.points, ev.measured_l, measured)
    if mixed is not None:
        statuses.append(Status.INCONCLUSIVE)
        parts.append(mixed)
    values: dict[str, Any] = {"measured_vs_break_even": [m.to_json() for m in measured]}
    if not ev.points and ev.measured_l:
        values["measured_vs_break_even"] = [MeasuredPoint(k, v, None, None).to_json() for k, v in ev.measured_l.items()]
    erosion = _erosion(measured)
    if erosion:
        values["erosion"] = erosion
        parts.append(f"L eroded {erosion['fraction'] * 100:.1f}% from {erosion['from']} to {erosion['to']} "
                     f"({erosion['from_length']:.3f} → {erosion['to_length']:.3f})")
    growth = _cycle_growth(ctx.plan, ev.points)
    if growth:
        values["cycle_growth"] = growth
        txt = (f"the draft accounts for {growth['draft_growth_ms']:.2f} of the {growth['verify_cycle_growth_ms']:.2f} ms "
               f"verify-cycle growth from {growth['from']} to {growth['to']}")
        if growth["draft_share"] is not None:
            txt += f" ({growth['draft_share'] * 100:.1f}%"
            if growth["per_draft_step_ms"] is not None:
                txt += (f"; {growth['per_draft_step_ms']:.2f} ms per draft step vs "
                        f"{growth['target_step_growth_ms']:.2f} ms for the target step")
            txt += ")"
        parts.append(txt)
    return Finding.of(statuses, parts, values)


def _pays(plan: Plan, points: list[BreakEvenPoint], measured_l: dict[str | None, float],
          reported: dict[str | None, str] | None = None) -> tuple[list[MeasuredPoint], list[Status], list[str]]:
    """`reported`: per point, the label of windows whose numbers are reported (reported stays reported)."""
    rep = reported or {}
    measured: list[MeasuredPoint] = []
    statuses: list[Status] = []
    parts: list[str] = []
    costs = {point_name(c, i): c for i, c in enumerate(plan.costs)}
    for p in points:
        length = measured_l.get(p.point) if p.point in measured_l else (
            measured_l.get(None) if len(points) == 1 else None)
        src = "windows" if length is not None else None
        if length is None and p.kind == "measured" and p.acceptance_length_used is not None:
            length, src = p.acceptance_length_used, "costs"
        star = p.break_even_length
        verdict = verdicts.by_break_even(length, star)
        measured.append(MeasuredPoint(p.point, length, star,
                                      None if verdict is Verdict.INCONCLUSIVE else verdict is Verdict.PAYS, src))
        if verdict is Verdict.DOES_NOT_PAY and length is not None and star is not None:
            statuses.append(verdicts.status(verdict))
            txt = (f"speculation does not pay at {p.point}: measured L {length:.3f} ≤ L* {star:.3f}"
                   + (f" (L {(rep.get(p.point) if p.point in measured_l else rep.get(None)) or 'observed'} in the "
                      "evidence windows" if src == "windows" else
                      " (L as measured with the plan's rates"))
            c = costs.get(p.point)
            if p.kind == "measured" and c is not None and c.speculative_tokens_per_second and \
                    c.baseline_tokens_per_second:
                txt += (f"; measured {c.speculative_tokens_per_second:,.1f} tokens/s per sequence with speculation vs "
                        f"{c.baseline_tokens_per_second:,.1f} without, "
                        f"{c.baseline_tokens_per_second / c.speculative_tokens_per_second:.2f}× slower")
            else:
                txt += f"; L* from declared step costs {p.verify_cycle_ms:g} / {p.target_step_ms:g} ms"
            parts.append(txt + ")")
    return measured, statuses, parts


def unassigned(points: list[BreakEvenPoint], measured_l: dict[str | None, float],
               measured: list[MeasuredPoint]) -> str | None:
    """Why whether speculation pays is not judged at the points that have no L of their own while evidence
    without an operating point exists and the plan has several points (module docstring), or None."""
    if len(points) < 2 or None not in measured_l:
        return None
    open_points = [m.point for m in measured if m.acceptance_length is None and m.break_even_length is not None]
    if not open_points:
        return None
    return (f"whether speculation pays at {', '.join(str(p) for p in open_points)} is not judged: the evidence "
            f"windows without an operating point (pooled L {measured_l[None]:.3f}) may mix the plan's "
            f"{len(points)} points' traffic, and a window is judged against the point it belongs to or not at "
            "all (give each point its own windows: evidence.captures[].point)")


def _erosion(measured: list[MeasuredPoint]) -> dict[str, Any] | None:
    """(L_first − L_last) / L_first between the first and last point with a measured L."""
    known = [(m.point, m.acceptance_length) for m in measured if m.acceptance_length is not None]
    if len(known) < 2:
        return None
    (a_point, a), (b_point, b) = known[0], known[-1]
    return {"from": a_point, "to": b_point, "from_length": a, "to_length": b, "fraction": (a - b) / a}


def _cycle_growth(plan: Plan, points: list[BreakEvenPoint]) -> dict[str, Any] | None:
    """Seed 004: how much of the verify-cycle growth between the first and last point is the draft's.

    draft growth = Δ t_cycle − Δ t_target_step; per draft step = draft growth / the drafter's forward
    passes per cycle (`draft_forward_passes`: k for a vLLM chain, SGLang's num_steps, 1 for a block
    drafter, 0 — no per-step share — for a drafterless method).
    """
    known: list[tuple[str, float, float]] = [(p.point, p.verify_cycle_ms, p.target_step_ms) for p in points
                                             if p.verify_cycle_ms is not None and p.target_step_ms is not None]
    if len(known) < 2:
        return None
    (a_point, a_cycle, a_step), (b_point, b_cycle, b_step) = known[0], known[-1]
    cycle = b_cycle - a_cycle
    step = b_step - a_step
    draft = cycle - step
    spec = plan.engine.speculative
    passes = draft_forward_passes(plan.engine.kind, spec.method, num_speculative_tokens=spec.num_speculative_tokens,
                                  num_draft_tokens=spec.num_draft_tokens, num_steps=spec.num_steps,
                                  eagle_topk=spec.eagle_topk) if spec else None
    per_step = draft / passes if passes else None
    return {"from": a_point, "to": b_point, "verify_cycle_growth_ms": cycle, "target_step_growth_ms": step,
            "draft_growth_ms": draft, "draft_share": draft / cycle if cycle else None,
            "draft_steps": passes, "per_draft_step_ms": per_step,
            "per_draft_step_vs_target_step": (per_step / step) if per_step is not None and step else None}

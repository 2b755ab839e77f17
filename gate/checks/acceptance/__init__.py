"""Budget line 3, acceptance: is a target set above break-even, is it held per batch window, does it pay?

Why per window and against L*: seed 002 asks for an acceptance-length target set before
rollout and then held per batch, not as a lifetime mean; seed 004 shows the arithmetic —
speculation pays iff L > L* = t_cycle / t_target_step. So (issue 10):

- no target before rollout → **fail** ("seed 002: set an acceptance-length target before
  rollout"); a target that does not exceed a known L* → **fail** (a window meeting it would not
  pay); a target above 1 + k never reaches here (invalid plan, gate.plan.model);
- the target's source (`slo.target_source`: your traffic, a benchmark such as the drafter
  card's macro mean, a guess) is shown, or the reason says none was given;
- measured L at or below measured L* at any point → **fail** ("speculation does not pay at …",
  both numbers). With measured rates L* = L · r_baseline / r_speculative, so this is exactly
  "the speculative arm is slower per sequence". `_pays` is the one place where such "does it
  pay" evidence is judged;
- windows that are reset, or whose restart status is unknown, are never evidence;
- two-arm served-rate samples (seed 000) go through gate.checks.served_rate: observed
  min–max labelled as such, an exact one-sided Mann-Whitney p against `slo.alpha`; they
  decide only when the plan sets `min_speedup`;
- in `--phase post` with `evidence.prometheus.cohorts: {canary, stable}`, the canary cohort
  against the stable one over the same window (gate.checks.cohorts): a canary significantly
  slower **fails**, significantly faster on TPOT and tokens/s passes, anything else (a load
  mismatch, too few windows, no stable data) is inconclusive.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from exporter import formulas
from gate.checks import cohorts, probes, served_rate
from gate.checks.base import CheckContext
from gate.evidence.base import AcceptanceWindow
from gate.evidence.fleet.cohorts import CohortEvidence
from gate.evidence.fleet.table import FleetResult
from gate.plan.model import Plan, StepCost
from gate.stats import StatsError
from gate.status import LineResult, Status, combine, window_slo_status
from gate.tune.advice import depth_advice

NO_TARGET = "no acceptance-length target set (seed 002: set an acceptance-length target before rollout)"

# Evidence windows of one stream at one operating point: (point, stream, source).
GroupKey = tuple[str | None, str, str]


def _f(x: float | None, nd: int = 3) -> str:
    return "unknown" if x is None else f"{x:.{nd}f}"


def _point_name(c: StepCost, i: int) -> str:
    if c.point:
        return c.point
    if c.context_tokens:
        return f"{c.context_tokens:,} tokens"
    return f"point {i + 1}"


def _pooled_length(windows: list[AcceptanceWindow]) -> float | None:
    """Drafts-weighted L over eligible windows: 1 + Σaccepted / Σdrafts."""
    drafts = sum(w.drafts or 0 for w in windows)
    accepted = sum((w.acceptance_length - 1.0) * (w.drafts or 0) for w in windows if w.acceptance_length is not None)
    return formulas.acceptance_length(accepted, drafts) if drafts > 0 else None


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
        name = _point_name(c, i)
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
class StreamResult:
    """The per-window SLO on one stream at one operating point."""

    point: str | None
    stream: str
    source: str
    windows: int
    met: int
    fraction: float
    status: Status
    lengths: tuple[float | None, ...]
    min_length: float

    def to_json(self) -> dict[str, Any]:
        return {"point": self.point, "stream": self.stream, "source": self.source, "windows": self.windows,
                "met": self.met, "fraction": self.fraction, "status": self.status.value,
                "lengths": list(self.lengths), "min_length": self.min_length}


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


def check(ctx: CheckContext) -> LineResult:
    """The line over the gathered windows and evidence errors (ctx.metrics), in the context's phase.

    Values (the JSON view): the SLO settings, `evidence_errors`, `windows_excluded`, `break_even`
    (BreakEvenPoint), `streams` (StreamResult), `measured_vs_break_even` (MeasuredPoint), `erosion`
    and `cycle_growth` when known, and `served_rate` (gate.checks.served_rate.ServedRateComparison).
    """
    return judge(ctx.plan, ctx.phase, ctx.metrics.windows, ctx.metrics.errors, fleet=ctx.metrics.fleet,
                 cohort_evidence=ctx.metrics.cohorts)


def judge(plan: Plan, phase: str, windows: list[AcceptanceWindow], evidence_errors: list[str],
          fleet: FleetResult | None = None, cohort_evidence: CohortEvidence | None = None) -> LineResult:
    slo = plan.slo
    target = slo.target_acceptance_length
    parts: list[str] = []
    statuses: list[Status] = []
    values: dict[str, Any] = {"target_acceptance_length": target, "target_source": slo.target_source,
                              "window_seconds": slo.window_seconds,
                              "required_fraction": slo.required_fraction, "min_drafts": slo.min_drafts,
                              "min_windows": slo.min_windows, "min_speedup": slo.min_speedup, "alpha": slo.alpha,
                              "evidence_errors": list(evidence_errors)}

    # Evidence windows, grouped per stream and operating point; reset and thin windows are not evidence.
    groups: dict[GroupKey, list[AcceptanceWindow]] = defaultdict(list)
    excluded = {"reset": 0, "restart_unknown": 0, "below_min_drafts": 0}
    for w in windows:
        if w.reset is None:  # never "no restart" when nobody could tell
            excluded["restart_unknown"] += 1
            continue
        if w.reset:
            excluded["reset"] += 1
            continue
        if w.drafts is None or w.drafts < slo.min_drafts or w.acceptance_length is None:
            excluded["below_min_drafts"] += 1
            continue
        groups[(w.point, w.stream, w.source)].append(w)
    values["windows_excluded"] = excluded
    measured_l: dict[str | None, float] = {}
    by_point: dict[str | None, list[AcceptanceWindow]] = defaultdict(list)
    for (point, _, _), ws in groups.items():
        by_point[point].extend(ws)
    for point, ws in by_point.items():
        pooled = _pooled_length(ws)
        if pooled is not None:
            measured_l[point] = pooled
    fleet_l = fleet.pooled_length() if fleet is not None else None
    if fleet_l is not None and None not in measured_l:
        measured_l[None] = fleet_l

    # 1. The target and break-even.
    points = break_even(plan, measured_l)
    values["break_even"] = [p.to_json() for p in points]
    stars = [(p.point, p.break_even_length, p.kind) for p in points if p.break_even_length is not None]
    source_txt = (f"target source: {slo.target_source}" if slo.target_source else
                  "no source given for the target (slo.target_source: your traffic, a benchmark, or a guess)")
    if target is None:
        statuses.append(Status.FAIL)
        parts.append(NO_TARGET)
    elif not stars:
        statuses.append(Status.PASS)
        why = ("L* unknown (no step costs declared or measured)" if not points else
               f"L* unknown at {', '.join(p.point for p in points)} (the measured rates need an acceptance "
               "length: costs[].acceptance_length or measured windows)")
        parts.append(f"target L {target:g} set ({source_txt}); {why}, so the break-even sub-check is skipped")
    else:
        worst = max(stars, key=lambda x: x[1])
        star_txt = ", ".join(f"{s:.3f} ({n}, from {kind} step costs)" for n, s, kind in stars)
        if target > worst[1]:
            statuses.append(Status.PASS)
            parts.append(f"target L {target:g} ({source_txt}) > L* {star_txt}")
        else:
            statuses.append(Status.FAIL)
            parts.append(f"target L {target:g} ({source_txt}) does not exceed L* {worst[1]:.3f} at {worst[0]} "
                         f"(from {worst[2]} step costs): a window meeting the target would not pay")

    # 2. The per-window SLO.
    slo_status, slo_txt, per_stream = _slo(plan, phase, groups, evidence_errors, bool(windows) or fleet is not None)
    if fleet is not None:
        # The Prometheus fleet: each pod judged on its own windows, the fleet by the plan's rule (gate.evidence.fleet.rule).
        named = fleet.named()
        fleet_txt = f"fleet {fleet.status.value}: {fleet.reason}" + (f" [{named}]" if named else "")
        slo_status, slo_txt = ((fleet.status, fleet_txt) if not groups else
                               (combine([s for s in (slo_status, fleet.status) if s is not None]),
                                f"{slo_txt}; {fleet_txt}"))
        values["fleet"] = fleet.to_json()
    values["streams"] = [r.to_json() for r in per_stream]
    if slo_status is not None:
        statuses.append(slo_status)
    parts.append(slo_txt)

    # 3. Does speculation pay: measured L against L* per point; erosion; the draft's share of the cycle growth.
    measured, pay_statuses, pay_parts = _pays(plan, points, measured_l)
    statuses += pay_statuses
    parts += pay_parts
    values["measured_vs_break_even"] = [m.to_json() for m in measured]
    if not points and measured_l:
        values["measured_vs_break_even"] = [MeasuredPoint(k, v, None, None).to_json() for k, v in measured_l.items()]
    erosion = _erosion(measured)
    if erosion:
        values["erosion"] = erosion
        parts.append(f"L eroded {erosion['fraction'] * 100:.1f}% from {erosion['from']} to {erosion['to']} "
                     f"({erosion['from_length']:.3f} → {erosion['to_length']:.3f})")
    growth = _cycle_growth(plan, points)
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

    # 4. Two-arm served-rate comparisons (reported samples; gate.checks.served_rate).
    run = plan.evidence.reported.run
    denominator = run.measurement_denominator if run else None
    comps: list[served_rate.ServedRateComparison] = []
    for c in plan.evidence.reported.served_rate:
        try:
            comps.append(served_rate.compare(c.mix, c.baseline, c.speculative, unit=c.unit, source=c.source,
                                             alpha=slo.alpha, min_speedup=slo.min_speedup, denominator=denominator))
        except StatsError as e:
            statuses.append(Status.INCONCLUSIVE)
            parts.append(f"{c.mix} served rate not compared: {e}")
    values["served_rate"] = [c.to_json() for c in comps]
    for cmp in comps:
        parts.append("reported " + cmp.sentence())
        if cmp.status is not None:
            statuses.append(cmp.status)
    if comps and slo.min_speedup is None:
        parts.append("served-rate comparisons are reported only (no min_speedup set)")

    # 5. Probe records (evidence.probes): does it pay at the plan's own mixes? (gate.checks.probes, issue 11;
    #    decides with or without min_speedup.)
    probe_statuses, probe_parts, probe_values = probes.judge_probes(plan)
    statuses += probe_statuses
    parts += probe_parts
    if probe_values is not None:
        values["probes"] = probe_values

    # 5b. Canary against stable (evidence.prometheus.cohorts, --phase post; gate.checks.cohorts, issue 11).
    cohort_statuses, cohort_parts, cohort_values = cohorts.judge(plan, phase, cohort_evidence)
    statuses += cohort_statuses
    parts += cohort_parts
    if cohort_values is not None:
        values["cohorts"] = cohort_values

    # 6. Depth (gate.tune.advice, issue 12): the plan's k against tune's best k per point; warn only when
    #    another depth's whole predicted speedup band lies above the plan's k's band. Only where this line
    #    found usable acceptance evidence (tune reads the plan's capture files itself).
    depth = depth_advice(plan) if measured_l else None
    if depth is not None:
        values["depth"] = depth.to_json()
        parts.append(depth.sentence())
        if depth.warnings:
            statuses.append(Status.WARN)

    status = combine(statuses) if statuses else Status.INCONCLUSIVE
    return LineResult(status, "; ".join(parts), values)


def _pays(plan: Plan, points: list[BreakEvenPoint], measured_l: dict[str | None, float]
          ) -> tuple[list[MeasuredPoint], list[Status], list[str]]:
    """Does speculation pay at each operating point: measured L > L*? (the one place this is judged)

    The measured L is the per-window evidence at that point (observed), else the L the plan's
    measured rates were taken with (costs[].acceptance_length). L ≤ L* at any point is a fail with
    both numbers; with measured rates L* = L · r_baseline / r_speculative, so L ≤ L* is the
    speculative arm being no faster per sequence. Other "does it pay" evidence belongs here too.
    """
    measured: list[MeasuredPoint] = []
    statuses: list[Status] = []
    parts: list[str] = []
    costs = {(_point_name(c, i)): c for i, c in enumerate(plan.costs)}
    for p in points:
        length = measured_l.get(p.point) if p.point in measured_l else (
            measured_l.get(None) if len(points) == 1 else None)
        src = "windows" if length is not None else None
        if length is None and p.kind == "measured" and p.acceptance_length_used is not None:
            length, src = p.acceptance_length_used, "costs"
        star = p.break_even_length
        pays = None if length is None or star is None else length > star
        measured.append(MeasuredPoint(p.point, length, star, pays, src))
        if pays is False and length is not None and star is not None:
            statuses.append(Status.FAIL)
            txt = (f"speculation does not pay at {p.point}: measured L {length:.3f} ≤ L* {star:.3f}"
                   + (" (L observed in the evidence windows" if src == "windows" else
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


def _slo(plan: Plan, phase: str, groups: dict[GroupKey, list[AcceptanceWindow]], errors: list[str],
         any_windows: bool) -> tuple[Status | None, str, list[StreamResult]]:
    slo = plan.slo
    target = slo.target_acceptance_length
    err = f" ({'; '.join(errors)})" if errors else ""
    if not groups:
        if errors or phase == "post":
            why = "no usable per-window evidence" + err if errors else (
                "no usable per-window evidence (post phase needs live windows)" if not any_windows else
                "no window is evidence (all reset, of unknown restart status or below min_drafts)")
            return Status.INCONCLUSIVE, why, []
        if any_windows:
            return Status.INCONCLUSIVE, ("every evidence window is reset, of unknown restart status or below "
                                         "min_drafts"), []
        return None, "per-window SLO not judged before the switch (no canary or captured evidence)", []
    if target is None:
        return Status.INCONCLUSIVE, "per-window SLO cannot be judged without a target", []
    per_stream: list[StreamResult] = []
    statuses = []
    for (point, stream, source), ws in groups.items():
        met = sum(1 for w in ws if (w.acceptance_length or 0) >= target)
        frac = met / len(ws)
        st = window_slo_status(len(ws), met, min_windows=slo.min_windows, required_fraction=slo.required_fraction)  # the same rule as every pod of a fleet
        statuses.append(st)
        per_stream.append(StreamResult(point, stream, source, len(ws), met, frac, st,
                                       tuple(w.acceptance_length for w in ws),
                                       min(w.acceptance_length or 0 for w in ws)))
    st = combine(statuses)
    if errors:
        st = combine([st, Status.INCONCLUSIVE])
    total = sum(p.windows for p in per_stream)
    met = sum(p.met for p in per_stream)
    detail = ", ".join(
        f"{p.point or p.stream}: {p.met}/{p.windows} ≥ {target:g}"
        + (f" (L {p.lengths[0]:.3f})" if p.windows == 1 else f" (min L {p.min_length:.3f})")
        for p in per_stream)
    thin = [p for p in per_stream if p.status is Status.INCONCLUSIVE]
    kinds = sorted({"measured from capture files" if src.startswith(("captures", "file ")) else "observed live"
                    for (_, _, src) in groups})
    txt = (f"per-window SLO {'held' if st == Status.PASS else 'not held' if st == Status.FAIL else 'undecided'} "
           f"in {met}/{total} windows of ≥ {slo.min_drafts} drafts, required {slo.required_fraction:g} per stream "
           f"[{detail}] (L {' and '.join(kinds)})")
    if thin:
        txt += f"; {len(thin)} stream(s) have fewer than {slo.min_windows} windows"
    return st, txt + err, per_stream


def _erosion(measured: list[MeasuredPoint]) -> dict[str, Any] | None:
    """(L_first − L_last) / L_first between the first and last point with a measured L."""
    known = [(m.point, m.acceptance_length) for m in measured if m.acceptance_length is not None]
    if len(known) < 2:
        return None
    (a_point, a), (b_point, b) = known[0], known[-1]
    return {"from": a_point, "to": b_point, "from_length": a, "to_length": b, "fraction": (a - b) / a}


def _cycle_growth(plan: Plan, points: list[BreakEvenPoint]) -> dict[str, Any] | None:
    """Seed 004: how much of the verify-cycle growth between the first and last point is the draft's.

    draft growth = Δ t_cycle − Δ t_target_step; per draft step = draft growth / k (k draft steps).
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
    k = (spec.num_speculative_tokens or spec.num_steps) if spec else None
    per_step = draft / k if k else None
    return {"from": a_point, "to": b_point, "verify_cycle_growth_ms": cycle, "target_step_growth_ms": step,
            "draft_growth_ms": draft, "draft_share": draft / cycle if cycle else None,
            "draft_steps": k, "per_draft_step_ms": per_step,
            "per_draft_step_vs_target_step": (per_step / step) if per_step is not None and step else None}

"""Sub-check 2, the per-window SLO: is the target held per batch window, per stream and point (seed 002)?

Each stream's eligible windows are judged by `gate.status.window_slo_status` (at least
`slo.min_windows`, a share ≥ `slo.required_fraction` at L ≥ target) — the same rule every pod of a
Prometheus fleet is judged by: the fleet's source returns each pod's facts (gate.evidence.fleet),
and this sub-check judges them, each pod and then the fleet by the plan's rule
(gate.checks.acceptance.fleet_rule; the engine must be up in `post`). No usable window is
inconclusive in `post` or with evidence errors, and not judged (no status) before the switch
without evidence. A fleet whose pods run engine versions of two acceptance definitions (`specgate_engine_info`,
`gate.model.invariants.definition_change`, issue 37 item 3) is not comparable: inconclusive, naming both, unless
both convert exactly to specgate's L.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.fleet_rule import judge_fleet
from gate.checks.acceptance.windows import GroupKey, line_evidence
from gate.checks.base import CheckContext
from gate.evidence.base import AcceptanceWindow
from gate.model.invariants import definition_change
from gate.plan.model import Plan, PrometheusSource
from gate.status import Status, combine, window_slo_status


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


def sub(ctx: CheckContext) -> Finding:
    ev = ctx.metrics
    groups = line_evidence(ctx).groups
    status, txt, per_stream = _slo(ctx.plan, ctx.phase, groups, ev.errors, bool(ev.windows) or ev.fleet is not None)
    values: dict[str, Any] = {}
    if ev.fleet is not None:
        # The Prometheus fleet's rows: each pod judged on its own windows, the fleet by the plan's rule (the source the
        # plan names, else a default one: gate.evidence.gather asks the same), gate.checks.acceptance.fleet_rule.
        rule = (ctx.plan.evidence.prometheus or PrometheusSource()).fleet
        fleet = judge_fleet(ev.fleet, ctx.plan.slo, rule, require_engine_up=ctx.phase == "post")
        named = fleet.named()
        fleet_status, fleet_txt = fleet.status, f"fleet {fleet.status.value}: {fleet.reason}" + (
            f" [{named}]" if named else "")
        mixed = mixed_definitions(ctx.plan.engine.kind, ev.engine_versions)
        if mixed is not None:
            fleet_status, fleet_txt = combine([fleet.status, Status.INCONCLUSIVE]), f"{fleet_txt}; {mixed}"
        status, txt = ((fleet_status, fleet_txt) if not groups else
                       (combine([s for s in (status, fleet_status) if s is not None]), f"{txt}; {fleet_txt}"))
        values["fleet"] = fleet.to_json()
    values["streams"] = [r.to_json() for r in per_stream]
    return Finding(status, txt, values)


def mixed_definitions(engine: str, versions: dict[str, str]) -> str | None:
    """The identity reason when the fleet's pods ran two acceptance definitions (the first pod of each version
    named), else None. Pods of unknown version are left to the version rules."""
    by_version: dict[str, str] = {}
    for pod, version in sorted(versions.items()):
        by_version.setdefault(version, pod)
    first = next(iter(by_version.items()), None)
    for version, pod in list(by_version.items())[1:]:
        assert first is not None
        found = definition_change(engine, (f"pod {first[1]} ({first[0]})", first[0]), (f"pod {pod} ({version})",
                                                                                      version))
        if found is not None:
            return found
    return None


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
        st = window_slo_status(len(ws), met, min_windows=slo.min_windows, required_fraction=slo.required_fraction)
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
    kinds = sorted({ws[0].basis for ws in groups.values() if ws})  # reported | measured from capture files | observed live
    txt = (f"per-window SLO {'held' if st == Status.PASS else 'not held' if st == Status.FAIL else 'undecided'} "
           f"in {met}/{total} windows of ≥ {slo.min_drafts} drafts, required {slo.required_fraction:g} per stream "
           f"[{detail}] (L {' and '.join(kinds)})")
    if thin:
        txt += f"; {len(thin)} stream(s) have fewer than {slo.min_windows} windows"
    return st, txt + err, per_stream

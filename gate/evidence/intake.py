"""The one intake: every source of evidence, the invariants it is held to, and the function that holds it.

Why (issue 34): six of seven wrong passes sat on paths that read a source with their own copy of the rules, or
none. Each source is registered here once (`SOURCES`) with the invariants (`gate.model.invariants.INVARIANTS`) its
intake enforces and the function that does it; consumers (`check`, `compare`, `tune`, fleet, cohorts) read a
source through that function. tests/gate/hostile/ fails when a source or an invariant has no registration there.

The rules themselves stay where they were written (`gate.evidence.vetting`, `gate.evidence.probe_vetting`,
`gate.model.identity`, `gate.model.plausibility`, `gate.model.invariants`); the functions below only gather them
per source, so no rule has a second copy.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gate.evidence import probe_vetting as vet
from gate.evidence.probe_vetting import client_bound, record_depth, record_method
from gate.evidence.probes import ProbeRecord
from gate.model.invariants import (
    APPLICABILITY,
    COMPLETENESS,
    IDENTITY,
    MEMBER_TIME,
    PLAN_SIDE,
    PLAUSIBILITY,
    SIMULATED,
    UNIQUENESS,
    definition_change,
    partial_answer,
    reason,
    rejection_change,
    simulated_acceptance,
)
from gate.plan.model import Plan


@dataclass(frozen=True)
class Source:
    """One source of evidence: where its intake is and which invariants that intake enforces."""

    name: str
    intake: str  # the function every consumer reads the source through (module:function)
    invariants: frozenset[str]


_ALL = frozenset({IDENTITY, UNIQUENESS, MEMBER_TIME, COMPLETENESS, PLAUSIBILITY, APPLICABILITY, SIMULATED})

SOURCES: Mapping[str, Source] = MappingProxyType({s.name: s for s in (
    Source("native_probe", "gate.evidence.intake:probe_records", _ALL - {COMPLETENESS}),
    Source("bench_serve", "gate.probe.importers:import_files", _ALL - {COMPLETENESS}),  # `vllm bench serve` results
    Source("aiperf", "gate.probe.importers:import_files", _ALL - {COMPLETENESS}),
    Source("guidellm", "gate.probe.importers:import_files", _ALL - {COMPLETENESS}),
    # Captures and the sidecar show no knob themselves (SGLang's /server_info shows its algorithm, not its
    # environment): simulated acceptance is read there from the plan's engine settings (`plan_simulated`).
    Source("captures", "gate.evidence.vetting:vet_source", _ALL - {COMPLETENESS}),
    Source("sidecar", "gate.evidence.vetting:vet_windows", _ALL - {COMPLETENESS}),
    Source("prometheus", "gate.evidence.intake:answer", frozenset({COMPLETENESS})),
    Source("victoriametrics", "gate.evidence.intake:answer", frozenset({COMPLETENESS})),
    Source("previous", "gate.evidence.previous:load_previous", frozenset({IDENTITY, MEMBER_TIME})),
    Source("schedule", "gate.model.depth:depth_schedule", frozenset({PLAUSIBILITY})),
    Source("emit", "gate.evidence.intake:probe_records", frozenset({APPLICABILITY})),
)})


def answer(doc: Any, where: str) -> str | None:
    """A Prometheus-API answer (Prometheus, Thanos, VictoriaMetrics) whole, else the completeness reason."""
    return partial_answer(doc, where)


def plan_settings(plan: Plan) -> dict[str, Any]:
    """The plan's speculative settings as the engine is launched with them (its keys, nulls left out)."""
    spec = plan.engine.speculative
    return {} if spec is None else {k: v for k, v in spec.model_dump().items() if v is not None}


def plan_simulated(plan: Plan) -> str | None:
    """Why the plan's own engine settings or environment make acceptance simulated (the knob), or None."""
    return simulated_acceptance(plan_settings(plan), plan.engine.env, "the plan's engine")


def record_defects(rec: ProbeRecord) -> list[str]:
    """One record's defects (`gate.evidence.probe_vetting.record_defects`) and simulated acceptance in its
    speculative settings (`gate.model.invariants.simulated_acceptance`)."""
    out = vet.record_defects(rec)
    sim = simulated_acceptance(rec.speculative, None, f"the {rec.arm} record's speculative config")
    return [sim, *out] if sim is not None else out


def pair_defects(base: ProbeRecord, spec: ProbeRecord, now: float) -> list[str]:
    """Two arms as one experiment (`gate.evidence.probe_vetting.pair_defects`)."""
    return vet.pair_defects(base, spec, now)


def plan_defects(plan: Plan, base: ProbeRecord, spec: ProbeRecord, phase: str, now: float) -> list[str]:
    """The records as the plan's evidence (`gate.evidence.probe_vetting.plan_defects`), plus the plan's own
    simulated acceptance, the rejection mode of the plan against the speculative record (assumed defaults
    where neither states one) and the acceptance definition of the plan's engine version against the record's."""
    out = vet.plan_defects(plan, base, spec, phase, now)
    sim = plan_simulated(plan)
    if sim is not None:
        out.append(sim)
    if spec.speculative is not None:
        rej = rejection_change(plan.engine.kind, (PLAN_SIDE, plan.engine.version, plan_settings(plan)),
                               ("the speculative record", spec.engine_version, spec.speculative))
        if rej is not None:
            out.append(rej)
    changed = definition_change(plan.engine.kind, (PLAN_SIDE, plan.engine.version),
                                ("the speculative record", spec.engine_version))
    if changed is not None:
        out.append(changed)
    return out


def probe_records(records: Sequence[tuple[str, ProbeRecord]], now: float | None = None) -> list[str]:
    """Probe records read together (tune --probe, compare): each consistent with itself, every baseline and
    speculative arm one experiment (`pair_defects`), one method among the speculative arms, and no two speculative
    records measuring one (mix, load) at one k (conflicting evidence is not pooled). Defects as one-line reasons,
    each naming its file; empty: the set may be read."""
    now = time.time() if now is None else now
    out: list[str] = []
    for name, rec in records:
        out += [f"{name}: {d}" for d in record_defects(rec)]
    bases = [(n, r) for n, r in records if r.arm == "baseline"]
    specs = [(n, r) for n, r in records if r.arm == "speculative"]
    for bn, b in bases:
        for sn, s in specs:
            out += [f"{bn} / {sn}: {d}" for d in pair_defects(b, s, now)]
    first = next(iter(specs), None)
    for name, rec in specs[1:]:
        assert first is not None
        engine = rec.engine or first[1].engine or ""
        found = (rejection_change(engine, (first[0], first[1].engine_version, first[1].speculative),
                                  (name, rec.engine_version, rec.speculative))
                 or definition_change(engine, (first[0], first[1].engine_version), (name, rec.engine_version)))
        if found is not None:
            out.append(found)
    methods = {(record_method(r) or "").lower() for _, r in specs}
    if len(methods) > 1:
        out.append(reason(APPLICABILITY, f"the speculative records run {', '.join(sorted(methods))}: arms of "
                          "different methods are not one curve"))
    seen: dict[tuple[int | None, str, int, float | None], str] = {}
    for name, rec in specs:
        k, _ = record_depth(rec)
        for cell in rec.cells:
            key = (k, cell.mix, cell.concurrency, cell.request_rate)
            if key in seen and seen[key] != name:
                out.append(reason(UNIQUENESS, f"{seen[key]} and {name} both measure mix {cell.mix!r} at "
                                  f"concurrency {cell.concurrency}, k = {k}: conflicting records are not pooled"))
                break
            seen.setdefault(key, name)
    return out


# The probe vetting's rules as its consumers read them (compare, the probes line, tune): through this module, so
# the import contract "intake-only" (.importlinter) can say no consumer reads a source around the intake.
__all__ = ["SOURCES", "Source", "answer", "client_bound", "pair_defects", "plan_defects", "plan_settings",
           "plan_simulated", "probe_records", "record_defects", "record_depth", "record_method"]

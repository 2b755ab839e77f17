"""Floor 0: the fail-closed invariants, declared once: each with its name, its reason's opening and its enforcer.

Why one registry (issue 34): the wrong passes found by attack sat on paths that re-stated the rules by hand or
forgot one. Every source of evidence goes through `gate.evidence.intake`, which checks it against the invariants
named here; a reason an intake gives starts with its invariant's `message`, so a test (tests/gate/hostile/) can
hold every (source, invariant) pair to a named reason, and a new invariant (simulated acceptance, context bands,
definition changes) is one more entry here and its check in the intake, never a second copy in a consumer.
Floor 0 (pure, no I/O) so that plan validation (`gate.plan`) and the depth rules (`gate.model.depth`) use the
same declarations as the intake.

The checks that were already written live where they were (`gate.model.identity`, `gate.model.plausibility`,
`gate.evidence.vetting`, `gate.evidence.probe_vetting`); the ones this registry added are the functions below,
each pure (no I/O) and returning None when the evidence holds, else the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gate.model import plausibility as pl


@dataclass(frozen=True)
class Invariant:
    """One rule every source's evidence is held to: what it says, how its reasons open, who enforces it."""

    name: str
    rule: str
    message: str
    enforced_by: tuple[str, ...]


IDENTITY = "identity"
UNIQUENESS = "uniqueness"
MEMBER_TIME = "member_time"
COMPLETENESS = "completeness"
PLAUSIBILITY = "plausibility"
APPLICABILITY = "applicability"

INVARIANTS: Mapping[str, Invariant] = MappingProxyType({
    IDENTITY: Invariant(
        IDENTITY, "engine, version, model, method, k and each mix's shape known and equal; unknown is never the same",
        "not the same deployment", ("gate/model/identity.py", "gate/evidence/probe_vetting.py")),
    UNIQUENESS: Invariant(
        UNIQUENESS, "identical runs, files, cells or windows are one measurement, whatever their numbers or names",
        "one measurement counted more than once", ("gate/model/invariants.py", "gate/model/plausibility.py")),
    MEMBER_TIME: Invariant(
        MEMBER_TIME, "every member's date readable, not before 2024, not in the future, all within the interval",
        "not dated as evidence", ("gate/model/invariants.py", "gate/model/plausibility.py")),
    COMPLETENESS: Invariant(
        COMPLETENESS, "an answer its backend marks partial (warnings, isPartial) is no evidence for a pass",
        "a partial answer", ("gate/model/invariants.py", "gate/evidence/prometheus.py")),
    PLAUSIBILITY: Invariant(
        PLAUSIBILITY, "L <= 1 + k at the k each mix runs; a schedule of k = 0 everywhere is no rollout; every "
        "depth <= 64; pools, rates and counters possible", "not possible", ("gate/model/plausibility.py",
                                                                              "gate/model/depth.py")),
    APPLICABILITY: Invariant(
        APPLICABILITY, "evidence taken at another k, method or engine than a mix runs is not that mix's evidence; "
        "--emit only for the methods the engine runs", "not applicable", ("gate/model/invariants.py",
                                                                         "gate/tune/emit.py")),
})


def reason(invariant: str, detail: str) -> str:
    """One reason of `invariant`: its message, then what was found (KeyError for an undeclared invariant)."""
    return f"{INVARIANTS[invariant].message}: {detail}"


def invariant_of(text: str) -> str | None:
    """The invariant a reason written by `reason` belongs to (None: a reason written before the registry)."""
    for inv in INVARIANTS.values():
        if inv.message in text:
            return inv.name
    return None


# --- uniqueness by content -------------------------------------------------------------------------------------

def content_key(value: Any) -> str:
    """A digest of a value's content (mappings by key order-free), so renamed or renumbered copies collide."""
    text = json.dumps(value, sort_keys=True, default=repr, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def repeated(items: Sequence[tuple[str, Any]]) -> str | None:
    """Items given as (name, content): the first two whose contents are identical, as a reason; None when every
    item is its own measurement."""
    seen: dict[str, str] = {}
    for name, content in items:
        key = content_key(content)
        if key in seen:
            return reason(UNIQUENESS, f"{name} holds the same measurement as {seen[key]} (identical content): a "
                          "copy is not another repetition")
        seen[key] = name
    return None


# --- every member's time ---------------------------------------------------------------------------------------

def member_times(times: Sequence[tuple[str, float | None]], now: float, *,
                 max_apart_seconds: float = pl.PROBE_ARMS_MAX_APART_SECONDS) -> str | None:
    """Each member's own date (name, seconds since the epoch; None: unreadable or unrecorded) known and a date of
    evidence (`plausibility.evidence_time`), all within `max_apart_seconds`; the first defect as a reason."""
    known: list[tuple[str, float]] = []
    for name, t in times:
        bad = pl.evidence_time(t, now, name)
        if bad is not None:
            return reason(MEMBER_TIME, bad.reason)
        assert t is not None
        known.append((name, t))
    if len(known) >= 2:
        first = min(known, key=lambda x: x[1])
        last = max(known, key=lambda x: x[1])
        if last[1] - first[1] > max_apart_seconds:
            return reason(MEMBER_TIME, f"{first[0]} and {last[0]} were measured {(last[1] - first[1]) / 3600:,.1f} h "
                          f"apart, more than {max_apart_seconds / 3600:g} h: not one campaign")
    return None


# --- completeness ----------------------------------------------------------------------------------------------

def partial_answer(doc: Any, where: str) -> str | None:
    """Why a Prometheus-API answer is partial (Prometheus/Thanos `warnings`, VictoriaMetrics `isPartial: true`),
    or None. A partial answer may lack exactly the failing pod's series, so it is no evidence for a pass."""
    if not isinstance(doc, dict):
        return None
    if doc.get("isPartial") is True:
        return reason(COMPLETENESS, f"{where} marked its answer isPartial: some series may be missing")
    warnings = doc.get("warnings")
    if warnings:
        first = str(warnings[0] if isinstance(warnings, list) else warnings)[:200]
        return reason(COMPLETENESS, f"{where} answered with warnings ({first}): some series may be missing")
    return None


# --- plausibility of depths ------------------------------------------------------------------------------------

def schedule_depths(ks: Sequence[int], where: str, max_depth: int) -> str | None:
    """Every depth a schedule may run (every band's, every SGLang candidate step) in 0..max_depth, and some > 0
    (a schedule of k = 0 everywhere never speculates: not a speculative rollout)."""
    for k in ks:
        if k < 0 or k > max_depth:
            return reason(PLAUSIBILITY, f"{where} runs depth {k}; no engine drafts more than {max_depth} tokens per "
                          "round")
    if ks and max(ks) == 0:
        return reason(PLAUSIBILITY, f"{where} runs k = 0 at every batch: it never speculates, so it is not a "
                      "speculative rollout")
    return None


def target_at_mix(target: float | None, mix: str, concurrency: int, k: int) -> str | None:
    """A target acceptance length possible at the k the schedule runs at one mix's concurrency (L <= 1 + k)."""
    if target is None or target <= 1 + k + pl.TOLERANCE:
        return None
    if k == 0:
        return reason(APPLICABILITY, f"mix {mix!r} at concurrency {concurrency} runs k = 0 under the depth "
                      f"schedule: a target of {target:g} cannot be met there, and no acceptance evidence applies")
    return reason(PLAUSIBILITY, f"mix {mix!r} at concurrency {concurrency} runs k = {k} under the depth schedule: a "
                  f"target of {target:g} is above 1 + k = {1 + k}")


# --- applicability of an emitted schedule ----------------------------------------------------------------------

def emit_method(engine: str, methods: Sequence[str | None], runs: frozenset[str] | None) -> str | None:
    """The records' methods are ones `engine` runs with a schedule (`runs`: from its profile; None: any), each
    named; an unnamed or foreign method is not the engine's evidence."""
    for m in methods:
        if m is None:
            return reason(APPLICABILITY, f"a speculative record names no method: {engine}'s schedule cannot be "
                          "shown to run it")
        if runs is not None and m.lower() not in {r.lower() for r in runs}:
            return reason(APPLICABILITY, f"the records measured {m}; {engine} runs a depth schedule only for "
                          f"{', '.join(sorted(runs))}")
    if len({m.lower() for m in methods if m is not None}) > 1:
        return reason(APPLICABILITY, f"the records mix methods ({', '.join(sorted({str(m) for m in methods}))}): "
                      "one schedule runs one method")
    return None


__all__ = ["APPLICABILITY", "COMPLETENESS", "IDENTITY", "INVARIANTS", "MEMBER_TIME", "PLAUSIBILITY", "UNIQUENESS",
           "Invariant", "content_key", "emit_method", "invariant_of", "member_times", "partial_answer", "reason",
           "repeated", "schedule_depths", "target_at_mix"]

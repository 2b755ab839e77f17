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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from exporter.engines import ACCEPTANCE
from exporter.engines.versions import LOSSY_REJECTION, SIMULATED_REJECTION, AcceptanceDefinition, release
from exporter.engines.versions import acceptance_definition as _definition
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
SIMULATED = "simulated"

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
        PLAUSIBILITY, "L <= 1 + k at the k each mix runs (k = 0: plain, no target); a schedule of k = 0 "
        "everywhere is no rollout; every depth <= 64; pools, rates and counters possible", "not possible",
        ("gate/model/plausibility.py", "gate/model/depth.py")),
    APPLICABILITY: Invariant(
        APPLICABILITY, "evidence taken at another k, method or engine than a mix runs is not that mix's evidence; "
        "--emit only for the methods the engine runs", "not applicable", ("gate/model/invariants.py",
                                                                         "gate/tune/emit.py")),
    SIMULATED: Invariant(
        SIMULATED, "acceptance the engine simulates or forces is never evidence for a pass: vLLM "
        "rejection_sample_method synthetic (synthetic_acceptance_length / _rates), SGLang SGLANG_SIMULATE_ACC_LEN "
        "> 0, TensorRT-LLM TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS > 0", "simulated acceptance",
        ("gate/model/invariants.py", "gate/evidence/intake.py")),
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
    """A target acceptance length possible at the k the schedule runs at one mix's concurrency (L <= 1 + k).

    A mix in a k = 0 band is exempt: it is plain decoding, judged against the baseline as plain (issue 37 item 6,
    `gate.checks.acceptance.probes`), so no acceptance target applies to it; the target holds at every k >= 1."""
    if target is None or k == 0 or target <= 1 + k + pl.TOLERANCE:
        return None
    return reason(PLAUSIBILITY, f"mix {mix!r} at concurrency {concurrency} runs k = {k} under the depth schedule: a "
                  f"target of {target:g} is above 1 + k = {1 + k}")


# --- simulated or forced acceptance (issue 37 item 1) --------------------------------------------------------

# The environment variables that switch simulation on, and the engine that reads each (SGLang 0.5.23
# sglang/srt/environ.py: EnvFloat(-1), on when > 0; TensorRT-LLM tensorrt_llm/_torch/speculative/interface.py:
# "0" by default, a positive count of accepted draft tokens forces it). SGLANG_SIMULATE_ACC_METHOD, _TOKEN_MODE
# and _GREEDY only modify SGLang's simulation: alone they simulate nothing.
SIMULATION_ENV: Mapping[str, str] = MappingProxyType({
    "SGLANG_SIMULATE_ACC_LEN": "SGLang", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "TensorRT-LLM"})
SYNTHETIC_KEYS = ("synthetic_acceptance_length", "synthetic_acceptance_rates")


def _setting(spec: Mapping[str, Any], key: str) -> Any:
    """A speculative setting as vLLM's config (`key`) or SGLang's flags (`speculative_<key>`) spell it."""
    return spec[key] if key in spec else spec.get(f"speculative_{key}")


def simulated_acceptance(settings: Mapping[str, Any] | None, env: Mapping[str, Any] | None,
                         where: str) -> str | None:
    """Why acceptance measured under these speculative settings and this environment is simulated or forced
    (the first knob found, named), or None. A value that cannot be read as a number is no proof that
    simulation is off: refused as well."""
    spec = settings or {}
    method = _setting(spec, "rejection_sample_method")
    if isinstance(method, str) and method.strip().lower() in SIMULATED_REJECTION:
        return reason(SIMULATED, f"{where} sets rejection_sample_method {method!r}: vLLM accepts drafts at the "
                      "configured synthetic rates, not the drafter's, so its acceptance is no evidence")
    for key in SYNTHETIC_KEYS:
        if _setting(spec, key) is not None:
            return reason(SIMULATED, f"{where} sets {key} ({_setting(spec, key)!r}): vLLM takes it only with "
                          "rejection_sample_method synthetic, so its acceptance is no evidence")
    for key, engine in SIMULATION_ENV.items():
        if env is None or key not in env:
            continue
        raw = env[key]
        try:
            value = float(str(raw).strip())
        except ValueError:
            return reason(SIMULATED, f"{where} sets {key}={raw!r}, not a number: {engine} forcing acceptance "
                          "cannot be ruled out")
        if not math.isfinite(value) or value > 0:
            return reason(SIMULATED, f"{where} sets {key}={raw!r}: {engine} forces acceptance to that value, "
                          "so its acceptance is no evidence")
    return None


# --- rejection mode and acceptance definitions in identity (issue 37 items 2-3) --------------------------------

# How the intake names the plan's side of a comparison: its fix is a plan key (engine.version), not a record's.
PLAN_SIDE = "the plan"

def rejection_mode(engine: str, settings: Mapping[str, Any] | None) -> str | None:
    """The rejection mode the settings state (vLLM `rejection_sample_method`; SGLang's two flags as
    "block_verification", "rejection_sampling" or "default" when both are false), None when they state none."""
    del engine  # the engines spell their modes with keys of their own: any key present is read
    spec = settings or {}
    block = _setting(spec, "use_block_verification")
    rs = _setting(spec, "use_rejection_sampling")
    if block is not None or rs is not None:
        return "block_verification" if block else "rejection_sampling" if rs else "default"
    method = _setting(spec, "rejection_sample_method")
    return method.strip().lower() if isinstance(method, str) and method.strip() else None


def acceptance_definition(engine: str, version: str | None) -> AcceptanceDefinition | None:
    """The acceptance definition `engine` uses at `version` (its package's table, `exporter.engines.ACCEPTANCE`)."""
    return _definition(ACCEPTANCE.get(engine, ()), version)


def _mode_text(mode: str | None, stated: bool, d: AcceptanceDefinition | None) -> str:
    if stated:
        return f"rejection {mode!r}"
    return f"no rejection mode (assumed default {mode!r} of {d.name})" if d is not None else "no rejection mode"


def rejection_change(engine: str, a: tuple[str, str | None, Mapping[str, Any] | None],
                     b: tuple[str, str | None, Mapping[str, Any] | None]) -> str | None:
    """Two sides (where, engine version, speculative settings) verify drafts the same way, else the identity
    reason. Compared when either states its mode; when neither does, both are taken at their version's default
    (`exporter.engines.versions.ACCEPTANCE_DEFINITIONS`, "assumed default"); a mode stated on one side only is
    the same only when it is the other's default. An unknown default is never the same, except at one version.
    A plan side (`PLAN_SIDE`) of unknown default that states no version is told the plan key that fixes it."""
    (wa, va, sa), (wb, vb, sb) = a, b
    ma, mb = rejection_mode(engine, sa), rejection_mode(engine, sb)
    da, db = acceptance_definition(engine, va), acceptance_definition(engine, vb)
    ea = ma if ma is not None else (da.rejection_default if da is not None else None)
    eb = mb if mb is not None else (db.rejection_default if db is not None else None)
    if ma is None and mb is None and release(va) is not None and release(va) == release(vb):
        return None  # one version, neither states a mode: the same default, whatever it is
    if ea is not None and ea == eb:
        return None
    if ea is None or eb is None:
        unknown = (wa, va) if ea is None else (wb, vb)
        if unknown == (PLAN_SIDE, None):
            return reason(IDENTITY, f"not comparable: {PLAN_SIDE} states no engine.version, so its rejection "
                          "default is unknown: declare engine.version (or the rejection mode); the other side "
                          f"runs {ea or eb!r} (assumed default where unstated)")
        return reason(IDENTITY, f"not comparable: {unknown[0]} states no rejection mode and {engine} "
                      f"{unknown[1] or '(version unknown)'}'s default is not recorded; the other side runs "
                      f"{ea or eb!r} (assumed default where unstated)")
    return reason(IDENTITY, f"not comparable: {wa} runs {_mode_text(ea, ma is not None, da)}, {wb} runs "
                  f"{_mode_text(eb, mb is not None, db)}: rejection modes change acceptance by themselves")


def definition_change(engine: str, a: tuple[str, str | None], b: tuple[str, str | None]) -> str | None:
    """Two sides (where, engine version) measured one acceptance quantity, else the identity reason naming both
    definitions ("not comparable"). Versions unknown on a side are left to the version rules; two definitions
    are one quantity only when specgate converts both exactly to its own L."""
    (wa, va), (wb, vb) = a, b
    if release(va) is None or release(vb) is None or release(va) == release(vb):
        return None
    da, db = acceptance_definition(engine, va), acceptance_definition(engine, vb)
    if da is not None and da == db:
        return None
    if da is not None and db is not None and da.exact and db.exact:
        return None
    name_a = da.name if da is not None else f"{engine} {va} (no recorded definition)"
    name_b = db.name if db is not None else f"{engine} {vb} (no recorded definition)"
    return reason(IDENTITY, f"not comparable: {wa} measured under {name_a}, {wb} under {name_b}: not one "
                  "acceptance definition")


def lossy_verification(settings: Mapping[str, Any] | None, where: str) -> str | None:
    """A line for a plan that verifies lossily (vLLM main `fly`): its outputs no longer follow the target's
    distribution. None for lossless or unstated modes."""
    method = _setting(settings or {}, "rejection_sample_method")
    if isinstance(method, str) and method.strip().lower() in LOSSY_REJECTION:
        return (f"{where} verifies with rejection_sample_method {method!r}, which is lossy: its outputs no longer "
                "follow the target model's distribution")
    return None


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


__all__ = ["APPLICABILITY", "COMPLETENESS", "IDENTITY", "INVARIANTS", "MEMBER_TIME", "PLAN_SIDE", "PLAUSIBILITY",
           "SIMULATED", "SIMULATION_ENV", "SYNTHETIC_KEYS", "UNIQUENESS", "Invariant", "content_key",
           "definition_change", "emit_method", "invariant_of", "lossy_verification", "member_times", "partial_answer",
           "reason", "rejection_change", "rejection_mode", "repeated", "schedule_depths", "simulated_acceptance",
           "target_at_mix"]

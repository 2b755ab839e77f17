"""The run record every check writes (seed 001's conditions; design.md "Run record").

Why: the next decision needs the conditions of this one — revisions, image digest, the
engine that actually ran, the allocated pool, the request shape, warmup, repetitions and
failures — and an honest list of what is missing. A declared value (the plan's engine
version) never fills an executed field. Secrets never appear: URLs lose their credentials.

Seed 000 adds what a record "that supports the next decision" keeps: the system and its node
count, the parallelism, the date of the experiment, the sampling settings, the executed
runtime's revision, the correctness checks alongside performance, and the queueing and
failures observed under load. `field_basis` says for each field whether it was observed (a
live source or the gate's own evidence), reported (the plan's evidence.reported, a source's
word), declared (the plan's own settings: `kv_dtype`, `concurrency`, …) or n/a (an embedded MTP
head has no drafter revision of its own: n/a, not missing).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from gate.bill.budget import Budget
from gate.bill.facts import ArtifactFacts
from gate.evidence.base import MetricsEvidence
from gate.inputs.redact import redact_url
from gate.plan.model import Plan

# A value per request mix (the mix's name → value), or one value when the plan has one mix.
PerMix = int | dict[str, int] | None


@dataclass(frozen=True)
class RunRecord:
    """Seed 001's conditions (None when unknown, named in `missing`), then what was checked and when.

    The field order is the JSON key order (`to_json`); the first 31 fields are `KEYS` (seed 001's 21,
    then seed 000's 10).
    """

    model_artifact: str | None = None
    model_revision: str | None = None
    drafter_artifact: str | None = None
    drafter_revision: str | None = None
    image_tag: str | None = None
    image_digest: str | None = None
    engine: str | None = None
    executed_engine_version: str | None = None
    kv_dtype: str | None = None
    kv_pool_tokens: int | None = None
    configured_max_total_tokens: int | None = None
    context_limit_tokens: int | None = None
    speculative_decoding: str | None = None
    prefix_cache: bool | None = None
    reported_prompt_tokens: PerMix = None
    output_tokens_per_request: PerMix = None
    concurrency: PerMix = None
    measurement_denominator: str | None = None
    warmup: str | None = None
    campaign_repetitions: int | None = None
    failed_requests: int | None = None
    system: str | None = None
    node_count: int | None = None
    parallelism: str | None = None
    experiment_date: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    runtime_execution_revision: str | None = None
    correctness_checks: list[dict[str, Any]] | None = None
    queueing_observed: str | None = None
    failures_observed: str | None = None
    # the content of each config as the plan gives it (sha256 of its canonical JSON, gate.bill.facts): a changed
    # config.json is a change for `--previous` whether or not a revision is pinned (issue 36)
    model_config_sha256: str | None = None
    drafter_config_sha256: str | None = None
    field_basis: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    plan: str | None = None
    phase: str | None = None
    decision: str | None = None
    evidence_sources: list[str] = field(default_factory=list)
    generated_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {f.name: _copy(getattr(self, f.name)) for f in fields(self)}


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


KEYS: tuple[str, ...] = tuple(f.name for f in fields(RunRecord))[:31]
# Fields the plan itself sets (its engine, workload and artifacts sections).
DECLARED: frozenset[str] = frozenset({
    "model_artifact", "model_revision", "drafter_artifact", "drafter_revision", "image_tag", "engine", "kv_dtype",
    "configured_max_total_tokens", "speculative_decoding", "prefix_cache", "reported_prompt_tokens",
    "output_tokens_per_request", "concurrency"})
EMBEDDED_NA = "n/a (an MTP head inside the target checkpoint has no revision of its own)"


def _speculative(plan: Plan) -> str | None:
    spec = plan.engine.speculative
    if spec is None:
        return "off"
    bits: list[str] = [spec.method]
    for name in ("num_speculative_tokens", "num_steps", "eagle_topk", "num_draft_tokens"):
        v = getattr(spec, name)
        if v is not None:
            bits.append(f"{name.replace('_', ' ')} {v}")
    return "; ".join(bits)


def _per_mix(plan: Plan, attr: str) -> PerMix:
    if not plan.workload:
        return None
    if len(plan.workload) == 1:
        value: int = getattr(plan.workload[0], attr)
        return value
    return {m.name: getattr(m, attr) for m in plan.workload}


def build(plan: Plan, phase: str, decision: str | None, budget: Budget | None,
          evidence: MetricsEvidence | None, image_digest: str | None = None,
          facts: ArtifactFacts | None = None) -> RunRecord:
    """Seed 001's keys (None when unknown, listed in `missing`) plus what was checked and when."""
    run = plan.evidence.reported.run
    kv_pool = None
    if budget is not None and budget.pool.allocated is not None:
        kv_pool = budget.pool.allocated.tokens
    executed = (evidence.engine_version if evidence else None) or (run.executed_engine_version if run else None)
    drafter_artifact = (plan.drafter.name if plan.drafter else None) or (
        f"{plan.target.name} (embedded {plan.method} head)" if plan.drafter_embedded and plan.target.name else None)
    drafter_revision = (plan.drafter.revision if plan.drafter else None) or (
        EMBEDDED_NA if plan.drafter_embedded else None)
    if not plan.has_drafter:
        drafter_artifact = drafter_revision = None
    conditions: dict[str, Any] = {
        "model_artifact": plan.target.name,
        "model_revision": plan.target.revision,
        "drafter_artifact": drafter_artifact,
        "drafter_revision": drafter_revision,
        "image_tag": plan.engine.image,
        "image_digest": image_digest or plan.engine.image_digest,
        "engine": plan.engine.kind,
        "executed_engine_version": executed,
        "kv_dtype": None if plan.engine.kv_dtype == "auto" else plan.engine.kv_dtype,
        "kv_pool_tokens": kv_pool,
        "configured_max_total_tokens": plan.engine.configured_max_total_tokens,
        "context_limit_tokens": plan.engine.context_cap_tokens or (evidence.context_cap_tokens if evidence else None),
        "speculative_decoding": _speculative(plan),
        "prefix_cache": plan.engine.prefix_cache,
        "reported_prompt_tokens": _per_mix(plan, "prompt_tokens"),
        "output_tokens_per_request": _per_mix(plan, "output_tokens"),
        "concurrency": _per_mix(plan, "concurrency"),
        "measurement_denominator": run.measurement_denominator if run else None,
        "warmup": run.warmup if run else None,
        "campaign_repetitions": run.campaign_repetitions if run else None,
        "failed_requests": run.failed_requests if run else None,
        "system": run.system if run else None,
        "node_count": run.node_count if run else None,
        "parallelism": (run.parallelism if run and run.parallelism else None) or _parallelism(plan),
        "experiment_date": run.experiment_date if run else None,
        "temperature": run.temperature if run else None,
        "top_p": run.top_p if run else None,
        "runtime_execution_revision": run.runtime_execution_revision if run else None,
        "correctness_checks": [c.model_dump() for c in plan.evidence.reported.correctness] or None,
        "queueing_observed": run.queueing if run else None,
        "failures_observed": run.failures if run else None,
    }
    basis = _basis(plan, conditions, budget, evidence, image_digest)
    missing = [k for k in KEYS
               if conditions[k] is None and not (k.startswith("drafter") and not plan.has_drafter)]
    return RunRecord(**conditions, model_config_sha256=facts.target.config_sha256 if facts else None,
                     drafter_config_sha256=facts.drafter.config_sha256 if facts and facts.drafter else None,
                     field_basis=basis, missing=missing, plan=plan.name, phase=phase, decision=decision,
                     evidence_sources=[redact_url(s) for s in (evidence.sources if evidence else [])],
                     generated_at=datetime.now(UTC).isoformat(timespec="seconds"))


def _parallelism(plan: Plan) -> str | None:
    """The plan's own parallelism (declared), e.g. "TP 2"; the run's word wins when it gives one."""
    bits = [f"TP {plan.engine.tp}"]
    if plan.drafter is not None and plan.drafter.tp is not None:
        bits.append(f"draft TP {plan.drafter.tp}")
    return ", ".join(bits)


def _basis(plan: Plan, conditions: dict[str, Any], budget: Budget | None, evidence: MetricsEvidence | None,
           image_digest: str | None) -> dict[str, str]:
    """observed | reported | declared | n/a for every known field (module docstring)."""
    out: dict[str, str] = {}
    run = plan.evidence.reported.run
    for k, v in conditions.items():
        if v is None:
            continue
        if k in DECLARED:
            out[k] = "declared"
        else:
            out[k] = "reported"
    if conditions.get("drafter_revision") == EMBEDDED_NA:
        out["drafter_revision"] = "n/a"
    if image_digest:
        out["image_digest"] = "observed"
    elif conditions.get("image_digest") is not None:
        out["image_digest"] = "declared"
    if evidence is not None and evidence.engine_version and conditions.get("executed_engine_version"):
        out["executed_engine_version"] = "observed"
    pool = budget.pool.allocated if budget is not None else None
    reported_pool = plan.evidence.reported.kv_pool_tokens
    if pool is not None:
        is_reported = reported_pool is not None and pool.source == reported_pool.source
        out["kv_pool_tokens"] = "reported" if is_reported else "observed"
    if conditions.get("context_limit_tokens") is not None:
        out["context_limit_tokens"] = "declared" if plan.engine.context_cap_tokens else "observed"
    if conditions.get("parallelism") is not None and not (run and run.parallelism):
        out["parallelism"] = "declared"
    return out

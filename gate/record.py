"""The run record every check writes (seed 001's conditions; design.md "Run record").

Why: the next decision needs the conditions of this one — revisions, image digest, the
engine that actually ran, the allocated pool, the request shape, warmup, repetitions and
failures — and an honest list of what is missing. A declared value (the plan's engine
version) never fills an executed field. Secrets never appear: URLs lose their credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from gate.evidence.base import MetricsEvidence
from gate.model.budget import Budget
from gate.plan import Plan
from gate.redact import redact_url

# A value per request mix (the mix's name → value), or one value when the plan has one mix.
PerMix = int | dict[str, int] | None


@dataclass(frozen=True)
class RunRecord:
    """Seed 001's conditions (None when unknown, named in `missing`), then what was checked and when.

    The field order is the JSON key order (`to_json`); the first 21 fields are `KEYS`.
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


KEYS: tuple[str, ...] = tuple(f.name for f in fields(RunRecord))[:21]


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
          evidence: MetricsEvidence | None, image_digest: str | None = None) -> RunRecord:
    """Seed 001's keys (None when unknown, listed in `missing`) plus what was checked and when."""
    run = plan.evidence.reported.run
    kv_pool = None
    if budget is not None and budget.pool.allocated is not None:
        kv_pool = budget.pool.allocated.tokens
    executed = (evidence.engine_version if evidence else None) or (run.executed_engine_version if run else None)
    drafter_artifact = (plan.drafter.name if plan.drafter else None) or (
        f"{plan.target.name} (embedded {plan.method} head)" if plan.drafter_embedded and plan.target.name else None)
    drafter_revision = (plan.drafter.revision if plan.drafter else None) or (
        plan.target.revision if plan.drafter_embedded else None)
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
    }
    missing = [k for k in KEYS
               if conditions[k] is None and not (k.startswith("drafter") and not plan.has_drafter)]
    return RunRecord(**conditions, missing=missing, plan=plan.name, phase=phase, decision=decision,
                     evidence_sources=[redact_url(s) for s in (evidence.sources if evidence else [])],
                     generated_at=datetime.now(UTC).isoformat(timespec="seconds"))

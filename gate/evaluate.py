"""One entry point for every front end: `evaluate(plan, phase, ...) -> Verdict`.

Why one function: the CLI (`specgate check`), the HTTP gate (Argo/Flagger) and the
controller must judge a plan identically. It gathers evidence (local artifacts, capture
files, live exporter/engine URLs, Prometheus history, Kubernetes pod status), runs the five
lines and applies the decision rule. Invalid input raises PlanError; an unreachable or
empty evidence source makes the affected line inconclusive, never a pass.

Phases (DESIGN.md "Two phases"): `pre` judges everything static plus any canary or
captured evidence; `post` requires the live per-window SLO over the plan's lookback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from gate.checks import acceptance, artifacts, kv_pool, staging
from gate.evidence.metrics import MetricsEvidence, Progress, from_capture_files, from_live, is_url
from gate.model import budget as budget_mod
from gate.model.config import ConfigError
from gate.model.facts import ArtifactFacts, artifact_facts
from gate.plan import Plan, PlanError
from gate.record import build as build_record
from gate.verdict import LINES, LineResult, Status, Verdict, decide

PHASES = ("pre", "post")


def gather_metrics(plan: Plan, phase: str, metrics: Iterable[str], prometheus: str | None,
                   progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep,
                   wait: bool = True) -> MetricsEvidence:
    """All acceptance evidence: plan captures, --metrics URLs/files, plan live URLs, Prometheus.

    The plan's own capture files are facts from before the switch: they count in `pre` only. In
    `post` the live per-window SLO is required (DESIGN.md "Two phases"), so only the sources named
    for this run (--metrics, the plan's exporter/engine URL, Prometheus) are evidence.
    """
    slo = plan.slo
    ev = MetricsEvidence()
    if phase == "pre":
        for g in plan.evidence.captures:
            ev.merge(from_capture_files(g.files, g.point, g.seconds or slo.window_seconds, slo.min_drafts))
    elif plan.evidence.captures:
        ev.errors.append("the plan's capture files are pre-rollout evidence, not the live SLO the post phase needs")
    files = []
    urls = []
    for m in metrics:
        (urls if is_url(m) else files).append(m)
    if files:
        from pathlib import Path

        ev.merge(from_capture_files([Path(f) for f in files], None, slo.window_seconds, slo.min_drafts))
    if not urls:
        urls = [u for u in (plan.evidence.exporter_url, plan.evidence.engine_url) if u]
    for u in urls:
        ev.merge(from_live(u, slo.window_seconds, slo.min_windows, slo.min_drafts, progress=progress, sleep=sleep,
                           wait=wait))
    prom_src = plan.evidence.prometheus
    prom_url = prometheus or (prom_src.url if prom_src else None)
    if prom_url:
        from gate.evidence import prometheus as prom
        from gate.plan import PrometheusSource

        ev.merge(prom.collect(prom_src or PrometheusSource(), prom_url, slo.window_seconds, slo.lookback_seconds,
                              slo.min_drafts))
    return ev


def _kube(plan: Plan, kube_client: Any) -> tuple[staging.StartupObservation | None, str | None, str | None]:
    """Cold start and image digest from pod status (gate.evidence.kube, imported lazily)."""
    k = plan.evidence.kubernetes
    if k is None:
        return None, None, None
    try:
        from gate.evidence import kube

        client = kube_client if kube_client is not None else kube.default_api_client()
        ke = kube.collect(client, k.namespace, k.selector or "", container=k.container)
    except Exception as e:  # noqa: BLE001 - any client/config failure means: no kube evidence
        return None, None, f"Kubernetes evidence unavailable: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    obs = None
    if ke.staging_seconds is not None:
        obs = staging.StartupObservation(ke.staging_seconds, f"pod status in {k.namespace} ({ke.reason})")
    return obs, ke.image_digest, ke.reason


def _codesign(plan: Plan, facts: ArtifactFacts, context_cap: int | None) -> LineResult:
    if not plan.has_drafter:
        return LineResult(Status.NA, "no drafter (ngram or no speculation): nothing to co-design", {})
    from gate.checks.codesign import codesign

    t = facts.target.config
    d = facts.drafter.config if facts.drafter else None
    if t is None:
        return LineResult(Status.INCONCLUSIVE, "no target config (file or inline geometry): co-design cannot be "
                          "checked", {})
    if d is None and not plan.drafter_embedded:
        return LineResult(Status.INCONCLUSIVE, "no drafter config (file or inline geometry): co-design cannot be "
                          "checked", {})
    spec = plan.engine.speculative
    k = spec.num_speculative_tokens if spec else None
    if k is None and spec is not None and plan.engine.kind == "sglang":
        k = spec.num_draft_tokens
    try:
        res = codesign(t, d, engine=plan.engine.kind, num_speculative_tokens=k,
                       draft_tp=plan.drafter.tp if plan.drafter else None, target_tp=plan.engine.tp,
                       max_model_len=plan.engine.context_cap_tokens or context_cap,
                       deployed_target=plan.target.name or None,
                       drafter_weights=(plan.drafter.weights.path if plan.drafter and plan.drafter.weights else None),
                       expect_mtp=plan.drafter_embedded and d is None)
    except ConfigError as e:
        return LineResult(Status.INCONCLUSIVE, f"co-design cannot be checked: {e}", {})
    findings = [{"check": f.check, "status": f.status, "detail": f.detail} for f in res.findings]
    status = Status(res.status)
    bad = [f for f in res.findings if f.status in ("fail", "warn")]
    if bad:
        reason = "; ".join(f"{f.check} {f.status}: {f.detail}" for f in bad)
    else:
        reason = f"{len(res.findings)} co-design checks pass for the {res.family or 'drafter'} family"
    return LineResult(status, reason, {"family": res.family, "findings": findings})


def evaluate(plan: Plan, phase: str = "pre", metrics: Iterable[str] = (), prometheus: str | None = None,
             allow_inconclusive: bool = False, *, kube_client: Any = None, progress: Progress | None = None,
             sleep: Callable[[float], None] = time.sleep, wait: bool = True) -> Verdict:
    """Judge a plan. Raises PlanError for invalid input; everything else ends in a Verdict.

    `wait=False` (the HTTP gate) never sleeps for a new window: a plain engine URL is then
    inconclusive; exporter and Prometheus sources answer from their history at once.
    """
    if phase not in PHASES:
        raise PlanError(f"phase must be one of {'|'.join(PHASES)}, got {phase!r}")
    facts = artifact_facts(plan)
    ev = gather_metrics(plan, phase, metrics, prometheus, progress=progress, sleep=sleep, wait=wait)
    live_pool = live_without = None
    if ev.kv_pool is not None and plan.has_drafter and ev.kv_pool.speculating is False:
        # The engine that reported it ran no speculation: its pool is the one without the drafter.
        live_without = budget_mod.Allocated(ev.kv_pool.tokens, f"{ev.kv_pool.source}, running no speculation")
    elif ev.kv_pool is not None:
        live_pool = budget_mod.Allocated(ev.kv_pool.tokens, ev.kv_pool.source)
    bill = budget_mod.compute_budget(plan, facts, live_pool, live_without)

    kube_obs, digest, kube_note = _kube(plan, kube_client)
    measured = None
    if ev.ready_seconds is not None:
        measured = staging.StartupObservation(ev.ready_seconds, ev.ready_source or "live")
    elif kube_obs is not None:
        measured = kube_obs
    elif plan.evidence.reported.startup_seconds is not None:
        o = plan.evidence.reported.startup_seconds
        measured = staging.StartupObservation(o.value, o.source)

    checks: dict[str, LineResult] = {
        "artifacts": artifacts.check(plan, bill),
        "kv_pool": kv_pool.check(plan, bill),
        "acceptance": acceptance.check(plan, phase, ev.windows, ev.errors),
        "staging": staging.check(plan, measured, kube_note),
        "codesign": _codesign(plan, facts, ev.context_cap_tokens),
    }
    checks = {line: checks[line] for line in LINES}
    decision = decide([r.status for r in checks.values()])
    record = build_record(plan, phase, decision.value, bill, ev, image_digest=digest)
    return Verdict(decision=decision, phase=phase, checks=checks, run_record=record,
                   allow_inconclusive=allow_inconclusive, plan_name=plan.name)

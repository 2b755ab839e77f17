"""All the evidence one evaluation reads, from the sources the plan and the command name.

Why one place: which sources count in which phase is a rule (design.md "Two phases"), not a
detail of each face. The plan's own capture files are facts from before the switch: they count
in `pre` only. In `post` the live per-window SLO is required, so only the sources named for this
run (--metrics, the plan's exporter/engine URL, Prometheus) are evidence. `--metrics` URLs
replace the plan's live URLs; files add to them. Kubernetes pod status is asked separately: it
answers the staging line and the run record's image digest, not the acceptance line.

Every source's evidence is vetted (gate.evidence.vetting) before any line reads it: its
identity against the plan, its engine up in `post`, its side facts possible; then the merged
windows: possible at the plan's depth, recent, live in `post`, restart status known, counted
once. What is dropped is an evidence error with the reason (the line turns inconclusive).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.evidence import base
from gate.evidence.base import EvidenceRequest, EvidenceSource, MetricsEvidence
from gate.evidence.captures import CaptureFiles
from gate.evidence.intake import plan_simulated
from gate.evidence.metrics import LiveUrl, is_url
from gate.evidence.pods import KubeEvidence, PodsSource
from gate.evidence.positions import capture_point_name
from gate.evidence.probes import gather_probes
from gate.evidence.vetting import VetRules, vet_source, vet_windows
from gate.plan.model import Plan, PrometheusSource

log = logging.getLogger(__name__)

POST_CAPTURES_NOTE = "the plan's capture files are pre-rollout evidence, not the live SLO the post phase needs"


def request_for(plan: Plan, **over: Any) -> EvidenceRequest:
    """The plan's SLO window and thresholds as the question every source is asked."""
    slo = plan.slo
    fields: dict[str, Any] = {"window_seconds": slo.window_seconds, "min_windows": slo.min_windows,
                              "min_drafts": slo.min_drafts, "lookback_seconds": slo.lookback_seconds}
    fields.update(over)
    return EvidenceRequest(**fields)


def sources_for(plan: Plan, phase: str, metrics: Iterable[str], prometheus: str | None) -> list[EvidenceSource]:
    """The sources of one evaluation, in the order their evidence is merged."""
    out: list[EvidenceSource] = []
    if phase == "pre":
        groups = plan.evidence.captures
        out += [CaptureFiles(tuple(g.files), g.point, g.seconds, positions=True,
                             positions_point=capture_point_name(g, i, len(groups))) for i, g in enumerate(groups)]
    files: list[str] = []
    urls: list[str] = []
    for m in metrics:
        (urls if is_url(m) else files).append(m)
    if files:
        out.append(CaptureFiles(tuple(Path(f) for f in files)))
    if not urls:
        urls = [u for u in (plan.evidence.exporter_url, plan.evidence.engine_url) if u]
    out += [LiveUrl(u) for u in urls]
    prom_src = plan.evidence.prometheus
    prom_url = prometheus or (prom_src.url if prom_src else None)
    if prom_url:
        from gate.evidence.prometheus import PrometheusHistory

        # The fleet's rows count windows against the plan's target and check them at its depth; the acceptance line
        # judges them (gate.checks.acceptance.fleet_rule: by the same source's rule, the engine up in post, per pod).
        out.append(PrometheusHistory(prom_src or PrometheusSource(), prom_url, slo=plan.slo, k=plan.bound_depth,
                                     method=plan.method, served_model_name=plan.served_model_name,
                                     require_recent=phase == "post"))
    return out


def rules_for(plan: Plan, phase: str, now: float | None = None) -> VetRules:
    """What evidence for this plan must be (gate.evidence.vetting), at the moment of evaluation."""
    return VetRules(engine=plan.engine.kind, served_model_name=plan.served_model_name, method=plan.method,
                    k=plan.depth, phase=phase, now=time.time() if now is None else now,
                    lookback_seconds=plan.slo.lookback_seconds, bound_k=plan.bound_depth,
                    simulated=plan_simulated(plan))


def gather_metrics(plan: Plan, phase: str, metrics: Iterable[str], prometheus: str | None,
                   request: EvidenceRequest, now: float | None = None) -> MetricsEvidence:
    """All acceptance evidence: plan captures (pre only; their windows and per-position counters, read once),
    --metrics files/URLs, plan live URLs, Prometheus, and the plan's probe records (either phase).

    Each source's answer is vetted on its own (identity, engine up, side facts), then the merged
    windows (values, time, liveness, restarts, repeats).
    """
    rules = rules_for(plan, phase, now)
    ev = MetricsEvidence()
    if phase != "pre" and plan.evidence.captures:
        ev.errors.append(POST_CAPTURES_NOTE)
    live: set[str] = set()
    for source in sources_for(plan, phase, metrics, prometheus):
        got = vet_source(base.collect(source, request), rules)
        if got.live:
            live.update(w.source for w in got.windows)
        ev.merge(got)
    ev.windows, errors = vet_windows(ev.windows, rules, lambda w: w.source in live)
    ev.errors += errors
    ev.probes = gather_probes(plan.evidence.probes, now=rules.now)
    return ev


@dataclass(frozen=True)
class ClusterEvidence:
    """What Kubernetes pod status said (`found`), or why it said nothing (`error`)."""

    found: KubeEvidence | None = None
    error: str | None = None

    @property
    def note(self) -> str | None:
        """One clause for the staging reason: the pods' summary, or the reason there is none."""
        return self.found.reason if self.found is not None else self.error


def gather_kube(plan: Plan, kube_client: Any = None) -> ClusterEvidence | None:
    """Cold start and image digest from pod status (`gate.evidence.pods.PodsSource`).

    None when the plan names no Kubernetes source. A source with no answer (`EvidenceError`) is no
    evidence, with the reason (the staging line turns inconclusive), never an exception.
    """
    k = plan.evidence.kubernetes
    if k is None:
        return None
    source = PodsSource(k.namespace, k.selector or "", container=k.container, client=kube_client)
    try:
        return ClusterEvidence(found=source.collect())
    except base.EvidenceError as e:
        log.debug("Kubernetes evidence unavailable from %s", source.name, exc_info=True)
        return ClusterEvidence(error=f"Kubernetes evidence unavailable: {e}")

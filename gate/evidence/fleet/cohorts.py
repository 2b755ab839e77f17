"""Canary and stable cohorts over the same window: the samples `gate.checks.acceptance.cohorts` compares (issue 11).

Why per (pod, window) samples from a fixed query set: a canary step asks "is the new revision
faster than the one it replaces, under the same traffic, right now?" — answered from history at
once, never by waiting. Each cohort (`evidence.prometheus.cohorts.canary` / `.stable`, each added
to `selector`) gets the same five queries over the same lookback, at step W = slo.window_seconds
with `end` aligned to W (as the fleet's), ten in all whatever the number of pods:

    tpot     avg by (pod) (specgate_tpot_seconds{sel, quantile="0.5", window="<W>"})     range
    rate     sum by (pod) (specgate_decode_tokens_per_second{sel, window="<W>"})         range
    running  sum by (pod) (specgate_requests_running{sel})                               range
    drafts   sum (increase(specgate_spec_drafts_total{sel}[lookback]))                   instant
    accepted sum (increase(specgate_spec_accepted_tokens_total{sel}[lookback]))          instant

Every step of a range answer is one sample of that pod: TPOT p50 and generated tokens/s of the
exporter's windowed gauges whose `window` equals W (so the samples do not overlap; the exporter's
`--windows` must include it — default 1m,5m), running requests (the load), and the cohort's pooled
acceptance L = 1 + accepted / drafts. Samples that are not finite, or not positive for a speed
(an idle window has no TPOT and serves 0 tokens/s), are dropped and counted. Ranks of one pod are
averaged (TPOT) or summed (tokens/s, requests). Names come from `exporter.names`.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from exporter import formulas, names
from exporter.settings import duration_label
from gate.evidence.base import EvidenceError
from gate.evidence.fleet.collect import Client
from gate.evidence.fleet.queries import Query, selector
from gate.plan.model import PrometheusSource

COHORTS = ("canary", "stable")
QUERIES_PER_COHORT = 5


@dataclass
class CohortSamples:
    """One cohort's samples: one value per (pod, window) for each speed and the load, and its pooled L."""

    name: str
    selector: str
    tpot_seconds: list[float] = field(default_factory=list)
    tokens_per_second: list[float] = field(default_factory=list)
    running: list[float] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)
    drafts: float | None = None
    accepted: float | None = None
    dropped: int = 0

    @property
    def acceptance_length(self) -> float | None:
        if self.drafts is None or self.accepted is None or not self.drafts > 0:
            return None
        return formulas.acceptance_length(self.accepted, self.drafts)

    def to_json(self) -> dict[str, Any]:
        return {"selector": self.selector, "pods": sorted(self.pods), "samples": {
            "tpot_seconds": len(self.tpot_seconds), "tokens_per_second": len(self.tokens_per_second),
            "running": len(self.running)}, "dropped_samples": self.dropped,
            "drafts": self.drafts, "accepted": self.accepted, "acceptance_length": self.acceptance_length}


@dataclass
class CohortEvidence:
    """Both cohorts over one window, or the errors that stopped a cohort from being read."""

    source: str
    window_seconds: int
    window_label: str
    lookback_seconds: int
    end: float
    cohorts: dict[str, CohortSamples] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    queries: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "window_seconds": self.window_seconds, "window": self.window_label,
                "lookback_seconds": self.lookback_seconds, "end": self.end, "queries": self.queries,
                "errors": list(self.errors), "cohorts": {k: v.to_json() for k, v in self.cohorts.items()}}


def queries(sel: str, pod_labels: tuple[str, ...], window_seconds: int, lookback_seconds: int) -> list[Query]:
    """The five queries of one cohort (see the module docstring)."""
    by = ", ".join(pod_labels)
    wl = duration_label(window_seconds)
    win = selector(sel, f'window="{wl}"')
    median = selector(win, 'quantile="0.5"')
    return [
        Query("tpot", "range", f"avg by ({by}) ({names.TPOT.series}{median})"),
        Query("rate", "range", f"sum by ({by}) ({names.DECODE_RATE.series}{win})"),
        Query("running", "range", f"sum by ({by}) ({names.REQUESTS_RUNNING.series}{sel})"),
        Query("drafts", "instant", f"sum (increase({names.SPEC_DRAFTS.series}{sel}[{lookback_seconds}s]))"),
        Query("accepted", "instant", f"sum (increase({names.SPEC_ACCEPTED.series}{sel}[{lookback_seconds}s]))"),
    ]


def _values(result: list[dict[str, Any]], pod_labels: tuple[str, ...], positive: bool,
            out: list[float], pods: set[str]) -> int:
    dropped = 0
    for s in result:
        metric = s.get("metric") or {}
        pods.add("/".join(metric.get(label, "") for label in pod_labels if metric.get(label)) or "(no pod labels)")
        for point in s.get("values") or []:
            try:
                v = float(point[1])
            except (IndexError, TypeError, ValueError):
                dropped += 1
                continue
            if not math.isfinite(v) or (v <= 0 if positive else v < 0):
                dropped += 1
                continue
            out.append(v)
    return dropped


def _scalar(result: list[dict[str, Any]]) -> float | None:
    for s in result:
        try:
            v = float(s["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        return v if math.isfinite(v) else None
    return None


def collect(client: Client, src: PrometheusSource, window_seconds: float, lookback_seconds: float, end: float,
            source_name: str) -> CohortEvidence | None:
    """Both cohorts' samples; None when the plan names no stable cohort (nothing to compare with)."""
    if src.cohorts is None or not src.cohorts.stable:
        return None
    w = max(int(round(window_seconds)), 1)
    steps = max(int(lookback_seconds // w), 1)
    aligned = math.floor(end / w) * w
    start = aligned - (steps - 1) * w
    pod_labels = tuple(src.fleet.pod_labels)
    out = CohortEvidence(source_name, w, duration_label(w), steps * w, float(aligned))
    asks: list[tuple[str, Query]] = []
    for name, extra in (("canary", src.cohorts.canary), ("stable", src.cohorts.stable)):
        sel = selector(src.selector, extra)
        out.cohorts[name] = CohortSamples(name, sel)
        asks += [(name, q) for q in queries(sel, pod_labels, w, steps * w)]
    out.queries = len(asks)

    def one(ask: tuple[str, Query]) -> list[dict[str, Any]] | str:
        _, q = ask
        try:
            if q.kind == "range":
                return client.query("/api/v1/query_range", {"query": q.promql, "start": f"{start:.3f}",
                                                            "end": f"{aligned:.3f}", "step": f"{w}s"})
            return client.query("/api/v1/query", {"query": q.promql, "time": f"{aligned:.3f}"})
        except EvidenceError as e:
            return f"{ask[0]} cohort, {q.key}: {e}"

    with ThreadPoolExecutor(max_workers=len(asks)) as pool:
        answers = list(pool.map(one, asks))
    for (name, q), got in zip(asks, answers, strict=True):
        c = out.cohorts[name]
        if isinstance(got, str):
            out.errors.append(got)
            continue
        pods: set[str] = set(c.pods)
        if q.key == "tpot":
            c.dropped += _values(got, pod_labels, True, c.tpot_seconds, pods)
        elif q.key == "rate":
            c.dropped += _values(got, pod_labels, True, c.tokens_per_second, pods)
        elif q.key == "running":
            c.dropped += _values(got, pod_labels, False, c.running, pods)
        elif q.key == "drafts":
            c.drafts = _scalar(got)
        else:
            c.accepted = _scalar(got)
        c.pods = sorted(pods)
    return out

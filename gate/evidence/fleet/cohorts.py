"""Canary and stable cohorts over the same window: the samples `gate.checks.acceptance.cohorts` compares (issue 11).

Why per-pod samples from a fixed query set: a canary step asks "is the new revision faster than
the one it replaces, under the same traffic, right now?" — answered from history at once, never
by waiting. Each cohort (`evidence.prometheus.cohorts.canary` / `.stable`, each added to
`selector`) gets the same five queries over the same lookback, at step W = slo.window_seconds
with `end` aligned to W (as the fleet's), ten in all whatever the number of pods:

    tpot     avg by (pod, model) (specgate_tpot_seconds{sel, quantile="0.5", window="<W>"})     range
    rate     sum by (pod, model) (specgate_decode_tokens_per_second{sel, window="<W>"})         range
    running  sum by (pod, model) (specgate_requests_running{sel})                               range
    drafts   sum (increase(specgate_spec_drafts_total{sel}[lookback]))                          instant
    accepted sum (increase(specgate_spec_accepted_tokens_total{sel}[lookback]))                 instant

(`pod` stands for `fleet.pod_labels`.) Each step of a range answer is one window of that pod:
TPOT p50 and generated tokens/s of the exporter's windowed gauges whose `window` equals W (so the
windows do not overlap; the exporter's `--windows` must include it — default 1m,5m), running
requests (the load), and the cohort's pooled acceptance L = 1 + accepted / drafts. The samples
the check compares are per pod (issue 21: windows of one pod are not independent samples), so the
windows are kept by pod. A point counts once and only at a step of the query's grid (as the
fleet's: `gate.evidence.fleet.grid.on_grid`), in post only when its window ended within the
lookback of now; values that are not finite, or not positive for a speed (an idle window has no
TPOT and serves 0 tokens/s), are dropped and counted. Errors, never samples: a series of another
model than the plan's (or of none), a pod answered twice in one query. Names come from
`exporter.names`.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from exporter import formulas, names
from exporter.settings import duration_label
from gate.evidence.base import EvidenceError
from gate.evidence.fleet.collect import NAMED, Client
from gate.evidence.fleet.grid import Grid, fresh_from, on_grid
from gate.evidence.fleet.queries import MODEL_LABEL, Query, selector
from gate.plan.model import PrometheusSource

PodWindows = dict[str, list[float]]  # pod -> one value per window


@dataclass
class CohortSamples:
    """One cohort's windows by pod for each speed and the load, every pod seen, and its pooled L."""

    name: str
    selector: str
    tpot_seconds: PodWindows = field(default_factory=dict)
    tokens_per_second: PodWindows = field(default_factory=dict)
    running: PodWindows = field(default_factory=dict)
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
        def windows(by_pod: PodWindows) -> int:
            return sum(len(v) for v in by_pod.values())

        return {"selector": self.selector, "pods": sorted(self.pods), "samples": {
            "tpot_seconds": windows(self.tpot_seconds), "tokens_per_second": windows(self.tokens_per_second),
            "running": windows(self.running)}, "dropped_samples": self.dropped,
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
    by = ", ".join((*pod_labels, *((MODEL_LABEL,) if MODEL_LABEL not in pod_labels else ())))
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


@dataclass(frozen=True)
class _Read:
    """How one cohort's range answers are read: the pod labels, the grid, the first fresh step, the model."""

    pod_labels: tuple[str, ...]
    grid: Grid
    first: int
    served_model_name: str | None


def _pod(metric: dict[str, Any], pod_labels: tuple[str, ...]) -> str:
    return "/".join(str(metric.get(label)) for label in pod_labels if metric.get(label)) or "(no pod labels)"


def _values(result: list[dict[str, Any]], how: _Read, positive: bool, out: PodWindows, pods: set[str],
            problems: list[str]) -> int:
    """Each series' on-grid, fresh, finite values into `out[pod]`; the number dropped. A series of another
    model (or none), or a pod answered twice, goes to `problems` instead."""
    dropped = 0
    answered: set[str] = set()
    for s in result:
        metric = s.get("metric") if isinstance(s, dict) else None
        metric = metric if isinstance(metric, dict) else {}
        pod = _pod(metric, how.pod_labels)
        pods.add(pod)
        model = metric.get(MODEL_LABEL)
        if pod in answered:
            problems.append(f"pod {pod} answered twice")
            out.pop(pod, None)
            continue
        answered.add(pod)
        if how.served_model_name is not None and model != how.served_model_name:
            problems.append(f"pod {pod} serves " + (f"model {model!r}" if model else "an unknown model (no model label)")
                            + f", not the plan's {how.served_model_name!r}")
            continue
        points = s.get("values") if isinstance(s, dict) else None
        grid = on_grid(points if isinstance(points, list) else [], how.grid)
        dropped += grid.outside + grid.repeated + grid.malformed
        if grid.conflicting:
            problems.append(f"pod {pod} answered {grid.conflicting} window(s) with two values at one timestamp")
            continue
        for i in sorted(grid.values):
            try:
                v = float(grid.values[i])
            except (TypeError, ValueError):
                dropped += 1
                continue
            if i < how.first or not math.isfinite(v) or (v <= 0 if positive else v < 0):
                dropped += 1
                continue
            out.setdefault(pod, []).append(v)
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
            source_name: str, served_model_name: str | None = None, now: float | None = None) -> CohortEvidence | None:
    """Both cohorts' windows by pod; None when the plan names no stable cohort (nothing to compare with).

    `now` (post): windows that ended more than the lookback before it are dropped; `served_model_name`: a series
    of another model is an error of its cohort, never a sample."""
    if src.cohorts is None or not src.cohorts.stable:
        return None
    w = max(int(round(window_seconds)), 1)
    steps = max(int(lookback_seconds // w), 1)
    aligned = math.floor(end / w) * w
    start = aligned - (steps - 1) * w
    pod_labels = tuple(src.fleet.pod_labels)
    out = CohortEvidence(source_name, w, duration_label(w), steps * w, float(aligned))
    grid = Grid(float(start), w, steps)
    how = _Read(pod_labels, grid, fresh_from(grid, now, lookback_seconds) if now is not None else 0, served_model_name)
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
        problems: list[str] = []
        if q.key == "tpot":
            c.dropped += _values(got, how, True, c.tpot_seconds, pods, problems)
        elif q.key == "rate":
            c.dropped += _values(got, how, True, c.tokens_per_second, pods, problems)
        elif q.key == "running":
            c.dropped += _values(got, how, False, c.running, pods, problems)
        elif q.key == "drafts":
            c.drafts = _scalar(got)
        else:
            c.accepted = _scalar(got)
        c.pods = sorted(pods)
        if problems:
            more = f" and {len(problems) - NAMED} more" if len(problems) > NAMED else ""
            out.errors.append(f"{name} cohort, {q.key}: " + "; ".join(problems[:NAMED]) + more)
    return out

"""Run the fleet's fixed query set against one Prometheus-API backend and build the per-pod table.

Why parallel and why these shapes: the two range queries (drafts and accepted tokens per window)
carry almost all the points; the others are sparse or instant. They run at the same time, so the
wall time is the slowest query plus the parsing, and the number of queries never depends on the
number of pods. Windows are the steps of `increase(x[W])` at step W with `end` aligned to W (both
Prometheus and VictoriaMetrics then evaluate the same instants); a window in which the restarts
counter rose is `reset` and never evidence. Numbers go through `gate.model.plausibility`: a pod
whose acceptance no engine can produce at depth k is inconclusive, never pass.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from exporter import formulas, names
from gate.evidence.fleet.queries import FleetQueries, Query, selector
from gate.evidence.fleet.table import FleetResult, PodRow
from gate.model import plausibility as pl
from gate.plan.model import SLO, FleetRule, PrometheusSource
from gate.status import Status, fleet_status, window_slo_status

Series = list[dict[str, Any]]
RowKey = tuple[str, ...]


class Client(Protocol):
    """What the fleet needs of a Prometheus HTTP API client (gate.evidence.prometheus.PromClient)."""

    def query(self, path: str, params: dict[str, Any]) -> Series: ...


@dataclass(frozen=True)
class FleetAsk:
    """One fleet question: the SLO, the window and lookback, depth k for plausibility, and the end."""

    slo: SLO
    window_seconds: float
    lookback_seconds: float
    min_drafts: float
    end: float
    k: int | None = None
    method: str | None = None
    require_engine_up: bool = True
    now: float | None = None
    served_model_name: str | None = None  # rows of another model are not this plan's evidence


def plan_queries(src: PrometheusSource, ask: FleetAsk) -> tuple[FleetQueries, float, int]:
    """The query set, the aligned end and the number of windows."""
    w = max(int(round(ask.window_seconds)), 1)
    steps = max(int(ask.lookback_seconds // w), 1)
    end = math.floor(ask.end / w) * w
    sel = selector(src.selector, src.cohorts.canary if src.cohorts else None)
    rule = src.fleet
    return FleetQueries(sel, tuple(rule.pod_labels), tuple(rule.group_by), w, steps * w), float(end), steps


def _run(client: Client, queries: list[Query], start: float, end: float, step: int) -> dict[str, Series]:
    def one(q: Query) -> Series:
        if q.kind == "range":
            return client.query("/api/v1/query_range",
                                {"query": q.promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step}s"})
        return client.query("/api/v1/query", {"query": q.promql, "time": f"{end:.3f}"})

    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        results = list(pool.map(one, queries))
    return {q.key: r for q, r in zip(queries, results, strict=True)}


def _key(metric: dict[str, str], labels: tuple[str, ...]) -> RowKey:
    return tuple(metric.get(label, "") for label in labels)


def _instant(result: Series, labels: tuple[str, ...]) -> dict[RowKey, float]:
    out: dict[RowKey, float] = {}
    for s in result:
        try:
            out[_key(s.get("metric") or {}, labels)] = float(s["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return out


def _points(result: Series, labels: tuple[str, ...]) -> dict[RowKey, list[list[Any]]]:
    return {_key(s.get("metric") or {}, labels): s.get("values") or [] for s in result}


def _pod_name(key: RowKey, pod_labels: tuple[str, ...]) -> str:
    return "/".join(v for v in key[: len(pod_labels)] if v) or "(no pod labels)"


@dataclass
class _Acc:
    """Running sums of one row's windows (mutable only while one row is built)."""

    eligible: int = 0
    met: int = 0
    reset: int = 0
    thin: int = 0
    no_accepted: int = 0
    non_finite: int = 0
    drafts: float = 0.0
    accepted: float = 0.0
    min_l: float = math.inf
    max_l: float = -math.inf


def _aligned(dpoints: list[list[Any]], apoints: list[list[Any]]) -> list[tuple[Any, Any, Any]]:
    """(t, drafts, accepted) per drafts point; accepted None where that series has no point at t.

    Both are steps of one grid: when their timestamps agree one by one (the usual case) they are
    zipped, otherwise matched by timestamp."""
    if len(dpoints) == len(apoints) and all(d[0] == a[0] for d, a in zip(dpoints, apoints, strict=True)):
        return [(d[0], d[1], a[1]) for d, a in zip(dpoints, apoints, strict=True)]
    amap = {float(t): v for t, v in apoints}
    return [(t, v, amap.get(float(t))) for t, v in dpoints]


def _windows(dpoints: list[list[Any]], apoints: list[list[Any]], resets: set[float], min_drafts: float,
             target: float | None) -> _Acc:
    acc = _Acc()
    floor = max(min_drafts, 1.0)
    for t, v, av in _aligned(dpoints, apoints):
        if resets and float(t) in resets:
            acc.reset += 1
            continue
        d = float(v)
        if not math.isfinite(d) or d < 0:
            acc.non_finite += 1
            continue
        if d < floor:
            acc.thin += 1
            continue
        a = None if av is None else float(av)
        if a is None:
            acc.no_accepted += 1
            continue
        if not math.isfinite(a) or a < 0:
            acc.non_finite += 1
            continue
        length = formulas.acceptance_length(a, d)
        assert length is not None  # d ≥ floor > 0
        acc.eligible += 1
        acc.drafts += d
        acc.accepted += a
        acc.min_l = min(acc.min_l, length)
        acc.max_l = max(acc.max_l, length)
        if target is not None and length >= target:
            acc.met += 1
    return acc


def _row(key: RowKey, q: FleetQueries, ask: FleetAsk, steps: int, acc: _Acc | None, lifetime: dict[str, float | None],
         restarts_known: bool, engine_up: float | None) -> PodRow:
    slo = ask.slo
    labels = dict(zip(q.row_labels, key, strict=True))
    pod = _pod_name(key, q.pod_labels)
    model = labels.get("model") or None
    target = slo.target_acceptance_length
    a = acc or _Acc()
    seen = a.eligible + a.reset + a.thin + a.no_accepted + a.non_finite
    excluded = {"reset": a.reset, "below_min_drafts": a.thin, "no_accepted": a.no_accepted,
                "non_finite": a.non_finite, "missing": max(steps - seen, 0)}
    pooled = formulas.acceptance_length(a.accepted, a.drafts)
    acc_lt, tok_lt = lifetime.get("accepted"), lifetime.get("draft_tokens")
    rate_lt = acc_lt / tok_lt if acc_lt is not None and tok_lt else None
    up = None if engine_up is None else engine_up >= 1.0
    why: list[str] = []
    unknown: list[str] = []
    status = Status.PASS

    pod_label = q.pod_labels[-1]
    if not labels.get(pod_label):
        unknown.append(f"series without a {pod_label} label would pool several pods into one row "
                       "(set evidence.prometheus.fleet.pod_labels)")
    if acc is None:
        unknown.append("no drafts series in the lookback")
    if model is not None and ask.served_model_name is not None and model != ask.served_model_name:
        unknown.append(f"not this plan's evidence: model {model!r} is not the served model {ask.served_model_name!r}")
    if target is None:
        unknown.append("no acceptance-length target")
    slo_st = window_slo_status(a.eligible, a.met, min_windows=slo.min_windows,
                                                    required_fraction=slo.required_fraction) if target is not None and not unknown else None
    # Plausibility: every window's L within [1, 1 + k]; the lookback's L and a together possible at k.
    found = None
    if a.eligible:
        found = (pl.acceptance(a.min_l, None, ask.k, where=pod) or pl.acceptance(a.max_l, None, ask.k, where=pod))
    d_lt = lifetime.get("drafts")
    if found is None and d_lt:
        l_lt = formulas.acceptance_length(acc_lt, d_lt) if acc_lt is not None else None
        found = pl.acceptance(l_lt, rate_lt, ask.k, method=ask.method, where=pod)
    if a.non_finite:
        unknown.append(f"{a.non_finite} window(s) with a non-finite or negative count")
    if found is not None:
        unknown.append(f"not evidence: {found.reason}")
        slo_st = None
    if slo_st is Status.FAIL:
        status = Status.FAIL
        why.append(f"{a.met}/{a.eligible} windows ≥ {target:g}, required {slo.required_fraction:g}")
    else:
        if slo_st is Status.INCONCLUSIVE:
            unknown.append(f"{a.eligible} evidence window(s), fewer than min_windows {slo.min_windows}")
        if not restarts_known and acc is not None:
            unknown.append("restart status unknown (no restarts series)")
        if ask.require_engine_up and up is not True:
            unknown.append("engine down at the end of the lookback" if up is False
                           else "engine state unknown (no engine_up series at the end)")
        if unknown:
            status = Status.INCONCLUSIVE
        elif slo_st is Status.PASS:
            why.append(f"{a.met}/{a.eligible} windows ≥ {target:g}")
    reason = "; ".join(why + unknown)
    return PodRow(pod=pod, labels=labels, model=model, windows=a.eligible, met=a.met, drafts=a.drafts,
                  below_slo_share=(a.eligible - a.met) / a.eligible if a.eligible and target is not None else None,
                  acceptance_length=pooled, min_acceptance_length=a.min_l if a.eligible else None,
                  acceptance_rate=rate_lt,
                  restarts=lifetime.get("restarts"), engine_up=up, excluded=excluded, status=status, reason=reason)


def evaluate(client: Client, src: PrometheusSource, ask: FleetAsk, source_name: str,
             clock: Callable[[], float] = time.perf_counter) -> FleetResult:
    """The per-pod table and the fleet verdict; EvidenceError from the client propagates (no answer)."""
    t0 = clock()
    q, end, steps = plan_queries(src, ask)
    start = end - (steps - 1) * q.window_seconds
    queries = q.all()
    res = _run(client, queries, start, end, q.window_seconds)
    labels = q.row_labels
    drafts = _points(res["drafts"], labels)
    accepted = _points(res["accepted"], labels)
    resets = _points(res["resets"], labels)
    restarts = _instant(res["restarts"], labels)
    lt = {name: _instant(res[name], labels) for name in ("drafts_lookback", "accepted_lookback", "draft_tokens")}
    up = _instant(res["engine_up"], q.pod_labels)

    keys = set(drafts) | set(restarts) | set(lt["draft_tokens"])
    pods_with_rows = {k[: len(q.pod_labels)] for k in keys}
    if selector(q.selector, drop=names.STREAM_LABELS) == q.selector:
        # engine_up matches the same pods only when the selector has no stream-label matchers (it drops them)
        keys |= {k + ("",) * (len(labels) - len(q.pod_labels)) for k in up if k not in pods_with_rows}
    rows: list[PodRow] = []
    for key in sorted(keys):
        acc = None
        if key in drafts:
            rset = {float(t) for t, _ in resets.get(key, [])}
            acc = _windows(drafts[key], accepted.get(key, []), rset, ask.min_drafts, ask.slo.target_acceptance_length)
        lifetime: dict[str, float | None] = {"drafts": lt["drafts_lookback"].get(key),
                                             "accepted": lt["accepted_lookback"].get(key),
                                             "draft_tokens": lt["draft_tokens"].get(key),
                                             "restarts": restarts.get(key)}
        rows.append(_row(key, q, ask, steps, acc, lifetime, key in restarts,
                         up.get(key[: len(q.pod_labels)])))
    failed = sum(1 for r in rows if r.status is Status.FAIL)
    incon = sum(1 for r in rows if r.status is Status.INCONCLUSIVE)
    passed = len(rows) - failed - incon
    pods_seen = len({r.pod for r in rows})
    rule: FleetRule = src.fleet
    missing = max((rule.expected_pods or 0) - pods_seen, 0)
    status, reason = fleet_status(failed, incon, passed, missing, max_failed_fraction=rule.max_failed_fraction,
                                  max_inconclusive_fraction=rule.max_inconclusive_fraction)
    if ask.now is not None and (future := pl.recency(end, ask.now, q.lookback_seconds, require_recent=False,
                                                     where=source_name)) is not None:
        status, reason = Status.INCONCLUSIVE, f"not evidence: {future.reason}"
    return FleetResult(source=source_name, selector=q.selector, rule=rule.model_dump(mode="json"),
                       window_seconds=q.window_seconds, lookback_seconds=q.lookback_seconds, end=end,
                       rows=tuple(rows), missing_pods=missing, status=status, reason=reason, queries=len(queries),
                       seconds=clock() - t0,
                       counts={"pods": pods_seen, "rows": len(rows), "pass": passed, "fail": failed,
                               "inconclusive": incon, "missing": missing})

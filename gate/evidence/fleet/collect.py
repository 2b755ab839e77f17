"""Run the fleet's fixed query set against one Prometheus-API backend and build the per-pod table.

Why parallel and why these shapes: the two range queries (drafts and accepted tokens per window)
carry almost all the points; the others are sparse or instant. They run at the same time, so the
wall time is the slowest query plus the parsing, and the number of queries never depends on the
number of pods. Windows are the steps of `increase(x[W])` at step W with `end` aligned to W (both
Prometheus and VictoriaMetrics then evaluate the same instants); a window in which the restarts
counter rose is `reset` and never evidence. Numbers go through `gate.model.plausibility`: a pod
whose acceptance no engine can produce at depth k is inconclusive, never pass.

Answers are checked, not believed (issue 21): a window counts once, and only at a step of the
query's own grid (`start + i·W` inside `[start, end]`: a point off it — from another range, days
before — is dropped and counted as `outside_range`; a repeated timestamp counts once, as
`repeated`, and two different values at one timestamp make the row inconclusive); in post a
window that ended more than `lookback_seconds` before now is `stale`, never evidence; a row
answered twice in one query (a backend answers one series per label set), a row without a
`model` label (of unknown model), or a row behind which more than one scrape target stands
(`pod_labels` pooling pods) is inconclusive, naming it; more pods than `expected_pods` make the
fleet inconclusive, naming them; more than `MAX_ROWS` rows are refused before any row is built.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from exporter import formulas, names
from gate.evidence.base import BadAnswer
from gate.evidence.fleet.queries import MODEL_LABEL, FleetQueries, Query, selector
from gate.evidence.fleet.table import FleetResult, PodRow
from gate.model import plausibility as pl
from gate.plan.model import SLO, FleetRule, PrometheusSource
from gate.status import Status, fleet_status, window_slo_status

Series = list[dict[str, Any]]
RowKey = tuple[str, ...]

# Rows in one fleet table: a 10,000-pod fleet with two model or drafter-revision rows per pod fits; more is
# refused before any row is built (the table and the report stay bounded: ~600 B of JSON per row).
MAX_ROWS = 20_000
GRID_TOLERANCE_SECONDS = 1e-3  # a point this close to a step is at that step (float timestamps)
NAMED = 10  # pods named in one fleet-level reason


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
    require_recent: bool = False  # post: windows must have ended within lookback_seconds of `now`


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


def _metric(s: Any) -> dict[str, str]:
    m = s.get("metric") if isinstance(s, dict) else None
    return m if isinstance(m, dict) else {}


def _instant(result: Series, labels: tuple[str, ...], twice: set[RowKey]) -> dict[RowKey, float]:
    """Row -> value; a row answered twice is added to `twice` (its value is not believed)."""
    out: dict[RowKey, float] = {}
    for s in result:
        key = _key(_metric(s), labels)
        if key in out:
            twice.add(key)
        try:
            out[key] = float(s["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return out


def _points(result: Series, labels: tuple[str, ...], twice: set[RowKey]) -> dict[RowKey, list[Any]]:
    """Row -> its points; a row answered twice is added to `twice` (never "the last one wins")."""
    out: dict[RowKey, list[Any]] = {}
    for s in result:
        key = _key(_metric(s), labels)
        if key in out:
            twice.add(key)
        values = s.get("values") if isinstance(s, dict) else None
        out[key] = values if isinstance(values, list) else []
    return out


@dataclass(frozen=True)
class Grid:
    """The query's steps: `start + i·W` for i < steps, each the end of one window."""

    start: float
    step: int
    steps: int

    def index(self, t: float) -> int | None:
        """The step `t` falls on, or None when it is not one of the query's steps."""
        if not math.isfinite(t):
            return None
        i = round((t - self.start) / self.step)
        if not 0 <= i < self.steps or abs(self.start + i * self.step - t) > GRID_TOLERANCE_SECONDS:
            return None
        return i


@dataclass
class OnGrid:
    """One series' points on the grid: step -> value (first seen), and what was dropped."""

    values: dict[int, Any]
    outside: int = 0
    repeated: int = 0
    conflicting: int = 0
    malformed: int = 0


def on_grid(points: list[Any], grid: Grid) -> OnGrid:
    """A series' points by step; off-grid, repeated, conflicting and malformed points counted, never kept."""
    out = OnGrid({})
    for p in points:
        try:
            t = float(p[0])
            v = p[1]
        except (IndexError, KeyError, TypeError, ValueError):
            out.malformed += 1
            continue
        i = grid.index(t)
        if i is None:
            out.outside += 1
        elif i in out.values:
            if out.values[i] == v:
                out.repeated += 1
            else:
                out.conflicting += 1
        else:
            out.values[i] = v
    return out


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


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
    outside: int = 0
    repeated: int = 0
    conflicting: int = 0
    stale: int = 0
    drafts: float = 0.0
    accepted: float = 0.0
    min_l: float = math.inf
    max_l: float = -math.inf


def fresh_from(grid: Grid, now: float, lookback_seconds: float) -> int:
    """The first step whose window ended within `lookback_seconds` of `now` (steps are window ends)."""
    return max(0, math.ceil((now - lookback_seconds - grid.start) / grid.step - 1e-9))


def _windows(dpoints: list[Any], apoints: list[Any], resets: set[int], min_drafts: float,
             target: float | None, grid: Grid, first: int = 0) -> _Acc:
    """One row's windows: each step of the grid at most once (drafts and accepted matched by step);
    steps before `first` ended too long ago (post) and are `stale`."""
    acc = _Acc()
    floor = max(min_drafts, 1.0)
    d_clean, a_clean = on_grid(dpoints, grid), on_grid(apoints, grid)
    acc.outside = d_clean.outside + d_clean.malformed
    acc.repeated = d_clean.repeated
    acc.conflicting = d_clean.conflicting + a_clean.conflicting
    for i in sorted(d_clean.values):
        v, av = d_clean.values[i], a_clean.values.get(i)
        if i < first:
            acc.stale += 1
            continue
        if i in resets:
            acc.reset += 1
            continue
        try:
            d = float(v)
        except (TypeError, ValueError):
            acc.non_finite += 1
            continue
        if not math.isfinite(d) or d < 0:
            acc.non_finite += 1
            continue
        if d < floor:
            acc.thin += 1
            continue
        try:
            a = None if av is None else float(av)
        except (TypeError, ValueError):
            a = math.nan
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
         restarts_known: bool, engine_up: float | None, flags: list[str] | None = None, stream: bool = True) -> PodRow:
    """One row's verdict; `flags` are reasons found across the answers (a row answered twice, pods pooled),
    `stream` False for a row seen only through the exporter-level engine_up (no model to ask for)."""
    slo = ask.slo
    labels = dict(zip(q.row_labels, key, strict=True))
    pod = _pod_name(key, q.pod_labels)
    model = labels.get("model") or None
    target = slo.target_acceptance_length
    a = acc or _Acc()
    seen = a.eligible + a.reset + a.thin + a.no_accepted + a.non_finite + a.stale
    excluded = {"reset": a.reset, "below_min_drafts": a.thin, "no_accepted": a.no_accepted,
                "non_finite": a.non_finite, "stale": a.stale, "outside_range": a.outside, "repeated": a.repeated,
                "missing": max(steps - seen, 0)}
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
    if model is None and stream:
        unknown.append(f"series without a {MODEL_LABEL} label: of unknown model, not shown to be this plan's evidence")
    unknown += flags or []
    if a.conflicting:
        unknown.append(f"{a.conflicting} window(s) answered with two different values at one timestamp")
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
    grid = Grid(start, q.window_seconds, steps)
    queries = q.all()
    res = _run(client, queries, start, end, q.window_seconds)
    labels = q.row_labels
    twice: dict[str, set[RowKey]] = {name: set() for name in res}
    drafts = _points(res["drafts"], labels, twice["drafts"])
    accepted = _points(res["accepted"], labels, twice["accepted"])
    resets = _points(res["resets"], labels, twice["resets"])
    restarts = _instant(res["restarts"], labels, twice["restarts"])
    lt = {name: _instant(res[name], labels, twice[name])
          for name in ("drafts_lookback", "accepted_lookback", "draft_tokens")}
    up = _instant(res["engine_up"], q.pod_labels, twice["engine_up"])
    targets = _instant(res["targets"], labels, twice["targets"]) if "targets" in res else {}

    stream_keys = set(drafts) | set(restarts) | set(lt["draft_tokens"])
    keys = set(stream_keys)
    pods_with_rows = {k[: len(q.pod_labels)] for k in keys}
    if selector(q.selector, drop=names.STREAM_LABELS) == q.selector:
        # engine_up matches the same pods only when the selector has no stream-label matchers (it drops them)
        keys |= {k + ("",) * (len(labels) - len(q.pod_labels)) for k in up if k not in pods_with_rows}
    if len(keys) > MAX_ROWS:
        raise BadAnswer(f"{source_name}: {len(keys):,} rows match {q.selector}, more than the {MAX_ROWS:,} one fleet "
                        "table holds (narrow the selector or split the fleet)")
    # post: a window ending before now - lookback is not recent evidence
    first = fresh_from(grid, ask.now, ask.lookback_seconds) if ask.require_recent and ask.now is not None else 0
    rows: list[PodRow] = []
    for key in sorted(keys):
        acc = None
        if key in drafts:
            rset = {i for t, _ in (p for p in resets.get(key, []) if isinstance(p, list) and len(p) == 2)
                    if (i := grid.index(_float(t))) is not None}
            acc = _windows(drafts[key], accepted.get(key, []), rset, ask.min_drafts, ask.slo.target_acceptance_length,
                           grid, first)
        lifetime: dict[str, float | None] = {"drafts": lt["drafts_lookback"].get(key),
                                             "accepted": lt["accepted_lookback"].get(key),
                                             "draft_tokens": lt["draft_tokens"].get(key),
                                             "restarts": restarts.get(key)}
        flags = [f"answered twice in the {name} query (two series for one row: neither is believed)"
                 for name, rows_twice in twice.items() if name != "engine_up" and key in rows_twice]
        if key[: len(q.pod_labels)] in twice["engine_up"]:
            flags.append("answered twice in the engine_up query (two series for one pod)")
        if (n := targets.get(key)) is not None and n > 1:
            flags.append(f"{n:g} scrape targets ({'/'.join(q.target_labels)}) behind one row: fleet.pod_labels "
                         f"{list(q.pod_labels)} pools several pods into it")
        rows.append(_row(key, q, ask, steps, acc, lifetime, key in restarts,
                         up.get(key[: len(q.pod_labels)]), flags, stream=key in stream_keys))
    failed = sum(1 for r in rows if r.status is Status.FAIL)
    incon = sum(1 for r in rows if r.status is Status.INCONCLUSIVE)
    passed = len(rows) - failed - incon
    pods = sorted({r.pod for r in rows})
    pods_seen = len(pods)
    rule: FleetRule = src.fleet
    missing = max((rule.expected_pods or 0) - pods_seen, 0)
    status, reason = fleet_status(failed, incon, passed, missing, max_failed_fraction=rule.max_failed_fraction,
                                  max_inconclusive_fraction=rule.max_inconclusive_fraction)
    if rule.expected_pods is not None and pods_seen > rule.expected_pods and status is not Status.FAIL:
        shown = ", ".join(pods[:NAMED]) + (f" and {pods_seen - NAMED} more" if pods_seen > NAMED else "")
        status, reason = Status.INCONCLUSIVE, (
            f"{pods_seen} pods answered, more than fleet.expected_pods {rule.expected_pods}: the selector matches "
            f"pods it should not ({shown})")
    if ask.now is not None and (late := pl.recency(end, ask.now, q.lookback_seconds, require_recent=ask.require_recent,
                                                   where=source_name)) is not None:
        status, reason = Status.INCONCLUSIVE, f"not evidence: {late.reason}"
    return FleetResult(source=source_name, selector=q.selector, rule=rule.model_dump(mode="json"),
                       window_seconds=q.window_seconds, lookback_seconds=q.lookback_seconds, end=end,
                       rows=tuple(rows), missing_pods=missing, status=status, reason=reason, queries=len(queries),
                       seconds=clock() - t0,
                       counts={"pods": pods_seen, "rows": len(rows), "pass": passed, "fail": failed,
                               "inconclusive": incon, "missing": missing})

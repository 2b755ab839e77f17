"""Run the fleet's fixed query set against one Prometheus-API backend and build the per-pod table of facts.

Why parallel and why these shapes: the two range queries (drafts and accepted tokens per window)
carry almost all the points; the others are sparse or instant. They run at the same time, so the
wall time is the slowest query plus the parsing, and the number of queries never depends on the
number of pods. Windows are the steps of `increase(x[W])` at step W with `end` aligned to W (both
Prometheus and VictoriaMetrics then evaluate the same instants); a window in which the restarts
counter rose is `reset` and never evidence. Numbers go through `gate.model.plausibility`: a pod
whose acceptance no engine can produce at depth k says so (`PodRow.implausible`), and is never a pass.

Answers are checked, not believed (issue 21): a window counts once, and only at a step of the
query's own grid (`start + i·W` inside `[start, end]`: a point off it — from another range, days
before — is dropped and counted as `outside_range`; a repeated timestamp counts once, as
`repeated`, and two different values at one timestamp make the row inconclusive); in post a
window that ended more than `lookback_seconds` before now is `stale`, never evidence; a row
answered twice in one query (a backend answers one series per label set), a row without a
`model` label (of unknown model), or a row behind which more than one scrape target stands
(`pod_labels` pooling pods) says why it is not evidence (`PodRow.not_evidence`); more than
`MAX_ROWS` rows are refused before any row is built.

Facts, never verdicts (design.md "Floors": sources return facts and rows): nothing here sets a status. The
acceptance line judges the rows (gate.checks.acceptance.fleet_rule: each pod by the per-window SLO,
the fleet by the plan's rule, more pods than `expected_pods` included).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from exporter import formulas, names
from gate.evidence.base import BadAnswer
from gate.evidence.fleet import recorded
from gate.evidence.fleet.answers import MatrixSeries, VectorSample
from gate.evidence.fleet.grid import Grid, Steps, fresh_from, on_steps
from gate.evidence.fleet.queries import MODEL_LABEL, FleetQueries, Query, selector
from gate.evidence.fleet.recorded import Fallback
from gate.evidence.fleet.table import FleetCost, FleetResult, PodRow
from gate.model import plausibility as pl
from gate.plan.model import SLO, PrometheusSource

Series = list[dict[str, Any]]
RowKey = tuple[str, ...]

# Rows in one fleet table: a 10,000-pod fleet with two model or drafter-revision rows per pod fits; more is
# refused before any row is built (the table and the report stay bounded: ~600 B of JSON per row).
MAX_ROWS = 20_000
NAMED = 10  # pods named in one reason about many (the cohorts' problems, the fleet rule's extra pods)


class Client(Protocol):
    """What the fleet needs of a Prometheus HTTP API client (gate.evidence.prometheus.PromClient)."""

    def query(self, path: str, params: dict[str, Any]) -> Series: ...


@runtime_checkable
class TypedClient(Protocol):
    """A client that can also decode answers straight into typed series (gate.evidence.fleet.answers)."""

    def query_typed(self, path: str, params: dict[str, Any], kind: str,
                    read: Callable[[list[Any]], Any] | None = None) -> Any: ...


@dataclass(frozen=True)
class FleetAsk:
    """One fleet question: the SLO (its target: which windows met it), the window and lookback, depth k for
    plausibility, and the end."""

    slo: SLO
    window_seconds: float
    lookback_seconds: float
    min_drafts: float
    end: float
    k: int | None = None
    method: str | None = None
    now: float | None = None
    served_model_name: str | None = None  # rows of another model are not this plan's evidence
    require_recent: bool = False  # post: windows must have ended within lookback_seconds of `now`
    path: str = "raw"  # "auto": recorded facts when they are this plan's, else raw; "recorded" (no fallback); "raw"


def plan_queries(src: PrometheusSource, ask: FleetAsk) -> tuple[FleetQueries, float, int]:
    """The query set, the aligned end and the number of windows."""
    w = max(int(round(ask.window_seconds)), 1)
    steps = max(int(ask.lookback_seconds // w), 1)
    end = math.floor(ask.end / w) * w
    sel = selector(src.selector, src.cohorts.canary if src.cohorts else None)
    rule = src.fleet
    return FleetQueries(sel, tuple(rule.pod_labels), tuple(rule.group_by), w, steps * w), float(end), steps


@dataclass
class Answer:
    """One query's answer read into rows: row -> value (instant) or row -> its steps (range), the rows answered
    twice (neither believed) and the seconds spent reading it."""

    instant: dict[RowKey, float]
    steps: dict[RowKey, Steps]
    twice: set[RowKey]
    seconds: float = 0.0
    most_series: int = 0  # an answer read per series (`per_series`): the most series behind one row


Reader = Callable[[Query, list[Any]], Answer]


def _ask(client: Client, q: Query, start: float, end: float, step: int, read: Reader) -> Answer:
    """One query, its answer read into rows in the query's own thread as soon as it comes (the parsed JSON is
    dropped before the rows are built: memory holds the rows, not the objects)."""
    if q.kind == "range":
        path, params = "/api/v1/query_range", {"query": q.promql, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                               "step": f"{step}s"}
    else:
        path, params = "/api/v1/query", {"query": q.promql, "time": f"{end:.3f}"}
    seconds = [0.0]

    def rows(got: list[Any]) -> Answer:
        t0 = time.perf_counter()
        out = read(q, got)
        seconds[0] = time.perf_counter() - t0
        return out

    if isinstance(client, TypedClient):  # read inside the client's one-answer-at-a-time section
        answer: Answer = client.query_typed(path, params, q.kind, rows)
    else:
        answer = rows(client.query(path, params))
    answer.seconds = seconds[0]
    return answer


def _run(client: Client, q: FleetQueries, grid: Grid,
         done: dict[str, Answer] | None = None) -> tuple[FleetQueries, dict[str, Answer]]:
    """The pre-flight and the instant queries at once (the instants do not depend on it), then, as soon as the
    pre-flight answers, the range queries: `sum by` the row labels when it says some row has several series
    (the backend pools them), else as the series are (the gate pools). Returns the query set used and every
    answer by key (the pre-flight's as `series_per_row`). `done`: instant answers the recorded path already has
    (the same queries at the same time), not asked again."""
    start, end, step = grid.start, grid.start + (grid.steps - 1) * grid.step, grid.step
    pre = q.series_per_row()
    have = {x.key: done[x.key] for x in q.instants() if done and x.key in done}
    with ThreadPoolExecutor(max_workers=len(q.all()) + 1) as pool:
        first = pool.submit(_ask, client, pre, start, end, step, reader(q, grid))
        instants = [(x.key, pool.submit(_ask, client, x, start, end, step, reader(q, grid))) for x in q.instants()
                    if x.key not in have]
        used = q if max(first.result().instant.values(), default=0.0) > 1 else q.unpooled()
        ranges = [(x.key, pool.submit(_ask, client, x, start, end, step, reader(used, grid))) for x in used.ranges()]
        answers = {key: f.result() for key, f in [*ranges, *instants]}
    answers.update(have)
    answers[pre.key] = first.result()
    return used, answers


def _key(metric: dict[str, str], labels: tuple[str, ...]) -> RowKey:
    return tuple(metric.get(label, "") for label in labels)


def _metric(s: Any) -> dict[str, str]:
    if isinstance(s, (MatrixSeries, VectorSample)):
        return s.metric
    m = s.get("metric") if isinstance(s, dict) else None
    return m if isinstance(m, dict) else {}


def _points(s: Any) -> Any:
    """A range series' points: typed (time, value) pairs, or the generic answer's list (None when not there)."""
    if isinstance(s, MatrixSeries):
        return s.values
    return s.get("values") if isinstance(s, dict) else None


def _instant(result: list[Any], labels: tuple[str, ...], twice: set[RowKey]) -> dict[RowKey, float]:
    """Row -> value; a row answered twice is added to `twice` (its value is not believed)."""
    out: dict[RowKey, float] = {}
    for s in result:
        key = _key(_metric(s), labels)
        if key in out:
            twice.add(key)
        try:
            out[key] = s.value[1] if isinstance(s, VectorSample) else float(s["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return out


def _add(into: Steps, other: Steps) -> None:
    """A row's second series added step by step into its first (what `sum by` does: a step's sum is over the
    series with a point there; NaN stays NaN), its dropped points counted with the first's."""
    slots = into.values
    for i, v in enumerate(other.values):
        if v is not None:
            seen = slots[i]
            slots[i] = v if seen is None else seen + v
    into.outside += other.outside
    into.repeated += other.repeated
    into.conflicting += other.conflicting
    into.malformed += other.malformed


def _steps(result: list[Any], labels: tuple[str, ...], grid: Grid, twice: set[RowKey],
           pooled: bool = True) -> dict[RowKey, Steps]:
    """Row -> its points on the grid (`gate.evidence.fleet.grid.on_steps`). `pooled` (the backend summed by the
    row labels): a row answered twice is added to `twice` (never "the last one wins"); else the series of one
    row are added up step by step (a pod's ranks), and only the same series answered twice goes to `twice`."""
    out: dict[RowKey, Steps] = {}
    first: dict[RowKey, dict[str, str]] = {}  # each row's first series' labels
    more: dict[RowKey, list[dict[str, str]]] = {}  # every series' labels, for the rows answered with several
    for s in result:
        metric = _metric(s)
        key = _key(metric, labels)
        steps = on_steps(_points(s), grid)
        if key not in out:
            out[key] = steps
            first[key] = metric
            continue
        if pooled:
            twice.add(key)
            out[key] = steps
            continue
        seen = more.setdefault(key, [first[key]])
        if metric in seen:  # the same series again (label sets compared as dicts)
            twice.add(key)
        seen.append(metric)
        _add(out[key], steps)
    return out


def per_series(result: list[Any], labels: tuple[str, ...]) -> Answer:
    """An instant answer of one value per series (the recorded windows, `recorded.WINDOWS`): each row's values added
    up, and the most series behind one row kept (more than one: the recorded path falls back, `recorded.coverage`)."""
    out: dict[RowKey, float] = {}
    series: dict[RowKey, int] = {}
    for s in result:
        key = _key(_metric(s), labels)
        try:
            value = s.value[1] if isinstance(s, VectorSample) else float(s["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        out[key] = out.get(key, 0.0) + value
        series[key] = series.get(key, 0) + 1
    return Answer(out, {}, set(), most_series=max(series.values(), default=0))


def reader(q: FleetQueries, grid: Grid) -> Reader:
    """How each query's answer is read: range answers onto the grid, instant ones to one value a row; rows are
    the row labels, the pod labels for the exporter-level engine_up."""
    def read(query: Query, result: list[Any]) -> Answer:
        labels = q.pod_labels if query.key == "engine_up" else q.row_labels
        twice: set[RowKey] = set()
        if query.key == recorded.WINDOWS:
            return per_series(result, labels)
        if query.kind == "range":
            return Answer({}, _steps(result, labels, grid, twice, pooled=q.pooled), twice)
        return Answer(_instant(result, labels, twice), {}, twice)
    return read


def _pod_name(key: RowKey, pod_labels: tuple[str, ...]) -> str:
    return "/".join([v for v in key[: len(pod_labels)] if v]) or "(no pod labels)"


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
    not_eligible: int = 0  # recorded path: windows not eligible (reset, thin, no accepted tokens), not told apart
    drafts: float = 0.0
    accepted: float = 0.0
    min_l: float = math.inf
    max_l: float = -math.inf


def _full(dv: list[float], av: list[float], floor: float,
          target: float | None) -> tuple[int, int, float, float, float, float] | None:
    """A row whose every step is evidence (the usual row): drafts and accepted at every step, all finite, drafts
    at least `floor` and accepted at least 0 — then (eligible, met, drafts, accepted, min L, max L) from a few
    C-level passes, the same numbers the loop of `_windows` adds up (same order); else None (take the loop)."""
    sd, sa = sum(dv), sum(av)
    if not (math.isfinite(sd) and math.isfinite(sa)) or min(dv) < floor or min(av) < 0:
        return None  # a NaN or an infinity makes the sums non-finite, so min() is only asked of finite numbers
    lengths: list[float] = list(map(formulas.acceptance_length, av, dv))  # type: ignore[arg-type]  # dv >= floor > 0
    met = 0 if target is None else sum(1 for x in lengths if x >= target)
    return len(dv), met, sd, sa, min(lengths), max(lengths)


def _windows(d: Steps, a: Steps | None, resets: set[int], min_drafts: float, target: float | None,
             first: int = 0) -> _Acc:
    """One row's windows: each step of the grid at most once (drafts and accepted matched by step); steps
    before `first` ended too long ago (post) and are `stale`. In this order a window is stale, reset,
    non-finite (drafts NaN, infinite or negative), below min_drafts, without accepted tokens, non-finite
    (accepted), else evidence: L = formulas.acceptance_length(accepted, drafts), met when L >= target.
    One pass over the row's slots with the counts in locals (the loop every window of the fleet goes through)."""
    acc = _Acc()
    floor = max(min_drafts, 1.0)
    acc.outside = d.outside + d.malformed
    acc.repeated = d.repeated
    acc.conflicting = d.conflicting + (a.conflicting if a is not None else 0)
    av: list[float | None] = a.values if a is not None else [None] * len(d.values)
    length_of = formulas.acceptance_length
    inf = math.inf
    if not first and not resets and None not in d.values and None not in av:
        full = _full(d.values, av, floor, target)  # type: ignore[arg-type]  # no None in either: checked
        if full is not None:
            acc.eligible, acc.met, acc.drafts, acc.accepted, acc.min_l, acc.max_l = full
            return acc
    eligible = met = reset = thin = no_accepted = non_finite = stale = 0
    drafts = accepted = 0.0
    lo, hi = inf, -inf
    for i, dv in enumerate(d.values):
        if dv is None:
            continue
        if i < first:
            stale += 1
        elif i in resets:
            reset += 1
        elif not 0 <= dv < inf:  # NaN fails both comparisons
            non_finite += 1
        elif dv < floor:
            thin += 1
        elif (x := av[i]) is None:
            no_accepted += 1
        elif not 0 <= x < inf:
            non_finite += 1
        else:
            length = length_of(x, dv)
            assert length is not None  # dv >= floor > 0
            eligible += 1
            drafts += dv
            accepted += x
            if length < lo:
                lo = length
            if length > hi:
                hi = length
            if target is not None and length >= target:
                met += 1
    acc.eligible, acc.met, acc.reset, acc.thin = eligible, met, reset, thin
    acc.no_accepted, acc.non_finite, acc.stale = no_accepted, non_finite, stale
    acc.drafts, acc.accepted, acc.min_l, acc.max_l = drafts, accepted, lo, hi
    return acc


def _row(key: RowKey, q: FleetQueries, ask: FleetAsk, steps: int, acc: _Acc | None, lifetime: dict[str, float | None],
         restarts_known: bool, engine_up: float | None, flags: list[str] | None = None, stream: bool = True) -> PodRow:
    """One row's facts; `flags` are reasons found across the answers (a row answered twice, pods pooled),
    `stream` False for a row seen only through the exporter-level engine_up (no model to ask for). The row is
    judged by gate.checks.acceptance.fleet_rule."""
    labels = dict(zip(q.row_labels, key, strict=True))
    pod = _pod_name(key, q.pod_labels)
    model = labels.get("model") or None
    target = ask.slo.target_acceptance_length
    a = acc or _Acc()
    seen = a.eligible + a.reset + a.thin + a.no_accepted + a.non_finite + a.stale + a.not_eligible
    excluded = {"reset": a.reset, "below_min_drafts": a.thin, "no_accepted": a.no_accepted,
                "non_finite": a.non_finite, "stale": a.stale, "outside_range": a.outside, "repeated": a.repeated,
                "missing": max(steps - seen, 0)}
    if a.not_eligible:
        excluded["not_eligible"] = a.not_eligible
    pooled = formulas.acceptance_length(a.accepted, a.drafts)
    acc_lt, tok_lt = lifetime.get("accepted"), lifetime.get("draft_tokens")
    rate_lt = acc_lt / tok_lt if acc_lt is not None and tok_lt else None
    up = None if engine_up is None else engine_up >= 1.0
    not_evidence: list[str] = []

    pod_label = q.pod_labels[-1]
    if not labels.get(pod_label):
        not_evidence.append(f"series without a {pod_label} label would pool several pods into one row "
                            "(set evidence.prometheus.fleet.pod_labels)")
    if acc is None:
        not_evidence.append("no drafts series in the lookback")
    if model is None and stream:
        not_evidence.append(f"series without a {MODEL_LABEL} label: of unknown model, not shown to be this plan's "
                            "evidence")
    not_evidence += flags or []
    if a.conflicting:
        not_evidence.append(f"{a.conflicting} window(s) answered with two different values at one timestamp")
    if model is not None and ask.served_model_name is not None and model != ask.served_model_name:
        not_evidence.append(f"not this plan's evidence: model {model!r} is not the served model "
                            f"{ask.served_model_name!r}")
    # Plausibility: every window's L within [1, 1 + k]; the lookback's L and a together possible at k.
    found = None
    if a.eligible:
        found = (pl.acceptance(a.min_l, None, ask.k, where=pod) or pl.acceptance(a.max_l, None, ask.k, where=pod))
    d_lt = lifetime.get("drafts")
    if found is None and d_lt:
        l_lt = formulas.acceptance_length(acc_lt, d_lt) if acc_lt is not None else None
        found = pl.acceptance(l_lt, rate_lt, ask.k, method=ask.method, where=pod)
    return PodRow(pod=pod, labels=labels, model=model, windows=a.eligible, met=a.met, drafts=a.drafts,
                  below_slo_share=(a.eligible - a.met) / a.eligible if a.eligible and target is not None else None,
                  acceptance_length=pooled, min_acceptance_length=a.min_l if a.eligible else None,
                  acceptance_rate=rate_lt, restarts=lifetime.get("restarts"), engine_up=up, excluded=excluded,
                  not_evidence=tuple(not_evidence), implausible=None if found is None else found.reason,
                  restarts_unknown=not restarts_known and acc is not None)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one fleet is evaluated, back on after (only if it was on).

    Why: at 5,000 pods the two range answers decode into ~600,000 (time, value) tuples, each one a tracked
    allocation, so the collector ran hundreds of young-generation passes and several full ones over every
    live object while the answers were read — about a quarter of the verdict's CPU (measured: 1.03 -> 0.77 s over
    8 interleaved verdicts on one live 5,000-pod Prometheus at load 3.6-4.1, docs/scale.md). Nothing the
    evaluation builds is cyclic garbage: reference counting frees every answer as before (peak RSS unchanged,
    the answers are bounded by gate.evidence.prometheus' limits), and whatever cycles the rest of the process
    made are collected once it is back on. Two evaluations at once (the webhook): the first to end turns it
    back on; the other is then only slower, never wrong."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def evaluate(client: Client, src: PrometheusSource, ask: FleetAsk, source_name: str,
             clock: Callable[[], float] = time.perf_counter) -> FleetResult:
    """The per-pod table of facts, with the collector paused (`gc_paused`); EvidenceError from the client
    propagates (no answer)."""
    with gc_paused():
        return _evaluate(client, src, ask, source_name, clock)


def _evaluate(client: Client, src: PrometheusSource, ask: FleetAsk, source_name: str,
              clock: Callable[[], float]) -> FleetResult:
    t0 = clock()
    q, end, steps = plan_queries(src, ask)
    start = end - (steps - 1) * q.window_seconds
    grid = Grid(start, q.window_seconds, steps)
    # post: a window ending before now - lookback is not recent evidence
    first = fresh_from(grid, ask.now, ask.lookback_seconds) if ask.require_recent and ask.now is not None else 0
    path, note, res = "raw", None, None
    shared: dict[str, Answer] | None = None
    if ask.path != "raw":
        try:
            res, note = _run_recorded(client, q, ask, grid, first)
            path = "recorded"
        except Fallback as e:
            if ask.path == "recorded":
                raise BadAnswer(f"{source_name}: the recorded fleet facts are not this plan's: {e.reason}") from None
            note, shared = e.reason, e.answers
    if res is None:
        q, res = _run(client, q, grid, shared)
    answered = clock()
    labels = q.row_labels
    twice: dict[str, set[RowKey]] = {name: a.twice for name, a in res.items()
                                     if name != "series_per_row"}
    recorded_rows = res[recorded.WINDOWS].instant if path == "recorded" else {}
    drafts = res["drafts"].steps if path == "raw" else {}
    accepted = res["accepted"].steps if path == "raw" else {}
    resets = res["resets"].steps if path == "raw" else {}
    restarts = res["restarts"].instant
    lt = {name: res[name].instant for name in ("drafts_lookback", "accepted_lookback", "draft_tokens")}
    up = res["engine_up"].instant
    targets = res["targets"].instant if "targets" in res else {}

    stream_keys = set(drafts) | set(recorded_rows) | set(restarts) | set(lt["draft_tokens"])
    keys = set(stream_keys)
    pods_with_rows = {k[: len(q.pod_labels)] for k in keys}
    if selector(q.selector, drop=names.STREAM_LABELS) == q.selector:
        # engine_up matches the same pods only when the selector has no stream-label matchers (it drops them)
        keys |= {k + ("",) * (len(labels) - len(q.pod_labels)) for k in up if k not in pods_with_rows}
    if len(keys) > MAX_ROWS:
        raise BadAnswer(f"{source_name}: {len(keys):,} rows match {q.selector}, more than the {MAX_ROWS:,} one fleet "
                        "table holds (narrow the selector or split the fleet)")
    rows: list[PodRow] = []
    for key in sorted(keys):
        acc = None
        if key in recorded_rows:
            acc = _recorded_acc(key, res)
        elif key in drafts:
            rset = resets[key].present() if key in resets else set()
            acc = _windows(drafts[key], accepted.get(key), rset, ask.min_drafts, ask.slo.target_acceptance_length,
                           first)
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
    late = (pl.recency(end, ask.now, q.lookback_seconds, require_recent=ask.require_recent, where=source_name)
            if ask.now is not None else None)
    return FleetResult(source=source_name, selector=q.selector, window_seconds=q.window_seconds,
                       lookback_seconds=q.lookback_seconds, end=end, rows=tuple(rows), queries=len(res),
                       seconds=(done := clock()) - t0, not_recent=None if late is None else late.reason,
                       cost=FleetCost(answers_seconds=answered - t0, read_seconds=sum(a.seconds for a in res.values()),
                                      rows_seconds=done - answered), path=path, path_reason=note)


def _run_recorded(client: Client, q: FleetQueries, ask: FleetAsk, grid: Grid,
                  first: int) -> tuple[dict[str, Answer], str]:
    """The recorded facts' instant queries and the raw engine_up and targets at once, over the windows that are not
    stale; the lookback's drafts, accepted and draft tokens (L and a for plausibility) are sums of the recorded
    windows, answered under the raw instants' keys (the restarts stay raw: recorded.TOTALS says why). Fallback (gate.evidence.fleet.recorded) when the facts are not this plan's.
    Returns every answer by key and what was checked of the rule group."""
    facts = recorded.fact_matchers(q.window_seconds, ask.slo.target_acceptance_length, ask.min_drafts)
    fresh = grid.steps - first
    if fresh <= 0:
        raise Fallback("every window of the lookback ended before now - lookback")
    note = recorded.check_rules(client, q.window_seconds, facts)
    raw_totals = {raw for raw, _ in recorded.TOTALS.values()}
    asked = [*recorded.queries(q, facts, fresh * q.window_seconds),
             *(x for x in q.instants() if x.key not in raw_totals)]
    end = grid.start + (grid.steps - 1) * grid.step
    with ThreadPoolExecutor(max_workers=len(asked)) as pool:
        futures = [(x.key, pool.submit(_ask, client, x, grid.start, end, grid.step, reader(q, grid))) for x in asked]
        res = {key: f.result() for key, f in futures}
    try:
        recorded.coverage(res[recorded.WINDOWS].instant, res[recorded.WINDOWS].most_series, fresh)
    except Fallback as e:
        e.answers = res  # the raw path reuses the instant answers it shares (not the totals: those are facts)
        raise
    for key, (raw, _) in recorded.TOTALS.items():
        res[raw] = res.pop(key)
    return res, f"{note}; the lookback's drafts, accepted and draft tokens: sums of the recorded windows"


def _recorded_acc(key: RowKey, res: dict[str, Answer]) -> _Acc:
    """One row's sums from the recorded facts: windows counted by the backend, and the sparse counts (recorded only
    where true, so a row they do not answer has none): eligible = windows - not eligible - non-finite, met =
    eligible - below the target. A count that is not a whole non-negative number, or an eligible or met that comes
    out negative (the facts do not add up), is one more non-finite window (never evidence)."""
    acc = _Acc()

    def count(name: str) -> int:
        x = res[name].instant.get(key, 0.0)
        if math.isfinite(x) and x >= 0 and x == int(x):
            return int(x)
        acc.non_finite += 1
        return 0

    windows, not_eligible, below = count(recorded.WINDOWS), count("rec_not_eligible"), count("rec_below_target")
    non_finite = count("rec_non_finite")
    eligible = windows - not_eligible - non_finite
    met = eligible - below
    if acc.non_finite or eligible < 0 or met < 0:
        acc.non_finite += 0 if acc.non_finite else 1  # no count derived from a count not believed
        eligible = met = 0
    acc.non_finite += non_finite
    acc.eligible, acc.met, acc.not_eligible = eligible, met, not_eligible
    acc.drafts = res["rec_drafts"].instant.get(key, 0.0)
    acc.accepted = res["rec_accepted"].instant.get(key, 0.0)
    acc.min_l = res["rec_min_length"].instant.get(key, math.inf)
    acc.max_l = res["rec_max_length"].instant.get(key, -math.inf)
    return acc

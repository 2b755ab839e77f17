"""The fleet's fast paths read what the slow ones read (issue 26): typed decoding, the grid's fast path, the
gate's pooling of ranks and the pre-flight that picks it.

Answers come from real servers (tests/gate/evidence/api_answers/, captured from Prometheus 2.42 and
VictoriaMetrics 1.79, README there) or are built in the API's shape from them; each fast path is checked
against the generic one (`json.loads`, `on_grid`, the backend's `sum by`) on the same input.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from gate.checks.acceptance.fleet_rule import judge_fleet
from gate.evidence.fleet import answers
from gate.evidence.fleet import collect as fleet
from gate.evidence.fleet.grid import Grid, on_grid, on_steps
from gate.evidence.fleet.queries import FleetQueries
from gate.plan.model import SLO, PrometheusSource
from gate.status import Status

CAPTURES = Path(__file__).parent / "api_answers"
BACKENDS = ("prometheus", "victoriametrics")
END = 1796178180.0  # the captures' end; five 60 s windows
GRID = Grid(END - 240, 60, 5)


def _body(backend: str, kind: str) -> bytes:
    return (CAPTURES / f"{backend}-{kind}.json").read_bytes()


@pytest.mark.parametrize("backend", BACKENDS)
def test_typed_decoding_reads_the_real_answers_as_json_does(backend: str) -> None:
    body = _body(backend, "range")
    typed = answers.decode(body, "range")
    generic = json.loads(body)["data"]["result"]
    assert typed is not None and len(typed) == len(generic) == 2
    for t, g in zip(typed, generic, strict=True):
        assert isinstance(t, answers.MatrixSeries)
        assert t.metric == g["metric"] and t.metric["rank"] == "0"
        assert t.values == [(float(p[0]), float(p[1])) for p in g["values"]]
        assert on_steps(t.values, GRID).values == on_steps(g["values"], GRID).values == [float(p[1]) for p in g["values"]]
    inst = answers.decode(_body(backend, "instant"), "instant")
    assert inst is not None and all(isinstance(s, answers.VectorSample) for s in inst)
    assert [s.value[1] for s in inst if isinstance(s, answers.VectorSample)] == [
        float(s["value"][1]) for s in json.loads(_body(backend, "instant"))["data"]["result"]]
    pre = answers.decode(_body(backend, "max"), "instant")
    assert pre is not None and isinstance(pre[0], answers.VectorSample) and pre[0].metric == {}
    assert pre[0].value[1] == 1.0


@pytest.mark.parametrize("body", [
    b'{"status":"error","errorType":"bad_data","error":"parse error"}',
    b'{"status":"success","data":{"resultType":"vector","result":[]}}',  # a vector where a matrix was asked
    b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"+Inf"]]}]}}',
    b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":1},"values":[]}]}}',
    b'{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"2"]]}]}}',
    b'not json',
])
def test_what_the_typed_decoder_does_not_take_goes_the_generic_way(body: bytes) -> None:
    """None: the caller reads it with json.loads, where the old rules apply (error, +Inf, no metric ...)."""
    assert answers.decode(body, "range") is None


POINTS: dict[str, list[Any]] = {
    "on the grid": [[GRID.start + 60 * i, str(10 + i)] for i in range(5)],
    "a run from the middle": [[GRID.start + 60 * i, str(i)] for i in range(2, 5)],
    "typed pairs": [(GRID.start + 60 * i, 10.0 + i) for i in range(5)],
    "one off the grid": [[GRID.start, "1"], [GRID.start + 30, "2"], [GRID.start + 120, "3"]],
    "outside the range": [[GRID.start - 86_400, "1"], [GRID.start, "2"]],
    "repeated": [[GRID.start, "1"], [GRID.start, "1"], [GRID.start + 60, "2"]],
    "conflicting": [[GRID.start, "1"], [GRID.start, "5"]],
    "out of order": [[GRID.start + 60, "2"], [GRID.start, "1"]],
    "malformed": [[GRID.start], "x", None, [GRID.start + 60, "2"]],
    "not numbers": [[GRID.start, "NaN"], [GRID.start + 60, "abc"], [GRID.start + 120, "+Inf"]],
    "near a step": [[GRID.start + 0.0004, "1"]],
    "more points than steps": [[GRID.start + 60 * (i % 5), "1"] for i in range(7)],
}


@pytest.mark.parametrize("case", POINTS)
def test_on_steps_applies_on_grids_rules(case: str) -> None:
    points = POINTS[case]
    fast, slow = on_steps(points, GRID), on_grid(points, GRID)
    assert (fast.outside, fast.repeated, fast.conflicting, fast.malformed) == (
        slow.outside, slow.repeated, slow.conflicting, slow.malformed)
    expected: list[float | None] = [None] * GRID.steps
    for i, v in slow.values.items():
        try:
            expected[i] = float(v)
        except (TypeError, ValueError):
            expected[i] = math.nan
    assert [None if v is None else ("nan" if math.isnan(v) else v) for v in fast.values] == [
        None if v is None else ("nan" if math.isnan(v) else v) for v in expected]


def _series(pod: str, rank: str, values: list[Any]) -> dict[str, Any]:
    return {"metric": {"namespace": "llm", "pod": pod, "model": "m", "rank": rank, "engine": "vllm"}, "values": values}


def test_the_gate_pools_a_pods_ranks_as_sum_by_does() -> None:
    labels = ("namespace", "pod", "model")
    r0 = [[GRID.start + 60 * i, "100"] for i in range(5)]
    r1 = [[GRID.start + 60 * i, "50"] for i in range(1, 5)] + [[GRID.start + 60, "50"]]  # no first window; one repeat
    twice: set[tuple[str, ...]] = set()
    rows = fleet._steps([_series("a", "0", r0), _series("a", "1", r1), _series("b", "0", r0)], labels, GRID, twice,
                        pooled=False)
    assert rows[("llm", "a", "m")].values == [100.0, 150.0, 150.0, 150.0, 150.0]  # a step sums what is there
    assert rows[("llm", "a", "m")].repeated == 1 and rows[("llm", "b", "m")].values == [100.0] * 5
    assert twice == set()
    # the same series answered twice is not believed, pooled or not; pooled, any second series of a row is not
    fleet._steps([_series("a", "0", r0), _series("a", "0", r0)], labels, GRID, twice, pooled=False)
    assert twice == {("llm", "a", "m")}
    twice.clear()
    fleet._steps([_series("a", "0", r0), _series("a", "1", r0)], labels, GRID, twice, pooled=True)
    assert twice == {("llm", "a", "m")}


class RankedFleet:
    """Two pods, pod a with two DP ranks (L 3.0 and 2.0 at 100 drafts each: pooled 2.5), pod b one (L 1.5); the
    answers in the API's shape, pooled by row when the query asks `sum by` (as a backend does)."""

    def __init__(self, most: str) -> None:
        self.most = most
        self.sent: list[str] = []

    def query(self, path: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        promql = params["query"]
        self.sent.append(promql)
        per = {("a", "0"): (100, 200), ("a", "1"): (100, 100), ("b", "0"): (100, 50)}  # drafts, accepted a window
        row = {p: {"namespace": "llm", "pod": p, "model": "m"} for p in ("a", "b")}
        if promql.startswith("max(count by"):
            return [{"metric": {}, "value": [END, self.most]}]
        if promql.startswith("min by"):  # engine_up
            return [{"metric": {"namespace": "llm", "pod": p}, "value": [END, "1"]} for p in ("a", "b")]
        if promql.startswith("count by"):  # scrape targets behind a row
            return [{"metric": row[p], "value": [END, "1"]} for p in ("a", "b")]
        if "restarts" in promql:
            return [] if "> 0" in promql else [{"metric": row[p], "value": [END, "0"]} for p in ("a", "b")]
        which, scale = ((0, 1) if "spec_drafts_total" in promql else (1, 1) if "accepted" in promql else (0, 3))
        if path.endswith("query_range"):
            series = [_series(p, r, [[GRID.start + 60 * i, str(v[which])] for i in range(5)]) for (p, r), v in per.items()]
            if not promql.startswith("sum by"):
                return series
            pooled: dict[str, list[float]] = {}
            for s in series:  # what the backend's sum by does
                vs = pooled.setdefault(s["metric"]["pod"], [0.0] * 5)
                for i, (_, v) in enumerate(s["values"]):
                    vs[i] += float(v)
            return [{"metric": row[p], "values": [[GRID.start + 60 * i, str(v)] for i, v in enumerate(vs)]}
                    for p, vs in pooled.items()]
        totals: dict[str, float] = {}
        for (p, _), v in per.items():  # the lookback's increase: five windows, draft tokens = 3 x drafts
            totals[p] = totals.get(p, 0.0) + 5 * v[which] * scale
        return [{"metric": row[p], "value": [END, str(t)]} for p, t in totals.items()]


@pytest.mark.parametrize("most", ["1", "2"])
def test_the_pre_flight_picks_who_pools_and_the_rows_are_the_same(most: str) -> None:
    """'2': a row has two series, the range queries ask `sum by`; '1' (a rank the pre-flight did not see): the
    series as they are, pooled by the gate. Same rows either way."""
    client = RankedFleet(most)
    src = PrometheusSource(end=END, fleet={"pod_labels": ["namespace", "pod"], "group_by": ["model"]})
    ask = fleet.FleetAsk(slo=SLO(target_acceptance_length=2.0, window_seconds=60, lookback_seconds=300, min_windows=3,
                                 required_fraction=0.9), window_seconds=60, lookback_seconds=300, min_drafts=1,
                         end=END, k=3, method="ngram")
    result = fleet.evaluate(client, src, ask, "stub")
    judged = judge_fleet(result, ask.slo, src.fleet, require_engine_up=True)
    ranges = [p for p in client.sent if "[60s]" in p]
    assert len(ranges) == 3 and all(p.startswith("sum by") == (most == "2") for p in ranges)
    assert result.queries == 10 and client.sent[0].startswith("max(count by")
    a, b = (next(r for r in judged.rows if r.pod == f"llm/{p}") for p in ("a", "b"))
    assert (a.facts.windows, a.facts.acceptance_length, a.status) == (5, pytest.approx(2.5), Status.PASS)
    assert (b.facts.windows, b.facts.acceptance_length, b.status) == (5, pytest.approx(1.5), Status.FAIL)


def test_the_query_forms() -> None:
    q = FleetQueries('{namespace="llm"}', ("namespace", "pod"), ("model",), 60, 3600)
    assert q.series_per_row().promql == ('max(count by (namespace, pod, model) '
                                         '(specgate_spec_drafts_total{namespace="llm"}))')
    assert [x.promql for x in q.unpooled().ranges()] == [
        'increase(specgate_spec_drafts_total{namespace="llm"}[60s])',
        'increase(specgate_spec_accepted_tokens_total{namespace="llm"}[60s])',
        'increase(specgate_engine_restarts_total{namespace="llm"}[60s]) > 0']
    assert q.unpooled().instants() == q.instants() and q.all()[:3] == q.ranges()

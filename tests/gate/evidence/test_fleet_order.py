"""The order the fleet's queries are sent in (gate.evidence.fleet.collect._run): the pre-flight and the six
instant queries at once, the range queries only after the pre-flight answered, in the form it picked.

Why it matters: the pre-flight alone used to cost its whole round trip before anything else was sent
(0.04–0.2 s at 5,000 pods, more on a loaded machine: docs/scale.md); the instants do not depend on it, the
range queries do (`sum by` or the series as they are). The stub is test_fleet_answers' synthetic fleet; the
pre-flight's answer is held until every instant query has been sent, which can only happen when they are
sent beside it (a sequential order would wait out the 10 s guard and fail).
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from gate.checks.acceptance.fleet_rule import FleetVerdict, judge_fleet
from gate.evidence.fleet import collect as fleet
from gate.evidence.fleet.queries import FleetQueries
from gate.plan.model import PrometheusSource
from gate.status import Status
from tests.gate.evidence.test_fleet_answers import LOOKBACK, MODEL, NOW, SLO_, Fleet, W

Series = list[dict[str, Any]]
GUARD_SECONDS = 10.0  # only waited out when the order is wrong


class Ordered(Fleet):
    """Fleet's answers; the pre-flight answers `per_row` only once every instant query has been sent."""

    per_row = "1"

    def client(self, q: FleetQueries) -> Any:
        pre = q.series_per_row()
        keys = {x.promql: x.key for x in (*q.all(), *q.unpooled().all(), pre)}
        instants = {x.key for x in q.instants()}
        self.forms: dict[str, str] = {}
        self.instants_beside: bool | None = None
        self.ranges_after: list[bool] = []
        all_instants = threading.Event()
        answered = threading.Event()
        lock = threading.Lock()
        outer = self

        class Stub:
            def query(self, path: str, params: dict[str, Any]) -> Series:
                key = keys[params["query"]]
                with lock:
                    outer.sent.append(key)
                    if instants <= set(outer.sent):
                        all_instants.set()
                if key == "series_per_row":
                    outer.instants_beside = all_instants.wait(GUARD_SECONDS)
                    answered.set()
                    return [{"metric": {}, "value": [outer.end, outer.per_row]}]
                if path.endswith("query_range"):
                    outer.ranges_after.append(answered.is_set())
                    outer.forms[key] = "pooled" if params["query"].startswith("sum by") else "series"
                return outer.answer(key, q)

        return Stub()


def _judge(f: Fleet) -> FleetVerdict:
    src = PrometheusSource(end=f.end, fleet={"pod_labels": list(f.pod_labels), "group_by": list(f.group_by)})
    ask = fleet.FleetAsk(slo=SLO_, window_seconds=W, lookback_seconds=LOOKBACK, min_drafts=1, end=f.end, k=3,
                         method="ngram", now=NOW, served_model_name=MODEL)
    q, _, _ = fleet.plan_queries(src, ask)
    return judge_fleet(fleet.evaluate(f.client(q), src, ask, "stub"), SLO_, src.fleet, require_engine_up=True)


@pytest.mark.parametrize(("per_row", "form"), [("1", "series"), ("2", "pooled")])
def test_instants_beside_the_preflight_ranges_after_it(per_row: str, form: str) -> None:
    f = Ordered(pods=3)
    f.per_row = per_row
    result = _judge(f)
    assert f.instants_beside is True  # all six instants were sent before the pre-flight answered
    assert f.ranges_after == [True, True, True]  # drafts, accepted, resets: each sent after it answered
    assert f.forms == {"drafts": form, "accepted": form, "resets": form}  # the form it picked
    assert sorted(f.sent) == sorted(["series_per_row", "drafts", "accepted", "resets", "restarts", "drafts_lookback",
                                     "accepted_lookback", "draft_tokens", "engine_up", "targets"])
    assert result.facts.queries == 10 and result.status is Status.PASS  # the same answers judged: every pod at L 3.0


class Watched(Fleet):
    """Fleet's answers, noting whether the cyclic collector was on while each query was answered."""

    def client(self, q: FleetQueries) -> Any:
        inner = super().client(q)
        self.collector: list[bool] = []
        outer = self

        class Stub:
            def query(self, path: str, params: dict[str, Any]) -> Series:
                outer.collector.append(gc.isenabled())
                return inner.query(path, params)

        return Stub()


def test_the_collector_is_paused_while_a_fleet_is_evaluated_and_restored_after() -> None:
    """On during the answers it was not (all ten saw it off); on again after; left off when it was off before."""
    assert gc.isenabled()
    f = Watched(pods=3)
    assert _judge(f).status is Status.PASS
    assert f.collector == [False] * 10 and gc.isenabled()
    gc.disable()
    try:
        _judge(Watched(pods=3))
        assert not gc.isenabled()  # not turned on by the evaluation when the caller had it off
    finally:
        gc.enable()


def test_the_collector_comes_back_when_the_evaluation_raises() -> None:
    def broken(key: str, series: Series) -> Series:
        raise RuntimeError("backend gone")

    with pytest.raises(RuntimeError, match="backend gone"):
        _judge(Watched(pods=3, edit=broken))
    assert gc.isenabled()

"""The recorded path's checks (gate.evidence.fleet.recorded): when the per-pod window facts are not the plan's, the
fleet falls back to the raw range queries with the reason. The rules API answers are shaped like Prometheus 2.42's
`/api/v1/rules?type=record` (captured from the live test's server, tests/observability/test_fleet_recorded_live.py:
`interval` in seconds, each rule's `labels`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.evidence.base import Unreachable
from gate.evidence.fleet.queries import FleetQueries
from gate.evidence.fleet.recorded import DRAFTS, Fallback, check_rules, coverage, fact_matchers, queries

FACTS = fact_matchers(60, 2.0, 1)
LABELS = {"slo_window_seconds": "60", "slo_target": "2", "slo_min_drafts": "1"}


class Rules:
    """A client whose rules API answers `doc` (or raises `error`)."""

    def __init__(self, doc: Any, status: int = 200, error: Exception | None = None) -> None:
        self.body = bytearray(json.dumps(doc).encode())
        self.status, self.error = status, error

    def fetch(self, path: str, params: dict[str, Any]) -> tuple[int, bytearray]:
        assert path == "/api/v1/rules" and params == {"type": "record"}
        if self.error is not None:
            raise self.error
        return self.status, self.body


def doc(interval: float, labels: dict[str, str] = LABELS, **extra: Any) -> dict[str, Any]:
    rule = {"name": DRAFTS, "query": "sum without (rank) (increase(x[60s]))", "labels": labels, "health": "ok",
            "type": "recording"}
    return {"status": "success", "data": {"groups": [{"name": "specgate.fleet-facts", "file": "r.yaml",
                                                      "interval": interval, "rules": [rule]}]}, **extra}


def test_the_group_at_the_plans_window_is_checked() -> None:
    assert "evaluated every 60s" in check_rules(Rules(doc(60)), 60, FACTS)


def test_an_interval_other_than_the_window_falls_back_with_the_reason() -> None:
    with pytest.raises(Fallback, match=r"evaluated every 30s, not every window of the plan \(60s\)"):
        check_rules(Rules(doc(30)), 60, FACTS)


def test_a_group_recording_another_target_is_not_this_plans() -> None:
    other = dict(LABELS, slo_target="2.5")
    assert "lists no group" in check_rules(Rules(doc(30, other)), 60, FACTS)  # its 30 s is not ours to refuse


def test_a_partial_rules_answer_is_refused() -> None:
    with pytest.raises(Fallback, match="warning|partial"):
        check_rules(Rules(doc(60, warnings=["store down"])), 60, FACTS)


@pytest.mark.parametrize("client", [Rules({"status": "error"}, status=400),
                                    Rules({}, error=Unreachable("Prometheus x did not answer within 1s")), object()])
def test_no_rules_api_leaves_the_samples_per_row_to_check(client: object) -> None:
    assert "checked by the samples per row" in check_rules(client, 60, FACTS)


def test_coverage() -> None:
    coverage({("a",): 60.0, ("b",): 12.0}, 1.0, 60)  # a pod that started later is fine: another covers it all
    with pytest.raises(Fallback, match="no recorded facts"):
        coverage({}, 0.0, 60)
    with pytest.raises(Fallback, match="2 recorded series behind one row"):
        coverage({("a",): 60.0}, 2.0, 60)
    with pytest.raises(Fallback, match="more often than once a window"):
        coverage({("a",): 120.0}, 1.0, 60)
    with pytest.raises(Fallback, match="cover at most 30 of the lookback's 60 windows"):
        coverage({("a",): 30.0}, 1.0, 60)


def test_facts_are_asked_for_the_plans_numbers_and_never_by_rank() -> None:
    assert FACTS == 'slo_window_seconds="60",slo_target="2",slo_min_drafts="1"'
    with pytest.raises(Fallback, match="no acceptance-length target"):
        fact_matchers(60, None, 1)
    q = FleetQueries('{namespace="llm"}', ("namespace", "pod"), ("model",), 60, 3600)
    got = queries(q, FACTS, 3600)
    assert all(x.kind == "instant" and "[3599999ms]" in x.promql and 'slo_target="2"' in x.promql for x in got)
    with pytest.raises(Fallback, match="names rank"):
        queries(FleetQueries('{rank="0"}', ("pod",), (), 60, 3600), FACTS, 3600)


def test_a_fallback_asks_the_shared_instant_queries_once() -> None:
    """No facts at all (an empty backend): the raw path runs, says why, and reuses the instants already answered."""
    from gate.evidence.fleet.collect import FleetAsk, evaluate
    from gate.plan.model import SLO, PrometheusSource

    asked: list[str] = []

    class Empty:
        def query(self, path: str, params: dict[str, Any]) -> list[Any]:
            asked.append(params["query"])
            return []

    slo = SLO(target_acceptance_length=2.0, window_seconds=60, lookback_seconds=600)
    ask = FleetAsk(slo=slo, window_seconds=60, lookback_seconds=600, min_drafts=1, end=1_760_000_040, path="auto")
    got = evaluate(Empty(), PrometheusSource(), ask, "Prometheus test")
    assert got.path == "raw" and "no recorded facts carry" in (got.path_reason or "")
    assert sum("pod:specgate_fleet_window_" in a for a in asked) == 11  # eight facts, three lookback totals
    raw = [a for a in asked if "pod:specgate_fleet_window_" not in a]
    # six instants once (restarts, engine_up and targets reused; the raw totals asked by the raw path itself, never
    # taken from the facts that were refused), the pre-flight, three ranges
    assert len(raw) == len(set(raw)) == 10


def test_the_recorded_path_takes_the_lookback_totals_from_the_facts() -> None:
    """Facts covering the lookback: L and a over the lookback are the sums of the recorded windows, and no raw drafts,
    accepted or draft-tokens counter is read over the lookback (restarts, engine_up and the targets are raw)."""
    from gate.evidence.fleet.collect import evaluate
    from gate.plan.model import PrometheusSource

    asked: list[str] = []
    got = evaluate(Facts(HEALTHY, asked), PrometheusSource(), RECORDED_ASK, "Prometheus test")
    assert got.path == "recorded" and "sums of the recorded windows" in (got.path_reason or "")
    (pod,) = got.rows
    assert (pod.windows, pod.met, pod.restarts, pod.acceptance_rate) == (10, 10, 1.0, 0.5)
    assert not pod.restarts_unknown and pod.implausible is None
    raw = [a for a in asked if "pod:specgate_fleet_window_" not in a]
    assert len(raw) == 3 and sum("[600s]" in a for a in raw) == 1  # restarts over the lookback, engine_up, targets
    assert "specgate_engine_restarts_total" in next(a for a in raw if "[600s]" in a)
    assert len(asked) == 14  # 11 recorded


def test_two_recorded_series_behind_one_row_fall_back() -> None:
    """The windows are asked per recorded series and counted per row by the gate (no pre-flight): a row behind two
    series (here two instances of one pod, each covering the lookback) is refused, not added up."""
    from gate.evidence.base import BadAnswer
    from gate.evidence.fleet.collect import FleetAsk, evaluate
    from gate.plan.model import SLO, PrometheusSource

    class Two:
        def query(self, path: str, params: dict[str, Any]) -> list[Any]:
            if "count_over_time" in params["query"]:
                return [{"metric": {"namespace": "llm", "pod": "p", "model": "m", "instance": i}, "value": [0, "10"]}
                        for i in ("a", "b")]
            return []

    slo = SLO(target_acceptance_length=2.0, window_seconds=60, lookback_seconds=600)
    ask = FleetAsk(slo=slo, window_seconds=60, lookback_seconds=600, min_drafts=1, end=1_760_000_040, path="auto")
    got = evaluate(Two(), PrometheusSource(), ask, "Prometheus test")
    assert got.path == "raw" and "2 recorded series behind one row" in (got.path_reason or "")
    with pytest.raises(BadAnswer, match="2 recorded series behind one row"):
        evaluate(Two(), PrometheusSource(), FleetAsk(**{**ask.__dict__, "path": "recorded"}), "Prometheus test")


ROW = {"namespace": "llm", "pod": "p", "model": "m"}
# A healthy pod's facts over ten windows: every window eligible and met, so the sparse counts (not_eligible,
# below_target, non_finite: recorded only where true) have no series and the backend answers no row for them.
HEALTHY: dict[str, float | str] = {"eligible_drafts:increase": 1000, "eligible_accepted_tokens:increase": 1500,
                                   "acceptance_length:quotient": 2.5, "drafts:increase": 1000,
                                   "accepted_tokens:increase": 1500, "draft_tokens:increase": 3000}


class Facts:
    """A backend holding one pod's recorded facts over ten windows (answers shaped as Prometheus' instant vectors),
    `by_fact` the value of each fact's query; a fact not in it has no series (no answer row)."""

    def __init__(self, by_fact: dict[str, float | str], asked: list[str] | None = None) -> None:
        self.by_fact, self.asked = by_fact, asked if asked is not None else []

    def query(self, path: str, params: dict[str, Any]) -> list[Any]:
        promql = params["query"]
        self.asked.append(promql)
        if "count_over_time" in promql:
            return [{"metric": ROW, "value": [0, "10"]}]
        if "increase(specgate_engine_restarts_total" in promql:
            return [{"metric": ROW, "value": [0, "1"]}]
        for fact, value in self.by_fact.items():
            if f"pod:specgate_fleet_window_{fact}{{" in promql:
                return [{"metric": ROW, "value": [0, str(value)]}]
        return []


def _recorded_ask() -> Any:
    from gate.evidence.fleet.collect import FleetAsk
    from gate.plan.model import SLO

    slo = SLO(target_acceptance_length=2.0, window_seconds=60, lookback_seconds=600)
    return FleetAsk(slo=slo, window_seconds=60, lookback_seconds=600, min_drafts=1, end=1_760_000_040, k=3,
                    path="recorded")


RECORDED_ASK = _recorded_ask()


@pytest.mark.parametrize(("sparse", "windows", "met", "non_finite", "not_eligible"), [
    ({}, 10, 10, 0, 0),  # healthy: no sparse row is none of them
    ({"not_eligible:bool": 2, "below_target:bool": 3}, 8, 5, 0, 2),
    ({"non_finite:bool": 1, "below_target:bool": 9}, 9, 0, 1, 0),
    ({"not_eligible:bool": 4, "non_finite:bool": 7}, 0, 0, 8, 4),  # 10 - 4 - 7 < 0: the facts do not add up
    ({"below_target:bool": 11}, 0, 0, 1, 0),  # more below the target than eligible: met would be negative
    ({"not_eligible:bool": 1.5}, 0, 0, 1, 0),  # not a whole count: nothing derived from it
    ({"below_target:bool": -1}, 0, 0, 1, 0),
    ({"not_eligible:bool": "NaN"}, 0, 0, 1, 0),
])
def test_eligible_and_met_are_derived_from_the_sparse_counts(sparse: dict[str, float | str], windows: int, met: int,
                                                             non_finite: int, not_eligible: int) -> None:
    """eligible = windows - not eligible - non-finite, met = eligible - below; a count that is not whole and
    non-negative, or a derived eligible or met below 0, is a non-finite window: the row is never evidence."""
    from gate.evidence.fleet.collect import evaluate
    from gate.plan.model import PrometheusSource

    (pod,) = evaluate(Facts({**HEALTHY, **sparse}), PrometheusSource(), RECORDED_ASK, "Prometheus test").rows
    assert (pod.windows, pod.met) == (windows, met)
    assert pod.excluded["non_finite"] == non_finite
    assert pod.excluded.get("not_eligible", 0) == not_eligible

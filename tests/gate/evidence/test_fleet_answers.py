"""Fleet answers checked, not believed (issue 21 item 3): each class of the attacks, on a stub backend.

The stub answers every query of `FleetQueries.all()` from a synthetic fleet (every pod L = 3.0 at k = 3 in
every 60 s window, target 2.0), so a control passes and each case changes one thing: a window repeated at
one timestamp, windows outside the query's range, a post pass on old windows, rows without a model, two
series for one row, more pods than expected, pod labels that pool pods, more rows than a table holds —
and a 10,000-pod fleet at the plan defaults, judged and not refused. The stub's table is judged as the
acceptance line judges it (gate.checks.acceptance.fleet_rule, the engine up as in post).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from gate.checks.acceptance.fleet_rule import FleetVerdict, PodVerdict, judge_fleet
from gate.evidence.base import BadAnswer
from gate.evidence.fleet import collect as fleet
from gate.evidence.fleet.queries import FleetQueries
from gate.plan.model import SLO, PrometheusSource
from gate.status import Status

W = 60
NOW = 1_760_000_040.0  # a multiple of 60, after 2024 (no evidence predates it)
LOOKBACK = 600
DAY = 86_400.0
MODEL = "m"
SLO_ = SLO(target_acceptance_length=2.0, window_seconds=W, lookback_seconds=LOOKBACK, min_windows=3,
           required_fraction=0.9)

Series = list[dict[str, Any]]
Edit = Callable[[str, Series], Series]


@dataclass
class Fleet:
    """A synthetic fleet's answers; `edit(key, series)` changes one query's answer."""

    pods: int = 3
    end: float = NOW
    pod_labels: tuple[str, ...] = ("namespace", "pod")
    group_by: tuple[str, ...] = ("model",)
    targets_per_row: int = 1
    lookback: int = LOOKBACK
    edit: Edit = field(default=lambda key, series: series)
    sent: list[str] = field(default_factory=list)

    def grid(self) -> list[float]:
        steps = self.lookback // W
        return [self.end - W * i for i in range(steps - 1, -1, -1)]

    def metric(self, i: int, labels: tuple[str, ...]) -> dict[str, str]:
        full = {"namespace": "llm", "pod": f"vllm-{i:05d}", "model": MODEL, "instance": f"10.0.0.{i}:9400"}
        return {k: full[k] for k in labels if k in full}

    def answer(self, key: str, q: FleetQueries) -> Series:
        rows = q.row_labels
        grid = self.grid()
        n = len(grid)
        per_row: dict[str, Any] = {
            "drafts": [[t, "100"] for t in grid], "accepted": [[t, "200"] for t in grid],
            "restarts": [self.end, "0"], "drafts_lookback": [self.end, str(100 * n)],
            "accepted_lookback": [self.end, str(200 * n)], "draft_tokens": [self.end, str(300 * n)],
            "engine_up": [self.end, "1"], "targets": [self.end, str(self.targets_per_row)]}
        if key == "resets":
            return []
        if key == "series_per_row":  # the pre-flight: one series behind every row (the range queries unpooled)
            return [{"metric": {}, "value": [self.end, "1"]}]
        labels = q.pod_labels if key == "engine_up" else rows
        seen: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
        for i in range(self.pods):
            m = self.metric(i, labels)
            seen.setdefault(tuple(sorted(m.items())), {"metric": m})
        out = []
        for s in seen.values():
            point = per_row[key]
            out.append({**s, ("values" if key in ("drafts", "accepted") else "value"): point})
        return self.edit(key, out)

    def client(self, q: FleetQueries) -> Any:
        pre = q.series_per_row()
        keys = {x.promql: x.key for x in (*q.all(), *q.unpooled().all(), pre)}
        outer = self

        class Stub:
            def query(self, path: str, params: dict[str, Any]) -> Series:
                key = keys[params["query"]]
                outer.sent.append(key)
                return outer.answer(key, q)

        return Stub()

    def judge(self, require_recent: bool = True, now: float = NOW, **rule: Any) -> FleetVerdict:
        src = PrometheusSource(end=self.end, fleet={"pod_labels": list(self.pod_labels),
                                                    "group_by": list(self.group_by), **rule})
        ask = fleet.FleetAsk(slo=SLO_, window_seconds=W, lookback_seconds=LOOKBACK, min_drafts=1, end=self.end, k=3,
                             method="ngram", now=now, served_model_name=MODEL, require_recent=require_recent)
        q, _, _ = fleet.plan_queries(src, ask)
        return judge_fleet(fleet.evaluate(self.client(q), src, ask, "stub"), SLO_, src.fleet, require_engine_up=True)


def _only(pod: int, change: Callable[[dict[str, Any]], None], keys: tuple[str, ...] = ("drafts", "accepted")) -> Edit:
    """An edit applying `change` to pod `pod`'s series in the answers of `keys`."""
    def edit(key: str, series: Series) -> Series:
        if key in keys:
            for s in series:
                if s["metric"].get("pod") == f"vllm-{pod:05d}":
                    change(s)
        return series
    return edit


def _row(result: FleetVerdict, pod: int) -> PodVerdict:
    return next(r for r in result.rows if r.pod == f"llm/vllm-{pod:05d}")


def test_the_control_passes() -> None:
    result = Fleet().judge()
    assert result.status is Status.PASS, result.reason
    assert all(r.facts.windows == LOOKBACK // W and r.status is Status.PASS for r in result.rows)


@pytest.mark.parametrize("copies", [4, 25])
def test_a_window_repeated_at_one_timestamp_counts_once(copies: int) -> None:
    def one_window(s: dict[str, Any]) -> None:
        s["values"] = [s["values"][-1]] * copies

    result = Fleet(edit=_only(1, one_window)).judge()
    row = _row(result, 1)
    assert (row.facts.windows, row.facts.excluded["repeated"], row.status) == (1, copies - 1, Status.INCONCLUSIVE)
    assert "fewer than min_windows 3" in row.reason and result.status is not Status.PASS


def test_two_values_at_one_timestamp_are_not_believed() -> None:
    def twice(s: dict[str, Any]) -> None:
        t = s["values"][-1][0]
        s["values"] = s["values"] + [[t, "1"]]

    row = _row(Fleet(edit=_only(2, twice)).judge(), 2)
    assert row.status is Status.INCONCLUSIVE and "two different values at one timestamp" in row.reason


@pytest.mark.parametrize("shift", [-10 * DAY, -3 * DAY - 7, 30.0, 5 * DAY])
def test_points_outside_the_query_grid_are_no_windows(shift: float) -> None:
    """Points from days before the range (or after it, or between its steps) are not the query's windows."""
    def moved(s: dict[str, Any]) -> None:
        s["values"] = [[t + shift, v] for t, v in s["values"]]

    row = _row(Fleet(edit=_only(0, moved)).judge(require_recent=False), 0)
    assert row.facts.windows == 0 and row.facts.excluded["outside_range"] == LOOKBACK // W
    assert row.status is Status.INCONCLUSIVE


@pytest.mark.parametrize("age", [30 * DAY, 2 * LOOKBACK])
def test_a_post_pass_needs_windows_that_ended_within_the_lookback(age: float) -> None:
    old = Fleet(end=NOW - age)
    post = old.judge(require_recent=True)
    assert post.status is Status.INCONCLUSIVE and "outside lookback_seconds" in post.reason
    assert all(r.windows == 0 and r.excluded["stale"] == LOOKBACK // W for r in post.facts.rows)
    # pre: history is what a pre-rollout check reads (only a future end is refused there)
    assert Fleet(end=NOW - age).judge(require_recent=False).status is Status.PASS


def test_windows_older_than_the_lookback_are_stale_in_post() -> None:
    """The query ends 5 windows ago: of its 10 windows (ending now - 14 W .. now - 5 W), the 4 that ended more than
    the lookback (10 W) before now are stale; the one ending exactly 10 W ago still counts."""
    result = Fleet(end=NOW - 5 * W).judge(require_recent=True)
    assert all((r.windows, r.excluded["stale"]) == (6, 4) for r in result.facts.rows)
    assert result.status is Status.PASS  # 6 recent windows ≥ min_windows 3


@pytest.mark.parametrize("group_by", [(), ("model",), ("drafter_revision",)])
def test_a_row_without_the_model_label_is_of_unknown_model(group_by: tuple[str, ...]) -> None:
    def no_model(key: str, series: Series) -> Series:
        for s in series:
            if s["metric"].get("pod") == "vllm-00001":
                s["metric"].pop("model", None)
        return series

    f = Fleet(group_by=group_by, edit=no_model)
    result = f.judge()
    row = _row(result, 1)
    assert row.facts.model is None and row.status is Status.INCONCLUSIVE and "of unknown model" in row.reason
    assert all("model" in x.promql for x in fleet.plan_queries(
        PrometheusSource(fleet={"group_by": list(group_by)}), fleet.FleetAsk(SLO_, W, LOOKBACK, 1, NOW))[0].all()
               if x.key != "engine_up")
    assert result.status is Status.INCONCLUSIVE
    assert Fleet(group_by=group_by).judge().status is Status.PASS  # the control: every row has its model


@pytest.mark.parametrize("key", ["drafts", "accepted", "drafts_lookback", "restarts", "engine_up"])
def test_two_series_for_one_row_are_not_believed(key: str) -> None:
    """A backend answers one series per label set: a second one (last-wins before) makes the row inconclusive."""
    def doubled(k: str, series: Series) -> Series:
        if k != key:
            return series
        first = next(s for s in series if s["metric"].get("pod") == "vllm-00002")
        return [{"metric": dict(first["metric"]), **{n: v for n, v in first.items() if n != "metric"}}, *series]

    result = Fleet(edit=doubled).judge()
    row = _row(result, 2)
    assert row.status is Status.INCONCLUSIVE and f"answered twice in the {key} query" in row.reason
    assert result.status is Status.INCONCLUSIVE and "vllm-00002" in result.named()


@pytest.mark.parametrize(("pods", "expected"), [(4, 1), (12, 10)])
def test_more_pods_than_expected_is_inconclusive_naming_them(pods: int, expected: int) -> None:
    result = Fleet(pods=pods).judge(expected_pods=expected)
    assert result.status is Status.INCONCLUSIVE
    assert f"{pods} pods answered, more than fleet.expected_pods {expected}" in result.reason
    assert "llm/vllm-00000" in result.reason
    assert Fleet(pods=pods).judge(expected_pods=pods).status is Status.PASS  # the control


@pytest.mark.parametrize("pod_labels", [("namespace",), ("model",)])
def test_pod_labels_that_pool_pods_into_one_row(pod_labels: tuple[str, ...]) -> None:
    """`pod_labels: [namespace]`: the four pods sum into one row; the targets count behind it says so."""
    f = Fleet(pods=4, pod_labels=pod_labels, targets_per_row=4)
    result = f.judge()
    assert len(result.rows) == 1 and result.status is Status.INCONCLUSIVE
    assert "4 scrape targets (pod/instance) behind one row" in result.rows[0].reason
    assert "targets" in f.sent


def test_one_target_per_row_is_the_control() -> None:
    f = Fleet(pod_labels=("instance",), targets_per_row=1)
    result = f.judge()
    assert result.status is Status.PASS and "targets" in f.sent


def test_more_rows_than_a_table_holds_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet, "MAX_ROWS", 5)
    with pytest.raises(BadAnswer, match="6 rows match .* more than the 5 one fleet table holds"):
        Fleet(pods=6).judge()
    assert Fleet(pods=5).judge().status is Status.PASS


def test_a_ten_thousand_pod_fleet_at_the_defaults_is_judged() -> None:
    """The scale issue's fleet: 10,000 pods, 1 h in 60 s windows (the plan defaults) — judged, not refused."""
    f = Fleet(pods=10_000, lookback=3600)
    t0 = time.perf_counter()
    src = PrometheusSource(end=NOW)
    ask = fleet.FleetAsk(slo=SLO(target_acceptance_length=2.0), window_seconds=60, lookback_seconds=3600,
                         min_drafts=1, end=NOW, k=3, method="ngram", now=NOW, served_model_name=MODEL,
                         require_recent=True)
    q, _, _ = fleet.plan_queries(src, ask)
    result = judge_fleet(fleet.evaluate(f.client(q), src, ask, "stub"), ask.slo, src.fleet, require_engine_up=True)
    seconds = time.perf_counter() - t0
    assert result.status is Status.PASS and len(result.rows) == 10_000
    assert all(r.facts.windows == 60 for r in result.rows[:10])
    assert seconds < 20

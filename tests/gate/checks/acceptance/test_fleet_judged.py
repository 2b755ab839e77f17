"""A Prometheus fleet's rows judged by the acceptance line (gate.checks.acceptance.fleet_rule, from window_slo).

The source hands over facts (gate.evidence.fleet.table: windows, met, why a row is not evidence); each pod's
status and reason, and the fleet's under the plan's rule, are the check's. The rows here are written by hand,
so each rule is seen without a backend (the real ones: tests/gate/evidence/test_fleet.py).
"""

from __future__ import annotations

from typing import Any

from gate.checks.acceptance.fleet_rule import judge_fleet
from gate.evidence.fleet.table import FleetResult, PodRow
from gate.plan.model import Plan, plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.helpers import tiny_plan

EXCLUDED = {"reset": 0, "below_min_drafts": 0, "no_accepted": 0, "non_finite": 0, "stale": 0, "outside_range": 0,
            "repeated": 0, "missing": 0}


def _row(pod: str, met: int, windows: int = 10, **over: Any) -> PodRow:
    facts: dict[str, Any] = {
        "pod": pod, "labels": {"pod": pod, "model": "tiny"}, "model": "tiny", "windows": windows, "met": met,
        "drafts": 100.0 * windows, "below_slo_share": (windows - met) / windows if windows else None,
        "acceptance_length": 3.0, "min_acceptance_length": 3.0, "acceptance_rate": None, "restarts": 0.0,
        "engine_up": True, "excluded": dict(EXCLUDED)}
    return PodRow(**{**facts, **over})


def _table(*rows: PodRow, not_recent: str | None = None) -> FleetResult:
    return FleetResult(source="Prometheus stub", selector="{}", window_seconds=5, lookback_seconds=50, end=0.0,
                       rows=rows, queries=10, seconds=0.0, not_recent=not_recent)


def _plan(**fleet: Any) -> Plan:
    data = tiny_plan()
    data["evidence"] = {"prometheus": {"url": "http://127.0.0.1:1", "fleet": fleet}}
    return plan_from_dict(data)


def test_the_line_judges_each_pod_and_the_fleet() -> None:
    line = judge(_plan(), "post", [], [], fleet=_table(_row("a", 10), _row("b", 0)))
    fleet = line.values["fleet"]
    assert [(p["pod"], p["status"], p["reason"]) for p in fleet["pods"]] == [
        ("a", "pass", "10/10 windows ≥ 2"), ("b", "fail", "0/10 windows ≥ 2, required 0.5")]
    assert list(fleet["pods"][0])[-3:] == ["excluded", "status", "reason"]  # the table's columns, then the verdict
    assert (fleet["status"], fleet["counts"]) == ("fail", {"pods": 2, "rows": 2, "pass": 1, "fail": 1,
                                                           "inconclusive": 0, "missing": 0})
    assert line.status is Status.FAIL
    assert ("fleet fail: 1 pass, 1 fail, 0 inconclusive of 2 pods: failed share 50.0% > allowed 0.0% "
            "[failed: b (0/10 windows ≥ 2, required 0.5)]") in line.reason


def test_the_engine_must_be_up_in_post_only() -> None:
    table = _table(_row("a", 10), _row("b", 10, engine_up=False))
    post = judge(_plan(), "post", [], [], fleet=table).values["fleet"]
    assert post["pods"][1]["reason"] == "engine down at the end of the lookback" and post["status"] == "inconclusive"
    assert judge(_plan(), "pre", [], [], fleet=table).values["fleet"]["status"] == "pass"


def test_why_a_row_is_not_evidence_comes_first_and_nothing_it_holds_passes() -> None:
    row = _row("a", 10, not_evidence=("no drafts series in the lookback",), implausible="L 9 > 1 + k",
               restarts_unknown=True, excluded={**EXCLUDED, "non_finite": 2})
    pod = judge_fleet(_table(row), _plan().slo, _plan().evidence.prometheus.fleet,  # type: ignore[union-attr]
                      require_engine_up=True).rows[0]
    assert (pod.status, pod.reason) == (Status.INCONCLUSIVE, "no drafts series in the lookback; 2 window(s) with a "
                                        "non-finite or negative count; not evidence: L 9 > 1 + k; restart status "
                                        "unknown (no restarts series)")


def test_the_plans_rule_counts_missing_and_extra_pods() -> None:
    short = judge(_plan(expected_pods=3), "post", [], [], fleet=_table(_row("a", 10))).values["fleet"]
    assert (short["status"], short["missing_pods"]) == ("inconclusive", 2)
    extra = judge(_plan(expected_pods=1), "post", [], [], fleet=_table(_row("a", 10), _row("b", 10))).values["fleet"]
    assert extra["status"] == "inconclusive" and extra["reason"].startswith("2 pods answered, more than fleet.expected_pods 1")


def test_a_table_that_is_not_recent_is_no_evidence_whatever_its_rows() -> None:
    fleet = judge(_plan(), "post", [], [], fleet=_table(_row("a", 10), not_recent="window ended long ago"))
    assert (fleet.values["fleet"]["status"], fleet.values["fleet"]["reason"]) == (
        "inconclusive", "not evidence: window ended long ago")

"""Every example plan: the status of every line and the decision, offline from files only."""

from __future__ import annotations

import pytest

from gate.plan.model import load_plan
from gate.verdict.evaluate import evaluate
from tests.gate.helpers import PLANS

EXPECTED = {
    # seed 000 names no acceptance target: since issue 10 that is a fail before rollout (seed 002 line 3).
    "seed000-qwen38-flash-next-nextn": ("fail", {"artifacts": "n/a", "kv_pool": "fail", "acceptance": "fail",
                                                 "staging": "n/a", "codesign": "inconclusive"}),
    # seed 002's plan takes the drafter card's 5.29 macro mean as its target and says where it comes from
    # (a benchmark); it declares no step costs, so L* is unknown and acceptance decides nothing (issue 21 item 6).
    "seed002-ling-3.0-flash-dspark": ("inconclusive", {"artifacts": "inconclusive", "kv_pool": "inconclusive",
                                                       "acceptance": "inconclusive", "staging": "inconclusive",
                                                       "codesign": "inconclusive"}),
    "seed004-qwen3.6-35b-a3b-mtp": ("pass", {"artifacts": "n/a", "kv_pool": "pass", "acceptance": "pass",
                                             "staging": "n/a", "codesign": "pass"}),
}


def test_every_example_plan_is_covered() -> None:
    assert {p.stem for p in PLANS.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_plan_lines_and_decision(name: str) -> None:
    decision, lines = EXPECTED[name]
    v = evaluate(load_plan(PLANS / f"{name}.yaml"))
    assert {k: r.status.value for k, r in v.checks.items()} == lines
    assert v.decision.value == decision
    assert v.exit_code == {"pass": 0, "fail": 1, "inconclusive": 2}[decision]


def test_seed000_numbers() -> None:
    v = evaluate(load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml"))
    kv = v.checks["kv_pool"]
    assert kv.values["allocated_tokens"] == 161_728 and kv.values["allocated_tokens_without_drafter"] == 600_000
    assert {m["name"]: (m["demand_tokens"], m["fits"]) for m in kv.values["mixes"]} == {
        "short": (586, True), "long-agentic": (184_182, False)}
    comps = {c["mix"]: c for c in v.checks["acceptance"].values["served_rate"]}
    # seed 000: "Three observations do not establish statistical significance" — p = 1/C(6,3) = 0.05, not < 0.05
    assert comps["short"]["call"].startswith("higher in all cells, not significant at n = 3")
    assert comps["short"]["p_higher"] == pytest.approx(0.05) and comps["short"]["significant"] is False
    assert comps["long-agentic"]["ranges_overlap"] is True and comps["long-agentic"]["p_higher"] == pytest.approx(0.1)
    assert "observed ranges overlap, median higher, not significant at n = 3" in v.checks["acceptance"].reason
    assert "served rate includes first-token waiting" in v.checks["acceptance"].reason
    rec = v.run_record.to_json()
    assert rec["model_revision"] == "7b719225242aacd3dbd3f9407468c2ee9a9d2594"
    assert rec["kv_pool_tokens"] == 161_728 and rec["configured_max_total_tokens"] == 600_000
    assert rec["image_digest"] is None and "image_digest" in rec["missing"]
    assert rec["executed_engine_version"] is None and "executed_engine_version" in rec["missing"]
    assert rec["concurrency"] == {"short": 1, "long-agentic": 6}
    # seed 000's record of the next decision (issue 10 item 7), each field labelled
    assert (rec["system"], rec["node_count"], rec["experiment_date"]) == (
        "two GB10 DGX Sparks, 121 GiB per node", 2, "2026-09-05")
    assert rec["drafter_revision"].startswith("n/a") and "drafter_revision" not in rec["missing"]
    assert "runtime_execution_revision" in rec["missing"] and "temperature" in rec["missing"]
    basis = rec["field_basis"]
    assert (basis["kv_dtype"], basis["concurrency"], basis["kv_pool_tokens"], basis["drafter_revision"]) == (
        "declared", "declared", "reported", "n/a")


def test_seed002_numbers() -> None:
    v = evaluate(load_plan(PLANS / "seed002-ling-3.0-flash-dspark.yaml"))
    assert v.checks["artifacts"].values["drafter_weights_bytes"] == 2_727_415_810
    assert v.checks["kv_pool"].values["drafter_kv_bytes_per_token"] == 51_200


def test_seed004_numbers() -> None:
    v = evaluate(load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"))
    acc = v.checks["acceptance"].values
    got = {m["point"]: (round(m["acceptance_length"], 3), round(m["break_even_length"], 3), m["pays"])
           for m in acc["measured_vs_break_even"]}
    assert got == {"2K": (3.362, 2.204, True), "131K": (3.102, 1.933, True)}
    assert round(acc["erosion"]["fraction"], 3) == 0.077
    assert [s["windows"] for s in acc["streams"]] == [1, 1]
    assert v.checks["kv_pool"].values["allocated_tokens"] == 343_699

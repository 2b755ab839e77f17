"""artifacts line (two downloads vs storage/image budgets) and staging line (measured cold start vs budget)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.checks import artifacts, staging
from gate.plan.model import load_plan, plan_from_dict
from gate.status import Status
from tests.gate.helpers import PLANS, context, tiny_plan


def _artifacts(data: dict):
    plan = plan_from_dict(data)
    return artifacts.check(context(plan))


def test_two_downloads_fit() -> None:
    r = _artifacts(tiny_plan("draft"))
    assert r.status is Status.PASS
    assert r.values["downloads"] == 2 and r.values["known_total_bytes"] == 1_706_496 + 410_368


def test_two_downloads_over_budget_fail() -> None:
    data = tiny_plan("draft")
    data["budgets"]["storage_bytes"] = 2_000_000
    r = _artifacts(data)
    assert r.status is Status.FAIL and "2,116,864 B > storage budget 2,000,000 B" in r.reason


def test_known_part_over_budget_fails_even_with_unknown() -> None:
    data = tiny_plan("draft")
    del data["target"]["weights"]
    data["budgets"]["storage_bytes"] = 400_000
    assert _artifacts(data).status is Status.FAIL  # the drafter alone (410,368 B) breaks it
    data["budgets"]["storage_bytes"] = 5_000_000
    assert _artifacts(data).status is Status.INCONCLUSIVE


def test_image_budget() -> None:
    data = tiny_plan("draft")
    data["engine"]["image_bytes"] = 3_000_000
    data["budgets"]["image_bytes"] = 2_000_000
    r = _artifacts(data)
    assert r.status is Status.FAIL and "image 3,000,000 B > image budget" in r.reason


def test_weights_from_safetensors_index(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 123_456},
                                                                      "weight_map": {}}))
    data = tiny_plan("draft")
    data["drafter"]["weights"] = {"path": str(tmp_path)}
    r = _artifacts(data)
    assert r.values["drafter_weights_bytes"] == 123_456 and "index" in r.values["drafter_weights_source"]


def test_ngram_and_mtp_are_na_without_a_budget() -> None:
    data = tiny_plan("ngram")
    data["budgets"].pop("storage_bytes")
    assert _artifacts(data).status is Status.NA
    plan = load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    assert artifacts.check(context(plan)).status is Status.NA


def test_storage_budget_applies_to_every_plan() -> None:
    """Issue 10 item 3: no second download, but the target still counts against a storage budget that is set."""
    data = tiny_plan("ngram")  # storage budget 10,000,000 B; target 1,706,496 B
    r = _artifacts(data)
    assert r.status is Status.PASS and "target 1,706,496 B = 1,706,496 B ≤ storage budget 10,000,000 B" in r.reason
    data["budgets"]["storage_bytes"] = 1_000_000
    r = _artifacts(data)
    assert r.status is Status.FAIL and "> storage budget 1,000,000 B (one download)" in r.reason


def test_seed002_counts_drafter_bytes() -> None:
    plan = load_plan(PLANS / "seed002-ling-3.0-flash-dspark.yaml")
    r = artifacts.check(context(plan))
    assert r.status is Status.INCONCLUSIVE and r.values["drafter_weights_bytes"] == 2_727_415_810
    assert "2,727,415,810 B" in r.reason


def test_staging_measured_against_budget() -> None:
    data = tiny_plan("draft", staging={"mode": "overlapped", "order": ["target", "drafter"],
                                       "load_seconds": {"target": 30, "drafter": 12},
                                       "warmup_check": "first completion answered"})
    data["evidence"] = {"reported": {"startup_seconds_without_drafter": {"value": 37.5, "source": "nospec arm"}}}
    plan = plan_from_dict(data)
    r = staging.judge(plan, staging.StartupObservation(40.7, "draft arm ready"))
    assert r.status is Status.PASS
    assert r.values["predicted_seconds"] == 37.5 + 12  # the run without the drafter + the drafter's load, in full
    assert r.values["startup_tax_seconds"] == 40.7 - 37.5
    assert staging.judge(plan, staging.StartupObservation(140.0, "slow")).status is Status.FAIL


def test_staging_unmeasured_is_inconclusive_and_serial_prediction_can_fail() -> None:
    data = tiny_plan("draft", staging={"mode": "serial", "order": ["target", "drafter"],
                                       "load_seconds": {"target": 100, "drafter": 40}})
    plan = plan_from_dict(data)
    r = staging.judge(plan, None)
    assert r.status is Status.FAIL and "predicted cold start 140 s > budget 120 s" in r.reason
    data["staging"]["load_seconds"] = {"target": 50, "drafter": 40}
    assert staging.judge(plan_from_dict(data), None).status is Status.INCONCLUSIVE


def test_staging_predicted_whole_decides_before_any_run() -> None:
    """Issue 36: the target alone's reported cold start + the drafter's load is a whole prediction; it passes or
    fails the budget, labelled predicted. The loads alone (engine start-up left out) only ever fail it, and the
    inconclusive line names just the keys still missing."""
    data = tiny_plan("draft", staging={"mode": "overlapped", "order": ["target", "drafter"], "warmup_check": "w",
                                       "load_seconds": {"drafter": 12}})  # budget 120 s
    data["evidence"] = {"reported": {"startup_seconds_without_drafter": {"value": 100, "source": "today's log"}}}
    r = staging.judge(plan_from_dict(data), None)
    assert r.status is Status.PASS and r.values["predicted_seconds"] == 112, r.reason
    assert "cold start predicted 112 s (100 s without the drafter (today's log) + its load 12 s) ≤ budget 120 s" \
        in r.reason and "not measured" in r.reason
    data["staging"]["load_seconds"] = {"drafter": 25}
    r = staging.judge(plan_from_dict(data), None)
    assert r.status is Status.FAIL and "predicted cold start 125 s > budget 120 s" in r.reason
    data["evidence"] = {}
    r = staging.judge(plan_from_dict(data), None)  # the load alone: a lower bound, 25 s ≤ 120 s decides nothing
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "or evidence.reported.startup_seconds_without_drafter (a predicted cold start)" in r.reason
    assert "staging.load_seconds.drafter" not in r.reason  # given already: not asked for again


def test_staging_unnamed_mode_warns() -> None:
    data = tiny_plan("draft")
    data["staging"] = {"order": ["target", "drafter"], "warmup_check": "first completion answered"}
    r = staging.judge(plan_from_dict(data), staging.StartupObservation(40.0, "x"))
    assert r.status is Status.WARN and "staging mode" in r.reason


def test_staging_serial_warns_and_missing_warmup_is_inconclusive() -> None:
    """Issue 10 item 5 (seed 002: "Stage checkpoints overlapped"; "name … the warmup check")."""
    data = tiny_plan("draft")  # serial, with a warmup check
    r = staging.judge(plan_from_dict(data), staging.StartupObservation(40.0, "x"))
    assert r.status is Status.WARN and "Stage checkpoints overlapped" in r.reason
    data["staging"].pop("warmup_check")
    r = staging.judge(plan_from_dict(data), staging.StartupObservation(40.0, "x"))
    assert r.status is Status.INCONCLUSIVE and "warmup check not named" in r.reason
    data["staging"] = {"mode": "overlapped", "order": ["target", "drafter"], "warmup_check": "w"}
    assert staging.judge(plan_from_dict(data), staging.StartupObservation(40.0, "x")).status is Status.PASS  # control


def test_startup_tax_and_its_payback() -> None:
    """Tax 40.7 − 37.5 = 3.2 s; seed 004's 2K costs at the target L 2.0 (assumed): 14.14 − 31.16 / 2 < 0 → never;
    at L 3.362 (measured): saving 14.14 − 9.268 = 4.872 ms, concurrency 4 → 4 × 3,200 / 4.872 = 2,627 tokens."""
    data = tiny_plan("draft", staging={"mode": "overlapped", "order": ["target", "drafter"], "warmup_check": "w"})
    data["evidence"] = {"reported": {"startup_seconds_without_drafter": {"value": 37.5, "source": "nospec arm"}}}
    data["costs"] = [{"point": "2K", "verify_cycle_ms": 31.16, "target_step_ms": 14.14}]
    r = staging.judge(plan_from_dict(data), staging.StartupObservation(40.7, "draft arm ready"))
    assert "never won back" in r.reason and "the target L, assumed 2" in r.reason
    data["costs"][0]["acceptance_length"] = 3.362
    r = staging.judge(plan_from_dict(data), staging.StartupObservation(40.7, "draft arm ready"))
    assert r.values["payback"]["tokens_needed"] == pytest.approx(4 * 3200 / (14.14 - 31.16 / 3.362), rel=1e-6)
    assert "won back after 2,627 output tokens at w" in r.reason


# Issue 21 item 6: a missing input makes the line inconclusive, naming the key; n/a only where the line
# cannot apply (no drafter, no second artifact).

@pytest.mark.parametrize("arm", ["draft", "draftself"])
def test_a_second_artifact_without_a_storage_budget_names_the_key(arm: str) -> None:
    data = tiny_plan(arm)
    data["budgets"].pop("storage_bytes")
    r = artifacts.check(context(plan_from_dict(data)))
    assert r.status is Status.INCONCLUSIVE and "budgets.storage_bytes" in r.reason


def test_unknown_weights_against_a_storage_budget_name_the_keys() -> None:
    data = tiny_plan("draft")
    data["drafter"].pop("weights")
    r = artifacts.check(context(plan_from_dict(data)))
    assert r.status is Status.INCONCLUSIVE and "drafter.weights" in r.reason
    data = tiny_plan("ngram")
    data["target"].pop("weights")
    r = artifacts.check(context(plan_from_dict(data)))
    assert r.status is Status.INCONCLUSIVE and "target.weights" in r.reason


def test_no_second_artifact_and_no_budget_is_the_only_na() -> None:
    data = tiny_plan("ngram")
    data["budgets"] = {}
    assert artifacts.check(context(plan_from_dict(data))).status is Status.NA
    assert staging.check(context(plan_from_dict(data))).status is Status.NA


@pytest.mark.parametrize("arm", ["draft", "draftself"])
def test_a_second_artifact_without_a_startup_budget_names_the_key(arm: str) -> None:
    data = tiny_plan(arm)
    data["budgets"].pop("startup_seconds")
    data["evidence"] = {"reported": {"startup_seconds": {"value": 33.0, "source": "a run"}}}
    r = staging.check(context(plan_from_dict(data)))
    assert r.status is Status.INCONCLUSIVE and "budgets.startup_seconds" in r.reason

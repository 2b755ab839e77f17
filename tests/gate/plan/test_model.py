"""Rollout plan validation: unknown keys and wrong values are one-line errors naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.plan.model import PlanError, load_plan, plan_from_dict
from tests.gate.helpers import PLANS, tiny_plan, write_plan


def _err(data: dict) -> str:
    with pytest.raises(PlanError) as e:
        plan_from_dict(data)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_scope_must_be_known() -> None:
    p = tiny_plan()
    p["drafter"]["kv_scope"] = "sliding"
    assert _err(p) == "drafter.kv_scope: must be one of full|window|block"


def test_typo_names_path_and_suggests() -> None:
    p = tiny_plan()
    p["slo"]["min_draft"] = 5
    assert _err(p) == "slo.min_draft: unknown key (did you mean min_drafts?)"


def test_typo_in_list_item_names_index() -> None:
    p = tiny_plan()
    p["workload"][0]["concurency"] = 3
    msg = _err(p)
    assert msg.startswith("workload[0].concurency: unknown key")


def test_wrong_type_and_range() -> None:
    p = tiny_plan()
    p["workload"][0]["concurrency"] = 0
    assert _err(p).startswith("workload[0].concurrency: ")
    p = tiny_plan()
    p["engine"]["kind"] = "tgi"  # an engine no profile knows
    assert _err(p) == "engine.kind: must be one of vllm|sglang|trtllm|llamacpp"


def test_missing_required() -> None:
    p = tiny_plan()
    del p["engine"]
    assert _err(p) == "engine: required"


def test_ngram_with_drafter_is_incoherent() -> None:
    p = tiny_plan("ngram")
    p["drafter"] = {"name": "x"}
    assert "ngram has no drafter" in _err(p)


def test_draft_model_needs_drafter() -> None:
    p = tiny_plan("draft")
    del p["drafter"]
    assert "needs a drafter" in _err(p)


def test_step_costs_need_both_numbers() -> None:
    p = tiny_plan(costs=[{"point": "2K", "verify_cycle_ms": 31.16}])
    assert "both target_step_ms and verify_cycle_ms" in _err(p)


def test_window_scope_needs_window() -> None:
    p = tiny_plan()
    p["drafter"]["kv_scope"] = "window"
    assert "window_tokens" in _err(p)


def test_paths_relative_to_plan_file(tmp_path: Path) -> None:
    sub = tmp_path / "plans"
    sub.mkdir()
    p = tiny_plan()
    p["target"]["config"] = "../cfg/target.json"
    p["evidence"] = {"captures": [{"files": ["caps/a.txt", "caps/b.txt"]}]}
    plan = load_plan(write_plan(sub / "p.yaml", p))
    assert plan.target.config == sub / "../cfg/target.json"
    assert plan.evidence.captures[0].files == [sub / "caps/a.txt", sub / "caps/b.txt"]


def test_missing_plan_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="plan file not found"):
        load_plan(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntarget: [unclosed\n")
    with pytest.raises(PlanError, match="not valid YAML") as e:
        load_plan(bad)
    assert "\n" not in str(e.value)


def test_error_carries_plan_file_name(tmp_path: Path) -> None:
    p = tiny_plan()
    p["budgets"]["storage"] = 1
    path = write_plan(tmp_path / "typo.yaml", p)
    with pytest.raises(PlanError) as e:
        load_plan(path)
    assert str(e.value).startswith(f"{path}: budgets.storage: unknown key (did you mean storage_bytes?)")


def test_example_plans_all_load() -> None:
    plans = sorted(PLANS.glob("*.yaml"))
    assert len(plans) >= 3
    for path in plans:
        plan = load_plan(path)
        assert plan.name == path.stem


def test_embedded_drafter_from_method() -> None:
    plan = load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    assert plan.drafter is None and plan.drafter_embedded and plan.has_drafter
    assert load_plan(PLANS / "seed002-ling-3.0-flash-dspark.yaml").drafter_embedded is False


def test_a_typo_is_named_before_the_missing_keys_it_causes(tmp_path):
    from gate.plan.model import PlanError, load_plan

    p = tmp_path / "plan.yaml"
    p.write_text("slo:\n  target_acceptance_lenght: 2\n")
    with pytest.raises(PlanError) as e:
        load_plan(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.index("slo.target_acceptance_lenght: unknown key (did you mean target_acceptance_length?)") \
        < msg.index("required")

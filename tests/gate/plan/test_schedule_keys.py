"""A plan's depth schedule (issue 22): validated as the engine validates it, bounds at the deepest k it allows.

vLLM's messages are those of vLLM 0.32's `validate_and_normalize_dynamic_sd_schedule` (tests/exporter/test_schedule.py
checks them against vLLM itself); SGLang's are 0.5.23's `adaptive_unsupported_reason` and
`_init_adaptive_speculative_params`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gate.model.depth import depth_schedule
from gate.plan.model import PlanError, plan_from_dict
from tests.gate.helpers import tiny_plan


def _vllm(ranges: Any, k: int | None = 3, dp: int | None = None, **slo: Any) -> dict[str, Any]:
    p = tiny_plan("ngram")
    spec: dict[str, Any] = {"method": "ngram", "num_speculative_tokens_per_batch_size": ranges}
    if k is not None:
        spec["num_speculative_tokens"] = k
    p["engine"]["speculative"] = spec
    if dp is not None:
        p["engine"]["dp"] = dp
    p["slo"].update(slo)
    return p


def _sglang(method: str = "eagle3", **spec: Any) -> dict[str, Any]:
    p = tiny_plan("draft")
    p["engine"]["kind"] = "sglang"
    p["engine"]["memory_fraction"] = 0.8
    p["engine"]["speculative"] = {"method": method, **spec}
    if method == "ngram":
        p.pop("drafter")
    return p


def test_vllm_schedule_plan() -> None:
    plan = plan_from_dict(_vllm([[1, 2, 3], [3, 8, 1]]))
    reading = plan.depth_reading
    assert reading.declared and reading.schedule is not None and not reading.warnings
    assert [reading.schedule.k_at(b) for b in (1, 2, 3, 8, 64)] == [3, 3, 1, 1, 1]
    assert plan.depth == 3 and plan.bound_depth == 3


def test_vllm_schedule_clamped_below_k_bounds_at_its_largest_k() -> None:
    """k = 4 configured, the schedule never runs more than 2: L ≤ 1 + 2, so a target of 3.5 is impossible."""
    plan = plan_from_dict(_vllm([[1, 4, 2], [5, 8, 1]], k=4))
    assert plan.depth == 4 and plan.bound_depth == 2
    with pytest.raises(PlanError, match=r"1 \+ k"):
        plan_from_dict(_vllm([[1, 4, 2], [5, 8, 1]], k=4, target_acceptance_length=3.5))


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([[1, 2]], "entry must be a 3-item sequence"),
        ([[0, 2, 1]], r"Batch-size range \(0, 2\) must be positive"),
        ([[2, 1, 1]], "Batch-size range start must be <= end"),
        ([[1, 2, -1]], "values must be >= 0"),
        ([[1, 4, 1], [3, 6, 1]], "non-overlapping and sorted"),
        ([[2, 4, 1]], "The first batch-size range must start at 1"),
        ([], "must not be empty"),
    ],
)
def test_vllm_schedule_refused_with_vllms_reason(ranges: Any, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        plan_from_dict(_vllm(ranges))


def test_vllm_schedule_needs_num_speculative_tokens() -> None:
    with pytest.raises(PlanError, match="needs num_speculative_tokens"):
        plan_from_dict(_vllm([[1, 2, 3]], k=None))


def test_vllm_schedule_dropped_under_data_parallelism_is_a_warning() -> None:
    """VllmConfig._maybe_disable_dynamic_sd_for_data_parallel: the schedule is set to None before any validation,
    so even a schedule vLLM would otherwise refuse is no refusal, and the fixed k is what runs."""
    plan = plan_from_dict(_vllm([[2, 4, 1]], dp=2))
    reading = plan.depth_reading
    assert reading.declared and reading.schedule is None
    assert len(reading.warnings) == 1 and "data parallelism" in reading.warnings[0]
    assert "num_speculative_tokens = 3" in reading.warnings[0]
    assert plan.bound_depth == 3


def test_sglang_key_on_vllm_and_vllm_key_on_sglang() -> None:
    p = tiny_plan("ngram")
    p["engine"]["speculative"] = {"method": "ngram", "num_speculative_tokens": 3, "speculative_adaptive": True}
    with pytest.raises(PlanError, match="is SGLang's"):
        plan_from_dict(p)
    with pytest.raises(PlanError, match="is vLLM's"):
        plan_from_dict(_sglang(num_steps=3, eagle_topk=1, num_speculative_tokens_per_batch_size=[[1, 2, 3]]))
    p["engine"]["speculative"] = {"method": "ngram", "num_speculative_tokens": 3, "draft_len_schedule": {"1": 3}}
    with pytest.raises(PlanError, match="is TensorRT-LLM's"):
        plan_from_dict(p)
    with pytest.raises(PlanError, match="is TensorRT-LLM's"):
        plan_from_dict(_sglang(num_steps=3, eagle_topk=1, draft_len_schedule={"1": 3}))


def test_trtllm_draft_len_schedule_plan_bounds_at_max_draft_len() -> None:
    """TensorRT-LLM's own example shape: {4: 3, 8: 2} with max_draft_len 3 — batches 1-4 run 3, 5-8 run 2,
    above 8 run 0 (keys end their bands, exporter.engines.trtllm.schedule.trtllm_schedule); the bound is the deepest, 3."""
    p = tiny_plan("draft")
    p["engine"]["kind"] = "trtllm"
    p["engine"]["speculative"] = {"method": "draft_model", "num_speculative_tokens": 3,
                                  "draft_len_schedule": {"4": 3, "8": 2}}
    reading = depth_schedule("trtllm", p["engine"]["speculative"])
    assert reading.schedule is not None
    assert [reading.schedule.k_at(b) for b in (1, 4, 5, 8, 9)] == [3, 3, 2, 2, 0]
    p["engine"]["speculative"]["draft_len_schedule"] = {"4": 2}  # smallest key must run max_draft_len
    with pytest.raises(ValueError, match="TensorRT-LLM refuses it"):
        depth_schedule("trtllm", p["engine"]["speculative"])


def test_sglang_adaptive_default_tiers_bound_at_the_deepest_candidate() -> None:
    """Default tiers {1: [1,3,5,7], 8: [0,1,3], 32: [0,1], 64: [0]}: the plan starts at 3 steps (k = 3) but a
    batch of one may run 7, so L ≤ 8 — a target of 5 is possible though above 1 + 3."""
    p = _sglang(num_steps=3, eagle_topk=1, speculative_adaptive=True)
    p["slo"]["target_acceptance_length"] = 5.0
    plan = plan_from_dict(p)
    assert plan.depth == 3 and plan.bound_depth == 7
    assert plan.depth_reading.schedule is not None and plan.depth_reading.schedule.varies


def test_sglang_adaptive_config_object() -> None:
    plan = plan_from_dict(_sglang(num_steps=2, eagle_topk=1, speculative_adaptive=True,
                                  speculative_adaptive_config={"1": {"candidate_steps": [2, 4]},
                                                               "16": {"candidate_steps": [0, 1]}}))
    assert plan.bound_depth == 4
    with pytest.raises(PlanError, match=r"--speculative-num-steps=3 is not in the adaptive config candidate_steps"):
        plan_from_dict(_sglang(num_steps=3, eagle_topk=1, speculative_adaptive=True,
                               speculative_adaptive_config={"1": {"candidate_steps": [2, 4]}}))
    with pytest.raises(PlanError, match="candidate_steps must be a list of non-negative ints"):
        plan_from_dict(_sglang(num_steps=2, speculative_adaptive=True,
                               speculative_adaptive_config={"1": {"candidate_steps": []}}))
    with pytest.raises(PlanError, match="needs speculative_adaptive: true"):
        plan_from_dict(_sglang(num_steps=2, speculative_adaptive_config={"1": {"candidate_steps": [2]}}))


@pytest.mark.parametrize(
    ("method", "spec", "reason", "k"),
    [
        ("draft_model", {"num_steps": 3}, r"speculative_algorithm=STANDALONE \(only EAGLE/EAGLE3 are supported\)", 3),
        ("eagle3", {"num_steps": 3, "eagle_topk": 4, "num_draft_tokens": 8},
         r"speculative_eagle_topk=4 \(only topk=1 is supported\)", 7),
    ],
)
def test_sglang_adaptive_falls_back_to_static_steps_where_sglang_cannot_adapt(
        method: str, spec: dict[str, Any], reason: str, k: int) -> None:
    """SGLang 0.5.23 does not refuse: `_maybe_disable_adaptive` logs its reason and runs static steps, so the plan
    is valid, warned with SGLang's own line, and judged on the static k."""
    plan = plan_from_dict(_sglang(method, speculative_adaptive=True, **spec))
    reading = plan.depth_reading
    assert reading.declared and reading.schedule is None
    assert len(reading.warnings) == 1
    assert re.search(r"SGLang: speculative_adaptive disabled: " + reason
                     + r"\. Falling back to static speculative params\.", reading.warnings[0])
    assert f"static k = {k}" in reading.warnings[0]
    assert plan.depth == plan.bound_depth == k


def test_sglang_adaptive_fallback_without_steps_says_the_gate_has_no_k() -> None:
    reading = depth_schedule("sglang", {"method": "ngram", "speculative_adaptive": True})
    assert reading.schedule is None and "declare num_steps" in reading.warnings[0]


@pytest.mark.parametrize("method", ["mtp", "nextn"])
def test_sglang_adaptive_mtp_runs_as_eagle(method: str) -> None:
    """`_resolve_speculative_algorithm_alias` turns NEXTN into EAGLE before the adaptive check: it adapts."""
    p = _sglang(method, num_steps=3, eagle_topk=1, speculative_adaptive=True)
    p.pop("drafter")
    reading = depth_schedule("sglang", p["engine"]["speculative"])
    assert reading.schedule is not None and not reading.warnings and reading.schedule.max_k == 7


def test_no_schedule_is_a_fixed_k() -> None:
    plan = plan_from_dict(tiny_plan("draft"))
    assert not plan.depth_reading.declared and plan.depth_reading.schedule is None
    assert plan.bound_depth == plan.depth == 3


def test_engine_without_a_scheduler_refuses_schedule_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile that is no DepthScheduler (an engine that runs one k) refuses every schedule key by name."""
    import gate.model.depth as depth

    class OneK:
        name = "OneK"

        def resolve_speculative(self, speculative: dict[str, Any],
                                drafter_config: None) -> tuple[dict[str, Any], tuple[str, ...]]:
            return dict(speculative), ()  # BaseProfile's: the keys as given

    monkeypatch.setattr(depth, "profile", lambda kind: OneK())
    assert depth_schedule("onek", {"method": "ngram", "num_speculative_tokens": 3}).schedule is None
    with pytest.raises(ValueError, match="speculative_adaptive: OneK runs no depth schedule"):
        depth_schedule("onek", {"method": "eagle3", "speculative_adaptive": True})


def test_evidence_bounds_use_the_deepest_k_identity_keeps_k() -> None:
    """SGLang adaptive from 3 steps with tiers up to 7: a window of L = 5 is possible (≤ 1 + 7), not refused as
    above 1 + 3; identity still matches the configured k = 3."""
    from gate.evidence.gather import rules_for
    from gate.model import plausibility as pl

    rules = rules_for(plan_from_dict(_sglang(num_steps=3, eagle_topk=1, speculative_adaptive=True)), "pre", now=0.0)
    assert (rules.k, rules.bound_k) == (3, 7)
    assert pl.acceptance(5.0, None, rules.bound_k) is None
    assert pl.acceptance(5.0, None, rules.k) is not None

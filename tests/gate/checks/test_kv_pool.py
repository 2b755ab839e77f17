"""kv_pool line: allocated (never the configured ceiling) vs each request mix's resident tokens."""

from __future__ import annotations

from gate.bill.budget import Allocated
from gate.checks import kv_pool
from gate.plan.model import load_plan, plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, PLANS, context, tiny_plan


def _line(plan, live=None):
    return kv_pool.check(context(plan, live=live))


def test_seed000_long_mix_fails_against_allocated_with_assumption() -> None:
    r = _line(load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml"))
    assert r.status is Status.FAIL
    assert "6 × (30,185 + 512) = 184,182" in r.reason and "161,728" in r.reason
    assert "resident at once" in r.reason and "queue" in r.reason  # the assumption is stated
    assert "600,000-token pool holds it" in r.reason  # without the drafter it fits
    mixes = {m["name"]: m for m in r.values["mixes"]}
    assert mixes["long-agentic"]["fits"] is False and mixes["long-agentic"]["fits_without_drafter"] is True
    assert mixes["short"]["fits"] is True and mixes["short"]["demand_tokens"] == 586
    assert r.values["judged_pool_tokens"] == 161_728 and r.values["judged_pool_basis"] == "allocated"
    assert r.values["configured_max_total_tokens"] == 600_000  # reported, never used as the pool


def test_configured_ceiling_is_never_the_pool() -> None:
    plan = load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    data = plan.model_dump(exclude={"plan_path"}, exclude_none=True, mode="json")
    del data["evidence"]["reported"]["kv_pool_tokens"]
    r = _line(plan_from_dict(data))
    # 600,000 configured would hold 184,182, but nothing says what was allocated with NEXTN
    assert r.status is Status.INCONCLUSIVE
    assert r.values["judged_pool_tokens"] is None


def test_short_mix_alone_passes() -> None:
    plan = load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    data = plan.model_dump(exclude={"plan_path"}, exclude_none=True, mode="json")
    data["workload"] = [m for m in data["workload"] if m["name"] == "short"]
    r = _line(plan_from_dict(data))
    assert r.status is Status.PASS and "161,728-token allocated pool" in r.reason


def test_tiny_predicted_pool_and_live_allocation_agree() -> None:
    plan = plan_from_dict(tiny_plan("draft"))
    r = _line(plan, Allocated(6528, "capture metrics-draft-after.txt"))
    assert r.status is Status.PASS
    assert r.values["allocated_tokens"] == r.values["predicted_tokens_with_drafter"] == 6528
    assert "exact" in r.reason
    # geometric need vs engine charge are both reported
    assert r.values["drafter_kv_bytes_per_token"] == r.values["drafter_engine_charge_bytes_per_token"] == 256


def test_mix_beyond_predicted_pool_fails() -> None:
    data = tiny_plan("draftself")  # 4,096 predicted tokens
    data["workload"] = [{"name": "big", "concurrency": 8, "prompt_tokens": 400, "output_tokens": 112}]
    r = _line(plan_from_dict(data))
    assert r.status is Status.PASS  # 8 × 512 = 4,096 demand = 4,096 predicted: fits exactly
    data["workload"] = [{"name": "big", "concurrency": 9, "prompt_tokens": 400, "output_tokens": 112}]
    r = _line(plan_from_dict(data))
    assert r.status is Status.FAIL and "9 × (400 + 112) = 4,608 resident tokens > 4,096 predicted" in r.reason


def test_request_beyond_context_cap_fails() -> None:
    data = tiny_plan("draft")
    data["workload"] = [{"name": "long", "concurrency": 1, "prompt_tokens": 500, "output_tokens": 64}]
    r = _line(plan_from_dict(data))
    assert r.status is Status.FAIL and "exceeds the 512-token context cap" in r.reason


def test_no_mix_is_inconclusive() -> None:
    data = tiny_plan("draft")
    data["workload"] = []
    r = _line(plan_from_dict(data))
    assert r.status is Status.INCONCLUSIVE


# Issue 21 item 6: the pool line needs an allocated pool (observed or reported) or the input that predicts
# one; without them, or without a request mix, it is inconclusive and names the keys.

def test_no_pool_input_is_inconclusive_naming_the_keys() -> None:
    data = tiny_plan("draft")
    data["engine"].pop("kv_cache_memory_bytes")
    r = kv_pool.check(context(plan_from_dict(data)))
    assert r.status is Status.INCONCLUSIVE
    assert all(k in r.reason for k in ("evidence.reported.kv_pool_tokens", "engine.kv_cache_memory_bytes"))
    data["evidence"] = {"reported": {"kv_pool_tokens": {"value": 5000, "source": "a run's log"}}}
    r = kv_pool.check(context(plan_from_dict(data)))  # control: a reported pool decides
    assert r.status is Status.PASS and "reported: a run's log" in r.reason


def test_no_request_mix_names_the_key() -> None:
    r = kv_pool.check(context(plan_from_dict(tiny_plan("ngram", workload=[]))))
    assert r.status is Status.INCONCLUSIVE and "workload[]" in r.reason


def test_llamacpp_drafter_need_is_its_own_context_not_an_under_reservation() -> None:
    """llama.cpp gives the draft model a context of its own with the target's cells (common/speculative.cpp,
    `common_speculative_init_result`: `cparams.n_ctx = llama_n_ctx(ctx_tgt)`, read at ggml-org/llama.cpp
    001d906a), sized from the draft's own geometry: the need the bill reports is that context's cells × its
    bytes per cell, equal to what llama.cpp reserves, so the line passes without judging llama.cpp apart.
    Deployment (c)'s pair: functiongemma-270m's 3 full-attention layers hold 3,072 B per cell (its 15 sliding
    layers a fixed window cache in the memory bill); chat is 4 × (4,000 + 800) = 19,200 cells of the 32,768."""
    data = tiny_plan("draft")
    data["target"]["config"] = str(CONFIGS / "target-hybrid-swa__google__gemma-3-27b-it.json")
    data["drafter"]["config"] = str(CONFIGS / "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json")
    data["engine"] = {"kind": "llamacpp", "version": "b11434", "ctx_size": 32_768,
                      "speculative": {"method": "draft_model", "num_speculative_tokens": 8}}
    data["workload"] = [{"name": "chat", "concurrency": 4, "prompt_tokens": 4_000, "output_tokens": 800}]
    r = _line(plan_from_dict(data))
    assert r.status is Status.PASS, r.reason
    (mix,) = r.values["mixes"]
    assert mix["drafter_need_bytes"] == mix["drafter_charged_bytes"] == 4 * 4_800 * 3_072 == 58_982_400
    assert "under-reserves" not in r.reason and "353,894,400" not in r.reason  # not 19,200 x all 18 layers' 18,432
    assert r.values["drafter_kv_bytes_per_token"] == r.values["drafter_engine_charge_bytes_per_token"] == 3_072

"""kv_pool on hybrid targets (issue 35.3): a vLLM gpt-oss / Gemma-3 plan gets a predicted pool from
engine.kv_cache_memory_bytes (vLLM's hybrid sizing, gate/model/engines/vllm/pools.py), so does a Qwen3-Next /
Qwen3.5 plan whose engine.block_size is the block vLLM reports after aligning it to the linear state, and a hybrid it
cannot size says why without asking for engine.kv_cache_memory_bytes again."""

from __future__ import annotations

from typing import Any

import pytest

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, context, tiny_plan


def _hybrid(config: str, **engine: Any) -> dict[str, Any]:
    plan = tiny_plan("ngram")
    plan["target"] = {"name": config, "revision": "r1", "config": str(CONFIGS / config), "weights": {"bytes": 1}}
    plan["engine"].update({"kv_dtype": "bf16", "block_size": 16, "kv_cache_memory_bytes": 8 << 30,
                           "context_cap_tokens": 32768, **engine})
    plan["workload"] = [{"name": "chat", "concurrency": 16, "prompt_tokens": 3000, "output_tokens": 700}]
    return plan


@pytest.mark.parametrize(("config", "tokens"), [
    ("target-hybrid-swa__openai__gpt-oss-120b.json", 116475),  # 14,563 blocks of 16 (the oracle's rows)
    ("target-hybrid-swa__google__gemma-3-27b-it.json", 14972),  # 6,553 blocks of 16
])
def test_vllm_swa_hybrids_get_a_predicted_pool(config: str, tokens: int) -> None:
    r = kv_pool.check(context(plan_from_dict(_hybrid(config))))
    assert r.values["judged_pool_basis"] == "predicted"
    assert r.values["judged_pool_tokens"] == tokens
    assert "predicted" in r.reason
    assert any("hybrid KV manager" in n for n in r.values["notes"])
    assert r.status is (Status.PASS if 16 * 3700 <= tokens else Status.FAIL)


@pytest.mark.parametrize(("config", "block", "tokens"), [
    ("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json", 544, 313985),  # 642 blocks (the oracle's rows)
    ("target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", 400, 121762),  # 327 blocks, FlashAttention
    ("target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", 416, 121434),  # 315 blocks, CPU backend
])
def test_vllm_linear_hybrids_get_a_predicted_pool_at_the_aligned_block(config: str, block: int, tokens: int) -> None:
    r = kv_pool.check(context(plan_from_dict(_hybrid(config, block_size=block))))
    assert r.values["judged_pool_basis"] == "predicted"
    assert r.values["judged_pool_tokens"] == tokens
    assert "predicted" in r.reason
    assert any("linear attention" in n and "state blocks" in n for n in r.values["notes"])
    assert r.status is Status.PASS  # 16 x 3,700 = 59,200 tokens


def test_a_linear_hybrid_says_why_and_does_not_ask_for_the_budget_it_has() -> None:
    r = kv_pool.check(context(plan_from_dict(_hybrid("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"))))
    assert r.status is Status.INCONCLUSIVE
    assert "_align_hybrid_block_size" in r.reason
    assert "engine.kv_cache_memory_bytes for a prediction" not in r.reason
    assert "engine.kv_cache_memory_bytes is given" in r.reason

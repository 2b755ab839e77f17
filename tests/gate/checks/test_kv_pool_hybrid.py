"""kv_pool on hybrid targets (issue 35.3): a vLLM gpt-oss / Gemma-3 plan gets a predicted pool from
engine.kv_cache_memory_bytes (vLLM's hybrid sizing, gate/model/engines/vllm/pools.py), and a hybrid it cannot size
says why without asking for engine.kv_cache_memory_bytes again."""

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


def test_a_linear_hybrid_says_why_and_does_not_ask_for_the_budget_it_has() -> None:
    r = kv_pool.check(context(plan_from_dict(_hybrid("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"))))
    assert r.status is Status.INCONCLUSIVE
    assert "_align_hybrid_block_size" in r.reason
    assert "engine.kv_cache_memory_bytes for a prediction" not in r.reason
    assert "engine.kv_cache_memory_bytes is given" in r.reason

"""kv_pool on hybrid targets (issue 35.3): a vLLM gpt-oss / Gemma-3 plan gets a predicted pool from
engine.kv_cache_memory_bytes (vLLM's hybrid sizing, gate/model/engines/vllm/pools.py), so does a Qwen3-Next /
Qwen3.5 plan whose engine.block_size is the block vLLM reports after aligning it to the linear state, and a hybrid it
cannot size says why without asking for engine.kv_cache_memory_bytes again. On a linear hybrid a mix is judged in
blocks: each request holds its state blocks whatever its length (vLLM 0.32's MambaManager), so a busy mix of short
requests that the pool's tokens would pass fails; engine.prefix_cache picks 2 or 1 state blocks per linear group."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, REPO, context, tiny_plan


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


NEXT = "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"  # 1 full + 3 linear groups, 642 blocks of 544
ORACLE = json.loads((REPO / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-kv-sizing.json").read_text())["rows"]
LINEAR_ROWS = [r for r in ORACLE if r["inputs"].get("kind") == "linear" and r["inputs"]["drafter"] == "none"
               and "error" not in r["answer"]]  # the MTP rows: no pool with the drafter (no k reaches the sizing)


def _short(concurrency: int, **engine: Any) -> dict[str, Any]:
    """A busy mix of 128-token requests on Qwen3-Next: 1 attention block + 3 linear groups x 2 state blocks each."""
    plan = _hybrid(NEXT, block_size=544, **engine)
    plan["workload"] = [{"name": "short", "concurrency": concurrency, "prompt_tokens": 100, "output_tokens": 28}]
    return plan


def test_a_busy_mix_of_short_requests_the_state_blocks_exhaust_fails() -> None:
    """200 x 128 = 25,600 tokens would pass against 313,985 pool tokens; vLLM needs 200 x (1 + 6) = 1,400 blocks of
    its 642."""
    r = kv_pool.check(context(plan_from_dict(_short(200))))
    assert r.values["judged_pool_tokens"] == 313985
    assert r.status is Status.FAIL
    (mix,) = r.values["mixes"]
    assert (mix["demand_tokens"], mix["demand_blocks"], mix["fits"]) == (25600, 1400, False)
    assert "200 × 7 blocks = 1,400 blocks" in r.reason and "against 642 blocks predicted" in r.reason
    assert "6 linear-attention state block(s)" in r.reason


@pytest.mark.parametrize(("concurrency", "status"), [(91, Status.PASS), (92, Status.FAIL)])
def test_the_block_demand_decides_at_the_edge(concurrency: int, status: Status) -> None:
    """642 blocks // 7 per request = 91 requests."""
    r = kv_pool.check(context(plan_from_dict(_short(concurrency))))
    assert r.status is status
    assert r.values["mixes"][0]["demand_blocks"] == 7 * concurrency
    if status is Status.PASS:
        assert "judged in blocks" in r.reason and f"needs {7 * concurrency:,} blocks" in r.reason


@pytest.mark.parametrize(("prefix_cache", "status", "tokens"), [
    (None, Status.FAIL, 313985),  # vLLM's default: on, 2 state blocks per linear group: 100 x 7 = 700 > 642
    (True, Status.FAIL, 313985),
    (False, Status.PASS, 328704),  # mamba_cache_mode none: 1 per group, 100 x 4 = 400 <= 642; 642 / 64 x 32,768
])
def test_the_plans_prefix_cache_picks_the_state_blocks(prefix_cache: bool | None, status: Status, tokens: int) -> None:
    r = kv_pool.check(context(plan_from_dict(_short(100, prefix_cache=prefix_cache))))
    assert r.status is status
    assert r.values["judged_pool_tokens"] == tokens
    assert r.values["mixes"][0]["demand_blocks"] == 100 * (4 if prefix_cache is False else 7)


@pytest.mark.parametrize("row", LINEAR_ROWS, ids=lambda r: "-".join(str(v) for v in r["inputs"].values()))
def test_vllms_own_pool_and_max_concurrency_in_both_cache_modes(row: dict[str, Any]) -> None:
    """The oracle's linear rows (vLLM 0.32's get_kv_cache_configs): with engine.prefix_cache as the row's cache mode,
    the pool is vLLM's num_gpu_blocks and kv_cache_size_tokens, and floor(max_concurrency) requests at
    max_model_len fit while one more does not."""
    i, a = row["inputs"], row["answer"]
    plan = _hybrid(i["config"], block_size=a["block_size"], kv_cache_memory_bytes=i["kv_cache_memory_bytes"],
                   context_cap_tokens=i["max_model_len"], prefix_cache=i["mamba_cache_mode"] == "align")
    most = int(a["max_concurrency"])
    plan["workload"] = [{"name": f"c{c}", "concurrency": c, "prompt_tokens": i["max_model_len"] - 1,
                         "output_tokens": 1} for c in (most, most + 1) if c > 0]
    ctx = context(plan_from_dict(plan))
    pool = ctx.budget.pool
    assert (pool.predicted_blocks_with_drafter, pool.judged_tokens) == (a["num_gpu_blocks"], a["kv_cache_size_tokens"])
    fits = {m["name"]: m["fits"] for m in kv_pool.check(ctx).values["mixes"]}
    assert fits.get(f"c{most}", True) is True and fits[f"c{most + 1}"] is False


def test_an_allocated_pool_in_tokens_is_judged_in_blocks_at_max_model_len() -> None:
    """313,985 reported tokens at 32,768 = 642 blocks / 67 per request: 91 short requests (637 blocks) fit, 92 (644)
    do not, though 92 x 128 tokens is far below the reported number."""
    for c, status in ((91, Status.PASS), (92, Status.FAIL)):
        plan = _short(c)
        plan["evidence"] = {"reported": {"kv_pool_tokens": {"value": 313985, "source": "vLLM's log"}}}
        r = kv_pool.check(context(plan_from_dict(plan)))
        assert r.values["judged_pool_basis"] == "allocated"
        assert r.status is status, r.reason
        assert r.values["mixes"][0]["fits"] is (status is Status.PASS)


def test_an_allocated_pool_without_max_model_len_is_inconclusive_not_a_token_pass() -> None:
    plan = _short(10, context_cap_tokens=None)
    plan["evidence"] = {"reported": {"kv_pool_tokens": {"value": 313985, "source": "vLLM's log"}}}
    r = kv_pool.check(context(plan_from_dict(plan)))
    assert r.status is Status.INCONCLUSIVE
    assert r.values["mixes"][0]["fits"] is None
    assert "give engine.context_cap_tokens" in r.reason

"""kv_pool on hybrid targets (issue 35.3): a vLLM gpt-oss / Gemma-3 plan gets a predicted pool from
engine.kv_cache_memory_bytes (vLLM's hybrid sizing, gate/model/engines/vllm/pools.py), so does a Qwen3-Next /
Qwen3.5 plan whose engine.block_size is the block vLLM reports after aligning it to the linear state, and a hybrid it
cannot size says why without asking for engine.kv_cache_memory_bytes again. On a linear hybrid a mix is judged in
blocks: each request holds its state blocks whatever its length (vLLM 0.32's MambaManager), so a busy mix of short
requests that the pool's tokens would pass fails; engine.prefix_cache picks 2 or 1 state blocks per linear group, and
k draft tokens add k more and widen the state, for ngram as for MTP (vLLM reads num_speculative_tokens whatever the
method), so an ngram plan is priced at the block vLLM reports with speculation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, REPO, context, tiny_plan

NEXT = "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"  # 1 full + 3 linear groups of 12 layers


def _hybrid(config: str, speculative: bool = True, **engine: Any) -> dict[str, Any]:
    """An ngram k = 3 plan on `config` (no speculation with `speculative` false)."""
    plan = tiny_plan("ngram")
    if not speculative:
        del plan["engine"]["speculative"]
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


@pytest.mark.parametrize(("config", "speculative", "block", "tokens", "status"), [
    # without speculation (the oracle's drafter-less rows)
    ("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json", False, 544, 313985, Status.PASS),  # 642 blocks
    ("target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", False, 400, 121762, Status.PASS),  # 327, FA
    ("target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", False, 416, 121434, Status.PASS),  # 315, CPU
    # ngram k = 3 (the oracle's ngram rows): the widened state raises Qwen3-Next's block; 3 more state blocks per
    # linear group: Qwen3.5's 16 x (9 + 3 x 5) = 384 blocks exceed its 315, where 16 x (9 + 6) = 240 fit without
    ("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json", True, 576, 275797, Status.PASS),  # 606, CPU
    ("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json", True, 560, 276313, Status.PASS),  # 624, FA
    ("target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", True, 416, 109807, Status.FAIL),  # 315
])
def test_vllm_linear_hybrids_get_a_predicted_pool_at_the_aligned_block(config: str, speculative: bool, block: int,
                                                                       tokens: int, status: Status) -> None:
    r = kv_pool.check(context(plan_from_dict(_hybrid(config, speculative, block_size=block))))
    assert r.values["judged_pool_basis"] == "predicted"
    assert r.values["judged_pool_tokens"] == tokens
    assert "predicted" in r.reason
    assert any("linear attention" in n and "state blocks" in n for n in r.values["notes"])
    assert r.status is status, r.reason  # 16 x 3,700 = 59,200 tokens, judged in blocks
    assert r.values["mixes"][0]["fits_without_drafter"] is True


def test_an_ngram_plan_at_the_block_without_speculation_is_refused() -> None:
    """Before: ngram k = 3 on Qwen3-Next at 544 was priced without speculation and passed; vLLM raises that block
    with k = 3 (the oracle's ngram rows: 576 on CPU from 16, 560 with FlashAttention), so there is no pool to judge;
    the blocks named start where vLLM does (the plan's as --block-size, else 16 / 128 on CPU)."""
    r = kv_pool.check(context(plan_from_dict(_hybrid(NEXT, block_size=544))))
    assert r.status is Status.INCONCLUSIVE
    assert r.values["judged_pool_tokens"] is None and r.values["predicted_tokens_without_drafter"] == 313985
    assert "with k = 3 draft tokens" in r.reason and "1,088 with the CPU backend;" in r.reason
    assert "560 with FlashAttention (from 16), 640 with the CPU backend (from 128)" in r.reason


def test_a_linear_hybrid_says_why_and_does_not_ask_for_the_budget_it_has() -> None:
    r = kv_pool.check(context(plan_from_dict(_hybrid("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"))))
    assert r.status is Status.INCONCLUSIVE
    assert "_align_hybrid_block_size" in r.reason
    assert "engine.kv_cache_memory_bytes for a prediction" not in r.reason
    assert "engine.kv_cache_memory_bytes is given" in r.reason


ORACLE = json.loads((REPO / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-kv-sizing.json").read_text())["rows"]
# no speculation, and ngram k = 3 (a plan of either); the MTP rows are replayed in test_budget_linear_mtp
LINEAR_ROWS = [r for r in ORACLE if r["inputs"].get("kind") == "linear" and r["inputs"]["drafter"] in ("none", "ngram")
               and "error" not in r["answer"]]


def _short(concurrency: int, **engine: Any) -> dict[str, Any]:
    """A busy mix of 128-token requests on Qwen3-Next, ngram k = 3 at 576 (CPU): 1 attention block + 3 linear groups
    x (2 + 3) state blocks each = 16 blocks of the pool's 606 (7 without speculation)."""
    plan = _hybrid(NEXT, block_size=576, **engine)
    plan["workload"] = [{"name": "short", "concurrency": concurrency, "prompt_tokens": 100, "output_tokens": 28}]
    return plan


def test_a_busy_mix_of_short_requests_the_state_blocks_exhaust_fails() -> None:
    """200 x 128 = 25,600 tokens would pass against 275,797 pool tokens; vLLM needs 200 x (1 + 3 x 5) = 3,200 blocks
    of its 606 (200 x 7 = 1,400 without speculation: no fit either)."""
    r = kv_pool.check(context(plan_from_dict(_short(200))))
    assert r.values["judged_pool_tokens"] == 275797
    assert r.status is Status.FAIL
    (mix,) = r.values["mixes"]
    assert (mix["demand_tokens"], mix["demand_blocks"], mix["fits"], mix["fits_without_drafter"]) == (
        25600, 3200, False, False)
    assert "200 × 16 blocks = 3,200 blocks" in r.reason and "against 606 blocks predicted" in r.reason
    assert "15 linear-attention state block(s)" in r.reason


@pytest.mark.parametrize(("concurrency", "status"), [(37, Status.PASS), (38, Status.FAIL)])
def test_the_block_demand_decides_at_the_edge(concurrency: int, status: Status) -> None:
    """606 blocks // 16 per request = 37 requests."""
    r = kv_pool.check(context(plan_from_dict(_short(concurrency))))
    assert r.status is status
    assert r.values["mixes"][0]["demand_blocks"] == 16 * concurrency
    if status is Status.PASS:
        assert "judged in blocks" in r.reason and f"needs {16 * concurrency:,} blocks" in r.reason


@pytest.mark.parametrize(("prefix_cache", "status", "tokens"), [
    (None, Status.FAIL, 275797),  # vLLM's default: on, 2 + 3 state blocks per linear group: 40 x 16 = 640 > 606
    (True, Status.FAIL, 275797),
    (False, Status.PASS, 287788),  # mamba_cache_mode none: 1 + 3 per group, 40 x 13 = 520 <= 606 (the oracle's row)
])
def test_the_plans_prefix_cache_picks_the_state_blocks(prefix_cache: bool | None, status: Status, tokens: int) -> None:
    """Without speculation (no drafter layer, no speculative blocks: 7 or 4 per request) the 606 blocks hold 40."""
    r = kv_pool.check(context(plan_from_dict(_short(40, prefix_cache=prefix_cache))))
    assert r.status is status
    assert r.values["judged_pool_tokens"] == tokens
    (mix,) = r.values["mixes"]
    assert mix["demand_blocks"] == 40 * (13 if prefix_cache is False else 16)
    assert mix["fits_without_drafter"] is True


@pytest.mark.parametrize("row", LINEAR_ROWS, ids=lambda r: "-".join(str(v) for v in r["inputs"].values()))
def test_vllms_own_pool_and_max_concurrency_in_both_cache_modes(row: dict[str, Any]) -> None:
    """The oracle's linear rows (vLLM 0.32's get_kv_cache_configs): with engine.prefix_cache as the row's cache mode,
    the pool is vLLM's num_gpu_blocks and kv_cache_size_tokens, and floor(max_concurrency) requests at
    max_model_len fit while one more does not."""
    i, a = row["inputs"], row["answer"]
    plan = _hybrid(i["config"], i["drafter"] == "ngram", block_size=a["block_size"], kv_cache_memory_bytes=i["kv_cache_memory_bytes"],
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
    """275,797 reported tokens at 32,768 = 606 blocks / 72 per request (57 attention + 15 state): 37 short requests
    (592 blocks) fit, 38 (608) do not, though 38 x 128 tokens is far below the reported number."""
    for c, status in ((37, Status.PASS), (38, Status.FAIL)):
        plan = _short(c)
        plan["evidence"] = {"reported": {"kv_pool_tokens": {"value": 275797, "source": "vLLM's log"}}}
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

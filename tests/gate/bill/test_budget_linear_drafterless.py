"""Drafterless speculation (ngram, suffix) on a vLLM linear-attention hybrid (issue 35.3): vLLM 0.32 widens every
Gated DeltaNet layer's conv state by k and gives every linear group k more state blocks per request for every
speculative method (`MambaBase.get_kv_cache_spec` reads `num_speculative_tokens` unless ReplaySSM), so the bill
prices an ngram plan with speculation: the pool "with the drafter" is vLLM's own with k (the oracle's ngram rows,
tests/fixtures/oracle/vllm-0.32.0-kv-sizing.json, recorded in-process by tools/oracle/vllm_kv_sizing.py), the pool
without it keeps no speculative blocks, and the kv_pool line judges each with its own per-request blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.checks import kv_pool
from gate.model.engines.base import RequestBlocks
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, context, tiny_plan

NEXT = "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"


def _plan(speculative: dict[str, Any], block: int = 576, config: Path = CONFIGS / NEXT) -> dict[str, Any]:
    plan = tiny_plan("ngram")
    plan["target"] = {"name": NEXT, "revision": "r1", "config": str(config), "weights": {"bytes": 1}}
    plan["engine"].update({"kv_dtype": "bf16", "block_size": block, "kv_cache_memory_bytes": 8 << 30,
                           "context_cap_tokens": 32768, "speculative": speculative})
    plan["workload"] = [{"name": "short", "concurrency": 40, "prompt_tokens": 100, "output_tokens": 28}]
    return plan


@pytest.mark.parametrize("method", ["ngram", "suffix"])
def test_a_drafterless_plan_is_priced_with_its_speculative_blocks(method: str) -> None:
    """The oracle's ngram k = 3 row (CPU, 8 GiB, 32,768, align): 606 blocks of 576, 275,797 tokens; suffix decoding
    sizes the same (vLLM reads k alone). Without speculation the same 606 blocks price 2 state blocks per group."""
    pool = context(plan_from_dict(_plan({"method": method, "num_speculative_tokens": 3}))).budget.pool
    assert (pool.predicted_blocks_with_drafter, pool.predicted_with_drafter) == (606, 275797)
    assert pool.predicted_blocks_without_drafter == 606
    assert pool.request_blocks == RequestBlocks(576, 1, 3, 3)
    assert pool.request_blocks_without_drafter == RequestBlocks(576, 1, 3, 0)
    assert pool.predicted_without_drafter == RequestBlocks(576, 1, 3, 0).capacity_tokens(606, 32768, True)
    assert pool.to_json()["request_blocks"]["speculative_blocks"] == 3


def test_suffix_without_k_gets_no_pool_with_speculation() -> None:
    """vLLM defaults suffix decoding's k to its tree depth; the plan gives none, so the pool without speculation
    would pass what vLLM cannot hold: no pool with it, and the note asks for k."""
    r = kv_pool.check(context(plan_from_dict(_plan({"method": "suffix"}))))
    assert r.status is Status.INCONCLUSIVE
    assert r.values["predicted_tokens_with_drafter"] is None and r.values["predicted_tokens_without_drafter"]
    assert "no predicted pool with speculation" in r.reason and "num_speculative_tokens" in r.reason


def test_the_line_judges_each_pool_with_its_own_state_blocks() -> None:
    """40 short requests: 40 x (1 + 3 x (2 + 3)) = 640 blocks > 606 with speculation, 40 x (1 + 3 x 2) = 280
    without; the reason counts 15 state blocks per request (2 + k per group), not 6."""
    r = kv_pool.check(context(plan_from_dict(_plan({"method": "ngram", "num_speculative_tokens": 3}))))
    assert r.status is Status.FAIL
    (mix,) = r.values["mixes"]
    assert (mix["demand_blocks"], mix["fits"], mix["fits_without_drafter"]) == (640, False, True)
    assert "40 × 16 blocks = 640 blocks" in r.reason and "15 linear-attention state block(s)" in r.reason


def test_a_reported_pool_is_not_taken_for_the_pool_without_speculation() -> None:
    """The engine's allocation with ngram holds k speculative blocks per request; read as the pool without
    speculation it would be priced at the wrong blocks per request, so that fit falls back to the predicted pool
    without speculation (280 of 606 blocks)."""
    plan = _plan({"method": "ngram", "num_speculative_tokens": 3})
    plan["evidence"] = {"reported": {"kv_pool_tokens": {"value": 275797, "source": "vLLM's log"}}}
    ctx = context(plan_from_dict(plan))
    assert ctx.budget.pool.allocated_without_drafter is None
    (mix,) = kv_pool.check(ctx).values["mixes"]
    assert (mix["fits"], mix["fits_without_drafter"]) == (False, True)

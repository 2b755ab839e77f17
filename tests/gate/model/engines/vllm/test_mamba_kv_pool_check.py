"""The kv_pool line on a vLLM Mamba-2 hybrid (Nemotron-H, issue 35.3): before, no pool was predicted ("Mamba-2
layers are not modelled") and the line asked for a live allocation; now it judges the pool predicted from
engine.kv_cache_memory_bytes, labelled predicted, equal to vLLM 0.32's own sizing (the oracle's `mamba` rows,
tests/fixtures/oracle/vllm-0.32.0-kv-sizing.json, recorded in-process by tools/oracle/vllm_mamba_sizing.py)."""

from __future__ import annotations

import json
from typing import Any

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, context, tiny_plan
from tests.gate.model.engines.vllm.test_oracle_mamba_sizing import FIXTURE, NEMOTRON


def _plan(block: int, concurrency: int) -> dict[str, Any]:
    plan = tiny_plan("ngram")
    plan["target"] = {"name": NEMOTRON, "revision": "r1", "config": str(CONFIGS / NEMOTRON), "weights": {"bytes": 1}}
    plan["engine"].update({"kv_dtype": "bf16", "block_size": block, "kv_cache_memory_bytes": 8 << 30,
                           "context_cap_tokens": 32768, "speculative": {"method": "ngram", "num_speculative_tokens": 3}})
    plan["workload"] = [{"name": "short", "concurrency": concurrency, "prompt_tokens": 100, "output_tokens": 28}]
    return plan


def _oracle_row() -> dict[str, Any]:
    """vLLM's ngram k = 3 row: CPU backend from block 16, 8 GiB, 32,768 tokens, prefix caching on."""
    (row,) = [r["answer"] for r in json.loads(FIXTURE.read_text())["rows"] if r["inputs"].get("kind") == "mamba"
              and r["inputs"]["drafter"] == "ngram" and r["inputs"]["attention_backend"] == "CPU_ATTN"
              and r["inputs"]["start_block_size"] == 16 and r["inputs"]["kv_cache_memory_bytes"] == 8 << 30
              and r["inputs"]["max_model_len"] == 32768 and r["inputs"]["mamba_cache_mode"] == "align"]
    return row


def test_the_line_judges_vllms_own_pool_labelled_predicted() -> None:
    """At the block vLLM reports with speculation (2,144) the pool is vLLM's: 652 blocks, 534,118 tokens (593,464
    before the prefill checkpoint block MambaMixer2 adds in align mode). 10 short requests take
    10 x (1 + 4 x (2 + 1 + 3)) = 250 blocks: a pass on the predicted pool, said so."""
    row = _oracle_row()
    r = kv_pool.check(context(plan_from_dict(_plan(row["block_size"], 10))))
    assert r.status is Status.PASS
    assert (row["block_size"], row["num_gpu_blocks"], r.values["predicted_tokens_with_drafter"]) == (
        2144, 652, row["kv_cache_size_tokens"])
    assert row["kv_cache_size_tokens"] == 534118
    assert "predicted, not observed" in r.reason and "short needs 250 blocks" in r.reason


def test_too_many_requests_for_the_state_blocks_fail() -> None:
    """27 short requests need 27 x 25 = 675 blocks > 652: a fail, though their tokens are a sliver of the pool
    (before, each Mamba-2 group was charged 2 + 3 state blocks, not vLLM's 2 + 1 + 3: 567 blocks, a pass); 26 need
    650 and fit."""
    r = kv_pool.check(context(plan_from_dict(_plan(2144, 27))))
    assert r.status is Status.FAIL
    (mix,) = r.values["mixes"]
    assert (mix["demand_blocks"], mix["fits"]) == (675, False)
    r = kv_pool.check(context(plan_from_dict(_plan(2144, 26))))
    assert r.status is Status.PASS and r.values["mixes"][0]["demand_blocks"] == 650


def test_the_block_without_speculation_is_inconclusive_naming_vllms_blocks() -> None:
    """At 2,112 (vLLM's block without speculation) k = 3 widens the state past the page: no pool with
    speculation, inconclusive, naming the blocks vLLM would set from the plan's block as --block-size (4,224) and
    from its own starts (2,128 FlashAttention from 16, 2,176 CPU from 128: the oracle's rows)."""
    r = kv_pool.check(context(plan_from_dict(_plan(2112, 10))))
    assert r.status is Status.INCONCLUSIVE
    assert r.values["predicted_tokens_with_drafter"] is None and r.values["predicted_tokens_without_drafter"]
    assert "from --block-size 2112, 4,224 with FlashAttention, 4,224 with the CPU backend" in r.reason
    assert "2,128 with FlashAttention (from 16), 2,176 with the CPU backend (from 128)" in r.reason

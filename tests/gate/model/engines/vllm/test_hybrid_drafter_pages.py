"""EAGLE-3 heads and draft models on vLLM linear and Mamba-2 hybrids (issue 35.3, part b). A drafter whose attention
bytes per token differ from the target's makes vLLM 0.32 unify page sizes: the recorded answers
(tests/fixtures/oracle/vllm-0.32.0-hybrid-drafter-pages.json, tools/oracle/vllm_hybrid_drafter_pages.py, vLLM's
`get_kv_cache_configs` in-process on the CPU layout) show groups of two block sizes in one pool, which the gate's
one-block pool cannot hold. Before, the kv_pool line was inconclusive with a wrong reason ("next to sliding-window
layers"); it stays inconclusive, never a pass, and now says what vLLM does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, context, tiny_plan
from tests.gate.model.engines.oracle import exceptions

TESTS = Path(__file__).resolve().parents[4]
FIXTURE = TESTS / "fixtures" / "oracle" / "vllm-0.32.0-hybrid-drafter-pages.json"
ROWS: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["rows"]


def _plan(inputs: dict[str, Any], block: int) -> dict[str, Any]:
    plan = tiny_plan("draft")
    target, drafter = inputs["config"], inputs["drafter_config"]
    plan["target"] = {"name": target, "revision": "r1", "config": str(CONFIGS / target), "weights": {"bytes": 1}}
    plan["drafter"] = {"name": drafter, "revision": "r1", "config": str(CONFIGS / drafter), "weights": {"bytes": 1},
                       "kv_scope": "full"}
    plan["engine"].update({"kv_dtype": "bf16", "block_size": block,
                           "kv_cache_memory_bytes": inputs["kv_cache_memory_bytes"],
                           "context_cap_tokens": inputs["max_model_len"],
                           "speculative": {"method": inputs["method"],
                                           "num_speculative_tokens": inputs["num_speculative_tokens"]}})
    plan["workload"] = [{"name": "short", "concurrency": 1, "prompt_tokens": 100, "output_tokens": 28}]
    return plan


def test_the_fixture_covers_both_hybrids_and_both_drafters_each_a_stated_exception() -> None:
    assert set(exceptions(FIXTURE.name)) == set(range(len(ROWS)))
    assert {(r["inputs"]["config"].split("__")[0], r["inputs"]["method"]) for r in ROWS} == {
        (f, m) for f in ("target-hybrid-linear", "target-hybrid-mamba") for m in ("eagle3", "draft_model")}


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_vllm_draws_blocks_of_two_sizes_from_one_pool(index: int) -> None:
    """vLLM's own answer: the target's attention groups at the page ratio x the aligned block (1,152 = 2 x 576 on
    Qwen3-Next, 8,576 = 4 x 2,144 on Nemotron-H), the rest at the aligned block, every page padded to the largest."""
    answer = ROWS[index]["answer"]
    assert "error" not in answer and answer["num_gpu_blocks"] > 0
    assert len({g[2] for g in answer["groups"]}) == 2 and len({g[3] for g in answer["groups"]}) == 1
    assert max(g[2] for g in answer["groups"]) in (2 * answer["block_size"], 4 * answer["block_size"])


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_the_line_is_inconclusive_saying_what_vllm_does(index: int) -> None:
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    r = kv_pool.check(context(plan_from_dict(_plan(inputs, answer["block_size"]))))
    assert r.status is Status.INCONCLUSIVE
    assert r.values["predicted_tokens_with_drafter"] is None and r.values["predicted_tokens_without_drafter"]
    assert "unify_kv_cache_spec_page_size" in r.reason and "sliding-window" not in r.reason
    assert "the target's" in r.reason and "their pages differ" in r.reason

"""The pool with an MTP drafter on a vLLM linear-attention hybrid (issue 35.3, H10): the plan's k reaches vLLM's
hybrid sizing, so `budget` and the kv_pool line give a predicted pool *with* the drafter equal to vLLM 0.32's own
(tests/fixtures/oracle/vllm-0.32.0-kv-sizing.json, its MTP rows on Qwen3-Coder-Next: `get_kv_cache_configs` called
in-process by tools/oracle/vllm_kv_sizing.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from tests.gate.helpers import CONFIGS, REPO, context, tiny_plan

NEXT = "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"
ORACLE = json.loads((REPO / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-kv-sizing.json").read_text())["rows"]
MTP_ROWS = [r for r in ORACLE if r["inputs"].get("kind") == "linear" and r["inputs"]["drafter"] == "mtp"
            and r["inputs"]["config"] == NEXT and "error" not in r["answer"]]


def _mtp_plan(config: Path, k: int, block: int, kv_bytes: int, length: int, prefix_cache: bool) -> dict[str, Any]:
    plan = tiny_plan("ngram")
    plan["target"] = {"name": NEXT, "revision": "r1", "config": str(config), "weights": {"bytes": 1}}
    plan["engine"].update({"kv_dtype": "bf16", "block_size": block, "kv_cache_memory_bytes": kv_bytes,
                           "context_cap_tokens": length, "prefix_cache": prefix_cache,
                           "speculative": {"method": "mtp", "num_speculative_tokens": k}})
    return plan


@pytest.fixture(scope="module")
def next_with_mtp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture's config names no MTP layer count (vLLM's default, 1, sized the oracle rows); the plan's copy
    states that one layer, so the bill knows the drafter's layers."""
    cfg = json.loads((CONFIGS / NEXT).read_text())
    cfg["num_nextn_predict_layers"] = 1
    path = tmp_path_factory.mktemp("next") / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize("row", MTP_ROWS, ids=lambda r: "-".join(str(v) for v in r["inputs"].values()))
def test_an_mtp_plan_on_qwen3_next_gets_vllms_pool_with_the_drafter(row: dict[str, Any], next_with_mtp: Path) -> None:
    """Before: no pool with the drafter (no k reached the sizing), so the line could not judge the pool vLLM runs.
    Now the pool with the drafter is the row's num_gpu_blocks and kv_cache_size_tokens at the block vLLM reports
    with the drafter, and floor(max_concurrency) requests at max_model_len fit while one more does not (2 + k
    state blocks per linear group with prefix caching, 1 + k without)."""
    i, a = row["inputs"], row["answer"]
    k, length = i["num_speculative_tokens"], i["max_model_len"]
    plan = _mtp_plan(next_with_mtp, k, a["block_size"], i["kv_cache_memory_bytes"], length,
                     i["mamba_cache_mode"] == "align")
    most = int(a["max_concurrency"])
    plan["workload"] = [{"name": f"c{c}", "concurrency": c, "prompt_tokens": length - 1, "output_tokens": 1}
                        for c in (most, most + 1) if c > 0]
    ctx = context(plan_from_dict(plan))
    pool = ctx.budget.pool
    assert (pool.predicted_blocks_with_drafter, pool.predicted_with_drafter) == (a["num_gpu_blocks"],
                                                                                  a["kv_cache_size_tokens"])
    assert pool.request_blocks is not None and pool.request_blocks.speculative_blocks == k
    assert pool.to_json()["request_blocks"]["speculative_blocks"] == k
    r = kv_pool.check(ctx)
    assert r.values["judged_pool_basis"] == "predicted" and r.values["judged_pool_tokens"] == a["kv_cache_size_tokens"]
    fits = {m["name"]: m["fits"] for m in r.values["mixes"]}
    assert fits.get(f"c{most}", True) is True and fits[f"c{most + 1}"] is False


def test_the_rows_cover_each_k_and_both_cache_modes() -> None:
    assert {(r["inputs"]["num_speculative_tokens"], r["inputs"]["mamba_cache_mode"]) for r in MTP_ROWS} == {
        (k, m) for k in (1, 2, 3) for m in ("align", "none")}


def test_without_the_mtp_layer_count_the_plan_keeps_the_note() -> None:
    """The fixture itself names no MTP layers: the drafter's layers are unknown, so no pool with it, and the note
    says what to declare; the pool without it is still vLLM's (642 blocks of 544 at 8 GiB)."""
    ctx = context(plan_from_dict(_mtp_plan(CONFIGS / NEXT, 1, 544, 8 << 30, 32768, True)))
    pool = ctx.budget.pool
    assert pool.predicted_with_drafter is None and pool.predicted_blocks_with_drafter is None
    assert pool.predicted_blocks_without_drafter == 642
    text = " ".join(pool.notes)
    assert "no predicted pool with the drafter" in text and "num_nextn_predict_layers" in text


def test_the_line_judges_the_pool_without_the_drafter_with_its_own_blocks(next_with_mtp: Path) -> None:
    """k = 1 at 544: 60 short requests hold 60 x (1 + 3 x (2 + 1)) = 600 blocks > 593 with the drafter, and
    60 x (1 + 3 x 2) = 420 <= 642 without it (no MTP layer, no speculative blocks); the reason counts 2 + k."""
    plan = _mtp_plan(next_with_mtp, 1, 544, 8 << 30, 32768, True)
    plan["workload"] = [{"name": "short", "concurrency": 60, "prompt_tokens": 100, "output_tokens": 28}]
    r = kv_pool.check(context(plan_from_dict(plan)))
    (mix,) = r.values["mixes"]
    assert (mix["demand_blocks"], mix["fits"], mix["fits_without_drafter"]) == (600, False, True)
    assert "60 × 10 blocks = 600 blocks" in r.reason and "9 linear-attention state block(s)" in r.reason

"""SGLang 0.5.23's own KV pool sizing of hybrid targets, recorded by tools/oracle/sglang_kv_sizing.py (SGLang's
`_handle_max_mamba_cache` and `config_from_budget` called in-process), replayed against the gate's SGLang hybrid pool
(gate/model/engines/sglang, pools.py; issue 35.3): every row agrees exactly or is a stated exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.model.engines import profile
from gate.model.engines.base import ConfigHybridPoolPredictor
from gate.model.engines.sglang.pools import sglang_gdn_state_bytes, sglang_mamba_split, sglang_pool_tokens
from gate.model.geometry import STATE_KINDS, KVGeometry, LayerKind, kv_geometry
from tests.gate.model.engines.oracle import exceptions

TESTS = Path(__file__).resolve().parents[4]
ORACLE = TESTS / "fixtures" / "oracle"
FIXTURE = ORACLE / "sglang-0.5.23-kv-sizing.json"
ROWS: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["rows"]


def config(inputs: dict[str, Any]) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    return cfg


def one_layer_head(geom: KVGeometry) -> KVGeometry:
    """The recorder's drafter: a 1-layer EAGLE/MTP head (SGLang charges it the target's full-layer bytes)."""
    full = next(x for x in geom.layers if x.kind == "full_attention")
    return KVGeometry(full.bytes_per_token, 1, geom.dtype, 1, (LayerKind(0, "full_attention", full.bytes_per_token),))


def gate_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The gate's `max_total_num_tokens` for the row (and the Mamba slots it carves), or a refusal."""
    cfg = config(inputs)
    geom = kv_geometry(cfg, dtype="bf16")
    sglang = profile("sglang")
    drafter = one_layer_head(geom) if inputs["drafter"] != "none" else None
    charge = sglang.draft_charge("eagle", geom, drafter)[0] if drafter else None
    page, cap, budget = inputs["page_size"], inputs["max_total_tokens"], inputs["kv_cache_memory_bytes"]
    if "mamba_slots_per_request" in inputs:
        text = cfg.get("text_config", cfg)
        per_req = sglang_gdn_state_bytes(text, sum(1 for x in geom.layers if x.kind in STATE_KINDS))
        assert per_req is not None
        try:
            split = sglang_mamba_split(budget, per_req, draft_tokens=inputs.get("num_draft_tokens"),
                                       slots_per_request=inputs["mamba_slots_per_request"])
        except ValueError:
            return {"error": True}
        tokens = sglang_pool_tokens(split.kv_bytes, geom.bytes_per_token + (charge or 0), cap, page)
        return {"max_total_num_tokens": tokens, "max_mamba_cache_size": split.slots, "mamba_cache_per_req": per_req}
    assert isinstance(sglang, ConfigHybridPoolPredictor)
    pred = sglang.predict_hybrid_pool_from_config(
        config=cfg, speculative={}, kv_cache_memory_bytes=budget, target=geom, drafter=drafter, draft_charge=charge,
        has_drafter=drafter is not None, block_size=page, configured_max_total_tokens=cap)
    return {"error": True} if pred.with_drafter is None else {"max_total_num_tokens": pred.with_drafter}


def engine_answer(answer: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    if "error" in answer:
        return {"error": True}
    keys = ["max_total_num_tokens"] + (["max_mamba_cache_size", "mamba_cache_per_req"]
                                       if "mamba_slots_per_request" in inputs else [])
    return {k: answer[k] for k in keys}


def test_the_fixture_covers_both_hybrid_kinds_both_arms_and_both_pools() -> None:
    configs = {r["inputs"]["config"] for r in ROWS}
    assert {"target-hybrid-swa__openai__gpt-oss-120b.json", "target-hybrid-swa__google__gemma-3-27b-it.json",
            "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"} <= configs
    assert {r["inputs"]["drafter"] for r in ROWS} == {"none", "eagle_1_layer"}
    assert {r["answer"].get("pool") for r in ROWS if "error" not in r["answer"]} == {"hybrid_swa", "default"}
    assert sum("error" not in r["answer"] for r in ROWS) >= 200


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_each_recorded_row_agrees_or_is_a_stated_exception(index: int) -> None:
    row = ROWS[index]
    listed = exceptions(FIXTURE.name)
    agrees = gate_answer(row["inputs"]) == engine_answer(row["answer"], row["inputs"])
    if index in listed:
        assert not agrees, f"row {index} agrees now: remove it from EXCEPTIONS.md"
    else:
        assert agrees, (row["inputs"], row["answer"], gate_answer(row["inputs"]))


@pytest.mark.parametrize("index", [i for i, r in enumerate(ROWS) if "error" not in r["answer"]
                                   and r["inputs"].get("mamba_slots_per_request") == 5])
def test_the_profile_predicts_sglangs_linear_pool_at_the_cuda_defaults(index: int) -> None:
    """The profile's own path (config, draft tokens, 5 slots per request) gives SGLang's number."""
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    cfg = config(inputs)
    geom = kv_geometry(cfg, dtype="bf16")
    sglang = profile("sglang")
    assert isinstance(sglang, ConfigHybridPoolPredictor)
    drafter = one_layer_head(geom) if inputs["drafter"] != "none" else None
    charge = sglang.draft_charge("eagle", geom, drafter)[0] if drafter else None
    pred = sglang.predict_hybrid_pool_from_config(
        config=cfg, speculative={"num_draft_tokens": inputs.get("num_draft_tokens")},
        kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"], target=geom, drafter=drafter, draft_charge=charge,
        has_drafter=drafter is not None, block_size=inputs["page_size"],
        configured_max_total_tokens=inputs["max_total_tokens"])
    assert pred.with_drafter == answer["max_total_num_tokens"]


def test_the_linear_pool_takes_the_plans_k_as_sglang_resolves_it() -> None:
    """A steps-only DFlash plan drafts its block (k = block - 1 = 15: SGLang forces num_steps 1), not its steps: given
    that k the Mamba scratch is for 16 draft tokens, as with num_draft_tokens 16, never 4 + 1. Without k or draft
    tokens the note asks for num_draft_tokens and no longer offers num_steps to a block drafter (before: "(or
    num_steps)", which SGLang overrides for DFlash/DSpark)."""
    cfg = config({"config": "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"})
    geom = kv_geometry(cfg, dtype="bf16")
    sglang = profile("sglang")
    assert isinstance(sglang, ConfigHybridPoolPredictor)
    head = one_layer_head(geom)
    charge = sglang.draft_charge("eagle", geom, head)[0]

    def pool(speculative: dict[str, Any], depth: int | None) -> Any:
        return sglang.predict_hybrid_pool_from_config(
            config=cfg, speculative=speculative, kv_cache_memory_bytes=16 << 30, target=geom, drafter=head,
            draft_charge=charge, has_drafter=True, block_size=1, configured_max_total_tokens=None, depth=depth)

    steps = {"method": "dflash", "num_steps": 4, "eagle_topk": 1}
    assert pool(steps, 15).with_drafter == pool({"num_draft_tokens": 16}, None).with_drafter
    assert pool(steps, 15).with_drafter != pool(steps, None).with_drafter  # the keys as given: 5 draft tokens
    text = " ".join(pool({"method": "dflash"}, None).notes)
    assert "declare engine.speculative.num_draft_tokens" in text and "(or num_steps)" not in text
    assert "drafts its block" in text


def test_gemma3_is_a_uniform_pool_in_sglang_and_gpt_oss_a_hybrid_swa_one() -> None:
    pools = {r["inputs"]["config"]: r["answer"]["pool"] for r in ROWS if "error" not in r["answer"]}
    assert pools["target-hybrid-swa__google__gemma-3-27b-it.json"] == "default"
    assert pools["target-hybrid-swa__openai__gpt-oss-120b.json"] == "hybrid_swa"


def test_without_the_architecture_a_sliding_window_target_gets_no_prediction() -> None:
    cfg = config({"config": "target-hybrid-swa__openai__gpt-oss-120b.json"})
    sglang = profile("sglang")
    assert isinstance(sglang, ConfigHybridPoolPredictor)
    pred = sglang.predict_hybrid_pool_from_config(
        config={"text_config": cfg}, speculative={}, kv_cache_memory_bytes=8 << 30,
        target=kv_geometry(cfg, dtype="bf16"), drafter=None, draft_charge=None, has_drafter=False, block_size=1,
        configured_max_total_tokens=None)
    assert pred.with_drafter is None and "listed architectures" in " ".join(pred.notes)

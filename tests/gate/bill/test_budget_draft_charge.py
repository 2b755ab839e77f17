"""SGLang's draft charge as SGLang 0.5.23 computes it (issue 21 item 7), and the bill showing it.

The class: for STANDALONE/EAGLE/EAGLE3/NEXTN, SGLang sizes the pool with the target's KV per full-attention
layer times the draft's layers (pool_configurator.py:229-237, :311-314), whatever the draft's own heads.
(1) an EAGLE-3 head whose geometry differs from the target's layers is charged that, not its own bytes — the
bill's per-mix "charged" must be SGLang's, and the head's own need is shown beside it; (2) on a hybrid target
the divisor is the full-attention layers, not all layers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.bill.budget import compute_budget
from gate.bill.facts import artifact_facts
from gate.inputs.configs import load_config
from gate.model.engines import SGLANG, VLLM
from gate.model.geometry import kv_geometry, mtp_drafter_geometry
from gate.plan.model import plan_from_dict
from tests.gate.helpers import CONFIGS

DSV3 = "target-mla-mtp__deepseek-ai__DeepSeek-V3.json"
DSV3_HEAD = "eagle3__specforge__deepseek-v3-671b-eagle3.json"
QWEN3_NEXT = "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"
GPT_OSS = "target-hybrid-swa__openai__gpt-oss-120b.json"


def _geom(name: str, tp: int = 1, dtype: str = "bf16"):
    return kv_geometry(load_config(CONFIGS / name), dtype=dtype, tp=tp)


@pytest.mark.parametrize(("tp", "own", "charge"), [
    (1, 4_096, 1_152),  # the numbers: 8 KV heads x 128 x 2 x 2 B vs one MLA layer (512 + 64) x 2 B
    (2, 2_048, 1_152),  # MHA heads split by TP, MLA is not
    (8, 512, 1_152),    # at TP 8 the head's own need is below the charge
])
def test_eagle3_head_on_mla_target_is_charged_the_targets_layer(tp: int, own: int, charge: int) -> None:
    t, d = _geom(DSV3, tp), _geom(DSV3_HEAD, tp)
    assert (t.bytes_per_token, t.num_layers, d.attention_bytes_per_token, d.num_layers) == (61 * 1_152, 61, own, 1)
    got, why = SGLANG.draft_charge("eagle3", t, d)
    assert got == charge and why is not None
    assert f"{61 * 1_152:,} B x 1/61 layers = {charge:,} B/token" in why
    if own > charge:  # the draft pool holds the head's own geometry for the tokens SGLang sized
        assert f"{own - charge:,} B/token more than SGLang's sizing reserved" in why
    assert VLLM.draft_charge("eagle3", t, d) == (own, None)  # vLLM: the head's own layers in the one pool


@pytest.mark.parametrize(("tp", "concurrency", "prompt", "output"), [(1, 32, 4096, 1024), (2, 3, 30_000, 700)])
def test_bill_charges_sglangs_number_and_shows_the_heads_need(tmp_path: Path, tp: int, concurrency: int,
                                                              prompt: int, output: int) -> None:
    plan = plan_from_dict({
        "name": "dsv3-eagle3-sglang",
        "target": {"name": "deepseek-ai/DeepSeek-V3", "config": str(CONFIGS / DSV3)},
        "drafter": {"name": "dsv3-eagle3", "config": str(CONFIGS / DSV3_HEAD)},
        "engine": {"kind": "sglang", "tp": tp, "kv_dtype": "bf16", "kv_cache_memory_bytes": 20 * 2**30,
                   "speculative": {"method": "eagle3", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}},
        "workload": [{"name": "chat", "concurrency": concurrency, "prompt_tokens": prompt, "output_tokens": output}],
    })
    b = compute_budget(plan, artifact_facts(plan))
    own = 4_096 // tp
    assert b.drafter is not None and b.drafter.kv_bytes_per_token == own
    assert b.drafter.engine_charge_bytes_per_token == 1_152
    mix = b.mixes[0]
    tokens = concurrency * (prompt + output)
    assert mix.drafter_need_bytes == tokens * own
    assert mix.drafter_charged_bytes == tokens * 1_152  # was tokens x own: the head's need shown as SGLang's charge
    # the pool is sized with SGLang's charge: available // (target cell + 1,152)
    assert b.pool.predicted_with_drafter == 20 * 2**30 // (61 * 1_152 + 1_152)


@pytest.mark.parametrize(("name", "full", "layers"), [
    (QWEN3_NEXT, 12, 48),  # full_attention_interval 4: 12 of 48 layers hold KV
    (GPT_OSS, 18, 36),     # alternating sliding/full: the sliding ones are not in the full cell
])
def test_hybrid_target_divides_by_its_full_attention_layers(name: str, full: int, layers: int) -> None:
    t = _geom(name)
    per_layer = t.bytes_per_token // full
    assert t.num_layers == layers and per_layer * full == t.bytes_per_token
    head = kv_geometry({"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "hidden_size": 2048,
                        "num_attention_heads": 16, "num_key_value_heads": 3, "head_dim": 128}, dtype="bf16")
    for method in ("eagle3", "eagle", "draft_model"):
        charge, why = SGLANG.draft_charge(method, t, head)
        assert charge == per_layer != head.attention_bytes_per_token  # before: t.bytes_per_token / all layers = per_layer * full / layers
        assert why is not None and f"by its {full} full-attention layers, not by all {layers}" in why
    assert SGLANG.draft_charge("dflash", t, head)[0] == head.attention_bytes_per_token  # own geometry


def test_hybrid_mtp_head_charge() -> None:
    # An MTP head on a Qwen3-Next-shaped target: one full-attention layer's bytes per MTP layer.
    cfg = load_config(CONFIGS / QWEN3_NEXT)
    cfg = {**cfg, "num_nextn_predict_layers": 2}
    t = kv_geometry(cfg, dtype="bf16")
    d = mtp_drafter_geometry(t)
    charge, _ = SGLANG.draft_charge("mtp", t, d)
    assert charge == 2 * (t.bytes_per_token // 12) == d.attention_bytes_per_token


def test_uniform_targets_unchanged() -> None:
    # The real SGLang 0.5.23 CPU arm (tests/e2e/test_sglang_membound.py): 1-layer 256 B draft next to the
    # 2-layer 1,024 B tiny target is charged 512 B.
    t, d = _geom("tiny-target.json", dtype="fp32"), _geom("tiny-draft.json", dtype="fp32")
    assert SGLANG.draft_charge("draft_model", t, d)[0] == 512
    assert json.loads(json.dumps(SGLANG.draft_kv_note)) and "draft slot per target token" in SGLANG.draft_kv_note
    assert "same KV pool" in VLLM.draft_kv_note

"""KV geometry from real config.json files; every expected number is computed by hand from the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.inputs.configs import load_config
from gate.model.config import ConfigError, resolve_text_config
from gate.model.dtypes import DTYPE_BYTES
from gate.model.engines import SGLANG, VLLM
from gate.model.geometry import (
    classify_layers,
    drafter_context_tokens,
    drafter_kv_bytes_per_token,
    kv_geometry,
    mtp_drafter_geometry,
)
from gate.model.pools import drafter_kv_need

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"


def cfg(name: str) -> dict:
    return load_config(CONFIGS / name)


LLAMA = "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json"
QWEN3 = "target-gqa__Qwen__Qwen3-8B.json"
DSV3 = "target-mla-mtp__deepseek-ai__DeepSeek-V3.json"
GPT_OSS = "target-hybrid-swa__openai__gpt-oss-120b.json"
QWEN3_NEXT = "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json"

# Seed 002: Ling-3.0-flash-dspark is a five-layer BF16 transformer, 2,560 hidden, 32 q / 32 KV heads.
LING_DSPARK = {
    "architectures": ["DSparkDraftModel"],
    "num_hidden_layers": 5,
    "hidden_size": 2560,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "torch_dtype": "bfloat16",
}


def test_dtype_bytes_cover_short_and_torch_names() -> None:
    assert DTYPE_BYTES["bf16"] == DTYPE_BYTES["bfloat16"] == 2
    assert DTYPE_BYTES["fp16"] == DTYPE_BYTES["float16"] == 2
    assert DTYPE_BYTES["fp8"] == DTYPE_BYTES["float8_e4m3fn"] == 1
    assert DTYPE_BYTES["fp32"] == DTYPE_BYTES["float32"] == 4


def test_llama_3_1_8b_derives_head_dim() -> None:
    # No head_dim field: 4096 / 32 = 128. 32 layers × 2 (K,V) × 8 KV heads × 128 × 2 B = 131,072.
    g = kv_geometry(cfg(LLAMA))
    assert g.breakdown()["head_dim"] == 128
    assert g.bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072
    assert g.dtype == "bf16" and g.num_layers == 32
    assert g.breakdown()["full_attention"] == {"layers": 32, "bytes_per_token_per_layer": 4096,
                                             "bytes_per_token": 131_072}


def test_qwen3_8b() -> None:
    # 36 layers × 2 × 8 KV heads × head_dim 128 × 2 B = 147,456.
    assert kv_geometry(cfg(QWEN3)).bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456


def test_deepseek_v3_mla_and_mtp() -> None:
    # MLA: (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B = 1,152 per layer; 61 layers = 70,272.
    g = kv_geometry(cfg(DSV3))
    assert g.bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    assert g.breakdown()["mla"]["layers"] == 61
    # The MTP layer (num_nextn_predict_layers 1) is reported, not counted in the target's bytes.
    assert g.breakdown()["mtp"]["layers"] == 1
    assert g.breakdown()["mtp"]["bytes_per_token_per_layer"] == 1_152
    assert g.mtp_bytes_per_token == 1_152
    assert len([x for x in g.layers if x.kind == "mtp"]) == 1
    mtp = mtp_drafter_geometry(g)
    assert mtp.bytes_per_token == 1_152 and drafter_kv_bytes_per_token(mtp, "full") == 1_152


def test_mla_is_not_divided_by_tp() -> None:
    assert kv_geometry(cfg(DSV3), tp=8).bytes_per_token == 70_272


def test_ling_dspark_drafter_from_seed_002() -> None:
    # head_dim 2560 / 32 = 80; 5 layers × 2 × 32 KV heads × 80 × 2 B = 51,200.
    g = kv_geometry(LING_DSPARK)
    assert g.breakdown()["head_dim"] == 80
    assert g.bytes_per_token == 5 * 2 * 32 * 80 * 2 == 51_200


def test_gpt_oss_120b_sliding_layers_are_capped_not_counted() -> None:
    # layer_types: 18 sliding + 18 full; each 2 × 8 KV × head_dim 64 × 2 B (no torch_dtype → bf16) = 2,048.
    g = kv_geometry(cfg(GPT_OSS))
    assert g.dtype == "bf16"
    assert g.bytes_per_token == 18 * 2 * 8 * 64 * 2 == 36_864
    s = g.breakdown()["sliding_attention"]
    assert s["layers"] == 18 and s["window"] == 128 and s["bytes_per_token_per_layer"] == 2_048
    assert s["max_bytes_per_sequence"] == 18 * 2_048 * 128 == 4_718_592


def test_qwen3_next_hybrid_linear_layers_hold_constant_state() -> None:
    # full_attention_interval 4 over 48 layers: 12 full, 36 Gated DeltaNet layers.
    g = kv_geometry(cfg(QWEN3_NEXT))
    kinds = classify_layers(cfg(QWEN3_NEXT))
    assert kinds[3] == kinds[47] == "full_attention" and kinds[0] == kinds[46] == "linear_attention"
    # Full layers: 2 × 2 KV heads × head_dim 256 × 2 B = 2,048; 12 layers = 24,576.
    assert g.bytes_per_token == 12 * 2 * 2 * 256 * 2 == 24_576
    # GDN state per layer: conv (kernel 4 − 1) × (2 × 16 key heads × 128 + 32 value heads × 128)
    # + recurrent 32 value heads × 128 × 128, in bf16.
    per_layer = (3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 2
    assert per_layer == 1_097_728
    lin = g.breakdown()["linear_attention"]
    assert lin["layers"] == 36 and lin["state_bytes_per_layer"] == per_layer
    assert g.state_bytes_per_sequence == lin["state_bytes_per_sequence"] == 36 * per_layer


def test_tiny_vllm_cpu_models() -> None:
    # Target: 2 layers × 2 (K,V) × head_dim 32 × 4 B (fp32) × 2 KV heads = 1,024 B/token.
    assert kv_geometry(cfg("tiny-target.json")).bytes_per_token == 2 * 2 * 32 * 4 * 2 == 1_024
    # Draft: 1 layer × 2 × 32 × 4 B × 1 KV head = 256 B/token.
    assert kv_geometry(cfg("tiny-draft.json")).bytes_per_token == 1 * 2 * 32 * 4 * 1 == 256


def test_tp_divides_kv_heads_but_never_below_one() -> None:
    # Llama: 8 KV heads; TP 4 → 2 per rank: 32 × 2 × 2 × 128 × 2 = 32,768; TP 16 → max(1, 0) = 1.
    assert kv_geometry(cfg(LLAMA), tp=4).bytes_per_token == 32_768
    assert kv_geometry(cfg(LLAMA), tp=16).bytes_per_token == 32 * 2 * 1 * 128 * 2


def test_dtype_override() -> None:
    # fp8 halves bf16: 131,072 / 2.
    g = kv_geometry(cfg(LLAMA), dtype="fp8")
    assert g.bytes_per_token == 65_536 and g.dtype == "fp8" and g.dtype_bytes == 1


def test_nested_text_config_and_speculators_layer_config() -> None:
    wrapped = {"architectures": ["Qwen3VLForConditionalGeneration"], "torch_dtype": "bfloat16",
               "text_config": {k: v for k, v in cfg(QWEN3).items() if k != "torch_dtype"}}
    assert kv_geometry(wrapped).bytes_per_token == 147_456
    omni = {"thinker_config": {"text_config": cfg(QWEN3)}}
    assert kv_geometry(omni).bytes_per_token == 147_456
    # Speculators EAGLE-3: 1 layer × 2 × 8 × 128 × 4 B (wrapper torch_dtype float32) = 8,192.
    spec = cfg("eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted.json")
    assert resolve_text_config(spec)["draft_vocab_size"] == 32_000
    assert kv_geometry(spec).bytes_per_token == 8_192


def test_sliding_rules() -> None:
    base = {"num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 1}
    # sliding_window set, use_sliding_window absent (Mistral 7B v0.1 style): every layer slides.
    assert classify_layers({**base, "sliding_window": 64}) == ["sliding_attention"] * 4
    # use_sliding_window false (Qwen3): none slides.
    assert classify_layers({**base, "sliding_window": 64, "use_sliding_window": False}) == ["full_attention"] * 4
    # Gemma 2: even layers slide.
    assert classify_layers({**base, "model_type": "gemma2", "sliding_window": 64}) == [
        "sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    # Gemma 3: every 6th layer is global.
    g3 = {**base, "num_hidden_layers": 12, "model_type": "gemma3_text", "sliding_window": 512}
    kinds = classify_layers(g3)
    assert [i for i, k in enumerate(kinds) if k == "full_attention"] == [5, 11]
    # An explicit layer_types list wins over sliding_window.
    assert classify_layers({**base, "sliding_window": 64,
                            "layer_types": ["full_attention"] * 4}) == ["full_attention"] * 4


def test_drafter_scopes_need_versus_engine_charge() -> None:
    ling = kv_geometry(LING_DSPARK)
    # Geometric need: full = N tokens, window = window + sink, block = the 8-token block (seed 002).
    assert drafter_context_tokens("full", 30_697) == 30_697
    assert drafter_context_tokens("window", 30_697, window=4_096, sink=4) == 4_100
    assert drafter_context_tokens("window", 1_000, window=4_096, sink=4) == 1_000
    assert drafter_context_tokens("block", 30_697, block_size=8) == 8
    need = drafter_kv_need(ling, "block", 30_697, engine=SGLANG, block_size=8)
    assert need.need_bytes == 8 * 51_200
    # SGLang gives the draft a slot per target token: 30,697 × 51,200 charged.
    assert need.charged_bytes == 30_697 * 51_200
    assert need.over_reserved_bytes == (30_697 - 8) * 51_200
    assert (need.engine, need.pool) == ("sglang", "engine_pool")  # charged in SGLang's pool sizing
    full = drafter_kv_need(ling, "full", 30_697, engine=VLLM)  # the note: the profile's
    assert full.over_reserved_bytes == 0 and "same KV pool" in full.note and full.pool == "engine_pool"


def test_bad_configs_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        kv_geometry({"hidden_size": 128, "num_attention_heads": 4})
    with pytest.raises(ConfigError, match="layer_types has 1 entries"):
        kv_geometry({"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
                     "layer_types": ["full_attention"]})
    with pytest.raises(ConfigError, match="unknown dtype"):
        kv_geometry(cfg(LLAMA), dtype="int3")
    with pytest.raises(ConfigError, match="scope"):
        drafter_context_tokens("everything", 10)  # type: ignore[arg-type]


def test_load_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(bad)
    arr = tmp_path / "arr.json"
    arr.write_text(json.dumps([1, 2]), encoding="utf-8")
    with pytest.raises(ConfigError, match="not a JSON object"):
        load_config(arr)
    # A directory holding config.json is read as that file.
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(LING_DSPARK), encoding="utf-8")
    assert load_config(tmp_path / "model")["hidden_size"] == 2560

"""vLLM 0.32's own KV sizing of a Mamba-2 hybrid (Nemotron-H), the `mamba` rows recorded by
tools/oracle/vllm_mamba_sizing.py (NemotronH's own state shapes and SSM dtype, `_align_hybrid_block_size`,
`get_kv_cache_configs`, `get_kv_cache_capacity`, called in-process), replayed against the gate's vLLM hybrid pool
(gate/model/engines/vllm/pools.py): every row agrees exactly, replayed with the other rows by
test_oracle_kv_sizing.py's `gate_answer`, which hands these to `mamba_answer`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.model.engines import profile
from gate.model.engines.base import HybridPoolPredictor
from gate.model.engines.vllm.pools import (
    LayerSpec,
    layer_specs,
    vllm_aligned_block,
    vllm_blocks_per_request,
    vllm_capacity_tokens,
    vllm_kv_groups,
    vllm_mamba2_state,
    vllm_num_blocks,
)
from gate.model.geometry import kv_geometry

TESTS = Path(__file__).resolve().parents[4]
FIXTURE = TESTS / "fixtures" / "oracle" / "vllm-0.32.0-kv-sizing.json"
ROWS: list[dict[str, Any]] = [r for r in json.loads(FIXTURE.read_text())["rows"] if r["inputs"].get("kind") == "mamba"]
NEMOTRON = "target-hybrid-mamba__nvidia__Nemotron-3-Nano-30B-A3B__jax-llm-examples.json"
KERNEL_MULTIPLE = {"CPU_ATTN": 32, "FLASH_ATTN": 16}  # get_supported_kernel_block_sizes of vLLM 0.32


def config(name: str = NEMOTRON) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((TESTS / "fixtures" / "configs" / name).read_text())
    return out


def mamba_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The gate's answer for a `mamba` row in the recorder's shape: vLLM's Mamba-2 state (with k widening its conv
    state), the block aligned to it, then the pool at that block; vLLM's refusal where one request at
    max_model_len does not fit the usable blocks (vLLM keeps one null block back)."""
    cfg = config(inputs["config"])
    geom = kv_geometry(cfg, dtype="bf16")
    k = inputs.get("num_speculative_tokens", 0)
    state = vllm_mamba2_state(cfg, geom, k)
    assert isinstance(state, int)
    specs = layer_specs(geom, state)
    assert specs is not None
    full = next(x for x in specs if x.kind == "full")
    return {"state_bytes": state, **aligned_pool_answer(inputs, specs, full.bytes_per_token, state, k)}


def aligned_pool_answer(inputs: dict[str, Any], specs: list[LayerSpec], full_bytes_per_token: int, state: int,
                        k: int) -> dict[str, Any]:
    """A state hybrid's row (linear or Mamba-2): the block vLLM aligns to the state, then the pool at that block, or
    vLLM's refusal where one request at max_model_len does not fit the usable blocks (one null block kept back)."""
    block = vllm_aligned_block(full_bytes_per_token, state, KERNEL_MULTIPLE[inputs["attention_backend"]],
                               inputs["start_block_size"])
    length, mode = inputs["max_model_len"], inputs["mamba_cache_mode"]
    groups = vllm_kv_groups(specs)
    blocks = vllm_num_blocks(inputs["kv_cache_memory_bytes"], groups, block)
    if blocks - 1 < vllm_blocks_per_request(groups, block, length, length, mamba_cache_mode=mode,
                                            num_speculative_blocks=k):
        return {"block_size": block, "error": True}
    return {"block_size": block, "num_gpu_blocks": blocks,
            "kv_cache_size_tokens": vllm_capacity_tokens(blocks, groups, block, length, length, mamba_cache_mode=mode,
                                                         num_speculative_blocks=k)}


def test_the_fixture_covers_nemotron_h_backends_modes_and_speculation() -> None:
    """Nemotron-H's Mamba-2 state, as vLLM sizes it: 3 conv columns of 6,144 bf16 values and a 64 x 64 x 128
    float32 SSM state (the config's mamba_ssm_cache_dtype) = 2,134,016 B, 2,170,880 B with 3 draft tokens; 23 Mamba-2
    layers in groups of 6 beside the 6 attention layers (MLP and MoE layers hold nothing)."""
    assert {r["inputs"]["config"] for r in ROWS} == {NEMOTRON}
    assert {(r["inputs"]["attention_backend"], r["inputs"]["mamba_cache_mode"], r["inputs"]["drafter"])
            for r in ROWS} == {(b, m, d) for b in KERNEL_MULTIPLE for m in ("align", "none") for d in ("none", "ngram")}
    assert sum("error" not in r["answer"] for r in ROWS) >= 60
    assert {(r["inputs"]["drafter"], r["answer"]["state_bytes"], r["answer"]["ssm_dtype"]) for r in ROWS
            if "error" not in r["answer"]} == {("none", 2134016, "float32"), ("ngram", 2170880, "float32")}
    blocks = {(r["inputs"]["attention_backend"], r["inputs"]["drafter"], r["answer"]["block_size"])
              for r in ROWS if r["inputs"]["start_block_size"] == 16}
    assert blocks == {("CPU_ATTN", "none", 2112), ("FLASH_ATTN", "none", 2096), ("CPU_ATTN", "ngram", 2144),
                      ("FLASH_ATTN", "ngram", 2128)}
    # vLLM's own CPU start (128 without --block-size) steps by 128: 2,176 with and without k = 3
    assert {(r["inputs"]["drafter"], r["answer"]["block_size"]) for r in ROWS
            if r["inputs"]["start_block_size"] == 128} == {("none", 2176), ("ngram", 2176)}
    assert {json.dumps(r["answer"]["groups"]) for r in ROWS if "error" not in r["answer"]} == {
        json.dumps([["MambaSpec", 6]] * 3 + [["MambaSpec", 5], ["FullAttentionSpec", 6]])}


def test_the_gates_state_is_vllms_on_every_row() -> None:
    """The state each row's block was aligned to (the pools themselves are replayed with the other rows)."""
    assert all(mamba_answer(r["inputs"])["state_bytes"] == r["answer"]["state_bytes"] for r in ROWS)


@pytest.mark.parametrize("index", [i for i, r in enumerate(ROWS) if "error" not in r["answer"]])
def test_the_profile_predicts_vllms_mamba_pool_from_the_block_vllm_reports(index: int) -> None:
    """Before: no predicted pool on a Mamba-2 hybrid ("Mamba-2 layers are not modelled"). Given engine.block_size
    as vLLM reports it and the target's config, the profile's pool is vLLM's own: num_gpu_blocks, and
    kv_cache_size_tokens with prefix caching on (the prediction's tokens) or off (its per-request blocks)."""
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    cfg = config(inputs["config"])
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    k = inputs.get("num_speculative_tokens")
    length = inputs["max_model_len"]
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"],
                                    target=kv_geometry(cfg, dtype="bf16"), drafter=None, draft_charge=None,
                                    has_drafter=False, block_size=answer["block_size"],
                                    configured_max_total_tokens=None, context_cap_tokens=length, depth=k, config=cfg)
    rb = pred.request_blocks
    assert rb is not None and rb.speculative_blocks == (k or 0)
    assert pred.blocks_with_drafter == answer["num_gpu_blocks"]
    tokens = pred.with_drafter if inputs["mamba_cache_mode"] == "align" else rb.capacity_tokens(
        answer["num_gpu_blocks"], length, False)
    assert tokens == answer["kv_cache_size_tokens"]


def test_a_mamba_pool_needs_the_config_and_nemotron_hs_rule() -> None:
    """Without the target's config, or for another Mamba-2 architecture (whose SSM dtype rule is not modelled), no
    pool is predicted and the note says why; a block below vLLM's state is refused with both minima."""
    cfg = config()
    geom = kv_geometry(cfg, dtype="bf16")
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    granite = {**cfg, "architectures": ["GraniteMoeHybridForCausalLM"]}
    for given, why in ((None, "config.json is not given"), (granite, "'GraniteMoeHybridForCausalLM' is not modelled"),
                       ({**cfg, "mamba_ssm_cache_dtype": "int4"}, "mamba_ssm_cache_dtype")):
        pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=geom, drafter=None, draft_charge=None,
                                        has_drafter=False, block_size=2112, configured_max_total_tokens=None,
                                        context_cap_tokens=32768, config=given)
        assert (pred.with_drafter, pred.without_drafter, pred.blocks_with_drafter) == (None, None, None)
        assert "Mamba-2 state cannot be sized" in " ".join(pred.notes) and why in " ".join(pred.notes)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=geom, drafter=None, draft_charge=None,
                                    has_drafter=False, block_size=16, configured_max_total_tokens=None,
                                    context_cap_tokens=32768, config=cfg)
    text = " ".join(pred.notes)
    assert pred.with_drafter is None and "from --block-size 16, 2,096 with FlashAttention, 2,112 with the CPU" in text
    assert "2,096 with FlashAttention (from 16), 2,176 with the CPU backend (from 128)" in text  # the oracle's rows


def test_the_ssm_state_is_float32_unless_the_config_says_otherwise() -> None:
    """vLLM's Nemotron-H rule, not the model dtype: float32 by default (1,085,440 B would be the bf16 state the
    geometry counts), the config's mamba_ssm_cache_dtype where given (bf16 here: the geometry's own size)."""
    cfg = config()
    geom = kv_geometry(cfg, dtype="bf16")
    without = {k: v for k, v in cfg.items() if k != "mamba_ssm_cache_dtype"}
    bf16 = {**cfg, "mamba_ssm_cache_dtype": "bfloat16"}
    assert vllm_mamba2_state(without, geom) == vllm_mamba2_state(cfg, geom) == 2134016
    assert vllm_mamba2_state(bf16, geom) == {x.state_bytes for x in geom.layers if x.kind == "mamba"}.pop() == 1085440
    assert vllm_mamba2_state(cfg, kv_geometry(cfg, dtype="bf16", tp=2)) == 2134016 // 2


def test_align_mode_holds_a_prefill_checkpoint_block_per_mamba2_group() -> None:
    """vLLM 0.32's `MambaMixer2.get_kv_cache_spec` sets num_prefill_checkpoint_blocks=1, which align mode prices
    (MambaSpec.max_memory_usage_bytes: 2 + 1 + k pages): CPU from 16, 1 GiB, 8,192 tokens, no speculation is 82
    blocks and 41,984 tokens = int(82 / (4 attention + 4 groups x 3) x 8,192); at 2 state blocks per group (Gated
    DeltaNet's count, the gate's before) it was 55,978. "none" mode keeps 1 + k."""
    (row,) = [r for r in ROWS if r["inputs"]["attention_backend"] == "CPU_ATTN" and r["inputs"]["start_block_size"] == 16
              and r["inputs"]["kv_cache_memory_bytes"] == 1 << 30 and r["inputs"]["max_model_len"] == 8192
              and r["inputs"]["mamba_cache_mode"] == "align" and r["inputs"]["drafter"] == "none"]
    assert (row["answer"]["num_gpu_blocks"], row["answer"]["kv_cache_size_tokens"]) == (82, 41984)
    cfg = config()
    geom = kv_geometry(cfg, dtype="bf16")
    state = vllm_mamba2_state(cfg, geom)
    assert isinstance(state, int)
    specs = layer_specs(geom, state)
    assert specs is not None and {x.checkpoint_blocks for x in specs if x.kind == "linear"} == {1}
    groups = vllm_kv_groups(specs)
    assert vllm_blocks_per_request(groups, 2112, 8192, 8192) == 4 + 4 * 3
    assert vllm_blocks_per_request(groups, 2112, 8192, 8192, mamba_cache_mode="none") == 4 + 4 * 1
    pred = profile("vllm").predict_hybrid_pool(  # type: ignore[attr-defined]
        kv_cache_memory_bytes=1 << 30, target=geom, drafter=None, draft_charge=None, has_drafter=False,
        block_size=2112, configured_max_total_tokens=None, context_cap_tokens=8192, config=cfg)
    rb = pred.request_blocks
    assert rb is not None and (rb.state_blocks(True), rb.state_blocks(False)) == (3, 1)
    assert pred.without_drafter == 41984

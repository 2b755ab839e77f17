"""vLLM 0.32's own KV sizing of hybrid targets, recorded by tools/oracle/vllm_kv_sizing.py (vLLM's
`get_kv_cache_configs` and `get_kv_cache_capacity` called in-process), replayed against the gate's vLLM hybrid pool
(gate/model/engines/vllm/pools.py, issue 35.3): every row agrees exactly or is a stated exception."""

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
    vllm_blocks_per_request,
    vllm_capacity_tokens,
    vllm_kv_groups,
    vllm_num_blocks,
)
from gate.model.geometry import kv_geometry
from tests.gate.model.engines.oracle import exceptions
from tests.gate.model.engines.vllm.test_oracle_mamba_sizing import (
    KERNEL_MULTIPLE,
    aligned_pool_answer,
    mamba_answer,
)

TESTS = Path(__file__).resolve().parents[4]
ORACLE = TESTS / "fixtures" / "oracle"
FIXTURE = ORACLE / "vllm-0.32.0-kv-sizing.json"
ROWS: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["rows"]


def specs(inputs: dict[str, Any]) -> list[LayerSpec]:
    cfg = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    out = layer_specs(kv_geometry(cfg, dtype="bf16"))
    assert out is not None
    if inputs["drafter"] == "full_layer":
        out += [next(x for x in out if x.kind == "full")] * inputs.get("drafter_layers", 1)
    return out


def extra_retained_tokens(inputs: dict[str, Any]) -> int:
    """vLLM 0.32's one use of k in sliding-window sizing (`get_kv_cache_configs`): every sliding layer retains
    `num_prefill_lookahead_tokens - 1` more tokens, which is k - 1 for multi-module MTP (`use_multi_module_mtp`: MTP
    with min(modules, k) > 1) and 0 for every other method (EAGLE-family: 1 lookahead; ngram, draft model: 0)."""
    k, layers = inputs.get("num_speculative_tokens", 0), inputs.get("drafter_layers", 1)
    return k - 1 if inputs.get("method") == "mtp" and min(layers, k) > 1 else 0


LINEAR = [i for i, r in enumerate(ROWS) if r["inputs"].get("kind") == "linear"]
SWA = [i for i, r in enumerate(ROWS) if r["inputs"].get("kind") not in ("linear", "mamba")]
LINEAR_CONFIGS = ("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json",
                  "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json")


def draft_conv_bytes(cfg: dict[str, Any]) -> int:
    """Bytes one draft token widens a Gated DeltaNet layer's conv state by: one column of conv_dim bf16 values
    (vLLM's `gated_delta_net_state_shape(num_spec=k)`: conv_dim = 2 x key heads x key dim + value heads x value
    dim, kernel - 1 + k columns)."""
    text = cfg.get("text_config", cfg)
    conv_dim = (2 * text["linear_num_key_heads"] * text["linear_key_head_dim"]
                + text["linear_num_value_heads"] * text["linear_value_head_dim"])
    return 2 * conv_dim


def linear_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The gate's answer for a linear row: the aligned block from the state, then the pool at that block; with k MTP
    draft tokens the state widened by k conv columns, the MTP layer's full attention (the target's heads) in the
    pool and k more state blocks per linear group per request."""
    cfg = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    specs = layer_specs(kv_geometry(cfg, dtype="bf16"))
    assert specs is not None
    full = next(x for x in specs if x.kind == "full")
    k = inputs.get("num_speculative_tokens", 0)
    assert (inputs["drafter"] in ("mtp", "ngram")) == (k > 0)
    state = max(x.state_bytes or 0 for x in specs) + k * draft_conv_bytes(cfg)
    if inputs["drafter"] == "mtp":
        specs.append(full)  # one MTP layer: neither fixture names num_nextn_predict_layers, vLLM's default is 1
    return aligned_pool_answer(inputs, specs, full.bytes_per_token, state, k)


def gate_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The gate's answer in the recorder's shape; vLLM's refusal where one request at max_model_len does not fit
    the usable blocks (vLLM keeps one null block back)."""
    if inputs.get("kind") == "linear":
        return linear_answer(inputs)
    if inputs.get("kind") == "mamba":  # Nemotron-H: test_oracle_mamba_sizing.py
        return {k: v for k, v in mamba_answer(inputs).items() if k != "state_bytes"}
    block, length, in_flight = inputs["block_size"], inputs["max_model_len"], inputs["max_in_flight_tokens"]
    groups = vllm_kv_groups(specs(inputs))
    blocks = vllm_num_blocks(inputs["kv_cache_memory_bytes"], groups, block)
    extra = extra_retained_tokens(inputs)
    if blocks - 1 < vllm_blocks_per_request(groups, block, length, in_flight, extra):
        return {"error": True}
    return {"num_gpu_blocks": blocks, "kv_cache_size_tokens": vllm_capacity_tokens(blocks, groups, block, length,
                                                                                   in_flight, extra)}


def engine_answer(answer: dict[str, Any]) -> dict[str, Any]:
    block = {"block_size": answer["block_size"]} if "block_size" in answer else {}
    if "error" in answer:
        return {**block, "error": True}
    return {**block, **{k: answer[k] for k in ("num_gpu_blocks", "kv_cache_size_tokens")}}


SWA_K = [i for i, r in enumerate(ROWS) if r["inputs"].get("kind") == "swa_k"]


def test_k_changes_vllms_sliding_window_sizing_only_for_multi_module_mtp() -> None:
    """k = 1, 3, 5 (EAGLE-3, 5-module MTP, ngram) against the k = 0 rows: `num_gpu_blocks` never moves with k (the
    drafter's layers move it, not k); vLLM retains k - 1 more tokens per sliding layer only for multi-module MTP, so
    only there, and only at in-flight tokens below max_model_len, does its kv_cache_size_tokens fall (gpt-oss, block
    16, in-flight 2,048: 170,918 at k = 1, 170,840 at k = 3 and 5). At in-flight = max_model_len (the pool the gate
    judges) k changes nothing: the gate's SWA prediction needs no k."""
    rows = [ROWS[i] for i in SWA_K]
    assert {r["inputs"]["num_speculative_tokens"] for r in rows} == {1, 3, 5}
    assert {r["inputs"]["method"] for r in rows} == {"eagle3", "mtp", "ngram"}
    assert {r["inputs"]["config"] for r in rows} == {ROWS[i]["inputs"]["config"] for i in SWA if i not in SWA_K}
    for r in rows:
        i = r["inputs"]
        if "error" not in r["answer"]:
            assert r["answer"]["extra_retained_tokens"] == [extra_retained_tokens(i)]
        base = {k: i[k] for k in ("config", "kv_cache_memory_bytes", "block_size", "max_model_len",
                                  "max_in_flight_tokens", "drafter")}
        same = [q for q in rows if q["inputs"]["method"] == i["method"]
                and {k: q["inputs"][k] for k in base} == base]
        assert len(same) == 3  # k = 1, 3, 5
        assert len({q["answer"].get("num_gpu_blocks") for q in same}) == 1
        tokens = {q["answer"].get("kv_cache_size_tokens") for q in same}
        moves = i["method"] == "mtp" and i["max_in_flight_tokens"] < i["max_model_len"]
        if not moves:
            assert len(tokens) == 1, (i, tokens)
    gpt = {(ROWS[i]["inputs"]["num_speculative_tokens"], ROWS[i]["answer"]["kv_cache_size_tokens"]) for i in SWA_K
           if ROWS[i]["inputs"]["config"].endswith("gpt-oss-120b.json") and ROWS[i]["inputs"]["method"] == "mtp"
           and ROWS[i]["inputs"]["block_size"] == 16 and ROWS[i]["inputs"]["max_in_flight_tokens"] == 2048}
    assert gpt == {(1, 170918), (3, 170840), (5, 170840)}
    nospec = {ROWS[i]["answer"].get("num_gpu_blocks") for i in SWA if i not in SWA_K
              and ROWS[i]["inputs"]["config"].endswith("gpt-oss-120b.json") and ROWS[i]["inputs"]["drafter"] == "none"
              and ROWS[i]["inputs"]["block_size"] == 16 and ROWS[i]["inputs"]["kv_cache_memory_bytes"] == 8 << 30}
    assert nospec == {14563} == {ROWS[i]["answer"]["num_gpu_blocks"] for i in SWA_K if ROWS[i]["inputs"]["method"]
                                 == "ngram" and ROWS[i]["inputs"]["config"].endswith("gpt-oss-120b.json")
                                 and ROWS[i]["inputs"]["block_size"] == 16}


def test_the_fixture_covers_every_hybrid_swa_family_and_both_arms() -> None:
    configs = {r["inputs"]["config"] for r in ROWS}
    assert {"target-hybrid-swa__openai__gpt-oss-120b.json", "target-hybrid-swa__google__gemma-3-27b-it.json"} <= configs
    assert {ROWS[i]["inputs"]["drafter"] for i in SWA} == {"none", "full_layer"}
    assert sum("error" not in r["answer"] for r in ROWS) >= 100


def test_the_fixture_covers_both_linear_hybrids_backends_and_cache_modes() -> None:
    rows = [ROWS[i]["inputs"] for i in LINEAR]
    assert {r["config"] for r in rows} == {"target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json",
                                           "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"}
    assert {r["attention_backend"] for r in rows} == {"CPU_ATTN", "FLASH_ATTN"}
    assert {r["mamba_cache_mode"] for r in rows} == {"align", "none"}
    assert sum("error" not in ROWS[i]["answer"] for i in LINEAR) >= 60
    # the backend decides the block: Qwen3.5-27B's 1,634,304 B state over 4,096 B/token of attention per layer
    # gets 416 on CPU (multiples of 32), 400 with FlashAttention (of 16); Qwen3-Next's 1,097,728 B over 2,048: 544
    blocks = {(r["inputs"]["config"].split("__")[2][:5], r["inputs"]["attention_backend"], r["answer"]["block_size"])
              for r in (ROWS[i] for i in LINEAR)
              if r["inputs"]["start_block_size"] == 16 and r["inputs"]["drafter"] == "none"}
    assert blocks == {("Qwen3", "CPU_ATTN", 544), ("Qwen3", "FLASH_ATTN", 544), ("Qwen3", "CPU_ATTN", 416),
                      ("Qwen3", "FLASH_ATTN", 400)}


def test_the_fixture_covers_mtp_drafters_on_both_linear_hybrids() -> None:
    """k MTP draft tokens widen the conv state by k columns of 8,192 (Qwen3-Next) or 10,240 (Qwen3.5) bf16 values
    and so may raise the aligned block; the MTP layer joins the full-attention bucket (13 beside 36 linear)."""
    rows = [r for r in (ROWS[i] for i in LINEAR) if r["inputs"]["drafter"] == "mtp"]
    assert {r["inputs"]["num_speculative_tokens"] for r in rows} == {1, 2, 3}
    assert {(r["inputs"]["config"], r["inputs"]["attention_backend"], r["inputs"]["mamba_cache_mode"])
            for r in rows} == {(c, b, m) for c in LINEAR_CONFIGS for b in KERNEL_MULTIPLE for m in ("align", "none")}
    assert sum("error" not in r["answer"] for r in rows) >= 200
    blocks = {(r["inputs"]["config"].split("__")[2][:6], r["inputs"]["attention_backend"],
               r["inputs"]["num_speculative_tokens"], r["answer"]["block_size"])
              for r in rows if r["inputs"]["start_block_size"] == 16}
    assert blocks == {("Qwen3-", "CPU_ATTN", 1, 544), ("Qwen3-", "FLASH_ATTN", 1, 544),
                      ("Qwen3-", "CPU_ATTN", 2, 576), ("Qwen3-", "FLASH_ATTN", 2, 560),
                      ("Qwen3-", "CPU_ATTN", 3, 576), ("Qwen3-", "FLASH_ATTN", 3, 560),
                      *{("Qwen3.", b, k, 416) for b in KERNEL_MULTIPLE for k in (1, 2, 3)}}
    groups = {json.dumps(r["answer"]["groups"]) for r in rows if "Coder" in r["inputs"]["config"]
              and "error" not in r["answer"]}
    assert groups == {json.dumps([["MambaSpec", 12]] * 3 + [["FullAttentionSpec", 13]])}


def test_the_fixture_covers_ngram_speculation_on_both_linear_hybrids() -> None:
    """vLLM widens the conv state and adds k state blocks for a drafterless method too (MambaBase.get_kv_cache_spec
    reads num_speculative_tokens): at k = 3 Qwen3-Next aligns to 576 (CPU) / 560 (FlashAttention), not the 544 it
    gets without speculation, and no drafter layer joins the pool (12 full-attention layers beside 36 linear)."""
    rows = [r for r in (ROWS[i] for i in LINEAR) if r["inputs"]["drafter"] == "ngram"]
    assert {r["inputs"]["num_speculative_tokens"] for r in rows} == {3}
    assert {(r["inputs"]["config"], r["inputs"]["attention_backend"], r["inputs"]["mamba_cache_mode"])
            for r in rows} == {(c, b, m) for c in LINEAR_CONFIGS for b in KERNEL_MULTIPLE for m in ("align", "none")}
    blocks = {(r["inputs"]["config"].split("__")[2][:6], r["inputs"]["attention_backend"], r["answer"]["block_size"])
              for r in rows if r["inputs"]["start_block_size"] == 16}
    assert blocks == {("Qwen3-", "CPU_ATTN", 576), ("Qwen3-", "FLASH_ATTN", 560), ("Qwen3.", "CPU_ATTN", 416),
                      ("Qwen3.", "FLASH_ATTN", 416)}
    groups = {json.dumps(r["answer"]["groups"]) for r in rows if "Coder" in r["inputs"]["config"]
              and "error" not in r["answer"]}
    assert groups == {json.dumps([["MambaSpec", 12]] * 3 + [["FullAttentionSpec", 12]])}


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_each_recorded_row_agrees_or_is_a_stated_exception(index: int) -> None:
    row = ROWS[index]
    listed = exceptions(FIXTURE.name)
    agrees = gate_answer(row["inputs"]) == engine_answer(row["answer"])
    if index in listed:
        assert not agrees, f"row {index} agrees now: remove it from EXCEPTIONS.md"
    else:
        assert agrees, (row["inputs"], row["answer"], gate_answer(row["inputs"]))


@pytest.mark.parametrize("index", [i for i in SWA if "error" not in ROWS[i]["answer"]
                                   and ROWS[i]["inputs"]["max_in_flight_tokens"] == ROWS[i]["inputs"]["max_model_len"]])
def test_the_profile_predicts_vllms_pool_where_in_flight_covers_max_model_len(index: int) -> None:
    """The judged pool (every layer holding every token) is vLLM's own capacity when in-flight = max_model_len,
    whatever k and the method (the `swa_k` rows: the plan's k goes in, and changes nothing here)."""
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    cfg = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    geom = kv_geometry(cfg, dtype="bf16")
    drafter = None
    if inputs["drafter"] == "full_layer":
        from gate.model.geometry import KVGeometry, LayerKind
        full = next(x for x in geom.layers if x.kind == "full_attention")
        n = inputs.get("drafter_layers", 1)
        drafter = KVGeometry(full.bytes_per_token * n, n, geom.dtype, 1,
                             tuple(LayerKind(j, "full_attention", full.bytes_per_token) for j in range(n)))
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"], target=geom,
                                    drafter=drafter, draft_charge=None, has_drafter=drafter is not None,
                                    block_size=inputs["block_size"], configured_max_total_tokens=None,
                                    context_cap_tokens=inputs["max_model_len"],
                                    depth=inputs.get("num_speculative_tokens"), config=cfg)
    assert (pred.blocks_with_drafter, pred.with_drafter) == (answer["num_gpu_blocks"], answer["kv_cache_size_tokens"])


@pytest.mark.parametrize("index", [i for i in LINEAR if "error" not in ROWS[i]["answer"]
                                   and ROWS[i]["inputs"]["mamba_cache_mode"] == "align"
                                   and ROWS[i]["inputs"]["drafter"] == "none"])
def test_the_profile_predicts_vllms_linear_pool_from_the_block_vllm_reports(index: int) -> None:
    """Given engine.block_size as vLLM reports it after alignment, the profile's pool is vLLM's own, blocks and
    kv_cache_size_tokens (prefix caching on: vLLM's default)."""
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    cfg = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"],
                                    target=kv_geometry(cfg, dtype="bf16"), drafter=None, draft_charge=None,
                                    has_drafter=False, block_size=answer["block_size"],
                                    configured_max_total_tokens=None, context_cap_tokens=inputs["max_model_len"])
    assert (pred.blocks_with_drafter, pred.with_drafter) == (answer["num_gpu_blocks"], answer["kv_cache_size_tokens"])
    assert pred.without_drafter == pred.with_drafter


def test_a_linear_hybrid_block_below_its_state_is_refused_with_both_minima() -> None:
    cfg = json.loads((TESTS / "fixtures" / "configs" / "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json")
                     .read_text())
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=kv_geometry(cfg), drafter=None,
                                    draft_charge=None, has_drafter=False, block_size=16,
                                    configured_max_total_tokens=None, context_cap_tokens=32768)
    text = " ".join(pred.notes)
    assert pred.with_drafter is None and pred.blocks_with_drafter is None
    assert "_align_hybrid_block_size" in text and "400 with FlashAttention" in text and "416 with the CPU" in text
    assert "engine.block_size" in text


def mtp_head(geom: Any) -> Any:
    """One MTP layer as the bill builds it (gate.model.geometry.mtp_drafter_geometry): full attention with the
    target's heads (neither fixture names num_nextn_predict_layers; vLLM's default is 1)."""
    from gate.model.geometry import KVGeometry, LayerKind

    full = next(x for x in geom.layers if x.kind == "full_attention")
    return KVGeometry(full.bytes_per_token, 1, geom.dtype, 1, (LayerKind(0, "full_attention", full.bytes_per_token),))


MTP_ROWS = [i for i in LINEAR if ROWS[i]["inputs"]["drafter"] == "mtp" and "error" not in ROWS[i]["answer"]]


@pytest.mark.parametrize("index", MTP_ROWS)
def test_the_profile_predicts_vllms_linear_pool_with_an_mtp_drafter(index: int) -> None:
    """Before: no pool with the drafter on a linear hybrid (the call carried no k, `RequestBlocks` no speculative
    state blocks). Given k, the target's config and engine.block_size as vLLM reports it with the drafter, the
    profile's pool with the drafter is vLLM's own: num_gpu_blocks, and kv_cache_size_tokens with prefix caching on
    (the prediction's tokens) or off (its per-request blocks at 1 + k)."""
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    cfg = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    geom = kv_geometry(cfg, dtype="bf16")
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    k, length = inputs["num_speculative_tokens"], inputs["max_model_len"]
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"], target=geom,
                                    drafter=mtp_head(geom), draft_charge=None, has_drafter=True,
                                    block_size=answer["block_size"], configured_max_total_tokens=None,
                                    context_cap_tokens=length, depth=k, config=cfg)
    rb = pred.request_blocks
    assert rb is not None and rb.speculative_blocks == k and pred.blocks_with_drafter == answer["num_gpu_blocks"]
    prefix = inputs["mamba_cache_mode"] == "align"
    tokens = pred.with_drafter if prefix else rb.capacity_tokens(answer["num_gpu_blocks"], length, False)
    assert tokens == answer["kv_cache_size_tokens"]


NGRAM_ROWS = [i for i in LINEAR if ROWS[i]["inputs"]["drafter"] == "ngram" and "error" not in ROWS[i]["answer"]]


@pytest.mark.parametrize("index", NGRAM_ROWS)
def test_the_profile_predicts_vllms_linear_pool_with_ngram_speculation(index: int) -> None:
    """Before: an ngram plan on a linear hybrid was priced without speculation (the call dropped k without a
    drafter), passing mixes vLLM cannot hold. Given k and the block vLLM reports with speculation, the profile's pool
    with speculation is vLLM's own (no drafter layer, k speculative state blocks), in both cache modes; the pool
    without it keeps no speculative blocks."""
    inputs, answer = ROWS[index]["inputs"], ROWS[index]["answer"]
    cfg = json.loads((TESTS / "fixtures" / "configs" / inputs["config"]).read_text())
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    k, length = inputs["num_speculative_tokens"], inputs["max_model_len"]
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"],
                                    target=kv_geometry(cfg, dtype="bf16"), drafter=None, draft_charge=None,
                                    has_drafter=False, block_size=answer["block_size"],
                                    configured_max_total_tokens=None, context_cap_tokens=length, depth=k, config=cfg)
    rb, rb_without = pred.request_blocks, pred.request_blocks_without_drafter
    assert rb is not None and rb.speculative_blocks == k and pred.blocks_with_drafter == answer["num_gpu_blocks"]
    assert rb_without is not None and rb_without.speculative_blocks == 0
    prefix = inputs["mamba_cache_mode"] == "align"
    tokens = pred.with_drafter if prefix else rb.capacity_tokens(answer["num_gpu_blocks"], length, False)
    assert tokens == answer["kv_cache_size_tokens"]
    assert pred.without_drafter is not None and pred.without_drafter > pred.with_drafter


def test_an_ngram_plan_at_the_block_without_speculation_is_refused() -> None:
    """Qwen3-Next, ngram k = 3 at 544 (the block without speculation): vLLM raises it to 576 (CPU from a start of
    16) / 560 (the oracle's ngram rows), so there is no pool with speculation; the blocks named are vLLM's from the
    plan's block as --block-size (1,088) and from its own starts (16 with FlashAttention: 560; 128 on CPU: 640, the
    step being max(32, 128)); the pool without it stands."""
    cfg = json.loads((TESTS / "fixtures" / "configs" / LINEAR_CONFIGS[0]).read_text())
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=kv_geometry(cfg, dtype="bf16"),
                                    drafter=None, draft_charge=None, has_drafter=False, block_size=544,
                                    configured_max_total_tokens=None, context_cap_tokens=32768, depth=3, config=cfg)
    text = " ".join(pred.notes)
    assert pred.with_drafter is None and pred.blocks_with_drafter is None
    assert (pred.blocks_without_drafter, pred.without_drafter) == (642, 313985)
    assert "with k = 3 draft tokens" in text and "from --block-size 544, 1,088 with FlashAttention, 1,088 with" in text
    assert "560 with FlashAttention (from 16), 640 with the CPU backend (from 128)" in text
    assert "drafterless methods too" in text


def test_a_drafter_on_a_linear_hybrid_needs_k_the_config_and_its_layers() -> None:
    """Without k, the target's config (the conv kernel k widens) or the drafter's layers (an MTP head whose config
    names no layer count) there is no pool with the drafter, and the note names what is missing; the pool without
    it stays the oracle's (8 GiB, 544-token blocks: 642 blocks, 313,985 tokens at 32,768)."""
    cfg = json.loads((TESTS / "fixtures" / "configs" / LINEAR_CONFIGS[0]).read_text())
    geom = kv_geometry(cfg, dtype="bf16")
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    for drafter, depth, config, missing in ((None, 1, cfg, "num_nextn_predict_layers"),
                                            (mtp_head(geom), None, cfg, "num_speculative_tokens"),
                                            (mtp_head(geom), 1, None, "linear_conv_kernel_dim")):
        pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=geom, drafter=drafter,
                                        draft_charge=None, has_drafter=True, block_size=544,
                                        configured_max_total_tokens=None, context_cap_tokens=32768, depth=depth,
                                        config=config)
        assert (pred.blocks_without_drafter, pred.without_drafter) == (642, 313985)  # the oracle's CPU/FA rows
        assert pred.with_drafter is None and pred.blocks_with_drafter is None
        text = " ".join(pred.notes)
        assert "no predicted pool with the drafter" in text and missing in text and "num_speculative_blocks" in text
    rows = {ROWS[i]["answer"]["num_gpu_blocks"] for i in MTP_ROWS if ROWS[i]["inputs"]["config"] == LINEAR_CONFIGS[0]
            and ROWS[i]["answer"]["block_size"] == 544 and ROWS[i]["inputs"]["kv_cache_memory_bytes"] == 8 << 30}
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=geom, drafter=mtp_head(geom),
                                    draft_charge=None, has_drafter=True, block_size=544,
                                    configured_max_total_tokens=None, context_cap_tokens=32768, depth=1, config=cfg)
    assert rows == {pred.blocks_with_drafter} == {593}  # 13 full-attention layers a group with the MTP layer


def test_a_block_below_the_state_k_widens_is_refused_with_the_drafter() -> None:
    """Qwen3-Next at k = 2: the conv state widens by 2 columns of 8,192 bf16 values, past a 544-token page; vLLM
    raises the block to 576 (CPU from 16) or 560 (FlashAttention): the oracle's rows. The plan's 544 (the block
    without the drafter) gives no pool with the drafter, naming vLLM's blocks from 544 and from its own starts; the
    pool without it stands."""
    cfg = json.loads((TESTS / "fixtures" / "configs" / LINEAR_CONFIGS[0]).read_text())
    geom = kv_geometry(cfg, dtype="bf16")
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=geom, drafter=mtp_head(geom),
                                    draft_charge=None, has_drafter=True, block_size=544,
                                    configured_max_total_tokens=None, context_cap_tokens=32768, depth=2, config=cfg)
    text = " ".join(pred.notes)
    assert pred.with_drafter is None and pred.blocks_with_drafter is None and pred.blocks_without_drafter == 642
    assert "with k = 2 draft tokens" in text and "1,088 with the CPU backend;" in text
    assert "560 with FlashAttention (from 16), 640 with the CPU backend (from 128)" in text


def test_without_max_model_len_only_blocks_are_predicted() -> None:
    cfg = json.loads((TESTS / "fixtures" / "configs" / "target-hybrid-swa__openai__gpt-oss-120b.json").read_text())
    vllm = profile("vllm")
    assert isinstance(vllm, HybridPoolPredictor)
    pred = vllm.predict_hybrid_pool(kv_cache_memory_bytes=8 << 30, target=kv_geometry(cfg, dtype="bf16"),
                                    drafter=None, draft_charge=None, has_drafter=False, block_size=16,
                                    configured_max_total_tokens=None, context_cap_tokens=None)
    assert pred.blocks_with_drafter == 14563 and pred.with_drafter is None
    assert "engine.context_cap_tokens" in " ".join(pred.notes)

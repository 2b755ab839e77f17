"""gate.model.engines.llamacpp: llama.cpp b11434's facts, each expected value with its source line.

Sources: llama.cpp b11434 common/arg.cpp (`--spec-draft-n-max`, `--spec-type`, `--spec-draft-model`),
common/common.h (`common_params_speculative_draft.n_max = 3`, cache types f16), common/speculative.cpp
(`common_speculative_type_from_name_map`, `common_base_params_to_speculative`: the draft context copies
the server's `--ctx-size` and slots).
"""

from __future__ import annotations

from pathlib import Path

from gate.inputs.configs import load_config
from gate.model.depth import draft_forward_passes, speculative_depth
from gate.model.engines import profile
from gate.model.engines.base import Rule
from gate.model.engines.llamacpp import server_cache
from gate.model.geometry import kv_geometry
from gate.model.pools import drafter_kv_need
from gate.status import Status

CONFIGS = Path(__file__).resolve().parents[4] / "fixtures" / "configs"
TARGET = kv_geometry(load_config(CONFIGS / "tiny-target.json"))  # 2 layers, 1,024 B/token (f32)
DRAFT = kv_geometry(load_config(CONFIGS / "tiny-draft.json"))  # 1 layer, 256 B/token
LC = profile("llamacpp")


def test_registered_under_its_kind() -> None:
    assert (LC.kind, LC.name) == ("llamacpp", "llama.cpp")


def test_depth_is_draft_n_max() -> None:
    assert speculative_depth("llamacpp", num_speculative_tokens=4) == 4
    assert speculative_depth("llamacpp", num_draft_tokens=4) is None  # SGLang's spelling is not llama.cpp's
    assert draft_forward_passes("llamacpp", "draft_model", num_speculative_tokens=3) == 3  # one pass per token
    assert draft_forward_passes("llamacpp", "ngram", num_speculative_tokens=3) == 0  # drafterless


def test_the_launched_type_is_the_reported_one() -> None:
    for method in ("draft_model", "eagle3", "mtp", "nextn", "ngram", "dflash", "dspark"):
        cfg = LC.speculative_config(method, None, num_speculative_tokens=3, num_steps=None, eagle_topk=None,
                                    num_draft_tokens=None)
        assert cfg["type"].upper() in (LC.algorithms(method) or ()), method
    assert LC.algorithms("suffix") is None


def test_flags() -> None:
    cfg = LC.speculative_config("draft_model", "/models/draft.gguf", num_speculative_tokens=3, num_steps=None,
                                eagle_topk=None, num_draft_tokens=None)
    assert LC.speculative_flags(cfg) == ["--spec-type", "draft-simple", "--spec-draft-model", "/models/draft.gguf",
                                         "--spec-draft-n-max", "3"]


def test_the_drafter_has_a_context_of_its_own() -> None:
    # one cell of the drafter's own geometry per target token; the pool is --ctx-size with or without it
    assert LC.draft_charge("draft_model", TARGET, DRAFT) == (256, None)
    p = LC.predict_pool(kv_cache_memory_bytes=8 << 20, target_bytes_per_token=1024, draft_charge=256,
                        has_drafter=True, block_size=None, configured_max_total_tokens=2048)
    assert (p.without_drafter, p.with_drafter, p.block_size) == (2048, 2048, None)
    assert LC.drafter_dtype_note("f32") is None  # --spec-draft-type-k/-v: its own (default f16)


def test_no_ctx_size_is_no_prediction_and_an_oversized_one_is_said() -> None:
    p = LC.predict_pool(kv_cache_memory_bytes=8 << 20, target_bytes_per_token=1024, draft_charge=None,
                        has_drafter=False, block_size=None, configured_max_total_tokens=None)
    assert p.without_drafter is None and "--ctx-size" in p.notes[0]
    # 16,384 cells x (1,024 + 256) B = 20,971,520 B > 8 MiB
    p = LC.predict_pool(kv_cache_memory_bytes=8 << 20, target_bytes_per_token=1024, draft_charge=256,
                        has_drafter=True, block_size=None, configured_max_total_tokens=16384)
    assert p.with_drafter == 16384 and "20,971,520" in p.notes[-1]


def test_rules() -> None:
    assert LC.block_rule("dflash", 16, 20).status is Status.WARN
    assert LC.block_rule("dflash", 16, 15).status is Status.PASS
    # a DFlash round holds block_size - 1 (llama-server clamps k = block_size: tests/fixtures/oracle spec rows),
    # DSpark's block_size; a block of 1 never drafts
    assert LC.block_rule("dflash", 16, 16) == Rule(Status.WARN, "llama.cpp dflash: --spec-draft-n-max 16 exceeds "
                                                   "block_size 16 - 1 = 15, the most a round drafts: llama.cpp "
                                                   "clamps it to 15")
    assert LC.block_rule("dspark", 7, 7).status is Status.PASS and LC.block_rule("dspark", 7, 8).status is Status.WARN
    assert LC.block_rule("dflash", 1, None).status is Status.FAIL
    assert LC.block_depth_keys("dflash", 16, None).keys == {"num_speculative_tokens": 15}
    assert LC.block_depth_keys("dspark", 7, None).keys == {"num_speculative_tokens": 7}
    assert LC.block_depth_keys("dflash", 16, 4).keys == {"num_speculative_tokens": 4}
    assert LC.mtp_rule(1, 5).status is Status.PASS
    assert LC.chain_depth_keys(4, "tuned").keys == {"num_speculative_tokens": 4}


def test_the_drafters_kv_need_is_its_own_contexts_cells() -> None:
    """The need on llama.cpp's basis (gate.model.pools.drafter_kv_need through `drafter_kv_basis`): the draft
    model's own context holds every cell of the request whatever the drafter's scope, at its full-attention bytes
    per cell, so the need is what llama.cpp reserves and lands in that context, not in the target's pool.

    Source: common/speculative.cpp (read at ggml-org/llama.cpp 001d906a; the b11434 tree tools/llamacpp_cpu.sh
    keeps has only the GGUF converter), `common_speculative_init_result::common_speculative_init_result`:
    `cparams.n_ctx = llama_n_ctx(ctx_tgt);` ("the draft context holds as many tokens per sequence as the target
    context"), its params from `common_base_params_to_speculative` (the server's `n_parallel` and unified cache
    copied, `cache_type_k/v` = the draft's `--spec-draft-type-k/-v`, default f16). functiongemma-270m (bf16):
    18 layers of 1 KV head × 256 × K+V × 2 B = 1,024 B per token each, 3 of them full attention (3,072 B per
    cell), 15 sliding (a fixed window cache, `server_cache`'s, not per cell).
    """
    gemma = kv_geometry(load_config(CONFIGS / "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json"))
    charge, _ = LC.draft_charge("draft_model", TARGET, gemma)
    assert (charge, gemma.attention_bytes_per_token) == (3_072, 18_432)
    need = drafter_kv_need(gemma, "full", 4_800, engine=LC, charge_bytes_per_token=charge)
    assert (need.pool, need.need_tokens, need.bytes_per_token) == ("own_context", 4_800, 3_072)
    assert need.need_bytes == need.charged_bytes == 4_800 * 3_072 == 14_745_600  # was 4,800 x 18,432 against it
    assert need.over_reserved_bytes == 0
    # the same cells, whatever scope the plan declares: the context mirrors the target's cells
    window = drafter_kv_need(gemma, "window", 4_800, engine=LC, charge_bytes_per_token=charge, window=512)
    assert (window.need_tokens, window.need_bytes) == (4_800, 14_745_600)
    # a full --ctx-size of such requests is the draft context llama.cpp sizes: n_ctx = the target's 32,768 cells
    own = server_cache(gemma, 32_768, None)
    assert own.ctx_cells * own.per_token_bytes == drafter_kv_need(
        gemma, "full", 32_768, engine=LC, charge_bytes_per_token=charge).need_bytes == 100_663_296
    # vLLM charges it in its shared pool on the geometric need (its sliding layers per token): not llama.cpp's
    shared = drafter_kv_need(gemma, "window", 4_800, engine=profile("vllm"), window=512)
    assert (shared.pool, shared.need_tokens, shared.need_bytes) == ("engine_pool", 512, 512 * 18_432)

"""SGLang's pool arithmetic: how SGLang turns KV bytes into `max_total_num_tokens`, and what it charges a draft.

Why here: the kv_pool line compares a predicted pool with the one the engine reports; SGLang keeps a separate
draft pool with one slot per target token and charges some drafts at the target's per-layer KV, so its
accounting is its own (design.md, "Pool capacity"). The profile (`gate.model.engines.sglang`) is the only caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def sglang_max_total_num_tokens(available_bytes: int, target_cell_bytes: int, draft_cell_bytes: int = 0) -> int:
    """SGLang's `max_total_num_tokens`: the memory left for KV over the cost of one token slot.

    With a drafter SGLang keeps its own draft pool with one slot per target token, so each
    slot costs target_cell + draft_cell bytes.
    """
    if available_bytes < 0:
        raise ValueError("available_bytes must not be negative")
    cell = target_cell_bytes + draft_cell_bytes
    if cell <= 0:
        raise ValueError("cell bytes must be positive")
    return available_bytes // cell


# SGLang 0.5.23 sizes the pool of these algorithms' drafts as if the draft had the target's per-layer
# KV (srt/model_executor/pool_configurator.py:259-260, DefaultPoolConfigurator: "assumes the draft shares the
# target's per-layer KV size"): draft_cell = int(target_cell × draft_layers / target_layers) (:311-314), with
# target_layers the layers that hold KV (the full-attention ones of a hybrid, :229-237; the profile's
# `draft_charge`, gate.model.engines.sglang, says which). SGLang's names: STANDALONE = draft_model,
# EAGLE/EAGLE3, NEXTN = mtp/nextn.
SGLANG_TARGET_SHAPED_DRAFTS: frozenset[str] = frozenset({"draft_model", "eagle", "eagle3", "mtp", "nextn"})


def sglang_draft_cell_bytes(method: str | None, target_cell_bytes: int, target_layers: int, draft_layers: int,
                            draft_geometry_bytes: int) -> tuple[int, str]:
    """(bytes per token SGLang charges the draft when it sizes the pool, why).

    `target_layers`: the target layers whose KV makes up `target_cell_bytes` (on a hybrid, its
    full-attention layers). For STANDALONE / EAGLE / EAGLE3 / NEXTN it is the target's cell scaled by the layer count,
    whatever the draft's own heads: a real SGLang 0.5.23 on CPU gave a 1-layer, 1-KV-head draft
    (256 B/token of its own) a 512 B/token charge next to a 2-layer 1,024 B target
    (tests/e2e/test_sglang_membound.py). Other methods (DFlash/DSpark) are charged their geometry.
    """
    if method in SGLANG_TARGET_SHAPED_DRAFTS and target_layers > 0 and draft_layers > 0:
        charge = int(target_cell_bytes * draft_layers / target_layers)
        return charge, (f"SGLang sizes the {method} draft pool at the target's per-layer KV: "
                        f"{target_cell_bytes:,} B x {draft_layers}/{target_layers} layers = {charge:,} B/token "
                        f"(the draft's own geometry: {draft_geometry_bytes:,} B)")
    return draft_geometry_bytes, "SGLang charges the draft its own KV geometry"


def sglang_pool_tokens(available_bytes: int, cell_bytes: int, max_total_tokens: int | None = None,
                       page_size: int = 1) -> int:
    """SGLang's `max_total_num_tokens`: min(`--max-total-tokens`, available // cell), whole pages.

    The memory side follows the KV budget (on GPU the free memory after loading under
    --mem-fraction-static; on CPU free host RAM); the cap side is the launch's
    `--max-total-tokens`, applied after (KVCacheConfigurator.config_from_budget). Real SGLang
    0.5.23 on CPU: every capped arm allocated exactly 8,192 (tests/e2e/test_sglang_*.py).
    """
    if page_size <= 0:
        raise ValueError("page_size must be positive")
    tokens = sglang_max_total_num_tokens(available_bytes, cell_bytes) // page_size * page_size
    if max_total_tokens is not None:
        tokens = min(tokens, max_total_tokens // page_size * page_size)
    return tokens


# ---- Hybrid targets (issue 35.3): SGLang 0.5.23's own sizing, srt/model_executor/pool_configurator.py and
# srt/mem_cache/kv_cache_configurator.py. The oracle tools/oracle/sglang_kv_sizing.py holds these to SGLang's code.

# `--swa-full-tokens-ratio` (arg_groups/fields/schedule.py: fallback 0.8) and `--mamba-full-memory-ratio` (0.9).
SGLANG_SWA_FULL_TOKENS_RATIO = 0.8
SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.9
# `--max-running-requests` SGLang sets for EAGLE/EAGLE3/NEXTN/STANDALONE when the launch gives none
# (arg_groups/speculative_hook.py `_handle_eagle_family`).
SGLANG_SPEC_MAX_RUNNING_REQUESTS = 48
# Mamba state slots per running request (`_calculate_mamba_ratio`): 3 (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO)
# + 2 tracking slots of the `extra_buffer` radix strategy with the overlap scheduler, which `auto` resolves to on a
# CUDA launch with the triton linear-attention backend (arg_groups/overrides.py `_mamba_radix_cache_resolution`).
SGLANG_MAMBA_SLOTS_PER_REQUEST = 5
# The architectures SGLang gives its hybrid SWA pool (configs/model_config.py `is_hybrid_swa_model`, the ones the
# gate's fixtures meet); any other sliding-window model (Gemma-2/3) is sized as a uniform pool, every layer full.
SGLANG_HYBRID_SWA_ARCHITECTURES: frozenset[str] = frozenset({
    "GptOssForCausalLM", "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "Llama4ForConditionalGeneration",
    "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM",
    "Step3p5ForCausalLM", "LagunaForCausalLM"})

_GIB = 1 << 30


def sglang_swa_pool(available_bytes: int, full_cell_bytes: int, swa_cell_bytes: int, ratio: float, page_size: int,
                    max_total_tokens: int | None = None) -> tuple[int, int]:
    """(full tokens = `max_total_num_tokens`, SWA tokens) of `HybridSWAPoolConfigurator`.

    cell = full_cell + ratio x swa_cell (bytes of one full-pool token and its share of the SWA pool);
    full = int(available // cell), whole pages, capped by `--max-total-tokens` (`config_from_budget`);
    swa = int(full x ratio), whole pages (`_solve_pool_sizes`). `full_cell` holds the draft's full-layer charge.
    """
    if available_bytes < 0 or page_size <= 0 or full_cell_bytes <= 0:
        raise ValueError("available bytes must not be negative; page size and full cell must be positive")
    cell = full_cell_bytes + ratio * swa_cell_bytes
    full = int(available_bytes // cell) // page_size * page_size
    if max_total_tokens is not None:
        full = min(full, max_total_tokens // page_size * page_size)
    return full, int(full * ratio) // page_size * page_size


@dataclass(frozen=True)
class MambaState:
    """What SGLang's `_handle_max_mamba_cache` carves out of the KV budget before the full-attention pool."""

    slots: int  # max_mamba_cache_size
    state_bytes: int  # (slots + 1) x per request
    intermediate_bytes: int  # speculative scratch: per request x (capped requests + 1) x draft tokens
    kv_bytes: int  # what is left for the full-attention KV pool (int(rest GB x 2^30))


def sglang_mamba_split(available_bytes: int, per_request_bytes: int, *, ratio: float = SGLANG_MAMBA_FULL_MEMORY_RATIO,
                       draft_tokens: int | None = None,
                       max_running_requests: int = SGLANG_SPEC_MAX_RUNNING_REQUESTS,
                       slots_per_request: int = SGLANG_MAMBA_SLOTS_PER_REQUEST) -> MambaState:
    """`_handle_max_mamba_cache` with max_mamba_cache_size unset (the ratio path), in SGLang's own float GB steps.

    mamba budget = rest x ratio / (1 + ratio); without speculation slots = int((budget - per_req) // per_req);
    with it (D draft tokens) slots = int((budget - per_req (1 + D)) // (per_req (1 + D / slots_per_request))) and an
    intermediate scratch of per_req x (min(max_running_requests, slots // slots_per_request) + 1) x D. Then
    (slots + 1) x per_req of state (the pool's padding slot) leaves the rest to the KV pool.
    """
    if available_bytes < 0 or per_request_bytes <= 0:
        raise ValueError("available bytes must not be negative and the state per request must be positive")
    rest = available_bytes / _GIB
    budget = rest * ratio / (1 + ratio) * _GIB
    intermediate = 0
    if draft_tokens:
        d = draft_tokens
        scratch_share = d / slots_per_request  # SGLang's (1 + D / ratio), summed in its order (no ratio of counts)
        scratch_share += 1
        slots = int((budget - per_request_bytes * (1 + d)) // (per_request_bytes * scratch_share))
        capped = min(max(1, max_running_requests), slots // slots_per_request)
        intermediate = per_request_bytes * (capped + 1) * d
        rest = rest - intermediate / _GIB
    else:
        slots = int((budget - per_request_bytes) // per_request_bytes)
    if slots <= 0:
        raise ValueError(f"SGLang refuses to start: no Mamba state slot fits (max_mamba_cache_size={slots})")
    state = (slots + 1) * per_request_bytes
    rest = rest - state / _GIB
    return MambaState(slots, state, intermediate, int(rest * _GIB))


def sglang_gdn_state_bytes(text: Mapping[str, Any], linear_layers: int) -> int | None:
    """`mamba_cache_per_req` of a Gated-DeltaNet hybrid (Qwen3-Next / Qwen3.5, configs/qwen3_next.py, TP 1):
    per layer conv (kernel - 1) x (2 hk dk + hv dv) in bf16 (SGLANG_MAMBA_CONV_DTYPE) + SSM hv x dk x dv in the
    config's `mamba_ssm_dtype` (default float32, configs/mamba_utils.py `mamba2_state_dtype`)."""
    keys = ("linear_conv_kernel_dim", "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads",
            "linear_value_head_dim")
    if any(not isinstance(text.get(k), int) for k in keys):
        return None
    kernel, dk, hk, hv, dv = (int(text[k]) for k in keys)
    ssm = {"float32": 4, "bfloat16": 2, "float16": 2}.get(str(text.get("mamba_ssm_dtype") or "float32"), 4)
    return ((kernel - 1) * (2 * hk * dk + hv * dv) * 2 + hv * dk * dv * ssm) * linear_layers

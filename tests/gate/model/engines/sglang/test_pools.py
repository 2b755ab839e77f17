"""SGLang's pool arithmetic (gate.model.engines.sglang.pools) against real SGLang 0.5.23 allocations."""

from __future__ import annotations

import pytest

from gate.model.engines.sglang.pools import (
    sglang_draft_cell_bytes,
    sglang_max_total_num_tokens,
    sglang_pool_tokens,
)


def test_sglang_max_total_num_tokens() -> None:
    # available // (target_cell + draft_cell): 1 GiB over Qwen3-8B (147,456) + Ling DSpark (51,200).
    assert sglang_max_total_num_tokens(1 << 30, 147_456, 51_200) == (1 << 30) // 198_656 == 5_405
    assert sglang_max_total_num_tokens(1 << 30, 147_456) == 7_281


def test_sglang_pool_is_the_smaller_of_cap_and_memory() -> None:
    # Real SGLang 0.5.23 on CPU (tests/e2e/test_sglang_*.py): --max-total-tokens 8192 with ~14 GB
    # of KV budget allocates 8,192; the cap never raises the pool above the memory side.
    assert sglang_pool_tokens(14 * (1 << 30), 1_024, 8_192) == 8_192
    assert sglang_pool_tokens(4_096_000, 1_024, 8_192) == 4_000
    assert sglang_pool_tokens(4_096_000, 1_024) == 4_000
    assert sglang_pool_tokens(4_096_000 + 1_024 * 15, 1_024, page_size=16) == 4_000  # whole pages: 4,015 -> 4,000
    with pytest.raises(ValueError):
        sglang_pool_tokens(1, 1, page_size=0)


def test_sglang_charges_target_shaped_drafts_at_the_targets_per_layer_kv() -> None:
    # The tiny target (2 layers, 1,024 B) and a 1-layer, 1-KV-head draft (256 B): SGLang charges 512 B
    # for STANDALONE/EAGLE/EAGLE3/NEXTN (pool_configurator.py), its own 256 B for other methods.
    for method in ("draft_model", "eagle", "eagle3", "mtp", "nextn"):
        assert sglang_draft_cell_bytes(method, 1_024, 2, 1, 256)[0] == 512
    assert sglang_draft_cell_bytes("dspark", 147_456, 36, 5, 51_200)[0] == 51_200
    assert sglang_draft_cell_bytes(None, 1_024, 2, 1, 256)[0] == 256


def test_bad_pool_inputs() -> None:
    with pytest.raises(ValueError):
        sglang_max_total_num_tokens(-1, 1, 1)

"""gate.bill.gpu_memory: weights per TP rank + KV pool against gpu_memory_bytes × memory_fraction (issue 10, item 3).

Numbers: the tiny vLLM-CPU draft arm (tests/fixtures/vllm/captures-summary.json): allocated
6,528 tokens; target 1,024 B/token (2 layers × 2 KV heads × 32 × fp32 × K,V), drafter 256 B/token;
weights 1,706,496 B and 410,368 B (tests/gate/helpers.py tiny_plan). 6,528 × 1,280 = 8,355,840 B of KV.
The GPU sizes are chosen around the resulting need of 10,472,704 B.
"""

from __future__ import annotations

from typing import Any

from gate.bill.gpu_memory import gpu_memory_bill, sentence
from gate.model.engines.vllm import DEFAULT_MEMORY_FRACTION as VLLM_DEFAULT_FRACTION

NEED = 1_706_496 + 410_368 + 6_528 * 1_280  # 10,472,704 B


def _bill(**over: Any):
    args: dict[str, Any] = dict(engine="vllm", gpu_memory_bytes=20_000_000, memory_fraction=0.9, tp=1,
                                drafter_tp=None, target_weights_bytes=1_706_496, drafter_weights_bytes=410_368,
                                drafter_embedded=False, has_drafter=True, pool_tokens=6_528,
                                pool_basis="allocated (capture)", target_bytes_per_token=1_024,
                                drafter_bytes_per_token=256, kv_cache_memory_bytes=8_388_608)
    args.update(over)
    return gpu_memory_bill(**args)


def test_fits() -> None:
    b = _bill()
    assert b.need_bytes == NEED and b.usable_bytes == 18_000_000 and not b.over and not b.unknown
    assert "GPU memory fits" in sentence(b)


def test_over_fails_with_numbers() -> None:
    b = _bill(gpu_memory_bytes=11_000_000)  # × 0.9 = 9,900,000 < 10,472,704
    assert b.over
    s = sentence(b)
    assert "GPU memory over" in s and "10,472,704 B" in s and "9,900,000 B" in s


def test_missing_fraction_takes_vllm_default_and_says_so() -> None:
    b = _bill(memory_fraction=None, gpu_memory_bytes=11_500_000)
    assert b.memory_fraction == VLLM_DEFAULT_FRACTION and b.usable_bytes == 10_350_000 and b.over
    assert any("default 0.9 assumed" in n for n in b.notes)


def test_missing_fraction_on_sglang_is_unknown() -> None:
    b = _bill(engine="sglang", memory_fraction=None)
    assert b.usable_bytes is None and "memory fraction" in b.unknown and not b.over
    assert "not decided" in sentence(b)


def test_tp_splits_weights_and_drafter_tp() -> None:
    b = _bill(tp=2)
    assert b.target_weights_per_rank == 853_248 and b.drafter_weights_per_rank == 205_184
    b = _bill(tp=2, drafter_tp=1)  # a TP-1 drafter sits whole on one rank
    assert b.drafter_weights_per_rank == 410_368


def test_embedded_head_adds_no_weights() -> None:
    b = _bill(drafter_embedded=True)
    assert b.drafter_weights_per_rank == 0 and b.need_bytes == 1_706_496 + 6_528 * 1_280


def test_unknown_pool_falls_back_to_kv_budget_then_unknown() -> None:
    b = _bill(pool_tokens=None)
    assert b.kv_pool_bytes == 8_388_608 and b.kv_pool_basis == "engine.kv_cache_memory_bytes"
    b = _bill(pool_tokens=None, kv_cache_memory_bytes=None)
    assert "KV pool bytes" in b.unknown and not b.over
    b = _bill(pool_tokens=None, kv_cache_memory_bytes=None, gpu_memory_bytes=1_000_000)
    assert b.over  # the weights alone are over: a fail on what is known beats what is unknown

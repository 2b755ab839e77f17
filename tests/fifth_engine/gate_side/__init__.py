"""The stub engine's profile: `BaseProfile`'s defaults (k = `num_speculative_tokens`, one drafter pass per
drafted token, the drafter charged its own KV, no schedule) plus the members every engine must say itself.
Its pool is one block table shared by target and drafter (`shared_pool_prediction`), its flag one JSON
`--speculative-config`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.model.engines.base import (
    BaseProfile,
    DepthKeys,
    Eagle3Taps,
    PoolPrediction,
    Rule,
    block_or_user_depth,
    shared_pool_prediction,
)
from gate.status import Status

BLOCK = 16


@dataclass(frozen=True)
class StubProfile(BaseProfile):
    kind: str = "stub"
    name: str = "Stub"
    memory_fraction_note: str = "the stub engine has no memory fraction"
    kv_pool_note: str = "one block table for target and drafter"
    draft_kv_note: str = "the drafter's own KV per token"
    init_block_size_comment: str = "stub block size (tokens per block)"
    init_memory_fraction_comment: str = "unused by the stub engine"

    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        return shared_pool_prediction(kv_cache_memory_bytes, target_bytes_per_token, draft_charge, has_drafter,
                                      block_size or BLOCK, "stub: one block table")

    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        return Eagle3Taps(num_layers, "the stub engine taps the layers it is given", tuple(ids))

    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        return Rule(Status.PASS, f"{family}: block {block_size} needs no particular depth")

    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        return Rule(Status.PASS, f"{mtp_layers} MTP layer(s)")

    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        return block_or_user_depth(block_size, depth, f"{method}: the block's size")

    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        return {k: v for k, v in {"method": method, "model": model,
                                  "num_speculative_tokens": num_speculative_tokens}.items() if v is not None}

    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        return ["--speculative-config", json.dumps(dict(cfg), sort_keys=True)] if cfg else []


STUB = StubProfile()

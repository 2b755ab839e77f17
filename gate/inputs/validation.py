"""Value checks on model geometry and plan numbers: invalid input, whatever line it feeds.

Why separate from the checks: a drafter with `head_dim: -128` makes its KV bill negative and
turns a kv_pool fail into a pass; `target_step_ms: .inf` makes L* 0 and the acceptance line
pass; a 10^12-layer config makes the layer classifier allocate forever. None of these is a
property of a deployment the gate should judge — they are broken input, refused before any
line runs (exit 3 with one line naming the field). The bounds are far above any real model
(the largest fixtures: 61 layers, 128 heads, hidden 7,168, vocabulary 201,088) and far below
what makes arithmetic or memory blow up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.status import InputError


@dataclass(frozen=True)
class Bound:
    """An integer config field: its smallest allowed value and a sane upper bound."""

    low: int
    high: int


# Fields of a (resolved) config.json that the geometry, the budget and co-design read.
GEOMETRY_BOUNDS: dict[str, Bound] = {
    "num_hidden_layers": Bound(1, 4096),
    "num_attention_heads": Bound(1, 16384),
    "num_key_value_heads": Bound(1, 16384),
    "head_dim": Bound(1, 65536),
    "hidden_size": Bound(1, 1 << 20),
    "intermediate_size": Bound(1, 1 << 24),
    "vocab_size": Bound(1, 1 << 26),
    "draft_vocab_size": Bound(1, 1 << 26),
    "kv_lora_rank": Bound(1, 1 << 20),
    "qk_rope_head_dim": Bound(0, 65536),
    "qk_nope_head_dim": Bound(0, 65536),
    "v_head_dim": Bound(1, 65536),
    "sliding_window": Bound(1, 1 << 31),
    "max_position_embeddings": Bound(1, 1 << 31),
    "num_nextn_predict_layers": Bound(0, 4096),
    "mtp_num_hidden_layers": Bound(0, 4096),
    "num_target_layers": Bound(1, 4096),
    "block_size": Bound(1, 4096),
    "linear_num_key_heads": Bound(1, 16384),
    "linear_num_value_heads": Bound(1, 16384),
    "linear_key_head_dim": Bound(1, 65536),
    "linear_value_head_dim": Bound(1, 65536),
    "linear_conv_kernel_dim": Bound(1, 4096),
    "mamba_d_state": Bound(1, 1 << 20),
    "mamba_d_conv": Bound(1, 4096),
    "mamba_n_heads": Bound(1, 16384),
    "mamba_d_head": Bound(1, 65536),
    "ssm_state_size": Bound(1, 1 << 20),
}
# Nested configs the geometry reads from (gate.model's resolve_text_config).
NESTED_KEYS = ("text_config", "thinker_config", "transformer_layer_config", "eagle_config", "dflash_config")
# Lists of layer ids: each a non-negative integer below this bound.
LAYER_ID_KEYS = ("eagle_aux_hidden_state_layer_ids", "target_layer_ids")
MAX_LAYER_TYPES = GEOMETRY_BOUNDS["num_hidden_layers"].high


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _field(value: Any, key: str, bound: Bound, what: str) -> None:
    if value is None:
        return  # absent: the reader decides whether it can go without it
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        value = int(value)  # 4096.0 written by a converter is 4096
    if not _is_int(value):
        raise InputError(f"{what} field {key} must be an integer, got {value!r}")
    if value < bound.low:
        raise InputError(f"{what} field {key} must be ≥ {bound.low}, got {value}")
    if value > bound.high:
        raise InputError(f"{what} field {key} = {value:,} is above the sane bound {bound.high:,}")


def validate_geometry(cfg: Mapping[str, Any], what: str = "config") -> None:
    """Raise InputError for any geometry field that is not a positive, bounded integer.

    Walks the nested configs too (a multimodal wrapper's `text_config`, a speculators
    drafter's `transformer_layer_config`), since the geometry reads them.
    """
    stack: list[tuple[Mapping[str, Any], str]] = [(cfg, what)]
    while stack:
        node, name = stack.pop()
        for key, bound in GEOMETRY_BOUNDS.items():
            if key in node:
                _field(node[key], key, bound, name)
        for key in LAYER_ID_KEYS:
            ids = node.get(key)
            if ids is None:
                continue
            if not isinstance(ids, list) or not all(_is_int(i) for i in ids):
                raise InputError(f"{name} field {key} must be a list of integers, got {ids!r}"[:200])
            if len(ids) > MAX_LAYER_TYPES or any(i < 0 or i > MAX_LAYER_TYPES for i in ids):
                raise InputError(f"{name} field {key} has layer ids outside 0..{MAX_LAYER_TYPES}")
        layer_types = node.get("layer_types")
        if isinstance(layer_types, list) and len(layer_types) > MAX_LAYER_TYPES:
            raise InputError(f"{name} field layer_types has {len(layer_types):,} entries "
                             f"(sane bound {MAX_LAYER_TYPES:,})")
        for key in NESTED_KEYS:
            inner = node.get(key)
            if isinstance(inner, Mapping):
                stack.append((inner, f"{name} {key}"))


def finite(name: str, value: float | None, *, positive: bool = False) -> None:
    """Raise InputError when a plan number is NaN, infinite, negative (or not positive)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise InputError(f"{name} must be {'> 0' if positive else '≥ 0'}, got {value:g}")


def acceptance_target_possible(target: float | None, k: int | None, where: str = "slo.target_acceptance_length"
                               ) -> None:
    """A target above 1 + k can never be met (at most k drafted tokens are accepted per verify)."""
    if target is None or k is None:
        return
    if target > 1 + k:
        raise InputError(f"{where} {target:g} is above 1 + k = {1 + k}: at most k = {k} drafted tokens are "
                         "accepted per verify, so no window can meet it")

"""A drafter's KV need against what its engine charges for it (design.md, "Pool capacity").

Why here: the bill reports both numbers for every drafter, whatever the engine: the geometric need under the
drafter's scope (gate.model.geometry) and the engine's per-target-token charge (the profile's `draft_charge`).
The engines charge the drafter per target token, whatever its context scope, so a window- or block-scoped
drafter is over-reserved. How each engine turns KV bytes into a token pool is its profile's arithmetic
(`predict_pool` in gate.model.engines.<engine>, the shared-pool rule in gate.model.engines.base).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.model.config import ConfigError
from gate.model.geometry import KVGeometry, Scope, drafter_context_tokens, drafter_kv_bytes_per_token


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


def drafter_kv_need(geom: KVGeometry, scope: Scope, request_tokens: int, *, engine: str,
                    note: str = "", charge_bytes_per_token: int | None = None, window: int | None = None,
                    sink: int = 0, block_size: int | None = None) -> DrafterKVNeed:
    """Geometric need under the drafter's scope versus the engine's per-token charge.

    The engines charge the drafter per target token (vLLM in the shared pool, SGLang in its
    draft pool), so a window- or block-scoped drafter is over-reserved by the difference. `engine`
    is the plan's engine kind, recorded in the result. The
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

"""A drafter's KV need against what its engine charges for it (design.md, "Pool capacity").

Why here: the bill reports both numbers for every drafter, whatever the engine: the need on the engine's basis
(the drafter's scope under gate.model.geometry, unless the engine holds the drafter's KV otherwise: the
profile's `drafter_kv_basis`) and the engine's per-target-token charge (the profile's `draft_charge`). The
engines charge the drafter per target token, whatever its context scope, so a window- or block-scoped drafter
is over-reserved; an engine that charges less than the need under-reserves it (the kv_pool line's fail). How
each engine turns KV bytes into a token pool is its profile's arithmetic (`predict_pool` in
gate.model.engines.<engine>, the shared-pool rule in gate.model.engines.base).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gate.model.config import ConfigError
from gate.model.geometry import KVGeometry, Scope, drafter_context_tokens, drafter_kv_bytes_per_token


class DrafterKVBasis(Protocol):
    """The part of an engine profile (gate.model.engines.base.EngineProfile) that says how the engine holds a
    drafter's KV. Why a protocol here: the profiles and this module are independent layers (.importlinter), so
    the arithmetic takes the profile by what it offers, not by import."""

    @property
    def kind(self) -> str:
        ...

    @property
    def draft_kv_note(self) -> str:
        ...

    def drafter_kv_basis(self, *, request_tokens: int, need_tokens: int, need_bytes_per_token: int,
                         charge_bytes_per_token: int) -> tuple[int, int, str]:
        ...


@dataclass(frozen=True)
class DrafterKVNeed:
    """A drafter's KV for one request: what it needs on the engine's basis, what the engine charges, and the
    pool it lands in (the profile's `drafter_kv_basis`: "engine_pool" or "own_context")."""

    scope: str
    engine: str
    pool: str
    request_tokens: int
    bytes_per_token: int
    need_tokens: int
    need_bytes: int
    charged_tokens: int
    charged_bytes: int
    over_reserved_bytes: int
    note: str


def drafter_kv_need(geom: KVGeometry, scope: Scope, request_tokens: int, *, engine: DrafterKVBasis,
                    charge_bytes_per_token: int | None = None, window: int | None = None,
                    sink: int = 0, block_size: int | None = None) -> DrafterKVNeed:
    """The drafter's need on `engine`'s basis versus the engine's per-token charge.

    The geometric need is the drafter's attention bytes for the tokens its scope holds; the engine's profile
    then says what of it the engine holds and where (`drafter_kv_basis`: vLLM and SGLang the geometric need,
    charged in their pool sizing; llama.cpp every cell of the draft model's own context). The charge per
    token is the engine's (`charge_bytes_per_token`: the profile's `draft_charge`, which for SGLang's
    target-shaped drafts is not the drafter's own geometry), else the drafter's own; the note is the
    profile's `draft_kv_note`.
    """
    per_token = drafter_kv_bytes_per_token(geom, scope)
    charge = per_token if charge_bytes_per_token is None else charge_bytes_per_token
    if charge < 0:
        raise ConfigError(f"the engine's draft charge must not be negative, got {charge}")
    geometric = drafter_context_tokens(scope, request_tokens, window=window, sink=sink, block_size=block_size)
    need_tokens, need_per_token, pool = engine.drafter_kv_basis(
        request_tokens=request_tokens, need_tokens=geometric, need_bytes_per_token=per_token,
        charge_bytes_per_token=charge)
    need_bytes = need_tokens * need_per_token
    charged_bytes = request_tokens * charge
    return DrafterKVNeed(
        scope=scope,
        engine=engine.kind,
        pool=pool,
        request_tokens=request_tokens,
        bytes_per_token=need_per_token,
        need_tokens=need_tokens,
        need_bytes=need_bytes,
        charged_tokens=request_tokens,
        charged_bytes=charged_bytes,
        over_reserved_bytes=max(0, charged_bytes - need_bytes),
        note=engine.draft_kv_note,
    )

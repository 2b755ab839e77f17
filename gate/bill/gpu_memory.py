"""GPU memory of one rank: does weights per TP rank + the KV pool fit `gpu_memory_bytes × memory_fraction`?

Why: seed 002's first two lines are "the memory bill" — two artifacts' weights and two KV
pools draw on the same device memory. A plan that names `budgets.gpu_memory_bytes` must
have it checked, not accepted and ignored. Both engines size memory **per GPU** (per TP
rank): vLLM's `--gpu-memory-utilization` and SGLang's `--mem-fraction-static` are fractions
of one device, weights are split across TP ranks, and the pool's token count is per rank
(each rank holds its share of the KV heads, so `bytes_per_token` here is the per-rank figure
the geometry computes with the plan's TP).

    usable  = gpu_memory_bytes × memory_fraction                       (one GPU)
    weights = target_weights / TP + drafter_weights / drafter_TP       (per rank; an MTP head is in the target's)
    kv      = pool_tokens × (target_bytes_per_token + drafter_bytes_per_token)   (per rank)
    fits   ⇔ weights + kv ≤ usable

vLLM puts the drafter's layers into the one pool (its tokens already pay for them); SGLang
keeps a draft pool with a slot per target token — either way the pool's tokens times the
summed per-token bytes is the KV memory. When the engine was given a KV byte budget
(`kv_cache_memory_bytes`) that is the KV memory. Activations, CUDA graphs and the allocator's
slack come out of the same fraction and are not modelled: a pass here is a lower bound on
the need, a fail is certain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.model.engines import profile


@dataclass(frozen=True)
class GpuMemoryBill:
    """The per-rank memory arithmetic, each input with where it came from."""

    gpu_memory_bytes: int
    memory_fraction: float | None
    fraction_source: str  # "engine.memory_fraction" or the default note
    usable_bytes: int | None
    target_weights_per_rank: int | None
    drafter_weights_per_rank: int | None
    kv_pool_tokens: int | None
    kv_pool_basis: str | None  # "allocated (…source…)" | "predicted, not observed" | "engine.kv_cache_memory_bytes"
    kv_bytes_per_token: int | None
    kv_pool_bytes: int | None
    need_bytes: int | None  # what is known of the need (weights + KV); None when nothing is
    unknown: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def over(self) -> bool:
        """The known part of the need alone is above the usable memory: a certain fail."""
        return self.usable_bytes is not None and self.need_bytes is not None and self.need_bytes > self.usable_bytes

    def to_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()} | {"over": self.over}


def gpu_memory_bill(*, engine: str, gpu_memory_bytes: int, memory_fraction: float | None, tp: int,
                    drafter_tp: int | None, target_weights_bytes: int | None, drafter_weights_bytes: int | None,
                    drafter_embedded: bool, has_drafter: bool, pool_tokens: int | None, pool_basis: str | None,
                    target_bytes_per_token: int | None, drafter_bytes_per_token: int | None,
                    kv_cache_memory_bytes: int | None, predicted_kv_bytes: int | None = None) -> GpuMemoryBill:
    """Compute the bill; unknown inputs are listed, never guessed (see the module docstring).
    `predicted_kv_bytes`: the KV an engine sizing its pool from its own keys predicts (llama.cpp: both contexts,
    sliding-window caches included), the KV of a predicted pool on the engine's own basis."""
    notes: list[str] = []
    unknown: list[str] = []
    prof = profile(engine)
    if memory_fraction is not None:
        fraction: float | None = memory_fraction
        fsource = "engine.memory_fraction"
    else:
        # the engine's documented default, when it has one (the profile's memory_fraction_note says which)
        fraction, fsource = prof.default_memory_fraction, prof.memory_fraction_note
        notes.append(fsource)
        if fraction is None:
            unknown.append("memory fraction")
    usable = int(gpu_memory_bytes * fraction) if fraction is not None else None

    tw = None if target_weights_bytes is None else -(-target_weights_bytes // max(tp, 1))
    if tw is None:
        unknown.append("target weights")
    dw: int | None = 0
    if has_drafter and not drafter_embedded:
        dtp = drafter_tp or tp
        dw = None if drafter_weights_bytes is None else -(-drafter_weights_bytes // max(dtp, 1))
        if dw is None:
            unknown.append("drafter weights")
    elif has_drafter:
        notes.append("the MTP head's weights are part of the target checkpoint")

    bpt: int | None = None
    if target_bytes_per_token is not None and not has_drafter:
        bpt = target_bytes_per_token
    elif target_bytes_per_token is not None and drafter_bytes_per_token is not None:
        bpt = target_bytes_per_token + drafter_bytes_per_token
    kv_bytes: int | None = None
    basis = pool_basis
    if predicted_kv_bytes is not None and pool_basis is not None and pool_basis.startswith("predicted"):
        kv_bytes = predicted_kv_bytes
        notes.append(f"{engine}: KV {predicted_kv_bytes:,} B predicted from the engine's own keys" + prof.kv_pool_note)
    elif pool_tokens is not None and bpt is not None:
        kv_bytes = pool_tokens * bpt
        if has_drafter:
            notes.append(f"{engine}: KV = {pool_tokens:,} tokens × ({target_bytes_per_token:,} target + "
                         f"{drafter_bytes_per_token:,} drafter) B/token per rank" + prof.kv_pool_note)
    elif kv_cache_memory_bytes is not None:
        kv_bytes, basis = kv_cache_memory_bytes, "engine.kv_cache_memory_bytes"
    else:
        unknown.append("KV pool bytes")
    known = [x for x in (tw, dw, kv_bytes) if x is not None]
    need = sum(known) if known else None
    return GpuMemoryBill(gpu_memory_bytes=gpu_memory_bytes, memory_fraction=fraction, fraction_source=fsource,
                         usable_bytes=usable, target_weights_per_rank=tw, drafter_weights_per_rank=dw,
                         kv_pool_tokens=pool_tokens, kv_pool_basis=basis, kv_bytes_per_token=bpt,
                         kv_pool_bytes=kv_bytes, need_bytes=need, unknown=tuple(unknown), notes=tuple(notes))


def sentence(bill: GpuMemoryBill) -> str:
    """One clause for the kv_pool line's reason, with every number."""
    usable = (f"{bill.gpu_memory_bytes:,} B × {bill.memory_fraction:g} = {bill.usable_bytes:,} B usable per GPU"
              if bill.usable_bytes is not None and bill.memory_fraction is not None
              else f"{bill.gpu_memory_bytes:,} B per GPU × unknown fraction")
    parts = []
    if bill.target_weights_per_rank is not None:
        parts.append(f"target weights {bill.target_weights_per_rank:,} B/rank")
    if bill.drafter_weights_per_rank:
        parts.append(f"drafter weights {bill.drafter_weights_per_rank:,} B/rank")
    if bill.kv_pool_bytes is not None:
        parts.append(f"KV {bill.kv_pool_bytes:,} B ({bill.kv_pool_basis})")
    need = " + ".join(parts) + (f" = {bill.need_bytes:,} B" if len(parts) > 1 and bill.need_bytes is not None else "")
    if bill.over:
        verdict = f"GPU memory over: {need} > {usable}"
    elif bill.unknown:
        verdict = f"GPU memory not decided ({', '.join(bill.unknown)} unknown): {need or 'nothing known'} vs {usable}"
    else:
        verdict = f"GPU memory fits: {need} ≤ {usable} (activations and graphs not modelled)"
    return verdict

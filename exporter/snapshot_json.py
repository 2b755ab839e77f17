"""The `specgate exporter once --format json` document (design.md command-line contract)."""

from __future__ import annotations

from typing import Any

from exporter.engines import ADAPTERS
from exporter.engines.base import EngineSnapshot, StreamSnapshot


def _num(v: float | None) -> float | int | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() else v


def stream_to_json(s: StreamSnapshot, engine: str) -> dict[str, Any]:
    """One stream of `engine`; an engine that counts verify calls has them turned into drafts by its adapter
    (`draft_counts`)."""
    spec = None
    if s.spec is not None:
        drafts, draft_tokens, accepted = s.spec.drafts, s.spec.draft_tokens, s.spec.accepted_tokens
        if drafts is None and s.spec.verify_calls is not None:
            counts = ADAPTERS[engine].draft_counts(s.spec.verify_calls, s.generation_tokens, s.finished_requests,
                                                   s.spec.num_draft_tokens)
            if counts is not None:
                drafts, draft_tokens, accepted = counts.drafts, counts.draft_tokens, counts.accepted_tokens
        spec = {
            "drafts": _num(drafts), "draft_tokens": _num(draft_tokens), "accepted_tokens": _num(accepted),
            "accepted_per_position": [_num(x) for x in s.spec.accepted_per_position],
        }
    return {
        "model": s.model, "rank": s.rank, "kv_pool_tokens": s.kv_pool_tokens, "kv_block_size": s.kv_block_size,
        "kv_usage_ratio": s.kv_usage_ratio, "kv_available_tokens": _num(s.kv_available_tokens),
        "kv_used_tokens": _num(s.kv_used_tokens), "kv_cache_memory_bytes": _num(s.kv_cache_memory_bytes),
        "weight_memory_bytes": _num(s.weight_memory_bytes), "context_cap_tokens": s.context_cap_tokens, "spec": spec,
        "spec_block_accept_length": s.spec_block_accept_length, "spec_cap_length": s.spec_cap_length,
        "spec_num_steps": _num(s.spec_num_steps), "spec_num_draft_tokens": _num(s.spec_num_draft_tokens),
        "finished_requests": _num(s.finished_requests),
        "ttft_count": _num(s.ttft.count) if s.ttft is not None else None,
        "prompt_tokens": _num(s.prompt_tokens), "generation_tokens": _num(s.generation_tokens),
        "requests_running": _num(s.requests_running), "requests_waiting": _num(s.requests_waiting),
    }


def snapshot_to_json(snap: EngineSnapshot) -> dict[str, Any]:
    sp = snap.speculative
    speculative = None if sp is None else {
        "algorithm": sp.algorithm, "num_draft_tokens": sp.num_draft_tokens, "num_steps": sp.num_steps,
        "avg_accept_length": sp.avg_accept_length, "eagle_topk": sp.eagle_topk, "adaptive": sp.adaptive}
    return {"engine": snap.engine, "version_hints": list(snap.version_hints), "speculative": speculative,
            "streams": [stream_to_json(s, snap.engine) for s in snap.streams]}

"""How SGLang counts speculation, turned into vLLM's counts (drafts, draft tokens, accepted) and rate.

SGLang >= 0.5.13 counts verify calls (`spec_verify_calls_total`, one per draft round) with the generated tokens
and the finished requests; older SGLang only has the interval gauges `spec_accept_length` (includes the bonus
token) and `spec_num_draft_tokens`, and a `spec_accept_rate` whose meaning changed twice (never read: the rate is
recomputed from the length). The adapter's counting hooks (`exporter.engines.base.EngineAdapter.draft_counts`,
`interval_gauge_is_new`, `rate_from_length`) are these functions; `exporter.formulas` keeps L and L*.
"""

from __future__ import annotations

from exporter import formulas
from exporter.engines.base import DraftCounts, SpecCounters


def from_verify_calls(verify_calls: float, generation_tokens: float | None, finished_requests: float | None,
                      num_draft_tokens: float | None) -> DraftCounts:
    """SGLang >= 0.5.13 counts one verify call per draft round, and every verify emits its accepted draft
    tokens plus one bonus token; each request's first token comes from prefill: drafts = verify calls,
    accepted = generated − finished requests − verify calls (`exporter.formulas.decode_only_accepted`),
    proposed = verify calls x (num_draft_tokens − 1), since `spec_num_draft_tokens` counts the verified root
    too. Never negative (a counter); unknown without the generation or the request counter (fail closed:
    without the requests accepted would count every request's prefill token) or a draft-token setting of at
    least 1."""
    accepted = max(formulas.decode_only_accepted(generation_tokens, finished_requests, verify_calls), 0.0) \
        if generation_tokens is not None and finished_requests is not None else None
    draft_tokens = verify_calls * (num_draft_tokens - 1) if num_draft_tokens is not None and num_draft_tokens >= 1 \
        else None
    return DraftCounts(verify_calls, accepted, draft_tokens)


def interval_gauge_is_new(before: SpecCounters | None, after: SpecCounters, generation: float | None,
                          reset: bool) -> bool:
    """Whether old SGLang's `spec_accept_length` gauge holds data from this window.

    SGLang re-sends its last interval value while idle, so the gauge is new only when generation
    progressed. A DP-rank stream has no generation counter of its own (request-side series carry no
    rank): there, only a gauge that moved is new (and a reset window has nothing to compare with).
    """
    if generation is not None:
        return generation > 0
    moved = (before is not None and before.accept_length_gauge is not None
             and before.accept_length_gauge != after.accept_length_gauge)
    return moved and not reset


def rate_from_length(length: float, num_draft_tokens: float) -> float | None:
    """SGLang's `spec_accept_rate` changed meaning twice; recompute it as (L-1)/(n_draft-1)."""
    if num_draft_tokens is None or num_draft_tokens <= 1:
        return None
    return (length - 1.0) / (num_draft_tokens - 1.0)

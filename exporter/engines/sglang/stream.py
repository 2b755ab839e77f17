"""Per-request acceptance from one SGLang answer (SGLang 0.5.23): `/generate`'s `meta_info`, or a streamed
`/v1/completions` answer's `sglext.spec_tokens_details` chunk.

Why a parser of its own: per-request acceptance is not in `/metrics` (those are per batch or per log interval);
SGLang puts it in each answer, and `specgate probe` records it per cell as a distribution (docs/design.md "Probe
and compare"). Fields, as a real SGLang 0.5.23 on CPU returns them (tests/fixtures/sglang/0.5.23/<arm>/requests.json):

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

The streamed chunk (≥ 0.5.23, request field `return_spec_tokens_details`) carries the same `spec_*` fields without
`completion_tokens` (taken from the usage chunk). Fail closed: an answer without speculation (no `spec_verify_ct`)
is None; one whose fields are missing, of the wrong type, negative or inconsistent raises `PerRequestError` (one
line), never a guessed number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from exporter.engines.base import PerRequestError, RequestAcceptance


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


def carries_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any) -> bool:
    """A stream carries SGLang's per-request acceptance when it sent an `sglext.spec_tokens_details` chunk."""
    return details is not None


def streamed_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any,
                        completion_tokens: int) -> RequestAcceptance | None:
    """The `sglext.spec_tokens_details` chunk of a stream, with the usage chunk's `completion_tokens`."""
    if not isinstance(details, Mapping):
        raise PerRequestError(f"sglext.spec_tokens_details is not an object: {type(details).__name__}")
    return sglang_request_acceptance({**details, "completion_tokens": completion_tokens})

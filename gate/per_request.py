"""Per-request acceptance from one SGLang `/generate` answer's `meta_info` (SGLang 0.5.23).

Why a parser of its own: per-request acceptance is not in `/metrics` (those are per batch or
per log interval); SGLang puts it in each `/generate` answer, and `specgate probe` records it
per cell as a distribution (docs/design.md "Probe and compare"). Fields, as a real SGLang
0.5.23 on CPU returns them (tests/fixtures/sglang/0.5.23/<arm>/requests.json):

- `completion_tokens`: tokens generated for the request (the first one comes from prefill).
- `spec_verify_ct`: verify calls (draft rounds) the request took.
- `spec_accept_length`: completion_tokens / spec_verify_ct — SGLang's per-request L, the bonus
  token included, the same definition as its counters (Δgeneration / Δverify calls).
- `spec_num_correct_drafts` / `spec_num_proposed_drafts`, `spec_accept_rate` = their ratio.
- `spec_correct_drafts_histogram[i]`: verify calls that accepted exactly i draft tokens
  (length num_draft_tokens; it sums to spec_verify_ct).

Fail closed: an answer without speculation (no `spec_verify_ct`) is None; one whose fields
are missing, of the wrong type, negative or inconsistent raises `PerRequestError` (one
line), never a guessed number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class PerRequestError(ValueError):
    """A `meta_info` that is not SGLang's per-request acceptance (one line)."""


@dataclass(frozen=True)
class RequestAcceptance:
    """One request's acceptance, by SGLang's own definitions (module docstring)."""

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
    return RequestAcceptance(completion_tokens=tokens, verify_calls=verify, acceptance_length=float(length),
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

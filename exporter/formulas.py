"""The acceptance arithmetic, in one place (DESIGN.md "Derived quantities", seed 004).

Pure functions on plain numbers; `exporter.derive` applies them to counter deltas and
`gate` reuses them (never re-implements them).
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Iterable
from functools import lru_cache


def acceptance_length(accepted: float, drafts: float) -> float | None:
    """Mean accepted tokens per verify, including the bonus token: L = 1 + accepted / drafts."""
    if drafts <= 0:
        return None
    return 1.0 + accepted / drafts


def pooled_length(windows: Iterable[tuple[float | None, float]]) -> float | None:
    """Drafts-weighted L over several windows (streams, pods, samples) of (L_j, drafts_j):

        L = 1 + Σ_j (L_j − 1) · drafts_j / Σ_j drafts_j  (= 1 + Σ accepted / Σ drafts)

    Counters add, ratios do not: pooling the L's themselves would weigh a thin window like a full one.
    Windows with an unknown L are left out (their drafts too); None when no drafts remain.
    """
    drafts = 0.0
    accepted = 0.0
    for length, d in windows:
        if length is None:
            continue
        drafts += d
        accepted += (length - 1.0) * d
    return acceptance_length(accepted, drafts)


def length_from_rates(rates: Iterable[float]) -> float:
    """L(k) = 1 + Σ_{i<k} p_i from per-position acceptance rates p_i = accepted_pos_i / drafts (the 1 is the
    bonus token); vLLM accepts prefix-wise, so this is the same L as 1 + accepted / drafts."""
    return 1.0 + sum(rates)


def acceptance_rate(accepted: float, draft_tokens: float) -> float | None:
    """Fraction of proposed draft tokens that were accepted: a = accepted / draft_tokens."""
    if draft_tokens <= 0:
        return None
    return accepted / draft_tokens


def position_rates(accepted_per_position: list[float] | tuple[float, ...], drafts: float) -> list[float] | None:
    """p_i = accepted_pos_i / drafts."""
    if drafts <= 0 or not accepted_per_position:
        return None
    return [x / drafts for x in accepted_per_position]


def mean_depth(draft_tokens: float, drafts: float) -> float | None:
    """Mean proposed depth k̄ = draft_tokens / drafts (vLLM's counters): equal to the configured k exactly when
    every draft proposed k tokens; below it when a schedule lowered k or a drafterless proposer found a
    shorter match (no draft exceeds the maximum)."""
    if drafts <= 0:
        return None
    return draft_tokens / drafts


def decode_only_accepted(generated: float, finished_requests: float, verify_calls: float) -> float:
    """Accepted draft tokens from SGLang's request-side counters, vLLM's definition (bonus included, prefill
    token excluded): accepted = generated − finished requests − verify calls.

    Why the requests: each request's first token comes from prefill, not from a verify call, and
    `generation_tokens_total` counts it. Every verify emits its accepted draft tokens plus one bonus token,
    so generated − requests = Σ_verify (accepted_j + 1). SGLang 0.5.23 adds all three counters
    (`generation_tokens_total`, `spec_verify_calls_total`, `num_requests_total`) when a request finishes
    (`observe_one_finished_request`), so over any window they cover the same requests: those that finished
    in it. Real: three 48-token requests with a drafter accepting nothing gave generated 144, verify 141,
    requests 3: accepted 0 (SGLang's own 144 / 141 = 1.021 counts the prefill token).
    """
    return generated - finished_requests - verify_calls


def decode_only_length(generated: float, finished_requests: float, verify_calls: float) -> float | None:
    """SGLang's L on vLLM's definition: L = (generated − finished requests) / verify calls
    (= 1 + decode_only_accepted / verify calls); None without verify calls. Not clamped: a value below 1
    (requests that finished with no token, e.g. aborted in the queue, each take one token too many) is for
    the caller to refuse, never to round up."""
    if verify_calls <= 0:
        return None
    return acceptance_length(decode_only_accepted(generated, finished_requests, verify_calls), verify_calls)


def verify_cycle_seconds(length: float, tokens_per_second_per_sequence: float) -> float | None:
    """Seed 004's cycleMs (in seconds): one verify cycle = L / per-sequence decode rate.

    For a baseline (no speculation) L = 1 and this is the plain target step 1 / r.
    """
    if tokens_per_second_per_sequence <= 0:
        return None
    return length / tokens_per_second_per_sequence


def break_even_length(cycle_seconds: float, target_step_seconds: float) -> float | None:
    """L* = t_cycle / t_target_step: speculation pays iff L > L*."""
    if target_step_seconds <= 0:
        return None
    return cycle_seconds / target_step_seconds


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Quantile from cumulative (le, count) buckets, interpolating linearly inside a bucket.

    Follows Prometheus' `histogram_quantile`: the lowest bucket starts at 0 (when its
    upper bound is positive); a quantile in the +Inf bucket returns the highest finite
    bound. Returns None when there are no observations or no +Inf bucket to anchor the total.
    """
    if not buckets:
        return None
    bs = sorted(buckets)
    if not math.isinf(bs[-1][0]):
        return None
    total = bs[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for i, (le, count) in enumerate(bs):
        if count >= rank:
            if math.isinf(le):
                return bs[i - 1][0] if i > 0 else None
            if i == 0 and le <= 0:
                return le
            lower = prev_le if i > 0 else (0.0 if le > 0 else le)
            in_bucket = count - prev_count
            if in_bucket <= 0:
                return le
            return lower + (le - lower) * (rank - prev_count) / in_bucket
        prev_le, prev_count = le, count
    return None


@lru_cache(maxsize=64)
def _strictly_increasing(les: tuple[float, ...]) -> bool:
    """Whether the bounds rise strictly. An adapter hands out one bounds tuple per bucket layout, so this is
    worked out once per layout and then found by the tuple (hashing it costs less than comparing its pairs)."""
    return all(map(operator.lt, les, les[1:]))


def histogram_quantiles(qs: tuple[float, ...], les: tuple[float, ...],
                        counts: tuple[float, ...]) -> list[float | None]:
    """`histogram_quantile(q, list(zip(les, counts)))` for each q, without pairing and sorting the buckets:
    the windows ask three quantiles of three histograms per stream and window at every scrape. Bounds that
    are not strictly increasing (never from an adapter) take the general function."""
    n = len(les)
    if n == 0:
        return [None] * len(qs)
    if not _strictly_increasing(les):
        pairs = list(zip(les, counts, strict=True))
        return [histogram_quantile(q, pairs) for q in qs]
    if not math.isinf(les[-1]):
        return [None] * len(qs)
    total = counts[-1]
    if total <= 0:
        return [None] * len(qs)
    # the first bucket holding rank q x total: bisected when the counts never go down (a cumulative
    # histogram's always do not), else searched bucket by bucket
    ordered = all(map(operator.le, counts, counts[1:]))
    out: list[float | None] = []
    for q in qs:
        rank = q * total
        if ordered:
            i = bisect.bisect_left(counts, rank)
        else:
            i = next((j for j in range(n) if counts[j] >= rank), n)
        value: float | None = None
        if i < n:
            count, le = counts[i], les[i]
            if math.isinf(le):
                value = les[i - 1] if i > 0 else None
            elif i == 0 and le <= 0:
                value = le
            else:
                lower = les[i - 1] if i > 0 else (0.0 if le > 0 else le)
                prev_count = counts[i - 1] if i > 0 else 0.0
                in_bucket = count - prev_count
                value = le if in_bucket <= 0 else lower + (le - lower) * (rank - prev_count) / in_bucket
        out.append(value)
    return out

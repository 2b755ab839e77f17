"""What the exporter will not stand behind: values a real engine cannot report, left out and counted.

The one place every value an adapter reads is bounded, whichever engine's adapter read it: `check_snapshot`
runs on every snapshot the exporter makes (`exporter.scrape`), after the adapter, so no adapter re-states a
bound. The parser already leaves out NaN, ±Inf and negative samples (`PageParser(usable_only=True)`,
reasons `non_finite`, `negative`) and repeats of a series (`duplicate`); the adapters drop draft positions
past `MAX_POSITIONS` (`position_limit`). This checks what is left, per stream:
- sizes read from label values or side endpoints that are negative (`negative`: vLLM's pool is a label of
  `cache_config_info`);
- values an adapter's arithmetic made non-finite (`non_finite`: 1e300 GiB of KV memory in bytes, a sum of
  two counters near the float's limit): every number of a stream, its speculation counters and histograms;
- values that are each a number but impossible (`impossible`), the bounds of `exporter.bounds`:
  - a pool, context cap, block size, used or free pool tokens above the adapter's `max_pool_tokens`
    (2**40 tokens unless it states its own; an int past the float's range would make the exposition raise);
  - a depth above `MAX_DEPTH` (64): SGLang's `spec_num_steps` gauge, its draft-token gauges (k + 1, the
    verified root included) and `/server_info` settings; an acceptance length above 1 + `MAX_DEPTH`;
  - a usage ratio above 1;
  - SGLang's interval accept length below 1 (it includes the bonus token) or a draft-token count below 1;
  - more accepted than proposed draft tokens, or more accepted at one position than drafts (the stream's
    speculation counters are then absent: none of them can be trusted against the others);
  - a histogram whose cumulative buckets go down as `le` grows, or whose count is below a bucket (the
    histogram is absent).
The exporter counts every reason in `specgate_engine_anomalies_total{reason}` (with `stream_limit` and
`multiple_engines` from the tracker); the names are `ANOMALY_REASONS`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from operator import is_

from exporter.bounds import MAX_DEPTH, MAX_POOL_TOKENS
from exporter.engines import ADAPTERS
from exporter.engines.base import EngineSnapshot, Histogram, SpecCounters, SpeculativeSettings, StreamSnapshot

ANOMALY_REASONS: tuple[str, ...] = ("duplicate", "impossible", "multiple_engines", "negative", "non_finite",
                                    "position_limit", "shape", "stream_limit")


_FROM_LABELS = ("kv_pool_tokens", "kv_block_size", "kv_pool_configured_tokens", "context_cap_tokens")
# token counts of the pool: each at most the adapter's `max_pool_tokens`
_POOL_SIZED = (*_FROM_LABELS, "kv_used_tokens", "kv_available_tokens")
# every other number of a stream (a non-finite one is no value)
_NUMBERS = ("kv_usage_ratio", "kv_cache_memory_bytes", "weight_memory_bytes", "prompt_tokens", "generation_tokens",
            "requests_running", "requests_waiting", "preemptions", "spec_block_accept_length", "spec_cap_length",
            "spec_num_steps", "spec_num_draft_tokens", "finished_requests")
_SPEC_NUMBERS = ("drafts", "draft_tokens", "accepted_tokens", "verify_calls", "accept_length_gauge",
                 "num_draft_tokens")
_INF = float("inf")
# the most each depth-like value can read: k itself, k + 1 (SGLang's draft tokens count the verified root;
# an acceptance length counts the bonus token)
_DEPTHS = (("spec_num_steps", MAX_DEPTH), ("spec_num_draft_tokens", MAX_DEPTH + 1))
_SPEC_DEPTHS = (("num_draft_tokens", MAX_DEPTH + 1), ("accept_length_gauge", MAX_DEPTH + 1))


def _add(found: MutableMapping[str, int], reason: str, n: int = 1) -> None:
    found[reason] = found.get(reason, 0) + n


def _finite(v: float) -> bool:
    return -_INF < v < _INF  # NaN fails the comparison too


def _hist_ok(h: Histogram) -> bool:
    last = 0.0
    for c in h.counts:
        if c < last:
            return False
        last = c
    return h.count is None or not h.counts or h.count >= h.counts[-1]


def _hist_finite(h: Histogram) -> bool:
    return (all(map(_finite, h.counts)) and (h.count is None or _finite(h.count))
            and (h.sum is None or _finite(h.sum)))


def _spec_ok(s: SpecCounters) -> bool:
    if s.accepted_tokens is not None and s.draft_tokens is not None and s.accepted_tokens > s.draft_tokens:
        return False
    if s.drafts is not None and any(v > s.drafts for v in s.accepted_per_position):
        return False
    return True


def _checked_spec(sp: SpecCounters, found: MutableMapping[str, int]) -> tuple[dict[str, object], int]:
    """The changes that leave `sp`'s non-finite values out (counted here) and the impossible ones (returned)."""
    changes: dict[str, object] = {}
    bad = 0
    for name in _SPEC_NUMBERS:
        v = getattr(sp, name)
        if v is not None and not _finite(v):
            changes[name] = None
            _add(found, "non_finite")
    if not all(map(_finite, sp.accepted_per_position)):
        changes["accepted_per_position"] = ()
        _add(found, "non_finite")
    for name, most in _SPEC_DEPTHS:
        v = getattr(sp, name)
        if name not in changes and v is not None and v > most:
            changes[name] = None
            bad += 1
    if sp.accept_length_gauge is not None and sp.accept_length_gauge < 1.0 and "accept_length_gauge" not in changes:
        changes["accept_length_gauge"] = None
        bad += 1
    if sp.num_draft_tokens is not None and sp.num_draft_tokens < 1.0 and "num_draft_tokens" not in changes:
        changes["num_draft_tokens"] = None
        bad += 1
    if not _spec_ok(replace(sp, **changes) if changes else sp):  # type: ignore[arg-type]
        changes.update(drafts=None, draft_tokens=None, accepted_tokens=None, accepted_per_position=())
        bad += 1
    return changes, bad


def check_stream(s: StreamSnapshot, found: MutableMapping[str, int],
                 max_pool_tokens: int = MAX_POOL_TOKENS) -> StreamSnapshot:
    """`s` without its impossible values; each one left out adds 1 to `found` under its reason.
    `max_pool_tokens`: the engine's bound on pool-sized values (`EngineAdapter.max_pool_tokens`)."""
    most_tokens = max_pool_tokens
    changes: dict[str, object] = {}
    bad = 0
    for name in _FROM_LABELS:  # sizes read from label values or side endpoints, not samples
        v = getattr(s, name)
        if v is not None and v < 0:
            changes[name] = None
            _add(found, "negative")
    for name in (*_POOL_SIZED, *_NUMBERS):
        v = getattr(s, name)
        if v is not None and name not in changes and not _finite(v):
            changes[name] = None
            _add(found, "non_finite")
    for name in _POOL_SIZED:
        v = getattr(s, name)
        if v is not None and name not in changes and v > most_tokens:
            changes[name] = None
            bad += 1
    for name, most in _DEPTHS:
        v = getattr(s, name)
        if v is not None and name not in changes and v > most:
            changes[name] = None
            bad += 1
    if s.kv_usage_ratio is not None and "kv_usage_ratio" not in changes and s.kv_usage_ratio > 1.0:
        changes["kv_usage_ratio"] = None
        bad += 1
    sp = s.spec
    if sp is not None:
        spec_changes, spec_bad = _checked_spec(sp, found)
        bad += spec_bad
        if spec_changes:
            changes["spec"] = replace(sp, **spec_changes)  # type: ignore[arg-type]
    for name in ("ttft", "tpot", "itl"):
        h = getattr(s, name, None)
        if isinstance(h, Histogram):
            if not _hist_finite(h):
                changes[name] = None
                _add(found, "non_finite")
            elif not _hist_ok(h):
                changes[name] = None
                bad += 1
    if s.split_cumulative and not all(_finite(v) for _, v in s.split_cumulative):
        changes["split_cumulative"] = tuple((k, v) for k, v in s.split_cumulative if _finite(v))
        _add(found, "non_finite")
    if not changes:
        return s
    if bad:
        _add(found, "impossible", bad)
    return replace(s, **changes)  # type: ignore[arg-type]


def check_settings(sp: SpeculativeSettings | None, found: MutableMapping[str, int]) -> SpeculativeSettings | None:
    """The engine's reported speculative settings without a depth past `MAX_DEPTH` (`num_steps`; the draft
    tokens count the root: `MAX_DEPTH` + 1) or an average acceptance length past 1 + `MAX_DEPTH`, each
    counted as `impossible`."""
    if sp is None:
        return None
    changes: dict[str, object] = {}
    if sp.num_steps is not None and sp.num_steps > MAX_DEPTH:
        changes["num_steps"] = None
    if sp.num_draft_tokens is not None and sp.num_draft_tokens > MAX_DEPTH + 1:
        changes["num_draft_tokens"] = None
    if sp.avg_accept_length is not None and not (_finite(sp.avg_accept_length)
                                                  and sp.avg_accept_length <= MAX_DEPTH + 1):
        changes["avg_accept_length"] = None
    if not changes:
        return sp
    _add(found, "impossible", len(changes))
    return replace(sp, **changes)  # type: ignore[arg-type]


def check_snapshot(snap: EngineSnapshot, found: Mapping[str, int] | None = None) -> EngineSnapshot:
    """`snap` without impossible values; its `anomalies` are `found` (the parser's counts), the adapter's
    and this check's, added up."""
    counts: dict[str, int] = dict(snap.anomalies)
    if found:
        for k, v in found.items():
            counts[k] = counts.get(k, 0) + v
    most = ADAPTERS[snap.engine].max_pool_tokens
    # a list, not a generator (one frame less to make per scrape); `map(is_)` compares in C
    streams = tuple([check_stream(s, counts, most) for s in snap.streams])
    speculative = check_settings(snap.speculative, counts) if snap.speculative is not None else None
    if counts == snap.anomalies and speculative is snap.speculative and all(map(is_, streams, snap.streams)):
        return snap  # nothing left out: the snapshot as it is (a replace per scrape is not free)
    return replace(snap, streams=streams, anomalies=counts, speculative=speculative)

"""What the exporter will not stand behind: values a real engine cannot report, left out and counted.

The parser already leaves out NaN, ±Inf and negative samples (`PageParser(usable_only=True)`,
reasons `non_finite`, `negative`) and repeats of a series (`duplicate`); the vLLM adapter drops
draft positions past `MAX_POSITIONS` (`position_limit`). This checks what is left, per stream,
for sizes read from label values or side endpoints that are negative (`negative`: vLLM's pool is
a label of `cache_config_info`), and for values that are each a number but together impossible
(`impossible`):
- a usage ratio above 1;
- SGLang's interval accept length below 1 (it includes the bonus token) or a draft-token count
  below 1;
- more accepted than proposed draft tokens, or more accepted at one position than drafts (the
  stream's speculation counters are then absent: none of them can be trusted against the others);
- a histogram whose cumulative buckets go down as `le` grows, or whose count is below a bucket
  (the histogram is absent).
The exporter counts every reason in `specgate_engine_anomalies_total{reason}` (with
`stream_limit` and `multiple_engines` from the tracker); the names are `ANOMALY_REASONS`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import replace

from exporter.engines.base import EngineSnapshot, Histogram, SpecCounters, StreamSnapshot

ANOMALY_REASONS: tuple[str, ...] = ("duplicate", "impossible", "multiple_engines", "negative", "non_finite",
                                    "position_limit", "shape", "stream_limit")


_FROM_LABELS = ("kv_pool_tokens", "kv_block_size", "kv_pool_configured_tokens", "context_cap_tokens")


def _hist_ok(h: Histogram) -> bool:
    last = 0.0
    for c in h.counts:
        if c < last:
            return False
        last = c
    return h.count is None or not h.counts or h.count >= h.counts[-1]


def _spec_ok(s: SpecCounters) -> bool:
    if s.accepted_tokens is not None and s.draft_tokens is not None and s.accepted_tokens > s.draft_tokens:
        return False
    if s.drafts is not None and any(v > s.drafts for v in s.accepted_per_position):
        return False
    return True


def check_stream(s: StreamSnapshot, found: MutableMapping[str, int]) -> StreamSnapshot:
    """`s` without its impossible values; each one left out adds 1 to `found["impossible"]`."""
    changes: dict[str, object] = {}
    bad = 0
    for name in _FROM_LABELS:  # sizes read from label values or side endpoints, not samples
        v = getattr(s, name)
        if v is not None and v < 0:
            changes[name] = None
            found["negative"] = found.get("negative", 0) + 1
    if s.kv_usage_ratio is not None and s.kv_usage_ratio > 1.0:
        changes["kv_usage_ratio"] = None
        bad += 1
    sp = s.spec
    if sp is not None:
        spec_changes: dict[str, object] = {}
        if sp.accept_length_gauge is not None and sp.accept_length_gauge < 1.0:
            spec_changes["accept_length_gauge"] = None
            bad += 1
        if sp.num_draft_tokens is not None and sp.num_draft_tokens < 1.0:
            spec_changes["num_draft_tokens"] = None
            bad += 1
        if not _spec_ok(sp):
            spec_changes.update(drafts=None, draft_tokens=None, accepted_tokens=None, accepted_per_position=())
            bad += 1
        if spec_changes:
            changes["spec"] = replace(sp, **spec_changes)  # type: ignore[arg-type]
    for name in ("ttft", "tpot", "itl"):
        h = getattr(s, name, None)
        if isinstance(h, Histogram) and not _hist_ok(h):
            changes[name] = None
            bad += 1
    if not changes:
        return s
    if bad:
        found["impossible"] = found.get("impossible", 0) + bad
    return replace(s, **changes)  # type: ignore[arg-type]


def check_snapshot(snap: EngineSnapshot, found: Mapping[str, int] | None = None) -> EngineSnapshot:
    """`snap` without impossible values; its `anomalies` are `found` (the parser's counts), the adapter's
    and this check's, added up."""
    counts: dict[str, int] = dict(snap.anomalies)
    for k, v in (found or {}).items():
        counts[k] = counts.get(k, 0) + v
    streams = tuple(check_stream(s, counts) for s in snap.streams)
    if counts == snap.anomalies and all(a is b for a, b in zip(streams, snap.streams, strict=True)):
        return snap  # nothing left out: the snapshot as it is (a replace per scrape is not free)
    return replace(snap, streams=streams, anomalies=counts)

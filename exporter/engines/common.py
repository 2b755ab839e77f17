"""Helpers shared by the engine adapters: folding split labels, histograms, finite values."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from exporter.engines.base import Histogram, ParsedPage, Sample

K = TypeVar("K", bound=Hashable)
_INF = float("inf")
MAX_LAYOUTS = 64  # distinct bucket layouts an adapter remembers (a page that churns its bounds clears them)
MAX_SERIES = 16_384  # label sets whose stream key an adapter remembers (then it starts over)


class SeriesKeys(Generic[K]):
    """Each series' stream key (and histogram bound `le`), worked out once and remembered between scrapes.

    The parser hands out one label mapping per series text, the same object on every scrape
    (`exporter.parse.PageParser`), so the key of a series is looked up by the mapping's identity
    instead of being built from its labels at every sample. An entry holds the mapping itself, so
    its id cannot be reused by another object while it is remembered; a mapping the parser made
    afresh is simply a new entry. Bounded: past `limit` entries it starts over.
    """

    def __init__(self, key: Callable[[Mapping[str, str]], K], limit: int = MAX_SERIES) -> None:
        self._key = key
        self._limit = limit
        self._memo: dict[int, tuple[Mapping[str, str], K, float | None]] = {}
        self._same: dict[K, K] = {}  # one key object per stream: a run of its series is told by identity

    def _entry(self, labels: Mapping[str, str]) -> tuple[Mapping[str, str], K, float | None]:
        le: float | None = None
        le_s = labels.get("le")
        if le_s is not None:
            try:
                le = float(le_s)
            except ValueError:
                le = None
        if len(self._memo) >= self._limit:
            self._memo.clear()
            self._same.clear()
        key = self._key(labels)
        entry = self._memo[id(labels)] = (labels, self._same.setdefault(key, key), le)
        return entry

    def key(self, labels: Mapping[str, str]) -> K:
        e = self._memo.get(id(labels))
        if e is None or e[0] is not labels:
            e = self._entry(labels)
        return e[1]

    def key_le(self, labels: Mapping[str, str]) -> tuple[K, float | None]:
        """The key and the `le` bound as a float (None: no `le`, or not a number)."""
        e = self._memo.get(id(labels))
        if e is None or e[0] is not labels:
            e = self._entry(labels)
        return e[1], e[2]


def finite(v: float | None) -> float | None:
    """NaN and ±Inf are not values: treat them as absent."""
    if v is None or math.isnan(v) or math.isinf(v):
        return None
    return v


def as_int(s: str | None) -> int | None:
    """A label value as an int; "None", "", and garbage are unknown."""
    if s is None:
        return None
    try:
        f = float(s)
    except ValueError:
        return None
    if math.isnan(f) or math.isinf(f):
        return None
    return int(f)


def fold(samples: Iterable[tuple[Any, float]], key: Callable[[Any], K], how: str) -> dict[K, float]:
    """Fold samples that map to the same key: `sum` (counters) or `max` (gauges).

    Non-finite values are dropped first, so one NaN never poisons a sum.
    """
    out: dict[K, float] = {}
    for labels, value in samples:
        if not -_INF < value < _INF:  # NaN and ±Inf (`finite`)
            continue
        v = value
        k = key(labels)
        if k in out:
            out[k] = out[k] + v if how == "sum" else max(out[k], v)
        else:
            out[k] = v
    return out


def samples(page: ParsedPage, kind: str, base: str) -> list[Sample]:
    """The samples of one family of an engine, whichever prefix spelling the page used (`vllm:`/`vllm_`)."""
    return page.get(f"{kind}:{base}", [])


def histograms(page: ParsedPage, base: str, keys: SeriesKeys[K],
               layouts: dict[tuple[float, ...], tuple[float, ...]] | None = None) -> dict[K, Histogram]:
    """Assemble `<base>_bucket/_count/_sum` into Histograms per key; bucket bounds read from `le`.

    `layouts` (an adapter keeps one between scrapes) hands out one `les` tuple per bucket layout, so
    every histogram with the same bounds shares it (see `Histogram`)."""
    buckets: dict[K, dict[float, float]] = {}
    memo, entry = keys._memo, keys._entry
    last_k: K | None = None
    b: dict[float, float] = {}
    for labels, value in page.get(base + "_bucket", []):
        if not -_INF < value < _INF:  # NaN fails the comparison too
            continue
        e = memo.get(id(labels))
        if e is None or e[0] is not labels:
            e = entry(labels)
        _, k, le = e
        if le is None:
            continue
        if k is not last_k:  # a stream's buckets come one after the other (one key object per stream)
            got = buckets.get(k)
            b = buckets[k] = {} if got is None else got
            last_k = k
        b[le] = b.get(le, 0.0) + value
    key = keys.key
    counts = fold(page.get(base + "_count", []), key, "sum")
    sums = fold(page.get(base + "_sum", []), key, "sum")
    out: dict[K, Histogram] = {}
    for k in buckets.keys() | counts.keys():
        pairs = sorted(buckets[k].items()) if k in buckets else []
        les = tuple([le for le, _ in pairs])
        if layouts is not None:
            shared = layouts.get(les)
            if shared is None:
                if len(layouts) >= MAX_LAYOUTS:
                    layouts.clear()
                shared = layouts[les] = les
            les = shared
        out[k] = Histogram(les, tuple([c for _, c in pairs]), counts.get(k), sums.get(k))
    return out

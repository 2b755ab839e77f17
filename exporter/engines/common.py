"""Helpers shared by the engine adapters: folding split labels, histograms, finite values."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from exporter.engines.base import Histogram, ParsedPage, Sample

K = TypeVar("K", bound=Hashable)
_INF = float("inf")
MAX_LAYOUTS = 64  # distinct bucket layouts an adapter remembers (a page that churns its bounds clears them)


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
        v = finite(value)
        if v is None:
            continue
        k = key(labels)
        if k in out:
            out[k] = out[k] + v if how == "sum" else max(out[k], v)
        else:
            out[k] = v
    return out


def samples(page: ParsedPage, kind: str, base: str) -> list[Sample]:
    """The samples of one family of an engine, whichever prefix spelling the page used (`vllm:`/`vllm_`)."""
    return page.get(f"{kind}:{base}", [])


def histograms(page: ParsedPage, base: str, key: Callable[[Mapping[str, str]], K],
               layouts: dict[tuple[float, ...], tuple[float, ...]] | None = None) -> dict[K, Histogram]:
    """Assemble `<base>_bucket/_count/_sum` into Histograms per key; bucket bounds read from `le`.

    `layouts` (an adapter keeps one between scrapes) hands out one `les` tuple per bucket layout, so
    every histogram with the same bounds shares it (see `Histogram`)."""
    buckets: dict[K, dict[float, float]] = {}
    for labels, value in page.get(base + "_bucket", []):
        le_s = labels.get("le")
        if le_s is None or not -_INF < value < _INF:  # NaN fails the comparison too
            continue
        try:
            le = float(le_s)
        except ValueError:
            continue
        k = key(labels)
        b = buckets.get(k)
        if b is None:
            b = buckets[k] = {}
        b[le] = b.get(le, 0.0) + value
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

"""Helpers shared by the engine adapters: folding split labels, histograms, per-position counters, finite values."""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Callable, Hashable, Iterable, Mapping, MutableMapping
from typing import Any, Generic, TypeVar

from exporter.engines.base import MAX_POSITIONS, Histogram, ParsedPage, Sample

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


def per_position(rows: list[Sample], label: str, key: Callable[[Mapping[str, str]], K],
                 into: dict[K, dict[int, float]], repeats: MutableMapping[str, int] | None = None) -> int:
    """Add each finite sample of a per-position family (its draft position in `label`) to its stream's position
    in `into`, positions 0..MAX_POSITIONS − 1; returns how many fell outside (dropped, counted as
    `position_limit`). Series of one stream at the same position are added up, unless `repeats` is given (an
    engine that writes one series per position, whatever its other labels): then the first one wins and each
    other adds 1 to `repeats["duplicate"]`."""
    beyond = 0
    for labels, value in rows:
        pos, v = as_int(labels.get(label)), finite(value)
        if pos is None or v is None:
            continue
        if not 0 <= pos < MAX_POSITIONS:
            beyond += 1
            continue
        at = into.setdefault(key(labels), {})
        if repeats is None:
            at[pos] = at.get(pos, 0.0) + v
        elif pos in at:
            repeats["duplicate"] = repeats.get("duplicate", 0) + 1
        else:
            at[pos] = v
    return beyond


def first_of(rows: list[Sample], repeats: MutableMapping[str, int]) -> float | None:
    """The first finite value of a family an engine writes once per stream (no label splits it): each other
    sample is a repeat, never added (first wins, each adds 1 to `repeats["duplicate"]`)."""
    vals = [v for _, x in rows if (v := finite(x)) is not None]
    if len(vals) > 1:
        repeats["duplicate"] = repeats.get("duplicate", 0) + len(vals) - 1
    return vals[0] if vals else None


def dense(by_position: Mapping[int, float]) -> tuple[float, ...]:
    """Per-position values as a tuple over positions 0..the highest seen (a position the page lacks reads 0)."""
    return tuple(by_position.get(i, 0.0) for i in range(max(by_position) + 1)) if by_position else ()


def samples(page: ParsedPage, kind: str, base: str) -> list[Sample]:
    """The samples of one family of an engine, whichever prefix spelling the page used (`vllm:`/`vllm_`)."""
    return page.get(f"{kind}:{base}", [])


class HistogramMemo(Generic[K]):
    """What an adapter keeps between scrapes for its histograms.

    - `share(les)`: one `les` tuple per bucket layout, so every histogram with the same bounds shares it
      (see `Histogram`); at most `MAX_LAYOUTS` layouts, then it starts over.
    - a plan per family: which stream each bucket series belongs to and where it falls in le order (and,
      in `wholes`, where each stream's count and sum are, when each is one series).
      An engine writes the same series in the same order on every scrape, and the parser hands out
      the same label mapping for each (`PageParser`), so when a page's bucket series are exactly the
      last page's (compared by identity) the counts are picked out by position instead of being sorted
      into streams again. Any other page takes the full path and plans afresh.
    """

    def __init__(self) -> None:
        self._layouts: dict[tuple[float, ...], tuple[float, ...]] = {}
        self.plans: dict[str, tuple[list[Mapping[str, str]], list[tuple[K, tuple[float, ...], Pick]]]] = {}
        self.wholes: dict[str, Whole[K]] = {}  # per family, its whole histograms' plan (`_whole_plan`)

    def share(self, les: tuple[float, ...]) -> tuple[float, ...]:
        shared = self._layouts.get(les)
        if shared is None:
            if len(self._layouts) >= MAX_LAYOUTS:
                self._layouts.clear()
            shared = self._layouts[les] = les
        return shared


# picks a stream's counts out of a family's values by their positions (`_pick`)
Pick = Callable[[list[float]], tuple[float, ...]]
# a family's whole histograms by position (`_whole_plan`): the label mappings of its bucket, count and sum
# series (in that order), how many of each, and per stream its key, bounds, bucket picker and where its count
# and sum are (past the last value: None)
Whole = tuple[list[Mapping[str, str]], int, int, int, list[tuple[K, tuple[float, ...], Pick, int, int]]]
_NO_ROWS: list[Sample] = []


def _no_counts(values: list[float]) -> tuple[float, ...]:
    return ()


_NO_PICK: Pick = _no_counts  # a stream with a count or sum and no buckets


def _pick(idx: tuple[int, ...]) -> Pick:
    """`itemgetter(*idx)`, always a tuple (itemgetter of one position gives the value itself): one C call
    per stream and scrape instead of one Python step per bucket."""
    if len(idx) > 1:
        return operator.itemgetter(*idx)
    return lambda values: tuple([values[i] for i in idx])


def all_finite(values: list[float]) -> bool:
    """No NaN and no ±Inf among `values`, in C: their sum is finite (a sum past the float's range reads as not
    finite too, and such a page is then read in full)."""
    total = sum(values)
    return total - total == 0.0


def planned_values(labels: list[Mapping[str, str]], rows: list[Sample]) -> list[float] | None:
    """The values of `rows` when they are the planned series — the label mappings in `labels`, by identity
    (the parser hands out one mapping per label text), in order — and all finite; else None. What every
    reading by position (histogram buckets, whole histograms, an adapter's recipe) checks first."""
    if len(labels) != len(rows) or not all(map(operator.is_, labels, map(operator.itemgetter(0), rows))):
        return None
    values = list(map(operator.itemgetter(1), rows))
    return values if all_finite(values) else None


def _buckets_by_plan(rows: list[Sample], plan: tuple[list[Mapping[str, str]], list[tuple[K, tuple[float, ...],
                     Pick]]]) -> dict[K, tuple[tuple[float, ...], array[float]]] | None:
    """The per-stream (les, counts) of `rows` when they are the planned series, all finite; else None."""
    labels, streams = plan
    values = planned_values(labels, rows)
    if values is None:
        return None
    return {k: (les, array("d", pick(values))) for k, les, pick in streams}


def histograms(page: ParsedPage, base: str, keys: SeriesKeys[K], memo: HistogramMemo[K] | None = None) -> dict[K, Histogram]:
    """Assemble `<base>_bucket/_count/_sum` into Histograms per key; bucket bounds read from `le`.

    `memo` (an adapter keeps one between scrapes) shares bucket layouts and remembers how the page's
    bucket series fall into streams (`HistogramMemo`), and, when every count and sum series is its
    stream's only one, where each stream's count and sum are (`_whole_by_plan`)."""
    rows = page.get(base + "_bucket", _NO_ROWS)
    count_rows = page.get(base + "_count", _NO_ROWS)
    sum_rows = page.get(base + "_sum", _NO_ROWS)
    if memo is not None:
        whole = memo.wholes.get(base)
        if whole is not None:
            planned = _whole_by_plan(rows, count_rows, sum_rows, whole)
            if planned is not None:
                return planned
    plan = memo.plans.get(base) if memo is not None else None
    by_stream = _buckets_by_plan(rows, plan) if plan is not None else None
    if by_stream is None:
        by_stream = _buckets_in_full(rows, base, keys, memo)
    key = keys.key
    counts = fold(count_rows, key, "sum")
    sums = fold(sum_rows, key, "sum")
    out: dict[K, Histogram] = {}
    for k in by_stream.keys() | counts.keys():
        got = by_stream.get(k)
        out[k] = Histogram(got[0], got[1], counts.get(k), sums.get(k)) if got is not None else \
            Histogram((), array("d"), counts.get(k), sums.get(k))
    if memo is not None:
        whole = _whole_plan(rows, count_rows, sum_rows, memo.plans.get(base), keys, out)
        if whole is None:
            memo.wholes.pop(base, None)
        else:
            memo.wholes[base] = whole
    return out


def _whole_plan(rows: list[Sample], count_rows: list[Sample], sum_rows: list[Sample],
                plan: tuple[list[Mapping[str, str]], list[tuple[K, tuple[float, ...], Pick]]] | None,
                keys: SeriesKeys[K], out: dict[K, Histogram]) -> Whole[K] | None:
    """The plan of a family's whole histograms, just assembled as `out` from these rows: its buckets are
    planned (`plan`, made from or checked against `rows`), and each count and sum series is finite and the
    only one of its stream (so `fold` added nothing up). None otherwise."""
    if plan is None or len(plan[0]) != len(rows):
        return None
    tail = count_rows + sum_rows
    if not all_finite([v for _, v in tail]):
        return None
    n = len(rows)
    count_at = {keys.key(labels): n + i for i, (labels, _) in enumerate(count_rows)}
    sum_at = {keys.key(labels): n + len(count_rows) + i for i, (labels, _) in enumerate(sum_rows)}
    if len(count_at) != len(count_rows) or len(sum_at) != len(sum_rows):  # a stream with two: `fold` adds up
        return None
    none = n + len(tail)
    buckets = {k: (les, pick) for k, les, pick in plan[1]}
    streams = [(k, *buckets.get(k, ((), _NO_PICK)), count_at.get(k, none), sum_at.get(k, none)) for k in out]
    return plan[0] + [labels for labels, _ in tail], len(rows), len(count_rows), len(sum_rows), streams


def _whole_by_plan(rows: list[Sample], count_rows: list[Sample], sum_rows: list[Sample],
                   whole: Whole[K]) -> dict[K, Histogram] | None:
    """What `histograms` assembles from these rows, when they are the planned series (by identity, in
    order) and all finite; else None."""
    labels, n_buckets, n_counts, n_sums, streams = whole
    if len(rows) != n_buckets or len(count_rows) != n_counts or len(sum_rows) != n_sums:
        return None
    got = planned_values(labels, rows + count_rows + sum_rows)
    if got is None:
        return None
    values: list[float | None] = got  # type: ignore[assignment]  # and past the last value: None
    values.append(None)
    return {k: Histogram(les, array("d", pick(values)), values[c], values[s])  # type: ignore[arg-type]
            for k, les, pick, c, s in streams}


def _buckets_in_full(rows: list[Sample], base: str, keys: SeriesKeys[K],
                     memo: HistogramMemo[K] | None) -> dict[K, tuple[tuple[float, ...], array[float]]]:
    """Bucket series sorted into streams by their key and `le` (series of one stream with the same `le`
    are added up; NaN, ±Inf and series without a numeric `le` are left out); plans the family in `memo`
    when every series found its own place."""
    buckets: dict[K, dict[float, tuple[float, int]]] = {}
    memo_keys, entry = keys._memo, keys._entry
    last_k: K | None = None
    b: dict[float, tuple[float, int]] = {}
    clean = True
    for i, (labels, value) in enumerate(rows):
        if not -_INF < value < _INF:  # NaN fails the comparison too
            clean = False
            continue
        e = memo_keys.get(id(labels))
        if e is None or e[0] is not labels:
            e = entry(labels)
        _, k, le = e
        if le is None:
            clean = False
            continue
        if k is not last_k:  # a stream's buckets come one after the other (one key object per stream)
            got = buckets.get(k)
            b = buckets[k] = {} if got is None else got
            last_k = k
        had = b.get(le)
        if had is None:
            b[le] = (value, i)
        else:
            b[le] = (had[0] + value, -1)
            clean = False
    out: dict[K, tuple[tuple[float, ...], array[float]]] = {}
    streams: list[tuple[K, tuple[float, ...], Pick]] = []
    for k, by_le in buckets.items():
        pairs = sorted(by_le.items())
        les = tuple([le for le, _ in pairs])
        if memo is not None:
            les = memo.share(les)
        out[k] = (les, array("d", [c for _, (c, _) in pairs]))
        streams.append((k, les, _pick(tuple([i for _, (_, i) in pairs]))))
    if memo is not None:
        if clean:
            memo.plans[base] = ([labels for labels, _ in rows], streams)
        else:
            memo.plans.pop(base, None)
    return out

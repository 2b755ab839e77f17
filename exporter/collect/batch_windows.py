"""Batch windows: the per-batch acceptance SLO (one observation per completed, non-reset window).

Example exposition (tests/golden/vllm-ngram.prom, SLO target 2.0, buckets shortened)::

    # HELP specgate_spec_window_acceptance_length Accepted tokens per verify, one observation per completed batch window
    # TYPE specgate_spec_window_acceptance_length histogram
    specgate_spec_window_acceptance_length_bucket{engine="vllm",le="2.5",model="tiny",rank="0"} 1.0
    specgate_spec_window_acceptance_length_bucket{engine="vllm",le="+Inf",model="tiny",rank="0"} 2.0
    specgate_spec_window_acceptance_length_count{engine="vllm",model="tiny",rank="0"} 2.0
    specgate_spec_window_acceptance_length_sum{engine="vllm",model="tiny",rank="0"} 5.971861471861471
    # HELP specgate_spec_windows_total Completed batch windows with enough drafts (non-reset)
    # TYPE specgate_spec_windows_total counter
    specgate_spec_windows_total{engine="vllm",model="tiny",rank="0"} 2.0
    # HELP specgate_spec_windows_below_slo_total Completed batch windows below the SLO target
    # TYPE specgate_spec_windows_below_slo_total counter
    specgate_spec_windows_below_slo_total{engine="vllm",model="tiny",rank="0"} 0.0

Buckets are `exporter.windows.WINDOW_L_BUCKETS` plus the SLO target, so the target is always a
bucket bound. Beside it, the share of its ceiling each window accepted,
`specgate_spec_window_acceptance_fraction` (`exporter.windows.WINDOW_FRACTION_BUCKETS`, 0.05 ... 1.0): the
quality alerts count its windows near 0 and near 1 whatever the depth. `windows_below_slo_total` exists only when a target is configured; the burn-rate
rules over it are quoted in `exporter.names`.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from exporter import names
from exporter.collect.families import Rows, bound, counter, histogram, non_empty, stream_labels
from exporter.state import ExporterView
from exporter.windows import WINDOW_FRACTION_BUCKETS


@lru_cache(maxsize=8)
def _bounds(window_buckets: tuple[float, ...]) -> tuple[tuple[float, str], ...]:
    """Each bucket bound and its text, +Inf last: one tracker's buckets are fixed (`WindowTracker.buckets`),
    so the texts are made once, not at every render (a zero SLO target is never a bound: no -0.0 for the
    tuple's `==` to take for 0.0)."""
    return tuple((b, bound(b)) for b in (*window_buckets, float("inf")))


def _cumulative(bounds: tuple[tuple[float, str], ...], counts: tuple[tuple[float, int], ...]) -> list[tuple[str, int]]:
    """Cumulative bucket rows from non-cumulative counts per upper bound."""
    hist = dict(counts)
    cum, buckets = 0, []
    for b, text in bounds:
        cum += hist.get(b, 0)
        buckets.append((text, cum))
    return buckets


def families(v: ExporterView) -> Iterator[Rows]:
    if v.latest is None:
        return
    wl, wf, wt, wb = histogram(names.WINDOW_ACCEPTANCE_LENGTH), histogram(names.WINDOW_ACCEPTANCE_FRACTION), \
        counter(names.SPEC_WINDOWS), counter(names.SPEC_WINDOWS_BELOW_SLO)
    bounds = _bounds(v.window_buckets)  # the same for every stream
    fraction_bounds = _bounds(WINDOW_FRACTION_BUCKETS)
    for sv in v.streams:
        t = sv.totals
        if t is None or sv.stream.spec is None:
            continue
        lv = stream_labels(sv.stream.model, v.latest.engine, sv.stream.rank)
        wl.add_metric(lv, _cumulative(bounds, t.window_hist), t.window_sum)
        wf.add_metric(lv, _cumulative(fraction_bounds, t.fraction_hist), t.fraction_sum)
        wt.add_metric(lv, t.windows_total)
        if v.acceptance_slo_target is not None:
            wb.add_metric(lv, t.windows_below_slo)
    yield from non_empty(wl, wf, wt, wb)

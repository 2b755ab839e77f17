"""Sliding windows: gauges over the last `window` (e.g. `1m`, `5m`) for people and simple consumers.

Example exposition (tests/golden/vllm-ngram.prom, windows 30s and 1m)::

    # HELP specgate_spec_acceptance_length Accepted tokens per verify incl. bonus (L) over the window
    # TYPE specgate_spec_acceptance_length gauge
    specgate_spec_acceptance_length{engine="vllm",model="tiny",rank="0",window="30s"} 3.4797979797979797
    specgate_spec_acceptance_length{engine="vllm",model="tiny",rank="0",window="1m"} 3.2413793103448274
    # HELP specgate_ttft_seconds Time to first token quantile over the window
    # TYPE specgate_ttft_seconds gauge
    specgate_ttft_seconds{engine="vllm",model="tiny",quantile="0.5",rank="0",window="1m"} 0.017
    # HELP specgate_decode_tokens_per_second Generated tokens per second over the window
    # TYPE specgate_decode_tokens_per_second gauge
    specgate_decode_tokens_per_second{engine="vllm",model="tiny",rank="0",window="30s"} 47.4
    # HELP specgate_verify_cycle_seconds Verify-cycle time per running sequence over the window (seed 004 cycleMs)
    # TYPE specgate_verify_cycle_seconds gauge
    specgate_verify_cycle_seconds{engine="vllm",model="tiny",rank="0",window="30s"} 0.29365383795763544
    # HELP specgate_spec_depth_mean Mean draft tokens proposed per draft over the window (vLLM)
    # TYPE specgate_spec_depth_mean gauge
    specgate_spec_depth_mean{engine="vllm",model="tiny",rank="0",window="1m"} 2.8219178082191783
    # HELP specgate_spec_depth_varies 1 when the speculation depth varied over the window, else 0
    # TYPE specgate_spec_depth_varies gauge
    specgate_spec_depth_varies{engine="vllm",model="tiny",rank="0",window="1m"} 1.0

Per-position rates carry `basis`: `exact` when the window's depth did not vary, else `lower_bound` (vLLM
divides accepted_i by every draft, including drafts shorter than i + 1: `exporter.names`)::

    specgate_spec_position_acceptance_rate{basis="lower_bound",engine="vllm",model="tiny",position="0",rank="0",window="1m"} 0.6

Values come from `exporter.derive.window_stats` over the ring (`ExporterState.view` computes them).
`--position-gauges false` (settings.position_gauges) leaves out `specgate_spec_position_acceptance_rate`
(k x windows series per stream) at fleet scale; `specgate_spec_accepted_tokens_per_position_total`
stays, so p_i is still `rate(per_position) / rate(drafts)` (docs/scale.md).
A window with too few drafts has no acceptance series (no traffic is not L = 0); while the engine
is down there are no windowed series at all: the windows would end at the last good scrape.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter import names
from exporter.collect.families import Rows, gauge, non_empty, stream_labels
from exporter.derive import QUANTILES
from exporter.state import ExporterView

_QUANTILE_LABELS = tuple((name, str(q)) for name, q in QUANTILES)  # ("p50", "0.5"), ...


def families(v: ExporterView) -> Iterator[Rows]:
    length, rate = gauge(names.ACCEPTANCE_LENGTH), gauge(names.ACCEPTANCE_RATE)
    prate, ttft = gauge(names.POSITION_ACCEPTANCE_RATE), gauge(names.TTFT)
    tpot, itl = gauge(names.TPOT), gauge(names.ITL)
    decode, cycle = gauge(names.DECODE_RATE), gauge(names.VERIFY_CYCLE)
    mean, varies = gauge(names.SPEC_DEPTH_MEAN), gauge(names.SPEC_DEPTH_VARIES)
    for window in v.sliding:
        for w in window.stats:
            lv = (*stream_labels(w.model, w.engine, w.rank), window.label)
            if w.acceptance_length is not None:
                length.add_metric(lv, w.acceptance_length)
            if w.acceptance_rate is not None:
                rate.add_metric(lv, w.acceptance_rate)
            if v.position_gauges:  # off at fleet scale (--position-gauges false); the counters stay
                basis = w.position_basis or "lower_bound"
                for i, p in enumerate(w.position_acceptance_rate):
                    prate.add_metric((*lv, str(i), basis), p)
            for family, values in ((ttft, w.ttft_seconds), (tpot, w.tpot_seconds), (itl, w.itl_seconds)):
                if values:
                    for name, q in _QUANTILE_LABELS:
                        value = values.get(name)
                        if value is not None:
                            family.add_metric((*lv, q), value)
            if w.decode_tokens_per_second is not None:
                decode.add_metric(lv, w.decode_tokens_per_second)
            if w.verify_cycle_seconds is not None:
                cycle.add_metric(lv, w.verify_cycle_seconds)
            if w.depth_mean is not None:
                mean.add_metric(lv, w.depth_mean)
            if w.depth_varies is not None:
                varies.add_metric(lv, 1.0 if w.depth_varies else 0.0)
    yield from non_empty(length, rate, prate, ttft, tpot, itl, decode, cycle, mean, varies)

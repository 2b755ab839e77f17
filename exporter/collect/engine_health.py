"""Engine health: exporter-level series (label `engine` only) and the per-stream restart/preemption counters.

Example exposition (tests/golden/vllm-ngram.prom)::

    # HELP specgate_engine_up 1 if the last scrape of the engine succeeded
    # TYPE specgate_engine_up gauge
    specgate_engine_up{engine="vllm"} 1.0
    # HELP specgate_engine_scrape_errors_total Failed engine scrapes by reason
    # TYPE specgate_engine_scrape_errors_total counter
    specgate_engine_scrape_errors_total{engine="vllm",reason="connect"} 0.0
    # HELP specgate_engine_anomalies_total Engine values left out or not trusted, by reason
    # TYPE specgate_engine_anomalies_total counter
    specgate_engine_anomalies_total{engine="vllm",reason="duplicate"} 0.0
    # HELP specgate_engine_info Detected engine and version
    # TYPE specgate_engine_info gauge
    specgate_engine_info{engine="vllm",version="unknown",version_tested="unknown"} 1.0
    # HELP specgate_engine_ready_seconds Cold start to first successful scrape of a ready engine (startup staging)
    # TYPE specgate_engine_ready_seconds gauge
    specgate_engine_ready_seconds{engine="vllm"} 40.0
    # HELP specgate_acceptance_slo_target Configured target accepted tokens per verify
    # TYPE specgate_acceptance_slo_target gauge
    specgate_acceptance_slo_target{engine="vllm"} 2.0
    ...
    # HELP specgate_engine_restarts_total Engine restarts detected (counters went down or process start time changed)
    # TYPE specgate_engine_restarts_total counter
    specgate_engine_restarts_total{engine="vllm",model="tiny",rank="0"} 0.0
    # HELP specgate_preemptions_total Engine preemptions (vLLM)
    # TYPE specgate_preemptions_total counter
    specgate_preemptions_total{engine="vllm",model="tiny",rank="0"} 0.0

The two configured gauges (SLO target, workload demand) are exporter-level too and come here, so
alerts can compare against them per exporter. Counters stay while the engine is down.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter import names
from exporter.collect.families import Rows, counter, gauge, non_empty, stream_labels
from exporter.engines import ADAPTERS
from exporter.engines.versions import tested, tested_range
from exporter.state import ExporterView


def _exporter_gauge(fam: names.Family, engine: str, value: float | None) -> Iterator[Rows]:
    """An exporter-level gauge, absent when its value is unknown."""
    if value is not None:
        g = gauge(fam)
        g.add_metric([engine], value)
        yield g


def exporter_level(v: ExporterView) -> Iterator[Rows]:
    eng = v.engine
    yield from _exporter_gauge(names.ENGINE_UP, eng, 1.0 if v.up else 0.0)
    yield from _exporter_gauge(names.ENGINE_SCRAPE_DURATION, eng, v.scrape_duration)
    errs = counter(names.ENGINE_SCRAPE_ERRORS)
    for reason, n in v.errors:
        errs.add_metric([eng, reason], n)
    yield errs
    anomalies = counter(names.ENGINE_ANOMALIES)
    for reason, n in v.anomalies:
        anomalies.add_metric([eng, reason], n)
    yield anomalies
    if v.latest is not None:
        info = gauge(names.ENGINE_INFO)
        cls = ADAPTERS.get(eng)
        info.add_metric([eng, v.version or "unknown", tested(tested_range(cls) if cls else None, v.version)], 1.0)
        yield info
        sp = v.latest.speculative
        if sp is not None and sp.algorithm:
            settings = gauge(names.ENGINE_SPECULATIVE)
            settings.add_metric([eng, sp.algorithm, "" if sp.num_draft_tokens is None else str(sp.num_draft_tokens),
                                 "" if sp.num_steps is None else str(sp.num_steps)], 1.0)
            yield settings
    yield from _exporter_gauge(names.ENGINE_READY, eng, v.ready_seconds)
    yield from _exporter_gauge(names.ACCEPTANCE_SLO_TARGET, eng, v.acceptance_slo_target)
    yield from _exporter_gauge(names.WORKLOAD_DEMAND, eng, v.workload_demand_tokens)


def per_stream(v: ExporterView) -> Iterator[Rows]:
    """Restarts and preemptions per stream, from the exporter's monotonic totals."""
    if v.latest is None:
        return
    restarts, pre = counter(names.ENGINE_RESTARTS), counter(names.PREEMPTIONS)
    for sv in v.streams:
        t = sv.totals
        if t is None:
            continue
        lv = stream_labels(sv.stream.model, v.latest.engine, sv.stream.rank)
        restarts.add_metric(lv, t.restarts)
        if t.preemptions is not None:
            pre.add_metric(lv, t.preemptions)
    yield from non_empty(restarts, pre)

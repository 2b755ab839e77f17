"""The specgate_* exposition: a prometheus_client custom Collector (`collect()` yields fresh families).

`ExporterState` is the plain data the sidecar accumulates (scrape outcome + `WindowTracker`);
`SpecgateCollector` turns a consistent view of it into metric families on every scrape of our
own `/metrics`. Names, types and labels are DESIGN.md's "Exporter output" table. Series whose
source is missing are absent, never 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from exporter import names
from exporter.derive import QUANTILES
from exporter.engines.base import EngineSnapshot
from exporter.scrape import REASONS
from exporter.settings import ExporterSettings, duration_label
from exporter.windows import WindowTracker

STREAM_LABELS = list(names.STREAM_LABELS)


@dataclass
class ExporterState:
    """Everything the collector exposes; mutated only under `lock` by the scrape loop."""

    settings: ExporterSettings
    tracker: WindowTracker
    engine: str = "unknown"
    version: str | None = None
    up: bool = False
    scrape_duration: float | None = None
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    last_error: str | None = None
    started_at: float = field(default_factory=time.time)
    ready_seconds: float | None = None
    _saw_failure_before_ready: bool = False
    _last_start: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: ExporterSettings, started_at: float | None = None) -> ExporterState:
        tracker = WindowTracker(settings.windows, settings.batch_window, settings.min_drafts,
                                settings.acceptance_slo_target, settings.history)
        st = cls(settings=settings, tracker=tracker)
        if settings.engine != "auto":
            st.engine = settings.engine
        if started_at is not None:
            st.started_at = started_at
        return st

    def record_success(self, snap: EngineSnapshot, duration: float) -> None:
        with self.lock:
            self._ready(snap)
            self.tracker.add(snap)
            self.engine = snap.engine
            self.version = snap.version or self.version
            self.up = True
            self.scrape_duration = duration
            self.last_error = None

    def record_failure(self, reason: str, message: str, duration: float) -> None:
        with self.lock:
            self.errors[reason] = self.errors.get(reason, 0) + 1
            self.up = False
            self.scrape_duration = duration
            self.last_error = message
            if self.ready_seconds is None:
                self._saw_failure_before_ready = True

    def _ready(self, snap: EngineSnapshot) -> None:
        """Startup staging: cold start to first successful scrape, only when this sidecar saw the start."""
        start = snap.process_start_time
        if self.ready_seconds is None and self._last_start is None:
            if start is not None and start >= self.started_at - 1.0:
                self.ready_seconds = max(snap.timestamp - start, 0.0)
            elif self._saw_failure_before_ready:
                self.ready_seconds = max(snap.timestamp - (start if start and start > self.started_at
                                                           else self.started_at), 0.0)
        elif start is not None and self._last_start is not None and start != self._last_start:
            self.ready_seconds = max(snap.timestamp - start, 0.0)  # a restart we watched
        if start is not None:
            self._last_start = start


def _lv(v: str | None) -> str:
    return "" if v is None else v


def _fmt_bound(b: float) -> str:
    return "+Inf" if b == float("inf") else repr(float(b))


def _engine_gauge(fam: names.Family, engine: str, value: float | None) -> Iterator[Metric]:
    """An exporter-level gauge (label `engine` only), absent when its value is unknown."""
    if value is not None:
        g = GaugeMetricFamily(fam.name, fam.help, labels=list(fam.labels))
        g.add_metric([engine], value)
        yield g


class SpecgateCollector:
    """prometheus_client custom collector over an `ExporterState`."""

    def __init__(self, state: ExporterState) -> None:
        self.state = state

    def describe(self) -> list:
        return []  # unchecked collector: families vary with what the engine reports

    def collect(self) -> Iterator[Metric]:
        st = self.state
        with st.lock:
            yield from self._collect(st)

    def _collect(self, st: ExporterState) -> Iterator[Metric]:
        eng = st.engine
        tr = st.tracker
        snap = tr.latest
        yield from _engine_gauge(names.ENGINE_UP, eng, 1.0 if st.up else 0.0)
        yield from _engine_gauge(names.ENGINE_SCRAPE_DURATION, eng, st.scrape_duration)
        errs = CounterMetricFamily(names.ENGINE_SCRAPE_ERRORS.name, names.ENGINE_SCRAPE_ERRORS.help,
                                   labels=list(names.ENGINE_SCRAPE_ERRORS.labels))
        for reason in sorted(st.errors):
            errs.add_metric([eng, reason], st.errors[reason])
        yield errs
        if snap is not None:
            info = GaugeMetricFamily(names.ENGINE_INFO.name, names.ENGINE_INFO.help, labels=list(names.ENGINE_INFO.labels))
            info.add_metric([eng, st.version or "unknown"], 1.0)
            yield info
        yield from _engine_gauge(names.ENGINE_READY, eng, st.ready_seconds)
        s = st.settings
        yield from _engine_gauge(names.ACCEPTANCE_SLO_TARGET, eng, s.acceptance_slo_target)
        yield from _engine_gauge(names.WORKLOAD_DEMAND, eng, s.workload_demand_tokens)
        if snap is None:
            return
        yield from self._stream_families(st, snap)
        if st.up:  # windows end at the last good scrape: while the engine is down they are not "the last 1m"
            yield from self._window_families(st, snap)

    def _stream_families(self, st: ExporterState, snap: EngineSnapshot) -> Iterator[Metric]:
        eng = snap.engine
        streams = sorted(snap.streams, key=lambda x: (_lv(x.model), _lv(x.rank)))
        totals = st.tracker.totals
        pool = GaugeMetricFamily(names.KV_POOL.name, names.KV_POOL.help, labels=list(names.KV_POOL.labels))
        conf = GaugeMetricFamily(names.KV_POOL_CONFIGURED.name, names.KV_POOL_CONFIGURED.help, labels=list(names.KV_POOL_CONFIGURED.labels))
        ctx = GaugeMetricFamily(names.CONTEXT_CAP.name, names.CONTEXT_CAP.help, labels=list(names.CONTEXT_CAP.labels))
        usage = GaugeMetricFamily(names.KV_USAGE.name, names.KV_USAGE.help, labels=list(names.KV_USAGE.labels))
        running = GaugeMetricFamily(names.REQUESTS_RUNNING.name, names.REQUESTS_RUNNING.help, labels=list(names.REQUESTS_RUNNING.labels))
        waiting = GaugeMetricFamily(names.REQUESTS_WAITING.name, names.REQUESTS_WAITING.help, labels=list(names.REQUESTS_WAITING.labels))
        drafts = CounterMetricFamily(names.SPEC_DRAFTS.name, names.SPEC_DRAFTS.help, labels=list(names.SPEC_DRAFTS.labels))
        dtok = CounterMetricFamily(names.SPEC_DRAFT_TOKENS.name, names.SPEC_DRAFT_TOKENS.help, labels=list(names.SPEC_DRAFT_TOKENS.labels))
        acc = CounterMetricFamily(names.SPEC_ACCEPTED.name, names.SPEC_ACCEPTED.help, labels=list(names.SPEC_ACCEPTED.labels))
        pos = CounterMetricFamily(names.SPEC_ACCEPTED_PER_POSITION.name, names.SPEC_ACCEPTED_PER_POSITION.help, labels=list(names.SPEC_ACCEPTED_PER_POSITION.labels))
        restarts = CounterMetricFamily(names.ENGINE_RESTARTS.name, names.ENGINE_RESTARTS.help, labels=list(names.ENGINE_RESTARTS.labels))
        pre = CounterMetricFamily(names.PREEMPTIONS.name, names.PREEMPTIONS.help, labels=list(names.PREEMPTIONS.labels))
        wl = HistogramMetricFamily(names.WINDOW_ACCEPTANCE_LENGTH.name, names.WINDOW_ACCEPTANCE_LENGTH.help, labels=list(names.WINDOW_ACCEPTANCE_LENGTH.labels))
        wt = CounterMetricFamily(names.SPEC_WINDOWS.name, names.SPEC_WINDOWS.help, labels=list(names.SPEC_WINDOWS.labels))
        wb = CounterMetricFamily(names.SPEC_WINDOWS_BELOW_SLO.name, names.SPEC_WINDOWS_BELOW_SLO.help, labels=list(names.SPEC_WINDOWS_BELOW_SLO.labels))
        for x in streams:
            lv = [_lv(x.model), eng, _lv(x.rank)]
            t = totals.get(x.key)
            if st.up:  # engine state from a page that is no longer current is absent, not stale
                if x.kv_pool_tokens is not None:
                    pool.add_metric([*lv, "target"], x.kv_pool_tokens)
                configured = x.kv_pool_configured_tokens if x.kv_pool_configured_tokens is not None \
                    else st.settings.kv_pool_configured_tokens
                if configured is not None:
                    conf.add_metric(lv, configured)
                if x.context_cap_tokens is not None:
                    ctx.add_metric(lv, x.context_cap_tokens)
                if x.kv_usage_ratio is not None:
                    usage.add_metric(lv, x.kv_usage_ratio)
                if x.requests_running is not None:
                    running.add_metric(lv, x.requests_running)
                if x.requests_waiting is not None:
                    waiting.add_metric(lv, x.requests_waiting)
            if t is None:
                continue
            restarts.add_metric(lv, t.restarts)
            if t.preemptions is not None:
                pre.add_metric(lv, t.preemptions)
            if x.spec is None:
                continue
            if t.drafts is not None:
                drafts.add_metric(lv, t.drafts)
            if t.draft_tokens is not None:
                dtok.add_metric(lv, t.draft_tokens)
            if t.accepted_tokens is not None:
                acc.add_metric(lv, t.accepted_tokens)
            for i, v in enumerate(t.accepted_per_position):
                pos.add_metric([*lv, str(i)], v)
            cum, buckets = 0, []
            for b in [*st.tracker.buckets, float("inf")]:
                cum += t.window_hist.get(b, 0)
                buckets.append((_fmt_bound(b), cum))
            wl.add_metric(lv, buckets, t.window_sum)
            wt.add_metric(lv, t.windows_total)
            if st.settings.acceptance_slo_target is not None:
                wb.add_metric(lv, t.windows_below_slo)
        for fam in (pool, conf, ctx, usage, running, waiting, drafts, dtok, acc, pos, wl, wt, wb, restarts, pre):
            if fam.samples:
                yield fam

    def _window_families(self, st: ExporterState, snap: EngineSnapshot) -> Iterator[Metric]:
        wlab = [*STREAM_LABELS, "window"]
        length = GaugeMetricFamily(names.ACCEPTANCE_LENGTH.name, names.ACCEPTANCE_LENGTH.help, labels=list(names.ACCEPTANCE_LENGTH.labels))
        rate = GaugeMetricFamily(names.ACCEPTANCE_RATE.name, names.ACCEPTANCE_RATE.help, labels=list(names.ACCEPTANCE_RATE.labels))
        prate = GaugeMetricFamily(names.POSITION_ACCEPTANCE_RATE.name, names.POSITION_ACCEPTANCE_RATE.help, labels=list(names.POSITION_ACCEPTANCE_RATE.labels))
        ttft = GaugeMetricFamily(names.TTFT.name, names.TTFT.help, labels=list(names.TTFT.labels))
        decode = GaugeMetricFamily(names.DECODE_RATE.name, names.DECODE_RATE.help, labels=list(names.DECODE_RATE.labels))
        cycle = GaugeMetricFamily(names.VERIFY_CYCLE.name, names.VERIFY_CYCLE.help, labels=list(names.VERIFY_CYCLE.labels))
        for seconds in st.tracker.windows:
            wname = duration_label(seconds)
            for w in sorted(st.tracker.sliding(seconds), key=lambda x: (_lv(x.model), _lv(x.rank))):
                lv = [_lv(w.model), w.engine, _lv(w.rank), wname]
                if w.acceptance_length is not None:
                    length.add_metric(lv, w.acceptance_length)
                if w.acceptance_rate is not None:
                    rate.add_metric(lv, w.acceptance_rate)
                for i, p in enumerate(w.position_acceptance_rate):
                    prate.add_metric([*lv, str(i)], p)
                for name, q in QUANTILES:
                    v = w.ttft_seconds.get(name)
                    if v is not None:
                        ttft.add_metric([*lv, str(q)], v)
                if w.decode_tokens_per_second is not None:
                    decode.add_metric(lv, w.decode_tokens_per_second)
                if w.verify_cycle_seconds is not None:
                    cycle.add_metric(lv, w.verify_cycle_seconds)
        for fam in (length, rate, prate, ttft, decode, cycle):
            if fam.samples:
                yield fam


def registry_for(state: ExporterState) -> CollectorRegistry:
    """A private registry holding only our collector (no process/python collectors: output is exact)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SpecgateCollector(state))
    return reg


def exposition(state: ExporterState) -> str:
    return generate_latest(registry_for(state)).decode("utf-8")


def exposition_of_snapshot(snap: EngineSnapshot, settings: ExporterSettings | None = None) -> str:
    """The specgate_* text of a single scrape (`specgate exporter once --format prom`)."""
    st = ExporterState.from_settings(settings or ExporterSettings(), started_at=0.0)
    st.record_success(snap, 0.0)
    with st.lock:
        st.scrape_duration = None
        st.ready_seconds = None
    return exposition(st)

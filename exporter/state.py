"""What the sidecar accumulates between scrapes, and the consistent view the exposition reads.

`ExporterState` is mutated only by the scrape loop (`record_success` / `record_failure`, under its
lock); `view()` copies, under the same lock, everything one exposition needs into a frozen
`ExporterView`, so the collector builds families outside the lock and a slow reader of our
`/metrics` never holds up the scrape loop (prometheus_client's custom-collector pattern: fresh
families per `collect()`, no shared metric objects).

The startup-staging rule (`specgate_engine_ready_seconds`) lives here too, because it is a rule
about what this sidecar itself saw: see `_ready`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from exporter.card import Card
from exporter.derive import WindowStats
from exporter.engines.base import EngineSnapshot, StreamSnapshot
from exporter.sanity import ANOMALY_REASONS
from exporter.schedule import DepthSchedule
from exporter.scrape import REASONS
from exporter.settings import ExporterSettings, duration_label, told_card, told_schedule
from exporter.windows import StreamTotals, WindowTracker


def label_value(v: str | None) -> str:
    """A label value as exposed: an unknown model or rank is the empty string."""
    return "" if v is None else v


@dataclass(frozen=True)
class TotalsView:
    """A copy of one stream's `StreamTotals` at the moment of the view."""

    drafts: float | None
    draft_tokens: float | None
    accepted_tokens: float | None
    accepted_per_position: tuple[float, ...]
    preemptions: float | None
    restarts: int
    windows_total: int
    windows_below_slo: int
    window_hist: tuple[tuple[float, int], ...]  # non-cumulative counts per upper bound
    window_sum: float
    fraction_hist: tuple[tuple[float, int], ...] = ()  # the same, of the share of the ceiling
    fraction_sum: float = 0.0

    @classmethod
    def of(cls, t: StreamTotals) -> TotalsView:
        return cls(t.drafts, t.draft_tokens, t.accepted_tokens, tuple(t.accepted_per_position), t.preemptions,
                   t.restarts, t.windows_total, t.windows_below_slo, tuple(t.window_hist.items()), t.window_sum,
                   tuple(t.fraction_hist.items()), t.fraction_sum)


@dataclass(frozen=True)
class StreamView:
    """One stream of the latest snapshot with its totals (None before the tracker has any)."""

    stream: StreamSnapshot
    totals: TotalsView | None


@dataclass(frozen=True)
class SlidingView:
    """One sliding window (`window` label) and its per-stream stats, sorted by model and rank."""

    label: str
    stats: tuple[WindowStats, ...]


@dataclass(frozen=True)
class ExporterView:
    """Everything one exposition reads, copied under the lock; the collector never touches the state."""

    engine: str
    version: str | None
    up: bool
    scrape_duration: float | None
    errors: tuple[tuple[str, int], ...]  # sorted by reason
    anomalies: tuple[tuple[str, int], ...]  # sorted by reason (exporter.sanity.ANOMALY_REASONS)
    ready_seconds: float | None
    acceptance_slo_target: float | None
    workload_demand_tokens: int | None
    kv_pool_configured_tokens: int | None  # the settings' value, for engines that do not report one
    latest: EngineSnapshot | None
    streams: tuple[StreamView, ...]  # the latest snapshot's streams, sorted by model and rank
    window_buckets: tuple[float, ...]
    sliding: tuple[SlidingView, ...]  # empty while the engine is down: the windows end at the last good scrape
    position_gauges: bool = True  # settings.position_gauges: false drops the per-position windowed gauges
    schedule: DepthSchedule | None = None  # the depth schedule the exporter was told (depth gauges)
    card: Card | None = None  # the drafter's acceptance card the exporter was told (card gauges)


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
    anomalies: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALY_REASONS, 0))
    last_error: str | None = None
    started_at: float = field(default_factory=time.time)
    ready_seconds: float | None = None
    _saw_failure_before_ready: bool = False
    _last_start: float | None = None
    schedule: DepthSchedule | None = None  # the depth schedule the exporter was told (`settings.told_schedule`)
    card: Card | None = None  # the acceptance card the exporter was told (`settings.told_card`)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: ExporterSettings, started_at: float | None = None) -> ExporterState:
        schedule = told_schedule(settings)
        tracker = WindowTracker(settings.windows, settings.batch_window, settings.min_drafts,
                                settings.acceptance_slo_target, settings.history,
                                max_streams=settings.max_streams, stream_ttl=settings.stream_ttl,
                                told_depth=schedule.max_k if schedule is not None else None)
        st = cls(settings=settings, tracker=tracker, schedule=schedule, card=told_card(settings))
        if settings.engine != "auto":
            st.engine = settings.engine
        if started_at is not None:
            st.started_at = started_at
        return st

    def record_success(self, snap: EngineSnapshot, duration: float) -> None:
        with self.lock:
            self._ready(snap)
            for reason, n in snap.anomalies.items():
                self.anomalies[reason] = self.anomalies.get(reason, 0) + n
            for reason, n in self.tracker.add(snap).items():
                self.anomalies[reason] = self.anomalies.get(reason, 0) + n
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
        """Startup staging: cold start to first successful scrape, only when this sidecar saw the start.

        The engine's start counts when it is no older than the sidecar (we were there), or when the
        sidecar saw the engine fail before its first good scrape (it was starting); a later change of
        the start time is a restart we watched. An engine that was already up when we came is unknown.
        """
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

    def view(self) -> ExporterView:
        """A frozen copy for one exposition (sliding windows are computed here, from the ring)."""
        with self.lock:
            tr = self.tracker
            snap = tr.latest
            streams: tuple[StreamView, ...] = ()
            sliding: tuple[SlidingView, ...] = ()
            if snap is not None:
                ordered = sorted(snap.streams, key=lambda x: (label_value(x.model), label_value(x.rank)))
                streams = tuple(StreamView(s, TotalsView.of(t) if (t := tr.totals.get(s.key)) is not None else None)
                                for s in ordered)
                if self.up:
                    sliding = tuple(
                        SlidingView(duration_label(seconds), tuple(sorted(
                            tr.sliding(seconds), key=lambda x: (label_value(x.model), label_value(x.rank)))))
                        for seconds in tr.windows)
            s = self.settings
            return ExporterView(
                engine=self.engine, version=self.version, up=self.up, scrape_duration=self.scrape_duration,
                errors=tuple(sorted(self.errors.items())), anomalies=tuple(sorted(self.anomalies.items())),
                ready_seconds=self.ready_seconds,
                acceptance_slo_target=s.acceptance_slo_target, workload_demand_tokens=s.workload_demand_tokens,
                kv_pool_configured_tokens=s.kv_pool_configured_tokens, latest=snap, streams=streams,
                window_buckets=tr.buckets, sliding=sliding, position_gauges=s.position_gauges,
                schedule=self.schedule, card=self.card,
            )

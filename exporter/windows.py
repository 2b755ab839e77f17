"""The exporter's memory: a ring of scrapes, per-batch SLO windows, monotonic totals.

`WindowTracker.add(snapshot)` is called once per successful scrape. For each stream it asks the one
restart rule (`exporter.derive.restarted`) against the stream's last sight, takes a `StreamDelta`
and with it
- keeps normalised counters monotonic across engine restarts (each step adds its delta; a
  restarted step adds the later snapshot's values alone, as `increase()` does),
- counts restarts per stream,
- remembers in the ring which streams that scrape found restarted (`Scrape.restarted`), so a
  window between two ring entries is reset when the rule fired at any scrape in between — even
  when the counters grew back past their old values by the window's end,
- closes a batch window every `batch_window` seconds: a non-reset window with at least
  `min_drafts` drafts is one observation of the per-window acceptance length (histogram,
  `windows_total`, `windows_below_slo_total`) and, where its mean proposed depth is measured, of the
  share of its ceiling it accepted (`ceiling_fraction`); reset windows are kept in the history marked
  `reset` and never counted,
- answers sliding windows (`1m`, `5m`) from the ring.
Not thread-safe by itself: `exporter.state.ExporterState` guards it with its lock.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from exporter import formulas
from exporter.depth import WindowDepth, depth_moved, gauged
from exporter.derive import StreamDelta, WindowStats, last_known, restarted, stream_delta, window_stats
from exporter.engines import ADAPTERS
from exporter.engines.base import EngineSnapshot, StreamKey, StreamSnapshot

# Per-window acceptance-length histogram bounds (L >= 1); the SLO target is added when set.
MAX_PROCESSES = 8  # engine processes behind one URL whose counters are kept apart
WINDOW_L_BUCKETS: tuple[float, ...] = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)
# Per-window share-of-ceiling bounds (0 <= f <= 1): ε = 0.05 at both ends, so the quality alerts read
# f <= 0.05 and f > 0.95 straight from the buckets (deploy/mixin/config.libsonnet names both bounds).
WINDOW_FRACTION_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)
_FRACTION_SLACK = 1e-9  # float rounding of accepted / proposed at exactly every token accepted


def ceiling_fraction(w: WindowStats) -> float | None:
    """The share of its ceiling one window accepted, f = (L − 1) / k̄ (`exporter.names.WINDOW_ACCEPTANCE_FRACTION`).

    k̄ is the window's own mean proposed depth: vLLM's (`WindowStats.depth_mean`, from its proposed-token
    counter), or Δdraft_tokens / Δdrafts on an engine without one only while its depth held still over the window
    (`depth_varies` False: SGLang's draft tokens are verify calls × the current depth, not the window's when it
    moved or under NGRAM). None without L, without a measured k̄, at k̄ = 0 (no draft token proposed), or when
    f falls outside [0, 1] (impossible: more accepted than proposed), so nothing false is observed."""
    if w.acceptance_length is None:
        return None
    k = w.depth_mean
    if k is None and w.depth_varies is False and w.draft_tokens is not None and w.drafts is not None:
        k = formulas.mean_depth(w.draft_tokens, w.drafts)
    if k is None or not k > 0 or not math.isfinite(k):
        return None
    f = (w.acceptance_length - 1.0) / k
    if not math.isfinite(f) or f < 0.0 or f > 1.0 + _FRACTION_SLACK:
        return None
    return min(f, 1.0)


def _add(total: float | None, delta: float | None) -> float | None:
    if delta is None:
        return total
    return (total or 0.0) + delta


@dataclass
class StreamTotals:
    """Monotonic normalised counters of one stream, kept by the exporter across engine restarts."""

    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_position: list[float] = field(default_factory=list)
    preemptions: float | None = None
    restarts: int = 0
    windows_total: int = 0
    windows_below_slo: int = 0
    window_hist: dict[float, int] = field(default_factory=dict)  # non-cumulative counts per upper bound
    window_sum: float = 0.0
    fraction_hist: dict[float, int] = field(default_factory=dict)  # the same, of `ceiling_fraction`
    fraction_sum: float = 0.0

    def add(self, d: StreamDelta) -> None:
        """Add one step's delta (a first sight adds the engine's cumulative values: our starting totals)."""
        self.drafts = _add(self.drafts, d.drafts)
        self.draft_tokens = _add(self.draft_tokens, d.draft_tokens)
        self.accepted_tokens = _add(self.accepted_tokens, d.accepted_tokens)
        for i, v in enumerate(d.accepted_per_position):
            if i >= len(self.accepted_per_position):
                self.accepted_per_position.append(0.0)
            self.accepted_per_position[i] += v
        self.preemptions = _add(self.preemptions, d.preemptions)


@dataclass(frozen=True)
class CompletedWindow:
    """One closed batch window of one stream (served on /api/v1/windows)."""

    model: str | None
    rank: str | None
    start: float
    end: float
    reset: bool
    drafts: float | None
    acceptance_length: float | None
    acceptance_rate: float | None

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "rank": self.rank, "start": self.start, "end": self.end, "reset": self.reset,
                "drafts": self.drafts, "acceptance_length": self.acceptance_length,
                "acceptance_rate": self.acceptance_rate}


@dataclass(frozen=True)
class Scrape:
    """One ring entry: a snapshot and the streams the restart rule fired for at this scrape."""

    snapshot: EngineSnapshot
    restarted: frozenset[StreamKey] = frozenset()


class _Sight(NamedTuple):
    """A stream's last sight: a stream missing from one page and back in the next continues from here,
    not from zero (no double counting), and is judged against the engine start time seen then.
    `stream` holds the last known value of each cumulative family (`exporter.derive.last_known`): a
    family missing from a page (a restarted SGLang before its warm-up) is compared, when it is back,
    with the value it had, so coming back lower is a restart.
    `at` is that scrape's timestamp: a stream unseen for `stream_ttl` is forgotten. A named tuple, not a
    frozen dataclass: one is made per stream and scrape, and a tuple costs the least to make (cold, ~10 µs less)."""

    stream: StreamSnapshot
    start: float | None
    at: float = 0.0


class WindowTracker:
    """Ring of scrapes + batch windows + totals for one engine."""

    def __init__(self, windows: list[float], batch_window: float, min_drafts: int,
                 slo_target: float | None = None, history: int = 1000, max_ring: int = 4096,
                 max_streams: int = 256, stream_ttl: float = 600.0, told_depth: int | None = None) -> None:
        self.max_streams = max_streams
        self.stream_ttl = stream_ttl
        self.windows = sorted(windows)
        self.batch_window = batch_window
        self.min_drafts = min_drafts
        self.slo_target = slo_target
        self.told_depth = told_depth  # the largest k of the schedule the exporter was told (`exporter.depth`)
        self.buckets = tuple(sorted(set(WINDOW_L_BUCKETS) | ({slo_target} if slo_target else set())))
        self.ring: deque[Scrape] = deque(maxlen=max_ring)
        self.totals: dict[StreamKey, StreamTotals] = {}
        self.completed: deque[CompletedWindow] = deque(maxlen=history)
        self._batch_start: Scrape | None = None
        self._last_seen: dict[StreamKey, _Sight] = {}
        # each engine process's last sight of its streams, by process start time (newest last, at most
        # MAX_PROCESSES): several processes behind one URL are kept apart
        self._by_start: dict[float, dict[StreamKey, StreamSnapshot]] = {}
        self._prev_start: float | None = None
        self._fired_in_ring = 0  # ring entries whose `restarted` is not empty (none: no window is reset by one)
        # when each stream's SGLang depth gauges last moved (`exporter.depth.depth_moved`): a window moved iff
        # this is after its start (every window ends at the newest scrape)
        self._depth_moved_at: dict[StreamKey, float] = {}

    @property
    def latest(self) -> EngineSnapshot | None:
        return self.ring[-1].snapshot if self.ring else None

    def _admit(self, snap: EngineSnapshot, found: dict[str, int]) -> EngineSnapshot:
        """The snapshot without the streams past `max_streams` that are not tracked yet (counted as
        `stream_limit`): a page with 500 new model names per scrape must not grow memory without bound."""
        if len(snap.streams) + len(self._last_seen) <= self.max_streams:
            return snap
        kept, tracked, dropped = [], len(self._last_seen), 0
        for s in snap.streams:
            if s.key in self._last_seen:
                kept.append(s)
            elif tracked < self.max_streams:
                kept.append(s)
                tracked += 1
            else:
                dropped += 1
        if not dropped:
            return snap
        found["stream_limit"] = found.get("stream_limit", 0) + dropped
        return replace(snap, streams=tuple(kept))

    def _expire(self, now: float) -> None:
        """Forget streams unseen for `stream_ttl` (their totals too: back later, a stream starts over)."""
        old = [k for k, sight in self._last_seen.items() if now - sight.at > self.stream_ttl]
        for k in old:
            del self._last_seen[k]
            self.totals.pop(k, None)
            self._depth_moved_at.pop(k, None)

    def _several_engines(self, start: float | None) -> bool:
        """More than one engine process answers this URL (a load balancer in front of replicas), not a
        restart: the start time moved back (earlier than the last one, or to one seen before). A start time
        moving forward to a new value is a restart (design.md "Restarts"): the first time a second replica
        answers it looks like one, and its cumulative values are taken once, as `increase()` would."""
        prev = self._prev_start
        if start is None or prev is None or start == prev:
            return False
        return start < prev or start in self._by_start

    def add(self, snap: EngineSnapshot) -> dict[str, int]:
        """Take one scrape; returns what it had to leave out or distrust, by reason (`stream_limit`,
        `multiple_engines`)."""
        found: dict[str, int] = {}
        self._expire(snap.timestamp)
        snap = self._admit(snap, found)
        start = snap.process_start_time
        several = self._several_engines(start)
        if several:
            found["multiple_engines"] = 1
        own = self._by_start.get(start, {}) if start is not None else {}
        fired: set[StreamKey] = set()
        mine_now: dict[StreamKey, StreamSnapshot] = {}  # each stream's last sight for this process
        totals, last_seen = self.totals, self._last_seen
        for s in snap.streams:
            key = s.key
            t = totals.get(key)
            if t is None:  # made only for a new stream: a dataclass with three containers is not free
                t = totals[key] = StreamTotals()
            seen = last_seen.get(key)
            if several:
                # Counted against this process's own last sight only: the totals grow by each process's
                # own increases, never by one engine's whole cumulative value. Every window across it is reset.
                fired.add(key)
                mine = own.get(key)
                sight = s
                if mine is not None:
                    reset = restarted(mine, s, start, start)
                    t.restarts += reset
                    t.add(stream_delta(snap.engine, mine, s, reset, latency=False))
                    sight = last_known(mine, s, reset)
                mine_now[key] = sight
                last_seen[key] = _Sight(s, start, snap.timestamp)
                continue
            if seen is None:  # first sight (of the stream, or of the engine): adopt its cumulative values
                t.add(stream_delta(snap.engine, None, s, reset=True, latency=False))
                sight = s
            else:
                # against the last known values (a page without a family keeps the last one it had)
                reset = restarted(seen.stream, s, seen.start, start)
                if reset:
                    t.restarts += 1
                    fired.add(key)
                t.add(stream_delta(snap.engine, seen.stream, s, reset, latency=False))
                sight = last_known(seen.stream, s, reset)
                if not reset and depth_moved(seen.stream, s):
                    self._depth_moved_at[key] = snap.timestamp
            mine_now[key] = sight
            last_seen[key] = _Sight(sight, start, snap.timestamp)
        if start is not None:
            self._by_start.setdefault(start, {}).update(mine_now)
            self._by_start[start] = self._by_start.pop(start)  # the newest process last
            while len(self._by_start) > MAX_PROCESSES:
                self._by_start.pop(next(iter(self._by_start)))
            self._prev_start = start
        if len(self.ring) == self.ring.maxlen and self.ring[0].restarted:
            self._fired_in_ring -= 1  # the append below pushes it out
        self.ring.append(Scrape(snap, frozenset(fired)))
        self._fired_in_ring += bool(fired)
        self._maybe_close_batch(snap)
        self._trim()
        return found

    def _trim(self) -> None:
        """Drop snapshots no window can need: keep the newest one older than the longest window."""
        horizon = max([*self.windows, self.batch_window]) + 1.0
        cutoff = self.ring[-1].snapshot.timestamp - horizon
        while len(self.ring) > 2 and self.ring[1].snapshot.timestamp <= cutoff:
            self._fired_in_ring -= bool(self.ring.popleft().restarted)

    def _fired_after(self, start: Scrape) -> set[StreamKey]:
        """Streams the restart rule fired for at any scrape after `start` (up to the newest)."""
        out: set[StreamKey] = set()
        if not self._fired_in_ring:
            return out
        for entry in reversed(self.ring):
            if entry is start or entry.snapshot.timestamp < start.snapshot.timestamp:
                break
            out |= entry.restarted
        return out

    def _between(self, a: Scrape, b: Scrape, min_drafts: float) -> list[WindowStats]:
        """Window values from ring entry `a` to the newest entry `b`."""
        sa, sb = a.snapshot, b.snapshot
        seconds = max(sb.timestamp - sa.timestamp, 0.0)
        fired = self._fired_after(a)
        rules = ADAPTERS[sb.engine]  # the engine's depth hooks
        variable = rules.variable_by_construction(sb.speculative)  # the engine's, the same for every stream
        moved_at = self._depth_moved_at
        out = []
        for s in sb.streams:
            before = sa.stream(s.model, s.rank)
            reset = (before is None or (bool(fired) and s.key in fired)
                     or restarted(before, s, sa.process_start_time, sb.process_start_time))
            known = rules.configured_depth(sb.speculative, s, self.told_depth)
            depth = WindowDepth(max_k=known[0] if known is not None else None, variable=variable,
                                moved=bool(moved_at) and moved_at.get(s.key, -1.0) > sa.timestamp, gauged=gauged(s))
            out.append(window_stats(sb.engine, before, s, stream_delta(sb.engine, before, s, reset), seconds, min_drafts,
                                    depth))
        return out

    def _maybe_close_batch(self, snap: EngineSnapshot) -> None:
        cur = self.ring[-1]
        if self._batch_start is None:
            self._batch_start = cur
            return
        start = self._batch_start
        if snap.timestamp - start.snapshot.timestamp < self.batch_window:
            return
        for w in self._between(start, cur, self.min_drafts):
            if not w.has_spec:
                continue
            self.completed.append(CompletedWindow(w.model, w.rank, start.snapshot.timestamp, snap.timestamp,
                                                  w.reset, w.drafts, w.acceptance_length, w.acceptance_rate))
            if w.reset or w.acceptance_length is None:
                continue
            t = self.totals[StreamKey(w.model, w.rank)]
            t.windows_total += 1
            if self.slo_target is not None and w.acceptance_length < self.slo_target:
                t.windows_below_slo += 1
            le = next((b for b in self.buckets if w.acceptance_length <= b), float("inf"))
            t.window_hist[le] = t.window_hist.get(le, 0) + 1
            t.window_sum += w.acceptance_length
            f = ceiling_fraction(w)
            if f is not None:
                fle = next(b for b in WINDOW_FRACTION_BUCKETS if f <= b)  # f <= 1.0, the last bound
                t.fraction_hist[fle] = t.fraction_hist.get(fle, 0) + 1
                t.fraction_sum += f
        self._batch_start = cur

    def sliding(self, seconds: float) -> list[WindowStats]:
        """Stats over the last `seconds`, from the newest snapshot at least that old; [] if none yet."""
        if len(self.ring) < 2:
            return []
        end = self.ring[-1]
        cutoff = end.snapshot.timestamp - seconds
        start = None
        for entry in reversed(self.ring):
            if entry.snapshot.timestamp <= cutoff + 1e-9:
                start = entry
                break
        if start is None or start is end:
            return []
        return self._between(start, end, self.min_drafts)

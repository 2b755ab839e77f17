"""The exporter's memory: a ring of snapshots, per-batch SLO windows, monotonic totals.

`WindowTracker.add(snapshot)` is called once per successful scrape. It
- keeps normalised counters monotonic across engine restarts (each step adds its delta; a
  restarted step adds the later snapshot's values alone, as `increase()` does),
- counts restarts per stream,
- closes a batch window every `batch_window` seconds: a non-reset window with at least
  `min_drafts` drafts is one observation of the per-window acceptance length (histogram,
  `windows_total`, `windows_below_slo_total`); reset windows are kept in the history marked
  `reset` and never counted,
- answers sliding windows (`1m`, `5m`) from the ring; a window that spans a restart is reset.
Not thread-safe by itself: the server guards it with a lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from exporter.derive import WindowStats, derive_stream, restarted
from exporter.engines.base import EngineSnapshot, StreamSnapshot

StreamKey = tuple[str | None, str | None]

# Per-window acceptance-length histogram bounds (L >= 1); the SLO target is added when set.
WINDOW_L_BUCKETS: tuple[float, ...] = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)


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

    def to_json(self) -> dict:
        return {"model": self.model, "rank": self.rank, "start": self.start, "end": self.end, "reset": self.reset,
                "drafts": self.drafts, "acceptance_length": self.acceptance_length,
                "acceptance_rate": self.acceptance_rate}


def _add(total: float | None, delta: float | None) -> float | None:
    if delta is None:
        return total
    return (total or 0.0) + delta


class WindowTracker:
    """Ring of snapshots + batch windows + totals for one engine."""

    def __init__(self, windows: list[float], batch_window: float, min_drafts: int,
                 slo_target: float | None = None, history: int = 1000, max_ring: int = 4096) -> None:
        self.windows = sorted(windows)
        self.batch_window = batch_window
        self.min_drafts = min_drafts
        self.slo_target = slo_target
        self.buckets = tuple(sorted(set(WINDOW_L_BUCKETS) | ({slo_target} if slo_target else set())))
        self.ring: deque[tuple[EngineSnapshot, dict[StreamKey, int]]] = deque(maxlen=max_ring)
        self.totals: dict[StreamKey, StreamTotals] = {}
        self.completed: deque[CompletedWindow] = deque(maxlen=history)
        self._batch_start: tuple[EngineSnapshot, dict[StreamKey, int]] | None = None
        # Last sight of each stream (and the engine's start time then): a stream missing from one
        # page and back in the next continues from here, not from zero (no double counting).
        self._last_seen: dict[StreamKey, tuple[StreamSnapshot, float | None]] = {}

    @property
    def latest(self) -> EngineSnapshot | None:
        return self.ring[-1][0] if self.ring else None

    def _epochs(self) -> dict[StreamKey, int]:
        return {k: t.restarts for k, t in self.totals.items()}

    def add(self, snap: EngineSnapshot) -> None:
        prev = self.latest
        for s in snap.streams:
            t = self.totals.setdefault(s.key, StreamTotals())
            b, b_start = self._last_seen.get(s.key, (None, None))
            if prev is None:
                base, reset = None, False
            elif b is None:
                base, reset = StreamSnapshot(*s.key), True
            else:
                start_changed = (b_start is not None and snap.process_start_time is not None
                                 and b_start != snap.process_start_time)
                base, reset = b, start_changed or restarted(b, s)
                if reset:
                    t.restarts += 1
            if prev is None:
                # First sight: adopt the engine's cumulative values as our starting totals.
                self._adopt(t, s)
            else:
                w = derive_stream(snap.engine, base, s, 0.0, 1, reset=reset)
                t.drafts = _add(t.drafts, w.drafts)
                t.draft_tokens = _add(t.draft_tokens, w.draft_tokens)
                t.accepted_tokens = _add(t.accepted_tokens, w.accepted_tokens)
                for i, v in enumerate(w.accepted_per_position):
                    if i >= len(t.accepted_per_position):
                        t.accepted_per_position.append(0.0)
                    t.accepted_per_position[i] += v
                pre = s.preemptions if reset else (
                    max(s.preemptions - b.preemptions, 0.0) if s.preemptions is not None and b is not None
                    and b.preemptions is not None else None)
                t.preemptions = _add(t.preemptions, pre)
            self._last_seen[s.key] = (s, snap.process_start_time)
        self.ring.append((snap, self._epochs()))
        self._maybe_close_batch(snap)
        self._trim()

    def _trim(self) -> None:
        """Drop snapshots no window can need: keep the newest one older than the longest window."""
        horizon = max([*self.windows, self.batch_window]) + 1.0
        cutoff = self.ring[-1][0].timestamp - horizon
        while len(self.ring) > 2 and self.ring[1][0].timestamp <= cutoff:
            self.ring.popleft()

    @staticmethod
    def _adopt(t: StreamTotals, s: StreamSnapshot) -> None:
        w = derive_stream("", StreamSnapshot(*s.key), s, 0.0, 1, reset=True)
        t.drafts, t.draft_tokens, t.accepted_tokens = w.drafts, w.draft_tokens, w.accepted_tokens
        t.accepted_per_position = list(w.accepted_per_position)
        t.preemptions = s.preemptions

    def _between(self, a: tuple[EngineSnapshot, dict], b: tuple[EngineSnapshot, dict],
                 min_drafts: float) -> list[WindowStats]:
        (sa, ea), (sb, eb) = a, b
        seconds = max(sb.timestamp - sa.timestamp, 0.0)
        out = []
        for s in sb.streams:
            before = sa.stream(*s.key)
            reset = before is None or ea.get(s.key, 0) != eb.get(s.key, 0)
            out.append(derive_stream(sb.engine, before or StreamSnapshot(*s.key), s, seconds, min_drafts, reset=reset))
        return out

    def _maybe_close_batch(self, snap: EngineSnapshot) -> None:
        cur = self.ring[-1]
        if self._batch_start is None:
            self._batch_start = cur
            return
        start = self._batch_start
        if snap.timestamp - start[0].timestamp < self.batch_window:
            return
        for w in self._between(start, cur, self.min_drafts):
            if not w.has_spec:
                continue
            self.completed.append(CompletedWindow(w.model, w.rank, start[0].timestamp, snap.timestamp, w.reset,
                                                  w.drafts, w.acceptance_length, w.acceptance_rate))
            if w.reset or w.acceptance_length is None:
                continue
            t = self.totals[(w.model, w.rank)]
            t.windows_total += 1
            if self.slo_target is not None and w.acceptance_length < self.slo_target:
                t.windows_below_slo += 1
            le = next((b for b in self.buckets if w.acceptance_length <= b), float("inf"))
            t.window_hist[le] = t.window_hist.get(le, 0) + 1
            t.window_sum += w.acceptance_length
        self._batch_start = cur

    def sliding(self, seconds: float) -> list[WindowStats]:
        """Stats over the last `seconds`, from the newest snapshot at least that old; [] if none yet."""
        if len(self.ring) < 2:
            return []
        end = self.ring[-1]
        cutoff = end[0].timestamp - seconds
        start = None
        for entry in reversed(self.ring):
            if entry[0].timestamp <= cutoff + 1e-9:
                start = entry
                break
        if start is None or start is end:
            return []
        return self._between(start, end, self.min_drafts)

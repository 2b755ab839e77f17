"""Acceptance evidence from capture files, a live engine, or the exporter sidecar.

Why through `exporter`: the gate never re-derives what the exporter knows. Capture files
and live engine pages become `EngineSnapshot`s via `exporter.scrape`, windows come from
`exporter.derive.derive_window` (restart-aware: a window spanning a restart is `reset`),
and the sidecar's own `/api/v1/windows` answers with its completed batch windows at once.
An errored or empty source is recorded as an error (the line turns inconclusive), never
as a pass.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from exporter.derive import derive_window
from exporter.engines.base import EngineSnapshot
from exporter.scrape import ScrapeError, Scraper, read_file_snapshot, split_url
from gate.plan import PlanError
from gate.redact import redact_url

Progress = Callable[[str], None]


@dataclass(frozen=True)
class AcceptanceWindow:
    """One window of one stream, as evidence for the per-window SLO."""

    source: str
    stream: str
    point: str | None
    start: float | None
    end: float | None
    reset: bool
    drafts: float | None
    acceptance_length: float | None
    acceptance_rate: float | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PoolObservation:
    """An allocated pool an engine reported; `speculating` False when its page shows no speculative
    counters at all (its pool holds no drafter KV, so it is not the pool with the drafter)."""

    tokens: int
    source: str
    speculating: bool | None = None


@dataclass
class MetricsEvidence:
    """Everything the metrics sources said: windows, errors, and side facts for other lines."""

    windows: list[AcceptanceWindow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    kv_pool: PoolObservation | None = None
    context_cap_tokens: int | None = None
    engine_version: str | None = None
    ready_seconds: float | None = None
    ready_source: str | None = None

    def merge(self, other: MetricsEvidence) -> None:
        self.windows += other.windows
        self.errors += other.errors
        self.sources += other.sources
        if other.kv_pool is not None and (self.kv_pool is None or _pool_rank(other.kv_pool) < _pool_rank(self.kv_pool)):
            self.kv_pool = other.kv_pool
        self.context_cap_tokens = self.context_cap_tokens or other.context_cap_tokens
        self.engine_version = self.engine_version or other.engine_version
        if other.ready_seconds is not None and (self.ready_seconds is None or other.ready_seconds > self.ready_seconds):
            self.ready_seconds, self.ready_source = other.ready_seconds, other.ready_source


def _pool_rank(p: PoolObservation) -> tuple[bool, int]:
    """A pool seen while speculating beats one seen without; then the smallest."""
    return (p.speculating is False, p.tokens)


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _stream_name(model: str | None, rank: str | None) -> str:
    return f"{model or '-'}/{rank if rank is not None else '-'}"


def _pool_of(snap: EngineSnapshot, source: str) -> PoolObservation | None:
    pools = [s.kv_pool_tokens for s in snap.streams if s.kv_pool_tokens is not None]
    speculating = any(s.spec is not None for s in snap.streams)
    return PoolObservation(min(pools), source, speculating) if pools else None


def windows_from_snapshots(snaps: Sequence[EngineSnapshot], source: str, point: str | None,
                           seconds: float | None, min_drafts: float) -> list[AcceptanceWindow]:
    """One window per stream between each neighbouring pair of snapshots (exporter.derive)."""
    out: list[AcceptanceWindow] = []
    for before, after in zip(snaps, snaps[1:], strict=False):
        for w in derive_window(before, after, seconds=seconds, min_drafts=min_drafts):
            if not w.has_spec:
                continue
            out.append(AcceptanceWindow(
                source=source, stream=_stream_name(w.model, w.rank), point=point,
                start=before.timestamp, end=after.timestamp, reset=w.reset, drafts=w.drafts,
                acceptance_length=w.acceptance_length, acceptance_rate=w.acceptance_rate))
    return out


def _read_capture(path: Path) -> EngineSnapshot:
    try:
        return read_file_snapshot(path)
    except ScrapeError as e:
        raise PlanError(f"capture {e}") from None


def _windows_doc(doc: dict, source: str, min_drafts: float) -> MetricsEvidence:
    ev = MetricsEvidence(sources=[source])
    wins = doc.get("windows")
    if not isinstance(wins, list):
        ev.errors.append(f"{source}: no 'windows' list in the answer")
        return ev
    for w in wins:
        if not isinstance(w, dict):
            continue

        def num(key: str, w: dict = w) -> float | None:
            v = w.get(key)
            return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        ev.windows.append(AcceptanceWindow(
            source=source, stream=_stream_name(w.get("model"), w.get("rank")), point=None,
            start=num("start"), end=num("end"), reset=bool(w.get("reset")), drafts=num("drafts"),
            acceptance_length=num("acceptance_length"), acceptance_rate=num("acceptance_rate")))
    if not ev.windows:
        ev.errors.append(f"{source}: the exporter has no completed batch windows yet")
    return ev


def from_capture_files(files: Sequence[Path], point: str | None, seconds: float | None,
                       min_drafts: float) -> MetricsEvidence:
    """Windows between consecutive capture files (or one exporter windows JSON document)."""
    if len(files) == 1 and files[0].suffix == ".json":
        try:
            doc = json.loads(Path(files[0]).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise PlanError(f"cannot read windows document {files[0]}: {e}") from None
        if not isinstance(doc, dict):
            raise PlanError(f"{files[0]}: not a windows document (a JSON object with 'windows')")
        return _windows_doc(doc, f"file {files[0]}", min_drafts)
    snaps = [_read_capture(Path(f)) for f in files]
    source = "captures " + ", ".join(Path(f).name for f in files)
    ev = MetricsEvidence(sources=[source])
    if len(snaps) < 2:
        ev.errors.append(f"{source}: one capture is no window (give two or more, in time order)")
    else:
        ev.windows = windows_from_snapshots(snaps, source, point, seconds, min_drafts)
        if not ev.windows:
            ev.errors.append(f"{source}: no speculative-decoding counters in the captures")
    if snaps:
        ev.kv_pool = _pool_of(snaps[-1], f"capture {Path(files[-1]).name}")
        caps = [s.context_cap_tokens for s in snaps[-1].streams if s.context_cap_tokens]
        ev.context_cap_tokens = min(caps) if caps else None
        ev.engine_version = snaps[-1].version
    return ev


def _stderr_progress(msg: str) -> None:
    print(f"specgate: {msg}", file=sys.stderr, flush=True)


def _exporter_gauges(base: str, timeout: float, ev: MetricsEvidence) -> None:
    """Allocated pool, context cap, version and ready seconds from the sidecar's own /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        r = requests.get(base + "/metrics", timeout=(min(timeout, 3.0), timeout),
                         headers={"Accept": "text/plain; version=0.0.4"})
        if r.status_code != 200:
            return
        families = list(text_string_to_metric_families(r.text))
    except (requests.RequestException, ValueError):
        return
    pools: list[float] = []
    for fam in families:
        for s in fam.samples:
            if s.name == "specgate_kv_pool_tokens" and s.labels.get("pool", "target") == "target":
                pools.append(s.value)
            elif s.name == "specgate_context_cap_tokens":
                ev.context_cap_tokens = int(s.value) if ev.context_cap_tokens is None else min(
                    ev.context_cap_tokens, int(s.value))
            elif s.name == "specgate_engine_info" and s.labels.get("version"):
                ev.engine_version = s.labels["version"]
            elif s.name == "specgate_engine_ready_seconds":
                ev.ready_seconds, ev.ready_source = s.value, f"exporter {redact_url(base)} (specgate_engine_ready_seconds)"
    if pools:
        ev.kv_pool = PoolObservation(int(min(pools)), f"exporter {redact_url(base)} (specgate_kv_pool_tokens)")


def from_exporter(url: str, timeout: float, min_drafts: float) -> MetricsEvidence | None:
    """The sidecar's completed batch windows; None when the URL is not a specgate exporter (404)."""
    base, _ = split_url(url)
    source = f"exporter {redact_url(base)}"
    try:
        r = requests.get(base + "/api/v1/windows", timeout=(min(timeout, 3.0), timeout))
    except requests.exceptions.Timeout:
        return MetricsEvidence(sources=[source], errors=[f"{source} did not answer within {timeout:g}s"])
    except requests.RequestException as e:
        kind = "connection refused" if "refused" in str(e).lower() else type(e).__name__
        return MetricsEvidence(sources=[source], errors=[f"cannot reach {source}: {kind}"])
    if r.status_code == 404:
        return None
    if r.status_code != 200:
        return MetricsEvidence(sources=[source], errors=[f"{source} answered HTTP {r.status_code} on /api/v1/windows"])
    try:
        doc = r.json()
    except ValueError:
        return MetricsEvidence(sources=[source], errors=[f"{source}: /api/v1/windows is not JSON"])
    if not isinstance(doc, dict):
        return MetricsEvidence(sources=[source], errors=[f"{source}: /api/v1/windows is not a JSON object"])
    ev = _windows_doc(doc, source, min_drafts)
    _exporter_gauges(base, timeout, ev)
    return ev


def from_engine(url: str, window_seconds: float, windows: int, min_drafts: float, timeout: float,
                progress: Progress | None, sleep: Callable[[float], None] = time.sleep,
                wait: bool = True) -> MetricsEvidence:
    """Snapshots of a live engine `window_seconds` apart: `windows` windows, progress on stderr."""
    scraper = Scraper(url, timeout=timeout)
    source = f"engine {redact_url(scraper.base_url)}"
    ev = MetricsEvidence(sources=[source])
    say = progress or _stderr_progress
    snaps: list[EngineSnapshot] = []
    try:
        snaps.append(scraper.scrape())
        if not wait:
            ev.errors.append(f"{source}: a live engine needs {window_seconds:g} s per window and waiting is off "
                             "(point the gate at the exporter or Prometheus instead)")
        else:
            for i in range(windows):
                remaining = window_seconds
                while remaining > 0:
                    say(f"waiting for window {i + 1}/{windows} from {source}: {remaining:.0f} s left")
                    step = min(remaining, 10.0)
                    sleep(step)
                    remaining -= step
                snaps.append(scraper.scrape())
    except ScrapeError as e:
        ev.errors.append(f"{source}: {redact_url(str(e))}")
    if snaps:
        ev.kv_pool = _pool_of(snaps[-1], f"{source} (live /metrics)")
        caps = [s.context_cap_tokens for s in snaps[-1].streams if s.context_cap_tokens]
        ev.context_cap_tokens = min(caps) if caps else None
        ev.engine_version = snaps[-1].version
    if len(snaps) >= 2:
        ev.windows = windows_from_snapshots(snaps, source, None, None, min_drafts)
        if not ev.windows:
            ev.errors.append(f"{source}: no speculative-decoding counters on the page")
    return ev


def from_live(url: str, window_seconds: float, windows: int, min_drafts: float, timeout: float = 5.0,
              progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep,
              wait: bool = True) -> MetricsEvidence:
    """An exporter URL answers from its window history; anything else is scraped as an engine."""
    ev = from_exporter(url, timeout, min_drafts)
    if ev is not None:
        return ev
    return from_engine(url, window_seconds, windows, min_drafts, timeout, progress, sleep, wait)

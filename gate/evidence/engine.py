"""Acceptance evidence from a live engine's `/metrics`, scraped `window_seconds` apart.

Why the last resort: an engine keeps no window history, so judging it means waiting one SLO
window per window wanted (progress on stderr). A service (`wait=False`) never waits: it says so
and points at the sidecar or Prometheus instead. Pages become snapshots and windows through the
same code as capture files (`captures.windows_from_snapshots`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from exporter.engines.base import EngineSnapshot
from exporter.scrape import ScrapeError, Scraper
from gate.evidence.base import MetricsEvidence, Progress
from gate.evidence.captures import side_facts, windows_from_snapshots
from gate.inputs.redact import redact_url


def _stderr_progress(msg: str) -> None:
    # CLI progress, not a log line: the contract puts it on stderr with the `specgate:` prefix.
    print(f"specgate: {msg}", file=sys.stderr, flush=True)


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
        side_facts(snaps[-1], ev, f"{source} (live /metrics)")
    ev.live = True
    ev.engine_up = True if snaps and len(ev.errors) == 0 else None  # it answered every scrape
    if len(snaps) >= 2:
        ev.windows = windows_from_snapshots(snaps, source, None, None, min_drafts)
        if not ev.windows:
            ev.errors.append(f"{source}: no speculative-decoding counters on the page")
    return ev

"""Which backend answers a `--metrics` argument or a plan URL: files, the exporter sidecar, or an engine.

Why a router: `specgate check --metrics X` takes capture files, an exporter URL or an engine URL
alike. A URL is asked as a sidecar first (its window history answers at once); one that is not a
sidecar (404 on /api/v1/windows) is scraped as an engine. The evidence types live in
`gate.evidence.base`, the backends in `captures`, `sidecar`, `engine` and `prometheus`; this
module only routes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gate.evidence.base import EvidenceError, EvidenceRequest, MetricsEvidence, Progress
from gate.evidence.engine import from_engine
from gate.evidence.sidecar import from_exporter, source_name

__all__ = ["LiveUrl", "from_live", "is_url"]

LIVE_TIMEOUT_S = 5.0


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def from_live(url: str, window_seconds: float, windows: int, min_drafts: float, timeout: float = LIVE_TIMEOUT_S,
              progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep,
              wait: bool = True) -> MetricsEvidence:
    """An exporter URL answers from its window history; anything else is scraped as an engine."""
    try:
        ev = from_exporter(url, timeout, min_drafts)
    except EvidenceError as e:
        return MetricsEvidence(sources=[source_name(url)], errors=[str(e)])
    if ev is not None:
        return ev
    return from_engine(url, window_seconds, windows, min_drafts, timeout, progress, sleep, wait)


@dataclass(frozen=True)
class LiveUrl:
    """An EvidenceSource: an exporter or engine URL (which one is found out by asking)."""

    url: str

    @property
    def name(self) -> str:
        return source_name(self.url)

    def collect(self, request: EvidenceRequest) -> MetricsEvidence:
        return from_live(self.url, request.window_seconds, request.min_windows, request.min_drafts,
                         progress=request.progress, sleep=request.sleep, wait=request.wait)

"""Depth schedules: the k an engine runs at each batch size (issue 22), in one engine-neutral shape.

Pure, no I/O. Engines that let k depend on the running batch spell it each their own way; each spelling is read
in its engine's package, the way that engine reads it (`exporter/engines/<engine>/schedule.py`: vLLM's
`num_speculative_tokens_per_batch_size`, SGLang's `--speculative-adaptive-config` tiers, TensorRT-LLM's
`draft_len_schedule`), and normalised here to one `DepthSchedule` of contiguous inclusive batch bands starting
at batch 1, the last one open-ended.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from exporter.bounds import MAX_DEPTH


@dataclass(frozen=True, slots=True)
class DepthBand:
    """Inclusive batch sizes [start, end] (end None = every larger batch) and the depths they may run.

    vLLM and TensorRT-LLM run one k per band (k_min == k_max); SGLang adaptive may run any of the tier's
    candidate steps, so the band carries their range.
    """

    start: int
    end: int | None
    k_max: int
    k_min: int


@dataclass(frozen=True)
class DepthSchedule:
    """A normalised schedule: bands sorted, contiguous, the first starting at batch 1, the last open-ended."""

    source: str
    bands: tuple[DepthBand, ...]
    max_k: int

    def band_at(self, batch: int) -> DepthBand:
        """The band that holds `batch` (>= 1; the bands cover every batch from 1 up)."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch size must be an integer >= 1, got {batch!r}")
        starts = [band.start for band in self.bands]
        return self.bands[bisect.bisect_right(starts, batch) - 1]

    def k_at(self, batch: int) -> int:
        """The (largest) k the schedule runs at `batch`: band_at(batch).k_max."""
        return self.band_at(batch).k_max

    @property
    def varies(self) -> bool:
        """More than one distinct k across the bands, or a band free to pick among several (k_min < k_max)."""
        return len({band.k_max for band in self.bands}) > 1 or any(b.k_min < b.k_max for b in self.bands)


def _normalised(source: str, pieces: Sequence[tuple[int, int | None, int, int]]) -> DepthSchedule:
    """Bands from contiguous (start, end, k_max, k_min) pieces starting at 1, neighbours with equal depths merged.

    Every engine's reader ends here, so the depth bound is held here once: a k above `exporter.bounds.MAX_DEPTH`
    is no depth any engine runs (an adaptive candidate of 10**12 steps), a ValueError (one line), never a band."""
    deepest = max((k_max for _, _, k_max, _ in pieces), default=0)
    if deepest > MAX_DEPTH:
        raise ValueError(f"{source}: depth {deepest} is above {MAX_DEPTH}, the deepest draft a schedule may run")
    bands: list[DepthBand] = []
    for start, end, k_max, k_min in pieces:
        if bands and (bands[-1].k_max, bands[-1].k_min) == (k_max, k_min):
            bands[-1] = DepthBand(bands[-1].start, end, k_max, k_min)
        else:
            bands.append(DepthBand(start, end, k_max, k_min))
    assert bands and bands[0].start == 1 and bands[-1].end is None, bands
    return DepthSchedule(source=source, bands=tuple(bands), max_k=max(b.k_max for b in bands))

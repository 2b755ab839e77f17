"""Floor 0: the best depth per band of batch sizes, from tune's predictions (what `specgate tune --emit` writes).

Why from the tune result and nothing else: the best k per measured concurrency and the crossover are what tune
already predicts (gate.model.speedup.predict); an engine's schedule only writes the bands in its spelling (the
writers: each engine profile's `write_schedule`, gate.model.engines). The bands:

- the measured concurrencies c_1 < … < c_n each get their best k (the largest predicted point speedup), or
  k = 0 where even the best depth does not pay (predicted speedup ≤ 1);
- band i covers batches [c_i, c_{i+1} − 1] (the first from batch 1, the last every larger batch): a measured
  concurrency's k holds until the next measured one changes it — except where speculation stops paying
  between them: k_i's predicted speedup falls through 1 at the interpolated crossover b*
  (gate.stats.fall_through), so batches up to ⌊b*⌋ keep k_i and k = 0 starts at ⌊b*⌋ + 1;
- neighbours with the same k are one band.

Each band carries its predicted speedup (the smallest point speedup over its measured concurrencies) and band
(min low .. max high over them; k = 0 is 1.0, no speculation) — **predicted**, reported beside the engine
fragment, never inside it. SGLang's tiers also carry their `candidates`: the depths up to the band's k that pay
at every measured concurrency of the band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from exporter.schedule import DepthSchedule
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import Prediction, TuneResult
from gate.stats import fall_through


@dataclass(frozen=True)
class BatchBand:
    """Batches [start, end] (end None: every larger batch) run depth k; its predicted speedup band."""

    start: int
    end: int | None
    k: int
    concurrencies: tuple[int, ...]
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    candidates: tuple[int, ...] = ()  # SGLang: the tier's candidate steps

    def to_json(self) -> dict[str, Any]:
        return {"batch_start": self.start, "batch_end": self.end, "k": self.k,
                "measured_concurrencies": list(self.concurrencies), "predicted_speedup": self.speedup,
                "predicted_speedup_low": self.speedup_low, "predicted_speedup_high": self.speedup_high,
                **({"candidate_steps": list(self.candidates)} if self.candidates else {})}


@dataclass(frozen=True)
class Emitted:
    """The engine fragment (what the engine reads) and, beside it, the bands with their predicted speedups."""

    engine: str
    point: str | None
    fragment: dict[str, Any]
    bands: tuple[BatchBand, ...]
    schedule: DepthSchedule
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "point": self.point, "fragment": self.fragment, "label": "predicted",
                "bands": [b.to_json() for b in self.bands], "notes": list(self.notes)}

    def text(self) -> str:
        """The bands, one line each, labelled predicted (for stderr or the text report)."""
        out = [f"schedule for {self.engine}" + (f" ({self.point})" if self.point else "")
               + ": predicted speedup per band of batch sizes (predicted, not measured):"]
        for b in self.bands:
            where = f"batch {b.start}" + ("+" if b.end is None else (f"-{b.end}" if b.end != b.start else ""))
            band = ("" if b.speedup_low is None or b.speedup_high is None
                    else f" (band {b.speedup_low:.3f}..{b.speedup_high:.3f})")
            speed = "-" if b.speedup is None else f"{b.speedup:.3f}x"
            steps = f", candidate steps {list(b.candidates)}" if b.candidates else ""
            measured = ", ".join(map(str, b.concurrencies)) or "none"
            out.append(f"  {where:<14} k = {b.k}{steps}: predicted speedup {speed}{band} at its slowest measured "
                       f"concurrency; measured at concurrency {measured}")
        out += [f"  - {n}" for n in self.notes]
        return "\n".join(out) + "\n"


def _cells(result: TuneResult, point: str | None, conc: int) -> list[Prediction]:
    return [p for p in result.points if p.point == point and p.concurrency == conc and p.speedup is not None]


def _choose_point(result: TuneResult, point: str | None) -> str | None:
    points = sorted({b.point for b in result.best if b.concurrency is not None}, key=lambda p: p or "")
    if not points:
        raise TuneInputError("--emit needs predicted speedups at measured concurrencies: probe records (specgate "
                             "probe) of a baseline and a speculative arm at several fixed k and concurrencies")
    if point is not None:
        if point not in points:
            raise TuneInputError(f"--emit: no predictions at operating point {point!r} (have: "
                                 + ", ".join(p or "(unnamed)" for p in points) + ")")
        return point
    if len(points) > 1:
        raise TuneInputError("--emit: several operating points (" + ", ".join(p or "(unnamed)" for p in points)
                             + "); one schedule serves one traffic: name it with --point")
    return points[0]


def batch_bands(result: TuneResult, point: str | None = None) -> tuple[str | None, list[BatchBand]]:
    """The bands of batch sizes and their depths (module docstring), from tune's predictions at `point`."""
    chosen = _choose_point(result, point)
    best = sorted((b for b in result.best if b.point == chosen and b.concurrency is not None),
                  key=lambda b: b.concurrency or 0)
    rows: list[tuple[int, int, Prediction]] = []  # (concurrency, k, the cell at that k)
    for b in best:
        cell = result.at(chosen, b.concurrency, b.k)
        assert cell is not None and cell.speedup is not None and b.concurrency is not None
        rows.append((b.concurrency, b.k if cell.speedup > 1.0 else 0, cell))
    starts: list[tuple[int, int]] = []  # (first batch, k)
    for i, (conc, k, _) in enumerate(rows):
        if i == 0:
            starts.append((1, k))
            continue
        prev_conc, prev_k, prev_cell = rows[i - 1]
        if k == prev_k:
            continue
        start = conc
        if k == 0 and prev_k > 0:
            same = result.at(chosen, conc, prev_k)
            s_next = same.speedup if same is not None and same.speedup is not None else rows[i][2].speedup
            assert prev_cell.speedup is not None and s_next is not None
            b_star = fall_through([(prev_conc, prev_cell.speedup), (conc, s_next)])
            if b_star is not None:
                start = min(conc, max(prev_conc + 1, math.floor(b_star) + 1))
        starts.append((start, k))
    bands: list[BatchBand] = []
    for i, (start, k) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else None
        inside = [r for r in rows if r[0] >= start and (end is None or r[0] <= end)]
        concs = tuple(r[0] for r in inside)
        if k == 0:
            bands.append(BatchBand(start, end, 0, concs, 1.0, 1.0, 1.0))
            continue
        cells = [c for conc in concs if (c := result.at(chosen, conc, k)) is not None and c.speedup is not None]
        lows = [c.speedup_low for c in cells if c.speedup_low is not None]
        highs = [c.speedup_high for c in cells if c.speedup_high is not None]
        speeds = [c.speedup for c in cells if c.speedup is not None]
        bands.append(BatchBand(start, end, k, concs, min(speeds) if speeds else None, min(lows) if lows else None,
                               max(highs) if highs else None))
    return chosen, bands


def candidates(result: TuneResult, point: str | None, band: BatchBand) -> tuple[int, ...]:
    """SGLang: the depths up to the band's k that pay at every measured concurrency of the band (k = 0: [0])."""
    if band.k == 0:
        return (0,)
    paying: set[int] | None = None
    for conc in band.concurrencies:
        here = {c.k for c in _cells(result, point, conc) if c.k <= band.k and (c.speedup or 0.0) > 1.0}
        paying = here if paying is None else paying & here
    return tuple(sorted((paying or set()) | {band.k}))

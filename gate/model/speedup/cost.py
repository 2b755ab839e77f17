"""Floor 0: cost of one verify cycle by depth k and concurrency B, per running sequence.

Why a linear model: a cycle is k draft forwards and one batched verify of k+1 tokens,

    t_cycle(k, B) = t_verify(k, B) + k * t_draft(B)

and decode is memory-bound, so the verify's k+1 query tokens cost about one forward whatever k
is (t_verify(k, B) = t_verify(B), assumed constant in k; stated with every prediction).

Two ways to know it:

- **fitted**: cycles measured at two or more k at the same (point, B) give t_verify(B) and
  t_draft(B) by least squares on the per-k medians (a noisy repetition moves a median less than a
  mean); the band is the fit's largest absolute residual (0 with two k). At a measured k the
  measured cycle itself is used (median; band: the smallest and largest sample). A cycle holds one
  target forward, so no cycle is taken to cost less than a plain step (t_cycle >= t_step, the same
  bound the declared band's upper end rests on): a noisy fit cannot predict a free cycle.
- **declared** at one k0 (seed 004: k0 = 3, cycle 31.16 ms, plain step 14.14 ms): the split
  between t_verify and t_draft is then an assumption. t_draft lies between a declared lower
  bound (default 0) and (t_cycle(k0) - t_step) / k0 (the verify costs no less than a plain step),
  and

      t_cycle(k) = t_cycle(k0) + (k - k0) * t_draft,   t_draft in [low, high], point: their mean.

  Seed 004 (examples/tune/seed004.yaml): 0 to (31.16 - 14.14) / 3 = 5.67 ms. Its 0.50 ms is growth per
  draft step from 2K to 131K ((7.21 - 5.70) / 3), neither a step's cost nor a floor under it, so the example
  declares no low end and answers as the plan does (`tune --plan`, `check`); a declared band is stated with
  its source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gate.model.speedup.curves import TuneInputError
from gate.stats import median

CostKind = Literal["measured", "fitted", "declared"]

# No decode step or verify cycle of one sequence takes ten minutes: beyond it the number is a unit error.
MAX_STEP_MS = 600_000.0


@dataclass(frozen=True)
class CostSample:
    """One per-sequence time at an operating point: a plain step (k = 0) or a verify cycle (k >= 1)."""

    point: str | None
    concurrency: int | None
    k: int
    ms: float
    source: str
    # True for times the tool derived from probe cells; False for costs a user wrote (flags, a plan, an input
    # file). An impossible written cost is invalid input; an impossible measured pair is set aside with a note.
    measured: bool = False

    def __post_init__(self) -> None:
        if not math.isfinite(self.ms) or not self.ms > 0:
            raise TuneInputError(f"{self.source}: a step or cycle time must be a positive number (got {self.ms:g} ms)")
        if self.ms > MAX_STEP_MS:
            raise TuneInputError(f"{self.source}: a step or cycle of {self.ms:g} ms is over {MAX_STEP_MS:g} ms: "
                                 "not one decode step (a unit error?)")
        if self.k < 0:
            raise TuneInputError(f"{self.source}: depth k must be >= 0")


@dataclass(frozen=True)
class DraftBand:
    """Declared bounds on one draft step's cost (ms); None: the default (0 below, the step-bound above)."""

    low_ms: float | None = None
    high_ms: float | None = None
    source: str = "--draft-step-ms"


@dataclass(frozen=True)
class CycleAt:
    """t_cycle at one k with its band and how it is known."""

    k: int
    ms: float
    low_ms: float
    high_ms: float
    kind: CostKind


@dataclass(frozen=True)
class CycleModel:
    """t_step(B) and t_cycle(k, B) at one (point, concurrency)."""

    point: str | None
    concurrency: int | None
    target_step_ms: float
    verify_ms: float
    draft_ms: float
    draft_low_ms: float
    draft_high_ms: float
    measured: tuple[tuple[int, float, float, float], ...]  # (k, mean, min, max) of measured cycles
    residual_ms: float
    kind: Literal["fitted", "declared"]
    source: str

    def cycle(self, k: int) -> CycleAt:
        for mk, mean, lo, hi in self.measured:
            if mk == k:
                return CycleAt(k, mean, lo, hi, "measured")
        if self.kind == "fitted":
            floor = self.target_step_ms
            mid = max(self.verify_ms + k * self.draft_ms, floor)
            return CycleAt(k, mid, max(mid - self.residual_ms, floor), max(mid + self.residual_ms, floor), "fitted")
        k0, c0 = self.measured[0][0], self.measured[0][1]
        a = c0 + (k - k0) * self.draft_low_ms
        b = c0 + (k - k0) * self.draft_high_ms
        mid = c0 + (k - k0) * self.draft_ms
        return CycleAt(k, mid, max(min(a, b), 1e-9), max(a, b), "declared")

    def statement(self) -> str:
        """The cost model in one line (printed with every prediction)."""
        at = _where(self.point, self.concurrency)
        if self.kind == "fitted":
            ks = ", ".join(str(m[0]) for m in self.measured)
            return (f"cost {at}: t_cycle(k) = {self.verify_ms:.2f} + k * {self.draft_ms:.2f} ms fitted by least "
                    f"squares to the median cycles measured at k = {ks} (band +/- {self.residual_ms:.2f} ms, the largest "
                    f"residual; never below the plain step {self.target_step_ms:.2f} ms); t_verify assumed constant in k")
        k0, c0 = self.measured[0][0], self.measured[0][1]
        return (f"cost {at}: declared at k = {k0} only (cycle {c0:.2f} ms, plain step {self.target_step_ms:.2f} ms): "
                f"the t_verify/t_draft split is an assumption, t_draft {self.draft_low_ms:.2f} .. "
                f"{self.draft_high_ms:.2f} ms (point {self.draft_ms:.2f}), t_cycle(k) = {c0:.2f} + (k - {k0}) * t_draft, "
                f"t_verify assumed constant in k")


def _where(point: str | None, concurrency: int | None) -> str:
    parts = [p for p in (point, None if concurrency is None else f"concurrency {concurrency}") if p]
    return "at " + ", ".join(parts) if parts else "(one operating point)"


def _fit(ks: Sequence[float], ts: Sequence[float]) -> tuple[float, float, float]:
    """Least squares t = v + k * d; returns (v, d, largest absolute residual)."""
    n = len(ks)
    mk, mt = sum(ks) / n, sum(ts) / n
    sxx = sum((k - mk) ** 2 for k in ks)
    d = sum((k - mk) * (t - mt) for k, t in zip(ks, ts, strict=True)) / sxx
    v = mt - d * mk
    res = max(abs(t - (v + d * k)) for k, t in zip(ks, ts, strict=True))
    return v, d, res


def cycle_models(samples: Sequence[CostSample], band: DraftBand | None = None,
                 notes: list[str] | None = None) -> list[CycleModel]:
    """One model per (point, concurrency) that has a plain step and at least one measured cycle.

    Groups without a plain step or without a cycle are skipped (the caller says so). A verify cycle
    cheaper than the plain step is impossible (a cycle holds one target forward): declared that way it
    is invalid input (TuneInputError); *measured* that way (probe cells of two arms run under different
    load) the group is set aside with a note in `notes`, never modelled and never an exit 3.
    """
    groups: dict[tuple[str | None, int | None], list[CostSample]] = {}
    for s in samples:
        groups.setdefault((s.point, s.concurrency), []).append(s)
    out: list[CycleModel] = []
    for (point, conc), group in groups.items():
        steps = [s.ms for s in group if s.k == 0]  # plain step: their median
        cycles: dict[int, list[float]] = {}
        for s in group:
            if s.k > 0:
                cycles.setdefault(s.k, []).append(s.ms)
        if not steps or not cycles:
            continue
        step = median(steps)
        measured = tuple(sorted((k, median(v), min(v), max(v)) for k, v in cycles.items()))
        source = "; ".join(sorted({s.source for s in group}))
        cheaper = [(k, mid) for k, mid, _, _ in measured if mid < step]
        if cheaper:
            k, mid = cheaper[0]
            why = (f"the verify cycle at k = {k} ({mid:g} ms) is cheaper than the plain step ({step:g} ms) at "
                   f"{_where(point, conc)[3:]}: a cycle holds one target forward, so it cannot cost less than a step")
            if not any(s.measured for s in group):
                raise TuneInputError(f"{source}: {why}")
            if notes is not None:
                notes.append(f"{source}: measured {why} — the arms were measured under different load; "
                             "no cost model there")
            continue
        if len(measured) >= 2:
            v, d, res = _fit([float(m[0]) for m in measured], [m[1] for m in measured])
            out.append(CycleModel(point, conc, step, v, d, d, d, measured, res, "fitted", source))
            continue
        k0, c0 = measured[0][0], measured[0][1]
        hi_default = max((c0 - step) / k0, 0.0)
        lo = band.low_ms if band is not None and band.low_ms is not None else 0.0
        hi = band.high_ms if band is not None and band.high_ms is not None else hi_default
        if lo > hi:
            raise TuneInputError(f"draft step band {lo:g} .. {hi:g} ms is empty at {_where(point, conc)[3:]} "
                                 f"(the upper end (cycle - step) / k is {hi_default:.2f} ms)")
        mid = (lo + hi) / 2
        out.append(CycleModel(point, conc, step, c0 - k0 * mid, mid, lo, hi, measured, 0.0, "declared", source))
    return out

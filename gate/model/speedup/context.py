"""The context axis (issue 39, seed 004): does speculation still pay at the prompt lengths the traffic has?

From probe cells swept over prompt lengths (`specgate probe --prompt-tokens A,B,C`: one mix per length, the
engine's counters read around each cell, so each length's acceptance is its own), per (context, concurrency, k):

- L = 1 + Σaccepted / Σdrafts over the length's cells, the measured speedup (median served rate of the arm over
  the baseline's) with its range (the slowest repetition against the fastest and back), and the engine's own
  step time (vLLM's inter-token latency: a target step on the baseline, a whole verify cycle on the speculative
  arm);
- the cycle decomposition between the shortest and the longest context (seed 004's method): the target step grew
  Δt, the verify cycle Δc, so the draft's context-driven growth is (Δc − Δt) / k per draft step, and its share
  of the target's growth (Δc − Δt) / (k · Δt) — seed 004: Δt 5.70 ms, Δc 7.21 ms, k 3 → 0.50 ms, 8.8 %. Its band
  is interval arithmetic over the repetitions' extremes: measured, but from few cells, so shown with its band;
- the best measured k per context band and where speculation stops paying: the interpolated context at which
  the best depth's speedup falls through 1 (gate.stats.fall_through), None where it does not within the sweep.

Nothing here is extrapolated past the measured lengths: a context outside the sweep has no evidence.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from exporter import formulas
from gate.stats import fall_through


@dataclass(frozen=True)
class ContextSample:
    """One probe cell on the context axis: its prompt length, load, depth (0: baseline) and what it measured."""

    context: int
    concurrency: int
    k: int
    served_tokens_per_second: float
    step_ms: float | None = None  # the engine's own mean step (inter-token latency) over the cell
    tpot_ms: float | None = None  # the client's TPOT p50 over the cell
    drafts: float | None = None
    accepted_tokens: float | None = None


@dataclass(frozen=True)
class ContextPoint:
    """Every cell of one (context, concurrency, k), summarised."""

    context: int
    concurrency: int
    k: int
    served: tuple[float, ...]
    steps_ms: tuple[float, ...]
    tpot_ms: tuple[float, ...]
    acceptance_length: float | None
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None

    @property
    def step_ms(self) -> float | None:
        return statistics.median(self.steps_ms) if self.steps_ms else None


@dataclass(frozen=True)
class Decomposition:
    """Seed 004's cycle decomposition between two contexts at one concurrency and depth, with its band."""

    concurrency: int
    k: int
    short: int
    long: int
    target_growth_ms: float
    cycle_growth_ms: float
    draft_step_growth_ms: float
    draft_share: float | None  # draft step growth / target step growth; None where the target did not grow
    target_growth_band: tuple[float, float]
    cycle_growth_band: tuple[float, float]
    draft_step_band: tuple[float, float]
    share_band: tuple[float, float] | None

    def text(self) -> str:
        share = ("" if self.draft_share is None else
                 f", {100 * self.draft_share:.1f} % of the target's"
                 + (" (band unbounded: the target's growth band reaches 0)" if self.share_band is None else
                    f" (band {100 * self.share_band[0]:.1f} .. {100 * self.share_band[1]:.1f} %)"))
        return (f"cycle decomposition B={self.concurrency} k={self.k}, {self.short} -> {self.long} prompt tokens "
                f"(measured, engine step times): target step {self.target_growth_ms:+.3f} ms "
                f"(band {self.target_growth_band[0]:+.3f} .. {self.target_growth_band[1]:+.3f}), verify cycle "
                f"{self.cycle_growth_ms:+.3f} ms (band {self.cycle_growth_band[0]:+.3f} .. "
                f"{self.cycle_growth_band[1]:+.3f}), so {self.draft_step_growth_ms:+.3f} ms per draft step "
                f"(band {self.draft_step_band[0]:+.3f} .. {self.draft_step_band[1]:+.3f}){share}")


@dataclass(frozen=True)
class ContextAdvice:
    """At one concurrency: the best measured k per context and where speculation stops paying."""

    concurrency: int
    best: tuple[tuple[int, int, float, float, float], ...]  # (context, k or 0, speedup, low, high)
    stops_paying_at: float | None  # interpolated prompt tokens where the best speedup falls through 1

    def text(self) -> str:
        rows = "; ".join(f"{ctx} tokens: " + (f"k={k} ({s:.3f}x, range {lo:.3f}..{hi:.3f})" if k else
                                              f"k=0, no depth measured pays (best {s:.3f}x)")
                         for ctx, k, s, lo, hi in self.best)
        stop = ("it pays at no context of the sweep" if not any(k for _, k, _, _, _ in self.best) else
                "it does not stop paying within the sweep" if self.stops_paying_at is None else
                f"it stops paying at about {self.stops_paying_at:,.0f} prompt tokens")
        return f"per context at B={self.concurrency} (measured): {rows}; {stop}"


@dataclass(frozen=True)
class ContextSweep:
    points: tuple[ContextPoint, ...]
    decompositions: tuple[Decomposition, ...]
    advice: tuple[ContextAdvice, ...]

    @property
    def contexts(self) -> tuple[int, ...]:
        return tuple(sorted({p.context for p in self.points}))

    def text(self) -> str:
        lines = [f"context sweep: {', '.join(str(c) for c in self.contexts)} prompt tokens"]
        for p in self.points:
            step = "" if p.step_ms is None else f", engine step {p.step_ms:.3f} ms"
            acc = "" if p.acceptance_length is None else f", L {p.acceptance_length:.3f}"
            sp = "" if p.speedup is None else (f", speedup {p.speedup:.3f}x (range {p.speedup_low:.3f}.."
                                               f"{p.speedup_high:.3f})")
            lines.append(f"  {p.context} tokens B={p.concurrency} k={p.k}: {statistics.median(p.served):.1f} "
                         f"tok/s{acc}{step}{sp}")
        lines += ["  " + d.text() for d in self.decompositions]
        lines += ["  " + a.text() for a in self.advice]
        return "\n".join(lines)


def _growth(short: Sequence[float], long: Sequence[float]) -> tuple[float, tuple[float, float]]:
    """Median growth and its band from the extremes: the least the long could exceed the short, and the most."""
    return (statistics.median(long) - statistics.median(short), (min(long) - max(short), max(long) - min(short)))


def _ratio_band(num: tuple[float, float], den: tuple[float, float]) -> tuple[float, float] | None:
    if den[0] <= 0:
        return None
    q = [n / d for n in num for d in den]
    return min(q), max(q)


def decompose(base: ContextPoint, base_long: ContextPoint, spec: ContextPoint,
              spec_long: ContextPoint) -> Decomposition | None:
    """The decomposition from the engine's step times at two contexts; None where any of them is missing."""
    if not (base.steps_ms and base_long.steps_ms and spec.steps_ms and spec_long.steps_ms) or spec.k < 1:
        return None
    k = spec.k
    t, t_band = _growth(base.steps_ms, base_long.steps_ms)
    c, c_band = _growth(spec.steps_ms, spec_long.steps_ms)
    d = (c - t) / k
    d_band = ((c_band[0] - t_band[1]) / k, (c_band[1] - t_band[0]) / k)
    return Decomposition(base.concurrency, k, base.context, base_long.context, t, c, d, d / t if t > 0 else None,
                         t_band, c_band, d_band, _ratio_band(d_band, t_band))


def sweep(samples: Sequence[ContextSample]) -> ContextSweep | None:
    """The context analysis of probe cells; None unless at least two contexts were measured."""
    groups: dict[tuple[int, int, int], list[ContextSample]] = {}
    for one in samples:
        groups.setdefault((one.context, one.concurrency, one.k), []).append(one)
    if len({ctx for ctx, _, _ in groups}) < 2:
        return None
    points: dict[tuple[int, int, int], ContextPoint] = {}
    for key in sorted(groups):
        cells = groups[key]
        drafts = [c.drafts for c in cells if c.drafts]
        acc = [c.accepted_tokens for c in cells if c.drafts]
        length = formulas.acceptance_length(sum(a or 0.0 for a in acc), sum(drafts)) \
            if drafts and None not in acc else None
        points[key] = ContextPoint(key[0], key[1], key[2], tuple(c.served_tokens_per_second for c in cells),
                                   tuple(c.step_ms for c in cells if c.step_ms is not None),
                                   tuple(c.tpot_ms for c in cells if c.tpot_ms is not None),
                                   length if key[2] else None)
    for key, p in list(points.items()):
        b = points.get((key[0], key[1], 0))
        if key[2] == 0 or b is None or min(b.served) <= 0:
            continue
        points[key] = ContextPoint(p.context, p.concurrency, p.k, p.served, p.steps_ms, p.tpot_ms,
                                   p.acceptance_length, statistics.median(p.served) / statistics.median(b.served),
                                   min(p.served) / max(b.served), max(p.served) / min(b.served))
    decomp: list[Decomposition] = []
    advice: list[ContextAdvice] = []
    for conc in sorted({key[1] for key in points}):
        ctxs = sorted({key[0] for key in points if key[1] == conc})
        short, long = ctxs[0], ctxs[-1]
        for k in sorted({key[2] for key in points if key[1] == conc and key[2] > 0}):
            parts = [points.get((ctx, conc, kk)) for ctx, kk in ((short, 0), (long, 0), (short, k), (long, k))]
            if short != long and all(parts):
                d = decompose(*parts)  # type: ignore[arg-type]
                if d is not None:
                    decomp.append(d)
        best: list[tuple[int, int, float, float, float]] = []
        for ctx in ctxs:
            here = [p for p in points.values() if p.context == ctx and p.concurrency == conc and p.speedup is not None]
            if not here:
                continue
            top = max(here, key=lambda p: p.speedup or 0.0)
            sp, lo, hi = top.speedup or 0.0, top.speedup_low or 0.0, top.speedup_high or 0.0
            best.append((ctx, top.k if sp > 1 else 0, sp, lo, hi))
        if best:
            stop = fall_through([(float(ctx), sp) for ctx, _, sp, _, _ in best])
            advice.append(ContextAdvice(conc, tuple(best), stop))
    return ContextSweep(tuple(points.values()), tuple(decomp), tuple(advice))

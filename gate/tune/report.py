"""Tune's output: the JSON document (the contract in docs/design.md "Tune") and the text tables.

Why both bands are printed next to every number: below the measured depth L is exact arithmetic,
above it a model; the cost split is often an assumption. A reader must see which is which.
"""

from __future__ import annotations

from typing import Any

from gate.inputs.jsontext import printable
from gate.model.speedup.context import ContextSweep
from gate.model.speedup.predict import Prediction, TuneResult


def _r(x: float | None, nd: int = 4) -> float | None:
    """JSON numbers are not rounded (docs/design.md "Command-line contract"); `nd` is for text only."""
    return x


def point_json(p: Prediction) -> dict[str, Any]:
    return {
        "point": p.point, "concurrency": p.concurrency, "k": p.k,
        "acceptance_length": _r(p.acceptance_length), "acceptance_low": _r(p.acceptance_low),
        "acceptance_high": _r(p.acceptance_high), "acceptance_basis": p.acceptance_basis,
        "cycle_ms": _r(p.cycle_ms), "cycle_low_ms": _r(p.cycle_low_ms), "cycle_high_ms": _r(p.cycle_high_ms),
        "cost_basis": p.cost_basis, "target_step_ms": _r(p.target_step_ms),
        "speedup": _r(p.speedup), "speedup_low": _r(p.speedup_low), "speedup_high": _r(p.speedup_high),
        "draft_break_even_ms": _r(p.draft_break_even_ms),
    }


def to_json(result: TuneResult) -> dict[str, Any]:
    """{"points": [...], "best": [{"point", "concurrency", "k", "speedup", ...}], "crossover_concurrency",
    "measured_k": [{"point", "k"}], "assumptions": [...]}."""
    best = []
    for b in result.best:
        p = result.at(b.point, b.concurrency, b.k)
        best.append({"point": b.point, "concurrency": b.concurrency, "k": b.k,
                     "speedup": _r(p.speedup) if p else None, "speedup_low": _r(p.speedup_low) if p else None,
                     "speedup_high": _r(p.speedup_high) if p else None})
    return {
        "points": [point_json(p) for p in result.points],
        "best": best,
        "crossover_concurrency": _r(result.crossover_concurrency, 2),
        "measured_k": [{"point": c.point, "k": c.measured_k, "source": c.source} for c in result.curves],
        "assumptions": list(result.assumptions),
    }


def _f(x: float | None, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _band(lo: float | None, hi: float | None, nd: int = 3) -> str:
    if lo is None or hi is None:
        return "-"
    if abs(hi - lo) < 0.5 * 10 ** -nd:
        return "="
    return f"{lo:.{nd}f}..{hi:.{nd}f}"


def to_text(result: TuneResult) -> str:
    out: list[str] = []
    for point, conc in result.groups():
        cells = [p for p in result.points if p.point == point and p.concurrency == conc]
        where = ", ".join(x for x in (point, None if conc is None else f"concurrency {conc}") if x) or "all traffic"
        out.append(f"tune: {where}")
        out.append(f"  {'k':>3}  {'L':>6}  {'basis':<12}  {'L band':<13}  {'cycle ms':>8}  {'cycle band':<13}  "
                   f"{'speedup':>7}  {'speedup band':<13}")
        best = next((b.k for b in result.best if b.point == point and b.concurrency == conc), None)
        for p in cells:
            mark = "  <- best" if p.k == best else ""
            out.append(f"  {p.k:>3}  {p.acceptance_length:>6.3f}  {p.acceptance_basis:<12}  "
                       f"{_band(p.acceptance_low, p.acceptance_high):<13}  {_f(p.cycle_ms, 2):>8}  "
                       f"{_band(p.cycle_low_ms, p.cycle_high_ms, 2):<13}  {_f(p.speedup):>7}  "
                       f"{_band(p.speedup_low, p.speedup_high):<13}{mark}")
        curve = next((c for c in result.curves if c.point == point), None)
        k0 = None if curve is None else curve.measured_k
        top = next((p for p in cells if p.k == best), None)
        at_k0 = next((p for p in cells if p.k == k0), None)
        if (top is not None and at_k0 is not None and top.k != k0 and top.speedup_low is not None
                and at_k0.speedup_high is not None and top.speedup_low <= at_k0.speedup_high):
            own = curve.own_basis if curve is not None else "measured"  # reported stays reported
            out.append(f"  best k = {top.k} is a point estimate: its band reaches down to the {own} k = {k0}'s, "
                       "so these numbers cannot decide between them")
        beats = [(p.k, p.draft_break_even_ms) for p in cells if p.draft_break_even_ms is not None]
        if beats and k0 is not None:
            out.append(f"  the cost split is declared: depth k beats k = {k0} when one draft step costs "
                       + ", ".join(f"{'<' if k > k0 else '>'} {d:.2f} ms (k={k})" for k, d in beats))
        out.append("")
    if result.crossover_concurrency is not None:
        out.append(f"crossover: speculation stops paying near concurrency {result.crossover_concurrency:.1f}")
    out.append("assumptions:")
    out += [f"  - {a}" for a in result.assumptions]
    # Point names come from inputs (probe mix names, plan points): one name stays one cell (printable).
    return "\n".join(printable(line) for line in out) + "\n"


def context_json(sweep: ContextSweep) -> dict[str, Any]:
    """Issue 39's context axis (measured, per (context, concurrency, k)): {"contexts", "points", "decompositions",
    "advice"}; the decomposition's bands are interval arithmetic over the repetitions' extremes."""
    return {
        "contexts": list(sweep.contexts),
        "points": [{"context": p.context, "concurrency": p.concurrency, "k": p.k,
                    "served_tokens_per_second": list(p.served), "engine_step_ms": p.step_ms,
                    "engine_steps_ms": list(p.steps_ms), "tpot_ms": list(p.tpot_ms),
                    "acceptance_length": p.acceptance_length, "speedup": p.speedup, "speedup_low": p.speedup_low,
                    "speedup_high": p.speedup_high} for p in sweep.points],
        "decompositions": [{"concurrency": d.concurrency, "k": d.k, "short_context": d.short,
                            "long_context": d.long, "target_step_growth_ms": d.target_growth_ms,
                            "verify_cycle_growth_ms": d.cycle_growth_ms,
                            "draft_step_growth_ms": d.draft_step_growth_ms, "draft_share": d.draft_share,
                            "target_step_growth_band_ms": list(d.target_growth_band),
                            "verify_cycle_growth_band_ms": list(d.cycle_growth_band),
                            "draft_step_growth_band_ms": list(d.draft_step_band),
                            "draft_share_band": None if d.share_band is None else list(d.share_band),
                            "text": d.text()} for d in sweep.decompositions],
        "advice": [{"concurrency": a.concurrency, "stops_paying_at_prompt_tokens": a.stops_paying_at,
                    "best": [{"context": ctx, "k": k, "speedup": s, "speedup_low": lo, "speedup_high": hi}
                             for ctx, k, s, lo, hi in a.best], "text": a.text()} for a in sweep.advice],
    }

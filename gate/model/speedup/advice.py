"""Floor 0: the plan's depth against tune's best depth, for the gate's acceptance line.

A pure function of tune's inputs (the plan's costs against the per-position evidence
`gate.evidence.gather` read, converted by `gate.evidence.positions.from_evidence`), through the one
orchestrator `gate.model.speedup.tune.run` — the same numbers `specgate tune --plan` prints for the
same plan. No file is read here; the acceptance line reads it once per evaluation
(`gate.checks.base.CheckContext.depth_advice`).

Why a warning and never a fail: everything beyond the measured k is a model, and with costs
declared at one k the draft step's cost is an assumption. The line reports the plan's k, tune's
best k per operating point, and warns only when another depth's whole predicted speedup band lies
above the plan's k's band (`predict.dominating`), which no assumption inside the bands can undo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import dominating
from gate.model.speedup.tune import TuneInputs, run


@dataclass(frozen=True)
class DepthAdvice:
    """What the acceptance line shows: per point the plan's k, the best k, and depths that dominate."""

    plan_k: int | None
    points: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    note: str | None = None
    # Why the run's depth varied, so its L by depth is a lower bound, not exact (gate.model.speedup.curves); None: fixed.
    lower_bound: str | None = None

    @classmethod
    def not_tuned(cls, plan_k: int | None, why: TuneInputError) -> DepthAdvice:
        """Tune refused its inputs (the evidence could not become them, or `run` could not predict): why."""
        return cls(plan_k=plan_k, note=f"tune: {why}")

    def to_json(self) -> dict[str, Any]:
        out = {"plan_k": self.plan_k, "points": self.points, "warnings": self.warnings, "note": self.note}
        if self.lower_bound:
            out["lower_bound"] = self.lower_bound
        return out

    def sentence(self) -> str:
        """The acceptance line's depth clause."""
        text = self._clause()
        if self.lower_bound:
            text += (f" (per-position rates are lower bounds, not exact: {self.lower_bound}; vLLM divides accepted "
                     "per position by every draft)")
        return text

    def _clause(self) -> str:
        if self.note:
            return f"depth not tuned ({self.note})"
        if self.warnings:
            return "depth: " + "; ".join(self.warnings)
        best = ", ".join(
            f"{p['best_k']} at {p['point'] or 'the plan traffic'}"
            + (f" ({p['best_speedup']:.2f}x vs {p['plan_speedup']:.2f}x at k = {self.plan_k}, point estimates)"
               if p["best_k"] != self.plan_k and p["best_speedup"] is not None and p["plan_speedup"] is not None else "")
            for p in self.points)
        if not best:
            return f"depth: plan k = {self.plan_k}; no step costs, so tune has no best k"
        return (f"depth: plan k = {self.plan_k}, tune's best k = {best}; no other depth's predicted speedup band "
                f"lies wholly above k = {self.plan_k}'s (specgate tune)")


def depth_advice(got: TuneInputs) -> DepthAdvice | None:
    """None when the plan has no speculation or no per-position evidence (nothing to say)."""
    if got.plan_k is None or not got.counters or not any(c.resolved for c in got.counters):
        return None
    try:
        result = run(got)
    except TuneInputError as e:
        return DepthAdvice.not_tuned(got.plan_k, e)
    points: list[dict[str, Any]] = []
    warnings: list[str] = []
    for b in result.best:
        mine = result.at(b.point, b.concurrency, got.plan_k)
        best = result.at(b.point, b.concurrency, b.k)
        above = dominating(result, b.point, b.concurrency, got.plan_k)
        where = b.point or "the plan's traffic"
        points.append({"point": b.point, "concurrency": b.concurrency, "plan_k": got.plan_k, "best_k": b.k,
                       "plan_speedup": mine.speedup if mine else None,
                       "best_speedup": best.speedup if best else None,
                       "dominating_k": [p.k for p in above]})
        if above:
            top = max(above, key=lambda p: p.speedup_low or 0.0)
            warnings.append(f"at {where} k = {top.k}'s predicted speedup band {top.speedup_low:.2f}..{top.speedup_high:.2f} "
                            f"lies wholly above the plan's k = {got.plan_k} ({mine.speedup_low:.2f}.."
                            f"{mine.speedup_high:.2f}) (specgate tune)" if mine and mine.speedup_low is not None
                            and mine.speedup_high is not None and top.speedup_high is not None else
                            f"at {where} k = {top.k} is predicted faster than the plan's k = {got.plan_k} (specgate tune)")
    varied = next((c.varied for c in result.curves if c.varied), None)
    return DepthAdvice(plan_k=got.plan_k, points=points, warnings=warnings, lower_bound=varied)

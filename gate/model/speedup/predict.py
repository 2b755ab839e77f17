"""Floor 0: predicted speedup by depth and concurrency, the best depth, and the crossover concurrency.

    speedup(k, B) = L(k) * t_step(B) / t_cycle(k, B)

(L tokens per cycle against one token per plain step). Its band combines the two bands at their
extremes: low = L_low * t_step / t_cycle_high, high = L_high * t_step / t_cycle_low. The best k at
an operating point is the one with the largest point speedup; `dominating` lists the depths whose
whole band lies above another depth's band (the gate's acceptance line warns with it) — the bands
without the counters' sampling, which every depth of one point shares (the same drafts move them alike).

The crossover concurrency is where the best depth's point speedup falls through 1 (gate.stats.fall_through),
interpolated linearly between the last concurrency that pays and the first that does not (null when no cost
data varies the concurrency, or when it never falls through).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gate.model.speedup.cost import CostKind, CycleModel
from gate.model.speedup.curves import AcceptanceCurve, Basis, model_statement
from gate.stats import fall_through


@dataclass(frozen=True)
class Prediction:
    """One (point, concurrency, k) cell."""

    point: str | None
    concurrency: int | None
    k: int
    acceptance_length: float
    acceptance_low: float
    acceptance_high: float
    acceptance_basis: Basis
    cycle_ms: float | None = None
    cycle_low_ms: float | None = None
    cycle_high_ms: float | None = None
    cost_basis: CostKind | None = None
    target_step_ms: float | None = None
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    draft_break_even_ms: float | None = None
    # The speedup band without the counters' sampling (shared by every depth of a point): what `dominating` compares.
    speedup_model_low: float | None = None
    speedup_model_high: float | None = None


@dataclass(frozen=True)
class Best:
    point: str | None
    concurrency: int | None
    k: int


@dataclass
class TuneResult:
    """Everything `specgate tune` reports."""

    points: list[Prediction]
    best: list[Best]
    crossover_concurrency: float | None
    assumptions: list[str]
    curves: list[AcceptanceCurve] = field(default_factory=list)
    models: list[CycleModel] = field(default_factory=list)

    def at(self, point: str | None, concurrency: int | None, k: int) -> Prediction | None:
        for p in self.points:
            if p.point == point and p.concurrency == concurrency and p.k == k:
                return p
        return None

    def groups(self) -> list[tuple[str | None, int | None]]:
        seen: list[tuple[str | None, int | None]] = []
        for p in self.points:
            if (p.point, p.concurrency) not in seen:
                seen.append((p.point, p.concurrency))
        return seen


# What the real-engine proof (tests/e2e/test_tune_vllm.py, vLLM 0.32 ngram on CPU, same requests at
# k = 1, 2, 3, 5) measured for "L(k') from a deeper run predicts a real run at k'". Stated with every
# L below a measured depth; update it with the proof.
DEPTH_PROOF = ("on real vLLM (tests/e2e/test_tune_vllm.py, same requests) L(k') computed from a k = 5 run differed "
               "from real runs at k' = 1, 2, 3 by -1.5 %, -2.1 %, -5.1 % for ngram (1.869/2.492/2.967 against "
               "1.897/2.546/3.127) and +0.1 %, -3.3 %, -1.9 % for suffix decoding (1.912/2.655/3.345 against "
               "1.910/2.744/3.411): more than 2 %, so L below the measured depth is exact for the run that was "
               "measured and an estimate (there: low) for a real run at that depth")
EXTRAPOLATION_PROOF = ("extrapolated L is a model, never a measurement; on real vLLM L(5) extrapolated from a k = 3 "
                       "run was 3.861 (band 3.707 .. 4.071) against 3.672 measured for ngram (+5.1 %) and 4.581 "
                       "(4.464 .. 4.714) against 4.425 for suffix decoding (+3.5 %): high, and below both bands")


def dominating(result: TuneResult, point: str | None, concurrency: int | None, k: int) -> list[Prediction]:
    """Depths whose predicted speedup band lies wholly above depth k's band at this operating point."""
    base = result.at(point, concurrency, k)
    if base is None or _model_band(base)[1] is None:
        return []
    top = _model_band(base)[1]
    return [p for p in result.points
            if p.point == point and p.concurrency == concurrency and p.k != k
            and (low := _model_band(p)[0]) is not None and top is not None and low > top]


def _model_band(p: Prediction) -> tuple[float | None, float | None]:
    """A prediction's band without the sampling every depth of its point shares (else its whole band)."""
    if p.speedup_model_low is not None and p.speedup_model_high is not None:
        return p.speedup_model_low, p.speedup_model_high
    return p.speedup_low, p.speedup_high


def _curve_for(curves: Sequence[AcceptanceCurve], point: str | None) -> AcceptanceCurve | None:
    """The curve of the same point, else the only curve there is."""
    same = [c for c in curves if c.point == point]
    if same:
        return same[0]
    return curves[0] if len(curves) == 1 else None


def draft_break_even(m: CycleModel, curve: AcceptanceCurve, k: int) -> float | None:
    """Where costs are declared at one k0: the draft step below which depth k beats k0.

        L(k) * t_step / (t_cycle(k0) + (k - k0) * d) > L(k0) * t_step / t_cycle(k0)
        <=>  d < t_cycle(k0) * (L(k) / L(k0) - 1) / (k - k0)        (k > k0; the inequality flips below k0)
    """
    if m.kind != "declared" or not m.measured:
        return None
    k0, c0 = m.measured[0][0], m.measured[0][1]
    a, a0 = curve.at(k), curve.at(k0)
    if k == k0 or a is None or a0 is None:
        return None
    return c0 * (a.acceptance_length / a0.acceptance_length - 1.0) / (k - k0)


def predict(curves: Sequence[AcceptanceCurve], models: Sequence[CycleModel], k_max: int,
            notes: Sequence[str] = ()) -> TuneResult:
    """Join acceptance by depth with cost by depth; without costs, acceptance alone (speedup null)."""
    assumptions = [model_statement(c) for c in curves] + [n for c in curves for n in c.notes]
    assumptions += [m.statement() for m in models] + list(notes)
    points: list[Prediction] = []
    if any(c.resolved and c.measured_k > 1 for c in curves):
        assumptions.append("L(k) below the measured depth is exact arithmetic on the counters; as a prediction of "
                           "a real run at that depth it assumes acceptance does not depend on where in a sequence "
                           "a step falls; " + DEPTH_PROOF)
    if any(c.resolved and max(p.k for p in c.points) > c.measured_k for c in curves):
        assumptions.append(EXTRAPOLATION_PROOF)
    used: set[int] = set()
    for m in models:
        curve = _curve_for(curves, m.point)
        if curve is None:
            assumptions.append(f"no acceptance counters match the cost point {m.point!r}: no speedup there")
            continue
        used.add(id(curve))
        if m.kind == "fitted" and m.draft_ms < 0:
            assumptions.append(f"{m.statement().split(':')[0]}: the fitted draft step is negative "
                               f"({m.draft_ms:.2f} ms): timing noise exceeds the draft's cost there")
        for a in curve.points:
            if a.k > k_max and a.k != curve.measured_k:
                continue
            c = m.cycle(a.k)
            points.append(Prediction(
                point=m.point if m.point is not None else curve.point, concurrency=m.concurrency, k=a.k,
                acceptance_length=a.acceptance_length, acceptance_low=a.low, acceptance_high=a.high,
                acceptance_basis=a.basis, cycle_ms=c.ms, cycle_low_ms=c.low_ms, cycle_high_ms=c.high_ms,
                cost_basis=c.kind, target_step_ms=m.target_step_ms,
                speedup=a.acceptance_length * m.target_step_ms / c.ms,
                speedup_low=a.low * m.target_step_ms / c.high_ms,
                speedup_high=a.high * m.target_step_ms / c.low_ms,
                draft_break_even_ms=draft_break_even(m, curve, a.k),
                speedup_model_low=None if a.model_low is None else a.model_low * m.target_step_ms / c.high_ms,
                speedup_model_high=None if a.model_high is None else a.model_high * m.target_step_ms / c.low_ms))
    for curve in curves:
        if id(curve) in used:
            continue
        for a in curve.points:
            if a.k > k_max and a.k != curve.measured_k:
                continue
            points.append(Prediction(point=curve.point, concurrency=None, k=a.k,
                                     acceptance_length=a.acceptance_length, acceptance_low=a.low,
                                     acceptance_high=a.high, acceptance_basis=a.basis))
        assumptions.append(f"no step costs for {curve.point or 'this acceptance'}: acceptance by depth only, "
                               "no speedup and no best depth")
    result = TuneResult(points=points, best=[], crossover_concurrency=None, assumptions=assumptions,
                        curves=list(curves), models=list(models))
    by_point: dict[str | None, list[tuple[int, float]]] = {}
    for point, conc in result.groups():
        cells = [p for p in points if p.point == point and p.concurrency == conc and p.speedup is not None]
        if not cells:
            continue
        top = max(cells, key=lambda p: (p.speedup or 0.0, -p.k))
        result.best.append(Best(point, conc, top.k))
        if conc is not None:
            by_point.setdefault(point, []).append((conc, top.speedup or 0.0))
    crossings = [x for x in (fall_through(v) for v in by_point.values() if len(v) >= 2) if x is not None]
    result.crossover_concurrency = min(crossings) if crossings else None
    if len(by_point) > 1 and crossings:
        result.assumptions.append("crossover_concurrency is the lowest over the operating points")
    return result

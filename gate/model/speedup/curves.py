"""Floor 0: acceptance length by speculation depth k, from one run's per-position counters.

Why no model is needed up to the measured depth: vLLM accepts drafted tokens prefix-wise
(position i counts only if positions 0..i-1 were accepted), so a depth-k run already says how
often the first k' <= k drafted tokens were all accepted:

    p_i   = accepted_i / drafts                       (i = 0 .. k-1)
    L(k') = 1 + sum_{i < k'} p_i                       (k' <= k; the 1 is the bonus token)

That is exact arithmetic on measured counters (basis `exact` for k' < k, `measured` for k' = k).
As a prediction of a real depth-k' run it holds as far as acceptance does not depend on where
in a sequence a step falls (a depth-k' run starts its steps at other positions); the real-engine
proof in tests/e2e/test_tune_vllm.py measures that.

Beyond k a model is needed (basis `extrapolated`, never shown as a measurement). The model is a
geometric decay of the conditional acceptance c_i = p_i / p_{i-1} (c_0 = p_0):

    r_j = c_j / c_{j-1}                                (j = 1 .. k-1, the measured decay ratios)
    c_i = min(1, c_{k-1} * r^(i-k+1)),  p_i = p_{i-1} * c_i     (i >= k)

with r the geometric mean of the measured r_j for the point estimate and the smallest and
largest r_j for the low and high ends of the band. With one measured position there is no ratio:
the point assumes the conditional stays at c_0 (r = 1) and the band runs from no further accepted
token (low: L stays L(1)) to that.

Where only L is known (SGLang's gauges, a probe cell) the depth cannot be resolved: the curve
holds the measured point alone.

When the depth varied in the run (issue 22; `varied_reason`: Δdraft_tokens < k · Δdrafts, a
drafterless method, a declared depth schedule) vLLM's p_i = accepted_i / drafts counts drafts that
never reached position i as misses there (gate.model.speedup.counters), so L(k') = 1 + Σ_{i<k'} p_i is a
**lower bound** of a fixed-depth run's L(k') (basis `lower_bound`, never `exact`): its band runs from
the sampling low up to the physical 1 + k', since the counters cannot say how much higher it is.
A draft model proposes exactly k every step (draft_tokens = k · drafts), so its run keeps `exact`.

Sampling (issue 21, item 8): the counters are a sample of drafts, so even the measured L has a band.
Each p_i is a binomial proportion (accepted_i of n drafts); its 95 % Wilson interval

    centre = (p + z²/2n) / (1 + z²/n),   half = z · sqrt(p(1 − p)/n + z²/4n²) / (1 + z²/n),   z = 1.96

never has zero width (one draft accepted in full is not "L = 1 + k for sure"), and L's band at k' is
the sum of its positions' ends (conservative: the positions are nested). Beyond the measured k the
decay band is widened by the measured depth's sampling half-widths. Fewer than `MIN_DRAFTS` drafts at
an operating point give no L(k) at all (TuneInputError): a handful of drafts says nothing about the next.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from gate.model.speedup.counters import CountersError, PositionCounters, pooled

__all__ = ["MIN_DRAFTS", "AcceptanceCurve", "Basis", "DepthAcceptance", "TuneInputError", "acceptance_curve",
           "conditional_rates", "curve_for_point", "model_statement", "varied_reason", "wilson"]

# "measured" (or "reported", for counters someone reported: PositionCounters.reported) at the run's own k.
Basis = Literal["measured", "reported", "exact", "lower_bound", "extrapolated"]

# Drafts an operating point's per-position counters need before tune states any L(k) (a 95 % Wilson band
# of one position is then at most ±0.1 wide).
MIN_DRAFTS = 100
# The normal quantile of the 95 % band.
Z_95 = 1.96


# Unusable tune input (one line, exit 3): the counters' error (gate.model.speedup.counters), under tune's name, so a
# bad counter read by the evidence layer and a bad tune flag are caught alike.
TuneInputError = CountersError


@dataclass(frozen=True)
class DepthAcceptance:
    """L at one depth, with its band (equal to it where the basis is exact, measured or reported)."""

    k: int
    acceptance_length: float
    low: float
    high: float
    basis: Basis
    # The band without the sampling part (the model's alone). Every depth of one curve shares the same drafts,
    # so comparing two depths of it (predict.dominating) compares these: the sampling moves both alike.
    model_low: float | None = None
    model_high: float | None = None


@dataclass(frozen=True)
class AcceptanceCurve:
    """L(k) for k = 1 .. k_max at one operating point, and how it was obtained."""

    point: str | None
    measured_k: int
    source: str
    resolved: bool
    conditional: tuple[float, ...]
    decay_ratio: float | None
    decay_ratio_low: float | None
    decay_ratio_high: float | None
    points: tuple[DepthAcceptance, ...]
    notes: tuple[str, ...] = field(default=())
    drafts: float | None = None  # drafts behind a resolved curve (its bands reflect them)
    varied: str | None = None  # why the run's depth varied (its L by depth is then a lower bound), None: fixed

    @property
    def own_basis(self) -> str:
        """How the run's own numbers came: "reported" where someone reported its counters, else "measured"."""
        return "reported" if any(p.basis == "reported" for p in self.points) else "measured"

    def at(self, k: int) -> DepthAcceptance | None:
        for p in self.points:
            if p.k == k:
                return p
        return None


def conditional_rates(rates: Sequence[float]) -> tuple[float, ...]:
    """c_0 = p_0, c_i = p_i / p_{i-1} (0 where the earlier position was never accepted)."""
    out: list[float] = []
    prev = 1.0
    for p in rates:
        out.append(p / prev if prev > 0 else 0.0)
        prev = p
    return tuple(out)


def wilson(successes: float, n: float, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion successes / n (module docstring)."""
    p = min(max(successes / n, 0.0), 1.0)
    denom = (n + z * z) / n  # 1 + z²/n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _extend(rates: Sequence[float], cond_last: float, ratio: float, upto: int) -> list[float]:
    """p_i for i = len(rates) .. upto-1 under c_i = min(1, c_last * ratio^(i-k+1))."""
    p = rates[-1]
    out: list[float] = []
    c = cond_last
    for _ in range(len(rates), upto):
        c = min(1.0, max(0.0, c * ratio))
        p = p * c
        out.append(p)
    return out


def at_own_k(reported: bool) -> Basis:
    """The basis of L at the depth the counters ran: reported stays reported, never "measured"."""
    return "reported" if reported else "measured"


def varied_reason(c: PositionCounters, declared: str | None = None) -> str | None:
    """Why `c` comes from a run whose depth varied: a reason the plan or the user declared (a drafterless
    method, a depth schedule), else the counters' own (`PositionCounters.depth_varied`); None: a fixed depth."""
    return declared or c.depth_varied


def acceptance_curve(c: PositionCounters, k_max: int, varied: str | None = None) -> AcceptanceCurve:
    """L(k) for k = 1 .. max(k_max, measured k): exact below the measured depth (a lower bound where the depth
    `varied`, that reason given), extrapolated above."""
    top = max(k_max, c.k)
    if not c.resolved:
        L = c.measured_length
        return AcceptanceCurve(
            point=c.point, measured_k=c.k, source=c.source, resolved=False, conditional=(),
            decay_ratio=None, decay_ratio_low=None, decay_ratio_high=None,
            points=(DepthAcceptance(c.k, L, L, L, at_own_k(c.reported)),),
            notes=(f"{c.source}: only the acceptance length is known (no per-position counters): "
                   f"depth cannot be resolved, L is known at the {at_own_k(c.reported)} k = {c.k} only",))
    if c.drafts < MIN_DRAFTS:
        at = f" at {c.point}" if c.point else ""
        raise TuneInputError(f"{c.source}: {c.drafts:g} drafts{at}; acceptance by depth needs at least {MIN_DRAFTS} "
                             "(a handful of drafts says nothing about the next)")
    rates = c.position_rates
    bands = [wilson(a, c.drafts) for a in c.accepted_per_position]
    cond = conditional_rates(rates)
    ratios = [cond[j] / cond[j - 1] for j in range(1, len(cond)) if cond[j - 1] > 0]
    notes: list[str] = []
    if ratios:
        r_mid = math.exp(sum(math.log(max(r, 1e-12)) for r in ratios) / len(ratios))
        r_lo, r_hi = min(ratios), max(ratios)
    else:
        r_mid, r_lo, r_hi = 1.0, 0.0, 1.0
        if top > c.k:
            notes.append(f"{c.source}: one measured position gives no decay ratio: beyond k = {c.k} the point "
                         "assumes constant conditional acceptance, the band runs from no further accepted token to that")
    if varied:
        notes.append(f"{varied}: per-position rates divide by every draft, including drafts that stopped short, so "
                     "L by depth is a lower bound (basis lower_bound, band up to 1 + k), not exact")
    pts: list[DepthAcceptance] = []
    cum = cum_lo = cum_hi = 1.0
    for i, p in enumerate(rates):
        cum += p
        cum_lo += bands[i][0]
        cum_hi += bands[i][1]
        k = i + 1
        if varied:
            pts.append(DepthAcceptance(k, cum, min(cum_lo, cum), 1.0 + k, "lower_bound", cum, 1.0 + k))
            continue
        pts.append(DepthAcceptance(k, cum, min(cum_lo, cum), max(cum_hi, cum), at_own_k(c.reported) if k == c.k else "exact",
                                   cum, cum))
    if top > c.k:
        ext = {name: _extend(rates, cond[-1], r, top) for name, r in (("mid", r_mid), ("lo", r_lo), ("hi", r_hi))}
        base = pts[-1].acceptance_length
        below, above = base - pts[-1].low, pts[-1].high - base  # the measured depth's sampling half-widths
        for j in range(top - c.k):
            kk = c.k + j + 1
            mid = base + sum(ext["mid"][: j + 1])
            m_lo = min(base + sum(ext["lo"][: j + 1]), mid)
            m_hi = max(base + sum(ext["hi"][: j + 1]), mid)
            pts.append(DepthAcceptance(kk, mid, max(1.0, m_lo - below), min(1.0 + kk, m_hi + above), "extrapolated",
                                       m_lo, m_hi))
    return AcceptanceCurve(point=c.point, measured_k=c.k, source=c.source, resolved=True, conditional=cond,
                           decay_ratio=r_mid if ratios else None, decay_ratio_low=r_lo if ratios else None,
                           decay_ratio_high=r_hi if ratios else None, points=tuple(pts), notes=tuple(notes),
                           drafts=c.drafts, varied=varied or None)


def model_statement(curve: AcceptanceCurve) -> str:
    """The extrapolation model in one line, with the fitted numbers (printed with every extrapolation)."""
    if not curve.resolved:
        ks = ", ".join(str(p.k) for p in curve.points)
        return f"{_where(curve)}: L known at the {curve.own_basis} k = {ks} only (no per-position counters)"
    cond = "/".join(f"{x:.3f}" for x in curve.conditional)
    sampled = (f"; L bands are 95 % Wilson intervals of each position's rate over the {curve.drafts:g} drafts "
               + curve.own_basis if curve.drafts is not None else "")
    return _decay_statement(curve, cond) + sampled


def _decay_statement(curve: AcceptanceCurve, cond: str) -> str:
    if curve.decay_ratio is None:
        return (f"{_where(curve)}: conditional acceptance c = {cond}; beyond k = {curve.measured_k}: constant c "
                "(point) down to no further acceptance (low) - one position gives no decay ratio")
    return (f"{_where(curve)}: conditional acceptance c_i = p_i/p_(i-1) = {cond}; beyond k = {curve.measured_k} "
            f"c decays geometrically by r = {curve.decay_ratio:.3f} per position (geometric mean of the {curve.own_basis} "
            f"ratios; band r = {curve.decay_ratio_low:.3f} .. {curve.decay_ratio_high:.3f}), c capped at 1")


def _where(curve: AcceptanceCurve) -> str:
    return f"acceptance at {curve.point}" if curve.point else "acceptance"


def curve_for_point(samples: Sequence[PositionCounters], point: str | None, k_max: int,
                    declared_varied: str | None = None) -> AcceptanceCurve:
    """One curve per operating point from every sample there.

    Per-position counters win (the deepest measured k, its windows summed; a lower bound where the depth varied,
    `varied_reason`). Without them (probe cells, SGLang) each measured k keeps its own measured L and nothing
    else is claimed.
    """
    resolved = [s for s in samples if s.resolved]
    if resolved:
        top = max(s.k for s in resolved)
        deepest = [s for s in resolved if s.k == top]
        counters = pooled(deepest, point, "; ".join(sorted({s.source for s in deepest})))
        varied = next((r for s in deepest if (r := varied_reason(s, declared_varied))), None)
        return acceptance_curve(counters, k_max, varied or counters.depth_varied)
    by_k: dict[int, list[PositionCounters]] = {}
    for s in samples:
        by_k.setdefault(s.k, []).append(s)
    pts = []
    for k in sorted(by_k):
        L = pooled(by_k[k], point, "").measured_length
        pts.append(DepthAcceptance(k, L, L, L, at_own_k(any(s.reported for s in by_k[k]))))
    source = "; ".join(sorted({s.source for s in samples}))
    ks = ", ".join(str(k) for k in sorted(by_k))
    return AcceptanceCurve(
        point=point, measured_k=max(by_k), source=source, resolved=False, conditional=(), decay_ratio=None,
        decay_ratio_low=None, decay_ratio_high=None, points=tuple(pts),
        notes=(f"{source}: only acceptance lengths (no per-position counters): depth cannot be resolved, "
               f"L is known at the {at_own_k(any(s.reported for s in samples))} k = {ks} only",))

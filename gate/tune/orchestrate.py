"""The one tune orchestrator: counters and costs in, a `TuneResult` out (`gate.tune.run`).

Why one: `specgate tune` (gate.commands.tune, every source it is given) and the gate's acceptance
line (gate.tune.advice, the plan's costs against the per-position evidence `gate.evidence.gather`
read) must give the same best k for the same plan. Both build `TuneInputs` and call `run`, which
groups the counters by operating point, draws one acceptance curve per point, fits or declares
the cycle costs and predicts — the grouping and the defaults live here once.

Pure: no file is read here (`gate.tune.inputs` reads for the command; the gate's evidence layer
for the check), so importing the checks never loads a reader through tune.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gate.evidence.positions import PositionCounters, PositionEvidence, point_name
from gate.model.depth import MAX_SPECULATIVE_DEPTH, VARIABLE_LENGTH_METHODS
from gate.model.speedup.cost import CostSample, DraftBand, cycle_models
from gate.model.speedup.curves import TuneInputError, curve_for_point
from gate.model.speedup.predict import TuneResult, predict
from gate.plan.model import Plan

# The deepest depth predicted unless asked (or the counters or the plan go deeper).
DEFAULT_K_MAX = 8


@dataclass
class TuneInputs:
    """Acceptance counters, cost samples and notes gathered from every source given."""

    counters: list[PositionCounters] = field(default_factory=list)
    costs: list[CostSample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plan_k: int | None = None
    # Why the plan says the depth varies (a drafterless method, a depth schedule): its counters' L by depth is then
    # a lower bound whatever they show (gate.model.speedup.curves.varied_reason).
    depth_varies: str | None = None
    # The speculative arms' `speculative` settings from their probe records (`--speculative-config` as recorded):
    # what `tune --emit vllm` merges its schedule over (gate.tune.emit).
    speculative_configs: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: TuneInputs) -> None:
        """Another source's inputs after these (the first plan's k is kept)."""
        self.counters += other.counters
        self.costs += other.costs
        self.notes += other.notes
        self.plan_k = self.plan_k or other.plan_k
        self.depth_varies = self.depth_varies or other.depth_varies
        self.speculative_configs += other.speculative_configs


# The acceptance basis a user may ask for (`specgate tune --basis`): exact is refused on a varying-depth run.
AskedBasis = Literal["exact", "lower_bound"]


def plan_depth_varies(plan: Plan) -> str | None:
    """Why the plan's run drafts a varying depth, or None: a variable-length method, or a depth schedule the engine
    runs that varies (gate.model.depth)."""
    if plan.method in VARIABLE_LENGTH_METHODS:
        return f"method {plan.method} proposes a variable number of draft tokens (up to k) per draft"
    schedule = plan.depth_reading.schedule
    if schedule is not None and schedule.varies:
        return f"the plan declares a depth schedule ({schedule.source}) that varies k"
    return None


def from_evidence(plan: Plan, positions: Sequence[PositionEvidence]) -> TuneInputs:
    """The plan's step costs against per-position evidence already read (a pure function).

    The first capture group without usable counters is a TuneInputError (which group, and why). Each
    cost is named by `gate.evidence.positions.point_name` (the acceptance line names its break-even
    points by the same rule) and priced at the depth its point's counters show, else the plan's k.
    """
    out = TuneInputs(plan_k=plan.depth, depth_varies=plan_depth_varies(plan))
    for pe in positions:
        if pe.counters is None:
            raise TuneInputError(pe.error or f"{pe.source}: no acceptance counters")
        out.counters.append(pe.counters)
    lengths = {c.point: c.measured_length for c in out.counters}
    ks = {c.point: c.k for c in out.counters}
    for i, c in enumerate(plan.costs):
        point = point_name(c, i)
        k = ks.get(point) or (next(iter(ks.values())) if len(ks) == 1 else None) or out.plan_k
        src = f"plan costs[{i}]" + (f" ({c.source})" if c.source else "")
        if k is None:
            raise TuneInputError(f"{src}: the depth k of this cost is unknown "
                                 "(engine.speculative.num_speculative_tokens or captures with per-position counters)")
        if c.verify_cycle_ms is not None and c.target_step_ms is not None:
            out.costs += [CostSample(point, None, 0, c.target_step_ms, src),
                          CostSample(point, None, k, c.verify_cycle_ms, src)]
            continue
        assert c.baseline_tokens_per_second is not None and c.speculative_tokens_per_second is not None
        length = c.acceptance_length or lengths.get(point) or (
            next(iter(lengths.values())) if len(lengths) == 1 else None)
        if length is None:
            out.notes.append(f"{src}: measured rates without an acceptance length: no cycle time there")
            continue
        # per-sequence rates: step = 1 / r_baseline, cycle = L / r_speculative (DESIGN.md, seed 004's cycleMs)
        out.costs += [CostSample(point, None, 0, 1000.0 / c.baseline_tokens_per_second, src),
                      CostSample(point, None, k, 1000.0 * length / c.speculative_tokens_per_second, src)]
    if out.plan_k is not None:
        for pc in out.counters:
            if pc.k != out.plan_k:
                out.notes.append(f"{pc.source}: counters show depth {pc.k}, the plan says k = {out.plan_k}")
    return out


def default_k_max(inputs: TuneInputs) -> int:
    """DEFAULT_K_MAX, or deeper where the counters or the plan's k are."""
    return max(DEFAULT_K_MAX, inputs.plan_k or 0, *(c.k for c in inputs.counters))


def run(inputs: TuneInputs, k_max: int | None = None, band: DraftBand | None = None,
        concurrency: Sequence[int] = (), basis: AskedBasis | None = None) -> TuneResult:
    """Predict speedup by depth for every operating point of `inputs` (TuneInputError when it cannot).

    `k_max`: the deepest depth predicted (default `default_k_max`); `band`: the declared draft-step
    band where costs are known at one k only; `concurrency`: report only these (tune never
    extrapolates in concurrency: a missing one is a note); `basis`: None = the basis the counters stand
    behind (exact on a fixed-depth run, lower_bound where the depth varied), "exact" = refuse a varying-depth
    run (TuneInputError, the reason in one line), "lower_bound" = label every L by depth a lower bound.
    """
    if not inputs.counters:
        raise TuneInputError("no acceptance counters in the sources (a plan needs evidence.captures)")
    notes = list(inputs.notes)
    deep = [c for c in inputs.counters if c.k > MAX_SPECULATIVE_DEPTH]
    if deep:
        raise TuneInputError(f"{deep[0].source}: counters at depth {deep[0].k}, deeper than any engine drafts "
                             f"(at most {MAX_SPECULATIVE_DEPTH})")
    top = k_max or default_k_max(inputs)
    if not 1 <= top <= MAX_SPECULATIVE_DEPTH:
        raise TuneInputError(f"k_max {top} is outside 1 .. {MAX_SPECULATIVE_DEPTH} (gate.model.depth."
                             "MAX_SPECULATIVE_DEPTH: no engine drafts deeper)")
    by_point: dict[str | None, list[PositionCounters]] = {}
    for c in inputs.counters:
        by_point.setdefault(c.point, []).append(c)
    said = inputs.depth_varies or ("--basis lower_bound asked" if basis == "lower_bound" else None)
    curves = [curve_for_point(v, p, top, said) for p, v in by_point.items()]
    varied = next((c for c in curves if c.varied), None)
    if basis == "exact" and varied is not None:
        raise TuneInputError(f"--basis exact refused: {varied.varied}; vLLM divides accepted per position by every "
                             "draft, so L by depth from this run is a lower bound (use --basis lower_bound)")
    costs = inputs.costs
    if concurrency:
        have = {c.concurrency for c in costs}
        missing = [b for b in concurrency if b not in have]
        costs = [c for c in costs if c.concurrency in set(concurrency)]
        if missing:
            notes.append("no cost data at concurrency " + ", ".join(map(str, missing))
                         + " (tune does not extrapolate in concurrency)")
    models = cycle_models(costs, band, notes)
    if band is not None:
        declared = any(m.kind == "declared" for m in models)
        notes.append(f"draft step band from {band.source}" if declared else
                     f"{band.source}: not used (costs were fitted at two or more k, or none given)")
    return predict(curves, models, top, notes)

"""Floor 0: the one tune orchestrator — counters and costs in, a `TuneResult` out (`run`).

Why one: `specgate tune` (gate.commands.tune, every source it is given) and the gate's acceptance
line (its depth advice, gate.model.speedup.advice, the plan's costs against the per-position evidence
`gate.evidence.gather` read) must give the same best k for the same plan. Both build `TuneInputs`
(the command from every source it reads, the line through `gate.evidence.positions.from_evidence`)
and call `run`, which groups the counters by operating point, draws one acceptance curve per point,
fits or declares the cycle costs and predicts — the grouping and the defaults live here once.

Pure: no file is read here, and nothing above floor 0 is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gate.model.depth import MAX_SPECULATIVE_DEPTH
from gate.model.speedup.context import ContextSample
from gate.model.speedup.cost import CostSample, DraftBand, cycle_models
from gate.model.speedup.counters import PositionCounters
from gate.model.speedup.curves import TuneInputError, curve_for_point
from gate.model.speedup.predict import TuneResult, predict

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
    # what `tune --emit vllm` merges its schedule over (a profile's `write_schedule`).
    speculative_configs: list[dict[str, Any]] = field(default_factory=list)
    # Each speculative probe record's (engine, method; None: unnamed): what `tune --emit` holds to the engine it
    # writes for (gate.model.invariants.emit_method, applicability).
    speculative_evidence: list[tuple[str | None, str | None]] = field(default_factory=list)
    # Issue 39: every probe cell of a known prompt length, for the context axis (gate.model.speedup.context).
    context: list[ContextSample] = field(default_factory=list)

    def add(self, other: TuneInputs) -> None:
        """Another source's inputs after these (the first plan's k is kept)."""
        self.counters += other.counters
        self.costs += other.costs
        self.notes += other.notes
        self.plan_k = self.plan_k or other.plan_k
        self.depth_varies = self.depth_varies or other.depth_varies
        self.speculative_configs += other.speculative_configs
        self.speculative_evidence += other.speculative_evidence
        self.context += other.context


# The acceptance basis a user may ask for (`specgate tune --basis`): exact is refused on a varying-depth run.
AskedBasis = Literal["exact", "lower_bound"]


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

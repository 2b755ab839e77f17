"""Floor 2: acceptance by draft position — per-position counters from capture pages, read once.

Why evidence and not a tune detail: the same capture files give the acceptance line its windows
(`gate.evidence.captures`) and tune its acceptance by depth. Read once by the evidence layer, both
see the same pages; the acceptance line's depth advice (`gate.model.speedup.advice`) is then a pure
function of these counters and the plan's costs, and the checks read no file. The counters' type and
their arithmetic (p_i, L(k), a depth that varied, pooling) are floor 0 (`gate.model.speedup.counters`);
here they are read from the pages.

Engines that give only L (SGLang's gauges) give no positions; their depth is then the *observed*
one, `observed_depth` = round(draft_tokens / drafts) — what the counters show, never the plan's
declared k (`gate.model.depth`, `Plan.depth`), which the two are compared against.

`from_evidence` turns a plan's costs and these counters into tune's inputs
(`gate.model.speedup.tune.TuneInputs`): one conversion for the acceptance line's depth advice and
`specgate tune --plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exporter.derive import derive_window
from exporter.engines.base import EngineSnapshot
from gate.model.depth import VARIABLE_LENGTH_METHODS
from gate.model.speedup.cost import CostSample
from gate.model.speedup.counters import CountersError, PositionCounters, pooled
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.tune import TuneInputs
from gate.plan.model import CaptureGroup, Plan, StepCost


def point_name(cost: StepCost, index: int) -> str:
    """The name of a plan's operating point `costs[index]`: its `point`, else its context, else its place.

    One rule for the acceptance line's break-even table and tune's cost samples, so a point's L* and
    its predicted speedup are keyed alike.
    """
    if cost.point:
        return cost.point
    if cost.context_tokens:
        return f"{cost.context_tokens:,} tokens"
    return f"point {index + 1}"


def capture_point_name(group: CaptureGroup, index: int, groups: int) -> str | None:
    """The operating point a plan's capture group `index` (of `groups`) measured: its `point`, else
    `captures N` when the plan has several groups (kept apart), else None (the plan's traffic)."""
    return group.point or (f"captures {index + 1}" if groups > 1 else None)


def observed_depth(draft_tokens: float | None, drafts: float | None) -> int | None:
    """The depth the counters show: draft tokens per draft, rounded (None when either is unknown or 0).

    Observed, not declared: a drafterless proposer may draft fewer than k tokens per round.
    """
    if draft_tokens is None or not drafts:
        return None
    return round(draft_tokens / drafts)


def counters_between(before: EngineSnapshot, after: EngineSnapshot, point: str | None,
                     source: str) -> list[PositionCounters]:
    """Per-position counters of every speculating stream over one window (exporter.derive)."""
    out: list[PositionCounters] = []
    for w in derive_window(before, after, min_drafts=1):
        if not w.has_spec:
            continue
        if w.reset:
            raise CountersError(f"{source}: the engine restarted between the captures; that window is no evidence")
        if not w.drafts:
            continue
        total = sum(w.accepted_per_position)
        if w.accepted_per_position and w.accepted_tokens is not None and abs(total - w.accepted_tokens) > max(
                0.5, 1e-6 * w.accepted_tokens):  # both count the same accepted tokens (vLLM increments them together)
            raise CountersError(f"{source}: the per-position counters sum to {total:g} accepted tokens, the total "
                                f"counter says {w.accepted_tokens:g}: contradictory counters, no acceptance by depth")
        if w.accepted_per_position:
            out.append(PositionCounters(point, len(w.accepted_per_position), w.drafts,
                                        tuple(w.accepted_per_position), source, draft_tokens=w.draft_tokens))
        elif w.acceptance_length is not None:
            out.append(PositionCounters(point, max(observed_depth(w.draft_tokens, w.drafts) or 1, 1), w.drafts, (),
                                        source, acceptance_length=w.acceptance_length))
    return out


def counters_from_snapshots(snaps: Sequence[EngineSnapshot], point: str | None, source: str) -> PositionCounters:
    """Windows between consecutive pages (in time order), summed into one sample; CountersError when none moved."""
    if len(snaps) < 2:
        raise CountersError("--captures needs BEFORE and AFTER (two capture files in time order)")
    found: list[PositionCounters] = []
    for b, a in zip(snaps, snaps[1:], strict=False):
        found += counters_between(b, a, point, source)
    if not found:
        raise CountersError(f"{source}: no speculative-decoding counters moved between the captures")
    return pooled(found, point, source)


@dataclass(frozen=True)
class PositionEvidence:
    """One capture group's acceptance by position: its pooled counters, or why there are none."""

    point: str | None
    source: str
    counters: PositionCounters | None = None
    error: str | None = None
    # The same counters window by window (consecutive pages), before pooling: whether the per-position rates stay
    # constant across windows is the capture fingerprint of simulated acceptance (gate.checks.acceptance.fingerprint).
    windows: tuple[PositionCounters, ...] = ()

    @classmethod
    def of(cls, snaps: Sequence[EngineSnapshot], point: str | None, source: str) -> PositionEvidence:
        try:
            per_window = tuple(c for b, a in zip(snaps, snaps[1:], strict=False)
                               for c in counters_between(b, a, point, source))
            return cls(point, source, counters=counters_from_snapshots(snaps, point, source), windows=per_window)
        except CountersError as e:
            return cls(point, source, error=str(e))


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
    """The plan's step costs against per-position evidence already read, as tune's inputs (a pure function):
    what the acceptance line's depth advice and `specgate tune --plan` both run.

    The first capture group without usable counters is a TuneInputError (which group, and why). Each
    cost is named by `point_name` (the acceptance line names its break-even points by the same rule)
    and priced at the depth its point's counters show, else the plan's k.
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

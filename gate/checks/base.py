"""What every budget line is given: one `CheckContext` per evaluation, read-only.

Why one context: each line (`gate/checks/<line>.py`) is `check(ctx) -> LineResult` and holds its
whole rule — which evidence wins, what is n/a, what is inconclusive — so a line can be read, tested
and changed in one module. The context is built once by `gate.verdict.evaluate` from the plan, the local
artifacts (`gate.bill.facts`), the memory bill (`gate.bill.budget`) and the gathered evidence
(`gate.evidence`); the lines never fetch anything themselves and know nothing of the faces (CLI,
HTTP gate, controller) that asked.

What several sub-checks read is computed at most once per context, when first asked: the acceptance
line's view of its windows (`acceptance_evidence`, read by five of its sub-checks) and the depth advice
(`depth_advice`, tune's predictor on floor 0, gate.model.speedup).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from gate.bill.budget import Budget
from gate.bill.facts import ArtifactFacts
from gate.evidence.base import MetricsEvidence
from gate.evidence.gather import ClusterEvidence
from gate.evidence.positions import from_evidence
from gate.evidence.previous import RevisionChanges
from gate.model.speedup.advice import DepthAdvice, depth_advice
from gate.model.speedup.curves import TuneInputError
from gate.plan.model import Plan

if TYPE_CHECKING:
    from gate.checks.acceptance.windows import LineEvidence


@dataclass(frozen=True)
class CheckContext:
    """One evaluation's inputs: the plan and phase, artifact facts, the bill, and the evidence."""

    plan: Plan
    phase: str
    facts: ArtifactFacts
    budget: Budget
    metrics: MetricsEvidence = field(default_factory=MetricsEvidence)
    cluster: ClusterEvidence | None = None
    previous: RevisionChanges | None = None  # `--previous RECORD`: what changed since the last run record

    @cached_property
    def acceptance_evidence(self) -> LineEvidence:
        """The acceptance line's eligible windows, pooled L and L* (gate.checks.acceptance.windows.gather)."""
        from gate.checks.acceptance.windows import gather  # the line's module imports this one

        return gather(self)

    @cached_property
    def depth_advice(self) -> DepthAdvice | None:
        """The plan's k against tune's best k on the per-position evidence (None: nothing to say); evidence that
        cannot become tune's inputs is a note, never an error."""
        try:
            inputs = from_evidence(self.plan, self.metrics.positions)
        except TuneInputError as e:
            return DepthAdvice.not_tuned(None, e)
        return depth_advice(inputs)

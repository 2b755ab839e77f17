"""What every budget line is given: one `CheckContext` per evaluation, read-only.

Why one context: each line (`gate/checks/<line>.py`) is `check(ctx) -> LineResult` and holds its
whole rule — which evidence wins, what is n/a, what is inconclusive — so a line can be read, tested
and changed in one module. The context is built once by `gate.verdict.evaluate` from the plan, the local
artifacts (`gate.bill.facts`), the memory bill (`gate.bill.budget`) and the gathered evidence
(`gate.evidence`); the lines never fetch anything themselves and know nothing of the faces (CLI,
HTTP gate, controller) that asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gate.bill.budget import Budget
from gate.bill.facts import ArtifactFacts
from gate.evidence.base import MetricsEvidence
from gate.evidence.gather import ClusterEvidence
from gate.evidence.previous import RevisionChanges
from gate.plan.model import Plan


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

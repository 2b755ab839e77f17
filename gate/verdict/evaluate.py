"""One entry point for every front end: `evaluate(plan, phase, ...) -> Verdict`.

Why one function: the CLI (`specgate check`), the HTTP gate (Argo/Flagger) and the
controller must judge a plan identically. It only orchestrates: read the local artifacts
(`gate.bill.facts`), gather the evidence (`gate.evidence.gather`), bill the memory
(`gate.bill.pool.bill`), run the five lines (`gate/checks/<line>.py`, each
`check(ctx) -> LineResult`), apply the decision rule (`gate.verdict.verdict`) and write the run record
(`gate.verdict.record`). Every rule lives in one of those modules, none here. Invalid input raises
PlanError; an unreachable or empty evidence source makes the affected line inconclusive,
never a pass.

Phases (design.md "Two phases"): `pre` judges everything static plus any canary or
captured evidence; `post` requires the live per-window SLO over the plan's lookback.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from gate.bill.facts import artifact_facts
from gate.bill.pool import bill
from gate.checks import CHECKS, LINES
from gate.checks.base import CheckContext
from gate.evidence.base import Progress
from gate.evidence.gather import gather_kube, gather_metrics, request_for
from gate.evidence.previous import PreviousRecord, against
from gate.plan.model import Plan, PlanError
from gate.status import decide
from gate.verdict.record import build as build_record
from gate.verdict.verdict import Verdict

PHASES = ("pre", "post")

def evaluate(plan: Plan, phase: str = "pre", metrics: Iterable[str] = (), prometheus: str | None = None,
             allow_inconclusive: bool = False, *, kube_client: Any = None, progress: Progress | None = None,
             sleep: Callable[[float], None] = time.sleep, wait: bool = True,
             previous: PreviousRecord | None = None) -> Verdict:
    """Judge a plan. Raises PlanError for invalid input; everything else ends in a Verdict.

    `wait=False` (the HTTP gate) never sleeps for a new window: a plain engine URL is then
    inconclusive; exporter and Prometheus sources answer from their history at once.
    """
    if phase not in PHASES:
        raise PlanError(f"phase must be one of {'|'.join(PHASES)}, got {phase!r}")
    facts = artifact_facts(plan)
    ev = gather_metrics(plan, phase, metrics, prometheus,
                        request_for(plan, progress=progress, sleep=sleep, wait=wait))
    cluster = gather_kube(plan, kube_client)
    changes = against(previous, plan) if previous is not None else None  # InputError: not this plan's record
    ctx = CheckContext(plan=plan, phase=phase, facts=facts, budget=bill(plan, facts, ev), metrics=ev,
                       cluster=cluster, previous=changes)
    checks = {line: CHECKS[line](ctx) for line in LINES}
    decision = decide([r.status for r in checks.values()])
    digest = cluster.found.image_digest if cluster is not None and cluster.found is not None else None
    record = build_record(plan, phase, decision.value, ctx.budget, ev, image_digest=digest, facts=facts)
    return Verdict(decision=decision, phase=phase, checks=checks, run_record=record,
                   allow_inconclusive=allow_inconclusive, plan_name=plan.name)


class Evaluator(Protocol):
    """What the services call: `evaluate` with their evidence flags, returning a Verdict."""

    def __call__(self, plan: Plan, *, phase: str, metrics: Iterable[str],
                 prometheus: str | None) -> Verdict: ...


def service_evaluator(**fixed: Any) -> Evaluator:
    """`evaluate` with `wait=False` for the HTTP gate and the controller: never sleep for a new window
    inside a request or a reconcile (exporter and Prometheus history answer at once)."""
    ev: Evaluator = functools.partial(evaluate, wait=False, **fixed)
    return ev

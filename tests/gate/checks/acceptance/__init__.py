"""Tests of the acceptance line (gate/checks/acceptance/): the folded line and each sub-check.

`judge` builds the line's context the way `gate.verdict.evaluate` does — the evidence gathered once
(windows and errors as given, the plan's probe records read by `gate.evidence.probes`) — so a test
states its evidence and never reaches past the evidence layer.
"""

from __future__ import annotations

import dataclasses

from gate.checks import acceptance
from gate.evidence.base import AcceptanceWindow, MetricsEvidence
from gate.evidence.fleet.cohorts import CohortEvidence
from gate.evidence.fleet.table import FleetResult
from gate.evidence.probes import gather_probes
from gate.plan.model import Plan
from gate.status import LineResult
from tests.gate.helpers import context


def judge(plan: Plan, phase: str, windows: list[AcceptanceWindow], errors: list[str],
          fleet: FleetResult | None = None, cohort_evidence: CohortEvidence | None = None) -> LineResult:
    ev = MetricsEvidence(windows=list(windows), errors=list(errors), fleet=fleet, cohorts=cohort_evidence,
                         probes=gather_probes(plan.evidence.probes))
    return acceptance.check(dataclasses.replace(context(plan, phase), metrics=ev))

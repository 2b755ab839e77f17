"""The fleet rule: each pod's verdict from its row's facts, the fleet's from the pods' (design.md "Prometheus evidence").

Why here and not in the evidence: sources return facts and rows, never verdicts (design.md "Floors").
The Prometheus source (gate.evidence.fleet) builds one row per pod (`gate.evidence.base.FleetRowFacts`:
windows, met, excluded windows, why the row is not evidence); the acceptance line's per-window SLO
sub-check (gate.checks.acceptance.window_slo) judges them here:

- a pod: inconclusive when its row is not this plan's evidence, there is no target, a window is
  non-finite, its acceptance is impossible at the plan's depth, it has fewer than `slo.min_windows`
  evidence windows, its restart status is unknown, or (`require_engine_up`, post) its engine is not
  known to be up; else `gate.status.window_slo_status` (the rule every stream is judged by) — fail
  when the share at L ≥ target is below `slo.required_fraction`, even with the caveats after it;
- the fleet: `gate.status.fleet_status` over the pods' statuses and the pods `fleet.expected_pods`
  counted but not seen; more pods than expected is inconclusive (naming them) unless it already
  fails; a table whose last window is not recent is inconclusive, whatever the rows.

`FleetVerdict.to_json()` is the fleet's JSON view (`checks.acceptance.values.fleet`, rendered for
people by gate.evidence.fleet.render): the table's columns with each pod's status and reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.evidence.base import FleetFacts, FleetRowFacts
from gate.evidence.fleet.collect import NAMED
from gate.plan.model import SLO, FleetRule
from gate.status import Status, fleet_status, window_slo_status


@dataclass(frozen=True)
class PodVerdict:
    """One row of the table with its status and one sentence saying why."""

    facts: FleetRowFacts
    status: Status
    reason: str

    @property
    def pod(self) -> str:
        return self.facts.pod

    def to_json(self) -> dict[str, Any]:
        out = self.facts.to_json()
        out["status"] = self.status.value
        out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class FleetVerdict:
    """Every pod's verdict and the fleet's under the plan's rule, with the table they were judged on."""

    facts: FleetFacts
    rule: FleetRule
    rows: tuple[PodVerdict, ...]
    missing_pods: int
    status: Status
    reason: str
    counts: dict[str, int]

    def failed(self) -> list[PodVerdict]:
        return [r for r in self.rows if r.status is Status.FAIL]

    def inconclusive(self) -> list[PodVerdict]:
        return [r for r in self.rows if r.status is Status.INCONCLUSIVE]

    def named(self, limit: int = 10) -> str:
        """The pods that did not pass, by name (failed first), at most `limit` of each kind."""
        parts = []
        for what, rows in (("failed", self.failed()), ("inconclusive", self.inconclusive())):
            if rows:
                shown = ", ".join(f"{r.pod} ({r.reason})" for r in rows[:limit])
                more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
                parts.append(f"{what}: {shown}{more}")
        if self.missing_pods:
            parts.append(f"{self.missing_pods} expected pod(s) sent no series at all")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        f = self.facts
        return {"source": f.source, "selector": f.selector, "rule": self.rule.model_dump(mode="json"),
                "window_seconds": f.window_seconds, "lookback_seconds": f.lookback_seconds, "end": f.end,
                "status": self.status.value, "reason": self.reason, "counts": self.counts,
                "missing_pods": self.missing_pods, "queries": f.queries, "seconds": f.seconds,
                "path": f.path, "path_reason": f.path_reason, "pods": [r.to_json() for r in self.rows]}


def judge_pod(row: FleetRowFacts, slo: SLO, *, require_engine_up: bool) -> PodVerdict:
    """One pod's status and reason: the caveats in the order the module docstring lists them."""
    target = slo.target_acceptance_length
    unknown = list(row.not_evidence)
    if target is None:
        unknown.append("no acceptance-length target")
    slo_st = (window_slo_status(row.windows, row.met, min_windows=slo.min_windows,
                                required_fraction=slo.required_fraction)
              if target is not None and not unknown else None)
    if non_finite := row.excluded.get("non_finite", 0):
        unknown.append(f"{non_finite} window(s) with a non-finite or negative count")
    if row.implausible is not None:
        unknown.append(f"not evidence: {row.implausible}")
        slo_st = None
    if slo_st is Status.FAIL:
        return PodVerdict(row, Status.FAIL, "; ".join(
            [f"{row.met}/{row.windows} windows ≥ {target:g}, required {slo.required_fraction:g}", *unknown]))
    if slo_st is Status.INCONCLUSIVE:
        unknown.append(f"{row.windows} evidence window(s), fewer than min_windows {slo.min_windows}")
    if row.restarts_unknown:
        unknown.append("restart status unknown (no restarts series)")
    if require_engine_up and row.engine_up is not True:
        unknown.append("engine down at the end of the lookback" if row.engine_up is False
                       else "engine state unknown (no engine_up series at the end)")
    if unknown:
        return PodVerdict(row, Status.INCONCLUSIVE, "; ".join(unknown))
    return PodVerdict(row, Status.PASS, f"{row.met}/{row.windows} windows ≥ {target:g}")


def judge_fleet(facts: FleetFacts, slo: SLO, rule: FleetRule, *, require_engine_up: bool) -> FleetVerdict:
    """Every pod judged on its own (`judge_pod`), then the fleet by `rule` (one pass over the rows)."""
    rows = tuple(judge_pod(r, slo, require_engine_up=require_engine_up) for r in facts.rows)
    failed = sum(1 for r in rows if r.status is Status.FAIL)
    incon = sum(1 for r in rows if r.status is Status.INCONCLUSIVE)
    passed = len(rows) - failed - incon
    pods = sorted({r.pod for r in rows})
    pods_seen = len(pods)
    missing = max((rule.expected_pods or 0) - pods_seen, 0)
    status, reason = fleet_status(failed, incon, passed, missing, max_failed_fraction=rule.max_failed_fraction,
                                  max_inconclusive_fraction=rule.max_inconclusive_fraction)
    if rule.expected_pods is not None and pods_seen > rule.expected_pods and status is not Status.FAIL:
        shown = ", ".join(pods[:NAMED]) + (f" and {pods_seen - NAMED} more" if pods_seen > NAMED else "")
        status, reason = Status.INCONCLUSIVE, (
            f"{pods_seen} pods answered, more than fleet.expected_pods {rule.expected_pods}: the selector matches "
            f"pods it should not ({shown})")
    if facts.not_recent is not None:
        status, reason = Status.INCONCLUSIVE, f"not evidence: {facts.not_recent}"
    return FleetVerdict(facts=facts, rule=rule, rows=rows, missing_pods=missing, status=status, reason=reason,
                        counts={"pods": pods_seen, "rows": len(rows), "pass": passed, "fail": failed,
                                "inconclusive": incon, "missing": missing})

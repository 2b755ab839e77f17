"""The answer a service gives about a plan: decision, phase, and each line's status and reason.

Why one type: the HTTP gate (Argo's web metric, Flagger's webhook) and the controller (its
decision annotation and Events) answer the same question from the same `Verdict`; building
the answer once here keeps them saying the same thing, and keeps the controller from importing
the HTTP module. An evaluation that failed, timed out or returned nonsense is one answer too
(`GateAnswer.failed`): every line inconclusive with the reason — never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gate.checks import LINES
from gate.status import Decision, Status
from gate.verdict.verdict import Verdict

# Statuses that let a rollout go on: a line's reason is shown only for the others.
PASSING: frozenset[Status] = frozenset({Status.PASS, Status.NA, Status.WARN})


@dataclass(frozen=True)
class LineAnswer:
    status: Status
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"status": self.status.value, "reason": self.reason}


@dataclass(frozen=True)
class GateAnswer:
    """design.md's `check` JSON cut to what a caller needs (`to_json`: decision, phase, checks, deployment)."""

    decision: Decision
    phase: str
    checks: dict[str, LineAnswer] = field(default_factory=dict)
    deployment: str | None = None

    @classmethod
    def from_verdict(cls, verdict: Verdict, deployment: str | None = None) -> GateAnswer:
        return cls(verdict.decision, verdict.phase,
                   {line: LineAnswer(r.status, r.reason) for line, r in verdict.checks.items()}, deployment)

    @classmethod
    def failed(cls, phase: str, reason: str, deployment: str | None = None) -> GateAnswer:
        """What an unfinished or failed evaluation means: every line inconclusive with one reason."""
        return cls(Decision.INCONCLUSIVE, phase,
                   {line: LineAnswer(Status.INCONCLUSIVE, reason) for line in LINES}, deployment)

    def for_deployment(self, deployment: str) -> GateAnswer:
        return replace(self, deployment=deployment)

    @property
    def passed(self) -> bool:
        return self.decision is Decision.PASS

    def line_statuses(self) -> dict[str, str]:
        return {line: a.status.value for line, a in self.checks.items()}

    def reasons(self) -> list[str]:
        """`line: status — reason` for every line that did not pass: what Flagger and Events show."""
        return [f"{line}: {a.status.value} — {a.reason}" for line, a in self.checks.items()
                if a.status not in PASSING]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision.value, "phase": self.phase,
                               "checks": {line: a.to_json() for line, a in self.checks.items()}}
        if self.deployment is not None:
            out["deployment"] = self.deployment
        return out


def answer_of(result: Any, phase: str) -> GateAnswer:
    """An evaluator's return value as an answer; anything but a Verdict is a failed evaluation."""
    if isinstance(result, Verdict):
        return GateAnswer.from_verdict(result)
    return GateAnswer.failed(phase, f"evaluator returned {type(result).__name__}, not a verdict")

"""Floor 5: the gate's whole answer for a plan (`Verdict`): decision, per-line results, run record.

The statuses, the decision rule and the exit codes it applies are floor-0 rules in `gate.status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.status import Decision, LineResult, exit_code
from gate.verdict.record import RunRecord


@dataclass
class Verdict:
    """The gate's whole answer: decision, per-line results and the run record."""

    decision: Decision
    phase: str
    checks: dict[str, LineResult]
    run_record: RunRecord
    allow_inconclusive: bool = False
    plan_name: str | None = None

    @property
    def exit_code(self) -> int:
        return exit_code(self.decision, self.allow_inconclusive)

    @property
    def inconclusive_allowed(self) -> bool:
        """True when the decision is inconclusive and --allow-inconclusive turned it into exit 0."""
        return self.allow_inconclusive and self.decision is Decision.INCONCLUSIVE

    def to_json(self) -> dict[str, Any]:
        """design.md's `check` shape; `allow_inconclusive` says whether exit 2 was turned into 0."""
        return {
            "decision": self.decision.value,
            "phase": self.phase,
            "checks": {line: r.to_json() for line, r in self.checks.items()},
            "run_record": self.run_record.to_json(),
            "allow_inconclusive": self.allow_inconclusive,
        }

"""Line statuses, the decision rule and exit codes (design.md "The gate").

Why one module: the CLI, the HTTP gate and the controller must all decide the same way,
so the rule (any fail -> fail; else any inconclusive -> inconclusive; else pass; `warn`
and `n/a` count as pass) and the exit codes live here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - the record module is not needed to decide
    from gate.record import RunRecord

LINES: tuple[str, ...] = ("artifacts", "kv_pool", "acceptance", "staging", "codesign")

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_INCONCLUSIVE = 2
EXIT_INVALID = 3


class Status(StrEnum):
    """What one budget line found."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    NA = "n/a"


class Decision(StrEnum):
    """The gate's answer for a whole plan."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class LineResult:
    """One budget line: its status, one sentence saying why, and the numbers used.

    `values` is the JSON view of the line's typed internals (each line's `check` docstring lists
    its keys); it is what `--format json` prints under `checks.<line>.values`.
    """

    status: Status
    reason: str
    values: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status.value, "reason": self.reason, "values": self.values}


def combine(statuses: list[Status]) -> Status:
    """Worst of several sub-results inside one line: fail > inconclusive > warn > pass > n/a."""
    order = [Status.FAIL, Status.INCONCLUSIVE, Status.WARN, Status.PASS, Status.NA]
    for s in order:
        if s in statuses:
            return s
    return Status.NA


def decide(statuses: list[Status]) -> Decision:
    """Any fail -> fail; else any inconclusive -> inconclusive; else pass (warn and n/a pass)."""
    if Status.FAIL in statuses:
        return Decision.FAIL
    if Status.INCONCLUSIVE in statuses:
        return Decision.INCONCLUSIVE
    return Decision.PASS


def exit_code(decision: Decision, allow_inconclusive: bool = False) -> int:
    """0 pass, 1 fail, 2 inconclusive (0 with --allow-inconclusive)."""
    if decision is Decision.PASS:
        return EXIT_PASS
    if decision is Decision.FAIL:
        return EXIT_FAIL
    return EXIT_PASS if allow_inconclusive else EXIT_INCONCLUSIVE


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

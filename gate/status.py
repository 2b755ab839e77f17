"""Floor 0: line statuses, the decision rule, exit codes and the two SLO rules (no I/O, no plan).

Why one leaf module: the CLI, the HTTP gate and the controller must all decide the same way, and
the evidence layer (the fleet's per-pod verdicts) and the checks (the acceptance line's
per-stream judgement) must apply the same per-window SLO. Everything here imports nothing of the
gate, so any floor may use it and no cycle can close through it.

- `combine`: worst of several sub-results inside one line, fail > inconclusive > warn > pass > n/a;
- `decide`: any fail -> fail; else any inconclusive -> inconclusive; else pass (warn, n/a pass);
- exit codes: 0 pass, 1 fail, 2 inconclusive (0 with --allow-inconclusive), 3 invalid input
  (`exporter.exits.EXIT_INVALID`, shared with the exporter's commands);
- `window_slo_status`: a stream holds the per-window SLO when L ≥ target in at least
  `required_fraction` of its evidence windows, with at least `min_windows` of them;
- `fleet_status`: fail when the failed share exceeds `max_failed_fraction`; else inconclusive when
  the inconclusive share (pods expected but not seen counted in) exceeds
  `max_inconclusive_fraction`, or no pod passed; else pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from exporter.exits import EXIT_INVALID

__all__ = ["EXIT_FAIL", "EXIT_INCONCLUSIVE", "EXIT_INVALID", "EXIT_PASS", "Decision", "InputError",
           "LineResult", "Status", "combine", "decide", "exit_code", "fleet_status", "window_slo_status"]

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_INCONCLUSIVE = 2


class InputError(ValueError):
    """Invalid input (a plan, a config, a file, a flag): one line for the user, exit 3, never a traceback."""


class Status(StrEnum):
    """What one budget line (or one finding inside it) found."""

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


# Worst first: the order `combine` applies.
SEVERITY: tuple[Status, ...] = (Status.FAIL, Status.INCONCLUSIVE, Status.WARN, Status.PASS, Status.NA)


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
    for s in SEVERITY:
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


def window_slo_status(windows: int, met: int, *, min_windows: int, required_fraction: float) -> Status:
    """The per-window SLO over `windows` evidence windows of which `met` reached the target."""
    if windows < min_windows:
        return Status.INCONCLUSIVE
    return Status.PASS if met / windows >= required_fraction else Status.FAIL


def fleet_status(failed: int, inconclusive: int, passed: int, missing: int, *,
                 max_failed_fraction: float, max_inconclusive_fraction: float) -> tuple[Status, str]:
    """The fleet's status and one sentence; `missing` pods were expected but sent nothing."""
    judged = failed + inconclusive + passed
    total = judged + missing
    if total == 0:
        return Status.INCONCLUSIVE, "no pod matched the selector"
    unknown = inconclusive + missing
    f_share, u_share = failed / total, unknown / total
    counts = f"{passed} pass, {failed} fail, {inconclusive} inconclusive" + (
        f", {missing} expected but not seen" if missing else "") + f" of {total} pods"
    if failed and f_share > max_failed_fraction:
        return Status.FAIL, f"{counts}: failed share {f_share:.1%} > allowed {max_failed_fraction:.1%}"
    if unknown and u_share > max_inconclusive_fraction:
        return Status.INCONCLUSIVE, (f"{counts}: inconclusive share {u_share:.1%} > allowed "
                                     f"{max_inconclusive_fraction:.1%}")
    if passed == 0:
        return Status.INCONCLUSIVE, f"{counts}: no pod passed"
    return Status.PASS, f"{counts}: within the rule (failed ≤ {max_failed_fraction:.1%}, " \
                        f"inconclusive ≤ {max_inconclusive_fraction:.1%})"

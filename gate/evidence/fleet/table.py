"""The per-pod table and the fleet result, as typed data with their JSON view.

One row per pod (per model and drafter revision when the plan groups by them): how many windows
were evidence, how many met the target, the below-SLO share, the pooled L, the restarts and the
engine state, the row's verdict and one sentence saying why. JSON key order is field order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from exporter import formulas
from gate.status import Status


@dataclass(frozen=True)
class PodRow:
    """One pod's (or one pod-and-model's) verdict over the lookback."""

    pod: str
    labels: dict[str, str]
    model: str | None
    windows: int
    met: int
    drafts: float
    below_slo_share: float | None
    acceptance_length: float | None
    min_acceptance_length: float | None
    acceptance_rate: float | None
    restarts: float | None
    engine_up: bool | None
    excluded: dict[str, int]
    status: Status
    reason: str

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value
        return out


@dataclass(frozen=True)
class FleetCost:
    """Where one fleet evaluation's time went (shown by bench/fleet.py, never part of a verdict or its JSON):
    `answers_seconds` until every query was answered and read (the queries run in parallel), of which
    `read_seconds` (summed over the query threads) placing the answers' points on the grid, and
    `judge_seconds` building the rows and the fleet verdict from them."""

    answers_seconds: float
    read_seconds: float
    judge_seconds: float


@dataclass(frozen=True)
class FleetResult:
    """Every row, the fleet's verdict under the plan's rule, and what it cost to get."""

    source: str
    selector: str
    rule: dict[str, Any]
    window_seconds: int
    lookback_seconds: int
    end: float
    rows: tuple[PodRow, ...]
    missing_pods: int
    status: Status
    reason: str
    queries: int
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    cost: FleetCost | None = field(default=None, compare=False)

    def failed(self) -> list[PodRow]:
        return [r for r in self.rows if r.status is Status.FAIL]

    def inconclusive(self) -> list[PodRow]:
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

    def pooled_length(self) -> float | None:
        """Drafts-weighted L over every row's evidence windows."""
        return formulas.pooled_length((r.acceptance_length, r.drafts) for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "selector": self.selector, "rule": self.rule,
                "window_seconds": self.window_seconds, "lookback_seconds": self.lookback_seconds, "end": self.end,
                "status": self.status.value, "reason": self.reason, "counts": self.counts,
                "missing_pods": self.missing_pods, "queries": self.queries, "seconds": self.seconds,
                "pods": [r.to_json() for r in self.rows]}

"""The per-pod table and the fleet's facts, as typed data: what a Prometheus-API backend said, never a verdict.

One row per pod (per model and drafter revision when the plan groups by them): how many windows
were evidence, how many met the target, the below-SLO share, the pooled L, the restarts and the
engine state, and the facts that keep a row from being evidence (`not_evidence`, `implausible`,
`restarts_unknown`). The rows are judged by the acceptance line (gate.checks.acceptance.fleet_rule:
each pod by the per-window SLO, the fleet by the plan's rule), which also writes their JSON view
with each pod's status and reason. The rows satisfy `gate.evidence.base.FleetRowFacts`, the table
`gate.evidence.base.FleetFacts`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from exporter import formulas


@dataclass(frozen=True)
class PodRow:
    """One pod's (or one pod-and-model's) facts over the lookback.

    `not_evidence`: why the row's windows are not this plan's evidence, in the order found (no pod label, no
    drafts series, no model label, answered twice, pods pooled, two values at one timestamp, another model);
    `implausible`: why its acceptance is impossible at the plan's depth (gate.model.plausibility), None when
    possible; `restarts_unknown`: it has drafts windows but no restarts series (a restart would go unseen).
    """

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
    not_evidence: tuple[str, ...] = ()
    implausible: str | None = None
    restarts_unknown: bool = False

    def to_json(self) -> dict[str, Any]:
        """The table's columns (the judge adds the row's status and reason after them)."""
        return {"pod": self.pod, "labels": dict(self.labels), "model": self.model, "windows": self.windows,
                "met": self.met, "drafts": self.drafts, "below_slo_share": self.below_slo_share,
                "acceptance_length": self.acceptance_length, "min_acceptance_length": self.min_acceptance_length,
                "acceptance_rate": self.acceptance_rate, "restarts": self.restarts, "engine_up": self.engine_up,
                "excluded": dict(self.excluded)}


@dataclass(frozen=True)
class FleetCost:
    """Where one fleet evaluation's time went (shown by bench/fleet.py, never part of a verdict or its JSON):
    `answers_seconds` until every query was answered and read (the queries run in parallel), of which
    `read_seconds` (summed over the query threads) placing the answers' points on the grid, and
    `rows_seconds` building the rows from them."""

    answers_seconds: float
    read_seconds: float
    rows_seconds: float


@dataclass(frozen=True)
class FleetResult:
    """Every row, what was asked (source, selector, grid), whether the table is recent, and what it cost to get.

    `not_recent`: why the table's last window is not recent evidence (gate.model.plausibility.recency), None
    when it is; `seconds`: the evaluation's wall time, queries to rows; `path`: which answers the rows come from."""

    source: str
    selector: str
    window_seconds: int
    lookback_seconds: int
    end: float
    rows: tuple[PodRow, ...]
    queries: int
    seconds: float
    not_recent: str | None = None
    cost: FleetCost | None = field(default=None, compare=False)
    path: str = "raw"  # "recorded": the mixin's per-pod window facts (gate.evidence.fleet.recorded); "raw": ranges
    path_reason: str | None = None  # why the raw path was taken, or what the recorded path checked

    def pooled_length(self) -> float | None:
        """Drafts-weighted L over every row's evidence windows."""
        return formulas.pooled_length((r.acceptance_length, r.drafts) for r in self.rows)

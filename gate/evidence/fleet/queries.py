"""The fixed set of PromQL queries one fleet evaluation sends, whatever the number of pods.

Why this shape: per window only drafts and accepted tokens are needed in full (two range queries);
restarts come back sparse (`> 0`: only the windows that had one); everything else is one instant
query over the lookback (the lookback's drafts, accepted and draft tokens give the pod's L and a
together, for the plausibility check). Ten queries for 10 pods or 10,000 (nine without the targets
count when `pod` and `instance` are both row labels). Every row is the pod labels and the group
labels, and the ranks of one pod pool into one row; `model` is always one of the row labels
(whatever `group_by` says), so a row of another model, or of none, can be told from the plan's own.
Exporter-level series (`specgate_engine_up`) carry no `model`/`rank`: their selector drops matchers
on stream labels. One more instant query counts the scrape targets (`pod`, `instance`) behind each
row: a `pod_labels` that pools several pods into one row shows there (issue 21; only such rows are
answered). Metric names come from `exporter.names`.

Who pools the ranks, and why a pre-flight (`series_per_row`, one instant query answering one number:
the most stream series behind one row): instant queries are always `sum by` the row labels. The
range queries are `sum by` them too (`pooled`) when some row has several series (DP ranks), so the
answer holds one series per row; when every row is one series they ask for the series as they are
(`unpooled()`) and the gate adds up a row's series step by step itself
(`gate.evidence.fleet.collect`) — the same numbers, without the backend's aggregation: Prometheus
2.42 groups every series again at every step, which at 5,000 pods and 60 windows was ~0.5 s of the
server's CPU per range query (measured, docs/scale.md), while `increase(x[60s])` alone took ~0.2 s.
A series the pre-flight did not see (one that stopped before the end) is still pooled by the gate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from exporter import names

MODEL_LABEL = "model"  # the stream label naming the served model (exporter.names.STREAM_LABELS)
TARGET_LABELS = ("pod", "instance")  # what names one scrape target: two values in one row = pods pooled

# One label matcher: name, operator, quoted value (escapes kept as written).
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*(?:,|$)')

Kind = Literal["range", "instant"]


@dataclass(frozen=True)
class Query:
    """One query of the set: `key` names it in the results."""

    key: str
    kind: Kind
    promql: str


def matchers(selector: str | None) -> list[tuple[str, str, str]] | None:
    """`a="x",b=~"y"` (braces optional) as (name, op, quoted value) triples; None when it does not parse."""
    sel = (selector or "").strip()
    if sel.startswith("{") and sel.endswith("}"):
        sel = sel[1:-1].strip()
    out: list[tuple[str, str, str]] = []
    pos = 0
    while pos < len(sel):
        m = _MATCHER.match(sel, pos)
        if m is None or m.end() == pos:
            return None
        out.append((m.group(1), m.group(2), m.group(3)))
        pos = m.end()
    return out


def selector(*parts: str | None, drop: tuple[str, ...] = ()) -> str:
    """Braces around the joined matchers of `parts`; matchers on `drop` labels left out where parsable."""
    kept: list[str] = []
    for part in parts:
        ms = matchers(part)
        if ms is None:
            raw = (part or "").strip()
            kept.append(raw[1:-1].strip() if raw.startswith("{") and raw.endswith("}") else raw)
            continue
        kept += [f"{n}{op}{v}" for n, op, v in ms if n not in drop]
    return "{" + ",".join(k for k in kept if k) + "}"


@dataclass(frozen=True)
class FleetQueries:
    """The queries for one fleet: a selector, the row labels, the window and the lookback (whole seconds)."""

    selector: str
    pod_labels: tuple[str, ...]
    group_by: tuple[str, ...]
    window_seconds: int
    lookback_seconds: int
    pooled: bool = True  # range queries `sum by` the row labels (False: one series per stream, pooled by the gate)

    @cached_property
    def row_labels(self) -> tuple[str, ...]:
        """pod_labels, then group_by, then `model` when neither names it (always queried; cached: every row
        reads it)."""
        out = [*self.pod_labels, *(g for g in self.group_by if g not in self.pod_labels)]
        if MODEL_LABEL not in out:
            out.append(MODEL_LABEL)
        return tuple(out)

    @property
    def target_labels(self) -> tuple[str, ...]:
        """The scrape-target labels that are not row labels (counted per row by the `targets` query)."""
        return tuple(t for t in TARGET_LABELS if t not in self.row_labels)

    def series_per_row(self) -> Query:
        """The most stream series behind one row at the end (the pre-flight that picks the range queries' form)."""
        by = ", ".join(self.row_labels)
        return Query("series_per_row", "instant", f"max(count by ({by}) ({names.SPEC_DRAFTS.series}{self.selector}))")

    def unpooled(self) -> FleetQueries:
        """The same set with the range queries asking for every stream series (pooled by the gate)."""
        return FleetQueries(self.selector, self.pod_labels, self.group_by, self.window_seconds, self.lookback_seconds,
                            pooled=False)

    def ranges(self) -> list[Query]:
        """Per-window drafts and accepted tokens, and the windows with a restart (sparse: `> 0`)."""
        by = ", ".join(self.row_labels)
        w, sel = self.window_seconds, self.selector
        if not self.pooled:
            # increase() >= 0, so "the row's sum > 0" is "any of its series > 0": the same windows as pooled
            return [
                Query("drafts", "range", f"increase({names.SPEC_DRAFTS.series}{sel}[{w}s])"),
                Query("accepted", "range", f"increase({names.SPEC_ACCEPTED.series}{sel}[{w}s])"),
                Query("resets", "range", f"increase({names.ENGINE_RESTARTS.series}{sel}[{w}s]) > 0"),
            ]
        return [
            Query("drafts", "range", f"sum by ({by}) (increase({names.SPEC_DRAFTS.series}{sel}[{w}s]))"),
            Query("accepted", "range", f"sum by ({by}) (increase({names.SPEC_ACCEPTED.series}{sel}[{w}s]))"),
            Query("resets", "range", f"sum by ({by}) (increase({names.ENGINE_RESTARTS.series}{sel}[{w}s])) > 0"),
        ]

    def all(self) -> list[Query]:
        return [*self.ranges(), *self.instants()]

    def instants(self) -> list[Query]:
        """The lookback's restarts, drafts, accepted and draft tokens per row, engine_up per pod, the targets."""
        by = ", ".join(self.row_labels)
        pod_by = ", ".join(self.pod_labels)
        lb, sel = self.lookback_seconds, self.selector
        exporter_sel = selector(sel, drop=names.STREAM_LABELS)
        return [
            Query("restarts", "instant", f"sum by ({by}) (increase({names.ENGINE_RESTARTS.series}{sel}[{lb}s]))"),
            Query("drafts_lookback", "instant",
                  f"sum by ({by}) (increase({names.SPEC_DRAFTS.series}{sel}[{lb}s]))"),
            Query("accepted_lookback", "instant",
                  f"sum by ({by}) (increase({names.SPEC_ACCEPTED.series}{sel}[{lb}s]))"),
            Query("draft_tokens", "instant",
                  f"sum by ({by}) (increase({names.SPEC_DRAFT_TOKENS.series}{sel}[{lb}s]))"),
            Query("engine_up", "instant", f"min by ({pod_by}) ({names.ENGINE_UP.series}{exporter_sel})"),
            *self.targets(),
        ]

    def targets(self) -> list[Query]:
        """The rows with more than one scrape target at the end (they pool several pods). Sparse (`> 1`): a row
        behind one target is only ever read as "not pooled", which its absence says as well, and a full answer
        would be one more ~130 B a row (issue 40)."""
        if not self.target_labels:
            return []
        by = ", ".join(self.row_labels)
        inner = ", ".join((*self.row_labels, *self.target_labels))
        return [Query("targets", "instant",
                      f"count by ({by}) (count by ({inner}) ({names.SPEC_DRAFTS.series}{self.selector})) > 1")]

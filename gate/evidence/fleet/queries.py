"""The fixed set of PromQL queries one fleet evaluation sends, whatever the number of pods.

Why this shape: per window only drafts and accepted tokens are needed in full (two range queries);
restarts come back sparse (`> 0`: only the windows that had one); everything else is one instant
query over the lookback (the lookback's drafts, accepted and draft tokens give the pod's L and a
together, for the plausibility check). Nine queries for 10 pods or 5,000 (eight without the targets count when `pod` and `instance` are both row labels). Every row is `sum by` the pod labels
and the group labels, so the ranks of one pod pool into one row; `model` is always one of the row
labels (whatever `group_by` says), so a row of another model, or of none, can be told from the
plan's own. Exporter-level series (`specgate_engine_up`) carry no `model`/`rank`: their selector
drops matchers on stream labels. One more instant query counts the scrape targets (`pod`,
`instance`) behind each row: a `pod_labels` that pools several pods into one row shows there
(issue 21). Metric names come from `exporter.names`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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

    @property
    def row_labels(self) -> tuple[str, ...]:
        """pod_labels, then group_by, then `model` when neither names it (always queried)."""
        out = [*self.pod_labels, *(g for g in self.group_by if g not in self.pod_labels)]
        if MODEL_LABEL not in out:
            out.append(MODEL_LABEL)
        return tuple(out)

    @property
    def target_labels(self) -> tuple[str, ...]:
        """The scrape-target labels that are not row labels (counted per row by the `targets` query)."""
        return tuple(t for t in TARGET_LABELS if t not in self.row_labels)

    def all(self) -> list[Query]:
        by = ", ".join(self.row_labels)
        pod_by = ", ".join(self.pod_labels)
        w, lb, sel = self.window_seconds, self.lookback_seconds, self.selector
        exporter_sel = selector(sel, drop=names.STREAM_LABELS)
        return [
            Query("drafts", "range", f"sum by ({by}) (increase({names.SPEC_DRAFTS.series}{sel}[{w}s]))"),
            Query("accepted", "range", f"sum by ({by}) (increase({names.SPEC_ACCEPTED.series}{sel}[{w}s]))"),
            Query("resets", "range", f"sum by ({by}) (increase({names.ENGINE_RESTARTS.series}{sel}[{w}s])) > 0"),
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
        """Scrape targets per row at the end: more than one means the row pools several pods."""
        if not self.target_labels:
            return []
        by = ", ".join(self.row_labels)
        inner = ", ".join((*self.row_labels, *self.target_labels))
        return [Query("targets", "instant",
                      f"count by ({by}) (count by ({inner}) ({names.SPEC_DRAFTS.series}{self.selector}))")]

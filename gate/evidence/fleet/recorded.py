"""The fleet's recorded path: per-pod window facts the mixin records, asked for as one value per pod (issue 40).

Why: the raw path's two range answers hold pods × windows points (~600,000 at 10,000 pods and 60 windows), and
encoding, sending and decoding them is most of a verdict's time (docs/scale.md). The mixin's group
`specgate.fleet-facts` (deploy/mixin/rules.libsonnet) records, once per window of the plan's `slo.window_seconds`
and per pod (ranks pooled), whether the window was eligible, whether it met the target, whether a count was
non-finite, its eligible drafts and accepted tokens and its L; here instant queries over the lookback ask the backend
for their sums, counts and extremes — one value per pod and query, whatever the number of windows.

When the recorded facts are not this plan's, the raw range queries are used instead and the reason is kept
(`Fallback`): the rule group's interval is not the plan's window (read from the backend's rules API where it lists
the group), no facts carry the plan's window, target and min_drafts (labels of every fact), a row is answered by
several recorded series, the facts do not cover the lookback (recording began after its start, or an interval that
is not the window: too few or too many samples a row), or the selector names `rank` (the facts pool ranks). Recorded
answers go through the same client as raw ones: the same bounds and the same completeness rule (a partial answer is
an error, `gate.evidence.intake.answer`), and in post only windows that ended within the lookback of now are asked
for (the same staleness rule as the raw path's `stale`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from exporter import names
from gate.evidence.base import EvidenceError
from gate.evidence.fleet.queries import FleetQueries, Query, matchers, selector
from gate.evidence.intake import answer as complete

# The recorded facts' names are the output contract's (exporter/names.py), at one address.
PREFIX = names.FLEET_FACT_PREFIX
DRAFTS = names.FLEET_DRAFTS_RULE
ELIGIBLE = names.FLEET_ELIGIBLE_RULE
MET = names.FLEET_MET_RULE
NON_FINITE = names.FLEET_NON_FINITE_RULE
ELIGIBLE_DRAFTS = names.FLEET_ELIGIBLE_DRAFTS_RULE
ELIGIBLE_ACCEPTED = names.FLEET_ELIGIBLE_ACCEPTED_RULE
LENGTH = names.FLEET_LENGTH_RULE
RULES_PATH = "/api/v1/rules"
COUNT_LABEL = "specgate_count"  # tags each count's sum apart inside the one `rec_counts` query (never a row label)


@runtime_checkable
class RulesClient(Protocol):
    """A client that can fetch any API path (gate.evidence.prometheus.PromClient.fetch): the rules API's answer is
    not a query result."""

    def fetch(self, path: str, params: dict[str, Any]) -> tuple[int, bytearray]: ...


class Fallback(Exception):
    """Why the recorded facts are not this plan's evidence: the raw range queries are used instead."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.answers: Any = None  # answers already in hand (gate.evidence.fleet.collect reuses the shared instants)


def fact_matchers(window_seconds: int, target: float | None, min_drafts: float) -> str:
    """The labels every recorded fact carries (the mixin's ffLabels), as matchers for the plan's numbers."""
    if target is None:
        raise Fallback("the plan has no acceptance-length target to match the recorded facts' slo_target")
    return (f'slo_window_seconds="{window_seconds}",slo_target="{target:g}",'
            f'slo_min_drafts="{max(min_drafts, 1.0):g}"')


def check_rules(client: object, window_seconds: int, facts: str) -> str:
    """What the backend's rules API says of the group that records this plan's facts: raises Fallback when its
    interval is not the window; returns a note for the verdict (the group's interval checked, or why the data alone
    are checked: the API did not answer or lists no such group, e.g. VictoriaMetrics without vmalert)."""
    if not isinstance(client, RulesClient):
        return "rules API not asked; the interval is checked by the samples per row"
    try:
        status, body = client.fetch(RULES_PATH, {"type": "record"})
    except EvidenceError as e:
        return f"rules API not answered ({e}); the interval is checked by the samples per row"
    try:
        doc = json.loads(body) if status == 200 else None
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        return f"rules API answered HTTP {status} without a success; the interval is checked by the samples per row"
    partial = complete(doc, "the rules API")
    if partial is not None:
        raise Fallback(partial)
    data = doc.get("data")
    groups = data.get("groups") if isinstance(data, dict) else None
    wanted = dict(m[0:3:2] for m in matchers(facts) or [])  # name -> quoted value
    for g in groups if isinstance(groups, list) else []:
        rules = g.get("rules") if isinstance(g, dict) else None
        for r in rules if isinstance(rules, list) else []:
            labels = r.get("labels") if isinstance(r, dict) else None
            if not isinstance(labels, dict) or r.get("name") != DRAFTS:
                continue
            if any(json.dumps(str(labels.get(n, ""))) != v for n, v in wanted.items()):
                continue
            interval = g.get("interval")
            if not isinstance(interval, (int, float)) or abs(float(interval) - window_seconds) > 1e-6:
                raise Fallback(f"the rule group {g.get('name')!r} that records {DRAFTS} is evaluated every "
                               f"{interval}s, not every window of the plan ({window_seconds}s): its facts are not "
                               "windows of the plan's SLO")
            return f"rule group {g.get('name')!r} evaluated every {window_seconds}s, the plan's window"
    return "the rules API lists no group recording this plan's facts; the interval is checked by the samples per row"


def base(steps: int) -> int:
    """The radix the four window counts are packed in (`queries`): one more than the most windows a row can count,
    so each count is one digit. Fallback when four digits do not fit a float64's exact integers (2^53)."""
    k = steps + 1
    if k**4 > 2**53:
        raise Fallback(f"{steps} windows are too many to count in one recorded answer (at most 9,740)")
    return k


@dataclass(frozen=True)
class Counts:
    """One row's window counts over the lookback, unpacked from the `rec_counts` answer."""

    windows: int
    eligible: int
    met: int
    non_finite: int


def unpack(x: float, k: int) -> Counts | None:
    """The four counts packed as `eligible + k·met + k²·non_finite + k³·windows`, or None unless the answer is a
    whole number below 2^53 whose digits are possible counts (met <= eligible, eligible + non_finite <= windows).
    The windows are the top digit, never cut at k: a fact recorded more often than once a window shows as more
    windows than the lookback has (`coverage`); a count that was not a whole number (a fact that is not 0 or 1)
    shows as a number that is not whole, or as digits that cannot be counts."""
    if not (math.isfinite(x) and 0 <= x < 2**53 and x == int(x)):
        return None
    n = int(x)
    eligible, met, non_finite, windows = n % k, n // k % k, n // k**2 % k, n // k**3
    if met > eligible or eligible + non_finite > windows:
        return None
    return Counts(windows, eligible, met, non_finite)


def queries(q: FleetQueries, facts: str, range_seconds: int, k: int) -> list[Query]:
    """One instant query per fact over the last `range_seconds`: one value per row (or one number). The window
    counts (windows, eligible, met, non-finite: whole numbers up to the lookback's windows) come back as one value
    a row in radix `k` (`unpack`): each sum tagged with its own label, so a row without one of the facts adds
    nothing for it (as a missing count is 0), then summed by the row labels — one answer instead of four, the
    same rows (issue 40: every answer is ~130 B of row labels a row)."""
    ms = matchers(q.selector)
    if ms is None or any(name == "rank" for name, _, _ in ms):
        raise Fallback("the selector names rank (or does not parse): the recorded facts pool a pod's ranks")
    sel = selector(q.selector, facts)
    by = ", ".join(q.row_labels)
    # one millisecond short of the windows: one sample a window whatever the group's evaluation offset (Prometheus 2's
    # range selector holds its left end too, VictoriaMetrics' does not: the same samples either way)
    r = f"[{max(range_seconds * 1000 - 1, 1)}ms]"

    def over(key: str, agg: str, fn: str, name: str) -> Query:
        return Query(key, "instant", f"{agg} by ({by}) ({fn}({name}{sel}{r}))")

    def digit(fn: str, name: str, fact: str, scale: int) -> str:
        return f'label_replace({scale} * {fn}({name}{sel}{r}), "{COUNT_LABEL}", "{fact}", "", "")'

    counts = " or ".join([f"sum_over_time({ELIGIBLE}{sel}{r})", digit("sum_over_time", MET, "met", k),
                          digit("sum_over_time", NON_FINITE, "non_finite", k**2),
                          digit("count_over_time", DRAFTS, "windows", k**3)])
    return [
        Query("rec_series_per_row", "instant", f"max(count by ({by}) (last_over_time({DRAFTS}{sel}{r})))"),
        Query("rec_counts", "instant", f"sum by ({by}) ({counts})"),
        over("rec_drafts", "sum", "sum_over_time", ELIGIBLE_DRAFTS),
        over("rec_accepted", "sum", "sum_over_time", ELIGIBLE_ACCEPTED),
        over("rec_min_length", "min", "min_over_time", LENGTH),
        over("rec_max_length", "max", "max_over_time", LENGTH),
    ]


def coverage(counts: dict[Any, Counts | None], series_per_row: float, steps: int) -> None:
    """Fallback unless some row was answered, every row is one recorded series, none holds more samples than the
    lookback's windows and some row holds them all (the facts cover the lookback at one sample a window)."""
    if not counts:
        raise Fallback("no recorded facts carry the plan's window, target and min_drafts (deploy the mixin's "
                       f"{names.FLEET_FACTS_GROUP} group with them, or backfill it: docs/scale.md)")
    if series_per_row > 1:
        raise Fallback(f"{series_per_row:g} recorded series behind one row: the row labels pool several pods' or "
                       "ranks' facts")
    most = max((c.windows for c in counts.values() if c is not None), default=0)
    if most > steps:
        raise Fallback(f"{most:g} recorded samples in one row for {steps} windows: the facts are recorded more "
                       "often than once a window")
    if most < steps:
        raise Fallback(f"the recorded facts cover at most {most:g} of the lookback's {steps} windows (recording began "
                       "after the lookback's start: backfill it, or wait one lookback; docs/scale.md)")

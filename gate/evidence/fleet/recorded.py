"""The fleet's recorded path: per-pod window facts the mixin records, asked for as one value per pod (issue 40).

Why: the raw path's two range answers hold pods × windows points (~600,000 at 10,000 pods and 60 windows), and
encoding, sending and decoding them is most of a verdict's time (docs/scale.md). The mixin's group
`specgate.fleet-facts` (deploy/mixin/rules.libsonnet) records, once per window of the plan's `slo.window_seconds`
and per pod (ranks pooled), the windows that were not eligible, those eligible but below the target and those with
a non-finite count (each recorded only where true, so a healthy pod has no such series: the gate derives eligible =
windows - not eligible - non-finite and met = eligible - below), its eligible drafts and accepted tokens and its L;
here instant queries over the lookback ask the backend for their sums, counts and extremes — one value per pod and
query, whatever the number of windows. The lookback's
drafts, accepted and draft tokens are sums of the recorded windows too (`TOTALS`): a backend's CPU follows the
samples it reads, one a window here against one a scrape in the raw counters.

When the recorded facts are not this plan's, the raw range queries are used instead and the reason is kept
(`Fallback`): the rule group's interval is not the plan's window (read from the backend's rules API where it lists
the group), no facts carry the plan's window, target and min_drafts (labels of every fact), a row is answered by
several recorded series, the facts do not cover the lookback (recording began after its start, or an interval that
is not the window: too few or too many samples a row), or the selector names `rank` (the facts pool ranks). Recorded
answers go through the same client as raw ones: the same bounds and the same completeness rule (a partial answer is
an error, `gate.evidence.intake.answer`), and in post only windows that ended within the lookback of now are asked
for (the same staleness rule as the raw path's `stale`).

Why one query per fact, not fewer, larger ones: what a backend spends on an answer is evaluating it (about 0.1 s of
Prometheus 2.42's CPU and 0.05 s of VictoriaMetrics 1.79's per query over 5,000 pods' hour, measured one query at a
time), not encoding its ~130 B a row (under 0.02 s for 660 kB). The four counts packed into one value a row (digits
of radix windows + 1, summed through `or` of tagged series, or added as vectors) cost each backend more than the
four queries it replaced (Prometheus 0.60 / 0.48 s against 0.45 s; VictoriaMetrics 0.32 / 0.25 s against 0.21 s).
"""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

from exporter import names
from gate.evidence.base import EvidenceError
from gate.evidence.fleet.queries import FleetQueries, Query, matchers, selector
from gate.evidence.intake import answer as complete

# The recorded facts' names are the output contract's (exporter/names.py), at one address.
PREFIX = names.FLEET_FACT_PREFIX
DRAFTS = names.FLEET_DRAFTS_RULE
NOT_ELIGIBLE = names.FLEET_NOT_ELIGIBLE_RULE
BELOW_TARGET = names.FLEET_BELOW_TARGET_RULE
NON_FINITE = names.FLEET_NON_FINITE_RULE
ELIGIBLE_DRAFTS = names.FLEET_ELIGIBLE_DRAFTS_RULE
ELIGIBLE_ACCEPTED = names.FLEET_ELIGIBLE_ACCEPTED_RULE
LENGTH = names.FLEET_LENGTH_RULE
# The lookback's drafts, accepted and draft tokens on this path: sums of the row's recorded windows, answered under
# the raw instants' keys. Not the restarts: on Prometheus a counter's step between two windows' samples is in no
# window and a window's increase is extrapolated (one restart reads 0 or 2), and the row reports the count as a fact.
TOTALS = {"rec_drafts_lookback": ("drafts_lookback", DRAFTS),
          "rec_accepted_lookback": ("accepted_lookback", names.FLEET_ACCEPTED_RULE),
          "rec_draft_tokens": ("draft_tokens", names.FLEET_DRAFT_TOKENS_RULE)}
RULES_PATH = "/api/v1/rules"
WINDOWS = "rec_windows"  # the one answer read per recorded series (gate.evidence.fleet.collect.per_series)


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


def queries(q: FleetQueries, facts: str, range_seconds: int) -> list[Query]:
    """One instant query per fact over the last `range_seconds`: one value per row (or one number); the lookback's
    drafts, accepted and draft tokens too (`TOTALS`: sums of the recorded windows, one sample a window, where the raw
    counters over the lookback read every scrape: half the samples at a 30 s scrape and 60 s window). Only L and a
    over the lookback (the plausibility check) are read from them: a ratio, which the windows' extrapolation keeps."""
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

    return [
        # per recorded series, not `sum by` the rows: the gate adds up each row's windows and counts its series from
        # this one answer, where a pre-flight (`max(count by (...) (last_over_time(...)))`) read every sample again
        Query(WINDOWS, "instant", f"count_over_time({DRAFTS}{sel}{r})"),
        # sparse (recorded only where true): no answer row is 0 of them; the windows answer holds the row
        over("rec_not_eligible", "sum", "sum_over_time", NOT_ELIGIBLE),
        over("rec_below_target", "sum", "sum_over_time", BELOW_TARGET),
        over("rec_non_finite", "sum", "sum_over_time", NON_FINITE),
        over("rec_drafts", "sum", "sum_over_time", ELIGIBLE_DRAFTS),
        over("rec_accepted", "sum", "sum_over_time", ELIGIBLE_ACCEPTED),
        over("rec_min_length", "min", "min_over_time", LENGTH),
        over("rec_max_length", "max", "max_over_time", LENGTH),
        *(over(key, "sum", "sum_over_time", rule) for key, (_, rule) in TOTALS.items()),
    ]


def coverage(windows: dict[Any, float], series_per_row: float, steps: int) -> None:
    """Fallback unless every row is one recorded series, none holds more samples than the lookback's windows and
    some row holds them all (the facts cover the lookback at one sample a window)."""
    if not windows:
        raise Fallback("no recorded facts carry the plan's window, target and min_drafts (deploy the mixin's "
                       f"{names.FLEET_FACTS_GROUP} group with them, or backfill it: docs/scale.md)")
    if series_per_row > 1:
        raise Fallback(f"{series_per_row:g} recorded series behind one row: the row labels pool several pods' or "
                       "ranks' facts")
    most = max(windows.values())
    if most > steps:
        raise Fallback(f"{most:g} recorded samples in one row for {steps} windows: the facts are recorded more often "
                       "than once a window")
    if most < steps:
        raise Fallback(f"the recorded facts cover at most {most:g} of the lookback's {steps} windows (recording began "
                       "after the lookback's start: backfill it, or wait one lookback; docs/scale.md)")

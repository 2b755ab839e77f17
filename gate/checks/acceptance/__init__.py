"""Budget line 3, acceptance: is a target set above break-even, is it held per batch window, does it pay?

The line is eleven sub-checks, one module each, every one `sub(ctx: CheckContext) -> Finding`
(gate.checks.acceptance.finding), folded in the order of `SUBCHECKS` by `check`: the worst status
(`gate.status.combine`), the sentences joined, the values keys in order. They read no file: the
windows, fleet, cohorts, probe records and per-position counters are evidence gathered once
(`gate.evidence.gather` onto `ctx.metrics`). "Does it pay" is decided in one place,
`gate.checks.acceptance.verdicts`.

Why per window and against L*: seed 002 asks for an acceptance-length target set before
rollout and then held per batch, not as a lifetime mean; seed 004 shows the arithmetic —
speculation pays iff L > L* = t_cycle / t_target_step. So (issue 10):

- no target before rollout → **fail** ("seed 002: set an acceptance-length target before
  rollout"); a target that does not exceed a known L* → **fail** (a window meeting it would not
  pay); a target above 1 + k never reaches here (invalid plan, gate.plan.model);
- the target's source (`slo.target_source`: your traffic, a benchmark such as the drafter
  card's macro mean, a guess) is shown, or the reason says none was given;
- measured L at or below measured L* at any point → **fail** ("speculation does not pay at …",
  both numbers). With measured rates L* = L · r_baseline / r_speculative, so this is exactly
  "the speculative arm is slower per sequence" (`pays`);
- windows that are reset, or whose restart status is unknown, are never evidence;
- two-arm served-rate samples (seed 000) go through gate.checks.acceptance.served_rate: observed
  min–max labelled as such, an exact one-sided Mann-Whitney p against `slo.alpha`; they
  decide only when the plan sets `min_speedup`;
- in `--phase post` with `evidence.prometheus.cohorts: {canary, stable}`, the canary cohort
  against the stable one over the same window (gate.checks.acceptance.cohorts): a canary significantly
  slower **fails**, significantly faster on TPOT and tokens/s passes, anything else (a load
  mismatch, too few windows, no stable data) is inconclusive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gate.checks.acceptance import (
    card,
    cohorts,
    depth,
    energy,
    fingerprint,
    pays,
    probes,
    served_rate,
    target,
    verification,
    window_slo,
)
from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.pays import MeasuredPoint
from gate.checks.acceptance.target import NO_TARGET
from gate.checks.acceptance.window_slo import StreamResult
from gate.checks.acceptance.windows import BreakEvenPoint, break_even, line_evidence
from gate.checks.base import CheckContext
from gate.status import LineResult, Status, combine

__all__ = ["NO_TARGET", "SUBCHECKS", "BreakEvenPoint", "Finding", "MeasuredPoint", "StreamResult", "break_even",
           "check"]

# The sub-checks in the order of the line's reason and values; a new one is its module plus one entry here.
SUBCHECKS: tuple[Callable[[CheckContext], Finding], ...] = (
    target.sub,  # a target set, above break-even L*
    window_slo.sub,  # held per batch window, per stream and point (and per pod of a fleet)
    pays.sub,  # measured L against L* per point; erosion; the draft's share of the cycle growth
    served_rate.sub,  # reported two-arm served rates (seed 000)
    energy.sub,  # reported tokens per joule per arm, recomputed as tok/s ÷ W (seed 004, issue 38)
    probes.sub,  # probe records at the plan's own mixes
    cohorts.sub,  # canary against stable, --phase post
    depth.sub,  # the plan's k against tune's best k
    card.sub,  # live L and positions against the drafter's acceptance card, --phase post (issue 37 item 4)
    verification.sub,  # lossy verification: a warning, a fail under require_lossless (issue 37 item 2)
    fingerprint.sub,  # per-position rates constant across capture windows: possibly simulated (a warning)
)


def check(ctx: CheckContext) -> LineResult:
    """The line over the gathered evidence (ctx.metrics), in the context's phase.

    Values (the JSON view): the SLO settings, `evidence_errors`, `windows_excluded`, then each
    sub-check's keys: `break_even` (BreakEvenPoint), `fleet` and `streams` (StreamResult),
    `measured_vs_break_even` (MeasuredPoint), `erosion` and `cycle_growth` when known, `served_rate`,
    `energy`, `probes`, `cohorts` and `depth` when there is such evidence.
    """
    slo = ctx.plan.slo
    values: dict[str, Any] = {"target_acceptance_length": slo.target_acceptance_length,
                              "target_source": slo.target_source, "window_seconds": slo.window_seconds,
                              "required_fraction": slo.required_fraction, "min_drafts": slo.min_drafts,
                              "min_windows": slo.min_windows, "min_speedup": slo.min_speedup, "alpha": slo.alpha,
                              "evidence_errors": list(ctx.metrics.errors),
                              "windows_excluded": line_evidence(ctx).excluded}
    statuses: list[Status] = []
    parts: list[str] = []
    for sub in SUBCHECKS:
        found = sub(ctx)
        if found.status is not None:
            statuses.append(found.status)
        if found.sentence:
            parts.append(found.sentence)
        values.update(found.values)
    return LineResult(combine(statuses) if statuses else Status.INCONCLUSIVE, "; ".join(parts), values)

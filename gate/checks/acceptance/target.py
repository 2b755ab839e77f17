"""Sub-check 1, the target: is an acceptance-length target set, its source stated, and above break-even L*?

Seed 002 asks for a target set before rollout; seed 004's arithmetic says a window at L ≤ L* does
not pay. So (issue 10, issue 21 item 6 "a pass needs a plan that decides"):

- no target → **fail** (seed 002);
- a target that does not exceed a known L* → **fail** (a window meeting it would not pay);
- L* unknown → **inconclusive**, naming the keys that would give it: declared step costs or measured
  rates with their L (`costs[]`), unless the plan has other evidence of whether it pays — probe
  records (`evidence.probes`, judged by the probes sub-check) or, in `--phase post`, live cohorts
  (`evidence.prometheus.cohorts`, judged by the cohorts sub-check); then this sub-check does not
  judge the unknown points and those sub-checks decide;
- the target's source must be stated: `slo.target_source` begins with `traffic`, `benchmark` or
  `assumed` (`SLO.target_source_kind`); missing or anything else → **inconclusive**. An assumed
  target may pass, and the line's reason then always says "assumed" (this sub-check's sentence
  opens the reason whenever a target is set).
"""

from __future__ import annotations

from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import BreakEvenPoint, line_evidence
from gate.checks.base import CheckContext
from gate.status import Status

NO_TARGET = "no acceptance-length target set (seed 002: set an acceptance-length target before rollout)"
KINDS = "traffic, benchmark or assumed"
L_STAR_KEYS = ("costs[] (target_step_ms + verify_cycle_ms, or baseline_tokens_per_second + "
               "speculative_tokens_per_second with acceptance_length or measured windows), evidence.probes, or "
               "evidence.prometheus.cohorts in --phase post")


def _source(ctx: CheckContext) -> tuple[Status | None, str]:
    """The target's source as the reason shows it, and INCONCLUSIVE when it is not stated."""
    slo = ctx.plan.slo
    if slo.target_source is None:
        return Status.INCONCLUSIVE, f"no source given for the target (slo.target_source: {KINDS})"
    if slo.target_source_kind is None:
        return Status.INCONCLUSIVE, (f"target source: {slo.target_source} — not stated as {KINDS} "
                                     "(slo.target_source's first word)")
    return None, f"target source: {slo.target_source}"


def judged_elsewhere(ctx: CheckContext) -> str | None:
    """The evidence, other than L*, that says whether speculation pays: probe records, or live cohorts in post."""
    ev = ctx.plan.evidence
    if ev.probes:
        return "the probe records (evidence.probes)"
    if ctx.phase == "post" and ev.prometheus is not None and ev.prometheus.cohorts is not None:
        return "canary against stable (evidence.prometheus.cohorts)"
    return None


def _unknown_why(points: list[BreakEvenPoint], unknown: list[BreakEvenPoint]) -> str:
    if not points:
        return "L* unknown (no step costs declared or measured)"
    return (f"L* unknown at {', '.join(p.point for p in unknown)} (the measured rates need an acceptance "
            "length: costs[].acceptance_length or measured windows)")


def sub(ctx: CheckContext) -> Finding:
    slo = ctx.plan.slo
    target = slo.target_acceptance_length
    points = line_evidence(ctx).points
    values = {"break_even": [p.to_json() for p in points]}
    if target is None:
        return Finding(Status.FAIL, NO_TARGET, values)
    src_status, source_txt = _source(ctx)
    statuses: list[Status] = [] if src_status is None else [src_status]
    stars = [(p.point, p.break_even_length, p.kind) for p in points if p.break_even_length is not None]
    unknown = [p for p in points if p.break_even_length is None]
    elsewhere = judged_elsewhere(ctx)

    if not stars:
        why = _unknown_why(points, unknown)
        if elsewhere is not None:
            return Finding.of(statuses, [f"target L {target:g} set ({source_txt}); {why}, so whether it pays is "
                                         f"judged by {elsewhere}"], values)
        return Finding(Status.INCONCLUSIVE, f"target L {target:g} set ({source_txt}); {why}: whether the target "
                                            f"pays is not judged — give {L_STAR_KEYS}", values)
    worst = max(stars, key=lambda x: x[1])
    star_txt = ", ".join(f"{s:.3f} ({n}, from {kind} step costs)" for n, s, kind in stars)
    if target <= worst[1]:
        return Finding(Status.FAIL, f"target L {target:g} ({source_txt}) does not exceed L* {worst[1]:.3f} at "
                                    f"{worst[0]} (from {worst[2]} step costs): a window meeting the target would "
                                    "not pay", values)
    text = f"target L {target:g} ({source_txt}) > L* {star_txt}"
    if unknown:
        why = _unknown_why(points, unknown)
        if elsewhere is not None:
            text += f"; {why}: there, whether it pays is judged by {elsewhere}"
        else:
            statuses.append(Status.INCONCLUSIVE)
            text += f"; {why}: not judged there — give {L_STAR_KEYS}"
    return Finding.of(statuses or [Status.PASS], [text], values)

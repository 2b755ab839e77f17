"""Sub-check 9, the drafter's card (issue 37 item 4): in `--phase post`, is live L below a fraction of the card's?

Why only post: the card is a benchmark the drafter's authors ran; before the switch there is no live traffic to
hold against it, and captured history is not live. Live L is pooled over the line's eligible windows
(gate.checks.acceptance.windows); the card's L is converted to the plan's depth by `exporter.card.length_values`,
the exporter's own conversion: exact at a fixed depth the card covers, and, when the plan's depth varies (a
schedule, a variable-length proposer), its lower bound at the live windows' mean depth k̄ = (L − 1) / a — live L
below a fraction of that bound is below that fraction of what the card gives at this depth mix, whatever the mix.
Drift is `acceptance_card.on_drift` (fail or inconclusive), with both numbers; a card that gives no L at the
plan's depth (an L-only card measured at another k) is inconclusive, never a pass. Per position, the gate has no
live per-position evidence: the exporter's series and `SpecgateAcceptanceBelowCard` watch those.
"""

from __future__ import annotations

from typing import Any

from exporter import formulas
from exporter.card import length_values
from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import line_evidence
from gate.checks.base import CheckContext
from gate.evidence.base import AcceptanceWindow
from gate.evidence.positions import plan_depth_varies
from gate.status import Status


def _mean_depth(windows: list[AcceptanceWindow]) -> float | None:
    """k̄ pooled over the windows: draft tokens = accepted / a, accepted = (L − 1) · drafts (None without a > 0)."""
    drafts = tokens = 0.0
    for w in windows:
        if w.acceptance_rate is None or w.acceptance_rate <= 0 or w.acceptance_length is None or not w.drafts:
            return None
        accepted = (w.acceptance_length - 1.0) * w.drafts
        drafts += w.drafts
        tokens += accepted / w.acceptance_rate
    return formulas.mean_depth(tokens, drafts)


def sub(ctx: CheckContext) -> Finding:
    spec = ctx.plan.evidence.reported.acceptance_card
    if spec is None:
        return Finding()
    card = spec.card
    named = f"card row {card.row} ({card.source})"
    values: dict[str, Any] = {"row": card.row, "source": card.source, "rates": card.rates,
                              "unconditional": list(card.unconditional), "min_fraction": spec.min_fraction,
                              "on_drift": spec.on_drift}
    if ctx.phase != "post":
        return Finding(None, f"acceptance against {named} judged in the post phase",
                       {"acceptance_card": values})
    windows = [w for ws in line_evidence(ctx).groups.values() for w in ws]
    live = formulas.pooled_length((w.acceptance_length, w.drafts or 0.0) for w in windows)
    if live is None:
        return Finding(None, f"acceptance against {named} not compared: no live window", {"acceptance_card": values})
    k = ctx.plan.bound_depth
    varies = plan_depth_varies(ctx.plan) is not None
    k_mean = _mean_depth(windows) if varies else (float(k) if k is not None else None)
    refs = [c for c in length_values(card, k, k_mean, varies) if c.basis != "upper_bound"]
    values.update(live_acceptance_length=live, depth=k, depth_mean=k_mean)
    if not refs:
        why = ("the plan's depth is unknown" if k is None else
               "the live mean depth is unknown (no window with a > 0)" if varies and k_mean is None else
               f"it gives no L at k = {k}" + (" (its positions stop short of k)" if card.unconditional else
                                              f" (its L was measured at k = {card.depth})"))
        return Finding(Status.INCONCLUSIVE, f"acceptance against {named} not comparable: {why}",
                       {"acceptance_card": values})
    ref = refs[0]
    floor = spec.min_fraction * ref.value
    what = "L" if ref.basis == "exact" else f"lower bound of L at mean depth {k_mean:.2f} of {k}"
    values.update(card_acceptance_length=ref.value, card_basis=ref.basis, floor=floor)
    if live < floor:
        status = Status.FAIL if spec.on_drift == "fail" else Status.INCONCLUSIVE
        return Finding(status, f"live L {live:.3f} is below {spec.min_fraction:g} x the {what} {ref.value:.3f} of "
                               f"{named} (= {floor:.3f}): acceptance drifted below the card",
                       {"acceptance_card": values})
    return Finding(Status.PASS, f"live L {live:.3f} at or above {spec.min_fraction:g} x the {what} {ref.value:.3f} "
                                f"of {named}", {"acceptance_card": values})

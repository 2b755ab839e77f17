"""Sub-check 9, the drafter's card (issue 37 item 4): in `--phase post`, is live acceptance below a fraction of the
card's — L, and per draft position where the evidence has per-position counters?

Why only post: the card is a benchmark the drafter's authors ran; before the switch there is no live traffic to
hold against it, and captured history is not live. Live L is pooled over the line's eligible windows
(gate.checks.acceptance.windows); the card's L is converted to the plan's depth by `exporter.card.length_values`,
the exporter's own conversion: exact at a fixed depth the card covers, and, when the plan's depth varies (a
schedule, a variable-length proposer), its lower bound at the live windows' mean depth k̄ = (L − 1) / a — live L
below a fraction of that bound is below that fraction of what the card gives at this depth mix, whatever the mix.
Drift is `acceptance_card.on_drift` (fail or inconclusive), with both numbers; a card that gives no L at the
plan's depth (an L-only card measured at another k) is inconclusive, never a pass.

Why per position too: L can hold while one position sinks (a drafter whose late positions broke, compensated by
an easier prompt mix at position 0), which is what `SpecgateAcceptanceBelowCard` watches live. The capture
groups' per-position counters (gate.evidence.positions, the same pages as the line's windows) are pooled over the
windows the line would take (no restart, known restart status, `slo.min_drafts`): p_i = Σ accepted_i / Σ drafts,
the exporter's `specgate_spec_position_acceptance_rate`. The card's side is `exporter.card.position_values` at
the pooled depth — exact when every draft had the full depth, else its lower bound at the pooled mean depth, the
pair the alert compares (never its upper bound); a depth nobody can tell (no draft-token counter) is
inconclusive. The same `min_fraction` as L; the worst position (lowest live / card) is named with both numbers.
A position reached by fewer than `MIN_POSITION_DRAFTS` drafts with every earlier position accepted, or where the
card gives 0, is named and not judged: a ratio of a handful of tokens is noise, not drift.
"""

from __future__ import annotations

from typing import Any

from exporter import formulas
from exporter.card import Card, length_values, position_values
from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.windows import line_evidence
from gate.checks.base import CheckContext
from gate.evidence.base import AcceptanceWindow
from gate.evidence.positions import plan_depth_varies
from gate.model.speedup.counters import REPORTED_TAG, CountersError, PositionCounters, pooled
from gate.plan.card import AcceptanceCard
from gate.status import Status

# Drafts that tested a position (drafts for position 0, accepted at i − 1 after): below this, a 20 % shortfall is
# within a few tokens' binomial noise, so the position is named and not judged (slo.min_drafts when larger).
MIN_POSITION_DRAFTS = 50


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


def _length(ctx: CheckContext, spec: AcceptanceCard, named: str, values: dict[str, Any]) -> Finding:
    """Live L against the card's L (module docstring, first paragraph)."""
    card = spec.card
    windows = [w for ws in line_evidence(ctx).groups.values() for w in ws]
    live = formulas.pooled_length((w.acceptance_length, w.drafts or 0.0) for w in windows)
    if live is None:
        return Finding(None, f"acceptance against {named} not compared: no live window")
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
        return Finding(Status.INCONCLUSIVE, f"acceptance against {named} not comparable: {why}")
    ref = refs[0]
    floor = spec.min_fraction * ref.value
    what = "L" if ref.basis == "exact" else f"lower bound of L at mean depth {k_mean:.2f} of {k}"
    values.update(card_acceptance_length=ref.value, card_basis=ref.basis, floor=floor)
    if live < floor:
        status = Status.FAIL if spec.on_drift == "fail" else Status.INCONCLUSIVE
        return Finding(status, f"live L {live:.3f} is below {spec.min_fraction:g} x the {what} {ref.value:.3f} of "
                               f"{named} (= {floor:.3f}): acceptance drifted below the card")
    return Finding(Status.PASS, f"live L {live:.3f} at or above {spec.min_fraction:g} x the {what} {ref.value:.3f} "
                                f"of {named}")


def _live_positions(ctx: CheckContext) -> tuple[list[PositionCounters], list[str]]:
    """The capture groups' per-position windows the line would take, and why a group gave none.

    A group's windows come from the same pages as the line's (`counters_source` adds the reported tag to the
    line's source): a group whose line windows have an unknown restart status gives none, as the line takes none.
    """
    min_drafts = ctx.plan.slo.min_drafts
    blind = {w.source for w in ctx.metrics.windows if w.reset is None}
    usable: list[PositionCounters] = []
    left: list[str] = []
    for ev in ctx.metrics.positions:
        if ev.error is not None:
            left.append(ev.error)
        elif ev.source.split(REPORTED_TAG)[0] in blind:
            left.append(f"{ev.source}: restart status unknown (no process start time on the pages)")
        else:
            usable += [w for w in ev.windows if w.accepted_per_position and w.drafts >= min_drafts]
    return usable, left


def _positions_named(positions: list[int]) -> str:
    return ("position " if len(positions) == 1 else "positions ") + ", ".join(map(str, positions))


def _positions(ctx: CheckContext, spec: AcceptanceCard, card: Card, named: str, values: dict[str, Any]) -> Finding:
    """Live per-position acceptance against the card's (module docstring, second paragraph)."""
    if not card.unconditional:
        return Finding()  # an L-only card: nothing per position
    windows, left = _live_positions(ctx)
    if not windows:
        return Finding(None, "per position not judged: " + "; ".join(left)) if left else Finding()
    try:
        live = pooled(windows, None, "the per-position capture windows")
    except CountersError as e:
        return Finding(Status.INCONCLUSIVE, f"per position against {named} not comparable: {e}")
    k, k_mean = live.k, live.mean_depth
    varies = None if live.draft_tokens is None else live.depth_varied is not None
    refs = {i: c for i, c in position_values(card, k, k_mean, varies) if c.basis != "upper_bound"}
    if not refs:
        return Finding(Status.INCONCLUSIVE, f"per position against {named} not comparable: the windows' mean depth "
                                            "is unknown (no draft-token counter), so whether every draft had the "
                                            f"full depth {k} cannot be told and the card gives no lower bound")
    need = max(MIN_POSITION_DRAFTS, ctx.plan.slo.min_drafts)
    rates = live.position_rates
    rows: list[dict[str, Any]] = []
    thin: list[int] = []
    zero: list[int] = []
    for i, ref in sorted(refs.items()):
        trials = live.drafts if i == 0 else live.accepted_per_position[i - 1]
        judged = trials >= need and ref.value > 0
        if trials < need:
            thin.append(i)
        elif ref.value <= 0:
            zero.append(i)
        rows.append({"position": i, "live": rates[i], "card": ref.value, "basis": ref.basis,
                     "floor": spec.min_fraction * ref.value, "drafts": trials, "judged": judged})
    what, at = ("rate", "") if varies is False else ("lower bound", f" at mean depth {k_mean:.2f} of {k}")
    values["positions"] = {"depth": k, "depth_mean": k_mean, "drafts": live.drafts, "min_drafts": need,
                           "card_basis": "exact" if varies is False else "lower_bound", "rates": rows}
    notes = []
    if thin:
        notes.append(f"{_positions_named(thin)} not judged (fewer than {need:g} drafts reached "
                     f"{'it' if len(thin) == 1 else 'them'} with every earlier position accepted)")
    if zero:
        notes.append(f"{_positions_named(zero)} not judged (the card's {what}{at} is 0 there)")
    if len(card.unconditional) < k:
        notes.append(f"{_positions_named(list(range(len(card.unconditional), k)))} not judged (the card stops at "
                     f"position {len(card.unconditional) - 1})")
    notes += [f"not judged per position: {why}" for why in left]
    judged_rows = [r for r in rows if r["judged"]]
    if not judged_rows:
        return Finding(None, f"per position against {named} not judged: " + "; ".join(notes))
    worst = min(judged_rows, key=lambda r: r["live"] / r["card"])
    values["positions"]["worst"] = worst["position"]
    below = [r["position"] for r in judged_rows if r["live"] < r["floor"]]
    tail = "".join(f"; {n}" for n in notes)
    if below:
        status = Status.FAIL if spec.on_drift == "fail" else Status.INCONCLUSIVE
        also = f" ({_positions_named(below)} below)" if len(below) > 1 else ""
        return Finding(status, f"live acceptance {worst['live']:.3f} at draft position {worst['position']} is below "
                               f"{spec.min_fraction:g} x the card's {what} {worst['card']:.3f}{at} of {named} (= "
                               f"{worst['floor']:.3f}; {worst['drafts']:g} drafts reached it){also}: acceptance "
                               f"drifted below the card per position{tail}")
    return Finding(Status.PASS, f"per position at or above {spec.min_fraction:g} x the card's {what}s{at} of {named} "
                                f"(lowest: draft position {worst['position']}, live {worst['live']:.3f} against "
                                f"{worst['card']:.3f}){tail}")

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
    found = [_length(ctx, spec, named, values), _positions(ctx, spec, card, named, values)]
    return Finding.of([f.status for f in found if f.status is not None], [f.sentence for f in found],
                      {"acceptance_card": values})

"""Sub-check 9 (gate/checks/acceptance/card.py): live L against the drafter's acceptance card, post phase only.

The card is the plan's `evidence.reported.acceptance_card`; the windows are shaped as the exporter's live windows
(gate.evidence.base.AcceptanceWindow: drafts, L, a). The tiny plan runs k = 3 (draft model: a fixed depth; ngram:
a variable-length proposer, so the card gives a lower bound at the windows' mean depth).

Per position, the evidence is real vLLM 0.32 CPU captures read by the evidence layer (`from_capture_files`):
tests/fixtures/dynamic-depth's batch-size schedule (ngram, k = 3, mean depth 680 / 328 = 2.07 over two windows:
per position 188/64/40 of 328 drafts) and tests/fixtures/vllm's draft-model run at a fixed k = 3 whose random
drafter accepts nothing (1829 drafts). Hand-built counters (`PositionCounters`) only where no capture has the shape:
a page without the draft-token counter, two depths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.checks.acceptance import card as card_check
from gate.evidence.base import AcceptanceWindow, MetricsEvidence
from gate.evidence.captures import from_capture_files
from gate.evidence.positions import PositionEvidence
from gate.model.speedup.counters import PositionCounters
from gate.plan.model import PlanError, plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.helpers import CONFIGS, tiny_plan

# A conditional card: u = 0.8, 0.6, 0.3, so L at k = 3 is 2.7; the writing row is weaker (u = 0.6, 0.3, 0.09).
CARD: dict[str, Any] = {"source": "a drafter card", "rates": "conditional", "depth": 3,
                        "rows": [{"name": "overall", "positions": [0.8, 0.75, 0.5], "acceptance_length": 2.7},
                                 {"name": "writing", "positions": [0.6, 0.5, 0.3]}]}


def _plan(arm: str = "draft", **card: Any) -> Any:
    data = tiny_plan(arm, costs=[{"point": "p", "verify_cycle_ms": 30, "target_step_ms": 20}])
    data["evidence"] = {"reported": {"acceptance_card": {**CARD, **card}}}
    return plan_from_dict(data)


def _w(length: float, rate: float | None = None, drafts: float = 100) -> AcceptanceWindow:
    return AcceptanceWindow(source="exporter", stream="tiny/0", point=None, start=0, end=60, reset=False,
                            drafts=drafts, acceptance_length=length, acceptance_rate=rate)


def _card_clause(reason: str) -> str:
    return next(p for p in reason.split("; ") if "card" in p)


def test_drift_below_the_card_fails_with_both_numbers() -> None:
    r = judge(_plan(), "post", [_w(2.0), _w(2.1)], [])
    assert r.status is Status.FAIL
    clause = _card_clause(r.reason)
    assert "live L 2.050 is below 0.8 x the L 2.700 of card row overall (a drafter card) (= 2.160)" in clause
    assert r.values["acceptance_card"]["card_basis"] == "exact"


def test_at_the_card_passes_and_on_drift_inconclusive_holds() -> None:
    assert judge(_plan(), "post", [_w(2.5)], []).values["acceptance_card"]["floor"] == pytest.approx(2.16)
    found = card_check.sub(_ctx(_plan(), [_w(2.5)]))
    assert found.status is Status.PASS
    assert card_check.sub(_ctx(_plan(on_drift="inconclusive"), [_w(1.5)])).status is Status.INCONCLUSIVE
    # the writing row: 1 + 0.6 + 0.3 + 0.09 = 1.99, so 1.7 is not drift at 0.8 of it
    assert card_check.sub(_ctx(_plan(row="writing"), [_w(1.7)])).status is Status.PASS


def test_pre_phase_and_no_live_window_do_not_judge() -> None:
    assert card_check.sub(_ctx(_plan(), [_w(1.2)], phase="pre")).status is None
    none = card_check.sub(_ctx(_plan(), [], phase="post"))
    assert none.status is None and "no live window" in none.sentence
    # no card: the sub-check says nothing
    data = tiny_plan("draft")
    assert card_check.sub(_ctx(plan_from_dict(data), [_w(1.2)])).status is None


def test_varying_depth_compares_with_the_lower_bound_at_the_live_mean_depth() -> None:
    # ngram, k = 3; windows at L 2.0 with a = 0.4: mean depth (L - 1) / a = 2.5, the card's L lower bound
    # 1 + (2.5 / 3) x 1.7 = 2.4167, floor 0.8 x that = 1.933: L 2.0 holds
    found = card_check.sub(_ctx(_plan("ngram"), [_w(2.0, 0.4)]))
    assert found.status is Status.PASS, found.sentence
    assert found.values["acceptance_card"]["card_basis"] == "lower_bound"
    assert found.values["acceptance_card"]["depth_mean"] == pytest.approx(2.5)
    assert card_check.sub(_ctx(_plan("ngram"), [_w(1.5, 0.2)])).status is Status.FAIL  # k̄ 2.5, L 1.5 < 1.933
    # without an acceptance rate the mean depth is unknown: not comparable, never a pass
    unknown = card_check.sub(_ctx(_plan("ngram"), [_w(2.0)]))
    assert unknown.status is Status.INCONCLUSIVE and "mean depth is unknown" in unknown.sentence


def test_an_l_only_card_at_another_depth_is_inconclusive() -> None:
    found = card_check.sub(_ctx(_plan(depth=4, rows=[{"name": "overall", "acceptance_length": 3.1}]), [_w(2.9)]))
    assert found.status is Status.INCONCLUSIVE and "measured at k = 4" in found.sentence


@pytest.mark.parametrize(("card", "says"), [
    ({"rates": "unconditional", "rows": [{"name": "overall", "positions": [0.5, 0.7]}]}, "cannot rise"),
    ({"row": "humaneval"}, "not one of its rows"),
    ({"rates": "sometimes"}, "rates"),
    ({"min_fraction": 1.5}, "min_fraction"),
])
def test_a_card_that_does_not_hold_is_an_invalid_plan(card: dict[str, Any], says: str) -> None:
    with pytest.raises(PlanError, match=says):
        _plan(**card)


def _ctx(plan: Any, windows: list[AcceptanceWindow], phase: str = "post",
         positions: list[PositionEvidence] | None = None) -> Any:
    import dataclasses

    from tests.gate.helpers import context

    return dataclasses.replace(context(plan, phase), metrics=MetricsEvidence(windows=windows, errors=[],
                                                                            positions=positions or []))


FIXTURES = CONFIGS.parent
SCHEDULE = sorted((FIXTURES / "dynamic-depth").glob("vllm-schedule-metrics-*.txt"))
DRAFT = [FIXTURES / "vllm" / f"metrics-draft-{s}.txt" for s in ("before", "during", "after")]


def _captured(plan: Any, files: list[Path]) -> Any:
    """The plan's post-phase context over one capture group, windows and per-position counters read once."""
    import dataclasses

    from tests.gate.helpers import context

    return dataclasses.replace(context(plan, "post"), metrics=from_capture_files(files, None, 60, 1, positions=True))


def _pos(found: Any) -> dict[str, Any]:
    return dict(found.values["acceptance_card"]["positions"])


def test_a_position_below_the_card_fails_where_l_holds() -> None:
    # schedule capture: live L 1.890 holds against the card's L lower bound 2.175 (floor 1.740), but position 1
    # accepts 64 / 328 = 0.195 against the card's lower bound 0.6 x (2.073 - 1) / 2 = 0.322 (floor 0.258)
    found = card_check.sub(_captured(_plan("ngram"), SCHEDULE))
    assert found.status is Status.FAIL, found.sentence
    assert "live L 1.890 at or above" in found.sentence
    assert ("live acceptance 0.195 at draft position 1 is below 0.8 x the card's lower bound 0.322 at mean depth "
            "2.07 of 3 of card row overall (a drafter card) (= 0.258; 188 drafts reached it)") in found.sentence
    pos = _pos(found)
    assert pos["card_basis"] == "lower_bound" and pos["worst"] == 1
    assert pos["depth_mean"] == pytest.approx(680 / 328)
    assert [r["live"] for r in pos["rates"]] == pytest.approx([188 / 328, 64 / 328, 40 / 328])
    assert all(r["judged"] for r in pos["rates"])
    drifted = card_check.sub(_captured(_plan("ngram", on_drift="inconclusive"), SCHEDULE))
    assert drifted.status is Status.INCONCLUSIVE and "below the card per position" in drifted.sentence


def test_positions_at_the_card_pass_naming_the_lowest() -> None:
    # the writing row u = 0.6, 0.3, 0.09: lower bounds 0.415, 0.161, 0.0066 at mean depth 2.07; live above 0.8 x each
    found = card_check.sub(_captured(_plan("ngram", row="writing"), SCHEDULE))
    assert found.status is Status.PASS, found.sentence
    assert ("per position at or above 0.8 x the card's lower bounds at mean depth 2.07 of 3 of card row writing "
            "(a drafter card) (lowest: draft position 1, live 0.195 against 0.161)") in found.sentence
    # a fixed depth at the card: exact rates, p_i = u_i (every draft drafted 3 tokens)
    at_card = PositionCounters(None, 3, 400.0, (330.0, 250.0, 125.0), "captures x", draft_tokens=1200.0)
    exact = card_check.sub(_ctx(_plan(), [_w(1 + 705 / 400, 705 / 1200, 400)],
                                positions=[PositionEvidence(None, "captures x", windows=(at_card,))]))
    assert exact.status is Status.PASS, exact.sentence
    assert "the card's rates of card row overall" in exact.sentence and _pos(exact)["card_basis"] == "exact"


def test_a_position_with_too_few_drafts_is_named_and_not_judged() -> None:
    # the draft-model capture accepts nothing: position 0 is judged on 1829 drafts and drifts; no draft reached
    # positions 1 and 2 with position 0 accepted, so they are not judged (0.000 against 0.6 would be no evidence)
    found = card_check.sub(_captured(_plan(), DRAFT))
    assert found.status is Status.FAIL
    assert "live acceptance 0.000 at draft position 0 is below 0.8 x the card's rate 0.800" in found.sentence
    assert ("positions 1, 2 not judged (fewer than 50 drafts reached them with every earlier position accepted)"
            in found.sentence)
    assert [r["judged"] for r in _pos(found)["rates"]] == [True, False, False]
    # only thin positions: not judged, and the clause holds nothing back
    thin = PositionCounters(None, 3, 30.0, (20.0, 10.0, 5.0), "captures x", draft_tokens=90.0)
    alone = card_check.sub(_ctx(_plan(), [], positions=[PositionEvidence(None, "captures x", windows=(thin,))]))
    assert alone.status is None and "per position against card row overall" in alone.sentence
    assert "not judged" in alone.sentence


def test_conditional_and_unconditional_card_rates_give_one_verdict() -> None:
    conditional = card_check.sub(_captured(_plan("ngram"), SCHEDULE))
    unconditional = card_check.sub(_captured(_plan("ngram", rates="unconditional", rows=[
        {"name": "overall", "positions": [0.8, 0.6, 0.3], "acceptance_length": 2.7}]), SCHEDULE))
    assert conditional.status is unconditional.status is Status.FAIL
    assert conditional.sentence == unconditional.sentence
    assert [r["card"] for r in _pos(conditional)["rates"]] == pytest.approx(
        [r["card"] for r in _pos(unconditional)["rates"]])


def test_a_depth_nobody_can_tell_or_two_depths_are_inconclusive_per_position() -> None:
    # no draft-token counter: whether each draft had the full depth is unknown, so the card gives no lower bound
    blind = PositionCounters(None, 3, 400.0, (100.0, 20.0, 5.0), "captures x")
    found = card_check.sub(_ctx(_plan(), [], positions=[PositionEvidence(None, "captures x", windows=(blind,))]))
    assert found.status is Status.INCONCLUSIVE and "mean depth is unknown" in found.sentence
    two = [PositionCounters(None, 3, 400.0, (300.0, 200.0, 100.0), "captures x", draft_tokens=1200.0),
           PositionCounters(None, 2, 400.0, (300.0, 200.0), "captures y", draft_tokens=800.0)]
    mixed = card_check.sub(_ctx(_plan(), [], positions=[PositionEvidence(None, "captures x", windows=(two[0],)),
                                                        PositionEvidence(None, "captures y", windows=(two[1],))]))
    assert mixed.status is Status.INCONCLUSIVE and "different depths" in mixed.sentence


def test_positions_the_card_or_the_evidence_does_not_give_are_named() -> None:
    # a card with two positions at k = 3: position 2 is not judged; an evidence error is named, never judged
    short = _plan(rows=[{"name": "overall", "positions": [0.8, 0.75], "acceptance_length": 2.7}])
    full = PositionCounters(None, 3, 400.0, (330.0, 250.0, 125.0), "captures x", draft_tokens=1200.0)
    found = card_check.sub(_ctx(short, [], positions=[PositionEvidence(None, "captures x", windows=(full,)),
                                                      PositionEvidence(None, "captures y", error="restarted")]))
    assert found.status is Status.PASS, found.sentence
    assert "position 2 not judged (the card stops at position 1)" in found.sentence
    assert "not judged per position: restarted" in found.sentence
    # an L-only card says nothing per position
    l_only = card_check.sub(_captured(_plan(rows=[{"name": "overall", "acceptance_length": 2.7}]), DRAFT))
    assert "positions" not in l_only.values["acceptance_card"] and "position" not in l_only.sentence

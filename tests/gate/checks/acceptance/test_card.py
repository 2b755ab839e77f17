"""Sub-check 9 (gate/checks/acceptance/card.py): live L against the drafter's acceptance card, post phase only.

The card is the plan's `evidence.reported.acceptance_card`; the windows are shaped as the exporter's live windows
(gate.evidence.base.AcceptanceWindow: drafts, L, a). The tiny plan runs k = 3 (draft model: a fixed depth; ngram:
a variable-length proposer, so the card gives a lower bound at the windows' mean depth).
"""

from __future__ import annotations

from typing import Any

import pytest

from gate.checks.acceptance import card as card_check
from gate.evidence.base import AcceptanceWindow
from gate.plan.model import PlanError, plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.helpers import tiny_plan

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


def _ctx(plan: Any, windows: list[AcceptanceWindow], phase: str = "post") -> Any:
    import dataclasses

    from gate.evidence.base import MetricsEvidence
    from tests.gate.helpers import context

    return dataclasses.replace(context(plan, phase), metrics=MetricsEvidence(windows=windows, errors=[]))

"""The drafter's acceptance card in the exporter (issue 37 item 4): conversion, bounds, exposition beside live.

Inputs: the real vLLM 0.32 CPU captures of the golden files (tests/fixtures/vllm): the draft-model arm runs at a
fixed depth 3 (its per-position rates are `exact`), the ngram arm's drafts vary in length (mean depth 2.82 of 3 over
the 1m window: `lower_bound`). The card is shaped as the plan's `evidence.reported.acceptance_card`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from exporter.card import length_values, position_values, read_card, unconditional
from exporter.collect import exposition
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings, add_run_arguments, settings_from_args
from exporter.state import ExporterState

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vllm"
GOLDEN = Path(__file__).parents[1] / "golden"
CARD = {"source": "a test card", "rates": "conditional", "depth": 3, "row": "code",
        "rows": [{"name": "overall", "positions": [0.9, 0.8, 0.7]},
                 {"name": "code", "positions": [0.8, 0.75, 0.5], "acceptance_length": 2.7}]}


def _render(arm: str, card: dict[str, object] | None, **over: object) -> str:
    settings = ExporterSettings(windows=[30.0, 60.0], batch_window=30.0, min_drafts=1, acceptance_slo_target=2.0,
                                workload_demand_tokens=4096,
                                acceptance_card=None if card is None else json.dumps(card), **over)
    texts = [(FIXTURES / f"metrics-{arm}-{n}.txt").read_text() for n in ("before", "during", "after")]
    start = snapshot_from_text(texts[0], timestamp=0.0).process_start_time or 1.0e9
    state = ExporterState.from_settings(settings, started_at=start - 5.0)
    for i, text in enumerate(texts):
        state.record_success(snapshot_from_text(text, timestamp=start + 40.0 + 30.0 * i), duration=0.004)
    return exposition(state)


def _value(text: str, prefix: str) -> float:
    return float(next(line for line in text.splitlines() if line.startswith(prefix)).rsplit(" ", 1)[1])


def test_conditional_rates_become_unconditional() -> None:
    assert unconditional((0.8, 0.75, 0.5), "conditional") == pytest.approx((0.8, 0.6, 0.3))
    assert unconditional((0.8, 0.6), "unconditional") == (0.8, 0.6)
    card = read_card(CARD)
    assert card.row == "code" and card.unconditional == pytest.approx((0.8, 0.6, 0.3))


def test_fixed_depth_is_exact_and_varying_depth_gives_bounds() -> None:
    card = read_card(CARD)
    exact = position_values(card, 3, 3.0, False)
    assert [(i, c.basis) for i, c in exact] == [(0, "exact"), (1, "exact"), (2, "exact")]
    assert [c.basis for c in length_values(card, 3, 3.0, False)] == ["exact"]
    assert length_values(card, 3, 3.0, False)[0].value == pytest.approx(2.7)
    # at k = 2 the card's first two positions give L, not its own L measured at 3
    assert length_values(card, 2, 2.0, False)[0].value == pytest.approx(2.4)
    # mean depth 2.5 of 3: f_0 >= 2.5/3, f_1 >= 1.5/2, f_2 >= 0.5/1
    bounds = dict(((i, c.basis), c.value) for i, c in position_values(card, 3, 2.5, True))
    assert bounds[(0, "lower_bound")] == pytest.approx(0.8 * 2.5 / 3)
    assert bounds[(1, "lower_bound")] == pytest.approx(0.6 * 1.5 / 2)
    assert bounds[(2, "lower_bound")] == pytest.approx(0.3 * 0.5)
    assert bounds[(2, "upper_bound")] == pytest.approx(0.3)
    low, high = length_values(card, 3, 2.5, True)
    assert (low.basis, high.basis) == ("lower_bound", "upper_bound")
    assert low.value == pytest.approx(1 + 2.5 / 3 * 1.7)
    assert high.value == pytest.approx(1 + 0.8 + 0.6 + 0.5 * 0.3)
    # every way of drafting at mean depth 2.5 lands between the bounds: half at 3 and half at 2, or 3/4 at 3 and 1/4 at 1
    for f in ((1.0, 1.0, 0.5), (1.0, 0.75, 0.75)):
        expected = 1 + sum(u * x for u, x in zip(card.unconditional, f, strict=True))
        assert low.value <= expected <= high.value


def test_l_only_card_is_exact_only_at_its_own_depth() -> None:
    card = read_card({"source": "s", "rates": "unconditional", "depth": 4,
                      "rows": [{"name": "overall", "acceptance_length": 3.1}]})
    assert [c.value for c in length_values(card, 4, 4.0, False)] == [3.1]
    assert length_values(card, 3, 3.0, False) == [] and length_values(card, 4, 3.5, True) == []
    assert position_values(card, 4, 4.0, False) == []


@pytest.mark.parametrize(("doc", "says"), [
    ({"rates": "conditional", "rows": [{"name": "overall", "positions": [0.5]}]}, "source is required"),
    ({"source": "s", "rows": [{"name": "overall", "positions": [0.5]}]}, "conditional or unconditional"),
    ({"source": "s", "rates": "unconditional", "rows": [{"name": "overall", "positions": [0.5, 0.7]}]},
     "cannot rise"),
    ({"source": "s", "rates": "conditional", "rows": [{"name": "overall", "positions": [1.5]}]},
     "between 0 and 1"),
    ({"source": "s", "rates": "conditional", "rows": [{"name": "a", "positions": [0.5]}, {"name": "a", "positions": [0.4]}],
      "row": "a"}, "unique"),
    ({"source": "s", "rates": "conditional", "rows": [{"positions": [0.5]}]}, "needs a name"),
    ({"source": "s", "rates": "conditional", "row": "writing", "rows": [{"name": "overall", "positions": [0.5]}]},
     "not one of its rows"),
    ({"source": "s", "rates": "conditional", "rows": [{"name": "overall", "positions": [0.5], "acceptance_length": 2.5}]},
     r"outside 1\.\.1 \+ k = 2"),
    ({"source": "s", "rates": "conditional", "depth": 1, "rows": [{"name": "overall", "positions": [0.5, 0.4]}]},
     "measured at depth 1"),
    ({"source": "s", "rates": "conditional", "rows": [{"name": "overall"}]}, "give positions"),
    ({"source": "s", "rates": "conditional", "rows": [{"name": "overall", "positions": [0.5]}], "colour": 1},
     "unknown key"),
])
def test_a_card_that_does_not_hold_is_refused(doc: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        read_card(doc)


def test_flag_refuses_a_bad_card_in_one_line() -> None:
    p = argparse.ArgumentParser()
    add_run_arguments(p)
    with pytest.raises(ValueError, match=r"--acceptance-card / SPECGATE_ACCEPTANCE_CARD: .*cannot rise"):
        settings_from_args(p.parse_args(["--acceptance-card", json.dumps(
            {"source": "s", "rates": "unconditional", "rows": [{"name": "overall", "positions": [0.5, 0.7]}]})]))
    with pytest.raises(ValueError, match="SPECGATE_ACCEPTANCE_CARD"):
        settings_from_args(p.parse_args(["--acceptance-card", "{not json"]))
    assert settings_from_args(p.parse_args(["--acceptance-card", json.dumps(CARD)])).acceptance_card is not None


@pytest.mark.parametrize("arm", ["draft", "ngram"])
def test_without_a_card_the_golden_holds_and_with_one_only_card_series_are_added(arm: str) -> None:
    golden = (GOLDEN / f"vllm-{arm}.prom").read_text()
    assert _render(arm, None) == golden
    with_card = _render(arm, CARD)
    added = [line for line in with_card.splitlines() if line not in set(golden.splitlines())]
    assert all("specgate_spec_card_" in line for line in added)
    assert [line for line in golden.splitlines() if line not in set(with_card.splitlines())] == []


def test_fixed_depth_arm_shows_the_card_exactly_beside_live() -> None:
    out = _render("draft", CARD)
    assert 'specgate_spec_card_info{engine="vllm",rates="conditional",row="code"} 1.0' in out
    tail = 'engine="vllm",model="tiny",position="1",rank="0",window="1m"}'
    assert _value(out, 'specgate_spec_card_position_acceptance_rate{basis="exact",' + tail) == pytest.approx(0.6)
    assert 'specgate_spec_position_acceptance_rate{basis="exact",' + tail in out  # live, same labels
    assert _value(out, 'specgate_spec_card_acceptance_length{basis="exact",engine="vllm",model="tiny",rank="0",'
                       'window="1m"}') == pytest.approx(2.7)


def test_varying_depth_arm_gets_bounds_from_its_own_mean_depth() -> None:
    out = _render("ngram", CARD)
    assert 'basis="exact"' not in "".join(line for line in out.splitlines() if "specgate_spec_card_" in line)
    mean = _value(out, 'specgate_spec_depth_mean{engine="vllm",model="tiny",rank="0",window="1m"}')
    low = _value(out, 'specgate_spec_card_position_acceptance_rate{basis="lower_bound",engine="vllm",model="tiny",'
                      'position="1",rank="0",window="1m"}')
    assert low == pytest.approx(0.6 * (mean - 1) / 2)


def test_position_gauges_off_leaves_the_card_positions_out_too() -> None:
    out = _render("draft", CARD, position_gauges=False)
    assert "specgate_spec_card_position_acceptance_rate{" not in out
    assert "specgate_spec_card_acceptance_length{" in out

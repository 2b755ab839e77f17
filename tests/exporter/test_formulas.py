"""The pooled acceptance length (exporter.formulas.pooled_length, length_from_rates): counters add, ratios do not."""

from __future__ import annotations

import pytest

from exporter import formulas


def test_pooled_length_weighs_windows_by_drafts() -> None:
    # 100 drafts at L 3 and 300 at L 2: 1 + (200 + 300) / 400 = 2.25, not the mean of the L's (2.5)
    assert formulas.pooled_length([(3.0, 100), (2.0, 300)]) == pytest.approx(2.25)


def test_pooled_length_skips_unknown_lengths_and_their_drafts() -> None:
    assert formulas.pooled_length([(None, 1000), (2.0, 10)]) == pytest.approx(2.0)
    assert formulas.pooled_length([(None, 10)]) is None
    assert formulas.pooled_length([]) is None
    assert formulas.pooled_length([(2.0, 0)]) is None


def test_pooled_length_equals_one_plus_total_accepted_over_total_drafts() -> None:
    windows = [(1.0 + 37 / 50, 50), (1.0 + 120 / 80, 80)]
    assert formulas.pooled_length(windows) == pytest.approx(formulas.acceptance_length(37 + 120, 130))


def test_length_from_rates_is_one_plus_the_sum() -> None:
    assert formulas.length_from_rates([0.8, 0.5, 0.2]) == pytest.approx(2.5)
    assert formulas.length_from_rates([]) == 1.0

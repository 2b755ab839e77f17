"""Per-position acceptance counters (gate/model/speedup/counters.py): prefix-wise, pooled by adding."""

from __future__ import annotations

import pytest

from gate.model.speedup.counters import CountersError, PositionCounters, pooled
from gate.model.speedup.curves import TuneInputError


def test_counters_that_are_not_prefix_wise_are_refused():
    with pytest.raises(TuneInputError, match="prefix-wise"):
        PositionCounters(None, 3, 100, (50, 60, 10), "bad")
    with pytest.raises(TuneInputError, match="per-position counters for depth"):
        PositionCounters(None, 3, 100, (50, 40), "bad")


def test_pooled_windows_add_counters():
    a = PositionCounters("x", 2, 100, (80, 60), "a")
    b = PositionCounters("x", 2, 300, (210, 150), "b")
    p = pooled([a, b], "x", "ab")
    assert (p.drafts, p.accepted_per_position) == (400, (290, 210))
    with pytest.raises(TuneInputError, match="different depths"):
        pooled([a, PositionCounters("x", 3, 10, (5, 4, 3), "c")], "x", "mixed")


def test_counters_errors_are_tunes_input_errors() -> None:
    assert TuneInputError is CountersError
    with pytest.raises(TuneInputError, match="prefix-wise"):
        PositionCounters(None, 2, 10, (5, 6), "s")
    # only-L samples pool drafts-weighted (exporter.formulas.pooled_length)
    got = pooled([PositionCounters(None, 3, 100, (), "a", acceptance_length=3.0),
                  PositionCounters(None, 3, 300, (), "b", acceptance_length=2.0)], None, "ab")
    assert got.acceptance_length == pytest.approx(2.25)

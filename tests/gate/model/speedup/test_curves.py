"""Acceptance length by depth (gate/model/speedup/curves.py): exact below the measured k, extrapolated above."""

from __future__ import annotations

import math

import pytest

from gate.model.speedup.counters import PositionCounters
from gate.model.speedup.curves import acceptance_curve, conditional_rates, wilson


def test_extrapolation_is_the_geometric_decay_of_the_conditional_acceptance():
    # seed 004 at 2K: per position 434/371/298 of 467 drafts
    c = PositionCounters("2K", 3, 467, (434, 371, 298), "seed 004")
    curve = acceptance_curve(c, 5)
    c0, c1, c2 = 434 / 467, 371 / 434, 298 / 371
    assert curve.conditional == pytest.approx((c0, c1, c2))
    r = math.sqrt((c1 / c0) * (c2 / c1))
    p3 = 298 / 467 * (c2 * r)
    p4 = p3 * (c2 * r * r)
    assert curve.at(4).acceptance_length == pytest.approx(1 + (434 + 371 + 298) / 467 + p3)
    assert curve.at(5).acceptance_length == pytest.approx(1 + (434 + 371 + 298) / 467 + p3 + p4)
    assert round(curve.at(5).acceptance_length, 3) == 4.169
    lo_r, hi_r = c1 / c0, c2 / c1  # smallest and largest measured ratio: the band's ends
    lo5 = 1 + (434 + 371 + 298) / 467 + 298 / 467 * c2 * lo_r * (1 + c2 * lo_r * lo_r)
    hi5 = 1 + (434 + 371 + 298) / 467 + 298 / 467 * c2 * hi_r * (1 + c2 * hi_r * hi_r)
    assert curve.at(5).model_low == pytest.approx(lo5)
    assert curve.at(5).model_high == pytest.approx(hi5)
    # the whole band adds the measured depth's sampling half-widths (467 drafts)
    k3 = curve.at(3)
    assert curve.at(5).low == pytest.approx(lo5 - (k3.acceptance_length - k3.low))
    assert curve.at(5).high == pytest.approx(hi5 + (k3.high - k3.acceptance_length))


def test_conditional_acceptance_is_capped_at_one():
    c = PositionCounters(None, 2, 100, (50, 50), "rising")  # c = 0.5, 1.0: ratio 2
    curve = acceptance_curve(c, 4)
    assert curve.at(3).acceptance_length == pytest.approx(2.0 + 0.5)  # c3 = min(1, 2) = 1
    assert curve.at(4).acceptance_length == pytest.approx(2.5 + 0.5)


def test_one_measured_position_band_runs_from_no_further_acceptance_to_constant_conditional():
    c = PositionCounters(None, 1, 100, (80,), "k=1")
    curve = acceptance_curve(c, 3)
    p3 = curve.at(3)
    assert p3.basis == "extrapolated"
    assert p3.model_low == pytest.approx(1.8)
    assert p3.low == pytest.approx(1 + wilson(80, 100)[0])
    assert p3.acceptance_length == pytest.approx(1 + 0.8 + 0.64 + 0.512)
    assert curve.notes and "no decay ratio" in curve.notes[0]


def test_length_only_source_cannot_resolve_depth():
    c = PositionCounters(None, 3, 400, (), "sglang gauge", acceptance_length=2.9)
    curve = acceptance_curve(c, 8)
    assert [(p.k, p.basis) for p in curve.points] == [(3, "measured")]
    assert "depth cannot be resolved" in curve.notes[0]


def test_conditional_rates_zero_after_a_position_never_accepted():
    assert conditional_rates([0.5, 0.0, 0.0]) == (0.5, 0.0, 0.0)

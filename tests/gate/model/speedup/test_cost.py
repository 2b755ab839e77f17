"""The verify cycle's cost by depth (gate/model/speedup/cost.py): declared at one k, or fitted."""

from __future__ import annotations

import pytest

from gate.model.speedup.cost import CostSample, DraftBand, cycle_models
from gate.model.speedup.curves import TuneInputError


def test_declared_cost_band_is_seed004s_draft_step_band():
    samples = [CostSample("2K", None, 0, 14.14, "seed 004"), CostSample("2K", None, 3, 31.16, "seed 004")]
    (m,) = cycle_models(samples, DraftBand(0.50, None))
    assert m.kind == "declared"
    assert (m.draft_low_ms, m.draft_high_ms) == pytest.approx((0.50, (31.16 - 14.14) / 3))  # 5.67 ms
    c5 = m.cycle(5)
    assert (c5.low_ms, c5.high_ms) == pytest.approx((31.16 + 2 * 0.50, 31.16 + 2 * (31.16 - 14.14) / 3))
    assert m.cycle(3).kind == "measured" and m.cycle(3).ms == 31.16
    c1 = m.cycle(1)  # below k0 the band flips: a dearer draft step makes a shallower cycle cheaper
    assert (c1.low_ms, c1.high_ms) == pytest.approx((31.16 - 2 * (31.16 - 14.14) / 3, 31.16 - 2 * 0.50))
    assert "assumption" in m.statement()


def test_fitted_cost_from_cycles_at_several_k():
    # t_cycle = 10 + 2 k exactly at k = 1, 2, 3; the fit recovers it and predicts k = 5
    samples = [CostSample(None, 4, 0, 9.0, "p")] + [CostSample(None, 4, k, 10 + 2 * k, "p") for k in (1, 2, 3)]
    (m,) = cycle_models(samples)
    assert m.kind == "fitted"
    assert (m.verify_ms, m.draft_ms, m.residual_ms) == pytest.approx((10.0, 2.0, 0.0))
    assert m.cycle(5).ms == pytest.approx(20.0) and m.cycle(5).kind == "fitted"
    assert m.cycle(2).kind == "measured"


def test_empty_declared_band_is_an_error():
    samples = [CostSample(None, None, 0, 14.14, "s"), CostSample(None, None, 3, 31.16, "s")]
    with pytest.raises(TuneInputError, match="empty"):
        cycle_models(samples, DraftBand(6.0, None))

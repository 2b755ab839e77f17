"""Predicted speedup by depth (gate/model/speedup/predict.py): L(k) x t_step / t_cycle(k), its band, the best k."""

from __future__ import annotations

import pytest

from gate.model.speedup.cost import CostSample, cycle_models
from gate.model.speedup.counters import PositionCounters
from gate.model.speedup.curves import acceptance_curve
from gate.model.speedup.predict import dominating, predict
from gate.stats import fall_through


def _curve(k: int = 3) -> object:
    return acceptance_curve(PositionCounters(None, 3, 522, (446, 393, 331), "ngram fixture"), k)


def test_speedup_is_length_times_step_over_cycle_with_its_band():
    samples = [CostSample(None, 1, 0, 10.0, "p")] + [CostSample(None, 1, k, 11 + 1.0 * k, "p") for k in (1, 2, 3)]
    res = predict([_curve(5)], cycle_models(samples), 5)
    p3 = res.at(None, 1, 3)
    assert p3.speedup == pytest.approx((1 + 1170 / 522) * 10 / 14)
    p5 = res.at(None, 1, 5)
    assert p5.speedup == pytest.approx(p5.acceptance_length * 10 / 16)
    assert p5.speedup_low == pytest.approx(p5.acceptance_low * 10 / 16)
    assert res.best and res.best[0].k == max(res.points, key=lambda p: p.speedup).k


def test_a_noisy_fit_never_predicts_a_cycle_cheaper_than_a_plain_step():
    # medians 30, 16, 12 ms at k = 1, 2, 3 (a contended machine): the fit's slope is negative
    samples = [CostSample(None, 1, 0, 10.0, "p")] + [CostSample(None, 1, k, t, "p")
                                                      for k, ts in ((1, (30, 31, 90)), (2, (16,)), (3, (12,)))
                                                      for t in ts]
    (m,) = cycle_models(samples)
    assert m.measured[0][1] == 31  # the median of 30, 31, 90, not the mean
    assert m.draft_ms < 0
    c5 = m.cycle(5)
    assert c5.ms >= 10.0 and c5.low_ms >= 10.0  # t_cycle >= t_step: one target forward per cycle
    res = predict([_curve(5)], [m], 5)
    assert any("fitted draft step is negative" in a for a in res.assumptions)
    assert res.at(None, 1, 5).speedup <= res.at(None, 1, 5).acceptance_length


def test_crossover_interpolates_where_the_best_speedup_falls_through_one():
    assert fall_through([(1, 1.5), (4, 1.2), (8, 0.8)]) == pytest.approx(4 + 0.2 * 4 / 0.4)  # 6.0
    assert fall_through([(1, 1.5), (4, 1.2)]) is None
    samples = []
    for b, step in ((1, 10.0), (8, 10.0)):
        samples.append(CostSample(None, b, 0, step, "p"))
        for k in (1, 2, 3):
            samples.append(CostSample(None, b, k, (11 + k) if b == 1 else (30 + 5 * k), "p"))
    res = predict([_curve(3)], cycle_models(samples), 3)
    assert res.crossover_concurrency is not None and 1 < res.crossover_concurrency < 8


def test_dominating_depths_have_their_whole_band_above():
    samples = [CostSample(None, None, 0, 10.0, "p")] + [CostSample(None, None, k, 10.5 + 0.1 * k, "p")
                                                         for k in (1, 2, 3)]
    res = predict([_curve(3)], cycle_models(samples), 3)
    assert [p.k for p in dominating(res, None, None, 1)] == [2, 3]
    assert dominating(res, None, None, 3) == []


def test_without_costs_acceptance_only():
    res = predict([_curve(5)], [], 5)
    assert res.best == [] and all(p.speedup is None for p in res.points)
    assert any("no step costs" in a for a in res.assumptions)

"""The probe as an instrument (issue 23): its own ceiling, open-loop arrivals, ABBA pairing, client-bound cells.

What is real: the null engine (gate.probe.null_engine, vLLM 0.32's chunk fields from
tests/fixtures/probe/vllm-0.32.0-stream-nospec.json) is a real loopback server driven by the probe's own client
and release code. The records are built by tests.gate.checks.acceptance.test_comparison's builder (complete records as
`specgate probe` writes them); the rates are made up to sit on either side of the rules' thresholds.
"""

from __future__ import annotations

import statistics

import pytest

from gate.checks.acceptance.comparison import compare
from gate.evidence.probe_vetting import record_defects
from gate.evidence.probes import CeilingPoint, ClientCeiling, Pairing
from gate.model.speedup.pays import Verdict
from gate.probe.batch import arrival_offsets
from gate.probe.ceiling import NullEngine, measure_point
from gate.probe.runner import abba, pair_cells
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, SLOW, record


def test_arrivals_are_seeded_poisson_and_the_same_in_both_arms():
    a = arrival_offsets(4.0, 2000, seed=7)
    assert a == arrival_offsets(4.0, 2000, seed=7) and a != arrival_offsets(4.0, 2000, seed=8)
    assert a[0] == 0.0 and all(y >= x for x, y in zip(a, a[1:], strict=False))
    gaps = [y - x for x, y in zip(a, a[1:], strict=False)]
    # Exp(4): mean 0.25 s, sd 0.25 s; over 1999 gaps the mean's sd is 0.0056, so ±0.02 is ~3.5 sd
    assert statistics.mean(gaps) == pytest.approx(0.25, abs=0.02)
    assert statistics.stdev(gaps) == pytest.approx(0.25, abs=0.03)


def test_abba_order():
    assert [abba(r) for r in (1, 2, 3, 4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]


def test_the_client_ceiling_against_the_null_engine():
    with NullEngine() as engine:
        point, spread = measure_point(engine, 2, tokens=16, requests=4)
    assert point.concurrency == 2 and point.tokens_per_second > 0
    assert point.server_tokens_per_second is not None and point.server_tokens_per_second > 0
    assert spread >= 0


def _ceiling(tps: float) -> ClientCeiling:
    return ClientCeiling(method="test", output_tokens=64, points=[CeilingPoint(concurrency=1, tokens_per_second=tps)])


def test_a_cell_within_2x_of_the_ceiling_is_no_evidence():
    base = record("baseline", {("chat", 1): BASE})
    spec = record("speculative", {("chat", 1): FAST}).model_copy(update={"client_ceiling": _ceiling(60.0)})
    p = compare(base, spec).point("chat", 1)
    assert p is not None and p.verdict is Verdict.INCONCLUSIVE  # FAST 30-34 tok/s: 2 x 30 >= 60
    assert "client-bound" in p.reason and "60 tok/s" in p.reason
    far = spec.model_copy(update={"client_ceiling": _ceiling(1000.0)})
    assert compare(base, far).point("chat", 1).verdict is Verdict.PAYS  # type: ignore[union-attr]


def test_a_record_cannot_unmark_a_client_bound_cell():
    spec = record("speculative", {("chat", 1): FAST})
    cells = [c.model_copy(update={"client_bound": False}) for c in spec.cells]
    lying = spec.model_copy(update={"cells": cells, "client_ceiling": _ceiling(60.0)})
    assert any("marks it not client-bound" in d for d in record_defects(lying))


def _open(rec, rates):  # type: ignore[no-untyped-def]
    """The record's cells re-labelled as open-loop cells at `rates` (by concurrency 1, 2, 4 -> rates)."""
    cells = [c.model_copy(update={"request_rate": rates[c.concurrency], "concurrency": 8, "requests": 8,
                                  "arrival_seed": c.repetition - 1,
                                  "arrival_offsets_seconds": [i * 0.1 for i in range(8)]}) for c in rec.cells]
    return rec.model_copy(update={"cells": cells})


def test_open_loop_points_and_the_crossover_per_request_rate():
    rates = {1: 0.5, 2: 1.0, 4: 2.0}
    base = _open(record("baseline", {("chat", 1): BASE, ("chat", 2): BASE, ("chat", 4): BASE}), rates)
    spec = _open(record("speculative", {("chat", 1): FAST, ("chat", 2): FAST, ("chat", 4): SLOW}), rates)
    assert record_defects(base) == [] and record_defects(spec) == []
    c = compare(base, spec)
    assert [(p.request_rate, p.verdict) for p in c.points] == [
        (0.5, Verdict.PAYS), (1.0, Verdict.PAYS), (2.0, Verdict.DOES_NOT_PAY)]
    assert c.crossover_concurrency is None
    # speedups 32/22 = 1.4545 at 1/s and 12/22 = 0.5455 at 2/s: 1 + (1.4545 - 1) / (1.4545 - 0.5455) = 1.5
    assert c.crossover_request_rate == pytest.approx(1.5)
    assert c.to_json()["rate_crossovers"]["chat"]["between"] == [1.0, 2.0]


def test_pairing_is_reported():
    base = record("baseline", {("chat", 1): BASE})
    spec = record("speculative", {("chat", 1): FAST})
    base = base.model_copy(update={"pairing": Pairing(partner="spec.json"),
                                   "cells": [c.model_copy(update={"started_at": 1000.0 + 10 * c.repetition})
                                             for c in base.cells]})
    spec = spec.model_copy(update={"pairing": Pairing(partner="base.json"),
                                   "cells": [c.model_copy(update={"started_at": 1003.0 + 10 * c.repetition})
                                             for c in spec.cells]})
    cb, cs = pair_cells(base.cells, spec.cells)
    assert {c.pair_apart_seconds for c in (*cb, *cs)} == {3.0}
    got = compare(base, spec).pairing
    assert got == {"order": "ABBA", "pairs": 5, "max_apart_seconds": 3.0, "median_apart_seconds": 3.0}


def _rate_comparison():  # type: ignore[no-untyped-def]
    """Open-loop points 0.5/s pays, 1/s pays, 2/s does not pay: crossover 1.5/s (the test above)."""
    rates = {1: 0.5, 2: 1.0, 4: 2.0}
    base = _open(record("baseline", {("chat", 1): BASE, ("chat", 2): BASE, ("chat", 4): BASE}), rates)
    spec = _open(record("speculative", {("chat", 1): FAST, ("chat", 2): FAST, ("chat", 4): SLOW}), rates)
    return compare(base, spec)


@pytest.mark.parametrize(("rate", "verdict", "words"), [
    (1.0, Verdict.PAYS, "mix chat at request rate 1/s: chat at request rate 1/s pays"),  # measured there
    (0.75, Verdict.PAYS, "between measured 0.5/s and 1/s, both pays"),
    (1.2, Verdict.INCONCLUSIVE, "not measured; between 1/s (pays) and 2/s (does_not_pay); crossover at request "
                                "rate 1.5/s"),  # below the interpolated crossover: an interpolation never passes
    (1.5, Verdict.DOES_NOT_PAY, "at or past the crossover at request rate 1.5/s"),
    (1.8, Verdict.DOES_NOT_PAY, "at or past the crossover at request rate 1.5/s"),
    (2.0, Verdict.DOES_NOT_PAY, "chat at request rate 2/s does not pay"),
    (0.25, Verdict.INCONCLUSIVE, "not measured and outside the probed request rates (0.5/s, 1/s, 2/s)"),
    (4.0, Verdict.INCONCLUSIVE, "not measured and outside the probed request rates (0.5/s, 1/s, 2/s)"),
])
def test_a_declared_request_rate_is_placed_among_the_open_loop_points(rate, verdict, words):  # type: ignore[no-untyped-def]
    from gate.checks.acceptance.comparison import answer_for_mix

    # the plan's concurrency (8) is the open-loop cells' request count: it must not decide the placement
    a = answer_for_mix(_rate_comparison(), "chat", "chat", 8, request_rate=rate)
    assert a.verdict is verdict, a.reason
    assert words in a.reason, a.reason
    v = a.values()
    assert v["request_rate"] == rate and v["crossover_request_rate"] == pytest.approx(1.5)
    assert all(p["request_rate"] is not None for p in v["points"])


def test_the_two_axes_are_never_mixed():
    from gate.checks.acceptance.comparison import answer_for_mix

    # closed loop: pays at concurrency 1; open loop: does not pay at 2/s, its cells of 8 requests (concurrency 8)
    base = record("baseline", {("chat", 1): BASE})
    spec = record("speculative", {("chat", 1): FAST})
    ob = _open(record("baseline", {("chat", 4): BASE}), {4: 2.0})
    os_ = _open(record("speculative", {("chat", 4): SLOW}), {4: 2.0})
    c = compare(base.model_copy(update={"cells": [*base.cells, *ob.cells]}),
                spec.model_copy(update={"cells": [*spec.cells, *os_.cells]}))
    # concurrency 8 is only the open-loop cells' request count: no closed-loop point there, so outside 1..1
    at8 = answer_for_mix(c, "chat", "chat", 8)
    assert at8.verdict is Verdict.INCONCLUSIVE and "outside the probed concurrencies (1)" in at8.reason
    assert answer_for_mix(c, "chat", "chat", 1).verdict is Verdict.PAYS
    # a declared rate ignores the closed-loop point that pays
    assert answer_for_mix(c, "chat", "chat", 1, request_rate=2.0).verdict is Verdict.DOES_NOT_PAY
    # a declared rate with closed-loop records only, and a concurrency with open-loop records only
    closed_only = compare(base, spec)
    a = answer_for_mix(closed_only, "chat", "chat", 1, request_rate=2.0)
    assert a.verdict is Verdict.INCONCLUSIVE
    assert "no open-loop points of this mix (measured concurrencies: 1); probe it with --request-rate" in a.reason
    b = answer_for_mix(_rate_comparison(), "chat", "chat", 8)
    assert b.verdict is Verdict.INCONCLUSIVE
    assert "only open-loop points of this mix (request rates 0.5/s, 1/s, 2/s)" in b.reason


def test_the_ceiling_is_the_median_trial_so_one_stall_does_not_decide_it(monkeypatch: pytest.MonkeyPatch):
    """The real null engine runs; the trials' rates are then fixed to the e2e's stalled reading (134 tok/s at C = 2)
    beside two usual ones, to show which trial becomes the point."""
    from gate.probe import ceiling

    rates = iter([50.0, 134.0, 9000.0, 12000.0])  # the warm-up first (not counted), then the three trials
    real = ceiling.measure_point

    def fixed(engine, concurrency, tokens=ceiling.CEILING_TOKENS, requests=None, timeout=60.0):  # type: ignore[no-untyped-def]
        point, spread = real(engine, concurrency, tokens, requests=requests)
        return point.model_copy(update={"tokens_per_second": next(rates)}), spread

    monkeypatch.setattr(ceiling, "measure_point", fixed)
    got = ceiling.measure([2], tokens=8)
    assert [(p.concurrency, p.tokens_per_second) for p in got.points] == [(2, 9000.0)]
    assert "median of 3 trials" in got.method

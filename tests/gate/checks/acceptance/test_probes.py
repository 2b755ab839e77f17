"""The acceptance line's probe evidence (evidence.probes): fail where the plan's mix does not pay, pass
where it pays, inconclusive where the probes cannot tell — on synthetic records with known speedups
(tests/gate/checks/acceptance/test_comparison.py's builders: 5 vs 5 fully separated arms give p = 1/252)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, SLOW, record


def plan(tmp: Path, mixes: list[tuple[str, int]], files: list[str], min_speedup: float | None = None,
         shape: tuple[int, int] = (256, 512), request_rate: float | None = None, **over: Any):
    """A vLLM 0.32.0 ngram k = 3 plan serving `m`, each mix of `shape` (the records' 256/512) and declared
    `request_rate` (none by default), `over` merged in. The records' version (test_comparison.py): without one the
    plan's rejection default is unknown and no record is its evidence (test_probes_identity.py)."""
    data = {"name": "p", "target": {"name": "m"},  # the records' served model (tests/gate/checks/acceptance/test_comparison.py)
            "engine": {"kind": "vllm", "version": "0.32.0",
                       "speculative": {"method": "ngram", "num_speculative_tokens": 3}},
            "workload": [{"name": n, "concurrency": c, "prompt_tokens": shape[0], "output_tokens": shape[1],
                          **({"request_rate": request_rate} if request_rate is not None else {})} for n, c in mixes],
            "slo": {"target_acceptance_length": 2.0, "target_source": "traffic",
                    **({"min_speedup": min_speedup} if min_speedup else {})},
            "evidence": {"probes": files}}
    for key, value in over.items():
        data[key] = {**data.get(key, {}), **value}
    return plan_from_dict(data, base_dir=tmp)


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    # pays at 1 (32/22 = 1.45x), does not pay at 8 (12/22 = 0.55x): crossover 1 + 0.5 x 7 = 4.5
    base = record("baseline", {("chat", 1): BASE, ("chat", 8): BASE})
    spec = record("speculative", {("chat", 1): FAST, ("chat", 8): SLOW})
    (tmp_path / "b.json").write_text(json.dumps(base.to_json()))
    (tmp_path / "s.json").write_text(json.dumps(spec.to_json()))
    return ["b.json", "s.json"]  # relative to the plan


def test_pays_at_the_plans_concurrency_passes(tmp_path: Path, files: list[str]) -> None:
    r = judge(plan(tmp_path, [("chat", 1)], files), "pre", [], [])
    assert r.status is Status.PASS, r.reason
    assert "probes: mix chat at concurrency 1: chat at concurrency 1 pays" in r.reason
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "pays"


def test_does_not_pay_fails_without_min_speedup_naming_both_speeds_and_the_crossover(tmp_path: Path,
                                                                                    files: list[str]) -> None:
    r = judge(plan(tmp_path, [("chat", 8)], files), "pre", [], [])
    assert r.status is Status.FAIL, r.reason
    assert "speculative 12 tok/s vs baseline 22 tok/s" in r.reason
    assert "crossover at concurrency 4.5" in r.reason
    assert r.values["probes"]["comparison"]["crossover_concurrency"] == pytest.approx(4.5)


def test_where_probes_cannot_tell_is_inconclusive(tmp_path: Path, files: list[str]) -> None:
    # 2 lies between a paying 1 and a non-paying 8 but below the crossover 4.5; 16 is outside the range
    for c in (2, 16):
        assert judge(plan(tmp_path, [("chat", c)], files), "pre", [], []).status is Status.INCONCLUSIVE
    # past the crossover, between the two measured points
    assert judge(plan(tmp_path, [("chat", 6)], files), "pre", [], []).status is Status.FAIL
    # a mix the probes never measured (other name, other shape)
    r = judge(plan(tmp_path, [("long", 1)], files, shape=(4096, 512)), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "no probe cells of this mix" in r.reason


def test_min_speedup_above_the_measured_win_fails(tmp_path: Path, files: list[str]) -> None:
    r = judge(plan(tmp_path, [("chat", 1)], files, min_speedup=1.5), "pre", [], [])
    assert r.status is Status.FAIL and "below min_speedup 1.5" in r.reason


def test_bad_probe_evidence_is_inconclusive_never_pass(tmp_path: Path, files: list[str]) -> None:
    (tmp_path / "bad.json").write_text("{")
    for fs, words in ((["bad.json", files[1]], "not JSON"), ([files[1], files[1]], "one baseline and one speculative"),
                      (["missing.json", files[1]], "cannot read")):
        r = judge(plan(tmp_path, [("chat", 1)], fs), "pre", [], [])
        assert r.status is Status.INCONCLUSIVE and words in r.reason, r.reason


def test_no_probes_no_change(tmp_path: Path) -> None:
    r = judge(plan(tmp_path, [("chat", 1)], []), "pre", [], [])
    assert "probes" not in r.values


def _open_loop_files(tmp: Path) -> list[str]:
    """The records of tests/gate/probe/test_instrument.py's open-loop comparison: 0.5/s and 1/s pay, 2/s does not
    (speedups 32/22 and 12/22: crossover_request_rate 1.5/s), every cell of 8 requests (concurrency 8)."""
    from tests.gate.probe.test_instrument import _open

    rates = {1: 0.5, 2: 1.0, 4: 2.0}
    base = _open(record("baseline", {("chat", 1): BASE, ("chat", 2): BASE, ("chat", 4): BASE}), rates)
    spec = _open(record("speculative", {("chat", 1): FAST, ("chat", 2): FAST, ("chat", 4): SLOW}), rates)
    (tmp / "b.json").write_text(json.dumps(base.to_json()))
    (tmp / "s.json").write_text(json.dumps(spec.to_json()))
    return ["b.json", "s.json"]


def _rate_plan(tmp: Path, files: list[str], rate: float | None):
    return plan(tmp, [("chat", 8)], files, request_rate=rate)


@pytest.mark.parametrize(("rate", "status"), [(0.75, Status.PASS), (1.2, Status.INCONCLUSIVE),
                                              (1.8, Status.FAIL), (4.0, Status.INCONCLUSIVE)])
def test_a_declared_request_rate_is_placed_among_the_probes_rates(tmp_path: Path, rate: float,
                                                                 status: Status) -> None:
    # 0.75/s between two that pay; 1.2/s below the crossover 1.5/s between pays and does-not-pay; 1.8/s past it;
    # 4/s outside the measured 0.5-2/s
    r = judge(_rate_plan(tmp_path, _open_loop_files(tmp_path), rate), "pre", [], [])
    assert r.status is status, r.reason
    assert f"probes: mix chat at request rate {rate:g}/s" in r.reason
    mix = r.values["probes"]["mixes"]["chat"]
    assert mix["request_rate"] == rate and mix["crossover_request_rate"] == pytest.approx(1.5)
    if status is Status.INCONCLUSIVE and rate > 2:
        assert "outside the probed request rates (0.5/s, 1/s, 2/s)" in r.reason


def test_without_a_declared_rate_open_loop_probes_do_not_place_the_mix(tmp_path: Path) -> None:
    # the cells' concurrency 8 is their request count, not a closed-loop point at the plan's concurrency 8
    r = judge(_rate_plan(tmp_path, _open_loop_files(tmp_path), None), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "only open-loop points of this mix" in r.reason and "declare its workload request_rate" in r.reason


def test_a_declared_rate_with_closed_loop_probes_only_is_inconclusive(tmp_path: Path, files: list[str]) -> None:
    r = judge(_rate_plan(tmp_path, files, 1.0), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "no open-loop points of this mix (measured concurrencies: 1, 8)" in r.reason


def _per_request_files(tmp: Path, lengths: list[float] | None) -> list[str]:
    base = record("baseline", {("chat", 1): BASE})
    spec = record("speculative", {("chat", 1): FAST})
    if lengths is not None:  # one cell carries the per-request values the engine reported
        spec.cells[0] = spec.cells[0].model_copy(update={"per_request_acceptance_length": lengths})
    (tmp / "b.json").write_text(json.dumps(base.to_json()))
    (tmp / "s.json").write_text(json.dumps(spec.to_json()))
    return ["b.json", "s.json"]


def _per_request_plan(tmp: Path, files: list[str], required: float):
    p = plan(tmp, [("chat", 1)], files)
    return p.model_copy(update={"slo": p.slo.model_copy(update={"per_request": True, "required_fraction": required})})


def test_per_request_slo_from_probe_records(tmp_path: Path) -> None:
    # 8 requests, 6 at or above the target 2.0: share 0.75
    files = _per_request_files(tmp_path, [1.5, 1.9, 2.0, 2.4, 2.6, 3.1, 3.3, 3.9])
    ok = judge(_per_request_plan(tmp_path, files, 0.75), "pre", [], [])
    assert ok.status is Status.PASS, ok.reason
    assert "6 of 8 requests at L ≥ 2" in ok.reason and ok.values["probes"]["per_request"]["share"] == 0.75
    bad = judge(_per_request_plan(tmp_path, files, 0.8), "pre", [], [])
    assert bad.status is Status.FAIL, bad.reason  # the served rate pays; 75 % of requests < 80 % required


def test_per_request_slo_without_per_request_values_is_inconclusive(tmp_path: Path) -> None:
    r = judge(_per_request_plan(tmp_path, _per_request_files(tmp_path, None), 0.5), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "no per-request acceptance" in r.reason

"""Tokens per joule per arm in `compare` (issue 38): the same rank test and bands as speed, labelled by source.

Records are built in the test (no GPU): each cell's joules are chosen so its tokens per joule is known —
512 output tokens over 512 / tpj joules (about 11 W over the cells' wall clock, so the idle baselines are 6 W:
the intake refuses an idle baseline above what a cell drew, gate.model.speedup.energy.energy_defects). 5 vs 5 with every speculative cell above every baseline one gives
the exact one-sided p = 1/252, as for speed (test_comparison.py). A record without energy compares exactly
as before (no "energy" key), and records written before issue 38 still load.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.checks.acceptance.comparison import CompareError, compare
from gate.cli import main
from gate.evidence.probes import CellEnergy, ProbeRecord
from gate.model.speedup.pays import Verdict
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, record

SOURCE = "dcgm:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)"


def with_energy(r: ProbeRecord, tpj: list[float], idle: float = 6.0,
                method: str = "energy counter") -> ProbeRecord:
    cells = [c.model_copy(update={"energy": CellEnergy(joules=c.output_tokens / t, source=SOURCE, method=method,
                                                         gpus=["0"], idle_watts=idle)})
             for c, t in zip(r.cells, tpj, strict=True)]
    return r.model_copy(update={"cells": cells})


def pair(base_tpj: list[float], spec_tpj: list[float]) -> tuple[ProbeRecord, ProbeRecord]:
    return (with_energy(record("baseline", {("chat", 1): BASE}), base_tpj),
            with_energy(record("speculative", {("chat", 1): FAST}), spec_tpj, idle=6.3))


def test_more_tokens_per_joule_is_significant() -> None:
    b, s = pair([1.9, 1.95, 1.96, 2.0, 2.01], [2.9, 2.95, 2.97, 3.0, 3.1])
    c = compare(b, s)
    (e,) = c.energy
    assert e.result.verdict is Verdict.PAYS
    assert e.result.p_value == pytest.approx(1 / 252)
    assert e.result.baseline_tokens_per_joule == pytest.approx(1.96)
    assert e.result.speculative_tokens_per_joule == pytest.approx(2.97)
    assert e.result.speculative_joules_per_token == pytest.approx(1 / 2.97)
    assert e.result.interval_kind == "observed_range"
    assert (e.source, e.method, e.scope) == (SOURCE, "energy counter", "board")
    assert (e.baseline_idle_watts, e.speculative_idle_watts) == (6.0, 6.3)
    doc = c.to_json()
    assert doc["energy"][0]["verdict"] == "pays" and doc["energy"][0]["ratio"] == pytest.approx(2.97 / 1.96)


def test_min_ratio_and_fewer_tokens_per_joule() -> None:
    b, s = pair([1.9, 1.95, 1.96, 2.0, 2.01], [2.0, 2.05, 2.06, 2.1, 2.11])
    (e,) = compare(b, s, min_tokens_per_joule_ratio=1.5).energy
    assert e.result.verdict is Verdict.DOES_NOT_PAY and "below min_tokens_per_joule_ratio 1.5" in e.result.reason
    b, s = pair([2.9, 2.95, 2.97, 3.0, 3.1], [1.9, 1.95, 1.96, 2.0, 2.01])
    (e,) = compare(b, s).energy
    assert e.result.verdict is Verdict.DOES_NOT_PAY and "fewer tokens per joule" in e.result.reason


def test_three_against_three_is_not_significant() -> None:
    b = with_energy(record("baseline", {("chat", 1): BASE[:3]}), [1.0, 1.1, 1.2])
    s = with_energy(record("speculative", {("chat", 1): FAST[:3]}), [2.0, 2.1, 2.2])
    (e,) = compare(b, s).energy
    assert e.result.verdict is Verdict.INCONCLUSIVE and e.result.p_value == pytest.approx(0.05)


def test_no_energy_no_key_and_one_arms_energy_not_judged() -> None:
    b, s = record("baseline", {("chat", 1): BASE}), record("speculative", {("chat", 1): FAST})
    c = compare(b, s)
    assert c.energy == () and "energy" not in c.to_json()
    (e,) = compare(with_energy(b, [2.0] * 5), s).energy  # speed is still judged; tokens per joule are not
    assert e.result.verdict is Verdict.INCONCLUSIVE
    assert e.result.reason.startswith("a partial answer: energy was read on the baseline arm only")


def test_integrated_power_is_labelled_and_not_compared_with_a_counter() -> None:
    b = with_energy(record("baseline", {("chat", 1): BASE}), [1.9, 1.95, 1.96, 2.0, 2.01], method="integrated power")
    s = with_energy(record("speculative", {("chat", 1): FAST}), [2.9, 2.95, 2.97, 3.0, 3.1])
    with pytest.raises(CompareError, match="not the same deployment: energy was read differently on the arms"):
        compare(b, s)
    s = with_energy(record("speculative", {("chat", 1): FAST}), [2.9, 2.95, 2.97, 3.0, 3.1], method="integrated power")
    (e,) = compare(b, s).energy
    assert e.method == "integrated power"


def test_cli_text_and_exit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b, s = pair([1.9, 1.95, 1.96, 2.0, 2.01], [2.0, 2.05, 2.06, 2.1, 2.11])
    fb, fs = tmp_path / "b.json", tmp_path / "s.json"
    fb.write_text(json.dumps(b.to_json()), encoding="utf-8")
    fs.write_text(json.dumps(s.to_json()), encoding="utf-8")
    assert main(["compare", str(fb), str(fs)]) == 0  # speed pays; energy reported only
    out = capsys.readouterr().out
    assert "energy chat at concurrency 1 (board, energy counter, dcgm:" in out and "tok/J 1.96 -> 2.06" in out
    assert main(["compare", str(fb), str(fs), "--min-tokens-per-joule-ratio", "1.5"]) == 1

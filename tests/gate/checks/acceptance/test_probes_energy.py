"""The acceptance line judges `slo.min_tokens_per_joule_ratio` on a plan's probe records (issue 38), not only
`specgate compare`: fail where the speculative arm's tokens per joule fall short of the ratio, pass where they
reach it, inconclusive where the records carry no energy at the plan's load — never a pass.

Records are test_comparison_energy.py's: speed pays at concurrency 1 (32 vs 22 tok/s, p = 1/252), and each
cell's joules are chosen so its tokens per joule is known.
"""

from __future__ import annotations

import json
from pathlib import Path

from gate.evidence.probes import ProbeRecord
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, record
from tests.gate.checks.acceptance.test_comparison_energy import with_energy
from tests.gate.checks.acceptance.test_probes import plan

LOW = [1.9, 1.95, 1.96, 2.0, 2.01]  # baseline tok/J, median 1.96
HIGH = [2.9, 2.95, 2.97, 3.0, 3.1]  # speculative, median 2.97: ratio 1.515
LITTLE = [2.0, 2.05, 2.06, 2.1, 2.11]  # speculative, median 2.06: ratio 1.05, still significantly more


def _files(tmp: Path, base: ProbeRecord, spec: ProbeRecord) -> list[str]:
    (tmp / "b.json").write_text(json.dumps(base.to_json()))
    (tmp / "s.json").write_text(json.dumps(spec.to_json()))
    return ["b.json", "s.json"]


def _records(spec_tpj: list[float] | None) -> tuple[ProbeRecord, ProbeRecord]:
    base = record("baseline", {("chat", 1): BASE})
    spec = record("speculative", {("chat", 1): FAST})
    if spec_tpj is None:
        return base, spec
    return with_energy(base, LOW), with_energy(spec, spec_tpj, idle=6.3)


def _judge(tmp: Path, spec_tpj: list[float] | None, ratio: float | None, concurrency: int = 1):
    files = _files(tmp, *_records(spec_tpj))
    slo = {"min_tokens_per_joule_ratio": ratio} if ratio is not None else {}
    return judge(plan(tmp, [("chat", concurrency)], files, slo=slo), "pre", [], [])


def test_worse_tokens_per_joule_than_required_fails_with_the_numbers(tmp_path: Path) -> None:
    r = _judge(tmp_path, LITTLE, 1.5)
    assert r.status is Status.FAIL, r.reason
    assert "tokens per joule (min_tokens_per_joule_ratio 1.5), mix chat at concurrency 1" in r.reason
    assert "2.06 vs 1.96 tok/J" in r.reason and "below min_tokens_per_joule_ratio 1.5" in r.reason
    assert "board, energy counter, dcgm:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)" in r.reason
    e = r.values["probes"]["energy"]["chat"]
    assert e["verdict"] == "does_not_pay" and e["speculative_tokens_per_joule"] == 2.06


def test_the_ratio_held_passes(tmp_path: Path) -> None:
    r = _judge(tmp_path, HIGH, 1.5)
    assert r.status is Status.PASS, r.reason
    assert "more tokens per joule with speculation: 2.97 vs 1.96 tok/J" in r.reason
    assert r.values["probes"]["energy"]["chat"]["verdict"] == "pays"
    assert r.values["probes"]["comparison"]["min_tokens_per_joule_ratio"] == 1.5


def test_records_without_energy_leave_the_ratio_inconclusive(tmp_path: Path) -> None:
    r = _judge(tmp_path, None, 1.5)
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "the probe records carry no energy there (measured with energy: none" in r.reason
    assert r.values["probes"]["energy"] == {"chat": None}


def test_energy_elsewhere_than_the_plans_load_is_not_interpolated(tmp_path: Path) -> None:
    # concurrency 2 has no cell: speed there is outside the measured range too, and energy is never placed
    r = _judge(tmp_path, HIGH, 1.5, concurrency=2)
    assert r.status is Status.INCONCLUSIVE
    assert "no energy there (measured with energy: 1;" in r.reason


def test_without_the_ratio_energy_does_not_change_the_line(tmp_path: Path) -> None:
    r = _judge(tmp_path, LITTLE, None)
    assert r.status is Status.PASS, r.reason  # speed pays; tok/J is not asked for
    assert "energy" not in r.values["probes"] and "tokens per joule (min" not in r.reason


def _reported() -> dict[str, object]:
    def arm(tps: float, w: float) -> dict[str, object]:
        return {"tokens_per_second": {"value": tps, "source": "t"}, "watts": {"value": w, "source": "t"}}
    return {"reported": {"energy": [{"point": "2K", "baseline": arm(70.72, 36.0),
                                     "speculative": arm(107.89, 36.3)}]}}


def test_reported_energy_defers_the_ratio_to_the_probe_records(tmp_path: Path) -> None:
    # reported values alone leave the ratio inconclusive (one value per arm); beside probe records with energy
    # that hold it, the line passes on them and says where the ratio was judged
    files = _files(tmp_path, *_records(HIGH))
    slo = {"min_tokens_per_joule_ratio": 1.5}
    r = judge(plan(tmp_path, [("chat", 1)], files, slo=slo, evidence=_reported()), "pre", [], [])
    assert r.status is Status.PASS, r.reason
    assert "min_tokens_per_joule_ratio 1.5 is judged on the probe records" in r.reason
    alone = judge(plan(tmp_path, [("chat", 1)], [], slo=slo, evidence=_reported()), "pre", [], [])
    assert alone.status is Status.INCONCLUSIVE and "not judged on one reported value per arm" in alone.reason

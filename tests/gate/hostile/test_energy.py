"""Energy cells through the one intake (issue 38): generated mutations of a record's energy readings, each refused
with its invariant (gate.model.speedup.energy.energy_defects / energy_pair_defects, called from
gate.evidence.probe_vetting's record_defects / pair_defects).

Records are tests/gate/hostile/test_hostile.py's clean native pair with a DCGM counter reading on every cell (300 W
over the cell's wall clock, 60 W idle). Mutated values are set on the parsed records (`model_copy`), so a NaN or a
negative joule the schema would stop at the door still reaches the intake's own rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.checks.acceptance.comparison import compare
from gate.evidence.intake import probe_records
from gate.evidence.probes import CellEnergy, ProbeRecord
from gate.model.invariants import COMPLETENESS, IDENTITY, PLAUSIBILITY, invariant_of
from gate.model.speedup.energy import MAX_WATTS_PER_GPU
from gate.model.speedup.pays import Verdict
from tests.gate.hostile.test_hostile import NOW, _native

MUTATIONS = settings(derandomize=True, deadline=None, max_examples=20, database=None)
DCGM = "dcgm:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)"
WATTS, IDLE = 300.0, 60.0


def _energy(joules: float, **over: Any) -> CellEnergy:
    fields: dict[str, Any] = {"joules": joules, "source": DCGM, "method": "energy counter", "scope": "board",
                              "gpus": ["0"], "idle_watts": IDLE, **over}
    return CellEnergy.model_construct(**fields)  # unvalidated: the intake, not the schema, must refuse


def _record(arm: str, energy: Callable[[int, float], CellEnergy | None] | None = None) -> ProbeRecord:
    """The clean native record of `arm`, each cell i given `energy(i, wall_seconds)` (default: the clean reading)."""
    rec = ProbeRecord.model_validate(_native(arm))
    make = energy or (lambda i, wall: _energy(WATTS * wall))
    return rec.model_copy(update={"cells": [c.model_copy(update={"energy": make(i, c.wall_seconds)})
                                            for i, c in enumerate(rec.cells)]})


def _read(base: ProbeRecord, spec: ProbeRecord) -> list[str]:
    return probe_records([("b.json", base), ("s.json", spec)], NOW.timestamp())


def _refused(reasons: list[str], invariant: str) -> None:
    assert reasons, "passed"
    assert invariant in {invariant_of(r.split(": ", 1)[1]) for r in reasons}, reasons


def test_clean_energy_reads_clean() -> None:
    assert _read(_record("baseline"), _record("speculative")) == []


@given(arm=st.sampled_from(["baseline", "speculative"]), cell=st.integers(0, 1),
       joules=st.one_of(st.floats(max_value=-1e-9, allow_nan=False), st.sampled_from([math.nan, math.inf, -math.inf])))
@MUTATIONS
def test_joules_finite_and_not_negative(arm: str, cell: int, joules: float) -> None:
    bad = _record(arm, lambda i, wall: _energy(joules if i == cell else WATTS * wall))
    other = _record("speculative" if arm == "baseline" else "baseline")
    base, spec = (bad, other) if arm == "baseline" else (other, bad)
    _refused(_read(base, spec), PLAUSIBILITY)


@given(gpus=st.integers(1, 8), factor=st.floats(1.001, 1e4), zero=st.booleans())
@MUTATIONS
def test_mean_power_within_a_gpus(gpus: int, factor: float, zero: bool) -> None:
    # above 3 kW per GPU counted, or nothing drawn at all: not a GPU's energy
    watts = 0.0 if zero else MAX_WATTS_PER_GPU * gpus * factor
    spec = _record("speculative", lambda i, wall: _energy(watts * wall, gpus=[str(g) for g in range(gpus)],
                                                        idle_watts=None))
    _refused(_read(_record("baseline"), spec), PLAUSIBILITY)


@given(over=st.floats(1.001, 100.0), neg=st.booleans())
@MUTATIONS
def test_idle_baseline_at_most_the_measured(over: float, neg: bool) -> None:
    idle = -over if neg else WATTS * over
    base = _record("baseline", lambda i, wall: _energy(WATTS * wall, idle_watts=idle))
    _refused(_read(base, _record("speculative")), PLAUSIBILITY)


@given(source=st.text(max_size=20).filter(lambda s: not s.startswith(("dcgm:", "nvml:"))))
@MUTATIONS
def test_energy_source_known(source: str) -> None:
    spec = _record("speculative", lambda i, wall: _energy(WATTS * wall, source=source))
    _refused(_read(_record("baseline"), spec), IDENTITY)


OTHER_READINGS: list[dict[str, Any]] = [
    {"scope": "wall"},
    {"source": "nvml:nvmlDeviceGetTotalEnergyConsumption (mJ)"},
    {"method": "integrated power", "source": "dcgm:DCGM_FI_DEV_POWER_USAGE (W)"},
    {"source": "dcgm:DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL (J)"},
]


@given(other=st.sampled_from(OTHER_READINGS), within=st.booleans(), arm=st.sampled_from(["baseline", "speculative"]))
@MUTATIONS
def test_one_quantity_on_both_arms(other: dict[str, Any], within: bool, arm: str) -> None:
    # board vs wall, DCGM vs NVML vs integrated power: across the arms, or inside one record
    bad = _record(arm, lambda i, wall: _energy(WATTS * wall, **other) if not within or i == 0
                  else _energy(WATTS * wall))
    clean = _record("speculative" if arm == "baseline" else "baseline")
    base, spec = (bad, clean) if arm == "baseline" else (clean, bad)
    _refused(_read(base, spec), IDENTITY)


@given(arm=st.sampled_from(["baseline", "speculative"]), cell=st.integers(0, 1))
@MUTATIONS
def test_a_meter_that_dropped_out_is_no_reading(arm: str, cell: int) -> None:
    bad = _record(arm, lambda i, wall: None if i == cell else _energy(WATTS * wall))
    clean = _record("speculative" if arm == "baseline" else "baseline")
    base, spec = (bad, clean) if arm == "baseline" else (clean, bad)
    _refused(_read(base, spec), COMPLETENESS)


@pytest.mark.parametrize("arm", ["baseline", "speculative"])
def test_energy_on_one_arm_only_is_not_judged(arm: str) -> None:
    """Not a defect of the pair (speed is still compared): tokens per joule are not judged, with the reason."""
    none = ProbeRecord.model_validate(_native("speculative" if arm == "baseline" else "baseline"))
    base, spec = (_record(arm), none) if arm == "baseline" else (none, _record(arm))
    assert _read(base, spec) == []
    points = compare(base, spec, now=NOW.timestamp(), min_tokens_per_joule_ratio=1.0).energy
    assert points and all(e.result.verdict is Verdict.INCONCLUSIVE for e in points)
    assert all(invariant_of(e.result.reason) == COMPLETENESS and f"on the {arm} arm only" in e.result.reason
               for e in points)

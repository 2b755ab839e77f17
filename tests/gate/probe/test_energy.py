"""gate.probe.energy against fakes (issue 38): no GPU in the session that wrote these tests.

The DCGM fakes are pages shaped like dcgm-exporter's (fixtures/*.prom, each citing where its names and
units come from: the default counters file up to 4.8.x in mJ, the 4.9.0 generation in J). The NVML fake
is a module object with the documented calls of nvidia-ml-py's `pynvml`: nvmlInit, nvmlDeviceGetCount,
nvmlDeviceGetHandleByIndex, nvmlDeviceGetTotalEnergyConsumption (mJ since driver load, Volta and newer),
nvmlDeviceGetPowerUsage (mW).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gate.commands._probe import energy_source
from gate.evidence.probes import Cell, ProbeError, ProbeRecord
from gate.probe.energy import (
    DCGM_ENERGY_J,
    DCGM_ENERGY_MJ,
    EnergyMeter,
    GpuReading,
    dcgm_reader,
    integrate,
    nvml_reader,
    parse_dcgm,
    parse_source,
)

FIXTURES = Path(__file__).parent / "fixtures"


def page(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "metric", "unit"), [("dcgm-4.8-energy-mj.prom", DCGM_ENERGY_MJ, "mJ"),
                                                       ("dcgm-4.9-energy-j.prom", DCGM_ENERGY_J, "J")])
def test_both_generations_read_in_joules(name: str, metric: str, unit: str) -> None:
    r = parse_dcgm(page(name))
    assert r.joules == {"0": pytest.approx(123456789.0), "1": pytest.approx(98765432.0)}
    assert r.source == f"dcgm:{metric} ({unit})"
    assert r.watts == {"0": 312.5, "1": 71.0}
    assert parse_dcgm(page(name), gpus=["0"]).joules == {"0": pytest.approx(123456789.0)}


def test_help_line_decides_the_unit() -> None:
    text = page("dcgm-4.9-energy-j.prom").replace("(in J)", "(in mJ)")
    assert parse_dcgm(text).joules["0"] == pytest.approx(123456.789)


@pytest.mark.parametrize(("name", "power"), [("dcgm-4.8-energy-mj.prom", "DCGM_FI_DEV_POWER_USAGE"),
                                             ("dcgm-4.9-energy-j.prom", "DCGM_FI_DEV_BOARD_POWER_WATTS")])
def test_power_only_page(name: str, power: str) -> None:
    text = "\n".join(x for x in page(name).splitlines() if "ENERGY" not in x)
    r = parse_dcgm(text)
    assert r.joules == {} and r.watts["0"] == 312.5 and r.source == f"dcgm:{power} (W)"


def test_the_49_names_are_dcgm_47s() -> None:
    """The second generation's names are DCGM 4.7's (go-dcgm's base-unit and alias tables), not a guess."""
    assert DCGM_ENERGY_J == "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"
    assert DCGM_ENERGY_J in page("dcgm-4.9-energy-j.prom") and "_J{" not in page("dcgm-4.9-energy-j.prom")


def _scaled(text: str, factor: float) -> str:
    out = []
    for line in text.splitlines():
        if line.startswith(DCGM_ENERGY_MJ + "{"):
            head, value = line.rsplit(" ", 1)
            line = f"{head} {float(value) + factor}"
        out.append(line)
    return "\n".join(out)


def test_counter_meter_differences_and_idle() -> None:
    base = page("dcgm-4.8-energy-mj.prom")
    pages = iter([base, _scaled(base, 36_000.0),  # idle: 36 J per GPU over 1 s (mJ)
                  base, _scaled(base, 500_000.0)])  # the cell: 500 J per GPU
    clock = iter([0.0, 1.0])
    read = dcgm_reader("http://dcgm:9400/metrics", gpus=["0"], fetch=lambda url, t: next(pages))
    meter = EnergyMeter(read, clock=lambda: next(clock))
    assert meter.measure_idle(1.0, sleep=lambda s: None) == pytest.approx(36.0)
    meter.begin()
    cell = meter.end()
    assert cell.joules == pytest.approx(500.0) and cell.method == "energy counter" and cell.scope == "board"
    assert cell.idle_watts == pytest.approx(36.0) and cell.gpus == ["0"]
    assert cell.source == "dcgm:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)"


def test_counter_going_backwards_is_refused() -> None:
    base = page("dcgm-4.8-energy-mj.prom")
    pages = iter([base, _scaled(base, -1000.0)])
    meter = EnergyMeter(dcgm_reader("http://x/metrics", fetch=lambda url, t: next(pages)))
    meter.begin()
    with pytest.raises(ProbeError, match="went backwards"):
        meter.end()


def test_integrated_power() -> None:
    assert integrate([(0.0, 100.0), (1.0, 100.0), (2.0, 200.0)]) == pytest.approx(250.0)
    meter = EnergyMeter(lambda: GpuReading(watts={"0": 50.0}, source="dcgm:DCGM_FI_DEV_POWER_USAGE (W)"),
                        sample_seconds=0.01)
    meter.begin()
    cell = meter.end()
    assert cell.method == "integrated power" and cell.samples is not None and cell.samples >= 2
    assert cell.joules >= 0


class FakeNvml(SimpleNamespace):
    """pynvml's documented calls; `energy_mj` None: the device has no energy counter (pre-Volta)."""

    def __init__(self, energy_mj: list[int] | None, power_mw: int = 36_000) -> None:
        super().__init__(inited=False, energy_mj=energy_mj, power_mw=power_mw)

    def nvmlInit(self) -> None:  # noqa: N802 (pynvml's names)
        self.inited = True

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Any:  # noqa: N802
        return ("handle", i)

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:  # noqa: N802
        if self.energy_mj is None:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.energy_mj.pop(0)

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:  # noqa: N802
        return self.power_mw


def test_nvml_energy_counter_in_millijoules() -> None:
    nvml = FakeNvml([1_000_000, 1_250_000])
    meter = EnergyMeter(nvml_reader(nvml=nvml))
    meter.begin()
    cell = meter.end()
    assert nvml.inited and cell.joules == pytest.approx(250.0)
    assert cell.source == "nvml:nvmlDeviceGetTotalEnergyConsumption (mJ)" and cell.gpus == ["0"]


def test_nvml_power_fallback_is_integrated_power() -> None:
    r = nvml_reader(nvml=FakeNvml(None, power_mw=81_800))()
    assert r.joules == {} and r.watts == {"0": pytest.approx(81.8)}
    assert r.source == "nvml:nvmlDeviceGetPowerUsage (mW)"


def test_sources_and_flag() -> None:
    assert parse_source("nvml") == ("nvml", None)
    assert parse_source("dcgm:http://dcgm:9400/metrics") == ("dcgm", "http://dcgm:9400/metrics")
    with pytest.raises(argparse.ArgumentTypeError):
        energy_source("dcgm:nowhere")
    assert energy_source("nvml") == "nvml"


def test_records_without_energy_still_load_and_with_it_round_trip() -> None:
    cell: dict[str, Any] = {"mix": "m", "concurrency": 1, "repetition": 1, "requests": 4, "output_tokens": 256,
                            "wall_seconds": 2.0, "served_tokens_per_second": 128.0, "failed_requests": 0,
                            "ttft_seconds": {}, "tpot_seconds": {}, "chunk_gap_seconds": {}}
    old = ProbeRecord.model_validate({"schema": "specgate.probe/1", "arm": "baseline", "cells": [cell]})
    assert old.cells[0].energy is None
    cell["energy"] = {"joules": 72.0, "source": "nvml:nvmlDeviceGetTotalEnergyConsumption (mJ)",
                      "method": "energy counter", "idle_watts": 36.0}
    new = ProbeRecord.model_validate({"schema": "specgate.probe/1", "arm": "baseline", "cells": [cell]})
    assert isinstance(new.cells[0], Cell) and new.cells[0].energy is not None
    assert new.cells[0].energy.scope == "board"
    assert ProbeRecord.model_validate(new.to_json()) == new

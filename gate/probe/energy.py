"""The probe's energy readers (issue 38): joules the engine's GPUs drew over each cell, with where they come from.

Why: tokens per joule per arm needs the energy of each cell beside its tokens. Two sources, chosen by
`specgate probe --energy-source`:

- `dcgm:URL` — a dcgm-exporter's /metrics. Its energy counter comes in two naming generations:
  `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` in **millijoules** (the default counters file up to the 4.8.x tags:
  "Total energy consumption since boot (in mJ)"), and from dcgm-exporter 4.9.0 the DCGM 4.7 name in
  **joules** (4.9.0 release notes: "Rename the 23 default and profiling-preset fields that DCGM 4.7 deprecates
  to their new DCGM 4.7 names … energy from millijoules to joules"): `DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL`, DCGM
  4.7's base-unit field 1611 beside the mJ field 156 (NVIDIA/go-dcgm@b7fa3154 pkg/dcgm/base_unit_fields_test.go).
  A page's `# HELP` line saying "(in mJ)" or "(in J)" decides the unit when it disagrees with the table.
  Without an energy counter, power in W is sampled and integrated: `DCGM_FI_DEV_POWER_USAGE` or its DCGM 4.7 name
  `DCGM_FI_DEV_BOARD_POWER_WATTS` (the same field 155; go-dcgm pkg/dcgm/alias_resolution_test.go).
- `nvml` — NVML through `nvidia-ml-py` (module `pynvml`, imported only when asked for, an optional extra):
  `nvmlDeviceGetTotalEnergyConsumption` (mJ since the driver was loaded; Volta and newer), else
  `nvmlDeviceGetPowerUsage` (mW) sampled and integrated.

Every reading is labelled: `method` "energy counter" or "integrated power", `scope` "board" (all of these
are the GPU board's own sensors, not a wall meter), the `source` with its unit, and the idle baseline
(watts over a quiet interval before the run) shown separately and never subtracted silently.
GPUs: the ones the engine uses (`gpus`: DCGM's `gpu` label or NVML indices); none given: every GPU read.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, Protocol

from exporter import names
from gate.evidence.probes import CellEnergy, ProbeError
from gate.inputs.fetch import FetchError, deadline_in
from gate.inputs.fetch import fetch as fetch_url
from gate.inputs.redact import redact_url

# The names live in exporter.names (the rules join the same series): ≤ 4.8.x in mJ, ≥ 4.9.0 in J (module docstring).
DCGM_ENERGY_MJ = names.DCGM_ENERGY_MJ_SERIES
DCGM_ENERGY_J = names.DCGM_ENERGY_J_SERIES
DCGM_POWER_W = names.DCGM_POWER_SERIES
DCGM_BOARD_POWER_W = names.DCGM_BOARD_POWER_SERIES
DCGM_POWER_NAMES: frozenset[str] = frozenset({DCGM_POWER_W, DCGM_BOARD_POWER_W})  # field 155 (W), either name
# Joules per unit of each energy counter name.
DCGM_ENERGY_UNITS: Mapping[str, float] = {DCGM_ENERGY_MJ: 1e-3, DCGM_ENERGY_J: 1.0}
_HELP_UNIT = re.compile(r"\(in (mJ|J)\)")
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
SAMPLE_SECONDS = 0.1  # integrated power: NVML and DCGM update power every ~20-100 ms


@dataclass(frozen=True)
class GpuReading:
    """What one read of a source gave per GPU: joules of an energy counter, else watts."""

    joules: dict[str, float] = field(default_factory=dict)
    watts: dict[str, float] = field(default_factory=dict)
    source: str = ""


class Reader(Protocol):
    def __call__(self) -> GpuReading: ...


def parse_dcgm(text: str, gpus: Sequence[str] = ()) -> GpuReading:
    """A dcgm-exporter page → joules per GPU (either generation's counter, in joules) and watts per GPU.

    The `gpu` label names the GPU (dcgm-exporter's; in Kubernetes the page also labels `pod`, `namespace`,
    `container`). `gpus` non-empty: only those."""
    units = dict(DCGM_ENERGY_UNITS)
    joules: dict[str, float] = {}
    watts: dict[str, float] = {}
    used: set[str] = set()
    power: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            parts = line.split(None, 3)
            m = _HELP_UNIT.search(line)
            if len(parts) >= 3 and parts[2] in units and m:
                units[parts[2]] = 1e-3 if m.group(1) == "mJ" else 1.0
            continue
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        name, raw = m.group(1), m.group(3)
        labels: dict[str, str] = dict(_LABEL.findall(m.group(2) or ""))
        gpu = labels.get("gpu", labels.get("UUID", ""))
        if gpus and gpu not in gpus:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if name in units:
            joules[gpu] = joules.get(gpu, 0.0) + value * units[name]
            used.add(f"{name} ({'mJ' if units[name] == 1e-3 else 'J'})")
        elif name in DCGM_POWER_NAMES:
            watts[gpu] = value
            power.add(name)
    source = "dcgm:" + (" + ".join(sorted(used)) if joules
                        else " + ".join(f"{n} (W)" for n in sorted(power or {DCGM_POWER_W})))
    return GpuReading(joules, watts, source)


def dcgm_reader(url: str, gpus: Sequence[str] = (), timeout: float = 5.0,
                fetch: Callable[[str, float], str] | None = None) -> Reader:
    """A reader of a dcgm-exporter URL (`fetch(url, timeout) -> text`, default an HTTP GET)."""

    def get(u: str, t: float) -> str:
        answer = fetch_url(u, deadline=deadline_in(t), max_bytes=16 << 20)
        if answer.status != 200:
            raise OSError(f"HTTP {answer.status}")
        return answer.text()

    def read() -> GpuReading:
        try:
            return parse_dcgm((fetch or get)(url, timeout), gpus)
        except (OSError, FetchError) as e:
            raise ProbeError(f"energy source dcgm:{redact_url(url)}: {e}") from None

    return read


def nvml_reader(gpus: Sequence[str] = (), nvml: ModuleType | Any | None = None) -> Reader:
    """A reader of NVML through `pynvml` (nvidia-ml-py), imported here and only here (an optional extra)."""
    if nvml is None:
        try:
            import pynvml  # type: ignore[import-not-found, import-untyped, unused-ignore]

            nvml = pynvml
        except ImportError:
            raise ProbeError("--energy-source nvml needs nvidia-ml-py: pip install 'specgate-llm[energy]'") from None
    try:
        nvml.nvmlInit()
        indices = [int(g) for g in gpus] if gpus else list(range(nvml.nvmlDeviceGetCount()))
        handles = {str(i): nvml.nvmlDeviceGetHandleByIndex(i) for i in indices}
    except Exception as e:  # NVMLError and its subclasses: one line, exit 3
        raise ProbeError(f"energy source nvml: {e}") from None

    def read() -> GpuReading:
        joules: dict[str, float] = {}
        watts: dict[str, float] = {}
        for g, h in handles.items():
            try:
                joules[g] = nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0  # mJ since driver load
            except Exception:  # not supported (before Volta): power instead
                try:
                    watts[g] = nvml.nvmlDeviceGetPowerUsage(h) / 1000.0  # mW
                except Exception as e:
                    raise ProbeError(f"energy source nvml: GPU {g}: {e}") from None
        if joules and watts:  # one method for all GPUs of a cell
            joules = {}
        src = ("nvml:nvmlDeviceGetTotalEnergyConsumption (mJ)" if joules
               else "nvml:nvmlDeviceGetPowerUsage (mW)")
        return GpuReading(joules, watts, src)

    return read


def integrate(samples: Sequence[tuple[float, float]]) -> float:
    """Joules from (seconds, watts) samples by the trapezoid rule (0 with fewer than two)."""
    return sum((t2 - t1) * (w1 + w2) / 2 for (t1, w1), (t2, w2) in zip(samples, samples[1:], strict=False))


class EnergyMeter:
    """Reads one source around each cell: `begin()` before its first request, `end()` after its last.

    An energy counter is differenced (a counter that went backwards — a driver reload, an exporter restart —
    is an error, not a negative cell); without one, power is sampled every `sample_seconds` on a thread and
    integrated ("integrated power")."""

    def __init__(self, read: Reader, *, scope: Literal["board", "wall"] = "board",
                 sample_seconds: float = SAMPLE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self._read, self._scope, self._dt, self._clock = read, scope, sample_seconds, clock
        self._start: GpuReading | None = None
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.idle_watts: float | None = None

    def _sample(self) -> None:
        r = self._read()
        self._samples.append((self._clock(), sum(r.watts.values())))

    def _loop(self) -> None:
        while not self._stop.wait(self._dt):
            self._sample()

    def begin(self) -> None:
        self._start = self._read()
        self._samples = []
        if not self._start.joules:
            self._samples.append((self._clock(), sum(self._start.watts.values())))
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="specgate-energy", daemon=True)
            self._thread.start()

    def end(self) -> CellEnergy:
        start = self._start
        if start is None:
            raise ProbeError("energy meter: end() before begin()")
        self._start = None
        if start.joules:
            stop = self._read()
            missing = sorted(set(start.joules) - set(stop.joules))
            if missing:
                raise ProbeError(f"energy source {start.source}: GPU {', '.join(missing)} vanished during a cell")
            delta = {g: stop.joules[g] - start.joules[g] for g in start.joules}
            back = sorted(g for g, d in delta.items() if d < 0)
            if back:
                raise ProbeError(f"energy source {start.source}: the counter of GPU {', '.join(back)} went "
                                 "backwards (driver reload or exporter restart): the cell has no energy reading")
            return CellEnergy(joules=sum(delta.values()), source=start.source, method="energy counter",
                              scope=self._scope, gpus=sorted(start.joules), idle_watts=self.idle_watts)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        return CellEnergy(joules=integrate(self._samples), source=start.source, method="integrated power",
                          scope=self._scope, gpus=sorted(start.watts), idle_watts=self.idle_watts,
                          samples=len(self._samples))

    def measure_idle(self, seconds: float, sleep: Callable[[float], None] = time.sleep) -> float:
        """The idle baseline: mean watts over `seconds` with nothing sent, before the run (kept on the meter
        and shown on every cell, separately from its joules)."""
        t0 = self._clock()
        self.begin()
        sleep(seconds)
        reading = self.end()
        elapsed = max(self._clock() - t0, 1e-9)
        self.idle_watts = reading.joules / elapsed
        return self.idle_watts


def parse_source(spec: str) -> tuple[Literal["dcgm", "nvml"], str | None]:
    """`--energy-source`: `dcgm:URL` or `nvml` (argparse turns the ValueError into a usage error, exit 3)."""
    if spec == "nvml":
        return "nvml", None
    if spec.startswith("dcgm:") and re.match(r"^https?://\S+$", spec[5:]):
        return "dcgm", spec[5:]
    raise ValueError(f"expected dcgm:http(s)://HOST:PORT/metrics or nvml, got {spec!r}")


def open_meter(spec: str, gpus: Sequence[str] = ()) -> EnergyMeter:
    """The meter for a `--energy-source` value."""
    kind, url = parse_source(spec)
    return EnergyMeter(dcgm_reader(url, gpus) if kind == "dcgm" and url else nvml_reader(gpus))

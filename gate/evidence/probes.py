"""Floor 2: probe records as evidence — the record type, its validated reader, and what one evaluation read.

Why here and not in the probe tool: the acceptance line judges a rollout from these files
(`evidence.probes`), and the lines read no files (design.md "Floors"): the records are read once
by `gate.evidence.gather` onto the evidence the lines are given, like every other source. The
probe tool (floor 2½, `gate.probe`) writes them and imports the type from here.

A file that is not exactly this shape (a missing arm, a non-finite rate, a cell without its
wall clock) is refused when it is read, not half-used. Unknown values are null, never 0. Whether a
well-formed record is consistent with itself, with the other arm and with the plan (identity, cells,
dates) is `gate.evidence.probe_vetting`, applied by `compare` and the acceptance line: the reader keeps
accepting every `specgate.probe/1` file, so tune and `--append` read what they always read.

Shape (docs/design.md "Probe and compare"):
`{"schema", "arm": "baseline"|"speculative", "engine", "engine_version", "model",
  "speculative": {"method", "num_speculative_tokens", ...} | null, "workload": [...],
  "warmup_requests", "repetitions", "created_at", "source",
  "cells": [{"mix", "concurrency", "repetition", "requests", "output_tokens", "prompt_tokens",
             "wall_seconds", "served_tokens_per_second", "failed_requests",
             "ttft_seconds": {"p50", "p90", "p99"}, "tpot_seconds": {...}, "chunk_gap_seconds": {...},
             "acceptance_length", "acceptance_rate", "drafts", "draft_tokens", "accepted_tokens",
             "per_request_acceptance_length": [...] | null, "metrics_reset",
             "request_rate"?, "arrival_seed"?, "arrival_offsets_seconds"?, "started_at"?,
             "pair_apart_seconds"?, "client_bound"?,
             "energy"?: {"joules", "source", "method", "scope", "gpus", "idle_watts", "samples"}}],
  "client_ceiling"?: {"method", "output_tokens", "points": [{"concurrency", "tokens_per_second",
                      "server_tokens_per_second"}]},
  "pairing"?: {"order": "ABBA", "partner"}}`  (? = optional: added by issues 23 and 38, unknown in older records)

served_tokens_per_second = output_tokens / wall_seconds, where wall_seconds runs from the first
request's send to the last request's end (first-token waiting included, as seed 000's served
rate is). tpot_seconds are quantiles over requests of (t_last_token − t_first_token) /
(completion_tokens − 1), the engines' own TPOT definition, timed by the client;
chunk_gap_seconds are gaps between streamed chunks — a speculative arm streams several tokens
per chunk, so gaps are per engine step, not per token, and never compare arms.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from exporter.engines import EngineKind
from gate.inputs.loading import read_text
from gate.status import InputError

# A record holds its cells and, with vLLM's per-request metrics, one L per request: a few MiB at most.
PROBE_RECORD_MAX_BYTES = 64 << 20

SCHEMA: Literal["specgate.probe/1"] = "specgate.probe/1"

NonNeg = Annotated[float, Field(ge=0)]


class ProbeError(ValueError):
    """A probe that cannot run or a record that cannot be read: one line, exit 3."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        # NaN/inf are not evidence (json.loads accepts them): refuse them at the door.
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("non-finite number")
        return v


class Quantiles(_Strict):
    """p50/p90/p99 of one latency over a cell (linear interpolation between order statistics)."""

    p50: NonNeg | None = None
    p90: NonNeg | None = None
    p99: NonNeg | None = None


class MixSpec(_Strict):
    """One request shape the probe sent: prompts of `prompt_tokens` (or the user's own) and `output_tokens`."""

    name: str
    prompt_tokens: int | None = Field(default=None, ge=1)
    output_tokens: int = Field(ge=1)
    prompts_from: str  # "engine_tokenizer", "approximate_words" or "jsonl:<file name>"
    concurrency: int | None = Field(default=None, ge=1)  # the plan's own concurrency, if from a plan
    temperature: float = Field(default=0.0, ge=0)  # 0: greedy; sampled traffic accepts differently
    request_rate: float | None = Field(default=None, gt=0)  # the plan's own arrival rate (requests/s), if declared


class CellEnergy(_Strict):
    """Energy the engine's GPUs drew over one cell (issue 38; gate.probe.energy reads it), with where it comes from.

    `joules` is the whole reading over the cell's wall clock, summed over `gpus`; `idle_watts` is the same
    GPUs' power measured before the run and shown separately (never subtracted silently); `method` says whether
    an energy counter was differenced or power was sampled and integrated ("integrated power"); `scope` whether
    it is the board's energy (DCGM, NVML, nvidia-smi) or a wall meter's."""

    joules: NonNeg
    source: str  # e.g. "dcgm:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)", "nvml:nvmlDeviceGetTotalEnergyConsumption"
    method: Literal["energy counter", "integrated power"]
    scope: Literal["board", "wall"] = "board"
    gpus: list[str] = Field(default_factory=list)
    idle_watts: NonNeg | None = None
    samples: int | None = Field(default=None, ge=1)  # integrated power: how many readings


class Cell(_Strict):
    """One repetition of one (mix, concurrency) — `requests` requests, `concurrency` at a time — or, open loop,
    of one (mix, request_rate): `requests` requests sent at seeded Poisson arrival times, whatever is in flight
    (`concurrency` is then the most that can be: the cell's requests).

    Optional fields added by issue 23 (records written before it load with them unknown): `request_rate`,
    `arrival_seed`, `arrival_offsets_seconds` (open loop), `started_at` (epoch seconds of the first send, so
    two arms can be set against each other), `pair_apart_seconds` (`probe ab`: seconds between this cell's
    start and its partner's in the other arm), `client_bound` (the rate is within `CLIENT_BOUND_FACTOR` of
    the record's `client_ceiling`: the client, not the engine, may have set it; None: not assessed).
    """

    mix: str
    concurrency: int = Field(ge=1)
    repetition: int = Field(ge=1)
    requests: int = Field(ge=1)
    output_tokens: int = Field(ge=0)
    prompt_tokens: int | None = Field(default=None, ge=0)
    wall_seconds: float = Field(gt=0)
    served_tokens_per_second: NonNeg
    failed_requests: int = Field(ge=0)
    ttft_seconds: Quantiles
    tpot_seconds: Quantiles
    chunk_gap_seconds: Quantiles
    acceptance_length: float | None = Field(default=None, ge=1)
    acceptance_rate: float | None = Field(default=None, ge=0, le=1)
    drafts: NonNeg | None = None
    draft_tokens: NonNeg | None = None
    accepted_tokens: NonNeg | None = None
    per_request_acceptance_length: list[Annotated[float, Field(ge=1)]] | None = None
    metrics_reset: bool = False  # the engine restarted inside the cell: its counters are no evidence
    request_rate: float | None = Field(default=None, gt=0)  # open loop: Poisson arrivals per second; None: closed
    arrival_seed: int | None = Field(default=None, ge=0)
    arrival_offsets_seconds: list[NonNeg] | None = None  # scheduled sends, seconds after the cell's start
    started_at: NonNeg | None = None  # time.time() of the cell's first send
    pair_apart_seconds: NonNeg | None = None  # probe ab: |this cell's start - its partner's| in the other arm
    client_bound: bool | None = None
    energy: CellEnergy | None = None  # issue 38: `specgate probe --energy-source`; None: not measured
    # issue 39: the engine's own inter-token latency over the cell (vLLM: one observation per engine step and
    # request, so its mean is the step's wall time: a target step, or on the speculative arm a whole verify cycle)
    engine_step_seconds: float | None = Field(default=None, gt=0)
    engine_steps: NonNeg | None = None  # how many observations that mean is over

    @property
    def point(self) -> tuple[str, int, float | None]:
        """The operating point the cell measures: (mix, concurrency, request_rate); repetitions share it."""
        return self.mix, self.concurrency, self.request_rate


# A cell whose rate is within this factor of the client's own ceiling is client-bound: no evidence.
CLIENT_BOUND_FACTOR = 2.0


class CeilingPoint(_Strict):
    """The probe's own client against a loopback null engine at one concurrency (gate.probe.null_engine)."""

    concurrency: int = Field(ge=1)
    tokens_per_second: float = Field(gt=0)  # what the client received, one token per chunk
    server_tokens_per_second: NonNeg | None = None  # what the null engine sent (its own clock)


class ClientCeiling(_Strict):
    """The most tokens/s the probe's client could time on this machine when the probe started: a null engine on
    loopback streams pre-made one-token chunks as fast as it can (`gate.probe.null_engine`). Tokens/s of a
    real cell are at least its chunks/s (a speculative arm streams several tokens a chunk), so holding a cell's
    tokens/s to this chunk-bound figure is conservative."""

    method: str
    output_tokens: int = Field(ge=1)
    points: list[CeilingPoint] = Field(min_length=1)

    def at(self, concurrency: int, request_rate: float | None = None) -> float:
        """The ceiling a cell is held to: measured at its concurrency (closed loop), else the lowest measured."""
        if request_rate is None:
            exact = [p.tokens_per_second for p in self.points if p.concurrency == concurrency]
            if exact:
                return min(exact)
        return min(p.tokens_per_second for p in self.points)


class Pairing(_Strict):
    """`specgate probe ab`: the two arms measured interleaved by one command."""

    order: Literal["ABBA"] = "ABBA"  # repetition r: baseline then speculative for odd r, the reverse for even
    partner: str | None = None  # the other arm's record file (its name)


class ProbeRecord(_Strict):
    """One arm's probe: its engine, its speculative settings, and every cell it measured."""

    schema_: Literal["specgate.probe/1"] = Field(default=SCHEMA, alias="schema")
    arm: Literal["baseline", "speculative"]
    engine: EngineKind | None = None
    engine_version: str | None = None
    model: str | None = None
    speculative: dict[str, Any] | None = None
    workload: list[MixSpec] = Field(default_factory=list)
    warmup_requests: int = Field(default=0, ge=0)
    repetitions: int = Field(default=1, ge=1)
    created_at: str | None = None
    source: str | None = None
    cells: list[Cell] = Field(min_length=1)
    client_ceiling: ClientCeiling | None = None  # issue 23; None: not measured (records written before)
    pairing: Pairing | None = None  # issue 23: set by `specgate probe ab`

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def load_record(path: str | Path) -> ProbeRecord:
    """Read and validate one probe record; any defect is a ProbeError naming the file and the field.

    Read through `gate.inputs.loading` (regular files only, size-limited): a FIFO is refused, never waited on.
    """
    p = Path(path)
    try:
        text = read_text(p, "probe record", PROBE_RECORD_MAX_BYTES)
    except InputError as e:
        raise ProbeError(f"{p}: cannot read probe record: {e}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProbeError(f"{p}: not JSON: {e}") from None
    try:
        return ProbeRecord.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise ProbeError(f"{p}: not a probe record: {where}: {err['msg']}") from None


@dataclass(frozen=True)
class ProbeEvidence:
    """The plan's probe records (`evidence.probes`), read once: every record, or the first reason none is usable."""

    files: tuple[str, ...]
    records: tuple[ProbeRecord, ...] = ()
    error: str | None = None
    # When they were read: the evaluation's "now" for their dates (not in the future; in `post`, recent).
    read_at: float = field(default_factory=time.time)

    def arm(self, name: str) -> list[ProbeRecord]:
        return [r for r in self.records if r.arm == name]


def gather_probes(paths: Sequence[str | Path], now: float | None = None) -> ProbeEvidence | None:
    """Read every probe record the plan names; None when it names none. A bad record is the evidence's
    error (the line turns inconclusive with it), never an exception. `now` (default: the time of reading)
    is what the records' dates are judged against (`gate.evidence.probe_vetting`)."""
    if not paths:
        return None
    files = tuple(str(p) for p in paths)
    read_at = time.time() if now is None else now
    try:
        return ProbeEvidence(files, tuple(load_record(p) for p in paths), read_at=read_at)
    except ProbeError as e:
        return ProbeEvidence(files, error=str(e), read_at=read_at)

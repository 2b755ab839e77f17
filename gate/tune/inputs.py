"""Where tune's numbers come from: capture files, a rollout plan, declared costs, tune input files.

Why through the evidence layer: capture pages are read by `gate.evidence.captures.read_page`
(`gate.inputs.loading.read_capture`: a FIFO or a device is refused at once) and turned into
per-position counters by `gate.evidence.positions` — the same reader and the same counters the
gate's acceptance line gets from `gate.evidence.gather`, so `tune` and `check` see one set of
numbers. A plan is read by `gate.plan.model.load_plan`; tune re-implements none of them.

A tune input file (YAML, examples/tune/) names a plan and the few things a plan has no key for:
the draft step's declared band and k_max, each with its source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from exporter.engines.base import EngineSnapshot
from gate.evidence.captures import counters_source, read_group
from gate.evidence.intake import probe_records
from gate.evidence.positions import (
    PositionEvidence,
    capture_point_name,
    counters_from_snapshots,
    from_evidence,
)
from gate.evidence.probes import ProbeError, ProbeRecord, load_record
from gate.inputs.loading import PLAN_LIMITS, parse_yaml, read_text
from gate.model.depth import MAX_SPECULATIVE_DEPTH
from gate.model.speedup.cost import CostSample, DraftBand
from gate.model.speedup.counters import PositionCounters
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.tune import TuneInputs
from gate.plan.model import Plan, PlanError, load_plan
from gate.status import InputError


def from_captures(files: Sequence[Path], point: str | None = None) -> PositionCounters:
    """Windows between consecutive capture files, summed into one sample (gate.evidence.positions)."""
    if len(files) < 2:
        raise TuneInputError("--captures needs BEFORE and AFTER (two capture files in time order)")
    snaps, source = _pages(files)
    return counters_from_snapshots(snaps, point, source)


def _pages(files: Sequence[Path]) -> tuple[list[EngineSnapshot], str]:
    """The capture pages and the source their counters are shown under (`captures.counters_source`: reported
    stays reported in tune's output, as in check's)."""
    snaps, reported = read_group(files)
    return snaps, counters_source("captures " + ", ".join(Path(f).name for f in files), reported)


def plan_positions(plan: Plan) -> list[PositionEvidence]:
    """The plan's capture groups as the evidence layer reads them for `check` (tune --plan reads them itself:
    it gathers nothing else). A file that cannot be read is InputError, as in `check`."""
    groups = plan.evidence.captures
    out = []
    for i, g in enumerate(groups):
        point = capture_point_name(g, i, len(groups))
        snaps, source = _pages(g.files) if len(g.files) >= 2 else ([], "captures " + ", ".join(
            Path(f).name for f in g.files))
        out.append(PositionEvidence.of(snaps, point, source))
    return out


def from_plan(plan: Plan) -> TuneInputs:
    """Per-position counters from the plan's capture groups, step costs from its `costs`."""
    return from_evidence(plan, plan_positions(plan))


@dataclass(frozen=True)
class Sources:
    """What the command's sources gave: the inputs, and a tune input file's k_max and band (flags win)."""

    inputs: TuneInputs
    k_max: int | None
    band: DraftBand | None


def sources(*, captures: Sequence[Path] | None, plan: Path | None, tune_input: Path | None,
            probes: Sequence[Path], exporter: str | None, point: str | None, target_step_ms: float | None,
            verify_cycle_ms: float | None, draft_step_ms: str | None) -> Sources:
    """Every source `specgate tune` was given, read and merged (in this order: tune input's plan, --plan,
    --captures, --exporter, --probe, declared costs). Raises InputError (TuneInputError, PlanError)."""
    inputs = TuneInputs()
    band = parse_draft_band(draft_step_ms)
    k_max = None
    plans: list[Plan] = []
    if tune_input:
        loaded = load_tune_file(tune_input)
        plans.append(loaded.plan)
        band = band or loaded.band
        k_max = loaded.k_max
    if plan:
        plans.append(load_plan(plan))
    for p in plans:
        inputs.add(from_plan(p))
    if captures:
        inputs.counters.append(from_captures(captures, point))
    if exporter:
        inputs.counters.append(from_exporter(exporter, point=point))
    if probes:
        from gate.tune.probe_costs import from_probe_records

        vet_probes(probes)
        inputs.add(from_probe_records(probes))
    if target_step_ms is not None or verify_cycle_ms is not None:
        k_of = {c.point: c.k for c in inputs.counters}
        k = k_of.get(point) or (next(iter(k_of.values())) if len(k_of) == 1 else None) or inputs.plan_k
        inputs.costs += declared_costs(target_step_ms, verify_cycle_ms, k, point)
    return Sources(inputs, k_max, band)


def vet_probes(paths: Sequence[Path]) -> None:
    """tune --probe reads records through the intake `compare` uses (gate.evidence.intake.probe_records): another
    engine, model or mix shape, future dates, rates that are not tokens / wall, copied cells, conflicting records at
    one k and arms of different methods are refused (TuneInputError, the first defect), never predicted from."""
    records: list[tuple[str, ProbeRecord]] = []
    for p in paths:
        try:
            records.append((Path(p).name, load_record(p)))
        except ProbeError as e:
            raise TuneInputError(str(e)) from None
    defects = probe_records(records)
    if defects:
        more = f" (and {len(defects) - 1} more)" if len(defects) > 1 else ""
        raise TuneInputError(f"--probe: {defects[0]}{more}")


def declared_costs(target_step_ms: float | None, verify_cycle_ms: float | None, k: int | None,
                   point: str | None) -> list[CostSample]:
    """--target-step-ms and --verify-cycle-ms (at the measured k)."""
    if target_step_ms is None and verify_cycle_ms is None:
        return []
    if target_step_ms is None or verify_cycle_ms is None:
        raise TuneInputError("--target-step-ms and --verify-cycle-ms go together (the plain step and the cycle at k)")
    if k is None:
        raise TuneInputError("declared costs need the depth they were measured at (captures or a plan)")
    src = "--target-step-ms/--verify-cycle-ms"
    return [CostSample(point, None, 0, target_step_ms, src), CostSample(point, None, k, verify_cycle_ms, src)]


def parse_draft_band(text: str | None) -> DraftBand | None:
    """`LOW` or `LOW:HIGH` (ms); either side may be empty (`:5.67`)."""
    if text is None:
        return None
    lo_s, _, hi_s = text.partition(":")
    try:
        lo = float(lo_s) if lo_s.strip() else None
        hi = float(hi_s) if hi_s.strip() else None
    except ValueError:
        raise TuneInputError(f"--draft-step-ms {text!r}: expected LOW or LOW:HIGH in milliseconds") from None
    if any(v is not None and not math.isfinite(v) for v in (lo, hi)):
        raise TuneInputError(f"--draft-step-ms {text!r}: not a finite number of milliseconds")
    if (lo is not None and lo < 0) or (hi is not None and hi < 0):
        raise TuneInputError(f"--draft-step-ms {text!r}: a draft step cannot cost less than 0 ms")
    return DraftBand(lo, hi, "--draft-step-ms")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DraftStepDecl(_Strict):
    low_ms: Annotated[float, Field(ge=0)] | None = None
    high_ms: Annotated[float, Field(ge=0)] | None = None
    source: str


class TuneFile(_Strict):
    """A tune input file: the plan, and what a plan has no key for (each with its source)."""

    plan: Path
    k_max: Annotated[int, Field(ge=1, le=MAX_SPECULATIVE_DEPTH)] | None = None
    draft_step_ms: DraftStepDecl | None = None
    description: str | None = None


@dataclass(frozen=True)
class LoadedTuneFile:
    plan: Plan
    k_max: int | None
    band: DraftBand | None


def load_tune_file(path: Path) -> LoadedTuneFile:
    """Read a tune input file; every problem is one line."""
    try:
        data = parse_yaml(read_text(path, "tune input", PLAN_LIMITS.max_bytes), f"tune input {path}")
    except InputError as e:
        raise TuneInputError(str(e)) from None
    if not isinstance(data, dict):
        raise TuneInputError(f"{path}: a tune input is a YAML mapping")
    try:
        doc = TuneFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "(file)"
        msg = "unknown key" if err.get("type") == "extra_forbidden" else str(err.get("msg"))
        raise TuneInputError(f"{path}: {where}: {msg}") from None
    plan_path = doc.plan if doc.plan.is_absolute() else path.resolve().parent / doc.plan
    try:
        plan = load_plan(plan_path)
    except PlanError as e:
        raise TuneInputError(str(e)) from None
    band = None
    if doc.draft_step_ms is not None:
        # said with every answer: the band is this file's, so `tune --plan` and `check` (the same plan, no band)
        # may name another best k, and a reader comparing them sees why (issue 36: one best k)
        band = DraftBand(doc.draft_step_ms.low_ms, doc.draft_step_ms.high_ms,
                         f"{path.name} (draft_step_ms: {doc.draft_step_ms.source}); the plan has no key for it, so "
                         "`tune --plan` and `check` take 0 ms up to the step bound and may choose another k")
    return LoadedTuneFile(plan, doc.k_max, band)


def from_exporter(url: str, timeout: float = 10.0, point: str | None = None) -> PositionCounters:
    """Lifetime per-position counters from a specgate exporter's own /metrics (exporter.names).

    The sidecar's counters are monotonic across engine restarts and summed here over its streams,
    so they describe every draft since the sidecar started; if the engine's k changed in that time
    the positions mix depths (a deeper run's positions count in the shallower ones' too).
    The page is one bounded read (`gate.inputs.fetch`: `timeout` for the whole exchange, at most
    `PAGE_BYTES`), so a dripping or oversized answer is one line, exit 3, never a hang.
    """
    from prometheus_client.parser import text_string_to_metric_families

    from exporter.names import SPEC_ACCEPTED_PER_POSITION, SPEC_DRAFT_TOKENS, SPEC_DRAFTS
    from exporter.scrape import split_url
    from gate.inputs.fetch import PAGE_BYTES, FetchError, deadline_in, fetch
    from gate.inputs.redact import redact_url

    base, _ = split_url(url)
    source = f"exporter {redact_url(base)}"
    try:
        r = fetch(base + "/metrics", deadline=deadline_in(timeout), max_bytes=PAGE_BYTES,
                  headers={"Accept": "text/plain; version=0.0.4"})
    except FetchError as e:
        raise TuneInputError(f"{source}: {e}") from None
    if r.status != 200:
        raise TuneInputError(f"{source}: HTTP {r.status} from /metrics")
    drafts = 0.0
    draft_tokens: float | None = None
    per_pos: dict[int, float] = {}
    try:
        for fam in text_string_to_metric_families(r.text()):
            for s in fam.samples:
                if s.name == SPEC_DRAFTS.series:
                    drafts += s.value
                elif s.name == SPEC_DRAFT_TOKENS.series:
                    draft_tokens = (draft_tokens or 0.0) + s.value
                elif s.name == SPEC_ACCEPTED_PER_POSITION.series and s.labels.get("position", "").isdigit():
                    i = int(s.labels["position"])
                    per_pos[i] = per_pos.get(i, 0.0) + s.value
    except ValueError:
        raise TuneInputError(f"{source}: /metrics is not Prometheus text") from None
    if not per_pos or drafts <= 0:
        raise TuneInputError(f"{source}: no per-position acceptance counters yet (no drafts, or an engine "
                             "that does not report positions, e.g. SGLang)")
    k = max(per_pos) + 1
    return PositionCounters(point, k, drafts, tuple(per_pos.get(i, 0.0) for i in range(k)),
                            source + " (lifetime counters)", draft_tokens=draft_tokens)

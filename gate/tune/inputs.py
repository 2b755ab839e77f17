"""Where tune's numbers come from: capture files, a rollout plan, declared costs, tune input files.

Why through `exporter` and `gate.plan.model`: capture pages are parsed by `exporter.scrape` and
windowed by `exporter.derive` (restart-aware; a window spanning a restart is no evidence), and a
plan is read by `gate.plan.model.load_plan` - tune re-implements neither.

A tune input file (YAML, examples/tune/) names a plan and the few things a plan has no key for:
the draft step's declared band and k_max, each with its source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from exporter.derive import derive_window
from exporter.engines.base import EngineSnapshot
from exporter.scrape import ScrapeError, read_file_snapshot
from gate.plan.model import Plan, PlanError, load_plan
from gate.tune.cost import CostSample, DraftBand
from gate.tune.depth import PositionCounters, TuneInputError, pooled


@dataclass
class TuneInputs:
    """Acceptance counters, cost samples and notes gathered from every source given."""

    counters: list[PositionCounters] = field(default_factory=list)
    costs: list[CostSample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plan_k: int | None = None


def _snapshot(path: Path) -> EngineSnapshot:
    try:
        return read_file_snapshot(path)
    except ScrapeError as e:
        raise TuneInputError(f"capture {e}") from None


def counters_between(before: EngineSnapshot, after: EngineSnapshot, point: str | None,
                     source: str) -> list[PositionCounters]:
    """Per-position counters of every speculating stream over one window (exporter.derive)."""
    out: list[PositionCounters] = []
    for w in derive_window(before, after, min_drafts=1):
        if not w.has_spec:
            continue
        if w.reset:
            raise TuneInputError(f"{source}: the engine restarted between the captures; that window is no evidence")
        if not w.drafts:
            continue
        if w.accepted_per_position:
            out.append(PositionCounters(point, len(w.accepted_per_position), w.drafts,
                                        tuple(w.accepted_per_position), source))
        elif w.acceptance_length is not None:
            k = None
            if w.draft_tokens is not None and w.drafts:
                k = round(w.draft_tokens / w.drafts)
            out.append(PositionCounters(point, max(k or 1, 1), w.drafts, (), source,
                                        acceptance_length=w.acceptance_length))
    return out


def from_captures(files: Sequence[Path], point: str | None = None) -> PositionCounters:
    """Windows between consecutive capture files, summed into one sample."""
    if len(files) < 2:
        raise TuneInputError("--captures needs BEFORE and AFTER (two capture files in time order)")
    snaps = [_snapshot(Path(f)) for f in files]
    source = "captures " + ", ".join(Path(f).name for f in files)
    found: list[PositionCounters] = []
    for b, a in zip(snaps, snaps[1:], strict=False):
        found += counters_between(b, a, point, source)
    if not found:
        raise TuneInputError(f"{source}: no speculative-decoding counters moved between the captures")
    return pooled(found, point, source)


def plan_depth(plan: Plan) -> int | None:
    """The plan's k: vLLM num_speculative_tokens, else SGLang draft tokens per verify - 1, else num_steps."""
    spec = plan.engine.speculative
    if spec is None:
        return None
    if spec.num_speculative_tokens is not None:
        return spec.num_speculative_tokens
    if spec.num_draft_tokens is not None and spec.num_draft_tokens > 1:
        return spec.num_draft_tokens - 1
    return spec.num_steps


def from_plan(plan: Plan) -> TuneInputs:
    """Per-position counters from the plan's capture groups, step costs from its `costs`."""
    out = TuneInputs(plan_k=plan_depth(plan))
    for i, group in enumerate(plan.evidence.captures):
        point = group.point or (f"captures {i + 1}" if len(plan.evidence.captures) > 1 else None)
        out.counters.append(from_captures(group.files, point))
    lengths = {c.point: c.measured_length for c in out.counters}
    ks = {c.point: c.k for c in out.counters}
    for i, c in enumerate(plan.costs):
        point = c.point or (f"{c.context_tokens:,} tokens" if c.context_tokens else f"point {i + 1}")
        k = ks.get(point) or (next(iter(ks.values())) if len(ks) == 1 else None) or out.plan_k
        src = f"plan costs[{i}]" + (f" ({c.source})" if c.source else "")
        if k is None:
            raise TuneInputError(f"{src}: the depth k of this cost is unknown "
                                 "(engine.speculative.num_speculative_tokens or captures with per-position counters)")
        if c.verify_cycle_ms is not None and c.target_step_ms is not None:
            out.costs += [CostSample(point, None, 0, c.target_step_ms, src), CostSample(point, None, k, c.verify_cycle_ms, src)]
            continue
        assert c.baseline_tokens_per_second is not None and c.speculative_tokens_per_second is not None
        length = c.acceptance_length or lengths.get(point) or (next(iter(lengths.values())) if len(lengths) == 1 else None)
        if length is None:
            out.notes.append(f"{src}: measured rates without an acceptance length: no cycle time there")
            continue
        # per-sequence rates: step = 1 / r_baseline, cycle = L / r_speculative (DESIGN.md, seed 004's cycleMs)
        out.costs += [CostSample(point, None, 0, 1000.0 / c.baseline_tokens_per_second, src),
                      CostSample(point, None, k, 1000.0 * length / c.speculative_tokens_per_second, src)]
    if out.plan_k is not None:
        for pc in out.counters:
            if pc.k != out.plan_k:
                out.notes.append(f"{pc.source}: counters show depth {pc.k}, the plan says k = {out.plan_k}")
    return out


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
    if (lo is not None and lo < 0) or (hi is not None and hi < 0):
        raise TuneInputError(f"--draft-step-ms {text!r}: a draft step cannot cost less than 0 ms")
    return DraftBand(lo, hi, "--draft-step-ms")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DraftStepDecl(_Strict):
    low_ms: Annotated[float, Field(ge=0)] | None = None
    high_ms: Annotated[float, Field(ge=0)] | None = None
    source: str


class TuneFile(_Strict):
    """A tune input file: the plan, and what a plan has no key for (each with its source)."""

    plan: Path
    k_max: Annotated[int, Field(ge=1, le=64)] | None = None
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
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TuneInputError(f"tune input not found: {path}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise TuneInputError(f"cannot read tune input {path}: {str(e).splitlines()[0]}") from None
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
        band = DraftBand(doc.draft_step_ms.low_ms, doc.draft_step_ms.high_ms, doc.draft_step_ms.source)
    return LoadedTuneFile(plan, doc.k_max, band)


def from_exporter(url: str, timeout: float = 10.0, point: str | None = None) -> PositionCounters:
    """Lifetime per-position counters from a specgate exporter's own /metrics (exporter.names).

    The sidecar's counters are monotonic across engine restarts and summed here over its streams,
    so they describe every draft since the sidecar started; if the engine's k changed in that time
    the positions mix depths (a deeper run's positions count in the shallower ones' too).
    """
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    from exporter.names import SPEC_ACCEPTED_PER_POSITION, SPEC_DRAFTS
    from exporter.scrape import split_url
    from gate.inputs.redact import redact_url

    base, _ = split_url(url)
    source = f"exporter {redact_url(base)}"
    try:
        r = requests.get(base + "/metrics", timeout=(min(timeout, 3.0), timeout),
                         headers={"Accept": "text/plain; version=0.0.4"})
    except requests.RequestException as e:
        raise TuneInputError(f"{source}: {type(e).__name__}") from None
    if r.status_code != 200:
        raise TuneInputError(f"{source}: HTTP {r.status_code} from /metrics")
    drafts = 0.0
    per_pos: dict[int, float] = {}
    try:
        for fam in text_string_to_metric_families(r.text):
            for s in fam.samples:
                if s.name == SPEC_DRAFTS.series:
                    drafts += s.value
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
                            source + " (lifetime counters)")

"""The rollout plan: one YAML file naming everything the gate judges (design.md "The gate").

Why pydantic with `extra="forbid"` everywhere: a typo in a plan (`kv_scop:`) must stop the
gate with an error naming the path, never be silently ignored and turn into a pass.
Paths inside a plan are relative to the plan file. Secrets never live in a plan: auth
fields name an environment variable or a file that holds them.

Fail closed (issue 10): the file is read through gate.loading (regular files only, size,
depth and digit limits, duplicate keys refused); every number must be finite (`.inf`/`.nan`
anywhere is invalid, not a zero or a pass); reported observations are non-negative and
served rates positive; inline geometry passes gate.validation; a drafter section needs
`engine.speculative`; an acceptance target above 1 + k can never be met and is refused.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from exporter.engines.base import EngineKind
from gate.evidence.plausibility import MAX_SPECULATIVE_DEPTH, pool_tokens, speculative_depth, startup_seconds
from gate.loading import PLAN_LIMITS, InputError, load_yaml
from gate.validation import acceptance_target_possible, validate_geometry

KVDtype = Literal["auto", "bf16", "bfloat16", "fp16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp32", "float32"]
Scope = Literal["full", "window", "block"]
SpecMethod = Literal["draft_model", "eagle", "eagle3", "mtp", "nextn", "dflash", "dspark", "ngram", "suffix"]
# Methods that propose from the tokens themselves (prompt lookup; vLLM suffix decoding via arctic-inference):
# no drafter artifact, no drafter KV.
DRAFTERLESS_METHODS: frozenset[str] = frozenset({"ngram", "suffix"})
# Methods whose drafter ships inside the target checkpoint (no second download).
EMBEDDED_METHODS: frozenset[str] = frozenset({"mtp", "nextn"})


class PlanError(InputError):
    """An unusable plan; the message is one line, fit for `specgate: error: ...`."""


def _resolve_path(value: Path | None, info: ValidationInfo) -> Path | None:
    """Relative paths are relative to the plan file's directory (passed as validation context)."""
    if value is None:
        return None
    base = (info.context or {}).get("base_dir") if info.context else None
    p = Path(value).expanduser()
    if not p.is_absolute() and base is not None:
        p = Path(base) / p
    return p


PlanPath = Annotated[Path, AfterValidator(_resolve_path)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]


class _Strict(BaseModel):
    # allow_inf_nan=False: `.inf` / `.nan` in any number is invalid input (`target_step_ms: .inf` made L* 0).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Weights(_Strict):
    """Where an artifact's byte count comes from, best first: a safetensors path, bytes, params × dtype."""

    path: PlanPath | None = None
    bytes: NonNegInt | None = None
    parameters: PositiveInt | None = None
    dtype: KVDtype | None = None
    source: str | None = None


class ModelRef(_Strict):
    """A model artifact: its name, revision, config (file or inline keys) and weights."""

    name: str | None = None
    revision: str | None = None
    config: PlanPath | None = None
    geometry: dict[str, Any] | None = Field(
        default=None, description="inline config.json keys, when no config file is at hand")
    weights: Weights | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _one_config(self) -> ModelRef:
        if self.config is not None and self.geometry is not None:
            raise ValueError("give either config (a file) or geometry (inline keys), not both")
        if self.geometry is not None:
            try:
                validate_geometry(self.geometry, "inline geometry")
            except InputError as e:
                raise ValueError(str(e)) from None
        return self


class Drafter(ModelRef):
    """The draft model: its KV context scope and how it is shipped."""

    embedded: bool = Field(default=False, description="an MTP head inside the target checkpoint")
    kv_scope: Scope = "full"
    window_tokens: PositiveInt | None = None
    sink_tokens: NonNegInt = 0
    block_tokens: PositiveInt | None = None
    tp: PositiveInt | None = None
    trained_against: str | None = None

    @model_validator(mode="after")
    def _scope_inputs(self) -> Drafter:
        if self.kv_scope == "window" and self.window_tokens is None:
            raise ValueError("kv_scope window needs window_tokens")
        return self


# Sane upper bounds of the speculative settings (engines use 1-16 draft steps; SGLang trees a few dozen
# draft tokens): far beyond them a number is a typo, and k bounds every acceptance length (L ≤ 1 + k).
DepthInt = Annotated[int, Field(gt=0, le=MAX_SPECULATIVE_DEPTH)]


class Speculative(_Strict):
    method: SpecMethod
    num_speculative_tokens: DepthInt | None = None
    num_steps: DepthInt | None = None
    eagle_topk: DepthInt | None = None
    num_draft_tokens: Annotated[int, Field(gt=0, le=16 * MAX_SPECULATIVE_DEPTH)] | None = None


class Engine(_Strict):
    kind: EngineKind
    version: str | None = None
    image: str | None = None
    image_digest: str | None = None
    image_bytes: NonNegInt | None = None
    kv_dtype: KVDtype = "auto"
    tp: PositiveInt = 1
    block_size: PositiveInt | None = None
    speculative: Speculative | None = None
    served_model_name: str | None = Field(
        default=None, description="the name the engine serves (its model_name label); default target.name")
    kv_cache_memory_bytes: PositiveInt | None = None
    # Per GPU (per TP rank) in both engines: vLLM --gpu-memory-utilization, SGLang --mem-fraction-static.
    memory_fraction: Annotated[float, Field(gt=0, le=1)] | None = None
    context_cap_tokens: PositiveInt | None = None
    configured_max_total_tokens: PositiveInt | None = None
    prefix_cache: bool | None = None


class Budgets(_Strict):
    storage_bytes: PositiveInt | None = None
    image_bytes: PositiveInt | None = None
    gpu_memory_bytes: PositiveInt | None = None
    startup_seconds: PositiveFloat | None = None


class RequestMix(_Strict):
    """A request shape that matters: `concurrency` requests of prompt + output tokens resident together."""

    name: str
    concurrency: PositiveInt
    prompt_tokens: NonNegInt
    output_tokens: NonNegInt
    source: str | None = None

    @property
    def request_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def demand_tokens(self) -> int:
        return self.concurrency * self.request_tokens


class SLO(_Strict):
    """The acceptance-length SLO, held per batch window (seed 002), not as a lifetime mean."""

    target_acceptance_length: Annotated[float, Field(ge=1)] | None = None
    target_source: str | None = Field(
        default=None, description="where the target comes from: your traffic, a benchmark (a drafter card's macro "
                                  "mean), or a guess")
    alpha: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.05, description="significance level of the one-sided served-rate rank test")
    window_seconds: PositiveFloat = 60.0
    required_fraction: Annotated[float, Field(gt=0, le=1)] = 0.95
    min_drafts: PositiveInt = 1
    min_windows: PositiveInt = 1
    min_speedup: PositiveFloat | None = None
    lookback_seconds: PositiveFloat = 3600.0


class StepCost(_Strict):
    """Step costs at one operating point, for the break-even L* = t_cycle / t_target_step.

    Declared (`verify_cycle_ms`, `target_step_ms`) or measured from per-sequence decode rates
    (`speculative_tokens_per_second` with `acceptance_length`, `baseline_tokens_per_second`).
    """

    point: str | None = None
    context_tokens: PositiveInt | None = None
    target_step_ms: PositiveFloat | None = None
    verify_cycle_ms: PositiveFloat | None = None
    baseline_tokens_per_second: PositiveFloat | None = None
    speculative_tokens_per_second: PositiveFloat | None = None
    acceptance_length: Annotated[float, Field(ge=1)] | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> StepCost:
        declared = self.target_step_ms is not None or self.verify_cycle_ms is not None
        measured = self.baseline_tokens_per_second is not None or self.speculative_tokens_per_second is not None
        if declared and measured:
            raise ValueError("give declared step costs (target_step_ms, verify_cycle_ms) or measured rates, not both")
        if declared and (self.target_step_ms is None or self.verify_cycle_ms is None):
            raise ValueError("declared step costs need both target_step_ms and verify_cycle_ms")
        if measured and (self.baseline_tokens_per_second is None or self.speculative_tokens_per_second is None):
            raise ValueError("measured rates need baseline_tokens_per_second and speculative_tokens_per_second")
        if not declared and not measured:
            raise ValueError("a step cost needs target_step_ms + verify_cycle_ms or the two measured rates")
        return self


class Staging(_Strict):
    mode: Literal["serial", "overlapped"] | None = None
    order: list[str] = Field(default_factory=list)
    warmup_check: str | None = None
    load_seconds: dict[Literal["target", "drafter"], PositiveFloat] = Field(default_factory=dict)


class Observation(_Strict):
    """A fact from a run that is not live, with where it comes from (finite and non-negative)."""

    value: Annotated[float, Field(ge=0)]
    source: str


class ArmComparison(_Strict):
    """Served-rate samples of the baseline arm and the speculative arm for one request mix."""

    mix: str
    baseline: Annotated[list[PositiveFloat], Field(min_length=1)]
    speculative: Annotated[list[PositiveFloat], Field(min_length=1)]
    unit: str = "tokens/s"
    source: str


class RunConditions(_Strict):
    """Seed 001's run-record conditions that only a run can tell, and seed 000's record of the next decision."""

    executed_engine_version: str | None = None
    measurement_denominator: str | None = None
    warmup: str | None = None
    campaign_repetitions: NonNegInt | None = None
    failed_requests: NonNegInt | None = None
    system: str | None = Field(default=None, description="the machines, e.g. two GB10 DGX Sparks, 121 GiB per node")
    node_count: PositiveInt | None = None
    parallelism: str | None = Field(default=None, description="e.g. TP2 over two nodes, NCCL over RoCE")
    experiment_date: str | None = None
    temperature: Annotated[float, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    runtime_execution_revision: str | None = Field(
        default=None, description="the executed runtime's immutable revision (image digest or commit), not a tag")
    queueing: str | None = Field(default=None, description="queueing observed under the target load")
    failures: str | None = Field(default=None, description="failures observed under the target load")
    source: str | None = None


class CorrectnessCheck(_Strict):
    """A correctness check kept alongside performance (seed 000): what was checked and its outcome."""

    name: str
    outcome: Literal["passed", "failed", "not run"]
    detail: str | None = None
    source: str | None = None


class Reported(_Strict):
    kv_pool_tokens: Observation | None = Field(default=None, description="allocated pool with the drafter")
    kv_pool_tokens_without_drafter: Observation | None = None
    served_rate: list[ArmComparison] = Field(default_factory=list)
    startup_seconds: Observation | None = None
    startup_seconds_without_drafter: Observation | None = None
    run: RunConditions | None = None
    correctness: list[CorrectnessCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _possible(self) -> Reported:
        """A pool is a positive whole number of tokens, a cold start positive seconds (plausibility bounds)."""
        for name in ("kv_pool_tokens", "kv_pool_tokens_without_drafter"):
            o = getattr(self, name)
            bad = pool_tokens(o.value) if o is not None else None
            if bad is not None:
                raise ValueError(f"{name}.value: {bad.reason}")
        for name in ("startup_seconds", "startup_seconds_without_drafter"):
            o = getattr(self, name)
            bad = startup_seconds(o.value) if o is not None else None
            if bad is not None:
                raise ValueError(f"{name}.value: {bad.reason}")
        return self


class CaptureGroup(_Strict):
    """Consecutive /metrics captures of one operating point; each neighbouring pair is one window."""

    files: Annotated[list[PlanPath], Field(min_length=1)]
    point: str | None = None
    seconds: PositiveFloat | None = None


class BasicAuth(_Strict):
    username: str
    password_env: str | None = None
    password_file: PlanPath | None = None


def _label_names(names: list[str]) -> list[str]:
    """Prometheus label names only (they are spliced into PromQL `by (...)` clauses)."""
    bad = [n for n in names if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", n)]
    if bad:
        raise ValueError(f"not a Prometheus label name: {', '.join(repr(b) for b in bad)}")
    return names


LabelNames = Annotated[list[str], AfterValidator(_label_names)]
Fraction = Annotated[float, Field(ge=0, le=1)]


class FleetRule(_Strict):
    """How the pods a Prometheus selector matches are judged together (gate.fleet; design.md "Prometheus evidence").

    Every pod (row: `pod_labels` + `group_by`) is judged by the per-window SLO on its own; the fleet
    fails when more than `max_failed_fraction` of the rows fail, is inconclusive when more than
    `max_inconclusive_fraction` are inconclusive (pods with missing data are named there), and
    passes otherwise. A pod the selector should match but that sent nothing at all is only known
    through `expected_pods`: the shortfall counts as inconclusive rows, never as passing ones.
    """

    pod_labels: Annotated[LabelNames, Field(min_length=1)] = Field(
        default_factory=lambda: ["namespace", "pod"],
        description="labels naming one pod (the last one is required on every series); [instance] outside Kubernetes")
    group_by: LabelNames = Field(default_factory=lambda: ["model"],
                                 description="further labels splitting a pod's rows, e.g. [model, drafter_revision]")
    max_failed_fraction: Fraction = 0.0
    max_inconclusive_fraction: Fraction = 0.0
    expected_pods: PositiveInt | None = None


class Cohorts(_Strict):
    """Canary and stable cohorts of one fleet, each a selector added to `selector` (issue 11's shape)."""

    canary: str
    stable: str | None = None


class PrometheusSource(_Strict):
    url: str | None = None
    selector: str | None = Field(default=None, description='label matchers, e.g. namespace="llm",pod=~"qwen-.*"')
    bearer_token_env: str | None = None
    bearer_token_file: PlanPath | None = None
    basic_auth: BasicAuth | None = None
    tenant: str | None = Field(default=None, description="sent as X-Scope-OrgID (Mimir/Cortex tenant; a|b federates)")
    ca_file: PlanPath | None = None
    timeout_seconds: PositiveFloat = 10.0
    end: datetime | float | None = Field(default=None, description="judge history up to this time (default: now)")
    fleet: FleetRule = Field(default_factory=FleetRule)
    cohorts: Cohorts | None = None

    @model_validator(mode="after")
    def _header_safe(self) -> PrometheusSource:
        if self.tenant is not None and not re.fullmatch(r"[A-Za-z0-9!\-_.*'()|]{1,150}", self.tenant):
            raise ValueError("tenant: a Mimir tenant ID is 1-150 of A-Z a-z 0-9 ! - _ . * ' ( ) and | between tenants")
        return self


class KubernetesSource(_Strict):
    namespace: str
    selector: str | None = None
    # The engine's container, not the exporter sidecar's (the chart names it "engine"); when a pod
    # has no container of this name, its first container status is used.
    container: str | None = "engine"


class Evidence(_Strict):
    exporter_url: str | None = None
    engine_url: str | None = None
    captures: list[CaptureGroup] = Field(default_factory=list)
    prometheus: PrometheusSource | None = None
    kubernetes: KubernetesSource | None = None
    reported: Reported = Field(default_factory=Reported)
    # probe records (`specgate probe`) of the baseline and the speculative arm: where it pays (gate.checks.probes)
    probes: list[PlanPath] = Field(default_factory=list)


class Plan(_Strict):
    """A whole rollout plan."""

    name: str
    description: str | None = None
    target: ModelRef
    drafter: Drafter | None = None
    engine: Engine
    budgets: Budgets = Field(default_factory=Budgets)
    workload: list[RequestMix] = Field(default_factory=list)
    slo: SLO = Field(default_factory=SLO)
    costs: list[StepCost] = Field(default_factory=list)
    staging: Staging = Field(default_factory=Staging)
    evidence: Evidence = Field(default_factory=Evidence)
    plan_path: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _coherent(self) -> Plan:
        spec = self.engine.speculative
        if spec is not None and spec.method in DRAFTERLESS_METHODS and self.drafter is not None:
            raise ValueError(f"engine.speculative.method {spec.method} has no drafter: remove the drafter section")
        if spec is not None and spec.method not in EMBEDDED_METHODS | DRAFTERLESS_METHODS and self.drafter is None:
            raise ValueError(f"engine.speculative.method {spec.method} needs a drafter section")
        if spec is None and self.drafter is not None:
            raise ValueError("a drafter section needs engine.speculative (its method and depth): without it the "
                             "drafter would be judged as if it were not deployed")
        try:
            acceptance_target_possible(self.slo.target_acceptance_length, self.depth)
        except InputError as e:
            raise ValueError(str(e)) from None
        names = [m.name for m in self.workload]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload mix names must be unique (repeated: {', '.join(dup)})")
        return self

    @property
    def method(self) -> str | None:
        return self.engine.speculative.method if self.engine.speculative else None

    @property
    def depth(self) -> int | None:
        """k: draft tokens per round that one verify can accept (gate.evidence.plausibility.speculative_depth)."""
        spec = self.engine.speculative
        if spec is None:
            return None
        return speculative_depth(self.engine.kind, num_speculative_tokens=spec.num_speculative_tokens,
                                 num_draft_tokens=spec.num_draft_tokens, num_steps=spec.num_steps,
                                 eagle_topk=spec.eagle_topk)

    @property
    def served_model_name(self) -> str | None:
        """The name evidence must carry: engine.served_model_name, default target.name."""
        return self.engine.served_model_name or self.target.name

    @property
    def drafter_embedded(self) -> bool:
        """An MTP/NEXTN head inside the target checkpoint: no second artifact."""
        if self.drafter is not None:
            return self.drafter.embedded
        return self.method in EMBEDDED_METHODS

    @property
    def has_drafter(self) -> bool:
        return self.method is not None and self.method not in DRAFTERLESS_METHODS


def _loc(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for x in loc:
        if isinstance(x, int):
            parts.append(f"[{x}]")
        else:
            parts.append(("." if parts else "") + str(x))
    return "".join(parts) or "(plan)"


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Known keys of the model that owns the location (for 'did you mean')."""
    current: Any = model
    for x in loc[:-1]:
        if isinstance(x, int):
            continue
        fields = getattr(current, "model_fields", {})
        if x not in fields:
            return []
        ann = fields[x].annotation
        current = _model_in(ann)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}))


def _model_in(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _one_error(err: Mapping[str, Any]) -> str:
    loc = tuple(err.get("loc", ()))
    kind = err.get("type", "")
    where = _loc(loc)
    if kind == "extra_forbidden":
        known = _fields_at(Plan, loc)
        close = difflib.get_close_matches(str(loc[-1]), known, n=1) if known else []
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"{where}: unknown key{hint}"
    if kind == "literal_error":
        expected = (err.get("ctx") or {}).get("expected", "")
        options = "|".join(x.strip().strip("'") for x in expected.replace(" or ", ",").split(",") if x.strip())
        return f"{where}: must be one of {options}"
    if kind == "missing":
        return f"{where}: required"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {msg}"


def plan_from_dict(data: Any, base_dir: Path | None = None, plan_path: Path | None = None) -> Plan:
    """Validate a parsed plan; relative paths resolve against `base_dir`."""
    if not isinstance(data, dict):
        raise PlanError("a plan must be a YAML mapping at the top level")
    try:
        plan = Plan.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as e:
        # A typo shows up as an unknown key *and* a missing one: name the unknown keys first.
        errors = sorted(e.errors(), key=lambda err: err.get("type") != "extra_forbidden")
        shown = "; ".join(_one_error(err) for err in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise PlanError(f"{shown}{more}") from None
    return plan.model_copy(update={"plan_path": plan_path})


def load_plan(path: str | Path) -> Plan:
    """Read (gate.loading: regular file, limits, no duplicate keys) and validate a plan; one-line PlanError."""
    p = Path(path)
    try:
        data = load_yaml(p, "plan file", PLAN_LIMITS)
    except InputError as e:
        raise PlanError(str(e)) from None
    try:
        return plan_from_dict(data, base_dir=p.resolve().parent, plan_path=p)
    except PlanError as e:
        raise PlanError(f"{p}: {e}") from None

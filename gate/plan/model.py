"""The rollout plan: one YAML file naming everything the gate judges (design.md "The gate").

Why pydantic with `extra="forbid"` everywhere: a typo in a plan (`kv_scop:`) must stop the
gate with an error naming the path, never be silently ignored and turn into a pass.
Paths inside a plan are relative to the plan file. Secrets never live in a plan: auth
fields name an environment variable or a file that holds them.

Fail closed (issue 10): the file is read through gate.inputs.loading (regular files only, size,
depth and digit limits, duplicate keys refused); every number must be finite (`.inf`/`.nan`
anywhere is invalid, not a zero or a pass); reported observations are non-negative and
served rates positive; inline geometry passes gate.inputs.validation; a drafter section needs
`engine.speculative`; an acceptance target above 1 + k can never be met and is refused.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from exporter.engines import EngineKind
from gate.inputs.configs import load_config
from gate.inputs.loading import PLAN_LIMITS, InputError, load_yaml
from gate.inputs.validation import acceptance_target_possible, validate_geometry
from gate.model.depth import (
    BLOCK_METHODS,
    DRAFTERLESS_METHODS,
    EMBEDDED_METHODS,
    MAX_SPECULATIVE_DEPTH,
    SpecMethod,
    bound_depth,
    depth_schedule,
    speculative_depth,
)
from gate.model.engines import KINDS_IN_WORDS
from gate.model.engines.base import BlockKeys, ScheduleReading
from gate.model.invariants import target_at_mix
from gate.model.plausibility import DEFAULT_ALPHA, MAX_ALPHA, pool_tokens, startup_seconds
from gate.model.speedup.energy import disagreement as energy_disagreement
from gate.plan.card import AcceptanceCard
from gate.plan.suggest import one_line

KVDtype = Literal["auto", "bf16", "bfloat16", "fp16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp32", "float32"]
Scope = Literal["full", "window", "block"]
# llama-server's -ctk/-ctv cache types (common/arg.cpp kv_cache_types).
CacheType = Literal["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"]
# slo.target_source's kind: its first word (issue 21 item 6: a pass needs a target whose source is stated)
TargetSourceKind = Literal["traffic", "benchmark", "assumed"]
_TARGET_SOURCE = re.compile(r"\s*(traffic|benchmark|assumed)\b", re.IGNORECASE)


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

    path: PlanPath | None = Field(
        default=None, description="a safetensors file or checkpoint directory (model.safetensors.index.json "
                                  "total_size, else the shard headers); relative to the plan")
    bytes: NonNegInt | None = Field(
        default=None, description="the artifact's size in bytes, when no file is at hand")
    parameters: PositiveInt | None = Field(
        default=None, description="parameter count; with dtype gives bytes = parameters x dtype bytes")
    dtype: KVDtype | None = Field(default=None, description="weight dtype for parameters x dtype bytes")
    source: str | None = Field(
        default=None, description="where the byte or parameter count comes from (a model card, a listing)")


# The engines' names of a vocabulary's type (a GGUF's `tokenizer.ggml.model`: llama = SPM, gpt2 = BPE, bert = WPM,
# t5 = UGM); config.json never says it.
VocabType = Literal["NONE", "SPM", "BPE", "WPM", "UGM", "RWKV", "PLAMO2"]


class Vocabulary(_Strict):
    """What a config.json omits of a model's vocabulary, declared for an engine that compares it (a draft
    model's vocabulary against the target's); each key overrides the config's, in the config's own names."""

    vocab_size: PositiveInt | None = Field(
        default=None, description="tokens in the vocabulary (Gemma 3's config leaves Transformers' 262,208 unwritten)")
    vocab_type: VocabType | None = Field(
        default=None, description="the tokenizer type as the engine names it (a GGUF's tokenizer.ggml.model: "
                                  "llama = SPM, gpt2 = BPE, bert = WPM, t5 = UGM)")
    bos_token_id: NonNegInt | None = Field(default=None, description="the BOS token id (the GGUF's, one id)")
    eos_token_id: NonNegInt | None = Field(
        default=None, description="the EOS token id (the GGUF's one id; a config's list of ids is not it)")


class ModelRef(_Strict):
    """A model artifact: its name, revision, config (file or inline keys), vocabulary and weights."""

    name: str | None = Field(
        default=None, description="the model's name (Hugging Face id); the default served name evidence "
                                  "must carry")
    revision: str | None = Field(
        default=None, description="pinned revision (commit); recorded in the run record")
    config: PlanPath | None = Field(
        default=None, description="its config.json (or a directory holding one); relative to the plan")
    geometry: dict[str, Any] | None = Field(
        default=None, description="inline config.json keys, when no config file is at hand")
    weights: Weights | None = Field(
        default=None, description="where the weights' byte count comes from (artifacts line, GPU memory "
                                  "bill)")
    vocabulary: Vocabulary | None = Field(
        default=None, description="what the config omits of the vocabulary, for an engine that compares the "
                                  "draft's with the target's (llama.cpp's draft model: sizes within 128, type, "
                                  "BOS and EOS)")
    source: str | None = Field(default=None, description="where this model's facts come from")

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
    kv_scope: Scope = Field(
        default="full", description="the drafter's KV context: full (every token), window (window_tokens + "
                                    "sink_tokens) or block (block_tokens)")
    window_tokens: PositiveInt | None = Field(
        default=None, description="kv_scope window: tokens the drafter attends to")
    sink_tokens: NonNegInt = Field(
        default=0, description="kv_scope window: attention-sink tokens kept beside the window")
    block_tokens: PositiveInt | None = Field(
        default=None, description="kv_scope block: the drafter's block (default: the config's block_size)")
    tp: PositiveInt | None = Field(
        default=None, description="the drafter's tensor-parallel size; divides its weights in the GPU "
                                  "memory bill")
    trained_against: str | None = Field(
        default=None, description="the target the drafter was trained against (co-design check)")

    @model_validator(mode="after")
    def _scope_inputs(self) -> Drafter:
        if self.kv_scope == "window" and self.window_tokens is None:
            raise ValueError("kv_scope window needs window_tokens")
        return self


# Sane upper bounds of the speculative settings (engines use 1-16 draft steps; SGLang trees a few dozen
# draft tokens): far beyond them a number is a typo, and k bounds every acceptance length (L ≤ 1 + k).
DepthInt = Annotated[int, Field(gt=0, le=MAX_SPECULATIVE_DEPTH)]


class Speculative(_Strict):
    method: SpecMethod = Field(
        description="the drafter family: draft_model, eagle, eagle3, mtp, nextn, dflash, dspark, ngram or "
                    "suffix (ngram and suffix have no drafter section; mtp and nextn ship inside the "
                    "target)")
    num_speculative_tokens: DepthInt | None = Field(
        default=None, description="vLLM: draft tokens per round (k)")
    num_steps: DepthInt | None = Field(default=None, description="SGLang --speculative-num-steps")
    eagle_topk: DepthInt | None = Field(default=None, description="SGLang --speculative-eagle-topk")
    num_draft_tokens: Annotated[int, Field(gt=0, le=16 * MAX_SPECULATIVE_DEPTH)] | None = Field(
        default=None, description="SGLang --speculative-num-draft-tokens (k = num_draft_tokens - 1)")
    # Depth schedules (issue 22): validated as the engine validates them (gate.model.depth.depth_schedule).
    num_speculative_tokens_per_batch_size: list[list[int]] | None = Field(
        default=None, description="vLLM: k by batch size, inclusive [batch_start, batch_end, k] ranges "
                                  "(--speculative-config key; vLLM 0.32 dynamic speculative decoding): the first "
                                  "starts at batch 1, ranges sorted and non-overlapping, gaps and the tail carry "
                                  "the previous k, every k clamped to num_speculative_tokens; dropped by vLLM when "
                                  "engine.dp > 1 (a warning)")
    speculative_adaptive: bool | None = Field(
        default=None, description="SGLang --speculative-adaptive: steps chosen at run time per batch-size tier "
                                   "(EAGLE/EAGLE3 with eagle_topk 1 only); the bounds use the deepest candidate")
    speculative_adaptive_config: dict[str, Any] | None = Field(
        default=None, description="SGLang --speculative-adaptive-config's JSON content: tiers "
                                  "{\"<batch size>\": {\"candidate_steps\": [...]}} (default SGLang's built-in "
                                  "tiers 1/8/32/64)")
    draft_len_schedule: dict[str, int] | None = Field(
        default=None, description="TensorRT-LLM: draft length by batch size {\"<batch size>\": <draft len>}; each key "
                                  "ends its band (a batch runs the smallest key >= it, every batch above the largest "
                                  "runs 0) and the smallest key's length must equal num_speculative_tokens "
                                  "(max_draft_len)")
    # Rejection and simulation knobs (issue 37): accepted as the engines spell them, so a real config is read, not
    # refused; a plan stating simulated acceptance has no acceptance evidence (gate.model.invariants, simulated).
    rejection_sample_method: Literal["standard", "synthetic", "block", "strict", "probabilistic", "fly"] | None = (
        Field(default=None, description="vLLM --speculative-config rejection_sample_method (0.32: standard, "
                                        "synthetic, block; earlier builds strict, probabilistic, synthetic; later "
                                        "main fly, lossy); unstated: the version's default, assumed and said"))
    synthetic_acceptance_length: float | None = Field(
        default=None, description="vLLM: simulated acceptance length (with rejection_sample_method synthetic): "
                                  "acceptance is then no evidence")
    synthetic_acceptance_rates: list[float] | None = Field(
        default=None, description="vLLM: simulated per-position acceptance rates (with rejection_sample_method "
                                  "synthetic): acceptance is then no evidence")
    draft_sample_method: Literal["greedy", "probabilistic"] | None = Field(
        default=None, description="vLLM 0.32 draft_sample_method (default greedy)")
    enable_adaptive_verification: bool | None = Field(
        default=None, description="vLLM 0.32 enable_adaptive_verification (DSpark)")
    speculative_use_block_verification: bool | None = Field(
        default=None, description="SGLang --speculative-use-block-verification")
    speculative_use_rejection_sampling: bool | None = Field(
        default=None, description="SGLang --speculative-use-rejection-sampling")
    require_lossless: bool | None = Field(
        default=None, description="the plan requires outputs that follow the target's distribution: lossy "
                                   "verification (vLLM fly) is then a fail, else (unset) a warning")


class Engine(_Strict):
    kind: EngineKind = Field(description=KINDS_IN_WORDS)
    version: str | None = Field(
        default=None, description="the engine version to run (SGLang < 0.5.18 warns for DSpark, DFlash and "
                                  "MTP)")
    image: str | None = Field(default=None, description="container image tag (run record image_tag)")
    image_digest: str | None = Field(default=None, description="container image digest (run record)")
    image_bytes: NonNegInt | None = Field(
        default=None, description="the image's size, counted against budgets.storage_bytes and "
                                  "budgets.image_bytes")
    kv_dtype: KVDtype = Field(
        default="auto", description="KV-cache dtype (auto = the config's torch_dtype); a smaller dtype (fp8) "
                                    "halves bytes per token but still needs a working kernel path: test the "
                                    "long prompts that matter on the exact image first (seed 000)")
    tp: PositiveInt = Field(
        default=1, description="tensor-parallel size; the pool, bytes per token and memory fractions are "
                               "per rank")
    dp: PositiveInt = Field(
        default=1, description="data-parallel replicas (vLLM --data-parallel-size); vLLM drops a depth schedule "
                               "when it is above 1")
    block_size: PositiveInt | None = Field(
        default=None, description="KV block (vLLM) or page (SGLang) size in tokens; vLLM's default 16 "
                                  "assumed when missing")
    speculative: Speculative | None = Field(
        default=None, description="speculative decoding settings; absent means no speculation")
    served_model_name: str | None = Field(
        default=None, description="the name the engine serves (its model_name label); default target.name")
    kv_cache_memory_bytes: PositiveInt | None = Field(
        default=None, description="KV memory per rank the pool is carved from: vLLM "
                                  "--kv-cache-memory-bytes; SGLang the per-rank budget after "
                                  "--mem-fraction-static (on CPU free host RAM); gives the predicted pool")
    # Per GPU (per TP rank) in both engines: vLLM --gpu-memory-utilization, SGLang --mem-fraction-static.
    memory_fraction: Annotated[float, Field(gt=0, le=1)] | None = Field(
        default=None, description="per GPU (per TP rank) in both engines: vLLM --gpu-memory-utilization "
                                  "(default 0.9, assumed and said), SGLang --mem-fraction-static (no fixed "
                                  "default: missing is inconclusive)")
    context_cap_tokens: PositiveInt | None = Field(
        default=None, description="per-request context cap (vLLM --max-model-len, SGLang --context-length)")
    configured_max_total_tokens: PositiveInt | None = Field(
        default=None, description="configured pool ceiling (SGLang --max-total-tokens): the predicted pool "
                                  "is at most this; never taken for the allocated pool")
    prefix_cache: bool | None = Field(default=None, description="prefix caching on or off (run record)")
    env: dict[str, str] | None = Field(
        default=None, description="the engine's environment as deployed (read for simulated acceptance: "
                                  "SGLANG_SIMULATE_ACC_LEN, TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS)")
    # llama-server's own memory keys: it sizes no pool from a byte budget or a fraction.
    ctx_size: PositiveInt | None = Field(
        default=None, description="llama.cpp --ctx-size: KV cells of all slots, the pool (the draft model gets as "
                                  "many of its own)")
    parallel: PositiveInt | None = Field(
        default=None, description="llama.cpp --parallel slots (default auto: 4 slots sharing one unified cache); "
                                  "a request gets ctx_size / parallel cells")
    cache_type_k: CacheType | None = Field(default=None, description="llama.cpp -ctk, the K cache type (default f16)")
    cache_type_v: CacheType | None = Field(default=None, description="llama.cpp -ctv, the V cache type (default f16)")


class Budgets(_Strict):
    storage_bytes: PositiveInt | None = Field(
        default=None, description="download/storage budget: target + drafter weights + image must fit")
    image_bytes: PositiveInt | None = Field(default=None, description="container image budget")
    gpu_memory_bytes: PositiveInt | None = Field(
        default=None, description="memory of one GPU (per TP rank, both engines): weights / TP + pool "
                                  "tokens x bytes per token must fit gpu_memory_bytes x "
                                  "engine.memory_fraction")
    startup_seconds: PositiveFloat | None = Field(
        default=None, description="cold start to first ready request (the staging line)")


class RequestMix(_Strict):
    """A request shape that matters: `concurrency` requests of prompt + output tokens resident together."""

    name: str = Field(description="the mix's name (unique)")
    concurrency: PositiveInt = Field(description="requests of this shape resident together")
    prompt_tokens: NonNegInt = Field(description="prompt tokens per request")
    output_tokens: NonNegInt = Field(description="output tokens per request")
    source: str | None = Field(
        default=None, description="where the shape comes from (your traffic, a benchmark)")
    request_rate: PositiveFloat | None = Field(
        default=None, description="declared arrival rate, requests per second: the acceptance line places the "
                                  "mix among the probe's open-loop (--request-rate) points")

    @property
    def request_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def demand_tokens(self) -> int:
        return self.concurrency * self.request_tokens


class SLO(_Strict):
    """The acceptance-length SLO, held per batch window (seed 002), not as a lifetime mean."""

    target_acceptance_length: Annotated[float, Field(ge=1)] | None = Field(
        default=None, description="the acceptance-length target L (accepted tokens per verify, bonus token "
                                  "included), held per batch window; required before rollout, must exceed "
                                  "the break-even L* and be at most 1 + k; set it from your traffic (seed "
                                  "002)")
    target_source: str | None = Field(
        default=None, description="where the target comes from, first word traffic | benchmark | assumed, then "
                                  "any note (\"benchmark: the drafter card's macro mean\"); any other first "
                                  "word is a source not stated, and the acceptance line is inconclusive")
    alpha: Annotated[float, Field(gt=0, le=MAX_ALPHA)] = Field(
        default=DEFAULT_ALPHA, description="significance level of the one-sided served-rate rank test, in (0, 0.2]")
    window_seconds: PositiveFloat = Field(default=60.0, description="one batch window of the SLO")
    required_fraction: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.95, description="fraction of windows that must meet the target")
    min_drafts: PositiveInt = Field(
        default=1, description="a window with fewer drafts carries no acceptance value")
    min_windows: PositiveInt = Field(default=1, description="fewer usable windows is inconclusive")
    min_pods: Annotated[int, Field(ge=2)] = Field(
        default=3, description="canary against stable: fewer pods in a cohort is inconclusive (each pod is one "
                               "sample, its median over the windows)")
    min_speedup: PositiveFloat | None = Field(
        default=None, description="served-rate speedup the speculative arm must reach (probes, served-rate "
                                  "comparisons)")
    lookback_seconds: PositiveFloat = Field(
        default=3600.0, description="evidence windows must have ended within this many seconds of the "
                                    "evaluation")
    min_tokens_per_joule_ratio: PositiveFloat | None = Field(
        default=None, description="tokens per joule the speculative arm must reach over the baseline's (ratio "
                                  "of medians, probes and reported energy; issue 38)")
    per_request: bool = Field(
        default=False, description="also hold the target per request: the share of the speculative probe "
                                   "record's requests (per-request acceptance the engine reported) at or above "
                                   "the target must reach required_fraction (seed 002: \"checked per request "
                                   "or per batch\")")

    @property
    def target_source_kind(self) -> TargetSourceKind | None:
        """`traffic`, `benchmark` or `assumed`: the first word of `target_source` (any case); None when the
        source is missing or begins with anything else (a source not stated, issue 21 item 6)."""
        m = _TARGET_SOURCE.match(self.target_source or "")
        return cast(TargetSourceKind, m.group(1).lower()) if m else None


class StepCost(_Strict):
    """Step costs at one operating point, for the break-even L* = t_cycle / t_target_step.

    Declared (`verify_cycle_ms`, `target_step_ms`) or measured from per-sequence decode rates
    (`speculative_tokens_per_second` with `acceptance_length`, `baseline_tokens_per_second`).
    """

    point: str | None = Field(default=None, description="the operating point's name (e.g. 2K)")
    context_tokens: PositiveInt | None = Field(default=None, description="context length at this point")
    target_step_ms: PositiveFloat | None = Field(
        default=None, description="declared: one decode step of the target alone")
    verify_cycle_ms: PositiveFloat | None = Field(
        default=None, description="declared: one speculative cycle (drafting + verify); L* = "
                                  "verify_cycle_ms / target_step_ms")
    baseline_tokens_per_second: PositiveFloat | None = Field(
        default=None, description="measured: per-sequence decode rate without speculation")
    speculative_tokens_per_second: PositiveFloat | None = Field(
        default=None, description="measured: per-sequence decode rate with speculation; L* = L x baseline / "
                                  "speculative")
    acceptance_length: Annotated[float, Field(ge=1)] | None = Field(
        default=None, description="measured L at this point (with the measured rates)")
    source: str | None = Field(default=None, description="where the costs come from")

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
    mode: Literal["serial", "overlapped"] | None = Field(
        default=None, description="how the artifacts are staged: serial (warns with a second artifact, seed "
                                  "002) or overlapped")
    order: list[str] = Field(
        default_factory=list, description="the order artifacts load in, e.g. [target, drafter]")
    warmup_check: str | None = Field(
        default=None, description="how readiness is checked (required with a second artifact)")
    load_seconds: dict[Literal["target", "drafter"], PositiveFloat] = Field(
        default_factory=dict, description="predicted load seconds per artifact (target, drafter): with "
                                          "evidence.reported.startup_seconds_without_drafter, the drafter's predicts "
                                          "the cold start; loads alone (serial sum, overlapped slower) a lower bound")


class Observation(_Strict):
    """A fact from a run that is not live, with where it comes from (finite and non-negative)."""

    value: Annotated[float, Field(ge=0)] = Field(description="the observed value (finite, non-negative)")
    source: str = Field(description="where it was observed (a launch log, a benchmark run)")


class ArmComparison(_Strict):
    """Served-rate samples of the baseline arm and the speculative arm for one request mix."""

    mix: str = Field(description="the request mix these samples belong to")
    baseline: Annotated[list[PositiveFloat], Field(min_length=1)] = Field(
        description="served-rate samples without speculation")
    speculative: Annotated[list[PositiveFloat], Field(min_length=1)] = Field(
        description="served-rate samples with speculation")
    unit: str = Field(default="tokens/s", description="the samples' unit")
    source: str = Field(description="where the samples come from")


class EnergyArm(_Strict):
    """One arm's energy at one point as a run reported it (seed 004): decode rate, mean power, tokens per joule.

    tokens per joule = tokens/s ÷ W (gate.model.speedup.energy); given all three, they must agree within
    their printed rounding, or the plan is refused (a tok/J that its own rate and watts do not give)."""

    tokens_per_second: Observation | None = Field(default=None, description="decode tokens per second")
    watts: Observation | None = Field(default=None, description="mean power over the decode, in watts")
    tokens_per_joule: Observation | None = Field(default=None, description="tokens per joule as reported")

    @model_validator(mode="after")
    def _consistent(self) -> EnergyArm:
        if (self.tokens_per_second is None) != (self.watts is None):
            raise ValueError("tokens_per_second and watts come together (tokens per joule = tokens/s ÷ W)")
        if self.tokens_per_second is None and self.tokens_per_joule is None:
            raise ValueError("an energy arm needs tokens_per_second with watts, or tokens_per_joule")
        if self.tokens_per_second is not None and self.watts is not None:
            if self.watts.value <= 0:
                raise ValueError("watts must be positive")
            if self.tokens_per_joule is not None:
                bad = energy_disagreement(self.tokens_per_second.value, self.watts.value,
                                          self.tokens_per_joule.value)
                if bad is not None:
                    raise ValueError(bad)
        return self


class EnergyPoint(_Strict):
    """Both arms' reported energy at one operating point (seed 004's tok/J per prompt length)."""

    point: str = Field(description="the operating point's name (e.g. 2K)")
    context_tokens: PositiveInt | None = Field(default=None, description="context length at this point")
    kind: Literal["board", "wall"] = Field(
        default="board", description="board (GPU power: nvidia-smi power.draw, DCGM, NVML) or wall (a meter)")
    baseline: EnergyArm = Field(description="the arm without speculation")
    speculative: EnergyArm = Field(description="the arm with speculation")


class RunConditions(_Strict):
    """Seed 001's run-record conditions that only a run can tell, and seed 000's record of the next decision."""

    executed_engine_version: str | None = Field(
        default=None, description="the engine version that actually ran")
    measurement_denominator: str | None = Field(
        default=None, description="what the served rate divides by (e.g. wall time including first-token "
                                  "waiting)")
    warmup: str | None = Field(default=None, description="the warm-up before measuring")
    campaign_repetitions: NonNegInt | None = Field(default=None, description="repetitions per cell")
    failed_requests: NonNegInt | None = Field(default=None, description="failed requests in the run")
    system: str | None = Field(default=None, description="the machines, e.g. two GB10 DGX Sparks, 121 GiB per node")
    node_count: PositiveInt | None = Field(default=None, description="nodes the run used")
    parallelism: str | None = Field(default=None, description="e.g. TP2 over two nodes, NCCL over RoCE")
    experiment_date: str | None = Field(default=None, description="when the run happened")
    temperature: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="sampling temperature")
    top_p: Annotated[float, Field(gt=0, le=1)] | None = Field(
        default=None, description="nucleus sampling top_p")
    runtime_execution_revision: str | None = Field(
        default=None, description="the executed runtime's immutable revision (image digest or commit), not a tag")
    queueing: str | None = Field(default=None, description="queueing observed under the target load")
    failures: str | None = Field(default=None, description="failures observed under the target load")
    source: str | None = Field(default=None, description="where these conditions come from")


class CorrectnessCheck(_Strict):
    """A correctness check kept alongside performance (seed 000): what was checked and its outcome."""

    name: str = Field(description="what was checked")
    outcome: Literal["passed", "failed", "not run"] = Field(description="passed, failed or not run")
    detail: str | None = Field(default=None, description="details of the check")
    source: str | None = Field(default=None, description="where the outcome comes from")


class Reported(_Strict):
    kv_pool_tokens: Observation | None = Field(default=None, description="allocated pool with the drafter")
    kv_pool_tokens_without_drafter: Observation | None = Field(
        default=None, description="allocated pool of the same engine without the drafter")
    served_rate: list[ArmComparison] = Field(
        default_factory=list, description="served-rate samples per arm and mix (seed 000's cells)")
    startup_seconds: Observation | None = Field(
        default=None, description="observed cold start with the drafter")
    startup_seconds_without_drafter: Observation | None = Field(
        default=None, description="observed cold start without it (gives the startup tax)")
    run: RunConditions | None = Field(
        default=None, description="the run's conditions (seed 001 / seed 000 record fields)")
    correctness: list[CorrectnessCheck] = Field(
        default_factory=list, description="correctness checks kept alongside performance (seed 000)")
    energy: list[EnergyPoint] = Field(
        default_factory=list, description="per point, both arms' decode rate, power and tokens per joule "
                                          "(seed 004); tokens per joule is recomputed as tokens/s ÷ W")
    acceptance_card: AcceptanceCard | None = Field(
        default=None, description="the drafter's published acceptance card (per position, per task subset) and the "
                                  "row your traffic matches: the post phase judges live L against it, the chart "
                                  "passes it to the exporter (issue 37 item 4)")

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

    files: Annotated[list[PlanPath], Field(min_length=1)] = Field(
        description="consecutive /metrics captures (Prometheus text); each neighbouring pair is one window")
    point: str | None = Field(default=None, description="the operating point they belong to")
    seconds: PositiveFloat | None = Field(
        default=None, description="seconds between neighbouring captures (their decode rates)")


class BasicAuth(_Strict):
    username: str = Field(description="basic-auth user")
    password_env: str | None = Field(default=None, description="environment variable holding the password")
    password_file: PlanPath | None = Field(default=None, description="file holding the password")


def _label_names(names: list[str]) -> list[str]:
    """Prometheus label names only (they are spliced into PromQL `by (...)` clauses)."""
    bad = [n for n in names if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", n)]
    if bad:
        raise ValueError(f"not a Prometheus label name: {', '.join(repr(b) for b in bad)}")
    return names


LabelNames = Annotated[list[str], AfterValidator(_label_names)]
Fraction = Annotated[float, Field(ge=0, le=1)]


class FleetRule(_Strict):
    """How the pods a Prometheus selector matches are judged together (gate.evidence.fleet; design.md "Prometheus evidence").

    Every pod (row: `pod_labels` + `group_by`) is judged by the per-window SLO on its own; the fleet
    fails when more than `max_failed_fraction` of the rows fail, is inconclusive when more than
    `max_inconclusive_fraction` are inconclusive (pods with missing data are named there), and
    passes otherwise. A pod the selector should match but that sent nothing at all is only known
    through `expected_pods`: the shortfall counts as inconclusive rows, never as passing ones.
    """

    pod_labels: Annotated[LabelNames, Field(min_length=1)] = Field(
        default=["namespace", "pod"],  # a default (pydantic copies it per instance), so the schema shows it
        description="labels naming one pod (the last one is required on every series); [instance] outside Kubernetes")
    group_by: LabelNames = Field(default=["model"],
                                 description="further labels splitting a pod's rows, e.g. [model, drafter_revision]")
    max_failed_fraction: Fraction = Field(
        default=0.0, description="the fleet fails when more than this fraction of its rows fail")
    max_inconclusive_fraction: Fraction = Field(
        default=0.0, description="the fleet is inconclusive when more than this fraction of rows are")
    expected_pods: PositiveInt | None = Field(
        default=None, description="pods the selector should match (a shortfall counts as inconclusive rows)")


class Cohorts(_Strict):
    """Canary and stable cohorts of one fleet, each a selector added to `selector` (issue 11's shape)."""

    canary: str = Field(description="label matchers added to selector for the canary cohort")
    stable: str | None = Field(
        default=None, description="label matchers added to selector for the stable cohort")

    @model_validator(mode="after")
    def _not_empty(self) -> Cohorts:
        # An empty matcher adds nothing to `selector`: that "cohort" is the whole fleet, the other one included.
        for name in ("canary", "stable"):
            value = getattr(self, name)
            if value is not None and not value.strip().strip("{}").strip():
                raise ValueError(f"cohorts.{name}: an empty selector matches the whole fleet; give its label matchers")
        return self


class PrometheusSource(_Strict):
    url: str | None = Field(default=None, description="Prometheus (or Thanos/Mimir) base URL")
    selector: str | None = Field(default=None, description='label matchers, e.g. namespace="llm",pod=~"qwen-.*"')
    bearer_token_env: str | None = Field(
        default=None, description="environment variable holding a bearer token")
    bearer_token_file: PlanPath | None = Field(default=None, description="file holding a bearer token")
    basic_auth: BasicAuth | None = Field(
        default=None, description="basic auth (password from an environment variable or a file)")
    tenant: str | None = Field(default=None, description="sent as X-Scope-OrgID (Mimir/Cortex tenant; a|b federates)")
    ca_file: PlanPath | None = Field(default=None, description="CA bundle for TLS")
    timeout_seconds: PositiveFloat = Field(default=10.0, description="per-query timeout")
    end: datetime | float | None = Field(default=None, description="judge history up to this time (default: now)")
    fleet: FleetRule = Field(
        default_factory=FleetRule, description="how the pods the selector matches are judged together")
    cohorts: Cohorts | None = Field(default=None, description="canary and stable cohorts of one fleet")

    @model_validator(mode="after")
    def _header_safe(self) -> PrometheusSource:
        if self.tenant is not None and not re.fullmatch(r"[A-Za-z0-9!\-_.*'()|]{1,150}", self.tenant):
            raise ValueError("tenant: a Mimir tenant ID is 1-150 of A-Z a-z 0-9 ! - _ . * ' ( ) and | between tenants")
        return self


class KubernetesSource(_Strict):
    namespace: str = Field(description="the engine pods' namespace")
    selector: str | None = Field(default=None, description="label selector of the engine pods")
    # The engine's container, not the exporter sidecar's (the chart names it "engine"); when a pod
    # has no container of this name, its first container status is used.
    container: str | None = Field(
        default="engine", description="the engine's container (its start and readiness times)")


class Evidence(_Strict):
    exporter_url: str | None = Field(
        default=None, description="a specgate exporter sidecar (its /metrics and /api/v1/windows): live")
    engine_url: str | None = Field(default=None, description="the engine's own /metrics: live")
    captures: list[CaptureGroup] = Field(
        default_factory=list, description="/metrics capture files (history; not evidence in --phase post)")
    prometheus: PrometheusSource | None = Field(
        default=None, description="Prometheus history of the exporter's series: live")
    kubernetes: KubernetesSource | None = Field(default=None, description="pod status (startup time)")
    reported: Reported = Field(
        default_factory=Reported, description="facts from a run that is not live, each with its source")
    # probe records (`specgate probe`) of the baseline and the speculative arm: where it pays (gate.checks.acceptance.probes)
    probes: list[PlanPath] = Field(
        default_factory=list, description="probe records (specgate probe) of the baseline and the "
                                          "speculative arm: where speculation pays")


class Plan(_Strict):
    """A whole rollout plan."""

    name: str = Field(description="the plan's name")
    description: str | None = Field(default=None, description="free text")
    target: ModelRef = Field(description="the target model")
    drafter: Drafter | None = Field(
        default=None, description="the draft model (not for ngram or suffix; optional for an embedded MTP "
                                  "head)")
    engine: Engine = Field(description="the engine and its speculative settings")
    budgets: Budgets = Field(default_factory=Budgets, description="the budgets the lines check")
    workload: list[RequestMix] = Field(default_factory=list, description="the request mixes that matter")
    slo: SLO = Field(default_factory=SLO, description="the acceptance-length SLO")
    costs: list[StepCost] = Field(
        default_factory=list, description="step costs per operating point (break-even L*)")
    staging: Staging = Field(default_factory=Staging, description="how the artifacts load (startup)")
    evidence: Evidence = Field(default_factory=Evidence, description="where the gate reads observations")
    placeholders: list[str] = Field(
        default_factory=list, description="keys `specgate init` left for you (dotted: engine.block_size): while one "
                                          "is still null or [] the budget line that reads it cannot pass (inconclusive, "
                                          "naming it); fill the key, or delete it from this list to say that empty is "
                                          "meant")
    plan_path: Path | None = Field(default=None, exclude=True)
    # (the drafter's config file, its block keys; None: unreadable), read in validation (`_read_drafter_block`)
    _drafter_block: tuple[Path, BlockKeys | None] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _coherent(self) -> Plan:
        self._read_drafter_block()
        spec = self.engine.speculative
        if spec is not None and spec.method in DRAFTERLESS_METHODS and self.drafter is not None:
            raise ValueError(f"engine.speculative.method {spec.method} has no drafter: remove the drafter section")
        if spec is not None and spec.method not in EMBEDDED_METHODS | DRAFTERLESS_METHODS and self.drafter is None:
            raise ValueError(f"engine.speculative.method {spec.method} needs a drafter section")
        if spec is None and self.drafter is not None:
            raise ValueError("a drafter section needs engine.speculative (its method and depth): without it the "
                             "drafter would be judged as if it were not deployed")
        _ = self.depth_reading  # a schedule the engine would refuse is an invalid plan (its ValueError)
        try:
            acceptance_target_possible(self.slo.target_acceptance_length, self.bound_depth)
        except InputError as e:
            raise ValueError(str(e)) from None
        schedule = self.depth_reading.schedule
        for mix in self.workload:
            if schedule is None:
                break
            # The target at the k the schedule runs at each mix's own concurrency (issue 34), not only the deepest.
            bad = target_at_mix(self.slo.target_acceptance_length, mix.name, mix.concurrency,
                                schedule.k_at(mix.concurrency))
            if bad is not None:
                raise ValueError(bad)
        names = [m.name for m in self.workload]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload mix names must be unique (repeated: {', '.join(dup)})")
        unknown = [k for k in self.placeholders if not _plan_key(k)]
        if unknown:  # a mistyped entry would hold nothing: refuse it rather than pass on the key it meant
            raise ValueError(f"placeholders: not a plan key: {', '.join(unknown)}")
        return self

    @property
    def open_placeholders(self) -> tuple[str, ...]:
        """The `placeholders` still as `specgate init` left them (issue 36 item 3): null, [] or {}, or weights with no
        path, bytes or parameters. A key whose section the user removed (a drafter key, the drafter gone) is moot.

        Why a typed list and not init's `# TODO` comments: the loader (gate.inputs.loading) reads data, not comments,
        and a reformatted or copied plan loses them silently; a list is validated (a mistyped key is refused), shows
        in the schema, and lets the user say "null is meant" (vLLM's default block size) by deleting one entry.
        Plans without the list (every plan before it) keep loading and judging as before."""
        return tuple(k for k in dict.fromkeys(self.placeholders) if _unfilled(self, k.split(".")))

    @property
    def method(self) -> str | None:
        return self.engine.speculative.method if self.engine.speculative else None

    @property
    def depth(self) -> int | None:
        """k: draft tokens per round that one verify can accept (gate.model.depth.speculative_depth), told the
        method and, for a block drafter without draft tokens, the drafter's config (`_block_drafter_config`): SGLang
        drafts its block whatever the steps."""
        spec = self.engine.speculative
        if spec is None:
            return None
        return speculative_depth(self.engine.kind, spec.method, self._block_drafter_config(),
                                 num_speculative_tokens=spec.num_speculative_tokens,
                                 num_draft_tokens=spec.num_draft_tokens, num_steps=spec.num_steps,
                                 eagle_topk=spec.eagle_topk)

    def _block_drafter_config(self) -> dict[str, Any] | None:
        """The block keys of the drafter's config (file or inline geometry) where a block drafter's depth may come
        from them (no count of tokens declared: SGLang's block); None otherwise, or where they are not at hand. Pure:
        a config file's keys were read where the plan was validated (`_read_drafter_block`), so a check asking the
        depth reads no file; keys read from another file than the drafter's now (a `model_copy` that swapped it) are
        not at hand."""
        spec, d = self.engine.speculative, self.drafter
        if spec is None or spec.method not in BLOCK_METHODS or d is None or spec.num_draft_tokens is not None \
                or spec.num_speculative_tokens is not None:
            return None
        if d.geometry is not None:
            return BlockKeys.of(d.geometry).as_config()
        read = self._drafter_block
        if d.config is None or read is None or read[0] != d.config or read[1] is None:
            return None
        return read[1].as_config()

    def _read_drafter_block(self) -> None:
        """Read a block drafter's config file once, where the plan is validated, keeping only its block keys
        (`BlockKeys`). Why here: the depth rule is floor 0 and the checks read no files, yet SGLang's k may be the
        drafter's block. Read for every block drafter with a config file (a plan copied with other depth keys keeps
        them). An unreadable file is left as not at hand: the artifact facts (gate.bill.facts) refuse it, and a depth
        that needs it is refused (exit 3) by the depth rule, as before."""
        spec, d = self.engine.speculative, self.drafter
        if spec is None or spec.method not in BLOCK_METHODS or d is None or d.config is None:
            return
        try:
            keys: BlockKeys | None = BlockKeys.of(load_config(d.config))
        except InputError:
            keys = None
        self._drafter_block = (d.config, keys)

    @property
    def depth_reading(self) -> ScheduleReading:
        """The depth schedule the engine runs for this plan (gate.model.depth.depth_schedule; ValueError when the
        engine would refuse it, which plan validation turns into an invalid plan)."""
        spec = self.engine.speculative
        if spec is None:
            return ScheduleReading()
        return depth_schedule(self.engine.kind, spec.model_dump(exclude_none=True), data_parallel=self.engine.dp,
                              drafter_config=self._block_drafter_config())

    @property
    def bound_depth(self) -> int | None:
        """The k the acceptance bounds use: the largest any batch may run (gate.model.depth.bound_depth)."""
        return bound_depth(self.depth, self.depth_reading)

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


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field's annotation (`Weights | None` gives Weights), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_of, get_args(annotation)) if m is not None), None)


def _plan_key(key: str) -> bool:
    """A dotted key naming a field of the plan's schema (not `placeholders` itself)."""
    model: type[BaseModel] | None = Plan
    for part in key.split("."):
        fields = model.model_fields if model is not None else {}
        if part not in fields or part in ("placeholders", "plan_path"):
            return False
        model = _model_of(fields[part].annotation)
    return True


def _unfilled(plan: Plan, parts: list[str]) -> bool:
    """True while the value at `parts` is as `specgate init` wrote it (see Plan.open_placeholders)."""
    value: Any = plan
    for part in parts[:-1]:
        value = getattr(value, part)
        if value is None:
            return False  # the section is gone: nothing left to fill
    # `weights.path: null  # TODO ..., or bytes: N`: any of path, bytes and parameters fills the weights
    if not (isinstance(value, Weights) and parts[-1] in ("path", "bytes", "parameters")):
        value = getattr(value, parts[-1])
    if isinstance(value, Weights):
        return value.path is None and value.bytes is None and value.parameters is None
    return value is None or value == [] or value == {}


def plan_from_dict(data: Any, base_dir: Path | None = None, plan_path: Path | None = None) -> Plan:
    """Validate a parsed plan; relative paths resolve against `base_dir`."""
    if not isinstance(data, dict):
        raise PlanError("a plan must be a YAML mapping at the top level")
    try:
        plan = Plan.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as e:
        # A typo shows up as an unknown key *and* a missing one: name the unknown keys first.
        raise PlanError(one_line(Plan, e.errors())) from None
    return plan.model_copy(update={"plan_path": plan_path})


def load_plan(path: str | Path) -> Plan:
    """Read (gate.inputs.loading: regular file, limits, no duplicate keys) and validate a plan; one-line PlanError."""
    p = Path(path)
    try:
        data = load_yaml(p, "plan file", PLAN_LIMITS)
    except InputError as e:
        raise PlanError(str(e)) from None
    try:
        return plan_from_dict(data, base_dir=p.resolve().parent, plan_path=p)
    except PlanError as e:
        raise PlanError(f"{p}: {e}") from None

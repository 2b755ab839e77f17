"""SGLang's gate-side profile: every fact of SGLang the gate's lines, bill, init and controller use.

Sources: SGLang's `ServerArgs` (`--speculative-num-draft-tokens` counts the verified root too, so
k = num_draft_tokens − 1; a chain of `num_steps` drafts `num_steps + 1`; DFlash's block is
num_draft_tokens (another than block_size warns), DSpark refuses any but block_size + 1, and both run num_steps 1
whatever the plan's, drafting the drafter's block where no draft tokens are given (`block_resolution`);
`--mem-fraction-static` is computed at start, no fixed default; `--page-size`), `/server_info` `speculative_algorithm` names, the pool configurator
(a draft slot per target token, charged as `draft_charge` says with file:line; `pools.py` here; the draft
pool has its own dtype, the drafter's config decides it), the
EAGLE-3 capture (id k = the output of layer k),
and seed 002 (DSpark, DFlash and MTP generally available in 0.5.18).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from exporter.engines.sglang.depth import BLOCK_ALGORITHMS
from exporter.engines.sglang.depth import depth as sglang_depth
from exporter.engines.sglang.schedule import SGLANG_DEFAULT_CANDIDATE_STEPS, sglang_adaptive_schedule
from gate.model.engines.base import (
    BaseProfile,
    BlockKeys,
    DepthKeys,
    DepthSchedule,
    Eagle3Taps,
    PoolPrediction,
    Rule,
    ScheduleReading,
    WrittenSchedule,
)
from gate.model.engines.sglang import schedule as writer
from gate.model.engines.sglang.pools import (
    SGLANG_HYBRID_SWA_ARCHITECTURES,
    SGLANG_SWA_FULL_TOKENS_RATIO,
    sglang_draft_cell_bytes,
    sglang_gdn_state_bytes,
    sglang_mamba_split,
    sglang_pool_tokens,
    sglang_swa_pool,
)
from gate.model.geometry import ATTENTION_KINDS, GROWING_KINDS, STATE_KINDS, KVGeometry
from gate.model.speedup.bands import BatchBand
from gate.model.speedup.predict import TuneResult
from gate.status import Status

# The `--speculative-algorithm` the controller launches each plan method with.
LAUNCH_ALGORITHM: Mapping[str, str] = MappingProxyType({
    "eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "nextn": "NEXTN", "ngram": "NGRAM",
    "draft_model": "STANDALONE", "dflash": "DFLASH", "dspark": "DSPARK"})

# `/server_info` speculative_algorithm values that run each plan method (SGLang turns NEXTN into EAGLE
# internally; STANDALONE is a separate draft model).
REPORTED_ALGORITHMS: Mapping[str, frozenset[str]] = MappingProxyType({
    "draft_model": frozenset({"STANDALONE"}),
    "eagle": frozenset({"EAGLE"}),
    "eagle3": frozenset({"EAGLE3"}),
    "mtp": frozenset({"EAGLE", "NEXTN", "MTP"}),
    "nextn": frozenset({"EAGLE", "NEXTN", "MTP"}),
    "dflash": frozenset({"DFLASH"}),
    "dspark": frozenset({"DSPARK"}),
    "ngram": frozenset({"NGRAM", "LOOKAHEAD"}),
})

# Seed 002: "SGLang v0.5.18 … In that release, DSpark, DFlash, MegaMoE, and MTP became generally available."
GENERAL_AVAILABILITY: Mapping[str, tuple[int, ...]] = MappingProxyType({
    "dspark": (0, 5, 18), "dflash": (0, 5, 18), "mtp": (0, 5, 18), "nextn": (0, 5, 18)})


# The drafter architectures SGLang 0.5.23 promotes NEXTN/EAGLE to FROZEN_KV_MTP for
# (arg_groups/speculative_hook.py `_resolve_speculative_algorithm_alias`).
GEMMA4_ASSISTANTS = frozenset({"Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM"})

# The algorithms SGLang 0.5.23's adaptive speculation runs, after the alias (adaptive_unsupported_reason).
ADAPTIVE_ALGORITHMS = frozenset({"EAGLE", "EAGLE3"})


def resolve_algorithm(method: str, drafter_architectures: Sequence[str] = ()) -> str:
    """The algorithm SGLang 0.5.23 runs for a plan method: `_resolve_speculative_algorithm_alias`, which runs
    before the adaptive check (so NEXTN/MTP adapts as EAGLE). ValueError (SGLang's words) for EAGLE3 with a
    Gemma-4 assistant draft."""
    algorithm = LAUNCH_ALGORITHM.get(method, method.upper())
    gemma4 = any(a in GEMMA4_ASSISTANTS for a in drafter_architectures)
    if algorithm == "EAGLE3" and gemma4:
        raise ValueError("Gemma4AssistantForCausalLM draft requires --speculative-algorithm NEXTN or EAGLE; EAGLE3 "
                         "is not supported for this draft architecture.")
    if algorithm in ("NEXTN", "EAGLE"):
        return "FROZEN_KV_MTP" if gemma4 else "EAGLE"
    return algorithm


def adaptive_unsupported_reason(algorithm: str, *, eagle_topk: int | None = None, attn_dp_size: int = 1,
                                ep_join_mode: str | None = None, enable_multi_layer_eagle: bool = False,
                                enable_two_batch_overlap: bool = False, enable_pdmux: bool = False) -> str | None:
    """SGLang 0.5.23's `adaptive_unsupported_reason` (speculative/adaptive_spec_params.py), branch for branch and
    in its order, on the resolved `algorithm` (`resolve_algorithm`) and SGLang's own field names; its wording.

    The platform-worker branch answers None: only an out-of-tree platform replaces the built-in worker (the
    GPU and CPU builds do not). A plan carries the algorithm and the top-k; the other fields are launch
    settings a plan does not spell (they default to SGLang's), which the oracle replay exercises.
    """
    if algorithm not in ADAPTIVE_ALGORITHMS:
        return f"speculative_algorithm={algorithm} (only EAGLE/EAGLE3 are supported)"
    if eagle_topk is not None and eagle_topk != 1:
        return f"speculative_eagle_topk={eagle_topk} (only topk=1 is supported)"
    if attn_dp_size > 1 or ep_join_mode == "scale":
        return "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"
    if enable_multi_layer_eagle:
        return "enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)"
    if enable_two_batch_overlap:
        return ("enable_two_batch_overlap=True is not supported (adaptive state swap would discard the "
                "TboAttnBackend wrapper)")
    if enable_pdmux:
        return ("enable_pdmux=True is not supported (adaptive state swap does not update "
                "decode_attn_backend_group)")
    return None


# SGLang 0.5.23's defaults where a block drafter's config gives no block: `_handle_dflash` drafts 16 tokens,
# `_handle_dspark` gamma `DEFAULT_DSPARK_GAMMA` = 7 (speculative/dspark_components/dspark_config.py), gamma + 1.
DFLASH_DEFAULT_BLOCK = 16
DSPARK_DEFAULT_GAMMA = 7


def block_draft_tokens(algorithm: str, config: Mapping[str, Any] | None) -> tuple[int, str] | None:
    """The draft tokens SGLang 0.5.23 resolves for a block drafter launched without them, and where they come from;
    None where the drafter's config.json is not at hand (`config` None), so the block cannot be known.

    As `_handle_dflash` / `_handle_dspark` (arg_groups/speculative_hook.py) read the drafter's config:
    DFlash's block is `dflash_config.block_size`, else the top-level `block_size` (dflash_utils.py
    `parse_dflash_draft_config`; `drafter_block_size`), else 16 (a config it cannot parse also gives 16, with its warning); DSpark's
    gamma is `dspark_block_size`, else that same block, else 7, and its draft tokens gamma + 1
    (dspark_config.py `parse_dspark_draft_config`). The gate has no `--speculative-dflash-block-size` /
    `--speculative-dspark-block-size` key: a plan spells those as `num_draft_tokens`.
    """
    if config is None:
        return None
    keys = BlockKeys.of(config)  # the one reading of the block keys, in SGLang's order
    block, gamma = keys.block_size, keys.dspark_block_size
    if algorithm == "DFLASH":
        if block is None:
            return DFLASH_DEFAULT_BLOCK, f"SGLang's default {DFLASH_DEFAULT_BLOCK}: the drafter config gives no block_size"
        return block, f"the drafter config's block_size {block}"
    if gamma is not None:
        return gamma + 1, f"the drafter config's dspark_block_size {gamma} + 1"
    if block is not None:
        return block + 1, f"the drafter config's block_size {block} + 1"
    return DSPARK_DEFAULT_GAMMA + 1, (f"SGLang's default gamma {DSPARK_DEFAULT_GAMMA} + 1: the drafter config gives "
                                      "no block_size")


def block_resolution(speculative: Mapping[str, Any],
                     drafter_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A block drafter's keys as SGLang 0.5.23 resolves them (`_handle_dflash` / `_handle_dspark`): num_steps and
    eagle_topk forced to 1 (another value it overrides, with a warning), the draft tokens the plan's, else the
    drafter's block (`block_draft_tokens`); the worker drafts block − 1 tokens per verify. Where the plan's
    steps (or top-k) are overridden, one sentence saying what SGLang runs; ValueError where the plan gives steps
    but SGLang's block cannot be known (no draft tokens, no drafter config at hand). Other methods: as given."""
    keys = dict(speculative)
    algorithm = LAUNCH_ALGORITHM.get(str(speculative.get("method")))
    if algorithm not in BLOCK_ALGORITHMS:
        return keys, ()
    name = "DFLASH" if algorithm == "DFLASH" else "DSpark"
    steps, topk, tokens = keys.get("num_steps"), keys.get("eagle_topk"), keys.get("num_draft_tokens")
    source = "engine.speculative.num_draft_tokens"
    if tokens is None:
        found = block_draft_tokens(algorithm, drafter_config)
        if found is None:
            if steps is None:
                return keys, ()  # no depth declared: k stays unknown, as for any plan without depth keys
            raise ValueError(f"engine.speculative.num_steps: SGLang forces num_steps 1 for {name} and drafts the "
                             "drafter's block - 1 tokens (its config's block_size), but the drafter's config is not "
                             "at hand (drafter.config or drafter.geometry, readable), so k is unknown; declare "
                             "engine.speculative.num_draft_tokens (the drafter's block, as `specgate init` writes "
                             "it) or the drafter's config")
        tokens, source = found
        keys["num_draft_tokens"] = tokens
    keys.update(num_steps=1, eagle_topk=1)
    forced = [f"{key} 1" + ("" if v == 1 else f" (not the plan's {v})")
              for key, v, read in (("num_steps", steps, speculative.get("num_draft_tokens") is None),
                                   ("eagle_topk", topk, False))
              if v is not None and (v != 1 or read)]  # steps 1 alone would read as k = 1: said too
    if not forced:
        return keys, ()
    return keys, (f"SGLang forces {' and '.join(forced)} for {name} and drafts block - 1 = {max(tokens - 1, 0)} "
                  f"tokens per verify (block {tokens}: {source})",)


def fallback_warning(reason: str) -> str:
    """SGLang's own log line where it cannot adapt (`_maybe_disable_adaptive`): it runs static steps instead."""
    return f"speculative_adaptive disabled: {reason}. Falling back to static speculative params."


@dataclass(frozen=True)
class AdaptiveDecision:
    """What SGLang 0.5.23 makes of `--speculative-adaptive`: the algorithm it runs, why it falls back to static
    steps (None: it adapts), and where it adapts, the (num_steps, num_draft_tokens, eagle_topk) it starts at."""

    algorithm: str
    reason: str | None
    start: tuple[int, int, int] | None
    schedule: DepthSchedule | None = None


def adaptive_decision(method: str, *, drafter_architectures: Sequence[str] = (), eagle_topk: int | None = None,
                      num_steps: int | None = None, config: Mapping[str, Any] | None = None,
                      **launch: Any) -> AdaptiveDecision:
    """`handle_speculative_decoding`'s adaptive path in its order: the alias (`resolve_algorithm`), then
    `adaptive_unsupported_reason` (`launch`: its other fields, SGLang's names), then, where it adapts,
    `_init_adaptive_speculative_params` (the tiers read as `sglang_adaptive_schedule` reads them, then
    `adaptive_start`; top-k unset becomes 1). ValueError: SGLang refuses. A fallback reads no tiers (nor does
    SGLang)."""
    algorithm = resolve_algorithm(method, drafter_architectures)
    reason = adaptive_unsupported_reason(algorithm, eagle_topk=eagle_topk, **launch)
    if reason is not None:
        return AdaptiveDecision(algorithm, reason, None)
    try:
        schedule = sglang_adaptive_schedule(config)
    except ValueError as e:
        raise ValueError(f"engine.speculative.speculative_adaptive_config: SGLang refuses it: {e}") from None
    steps, tokens = adaptive_start(config, num_steps)
    return AdaptiveDecision(algorithm, None, (steps, tokens, 1 if eagle_topk is None else eagle_topk), schedule)


def adaptive_start(config: Mapping[str, Any] | None, num_steps: int | None) -> tuple[int, int]:
    """`_init_adaptive_speculative_params` where SGLang adapts: (num_steps, num_draft_tokens) it starts at — the
    middle of the sorted candidate steps when none is given, num_steps + 1 draft tokens; ValueError (SGLang's
    words) for steps outside the candidates."""
    candidates = sorted(_all_candidates(config))
    steps = candidates[len(candidates) // 2] if num_steps is None else num_steps
    if steps not in candidates:
        raise ValueError(f"--speculative-num-steps={steps} is not in the adaptive config candidate_steps "
                         f"{candidates}. Pass one of those values.")
    return steps, steps + 1


def _n(x: int | None) -> str:
    return "none" if x is None else f"{x:,}"


@dataclass(frozen=True)
class SglangProfile(BaseProfile):
    kind: str = "sglang"
    name: str = "SGLang"
    schedule_keys: tuple[str, ...] = ("speculative_adaptive", "speculative_adaptive_config")
    memory_fraction_note: str = ("engine.memory_fraction not given: SGLang has no fixed --mem-fraction-static "
                                 "default (it computes one from the GPU's memory and the parallelism at start), so "
                                 "the usable memory is unknown")
    kv_pool_note: str = " (SGLang's draft pool holds a slot per target token)"
    draft_kv_note: str = ("SGLang keeps a separate draft pool with a draft slot per target token "
                          "(max_total_num_tokens = available // (target_cell + draft_cell))")
    init_block_size_comment: str = "TODO: --page-size in tokens (SGLang's page)"
    init_memory_fraction_comment: str = ("TODO: --mem-fraction-static, per GPU (no fixed default: unknown is "
                                         "inconclusive)")

    def depth(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
              num_steps: int | None, eagle_topk: int | None, method: str | None = None,
              drafter_config: Mapping[str, Any] | None = None) -> int | None:
        """k as SGLang spells it, read by the one SGLang k rule (`exporter.engines.sglang.depth.depth`:
        `num_draft_tokens − 1`, or `num_steps` for a top-k 1 chain); `num_speculative_tokens` when neither says.
        A block `method` (DFlash, DSpark) drafts the draft tokens SGLang resolves for it (`block_resolution`, the
        one resolution `resolve_speculative` uses too: the plan's, else the drafter's block), never its steps;
        unknown without either. The steps are not handed to the resolution: they never change a block's draft
        tokens, only make an unknown block an error, which `depth_schedule` reports (here k is just unknown)."""
        algorithm = LAUNCH_ALGORITHM.get(method) if method is not None else None
        if algorithm is not None and algorithm in BLOCK_ALGORITHMS:
            keys, _ = block_resolution({"method": method, "num_draft_tokens": num_draft_tokens}, drafter_config)
            num_draft_tokens = keys["num_draft_tokens"]
        k = sglang_depth(num_draft_tokens, num_steps, eagle_topk, algorithm)
        return num_speculative_tokens if k is None else k

    def resolve_speculative(self, speculative: Mapping[str, Any],
                            drafter_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
        """A block drafter's keys as SGLang forces them (`block_resolution`); every other method's as given."""
        return block_resolution(speculative, drafter_config)

    def depth_schedule(self, speculative: Mapping[str, Any], *, data_parallel: int) -> ScheduleReading:
        """SGLang 0.5.23's `--speculative-adaptive` (+ `--speculative-adaptive-config`): candidate steps per tier.

        As SGLang decides it (arg_groups/speculative_hook.py `handle_speculative_decoding`): the algorithm alias
        first (`resolve_algorithm`: NEXTN/MTP runs as EAGLE), then `adaptive_unsupported_reason`; where that
        answers, SGLang does not refuse: it logs `fallback_warning` and runs static steps, so the plan gets that
        warning and the gate judges the static k (its depth keys), as it does for vLLM's dropped schedule.
        Where SGLang adapts, `_init_adaptive_speculative_params` refuses a `--speculative-num-steps` outside the
        candidate steps (`adaptive_start`). k = steps (top-k 1: one token per step). The keys arrive as SGLang
        resolves them (`resolve_speculative`, through gate.model.depth.depth_schedule): a block drafter's static k
        is its block − 1.
        """
        config = speculative.get("speculative_adaptive_config")
        if not speculative.get("speculative_adaptive"):
            if config is not None:
                raise ValueError("engine.speculative.speculative_adaptive_config needs speculative_adaptive: true "
                                 "(SGLang reads the file only with --speculative-adaptive)")
            return ScheduleReading()
        topk, steps = speculative.get("eagle_topk"), speculative.get("num_steps")
        decision = adaptive_decision(str(speculative.get("method")), eagle_topk=topk, num_steps=steps, config=config)
        if decision.reason is not None:
            k = sglang_depth(speculative.get("num_draft_tokens"), steps, topk, decision.algorithm)
            static = (f"the gate judges the static k = {k}" if k is not None else
                      "declare num_draft_tokens or the drafter's config: without them SGLang drafts a block the "
                      "gate cannot read, and the gate has no k"
                      if decision.algorithm in BLOCK_ALGORITHMS else
                      "declare num_steps (or num_draft_tokens): without them SGLang picks its static steps from "
                      "the target's architecture (_auto_choose_speculative_params) and the gate has no k")
            return ScheduleReading(None, (f"SGLang: {fallback_warning(decision.reason)} ({static})",), declared=True)
        return ScheduleReading(decision.schedule, (), declared=True)


    def write_schedule(self, bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
                       speculative_configs: Sequence[Mapping[str, Any]]) -> WrittenSchedule:
        """SGLang's `--speculative-adaptive-config` tiers (`schedule.py`)."""
        return writer.write_schedule(bands, result, point)

    def schedule_method(self, method: str) -> str:
        """SGLang's launch algorithm for `method`, after server_args' own alias: NEXTN runs as EAGLE."""
        algorithm = LAUNCH_ALGORITHM.get(method.lower(), method.upper())
        return writer.ALIASES.get(algorithm, algorithm)

    @property
    def schedule_methods(self) -> frozenset[str] | None:
        """Adaptive speculation runs EAGLE and EAGLE3 only (`adaptive_unsupported_reason`, after the alias)."""
        return ADAPTIVE_ALGORITHMS

    def draft_steps(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
                    num_steps: int | None, eagle_topk: int | None) -> int | None:
        """`speculative_num_steps` drafter forwards (each grows the tree by one level of top-k); without
        steps, a chain of k (the depth)."""
        if num_steps is not None:
            return num_steps
        return self.depth(num_speculative_tokens=num_speculative_tokens, num_draft_tokens=num_draft_tokens,
                          num_steps=num_steps, eagle_topk=eagle_topk)

    def algorithms(self, method: str) -> frozenset[str] | None:
        return REPORTED_ALGORITHMS.get(method)

    def general_availability(self, method: str) -> tuple[int, ...] | None:
        return GENERAL_AVAILABILITY.get(method)

    def draft_charge(self, method: str | None, target: KVGeometry, drafter: KVGeometry) -> tuple[int, str | None]:
        """STANDALONE/EAGLE/EAGLE3/NEXTN drafts are charged the target's KV per full-attention layer, times the
        draft's layers, whatever the draft's own heads; DFlash/DSpark their own geometry.

        As SGLang 0.5.23 computes it (srt/model_executor/pool_configurator.py, DefaultPoolConfigurator):
        `num_layers` is the target's full-attention layers on a hybrid linear/Mamba target (:229-235, only
        `full_attention_layer_ids` hold KV) and all its layers otherwise (:237); the cell counts those layers
        only (:239); an EAGLE/STANDALONE draft then adds `int(cell * draft_num_layers / num_layers)` (:259-260
        "assumes the draft shares the target's per-layer KV size", :311-314). A sliding-window target's
        HybridSWAPoolConfigurator charges each draft layer the target's full-layer bytes the same way
        (:734-760, :772-779). `draft_num_layers` is the draft config's layer count, or the target's
        `num_nextn_predict_layers` for a path-less MTP head (model_runner_components/spec_aux_hidden_state.py:
        155-176). So the charge is the target's full-attention bytes over its full-attention layers — never
        over all layers of a hybrid — times the draft's layers (`pools.sglang_draft_cell_bytes`).

        The draft worker then takes the target's pool config, i.e. its token count
        (mem_cache/kv_cache_configurator.py:470-474), and shapes its own pool from its own config: a head
        whose own KV per token exceeds the charge (an MHA EAGLE-3 head on an MLA target: DeepSeek-V3's head
        4,096 B vs 1,152 B charged at TP 1) holds more than the sizing reserved, which the note says.
        """
        own = drafter.attention_bytes_per_token
        full_layers = sum(1 for x in target.layers if x.kind in GROWING_KINDS) or target.num_layers
        charge, why = sglang_draft_cell_bytes(method, target.bytes_per_token, full_layers, drafter.num_layers, own)
        if charge == own:
            return charge, None
        if full_layers != target.num_layers:
            why += (f" (SGLang divides the target's full-attention bytes by its {full_layers} full-attention "
                    f"layers, not by all {target.num_layers})")
        if charge < own:
            why += (f"; the draft pool then holds the draft's own {own:,} B for each of those tokens, "
                    f"{own - charge:,} B/token more than SGLang's sizing reserved")
        return charge, why

    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        """min(--max-total-tokens, KV bytes // (target cell + draft charge)), whole pages."""
        notes: list[str] = []
        cap = configured_max_total_tokens
        page = block_size or 1
        without = sglang_pool_tokens(kv_cache_memory_bytes, target_bytes_per_token, cap, page)
        with_d = None
        if has_drafter and draft_charge is not None:
            cell = target_bytes_per_token + draft_charge
            with_d = sglang_pool_tokens(kv_cache_memory_bytes, cell, cap, page)
            notes.append("SGLang: a draft slot per target token; max_total_num_tokens = min(--max-total-tokens, "
                         f"available // (target_cell + draft_charge)) = min({_n(cap)}, "
                         f"{kv_cache_memory_bytes:,} // {cell:,})")
        elif not has_drafter:
            with_d = without
        else:
            notes.append("no predicted pool with the drafter: its KV geometry is unknown")
        return PoolPrediction(block_size, without, with_d, None, None, tuple(notes))

    def predict_hybrid_pool(self, *, kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                            draft_charge: int | None, has_drafter: bool, block_size: int | None,
                            configured_max_total_tokens: int | None, context_cap_tokens: int | None,
                            depth: int | None = None, config: Mapping[str, Any] | None = None) -> PoolPrediction:
        """Without the target's config SGLang's choice of pool is unknown (`predict_hybrid_pool_from_config`)."""
        return self.predict_hybrid_pool_from_config(
            config=config or {}, speculative={}, kv_cache_memory_bytes=kv_cache_memory_bytes, target=target,
            drafter=drafter, depth=depth,
            draft_charge=draft_charge, has_drafter=has_drafter, block_size=block_size,
            configured_max_total_tokens=configured_max_total_tokens)

    def predict_hybrid_pool_from_config(self, *, config: Mapping[str, Any], speculative: Mapping[str, Any],
                                        kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                                        draft_charge: int | None, has_drafter: bool, block_size: int | None,
                                        configured_max_total_tokens: int | None,
                                        depth: int | None = None) -> PoolPrediction:
        """SGLang 0.5.23's `max_total_num_tokens` for a hybrid target (`pools.py` has the arithmetic, file:line).

        Sliding-window layers: a listed architecture gets `HybridSWAPoolConfigurator` (full and SWA pools, SWA tokens
        = 0.8 x full tokens); any other (Gemma-2/3) the default pool with every layer full. Linear-attention layers
        (Qwen3-Next/3.5): `_handle_max_mamba_cache` carves the GDN state per request slot out of the budget first
        (`--mamba-full-memory-ratio` 0.9; with a drafter also the per-draft-token scratch at 48 running requests),
        then the full-attention layers (and the draft charge) share the rest. The launch's defaults are assumed:
        no --max-mamba-cache-size, radix cache on, TP 1. The draft tokens are k + 1, k the plan's (`depth`, as
        SGLang resolves it: a DFlash/DSpark drafter's block - 1), else read from the keys as given.
        """
        page = block_size or 1
        cap = configured_max_total_tokens
        archs = [str(a) for a in config.get("architectures") or []]
        text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else config
        assert isinstance(text, Mapping)
        charge = 0 if not has_drafter else draft_charge
        kinds = {x.kind for x in target.layers}
        notes: list[str] = []
        if has_drafter and charge is None:
            notes.append("no predicted pool with the drafter: its KV geometry is unknown")

        def both(one: Any) -> PoolPrediction:
            without = one(0)
            with_d = without if not has_drafter else (None if charge is None else one(charge))
            return PoolPrediction(block_size, without, with_d, None, None, tuple(notes))

        if kinds & set(STATE_KINDS):
            linear = sum(1 for x in target.layers if x.kind in STATE_KINDS)
            per_req = sglang_gdn_state_bytes(text, linear) if "linear_attention" in kinds else None
            if per_req is None or "mamba" in kinds:
                notes.append("no predicted pool: SGLang's state per request of this linear-attention/Mamba layout "
                             "is not modelled (Gated DeltaNet fields linear_* are)")
                return PoolPrediction(block_size, None, None, None, None, tuple(notes))
            d = depth if depth is not None else sglang_depth(
                speculative.get("num_draft_tokens"), speculative.get("num_steps"), speculative.get("eagle_topk"),
                LAUNCH_ALGORITHM.get(str(speculative.get("method"))))
            draft_tokens = None if not has_drafter else (d + 1 if d is not None else None)
            if has_drafter and draft_tokens is None:
                notes.append("no predicted pool with the drafter: SGLang reserves Mamba scratch per draft token and "
                             "the draft tokens are unknown; declare engine.speculative.num_draft_tokens (an EAGLE "
                             "chain of top-k 1: num_steps; a DFlash/DSpark drafter drafts its block, from its "
                             "config's block_size)")
            try:
                plain = sglang_mamba_split(kv_cache_memory_bytes, per_req)
                spec = sglang_mamba_split(kv_cache_memory_bytes, per_req, draft_tokens=draft_tokens) \
                    if draft_tokens else None
            except ValueError as e:
                notes.append(f"no predicted pool: {e}")
                return PoolPrediction(block_size, None, None, None, None, tuple(notes))
            full = target.bytes_per_token
            without = sglang_pool_tokens(plain.kv_bytes, full, cap, page)
            with_d = without if not has_drafter else (
                None if spec is None or charge is None else sglang_pool_tokens(spec.kv_bytes, full + charge, cap, page))
            notes.append(f"SGLang hybrid linear pool: {plain.slots:,} Mamba state slots of {per_req:,} B "
                         f"({plain.state_bytes:,} B) come out of {kv_cache_memory_bytes:,} B first "
                         "(--mamba-full-memory-ratio 0.9); the full-attention layers' "
                         f"{full:,} B/token share the rest" + (
                             f"; with the drafter {spec.slots:,} slots and {spec.intermediate_bytes:,} B of scratch "
                             f"for {draft_tokens} draft tokens x 48 running requests, then {full:,} + {charge:,} "
                             "B/token" if spec is not None and charge is not None else ""))
            return PoolPrediction(block_size, without, with_d, None, None, tuple(notes))
        if not archs:
            notes.append("no predicted pool: SGLang gives its hybrid sliding-window pool to listed architectures "
                         "only, and the target's config names none")
            return PoolPrediction(block_size, None, None, None, None, tuple(notes))
        attention = sum(x.bytes_per_token for x in target.layers if x.kind in ATTENTION_KINDS)
        if not set(archs) & SGLANG_HYBRID_SWA_ARCHITECTURES:
            notes.append(f"SGLang sizes {archs[0]} as a uniform pool, its sliding-window layers full "
                         f"(not a hybrid SWA architecture: is_hybrid_swa_model): {attention:,} B/token")
            return both(lambda c: sglang_pool_tokens(kv_cache_memory_bytes, attention + c, cap, page))
        swa = sum(x.bytes_per_token for x in target.layers if x.kind == "sliding_attention")
        window = max((x.window or 0 for x in target.layers), default=0)
        r = SGLANG_SWA_FULL_TOKENS_RATIO

        def hybrid(c: int) -> int | None:
            full, swa_tokens = sglang_swa_pool(kv_cache_memory_bytes, target.bytes_per_token + c, swa, r, page, cap)
            if window + page >= swa_tokens:
                notes.append(f"SGLang refuses to start: its SWA pool ({swa_tokens:,} tokens) cannot hold one "
                             f"request (window {window:,} + page {page})")
                return None
            return full

        pred = both(hybrid)
        return PoolPrediction(block_size, pred.without_drafter, pred.with_drafter, None, None, tuple(notes) + (
            f"SGLang hybrid SWA pool: max_total_num_tokens = full-layer tokens = {kv_cache_memory_bytes:,} // "
            f"({target.bytes_per_token:,} + draft charge + {r} x {swa:,}) B; the SWA layers hold {r} x as many",))

    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        """Id k is the output of layer k."""
        L = num_layers
        return Eagle3Taps(L - 1, f"SGLang convention: id k = output of layer k, ids in [0, L-1] = [0, {L - 1}]",
                          tuple(k for k in ids if 0 <= k <= L - 1))

    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        """SGLang's draft tokens per verify are k + 1: DFlash's block is its draft tokens (SGLang 0.5.23 runs
        another count than the drafter's block_size with a warning: `DFlashWorkerV2` "DFLASH block size
        mismatch", so the gate warns too), DSpark refuses any but block_size + 1 (`_handle_dspark`)."""
        bs = block_size
        n = None if depth is None else depth + 1  # --speculative-num-draft-tokens
        if family == "dflash":
            if n is None:
                return Rule(Status.PASS, f"SGLang drafts block_size = {bs} tokens per verify")
            if n != bs:
                return Rule(Status.WARN, f"SGLang runs speculative_num_draft_tokens {n}, not the drafter's block_size "
                                         f"{bs} (SGLang: DFLASH block size mismatch): a block the drafter was not "
                                         f"trained on")
            return Rule(Status.PASS, f"SGLang draft tokens {n} = block_size {bs}")
        want = bs + 1
        if n is None:
            return Rule(Status.PASS, f"SGLang drafts block_size + 1 = {want} tokens per verify")
        if n != want:
            return Rule(Status.FAIL, f"SGLang sets DSpark draft tokens = block_size + 1 = {want}, got {n}")
        return Rule(Status.PASS, f"SGLang draft tokens {n} = block_size + 1 = {want}")

    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        """SGLang chains the MTP layers (NEXTN runs as EAGLE): any depth."""
        return Rule(Status.PASS, f"target has {mtp_layers} MTP layer(s); SGLang chains them for any depth")

    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        """SGLang's draft tokens follow the block (the user's depth cannot change them)."""
        dflash = method == "dflash"
        n = block_size if dflash else block_size + 1
        return DepthKeys({"num_draft_tokens": n},
                         f"SGLang drafts {'block_size' if dflash else 'block_size + 1'} = {n} tokens "
                         f"per verify for {method} (the drafter's block_size {block_size})")

    def chain_depth_keys(self, depth: int, why: str) -> DepthKeys:
        """A chain: num_steps = k, top-k 1, num_draft_tokens = k + 1."""
        return DepthKeys({"num_steps": depth, "eagle_topk": 1, "num_draft_tokens": depth + 1},
                         f"{why}; SGLang: a chain of {depth} steps, top-k 1, {depth + 1} draft tokens (k = {depth})")

    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        """Keys that become `--speculative-<key>` flags: algorithm, draft_model_path, the depth keys given."""
        cfg: dict[str, Any] = {"algorithm": LAUNCH_ALGORITHM.get(method, method.upper())}
        if model:
            cfg["draft_model_path"] = model
        for key, value in (("num_steps", num_steps), ("eagle_topk", eagle_topk),
                           ("num_draft_tokens", num_draft_tokens)):
            if value:
                cfg[key] = value
        return cfg

    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        """`--speculative-<key> value` per key (`True`: the bare flag; False/None: left out)."""
        flags: list[str] = []
        for k, v in cfg.items():
            flag = "--speculative-" + k.replace("_", "-")
            if v is True:
                flags.append(flag)
            elif v is not False and v is not None:
                flags += [flag, str(v)]
        return flags


def _all_candidates(config: Mapping[str, Any] | None) -> set[int]:
    """Every tier's candidate steps (resolve_candidate_steps_from_config's union; the config is valid here)."""
    if config is None:
        return {s for steps in SGLANG_DEFAULT_CANDIDATE_STEPS.values() for s in steps}
    return {int(s) for key, entry in config.items() if isinstance(key, str) and key.isdigit()
            for s in entry["candidate_steps"]}


SGLANG = SglangProfile()

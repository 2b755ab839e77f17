"""TensorRT-LLM's gate-side profile (PyTorch backend, `trtllm-serve`): written from its source, not a run.

TensorRT-LLM needs a GPU, so nothing here was measured. Sources (NVIDIA/TensorRT-LLM, the stored copies the
exporter adapter cites, `exporter/engines/trtllm/`):
- the depth: `speculative_config.max_draft_len` is k (the plan's `num_speculative_tokens`); a
  `draft_len_schedule` ({batch size: draft length}) varies it by batch size, validated and read as
  TensorRT-LLM does (`exporter.engines.trtllm.schedule.trtllm_schedule`: each key ends its band, the smallest key >= the
  batch wins, batches above the largest key run 0; the smallest key's length must equal max_draft_len);
- the drafter's KV: `tensorrt_llm/_torch/pyexecutor/_util.py` `KvCacheCreator._get_kv_size_per_token` adds
  the draft model's bytes per token (`get_cache_size_per_token(draft_model_config)`) to the target's, and
  the KV budget is divided by that sum: one token count for the target's and the drafter's managers;
- one drafter forward per drafted token of a chain (k); nothing the gate reads names TensorRT-LLM's algorithm
  (its `/metrics` speculative info is not read); no version floor was established (`BaseProfile`'s defaults);
- EAGLE-3 taps: `tensorrt_llm/_torch/speculative/eagle3.py` `Eagle3SpecMetadata` captures
  `hidden_states + residual` after decoder layer j for j in `layers_to_capture` (default
  (1, L//2 − 1, L − 4)): an id is a layer's output, 0-based.
What the source read does not settle is said so and decided against (no fixed memory-fraction default the
bill could use, no block size, no DFlash/DSpark, no MTP layer-reuse rule, no command line for the
controller) rather than filled in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exporter.engines.trtllm.schedule import trtllm_schedule
from gate.model.engines.base import (
    BaseProfile,
    DepthKeys,
    Eagle3Taps,
    PoolPrediction,
    Rule,
    ScheduleReading,
    WrittenSchedule,
    block_or_user_depth,
    shared_pool_prediction,
)
from gate.model.engines.trtllm import schedule as writer
from gate.model.speedup.bands import BatchBand
from gate.model.speedup.predict import TuneResult
from gate.status import Status

SCHEDULE_KEY = "draft_len_schedule"


def _thresholds(raw: Any) -> dict[int, int]:
    """A YAML/JSON `draft_len_schedule` as {int: int}: object keys arrive as strings ("1": 3)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{SCHEDULE_KEY} must be a mapping of batch size to draft length, got {raw!r}")
    out: dict[int, int] = {}
    for key, value in raw.items():
        if isinstance(key, str) and key.strip().isdigit():
            key = int(key)
        out[key] = value
    return out


@dataclass(frozen=True)
class TrtllmProfile(BaseProfile):
    kind: str = "trtllm"
    name: str = "TensorRT-LLM"
    schedule_keys: tuple[str, ...] = (SCHEDULE_KEY,)
    provenance: str | None = "from its source"
    # No default_memory_fraction: kv_cache_config.free_gpu_memory_fraction is a share of the memory left after the
    # model loads, not of the device; the bill's usable = device memory × fraction would be wrong with it
    memory_fraction_note: str = ("engine.memory_fraction not given: TensorRT-LLM's free_gpu_memory_fraction is a "
                                 "share of the memory free after the model loads, not of the device; no default used")
    kv_pool_note: str = " (TensorRT-LLM sizes the drafter's KV manager with the target's token count)"
    draft_kv_note: str = ("TensorRT-LLM adds the draft model's KV bytes per token to the target's when it sizes the "
                          "cache (KvCacheCreator._get_kv_size_per_token): every token the target holds, the drafter "
                          "holds too")
    init_block_size_comment: str = "TODO: kv_cache_config tokens_per_block (no default is assumed)"
    init_memory_fraction_comment: str = ("TODO: the share of device memory the KV cache gets (TensorRT-LLM's "
                                         "free_gpu_memory_fraction is of free memory, not of the device)")

    def depth_schedule(self, speculative: Mapping[str, Any], *, data_parallel: int) -> ScheduleReading:
        """`draft_len_schedule` with `max_draft_len` = `num_speculative_tokens` (exporter.engines.trtllm.schedule.trtllm_schedule:
        TensorRT-LLM's validation and lookup, its wording). No data-parallel rule was found in the source read:
        the schedule is taken as declared whatever `engine.dp`."""
        raw = speculative.get(SCHEDULE_KEY)
        if raw is None:
            return ScheduleReading()
        k = speculative.get("num_speculative_tokens")
        if k is None:
            raise ValueError(f"engine.speculative.{SCHEDULE_KEY} needs num_speculative_tokens (TensorRT-LLM's "
                             "max_draft_len: the smallest key's length must equal it)")
        try:
            schedule = trtllm_schedule(_thresholds(raw), k)
        except ValueError as e:
            raise ValueError(f"engine.speculative.{SCHEDULE_KEY}: TensorRT-LLM refuses it: {e}") from None
        return ScheduleReading(schedule, (), declared=True)


    def write_schedule(self, bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
                       speculative_configs: Sequence[Mapping[str, Any]]) -> WrittenSchedule:
        """TensorRT-LLM's `draft_len_schedule` (`schedule.py`)."""
        return writer.write_schedule(bands, largest)

    def schedule_method(self, method: str) -> str:
        """The method as recorded: no alias to resolve."""
        return method.lower()

    @property
    def schedule_methods(self) -> frozenset[str] | None:
        """Any: TensorRT-LLM's `draft_len_schedule` sits on every decoding config (`DecodingBaseConfig`)."""
        return None

    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        """Tokens = KV bytes / (target + drafter bytes per token), in whole blocks of `tokens_per_block`.

        No block size is assumed: without `engine.block_size` there is no prediction (the source read does not
        fix TensorRT-LLM's default tokens_per_block)."""
        if block_size is None:
            return PoolPrediction(None, None, None, notes=(
                "block_size not given: TensorRT-LLM's tokens_per_block is not assumed; no predicted pool",))
        return shared_pool_prediction(kv_cache_memory_bytes, target_bytes_per_token, draft_charge, has_drafter,
                                      block_size, "TensorRT-LLM: KV bytes / (target + drafter bytes per token), one "
                                      "token count for both managers (KvCacheCreator._get_kv_size_per_token)")

    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        """Id j is the output of decoder layer j, 0-based (Eagle3SpecMetadata.maybe_capture_hidden_states)."""
        L = num_layers
        return Eagle3Taps(L - 1, f"TensorRT-LLM convention: id j = output of decoder layer j (0-based), ids in "
                                 f"[0, L - 1] = [0, {L - 1}]", tuple(j for j in ids if 0 <= j < L))

    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        """No DFlash or DSpark drafter in the TensorRT-LLM source read."""
        return Rule(Status.WARN, f"TensorRT-LLM: no {family} drafter was found in its source; not checked")

    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        """How TensorRT-LLM runs k above the target's MTP layers was not established: said, not judged."""
        if depth is None or depth <= mtp_layers:
            return Rule(Status.PASS, f"target has {mtp_layers} MTP layer(s); max_draft_len "
                                     f"{'not given' if depth is None else f'{depth} <= {mtp_layers}'}")
        return Rule(Status.WARN, f"TensorRT-LLM max_draft_len {depth} > the target's {mtp_layers} MTP layer(s): "
                                 "how it reuses them was not established; not checked")

    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        """No block rule known: the user's k, else the drafter's block_size as max_draft_len."""
        return block_or_user_depth(block_size, depth, f"TensorRT-LLM: no {method} rule known; the drafter's "
                                                      f"block_size {block_size} taken as max_draft_len")

    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        """The plan's settings in TensorRT-LLM's words (`max_draft_len`, the drafter's directory)."""
        cfg: dict[str, Any] = {"method": method}
        if model:
            cfg["speculative_model_dir"] = model
        if num_speculative_tokens:
            cfg["max_draft_len"] = num_speculative_tokens
        return cfg

    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        """TensorRT-LLM takes `speculative_config` in its YAML options file, not as flags: the controller does
        not write that file, so it refuses rather than emit flags trtllm-serve would not read."""
        raise ValueError("TensorRT-LLM reads speculative_config from its YAML options file; the controller "
                         "writes no such file (set it in the engine's own configuration)")


TRTLLM = TrtllmProfile()

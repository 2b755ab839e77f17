"""`specgate tune --emit vllm|sglang|trtllm`: the best depth per concurrency band as a schedule the engine runs.

The bands and their predicted speedups are floor 0 (gate.model.speedup.bands: the best k per measured
concurrency, k = 0 past the crossover, neighbours with the same k one band); here each engine's writer spells
them. Where nothing pays anywhere the schedule is k = 0 at every batch (said in a note; vLLM's
num_speculative_tokens is then the deepest k measured, TensorRT-LLM cannot say it and is refused).

The fragments, each round-tripped through `exporter.schedule` (the engine's own reading) before it is printed:

- vLLM 0.32: `{"num_speculative_tokens": <largest k>, "num_speculative_tokens_per_batch_size": [[1, e_1, k_1],
  …, [s_n, VLLM_LAST_END, k_n]]}` merged over the speculative arm's other `--speculative-config` keys (method,
  model, prompt lookup…) from its probe record; vLLM carries the last k to every larger batch anyway.
- SGLang 0.5.23 `--speculative-adaptive-config`: a tier per band keyed by its first batch (`_find_closest_bs`
  routes a batch to the largest key ≤ it), `candidate_steps` = the depths that pay at every measured
  concurrency of the band, up to its best k (k = 0 where none does); with `--speculative-adaptive`, EAGLE or
  EAGLE3 and top-k 1, and a `--speculative-num-steps` among the candidates.
- TensorRT-LLM `draft_len_schedule` (keys end their bands, every batch above the largest key runs 0):
  `{"max_draft_len": <largest k>, "draft_len_schedule": {"e_1": k_1, …}}`, the last band with k > 0 ending at
  TRTLLM_LAST_KEY; TensorRT-LLM requires the smallest key's length to be max_draft_len (the deepest k at batch 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from exporter.engines.trtllm.schedule import trtllm_schedule
from exporter.engines.vllm.schedule import vllm_schedule
from exporter.schedule import DepthSchedule
from gate.model.speedup.bands import BatchBand, Emitted, batch_bands, candidates
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import TuneResult

# The last vLLM range must end somewhere; past any batch an engine runs (vLLM's max_num_seqs defaults to 256 or
# 1024), and vLLM's dense lookup carries the last k to every batch up to max_num_seqs whatever the end.
VLLM_LAST_END = 65536
# TensorRT-LLM runs 0 above the largest key, so a last band that speculates needs a key past any batch.
TRTLLM_LAST_KEY = 65536
# Keys of a vLLM --speculative-config the schedule sets (never merged from the probe record).
_VLLM_DEPTH_KEYS = frozenset({"num_speculative_tokens", "num_speculative_tokens_per_batch_size"})


def _vllm(bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
          base_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]:
    """vLLM's --speculative-config fragment over the probe record's other keys; vLLM's reading of it."""
    fragment: dict[str, Any] = {k: v for k, v in (base_config or {}).items() if k not in _VLLM_DEPTH_KEYS}
    ranges = [[b.start, b.end if b.end is not None else max(b.start, VLLM_LAST_END), b.k] for b in bands]
    fragment.update({"num_speculative_tokens": largest, "num_speculative_tokens_per_batch_size": ranges})
    notes = [] if base_config else ["no speculative arm's --speculative-config in the probe records: add the "
                                    "method's keys (method, model, …) to the fragment"]
    return fragment, vllm_schedule(ranges, largest), bands, notes


def _sglang(bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
            base_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]:
    """SGLang's adaptive config: a tier per band with its candidate steps; SGLang's reading of it."""
    bands = [BatchBand(b.start, b.end, b.k, b.concurrencies, b.speedup, b.speedup_low, b.speedup_high,
                       candidates(result, point, b)) for b in bands]
    fragment: dict[str, Any] = {str(b.start): {"candidate_steps": list(b.candidates)} for b in bands}
    notes = ["SGLang: pass the fragment as a file with --speculative-adaptive --speculative-adaptive-config FILE "
             f"(EAGLE or EAGLE3, --speculative-eagle-topk 1) and --speculative-num-steps {bands[0].k} (one of the "
             "candidates); k = steps at top-k 1"]
    return fragment, sglang_adaptive_schedule(fragment), bands, notes


def _trtllm(bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
            base_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]:
    """TensorRT-LLM's max_draft_len and draft_len_schedule (keys end their bands); its reading of it."""
    if bands[0].k != largest:
        raise TuneInputError(f"--emit trtllm: the best k at batch 1 is {bands[0].k}, below the largest {largest}; "
                             "TensorRT-LLM requires the smallest draft_len_schedule key to run max_draft_len "
                             "(a max_draft_len > 0)")
    keyed: dict[int, int] = {}
    for b in bands:
        if b.end is None and b.k == 0:
            continue  # TensorRT-LLM runs 0 above the largest key
        keyed[b.end if b.end is not None else max(b.start, TRTLLM_LAST_KEY)] = b.k
    fragment = {"max_draft_len": largest, "draft_len_schedule": {str(key): v for key, v in keyed.items()}}
    return fragment, trtllm_schedule(keyed, largest), bands, []


# One writer per engine (the engine's spelling of a schedule); `specgate tune --emit` offers these keys.
WRITERS: Mapping[str, Callable[[list[BatchBand], int, TuneResult, str | None, Mapping[str, Any] | None],
                               tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]]] = MappingProxyType(
    {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm})


def emit(result: TuneResult, engine: str, *, point: str | None = None,
         base_config: Mapping[str, Any] | None = None) -> Emitted:
    """The schedule for `engine` (one of WRITERS; TuneInputError, one line, where the predictions cannot give one)."""
    chosen, bands = batch_bands(result, point)
    largest = max(b.k for b in bands)
    off: list[str] = []
    if largest == 0:
        # Nothing pays anywhere: the schedule the measurements give is k = 0 at every batch. vLLM needs a
        # num_speculative_tokens > 0 beside it: the deepest k measured.
        largest = max((p.k for p in result.points if p.point == chosen and p.speedup is not None), default=1)
        off.append("speculation is predicted to pay at no measured concurrency (best predicted speedup <= 1 "
                   "everywhere): this schedule sets k = 0 at every batch; running without speculation is simpler")
    fragment, schedule, bands, notes = WRITERS[engine](bands, largest, result, chosen, base_config)
    top = max((c for b in bands for c in b.concurrencies), default=None)
    if top is not None and bands[-1].k > 0:
        off.append(f"batches above concurrency {top} (the largest measured) run k = {bands[-1].k} too: not measured "
                   "there (probe higher concurrencies to know)")
    notes = off + notes
    for b in bands:  # the engine reads back what the bands say (exporter.schedule is its reading)
        for batch in {b.start, b.end or b.start}:
            assert schedule.k_at(batch) == b.k, (engine, b, schedule)
    return Emitted(engine, chosen, fragment, tuple(bands), schedule, tuple(notes))


def base_speculative_config(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The speculative arm's other `--speculative-config` keys: those all its probe records agree on."""
    if not configs:
        return None
    common = {k: v for k, v in configs[0].items() if k not in _VLLM_DEPTH_KEYS}
    for cfg in configs[1:]:
        common = {k: v for k, v in common.items() if cfg.get(k) == v}
    return common

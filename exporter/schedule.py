"""Depth schedules: the k an engine runs at each batch size, read the way each engine reads it (issue 22).

Pure, no I/O. Three engines let k depend on the running batch; each spelling is normalised here to
one `DepthSchedule` of contiguous inclusive batch bands starting at batch 1, the last one open-ended:

- vLLM 0.32 `speculative_config.num_speculative_tokens_per_batch_size`: inclusive
  `[batch_start, batch_end, k]` ranges, validated by
  `vllm/v1/spec_decode/dynamic/utils.py validate_and_normalize_dynamic_sd_schedule` and expanded by
  `build_dynamic_sd_schedule_lookup` (gaps and the tail carry the previous k; every k is clamped to
  `num_speculative_tokens`, which must be > 0). `vllm_schedule` follows both, with vLLM's wording.
- SGLang 0.5.23 `--speculative-adaptive-config` (`sglang/srt/speculative/adaptive_spec_params.py`):
  tiers keyed by batch size, each with `candidate_steps`; `AdaptiveSpeculativeParams._find_closest_bs`
  routes a batch to the largest tier key <= batch (the smallest tier below it), and the tier's EMA
  picks one of its candidates at run time. With topk 1 (adaptive requires it) a step proposes one
  token, so k = steps and a band carries the candidates' range [k_min, k_max].
- TensorRT-LLM `draft_len_schedule` (`{batch_size: draft_len}`), as it reads since PR #10860 (merged 2026-03-13,
  "Dynamic draft length on spec decode one-model path"; the 1.4.0rc API reference carries the field):
  `DecodingBaseConfig.validate_draft_len_schedule_and_sort` in `tensorrt_llm/llmapi/llm_args.py` (keys >= 1,
  lengths >= 0, the smallest key's length equal to `max_draft_len`, none above it; sorted) and
  `get_draft_len_for_batch_size` in `tensorrt_llm/_torch/speculative/utils.py` (bisect_left: a key is the last
  batch size of its band, so batch b runs the length of the smallest key >= b, and every batch above the largest
  key runs 0, speculation off). Older releases read keys as lower thresholds (the drafter's bisect_right,
  `{1: max_draft_len}` required); a schedule whose keys are {1} reads the same either way only at batch 1.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

VLLM_SOURCE = "vllm num_speculative_tokens_per_batch_size"
SGLANG_SOURCE = "sglang speculative_adaptive_config"
TRTLLM_SOURCE = "trtllm draft_len_schedule"

# SGLang 0.5.23 adaptive_spec_params.DEFAULT_ADAPTIVE_CONFIG's tiers (batch-size key -> candidate steps), used when
# `--speculative-adaptive` is on without `--speculative-adaptive-config`. Only the candidates shape the schedule;
# the hysteresis knobs steer which candidate the EMA picks, not which ones it may pick.
SGLANG_DEFAULT_CANDIDATE_STEPS: Mapping[str, tuple[int, ...]] = {
    "1": (1, 3, 5, 7),
    "8": (0, 1, 3),
    "32": (0, 1),
    "64": (0,),
}


@dataclass(frozen=True, slots=True)
class DepthBand:
    """Inclusive batch sizes [start, end] (end None = every larger batch) and the depths they may run.

    vLLM and TensorRT-LLM run one k per band (k_min == k_max); SGLang adaptive may run any of the tier's
    candidate steps, so the band carries their range.
    """

    start: int
    end: int | None
    k_max: int
    k_min: int


@dataclass(frozen=True)
class DepthSchedule:
    """A normalised schedule: bands sorted, contiguous, the first starting at batch 1, the last open-ended."""

    source: str
    bands: tuple[DepthBand, ...]
    max_k: int

    def band_at(self, batch: int) -> DepthBand:
        """The band that holds `batch` (>= 1; the bands cover every batch from 1 up)."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch size must be an integer >= 1, got {batch!r}")
        starts = [band.start for band in self.bands]
        return self.bands[bisect.bisect_right(starts, batch) - 1]

    def k_at(self, batch: int) -> int:
        """The (largest) k the schedule runs at `batch`: band_at(batch).k_max."""
        return self.band_at(batch).k_max

    @property
    def varies(self) -> bool:
        """More than one distinct k across the bands, or a band free to pick among several (k_min < k_max)."""
        return len({band.k_max for band in self.bands}) > 1 or any(b.k_min < b.k_max for b in self.bands)


def _normalised(source: str, pieces: Sequence[tuple[int, int | None, int, int]]) -> DepthSchedule:
    """Bands from contiguous (start, end, k_max, k_min) pieces starting at 1, neighbours with equal depths merged."""
    bands: list[DepthBand] = []
    for start, end, k_max, k_min in pieces:
        if bands and (bands[-1].k_max, bands[-1].k_min) == (k_max, k_min):
            bands[-1] = DepthBand(bands[-1].start, end, k_max, k_min)
        else:
            bands.append(DepthBand(start, end, k_max, k_min))
    assert bands and bands[0].start == 1 and bands[-1].end is None, bands
    return DepthSchedule(source=source, bands=tuple(bands), max_k=max(b.k_max for b in bands))


def _vllm_int(value: object) -> int:
    """vLLM reads each entry with int(); what int() refuses is a ValueError here too (never a TypeError)."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"num_speculative_tokens_per_batch_size entry value {value!r} is not an integer") from exc


def _vllm_ranges(ranges: object) -> list[tuple[int, int, int]]:
    """vLLM 0.32 validate_and_normalize_dynamic_sd_schedule, branch for branch, with its messages."""
    if ranges is None:
        raise ValueError("num_speculative_tokens_per_batch_size is required for dynamic speculative decoding.")
    # vLLM's config field is list[tuple[int, int, int]]: a JSON list arrives as a list (tuples are allowed too,
    # as pydantic would coerce them).
    if not isinstance(ranges, list | tuple):
        raise ValueError(
            "num_speculative_tokens_per_batch_size must be a non-empty list of "
            "(range_start, range_end, num_speculative_tokens) entries."
        )
    if not ranges:
        raise ValueError("num_speculative_tokens_per_batch_size must not be empty.")
    parsed: list[tuple[int, int, int]] = []
    for entry in ranges:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError(
                "Each num_speculative_tokens_per_batch_size entry must be a "
                "3-item sequence: (range_start, range_end, num_speculative_tokens)."
            )
        start, end, k = _vllm_int(entry[0]), _vllm_int(entry[1]), _vllm_int(entry[2])
        if start <= 0 or end <= 0:
            raise ValueError(f"Batch-size range ({start}, {end}) must be positive.")
        if start > end:
            raise ValueError(f"Batch-size range start must be <= end for ({start}, {end}, {k}).")
        if k < 0:
            raise ValueError("num_speculative_tokens_per_batch_size values must be >= 0.")
        parsed.append((start, end, k))
    parsed.sort(key=lambda item: item[0])
    previous_end = 0
    for start, end, _ in parsed:
        if start <= previous_end:
            raise ValueError("Batch-size ranges must be non-overlapping and sorted.")
        previous_end = end
    if parsed[0][0] != 1:
        raise ValueError(
            "The first batch-size range must start at 1 so every runtime batch size has a defined schedule."
        )
    return parsed


def vllm_schedule(ranges: object, num_speculative_tokens: int) -> DepthSchedule:
    """vLLM 0.32's schedule: its validation, then build_dynamic_sd_schedule_lookup's dense lookup as bands.

    k(batch) = min(num_speculative_tokens, k of the range holding batch), a gap between ranges and the tail past
    the last one carrying the previous range's k. ValueError with vLLM's wording.
    """
    if isinstance(num_speculative_tokens, bool) or not isinstance(num_speculative_tokens, int):
        raise ValueError(f"num_speculative_tokens must be an integer, got {num_speculative_tokens!r}")
    if num_speculative_tokens <= 0:
        raise ValueError("vllm_num_speculative_tokens must be > 0.")
    parsed = _vllm_ranges(ranges)
    pieces: list[tuple[int, int | None, int, int]] = []
    next_batch = 1
    last_k: int | None = None
    for start, end, k in parsed:
        if start > next_batch and last_k is not None:
            carried = min(num_speculative_tokens, last_k)
            pieces.append((next_batch, start - 1, carried, carried))
        clamped = min(num_speculative_tokens, k)
        pieces.append((start, end, clamped, clamped))
        next_batch = end + 1
        last_k = k
    assert last_k is not None
    tail = min(num_speculative_tokens, last_k)
    pieces.append((next_batch, None, tail, tail))
    return _normalised(VLLM_SOURCE, pieces)


def sglang_adaptive_schedule(config: Mapping[str, object] | None) -> DepthSchedule:
    """SGLang 0.5.23's adaptive tiers as bands (None = DEFAULT_ADAPTIVE_CONFIG).

    _load_adaptive_config: keys that are not digit strings are knobs, skipped; each tier needs a non-empty list
    of non-negative int candidate_steps; at least one tier. _find_closest_bs: batch b runs tier
    max{key <= b} (the smallest tier when b is below every key), so tier key_i covers [key_i, key_{i+1} − 1]
    and the first tier also covers every batch below it. k = steps (topk 1: one token per step).
    """
    tiers: dict[int, tuple[int, ...]] = {}
    if config is None:
        tiers = {int(key): steps for key, steps in SGLANG_DEFAULT_CANDIDATE_STEPS.items()}
    else:
        if not isinstance(config, Mapping):
            raise ValueError(f"speculative_adaptive_config must be a JSON object, got {type(config).__name__}")
        for key, entry in config.items():
            if not isinstance(key, str) or not key.isdigit():
                continue
            steps = entry.get("candidate_steps") if isinstance(entry, Mapping) else None
            if (
                not isinstance(steps, list)
                or not steps
                or not all(isinstance(s, int) and s >= 0 for s in steps)
            ):
                raise ValueError(f"BS {key}: candidate_steps must be a list of non-negative ints, got {steps!r}")
            tiers[int(key)] = tuple(int(s) for s in steps)
        if not tiers:
            raise ValueError(
                "speculative_adaptive_config must contain at least one integer-string "
                'BS key, e.g. {"1": {"candidate_steps": [1,3,7]}}. '
                f"Got keys: {list(config.keys())}"
            )
    keys = sorted(tiers)
    pieces: list[tuple[int, int | None, int, int]] = []
    for i, tier in enumerate(keys):
        start = 1 if i == 0 else max(1, tier)
        end = keys[i + 1] - 1 if i + 1 < len(keys) else None
        if end is not None and end < start:  # a tier "0" shadowed by a tier "1": no batch reaches it
            continue
        candidates = tiers[tier]
        pieces.append((start, end, max(candidates), min(candidates)))
    return _normalised(SGLANG_SOURCE, pieces)


def trtllm_schedule(schedule: Mapping[int, int], max_draft_len: int) -> DepthSchedule:
    """TensorRT-LLM's draft_len_schedule: its config validator, then get_draft_len_for_batch_size as bands.

    Sorted keys t_1 < … < t_n: batches [t_{i−1} + 1, t_i] run draft_len_i (t_0 = 0), batches above t_n run 0.
    ValueError with TensorRT-LLM's wording.
    """
    if isinstance(max_draft_len, bool) or not isinstance(max_draft_len, int) or max_draft_len < 0:
        raise ValueError(f"max_draft_len must be a non-negative integer, got {max_draft_len!r}")
    if not isinstance(schedule, Mapping) or not schedule:
        raise ValueError("draft_len_schedule must be a non-empty mapping of batch size to draft length")
    items: dict[int, int] = {}
    for batch_size, draft_len in schedule.items():
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise ValueError(f"draft_len_schedule: batch size threshold must be an integer, got {batch_size!r}")
        if isinstance(draft_len, bool) or not isinstance(draft_len, int):
            raise ValueError(f"draft_len_schedule: draft length must be an integer, got {draft_len!r}")
        if batch_size < 1:
            raise ValueError(f"draft_len_schedule: batch size threshold must be >= 1, got {batch_size}")
        if draft_len < 0:
            raise ValueError(f"draft_len_schedule: draft length must be >= 0, got {draft_len}")
        items[batch_size] = draft_len
    smallest = min(items)
    if items[smallest] != max_draft_len:
        raise ValueError(
            f"draft_len_schedule[{smallest}] must equal max_draft_len "
            f"because it is the smallest batch-size key. "
            f"Got schedule[{smallest}]={items[smallest]}, "
            f"but max_draft_len={max_draft_len}."
        )
    for batch_size, draft_len in items.items():
        if draft_len > max_draft_len:
            raise ValueError(
                f"draft_len_schedule: all draft lengths must be <= max_draft_len. "
                f"Got draft_len={draft_len} for batch_size={batch_size}, "
                f"but max_draft_len={max_draft_len}."
            )
    pieces: list[tuple[int, int | None, int, int]] = []
    previous = 0
    for key in sorted(items):
        pieces.append((previous + 1, key, items[key], items[key]))
        previous = key
    pieces.append((previous + 1, None, 0, 0))  # above the largest key: speculation disabled (implicit)
    return _normalised(TRTLLM_SOURCE, pieces)


def speculative_config_schedule(config: Mapping[str, object]) -> DepthSchedule | None:
    """The schedule a vLLM `--speculative-config` object declares, or None when it declares none.

    vLLM clamps the ranges to `num_speculative_tokens`, so the object must carry it with the schedule.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"speculative config must be a JSON object, got {type(config).__name__}")
    ranges = config.get("num_speculative_tokens_per_batch_size")
    if ranges is None:
        return None
    k = config.get("num_speculative_tokens")
    if k is None:
        raise ValueError("num_speculative_tokens_per_batch_size needs num_speculative_tokens (every k is clamped to it)")
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"num_speculative_tokens must be an integer, got {k!r}")
    return vllm_schedule(ranges, k)

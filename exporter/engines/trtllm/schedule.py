"""TensorRT-LLM's depth schedule: `draft_len_schedule` (`{batch_size: draft_len}`), read the way TensorRT-LLM reads it.

As it reads since PR #10860 (merged 2026-03-13, "Dynamic draft length on spec decode one-model path"; the
1.4.0rc API reference carries the field): `DecodingBaseConfig.validate_draft_len_schedule_and_sort` in
`tensorrt_llm/llmapi/llm_args.py` (keys >= 1, lengths >= 0, the smallest key's length equal to `max_draft_len`,
none above it; sorted) and `get_draft_len_for_batch_size` in `tensorrt_llm/_torch/speculative/utils.py`
(bisect_left: a key is the last batch size of its band, so batch b runs the length of the smallest key >= b, and
every batch above the largest key runs 0, speculation off). Older releases read keys as lower thresholds (the
drafter's bisect_right, `{1: max_draft_len}` required); a schedule whose keys are {1} reads the same either way
only at batch 1. Normalised into the engine-neutral `exporter.schedule.DepthSchedule`. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from exporter.schedule import DepthSchedule, _normalised

TRTLLM_SOURCE = "trtllm draft_len_schedule"


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

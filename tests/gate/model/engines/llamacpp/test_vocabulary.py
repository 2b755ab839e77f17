"""llama.cpp's draft vocabulary rule (common/speculative.cpp `common_speculative_are_compatible`): sizes within
128, vocab type and BOS/EOS equal; a fact no config gives is declared, else the rule is not checked.

The config keys are those of the published configs (google/gemma-3-27b-it: no top-level vocab_size, eos [1, 106];
mariocde/functiongemma-270m-onnx: vocab_size 262,144, bos 2, eos [1, 50, 106]); Gemma 3's vocabulary is
Transformers' default 262,208, which its config does not write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from gate.checks.codesign import Finding, codesign
from gate.model.engines.llamacpp import vocabulary_of, vocabulary_rule
from gate.plan.init import InitRequest, render
from gate.plan.model import ModelRef
from gate.status import Status

GEMMA3 = {"architectures": ["Gemma3ForConditionalGeneration"], "eos_token_id": [1, 106],
          "text_config": {"model_type": "gemma3_text"}}
FUNCTIONGEMMA = {"architectures": ["Gemma3ForCausalLM"], "vocab_size": 262144, "bos_token_id": 2,
                 "eos_token_id": [1, 50, 106]}
DECLARED = {"vocab_type": "SPM", "bos_token_id": 2, "eos_token_id": 1}


def test_sixty_four_apart_is_compatible_by_size() -> None:
    target = vocabulary_of(GEMMA3, {**DECLARED, "vocab_size": 262208})
    drafter = vocabulary_of(FUNCTIONGEMMA, DECLARED)
    rule = vocabulary_rule(target, drafter)
    assert rule.status is Status.PASS and "difference 64 <= 128" in rule.detail


def test_what_the_configs_omit_is_named_not_failed() -> None:
    rule = vocabulary_rule(vocabulary_of(GEMMA3), vocabulary_of(FUNCTIONGEMMA))
    assert rule.status is Status.INCONCLUSIVE
    for key in ("target.vocabulary.vocab_size", "target.vocabulary.vocab_type", "target.vocabulary.bos_token_id",
                "target.vocabulary.eos_token_id", "drafter.vocabulary.vocab_type", "drafter.vocabulary.eos_token_id"):
        assert key in rule.detail  # the plan keys that declare them
    assert "drafter.vocabulary.vocab_size" not in rule.detail and "drafter.vocabulary.bos_token_id" not in rule.detail


def test_more_than_128_apart_or_another_type_or_bos_is_refused() -> None:
    drafter = vocabulary_of(FUNCTIONGEMMA, DECLARED)
    far = vocabulary_of(GEMMA3, {**DECLARED, "vocab_size": 262144 + 129})
    assert vocabulary_rule(far, drafter).status is Status.FAIL
    edge = vocabulary_of(GEMMA3, {**DECLARED, "vocab_size": 262144 + 128})
    assert vocabulary_rule(edge, drafter).status is Status.PASS
    bpe = vocabulary_of(GEMMA3, {**DECLARED, "vocab_size": 262208, "vocab_type": "BPE"})
    assert "vocab type" in vocabulary_rule(bpe, drafter).detail
    bos = vocabulary_of(GEMMA3, {**DECLARED, "vocab_size": 262208, "bos_token_id": 1})
    assert vocabulary_rule(bos, drafter).status is Status.FAIL


# --- wired in: the co-design line, the plan's vocabulary keys, `specgate init` (issue 35 item 4) -----------------

CONFIGS = Path(__file__).resolve().parents[4] / "fixtures" / "configs"
GEMMA3_27B = CONFIGS / "target-hybrid-swa__google__gemma-3-27b-it.json"
FUNCTIONGEMMA_270M = CONFIGS / "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json"


def _vocabulary_finding(engine: str, target: dict[str, Any], vocabularies: Any = (None, None)) -> Finding:
    draft = json.loads(FUNCTIONGEMMA_270M.read_text())
    res = codesign(target, draft, engine=engine, depth=8, method="draft_model", vocabularies=vocabularies)
    (f,) = [f for f in res.findings if f.check == "vocabulary"]
    return f


def test_codesign_judges_a_llamacpp_draft_model_by_llamacpps_rule() -> None:
    """Deployment (c) of issue 36: Gemma-3-27B's 262,208 declared against functiongemma's 262,144 is 64 apart:
    compatible, not the false fail of exact equality; undeclared, the finding names the plan keys."""
    gemma = json.loads(GEMMA3_27B.read_text())
    f = _vocabulary_finding("llamacpp", gemma, ({**DECLARED, "vocab_size": 262208}, DECLARED))
    assert f.status is Status.PASS and "difference 64 <= 128" in f.detail, f
    f = _vocabulary_finding("llamacpp", gemma)
    assert f.status is Status.INCONCLUSIVE and f.detail.startswith("not checked: "), f
    assert "target.vocabulary.vocab_size" in f.detail and "drafter.vocabulary.eos_token_id" in f.detail
    far = _vocabulary_finding("llamacpp", gemma, ({**DECLARED, "vocab_size": 262144 + 129}, DECLARED))
    assert far.status is Status.FAIL and "SPEC_VOCAB_MAX_SIZE_DIFFERENCE" in far.detail


def test_other_engines_keep_their_rule() -> None:
    gemma = json.loads(GEMMA3_27B.read_text())
    gemma["text_config"]["vocab_size"] = 262208
    f = _vocabulary_finding("vllm", gemma, ({**DECLARED, "vocab_size": 262208}, DECLARED))
    assert f.status is Status.FAIL and f.detail == "vocab_size 262144 != target 262208", f


def test_the_plan_declares_a_vocabulary_and_refuses_an_unknown_type() -> None:
    ref = ModelRef.model_validate({"name": "g", "vocabulary": {"vocab_size": 262208, "vocab_type": "SPM",
                                                               "bos_token_id": 2, "eos_token_id": 1}})
    assert ref.vocabulary is not None and ref.vocabulary.vocab_size == 262208
    with pytest.raises(ValidationError, match="vocab_type"):
        ModelRef.model_validate({"vocabulary": {"vocab_type": "sentencepiece"}})


def test_init_asks_for_what_the_configs_omit_on_llamacpp_only() -> None:
    text = render(InitRequest(target=GEMMA3_27B, drafter=FUNCTIONGEMMA_270M, engine="llamacpp",
                              method="draft_model"))
    plan = yaml.safe_load(text)
    assert plan["target"]["vocabulary"] == dict.fromkeys(("vocab_size", "vocab_type", "bos_token_id",
                                                          "eos_token_id"))
    assert plan["drafter"]["vocabulary"] == dict.fromkeys(("vocab_type", "eos_token_id"))  # it has size and BOS
    assert "vocab_size: null  # TODO: the GGUF's vocabulary size" in text
    vllm = yaml.safe_load(render(InitRequest(target=GEMMA3_27B, drafter=FUNCTIONGEMMA_270M, engine="vllm",
                                             method="draft_model")))
    assert "vocabulary" not in vllm["target"] and "vocabulary" not in vllm["drafter"]

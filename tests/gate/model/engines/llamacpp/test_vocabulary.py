"""llama.cpp's draft vocabulary rule (common/speculative.cpp `common_speculative_are_compatible`): sizes within
128, vocab type and BOS/EOS equal; a fact no config gives is declared, else the rule is not checked.

The config keys are those of the published configs (google/gemma-3-27b-it: no top-level vocab_size, eos [1, 106];
mariocde/functiongemma-270m-onnx: vocab_size 262,144, bos 2, eos [1, 50, 106]); Gemma 3's vocabulary is
Transformers' default 262,208, which its config does not write.
"""

from __future__ import annotations

from gate.model.engines.llamacpp import vocabulary_of, vocabulary_rule
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
    for key in ("target.vocab_size", "target.vocab_type", "target.bos_token_id", "target.eos_token_id",
                "drafter.vocab_type", "drafter.eos_token_id"):
        assert key in rule.detail
    assert "drafter.vocab_size" not in rule.detail and "drafter.bos_token_id" not in rule.detail


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

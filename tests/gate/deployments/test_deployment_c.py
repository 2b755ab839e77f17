"""Issue 36, deployment (c): Gemma-3-27B with functiongemma-270m as draft model on llama.cpp, 1 × L40S 48 GB,
reaches a decision from `specgate init` plus only the keys init's comments ask for (its `# TODO` lines).

The deployment as the newcomer planned it: Q4_K_M target GGUF 16.5 GB, Q8_0 draft 0.29 GB; `--ctx-size` 32,768,
`--spec-draft-n-max` 8, serial load; chat 4 × (4,000 + 800); L 3.5 "assumed"; costs 40 / 62 ms. The GGUF facts
the configs omit are Gemma 3's: vocabulary 262,208 (Transformers' default, unwritten in the config), SPM
(tokenizer.ggml.model llama), BOS 2, EOS 1. Revisions, budgets and the engine build are the user's own choices,
filled where init asks, and so is the cold start of the target alone that the deployment runs today (with the
draft's load, init's comments ask for them: a predicted cold start). Before issue 36 the same walk ended
inconclusive (a memory fraction and kv_cache_memory_bytes asked for, flags llama.cpp has not; the cold start
only ever measured) or, with 262,208 declared, a false vocabulary FAIL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.deployments.walk import check, fill, init_pair

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
TARGET = CONFIGS / "target-hybrid-swa__google__gemma-3-27b-it.json"
DRAFTER = CONFIGS / "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json"

# Every key init marks TODO (or, for the names, offers to change), with the deployment's value.
FILL = {
    "description": '"Gemma-3-27B, functiongemma-270m as draft, llama.cpp on 1 x L40S 48 GB"',
    "target.name": '"google/gemma-3-27b-it"',
    "target.revision": '"005ad3404e59d6023443cb575daa05336842228a"',
    "target.vocabulary.vocab_size": "262208",
    "target.vocabulary.vocab_type": "SPM",
    "target.vocabulary.bos_token_id": "2",
    "target.vocabulary.eos_token_id": "1",
    "target.weights.path": "null\n    bytes: 16500000000  # the Q4_K_M GGUF",
    "drafter.name": '"mariocde/functiongemma-270m-onnx"',
    "drafter.revision": '"3f8e0b6a1c2d4e5f60718293a4b5c6d7e8f90123"',
    "drafter.vocabulary.vocab_type": "SPM",
    "drafter.vocabulary.eos_token_id": "1",
    "drafter.weights.path": "null\n    bytes: 290000000  # the Q8_0 GGUF",
    "engine.version": '"b11434"',
    "engine.ctx_size": "32768",
    "staging.mode": "serial",
    "staging.warmup_check": '"GET /health"',
    "budgets.storage_bytes": "64000000000",
    "budgets.gpu_memory_bytes": "48000000000",
    "budgets.startup_seconds": "300",
    # no run with the draft yet: the target alone's cold start (today's deployment) and the draft's load predict it
    "evidence.reported.startup_seconds_without_drafter": '{value: 95, source: "llama-server log, target alone"}',
    "staging.load_seconds": "{drafter: 2}  # 0.29 GB at 150 MB/s from the model store",
    "workload": "\n  - {name: chat, concurrency: 4, prompt_tokens: 4000, output_tokens: 800}",
    "slo.target_acceptance_length": "3.5",
    "slo.target_source": '"assumed: no traffic yet"',
    "costs": '\n  - {point: chat, target_step_ms: 40, verify_cycle_ms: 62, source: "declared"}',
}


def test_deployment_c_decides_from_init_and_its_todo_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan, written = init_pair(tmp_path, TARGET, DRAFTER, "--engine", "llamacpp", "--num-speculative-tokens", "8")
    # init asks for llama-server's own keys, never a memory fraction or a KV byte budget
    assert "ctx_size: null  # TODO: --ctx-size" in written
    assert "memory_fraction" not in written and "kv_cache_memory_bytes" not in written
    text, filled = fill(written, FILL, overrides=frozenset({"staging.mode"}))
    assert filled == set(FILL), set(FILL) - filled
    plan.write_text(text)
    rc, out, lines = check(plan, capsys)
    # Every line decides, staging on a predicted cold start (the target alone's 95 s + the draft's 2 s load):
    # before issue 36 it stayed inconclusive, a cold start only ever measured. Serial staging warns (seed 002).
    assert rc == 0 and "inconclusive" not in lines.values(), out
    assert lines["staging"] == "warn", out
    assert "cold start predicted 97 s (95 s without the drafter (llama-server log, target alone) + its load 2 s) " \
        "≤ budget 300 s (not measured" in " ".join(out.split()), out
    assert lines["codesign"] == "pass", out  # vocabulary by llama.cpp's rule (64 apart), not exact equality
    assert lines["kv_pool"] == "pass", out
    assert "32,768-token pool predicted, not observed" in out and "allocated, reported" not in out
    assert lines["artifacts"] == "pass" and lines["acceptance"] == "pass", out
    # the drafter's KV on one basis: its full-attention layers per token, as init and `specgate kv` say
    assert "drafter KV 3,072 B/token" in out and "18,432" not in out


def test_deployment_c_without_a_prediction_names_only_the_keys_that_help(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """With neither a run with the draft nor the inputs of a prediction, staging is inconclusive and points at the
    keys that would decide it, never at flags llama.cpp has not."""
    plan, _ = init_pair(tmp_path, TARGET, DRAFTER, "--engine", "llamacpp", "--num-speculative-tokens", "8")
    values = {k: v for k, v in FILL.items() if not k.startswith(("evidence.", "staging.load"))}
    plan.write_text(fill(plan.read_text(), values, overrides=frozenset({"staging.mode"}))[0])
    rc, out, lines = check(plan, capsys)
    assert rc == 2
    assert [k for k, v in lines.items() if v == "inconclusive"] == ["staging"], out
    assert "give evidence.reported.startup_seconds (a run with the drafter), or " \
        "evidence.reported.startup_seconds_without_drafter and staging.load_seconds.drafter" in " ".join(out.split())
    assert "memory_fraction" not in out and "kv_cache_memory_bytes" not in out

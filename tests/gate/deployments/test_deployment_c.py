"""Issue 36, deployment (c): Gemma-3-27B with functiongemma-270m as draft model on llama.cpp, 1 × L40S 48 GB,
reaches a decision from `specgate init` plus only the keys init's comments ask for (its `# TODO` lines).

The deployment as the newcomer planned it: Q4_K_M target GGUF 16.5 GB, Q8_0 draft 0.29 GB; `--ctx-size` 32,768,
`--spec-draft-n-max` 8, serial load; chat 4 × (4,000 + 800); L 3.5 "assumed"; costs 40 / 62 ms. The GGUF facts
the configs omit are Gemma 3's: vocabulary 262,208 (Transformers' default, unwritten in the config), SPM
(tokenizer.ggml.model llama), BOS 2, EOS 1. Revisions, budgets and the engine build are the user's own choices,
filled where init asks. Before issue 36 the same walk ended inconclusive (a memory fraction and
kv_cache_memory_bytes asked for, flags llama.cpp has not) or, with 262,208 declared, a false vocabulary FAIL.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gate.cli import main

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
    "workload": "\n  - {name: chat, concurrency: 4, prompt_tokens: 4000, output_tokens: 800}",
    "slo.target_acceptance_length": "3.5",
    "slo.target_source": '"assumed: no traffic yet"',
    "costs": '\n  - {point: chat, target_step_ms: 40, verify_cycle_ms: 62, source: "declared"}',
}
KEY = re.compile(r"( *)([A-Za-z_]\w*):(.*)$")


def fill(text: str) -> tuple[str, set[str]]:
    """The plan with FILL's values on the lines init wrote with a TODO, on the line or its section's (and the keys
    it filled)."""
    out: list[str] = []
    path: list[tuple[int, str, bool]] = []  # (indent, key, its line has a TODO)
    filled: set[str] = set()
    for line in text.splitlines():
        m = KEY.fullmatch(line)
        if m is None:
            out.append(line)
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
        while path and path[-1][0] >= indent:
            path.pop()
        dotted = ".".join([*(k for _, k, _ in path), key])
        todo = "TODO" in rest or bool(path and path[-1][2])
        if not rest.partition("#")[0].strip():
            path.append((indent, key, "TODO" in rest))
        if dotted in FILL and (todo or dotted == "staging.mode"):
            out.append(f"{m.group(1)}{key}: {FILL[dotted]}")
            filled.add(dotted)
        else:
            out.append(line)
    return "\n".join(out) + "\n", filled


def test_deployment_c_decides_from_init_and_its_todo_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for src in (TARGET, DRAFTER):
        shutil.copy(src, tmp_path / src.name)
    plan = tmp_path / "plan.yaml"
    assert main(["init", "--target", str(tmp_path / TARGET.name), "--drafter", str(tmp_path / DRAFTER.name),
                 "--engine", "llamacpp", "--num-speculative-tokens", "8", "--out", str(plan)]) == 0
    written = plan.read_text()
    # init asks for llama-server's own keys, never a memory fraction or a KV byte budget
    assert "ctx_size: null  # TODO: --ctx-size" in written
    assert "memory_fraction" not in written and "kv_cache_memory_bytes" not in written
    text, filled = fill(written)
    todo = {k for k in FILL if k not in ("staging.mode",)}
    assert filled >= todo - {"target.name", "drafter.name"}, todo - filled
    plan.write_text(text)
    capsys.readouterr()
    rc = main(["check", "--plan", str(plan)])
    out = capsys.readouterr().out
    print(out)
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^(\w+)\s+(pass|fail|warn|inconclusive|n/a)\s", out, re.M)}
    # Every line but staging decides. Staging stays inconclusive: a cold start is only ever measured (no key init
    # asks for predicts one), so the walk exits 2 until evidence.reported.startup_seconds or a live engine says it.
    assert rc == 2 and [k for k, v in lines.items() if v == "inconclusive"] == ["staging"], out
    assert lines["codesign"] in ("pass", "warn"), out
    assert lines["codesign"] == "pass", out  # vocabulary by llama.cpp's rule (64 apart), not exact equality
    assert lines["kv_pool"] == "pass", out
    assert "32,768-token pool predicted, not observed" in out and "allocated, reported" not in out
    assert lines["artifacts"] == "pass" and lines["acceptance"] == "pass", out
    # the drafter's KV on one basis: its full-attention layers per token, as init and `specgate kv` say
    assert "drafter KV 3,072 B/token" in out and "18,432" not in out

"""Issue 36, deployment (b): Qwen3.5-27B with its own MTP head (SGLang NEXTN, `--speculative-adaptive`) on SGLang
0.5.23, 1 × H200, reaches a decision from `specgate init` plus only the keys init's comments ask for.

The config is the repository's trimmed Qwen3.5-27B with `mtp_num_hidden_layers: 1` added to `text_config` (the
published model has one MTP layer; this copy omits the key). The deployment as the newcomer planned it:
`--mem-fraction-static` 0.85, KV budget 64 GiB; weights 55.6 GB; chat 16 × (3,000 + 700), agent 4 × (60,000 +
2,000); L 2.4 "benchmark"; costs 22 / 30 ms. SGLang's page size 1 (its default) and a context length of 65,536
(the agent's 62,000 tokens fit) are the user's choices, filled where init asks; `speculative_adaptive` is the key
init's comment names for the engine's depth schedule. Before issue 36: exit 3 (adaptive refused for NEXTN), and
without adaptive inconclusive forever (no predicted pool for a hybrid linear-attention target).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from tests.gate.deployments.walk import check, fill

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
TARGET = CONFIGS / "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"

FILL = {
    "description": '"Qwen3.5-27B with its MTP head (NEXTN, adaptive), SGLang 0.5.23 on 1 x H200"',
    "target.name": '"Qwen/Qwen3.5-27B"',
    "target.revision": '"b7ca741b86de18df552fd2cc952861e04621a4bd"',
    "target.weights.path": "null\n    bytes: 55600000000",
    "engine.version": '"0.5.23"',
    "engine.block_size": "1",
    "engine.kv_cache_memory_bytes": str(64 * 2**30),
    "engine.memory_fraction": "0.85",
    "engine.context_cap_tokens": "65536",
    "engine.speculative.speculative_adaptive": "true",
    "budgets.storage_bytes": "120000000000",
    "budgets.gpu_memory_bytes": "141000000000",
    "workload": "\n  - {name: chat, concurrency: 16, prompt_tokens: 3000, output_tokens: 700}"
                "\n  - {name: agent, concurrency: 4, prompt_tokens: 60000, output_tokens: 2000}",
    "slo.target_acceptance_length": "2.4",
    "slo.target_source": '"benchmark: the MTP head on our eval prompts"',
    "costs": '\n  - {point: chat, target_step_ms: 22, verify_cycle_ms: 30, source: "declared"}',
}


def test_deployment_b_decides_from_init_and_its_todo_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = json.loads(TARGET.read_text())
    config["text_config"]["mtp_num_hidden_layers"] = 1
    target = tmp_path / "qwen3.5-27b.json"
    target.write_text(json.dumps(config))
    plan = tmp_path / "plan.yaml"
    assert main(["init", "--target", str(target), "--engine", "sglang", "--method", "nextn", "--out", str(plan)]) == 0
    written = plan.read_text()
    assert "# speculative_adaptive: …  # optional: sglang runs a depth schedule" in written
    # the head is inside the checkpoint: no staging keys, no startup budget asked for
    assert "staging:" not in written and "budgets.startup_seconds" not in written.split("placeholders:")[1]
    text, filled = fill(written, FILL)
    assert filled == set(FILL), set(FILL) - filled
    plan.write_text(text)
    rc, out, lines = check(plan, capsys)
    assert rc == 0 and "inconclusive" not in lines.values(), out
    # the hybrid pool predicted as SGLang sizes it; adaptive decided as SGLang does (its tiers, deepest k bounds)
    assert lines["kv_pool"] == "pass" and "-token pool predicted, not observed (sglang accounting" in out, out
    flat = " ".join(out.split())
    assert lines["acceptance"] == "pass" and "depth schedule (sglang speculative_adaptive_config)" in flat, out
    assert "> L* 1.364 (chat, from declared step costs)" in flat, out
    assert lines["staging"] == "n/a" and lines["artifacts"] == "pass" and lines["codesign"] == "pass", out
